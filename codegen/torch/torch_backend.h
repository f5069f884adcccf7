// Code generation for the `torch` executor (calls into the prebuilt ATen shim).
#pragma once

#include "codegen/backend.h"

namespace thunderc {

struct ShimLocation {
  std::string include_dir;  // holds thunderc/aten_shim.h
  std::string library;      // libthunderc_aten_shim.so
  std::string library_dir;  // for the rpath
};

class TorchBackend : public Backend {
 public:
  explicit TorchBackend(ShimLocation shim);
  std::string executor() const override { return "torch"; }
  LinkInputs link_inputs() const override;
  void emit_variant_prologue(SourceWriter& out) const override;
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;

 private:
  ShimLocation shim_;
};

}  // namespace thunderc
