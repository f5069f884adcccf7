// Tests of the C API of libthunderc_runtime against hand-written model .so files (models/test_model.cpp).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../../runtime/src/cpu_isa.hpp"   // header-only: the levels, tested with made-up CPUs
#include "../../runtime/src/internal.hpp"  // finite_within (runtime/src/util.cpp, compiled into this test)
#include "test_util.hpp"
#include "thunderc/runtime.h"

using namespace thunderc_test;

namespace {

DLTensor f32(std::vector<float>& data, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

struct ModelHandle {
  thunderc_model* m = nullptr;
  explicit ModelHandle(const std::string& path, const thunderc_open_options* o = nullptr) {
    Status st(thunderc_model_open(path.c_str(), o, &m));
    REQUIRE_MESSAGE(st.ok(), st.message());
    REQUIRE(m != nullptr);
  }
  ~ModelHandle() { thunderc_model_close(m); }
};

// Runs the model with caller-provided outputs on x of shape [rows, 3].
void run_caller(thunderc_model* m, std::vector<float> x, int64_t rows) {
  std::vector<int64_t> xs{rows, 3}, ys{rows, 3}, ss{rows};
  std::vector<float> y(rows * 3, -1.0f), s(rows, -1.0f);
  DLTensor in = f32(x, xs);
  DLTensor out[2] = {f32(y, ys), f32(s, ss)};
  Status st(thunderc_model_run(m, &in, 1, out, 2));
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(y == expected_y(x));
  CHECK(s == expected_rowsum(x));
}

long test_calls(const std::string& so, int variant) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto fn = reinterpret_cast<long (*)(int)>(dlsym(h, "thunderc_test_calls"));
  REQUIRE(static_cast<bool>(fn));
  const long n = fn(variant);
  dlclose(h);
  return n;
}

template <class T>
T test_hook(const std::string& so, const char* name) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto fn = reinterpret_cast<T>(dlsym(h, name));
  REQUIRE(static_cast<bool>(fn));
  dlclose(h);
  return fn;
}

}  // namespace

TEST_CASE("versions") {
  CHECK(thunderc_runtime_api_version() == THUNDERC_RUNTIME_API_VERSION);
  CHECK(thunderc_runtime_abi_version() == 6u);
  CHECK(std::string(thunderc_runtime_version()) == "0.1.0");
  CHECK(thunderc_status_code(nullptr) == THUNDERC_STATUS_OK);
  CHECK(std::string(thunderc_status_message(nullptr)) == "OK");
  CHECK(std::string(thunderc_status_code_name(THUNDERC_STATUS_NO_MATCHING_VARIANT)) == "NO_MATCHING_VARIANT");
  thunderc_status_free(nullptr);
}

TEST_CASE("dtype names") {
  DLDataType dt{};
  CHECK(thunderc_dtype_from_name("bool", &dt));
  CHECK(dt.code == THUNDERC_DL_BOOL);
  CHECK(std::string(thunderc_dtype_name(DLDataType{kDLUInt, 8, 1})) == "uint8");
  CHECK(std::string(thunderc_dtype_name(DLDataType{kDLBfloat, 16, 1})) == "bfloat16");
  CHECK(thunderc_dtype_name(DLDataType{kDLFloat, 32, 4}) == nullptr);
  CHECK(thunderc_dtype_from_name("complex64", &dt));
  CHECK((dt.code == kDLComplex && dt.bits == 64 && dt.lanes == 1));
  CHECK(std::string(thunderc_dtype_name(DLDataType{kDLComplex, 128, 1})) == "complex128");
  CHECK_FALSE(thunderc_dtype_from_name("complex32", &dt));
}

TEST_CASE("open, introspect and run both variants") {
  ModelHandle h(model_path("two_variants"));
  thunderc_model* m = h.m;
  CHECK(thunderc_model_num_inputs(m) == 1);
  CHECK(thunderc_model_num_outputs(m) == 2);
  CHECK(std::string(thunderc_model_input_name(m, 0)) == "x");
  CHECK(std::string(thunderc_model_output_name(m, 1)) == "rowsum");
  CHECK(thunderc_model_input_name(m, 1) == nullptr);
  CHECK(thunderc_model_input_dtype(m, 0).code == kDLFloat);
  CHECK(thunderc_model_input_dtype(m, 0).bits == 32);
  CHECK(thunderc_model_input_dtype(m, 5).bits == 0);
  CHECK(thunderc_model_num_variants(m) == 2);
  CHECK(thunderc_model_num_threads(m) >= 1);
  size_t len = 0;
  const char* text = thunderc_model_manifest(m, &len);
  CHECK(std::string(text, len) == read_file(model_path("two_variants", ".json")));

  thunderc_variant_info info{};
  REQUIRE(Status(thunderc_model_variant_info(m, 1, &info)).ok());
  CHECK(info.id == 1);
  CHECK(std::string(info.entry) == "thunderc_variant_1");
  CHECK(std::string(info.signature) == "x: float32[4, 3] cpu");
  CHECK(info.available == 1);
  CHECK(info.workspace_bytes == 4096);
  CHECK(info.num_inputs == 1);
  CHECK(info.num_outputs == 2);
  thunderc_tensor_spec spec{};
  REQUIRE(Status(thunderc_model_variant_input(m, 0, 0, &spec)).ok());
  CHECK(std::string(spec.name) == "x");
  CHECK(spec.ndim == 2);
  CHECK(spec.shape[0] == 2);
  CHECK(spec.shape[1] == 3);
  REQUIRE(Status(thunderc_model_variant_output(m, 1, 1, &spec)).ok());
  CHECK(std::string(spec.name) == "rowsum");
  CHECK(spec.ndim == 1);
  CHECK(spec.shape[0] == 4);
  Status bad(thunderc_model_variant_info(m, 2, &info));
  CHECK(bad.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  // Compiled without --profile: no operations timed (the CLI tests cover a profiled model's counters).
  CHECK(thunderc_model_num_profiled_operations(m, 0) == 0);
  CHECK(thunderc_model_num_profiled_operations(nullptr, 0) == 0);
  thunderc_operation_profile op{};
  Status unprofiled(thunderc_model_operation_profile(m, 0, 0, &op));
  CHECK(unprofiled.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(unprofiled.message().find("compiled without --profile") != std::string::npos);
  CHECK(Status(thunderc_model_operation_profile(m, 2, 0, &op)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(Status(thunderc_model_variant_output(m, 0, 2, &spec)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);

  const std::string so = model_path("two_variants");
  test_hook<void (*)()>(so, "thunderc_test_reset")();
  run_caller(m, iota(6), 2);
  CHECK(test_calls(so, 0) == 1);
  CHECK(test_calls(so, 1) == 0);
  run_caller(m, iota(12, -3.25f), 4);
  CHECK(test_calls(so, 0) == 1);
  CHECK(test_calls(so, 1) == 1);

  std::vector<float> x = iota(12);
  std::vector<int64_t> xs{4, 3};
  DLTensor in = f32(x, xs);
  size_t v = 99;
  REQUIRE(Status(thunderc_model_select_variant(m, &in, 1, &v)).ok());
  CHECK(v == 1);
}

TEST_CASE("embedded manifest only, explicit manifest path, options") {
  ModelHandle h(model_path("embedded_only"));
  run_caller(h.m, iota(6), 2);

  thunderc_open_options o;
  thunderc_open_options_init(&o);
  const std::string json = model_path("two_variants", ".json");
  o.manifest_path = json.c_str();
  o.num_threads = 3;
  ModelHandle h2(model_path("embedded_only"), &o);
  CHECK(thunderc_model_num_threads(h2.m) == 3);

  o.manifest_path = "/nonexistent/dir/x.json";
  thunderc_model* m = reinterpret_cast<thunderc_model*>(0x1);
  Status st(thunderc_model_open(model_path("embedded_only").c_str(), &o, &m));
  CHECK(st.code() == THUNDERC_STATUS_NOT_FOUND);
  CHECK(st.message().find("/nonexistent/dir/x.json") != std::string::npos);
  CHECK(m == nullptr);

  thunderc_open_options_init(&o);
  o.num_threads = -2;
  Status st2(thunderc_model_open(model_path("two_variants").c_str(), &o, &m));
  CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);

  thunderc_open_options_init(&o);
  o.struct_size = 3;
  Status st3(thunderc_model_open(model_path("two_variants").c_str(), &o, &m));
  CHECK(st3.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(st3.message().find("struct_size") != std::string::npos);

  setenv("THUNDERC_NUM_THREADS", "5", 1);
  {
    ModelHandle h3(model_path("two_variants"));
    CHECK(thunderc_model_num_threads(h3.m) == 5);
  }
  setenv("THUNDERC_NUM_THREADS", "lots", 1);
  Status st4(thunderc_model_open(model_path("two_variants").c_str(), nullptr, &m));
  CHECK(st4.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(st4.message().find("THUNDERC_NUM_THREADS") != std::string::npos);
  unsetenv("THUNDERC_NUM_THREADS");

  CHECK(Status(thunderc_model_open(nullptr, nullptr, &m)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(Status(thunderc_model_open(model_path("two_variants").c_str(), nullptr, nullptr)).code() ==
        THUNDERC_STATUS_INVALID_ARGUMENT);
  thunderc_model_close(nullptr);
}

TEST_CASE("runtime-allocated outputs") {
  ModelHandle h(model_path("two_variants"));
  for (int64_t rows : {2, 4}) {
    std::vector<float> x = iota(static_cast<size_t>(rows) * 3, 1.5f);
    std::vector<int64_t> xs{rows, 3};
    DLTensor in = f32(x, xs);
    DLManagedTensor* outs[2] = {nullptr, nullptr};
    Status st(thunderc_model_run_alloc(h.m, &in, 1, outs, 2));
    REQUIRE_MESSAGE(st.ok(), st.message());
    REQUIRE(outs[0] != nullptr);
    REQUIRE(outs[1] != nullptr);
    const DLTensor& y = outs[0]->dl_tensor;
    CHECK(y.ndim == 2);
    CHECK(y.shape[0] == rows);
    CHECK(y.shape[1] == 3);
    CHECK(y.dtype.code == kDLFloat);
    CHECK(y.device.device_type == kDLCPU);
    CHECK(y.strides == nullptr);
    CHECK(reinterpret_cast<uintptr_t>(y.data) % 64 == 0);
    const float* yp = static_cast<const float*>(y.data);
    CHECK(std::vector<float>(yp, yp + rows * 3) == expected_y(x));
    const float* sp = static_cast<const float*>(outs[1]->dl_tensor.data);
    CHECK(std::vector<float>(sp, sp + rows) == expected_rowsum(x));
    outs[0]->deleter(outs[0]);
    outs[1]->deleter(outs[1]);
  }
  // Outputs outlive the model.
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  {
    ModelHandle h2(model_path("two_variants"));
    std::vector<float> x = iota(6);
    std::vector<int64_t> xs{2, 3};
    DLTensor in = f32(x, xs);
    REQUIRE(Status(thunderc_model_run_alloc(h2.m, &in, 1, outs, 2)).ok());
  }
  CHECK(static_cast<const float*>(outs[0]->dl_tensor.data)[0] == 2.0f);
  outs[0]->deleter(outs[0]);
  outs[1]->deleter(outs[1]);

  // Wrong number of output slots, and failures leave every slot NULL.
  std::vector<float> x = iota(6);
  std::vector<int64_t> xs{2, 3};
  DLTensor in = f32(x, xs);
  DLManagedTensor* three[3] = {nullptr, nullptr, nullptr};
  Status st(thunderc_model_run_alloc(h.m, &in, 1, three, 3));
  CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(three[0] == nullptr);
}

TEST_CASE("byte_offset and explicit compact strides are honoured") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> buf(2 + 6);
  for (size_t i = 0; i < 6; ++i) buf[2 + i] = static_cast<float>(i) - 1.0f;
  std::vector<int64_t> xs{2, 3}, strides{3, 1};
  DLTensor in = f32(buf, xs);
  in.byte_offset = 2 * sizeof(float);
  in.strides = strides.data();
  std::vector<float> ybuf(1 + 6, 0.0f), s(2);
  std::vector<int64_t> ys{2, 3}, ss{2};
  DLTensor out[2] = {f32(ybuf, ys), f32(s, ss)};
  out[0].byte_offset = sizeof(float);
  Status st(thunderc_model_run(h.m, &in, 1, out, 2));
  REQUIRE_MESSAGE(st.ok(), st.message());
  const std::vector<float> x(buf.begin() + 2, buf.end());
  CHECK(std::vector<float>(ybuf.begin() + 1, ybuf.end()) == expected_y(x));
  CHECK(ybuf[0] == 0.0f);
  CHECK(s == expected_rowsum(x));
}

TEST_CASE("no matching variant: messages name the input and list every variant") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> x = iota(64 * 3);
  std::vector<float> y(64 * 3), s(64);
  std::vector<int64_t> ys{2, 3}, ss{2};
  DLTensor out[2] = {f32(y, ys), f32(s, ss)};

  SUBCASE("wrong shape") {
    std::vector<int64_t> xs{3, 3};
    DLTensor in = f32(x, xs);
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("no variant of two_variants.so accepts these inputs: input 'x' has shape [3, 3] "
                            "float32 cpu; variants: #0 x: float32[2, 3] cpu") == 0);
    CHECK(st.message().find("#1 x: float32[4, 3] cpu") != std::string::npos);
    CHECK(st.message().find("expected shape [2, 3], got [3, 3]") != std::string::npos);
  }
  SUBCASE("wrong rank") {
    std::vector<int64_t> xs{6};
    DLTensor in = f32(x, xs);
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("input 'x' has shape [6] float32 cpu") != std::string::npos);
    CHECK(st.message().find("expected rank 2 [2, 3], got rank 1 [6]") != std::string::npos);
  }
  SUBCASE("wrong dtype") {
    std::vector<int64_t> xs{2, 3};
    DLTensor in = f32(x, xs);
    in.dtype = DLDataType{kDLFloat, 64, 1};
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("input 'x' has shape [2, 3] float64 cpu") != std::string::npos);
    CHECK(st.message().find("expected dtype float32, got float64") != std::string::npos);
  }
  SUBCASE("wrong device") {
    std::vector<int64_t> xs{2, 3};
    DLTensor in = f32(x, xs);
    in.device = DLDevice{kDLCUDA, 0};
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("expected device cpu, got cuda:0") != std::string::npos);
  }
  SUBCASE("non-contiguous") {
    std::vector<int64_t> xs{2, 3}, strides{1, 2};
    DLTensor in = f32(x, xs);
    in.strides = strides.data();
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("non-contiguous, strides [1, 2]") != std::string::npos);
  }
  SUBCASE("byte size beyond int64") {
    // uint8 [2^62, 3]: 3 * 2^62 bytes fits in size_t but not in int64_t (the element count and strides
    // would overflow while describing the mismatch; fuzz_run found it).
    std::vector<int64_t> xs{int64_t{1} << 62, 3}, strides{3, 1};
    DLTensor in = f32(x, xs);
    in.dtype = DLDataType{kDLUInt, 8, 1};
    in.strides = strides.data();
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("is too large") != std::string::npos, st.message());
  }
  SUBCASE("input count") {
    std::vector<int64_t> xs{2, 3};
    DLTensor in[2] = {f32(x, xs), f32(x, xs)};
    Status st(thunderc_model_run(h.m, in, 2, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "two_variants.so takes 1 input(s) (x), got 2");
    Status st0(thunderc_model_run(h.m, nullptr, 0, out, 2));
    CHECK(st0.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  }
  SUBCASE("NULL data, negative extent") {
    std::vector<int64_t> xs{2, 3};
    DLTensor in = f32(x, xs);
    in.data = nullptr;
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message().find("input 'x' has a NULL data pointer") != std::string::npos);
    std::vector<int64_t> neg{-2, 3};
    DLTensor in2 = f32(x, neg);
    Status st2(thunderc_model_run(h.m, &in2, 1, out, 2));
    CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(Status(thunderc_model_run(nullptr, &in, 1, out, 2)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  }
}

TEST_CASE("caller-provided outputs are checked") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> x = iota(6), y(12), s(4);
  std::vector<int64_t> xs{2, 3};
  DLTensor in = f32(x, xs);
  SUBCASE("shape of the other variant") {
    std::vector<int64_t> ys{4, 3}, ss{2};
    DLTensor out[2] = {f32(y, ys), f32(s, ss)};
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "output 'y' (#0) for variant #0 of two_variants.so: expected a contiguous "
                          "float32[2, 3] cpu tensor, got float32[4, 3] cpu");
  }
  SUBCASE("dtype") {
    std::vector<int64_t> ys{2, 3}, ss{2};
    DLTensor out[2] = {f32(y, ys), f32(s, ss)};
    out[1].dtype = DLDataType{kDLInt, 32, 1};
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message().find("output 'rowsum' (#1)") == 0);
  }
  SUBCASE("strides") {
    std::vector<int64_t> ys{2, 3}, ss{2}, strides{1, 2};
    DLTensor out[2] = {f32(y, ys), f32(s, ss)};
    out[0].strides = strides.data();
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message().find("non-contiguous") != std::string::npos);
  }
  SUBCASE("count") {
    std::vector<int64_t> ys{2, 3};
    DLTensor out[1] = {f32(y, ys)};
    Status st(thunderc_model_run(h.m, &in, 1, out, 1));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "two_variants.so has 2 output(s), got 1 output buffers");
  }
}

TEST_CASE("kernel failure is reported with the entry's message") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> x = iota(12);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int64_t> xs{4, 3};
  DLTensor in = f32(x, xs);
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  Status st(thunderc_model_run_alloc(h.m, &in, 1, outs, 2));
  CHECK(st.code() == THUNDERC_STATUS_KERNEL_FAILED);
  CHECK(st.message() == "variant #1 (thunderc_variant_1) of two_variants.so failed (code 1): x contains NaN at "
                        "flat index 7");
  CHECK(outs[0] == nullptr);
  CHECK(outs[1] == nullptr);
}

TEST_CASE("workspace buffers are reused across calls") {
  const std::string so = model_path("two_variants");
  ModelHandle h(so);
  test_hook<void (*)()>(so, "thunderc_test_reset")();
  for (int i = 0; i < 50; ++i) run_caller(h.m, iota(12, static_cast<float>(i)), 4);
  CHECK(test_hook<size_t (*)()>(so, "thunderc_test_distinct_workspaces")() == 1);
  CHECK(test_calls(so, 1) == 50);
}

TEST_CASE("8 threads x many calls on one model equal serial results") {
  const std::string so = model_path("two_variants");
  ModelHandle h(so);
  test_hook<void (*)()>(so, "thunderc_test_reset")();
  constexpr int kThreads = 8, kCalls = 300;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const int64_t rows = (i + t) % 2 ? 4 : 2;
        std::vector<float> x = iota(static_cast<size_t>(rows) * 3, static_cast<float>(t * 1000 + i));
        std::vector<int64_t> xs{rows, 3};
        DLTensor in = f32(x, xs);
        DLManagedTensor* outs[2] = {nullptr, nullptr};
        thunderc_status st = thunderc_model_run_alloc(h.m, &in, 1, outs, 2);
        if (st) {
          failures[t] = thunderc_status_message(st);
          thunderc_status_free(st);
          return;
        }
        const float* yp = static_cast<const float*>(outs[0]->dl_tensor.data);
        const float* sp = static_cast<const float*>(outs[1]->dl_tensor.data);
        if (std::vector<float>(yp, yp + rows * 3) != expected_y(x) ||
            std::vector<float>(sp, sp + rows) != expected_rowsum(x))
          failures[t] = "wrong result in call " + std::to_string(i);
        outs[0]->deleter(outs[0]);
        outs[1]->deleter(outs[1]);
        if (!failures[t].empty()) return;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK_MESSAGE(failures[t].empty(), failures[t]);
  CHECK(test_calls(so, 0) + test_calls(so, 1) == kThreads * kCalls);
  const size_t ws = test_hook<size_t (*)()>(so, "thunderc_test_distinct_workspaces")();
  CHECK(ws >= 1);
  CHECK(ws <= static_cast<size_t>(kThreads));
}

// ---- loader errors -------------------------------------------------------------------------------

TEST_CASE("missing file, not an ELF, directory") {
  thunderc_model* m = nullptr;
  Status missing(thunderc_model_open("/nonexistent/model.so", nullptr, &m));
  CHECK(missing.code() == THUNDERC_STATUS_NOT_FOUND);
  CHECK(missing.message() == "cannot open model '/nonexistent/model.so': No such file or directory");

  TempDir dir;
  const std::string text = dir.path + "/text.so";
  write_file(text, "this is not a shared object\n");
  Status notelf(thunderc_model_open(text.c_str(), nullptr, &m));
  CHECK(notelf.code() == THUNDERC_STATUS_IO);
  CHECK(notelf.message().find("not an ELF shared object") != std::string::npos);
  CHECK(notelf.message().find(text) != std::string::npos);

  const std::string empty = dir.path + "/empty.so";
  write_file(empty, "");
  CHECK(Status(thunderc_model_open(empty.c_str(), nullptr, &m)).code() == THUNDERC_STATUS_IO);

  Status isdir(thunderc_model_open(dir.path.c_str(), nullptr, &m));
  CHECK(isdir.code() == THUNDERC_STATUS_IO);
  CHECK(isdir.message().find("not a regular file") != std::string::npos);
  CHECK(m == nullptr);
}

TEST_CASE("truncated .so files fail cleanly") {
  const std::string full = read_file(model_path("two_variants"));
  TempDir dir;
  const size_t sizes[] = {4, 20, 63, 64, 200, 1000, 4096, full.size() / 2, full.size() - 1};
  for (size_t n : sizes) {
    CAPTURE(n);
    const std::string path = dir.path + "/cut" + std::to_string(n) + ".so";
    write_file(path, full.substr(0, n));
    thunderc_model* m = nullptr;
    Status st(thunderc_model_open(path.c_str(), nullptr, &m));
    CHECK(m == nullptr);
    CHECK((st.code() == THUNDERC_STATUS_IO || st.code() == THUNDERC_STATUS_MANIFEST));
    CHECK(st.message().find(path) != std::string::npos);
  }
}

TEST_CASE("json/so mismatch") {
  TempDir dir;
  const std::string so = dir.path + "/model.so";
  write_file(so, read_file(model_path("two_variants")));
  std::string json = read_file(model_path("two_variants", ".json"));
  write_file(dir.path + "/model.json", json + " ");
  thunderc_model* m = nullptr;
  Status st(thunderc_model_open(so.c_str(), nullptr, &m));
  CHECK(st.code() == THUNDERC_STATUS_MANIFEST);
  CHECK(st.message() == "manifest '" + dir.path + "/model.json' does not belong to '" + so +
                            "' (it differs from the manifest embedded in the .so)");
  write_file(dir.path + "/model.json", json);
  ModelHandle ok(so);
}

TEST_CASE("wrong ABI version, not a thunderc model, missing entry") {
  thunderc_model* m = nullptr;
  Status abi(thunderc_model_open(model_path("wrong_abi").c_str(), nullptr, &m));
  CHECK(abi.code() == THUNDERC_STATUS_ABI_MISMATCH);
  CHECK(abi.message().find("built for thunderc ABI version 99, but this runtime supports ABI version 6") !=
        std::string::npos);

  Status plain(thunderc_model_open(model_path("not_a_model").c_str(), nullptr, &m));
  CHECK(plain.code() == THUNDERC_STATUS_ABI_MISMATCH);
  CHECK(plain.message().find("is not a thunderc model") != std::string::npos);
  CHECK(plain.message().find("undefined symbol: thunderc_abi_version") != std::string::npos);

  Status entry(thunderc_model_open(model_path("missing_entry").c_str(), nullptr, &m));
  CHECK(entry.code() == THUNDERC_STATUS_MANIFEST);
  CHECK(entry.message().find("does not export 'thunderc_variant_1', the entry of variant #1") != std::string::npos);
  CHECK(m == nullptr);
}

// ---- manifest validation (env_manifest.so embeds the file named by $THUNDERC_TEST_MANIFEST) --------

namespace {

Status open_with_manifest(const std::string& manifest, thunderc_model** m) {
  TempDir dir;
  const std::string path = dir.path + "/manifest.json";
  write_file(path, manifest);
  setenv("THUNDERC_TEST_MANIFEST", path.c_str(), 1);
  Status st(thunderc_model_open(model_path("env_manifest").c_str(), nullptr, m));
  unsetenv("THUNDERC_TEST_MANIFEST");
  return st;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("--cpu-target levels: the features each needs, and what a CPU lacks") {
  using thunderc::rt::missing_cpu_features;
  auto all = [](const char*) { return true; };
  auto no_avx2_fma = [](const char* f) { return std::strcmp(f, "avx2") != 0 && std::strcmp(f, "fma") != 0; };
  auto sse2_only = [](const char*) { return false; };
  CHECK(missing_cpu_features("x86-64-v3", all) == "");
  CHECK(missing_cpu_features("x86-64-v3", no_avx2_fma) == "avx2, fma");
  CHECK(missing_cpu_features("x86-64-v4", no_avx2_fma) == "avx2, fma");  // and every AVX-512 feature it has
  CHECK(missing_cpu_features("x86-64-v2", no_avx2_fma) == "");
  CHECK(missing_cpu_features("x86-64", sse2_only) == "");  // the baseline: every x86-64 CPU
  CHECK(missing_cpu_features("x86-64-v2", sse2_only) == "popcnt, sse3, ssse3, sse4.1, sse4.2");
  CHECK(thunderc::rt::is_cpu_isa_level("x86-64-v4"));
  CHECK_FALSE(thunderc::rt::is_cpu_isa_level("native"));
  // Each level includes the one below it.
  const auto& levels = thunderc::rt::cpu_isa_levels();
  for (std::size_t i = 1; i < levels.size(); ++i)
    for (const char* f : levels[i - 1].second) {
      INFO(levels[i].first << " lacks " << f);
      CHECK(std::find_if(levels[i].second.begin(), levels[i].second.end(),
                         [&](const char* g) { return std::strcmp(f, g) == 0; }) != levels[i].second.end());
    }
}

TEST_CASE("a model built for several CPU levels runs the best one the CPU has, at most the cap") {
  using thunderc::rt::choose_cpu_target;
  const std::vector<std::string> levels = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
  auto cpu = [](std::vector<std::string> has) {
    return [has](const char* f) { return std::find(has.begin(), has.end(), f) != has.end(); };
  };
  const std::vector<std::string> v2 = {"popcnt", "sse3", "ssse3", "sse4.1", "sse4.2"};
  std::vector<std::string> v3 = v2;
  for (const char* f : {"avx", "avx2", "bmi", "bmi2", "fma"}) v3.push_back(f);
  std::vector<std::string> v4 = v3;
  for (const char* f : {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}) v4.push_back(f);
  std::vector<std::string> knl = v3;  // AVX-512F without BW/DQ/VL (Xeon Phi): not v4
  knl.push_back("avx512f");
  CHECK(choose_cpu_target(levels, cpu(v4)) == "x86-64-v4");
  CHECK(choose_cpu_target(levels, cpu(knl)) == "x86-64-v3");
  CHECK(choose_cpu_target(levels, cpu(v2)) == "x86-64-v2");
  CHECK(choose_cpu_target(levels, cpu({"sse3"})) == "");
  CHECK(choose_cpu_target({"x86-64-v3", "x86-64-v4"}, cpu(v2)) == "");
  CHECK(choose_cpu_target(levels, cpu(v4), "x86-64-v3") == "x86-64-v3");
  CHECK(choose_cpu_target(levels, cpu(v4), "x86-64") == "");
  CHECK(thunderc::rt::cpu_target_symbol_suffix("x86-64-v4") == "__x86_64_v4");
  CHECK(thunderc::rt::cpu_isa_rank("x86-64") == 0);
  CHECK(thunderc::rt::cpu_isa_rank("x86-64-v4") == 3);
  CHECK(thunderc::rt::cpu_isa_rank("native") == -1);
}

TEST_CASE("--precision bf16 CPU variants need AVX512_BF16 or AMX-BF16") {
  using thunderc::rt::missing_bf16_features;
  CHECK(missing_bf16_features([](const char* f) { return std::strcmp(f, "avx512bf16") == 0; }) == "");
  CHECK(missing_bf16_features([](const char* f) { return std::strcmp(f, "amx-bf16") == 0; }) == "");
  // AVX-512 without its BF16 extension (Skylake-X, Ice Lake) is not enough.
  const std::string why = missing_bf16_features([](const char* f) { return std::strncmp(f, "avx512", 6) == 0 && std::strcmp(f, "avx512bf16") != 0; });
  CHECK(why.find("needs AVX512_BF16 or AMX-BF16, and this CPU has neither") != std::string::npos);
}

TEST_CASE("corrupt or invalid manifests") {
  const std::string good = read_file(model_path("two_variants", ".json"));
  thunderc_model* m = nullptr;
  {
    Status st = open_with_manifest(good, &m);
    REQUIRE_MESSAGE(st.ok(), st.message());
    thunderc_model_close(m);
    m = nullptr;
  }
  struct Case {
    std::string name, manifest, expect;
    thunderc_status_code_t code = THUNDERC_STATUS_MANIFEST;
  };
  const Case cases[] = {
      {"empty", "", "embeds an empty manifest"},
      {"truncated JSON", good.substr(0, good.size() / 2), "not valid JSON"},
      {"garbage", "\x01\x02 not json", "not valid JSON"},
      {"array", "[1, 2]", "expected a JSON object at the top level"},
      {"format", replace(good, "\"thunderc-manifest\"", "\"onnx\""), "format: expected \"thunderc-manifest\""},
      {"format_version", replace(good, "\"format_version\": 1", "\"format_version\": 7"),
       "format_version: version 7 is not supported"},
      {"abi_version type", replace(good, "\"abi_version\": 6", "\"abi_version\": \"6\""),
       "abi_version: expected a non-negative integer, got string"},
      {"cpu_target unknown", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64-v9\","),
       "options.cpu_target: 'x86-64-v9' is not a CPU target this runtime knows"},
      {"cpu_target type", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": 3,"),
       "options.cpu_target: expected a string, got integer"},
      {"cpu_targets without cpu_target", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_targets\": [\"x86-64\"],"),
       "options.cpu_targets: given without options.cpu_target"},
      {"cpu_targets type", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64\", \"cpu_targets\": \"x86-64\","),
       "options.cpu_targets: expected a non-empty array of CPU targets, got string"},
      {"cpu_targets first", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64\", \"cpu_targets\": [\"x86-64-v2\"],"),
       "options.cpu_targets[0]: 'x86-64-v2' differs from options.cpu_target 'x86-64'"},
      {"cpu_targets order", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64\", \"cpu_targets\": [\"x86-64\", \"x86-64-v3\", \"x86-64-v2\"],"),
       "options.cpu_targets[2]: 'x86-64-v2' does not come after 'x86-64-v3'"},
      {"cpu_targets unknown", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64\", \"cpu_targets\": [\"x86-64\", \"zen4\"],"),
       "options.cpu_targets[1]: 'zen4' is not a CPU target this runtime knows"},
      // Every x86-64 CPU this runs on has v2: the runtime looks for the v2 copy, which this .so lacks.
      {"profile type", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"profile\": 1,"),
       "options.profile: expected true or false, got integer"},
      {"profile without thunderc_profile", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"profile\": true,"),
       "has options.profile in its manifest but does not export 'thunderc_profile'"},
      {"cpu_targets entry missing", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cpu_target\": \"x86-64\", \"cpu_targets\": [\"x86-64\", \"x86-64-v2\"],"),
       "does not export 'thunderc_variant_0__x86_64_v2', the entry of variant #0"},
      {"precision unknown", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"precision\": \"fp8\","),
       "options.precision: 'fp8' is not a precision this runtime knows"},
      {"precision type", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"precision\": 16,"),
       "options.precision: expected a string, got integer"},
      {"cuda_graphs type", replace(good, "\"cache\": \"constant values\",", "\"cache\": \"constant values\", \"cuda_graphs\": \"yes\","),
       "options.cuda_graphs: expected true or false, got string"},
      {"abi_version mismatch", replace(good, "\"abi_version\": 6", "\"abi_version\": 7"),
       "abi_version 7 differs from the ABI version the .so reports (6)", THUNDERC_STATUS_ABI_MISMATCH},
      {"inputs missing", replace(good, "\"inputs\"", "\"inputz\""), "inputs: missing"},
      {"input dtype", replace(good, "{\"dtype\": \"float32\", \"name\": \"x\"}", "{\"dtype\": \"complex32\", \"name\": \"x\"}"),
       "inputs[0].dtype: unknown dtype 'complex32'"},
      {"output name type", replace(good, "\"name\": \"y\"", "\"name\": 5"), "outputs[0].name: expected a string, got integer"},
      {"variants empty", good.substr(0, good.find("\"variants\"")) + "\"variants\": []}", "variants: the manifest lists no variants"},
      {"variant id", replace(good, "\"id\": 1", "\"id\": 5"), "variants[1].id: expected 1"},
      {"entry type", replace(good, "\"entry\": \"thunderc_variant_1\"", "\"entry\": null"),
       "variants[1].entry: expected a string, got null"},
      {"guard shape", replace(good, "\"shape\": [4, 3]", "\"shape\": [4, \"3\"]"),
       "variants[1].guards[0].shape[1]: expected a non-negative integer, got string"},
      {"guard negative", replace(good, "\"shape\": [4, 3]", "\"shape\": [-4, 3]"),
       "variants[1].guards[0].shape[0]: expected a non-negative integer, got -4"},
      {"guard device", replace(good, "\"device\": \"cpu\", \"dtype\": \"float32\", \"input\": \"x\", \"shape\": [4, 3]",
                               "\"device\": \"tpu\", \"dtype\": \"float32\", \"input\": \"x\", \"shape\": [4, 3]"),
       "variants[1].guards[0].device: unsupported device 'tpu'"},
      {"guard input name", replace(good, "\"input\": \"x\", \"shape\": [2, 3]", "\"input\": \"z\", \"shape\": [2, 3]"),
       "variants[0].guards[0].input: names 'z' but input 0 is 'x'"},
      {"finite_max_abs type", replace(good, "\"input\": \"x\", \"shape\": [2, 3]", "\"input\": \"x\", \"shape\": [2, 3], \"finite_max_abs\": \"big\""),
       "variants[0].guards[0].finite_max_abs: expected a finite number >= 1, got string"},
      {"finite_max_abs small", replace(good, "\"input\": \"x\", \"shape\": [2, 3]", "\"input\": \"x\", \"shape\": [2, 3], \"finite_max_abs\": 0.5"),
       "variants[0].guards[0].finite_max_abs: expected a finite number >= 1, got 0.5"},
      {"guard contiguous", replace(good, "\"contiguous\": true", "\"contiguous\": 1"),
       "variants[0].guards[0].contiguous: expected true or false, got integer"},
      {"guards count", replace(good, "\"guards\": [{\"contiguous\": true, \"device\": \"cpu\", \"dtype\": \"float32\", \"input\": \"x\", \"shape\": [2, 3]}]", "\"guards\": []"),
       "variants[0].guards: has 0 entries but the model has 1 inputs"},
      {"output_shapes", replace(good, "\"output_shapes\": [[4, 3], [4]]", "\"output_shapes\": [[4, 3]]"),
       "variants[1].output_shapes: has 1 entries but the model has 2 outputs"},
      {"workspace", replace(good, "\"workspace_bytes\": 4096", "\"workspace_bytes\": -1"),
       "variants[1].workspace_bytes: expected a non-negative integer, got -1"},
      {"overflow", replace(good, "\"shape\": [4, 3]", "\"shape\": [4611686018427387904, 4611686018427387904]"),
       "variants[1].guards[0].shape: tensor size overflows"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status st = open_with_manifest(c.manifest, &m);
    CHECK(m == nullptr);
    CHECK(st.code() == c.code);
    CHECK_MESSAGE(st.message().find(c.expect) != std::string::npos, st.message());
    // (A missing entry or export is found after parsing: its message names the .so.)
    if (c.code == THUNDERC_STATUS_MANIFEST && c.name != "empty" && c.name != "cpu_targets entry missing" &&
        c.name != "profile without thunderc_profile")
      CHECK(st.message().find("manifest of '" + model_path("env_manifest") + "'") == 0);
  }
}

TEST_CASE("CUDA variants need a driver") {
  const bool has_cuda = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) dlclose(h);
    return h != nullptr;
  }();
  if (has_cuda) {
    MESSAGE("this machine has a CUDA driver; the no-driver checks are skipped");
    return;
  }
  const std::string good = read_file(model_path("two_variants", ".json"));
  // Both variants on cuda:7 (env_manifest exports a thunderc_cuda_module): it opens, nothing is available,
  // and running says why.
  std::string all_cuda = good;
  for (int i = 0; i < 2; ++i) all_cuda = replace(all_cuda, "\"device\": \"cpu\", \"dtype\"", "\"device\": \"cuda:7\", \"dtype\"");
  thunderc_model* m = nullptr;
  {
    Status st = open_with_manifest(all_cuda, &m);
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  std::vector<float> x = iota(6);
  std::vector<int64_t> xs{2, 3};
  DLTensor in = f32(x, xs);
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  Status st(thunderc_model_run_alloc(m, &in, 1, outs, 2));
  CHECK(st.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK_MESSAGE(st.message().find("no variant of env_manifest.so can run on this machine (cuda:7: no CUDA driver") == 0,
                st.message());
  thunderc_model_close(m);

  // Variant 0 on cuda:7, variant 1 on the CPU: dispatch skips the unavailable variant.
  const std::string mixed = replace(good, "\"device\": \"cpu\", \"dtype\"", "\"device\": \"cuda:7\", \"dtype\"");
  Status st2 = open_with_manifest(mixed, &m);
  REQUIRE_MESSAGE(st2.ok(), st2.message());
  thunderc_variant_info info{};
  REQUIRE(Status(thunderc_model_variant_info(m, 0, &info)).ok());
  CHECK(info.available == 0);
  CHECK(info.device.device_type == kDLCUDA);
  CHECK(info.device.device_id == 7);
  in.device = DLDevice{kDLCUDA, 7};
  Status st3(thunderc_model_run_alloc(m, &in, 1, outs, 2));
  CHECK(st3.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK_MESSAGE(st3.message().find("variant #0 of env_manifest.so (x: float32[2, 3] cuda:7) accepts these inputs but "
                                   "cannot run here: no CUDA driver") == 0,
                st3.message());
  in.device = DLDevice{kDLCPU, 0};
  Status st4(thunderc_model_run_alloc(m, &in, 1, outs, 2));
  CHECK(st4.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
  CHECK_MESSAGE(st4.message().find("#0 x: float32[2, 3] cuda:7 (unavailable: no CUDA driver") != std::string::npos,
                st4.message());
  run_caller(m, iota(12), 4);
  thunderc_model_close(m);
}

TEST_CASE("a path without a directory opens the file in the current directory, not a library search") {
  char previous[4096];
  REQUIRE(getcwd(previous, sizeof previous) != nullptr);
  REQUIRE(chdir(THUNDERC_TEST_MODEL_DIR) == 0);
  thunderc_model* m = nullptr;
  thunderc_status st = thunderc_model_open("two_variants.so", nullptr, &m);
  CHECK_MESSAGE(st == nullptr, (st ? thunderc_status_message(st) : ""));
  thunderc_status_free(st);
  thunderc_model_close(m);
  REQUIRE(chdir(previous) == 0);
}

// Cache modes (manifest options.cache): which variant a [4, 3] input gets after a first call with [2, 3].
static size_t variant_after_first_call(const std::string& model) {
  ModelHandle h(model_path(model));
  std::vector<float> small(6, 1.0f), large(12, 1.0f);
  int64_t small_shape[] = {2, 3}, large_shape[] = {4, 3};
  DLTensor a{small.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, small_shape, nullptr, 0};
  DLTensor b{large.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, large_shape, nullptr, 0};
  size_t first = 99, second = 99;
  REQUIRE(thunderc_model_select_variant(h.m, &a, 1, &first) == nullptr);
  CHECK(first == 0);
  thunderc_status st = thunderc_model_select_variant(h.m, &b, 1, &second);
  thunderc_status_free(st);
  return second;
}

TEST_CASE("cache modes") {
  SUBCASE("constant values checks guards on every call") { CHECK(variant_after_first_call("two_variants") == 1); }
  SUBCASE("no caching selects afresh on every call") { CHECK(variant_after_first_call("cache_no_caching") == 1); }
  SUBCASE("same input reuses the first call's variant without checking (unsafe by design)") {
    CHECK(variant_after_first_call("cache_same_input") == 0);
  }
  SUBCASE("an unknown cache mode is a manifest error naming the field") {
    thunderc_model* m = nullptr;
    thunderc_status st = thunderc_model_open(model_path("cache_bad").c_str(), nullptr, &m);
    REQUIRE(st != nullptr);
    CHECK(thunderc_status_code(st) == THUNDERC_STATUS_MANIFEST);
    CHECK(std::string(thunderc_status_message(st)).find("options.cache") != std::string::npos);
    thunderc_status_free(st);
  }
}

// ---- symbolic variants (--cache "symbolic values") -------------------------------------------------

TEST_CASE("symbolic variants: dims are bound from the inputs, checked against their range, and size the outputs") {
  std::string manifest = read_file(model_path("two_variants", ".json"));
  manifest = replace(manifest, "\"cache\": \"constant values\"", "\"cache\": \"symbolic values\"");
  manifest = replace(manifest, "\"shape\": [2, 3]}], \"id\": 0, \"output_shapes\": [[2, 3], [2]]",
                     "\"shape\": [\"R\", 3]}], \"id\": 0, \"dims\": {\"R\": {\"min\": 2, \"max\": 3}}, "
                     "\"output_shapes\": [[{\"const\": 0, \"R\": 1}, 3], [{\"const\": 0, \"R\": 1}]]");
  thunderc_model* m = nullptr;
  {
    Status st = open_with_manifest(manifest, &m);
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  thunderc_variant_info info{};
  REQUIRE(thunderc_model_variant_info(m, 0, &info) == nullptr);
  CHECK(std::string(info.signature) == "x: float32[R, 3] cpu (R in 2..3)");
  thunderc_tensor_spec spec{};
  REQUIRE(thunderc_model_variant_input(m, 0, 0, &spec) == nullptr);
  CHECK(spec.shape[0] == -1);
  REQUIRE(thunderc_model_variant_output(m, 0, 1, &spec) == nullptr);
  CHECK(spec.shape[0] == -1);

  auto shape_of = [&](int64_t rows, size_t output, std::vector<int64_t>* out) {
    std::vector<float> x(rows * 3, 1.0f);
    std::vector<int64_t> xs{rows, 3};
    DLTensor in = f32(x, xs);
    int64_t shape[4] = {0, 0, 0, 0};
    int32_t ndim = 0;
    Status st(thunderc_model_output_shape(m, &in, 1, output, shape, 4, &ndim));
    if (st.ok()) out->assign(shape, shape + ndim);
    return std::make_pair(st.code(), st.message());
  };
  std::vector<int64_t> got;
  CHECK(shape_of(3, 0, &got).first == THUNDERC_STATUS_OK);
  CHECK(got == std::vector<int64_t>{3, 3});
  CHECK(shape_of(3, 1, &got).first == THUNDERC_STATUS_OK);
  CHECK(got == std::vector<int64_t>{3});
  CHECK(shape_of(4, 1, &got).first == THUNDERC_STATUS_OK);  // variant 1 (fixed [4, 3])
  CHECK(got == std::vector<int64_t>{4});
  auto [code, message] = shape_of(5, 0, &got);
  CHECK(code == THUNDERC_STATUS_NO_MATCHING_VARIANT);
  CHECK_MESSAGE(message.find("input 'x' dimension 0 is 5, outside R's range 2..3") != std::string::npos, message);

  // Runs with R = 2 (the test kernel computes any rows; it checks the shapes it receives).
  run_caller(m, {1, 2, 3, 4, 5, 6}, 2);
  std::vector<float> x{1, 2, 3, 4, 5, 6};
  std::vector<int64_t> xs{2, 3}, ys{3, 3}, ss{2};
  std::vector<float> y(9), s(2);
  DLTensor in = f32(x, xs);
  DLTensor out[2] = {f32(y, ys), f32(s, ss)};
  Status wrong(thunderc_model_run(m, &in, 1, out, 2));
  CHECK(wrong.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(wrong.message().find("expected a contiguous float32[2, 3]") != std::string::npos, wrong.message());
  DLManagedTensor* owned[2] = {nullptr, nullptr};
  Status alloc(thunderc_model_run_alloc(m, &in, 1, owned, 2));
  REQUIRE_MESSAGE(alloc.ok(), alloc.message());
  CHECK(owned[0]->dl_tensor.shape[0] == 2);
  CHECK(owned[1]->dl_tensor.shape[0] == 2);
  for (DLManagedTensor* t : owned) t->deleter(t);
  thunderc_model_close(m);

  SUBCASE("manifest errors name the field") {
    std::string unknown = replace(manifest, "\"shape\": [\"R\", 3]", "\"shape\": [\"Q\", 3]");
    thunderc_model* bad = nullptr;
    Status st = open_with_manifest(unknown, &bad);
    CHECK(st.code() == THUNDERC_STATUS_MANIFEST);
    CHECK_MESSAGE(st.message().find("variants[0].guards[0].shape[0]: symbol 'Q' is not in variants[0].dims") !=
                      std::string::npos,
                  st.message());
    std::string range = replace(manifest, "\"min\": 2, \"max\": 3", "\"min\": 4, \"max\": 3");
    Status st2 = open_with_manifest(range, &bad);
    CHECK(st2.code() == THUNDERC_STATUS_MANIFEST);
    CHECK_MESSAGE(st2.message().find("min 4 exceeds max 3") != std::string::npos, st2.message());
  }
}

// ---- issue #12, item 8 -------------------------------------------------------------------------------------

TEST_CASE("caller-provided outputs that overlap an input or another output are refused, naming both") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> buf(64, 1.0f);
  std::vector<int64_t> xs{2, 3}, ys{2, 3}, ss{2};
  DLTensor in = f32(buf, xs);
  std::vector<float> y(6), s(2);
  SUBCASE("output over the input") {
    DLTensor out[2] = {f32(buf, ys), f32(s, ss)};  // y is x's buffer
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("output 'y' (#0) overlaps input 'x' (#0)") != std::string::npos, st.message());
  }
  SUBCASE("partial overlap through byte_offset") {
    DLTensor out[2] = {f32(y, ys), f32(buf, ss)};
    out[1].byte_offset = 5 * sizeof(float);  // rowsum starts at x's last element
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("output 'rowsum' (#1) overlaps input 'x'") != std::string::npos, st.message());
  }
  SUBCASE("two outputs share memory") {
    DLTensor out[2] = {f32(y, ys), f32(y, ss)};
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("output 'rowsum' (#1) overlaps output 'y' (#0)") != std::string::npos, st.message());
  }
  SUBCASE("adjacent buffers are fine") {
    DLTensor out[2] = {f32(buf, ys), f32(buf, ss)};
    in.byte_offset = 0;
    out[0].byte_offset = 6 * sizeof(float);
    out[1].byte_offset = 12 * sizeof(float);
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));
    CHECK_MESSAGE(st.ok(), st.message());
    CHECK(buf[6] == doctest::Approx(3.0f));  // 2 * 1 + 1
    CHECK(buf[12] == doctest::Approx(3.0f));  // rowsum of three ones
  }
}

TEST_CASE("a byte_offset that overflows the address space is refused") {
  ModelHandle h(model_path("two_variants"));
  std::vector<float> x(6, 1.0f), y(6), s(2);
  std::vector<int64_t> xs{2, 3}, ys{2, 3}, ss{2};
  DLTensor in = f32(x, xs);
  in.byte_offset = ~uint64_t{0} - 8;
  DLTensor out[2] = {f32(y, ys), f32(s, ss)};
  Status st(thunderc_model_run(h.m, &in, 1, out, 2));
  CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(st.message().find("overflows the address space") != std::string::npos, st.message());
  in.byte_offset = 0;
  out[1].byte_offset = ~uint64_t{0} - 4;
  Status st2(thunderc_model_run(h.m, &in, 1, out, 2));
  CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(st2.message().find("output 'rowsum'") != std::string::npos, st2.message());
}

TEST_CASE("symbolic output sizes are checked over the whole range, not only at the maxima") {
  std::string manifest = read_file(model_path("two_variants", ".json"));
  manifest = replace(manifest, "\"cache\": \"constant values\"", "\"cache\": \"symbolic values\"");
  auto with_rowsum = [&](const std::string& dims, const std::string& size) {
    return replace(manifest, "\"shape\": [2, 3]}], \"id\": 0, \"output_shapes\": [[2, 3], [2]]",
                   "\"shape\": [\"R\", 3]}], \"id\": 0, \"dims\": {\"R\": " + dims +
                       "}, \"output_shapes\": [[{\"const\": 0, \"R\": 1}, 3], [" + size + "]]");
  };
  thunderc_model* m = nullptr;
  // R - 2 is 1 at R's maximum 3 but -1 at its minimum 1.
  Status negative = open_with_manifest(with_rowsum("{\"min\": 1, \"max\": 3}", "{\"const\": -2, \"R\": 1}"), &m);
  CHECK(negative.code() == THUNDERC_STATUS_MANIFEST);
  CHECK_MESSAGE(negative.message().find("negative size -1 at R = 1") != std::string::npos, negative.message());
  // 5 - R is largest at R's minimum; within range it is fine.
  Status decreasing = open_with_manifest(with_rowsum("{\"min\": 2, \"max\": 3}", "{\"const\": 5, \"R\": -1}"), &m);
  CHECK_MESSAGE(decreasing.ok(), decreasing.message());
  if (m) thunderc_model_close(m);
  m = nullptr;
  // A coefficient whose product with the range overflows 64 bits.
  Status huge = open_with_manifest(with_rowsum("{\"min\": 2, \"max\": 3}", "{\"const\": 0, \"R\": 4611686018427387904}"), &m);
  CHECK(huge.code() == THUNDERC_STATUS_MANIFEST);
  CHECK_MESSAGE(huge.message().find("overflows") != std::string::npos, huge.message());
}

// ---- bounded variants (finite_max_abs) ------------------------------------------------------------

TEST_CASE("a bounded variant takes only finite inputs within its bound, and says so when it refuses") {
  std::string manifest = read_file(model_path("two_variants", ".json"));
  manifest = replace(manifest, "\"input\": \"x\", \"shape\": [2, 3]", "\"input\": \"x\", \"shape\": [2, 3], \"finite_max_abs\": 4");
  thunderc_model* m = nullptr;
  Status opened = open_with_manifest(manifest, &m);
  REQUIRE_MESSAGE(opened.ok(), opened.message());
  struct Closer {
    thunderc_model* m;
    ~Closer() { thunderc_model_close(m); }
  } h{m};
  std::vector<float> x = {1, -2, 3, -4, 0, 0.5f};
  std::vector<float> y(6), s(2);
  std::vector<int64_t> xs{2, 3}, ys{2, 3}, ss{2};
  DLTensor in = f32(x, xs), out[2] = {f32(y, ys), f32(s, ss)};
  thunderc_variant_info info{};
  REQUIRE(Status(thunderc_model_variant_info(h.m, 0, &info)).ok());
  CHECK(std::string(info.signature) == "x: float32[2, 3] cpu finite |x| <= 2^2");
  size_t v = 99;
  CHECK(Status(thunderc_model_select_variant(h.m, &in, 1, &v)).ok());
  CHECK(v == 0);  // |x| <= 4, the bound included
  CHECK(Status(thunderc_model_run(h.m, &in, 1, out, 2)).ok());
  CHECK(y[3] == -7.0f);
  for (float bad : {4.0001f, -5.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    CAPTURE(bad);
    x[4] = bad;
    Status st(thunderc_model_run(h.m, &in, 1, out, 2));  // the [4, 3] variant does not fit either
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK_MESSAGE(st.message().find("#0 x: float32[2, 3] cpu finite |x| <= 2^2 (input 'x' holds a NaN, an infinity or "
                                    "a value above 2^2 in magnitude") != std::string::npos,
                  st.message());
  }
}

TEST_CASE("finite_within: every float dtype, the bound's edge, NaN and infinities") {
  using thunderc::rt::finite_within;
  auto tensor = [](void* data, uint8_t code, uint8_t bits, std::vector<int64_t>& shape) {
    DLTensor t{};
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = DLDataType{code, bits, 1};
    t.shape = shape.data();
    return t;
  };
  std::vector<int64_t> shape{130};  // two blocks of 64 and a tail
  std::vector<float> f(130, 0.25f);
  DLTensor tf = tensor(f.data(), kDLFloat, 32, shape);
  CHECK(finite_within(tf, 8));
  for (size_t i : {size_t{0}, size_t{70}, size_t{129}}) {
    CAPTURE(i);
    f[i] = -8;
    CHECK(finite_within(tf, 8));
    f[i] = std::nextafter(8.0f, 9.0f);
    CHECK_FALSE(finite_within(tf, 8));
    f[i] = std::nanf("");
    CHECK_FALSE(finite_within(tf, std::ldexp(1.0, 64)));
    f[i] = -std::numeric_limits<float>::infinity();
    CHECK_FALSE(finite_within(tf, std::ldexp(1.0, 64)));
    f[i] = 0.25f;
  }
  std::vector<double> d(130, -1e300);
  DLTensor td = tensor(d.data(), kDLFloat, 64, shape);
  CHECK_FALSE(finite_within(td, std::ldexp(1.0, 64)));
  d.assign(130, -3.0);
  CHECK(finite_within(td, 4));
  d[100] = std::nan("");
  CHECK_FALSE(finite_within(td, 4));
  // float16: 0x4400 = 4, 0x4401 = 4.004, 0x7bff = 65504, 0x7c00 = inf, 0x7e00 = NaN; sign bit 0x8000.
  std::vector<uint16_t> h(130, 0xC400);
  DLTensor th = tensor(h.data(), kDLFloat, 16, shape);
  CHECK(finite_within(th, 4));
  h[5] = 0x4401;
  CHECK_FALSE(finite_within(th, 4));
  h[5] = 0x7bff;
  CHECK(finite_within(th, std::ldexp(1.0, 64)));  // a bound above float16's range: finite is enough
  h[5] = 0xfc00;
  CHECK_FALSE(finite_within(th, std::ldexp(1.0, 64)));
  h[5] = 0x7e00;
  CHECK_FALSE(finite_within(th, std::ldexp(1.0, 64)));
  // bfloat16: float32's upper half (0x4080 = 4, 0x4081 = 4.03, 0x7f80 = inf).
  std::vector<uint16_t> b(130, 0xC080);
  DLTensor tb = tensor(b.data(), kDLBfloat, 16, shape);
  CHECK(finite_within(tb, 4));
  b[129] = 0x4081;
  CHECK_FALSE(finite_within(tb, 4));
  b[129] = 0x7f80;
  CHECK_FALSE(finite_within(tb, std::ldexp(1.0, 64)));
  // Not a float: never within.
  std::vector<int32_t> n(130, 0);
  DLTensor ti = tensor(n.data(), kDLInt, 32, shape);
  CHECK_FALSE(finite_within(ti, 4));
}
