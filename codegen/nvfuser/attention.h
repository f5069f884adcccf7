// nvfuser's fused attention kernel: one scaled_dot_product_attention symbol (float32) becomes one CUDA kernel,
// flash-style: the L x S weights are never stored.
//
//  * A block of 4 warps takes 4 consecutive query rows of one batch entry (grid: row blocks x batch); each
//    warp owns one row, its q row staged in shared memory.
//  * Keys stream in tiles of 32: the block loads the tile's K [32][E] and V [32][Ev] into shared memory
//    (coalesced along E / Ev; rows past S are zero), then lane j of each warp computes the score of key j
//    (a dot product over E from shared memory), scales and masks it (causal j > i, bool mask -> -inf, or an
//    additive mask), and the warp folds the 32 scores into the row's online softmax: tile max and sum by
//    warp shuffles, the running max m and sum l, and the output accumulator (lane d owns outputs d, d + 32,
//    ...; the 32 weights are broadcast by shuffles). A causal block stops at its last row's diagonal.
//  * A row whose keys are all masked ends with l = 0 and a zero accumulator: 0 / 0 = NaN, as PyTorch's softmax
//    of a row of -inf; a NaN score makes its row NaN, as in PyTorch.
// Sizes, strides (batch broadcasting: stride 0), the scale and the mask's strides are literals. Limits (the
// checker in core/executors/cpp_support.cpp enforces them): E and Ev <= 128 (static shared memory stays under
// 48 KiB), the mask as for the cpp kernel (no dims beyond the weights').
#pragma once

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

// The kernel of an sdpa symbol nvfuser claimed; parameters (out, q, k, v[, mask]).
cuda::KernelLaunch cuda_attention_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym);

// The symbol's launch (its kernel registered through ctx).
void emit_cuda_attention(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
