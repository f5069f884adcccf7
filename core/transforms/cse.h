// `cse`: common-subexpression elimination.
//
// After cse(t):
//  * no two symbols outside regions compute the same thing: the same operator on the same operands
//    (values and numbers) with the same attributes and executor; the first one is kept and later readers
//    of a duplicate read the first one's outputs instead;
//  * symbols whose outputs the trace returns are kept even when they duplicate an earlier one (so the
//    compiled function never returns one buffer twice); regions are never merged (their operands are
//    renamed like any other symbol's);
//  * otherwise the symbols are unchanged and in their original order.
#pragma once

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

Trace cse(const Trace& trace);

// name "cse"; runs cse (needs no context).
const Transform& cse_transform();

}  // namespace thunderc
