// The runtime's CUDA path under the fake CUDA driver (label cuda-emu): ctest puts fake_cuda/ on LD_LIBRARY_PATH,
// so the runtime's dlopen("libcuda.so.1") loads tests/runtime/fake_cuda/fake_libcuda.cpp, which runs the kernels
// of models/cuda_test_kernels.cpp on the host. main() below sets two fake devices and the kernel library.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../common/run_process.h"
#include "fake_cuda.h"
#include "thunderc/abi.h"
#include "test_util.hpp"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.h"
#include "thunderc/runtime.hpp"

using namespace thunderc_test;

int main(int argc, char** argv) {
  setenv("THUNDERC_FAKE_CUDA_DEVICES", "2", 1);
  setenv("THUNDERC_FAKE_CUDA_KERNELS", THUNDERC_TEST_KERNELS, 0);
  setenv("THUNDERC_FAKE_CUDA_CC", "9.0", 1);
  doctest::Context context(argc, argv);
  return context.run();
}

namespace {

template <class F>
F fake_fn(const char* name) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(h != nullptr, "the fake driver is not on LD_LIBRARY_PATH (run through ctest)");
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  return f;  // the handle stays open: the runtime holds the library anyway
}

thunderc_fake_cuda_stats_t stats() {
  thunderc_fake_cuda_stats_t s{};
  fake_fn<thunderc_fake_cuda_stats_fn>("thunderc_fake_cuda_stats")(&s);
  return s;
}

template <class F>
F hook(const std::string& so, const char* name) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  dlclose(h);
  return f;
}

const DLDevice kGpu0{kDLCUDA, 0};

// Device memory through the runtime's helpers.
struct DevBuf {
  DLDevice device;
  void* ptr = nullptr;
  size_t bytes = 0;
  DevBuf(DLDevice d, size_t n) : device(d), bytes(n) {
    Status st(thunderc_device_alloc(d, n, &ptr));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  ~DevBuf() { thunderc_status_free(thunderc_device_free(device, ptr)); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

DLTensor dl(void* data, std::vector<int64_t>& shape, DLDevice device) {
  DLTensor t{};
  t.data = data;
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

struct Model {
  thunderc_model* m = nullptr;
  explicit Model(const std::string& name) {
    Status st(thunderc_model_open(model_path(name).c_str(), nullptr, &m));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  ~Model() { thunderc_model_close(m); }
};

// Runs `m` on x ([rows, 3], host values) on `device`/`stream` with caller-provided device outputs; returns the
// status message ("" on success) and checks the results.
std::string run_on(thunderc_model* m, const std::vector<float>& x, int64_t rows, DLDevice device, void* stream) {
  DevBuf dx(device, x.size() * 4), dy(device, x.size() * 4), ds(device, static_cast<size_t>(rows) * 4);
  Status c(thunderc_device_copy_to_device(device, dx.ptr, x.data(), x.size() * 4, stream));
  if (!c.ok()) return c.message();
  std::vector<int64_t> xs{rows, 3}, ss{rows};
  DLTensor in = dl(dx.ptr, xs, device);
  DLTensor out[2] = {dl(dy.ptr, xs, device), dl(ds.ptr, ss, device)};
  thunderc_run_options o;
  thunderc_run_options_init(&o);
  o.cuda_stream = stream;
  Status st(thunderc_model_run_with_options(m, &in, 1, out, 2, &o));
  if (!st.ok()) return st.message();
  std::vector<float> y(x.size()), s(static_cast<size_t>(rows));
  Status b1(thunderc_device_copy_to_host(device, y.data(), dy.ptr, y.size() * 4, stream));
  Status b2(thunderc_device_copy_to_host(device, s.data(), ds.ptr, s.size() * 4, stream));
  if (!b1.ok() || !b2.ok()) return "copy back failed";
  if (y != expected_y(x)) return "wrong y";
  if (s != expected_rowsum(x)) return "wrong rowsum";
  return "";
}

}  // namespace

TEST_CASE("fake driver: a CUDA variant runs end to end, weights uploaded once, workspace pooled per stream") {
  const uint64_t live_before = stats().live_allocations;
  fake_fn<thunderc_fake_cuda_reset_counters_fn>("thunderc_fake_cuda_reset_counters")();
  {
    Model model("cuda_model");
    const std::string so = model_path("cuda_model");
    hook<void (*)()>(so, "thunderc_test_cuda_reset")();
    int32_t n = 0;
    REQUIRE(Status(thunderc_device_count(kDLCUDA, &n)).ok());
    CHECK(n == 2);
    CHECK(Status(thunderc_device_available(kGpu0)).ok());
    int32_t major = 0, minor = 0;
    REQUIRE(Status(thunderc_device_compute_capability(kGpu0, &major, &minor)).ok());
    CHECK(major == 9);
    CHECK(minor == 0);
    for (size_t v = 0; v < 3; ++v) {
      thunderc_variant_info info{};
      REQUIRE(Status(thunderc_model_variant_info(model.m, v, &info)).ok());
      CHECK(info.available == 1);
    }
    CHECK(stats().module_loads == 0);  // lazily, on the first call
    const char* image = nullptr;
    Status prep(thunderc_model_prepare_device(model.m, kGpu0, &image));
    REQUIRE_MESSAGE(prep.ok(), prep.message());
    CHECK(std::string(image) == "sm_90 cubin");
    CHECK(stats().last_image_kind == THUNDERC_CUDA_CUBIN);
    CHECK(std::string(stats().last_image_arch) == "sm_90");
    CHECK(stats().htod_bytes == 8);  // the weights

    for (int i = 0; i < 10; ++i) {
      CHECK(run_on(model.m, iota(6, static_cast<float>(i)), 2, kGpu0, nullptr) == "");
      CHECK(run_on(model.m, iota(12, -static_cast<float>(i)), 4, kGpu0, nullptr) == "");
    }
    CHECK(stats().module_loads == 1);
    CHECK(stats().launches == 10 * 2 + 10 * 2);
    CHECK(stats().dtod_copies == 10);  // variant 1 copies its workspace to y
    CHECK(hook<size_t (*)()>(so, "thunderc_test_cuda_distinct_weights")() == 1);
    CHECK(hook<long (*)()>(so, "thunderc_test_cuda_calls")() == 20);
    // One stream reuses one workspace block.
    auto workspaces = hook<size_t (*)(void*, int)>(so, "thunderc_test_cuda_workspaces");
    CHECK(workspaces(nullptr, 0) == 1);

    // Two streams get a block each.
    void* s1 = nullptr;
    void* s2 = nullptr;
    REQUIRE(Status(thunderc_device_stream_create(kGpu0, &s1)).ok());
    REQUIRE(Status(thunderc_device_stream_create(kGpu0, &s2)).ok());
    for (int i = 0; i < 5; ++i) {
      CHECK(run_on(model.m, iota(12, 1.0f * i), 4, kGpu0, s1) == "");
      CHECK(run_on(model.m, iota(12, 2.0f * i), 4, kGpu0, s2) == "");
    }
    CHECK(workspaces(s1, 0) == 1);
    CHECK(workspaces(s2, 0) == 1);
    CHECK(workspaces(nullptr, 1) == 3);
    CHECK(Status(thunderc_device_stream_destroy(kGpu0, s1)).ok());
    CHECK(Status(thunderc_device_stream_destroy(kGpu0, s2)).ok());

    // Timing with events.
    thunderc_device_event a = nullptr, b = nullptr;
    REQUIRE(Status(thunderc_device_event_create(kGpu0, &a)).ok());
    REQUIRE(Status(thunderc_device_event_create(kGpu0, &b)).ok());
    CHECK(Status(thunderc_device_event_record(a, nullptr)).ok());
    CHECK(run_on(model.m, iota(6, 0.0f), 2, kGpu0, nullptr) == "");
    CHECK(Status(thunderc_device_event_record(b, nullptr)).ok());
    float ms = -1;
    CHECK(Status(thunderc_device_event_elapsed_ms(a, b, &ms)).ok());
    CHECK(ms >= 0.0f);
    thunderc_device_event_destroy(a);
    thunderc_device_event_destroy(b);
    CHECK(stats().live_events == 0);
    CHECK(Status(thunderc_device_synchronize(kGpu0, nullptr)).ok());
  }
  // Closing the model frees the weights, workspace blocks and module.
  CHECK(stats().live_allocations == live_before);
  CHECK(stats().live_modules == 0);
  CHECK(stats().live_streams == 0);
}

TEST_CASE("fake driver: --cuda-graphs whose capture fails runs every call directly, and frees what it set up") {
  const uint64_t live_before = stats().live_allocations;
  fake_fn<thunderc_fake_cuda_reset_counters_fn>("thunderc_fake_cuda_reset_counters")();
  {
    Model model("cuda_model_graphs");
    // cuda_model.cpp's hand-written kernels publish no parameter sizes, so the fake driver refuses to capture
    // their launches (as a real one refuses an operation it cannot capture): call 2's capture fails.
    for (int i = 0; i < 5; ++i) CHECK(run_on(model.m, iota(6, static_cast<float>(i)), 2, kGpu0, nullptr) == "");
    void* s1 = nullptr;
    REQUIRE(Status(thunderc_device_stream_create(kGpu0, &s1)).ok());
    for (int i = 0; i < 3; ++i) CHECK(run_on(model.m, iota(12, 1.0f * i), 4, kGpu0, s1) == "");
    CHECK(Status(thunderc_device_stream_destroy(kGpu0, s1)).ok());
    CHECK(stats().graph_launches == 0);
    CHECK(stats().launches == 5 * 2 + 3 * 2);  // every call ran its kernels directly (failed captures ran none)
  }
  CHECK(stats().live_allocations == live_before);  // static buffers and capture streams are freed at close
  CHECK(stats().live_streams == 0);
}

TEST_CASE("fake driver: --cuda-graphs, 4 threads on their own streams: each captures once, replays, results right") {
  int32_t n = 0;  // starts the driver first: cuInit registers $THUNDERC_FAKE_CUDA_KERNELS, which must come before
  REQUIRE(Status(thunderc_device_count(kDLCUDA, &n)).ok());
  auto reg = fake_fn<thunderc_fake_cuda_register_kernels_fn>("thunderc_fake_cuda_register_kernels");
  REQUIRE(reg(THUNDERC_TEST_KERNELS_CAPTURABLE) == 0);
  const uint64_t live_before = stats().live_allocations;
  fake_fn<thunderc_fake_cuda_reset_counters_fn>("thunderc_fake_cuda_reset_counters")();
  {
    Model model("cuda_model_graphs");
    constexpr int kThreads = 4, kCalls = 6;
    std::vector<std::string> errors(kThreads);
    // The streams live until every thread is done: the runtime keys graphs by stream handle, and a handle
    // destroyed and created again may come back at the same address (it would find its predecessor's graph).
    std::vector<void*> streams(kThreads, nullptr);
    for (void*& s : streams) REQUIRE(Status(thunderc_device_stream_create(kGpu0, &s)).ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        // Variant 1 ([4, 3]) uses the workspace and a device-to-device copy: both are captured too.
        for (int i = 0; i < kCalls && errors[t].empty(); ++i)
          errors[t] = run_on(model.m, iota(12, 1.5f * i - t), 4, kGpu0, streams[t]);
      });
    for (auto& th : threads) th.join();
    for (void* s : streams) thunderc_status_free(thunderc_device_stream_destroy(kGpu0, s));
    for (int t = 0; t < kThreads; ++t) CHECK_MESSAGE(errors[t] == "", "thread " << t << ": " << errors[t]);
    // Per stream: call 1 direct, calls 2..6 through the graph (captured once, at call 2).
    CHECK(stats().graph_launches == kThreads * (kCalls - 1));
    CHECK(stats().launches == kThreads * kCalls * 2);  // the graph's kernels run when it is launched
  }
  CHECK(stats().live_allocations == live_before);  // static buffers and capture streams freed at close
  CHECK(stats().live_streams == 0);
  REQUIRE(reg(THUNDERC_TEST_KERNELS) == 0);  // the other tests' kernels again
}

TEST_CASE("fake driver: run_alloc gives device memory that the deleter frees") {
  Model model("cuda_model");
  const uint64_t live_before = stats().live_allocations;
  const std::vector<float> x = iota(12, 0.25f);
  DevBuf dx(kGpu0, 48);
  REQUIRE(Status(thunderc_device_copy_to_device(kGpu0, dx.ptr, x.data(), 48, nullptr)).ok());
  std::vector<int64_t> xs{4, 3};
  DLTensor in = dl(dx.ptr, xs, kGpu0);
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  Status st(thunderc_model_run_alloc(model.m, &in, 1, outs, 2));
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(outs[0]->dl_tensor.device.device_type == kDLCUDA);
  CHECK(outs[0]->dl_tensor.device.device_id == 0);
  std::vector<float> y(12), s(4);
  REQUIRE(Status(thunderc_device_copy_to_host(kGpu0, y.data(), outs[0]->dl_tensor.data, 48, nullptr)).ok());
  REQUIRE(Status(thunderc_device_copy_to_host(kGpu0, s.data(), outs[1]->dl_tensor.data, 16, nullptr)).ok());
  CHECK(y == expected_y(x));
  CHECK(s == expected_rowsum(x));
  CHECK(stats().live_allocations > live_before);
  outs[0]->deleter(outs[0]);
  outs[1]->deleter(outs[1]);
  // Weights, module and the one workspace block remain until close; the outputs are gone.
  const uint64_t after = stats().live_allocations;
  DLManagedTensor* again[2] = {nullptr, nullptr};
  REQUIRE(Status(thunderc_model_run_alloc(model.m, &in, 1, again, 2)).ok());
  again[0]->deleter(again[0]);
  again[1]->deleter(again[1]);
  CHECK(stats().live_allocations == after);

  // The C++ wrapper: device tensors and the stream option.
  thunderc::Model cpp(model_path("cuda_model"));
  auto host = thunderc::HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  thunderc::DeviceTensor dev = thunderc::DeviceTensor::from_host(host, kGpu0);
  thunderc::RunOptions opts;
  std::vector<thunderc::ManagedTensor> managed = cpp.run_alloc({dev.dl()}, opts);
  CHECK(managed[0].to_host().to_vector<float>() == std::vector<float>{3, 5, 7, 9, 11, 13});
  CHECK(managed[1].to_host().to_vector<float>() == std::vector<float>{6, 15});
  thunderc::DeviceTensor y2(DLDataType{kDLFloat, 32, 1}, {2, 3}, kGpu0), s2(DLDataType{kDLFloat, 32, 1}, {2}, kGpu0);
  std::vector<DLTensor> outs_dl{y2.dl(), s2.dl()};
  cpp.run({dev.dl()}, outs_dl, opts);
  CHECK(y2.to_host().to_vector<float>() == std::vector<float>{3, 5, 7, 9, 11, 13});
  // Host tensors to the CUDA-only shape: the wrapper throws the runtime's message.
  auto host43 = thunderc::HostTensor::from_vector<float>({4, 3}, std::vector<float>(12, 1.0f));
  CHECK_THROWS_WITH_AS(cpp.run({host43}), doctest::Contains("copy it to the GPU first"), thunderc::Error);
}

TEST_CASE("fake driver: a host tensor given to a CUDA variant is refused, naming the input") {
  Model model("cuda_model");
  std::vector<float> x(12, 1.0f);
  std::vector<int64_t> xs{4, 3};
  DLTensor in = dl(x.data(), xs, DLDevice{kDLCPU, 0});
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  Status st(thunderc_model_run_alloc(model.m, &in, 1, outs, 2));
  CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
  CHECK_MESSAGE(st.message().find("#1 x: float32[4, 3] cuda:0 (input 'x': expected a CUDA tensor (on the GPU), got a "
                                  "host (cpu) tensor; copy it to the GPU first") != std::string::npos,
                st.message());
  // A CUDA output buffer on the wrong device, and a host output buffer, are refused too.
  DevBuf dx(kGpu0, 48), dy(kGpu0, 48);
  std::vector<float> s(4);
  std::vector<int64_t> ss{4};
  DLTensor gin = dl(dx.ptr, xs, kGpu0);
  DLTensor out[2] = {dl(dy.ptr, xs, kGpu0), dl(s.data(), ss, DLDevice{kDLCPU, 0})};
  Status st2(thunderc_model_run(model.m, &gin, 1, out, 2));
  CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(st2.message() == "output 'rowsum' (#1) for variant #1 of cuda_model.so: expected a contiguous "
                                 "float32[4] cuda:0 tensor, got float32[4] cpu",
                st2.message());
}

TEST_CASE("fake driver: CUDA tensors that do not start on a 16-byte boundary are refused, naming them") {
  Model model("cuda_model");
  DevBuf dx(kGpu0, 64), dy(kGpu0, 64), ds(kGpu0, 32);
  std::vector<int64_t> xs{4, 3}, ss{4};
  DLTensor in = dl(dx.ptr, xs, kGpu0);
  in.byte_offset = 4;  // a view one float into its allocation
  DLTensor out[2] = {dl(dy.ptr, xs, kGpu0), dl(ds.ptr, ss, kGpu0)};
  Status st(thunderc_model_run(model.m, &in, 1, out, 2));
  CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
  CHECK_MESSAGE(st.message().find("input 'x': a CUDA tensor must start on a 16-byte boundary, this one starts at byte 4") !=
                    std::string::npos,
                st.message());
  in.byte_offset = 0;
  out[1].byte_offset = 8;
  Status st2(thunderc_model_run(model.m, &in, 1, out, 2));
  CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(st2.message().find("output 'rowsum' (#1)") != std::string::npos, st2.message());
  CHECK_MESSAGE(st2.message().find("16-byte boundary") != std::string::npos, st2.message());
  out[1].byte_offset = 0;
  CHECK(Status(thunderc_model_run(model.m, &in, 1, out, 2)).code() == THUNDERC_STATUS_OK);
}

TEST_CASE("fake driver: image selection by compute capability") {
  SUBCASE("cc 8.6 has no sm_86 cubin: the compute_80 PTX is JIT-compiled") {
    setenv("THUNDERC_FAKE_CUDA_CC", "8.6", 1);
    Model model("cuda_model");
    const char* image = nullptr;
    Status st(thunderc_model_prepare_device(model.m, kGpu0, &image));
    REQUIRE_MESSAGE(st.ok(), st.message());
    CHECK(std::string(image) == "compute_80 PTX (JIT-compiled for sm_86)");
    CHECK(stats().last_image_kind == THUNDERC_CUDA_PTX);
    CHECK(std::string(stats().last_image_arch) == "sm_80");
    CHECK(run_on(model.m, iota(12, 3.0f), 4, kGpu0, nullptr) == "");
  }
  SUBCASE("cc 7.5: nothing fits, DEVICE_UNAVAILABLE names sm_75 and the model's architectures") {
    setenv("THUNDERC_FAKE_CUDA_CC", "7.5", 1);
    Model model("cuda_model");
    for (int attempt = 0; attempt < 2; ++attempt) {
      DevBuf dx(kGpu0, 24);
      std::vector<int64_t> xs{2, 3};
      DLTensor in = dl(dx.ptr, xs, kGpu0);
      DLManagedTensor* outs[2] = {nullptr, nullptr};
      Status st(thunderc_model_run_alloc(model.m, &in, 1, outs, 2));
      CHECK(st.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
      CHECK_MESSAGE(st.message() == "cuda_model.so has no CUDA code that runs on cuda:0 (sm_75): it has sm_90 (cubin), "
                                    "compute_80 (PTX) (a cubin runs only on its own architecture, PTX on its own and "
                                    "newer ones); recompile the model for sm_75",
                    st.message());
      CHECK(outs[0] == nullptr);
    }
  }
  SUBCASE("per-device capability: cuda:1 at 8.0 loads the PTX, cuda:0 at 9.0 the cubin") {
    setenv("THUNDERC_FAKE_CUDA_CC", "9.0,8.0", 1);
    Model model("cuda_model");
    const char* image = nullptr;
    REQUIRE(Status(thunderc_model_prepare_device(model.m, DLDevice{kDLCUDA, 1}, &image)).ok());
    CHECK(std::string(image) == "compute_80 PTX (JIT-compiled for sm_80)");
    REQUIRE(Status(thunderc_model_prepare_device(model.m, kGpu0, &image)).ok());
    CHECK(std::string(image) == "sm_90 cubin");
  }
  SUBCASE("a JIT failure comes with the JIT log") {
    setenv("THUNDERC_FAKE_CUDA_CC", "8.6", 1);
    Model model("cuda_bad_ptx");
    Status st(thunderc_model_prepare_device(model.m, kGpu0, nullptr));
    CHECK(st.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
    CHECK_MESSAGE(st.message().find("cannot load the compute_80 PTX (JIT-compiled for sm_86) of cuda_bad_ptx.so on "
                                    "cuda:0: cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX") == 0,
                  st.message());
    CHECK_MESSAGE(st.message().find("JIT log: ptxas fatal") != std::string::npos, st.message());
  }
  setenv("THUNDERC_FAKE_CUDA_CC", "9.0", 1);
}

TEST_CASE("fake driver: a kernel missing from the image is named") {
  SUBCASE("the model lists a kernel the kernel library lacks") {
    Model model("cuda_missing_kernel");
    Status st(thunderc_model_prepare_device(model.m, kGpu0, nullptr));
    CHECK(st.code() == THUNDERC_STATUS_KERNEL_FAILED);
    CHECK_MESSAGE(st.message() == "kernel 'layernorm_missing' of cuda_missing_kernel.so is not in its sm_90 cubin "
                                  "loaded on cuda:0: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol "
                                  "not found)",
                  st.message());
  }
  SUBCASE("a kernel library registered later binds the modules loaded after it") {
    auto reg = fake_fn<thunderc_fake_cuda_register_kernels_fn>("thunderc_fake_cuda_register_kernels");
    REQUIRE(reg(THUNDERC_TEST_KERNELS_PARTIAL) == 0);
    {
      Model model("cuda_model");
      Status st(thunderc_model_prepare_device(model.m, kGpu0, nullptr));
      CHECK(st.code() == THUNDERC_STATUS_KERNEL_FAILED);
      CHECK_MESSAGE(st.message().find("kernel 'rowsum' of cuda_model.so") == 0, st.message());
    }
    CHECK(reg("/nonexistent/kernels.so") != 0);
    REQUIRE(reg(THUNDERC_TEST_KERNELS) == 0);
    Model model("cuda_model");
    CHECK(run_on(model.m, iota(6, 1.0f), 2, kGpu0, nullptr) == "");
  }
}

TEST_CASE("fake driver: launch errors name the kernel, its grid and block and the driver's error") {
  Model model("cuda_model");
  const std::string so = model_path("cuda_model");
  auto set_mode = hook<void (*)(int)>(so, "thunderc_test_cuda_set_mode");
  SUBCASE("block of 2048 threads") {
    set_mode(1);
    const std::string msg = run_on(model.m, iota(6, 0.0f), 2, kGpu0, nullptr);
    CHECK_MESSAGE(msg == "variant #0 (thunderc_cuda_variant_0) of cuda_model.so failed (code 1): kernel 'affine' "
                         "(grid [2, 1, 1], block [2048, 1, 1], 0 bytes of dynamic shared memory) on cuda:0: "
                         "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)",
                  msg);
    CHECK(std::string(stats().last_kernel) == "affine");
  }
  SUBCASE("kernel index out of range") {
    set_mode(2);
    const std::string msg = run_on(model.m, iota(6, 0.0f), 2, kGpu0, nullptr);
    CHECK_MESSAGE(msg.find("device_api.launch: kernel index 7 out of range (the model has 2 kernels)") != std::string::npos,
                  msg);
  }
  SUBCASE("64 KiB of dynamic shared memory: opted in (sm_90 allows 227 KiB)") {
    set_mode(3);
    CHECK(run_on(model.m, iota(12, 0.0f), 4, kGpu0, nullptr) == "");
  }
  SUBCASE("300 KiB of dynamic shared memory: more than the device has") {
    set_mode(4);
    const std::string msg = run_on(model.m, iota(12, 0.0f), 4, kGpu0, nullptr);
    CHECK_MESSAGE(msg.find("kernel 'affine' (grid [3, 1, 1], block [4, 1, 1], 307200 bytes of dynamic shared memory) "
                           "on cuda:0: cannot allow that much shared memory: cuFuncSetAttribute") != std::string::npos,
                  msg);
  }
  set_mode(0);
}

TEST_CASE("fake driver: devices: any ordinal, one per call") {
  SUBCASE("the variant's cuda:0 runs on cuda:1 too") {
    Model model("cuda_model");
    const DLDevice gpu1{kDLCUDA, 1};
    CHECK(run_on(model.m, iota(12, 5.0f), 4, gpu1, nullptr) == "");
    DevBuf dx(gpu1, 24);
    std::vector<int64_t> xs{2, 3};
    DLTensor in = dl(dx.ptr, xs, gpu1);
    DLManagedTensor* outs[2] = {nullptr, nullptr};
    REQUIRE(Status(thunderc_model_run_alloc(model.m, &in, 1, outs, 2)).ok());
    CHECK(outs[0]->dl_tensor.device.device_id == 1);
    outs[0]->deleter(outs[0]);
    outs[1]->deleter(outs[1]);
    // An output on another device than the inputs.
    DevBuf dy(kGpu0, 24), ds(gpu1, 8);
    std::vector<int64_t> ss{2};
    DLTensor out[2] = {dl(dy.ptr, xs, kGpu0), dl(ds.ptr, ss, gpu1)};
    Status st(thunderc_model_run(model.m, &in, 1, out, 2));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find("output 'y' (#0) for variant #0 of cuda_model.so: expected a contiguous "
                                    "float32[2, 3] cuda:1 tensor, got float32[2, 3] cuda:0") == 0,
                  st.message());
  }
  SUBCASE("a device that does not exist") {
    Model model("cuda_model");
    std::vector<float> x(6);
    std::vector<int64_t> xs{2, 3};
    DLTensor in = dl(x.data(), xs, DLDevice{kDLCUDA, 5});
    DLManagedTensor* outs[2] = {nullptr, nullptr};
    Status st(thunderc_model_run_alloc(model.m, &in, 1, outs, 2));
    CHECK(st.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
    CHECK_MESSAGE(st.message() == "cuda:5 is not available: the CUDA driver reports 2 device(s) (cuda:0 .. cuda:1)",
                  st.message());
  }
  SUBCASE("inputs on two devices") {
    Model model("cuda_two_inputs");
    DevBuf a(kGpu0, 24), b(DLDevice{kDLCUDA, 1}, 24);
    std::vector<int64_t> xs{2, 3};
    DLTensor in[2] = {dl(a.ptr, xs, kGpu0), dl(b.ptr, xs, DLDevice{kDLCUDA, 1})};
    DLManagedTensor* outs[2] = {nullptr, nullptr};
    Status st(thunderc_model_run_alloc(model.m, in, 2, outs, 2));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK_MESSAGE(st.message().find("#0 x: float32[2, 3] cuda:0, z: float32[2, 3] cuda:0 (input 'z' is on cuda:1 but "
                                    "input 'x' is on cuda:0 (all inputs and outputs must be on one CUDA device))") !=
                      std::string::npos,
                  st.message());
  }
}

TEST_CASE("fake driver: 8 threads, each with its own stream, give correct results") {
  Model model("cuda_model");
  const std::string so = model_path("cuda_model");
  hook<void (*)()>(so, "thunderc_test_cuda_reset")();
  auto workspaces = hook<size_t (*)(void*, int)>(so, "thunderc_test_cuda_workspaces");
  constexpr int kThreads = 8, kCalls = 60;
  std::vector<std::string> failures(kThreads);
  std::vector<void*> streams(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const DLDevice device{kDLCUDA, t % 2};
      thunderc_status st = thunderc_device_stream_create(device, &streams[t]);
      if (st) {
        failures[t] = thunderc_status_message(st);
        thunderc_status_free(st);
        return;
      }
      for (int i = 0; i < kCalls && failures[t].empty(); ++i) {
        const int64_t rows = (i + t) % 2 ? 4 : 2;
        failures[t] = run_on(model.m, iota(static_cast<size_t>(rows) * 3, static_cast<float>(t * 100 + i)), rows,
                             device, streams[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK_MESSAGE(failures[t].empty(), failures[t]);
  for (int t = 0; t < kThreads; ++t) {
    CHECK(workspaces(streams[t], 0) == 1);
    thunderc_status_free(thunderc_device_stream_destroy(DLDevice{kDLCUDA, t % 2}, streams[t]));
  }
  CHECK(workspaces(nullptr, 1) == kThreads);
}

#ifdef THUNDERC_TEST_CLI
TEST_CASE("fake driver: thunderc run and bench on a CUDA variant") {
  TempDir dir;
  const std::vector<float> x = iota(12, 0.5f);
  const std::string xin = dir.path + "/x.npy", want = dir.path + "/want.npy";
  thunderc::npy::save(xin, thunderc::HostTensor::from_vector<float>({4, 3}, x));
  thunderc::npy::save(want, thunderc::HostTensor::from_vector<float>({4, 3}, expected_y(x)));
  ProcessResult r = run_program(THUNDERC_TEST_CLI, {"run", model_path("cuda_model"), xin, "--output-dir", dir.path,
                                                    "--expect", want});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_MESSAGE(r.out.find("output0: matches") != std::string::npos, r.out);
  CHECK(thunderc::npy::load(dir.path + "/output1.npy").to_vector<float>() == expected_rowsum(x));

  ProcessResult b = run_program(THUNDERC_TEST_CLI, {"bench", model_path("cuda_model"), "--shapes", "4x3",
                                                    "--iterations", "3", "--warmup", "1", "--json"});
  REQUIRE_MESSAGE(b.code == 0, b.out);
  CHECK_MESSAGE(b.out.find("\"device\": \"cuda:0\"") != std::string::npos, b.out);
  CHECK_MESSAGE(b.out.find("\"median_ms\"") != std::string::npos, b.out);

  ProcessResult t = run_program(THUNDERC_TEST_CLI, {"bench", model_path("cuda_model"), "--shapes", "4x3",
                                                    "--iterations", "3"});
  REQUIRE_MESSAGE(t.code == 0, t.out);
  CHECK_MESSAGE(t.out.find("sm_90 cubin") != std::string::npos, t.out);

  ProcessResult c = run_program(THUNDERC_TEST_CLI, {"bench", model_path("cuda_model"), "--shapes", "4x3",
                                                    "--iterations", "2", "--compare", dir.path + "/none.pt"});
  CHECK_MESSAGE(c.code == 1, c.out);
  CHECK_MESSAGE(c.out.find("thunderc: error: --compare") != std::string::npos, c.out);
}
#endif
