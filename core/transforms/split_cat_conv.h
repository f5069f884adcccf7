// split-cat-conv: a convolution of a concatenation of channels becomes a sum of convolutions of the pieces,
//
//   conv2d(cat([a, b, ...], dim=1), W, bias)  ->  add(conv2d(b, W[:, Ca:Ca+Cb]), conv2d(a, W[:, :Ca], bias)) ...
//
// because a convolution is linear in its input channels. Why: SqueezeNet's Fire modules (and Inception-style
// blocks) concatenate two convolutions' outputs only to feed the next convolution, and that copy of the
// activations is the concatenation's whole cost; oneDNN cannot write into a channel slice of a larger tensor
// (a strided destination falls back to its reference kernel), but it adds a convolution's result to what its
// destination holds (the sum post-op, which `fusion` gives an onednn convolution that a residual add follows).
//
// Rewritten only when it pays and stays exact in the ways that matter: the cat (4-D, along the channels) of
// float32 pieces is read by this convolution alone and is no output; the convolution has groups 1 and a
// constant float32 weight, and onednn is its first claimer (the pieces' convolutions differ only in their
// input channels). The sums run in another order than
// one convolution's (float rounding differs as between two GEMM kernels); NaN and inf reach the result as they
// would (a NaN or inf term, or inf - inf, in any piece's sum is in the total). Other traces, and traces with
// regions, are returned unchanged.
#pragma once

#include "core/transforms/transform.h"

namespace thunderc {

Trace split_cat_conv(const Trace& trace, const TransformContext& ctx);
const Transform& split_cat_conv_transform();

}  // namespace thunderc
