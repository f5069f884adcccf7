// The CUDA path on a machine without a CUDA driver (label runtime): a CUDA model opens, its CUDA variants are
// unavailable with the reason, running them is DEVICE_UNAVAILABLE, the device helpers say why, and the CLI
// prints a clear error. Skipped where a libcuda.so.1 can be loaded (a GPU machine).
#include <dlfcn.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "../common/run_process.h"
#include "test_util.hpp"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.h"

using namespace thunderc_test;

namespace {

bool has_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

DLTensor tensor(std::vector<float>& data, std::vector<int64_t>& shape, DLDevice device) {
  DLTensor t{};
  t.data = data.data();
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

}  // namespace

TEST_CASE("no driver: a CUDA model opens, its CUDA variants are unavailable, running them says why") {
  if (has_driver()) {
    MESSAGE("a CUDA driver is present; skipped");
    return;
  }
  thunderc_model* m = nullptr;
  {
    Status st(thunderc_model_open(model_path("cuda_model").c_str(), nullptr, &m));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  for (size_t v = 0; v < 3; ++v) {
    thunderc_variant_info info{};
    REQUIRE(Status(thunderc_model_variant_info(m, v, &info)).ok());
    CHECK(info.available == (v == 2 ? 1 : 0));
  }
  const char* image = "x";
  Status prep(thunderc_model_prepare_device(m, DLDevice{kDLCUDA, 0}, &image));
  CHECK(prep.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK_MESSAGE(prep.message().find("cuda:0 is not available: no CUDA driver (dlopen libcuda.so.1: ") == 0, prep.message());
  CHECK(image == nullptr);

  std::vector<float> x(12, 1.0f);
  std::vector<int64_t> s23{2, 3}, s43{4, 3};
  DLManagedTensor* outs[2] = {nullptr, nullptr};
  // A CUDA tensor (never dereferenced: the variant cannot run).
  DLTensor on_gpu = tensor(x, s43, DLDevice{kDLCUDA, 0});
  Status st(thunderc_model_run_alloc(m, &on_gpu, 1, outs, 2));
  CHECK(st.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK_MESSAGE(st.message().find("variant #1 of cuda_model.so (x: float32[4, 3] cuda:0) accepts these inputs but cannot "
                                  "run here: no CUDA driver (dlopen libcuda.so.1: ") == 0,
                st.message());
  CHECK(outs[0] == nullptr);
  // The same through the options entry point.
  thunderc_run_options o;
  thunderc_run_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.cuda_stream == nullptr);
  CHECK(Status(thunderc_model_run_alloc_with_options(m, &on_gpu, 1, outs, 2, &o)).code() ==
        THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  // A host [4, 3] tensor: no variant takes it; the CUDA one is listed as unavailable, with the reason.
  DLTensor host43 = tensor(x, s43, DLDevice{kDLCPU, 0});
  Status st2(thunderc_model_run_alloc(m, &host43, 1, outs, 2));
  CHECK(st2.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
  CHECK_MESSAGE(st2.message().find("#1 x: float32[4, 3] cuda:0 (unavailable: no CUDA driver") != std::string::npos,
                st2.message());
  // The CPU variant still runs.
  DLTensor host23 = tensor(x, s23, DLDevice{kDLCPU, 0});
  Status st3(thunderc_model_run_alloc(m, &host23, 1, outs, 2));
  REQUIRE_MESSAGE(st3.ok(), st3.message());
  CHECK(static_cast<const float*>(outs[0]->dl_tensor.data)[0] == 3.0f);
  CHECK(static_cast<const float*>(outs[1]->dl_tensor.data)[1] == 3.0f);
  outs[0]->deleter(outs[0]);
  outs[1]->deleter(outs[1]);
  thunderc_model_close(m);
}

TEST_CASE("no driver: device helpers report the reason, CPU helpers work") {
  if (has_driver()) {
    MESSAGE("a CUDA driver is present; skipped");
    return;
  }
  int32_t n = -1;
  REQUIRE(Status(thunderc_device_count(kDLCUDA, &n)).ok());
  CHECK(n == 0);
  REQUIRE(Status(thunderc_device_count(kDLCPU, &n)).ok());
  CHECK(n == 1);
  CHECK(Status(thunderc_device_count(kDLOpenCL, &n)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  Status avail(thunderc_device_available(DLDevice{kDLCUDA, 0}));
  CHECK(avail.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK_MESSAGE(avail.message().find("cuda:0 is not available: no CUDA driver (dlopen libcuda.so.1: ") == 0,
                avail.message());
  CHECK(Status(thunderc_device_available(DLDevice{kDLCPU, 0})).ok());
  void* p = reinterpret_cast<void*>(1);
  CHECK(Status(thunderc_device_alloc(DLDevice{kDLCUDA, 0}, 16, &p)).code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE);
  CHECK(p == nullptr);
  int32_t major = 0, minor = 0;
  CHECK(Status(thunderc_device_compute_capability(DLDevice{kDLCUDA, 0}, &major, &minor)).code() ==
        THUNDERC_STATUS_DEVICE_UNAVAILABLE);

  // CPU flavour of every helper.
  const DLDevice cpu{kDLCPU, 0};
  REQUIRE(Status(thunderc_device_alloc(cpu, 100, &p)).ok());
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  const float src[3] = {1, 2, 3};
  float back[3] = {0, 0, 0};
  CHECK(Status(thunderc_device_copy_to_device(cpu, p, src, sizeof src, nullptr)).ok());
  CHECK(Status(thunderc_device_copy_to_host(cpu, back, p, sizeof back, nullptr)).ok());
  CHECK(back[2] == 3.0f);
  void* stream = nullptr;
  CHECK(Status(thunderc_device_stream_create(cpu, &stream)).ok());
  CHECK(stream != nullptr);
  thunderc_device_event a = nullptr, b = nullptr;
  REQUIRE(Status(thunderc_device_event_create(cpu, &a)).ok());
  REQUIRE(Status(thunderc_device_event_create(cpu, &b)).ok());
  float ms = -1;
  CHECK(Status(thunderc_device_event_elapsed_ms(a, b, &ms)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(Status(thunderc_device_event_record(a, stream)).ok());
  CHECK(Status(thunderc_device_event_record(b, stream)).ok());
  CHECK(Status(thunderc_device_event_elapsed_ms(a, b, &ms)).ok());
  CHECK(ms >= 0.0f);
  thunderc_device_event_destroy(a);
  thunderc_device_event_destroy(b);
  CHECK(Status(thunderc_device_synchronize(cpu, stream)).ok());
  CHECK(Status(thunderc_device_stream_destroy(cpu, stream)).ok());
  CHECK(Status(thunderc_device_free(cpu, p)).ok());
  CHECK(Status(thunderc_device_free(cpu, nullptr)).ok());
}

TEST_CASE("a model with CUDA variants must export thunderc_cuda_module") {
  thunderc_model* m = nullptr;
  Status st(thunderc_model_open(model_path("cuda_no_module").c_str(), nullptr, &m));
  CHECK(m == nullptr);
  CHECK(st.code() == THUNDERC_STATUS_MANIFEST);
  CHECK_MESSAGE(st.message().find("cuda_no_module.so' has CUDA variants (#0, #1) but does not export "
                                  "thunderc_cuda_module") != std::string::npos,
                st.message());
}

#ifdef THUNDERC_TEST_CLI
TEST_CASE("no driver: thunderc run/bench on a CUDA variant fail with a clear error") {
  if (has_driver()) {
    MESSAGE("a CUDA driver is present; skipped");
    return;
  }
  TempDir dir;
  const std::string x43 = dir.path + "/x43.npy", x23 = dir.path + "/x23.npy";
  thunderc::npy::save(x43, thunderc::HostTensor::from_vector<float>({4, 3}, std::vector<float>(12, 1.0f)));
  thunderc::npy::save(x23, thunderc::HostTensor::from_vector<float>({2, 3}, std::vector<float>(6, 1.0f)));
  ProcessResult r = run_program(THUNDERC_TEST_CLI, {"run", model_path("cuda_model"), x43, "--output-dir", dir.path});
  CHECK_MESSAGE(r.code == 1, r.out);
  CHECK_MESSAGE(r.out.find("thunderc: error: ") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("cuda:0") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("no CUDA driver") != std::string::npos, r.out);
  // The CPU variant of the same model still runs.
  ProcessResult ok = run_program(THUNDERC_TEST_CLI, {"run", model_path("cuda_model"), x23, "--output-dir", dir.path});
  CHECK_MESSAGE(ok.code == 0, ok.out);
  ProcessResult b = run_program(THUNDERC_TEST_CLI, {"bench", model_path("cuda_model"), "--shapes", "4x3", "--iterations", "2"});
  CHECK_MESSAGE(b.code == 1, b.out);
  CHECK_MESSAGE(b.out.find("thunderc: error: ") != std::string::npos, b.out);
  CHECK_MESSAGE(b.out.find("no CUDA driver") != std::string::npos, b.out);
}
#endif
