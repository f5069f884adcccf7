// Facts about the linked LibTorch that core/ cannot ask for itself.
#pragma once

namespace thunderc {

// Tells the executor registry whether torch can run on CUDA (set_torch_cuda_support).
void report_torch_cuda_support();

}  // namespace thunderc
