// bench --compare: the TorchScript reference (see bench_torchscript.h). The only file of cli/commands that
// includes LibTorch. Built without LibTorch (THUNDERC_WITH_LIBTORCH=0), both functions refuse (bench.cpp refuses
// --compare before it gets here).
#include "cli/commands/bench_torchscript.h"

#if !THUNDERC_WITH_LIBTORCH
#include "core/ir/error.h"

namespace thunderc::commands {

TorchScriptTiming bench_torchscript(const std::string&, const std::vector<HostTensor>&, const std::vector<HostTensor>&,
                                    int, int, int, bool) {
  user_error("bench --compare needs a thunderc built with LibTorch (this one: -DTHUNDERC_WITH_LIBTORCH=OFF)");
}

bool torchscript_cuda_available(std::string* why) {
  if (why) *why = "this thunderc was built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF)";
  return false;
}

}  // namespace thunderc::commands

#else  // THUNDERC_WITH_LIBTORCH

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <chrono>
#include <cmath>
#include <limits>

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

TorchScriptTiming bench_torchscript(const std::string& pt_path, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& expected, int threads, int warmup,
                                    int iterations, bool cuda) {
  const c10::Device device = cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  torch::jit::Module module;
  try {
    module = torch::jit::load(pt_path, device);
    module.eval();
    module = torch::jit::freeze(module);
  } catch (const c10::Error& e) {
    user_error("--compare: cannot load TorchScript model '", pt_path, "': ", e.what_without_backtrace());
  } catch (const std::exception& e) {
    user_error("--compare: cannot load TorchScript model '", pt_path, "': ", e.what());
  }
  if (threads > 0) at::set_num_threads(threads);

  std::vector<c10::IValue> args;
  for (const HostTensor& t : inputs) args.emplace_back(cuda ? view_of(t).to(device) : view_of(t));
  auto sync = [cuda] {
    if (cuda) torch::cuda::synchronize();
  };

  TorchScriptTiming result;
  std::vector<at::Tensor> outs;
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
      const auto t1 = std::chrono::steady_clock::now();
      result.times_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    flatten(last, outs, pt_path);

    if (outs.size() != expected.size())
      user_error("--compare: ", pt_path, " returns ", outs.size(), " tensor(s) but the compiled model returns ",
                 expected.size());
    result.num_outputs = outs.size();
    double worst = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      const at::Tensor ref = outs[k].to(at::kCPU).to(at::kDouble);
      const at::Tensor ours = view_of(expected[k]).to(at::kDouble);
      if (ref.sizes() != ours.sizes())
        user_error("--compare: output ", k, " of ", pt_path, " has shape ", shape_str(ref.sizes()),
                   " but the compiled model's has shape ", shape_str(ours.sizes()));
      if (ref.numel() == 0) continue;
      at::Tensor d = (ref - ours).abs();
      d.masked_fill_(ref.eq(ours) | (ref.isnan() & ours.isnan()), 0);  // equal infinities, NaN in both
      const double m = d.max().item<double>();
      if (std::isnan(m)) {
        worst = std::numeric_limits<double>::quiet_NaN();
      } else if (!std::isnan(worst)) {
        worst = std::max(worst, m);
      }
    }
    result.max_abs_diff = worst;
  } catch (const c10::Error& e) {
    user_error("--compare: running TorchScript model '", pt_path, "' failed: ", e.what_without_backtrace());
  }
  return result;
}

}  // namespace thunderc::commands

#endif  // THUNDERC_WITH_LIBTORCH
