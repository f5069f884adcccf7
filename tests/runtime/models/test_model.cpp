// A hand-written model .so implementing the generated-code ABI (runtime/include/thunderc/abi.h) the way
// thunderc's code generator does: y = 2*x + 1 and rowsum = x.sum(1) for float32 x of shape [2, 3]
// (variant 0, no workspace) or [4, 3] (variant 1, 4096 bytes of workspace used as scratch).
//
// Build switches (compile definitions), used to make broken models for the loader tests:
//   TEST_ABI_VERSION=N        report ABI version N
//   TEST_OMIT_VARIANT_1       do not export thunderc_variant_1
//   TEST_MANIFEST_FROM_ENV    embedded manifest = contents of the file named by $THUNDERC_TEST_MANIFEST
//   TEST_NO_ABI               export none of the ABI symbols (a plain shared library)
//   TEST_CUDA_MODULE          also export a (kernel-less) thunderc_cuda_module, so that the manifest may put
//                             variants on CUDA (the runtime refuses CUDA variants without one)
//
// Test hooks (not part of the ABI) let tests observe dispatch and workspace reuse.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

#ifndef TEST_ABI_VERSION
#define TEST_ABI_VERSION THUNDERC_ABI_VERSION
#endif

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

std::mutex g_mutex;
std::set<void*> g_workspaces;
long g_calls[2] = {0, 0};

int fail(const thunderc_call* call, const std::string& msg) {
  if (call->error && call->error_capacity > 0) {
    std::snprintf(call->error, call->error_capacity, "%s", msg.c_str());
  }
  return 1;
}

[[maybe_unused]] int run(const thunderc_call* call, int variant, int64_t rows) {
  if (call->num_inputs != 1 || call->num_outputs != 2) return fail(call, "bad argument counts");
  const DLTensor* x = call->inputs[0];
  DLTensor* y = call->outputs[0];
  DLTensor* s = call->outputs[1];
  if (x->ndim != 2 || x->shape[0] != rows || x->shape[1] != 3 || x->byte_offset != 0)
    return fail(call, "runtime passed an input that violates the guards");
  if (y->ndim != 2 || y->shape[0] != rows || s->ndim != 1 || s->shape[0] != rows || y->byte_offset != 0)
    return fail(call, "runtime passed outputs that violate the manifest");
  if (call->num_threads <= 0) return fail(call, "num_threads not set");
  const float* xp = static_cast<const float*>(x->data);
  float* yp = static_cast<float*>(y->data);
  float* sp = static_cast<float*>(s->data);

  float* scratch = nullptr;
  if (variant == 1) {
    if (!call->workspace || call->workspace_bytes != 4096) return fail(call, "missing workspace");
    if (reinterpret_cast<uintptr_t>(call->workspace) % 64 != 0) return fail(call, "workspace not 64-byte aligned");
    scratch = static_cast<float*>(call->workspace);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_workspaces.insert(call->workspace);
  } else if (call->workspace != nullptr || call->workspace_bytes != 0) {
    return fail(call, "unexpected workspace");
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_calls[variant];
  }
  for (int64_t i = 0; i < rows * 3; ++i)
    if (std::isnan(xp[i])) return fail(call, "x contains NaN at flat index " + std::to_string(i));
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (int64_t c = 0; c < 3; ++c) {
      const float v = xp[r * 3 + c];
      // Variant 1 goes through the workspace, so a workspace shared by two calls would corrupt results.
      float t = 2.0f * v + 1.0f;
      if (scratch) {
        scratch[r * 3 + c] = t;
        t = scratch[r * 3 + c];
      }
      yp[r * 3 + c] = t;
      acc += v;
    }
    if (scratch) {
      scratch[512 + r] = acc;
      acc = scratch[512 + r];
    }
    sp[r] = acc;
  }
  return 0;
}

}  // namespace

#ifndef TEST_NO_ABI
EXPORT uint32_t thunderc_abi_version(void) { return TEST_ABI_VERSION; }

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

EXPORT int32_t thunderc_variant_0(const thunderc_call* call) { return run(call, 0, 2); }
#ifndef TEST_OMIT_VARIANT_1
EXPORT int32_t thunderc_variant_1(const thunderc_call* call) { return run(call, 1, 4); }
#endif
#ifdef TEST_CUDA_MODULE
// abi.h's typedef thunderc_cuda_module takes the name, so the exported function gets it through an asm label.
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) __asm__("thunderc_cuda_module");
EXPORT const thunderc_cuda_module* thunderc_test_cuda_module(void) {
  static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n";
  static const thunderc_cuda_image image = {"compute_80", THUNDERC_CUDA_PTX,
                                            reinterpret_cast<const unsigned char*>(ptx), sizeof ptx - 1};
  static const thunderc_cuda_module m = {sizeof(thunderc_cuda_module), 1, &image, 0, nullptr, nullptr, 0};
  return &m;
}
#endif
#endif  // TEST_NO_ABI

// ---- test hooks ----
EXPORT long thunderc_test_calls(int variant) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls[variant];
}
EXPORT size_t thunderc_test_distinct_workspaces(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_workspaces.size();
}
EXPORT void thunderc_test_reset(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_workspaces.clear();
  g_calls[0] = g_calls[1] = 0;
}
