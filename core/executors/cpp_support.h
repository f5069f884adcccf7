// What the loop executors implement, as checker functions: `cpp` (fused C++ loops, codegen/cpp/) and
// `nvfuser` (fused CUDA kernels, codegen/nvfuser/) lower the same regions with the same rules
// (codegen/loops/), so they claim the same operators, each on its own device. Anything a checker rejects is
// left for the next executor (torch), so these must say no to every use that the code generation does not
// handle: dtypes other than float32/float64 (bool only for masks, conditions, comparisons and data
// movement; on the CPU, integers only for data movement, comparisons, casts to other dtypes and embedding
// indices), other devices, div with a rounding mode. nvfuser also runs float32 linear/matmul/bmm/addmm and
// 4-D conv2d with its own GEMM kernels (codegen/nvfuser/gemm.h), as a Fallback claim: cublas (GEMMs through
// cuBLASLt) and cudnn (convolutions through cuDNN) take them wherever they are listed, and carry nvfuser's
// kernel for the same symbol for machines where the library cannot run it (codegen/cudalib/).
// cpp alone also runs scaled_dot_product_attention with a fused kernel (codegen/cpp/attention.h) and embedding
// as a checked row gather (codegen/cpp/embedding.h).
#pragma once

#include "core/executors/executor.h"

namespace thunderc {

// Registers every operator the cpp executor implements, each with its checker.
void register_cpp_impls(Executor& cpp);
void register_nvfuser_impls(Executor& nvfuser);
void register_cublas_impls(Executor& cublas);
void register_cudnn_impls(Executor& cudnn);

}  // namespace thunderc
