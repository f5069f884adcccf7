// What every model frontend offers the pipeline (cli/pipeline.cpp): load by path, the inputs, the shapes
// recorded with the model, --shapes resolution and import of one specialization into a Trace.
// Implementations: TorchScript (torchscript.h, LibTorch) and torch.export archives (pt2.h, no LibTorch).
// load_model picks one by the file's content, not its extension.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frontend/shape_spec.h"
#include "core/frontend/sharp_edges.h"
#include "core/ir/error.h"
#include "core/ir/trace.h"

namespace thunderc {

class ModelFrontend {
 public:
  virtual ~ModelFrontend() = default;

  virtual const std::string& path() const = 0;
  // "torchscript" or "pt2": the manifest's source format.
  virtual std::string format() const = 0;
  // For `thunderc examine`: "TorchScript, LibTorch 1.13.0" or "torch.export, written by torch 2.15.0".
  virtual std::string description() const = 0;
  // The model's tensor inputs, in call order (names as the model has them).
  virtual const std::vector<std::string>& input_names() const = 0;
  // Example input shapes stored with the model, if any.
  virtual std::optional<Specialization> recorded_shapes() const = 0;
  // Dynamic dimensions the model declares (torch.export's Dim): the recorded shapes with those sizes as
  // symbols, and each symbol's range. Null when it declares none that one symbolic variant can serve (no
  // upper bound, or a size that is an expression rather than a symbol); `why_not` then says why, if any.
  // `bounds` (--dim NAME=LO:HI naming the model's own symbols) narrow a declared range or give an unbounded
  // one its upper bound; a bound outside the declared range, or naming no declared symbol, is a UserError.
  struct DeclaredDims {
    Specialization spec;
    std::vector<DimRange> dims;
  };
  virtual std::optional<DeclaredDims> declared_dims(std::string* why_not = nullptr,
                                                    const std::vector<DimRange>& bounds = {}) const {
    return std::nullopt;
  }
  // Resolves a --shapes specialization against input_names(); UserError naming unknown or missing inputs.
  virtual std::vector<TensorType> resolve_shapes(const Specialization& spec, Device device) const = 0;
  // Imports the model for these input types. UserError listing every unsupported operator. Sharp edges are
  // appended to `sharp_edges` when given. `alias_updates`: see TorchScriptModel::import.
  virtual Trace import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges = nullptr,
                       bool alias_updates = true) const = 0;
  // The model's trainable parameters (state_dict names, in the model's order), for --autograd: the frontend
  // imports them as constants named so, and never folds computation on them at import (trace_parameters).
  virtual std::vector<std::string> parameter_names() const { return {}; }
  // Whether import() keeps parameters as traced constants instead of evaluating ops on them at import
  // (TorchScript folds everything computable at compile time; --autograd must see the ops on parameters).
  virtual void set_trace_parameters(bool on) { (void)on; }
  // --module-mode train (with --autograd): batch norm normalizes with the batch's statistics and updates its
  // running statistics, which are then state (buffers, traced like parameters: buffer_names()); a module
  // that would draw random numbers (dropout with p > 0) is refused, naming the nodes. Frontends without a
  // training mode refuse it.
  virtual void set_training_mode(bool on) {
    if (on) user_error("--module-mode train is supported for TorchScript models only (use --module-mode eval)");
  }
  // The floating-point buffers (state_dict names, e.g. "bn1.running_mean") training mode may update.
  virtual std::vector<std::string> buffer_names() const { return {}; }
  // A readable dump of the model's graph, for --verbose.
  virtual std::string graph_str() const = 0;
};

enum class ModelFormat { TorchScript, Pt2 };

// Looks at the file's content: a zip archive holding an `archive_format` record (torch.export.save) is Pt2;
// anything else is TorchScript, whose loader gives its own errors for missing, unreadable or non-zip files,
// except that a file named *.pt2 that is no such archive is Pt2 (so its error speaks of torch.export).
// No LibTorch needed (core/frontend/pt2.cpp).
ModelFormat detect_model_format(const std::string& path);

// Loads `path` with the frontend detect_model_format picks (core/frontend/frontend.cpp, links LibTorch).
std::unique_ptr<ModelFrontend> load_model(const std::string& path);

// The operator names each frontend imports: TorchScript node kinds ("aten::relu", "aten::relu_"; none in a
// build without LibTorch) and torch.export targets ("torch.ops.aten.relu.default"), each sorted.
struct ImportedOps {
  std::vector<std::string> torchscript, pt2;
};
ImportedOps imported_ops();

}  // namespace thunderc
