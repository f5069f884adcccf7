// bench --compare: the TorchScript reference (see bench_torchscript.h). The only file of cli/commands that
// includes LibTorch. Built without LibTorch (THUNDERC_WITH_LIBTORCH=0), the functions refuse (bench.cpp refuses
// --compare before it gets here).
#include "cli/commands/bench_torchscript.h"

#if !THUNDERC_WITH_LIBTORCH
#include "core/ir/error.h"

namespace thunderc::commands {

TorchScriptTiming bench_torchscript(const std::string&, const std::vector<HostTensor>&, const std::vector<HostTensor>&,
                                    int, int, int, bool) {
  user_error("bench --compare needs a thunderc built with LibTorch (this one: -DTHUNDERC_WITH_LIBTORCH=OFF)");
}

TorchScriptTrainingTiming bench_torchscript_training(const std::string&, const std::vector<HostTensor>&,
                                                     const std::vector<std::string>&, const std::vector<HostTensor>&,
                                                     const std::vector<HostTensor>&, const std::vector<GradientRef>&,
                                                     int, int, int) {
  user_error("bench --compare needs a thunderc built with LibTorch (this one: -DTHUNDERC_WITH_LIBTORCH=OFF)");
}

bool torchscript_cuda_available(std::string* why) {
  if (why) *why = "this thunderc was built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF)";
  return false;
}

}  // namespace thunderc::commands

#else  // THUNDERC_WITH_LIBTORCH

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "core/ir/error.h"
#include "thunderc/aten.hpp"

namespace thunderc::commands {
namespace {

at::ScalarType scalar_type(DLDataType t) {
  try {
    return thunderc::aten::to_scalar_type(t);
  } catch (const thunderc::Error& e) {
    user_error("--compare: ", e.what());
  }
}

// A LibTorch view of a host tensor (no copy; the HostTensor must outlive it).
at::Tensor view_of(const HostTensor& t) {
  return torch::from_blob(const_cast<void*>(t.raw()), t.shape(), at::TensorOptions().dtype(scalar_type(t.dtype())));
}

void flatten(const c10::IValue& v, std::vector<at::Tensor>& out, const std::string& pt_path) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) flatten(e, out, pt_path);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) flatten(e, out, pt_path);
  } else {
    user_error("--compare: ", pt_path, " returns a ", v.tagKind(), "; only tensors (or tuples/lists of them) can ",
               "be compared");
  }
}

std::string shape_str(at::IntArrayRef s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

bool torchscript_cuda_available(std::string* why) {
  bool ok = false;
  try {
    ok = torch::cuda::is_available();
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok && why) *why = "LibTorch here has no CUDA (torch::cuda::is_available() is false)";
  return ok;
}

namespace {

torch::jit::Module load_module(const std::string& pt_path, const c10::Device& device, bool freeze) {
  try {
    torch::jit::Module module = torch::jit::load(pt_path, device);
    module.eval();
    return freeze ? torch::jit::freeze(module) : module;
  } catch (const c10::Error& e) {
    user_error("--compare: cannot load TorchScript model '", pt_path, "': ", e.what_without_backtrace());
  } catch (const std::exception& e) {
    user_error("--compare: cannot load TorchScript model '", pt_path, "': ", e.what());
  }
}

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// max |ref - ours| over all elements (equal infinities and NaN in both count as equal; NaN: a NaN in one only).
double max_abs_diff(const at::Tensor& ref_any, const at::Tensor& ours_any) {
  if (ref_any.numel() == 0) return 0;
  const at::Tensor ref = ref_any.to(at::kCPU).to(at::kDouble), ours = ours_any.to(at::kDouble);
  at::Tensor d = (ref - ours).abs();
  d.masked_fill_(ref.eq(ours) | (ref.isnan() & ours.isnan()), 0);
  return d.max().item<double>();
}

// The larger of two differences, NaN winning.
double worse(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b); }

// Flattens `result` and compares it with `expected` output by output: count and shapes must agree.
double compare_outputs(const c10::IValue& result, const std::vector<HostTensor>& expected, const std::string& pt_path,
                       std::size_t* count) {
  std::vector<at::Tensor> outs;
  flatten(result, outs, pt_path);
  if (outs.size() != expected.size())
    user_error("--compare: ", pt_path, " returns ", outs.size(), " tensor(s) but the compiled model returns ",
               expected.size());
  *count = outs.size();
  double worst = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    const at::Tensor ours = view_of(expected[k]);
    if (outs[k].sizes() != ours.sizes())
      user_error("--compare: output ", k, " of ", pt_path, " has shape ", shape_str(outs[k].sizes()),
                 " but the compiled model's has shape ", shape_str(ours.sizes()));
    worst = worse(worst, max_abs_diff(outs[k], ours));
  }
  return worst;
}

}  // namespace

TorchScriptTiming bench_torchscript(const std::string& pt_path, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& expected, int threads, int warmup,
                                    int iterations, bool cuda) {
  const c10::Device device = cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  torch::jit::Module module = load_module(pt_path, device, true);
  if (threads > 0) at::set_num_threads(threads);

  std::vector<c10::IValue> args;
  for (const HostTensor& t : inputs) args.emplace_back(cuda ? view_of(t).to(device) : view_of(t));
  auto sync = [cuda] {
    if (cuda) torch::cuda::synchronize();
  };

  TorchScriptTiming result;
  try {
    c10::InferenceMode inference;
    for (int i = 0; i < warmup; ++i) module.forward(args);
    sync();
    result.times_ms.reserve(static_cast<size_t>(iterations));
    c10::IValue last;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      last = module.forward(args);
      sync();
      result.times_ms.push_back(elapsed_ms(t0));
    }
    result.max_abs_diff = compare_outputs(last, expected, pt_path, &result.num_outputs);
  } catch (const c10::Error& e) {
    user_error("--compare: running TorchScript model '", pt_path, "' failed: ", e.what_without_backtrace());
  }
  return result;
}

TorchScriptTrainingTiming bench_torchscript_training(const std::string& pt_path, const std::vector<HostTensor>& inputs,
                                                     const std::vector<std::string>& input_names,
                                                     const std::vector<HostTensor>& grad_outputs,
                                                     const std::vector<HostTensor>& expected,
                                                     const std::vector<GradientRef>& expected_gradients, int threads,
                                                     int warmup, int iterations) {
  torch::jit::Module module = load_module(pt_path, c10::Device(c10::kCPU), false);
  if (threads > 0) at::set_num_threads(threads);
  std::map<std::string, at::Tensor> parameters;
  for (const auto& p : module.named_parameters(true)) parameters.emplace(p.name, p.value);

  // Inputs that need a gradient are copies that require grad; the rest are views.
  std::vector<at::Tensor> in;
  for (const HostTensor& t : inputs) in.push_back(view_of(t));
  std::vector<at::Tensor> sources;  // where each expected gradient comes from
  for (const GradientRef& g : expected_gradients) {
    if (g.is_parameter) {
      auto it = parameters.find(g.name);
      if (it == parameters.end())
        user_error("--compare: ", pt_path, " has no parameter '", g.name, "', which the compiled model has; compare "
                   "with the model it was compiled from");
      it->second.requires_grad_(true);
      sources.push_back(it->second);
    } else {
      auto it = std::find(input_names.begin(), input_names.end(), g.name);
      if (it == input_names.end()) user_error("bug: gradient of unknown input '", g.name, "'");
      at::Tensor& x = in[static_cast<std::size_t>(it - input_names.begin())];
      x = x.clone().requires_grad_(true);
      sources.push_back(x);
    }
  }
  std::vector<c10::IValue> args(in.begin(), in.end());
  std::vector<at::Tensor> seeds;
  for (const HostTensor& g : grad_outputs) seeds.push_back(view_of(g));

  TorchScriptTrainingTiming result;
  c10::IValue last;
  auto step = [&] {
    for (at::Tensor& s : sources) s.mutable_grad().reset();
    last = module.forward(args);
    std::vector<at::Tensor> outs;
    flatten(last, outs, pt_path);
    if (outs.size() != seeds.size())
      user_error("--compare: ", pt_path, " returns ", outs.size(), " tensor(s) but the compiled model returns ",
                 seeds.size());
    // Outputs that do not depend on a parameter or input requiring grad take no part (as in thunderc).
    std::vector<at::Tensor> roots, root_seeds;
    for (std::size_t j = 0; j < outs.size(); ++j)
      if (outs[j].requires_grad()) roots.push_back(outs[j]), root_seeds.push_back(seeds[j]);
    if (!roots.empty()) torch::autograd::backward(roots, root_seeds);
  };
  try {
    for (int i = 0; i < warmup; ++i) step();
    result.times_ms.reserve(static_cast<size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      result.times_ms.push_back(elapsed_ms(t0));
    }
    {
      at::NoGradGuard no_grad;
      result.max_abs_diff = compare_outputs(last, expected, pt_path, &result.num_outputs);
    }
    for (std::size_t k = 0; k < expected_gradients.size(); ++k) {
      const GradientRef& g = expected_gradients[k];
      const at::Tensor ours = view_of(*g.value);
      at::Tensor ref = sources[k].grad();
      if (!ref.defined()) ref = at::zeros_like(sources[k]);  // never reached from the outputs: a zero gradient
      if (ref.sizes() != ours.sizes())
        user_error("--compare: the gradient of '", g.name, "' has shape ", shape_str(ref.sizes()), " in ", pt_path,
                   " but ", shape_str(ours.sizes()), " in the compiled model");
      const double scale = ref.numel() ? std::max(1.0, ref.abs().nan_to_num(0).max().item<double>()) : 1.0;
      const double d = max_abs_diff(ref, ours) / scale;
      const double before = result.max_rel_grad_diff;
      result.max_rel_grad_diff = worse(before, d);
      // A larger difference, or the first NaN, names the gradient.
      if (k == 0 || (!std::isnan(before) && result.max_rel_grad_diff != before)) result.worst_gradient = g.name;
    }
    result.num_gradients = expected_gradients.size();
  } catch (const c10::Error& e) {
    user_error("--compare: a training step of TorchScript model '", pt_path, "' failed: ", e.what_without_backtrace());
  }
  return result;
}

}  // namespace thunderc::commands

#endif  // THUNDERC_WITH_LIBTORCH
