// The cpp executor's volumetric pooling: max_pool3d (dilation, ceil_mode; NaN propagates), avg_pool3d
// (count_include_pad, divisor_override) and adaptive_avg_pool3d, over [N, C, D, H, W] or [C, D, H, W] float
// tensors, one output element at a time in parallel, with ATen's window bounds and divisors
// (aten/src/ATen/native/DilatedMaxPool3d.cpp, AveragePool3d.cpp, AdaptiveAveragePooling3d.cpp). Also
// max_pool2d_backward (max_pool2d's gradient for --autograd), one plane at a time in parallel, with the
// indices of ATen's max_pool2d_with_indices CPU kernel (aten/src/ATen/native/cpu/MaxPoolKernel.cpp).
#pragma once

#include "codegen/backend.h"

namespace thunderc {

bool is_cpp_pool3d_op(const std::string& name);
void emit_cpp_pool3d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
