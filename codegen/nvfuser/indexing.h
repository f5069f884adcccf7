// nvfuser's kernels for indexing operators on CUDA (inference and --autograd), each mirroring the cpp kernel
// (codegen/cpp/indexing.cpp, scatter.cpp, embedding.cpp) so that both give the same results:
//  * embedding, index_select, gather, diagonal: a thread per element written; embedding_bag: a thread per
//    (bag, column), the bag's rows in order.
//  * argmax/argmin, cumsum, prod: a thread per row along `dim`, in the cpp kernels' order and precision.
//  * sort/topk: a thread per element, which counts the elements of its row that come before it (a stable
//    order, NaN last ascending) and writes itself at that rank; n^2 per row.
//  * scatter: a copy of the input, then the last index element of each group (below) writes.
//  * index: a thread per element written; index_put: a copy, then a thread per indexed position, where the last
//    position naming a place writes (accumulate: the first adds all of them in order); n^2 for n positions.
//  * scatter_reduce (sum, prod, mean, amax, amin; float32/float64; what embedding's VJP emits): the result
//    starts as a copy of the input (one kernel), then a thread per index element (a second kernel). Among the
//    index elements that share every coordinate but `dim` and hit the same place, only the first along `dim`
//    (the "leader") writes: it reduces all of them in order along `dim`. So no two threads write one element,
//    nothing needs atomics, and the reductions happen in the cpp kernel's order (codegen/cpp/scatter.cpp):
//    the same results, bit for bit. The work is O(index elements x extent along dim), fine for a batch's
//    tokens (embedding's gradient: tokens^2 x width), not for very long scatters.
// An index out of range stops the kernel with __trap(), as PyTorch's device-side assert does: the call fails
// with the CUDA error where the runtime next synchronizes, and the CUDA context is unusable afterwards (as
// after PyTorch's assert). Every size is a literal, indices 64-bit.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

bool is_cuda_indexing_op(const std::string& name);

// The launches of an indexing symbol (is_cuda_indexing_op), in order, each named by `name_of(base)`; each kernel's
// parameters are (out, inputs...), the inputs of kernel k in (*inputs)[k] (filled when not null).
std::vector<cuda::KernelLaunch> cuda_indexing_kernels(const std::function<std::string(const std::string&)>& name_of,
                                                      const Trace& t, const BoundSymbol& sym,
                                                      std::vector<std::vector<ValueId>>* inputs = nullptr);

// The symbol's launches (its kernels registered through ctx).
void emit_cuda_indexing(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
