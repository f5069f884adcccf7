// A model's library convolution end to end (label cuda-emu): the runtime opens models/cuda_conv_model.cpp, runs
// it under the fake driver, and its device_api.conv2d goes through cuda_exec.cpp (cuDNN state per device, the
// library workspace per stream) to runtime/src/cudnn.cpp and the fake cuDNN, all found on LD_LIBRARY_PATH.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fake_cudnn.h"
#include "test_util.hpp"
#include "thunderc/runtime.h"

using namespace thunderc_test;

int main(int argc, char** argv) {
  setenv("THUNDERC_FAKE_CUDA_DEVICES", "1", 1);
  doctest::Context context(argc, argv);
  return context.run();
}

namespace {

template <class F>
F sym(const std::string& lib, const char* name) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(h != nullptr, lib << " cannot be opened (run through ctest)");
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  return f;
}

thunderc_fake_cudnn_stats_t dnn_stats() {
  thunderc_fake_cudnn_stats_t s{};
  sym<thunderc_fake_cudnn_stats_fn>("libcudnn.so.9", "thunderc_fake_cudnn_stats")(&s);
  return s;
}

const DLDevice kGpu{kDLCUDA, 0};

struct DevBuf {
  void* ptr = nullptr;
  explicit DevBuf(size_t n) {
    Status st(thunderc_device_alloc(kGpu, n, &ptr));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  ~DevBuf() { thunderc_status_free(thunderc_device_free(kGpu, ptr)); }
};

// Runs the model once on `stream`; "" or the status message. `y` gets the result.
std::string run(thunderc_model* m, const std::vector<float>& x, std::vector<float>* y, void* stream) {
  DevBuf dx(x.size() * 4), dy(y->size() * 4);
  Status c(thunderc_device_copy_to_device(kGpu, dx.ptr, x.data(), x.size() * 4, stream));
  REQUIRE(c.ok());
  int64_t xs[4] = {2, 4, 6, 6}, ys[4] = {2, 5, 6, 6};
  DLTensor in{}, out{};
  in.data = dx.ptr, in.device = kGpu, in.ndim = 4, in.dtype = DLDataType{kDLFloat, 32, 1}, in.shape = xs;
  out = in;
  out.data = dy.ptr, out.shape = ys;
  thunderc_run_options o;
  thunderc_run_options_init(&o);
  o.cuda_stream = stream;
  Status st(thunderc_model_run_with_options(m, &in, 1, &out, 1, &o));
  if (!st.ok()) return st.message();
  Status b(thunderc_device_copy_to_host(kGpu, y->data(), dy.ptr, y->size() * 4, stream));
  REQUIRE(b.ok());
  return "";
}

}  // namespace

TEST_CASE("cudnn end to end: a model's conv2d runs through the runtime and the fake cuDNN, its plan built once") {
  const std::string so = model_path("cuda_conv_model");
  thunderc_model* m = nullptr;
  Status open(thunderc_model_open(so.c_str(), nullptr, &m));
  REQUIRE_MESSAGE(open.ok(), open.message());
  const float* w = sym<const float* (*)()>(so, "thunderc_test_conv_weights")();
  const float* bias = sym<const float* (*)()>(so, "thunderc_test_conv_bias")();

  std::vector<float> x(2 * 4 * 6 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i)));
  // relu(conv2d(x, w, pad 1) + bias), in double.
  std::vector<double> ref(2 * 5 * 6 * 6);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 5; ++k)
      for (int oh = 0; oh < 6; ++oh)
        for (int ow = 0; ow < 6; ++ow) {
          double acc = bias[k];
          for (int c = 0; c < 4; ++c)
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int ih = oh - 1 + r, iw = ow - 1 + s;
                if (ih < 0 || iw < 0 || ih >= 6 || iw >= 6) continue;
                acc += static_cast<double>(x[((n * 4 + c) * 6 + ih) * 6 + iw]) * w[((k * 4 + c) * 3 + r) * 3 + s];
              }
          ref[((n * 5 + k) * 6 + oh) * 6 + ow] = acc > 0 ? acc : 0;
        }

  const thunderc_fake_cudnn_stats_t s0 = dnn_stats();
  void* streams[2] = {nullptr, nullptr};
  {
    Status st(thunderc_device_stream_create(kGpu, &streams[1]));
    REQUIRE(st.ok());
  }
  for (int i = 0; i < 4; ++i) {
    std::vector<float> y(ref.size(), -1.0f);
    CAPTURE(i);
    REQUIRE(run(m, x, &y, streams[i % 2]) == "");
    size_t bad = 0;
    for (size_t j = 0; j < y.size(); ++j)
      if (!(std::fabs(y[j] - ref[j]) <= 1e-6 + 1e-5 * std::fabs(ref[j]))) ++bad;
    CHECK(bad == 0);
    CHECK(dnn_stats().last_stream == streams[i % 2]);
  }
  const thunderc_fake_cudnn_stats_t s1 = dnn_stats();
  CHECK(s1.executes == s0.executes + 4);
  CHECK(s1.plans_finalized == s0.plans_finalized + 1);
  CHECK(s1.live_handles == s0.live_handles + 1);
  CHECK(sym<long (*)()>(so, "thunderc_test_conv_fallbacks")() == 0);
  thunderc_status_free(thunderc_device_stream_destroy(kGpu, streams[1]));
  thunderc_model_close(m);
  // Closing the model releases its cuDNN handle and plans.
  CHECK(dnn_stats().live_handles == s0.live_handles);
  CHECK(dnn_stats().live_descriptors == s0.live_descriptors);
}

TEST_CASE("cudnn end to end: without an engine the model's call falls back (its own kernel would run)") {
  setenv("THUNDERC_FAKE_CUDNN_NO_ENGINE", "1", 1);
  const std::string so = model_path("cuda_conv_model");
  thunderc_model* m = nullptr;
  Status open(thunderc_model_open(so.c_str(), nullptr, &m));
  REQUIRE_MESSAGE(open.ok(), open.message());
  std::vector<float> x(2 * 4 * 6 * 6, 0.5f), y(2 * 5 * 6 * 6);
  const long before = sym<long (*)()>(so, "thunderc_test_conv_fallbacks")();
  CHECK(run(m, x, &y, nullptr).find("conv2d fell back") != std::string::npos);
  CHECK(sym<long (*)()>(so, "thunderc_test_conv_fallbacks")() == before + 1);
  thunderc_model_close(m);
  unsetenv("THUNDERC_FAKE_CUDNN_NO_ENGINE");
}
