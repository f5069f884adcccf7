// Checks that a trace is well formed. After verify_trace(t) returns: every operand is an input, a
// constant or the output of an earlier symbol; every value is defined once; every symbol's operands and
// attributes match its operator's declaration and its output types equal what the meta function gives;
// constants hold exactly their bytes; outputs are defined. Violations throw InternalError (a pass is wrong).
#pragma once

#include <string>

#include "core/ir/trace.h"

namespace thunderc {

// `after` names the pass that produced the trace, for the error message.
void verify_trace(const Trace& trace, const std::string& after);

}  // namespace thunderc
