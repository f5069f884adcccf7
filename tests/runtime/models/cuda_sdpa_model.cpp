// A hand-written CUDA model .so (ABI 4) whose one variant is a single device_api.sdpa call, the way generated code
// uses it: O = sdpa(Q, K, V, mask) for float16 q [2, 3, 16, 32], k [2, 3, 24, 32], v [2, 3, 24, 16] and an
// additive mask [2, 3, 16, 24] on CUDA, o [2, 3, 16, 16]. Manifest: cuda_sdpa_model.json.
//
// The operation it passes is the test's: thunderc_test_sdpa_set_op() replaces it (so a test may ask for bfloat16
// data in the same 16-bit buffers, a broadcast mask, causal, float32, a bad struct_size, ...). It carries no
// kernel of its own: where generated code would run its fallback kernel, it fails with "sdpa fell back" and
// counts it.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

std::atomic<long> g_fallbacks{0};
std::mutex g_mutex;
thunderc_sdpa g_op = [] {
  thunderc_sdpa op{};
  op.struct_size = sizeof op;
  op.id = 0;
  op.dtype = THUNDERC_LIB_FLOAT16;
  op.batch = 2, op.heads = 3, op.sq = 16, op.skv = 24, op.d = 32, op.dv = 16;
  op.scale = 1.0 / std::sqrt(32.0);
  return op;
}();

int fail(const thunderc_call* call, const char* msg) {
  if (call->error && call->error_capacity > 0) std::snprintf(call->error, call->error_capacity, "%s", msg);
  return 1;
}

const unsigned char kCubin90[] = "\x7f" "ELFthunderc-fake-arch=sm_90";
const thunderc_cuda_image kImages[] = {{"sm_90", THUNDERC_CUDA_CUBIN, kCubin90, sizeof kCubin90}};

}  // namespace

EXPORT uint32_t thunderc_abi_version(void) { return THUNDERC_ABI_VERSION; }
EXPORT const char* thunderc_embedded_manifest(size_t* len) {
  return reinterpret_cast<const char*>(thunderc_test_manifest_bytes(len));
}

EXPORT int32_t thunderc_cuda_sdpa_variant_0(const thunderc_call* call) {
  const thunderc_device_api* api = call->device_api;
  if (!api || api->struct_size < sizeof(thunderc_device_api) || !api->sdpa) return fail(call, "no device_api.sdpa");
  thunderc_sdpa op;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    op = g_op;
  }
  const int32_t r = api->sdpa(api->context, &op, call->outputs[0]->data, call->inputs[0]->data, call->inputs[1]->data,
                              call->inputs[2]->data, op.has_mask ? call->inputs[3]->data : nullptr, call->error,
                              call->error_capacity);
  if (r == THUNDERC_DEVICE_API_FALLBACK) {
    ++g_fallbacks;
    return fail(call, "sdpa fell back");  // generated code would launch its own kernel here
  }
  return r;
}

EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) __asm__("thunderc_cuda_module");
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) {
  static const thunderc_cuda_module m = {sizeof(thunderc_cuda_module), 1, kImages, 0, nullptr, nullptr, 0};
  return &m;
}

// ---- test hooks ----
EXPORT long thunderc_test_sdpa_fallbacks(void) { return g_fallbacks.load(); }
EXPORT void thunderc_test_sdpa_set_op(const thunderc_sdpa* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_op = *op;
}
EXPORT void thunderc_test_sdpa_get_op(thunderc_sdpa* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *op = g_op;
}
