// The one file of the CLI that talks to LibTorch directly (through its small CUDA header only): it tells
// the executor registry, which stays LibTorch-free, whether this LibTorch can run on CUDA.
#include "cli/torch_support.h"

#if !THUNDERC_WITH_LIBTORCH
namespace thunderc {
// No LibTorch: the registry reports torch unavailable on every device by itself (core/executors/registry.cpp).
void report_torch_cuda_support() {}
}  // namespace thunderc
#else

#include <dlfcn.h>
#include <torch/cuda.h>

#include "core/executors/executor.h"
#include "core/executors/probe.h"

namespace thunderc {

void report_torch_cuda_support() {
  bool has_cuda = false;
  try {
    has_cuda = torch::cuda::is_available();
  } catch (...) {
    has_cuda = false;
  }
  if (has_cuda) {
    set_torch_cuda_support(true);
    return;
  }
  // A LibTorch built with CUDA has libtorch_cuda.so among thunderc's loaded libraries; without it the driver
  // does not matter.
  void* torch_cuda = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (!torch_cuda) {
    set_torch_cuda_support(false, "the LibTorch thunderc links was built without CUDA");
    return;
  }
  dlclose(torch_cuda);
  Availability driver = probe_cuda_driver();
  set_torch_cuda_support(false, driver.available ? "LibTorch finds no usable CUDA device" : driver.reason);
}

}  // namespace thunderc

#endif  // THUNDERC_WITH_LIBTORCH
