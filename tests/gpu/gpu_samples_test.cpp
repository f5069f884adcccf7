// Every sample compiled for CUDA (--executors nvfuser, the thunderc binary) and run on the real GPU through
// the runtime, against LibTorch's CPU output (samples/<name>.expected.npy). Tolerance: rtol 1e-4, atol 1e-5
// (float32 on CUDA cores; the device's expf/tanhf differ from glibc's by a few ulp). Exit 77 (skipped) when
// the runtime finds no CUDA device.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/run_process.h"
#include "gpu/gpu_skip.h"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.hpp"

namespace fs = std::filesystem;

int main() {
  if (no_cuda_device()) return 77;
  struct Sample {
    const char* name;
    std::vector<std::string> flags;
  };
  const std::vector<Sample> samples = {{"mlp", {}},
                                       {"cnn", {}},
                                       {"gpt_block", {}},
                                       {"mlp_scripted", {"--shapes", "x=1x64"}},
                                       {"gpt_block_scripted", {"--shapes", "x=1x16x64"}},
                                       {"pt2/llama_block", {}}};
  int failures = 0;
  for (const Sample& s : samples) {
    fs::path dir = fs::path(THUNDERC_TEST_TMP) / s.name;
    fs::create_directories(dir);
    std::string so = (dir / (fs::path(s.name).filename().string() + ".so")).string();
    const bool pt2 = std::string(s.name).rfind("pt2/", 0) == 0;  // samples/pt2/<name>.pt2, a torch.export program
    std::vector<std::string> args = {std::string(THUNDERC_SAMPLES_DIR) + "/" + s.name + (pt2 ? ".pt2" : ".pt"), "-o", so,
                                     "--executors", "nvfuser"};
    args.insert(args.end(), s.flags.begin(), s.flags.end());
    auto r = thunderc_test::run_program(THUNDERC_BIN, args);
    if (r.code != 0) {
      std::printf("FAIL %s: compile failed:\n%s\n", s.name, r.out.c_str());
      ++failures;
      continue;
    }
    try {
      thunderc::Model model(so);
      thunderc::HostTensor x = thunderc::npy::load(std::string(THUNDERC_SAMPLES_DIR) + "/" + s.name + ".input.npy");
      thunderc::HostTensor want = thunderc::npy::load(std::string(THUNDERC_SAMPLES_DIR) + "/" + s.name + ".expected.npy");
      DLDevice cuda{kDLCUDA, 0};
      thunderc::DeviceTensor dx = thunderc::DeviceTensor::from_host(x, cuda);
      auto outs = model.run_alloc({dx.dl()});
      thunderc::HostTensor got = outs.at(0).to_host();
      const float* g = static_cast<const float*>(got.raw());
      const float* w = static_cast<const float*>(want.raw());
      double worst = 0;
      std::size_t bad = got.shape() == want.shape() ? 0 : 1;
      for (std::size_t i = 0; bad == 0 && i < want.numel(); ++i) {
        double err = std::abs(double(g[i]) - double(w[i]));
        worst = std::max(worst, err);
        if (!(err <= 1e-5 + 1e-4 * std::abs(double(w[i])))) ++bad;
      }
      std::printf("%s %s: max abs diff %.3g, %zu elements out of tolerance\n", bad ? "FAIL" : "ok  ", s.name, worst, bad);
      failures += bad != 0;
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", s.name, e.what());
      ++failures;
    }
  }
  std::printf("%d passed, %d failed\n", static_cast<int>(samples.size()) - failures, failures);
  return failures ? 1 : 0;
}
