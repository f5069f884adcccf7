// consumer INPUT.npy EXPECTED.npy: runs the model thunderc_add_model compiled (CONSUMER_MODEL_SO) on INPUT
// and compares its first output with EXPECTED (|out - expected| <= 1e-5 + 1e-4 |expected|, PyTorch's
// allclose defaults scaled for float32 kernels). Exit 0 when it matches.
#include <cmath>
#include <cstdio>
#include <exception>

#include "thunderc/npy.hpp"
#include "thunderc/runtime.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer INPUT.npy EXPECTED.npy\n");
    return 2;
  }
  try {
    thunderc::Model model(CONSUMER_MODEL_SO);
    const thunderc::HostTensor input = thunderc::npy::load(argv[1]);
    const thunderc::HostTensor expected = thunderc::npy::load(argv[2]);
    const std::vector<thunderc::HostTensor> outputs = model.run({input});
    const thunderc::HostTensor& out = outputs.at(0);
    if (out.shape() != expected.shape() || out.numel() != expected.numel()) {
      std::fprintf(stderr, "consumer: output shape differs from the expected one\n");
      return 1;
    }
    const float* y = out.data<float>();
    const float* e = expected.data<float>();
    double worst = 0;
    size_t bad = 0;
    for (size_t i = 0; i < out.numel(); ++i) {
      const double d = std::fabs(double(y[i]) - double(e[i]));
      worst = std::fmax(worst, d);
      if (!(d <= 1e-5 + 1e-4 * std::fabs(double(e[i])))) ++bad;
    }
    std::printf("consumer: %s: %zu outputs, max abs diff %.3g, %zu outside tolerance\n", CONSUMER_MODEL_SO,
                out.numel(), worst, bad);
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
