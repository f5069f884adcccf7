// Code generation for the `onednn` executor: each claimed conv2d or linear, alone or as a region with the
// residual add and activation that fusion let it absorb (onednn_fusion<N>), becomes one call of
// thunderc_onednn::Conv2d or thunderc_onednn::Linear (include/thunderc/onednn_kernels.h) with its sizes as literals. The generated .so links oneDNN (libdnnl) and
// libgomp, nothing else. Why oneDNN for convolutions, and the measurements: docs/onednn.md.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

struct OnednnLocation {
  std::string kernels_include_dir;  // holds thunderc/onednn_kernels.h
  std::string include_dir;          // oneDNN's headers (oneapi/dnnl/dnnl.hpp)
  std::string library;              // libdnnl.so (full path)

  // The locations this thunderc was built with (empty when it was built without oneDNN).
  static OnednnLocation from_build();
};

class OnednnBackend : public Backend {
 public:
  // `winograd` (--conv-algorithm auto): calls may use oneDNN's Winograd kernel where it pays (winograd_pays in
  // onednn_kernels.h decides at run time, from the sizes and the CPU). false (direct): never.
  explicit OnednnBackend(OnednnLocation location = OnednnLocation::from_build(), bool winograd = true);
  std::string executor() const override { return "onednn"; }
  LinkInputs link_inputs() const override;
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;
  // A fused residual add: oneDNN's sum post-op adds what the output buffer holds, so the output may take over
  // the residual's buffer (saving the copy in) unless the convolution or linear also reads it.
  std::optional<ValueId> output_over_input(const Trace& trace, const BoundSymbol& sym) const override;

 private:
  void emit_conv2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const;
  void emit_linear(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const;
  void emit_conv2d_backward(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const;

  OnednnLocation location_;
  bool winograd_;
};

}  // namespace thunderc
