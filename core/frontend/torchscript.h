// The TorchScript frontend: torch::jit::load -> eval -> freeze -> inline -> import into a Trace, with the
// input shapes of one specialization. LibTorch stays behind this header (pimpl): callers never include it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frontend/shape_spec.h"
#include "core/frontend/sharp_edges.h"
#include "core/ir/trace.h"

namespace thunderc {

class TorchScriptModel {
 public:
  // Loads and freezes the module. UserError when the file is missing, unreadable or not TorchScript.
  static TorchScriptModel load(const std::string& path);
  TorchScriptModel(TorchScriptModel&&) noexcept;
  TorchScriptModel& operator=(TorchScriptModel&&) noexcept;
  ~TorchScriptModel();

  const std::string& path() const;
  // forward's tensor arguments, without self (names as the graph has them, e.g. "x" or "input.1").
  const std::vector<std::string>& input_names() const;
  // Input shapes stored with the model (the "thunderc.json" extra file that samples/make_samples.py writes),
  // if any. Saved TorchScript does not keep the example shapes of a trace, so most models need --shapes.
  std::optional<Specialization> recorded_shapes() const;

  // Resolves a --shapes specialization against input_names() (positional, named, dtype defaults):
  // UserError naming unknown or missing inputs.
  std::vector<TensorType> resolve_shapes(const Specialization& spec, Device device) const;

  // Imports forward() for these input types into a trace stamped "torchscript-import". UserError listing
  // every unsupported operator (with its count and source location) or data-dependent construct. Sharp
  // edges met on the way (see sharp_edges.h) are appended to `sharp_edges` when given. In-place updates are
  // functionalized; with `alias_updates` (the default) an update through a view also updates its base and
  // every other view of it, as in PyTorch — without, other views keep their old values (faster, and wrong
  // for models that read them: --skip-inplace-alias-updates).
  Trace import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges = nullptr,
               bool alias_updates = true) const;

  // named_parameters() of the module (before freezing) that require grad.
  std::vector<std::string> parameter_names() const;
  void set_trace_parameters(bool on);
  // Floating-point named_buffers() (before freezing), and training mode (see ModelFrontend).
  std::vector<std::string> buffer_names() const;
  void set_training_mode(bool on);

  // The text of the frozen, inlined TorchScript graph, for --verbose and bug reports.
  std::string graph_str() const;

 private:
  struct Impl;
  explicit TorchScriptModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The version of the LibTorch the frontend was built against ("1.13.0").
std::string libtorch_version();
// Every node kind the TorchScript importer handles ("aten::relu", "aten::relu_", ...), sorted.
std::vector<std::string> torchscript_imported_kinds();

}  // namespace thunderc
