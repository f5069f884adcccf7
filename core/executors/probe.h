// Run-time probes for the libraries executors need, through dlopen only (nothing here links them).
#pragma once

#include <string>
#include <vector>

#include "core/executors/executor.h"

namespace thunderc {

// The CUDA driver: dlopen("libcuda.so.1"), cuInit(0), cuDeviceGetCount() > 0. Cached after the first call.
// Reasons: "no CUDA driver (libcuda.so.1 not found)", "CUDA driver failed to initialise (cuInit returned 100)",
// "no CUDA device found".
Availability probe_cuda_driver();

// A shared library, by trying each candidate soname (then libNAME.so* under the usual CUDA directories
// when `cuda_dirs`). `what` names it in the reason: "no NVRTC (libnvrtc.so* not found)".
// With `symbol`, the library must also export it.
Availability probe_library(const std::string& what, const std::vector<std::string>& candidates,
                           const std::string& glob_stem, bool cuda_dirs, const std::string& symbol = {});

}  // namespace thunderc
