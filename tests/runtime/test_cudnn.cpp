// The runtime's cuDNN path (runtime/src/cudnn.cpp, compiled into this test) against the fake cuDNN
// (fake_cuda/fake_libcudnn.cpp): ctest puts fake_cuda/ on LD_LIBRARY_PATH, so the runtime's unchanged
// dlopen("libcudnn.so.9") and the fake driver's libcuda.so.1 are found there. Results are checked against a
// double-precision CPU convolution; the fake computes in double and stores float, so FP32 results agree to
// float rounding (tolerance: 1e-5 relative + 1e-6 absolute).
//
// Behaviour that depends on the process-wide library (THUNDERC_CUDNN_LIBRARY, the version) runs in a child
// process: this executable again, with the environment set, running one "child:" test case.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../common/run_process.h"
#include "cuda_libs.hpp"
#include "fake_cudnn.h"

using namespace thunderc::rt;

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  return context.run();
}

namespace {

template <class F>
F lib_fn(const char* lib, const char* name) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(h != nullptr, lib << " is not on LD_LIBRARY_PATH (run through ctest)");
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  return f;  // the handle stays open: the runtime holds the library anyway
}

thunderc_fake_cudnn_stats_t stats() {
  thunderc_fake_cudnn_stats_t s{};
  lib_fn<thunderc_fake_cudnn_stats_fn>("libcudnn.so.9", "thunderc_fake_cudnn_stats")(&s);
  return s;
}

// Makes the fake driver's device-0 primary context current on this thread (as cuda_exec.cpp does around a
// call): the fake cuDNN checks that executes happen in the handle's context.
struct ContextScope {
  using PushFn = int (*)(void*);
  using PopFn = int (*)(void**);
  ContextScope() {
    auto init = lib_fn<int (*)(unsigned)>("libcuda.so.1", "cuInit");
    auto retain = lib_fn<int (*)(void**, int)>("libcuda.so.1", "cuDevicePrimaryCtxRetain");
    REQUIRE(init(0) == 0);
    void* ctx = nullptr;
    REQUIRE(retain(&ctx, 0) == 0);
    REQUIRE(lib_fn<PushFn>("libcuda.so.1", "cuCtxPushCurrent_v2")(ctx) == 0);
  }
  ~ContextScope() {
    void* ctx = nullptr;
    lib_fn<PopFn>("libcuda.so.1", "cuCtxPopCurrent_v2")(&ctx);
  }
};

// 64-byte aligned floats (like device memory), filled with a sentinel.
struct Buf {
  float* p = nullptr;
  size_t n = 0;
  explicit Buf(size_t count, float fill = -777.0f) : n(count) {
    p = static_cast<float*>(std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64 + 64));
    for (size_t i = 0; i < n; ++i) p[i] = fill;
  }
  ~Buf() { std::free(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

struct Problem {
  int64_t n = 1, c = 4, h = 7, w = 6, k = 5, r = 3, s = 3;
  int64_t stride_h = 1, stride_w = 1, pad_h = 1, pad_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  bool bias = false, residual = false;
  uint32_t act = THUNDERC_LIB_ACT_NONE;
  uint32_t math = THUNDERC_LIB_MATH_FP32;
};

thunderc_conv2d make_op(uint32_t id, const Problem& p) {
  thunderc_conv2d op{};
  op.struct_size = sizeof op;
  op.id = id;
  op.dtype = THUNDERC_LIB_FLOAT32;
  op.math = p.math;
  op.activation = p.act;
  op.has_bias = p.bias;
  op.has_residual = p.residual;
  op.n = p.n, op.c = p.c, op.h = p.h, op.w = p.w, op.k = p.k, op.r = p.r, op.s = p.s;
  op.stride_h = p.stride_h, op.stride_w = p.stride_w, op.pad_h = p.pad_h, op.pad_w = p.pad_w;
  op.dil_h = p.dil_h, op.dil_w = p.dil_w, op.groups = p.groups;
  op.oh = (p.h + 2 * p.pad_h - p.dil_h * (p.r - 1) - 1) / p.stride_h + 1;
  op.ow = (p.w + 2 * p.pad_w - p.dil_w * (p.s - 1) - 1) / p.stride_w + 1;
  return op;
}

// Inputs of one problem, deterministic and not representable in TF32 (so TF32 rounding shows).
struct Data {
  thunderc_conv2d op;
  Buf x, w, bias, residual, y;
  explicit Data(const thunderc_conv2d& o)
      : op(o),
        x(static_cast<size_t>(o.n * o.c * o.h * o.w)),
        w(static_cast<size_t>(o.k * (o.c / o.groups) * o.r * o.s)),
        bias(static_cast<size_t>(o.k)),
        residual(static_cast<size_t>(o.n * o.k * o.oh * o.ow)),
        y(static_cast<size_t>(o.n * o.k * o.oh * o.ow)) {
    for (size_t i = 0; i < x.n; ++i) x.p[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1)) / 3.0f;
    for (size_t i = 0; i < w.n; ++i) w.p[i] = static_cast<float>(std::cos(0.91 * static_cast<double>(i))) / 7.0f;
    for (size_t i = 0; i < bias.n; ++i) bias.p[i] = 0.25f - 0.1f * static_cast<float>(i);
    for (size_t i = 0; i < residual.n; ++i) residual.p[i] = static_cast<float>(i % 7) / 9.0f - 0.3f;
  }
  // The CPU reference, in double.
  std::vector<double> reference() const {
    std::vector<double> out(y.n);
    const int64_t cg = op.c / op.groups, kg = op.k / op.groups;
    size_t at = 0;
    for (int64_t n = 0; n < op.n; ++n)
      for (int64_t k = 0; k < op.k; ++k)
        for (int64_t oh = 0; oh < op.oh; ++oh)
          for (int64_t ow = 0; ow < op.ow; ++ow, ++at) {
            double acc = 0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t r = 0; r < op.r; ++r)
                for (int64_t s = 0; s < op.s; ++s) {
                  const int64_t ih = oh * op.stride_h - op.pad_h + r * op.dil_h;
                  const int64_t iw = ow * op.stride_w - op.pad_w + s * op.dil_w;
                  if (ih < 0 || iw < 0 || ih >= op.h || iw >= op.w) continue;
                  const int64_t ci = k / kg * cg + c;
                  acc += static_cast<double>(x.p[((n * op.c + ci) * op.h + ih) * op.w + iw]) *
                         static_cast<double>(w.p[((k * cg + c) * op.r + r) * op.s + s]);
                }
            if (op.has_bias) acc += bias.p[k];
            if (op.has_residual) acc += residual.p[at];
            switch (op.activation) {
              case THUNDERC_LIB_ACT_RELU: acc = acc > 0 ? acc : 0; break;
              case THUNDERC_LIB_ACT_SIGMOID: acc = 1 / (1 + std::exp(-acc)); break;
              case THUNDERC_LIB_ACT_SILU: acc = acc / (1 + std::exp(-acc)); break;
              case THUNDERC_LIB_ACT_GELU_TANH:
                acc = 0.5 * acc * (1 + std::tanh(std::sqrt(2 / M_PI) * (acc + 0.044715 * acc * acc * acc)));
                break;
              default: break;
            }
            out[at] = acc;
          }
    return out;
  }
  // The largest |y - ref| / (1e-6 + |ref|) ... expressed as: number of elements off by more than tolerance.
  size_t mismatches(double rel, double abs, double* worst = nullptr) const {
    const std::vector<double> ref = reference();
    size_t bad = 0;
    double max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double err = std::fabs(static_cast<double>(y.p[i]) - ref[i]);
      max_err = std::max(max_err, err);
      if (!(err <= abs + rel * std::fabs(ref[i]))) ++bad;
    }
    if (worst) *worst = max_err;
    return bad;
  }
  bool y_untouched() const {
    for (size_t i = 0; i < y.n; ++i)
      if (y.p[i] != -777.0f) return false;
    return true;
  }
};

constexpr double kRel = 1e-5, kAbs = 1e-6;

// One CudnnDevice with a context, a 32 MiB workspace and a stream handle (the fake cuDNN only records it).
struct Fixture {
  ContextScope ctx;
  CudnnDevicePtr dev = make_cudnn_device(0);
  Buf workspace{kLibWorkspaceBytes / sizeof(float), 0.0f};
  void* stream = reinterpret_cast<void*>(0x5157);

  int32_t run(Data& d, std::string* message = nullptr, void* on_stream = nullptr) {
    LibCall call{0, on_stream ? on_stream : stream, workspace.p, kLibWorkspaceBytes};
    char error[512] = "";
    const int32_t r = cudnn_conv2d(*dev, call, &d.op, d.y.p, d.x.p, d.w.p, d.op.has_bias ? d.bias.p : nullptr,
                                   d.op.has_residual ? d.residual.p : nullptr, error, sizeof error);
    if (message) *message = error;
    if (r != 0 && r != THUNDERC_DEVICE_API_FALLBACK) MESSAGE("error: " << error);
    return r;
  }
};

// Sets an environment variable for the scope.
struct EnvScope {
  std::string name;
  EnvScope(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvScope() { unsetenv(name.c_str()); }
};

uint32_t next_id() {
  static std::atomic<uint32_t> id{100};
  return id++;
}

bool is_child() {
  const char* e = std::getenv("THUNDERC_CUDNN_TEST_CHILD");
  return e && *e == '1';
}

// Runs test case `name` of this executable in a child process with `env` ("A=1 B=2") added.
thunderc_test::ProcessResult run_child(const std::string& name, const std::string& env) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(len > 0);
  self[len] = '\0';
  return thunderc_test::run_shell("env THUNDERC_CUDNN_TEST_CHILD=1 " + env + " " + thunderc_test::shell_quote(self) +
                                  " " + thunderc_test::shell_quote("--test-case=" + name) + " --no-version");
}

// Whether a child's doctest summary says that exactly one test case ran and passed.
bool child_passed(const std::string& out) {
  return std::regex_search(out, std::regex(R"(test cases: +1 \| +1 passed \| +0 failed)"));
}

}  // namespace

TEST_CASE("cudnn: the library is found by its default name and reports its version") {
  CHECK(cudnn_library_text() == "libcudnn.so.9 (cuDNN 9.19.0)");
}

TEST_CASE("cudnn: fused convolutions agree with a CPU reference (FP32)") {
  struct Case {
    const char* name;
    Problem p;
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, auto edit) {
    Problem p;
    edit(p);
    cases.push_back({name, p});
  };
  add("plain 3x3 pad 1", [](Problem&) {});
  add("bias", [](Problem& p) { p.bias = true; });
  add("bias + relu", [](Problem& p) { p.bias = true, p.act = THUNDERC_LIB_ACT_RELU; });
  add("bias + residual + relu", [](Problem& p) { p.bias = p.residual = true, p.act = THUNDERC_LIB_ACT_RELU; });
  add("residual only", [](Problem& p) { p.residual = true; });
  add("silu", [](Problem& p) { p.bias = true, p.act = THUNDERC_LIB_ACT_SILU; });
  add("sigmoid", [](Problem& p) { p.act = THUNDERC_LIB_ACT_SIGMOID; });
  add("gelu tanh", [](Problem& p) { p.bias = true, p.act = THUNDERC_LIB_ACT_GELU_TANH; });
  add("stride 2", [](Problem& p) { p.stride_h = p.stride_w = 2, p.h = 9, p.w = 8; });
  add("5x5 pad 2", [](Problem& p) { p.r = p.s = 5, p.pad_h = p.pad_w = 2; });
  add("no padding", [](Problem& p) { p.pad_h = p.pad_w = 0; });
  add("dilation 2", [](Problem& p) { p.dil_h = p.dil_w = 2, p.pad_h = p.pad_w = 2; });
  add("groups 2", [](Problem& p) { p.c = 4, p.k = 6, p.groups = 2, p.bias = true; });
  add("depthwise", [](Problem& p) { p.c = p.k = p.groups = 6, p.bias = true, p.act = THUNDERC_LIB_ACT_RELU; });
  add("1x1", [](Problem& p) { p.r = p.s = 1, p.pad_h = p.pad_w = 0, p.c = 8, p.k = 16; });
  add("batch 3, rectangular everything", [](Problem& p) {
    p.n = 3, p.h = 11, p.w = 6, p.r = 3, p.s = 1, p.stride_h = 2, p.stride_w = 1, p.pad_h = 1, p.pad_w = 0;
    p.dil_h = 2, p.dil_w = 1, p.pad_h = 2, p.bias = p.residual = true, p.act = THUNDERC_LIB_ACT_SILU;
  });
  Fixture f;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Data d(make_op(next_id(), c.p));
    const uint64_t before = stats().executes;
    REQUIRE(f.run(d) == 0);
    CHECK(stats().executes == before + 1);
    CHECK(stats().last_engine == 1);  // FP32: the tensor-core engine (#0) is excluded
    CHECK(stats().last_stream == f.stream);
    double worst = 0;
    CHECK(d.mismatches(kRel, kAbs, &worst) == 0);
    CAPTURE(worst);
  }
  CHECK(stats().interleaved == 0);
}

TEST_CASE("cudnn: a plan is built once per id and reused") {
  Fixture f;
  Problem p;
  p.bias = true, p.act = THUNDERC_LIB_ACT_RELU;
  Data d(make_op(next_id(), p));
  const thunderc_fake_cudnn_stats_t s0 = stats();
  REQUIRE(f.run(d) == 0);
  const thunderc_fake_cudnn_stats_t s1 = stats();
  CHECK(s1.graphs_finalized == s0.graphs_finalized + 1);
  CHECK(s1.heuristics_finalized == s0.heuristics_finalized + 1);  // mode A was enough
  CHECK(s1.plans_finalized == s0.plans_finalized + 1);            // #0 skipped before finalizing (TF32)
  for (size_t i = 0; i < d.y.n; ++i) d.y.p[i] = -777.0f;
  REQUIRE(f.run(d) == 0);
  const thunderc_fake_cudnn_stats_t s2 = stats();
  CHECK(s2.graphs_finalized == s1.graphs_finalized);
  CHECK(s2.heuristics_finalized == s1.heuristics_finalized);
  CHECK(s2.plans_finalized == s1.plans_finalized);
  CHECK(s2.executes == s1.executes + 1);
  CHECK(d.mismatches(kRel, kAbs) == 0);
  // A call carries only descriptors of its own (the variant pack): nothing leaks per call.
  CHECK(s2.live_descriptors == s1.live_descriptors);
  CHECK(s2.failed_calls == s0.failed_calls);
}

TEST_CASE("cudnn: math TF32 allows the tensor-core engine, FP32 does not") {
  Fixture f;
  Problem p;
  p.c = 16, p.k = 8;
  p.math = THUNDERC_LIB_MATH_TF32;
  Data tf32(make_op(next_id(), p));
  REQUIRE(f.run(tf32) == 0);
  CHECK(stats().last_engine == 0);
  CHECK(stats().last_workspace_size == 0);
  double worst = 0;
  CHECK(tf32.mismatches(5e-3, 1e-3, &worst) == 0);  // TF32 keeps 10 mantissa bits
  CHECK(worst > 1e-6);                              // ... and the rounding shows
  p.math = THUNDERC_LIB_MATH_FP32;
  Data fp32(make_op(next_id(), p));
  REQUIRE(f.run(fp32) == 0);
  CHECK(stats().last_engine == 1);
  CHECK(stats().last_workspace_size == 4096);
  CHECK(fp32.mismatches(kRel, kAbs) == 0);
}

TEST_CASE("cudnn: no engine answers FALLBACK, enqueues nothing, and is remembered for the id") {
  Fixture f;
  Problem p;
  p.bias = true;
  Data d(make_op(next_id(), p));
  {
    EnvScope none("THUNDERC_FAKE_CUDNN_NO_ENGINE", "1");
    const uint64_t executes = stats().executes;
    std::string message;
    CHECK(f.run(d, &message) == THUNDERC_DEVICE_API_FALLBACK);
    CHECK(message.empty());
    CHECK(d.y_untouched());
    CHECK(stats().executes == executes);
  }
  // The engines are back, but the id stays unsupported without asking cuDNN again.
  const thunderc_fake_cudnn_stats_t s0 = stats();
  CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(stats().heuristics_finalized == s0.heuristics_finalized);
  CHECK(stats().graphs_finalized == s0.graphs_finalized);
  CHECK(d.y_untouched());
  // Another id builds its own plan.
  Data other(make_op(next_id(), p));
  REQUIRE(f.run(other) == 0);
  CHECK(other.mismatches(kRel, kAbs) == 0);
}

TEST_CASE("cudnn: engines needing more workspace than the call has are skipped") {
  Fixture f;
  EnvScope big("THUNDERC_FAKE_CUDNN_WORKSPACE", std::to_string(kLibWorkspaceBytes + 1).c_str());
  Problem p;
  Data fp32(make_op(next_id(), p));
  CHECK(f.run(fp32) == THUNDERC_DEVICE_API_FALLBACK);  // #1 too big, #0 is TF32
  CHECK(fp32.y_untouched());
  p.math = THUNDERC_LIB_MATH_TF32;
  Data tf32(make_op(next_id(), p));
  REQUIRE(f.run(tf32) == 0);
  CHECK(stats().last_engine == 0);
}

TEST_CASE("cudnn: an engine config that does not finalize is skipped for the next one") {
  Fixture f;
  EnvScope broken("THUNDERC_FAKE_CUDNN_FAIL_ENGINE", "0");
  Problem p;
  p.math = THUNDERC_LIB_MATH_TF32;
  p.residual = true;
  Data d(make_op(next_id(), p));
  REQUIRE(f.run(d) == 0);
  CHECK(stats().last_engine == 1);
  CHECK(d.mismatches(kRel, kAbs) == 0);
}

TEST_CASE("cudnn: a grouped convolution without an engine falls back, others still run") {
  Fixture f;
  EnvScope no_grouped("THUNDERC_FAKE_CUDNN_NO_GROUPED", "1");
  Problem p;
  p.c = p.k = p.groups = 4;
  Data depthwise(make_op(next_id(), p));
  CHECK(f.run(depthwise) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(depthwise.y_untouched());
  p.groups = 1;
  Data dense(make_op(next_id(), p));
  REQUIRE(f.run(dense) == 0);
  CHECK(dense.mismatches(kRel, kAbs) == 0);
}

TEST_CASE("cudnn: a pointer off the 16-byte boundary the plan promises falls back") {
  Fixture f;
  Problem p;
  const thunderc_conv2d op = make_op(next_id(), p);
  Data d(op);
  REQUIRE(f.run(d) == 0);  // builds the plan
  Buf x_shifted(d.x.n + 1);
  std::memcpy(x_shifted.p + 1, d.x.p, d.x.n * sizeof(float));
  LibCall call{0, f.stream, f.workspace.p, kLibWorkspaceBytes};
  const uint64_t executes = stats().executes;
  char error[256] = "";
  CHECK(cudnn_conv2d(*f.dev, call, &op, d.y.p, x_shifted.p + 1, d.w.p, nullptr, nullptr, error, sizeof error) ==
        THUNDERC_DEVICE_API_FALLBACK);
  CHECK(stats().executes == executes);
}

TEST_CASE("cudnn: cuDNN errors name the operation and cuDNN's status") {
  Fixture f;
  Problem p;
  p.c = 64, p.k = 64, p.h = p.w = 5;
  Data d(make_op(next_id(), p));
  REQUIRE(f.run(d) == 0);
  EnvScope broken("THUNDERC_FAKE_CUDNN_EXECUTE_STATUS", "5000");
  std::string message;
  CHECK(f.run(d, &message) == 5000);
  const std::string op = "conv2d #" + std::to_string(d.op.id) + " [N=1 C=64 H=5 W=5 K=64 3x3 stride 1 pad 1]";
  CHECK(message.rfind(op + ": cudnnBackendExecute failed: CUDNN_STATUS_EXECUTION_FAILED: ", 0) == 0);
  CHECK(message.find("$THUNDERC_FAKE_CUDNN_EXECUTE_STATUS") != std::string::npos);  // cudnnGetLastErrorString
}

TEST_CASE("cudnn: an inconsistent operation or a reused id is an error naming it") {
  Fixture f;
  Problem p;
  p.stride_h = p.stride_w = 2;
  thunderc_conv2d op = make_op(next_id(), p);
  op.oh += 1;
  Data bad(op);
  std::string message;
  CHECK(f.run(bad, &message) == 1);
  CHECK(message.find("conv2d #" + std::to_string(op.id) + " [N=1 C=4 H=7 W=6 K=5 3x3 stride 2 pad 1]: invalid "
                     "operation: output 5x3 does not follow") == 0);

  Data first(make_op(next_id(), p));
  REQUIRE(f.run(first) == 0);
  Problem q = p;
  q.k = 3;
  thunderc_conv2d other = make_op(first.op.id, q);
  Data second(other);
  CHECK(f.run(second, &message) == 1);
  CHECK(message.find("was first used for another problem") != std::string::npos);
  CHECK(second.y_untouched());
}

TEST_CASE("cudnn: two threads on two streams share one device: correct results, the handle never interleaved") {
  ContextScope ctx;
  CudnnDevicePtr dev = make_cudnn_device(0);
  Problem shared_problem;
  shared_problem.bias = true, shared_problem.act = THUNDERC_LIB_ACT_RELU;
  const uint32_t shared_id = next_id();
  const uint64_t interleaved = stats().interleaved;
  std::atomic<int> failures{0};
  auto worker = [&](int t) {
    ContextScope thread_ctx;
    Buf workspace(kLibWorkspaceBytes / sizeof(float), 0.0f);
    void* stream = reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + t));
    for (int i = 0; i < 12; ++i) {
      Problem p = shared_problem;
      uint32_t id = shared_id;
      if (i % 3 == 1) {  // some ids of its own, built concurrently with the other thread's calls
        p.k = 3 + t, p.residual = true;
        id = next_id();
      }
      Data d(make_op(id, p));
      LibCall call{0, stream, workspace.p, kLibWorkspaceBytes};
      char error[256] = "";
      const int32_t r = cudnn_conv2d(*dev, call, &d.op, d.y.p, d.x.p, d.w.p, d.bias.p,
                                     d.op.has_residual ? d.residual.p : nullptr, error, sizeof error);
      if (r != 0 || d.mismatches(kRel, kAbs) != 0) ++failures;
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  CHECK(failures == 0);
  CHECK(stats().interleaved == interleaved);
}

TEST_CASE("cudnn: a device is released with its plans and handle") {
  const thunderc_fake_cudnn_stats_t s0 = stats();
  {
    Fixture f;
    Problem p;
    p.bias = p.residual = true;
    Data d(make_op(next_id(), p));
    REQUIRE(f.run(d) == 0);
    CHECK(stats().live_handles == s0.live_handles + 1);
    CHECK(stats().live_descriptors > s0.live_descriptors);
  }
  CHECK(stats().live_handles == s0.live_handles);
  CHECK(stats().live_descriptors == s0.live_descriptors);
}

// ---- the process-wide library, in child processes ---------------------------------------------------------

TEST_CASE("child: cudnn library missing") {
  if (!is_child()) return;
  const std::string text = cudnn_library_text();
  CHECK(text.rfind("not found: /nonexistent/libcudnn.so.9 (named by $THUNDERC_CUDNN_LIBRARY) (dlopen: ", 0) == 0);
  Fixture f;
  Data d(make_op(1, Problem{}));
  CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(d.y_untouched());
}

TEST_CASE("cudnn: THUNDERC_CUDNN_LIBRARY naming a missing file: every call falls back, the text says why") {
  if (is_child()) return;
  auto r = run_child("child: cudnn library missing", "THUNDERC_CUDNN_LIBRARY=/nonexistent/libcudnn.so.9");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(child_passed(r.out));
}

TEST_CASE("child: cudnn too old") {
  if (!is_child()) return;
  CHECK(cudnn_library_text() == "libcudnn.so.9 (cuDNN 8.9.7): too old, cuDNN 9 or newer is needed");
  Fixture f;
  Data d(make_op(1, Problem{}));
  CHECK(f.run(d) == THUNDERC_DEVICE_API_FALLBACK);
  CHECK(stats().live_handles == 0);  // not even a handle
}

TEST_CASE("cudnn: a cuDNN older than 9 is not used") {
  if (is_child()) return;
  auto r = run_child("child: cudnn too old", "THUNDERC_FAKE_CUDNN_VERSION=8907");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(child_passed(r.out));
}

TEST_CASE("child: cudnn real library") {
  if (!is_child()) return;
  const std::string text = cudnn_library_text();
  INFO(text);
  CHECK(text.rfind(std::string(std::getenv("THUNDERC_CUDNN_LIBRARY")) + " (cuDNN 9.", 0) == 0);
  CHECK(text.find("lacks") == std::string::npos);
  CHECK(text.find("too old") == std::string::npos);
}

TEST_CASE("cudnn: the real libcudnn.so.9, when installed, exports every function the runtime needs") {
  if (is_child()) return;
  const char* real = "/usr/local/cuda/lib64/libcudnn.so.9";
  if (access(real, R_OK) != 0) {
    MESSAGE("skipped: no " << real);
    return;
  }
  // Only loading and cudnnGetVersion: the rest needs a GPU.
  auto r = run_child("child: cudnn real library", std::string("THUNDERC_CUDNN_LIBRARY=") + real);
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(child_passed(r.out));
}
