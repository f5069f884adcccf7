// The model .so the fuzz_run target opens (fuzz/models/fuzz_model.json is its manifest, embedded
// byte-for-byte as the tests' models do it). It implements the generated-code ABI
// (runtime/include/thunderc/abi.h) for two inputs, x: float32 and k: int64, and two outputs:
//   variant 0: x [2, 3], k []  -> y [2, 3], n []          (fixed sizes, no workspace)
//   variant 1: x [B, C], k [B] -> y [B, 2C+1], n []       (B in 1..8, C in 2..5, 256 bytes of workspace;
//              a bounded variant: x finite with |x| <= 1024, its guard's finite_max_abs)
// Unlike a generated model it trusts nothing: every call re-checks what the ABI promises (the runtime has
// already checked the guards: dtypes, shapes, device, contiguity, byte_offset folded into data) and aborts
// when the runtime broke a promise, so that libFuzzer reports it. It reads every input element and writes
// every output element, so an input or output buffer smaller than its shape says is an AddressSanitizer
// report (the fuzz target allocates each buffer exactly). Loads go through memcpy: the runtime accepts
// CPU tensors at any alignment.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "thunderc/abi.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

extern "C" const unsigned char* thunderc_test_manifest_bytes(size_t* len);  // generated from the .json

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_model: the runtime broke the ABI's promise: %s\n", what);
  std::abort();
}

bool dense(const DLTensor* t) {
  if (!t->strides) return true;
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expected) return false;
    expected *= t->shape[d];
  }
  return true;
}

void check(const DLTensor* t, uint8_t code, uint8_t bits, int ndim, const int64_t* shape, const char* what) {
  if (!t) broken(what);
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) broken(what);
  if (t->ndim != ndim) broken(what);
  if (t->device.device_type != kDLCPU || t->device.device_id != 0) broken(what);
  if (t->byte_offset != 0) broken(what);
  for (int d = 0; d < ndim; ++d)
    if (t->shape[d] != shape[d]) broken(what);
  if (!dense(t)) broken(what);
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  if (n > 0 && !t->data) broken(what);
}

int32_t run(const thunderc_call* call, int64_t B, int64_t C, size_t workspace) {
  if (!call || call->num_inputs != 2 || call->num_outputs != 2) broken("argument counts");
  if (call->workspace_bytes != workspace || (workspace && !call->workspace)) broken("workspace");
  if (call->workspace && reinterpret_cast<uintptr_t>(call->workspace) % 64 != 0) broken("workspace alignment");
  if (call->device.device_type != kDLCPU || call->device_api || call->weights) broken("call device");
  const DLTensor* x = call->inputs[0];
  const DLTensor* k = call->inputs[1];
  // Variant 0's k is a scalar; variant 1's is [B].
  const int64_t xs[2] = {B, C}, ks[1] = {B};
  check(x, kDLFloat, 32, 2, xs, "input x");
  check(k, kDLInt, 64, workspace ? 1 : 0, ks, "input k");
  const int64_t W = workspace ? 2 * C + 1 : C;
  const int64_t ys[2] = {B, W};
  check(call->outputs[0], kDLFloat, 32, 2, ys, "output y");
  check(call->outputs[1], kDLInt, 64, 0, ys, "output n");
  if (workspace) std::memset(call->workspace, 0xab, workspace);

  const char* xp = static_cast<const char*>(x->data);
  const char* kp = static_cast<const char*>(k->data);
  char* yp = static_cast<char*>(call->outputs[0]->data);
  int64_t total = 0;
  const int64_t kn = workspace ? B : 1;
  for (int64_t i = 0; i < kn; ++i) {
    int64_t v;
    std::memcpy(&v, kp + i * 8, 8);
    total += v & 0xff;
  }
  for (int64_t r = 0; r < B; ++r)
    for (int64_t c = 0; c < W; ++c) {
      float v = 0;
      if (c < C) std::memcpy(&v, xp + (r * C + c) * 4, 4);
      if (workspace && !(v >= -1024.0f && v <= 1024.0f)) broken("variant 1's value guard (finite, |x| <= 1024)");
      v = v * 2 + 1;
      std::memcpy(yp + (r * W + c) * 4, &v, 4);
    }
  std::memcpy(call->outputs[1]->data, &total, 8);
  return 0;
}

}  // namespace

EXPORT uint32_t thunderc_abi_version(void) { return THUNDERC_ABI_VERSION; }
EXPORT const char* thunderc_embedded_manifest(size_t* len) {
  return reinterpret_cast<const char*>(thunderc_test_manifest_bytes(len));
}
EXPORT int32_t thunderc_variant_0(const thunderc_call* call) { return run(call, 2, 3, 0); }
EXPORT int32_t thunderc_variant_1(const thunderc_call* call) {
  // B and C are the call's own sizes (the runtime has bound and range-checked them).
  const DLTensor* x = call && call->num_inputs == 2 ? call->inputs[0] : nullptr;
  if (!x || x->ndim != 2 || !x->shape) broken("input x of variant 1");
  const int64_t B = x->shape[0], C = x->shape[1];
  if (B < 1 || B > 8 || C < 2 || C > 5) broken("variant 1's symbols out of range");
  return run(call, B, C, 256);
}
