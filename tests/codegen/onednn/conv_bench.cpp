// ResNet-18's convolutions through the onednn executor's kernel (thunderc_onednn::Conv2d, as generated code calls
// it: direct, and with --conv-algorithm auto's Winograd where it pays) and through the blas executor's im2col +
// OpenBLAS path, at batch 1: GFLOP/s per layer (a Winograd layer's counts the direct convolution's FLOPs) next
// to this CPU's peak float32 FMA throughput per core, measured here (independent FMA chains, 16-wide where the
// CPU has AVX-512, else 8-wide). Then EfficientNet-B0's kinds of convolution followed by silu, on NHWC as the
// channels-last pass hands them over: oneDNN's swish post-op against the kernel's own silu pass after the
// primitive (own_activation_override 0 and 1; own_activation_pays picks the pass on AVX-512), and ConvNeXt-T's and
// ViT-B/16's MLP linears with gelu the same way; then each activation pass alone, per element. Not a test.
//
//   build/bin/onednn_conv_bench [THREADS] [ITERATIONS] [--cold]   (defaults 1, 50; medians; --cold evicts the
//                                                                  caches before each timed call)
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "thunderc/blas_kernels.h"
#include "thunderc/onednn_kernels.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// With --cold, each timed call starts with this CPU's caches holding other data, as a layer's call in a model
// does (the layers before it have streamed their activations and weights through): 64 MiB written first.
bool cold = false;
void evict_caches() {
  static std::vector<float> junk(16 << 20);
  for (size_t i = 0; i < junk.size(); i += 16) junk[i] += 1.0f;
}

template <class F>
double median_seconds(int iterations, F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < iterations; ++i) {
    if (cold) evict_caches();
    const double a = now();
    f();
    t.push_back(now() - a);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// GFLOP/s of one core: 10 independent chains of 8-wide FMAs (enough to cover FMA latency x ports).
__attribute__((target("avx2,fma"))) double peak_gflops() {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(0.0001f);
  const long n = 20'000'000;
  const double t0 = now();
  for (long k = 0; k < n; ++k)
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  const double secs = now() - t0;
  float sink = 0;
  for (int i = 0; i < 10; ++i) sink += _mm256_cvtss_f32(acc[i]);
  if (sink == 12345.f) std::puts("");
  return 2.0 * 8 * 10 * n / secs / 1e9;
}

// The same with 16-wide FMAs (AVX-512 cores may have one or two such units).
__attribute__((target("avx512f"))) double peak_gflops_avx512() {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(0.0001f);
  const long n = 20'000'000;
  const double t0 = now();
  for (long k = 0; k < n; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  const double secs = now() - t0;
  float sink = 0;
  for (int i = 0; i < 12; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  if (sink == 12345.f) std::puts("");
  return 2.0 * 16 * 12 * n / secs / 1e9;
}

struct Layer {
  const char* name;
  int64_t c, h, oc, k, s;
  int64_t groups = 1;
};

// The median time of `iterations` calls of one convolution call site, or a negative value after printing oneDNN's
// error.
double time_conv(const thunderc_onednn::Conv2dSpec& spec, const std::vector<float>& x, const std::vector<float>& w,
                 const std::vector<float>& b, std::vector<float>& y, int threads, int iterations) {
  thunderc_onednn::Conv2d conv;
  char error[512];
  bool failed = false;
  const double t = median_seconds(iterations, [&] {
    failed |= conv.run(spec, x.data(), w.data(), b.data(), nullptr, y.data(), threads, error, sizeof error) != 0;
  });
  if (!failed) return t;
  std::fprintf(stderr, "%s\n", error);
  return -1;
}

// EfficientNet-B0's convolutions that a silu follows (bias folded in, NHWC): post-op against own pass.
int silu_table(int threads, int iterations) {
  std::printf("\n| EfficientNet-B0 layer + silu | swish post-op ms | own silu pass ms | post-op / own |\n|---|---|---|---|\n");
  const Layer layers[] = {{"stem 3x3/2, 3 -> 32 at 224", 3, 224, 32, 3, 2},
                          {"depthwise 3x3, 32 at 112", 32, 112, 32, 3, 1, 32},
                          {"1x1, 16 -> 96 at 112", 16, 112, 96, 1, 1},
                          {"depthwise 3x3/2, 96 at 112", 96, 112, 96, 3, 2, 96},
                          {"1x1, 24 -> 144 at 56", 24, 56, 144, 1, 1},
                          {"depthwise 3x3, 144 at 56", 144, 56, 144, 3, 1, 144},
                          {"1x1, 40 -> 240 at 28", 40, 28, 240, 1, 1},
                          {"depthwise 5x5, 240 at 28", 240, 28, 240, 5, 1, 240},
                          {"1x1, 112 -> 672 at 14", 112, 14, 672, 1, 1},
                          {"depthwise 5x5, 672 at 14", 672, 14, 672, 5, 1, 672},
                          {"1x1, 192 -> 1152 at 7", 192, 7, 1152, 1, 1},
                          {"1x1, 320 -> 1280 at 7", 320, 7, 1280, 1, 1}};
  for (const Layer& l : layers) {
    const int64_t pad = l.k / 2, oh = (l.h + 2 * pad - l.k) / l.s + 1;
    std::vector<float> x(l.c * l.h * l.h), w(l.oc * (l.c / l.groups) * l.k * l.k), b(l.oc), y(l.oc * oh * oh);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * std::sin(0.37f * i);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.2f * std::cos(0.11f * i);
    const thunderc_onednn::Conv2dSpec spec = {1, l.c, l.h, l.h, l.oc, l.k, l.k, l.s, l.s, pad, pad, 1, 1, l.groups,
                                              oh, oh, 1, 0, 1, 0, thunderc_onednn::kSilu, 0.0f, 0.0f, 0};
    double t[2];
    for (int own : {0, 1}) {
      thunderc_onednn::own_activation_override = own;
      t[own] = time_conv(spec, x, w, b, y, threads, iterations);
      if (t[own] < 0) return 1;
    }
    thunderc_onednn::own_activation_override = -1;
    std::printf("| %s | %.3f | %.3f | %.2fx |\n", l.name, t[0] * 1e3, t[1] * 1e3, t[0] / t[1]);
  }
  std::printf("\n| MLP linear + gelu (erf) | gelu post-op ms | own gelu pass ms | post-op / own |\n|---|---|---|---|\n");
  struct Mlp {
    const char* name;
    int64_t m, k, n;
  };
  const Mlp mlps[] = {{"ConvNeXt-T stage 1, 3136 x 96 -> 384", 3136, 96, 384},
                      {"ConvNeXt-T stage 3, 196 x 384 -> 1536", 196, 384, 1536},
                      {"ConvNeXt-T stage 4, 49 x 768 -> 3072", 49, 768, 3072},
                      {"ViT-B/16, 197 x 768 -> 3072", 197, 768, 3072}};
  for (const Mlp& l : mlps) {
    std::vector<float> x(l.m * l.k), w(l.n * l.k), b(l.n), y(l.m * l.n);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * std::sin(0.37f * i);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * std::cos(0.11f * i);
    const thunderc_onednn::LinearSpec spec = {l.m, l.k, l.n, 1, 0, thunderc_onednn::kGeluErf, 0.0f, 0.0f};
    double t[2];
    for (int own : {0, 1}) {
      thunderc_onednn::own_activation_override = own;
      thunderc_onednn::Linear op;
      char error[512];
      bool failed = false;
      t[own] = median_seconds(iterations, [&] {
        failed |= op.run(spec, x.data(), w.data(), b.data(), nullptr, y.data(), threads, error, sizeof error) != 0;
      });
      if (failed) {
        std::fprintf(stderr, "%s\n", error);
        return 1;
      }
    }
    thunderc_onednn::own_activation_override = -1;
    std::printf("| %s | %.3f | %.3f | %.2fx |\n", l.name, t[0] * 1e3, t[1] * 1e3, t[0] / t[1]);
  }
  std::printf("\nown_activation_pays picks the own passes on this CPU: %s\n",
              thunderc_onednn::own_activation_pays(thunderc_onednn::kSilu) ? "yes" : "no");
  // Each pass alone, on 64 Ki floats in L2 refilled by a copy before each timed pass: ns per element.
  std::vector<float> source(64 * 1024), v(source.size());
  for (size_t i = 0; i < source.size(); ++i) source[i] = 0.001f * static_cast<float>(i % 8192) - 4.0f;
  auto per_element = [&](void (*span)(float*, int64_t)) {
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      std::copy(source.begin(), source.end(), v.begin());
      const double a = now();
      span(v.data(), static_cast<int64_t>(v.size()));
      times.push_back(now() - a);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2] / static_cast<double>(v.size()) * 1e9;
  };
  const struct {
    const char* name;
    int64_t activation;
  } passes[] = {{"silu", thunderc_onednn::kSilu}, {"gelu (erf)", thunderc_onednn::kGeluErf},
                {"gelu (tanh)", thunderc_onednn::kGeluTanh}};
  for (const auto& pass : passes)
    std::printf("%s pass alone, ns per element on this CPU's loop (%s): %.3f\n", pass.name,
                thunderc_onednn::cpu_has_avx512() ? "16-wide" : "portable, as this binary is compiled",
                per_element(thunderc_onednn::activation_span(pass.activation)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> numbers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cold") == 0) {
      cold = true;
    } else if (std::strspn(argv[i], "0123456789") == std::strlen(argv[i]) && std::atoi(argv[i]) > 0 &&
               numbers.size() < 2) {
      numbers.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "usage: onednn_conv_bench [THREADS] [ITERATIONS] [--cold]   (positive integers; "
                           "defaults 1, 50)\n");
      return 1;
    }
  }
  const int threads = numbers.size() > 0 ? std::atoi(numbers[0]) : 1,
            iterations = numbers.size() > 1 ? std::atoi(numbers[1]) : 50;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "onednn_conv_bench: this CPU has no AVX2/FMA; the peak measurement needs them\n");
    return 1;
  }
  thunderc_blas::begin_call(threads);  // OpenBLAS serial: the blas kernels split the work over `threads` themselves
  const bool avx512 = __builtin_cpu_supports("avx512f");
  // The best of three runs: a shared VM's core, or one warming up, reads low once in a while.
  double peak = 0;
  for (int i = 0; i < 3; ++i) peak = std::max(peak, avx512 ? peak_gflops_avx512() : peak_gflops());
  std::printf("peak float32 FMA throughput, one core (%s): %.1f GFLOP/s (x%d threads = %.1f)\n\n",
              avx512 ? "AVX-512" : "AVX2", peak, threads, peak * threads);
  std::printf("| layer | shape | direct ms | GFLOP/s | %% of peak | auto ms | GFLOP/s | %% of peak | auto kernel | "
              "blas ms | GFLOP/s | direct / blas |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const Layer layers[] = {{"conv1 7x7/2", 3, 224, 64, 7, 2},     {"layer1 3x3", 64, 56, 64, 3, 1},
                          {"layer2.0 3x3/2", 64, 56, 128, 3, 2}, {"layer2 3x3", 128, 28, 128, 3, 1},
                          {"layer3.0 3x3/2", 128, 28, 256, 3, 2}, {"layer3 3x3", 256, 14, 256, 3, 1},
                          {"layer4.0 3x3/2", 256, 14, 512, 3, 2}, {"layer4 3x3", 512, 7, 512, 3, 1},
                          {"layer2 downsample 1x1/2", 64, 56, 128, 1, 2}};
  for (const Layer& l : layers) {
    const int64_t pad = l.k / 2, oh = (l.h + 2 * pad - l.k) / l.s + 1;
    std::vector<float> x(l.c * l.h * l.h), w(l.oc * l.c * l.k * l.k), b(l.oc), y(l.oc * oh * oh),
        col(l.c * l.k * l.k * oh * oh);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * std::cos(0.3f * i);
    thunderc_onednn::Conv2dSpec spec = {1, l.c, l.h, l.h, l.oc, l.k, l.k, l.s, l.s, pad, pad, 1, 1, 1, oh, oh, 1, 0, 0, 0};
    double t_dnnl[2];
    for (int winograd : {0, 1}) {
      spec.winograd = winograd;
      t_dnnl[winograd] = time_conv(spec, x, w, b, y, threads, iterations);
      if (t_dnnl[winograd] < 0) return 1;
    }
    thunderc_onednn::ThreadScope scope(threads);  // as Conv2d::run plans
    const std::string kernel = thunderc_onednn::make_conv2d_plan(spec, threads, w.data())->impl;
    const thunderc_blas::Conv2d g = {1, l.c, l.h, l.h, l.oc, l.k, l.k, l.s, l.s, pad, pad, 1, 1, 1, oh, oh};
    const double t_blas = median_seconds(iterations, [&] { thunderc_blas::conv2d_gemm<float>(threads, g, x.data(), w.data(), b.data(), y.data(), col.data()); });
    const double flops = 2.0 * l.oc * l.c * l.k * l.k * oh * oh;
    auto gflops = [&](double t) { return flops / t / 1e9; };
    std::printf("| %s | %lldx%lldx%lld -> %lld | %.3f | %.1f | %.0f%% | %.3f | %.1f | %.0f%% | %s | %.3f | %.1f | %.2fx |\n",
                l.name, (long long)l.c, (long long)l.h, (long long)l.h, (long long)l.oc, t_dnnl[0] * 1e3,
                gflops(t_dnnl[0]), 100 * gflops(t_dnnl[0]) / (peak * threads), t_dnnl[1] * 1e3, gflops(t_dnnl[1]),
                100 * gflops(t_dnnl[1]) / (peak * threads), kernel.c_str(), t_blas * 1e3, gflops(t_blas),
                t_blas / t_dnnl[0]);
  }
  return silu_table(threads, iterations);
}
