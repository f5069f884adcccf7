// How nvfuser maps a GEMM-backed symbol (linear, matmul, bmm, addmm, conv2d) onto its kernels
// (codegen/nvfuser/gemm.h). Shared with the library executors (codegen/cudalib/), which describe the same
// problem to cuBLASLt/cuDNN and carry nvfuser's kernel as their fallback.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

// The output is contiguous, so the element the epilogue computes is at `flat` (an expression in the
// epilogue's index variables).
struct GemmPlan {
  bool conv = false;
  cuda::GemmSpec g;
  cuda::Conv2dSpec c;
  std::vector<std::size_t> operands;  // inputs passed after the output: (a, b) or (input, weight)
  std::vector<std::size_t> extras;    // inputs passed as the spec's extra_params (bias), in order
  std::string flat;
  std::string what;
  bool empty = false;  // no output element: nothing to launch
};

// The plan of a GEMM-backed symbol that nvfuser's checker (core/executors/cpp_support.cpp, cuda_gemm) accepts.
GemmPlan plan_gemm(const Trace& t, const BoundSymbol& s);

// Registers a generated kernel (through ctx) and appends its launch to `lines`, with the argument variables
// in parameter order.
void add_gemm_kernel(const EmitContext& ctx, const cuda::KernelLaunch& l, const std::vector<std::string>& vars,
                     const std::string& what, std::vector<std::string>& lines, const std::string& indent);

// A block of the variant function that launches kernel `l` (registered through ctx) on the device pointers of
// `output` then `inputs`, its parameters in that order.
void emit_kernel_block(const EmitContext& ctx, const cuda::KernelLaunch& l, ValueId output,
                       const std::vector<ValueId>& inputs, const std::string& what, SourceWriter& out);
// The same with several outputs (sort, topk: values and positions), passed first in order.
void emit_kernel_block(const EmitContext& ctx, const cuda::KernelLaunch& l, const std::vector<ValueId>& outputs,
                       const std::vector<ValueId>& inputs, const std::string& what, SourceWriter& out);

// A one-dimensional grid-stride kernel `name` over `total` elements, with the given parameter declarations;
// `body` (lines, indented here) sees `long long e_`, the element (codegen/nvfuser/cnn_gradients.cpp, indexing.cpp).
cuda::KernelLaunch grid_stride_kernel(const std::string& name, std::int64_t total, std::vector<std::string> params,
                                      const std::vector<std::string>& body);

// A symbol that is one kernel of its own (attention aside: cnn_gradients.h, sampling.h, dropout.h): nothing
// when its output is empty, else the kernel `make(name)` builds, launched on the output then every tensor input.
void emit_symbol_kernel(const EmitContext& ctx, const BoundSymbol& sym,
                        const std::function<cuda::KernelLaunch(const std::string& name)>& make, SourceWriter& out);

// A GEMM-backed symbol outside any region: its kernel, bias in the epilogue.
void emit_lone_gemm(const EmitContext& ctx, const BoundSymbol& s, SourceWriter& out);

}  // namespace thunderc
