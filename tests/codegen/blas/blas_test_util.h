// Helpers for the blas tests: hand-built traces with seeded random data, compiled with compile_model for
// a list of executors and run through libthunderc_runtime.
#pragma once

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <array>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/compile.h"
#include "common/compile_trace.h"
#include "core/executors/executor.h"
#include "core/ir/half.h"
#include "core/ir/verifier.h"
#include "thunderc/runtime.hpp"

namespace blastest {

using namespace thunderc;
namespace fs = std::filesystem;

inline TensorType tt(Shape s, DType dt = DType::Float32) { return {dt, std::move(s), Device{}}; }

// Deterministic values in [-1, 1).
struct Rng {
  std::uint64_t state;
  explicit Rng(std::uint64_t seed) : state(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
  }
};

// Values of t.dtype; with `values_of` a half type, each rounded to it first (so that a float32 tensor holds the
// same numbers as a float16/bfloat16 one made from the same seed).
inline std::shared_ptr<ConstantData> random_bytes(const TensorType& t, Rng& rng, double lo = -1, double hi = 1,
                                                  DType values_of = DType::Float64) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.resize(t.nbytes());
  auto round = [](float f, DType h) {
    if (h == DType::Float16) return f16_to_float(float_to_f16(f));
    if (h == DType::BFloat16) return bf16_to_float(float_to_bf16(f));
    return f;
  };
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    double v = lo + (rng.next() + 1) / 2 * (hi - lo);
    if (t.dtype == DType::Float64) {
      std::memcpy(d->bytes.data() + 8 * i, &v, 8);
    } else if (t.dtype == DType::Float16 || t.dtype == DType::BFloat16) {
      const float f = static_cast<float>(v);
      const std::uint16_t h = t.dtype == DType::Float16 ? float_to_f16(f) : float_to_bf16(f);
      std::memcpy(d->bytes.data() + 2 * i, &h, 2);
    } else {
      float f = round(static_cast<float>(v), values_of);
      std::memcpy(d->bytes.data() + 4 * i, &f, 4);
    }
  }
  return d;
}

inline ValueId random_constant(Trace& t, const std::string& name, const TensorType& type, Rng& rng, double lo = -1,
                               double hi = 1, DType values_of = DType::Float64) {
  return t.add_constant(name, type, random_bytes(type, rng, lo, hi, values_of));
}

inline DLDataType dl_dtype(DType dt) {
  if (dt == DType::BFloat16) return {kDLBfloat, 16, 1};
  return {kDLFloat, static_cast<std::uint8_t>(8 * dtype_size(dt)), 1};
}

// Claims every symbol with `executors` (+ nothing else), compiles to dir/name.so, returns the path.
inline std::string compile(Trace trace, const std::vector<std::string>& executors, const std::string& name) {
  std::vector<const Executor*> exs;
  for (const auto& e : executors) exs.push_back(find_executor(e));
  auto unclaimed = claim_executors(trace, exs);
  if (!unclaimed.empty()) throw std::runtime_error("unclaimed symbol: " + unclaimed[0].op);
  verify_trace(trace, "test");
  return thunderc_test::compile_trace(trace, executors, name, THUNDERC_TEST_TMP);
}

// Random inputs for a trace (seeded), as host tensors.
inline std::vector<HostTensor> random_inputs(const Trace& trace, std::uint64_t seed, DType values_of = DType::Float64) {
  Rng rng(seed);
  std::vector<HostTensor> in;
  for (ValueId v : trace.inputs()) {
    const TensorType& t = trace.type(v);
    HostTensor h(dl_dtype(t.dtype), t.shape);
    auto bytes = random_bytes(t, rng, -1, 1, values_of);
    if (h.nbytes()) std::memcpy(h.raw(), bytes->bytes.data(), h.nbytes());
    in.push_back(std::move(h));
  }
  return in;
}

// Every file of a directory (generated sources kept with keep_sources), concatenated.
inline std::string read_dir_text(const fs::path& dir) {
  std::string all;
  for (const auto& f : fs::directory_iterator(dir)) {
    std::ifstream in(f.path());
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

inline double at(const HostTensor& h, std::size_t i) {
  if (h.dtype().bits == 16) {
    const std::uint16_t b = static_cast<const std::uint16_t*>(h.raw())[i];
    return h.dtype().code == kDLBfloat ? bf16_to_float(b) : f16_to_float(b);
  }
  return h.dtype().bits == 64 ? static_cast<const double*>(h.raw())[i] : static_cast<const float*>(h.raw())[i];
}

// Worst |got - want| / (atol + rtol * |want|) over all elements (<= 1 passes); NaN counts as a failure.
inline double worst_ratio(const HostTensor& got, const HostTensor& want, double rtol, double atol) {
  double worst = 0;
  for (std::size_t i = 0; i < want.numel(); ++i) {
    double g = at(got, i), w = at(want, i);
    if ((std::isnan(g) && std::isnan(w)) || g == w) continue;  // NaN matches NaN, inf matches itself
    double r = std::abs(g - w) / (atol + rtol * std::abs(w));
    if (!(r <= worst)) worst = std::isnan(r) ? 1e30 : r;
  }
  return worst;
}

// Batched (4-D) conv2d shapes both CPU convolution executors (blas, onednn) are checked on: stride, padding,
// dilation, groups, depthwise, 1x1, odd sizes.
struct ConvCase {
  Shape x, w;
  bool bias;
  IntList stride, pad, dil;
  std::int64_t groups;
};
inline const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{1, 3, 9, 11}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 4, 10, 7}, {6, 2, 3, 2}, false, {2, 1}, {1, 0}, {1, 2}, 2},
      {{1, 8, 9, 9}, {8, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 8},      // depthwise, stride 2
      {{2, 6, 7, 7}, {12, 1, 5, 5}, false, {1, 1}, {2, 2}, {2, 2}, 6},    // depthwise x2, dilated
      {{1, 4, 5, 5}, {4, 1, 3, 3}, true, {1, 3}, {3, 2}, {1, 1}, 4},      // padding past the kernel
      {{2, 16, 5, 5}, {32, 16, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1},   // 1x1: plain GEMM
      {{1, 8, 6, 6}, {4, 2, 1, 1}, false, {1, 1}, {0, 0}, {1, 1}, 4},     // grouped 1x1
      {{1, 5, 8, 8}, {3, 5, 1, 1}, true, {2, 2}, {0, 0}, {1, 1}, 1},      // 1x1 stride 2
      {{1, 1, 6, 6}, {3, 1, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, 1},      // one input channel
      {{1, 16, 16, 16}, {32, 4, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 4},  // cnn's grouped conv
      {{1, 2, 1, 1}, {3, 2, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1},      // 1x1 image
      {{2, 3, 13, 4}, {5, 3, 4, 2}, true, {3, 2}, {2, 1}, {2, 1}, 1},
  };
  return cases;
}

// Two threads call the model at `so` at once, one opened with 1 thread and one with 2, 20 calls each: the
// worst worst_ratio of any output against `expected`, per caller (both must stay <= 1).
inline std::array<double, 2> worst_ratio_concurrent(const std::string& so, const std::vector<HostTensor>& in,
                                                    const std::vector<HostTensor>& expected, double rtol, double atol) {
  std::array<double, 2> worst = {0, 0};
  auto caller = [&](int slot, int threads) {
    OpenOptions opts;
    opts.num_threads = threads;
    Model m(so, opts);
    for (int iter = 0; iter < 20; ++iter) {
      auto got = m.run(in);
      for (std::size_t i = 0; i < got.size(); ++i) worst[slot] = std::max(worst[slot], worst_ratio(got[i], expected[i], rtol, atol));
    }
  };
  std::thread a(caller, 0, 1), b(caller, 1, 2);
  a.join();
  b.join();
  return worst;
}

}  // namespace blastest
