// A hand-written CUDA model .so (ABI 3) whose one variant is a single library call, the way generated code uses
// device_api.conv2d: y = relu(conv2d(x, w, pad 1) + bias) for float32 x [2, 4, 6, 6] on CUDA, w [5, 4, 3, 3] and
// bias [5] in the weights blob (w at offset 0, bias at offset 720: both 16-byte aligned on the device).
// Manifest: cuda_conv_model.json. It carries no kernel of its own: where generated code would run its fallback
// kernel, this model fails with "conv2d fell back" and counts it, so tests see which path ran.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

constexpr int kK = 5, kC = 4, kR = 3;
constexpr int kWeightCount = kK * kC * kR * kR;  // 180 floats: 720 bytes

struct Weights {
  float w[kWeightCount];
  float bias[kK];
};

const Weights& weights() {
  static const Weights blob = [] {
    Weights b{};
    for (int i = 0; i < kWeightCount; ++i) b.w[i] = static_cast<float>(std::cos(0.37 * i)) / 6.0f;
    for (int k = 0; k < kK; ++k) b.bias[k] = 0.2f * static_cast<float>(k) - 0.4f;
    return b;
  }();
  return blob;
}

std::atomic<long> g_fallbacks{0};

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

EXPORT int32_t thunderc_cuda_conv_variant_0(const thunderc_call* call) {
  const thunderc_device_api* api = call->device_api;
  if (!api || api->struct_size < sizeof(thunderc_device_api) || !api->conv2d) return fail(call, "no device_api.conv2d");
  thunderc_conv2d op{};
  op.struct_size = sizeof op;
  op.id = 0;
  op.dtype = THUNDERC_LIB_FLOAT32;
  op.math = THUNDERC_LIB_MATH_FP32;
  op.activation = THUNDERC_LIB_ACT_RELU;
  op.has_bias = 1;
  op.n = 2, op.c = kC, op.h = 6, op.w = 6, op.k = kK, op.r = kR, op.s = kR, op.oh = 6, op.ow = 6;
  op.stride_h = op.stride_w = 1, op.pad_h = op.pad_w = 1, op.dil_h = op.dil_w = 1, op.groups = 1;
  const auto* blob = static_cast<const unsigned char*>(call->weights);
  const int32_t r = api->conv2d(api->context, &op, call->outputs[0]->data, call->inputs[0]->data, blob,
                                blob + offsetof(Weights, bias), nullptr, call->error, call->error_capacity);
  if (r == THUNDERC_DEVICE_API_FALLBACK) {
    ++g_fallbacks;
    return fail(call, "conv2d fell back");  // generated code would launch its own kernel here
  }
  return r;
}

EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) __asm__("thunderc_cuda_module");
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) {
  static const thunderc_cuda_module m = {
      sizeof(thunderc_cuda_module), 1, kImages, 0, nullptr,
      reinterpret_cast<const unsigned char*>(&weights()), sizeof(Weights)};
  return &m;
}

// ---- test hooks ----
EXPORT long thunderc_test_conv_fallbacks(void) { return g_fallbacks.load(); }
EXPORT const float* thunderc_test_conv_weights(void) { return weights().w; }
EXPORT const float* thunderc_test_conv_bias(void) { return weights().bias; }
