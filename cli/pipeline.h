// The front half of every thunderc command that reads a model: load -> specializations -> import -> verify
// -> the transform pipeline (core/transforms/pipeline.h: pre-claim passes, claim executors, post-claim
// passes). `thunderc examine` prints the result; `thunderc MODEL -o OUT.so` hands it to the compile step.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/executors/executor.h"
#include "core/frontend/shape_spec.h"
#include "core/frontend/frontend.h"
#include "core/ir/symbolic.h"
#include "core/ir/trace.h"
#include "core/transforms/autodiff.h"
#include "core/transforms/optimizer.h"
#include "core/transforms/pipeline.h"

namespace thunderc {

struct PipelineOptions {
  std::string model_path;
  std::vector<std::string> shapes;     // raw --shapes values, one specialization each (empty: recorded)
  Device device = Device::cpu();
  std::vector<std::string> executors;  // requested names in order (empty: the device's defaults)
  bool standalone = false;             // no always-executors (torch) appended
  std::optional<std::vector<std::string>> transforms;  // --transforms (absent: default_transforms())
  std::vector<std::string> decompose_ops;              // --decompose: operators to decompose regardless
  std::string dump_traces_dir;  // --dump-traces: write NN-<pass>.txt after every pass (empty: no dumps)
  bool verbose = false;         // one line per pass on stderr
  bool progress = true;         // a progress line on stderr when it is a terminal
  std::string precision = "fp32";  // --precision: fp32, tf32 (CUDA library calls), bf16/fp16 (autocast)
  SharpEdgeMode sharp_edges = SharpEdgeMode::Allow;  // --sharp-edges: allow, warn (stderr) or error
  bool inplace_alias_updates = true;                 // false: --skip-inplace-alias-updates
  // --cache "symbolic values": the one --shapes names symbols (x=Bx64) whose ranges `dims` gives
  // ("B=1:32", one per symbol); the model is traced at several bindings and generalized (core/ir/symbolic.h).
  bool symbolic = false;
  std::vector<std::string> dims;
  // No --shapes and no --cache: a model that declares dynamic dimensions (ModelFrontend::declared_dims,
  // a .pt2's Dims) gets one symbolic variant over their ranges.
  bool symbolic_if_declared = false;
  // --bounded-variants auto: where oneDNN could fuse an activation that turns NaN into a number, also build a
  // bounded variant that does (core/transforms/value_bounds.h), ahead of the exact one. false: off.
  bool bounded_variants = true;
  // --autograd: each specialization becomes a training forward and its backward (core/transforms/autodiff.h);
  // --requires-grad names the inputs that get gradients besides the parameters.
  bool autograd = false;
  std::vector<std::string> requires_grad;
  // --module-mode train: batch norm with batch statistics, its running statistics as state (TrainingTraces).
  bool train_mode = false;
  // --optimizer sgd|adamw (with --autograd): the parameters' update as a program of its own
  // (core/transforms/optimizer.h). Empty: none.
  std::string optimizer;
};

// One specialization of the model: its input shapes and the trace after every pass.
struct SpecializedTrace {
  Specialization spec;                  // as given by --shapes or recorded in the model
  std::vector<TensorType> input_types;  // resolved against the model's inputs
  Trace trace;                          // the final trace (claimed, verified)
  std::vector<SharpEdge> sharp_edges;   // what the frontend found surprising (see core/frontend/sharp_edges.h)
  // Symbolic variants only: the sizes as expressions in the symbols; `trace` is then the one traced with
  // every symbol at its maximum (its ValueIds are those `symbolic` refers to).
  std::shared_ptr<const SymbolicTrace> symbolic;
  // A bounded variant: the runtime runs it only for finite floating-point inputs with |x| <= input_bound
  // (0: an exact variant, any inputs). It comes right before the exact variant of the same shapes.
  double input_bound = 0;
  // --autograd: `trace` is the training forward; this holds the backward (after the passes, in `backward`) and
  // what the manifest says of parameters, saved tensors and gradients.
  std::shared_ptr<TrainingTraces> training;
};

// Time spent in one step, summed over the specializations (--time-passes).
struct PassTiming {
  std::string pass;
  double ms = 0;
  std::size_t runs = 0;
  std::size_t symbols_after = kNoSymbols;  // after its last run (kNoSymbols: not a trace step)
  static constexpr std::size_t kNoSymbols = static_cast<std::size_t>(-1);
};

struct PipelineResult {
  std::unique_ptr<ModelFrontend> model;  // TorchScript or torch.export (.pt2), by content
  bool shapes_recorded = false;  // true: the specializations came from the model, not --shapes
  bool symbolic = false;         // one symbolic variant (--cache "symbolic values", or the model's Dims)
  ExecutorSelection executors;
  std::vector<std::string> transforms;  // the optional passes that ran, in order (for the manifest)
  std::vector<SpecializedTrace> specializations;
  std::vector<PassTiming> timings;  // load, import, each pass (in first-run order)
  // --optimizer: the update of the trainable parameters, after the passes (claimed, checked in-place safe).
  std::shared_ptr<OptimizerProgram> optimizer;
};

// Runs the pipeline. Every problem with the user's input is a UserError whose message stands on its own
// (flags are checked before the model is loaded); InternalError means thunderc is wrong.
// Steps: parse --shapes; resolve executors; resolve --transforms (plan_passes); load the model; pick
// specializations (--shapes, else recorded_shapes(), else UserError listing the input names); per
// specialization: resolve_shapes -> import -> verify_trace -> run_passes (claiming included; UserError
// listing unclaimed operations), and where it pays a second run_passes for the bounded variant (listed first).
// UserError when `path` (the model argument) is a directory.
void check_model_path(const std::string& path);

PipelineResult run_pipeline(const PipelineOptions& options);

// Text of a specialization for messages: "x=1x64:float32".
std::string specialization_label(const SpecializedTrace& s);

// The --time-passes table (written to stderr by the caller); `extra` rows (e.g. the C++ build) follow.
std::string pass_timing_table(const std::vector<PassTiming>& timings, const std::vector<PassTiming>& extra = {});

// A one-line progress indicator on stderr, shown only when stderr is a terminal (and `enabled`):
// "thunderc: [1/2 x=1x64] decompose ..." rewritten in place; cleared by clear() and on destruction.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void show(const std::string& text);
  void clear();
  bool active() const { return active_; }

 private:
  bool active_ = false;
  std::size_t shown_ = 0;  // characters currently on the line
};

}  // namespace thunderc
