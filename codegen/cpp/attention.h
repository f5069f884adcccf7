// The cpp executor's fused attention kernel: one scaled_dot_product_attention symbol becomes a flash-style
// loop nest in the variant function, with every shape, stride and the scale as literals.
//
//  * Work items are (batch, block of BR query rows); the batch offsets of q, k, v and the mask come from the
//    batch index (broadcast dims have stride 0). Items run in parallel when the work is large enough.
//  * For each block, keys are streamed in tiles of TS: the key tile is transposed into a local [E, TS]
//    buffer (shared by the block's rows); the block's scores come from a register-blocked micro-kernel
//    (4 rows x 2 vectors of keys, over E); each row's scores are scaled, masked (causal j > i, bool mask ->
//    -inf, or an additive mask) and folded into its running max m and sum l (online softmax); then a second
//    micro-kernel (4 rows x 2 vectors of value columns, over the tile's keys) rescales the accumulators by
//    exp(m_old - m_new) and adds the tile's weighted values. Vectors are GCC's generic 32-byte vectors, so
//    the source does not depend on the ISA (--cpu-target picks the instructions).
//    The L x S weights are never stored; per-thread state is BR x (Ev + TS) + E x TS elements on the stack.
//  * A causal block stops at its last row's diagonal. A row whose keys are all masked ends with l = 0 and
//    acc = 0: 0 / 0 = NaN, as PyTorch's softmax of a row of -inf. NaN scores propagate to their row.
//  * float32 uses thunderc_expf (cpp_math.h, vectorizes); float64 uses std::exp.
// What the checker (core/executors/cpp_support.cpp) accepts is exactly what this handles: float32 or float64
// q, k, v of one rank >= 2 (batch dims broadcasting), a bool mask or one of the query's dtype that
// broadcasts to [..., L, S] without growing it.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

void emit_cpp_attention(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
