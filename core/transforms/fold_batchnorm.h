// fold-batchnorm: folds inference batch norms into the convolutions that feed them.
//
// After it runs: every batch_norm whose input is the output of a conv2d that has no other reader (no
// other symbol and not a trace output), whose conv weight and bias (or None) and batch_norm parameters
// (weight/bias or None, running_mean, running_var) are constants of the conv's dtype (float32 or
// float64), is gone: the conv2d computes the batch_norm's output directly with a new weight
// W'[o] = W[o] * s[o] and bias b'[o] = (b[o] - mean[o]) * s[o] + beta[o], s[o] = gamma[o] / sqrt(var[o] + eps),
// computed in float64 at compile time and added to the trace as new constants ("<conv weight>_bnfold",
// "<conv bias or weight>_bnfold_bias"). Every other symbol is kept as is, in order, with the same value ids.
// The folded conv's old weight/bias and the batch_norm's parameters are left in the constant table
// unused (dead-code elimination drops them). Traces with regions (fusion symbols) are returned unchanged.
#pragma once

#include "core/transforms/transform.h"

namespace thunderc {

Trace fold_batchnorm(const Trace& trace);
const Transform& fold_batchnorm_transform();  // a static object, as the other passes

}  // namespace thunderc
