// The cpp executor's im2col and col2im (ATen's, as F.unfold and F.fold): a convolution's input patches as
// columns, [N, C, H, W] -> [N, C*kh*kw, OH*OW], and the adjoint that adds columns back into an image. The
// convolution gradients of --autograd are GEMMs around them (core/ops/nn.cpp). One (image, channel) plane per
// iteration in parallel: im2col writes its kh*kw rows, col2im its output plane, so no two iterations write the
// same element.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

bool is_cpp_conv_columns_op(const std::string& name);
void emit_cpp_conv_columns(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
