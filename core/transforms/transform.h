// Named trace-to-trace transforms (Halide style: one pass per file, each header states what holds after
// it). The order they run in is written once, in pipeline.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/executors/executor.h"
#include "core/ir/trace.h"

namespace thunderc {

// What a pass may know besides the trace.
struct TransformContext {
  Device device;
  std::vector<const Executor*> executors;  // the claiming order (always-executors last), also before claiming
  std::vector<std::string> decompose_ops;  // operators `decompose` rewrites whatever the executors (--decompose)
  std::string precision = "fp32";          // --precision: "bf16"/"fp16" make `autocast` cast
  // A bounded variant (value_bounds.h): the runtime calls it only with finite inputs within a bound, so
  // `fusion` may fuse activations that turn NaN into a number where no NaN can arise.
  bool bounded_inputs = false;
  // channels-last: the outputs (by index) it may leave [N, H, W, C] where it computes them so: a training
  // forward's saved tensors, which the backward then reads as they are (with_nhwc_inputs in channels_last.h).
  // It does so only where that changes the shape, so the caller tells which by the output's type.
  std::vector<bool> nhwc_outputs;
};

// The executor that would claim `s` in `ctx`'s order: the first whose checker accepts it (null: none).
inline const Executor* first_claimer(const TransformContext& ctx, const Trace& t, const BoundSymbol& s) {
  for (const Executor* e : ctx.executors)
    if (e->can_execute(t, s)) return e;
  return nullptr;
}

struct Transform {
  std::string name;     // as given to --transforms: "dce", "cse", "fold-batchnorm", ...
  std::string summary;  // one line for --list-transforms: what holds after it
  // Runs the pass. The result must verify (verify_trace) and compute the same function.
  std::function<Trace(const Trace&, const TransformContext&)> run;
};

}  // namespace thunderc
