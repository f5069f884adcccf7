// A hand-written CUDA model .so implementing ABI 2 (runtime/include/thunderc/abi.h) the way thunderc's code
// generator does for CUDA: y = x * w[0] + w[1] and rowsum = x.sum(1), with the weights blob w = {2, 1} (so
// y = 2x + 1, as in test_model.cpp), for float32 x of shape [2, 3] on CUDA (variant 0: kernels affine and
// rowsum), [4, 3] on CUDA (variant 1: affine into the workspace, a device-to-device copy to y, rowsum) and
// [2, 3] on the CPU (variant 2). Manifest: cuda_model.json. Its kernels run under the fake driver
// (tests/runtime/fake_cuda) from cuda_test_kernels.cpp; the "images" are stand-ins: a cubin for sm_90 (ELF
// magic plus the fake driver's arch marker) and PTX for compute_80.
//
// Build switches (compile definitions):
//   TEST_CUDA_NO_MODULE       do not export thunderc_cuda_module (the runtime must refuse the model)
//   TEST_CUDA_EXTRA_KERNEL    list a kernel the kernel library does not have ("layernorm_missing")
//   TEST_CUDA_BAD_PTX         the PTX asks the fake driver for a JIT error (to test the JIT log)
//
// Test hooks (not part of the ABI): a launch mode that makes the entries launch badly, and what the calls saw.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

const float kWeights[2] = {2.0f, 1.0f};

enum Kernel : uint32_t { kAffine = 0, kRowsum = 1 };

std::atomic<int> g_mode{0};  // 0 normal; 1 block of 2048 threads; 2 kernel index 7; 3 64 KiB shared; 4 300 KiB
std::mutex g_mutex;
std::set<std::pair<void*, void*>> g_stream_workspace;  // (stream, workspace) of variant-1 calls
std::set<const void*> g_weights;
long g_calls = 0;

int fail(const thunderc_call* call, const std::string& msg) {
  if (call->error && call->error_capacity > 0) std::snprintf(call->error, call->error_capacity, "%s", msg.c_str());
  return 1;
}

bool on(const DLTensor* t, DLDevice d) { return t->device.device_type == d.device_type && t->device.device_id == d.device_id; }

int launch(const thunderc_call* call, uint32_t kernel, uint32_t blocks, uint32_t threads, void** args) {
  const thunderc_device_api* api = call->device_api;
  uint32_t grid[3] = {blocks, 1, 1}, block[3] = {threads, 1, 1};
  uint32_t shared = 0;
  switch (g_mode.load()) {
    case 1: block[0] = 2048; break;
    case 2: kernel = 7; break;
    case 3: shared = 64 * 1024; break;
    case 4: shared = 300 * 1024; break;
  }
  return api->launch(api->context, kernel, grid, block, shared, args, call->error, call->error_capacity);
}

int run_cuda(const thunderc_call* call, int variant, int64_t rows) {
  if (call->num_inputs != 1 || call->num_outputs != 2) return fail(call, "bad argument counts");
  if (call->device.device_type != kDLCUDA) return fail(call, "call->device is not a CUDA device");
  const thunderc_device_api* api = call->device_api;
  if (!api || api->struct_size < sizeof(thunderc_device_api) || !api->launch || !api->copy)
    return fail(call, "no device_api");
  if (call->weights == nullptr) return fail(call, "no weights on the device");
  const DLTensor* x = call->inputs[0];
  DLTensor* y = call->outputs[0];
  DLTensor* s = call->outputs[1];
  if (!on(x, call->device) || !on(y, call->device) || !on(s, call->device))
    return fail(call, "runtime passed tensors that are not on call->device");
  if (x->ndim != 2 || x->shape[0] != rows || x->shape[1] != 3 || y->shape[0] != rows || s->shape[0] != rows)
    return fail(call, "runtime passed tensors that violate the manifest");
  if (variant == 1) {
    if (!call->workspace || call->workspace_bytes != 4096) return fail(call, "missing workspace");
  } else if (call->workspace || call->workspace_bytes) {
    return fail(call, "unexpected workspace");
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_calls;
    g_weights.insert(call->weights);
    if (variant == 1) g_stream_workspace.insert({call->stream, call->workspace});
  }
  long long n = rows * 3, r = rows, c = 3;
  const void* xp = x->data;
  void* yp = variant == 1 ? call->workspace : y->data;
  void* sp = s->data;
  const void* wp = call->weights;
  void* affine_args[] = {&xp, &yp, &wp, &n};
  const uint32_t threads = 4;  // several blocks even for 6 elements: the emulated grid must cover them all
  if (int rc = launch(call, kAffine, static_cast<uint32_t>((n + threads - 1) / threads), threads, affine_args)) return rc;
  if (variant == 1) {
    if (int rc = api->copy(api->context, y->data, call->workspace, static_cast<size_t>(n) * sizeof(float), call->error,
                           call->error_capacity))
      return rc;
  }
  void* rowsum_args[] = {&xp, &sp, &r, &c};
  return launch(call, kRowsum, 1, static_cast<uint32_t>(rows), rowsum_args);
}

int run_cpu(const thunderc_call* call) {
  if (call->device.device_type != kDLCPU || call->device_api || call->weights || call->stream)
    return fail(call, "a CPU variant got CUDA fields");
  const float* x = static_cast<const float*>(call->inputs[0]->data);
  float* y = static_cast<float*>(call->outputs[0]->data);
  float* s = static_cast<float*>(call->outputs[1]->data);
  for (int r = 0; r < 2; ++r) {
    s[r] = 0;
    for (int c = 0; c < 3; ++c) {
      y[r * 3 + c] = x[r * 3 + c] * kWeights[0] + kWeights[1];
      s[r] += x[r * 3 + c];
    }
  }
  return 0;
}

// Stand-in images.
const unsigned char kCubin90[] = "\x7f" "ELFthunderc-fake-arch=sm_90";
const char kPtx80[] =
    "//\n// thunderc test PTX (not real PTX: the fake driver only reads .target)\n//\n"
    ".version 8.0\n.target sm_80\n.address_size 64\n"
#ifdef TEST_CUDA_BAD_PTX
    "// THUNDERC_FAKE_JIT_ERROR\n"
#endif
    ;
const thunderc_cuda_image kImages[] = {
    {"sm_90", THUNDERC_CUDA_CUBIN, kCubin90, sizeof kCubin90},
    {"compute_80", THUNDERC_CUDA_PTX, reinterpret_cast<const unsigned char*>(kPtx80), sizeof kPtx80 - 1},
};
const char* const kKernelNames[] = {
    "affine", "rowsum",
#ifdef TEST_CUDA_EXTRA_KERNEL
    "layernorm_missing",
#endif
};

}  // namespace

EXPORT uint32_t thunderc_abi_version(void) { return THUNDERC_ABI_VERSION; }
EXPORT const char* thunderc_embedded_manifest(size_t* len) {
  return reinterpret_cast<const char*>(thunderc_test_manifest_bytes(len));
}
EXPORT int32_t thunderc_cuda_variant_0(const thunderc_call* call) { return run_cuda(call, 0, 2); }
EXPORT int32_t thunderc_cuda_variant_1(const thunderc_call* call) { return run_cuda(call, 1, 4); }
EXPORT int32_t thunderc_cpu_variant_2(const thunderc_call* call) { return run_cpu(call); }

#ifndef TEST_CUDA_NO_MODULE
// abi.h's typedef thunderc_cuda_module takes the name, so the exported function gets it through an asm label.
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) __asm__("thunderc_cuda_module");
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) {
  static const thunderc_cuda_module m = {
      sizeof(thunderc_cuda_module),
      sizeof kImages / sizeof kImages[0],
      kImages,
      sizeof kKernelNames / sizeof kKernelNames[0],
      kKernelNames,
      reinterpret_cast<const unsigned char*>(kWeights),
      sizeof kWeights,
  };
  return &m;
}
#endif

// ---- test hooks ----
EXPORT void thunderc_test_cuda_set_mode(int mode) { g_mode.store(mode); }
EXPORT void thunderc_test_cuda_reset(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stream_workspace.clear();
  g_weights.clear();
  g_calls = 0;
}
EXPORT long thunderc_test_cuda_calls(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls;
}
// Distinct workspaces variant-1 calls got, over all streams or (any_stream == 0) on `stream` only.
EXPORT size_t thunderc_test_cuda_workspaces(void* stream, int any_stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::set<void*> ws;
  for (const auto& [s, w] : g_stream_workspace)
    if (any_stream || s == stream) ws.insert(w);
  return ws.size();
}
EXPORT size_t thunderc_test_cuda_distinct_weights(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_weights.size();
}
