// attention: recognizes attention written out as primitives and rewrites it into one
// scaled_dot_product_attention symbol, so an executor with a fused kernel can take it (decompose turns it
// back into primitives when none does).
//
// Recognized (q [..., L, E], k [..., S, E], v [..., S, Ev], all of one rank >= 2):
//   p = softmax(x, dim=-1 or rank-1, dtype None or unchanged)         -> result = matmul(p, v)
//   x = masked_fill(s, M, -inf)   (M bool; M is "drop", sdpa's mask is "keep": attn_mask = not M)
//     | where(K, s, -inf)         (K bool: attn_mask = K)
//     | add(s, F) or add(F, s)    (F of the scores' dtype: additive attn_mask = F)
//     | s                          (no mask)
//   s = a chain of mul(·, c), mul(c, ·), div(·, c) by a Python number or a one-element float constant c
//       (scale = product of the factors; 1 when there is none) on  matmul(q', kt)
//   kt = permute(k', dims) with dims the identity except the last two swapped
//   q', k' may themselves be q, k scaled by such factors (folded into scale).
// A bool mask that is a constant keep-pattern j <= i over [L, S] with L == S (every leading dim 1)
// becomes is_causal=True with no mask; any other constant mask is negated at compile time (a new bool
// constant "<mask>_keep"); a computed one gets a logical_not symbol before the attention.
// `scale` is always recorded explicitly (also when it equals the default 1/sqrt(E)).
//
// Conditions: every intermediate (the scalings, kt, the scores, the masked scores, p) has exactly one reader
// and is not a trace output; every step keeps the type of the value it rewrites (so a mask never broadcasts
// the scores to a larger shape); q, k, v have a floating dtype; the new symbol's output type equals the
// replaced matmul's. Anything else is left unchanged.
//
// After it runs: each recognized pattern is one scaled_dot_product_attention symbol (plus a logical_not
// for a computed bool mask) placed where the final matmul was, defining that matmul's output value (same
// id and name, so readers and outputs are unchanged); the removed intermediates are gone; every other
// symbol is unchanged and in order. Traces with regions (fusion symbols) are returned unchanged.
#pragma once

#include "core/transforms/transform.h"

namespace thunderc {

Trace fuse_attention(const Trace& trace);
const Transform& attention_transform();  // name "attention"; a static object, as the other passes

}  // namespace thunderc
