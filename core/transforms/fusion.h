// The `fusion` transform: groups the symbols claimed by a loop executor (`cpp` or `nvfuser`) into regions
// (bound symbols of op "fusion", that executor, attribute name="<executor>_fusion<N>") that codegen/cpp/
// turns into fused loops and codegen/nvfuser/ into CUDA kernels. One partitioner, parameterized by the
// executor. nvfuser's GEMM-backed operators (linear, matmul, bmm, addmm, conv2d) never join their producers'
// region: each starts one that its consumers may join (their elementwise ops become the GEMM kernel's
// epilogue); a GEMM that nothing joins stays a lone symbol.
//
// After fuse_regions(t, e):
//  * every symbol claimed by e is inside exactly one region, except reshapes whose region would hold
//    nothing else: those stay top-level symbols, so the memory plan can alias them (no copy);
//  * a region's subsymbols are in their original relative order; its inputs are the tensors its
//    subsymbols read that it does not compute (first-use order); its outputs are the values it computes
//    that a symbol outside it reads or the trace returns (in the order they are computed);
//  * symbols may be reordered, but only as dataflow allows: the trace is a topological order of the
//    condensed graph (regions as nodes), there are no cycles between a region and the rest of the trace,
//    and regions are numbered 0, 1, ... in trace order; the result passes verify_trace.
//
// Fusion rules (grouping by dataflow, not only adjacency): symbols are visited in trace order; a cpp
// symbol joins the region of one of its cpp producers (the most recent one first) when that creates no
// cycle, and the regions of its other cpp producers are merged into that region when that creates no
// cycle either; otherwise it starts a new region. Every cpp operator may be combined with any other (the
// cpp codegen materializes what it has to: reduction and normalization statistics, values read more than
// once, inputs of pooling), so no pair of ops is illegal; siblings that only share an input are not merged.
//
// Library calls (fuse_library_epilogues, run first): a GEMM claimed by cublas, or a convolution claimed by
// cudnn or onednn, absorbs the chain of symbols after it that its library applies in the same call, each the sole
// reader of the value before it (never a returned value): for cudnn an optional residual add (the other
// operand of exactly the output's type) then an optional relu, sigmoid or silu; for onednn the residual add,
// and in a bounded variant (TransformContext::bounded_inputs) an optional relu, hardtanh, clamp (both bounds),
// sigmoid, silu or hardswish where the value it reads is NaN-free; for cublas an optional relu
// or gelu(approximate='tanh') (cuBLASLt's GELU is the tanh form). The chain becomes a region of the library
// executor ("cudnn_fusion<N>") placed where its last member was; nothing else moves. In a bounded variant an
// onednn 3x3 stride-1 dense convolution whose output is NaN-free also becomes a region (alone if nothing
// follows) marked winograd=True: oneDNN may then compute it with Winograd (--conv-algorithm auto), whose
// transforms would turn an inf input into NaN.
#pragma once

#include <functional>

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

Trace fuse_regions(const Trace& trace, const std::string& executor);
Trace fuse_cpp_regions(const Trace& trace);  // fuse_regions(trace, "cpp")
// Whether a value can hold no NaN in a bounded variant (nan_free_values, value_bounds.h): an onednn convolution
// absorbs an activation (whose post-op turns NaN into a number) only where the value it reads is NaN-free.
// Empty (every exact variant): never.
using NanFreePredicate = std::function<bool(ValueId)>;
Trace fuse_library_epilogues(const Trace& trace, const NanFreePredicate& nan_free = {});
// Whether fusion marked this onednn region winograd=True (its convolution may use Winograd).
bool winograd_marked(const BoundSymbol& sym);

// name "fusion"; runs fuse_library_epilogues (NaN-hiding epilogues with context.bounded_inputs), then
// fuse_regions for cpp and for nvfuser.
const Transform& fusion_transform();

}  // namespace thunderc
