// Which convolutions take oneDNN's Winograd kernel (--conv-algorithm auto): winograd_pays's rule, and the kernel
// a plan gets on this CPU, through the same header the generated code includes. oneDNN has Winograd kernels for
// AVX-512 (avx512_core) only: there the plan must name one, elsewhere it must fall back to a direct kernel.
// Numerical parity of such convolutions: onednn_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "thunderc/onednn_kernels.h"

using thunderc_onednn::Conv2dSpec;
using thunderc_onednn::winograd_pays;

namespace {

// ResNet-18's layer1 convolution, NHWC, Winograd allowed.
Conv2dSpec layer1() {
  return {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 56, 56, 1, 0, 1, 1, thunderc_onednn::kNoActivation, 0.0f, 0.0f};
}

bool has_avx512_core() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

std::string kernel_of(const Conv2dSpec& s) {
  std::vector<float> w(static_cast<size_t>(s.oc * (s.c / s.groups) * s.kh * s.kw), 0.5f);
  thunderc_onednn::ThreadScope scope(1);
  return thunderc_onednn::make_conv2d_plan(s, 1, w.data())->impl;
}

}  // namespace

TEST_CASE("winograd_pays: dense 3x3 stride-1 convolutions of 32+ channels on maps large next to the weights") {
  CHECK(winograd_pays(layer1()));
  auto with = [](auto edit) {
    Conv2dSpec s = layer1();
    edit(s);
    return winograd_pays(s);
  };
  CHECK_FALSE(with([](Conv2dSpec& s) { s.winograd = 0; }));  // --conv-algorithm direct, or not proven finite
  CHECK_FALSE(with([](Conv2dSpec& s) { s.sh = s.sw = 2, s.oh = s.ow = 28; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.kh = s.kw = 1; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.kh = 5; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.dh = s.dw = 2; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.groups = 2; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.c = 16; }));
  CHECK_FALSE(with([](Conv2dSpec& s) { s.oc = 16; }));
  CHECK(with([](Conv2dSpec& s) { s.channels_last = 0; }));
  // oh * ow >= 4 sqrt(c * oc): ResNet-18's layer2 (128 channels, 28x28) and SqueezeNet's 32 -> 128 at 27x27
  // qualify; layer3 (256 channels, 14x14), layer4 (512, 7x7) and 64 channels at 13x13 do not.
  auto sized = [&](std::int64_t c, std::int64_t oc, std::int64_t map) {
    return with([&](Conv2dSpec& s) { s.c = c, s.oc = oc, s.h = s.w = s.oh = s.ow = map; });
  };
  CHECK(sized(128, 128, 28));
  CHECK(sized(32, 128, 27));
  CHECK_FALSE(sized(256, 256, 14));
  CHECK_FALSE(sized(512, 512, 7));
  CHECK_FALSE(sized(64, 64, 13));
  CHECK(sized(64, 64, 16));  // 256^2 = 16 * 64 * 64: the boundary qualifies
  CHECK_FALSE(sized(64, 64, 15));
}

TEST_CASE("a plan takes oneDNN's Winograd kernel where it pays and the CPU has one, a direct kernel otherwise") {
  const std::string allowed = kernel_of(layer1());
  INFO("kernel: " << allowed);
  if (has_avx512_core())
    CHECK(allowed.find("wino") != std::string::npos);
  else
    CHECK(allowed.find("wino") == std::string::npos);
  Conv2dSpec direct = layer1();
  direct.winograd = 0;
  const std::string chosen = kernel_of(direct);
  INFO("kernel: " << chosen);
  CHECK(chosen.find("wino") == std::string::npos);
  CHECK_FALSE(chosen.empty());
  // A post-op Winograd lacks (if any) must fall back rather than fail: every activation plans.
  for (auto act : {thunderc_onednn::kRelu, thunderc_onednn::kClip, thunderc_onednn::kSigmoid, thunderc_onednn::kSilu,
                   thunderc_onednn::kHardswish}) {
    Conv2dSpec s = layer1();
    s.activation = act;
    s.has_residual = 1;
    s.beta = 6.0f;
    CHECK_FALSE(kernel_of(s).empty());
  }
}

TEST_CASE("why Winograd runs in bounded variants only: it makes NaN of an inf input where the direct sum gives inf") {
  // 32 channels on 14x14 maps (winograd_pays), every 7th input +inf, positive weights: the direct kernel gives
  // +inf wherever an inf is in reach. oneDNN's Winograd kernel (AVX-512 CPUs) gives NaN at those places.
  const int64_t c = 32, h = 14;
  Conv2dSpec s = {1, c, h, h, c, 3, 3, 1, 1, 1, 1, 1, 1, 1, h, h, 1, 0, 0, 0, thunderc_onednn::kNoActivation, 0.0f, 0.0f};
  REQUIRE_FALSE(winograd_pays(s));
  std::vector<float> x(static_cast<size_t>(c * h * h), 0.5f), w(static_cast<size_t>(c * c * 9), 0.01f), b(c, 0.0f);
  for (size_t k = 0; k < x.size(); k += 7) x[k] = INFINITY;
  auto run = [&](int64_t winograd, std::vector<float>& y) {
    s.winograd = winograd;
    thunderc_onednn::Conv2d conv;
    char error[256] = "";
    REQUIRE_MESSAGE(conv.run(s, x.data(), w.data(), b.data(), nullptr, y.data(), 1, error, sizeof error) == 0, error);
  };
  std::vector<float> direct(x.size()), wino(x.size());
  run(0, direct);
  run(1, wino);
  REQUIRE(winograd_pays(s));
  size_t inf = 0, nan_direct = 0, nan_where_inf = 0;
  for (size_t k = 0; k < direct.size(); ++k) {
    inf += std::isinf(direct[k]);
    nan_direct += std::isnan(direct[k]);
    nan_where_inf += std::isinf(direct[k]) && std::isnan(wino[k]);
  }
  CHECK(inf > 0);
  CHECK(nan_direct == 0);
  if (has_avx512_core()) {
    CHECK(nan_where_inf > 0);  // measured: all 2240 infs
  } else {
    CHECK(nan_where_inf == 0);  // no Winograd kernel: the same direct kernel
    CHECK(kernel_of(s).find("wino") == std::string::npos);
  }
}
