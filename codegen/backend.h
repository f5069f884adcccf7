// Code generation for one executor. Every executor that can claim bound symbols has a Backend that turns
// each claimed symbol into C++ in the variant's function; module_codegen.cpp drives them. Backends only
// produce text: none of them includes LibTorch, CUDA or BLAS headers. CUDA backends also add kernels (CUDA
// C++) to the model's one CUDA module, which is compiled with NVRTC and launched from the variant function
// through call->device_api.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/source_writer.h"
#include "core/ir/trace.h"

namespace thunderc {

// One kernel of the model's CUDA module.
struct CudaKernel {
  std::string name;    // extern "C" name, unique in the module (EmitContext::kernel_name)
  std::string source;  // CUDA C++: the __global__ function and helpers named after it
  std::vector<std::pair<std::string, std::string>> params;  // (type, name), in order
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory
  std::string what;           // what it computes, for the manifest (e.g. "softmax: reduce max")
};

// One call of a CUDA library (thunderc_device_api.gemm / .conv2d, ABI 3) that a variant makes.
struct LibraryCall {
  std::string library;  // "cublasLt", "cudnn"
  std::string what;     // what it computes, for the manifest ("linear 1x16x192x64 +bias")
  std::uint32_t id = 0; // its id (unique in the module), set by EmitContext::add_library_call
};

// What a backend needs to know while emitting one symbol.
class EmitContext {
 public:
  virtual ~EmitContext() = default;
  virtual const Trace& trace() const = 0;
  // Name of the `thunderc_buffer` variable holding this tensor value in the generated function.
  virtual std::string buffer(ValueId v) const = 0;
  // Statement to run when a call fails and has already written its message to call->error.
  virtual std::string on_failure() const = 0;
  // Expression (unsigned char*) of the symbol's scratch space; only when scratch_bytes() > 0.
  virtual std::string scratch() const = 0;
  // Symbolic variants: a C++ expression (int64_t) per element of the symbol's encoded integer attributes
  // (core/ir/attr_codec.h), when any depends on a symbol; null otherwise (the attributes are constants).
  virtual const std::vector<std::string>* int_attr_exprs() const { return nullptr; }
  // Symbolic variants on a native executor: the symbol is emitted once per sample binding and the texts are
  // merged (codegen/symbolic_code.h). A backend must then print the same code at every size, sizes aside:
  // decisions taken from sizes (run in parallel or not, block sizes) move into the generated code or use
  // bounds that hold for every size, and upper bounds are marked with kAtMax.
  virtual bool symbolic_sizes() const { return false; }
  // CUDA variants: a kernel name unique in the module, made of the variant, the symbol and `base` (an
  // identifier); and the registration of a kernel, which returns its index (device_api->launch's `kernel`).
  // Null context (only sizing scratch): backends register nothing.
  virtual std::string kernel_name(const std::string& base) const { return base; }
  virtual std::size_t add_kernel(CudaKernel kernel) const { return 0; }
  // CUDA variants: registers a library call and returns its id (unique in the module: the runtime caches
  // the library's plan per id).
  virtual std::uint32_t add_library_call(LibraryCall call) const { return 0; }
};

// What the generated .so needs to build and link for one backend.
struct LinkInputs {
  std::vector<std::string> includes;      // #include lines' targets, e.g. "thunderc/aten_shim.h"
  std::vector<std::string> include_dirs;
  std::vector<std::string> libraries;     // full paths of shared libraries to link
  std::vector<std::string> rpaths;
  std::vector<std::string> compile_flags;  // e.g. -fopenmp, -O3
  std::vector<std::string> link_flags;     // e.g. -fopenmp, -lopenblas
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string executor() const = 0;
  virtual LinkInputs link_inputs() const = 0;
  // Statements at the start of every variant function that uses this backend (e.g. thread settings).
  virtual void emit_variant_prologue(SourceWriter& out) const {}
  virtual void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const = 0;
  // Workspace bytes the symbol needs while it runs (planned with the other buffers, never allocated per call).
  virtual std::size_t scratch_bytes(const Trace& trace, const BoundSymbol& sym) const { return 0; }
  // An input of the (single-output) symbol whose buffer may also hold its output, where that input is read by
  // nothing later: the generated code must read each element of it before writing the output's element at the
  // same place (codegen/memory_plan.h). nullopt: the output gets a buffer of its own.
  virtual std::optional<ValueId> output_over_input(const Trace& trace, const BoundSymbol& sym) const {
    return std::nullopt;
  }
  // Helper functions (kernels) to place once before the variant functions; emit_symbol calls them.
  virtual void emit_module_prelude(SourceWriter& out) const {}
};


}  // namespace thunderc
