// Hand-written CUDA kernels compiled as host C++ in emulation mode (THUNDERC_CUDA_EMULATION is defined for
// this target), run by thunderc_emu::launch and checked against CPU references.
#include "thunderc/cuda_emu.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

unsigned ceil_div(unsigned a, unsigned b) { return (a + b - 1) / b; }

std::vector<float> ramp(int n, float scale = 0.01f) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(0.37f * i) * 3.0f + scale * static_cast<float>(i % 17);
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// Kernels, written as the code generator writes CUDA.

static __device__ __forceinline__ float tc_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }

extern "C" __global__ void __launch_bounds__(128) k_elementwise(float* __restrict__ out, const float* __restrict__ a,
                                                                const float* __restrict__ b, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
    float x = __ldg(a + i), y = b[i];
    out[i] = tc_gelu(x) + fmaxf(y, 0.0f) * expf(-fabsf(x)) + max(x, y) - min(0.5f, y) + tanhf(y) * rsqrtf(1.0f + x * x);
  }
}

extern "C" __global__ void __launch_bounds__(256, 2) k_block_sum(float* __restrict__ out, const float* __restrict__ in,
                                                                 int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// One block; per warp: a shfl_down reduction over the lanes present (partial last warp included), a
// butterfly xor reduction with the full mask (poison from absent lanes in a partial warp), an xor reduction
// with width 16, an inclusive shfl_up scan and a shfl broadcast of lane 3.
extern "C" __global__ void k_warp(const float* __restrict__ in, float* __restrict__ down_sum, float* __restrict__ xor_sum,
                                  float* __restrict__ xor16_sum, float* __restrict__ scan, float* __restrict__ bcast,
                                  unsigned* __restrict__ ballots) {
  const unsigned t = threadIdx.x, lane = t % warpSize, warp = t / warpSize;
  const float x = in[t];
  const unsigned active = __ballot_sync(0xffffffffu, 1);
  const int lanes = __popc(active);
  float v = x;
  for (int off = 16; off > 0; off /= 2) {
    float o = __shfl_down_sync(active, v, off);
    if ((int)lane + off < lanes) v += o;
  }
  if (lane == 0) down_sum[warp] = v;
  float w = x;
  for (int m = 16; m > 0; m /= 2) w += __shfl_xor_sync(0xffffffffu, w, m);
  xor_sum[t] = w;
  float h = x;
  for (int m = 8; m > 0; m /= 2) h += __shfl_xor_sync(active, h, m, 16);
  xor16_sum[t] = h;
  float s = x;
  for (int d = 1; d < 32; d *= 2) {
    float o = __shfl_up_sync(active, s, d);
    if ((int)lane >= d) s += o;
  }
  scan[t] = s;
  bcast[t] = __shfl_sync(active, x, 3);
  ballots[t] = __ballot_sync(active, x > 0.0f) | (__all_sync(active, lane < 64) ? 0x80000000u : 0u);
  __syncwarp(active);
}

// Classic 32x33 tile transpose; block (32, 8).
extern "C" __global__ void k_transpose(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * cols + x];
  }
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < rows && y + j < cols) out[(long long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}

// The same without the barrier: a bug the emulator exposes (threads run to the end one after another).
extern "C" __global__ void k_transpose_racy(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * cols + x];
  }
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < rows && y + j < cols) out[(long long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}

static __device__ float atomic_max_float(float* addr, float v) {
  int* a = reinterpret_cast<int*>(addr);
  int old = *a;
  while (__int_as_float(old) < v) {
    int assumed = old;
    old = atomicCAS(a, assumed, __float_as_int(v));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}

extern "C" __global__ void k_atomics(const int* __restrict__ keys, const float* __restrict__ vals, int n,
                                     unsigned* __restrict__ hist, float* __restrict__ fsum, double* __restrict__ dsum,
                                     int* __restrict__ imax, unsigned* __restrict__ umin, float* __restrict__ fmax_out,
                                     unsigned long long* __restrict__ count, int* __restrict__ last) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&hist[keys[i]], 1u);
  atomicAdd(fsum, vals[i]);
  atomicAdd(dsum, (double)vals[i]);
  atomicMax(imax, keys[i] * 100 + (i % 7));
  atomicMin(umin, (unsigned)(keys[i] + 1000));
  atomic_max_float(fmax_out, vals[i]);
  atomicAdd(count, 1ull);
  atomicExch(last, i);
}

extern "C" __global__ void k_exit_then_sync(float* p) {
  if (threadIdx.x == 5) return;
  p[threadIdx.x] = 1.0f;
  __syncthreads();
  p[threadIdx.x] += 1.0f;
}

extern "C" __global__ void k_different_barriers(float* p) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  p[threadIdx.x] = 1.0f;
}

extern "C" __global__ void k_warp_vs_block(float* p) {
  float v = p[threadIdx.x];
  if (threadIdx.x < 32) v += __shfl_xor_sync(0xffffffffu, v, 1);
  else __syncthreads();
  p[threadIdx.x] = v;
}

extern "C" __global__ void k_dynamic_shared(float* __restrict__ out, const float* __restrict__ in, unsigned* __restrict__ poisoned) {
  THUNDERC_DYNAMIC_SHARED(float, buf);
  const unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t == 0) poisoned[blockIdx.x] = isnan(buf[blockDim.x - 1]) ? 1u : 0u;
  __syncthreads();
  buf[t] = in[i];
  __syncthreads();
  out[i] = buf[blockDim.x - 1 - t];
}

extern "C" __global__ void k_indices(unsigned* __restrict__ out) {
  const unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[bx * threads + t] = (blockIdx.x << 24) | (blockIdx.y << 20) | (blockIdx.z << 16) | (threadIdx.x << 8) |
                          (threadIdx.y << 4) | threadIdx.z;
}

extern "C" __global__ void k_sync_predicates(int* out) {
  int c = __syncthreads_count(threadIdx.x % 3 == 0);
  int a = __syncthreads_and(threadIdx.x < 1000);
  int o = __syncthreads_or(threadIdx.x == 7);
  int z = __syncthreads_or(0);
  if (threadIdx.x == 0) {
    out[0] = c;
    out[1] = a;
    out[2] = o;
    out[3] = z;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------

TEST_CASE("elementwise grid-stride kernel with a partial last block") {
  const int n = 1000;
  std::vector<float> a = ramp(n), b = ramp(n, -0.02f), expect(n);
  for (int i = 0; i < n; ++i) {
    float x = a[i], y = b[i];
    expect[i] = 0.5f * x * (1.0f + std::erf(x * 0.70710678f)) + std::fmax(y, 0.0f) * std::exp(-std::fabs(x)) +
                std::fmax(x, y) - std::fmin(0.5f, y) + std::tanh(y) / std::sqrt(1.0f + x * x);
  }
  for (unsigned grid : {ceil_div(n, 128), 3u}) {
    CAPTURE(grid);
    std::vector<float> out(n, -1.0f);
    thunderc_emu::launch(dim3(grid), dim3(128), 0, [&] { k_elementwise(out.data(), a.data(), b.data(), n); });
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == doctest::Approx(expect[i]).epsilon(1e-5));
  }
}

TEST_CASE("block reduction with __shared__ and __syncthreads") {
  const int n = 1000;
  std::vector<float> in = ramp(n);
  const unsigned grid = ceil_div(n, 256);
  std::vector<float> out(grid, -1.0f);
  const unsigned g[3] = {grid, 1, 1}, b[3] = {256, 1, 1};
  thunderc_emu::launch(g, b, 0, [&] { k_block_sum(out.data(), in.data(), n); });
  for (unsigned blk = 0; blk < grid; ++blk) {
    double ref = 0;
    for (int i = blk * 256; i < n && i < static_cast<int>(blk + 1) * 256; ++i) ref += in[i];
    CHECK(out[blk] == doctest::Approx(ref).epsilon(1e-5));
  }
}

TEST_CASE("warp shuffles and votes, full and partial warps") {
  const unsigned threads = 48;  // warp 0: 32 lanes, warp 1: 16 lanes
  std::vector<float> in(threads);
  for (unsigned t = 0; t < threads; ++t) in[t] = static_cast<float>(static_cast<int>(t * 7 % 11) - 4);
  std::vector<float> down(2, -1), xr(threads), x16(threads), scan(threads), bcast(threads);
  std::vector<unsigned> ballots(threads);
  thunderc_emu::launch(dim3(1), dim3(threads), 0, [&] {
    k_warp(in.data(), down.data(), xr.data(), x16.data(), scan.data(), bcast.data(), ballots.data());
  });
  for (unsigned warp = 0; warp < 2; ++warp) {
    const unsigned base = warp * 32, lanes = warp == 0 ? 32 : 16;
    float sum = 0;
    unsigned vote = 0;
    for (unsigned l = 0; l < lanes; ++l) {
      sum += in[base + l];
      if (in[base + l] > 0) vote |= 1u << l;
    }
    CHECK(down[warp] == sum);
    for (unsigned l = 0; l < lanes; ++l) {
      const unsigned t = base + l;
      CAPTURE(t);
      if (warp == 0) CHECK(xr[t] == sum);
      else CHECK(std::isnan(xr[t]));  // xor 16 reads lanes 16..31, absent: poison
      float half = 0;
      for (unsigned k = l / 16 * 16; k < l / 16 * 16 + 16; ++k) half += in[base + k];
      CHECK(x16[t] == half);
      float prefix = 0;
      for (unsigned k = 0; k <= l; ++k) prefix += in[base + k];
      CHECK(scan[t] == prefix);
      CHECK(bcast[t] == in[base + 3]);
      CHECK(ballots[t] == (vote | 0x80000000u));
    }
  }
}

TEST_CASE("32x33 shared-memory tile transpose of a 67x45 matrix") {
  const int rows = 67, cols = 45;
  std::vector<float> in(rows * cols);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i);
  const dim3 grid(ceil_div(cols, 32), ceil_div(rows, 32)), block(32, 8);
  std::vector<float> out(rows * cols, -1.0f);
  thunderc_emu::launch(grid, block, 0, [&] { k_transpose(out.data(), in.data(), rows, cols); });
  int wrong = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) wrong += out[c * rows + r] != in[r * cols + c];
  CHECK(wrong == 0);

  SUBCASE("without the barrier the emulator gives wrong results") {
    std::vector<float> racy(rows * cols, -1.0f);
    thunderc_emu::launch(grid, block, 0, [&] { k_transpose_racy(racy.data(), in.data(), rows, cols); });
    int bad = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) bad += racy[c * rows + r] != in[r * cols + c];
    CHECK(bad > 0);
  }
}

TEST_CASE("atomics") {
  const int n = 777;
  std::vector<int> keys(n);
  std::vector<float> vals(n);
  for (int i = 0; i < n; ++i) {
    keys[i] = (i * 13) % 10;
    vals[i] = 0.25f * static_cast<float>((i * 29) % 23) - 2.0f;
  }
  std::vector<unsigned> hist(10, 0);
  float fsum = 0, fmax_v = -1e30f;
  double dsum = 0;
  int imax = -1, last = -1;
  unsigned umin = ~0u;
  unsigned long long count = 0;
  thunderc_emu::launch(dim3(ceil_div(n, 64)), dim3(64), 0, [&] {
    k_atomics(keys.data(), vals.data(), n, hist.data(), &fsum, &dsum, &imax, &umin, &fmax_v, &count, &last);
  });
  std::vector<unsigned> ref(10, 0);
  double ref_sum = 0;
  float ref_max = -1e30f;
  int ref_imax = -1;
  for (int i = 0; i < n; ++i) {
    ++ref[keys[i]];
    ref_sum += vals[i];
    ref_max = std::max(ref_max, vals[i]);
    ref_imax = std::max(ref_imax, keys[i] * 100 + i % 7);
  }
  CHECK(hist == ref);
  CHECK(fsum == doctest::Approx(ref_sum).epsilon(1e-5));
  CHECK(dsum == doctest::Approx(ref_sum).epsilon(1e-12));
  CHECK(imax == ref_imax);
  CHECK(umin == 1000u);
  CHECK(fmax_v == ref_max);
  CHECK(count == static_cast<unsigned long long>(n));
  CHECK(last >= 0);
  CHECK(last < n);
}

TEST_CASE("barrier divergence is reported, not a hang") {
  std::vector<float> p(64, 0.0f);
  SUBCASE("a thread exits while the others wait at __syncthreads") {
    CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(2), dim3(64), 0, [&] { k_exit_then_sync(p.data()); }),
                         doctest::Contains("barrier divergence in block (0,0,0)"), thunderc_emu::Error);
    try {
      thunderc_emu::launch(dim3(2), dim3(64), 0, [&] { k_exit_then_sync(p.data()); });
    } catch (const thunderc_emu::Error& e) {
      const std::string what = e.what();
      CHECK(what.find("63 thread(s) wait at __syncthreads()") != std::string::npos);
      CHECK(what.find("1 thread(s) have exited (first: thread (5,0,0))") != std::string::npos);
    }
  }
  SUBCASE("threads wait at different __syncthreads calls") {
    CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(1), dim3(64), 0, [&] { k_different_barriers(p.data()); }),
                         doctest::Contains("barrier divergence in block (0,0,0)"), thunderc_emu::Error);
  }
  SUBCASE("a warp shuffle waits for lanes stuck at __syncthreads") {
    CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(1), dim3(48), 0, [&] { k_warp_vs_block(p.data()); }),
                         doctest::Contains("barrier divergence in block (0,0,0)"), thunderc_emu::Error);
  }
  SUBCASE("a warp collective whose mask misses the calling lane") {
    CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(1), dim3(32), 0, [&] { (void)__shfl_sync(0x1u, 1.0f, 0); }),
                         doctest::Contains("does not contain the calling lane"), thunderc_emu::Error);
  }
  // The emulator is usable again after an error.
  std::vector<float> out(256);
  std::vector<float> in(256, 1.0f);
  thunderc_emu::launch(dim3(1), dim3(256), 0, [&] { k_block_sum(out.data(), in.data(), 256); });
  CHECK(out[0] == 256.0f);
}

TEST_CASE("dynamic shared memory through THUNDERC_DYNAMIC_SHARED, poisoned per block") {
  const unsigned threads = 96, blocks = 3;
  std::vector<float> in(threads * blocks), out(threads * blocks);
  for (unsigned i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  std::vector<unsigned> poisoned(blocks, 0);
  thunderc_emu::launch(dim3(blocks), dim3(threads), threads * sizeof(float),
                       [&] { k_dynamic_shared(out.data(), in.data(), poisoned.data()); });
  for (unsigned b = 0; b < blocks; ++b) {
    CHECK(poisoned[b] == 1u);
    for (unsigned t = 0; t < threads; ++t) CHECK(out[b * threads + t] == in[b * threads + threads - 1 - t]);
  }
}

TEST_CASE("built-in indices over a 3-d grid of 3-d blocks") {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  std::vector<unsigned> out(3 * 2 * 2 * 4 * 3 * 2, ~0u);
  thunderc_emu::launch(grid, block, 0, [&] { k_indices(out.data()); });
  unsigned i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++i)
              CHECK(out[i] == ((bx << 24) | (by << 20) | (bz << 16) | (tx << 8) | (ty << 4) | tz));
}

TEST_CASE("__syncthreads_count, _and, _or") {
  std::vector<int> out(4, -1);
  thunderc_emu::launch(dim3(1), dim3(100), 0, [&] { k_sync_predicates(out.data()); });
  CHECK(out[0] == 34);
  CHECK(out[1] == 1);
  CHECK(out[2] == 1);
  CHECK(out[3] == 0);
}

TEST_CASE("math helpers as CUDA names them") {
  CHECK(isnan(NAN));
  CHECK(isinf(INFINITY));
  CHECK(isfinite(1.0));
  CHECK(isnan(std::nanf("")));
  CHECK(min(3, 5) == 3);
  CHECK(max(3u, 5u) == 5u);
  CHECK(max(-1LL, 4LL) == 4LL);
  CHECK(min(2.5f, NAN) == 2.5f);
  CHECK(max(1.0, 2.0) == 2.0);
  CHECK(rsqrtf(4.0f) == 0.5f);
  CHECK(rsqrt(16.0) == 0.25);
  CHECK(__float_as_int(1.0f) == 0x3f800000);
  CHECK(__int_as_float(0x40000000) == 2.0f);
  CHECK(__float2int_rn(2.5f) == 2);
  CHECK(__float2int_rn(3.5f) == 4);
  CHECK(__fdividef(1.0f, 4.0f) == 0.25f);
  CHECK(__frcp_rn(8.0f) == 0.125f);
  CHECK(__expf(0.0f) == 1.0f);
  CHECK(__logf(1.0f) == 0.0f);
  CHECK(log1pf(0.0f) == 0.0f);
  CHECK(expm1f(0.0f) == 0.0f);
  CHECK(exp2f(3.0f) == 8.0f);
  CHECK(log2f(8.0f) == 3.0f);
  CHECK(fmaf(2.0f, 3.0f, 1.0f) == 7.0f);
  CHECK(roundf(2.5f) == 3.0f);
  CHECK(truncf(-2.7f) == -2.0f);
  const float4 f4 = make_float4(1, 2, 3, 4);
  CHECK(f4.w == 4.0f);
  CHECK(alignof(float4) == 16);
  CHECK(alignof(int2) == 8);
  CHECK(alignof(double2) == 16);
  const double2 d2 = make_double2(1.5, 2.5);
  CHECK(__ldg(&d2).y == 2.5);
  CHECK(warpSize == 32);
}

TEST_CASE("invalid launch configurations are refused") {
  CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(1), dim3(2048), 0, [] {}), doctest::Contains("invalid configuration"),
                       thunderc_emu::Error);
  CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(0), dim3(32), 0, [] {}), doctest::Contains("invalid configuration"),
                       thunderc_emu::Error);
}

TEST_CASE("exceptions thrown by kernel code reach the caller") {
  CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(2), dim3(64), 0,
                                            [] {
                                              if (blockIdx.x == 1 && threadIdx.x == 9) throw std::runtime_error("boom");
                                              __syncthreads();
                                            }),
                       "boom", std::runtime_error);
}

TEST_CASE("launches from several OS threads are serialized") {
  std::vector<std::vector<float>> outs(4, std::vector<float>(4, -1.0f));
  std::vector<float> in(1000, 0.5f);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep)
        thunderc_emu::launch(dim3(4), dim3(256), 0, [&] { k_block_sum(outs[t].data(), in.data(), 1000); });
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& o : outs) CHECK(o == std::vector<float>{128.0f, 128.0f, 128.0f, 116.0f});
}

TEST_CASE("launch from inside a kernel is refused") {
  CHECK_THROWS_WITH_AS(thunderc_emu::launch(dim3(1), dim3(1), 0, [] { thunderc_emu::launch(dim3(1), dim3(1), 0, [] {}); }),
                       doctest::Contains("called from inside a kernel"), thunderc_emu::Error);
}
