// The CUDA libraries a model's library calls go through (thunderc_device_api.gemm / .conv2d, ABI 3; .sdpa,
// ABI 4): cuBLASLt (cublaslt.cpp) and cuDNN's graph API (cudnn.cpp). Both are reached through dlopen at the first
// call that needs them, never linked, so the runtime and every model load on machines without them; a
// library that is missing or cannot run a problem answers THUNDERC_DEVICE_API_FALLBACK and the generated
// code runs its own kernel instead.
//
// Per (model, device) each library keeps one handle and one plan per library-call id (the id is unique
// within a model), built at the first call of that id on that device and reused by every later call, on
// any stream: building a plan (heuristics, engine choice) may allocate and synchronize, so it must never
// happen inside a CUDA-graph capture — the runtime's first, uncaptured call builds them all.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "internal.hpp"

namespace thunderc::rt {

// What one library call runs with: the call's device, stream and a scratch area for the library
// (kLibWorkspaceBytes, lent to this call alone; the library must not use more).
struct LibCall {
  int ordinal = 0;
  cu::CUstream stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Scratch each library call may use (cuBLASLt asks for 32 MiB on Hopper; cuDNN engines needing more are
// skipped when plans are chosen).
inline constexpr size_t kLibWorkspaceBytes = size_t{32} << 20;

// ---- cuBLASLt (cublaslt.cpp) ----
class CublasLtDevice;  // one per (model, device): the handle and the plans by id
struct CublasLtDeviceDeleter {
  void operator()(CublasLtDevice* p) const noexcept;
};
using CublasLtDevicePtr = std::unique_ptr<CublasLtDevice, CublasLtDeviceDeleter>;
// Never throws for a missing library: the device then answers FALLBACK to every call.
CublasLtDevicePtr make_cublaslt_device(int ordinal);
// The context of `call.ordinal` is current. Returns 0, THUNDERC_DEVICE_API_FALLBACK or an error (a message
// naming the operation in `error`).
int32_t cublaslt_gemm(CublasLtDevice& dev, const LibCall& call, const thunderc_gemm* op, void* d, const void* a,
                      const void* b, const void* bias, char* error, size_t error_capacity) noexcept;

// ---- cuDNN (cudnn.cpp) ----
class CudnnDevice;
struct CudnnDeviceDeleter {
  void operator()(CudnnDevice* p) const noexcept;
};
using CudnnDevicePtr = std::unique_ptr<CudnnDevice, CudnnDeviceDeleter>;
CudnnDevicePtr make_cudnn_device(int ordinal);
int32_t cudnn_conv2d(CudnnDevice& dev, const LibCall& call, const thunderc_conv2d* op, void* y, const void* x,
                     const void* w, const void* bias, const void* residual, char* error,
                     size_t error_capacity) noexcept;
// Fused attention (cuDNN's flash-attention engines): FALLBACK for float32, head dims cuDNN does not take (not
// a multiple of 8, above 128), mask strides not a multiple of 8 elements, or no engine; an error for an
// invalid operation (naming it).
int32_t cudnn_sdpa(CudnnDevice& dev, const LibCall& call, const thunderc_sdpa* op, void* o, const void* q,
                   const void* k, const void* v, const void* mask, char* error, size_t error_capacity) noexcept;

// What cuDNN loaded as ("libcudnn.so.9 (cuDNN 9.19.0)"), or why not ("not found: ..."); loads it if needed.
std::string cudnn_library_text();

}  // namespace thunderc::rt
