// Code generation for the `cpp` executor: each region (op "fusion" made by core/transforms/fusion.h) or
// lone cpp symbol becomes plain C++ loops in the variant function. No library beyond libgomp is needed.
//
// How a region is lowered (shapes are static, so every stride and bound is a literal):
//  * Each value is an expression tree over the index space of its shape. Leaves are strided loads from
//    a buffer (a region input, a region output already written, or scratch); permute, expand, slice,
//    select and view-compatible reshape only rewrite the leaves' offsets and strides, so data movement
//    feeding elementwise ops costs nothing. Elementwise ops (with broadcasting) add nodes; batch_norm,
//    and the final step of softmax, log_softmax and layer_norm, are elementwise nodes too.
//  * A value is materialized (one loop nest storing the tree) only when it is a region output, is read
//    more than once inside the region, feeds a reduction statistic, pooling, cat, or a reshape that is
//    not a view. Materialized intermediates live in the symbol's scratch space (scratch_bytes()).
//  * Loop nests iterate the output shape in row-major order with dimensions merged where every access
//    allows it (so contiguous chains become one flat loop); per-level offsets are hoisted out of inner
//    loops (no division or modulo per element). Innermost loops carry `#pragma omp simd`; reductions
//    over the innermost dim use simd reduction accumulators, reductions over outer dims accumulate into
//    the output row (vectorized over the kept inner dims).
//  * The outermost loop runs `#pragma omp parallel for` when the work is large enough; the thread count
//    is call->num_threads (the runtime's THUNDERC_NUM_THREADS, else all cores). Every output element is
//    computed by one thread in a fixed order, so results do not depend on the thread count.
//  * Flags: -O3 -fopenmp -fno-math-errno; the instruction set is --cpu-target's (-march=..., whole module)
//    (ISO C++ mode keeps -ffp-contract=off, so FMA never changes rounding). No -ffast-math: NaN and inf
//    behave as in PyTorch (amax ignores NaN, a documented difference).
#pragma once

#include "codegen/backend.h"

namespace thunderc {

class CppBackend : public Backend {
 public:
  std::string executor() const override { return "cpp"; }
  LinkInputs link_inputs() const override;
  void emit_variant_prologue(SourceWriter& out) const override;
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;
  std::size_t scratch_bytes(const Trace& trace, const BoundSymbol& sym) const override;
};

}  // namespace thunderc
