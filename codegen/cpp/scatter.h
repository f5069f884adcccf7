// The cpp executor's writes at index tensors and its advanced indexing, each a loop nest of its own (never in
// a region): scatter and scatter_reduce (along one dim, as torch.Tensor.scatter_ / scatter_reduce_),
// index (a[idx0, idx1, ...] with integer index tensors broadcast together), index_put (its assignment,
// optionally accumulating) and masked_scatter (the places a mask holds take a source's elements in order). The result starts as a copy of the input; every index is checked before anything
// is written, and one out of range fails the call with ATen's message. Writes happen one at a time in the
// index tensor's order, so of two writes to one place without a reduction the later wins (ATen leaves that
// case unspecified; its CPU kernels agree).
#pragma once

#include "codegen/backend.h"

namespace thunderc {

bool is_cpp_scatter_op(const std::string& name);
void emit_cpp_scatter(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
