// --optimizer (docs/training.md, "Optimizer step"): the update of a training model's parameters as a trace of
// elementwise operators, compiled like any other program (executors claim it, fusion makes one loop or kernel
// per parameter) into the .so's optimizer entry, which updates parameters and state in place.
//
// The trace's inputs, in order: every trainable parameter p_i, then their gradients g_i, then the state
// slots (slot-major: every parameter's first slot, then every parameter's second), then the hyperparameters,
// 0-d float32 tensors the runtime fills for each step (`scalars`). Its outputs: the new parameters, then the
// new state, in the inputs' order. The runtime passes each parameter and state buffer as both input and
// output: every operator is elementwise over one parameter's shape (0-d hyperparameters broadcast), so each
// element is read before it is written, by the same iteration (check_in_place_update is the guard).
//
// The arithmetic is LibTorch's (torch::optim, as its C++ API and torch.optim's single-tensor path compute it),
// operation by operation, in float32:
//   sgd:    d = g + wd * p (wd != 0); buf = d (first step, or momentum 0), else buf * momentum + (1 - dampening) * d;
//           d = nesterov ? d + momentum * buf : buf; p = p + (-lr) * d.
//   adamw:  p = p * (1 - lr * wd); m = m * beta1 + (1 - beta1) * g; v = v * beta2 + ((1 - beta2) * g) * g;
//           p = p + ((-lr / (1 - beta1^t)) * m) / (sqrt(v) / sqrt(1 - beta2^t) + eps).
#pragma once

#include <string>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

struct OptimizerProgram {
  std::string kind;                      // "sgd" or "adamw"
  Trace trace;
  std::vector<std::string> state_slots;  // per parameter: sgd {"momentum_buffer"}, adamw {"exp_avg", "exp_avg_sq"}
  std::vector<std::string> scalars;      // the hyperparameter inputs' names, in order (see optimizer.cpp)
};

// The optimizers --optimizer accepts.
const std::vector<std::string>& optimizer_kinds();

// The update of parameters of these types (the trainable ones, in the model's order) on their device.
// UserError for an unknown kind or a parameter that is not float32.
OptimizerProgram build_optimizer_program(const std::string& kind, const std::vector<TensorType>& parameters);

// After the passes: every symbol of `trace` elementwise over the shape of the parameter it updates, so the
// update can run in place; an InternalError (bug) otherwise.
void check_in_place_update(const Trace& trace);

}  // namespace thunderc
