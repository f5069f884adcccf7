// The cpp executor's dropout_mask (--module-mode train, docs/training.md "Dropout"): Bernoulli(1 - p) draws
// from the call's RNG state with Philox4x32-10 (codegen/include/thunderc/philox.h). Counter-based, so chunks of
// the mask run in parallel and the backward's recomputation draws the same values.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

bool is_cpp_dropout_op(const std::string& name);
void emit_cpp_dropout_mask(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
