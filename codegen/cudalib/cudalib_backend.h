// Code generation for the library executors `cublas` (GEMMs through cuBLASLt) and `cudnn` (convolutions
// through cuDNN's graph API).
//
// A claimed symbol — a lone GEMM/convolution, or a region whose head is one and whose other members are the
// epilogue its library applies (core/transforms/fusion.h, fuse_library_epilogues) — becomes one
// library call through call->device_api (ABI 3): a static descriptor (thunderc_gemm / thunderc_conv2d) with
// every size and stride, the operands' device pointers, and the call's id, under which the runtime caches
// the library's plan. The model links neither library: the runtime dlopens them on the machine that runs it.
// Where the runtime answers THUNDERC_DEVICE_API_FALLBACK (library missing or too old, no engine for the
// problem on that GPU), the variant runs nvfuser's kernel for the same symbol instead, generated here too,
// so a model compiled for cublas/cudnn runs wherever nvfuser's kernels do.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

class LibraryBackend : public Backend {
 public:
  // `tf32`: --precision tf32, the descriptors' math is THUNDERC_LIB_MATH_TF32 (tensor cores allowed).
  explicit LibraryBackend(std::string executor, bool tf32 = false) : executor_(std::move(executor)), tf32_(tf32) {}
  std::string executor() const override { return executor_; }
  LinkInputs link_inputs() const override { return {}; }
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;
  std::size_t scratch_bytes(const Trace& trace, const BoundSymbol& sym) const override;
  void emit_module_prelude(SourceWriter& out) const override;  // nvfuser's (its kernels are the fallbacks)

 private:
  std::string executor_;  // "cublas" or "cudnn"
  bool tf32_ = false;
};

}  // namespace thunderc
