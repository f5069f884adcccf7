// What the fake CUDA libraries (tests/runtime/fake_cuda, loaded by the runtime through LD_LIBRARY_PATH) have
// run so far in this process.
#pragma once

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdint>

#include "fake_cuda.h"
#include "fake_cudnn.h"

namespace fake_libs {

// A snapshot of the counters a fake library (already loaded by the runtime, else none) exports as `symbol`.
template <class Stats>
Stats stats_of(const char* library, const char* symbol) {
  Stats st{};
  void* lib = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return st;  // not loaded yet: nothing ran
  auto fn = reinterpret_cast<void (*)(Stats*)>(dlsym(lib, symbol));
  REQUIRE(reinterpret_cast<void*>(fn) != nullptr);
  fn(&st);
  dlclose(lib);
  return st;
}

// cublasLtMatmul calls the fake cuBLASLt has run.
inline uint64_t cublaslt_matmuls() {
  return stats_of<thunderc_fake_cublaslt_stats_t>("libcublasLt.so.13", "thunderc_fake_cublaslt_stats").matmuls;
}

// cudnnBackendExecute calls the fake cuDNN has computed.
inline uint64_t cudnn_executes() {
  return stats_of<thunderc_fake_cudnn_stats_t>("libcudnn.so.9", "thunderc_fake_cudnn_stats").executes;
}

// The fake driver's counters.
inline thunderc_fake_cuda_stats_t driver_stats() {
  return stats_of<thunderc_fake_cuda_stats_t>("libcuda.so.1", "thunderc_fake_cuda_stats");
}

}  // namespace fake_libs
