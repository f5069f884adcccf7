// The one file of the CLI that talks to LibTorch directly (through its small CUDA header only): it tells
// the executor registry, which stays LibTorch-free, whether this LibTorch can run on CUDA.
#include <torch/cuda.h>

#include "cli/torch_support.h"
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
  Availability driver = probe_cuda_driver();
  set_torch_cuda_support(false, driver.available ? "LibTorch was built without CUDA" : driver.reason);
}

}  // namespace thunderc
