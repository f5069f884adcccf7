// CUDA training variants on the real GPU: each sample compiled with --autograd --optimizer adamw for the GPU
// (--device cuda) and for the CPU (whose gradients tests/e2e/training_test.cpp checks against LibTorch
// autograd), then three steps of forward_train, backward and optimizer_step on both from the same inputs and
// output gradients (floating inputs redrawn each step; the language models' token ids and masks kept). The
// gpt_block case compiled with --module-mode train draws its dropout masks on both devices at the same RNG
// states, which must give the same masks (Philox on both, codegen/nvfuser/dropout.h). Outputs, gradients and the parameters after each step must agree to
// |gpu - cpu| <= 1e-4 * max(1, max |cpu|) + 1e-4 * |cpu| (float32 through a dozen layers summed in other orders,
// the device's expf/tanhf). Exit 77 (skipped) without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/run_process.h"
#include "gpu/gpu_skip.h"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.hpp"

namespace fs = std::filesystem;

namespace {

// Elements of `got` outside the tolerance against `want` (float32, same shape).
std::size_t mismatches(const thunderc::HostTensor& got, const thunderc::HostTensor& want, double* worst) {
  if (got.shape() != want.shape()) return 1;
  const float* g = static_cast<const float*>(got.raw());
  const float* w = static_cast<const float*>(want.raw());
  double scale = 1;
  for (std::size_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(double(w[i])));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.numel(); ++i) {
    const double err = std::abs(double(g[i]) - double(w[i]));
    *worst = std::max(*worst, err / scale);
    if (!(err <= 1e-4 * scale + 1e-4 * std::abs(double(w[i])))) ++bad;
  }
  return bad;
}

thunderc::HostTensor random_like(const thunderc::HostTensor& t, std::mt19937& rng) {
  thunderc::HostTensor r(t.dtype(), t.shape());
  std::normal_distribution<float> normal;
  float* p = static_cast<float*>(r.raw());
  for (std::size_t i = 0; i < r.numel(); ++i) p[i] = normal(rng);
  return r;
}

thunderc::HostTensor parameter_value(thunderc::Model& m, std::size_t i) {
  const DLTensor v = m.parameter(i);
  thunderc::HostTensor h(v.dtype, std::vector<int64_t>(v.shape, v.shape + v.ndim));
  thunderc::copy_to_host(v.device, h.raw(), v.data, h.nbytes());
  return h;
}

}  // namespace

int main() {
  if (no_cuda_device()) return 77;
  const DLDevice gpu{kDLCUDA, 0}, cpu{kDLCPU, 0};
  int failures = 0, passed = 0;
  struct Case {
    const char* name;
    std::vector<std::string> inputs;  // samples/<name>.<input>.npy
    bool train = false;               // --module-mode train (dropout)
  };
  const std::vector<Case> cases = {{"mlp", {"input"}},
                                   {"cnn", {"input"}},
                                   {"gpt_block", {"input"}},
                                   {"encoder_layer", {"input"}},
                                   {"bert_tiny", {"input_ids", "attention_mask"}},
                                   {"distilbert_tiny", {"input_ids", "attention_mask"}},
                                   {"gpt2_tiny", {"input_ids"}},
                                   {"gpt_block", {"input"}, true}};
  for (const Case& c : cases) {
    const std::string name = std::string(c.name) + (c.train ? " (train mode)" : "");
    const fs::path dir = fs::path(THUNDERC_TEST_TMP) / (std::string("training_") + c.name + (c.train ? "_train" : ""));
    fs::create_directories(dir);
    auto compile = [&](const std::string& out, std::vector<std::string> flags) {
      std::vector<std::string> args = {std::string(THUNDERC_SAMPLES_DIR) + "/" + c.name + ".pt", "-o",
                                       (dir / out).string(), "--autograd", "--optimizer", "adamw"};
      if (c.train) args.insert(args.end(), {"--module-mode", "train"});
      args.insert(args.end(), flags.begin(), flags.end());
      return thunderc_test::run_program(THUNDERC_BIN, args);
    };
    auto rg = compile("gpu.so", {"--device", "cuda"}), rc = compile("cpu.so", {});
    if (rg.code != 0 || rc.code != 0) {
      std::printf("FAIL %s: compile failed:\n%s%s\n", name.c_str(), rg.out.c_str(), rc.out.c_str());
      ++failures;
      continue;
    }
    try {
      thunderc::Model mg((dir / "gpu.so").string()), mc((dir / "cpu.so").string());
      mg.prepare_device(gpu);
      thunderc_optimizer_options o = mg.optimizer_options();
      o.lr = 1e-3;
      std::mt19937 rng(7);
      std::vector<thunderc::HostTensor> x;
      for (const std::string& in : c.inputs)
        x.push_back(thunderc::npy::load(std::string(THUNDERC_SAMPLES_DIR) + "/" + c.name + "." + in + ".npy"));
      double worst = 0;
      std::size_t bad = 0;
      for (int step = 1; step <= 3; ++step) {
        std::vector<thunderc::HostTensor> xs = x;
        for (auto& t : xs)
          if (step > 1 && t.dtype().code == kDLFloat) t = random_like(t, rng);
        const thunderc::Model::RngState state{3, 768u * static_cast<unsigned>(step)};
        auto fg = mg.forward_train(xs, &state, gpu);
        auto fc = mc.forward_train(xs, &state, cpu);
        std::vector<thunderc::HostTensor> gy;
        for (const auto& y : fc.outputs) gy.push_back(random_like(y, rng));
        for (std::size_t j = 0; j < fc.outputs.size(); ++j) bad += mismatches(fg.outputs[j], fc.outputs[j], &worst);
        const auto gg = mg.backward(fg.context, gy, gpu), gc = mc.backward(fc.context, gy, cpu);
        for (std::size_t j = 0; j < gc.size(); ++j) bad += mismatches(gg[j], gc[j], &worst);
        mg.optimizer_step(gg, o, gpu);
        mc.optimizer_step(gc, o, cpu);
        for (std::size_t i = 0; i < mc.num_parameters(); ++i)
          bad += mismatches(parameter_value(mg, i), parameter_value(mc, i), &worst);
      }
      std::printf("%s %s: 3 steps, max relative diff %.3g, %zu elements out of tolerance\n", bad ? "FAIL" : "ok  ",
                  name.c_str(), worst, bad);
      failures += bad != 0;
      passed += bad == 0;
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", name.c_str(), e.what());
      ++failures;
    }
  }
  std::printf("%d passed, %d failed\n", passed, failures);
  return failures ? 1 : 0;
}
