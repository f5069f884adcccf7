// upsample_bilinear2d on the CPU: PyTorch's source indices and weights (aten/src/ATen/native/UpSample.h),
// computed at run time in the same arithmetic type (float for float32, double for float64), and the same
// order of operations: (x[h0][w0] * lw0 + x[h0][w1] * lw1) * lh0 + (x[h1][w0] * lw0 + x[h1][w1] * lw1) * lh1.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

void emit_cpp_upsample_bilinear2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

// grid_sampler_2d, bilinear or nearest (round half to even), zeros / border / reflection padding: ATen's
// source positions (grid_sampler_compute_source_index: unnormalize, reflect, clip; a non-finite position reads
// nothing) and its vectorized kernel's weights (n * e, ...), summing the in-range corners.
void emit_cpp_grid_sampler_2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
