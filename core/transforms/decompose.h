// `decompose`: rewrites composite operators into simpler catalog operators, for executors that lack them.
//
// Rules (each result computes the same function up to floating-point rounding):
//   linear(a, w, b)        -> matmul(a, permute(w, [1, 0])) + b          (1-D w: matmul(a, w) + b)
//   addmm(c, a, b)         -> beta * c + alpha * matmul(a, b)             (scalings only when != 1)
//   softmax(a, dim)        -> e = exp(a - amax(a, dim, keepdim)); e / sum(e, dim, keepdim)
//   log_softmax(a, dim)    -> (a - m) - log(sum(exp(a - m), dim, keepdim)), m = amax(a, dim, keepdim)
//   layer_norm(a, w, b)    -> d = a - mean(a); d * rsqrt(mean(d * d) + eps) * w + b  (over the normalized dims)
//   rms_norm(a, w)         -> a * rsqrt(mean(a * a) + eps) * w             (over the normalized dims)
//   batch_norm(a, ...)     -> (a - mean) * rsqrt(var + eps) * w + b   (statistics reshaped to [C, 1, ...])
//   gelu(a)                -> 0.5 * a * (1 + erf(a / sqrt(2)))   or the tanh approximation
//   silu, hardswish, hardsigmoid -> sigmoid / hardtanh(a + 3, 0, 6) forms
//   scaled_dot_product_attention(q, k, v, mask) -> softmax(q @ k^T * scale (+ mask)) @ v
//       (a bool mask or is_causal becomes masked_fill(..., -inf); the causal mask is a bool constant)
//   amin(a)                -> -amax(-a)
//   any(a) / all(a)        -> amax(float(a != 0)) > 0 / not any(not a)
//   var(a, correction)     -> sum((a - mean(a))^2) / max(0, N - correction)
//   repeat(a, r)           -> reshape(expand(reshape(a, [1, s0, 1, s1, ...]), [r0, s0, r1, s1, ...]), [r0*s0, ...])
//   constant_pad_nd(a)     -> slices for negative amounts, then cat with the value expanded from a 0-dim constant
//   pad(a, reflect|replicate), upsample_nearest2d(a) -> index_select along each dim with constant positions
//   group_norm(a, w, b)    -> layer_norm's statistics over a viewed as [N, G, -1], then * w + b per channel
//   slice_scatter / select_scatter(a, src) -> cat(a before the region, src, a after it)   (unit steps only)
//   conv2d_backward_input(g, w)  -> col2im(W^T @ g per group)               (conv2d's VJP emits these two)
//   conv2d_backward_weight(g, x) -> g @ im2col(x)^T per group, the batch in the contraction
// A softmax produced by a rule is itself decomposed when the same conditions hold for it.
//
// When: a symbol is rewritten when its operator is in context.decompose_ops (explicitly requested), or when
//  (1) the executor list has at least one executor besides the always-executors (torch), and
//  (2) none of those implements this symbol (Executor::can_execute), and
//  (3) every symbol of the rewrite can be run by one of those executors (after rewriting recursively).
// Condition (3) keeps torch from running five small operators instead of one fused ATen call.
// Floating tensors must be float32 or float64: rewriting float16/bfloat16 math would change its rounding
// (ATen computes those in float32 internally), so such symbols are never rewritten.
//
// After decompose(t, ctx): no symbol outside regions satisfies the conditions above; a rewritten symbol's
// output keeps its value (name and id), so readers and the trace's outputs are unchanged; new values get
// fresh "t" names; other symbols are unchanged and in order. Runs before claiming (new symbols are unclaimed).
#pragma once

#include <string>
#include <vector>

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

Trace decompose(const Trace& trace, const TransformContext& context);

// Operators decompose has a rule for (for --decompose and its error message), sorted.
std::vector<std::string> decomposable_ops();

// name "decompose"; runs decompose with the context's executors and decompose_ops.
const Transform& decompose_transform();

}  // namespace thunderc
