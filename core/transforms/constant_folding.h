// `constant-folding`: evaluates at compile time what depends only on constants.
//
// After constant_folding(t):
//  * no symbol outside a region that the reference interpreter (reference_eval.h) can evaluate has only
//    constant tensor operands, unless
//      - it is an expand (a free view; folded, it would embed the copies), or
//      - its result would be larger than kFoldLimitBytes and it is not pure data movement that does not
//        grow the data (reshape, permute, slice, select, cat: e.g. a transposed weight is folded at any
//        size), or
//      - the trace returns its output (the compiled function never returns a constant's buffer), or
//      - it cannot be evaluated exactly (float16/bfloat16 arithmetic, integer division by zero, ...);
//  * each folded symbol is gone, its readers read a new constant named "folded_<its output>" that holds
//    the bytes the operation would have computed; folding repeats along chains (w.T * 2 folds twice);
//  * constants created here that end up unused are removed again (the model's own constants are left
//    to dce).
#pragma once

#include <cstddef>

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

inline constexpr std::size_t kFoldLimitBytes = 64 * 1024;

Trace constant_folding(const Trace& trace);

// name "constant-folding"; runs constant_folding (needs no context).
const Transform& constant_folding_transform();

}  // namespace thunderc
