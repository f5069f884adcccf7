// Measures the blas executor (not a test). Usage: blas_gemm_bench [reps]
//  1. GEMM efficiency: a compiled model .so holding one linear (or matmul) run through libthunderc_runtime,
//     vs OpenBLAS's own cblas_sgemm on the same shapes; GFLOP/s medians, one thread.
//  2. Design choices, on the kernels directly: weight read transposed (CblasTrans) vs pre-transposed;
//     GEMV vs GEMM for M = 1; depthwise conv as direct loops vs im2col + per-group GEMM; 1x1 conv as GEMM
//     vs im2col.
//  3. Two threads: thunderc's split (gemm<>(2, ...): blocks of C on its own OpenMP team, OpenBLAS serial)
//     vs OpenBLAS's own threading (openblas_set_num_threads(2), one cblas_sgemm), which the executor used
//     before it stopped setting OpenBLAS's process-wide count.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "blas_test_util.h"
#include "thunderc/blas_kernels.h"

using namespace blastest;

namespace {

int g_reps = 200;

// Median seconds of fn over g_reps runs (after warm-up), each timed as a batch sized to ~50 us.
double median_seconds(const std::function<void()>& fn) {
  for (int i = 0; i < 5; ++i) fn();
  auto t0 = std::chrono::steady_clock::now();
  fn();
  double once = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int inner = std::max(1, static_cast<int>(5e-5 / std::max(once, 1e-9)));
  std::vector<double> times;
  for (int r = 0; r < g_reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count() / inner);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

std::vector<float> rand_vec(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.next());
  return v;
}

void gemm_efficiency(const char* what, std::int64_t M, std::int64_t K, std::int64_t N, bool linear) {
  Trace t;
  Rng rng(1);
  ValueId x = t.add_input("x", tt({M, K}));
  ValueId y;
  if (linear) {
    ValueId w = random_constant(t, "w", tt({N, K}), rng);
    y = t.emit1(op("linear"), {Operand::tensor(x), Operand::tensor(w), Operand::none()}, {});
  } else {
    ValueId b = t.add_input("b", tt({K, N}));
    y = t.emit1(op("matmul"), {Operand::tensor(x), Operand::tensor(b)}, {});
  }
  t.set_outputs({y});
  std::string so = compile(t, {"blas"}, "bench_" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
                                            (linear ? "_linear" : "_matmul"));
  thunderc::OpenOptions opts;
  opts.num_threads = 1;
  thunderc::Model model(so, opts);
  auto inputs = random_inputs(t, 5);
  std::vector<DLTensor> in;
  for (auto& h : inputs) in.push_back(h.dl());
  HostTensor out_t(dl_dtype(DType::Float32), t.type(y).shape);
  std::vector<DLTensor> out = {out_t.dl()};
  double t_model = median_seconds([&] { model.run(in, out); });

  auto a = rand_vec(M * K, 1), b = rand_vec(K * N, 2);
  std::vector<float> c(M * N);
  openblas_set_num_threads(1);
  // OpenBLAS's rate for the same product, in the layout the model holds (linear: B = W^T read in place).
  double t_blas = median_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, linear ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a.data(),
                (int)K, b.data(), linear ? (int)K : (int)N, 0.0f, c.data(), (int)N);
  });
  double flop = 2.0 * M * N * K;
  std::printf("%-28s M=%-4lld K=%-4lld N=%-4lld  model %8.2f GFLOP/s (%7.2f us)  sgemm %8.2f GFLOP/s (%7.2f us)  %5.0f%%\n",
              what, (long long)M, (long long)K, (long long)N, flop / t_model * 1e-9, t_model * 1e6, flop / t_blas * 1e-9,
              t_blas * 1e6, 100.0 * t_blas / t_model);
}

void trans_vs_pretransposed(std::int64_t M, std::int64_t K, std::int64_t N) {
  auto a = rand_vec(M * K, 1), w = rand_vec(N * K, 2), wt(w);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < K; ++j) wt[j * N + i] = w[i * K + j];
  std::vector<float> c(M * N);
  double nt = median_seconds([&] { thunderc_blas::gemm<float>(1, false, true, M, N, K, 1.f, a.data(), K, w.data(), K, 0.f, c.data(), N); });
  double nn = median_seconds([&] { thunderc_blas::gemm<float>(1, false, false, M, N, K, 1.f, a.data(), K, wt.data(), N, 0.f, c.data(), N); });
  double raw = median_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.f, a.data(), (int)K, w.data(), (int)K, 0.f, c.data(), (int)N);
  });
  std::printf("linear M=%-4lld K=%-4lld N=%-4lld  W^T in place %7.2f us  pre-transposed %7.2f us  plain sgemm (NT) %7.2f us\n",
              (long long)M, (long long)K, (long long)N, nt * 1e6, nn * 1e6, raw * 1e6);
}

void conv_choice(const char* what, thunderc_blas::Conv2d g) {
  std::int64_t cg = g.c / g.groups;
  auto x = rand_vec(g.n * g.c * g.h * g.w, 1), w = rand_vec(g.oc * cg * g.kh * g.kw, 2), b = rand_vec(g.oc, 3);
  std::vector<float> y(g.n * g.oc * g.oh * g.ow), col(cg * g.kh * g.kw * g.oh * g.ow);
  double gemm = median_seconds([&] { thunderc_blas::conv2d_gemm<float>(1, g, x.data(), w.data(), b.data(), y.data(), col.data()); });
  // The GEMM path with im2col forced (what a 1x1 conv would cost without its shortcut).
  double forced = median_seconds([&] {
    for (std::int64_t gi = 0; gi < g.groups; ++gi)
      for (std::int64_t c = 0; c < cg; ++c) thunderc_blas::im2col_channel<float>(x.data() + gi * cg * g.h * g.w, c, g, col.data());
    thunderc_blas::conv2d_gemm<float>(1, g, x.data(), w.data(), b.data(), y.data(), col.data());
  });
  double direct = g.groups == g.c ? median_seconds([&] { thunderc_blas::conv2d_depthwise<float>(1, g, x.data(), w.data(), b.data(), y.data()); }) : 0;
  double flop = 2.0 * g.n * g.oc * g.oh * g.ow * cg * g.kh * g.kw;
  std::printf("%-34s im2col+GEMM %8.2f us (%6.2f GFLOP/s)", what, gemm * 1e6, flop / gemm * 1e-9);
  if (thunderc_blas::conv_is_pointwise(g)) std::printf("  [1x1 with im2col added: %8.2f us]", forced * 1e6);
  if (direct > 0) std::printf("  direct %8.2f us (%6.2f GFLOP/s)", direct * 1e6, flop / direct * 1e-9);
  std::printf("\n");
}

void two_threads(const char* what, std::int64_t M, std::int64_t K, std::int64_t N) {
  auto a = rand_vec(M * K, 1), w = rand_vec(N * K, 2);
  std::vector<float> c(M * N);
  openblas_set_num_threads(1);
  const double one = median_seconds([&] { thunderc_blas::gemm<float>(1, false, true, M, N, K, 1.f, a.data(), K, w.data(), K, 0.f, c.data(), N); });
  const double split = median_seconds([&] { thunderc_blas::gemm<float>(2, false, true, M, N, K, 1.f, a.data(), K, w.data(), K, 0.f, c.data(), N); });
  openblas_set_num_threads(2);
  const double theirs = median_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.f, a.data(), (int)K, w.data(), (int)K, 0.f, c.data(), (int)N);
  });
  openblas_set_num_threads(1);
  std::printf("%-26s M=%-4lld K=%-4lld N=%-4lld  1 thread %8.2f us  split on 2 %8.2f us (%.2fx)  OpenBLAS's 2 threads %8.2f us (%.2fx)\n",
              what, (long long)M, (long long)K, (long long)N, one * 1e6, split * 1e6, one / split, theirs * 1e6, one / theirs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_reps = std::atoi(argv[1]);
  openblas_set_num_threads(1);
  std::printf("== GEMM efficiency: compiled model (blas executor, 1 thread) vs cblas_sgemm, medians of %d\n", g_reps);
  struct S { const char* what; std::int64_t m, k, n; bool linear; };
  for (S s : {S{"square", 256, 256, 256, true}, S{"square (matmul)", 256, 256, 256, false},
              S{"mlp fc1 / 1x64x128", 1, 64, 128, true}, S{"mlp fc2", 1, 128, 10, true}, S{"cnn fc", 1, 64, 10, true},
              S{"gpt qkv / 16x64x192", 16, 64, 192, true}, S{"gpt attn proj", 16, 64, 64, true},
              S{"gpt mlp fc", 16, 64, 256, true}, S{"gpt mlp proj", 16, 256, 64, true},
              S{"gpt q@k^T (per head)", 16, 16, 16, false}, S{"batch 64 mlp fc1", 64, 64, 128, true},
              S{"512x512x512", 512, 512, 512, true}})
    gemm_efficiency(s.what, s.m, s.k, s.n, s.linear);

  std::printf("\n== linear weight: CblasTrans on the constant vs a compile-time pre-transposed copy\n");
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 64, 128}, {16, 64, 192}, {16, 256, 64}, {256, 256, 256}, {64, 512, 512}})
    trans_vs_pretransposed(m, k, n);

  std::printf("\n== M = 1: GEMV (what gemm<> does) vs forcing sgemm\n");
  for (auto [k, n] : std::vector<std::array<std::int64_t, 2>>{{64, 128}, {128, 10}, {512, 512}}) {
    auto a = rand_vec(k, 1), w = rand_vec(n * k, 2);
    std::vector<float> c(n);
    double gv = median_seconds([&] { thunderc_blas::gemm<float>(1, false, true, 1, n, k, 1.f, a.data(), k, w.data(), k, 0.f, c.data(), n); });
    double gm = median_seconds([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, (int)n, (int)k, 1.f, a.data(), (int)k, w.data(), (int)k, 0.f, c.data(), (int)n);
    });
    std::printf("1x%lldx%lld  gemv path %7.2f us  sgemm %7.2f us\n", (long long)k, (long long)n, gv * 1e6, gm * 1e6);
  }

  std::printf("\n== conv2d: im2col + GEMM vs direct loops (depthwise), 1x1 without im2col\n");
  using C = thunderc_blas::Conv2d;
  //                          n  c    h   w   oc  kh kw sh sw ph pw dh dw groups oh  ow
  conv_choice("cnn conv1 3->16 3x3 32x32", C{1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 32, 32});
  conv_choice("cnn grouped 16->32 g4 16x16", C{1, 16, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 4, 16, 16});
  conv_choice("cnn depthwise 32 s2 8x8", C{1, 32, 8, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1, 32, 4, 4});
  conv_choice("depthwise 64 3x3 56x56", C{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 64, 56, 56});
  conv_choice("depthwise 128 3x3 s2 28x28", C{1, 128, 28, 28, 128, 3, 3, 2, 2, 1, 1, 1, 1, 128, 14, 14});
  conv_choice("cnn pointwise 32->64 4x4", C{1, 32, 4, 4, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1, 4, 4});
  conv_choice("pointwise 64->128 28x28", C{1, 64, 28, 28, 128, 1, 1, 1, 1, 0, 0, 1, 1, 1, 28, 28});
  conv_choice("cnn res 64->64 3x3 4x4", C{1, 64, 4, 4, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 4});
  conv_choice("64->64 3x3 56x56", C{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 56, 56});

  std::printf("\n== two threads: thunderc's split vs OpenBLAS's threads (linear, W^T read in place; speedup over 1 thread)\n");
  for (S s : {S{"gpt mlp fc / 16x64x256", 16, 64, 256, true}, S{"bert-base qkv, 128 tokens", 128, 768, 2304, true},
              S{"bert-base ffn up", 128, 768, 3072, true}, S{"bert-base ffn down", 128, 3072, 768, true},
              S{"vit-b ffn up, 197 tokens", 197, 768, 3072, true}, S{"batch 1 fc 1x512x1000", 1, 512, 1000, true},
              S{"resnet fc, batch 8", 8, 512, 1000, true}, S{"square 512", 512, 512, 512, true}})
    two_threads(s.what, s.m, s.k, s.n);
  return 0;
}
