// The cpp executor's embedding: `out[i, :] = weight[indices[i], :]` for every index (any index shape), as a
// check of every index followed by one row copy per index.
//
//  * An index outside [0, rows) fails the call (the variant returns 1 with "embedding: index I is out of
//    range for a table of R rows" in call->error), as ATen raises IndexError; nothing is written then.
//  * Rows are copied with memcpy, in parallel over indices when there is enough to copy.
//  * Never in a region (core/transforms/fusion.cpp): the indices are data, not a loop the region lowering
//    can express.
// What the checker (cpu_embedding, core/executors/cpp_support.cpp) accepts is what this handles: a floating
// 2-D table and int32/int64 indices on the CPU.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

void emit_cpp_embedding(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

// embedding_bag: per bag, the sum (times per_sample_weights), mean or max of its rows, padding_idx's rows left
// out, an empty bag zeros. Indices and offsets are checked first (offsets start at 0, never decrease, stay
// within the indices); bags run in parallel.
void emit_cpp_embedding_bag(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
