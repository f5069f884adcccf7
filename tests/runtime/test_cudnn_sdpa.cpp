// The runtime's fused attention through cuDNN (runtime/src/cudnn.cpp's cudnn_sdpa, compiled into this test with
// test_cudnn.cpp, whose main() it shares) against the fake cuDNN (fake_cuda/fake_libcudnn.cpp), which checks the
// graph the runtime builds against the fused-attention pattern and computes it on the host in double precision
// (storing half/bfloat16 rounded to nearest even, the softmax P too, as the engines do).
//
// Results are compared with a double-precision reference computed from the same (rounded) 16-bit inputs. The
// error bound is relative to max |O|: 2e-3 for float16, 1.5e-2 for bfloat16 (P and O are each rounded once to
// the 16-bit type: 2^-11 and 2^-8 relative).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "../common/run_process.h"
#include "cuda_libs.hpp"
#include "fake_cudnn.h"
#include "fp16_util.hpp"

using namespace thunderc::rt;
using namespace thunderc_test;

namespace {

template <class F>
F lib_fn(const char* lib, const char* name) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(h != nullptr, lib << " is not on LD_LIBRARY_PATH (run through ctest)");
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  return f;
}

thunderc_fake_cudnn_stats_t stats() {
  thunderc_fake_cudnn_stats_t s{};
  lib_fn<thunderc_fake_cudnn_stats_fn>("libcudnn.so.9", "thunderc_fake_cudnn_stats")(&s);
  return s;
}

// The fake driver's device-0 primary context, current for the scope (the fake cuDNN checks it at execute).
struct ContextScope {
  ContextScope() {
    auto init = lib_fn<int (*)(unsigned)>("libcuda.so.1", "cuInit");
    auto retain = lib_fn<int (*)(void**, int)>("libcuda.so.1", "cuDevicePrimaryCtxRetain");
    REQUIRE(init(0) == 0);
    void* ctx = nullptr;
    REQUIRE(retain(&ctx, 0) == 0);
    REQUIRE(lib_fn<int (*)(void*)>("libcuda.so.1", "cuCtxPushCurrent_v2")(ctx) == 0);
  }
  ~ContextScope() {
    void* ctx = nullptr;
    lib_fn<int (*)(void**)>("libcuda.so.1", "cuCtxPopCurrent_v2")(&ctx);
  }
};

struct EnvScope {
  std::string name;
  EnvScope(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvScope() { unsetenv(name.c_str()); }
};

// 64-byte aligned 16-bit elements (like device memory), filled with a sentinel.
struct Buf16 {
  uint16_t* p = nullptr;
  size_t n = 0;
  explicit Buf16(size_t count) : n(count) {
    p = static_cast<uint16_t*>(std::aligned_alloc(64, (count * 2 + 63) / 64 * 64 + 64));
    for (size_t i = 0; i < n; ++i) p[i] = 0x7bad;
  }
  ~Buf16() { std::free(p); }
  Buf16(const Buf16&) = delete;
  Buf16& operator=(const Buf16&) = delete;
  bool untouched() const {
    for (size_t i = 0; i < n; ++i)
      if (p[i] != 0x7bad) return false;
    return true;
  }
};

enum class Mask { kNone, kOverBatch, kOverHeads };  // which dimension the mask broadcasts over

struct Problem {
  uint32_t dtype = THUNDERC_LIB_FLOAT16;
  int64_t batch = 2, heads = 3, sq = 16, skv = 24, d = 32, dv = 16;
  bool causal = false;
  Mask mask = Mask::kNone;
};

uint32_t next_id() {
  static std::atomic<uint32_t> id{500};
  return id++;
}

thunderc_sdpa make_op(const Problem& p, uint32_t id = next_id()) {
  thunderc_sdpa op{};
  op.struct_size = sizeof op;
  op.id = id;
  op.dtype = p.dtype;
  op.causal = p.causal;
  op.has_mask = p.mask != Mask::kNone;
  op.batch = p.batch, op.heads = p.heads, op.sq = p.sq, op.skv = p.skv, op.d = p.d, op.dv = p.dv;
  // The mask buffer is always [batch][heads][sq][skv]; a broadcast dimension reads its first slice only.
  if (p.mask == Mask::kOverBatch) op.mask_batch = 0, op.mask_head = p.sq * p.skv, op.mask_row = p.skv;
  if (p.mask == Mask::kOverHeads) op.mask_batch = p.heads * p.sq * p.skv, op.mask_head = 0, op.mask_row = p.skv;
  op.scale = 1.0 / std::sqrt(static_cast<double>(p.d));
  return op;
}

// Inputs of one problem in the op's 16-bit type, deterministic, and the double reference from the same values.
struct Data {
  thunderc_sdpa op;
  Buf16 q, k, v, mask, o;
  Data(const thunderc_sdpa& o_)
      : op(o_),
        q(static_cast<size_t>(o_.batch * o_.heads * o_.sq * o_.d)),
        k(static_cast<size_t>(o_.batch * o_.heads * o_.skv * o_.d)),
        v(static_cast<size_t>(o_.batch * o_.heads * o_.skv * o_.dv)),
        mask(static_cast<size_t>(o_.batch * o_.heads * o_.sq * o_.skv)),
        o(static_cast<size_t>(o_.batch * o_.heads * o_.sq * o_.dv)) {
    auto fill = [&](Buf16& b, double a, double c, double amp, double offset) {
      for (size_t i = 0; i < b.n; ++i)
        b.p[i] = encode(static_cast<float>(offset + amp * std::sin(a * static_cast<double>(i) + c)));
    };
    fill(q, 0.37, 0.1, 1.5, 0);
    fill(k, 0.91, 0.7, 1.5, 0);
    fill(v, 0.53, 0.3, 1.0, 0.25);  // an offset keeps max |O| away from 0 (O averages V)
    fill(mask, 0.29, 1.1, 2.0, -1);
  }
  uint16_t encode(float f) const { return op.dtype == THUNDERC_LIB_BFLOAT16 ? to_bf16(f) : to_half(f); }
  double decode(uint16_t h) const { return op.dtype == THUNDERC_LIB_BFLOAT16 ? from_bf16(h) : from_half(h); }

  std::vector<double> reference() const {
    const int64_t B = op.batch, H = op.heads, SQ = op.sq, SKV = op.skv, D = op.d, DV = op.dv;
    std::vector<double> out(o.n);
    std::vector<double> s(static_cast<size_t>(SKV));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < SQ; ++i) {
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < SKV; ++j) {
            double acc = 0;
            for (int64_t x = 0; x < D; ++x)
              acc += decode(q.p[((b * H + h) * SQ + i) * D + x]) * decode(k.p[((b * H + h) * SKV + j) * D + x]);
            acc *= op.scale;
            if (op.has_mask) acc += decode(mask.p[op.mask_batch * b + op.mask_head * h + op.mask_row * i + j]);
            if (op.causal && j > i) acc = -std::numeric_limits<double>::infinity();
            s[static_cast<size_t>(j)] = acc;
            mx = std::max(mx, acc);
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t y = 0; y < DV; ++y) {
            double acc = 0;
            for (int64_t j = 0; j < SKV; ++j) acc += s[static_cast<size_t>(j)] / z * decode(v.p[((b * H + h) * SKV + j) * DV + y]);
            out[static_cast<size_t>(((b * H + h) * SQ + i) * DV + y)] = acc;
          }
        }
    return out;
  }

  // max |O - reference| / max |reference|
  double relative_error() const {
    const std::vector<double> ref = reference();
    double err = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double got = decode(o.p[i]);
      if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
      err = std::max(err, std::fabs(got - ref[i]));
      scale = std::max(scale, std::fabs(ref[i]));
    }
    return err / scale;
  }
};

// One CudnnDevice with a context, a 32 MiB workspace and a stream handle (the fake cuDNN only records it).
struct Fixture {
  ContextScope ctx;
  CudnnDevicePtr dev = make_cudnn_device(0);
  std::vector<unsigned char> ws_storage = std::vector<unsigned char>(kLibWorkspaceBytes + 64);
  void* workspace = ws_storage.data() + (64 - reinterpret_cast<uintptr_t>(ws_storage.data()) % 64) % 64;
  void* stream = reinterpret_cast<void*>(0x5dba);

  int32_t run(Data& d, std::string* message = nullptr, bool pass_mask = true) {
    LibCall call{0, stream, workspace, kLibWorkspaceBytes};
    char error[512] = "";
    const int32_t r = cudnn_sdpa(*dev, call, &d.op, d.o.p, d.q.p, d.k.p, d.v.p,
                                 d.op.has_mask && pass_mask ? d.mask.p : nullptr, error, sizeof error);
    if (message) *message = error;
    if (r != 0 && r != THUNDERC_DEVICE_API_FALLBACK && !message) MESSAGE("error: " << error);
    return r;
  }
};

double tolerance(uint32_t dtype) { return dtype == THUNDERC_LIB_BFLOAT16 ? 1.5e-2 : 2e-3; }

bool is_child() {
  const char* e = std::getenv("THUNDERC_CUDNN_TEST_CHILD");
  return e && *e == '1';
}

}  // namespace

TEST_CASE("cudnn sdpa: float16 and bfloat16, causal or not, masks broadcast over batch or heads, agree with a "
          "double reference") {
  struct Case {
    const char* name;
    Problem p;
  };
  std::vector<Case> cases;
  for (uint32_t dt : {THUNDERC_LIB_FLOAT16, THUNDERC_LIB_BFLOAT16})
    for (bool causal : {false, true})
      for (Mask m : {Mask::kNone, Mask::kOverBatch, Mask::kOverHeads}) {
        Problem p;
        p.dtype = dt, p.causal = causal, p.mask = m;
        cases.push_back({"sq 16, skv 24", p});
      }
  {
    Problem p;  // odd sequence lengths, sq > skv, equal head dims, one head
    p.batch = 1, p.heads = 1, p.sq = 11, p.skv = 5, p.d = p.dv = 64, p.causal = true;
    cases.push_back({"sq 11, skv 5, causal", p});
    p.dtype = THUNDERC_LIB_BFLOAT16, p.causal = false, p.d = 128, p.dv = 8, p.sq = 3, p.skv = 40;
    cases.push_back({"d 128, dv 8", p});
  }
  Fixture f;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.p.dtype);
    CAPTURE(c.p.causal);
    CAPTURE(static_cast<int>(c.p.mask));
    Data d(make_op(c.p));
    const auto before = stats();
    REQUIRE(f.run(d) == 0);
    CHECK(stats().executes == before.executes + 1);
    const double err = d.relative_error();
    CAPTURE(err);
    CHECK(err <= tolerance(c.p.dtype));
  }
}

TEST_CASE("cudnn sdpa: a mask or the causal flag changes the result (the reference is not trivially met)") {
  Fixture f;
  Problem p;
  p.mask = Mask::kOverHeads;
  Data with(make_op(p));
  REQUIRE(f.run(with) == 0);
  Data without(make_op(p));
  without.op.has_mask = 0;
  without.op.mask_batch = without.op.mask_head = without.op.mask_row = 0;
  REQUIRE(f.run(without) == 0);
  size_t differ = 0;
  for (size_t i = 0; i < with.o.n; ++i) differ += with.o.p[i] != without.o.p[i];
  CHECK(differ > with.o.n / 2);
  CHECK(without.relative_error() <= tolerance(p.dtype));
}

TEST_CASE("cudnn sdpa: a plan is built once per id and reused, the scale read at each call") {
  Fixture f;
  Problem p;
  p.causal = true, p.mask = Mask::kOverBatch;
  const thunderc_sdpa op = make_op(p);
  const auto s0 = stats();
  for (int i = 0; i < 3; ++i) {
    Data d(op);
    REQUIRE(f.run(d) == 0);
    CHECK(d.relative_error() <= tolerance(p.dtype));
  }
  const auto s1 = stats();
  CHECK(s1.plans_finalized == s0.plans_finalized + 1);
  CHECK(s1.graphs_finalized == s0.graphs_finalized + 1);
  CHECK(s1.executes == s0.executes + 3);
  CHECK(s1.last_stream == f.stream);
}

TEST_CASE("cudnn sdpa: float32 and head dims cuDNN does not take fall back, building nothing, O untouched") {
  Fixture f;
  struct Case {
    const char* name;
    Problem p;
  };
  Problem f32;
  f32.dtype = THUNDERC_LIB_FLOAT32;
  Problem d100;
  d100.d = 100;
  Problem d136;
  d136.d = d136.dv = 136;
  Problem dv12;
  dv12.dv = 12;
  for (const Case& c : {Case{"float32", f32}, Case{"d 100", d100}, Case{"d 136", d136}, Case{"dv 12", dv12}}) {
    CAPTURE(c.name);
    Data d(make_op(c.p));
    const auto before = stats();
    CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
    CHECK(d.o.untouched());
    CHECK(stats().graphs_finalized == before.graphs_finalized);
    CHECK(stats().executes == before.executes);
  }
  // A mask whose row stride is not 16-byte aligned: FALLBACK as well.
  Problem odd;
  odd.skv = 12, odd.mask = Mask::kOverBatch;
  Data d(make_op(odd));
  CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(d.o.untouched());
  // A pointer off the 16-byte boundary the plan promises.
  Data ok(make_op(Problem{}));
  LibCall call{0, f.stream, f.workspace, kLibWorkspaceBytes};
  char error[256] = "";
  CHECK(cudnn_sdpa(*f.dev, call, &ok.op, ok.o.p, ok.q.p + 1, ok.k.p, ok.v.p, nullptr, error, sizeof error) ==
        THUNDERC_DEVICE_API_FALLBACK);
}

TEST_CASE("cudnn sdpa: no engine answers FALLBACK, enqueues nothing, and is remembered for the id") {
  Fixture f;
  Problem p;
  p.causal = true;
  const thunderc_sdpa op = make_op(p);
  {
    EnvScope none("THUNDERC_FAKE_CUDNN_NO_ATTENTION", "1");
    Data d(op);
    const auto before = stats();
    CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
    CHECK(d.o.untouched());
    CHECK(stats().executes == before.executes);
    CHECK(stats().graphs_finalized == before.graphs_finalized + 1);
  }
  // The engine would be there now, but the id's answer was cached: no second plan build.
  Data again(op);
  const auto before = stats();
  CHECK(f.run(again) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(stats().graphs_finalized == before.graphs_finalized);
  // Another id builds its own plan and runs.
  Data other(make_op(p));
  CHECK(f.run(other) == 0);
  CHECK(other.relative_error() <= tolerance(p.dtype));
}

TEST_CASE("cudnn sdpa: an invalid operation or a reused id is an error naming the call") {
  Fixture f;
  struct Case {
    const char* name;
    void (*edit)(thunderc_sdpa&);
    const char* expect;
  };
  const Case cases[] = {
      {"sq 0", [](thunderc_sdpa& o) { o.sq = 0; }, "invalid operation: sq is 0, expected 1 .. 2^31"},
      {"negative d", [](thunderc_sdpa& o) { o.d = -8; }, "invalid operation: d is -8"},
      {"reserved", [](thunderc_sdpa& o) { o.reserved = 7; }, "invalid operation: reserved is 7, expected 0"},
      {"dtype", [](thunderc_sdpa& o) { o.dtype = 9; }, "invalid operation: dtype is 9, not a THUNDERC_LIB_* type"},
      {"causal 2", [](thunderc_sdpa& o) { o.causal = 2; }, "causal and has_mask must be 0 or 1"},
      {"negative mask stride", [](thunderc_sdpa& o) { o.has_mask = 1, o.mask_row = -24; },
       "invalid operation: mask_row is -24, expected a stride 0 .. 2^48 (0: broadcast)"},
      {"NaN scale", [](thunderc_sdpa& o) { o.scale = std::nan(""); }, "scale is not a finite number"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Data d(make_op(Problem{}));  // buffers for a valid problem, then the operation made invalid
    c.edit(d.op);
    const thunderc_sdpa& op = d.op;
    std::string message;
    CHECK(f.run(d, &message) == 1);
    CHECK(message.rfind("sdpa #" + std::to_string(op.id) + " [batch 2 heads 3 sq ", 0) == 0);
    CHECK(message.find(c.expect) != std::string::npos);
    CHECK(d.o.untouched());
  }
  {
    Problem p;
    p.mask = Mask::kOverHeads;
    Data d(make_op(p));
    std::string message;
    CHECK(f.run(d, &message, /*pass_mask=*/false) == 1);
    CHECK(message.find("mask NULL exactly when has_mask is 0") != std::string::npos);
  }
  {
    const thunderc_sdpa first = make_op(Problem{});
    Data a(first);
    REQUIRE(f.run(a) == 0);
    Problem other;
    other.causal = true;
    Data b(make_op(other, first.id));
    std::string message;
    CHECK(f.run(b, &message) == 1);
    CHECK(message.find("library-call id " + std::to_string(first.id) + " was first used for another problem (sdpa #") !=
          std::string::npos);
    CHECK(b.o.untouched());
  }
}

TEST_CASE("child: cudnn sdpa library missing") {
  if (!is_child()) return;
  Fixture f;
  Data d(make_op(Problem{}));
  CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(d.o.untouched());
}

TEST_CASE("cudnn sdpa: without libcudnn every call falls back") {
  if (is_child()) return;
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(len > 0);
  self[len] = '\0';
  auto r = thunderc_test::run_shell("env THUNDERC_CUDNN_TEST_CHILD=1 THUNDERC_CUDNN_LIBRARY=/nonexistent/libcudnn.so.9 " +
                                    thunderc_test::shell_quote(self) + " " +
                                    thunderc_test::shell_quote("--test-case=child: cudnn sdpa library missing") +
                                    " --no-version");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(std::regex_search(r.out, std::regex(R"(test cases: +1 \| +1 passed \| +0 failed)")));
}
