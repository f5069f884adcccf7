// The front half of every thunderc command that reads a model: load -> specializations -> import -> verify
// -> claim executors. `thunderc examine` prints the result; `thunderc MODEL -o OUT.so` hands it to the
// compile step (codegen), which extends this pipeline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/executors/executor.h"
#include "core/frontend/shape_spec.h"
#include "core/frontend/torchscript.h"
#include "core/ir/trace.h"

namespace thunderc {

struct PipelineOptions {
  std::string model_path;
  std::vector<std::string> shapes;     // raw --shapes values, one specialization each (empty: recorded)
  Device device = Device::cpu();
  std::vector<std::string> executors;  // requested names in order (empty: the device's defaults)
  bool standalone = false;             // no always-executors (torch) appended
};

// One specialization of the model: its input shapes and the trace imported, verified and claimed for them.
struct SpecializedTrace {
  Specialization spec;                  // as given by --shapes or recorded in the model
  std::vector<TensorType> input_types;  // resolved against the model's inputs
  Trace trace;
};

struct PipelineResult {
  std::unique_ptr<TorchScriptModel> model;
  bool shapes_recorded = false;  // true: the specializations came from the model, not --shapes
  ExecutorSelection executors;
  std::vector<SpecializedTrace> specializations;
};

// Runs the pipeline. Every problem with the user's input is a UserError whose message stands on its own
// (flags are checked before the model is loaded); InternalError means thunderc is wrong.
// Steps: parse --shapes; resolve executors (resolve_executors); load the model; pick specializations
// (--shapes, else recorded_shapes(), else UserError listing the input names); per specialization:
// resolve_shapes -> import -> verify_trace -> claim_executors (UserError listing unclaimed operations).
PipelineResult run_pipeline(const PipelineOptions& options);

// Text of a specialization for messages: "x=1x64:float32".
std::string specialization_label(const SpecializedTrace& s);

}  // namespace thunderc
