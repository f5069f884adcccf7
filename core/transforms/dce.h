// `dce`: dead-code elimination.
//
// After dce(t):
//  * every symbol has at least one output that a later symbol reads or the trace returns (symbols are
//    pure, so nothing else makes one necessary); the kept symbols are in their original order, unchanged
//    (executors, regions and their subsymbols included: a region is kept whole when any output is used);
//  * every constant is read by some symbol or returned; unused constants are removed with their bytes;
//  * inputs and outputs are unchanged (inputs are the compiled function's ABI, even when unused).
#pragma once

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

Trace dce(const Trace& trace);

// name "dce"; runs dce (needs no context).
const Transform& dce_transform();

}  // namespace thunderc
