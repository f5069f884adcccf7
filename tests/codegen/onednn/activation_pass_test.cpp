// A convolution's or linear's silu or gelu as a pass of its own after oneDNN's primitive (own_activation_pays: on
// AVX-512, where it is faster than oneDNN's post-ops), through the header the generated code includes: each loop
// (the portable one everywhere, the 16-wide one where the CPU has AVX-512) against the function in double, and
// convolutions and linears with either path forced (own_activation_override) against a double-precision
// reference, at 1 and 2 threads.
// Tolerances: silu 4e-6 relative (plus 1e-30 absolute for the outputs below 1e-30, where the clamped exponent
// leaves tiny values tiny rather than exact); gelu (tanh form) 1.5e-5 relative (float's rounding of 2u, up to 87
// where the result is still a normal float, is amplified by exp: 1.2e-5 seen, in either loop); gelu (erf) 4e-7 absolute plus 1e-6
// relative (erfc's approximation has 1.5e-7 absolute error, as ATen's own); convolutions and linears rtol 1e-4,
// atol 1e-5 as onednn_test.cpp. Parity of whole models with these activations: bounded_variant_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "thunderc/onednn_kernels.h"

namespace {

using thunderc_onednn::Conv2dSpec;

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)): the same function, without 1 + tanh(u)'s cancellation below -5.
double gelu_tanh_ref(double x) { return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

double activation_ref(int64_t activation, double x) {
  switch (activation) {
    case thunderc_onednn::kSilu: return silu_ref(x);
    case thunderc_onednn::kGeluErf: return gelu_erf_ref(x);
    default: return gelu_tanh_ref(x);
  }
}

// The worst |got - want| / tolerance over the span (at most 1 passes).
double worst_ratio(int64_t activation, const std::vector<float>& in, const std::vector<float>& got) {
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = activation_ref(activation, in[i]);
    const double tolerance = activation == thunderc_onednn::kGeluErf    ? 4e-7 + 1e-6 * std::fabs(want)
                             : activation == thunderc_onednn::kGeluTanh ? 1e-30 + 1.5e-5 * std::fabs(want)
                                                                        : 1e-30 + 4e-6 * std::fabs(want);
    worst = std::max(worst, std::fabs(got[i] - want) / tolerance);
  }
  return worst;
}

// The worst |got - want| / (1e-5 + 1e-4 |want|) of a convolution's or linear's output (at most 1 passes).
double worst_parity(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1e-5 + 1e-4 * std::fabs(want[i])));
  return worst;
}

constexpr int64_t kActivations[] = {thunderc_onednn::kSilu, thunderc_onednn::kGeluErf, thunderc_onednn::kGeluTanh};

// PyTorch's conv2d (+ bias, + residual, then silu) in double, on NHWC or NCHW float tensors.
std::vector<float> reference(const Conv2dSpec& s, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias, const std::vector<float>& residual) {
  const int64_t cg = s.c / s.groups, og = s.oc / s.groups;
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t ww, int64_t C, int64_t H, int64_t W) {
    return s.channels_last ? ((n * H + h) * W + ww) * C + c : ((n * C + c) * H + h) * W + ww;
  };
  std::vector<float> y(static_cast<size_t>(s.n * s.oc * s.oh * s.ow));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.oc; ++o)
      for (int64_t i = 0; i < s.oh; ++i)
        for (int64_t j = 0; j < s.ow; ++j) {
          double acc = s.has_bias ? bias[o] : 0.0;
          const int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < s.kh; ++ki)
              for (int64_t kj = 0; kj < s.kw; ++kj) {
                const int64_t h = i * s.sh - s.ph + ki * s.dh, ww = j * s.sw - s.pw + kj * s.dw;
                if (h < 0 || h >= s.h || ww < 0 || ww >= s.w) continue;
                acc += static_cast<double>(x[at(n, g * cg + ci, h, ww, s.c, s.h, s.w)]) *
                       w[((o * cg + ci) * s.kh + ki) * s.kw + kj];
              }
          const int64_t k = at(n, o, i, j, s.oc, s.oh, s.ow);
          if (s.has_residual) acc += residual[k];
          y[k] = static_cast<float>(silu_ref(acc));
        }
  return y;
}

}  // namespace

TEST_CASE("the activation passes stay within their tolerance of the functions in double, and NaN stays NaN") {
  std::vector<float> in;
  for (float x = -90.0f; x <= 90.0f; x += 0.01171875f) in.push_back(x);  // 15361 values, both tails included
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.5f, -88.5f}) in.push_back(x);
  for (int64_t activation : kActivations) {
    INFO("activation " << activation);
    std::vector<float> got = in;
    if (activation == thunderc_onednn::kSilu)
      thunderc_onednn::silu_span_default(got.data(), static_cast<int64_t>(got.size()));
    else if (activation == thunderc_onednn::kGeluErf)
      thunderc_onednn::gelu_erf_span_default(got.data(), static_cast<int64_t>(got.size()));
    else
      thunderc_onednn::gelu_tanh_span_default(got.data(), static_cast<int64_t>(got.size()));
    CHECK(worst_ratio(activation, in, got) <= 1.0);
    if (thunderc_onednn::cpu_has_avx512()) {
      std::vector<float> wide = in;  // activation_span picks the 16-wide loop here
      thunderc_onednn::activation_span(activation)(wide.data(), static_cast<int64_t>(wide.size()));
      CHECK(worst_ratio(activation, in, wide) <= 1.0);
      std::vector<float> tail(in.begin(), in.begin() + 37), tail_got = tail;  // 2 vectors and a masked 5
      thunderc_onednn::activation_span(activation)(tail_got.data(), 37);
      CHECK(worst_ratio(activation, tail, tail_got) <= 1.0);
    }
    std::vector<float> nan(37, std::numeric_limits<float>::quiet_NaN());  // the 16-wide loop's tail too
    thunderc_onednn::activation_in_place(activation, nan.data(), static_cast<int64_t>(nan.size()), 1);
    for (float v : nan) CHECK(std::isnan(v));
  }
  std::vector<float> relu = {1.0f};
  CHECK_THROWS(thunderc_onednn::activation_in_place(thunderc_onednn::kRelu, relu.data(), 1, 1));
}

TEST_CASE("a convolution's silu matches the reference as oneDNN's post-op and as a pass of its own") {
  // EfficientNet's kinds: a 1x1 expansion on NHWC (odd map, enough elements for two threads), a depthwise 3x3
  // stride 2, a dense 3x3 on NCHW with a residual (sum post-op, then silu), odd channel counts.
  const std::vector<Conv2dSpec> specs = {
      {1, 16, 30, 30, 96, 1, 1, 1, 1, 0, 0, 1, 1, 1, 30, 30, 1, 0, 1, 0, thunderc_onednn::kSilu, 0.f, 0.f, 0},
      {1, 24, 17, 17, 24, 3, 3, 2, 2, 1, 1, 1, 1, 24, 9, 9, 1, 0, 1, 0, thunderc_onednn::kSilu, 0.f, 0.f, 0},
      {2, 5, 11, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 11, 9, 0, 1, 0, 0, thunderc_onednn::kSilu, 0.f, 0.f, 0},
  };
  for (const Conv2dSpec& s : specs) {
    std::vector<float> x(static_cast<size_t>(s.n * s.c * s.h * s.w)), w(static_cast<size_t>(s.oc * (s.c / s.groups) * s.kh * s.kw)),
        bias(static_cast<size_t>(s.oc)), residual(static_cast<size_t>(s.n * s.oc * s.oh * s.ow));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.3f * std::cos(0.11f * static_cast<float>(i));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
    for (size_t i = 0; i < residual.size(); ++i) residual[i] = std::cos(0.05f * static_cast<float>(i));
    const std::vector<float> want = reference(s, x, w, bias, residual);
    for (int own : {0, 1})
      for (int threads : {1, 2}) {
        INFO("c " << s.c << " oc " << s.oc << " groups " << s.groups << ", own silu " << own << ", threads " << threads);
        thunderc_onednn::own_activation_override = own;
        {
          thunderc_onednn::ThreadScope scope(threads);
          CHECK(thunderc_onednn::make_conv2d_plan(s, threads, w.data())->own_activation == (own == 1));
        }
        thunderc_onednn::Conv2d op;  // a new call site: its plans follow the override
        std::vector<float> y(want.size(), -7.0f);
        char error[256] = {};
        REQUIRE(op.run(s, x.data(), w.data(), bias.data(), residual.data(), y.data(), threads, error, sizeof error) == 0);
        CHECK(worst_parity(y, want) <= 1.0);
      }
  }
  thunderc_onednn::own_activation_override = -1;
  for (int64_t activation : kActivations)
    CHECK(thunderc_onednn::own_activation_pays(activation) == thunderc_onednn::cpu_has_avx512());
  CHECK_FALSE(thunderc_onednn::own_activation_pays(thunderc_onednn::kRelu));
  CHECK_FALSE(thunderc_onednn::own_activation_pays(thunderc_onednn::kSigmoid));
}

TEST_CASE("a linear's gelu or silu matches the reference as oneDNN's post-op and as a pass of its own") {
  // ConvNeXt's and ViT's MLP shapes, cut down: rows not a multiple of 16, with a residual, and M = 1 with bias
  // (an activation keeps it off the matrix-vector path).
  std::vector<thunderc_onednn::LinearSpec> specs;
  for (int64_t activation : kActivations) {
    specs.push_back({37, 48, 200, 1, 0, activation, 0.f, 0.f});
    specs.push_back({9, 64, 33, 1, 1, activation, 0.f, 0.f});
    specs.push_back({1, 40, 300, 1, 0, activation, 0.f, 0.f});
  }
  for (const thunderc_onednn::LinearSpec& s : specs) {
    std::vector<float> x(static_cast<size_t>(s.m * s.k)), w(static_cast<size_t>(s.n * s.k)), bias(static_cast<size_t>(s.n)),
        residual(static_cast<size_t>(s.m * s.n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.4f * std::cos(0.11f * static_cast<float>(i));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
    for (size_t i = 0; i < residual.size(); ++i) residual[i] = std::cos(0.05f * static_cast<float>(i));
    std::vector<float> want(residual.size());
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = bias[j] + (s.has_residual ? residual[i * s.n + j] : 0.0);
        for (int64_t k = 0; k < s.k; ++k) acc += static_cast<double>(x[i * s.k + k]) * w[j * s.k + k];
        want[i * s.n + j] = static_cast<float>(activation_ref(s.activation, acc));
      }
    for (int own : {0, 1})
      for (int threads : {1, 2}) {
        INFO("m " << s.m << " n " << s.n << " activation " << s.activation << ", own pass " << own << ", threads " << threads);
        thunderc_onednn::own_activation_override = own;
        CHECK(thunderc_onednn::make_linear_plan(s, threads, w.data())->own_activation == (own == 1));
        thunderc_onednn::Linear op;
        std::vector<float> y(want.size(), -7.0f);
        char error[256] = {};
        REQUIRE(op.run(s, x.data(), w.data(), bias.data(), residual.data(), y.data(), threads, error, sizeof error) == 0);
        CHECK(worst_parity(y, want) <= 1.0);
      }
  }
  thunderc_onednn::own_activation_override = -1;
}
