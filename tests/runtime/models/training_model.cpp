// A hand-written training model .so (ABI 5, what `thunderc --autograd` emits; runtime/include/thunderc/abi.h):
// y = x @ W^T + b, parameters fc.weight W [3, 4] and fc.bias b [3], float32 x [2, 4] (variant 0) or [5, 4]
// (variant 1), x compiled with --requires-grad. The forward saves x; the backward writes, in the manifest's
// gradient order, grad_x = gy @ W, grad_W = gy^T @ x and grad_b = gy summed over rows.
//
// Entries: variant 0 is thunderc_variant_0 (forward, 128 bytes of workspace) with backward thunderc_variant_1
// (256 bytes); variant 1 is thunderc_variant_2 with backward thunderc_variant_3; thunderc_variant_4 is an sgd
// update for training_optimizer_model.json (--optimizer's calling convention: W, b, their gradients, their
// momentum buffers and the hyperparameters neg_lr, momentum_now, one_minus_dampening in; W, b and the buffers
// out, the same buffers as the inputs). Every entry reads the
// parameters from its call (never from the blob) and checks the ABI's calling convention.
//
// Build switches (compile definitions), used to make broken models for the loader tests:
//   TEST_MANIFEST_FROM_ENV    embedded manifest = contents of the file named by $THUNDERC_TEST_MANIFEST
//   TEST_NO_PARAMETERS        do not export thunderc_parameters
//
// Test hooks (not part of the ABI) count the calls of each entry.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

constexpr int64_t kOut = 3, kIn = 4;

std::mutex g_mutex;
long g_calls[5] = {0, 0, 0, 0, 0};  // thunderc_variant_0 .. 4

// The parameters' initial values: fc.weight at byte 0 (48 bytes), fc.bias at byte 64 (12 bytes); 128 bytes.
struct alignas(64) Blob {
  float w[16];
  float b[16];
};
const Blob g_blob = {{-1.0f, -0.75f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f},
                     {0.5f, -1.0f, 2.0f}};

int fail(const thunderc_call* call, const std::string& msg) {
  if (call->error && call->error_capacity > 0) std::snprintf(call->error, call->error_capacity, "%s", msg.c_str());
  return 1;
}

bool is(const DLTensor* t, int64_t d0, int64_t d1 = -1) {
  const int ndim = d1 < 0 ? 1 : 2;
  if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) return false;
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) return false;
  if (t->device.device_type != kDLCPU || t->byte_offset != 0) return false;
  return t->strides == nullptr || (ndim == 1 ? t->strides[0] == 1 : (t->strides[1] == 1 && t->strides[0] == d1));
}

bool aligned(const DLTensor* t) { return reinterpret_cast<uintptr_t>(t->data) % 64 == 0; }

// Writes every byte of the workspace (a too small one shows under ASan) and checks its size.
int use_workspace(const thunderc_call* call, size_t bytes) {
  if (call->workspace_bytes != bytes || !call->workspace) return fail(call, "expected " + std::to_string(bytes) + " bytes of workspace, got " + std::to_string(call->workspace_bytes));
  if (reinterpret_cast<uintptr_t>(call->workspace) % 64 != 0) return fail(call, "workspace not 64-byte aligned");
  std::memset(call->workspace, 0x5a, bytes);
  return 0;
}

void count(int entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_calls[entry];
}

// inputs: x [rows, 4], W, b; outputs: y [rows, 3], saved x [rows, 4].
int forward(const thunderc_call* call, int entry, int64_t rows) {
  if (call->num_inputs != 3 || call->num_outputs != 2)
    return fail(call, "forward: expected 3 inputs (x, fc.weight, fc.bias) and 2 outputs (y, saved x), got " +
                          std::to_string(call->num_inputs) + " and " + std::to_string(call->num_outputs));
  const DLTensor *x = call->inputs[0], *w = call->inputs[1], *b = call->inputs[2];
  DLTensor *y = call->outputs[0], *saved = call->outputs[1];
  if (!is(x, rows, kIn) || !is(w, kOut, kIn) || !is(b, kOut)) return fail(call, "forward: bad inputs");
  if (!is(y, rows, kOut) || !is(saved, rows, kIn)) return fail(call, "forward: bad outputs");
  if (!aligned(w) || !aligned(b) || !aligned(saved)) return fail(call, "forward: runtime buffers not 64-byte aligned");
  if (call->num_threads <= 0) return fail(call, "num_threads not set");
  if (int rc = use_workspace(call, 128)) return rc;
  count(entry);
  const float* xp = static_cast<const float*>(x->data);
  const float* wp = static_cast<const float*>(w->data);
  const float* bp = static_cast<const float*>(b->data);
  float* yp = static_cast<float*>(y->data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < kOut; ++i) {
      float acc = bp[i];
      for (int64_t j = 0; j < kIn; ++j) acc += xp[r * kIn + j] * wp[i * kIn + j];
      yp[r * kOut + i] = acc;
    }
  std::memcpy(saved->data, xp, static_cast<size_t>(rows * kIn) * sizeof(float));
  return 0;
}

// inputs: W, b, saved x [rows, 4], gy [rows, 3]; outputs: grad_x [rows, 4], grad_W [3, 4], grad_b [3].
int backward(const thunderc_call* call, int entry, int64_t rows) {
  if (call->num_inputs != 4 || call->num_outputs != 3)
    return fail(call, "backward: expected 4 inputs (fc.weight, fc.bias, saved x, grad y) and 3 outputs, got " +
                          std::to_string(call->num_inputs) + " and " + std::to_string(call->num_outputs));
  const DLTensor *w = call->inputs[0], *b = call->inputs[1], *x = call->inputs[2], *gy = call->inputs[3];
  DLTensor *gx = call->outputs[0], *gw = call->outputs[1], *gb = call->outputs[2];
  if (!is(w, kOut, kIn) || !is(b, kOut) || !is(x, rows, kIn) || !is(gy, rows, kOut))
    return fail(call, "backward: bad inputs");
  if (!is(gx, rows, kIn) || !is(gw, kOut, kIn) || !is(gb, kOut)) return fail(call, "backward: bad outputs");
  if (!aligned(w) || !aligned(b) || !aligned(x)) return fail(call, "backward: runtime buffers not 64-byte aligned");
  if (int rc = use_workspace(call, 256)) return rc;
  const float* wp = static_cast<const float*>(w->data);
  const float* xp = static_cast<const float*>(x->data);
  const float* gyp = static_cast<const float*>(gy->data);
  for (int64_t k = 0; k < rows * kOut; ++k)
    if (std::isnan(gyp[k])) return fail(call, "grad y contains NaN at flat index " + std::to_string(k));
  count(entry);
  float* gxp = static_cast<float*>(gx->data);
  float* gwp = static_cast<float*>(gw->data);
  float* gbp = static_cast<float*>(gb->data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kIn; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < kOut; ++i) acc += gyp[r * kOut + i] * wp[i * kIn + j];
      gxp[r * kIn + j] = acc;
    }
  for (int64_t i = 0; i < kOut; ++i) {
    for (int64_t j = 0; j < kIn; ++j) {
      float acc = 0;
      for (int64_t r = 0; r < rows; ++r) acc += gyp[r * kOut + i] * xp[r * kIn + j];
      gwp[i * kIn + j] = acc;
    }
    float acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += gyp[r * kOut + i];
    gbp[i] = acc;
  }
  return 0;
}

}  // namespace

EXPORT uint32_t thunderc_abi_version(void) { return THUNDERC_ABI_VERSION; }

EXPORT const char* thunderc_embedded_manifest(size_t* len) {
#ifdef TEST_MANIFEST_FROM_ENV
  static std::string text;
  text.clear();
  if (const char* path = std::getenv("THUNDERC_TEST_MANIFEST")) {
    if (FILE* f = std::fopen(path, "rb")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
  }
  *len = text.size();
  return text.data();
#else
  return reinterpret_cast<const char*>(thunderc_test_manifest_bytes(len));
#endif
}

#ifndef TEST_NO_PARAMETERS
EXPORT const unsigned char* thunderc_parameters(size_t* len) {
  *len = sizeof g_blob;
  return reinterpret_cast<const unsigned char*>(&g_blob);
}
#endif

EXPORT int32_t thunderc_variant_0(const thunderc_call* call) { return forward(call, 0, 2); }
EXPORT int32_t thunderc_variant_1(const thunderc_call* call) { return backward(call, 1, 2); }
EXPORT int32_t thunderc_variant_2(const thunderc_call* call) { return forward(call, 2, 5); }
EXPORT int32_t thunderc_variant_3(const thunderc_call* call) { return backward(call, 3, 5); }

// sgd with momentum, in place: buf = momentum_now == 0 ? g : buf * momentum_now + (1 - dampening) * g; p += neg_lr * buf.
EXPORT int32_t thunderc_variant_4(const thunderc_call* call) {
  if (call->num_inputs != 9 || call->num_outputs != 4)
    return fail(call, "optimizer: expected 9 inputs and 4 outputs, got " + std::to_string(call->num_inputs) + " and " +
                          std::to_string(call->num_outputs));
  const DLTensor* const* in = call->inputs;
  if (!is(in[0], kOut, kIn) || !is(in[1], kOut) || !is(in[2], kOut, kIn) || !is(in[3], kOut) || !is(in[4], kOut, kIn) ||
      !is(in[5], kOut))
    return fail(call, "optimizer: bad parameters, gradients or buffers");
  for (int k = 6; k < 9; ++k)
    if (in[k]->ndim != 0 || in[k]->dtype.code != kDLFloat || in[k]->dtype.bits != 32)
      return fail(call, "optimizer: hyperparameter " + std::to_string(k - 6) + " is not a float32 scalar");
  // In place: each output is its input's buffer.
  if (call->outputs[0]->data != in[0]->data || call->outputs[1]->data != in[1]->data ||
      call->outputs[2]->data != in[4]->data || call->outputs[3]->data != in[5]->data)
    return fail(call, "optimizer: outputs are not the inputs' buffers");
  const float neg_lr = *static_cast<const float*>(in[6]->data), now = *static_cast<const float*>(in[7]->data),
              keep = *static_cast<const float*>(in[8]->data);
  count(4);
  for (int t = 0; t < 2; ++t) {
    float* p = static_cast<float*>(in[t]->data);
    const float* g = static_cast<const float*>(in[2 + t]->data);
    float* buf = static_cast<float*>(in[4 + t]->data);
    const int64_t n = t == 0 ? kOut * kIn : kOut;
    for (int64_t i = 0; i < n; ++i) {
      buf[i] = now == 0 ? g[i] : buf[i] * now + keep * g[i];
      p[i] += neg_lr * buf[i];
    }
  }
  return 0;
}

// ---- test hooks ----
EXPORT long thunderc_test_training_calls(int entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls[entry];
}
