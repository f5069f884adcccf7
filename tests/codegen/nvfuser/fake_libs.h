// What the fake CUDA libraries (tests/runtime/fake_cuda, loaded by the runtime through LD_LIBRARY_PATH) have
// run so far in this process.
#pragma once

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdint>

#include "fake_cuda.h"
#include "fake_cudnn.h"

namespace fake_libs {

// cublasLtMatmul calls the fake cuBLASLt has run (0 before the runtime first loads it).
inline uint64_t cublaslt_matmuls() {
  void* lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return 0;
  auto fn = reinterpret_cast<thunderc_fake_cublaslt_stats_fn>(dlsym(lib, "thunderc_fake_cublaslt_stats"));
  REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
  thunderc_fake_cublaslt_stats_t st{};
  fn(&st);
  dlclose(lib);
  return st.matmuls;
}

// cudnnBackendExecute calls the fake cuDNN has computed (0 before the runtime first loads it).
inline uint64_t cudnn_executes() {
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return 0;
  auto fn = reinterpret_cast<thunderc_fake_cudnn_stats_fn>(dlsym(lib, "thunderc_fake_cudnn_stats"));
  REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
  thunderc_fake_cudnn_stats_t st{};
  fn(&st);
  dlclose(lib);
  return st.executes;
}

// The fake driver's counters.
inline thunderc_fake_cuda_stats_t driver_stats() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);
  auto fn = reinterpret_cast<thunderc_fake_cuda_stats_fn>(dlsym(lib, "thunderc_fake_cuda_stats"));
  REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
  thunderc_fake_cuda_stats_t st{};
  fn(&st);
  dlclose(lib);
  return st;
}

}  // namespace fake_libs
