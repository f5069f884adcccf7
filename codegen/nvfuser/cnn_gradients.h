// nvfuser's kernels for the operators a CNN's backward adds (--autograd --device cuda): im2col and col2im,
// around which `decompose` writes conv2d's input and weight gradients as GEMMs, and max_pool2d_backward. Each
// symbol is one kernel of its own (never in a region), a thread per element of what it writes, so no two
// threads write one element and nothing needs atomics:
//  * im2col: a thread per column element [N, C*kh*kw, OH*OW], reading its pixel or the padding's 0.
//  * col2im: a thread per image element [N, C, H, W], gathering the column entries that fall on it in
//    kernel-position order (i, then j), the order the cpp kernel adds them in: the same sums, bit for bit.
//  * max_pool2d_backward: a thread per input element, visiting the output positions whose window can hold it
//    in output order; for each it finds the window's maximum as ATen's CPU kernel does (the first greater
//    element, any NaN; the cpp kernel's rule) and adds that position's gradient when the maximum is this
//    element. Same additions in the same order as the cpp kernel.
// float32 and float64 (the operators' meta functions and the checker in core/executors/cpp_support.cpp);
// every size is a literal, indices 64-bit.
#pragma once

#include <string>

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

bool is_cuda_cnn_gradient_op(const std::string& name);

// The kernel of an im2col, col2im or max_pool2d_backward symbol; parameters (out, inputs...).
cuda::KernelLaunch cuda_cnn_gradient_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym);

// The symbol's launch (its kernel registered through ctx).
void emit_cuda_cnn_gradient(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
