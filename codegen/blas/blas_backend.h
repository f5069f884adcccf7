// Code generation for the `blas` executor: linear, matmul, bmm, addmm and conv2d in float32/float64 as
// calls to CBLAS (OpenBLAS) GEMM/GEMV and to the small kernels of include/thunderc/blas_kernels.h. The
// generated .so links libopenblas and nothing else (no LibTorch). Design and measurements: docs/blas.md.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

struct BlasLocation {
  std::string kernels_include_dir;  // holds thunderc/blas_kernels.h
  std::string library;              // libopenblas.so (full path) or empty: -lopenblas
  std::string library_dir;          // for the rpath (empty: none)

  // The locations this thunderc was built with.
  static BlasLocation from_build();
};

class BlasBackend : public Backend {
 public:
  explicit BlasBackend(BlasLocation location = BlasLocation::from_build());
  std::string executor() const override { return "blas"; }
  LinkInputs link_inputs() const override;
  void emit_variant_prologue(SourceWriter& out) const override;
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;
  std::size_t scratch_bytes(const Trace& trace, const BoundSymbol& sym) const override;

 private:
  BlasLocation location_;
};

}  // namespace thunderc
