// The cpp executor's position-based operators, each as a loop nest of its own (never in a region; see
// core/ops/indexing.cpp): index_select, gather and diagonal (indices are data: every index is checked first, and
// one outside its dimension fails the call with a message, as ATen raises, before anything is written), argmax
// and argmin (the first extreme; NaN counts as the extreme, as ATen), cumsum and prod (accumulating in double
// for floating results and in wrapping int64 for integer ones), sort (stable; NaN above every number) and topk
// (ties by position; ATen leaves their order unspecified). The writes at index tensors are in scatter.cpp,
// upsample_bilinear2d in resample.cpp; emit_cpp_indexing dispatches to them too. Inputs and outputs are
// contiguous buffers; the loops over independent rows run in parallel when there is enough work.
// What the checkers (core/executors/cpp_support.cpp) accept is what this handles.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

// Whether emit_cpp_indexing handles sym's operator.
bool is_cpp_indexing_op(const std::string& name);
void emit_cpp_indexing(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
