// What the `cpp` executor (fused C++ loops, codegen/cpp/) implements, as checker functions. Anything a
// checker rejects is left for the next executor (torch), so these must say no to every use that the cpp
// code generation does not handle: dtypes other than float32/float64 (bool only for masks, conditions,
// comparisons and data movement), devices other than the CPU, div with a rounding mode.
#pragma once

#include "core/executors/executor.h"

namespace thunderc {

// Registers every operator the cpp executor implements, each with its checker.
void register_cpp_impls(Executor& cpp);

}  // namespace thunderc
