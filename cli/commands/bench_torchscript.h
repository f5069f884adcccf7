// The reference half of `thunderc bench --compare MODEL.pt`: runs the TorchScript model with LibTorch
// (torch::jit::load, eval, torch::jit::freeze, under c10::InferenceMode). Kept apart from bench.cpp so that
// LibTorch's headers are included by this one .cpp only.
#pragma once

#include <string>
#include <vector>

#include "thunderc/tensor.hpp"

namespace thunderc::commands {

struct TorchScriptTiming {
  std::vector<double> times_ms;  // one per timed iteration
  double max_abs_diff = 0;       // largest |torchscript - thunderc| over all elements of all outputs (NaN: a NaN)
  std::size_t num_outputs = 0;
};

// Loads pt_path, sets at::set_num_threads(threads), runs `warmup` untimed then `iterations` timed calls on
// `inputs` (host tensors, shared with LibTorch without copies), and compares its outputs (a tensor, or a
// tuple/list of tensors, flattened in order) with `expected`. UserError when the model cannot be loaded or
// run, or its outputs do not line up with `expected` (count, shape).
// cuda: run the module and its inputs on cuda:0 (timing each call up to torch::cuda::synchronize); needs
// torchscript_cuda_available().
TorchScriptTiming bench_torchscript(const std::string& pt_path, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& expected, int threads, int warmup,
                                    int iterations, bool cuda = false);

// The reference for a training model (thunderc --autograd): each timed iteration is one LibTorch training step
// on the module in eval mode (as thunderc traced it), not frozen: the parameters' and requires-grad inputs'
// gradients cleared, forward, then torch::autograd::backward with `grad_outputs`. The outputs are compared with
// `expected`, and the gradients with `expected_gradients` (named as thunderc names them: a parameter's
// named_parameters() name, or an input's name from `input_names`).
struct TorchScriptTrainingTiming {
  std::vector<double> times_ms;
  double max_abs_diff = 0;       // over the outputs, as TorchScriptTiming's
  double max_rel_grad_diff = 0;  // max over gradients of max|ours - torch| / max(1, max|torch|) (NaN: a NaN)
  std::string worst_gradient;    // the gradient where max_rel_grad_diff is reached
  std::size_t num_outputs = 0, num_gradients = 0;
};

struct GradientRef {
  std::string name;
  bool is_parameter = true;
  const HostTensor* value = nullptr;  // thunderc's gradient
};

TorchScriptTrainingTiming bench_torchscript_training(const std::string& pt_path, const std::vector<HostTensor>& inputs,
                                                     const std::vector<std::string>& input_names,
                                                     const std::vector<HostTensor>& grad_outputs,
                                                     const std::vector<HostTensor>& expected,
                                                     const std::vector<GradientRef>& expected_gradients, int threads,
                                                     int warmup, int iterations);

// Whether this LibTorch can run on CUDA; when not, *why says so ("LibTorch here has no CUDA ...").
bool torchscript_cuda_available(std::string* why);

}  // namespace thunderc::commands
