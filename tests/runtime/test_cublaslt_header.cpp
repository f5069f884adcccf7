// The cuBLASLt types and enum numbers runtime/src/cublaslt_api.hpp declares (the runtime builds without CUDA's
// headers) must equal cuBLASLt's own: compiled only when cublasLt.h was found at configure time. The
// static_asserts are the test; the test case records that they were compiled.
#include <cublasLt.h>
#include <doctest/doctest.h>

#include <cstddef>

#include "cublaslt_api.hpp"

namespace lt = thunderc::rt::lt;

static_assert(lt::kSuccess == CUBLAS_STATUS_SUCCESS, "kSuccess");
static_assert(lt::kNotSupported == CUBLAS_STATUS_NOT_SUPPORTED, "kNotSupported");
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T, "cublasOperation_t");
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F, "kCompute32F");
static_assert(lt::kCompute32FFastTF32 == CUBLAS_COMPUTE_32F_FAST_TF32, "kCompute32FFastTF32");
static_assert(lt::kR32F == CUDA_R_32F && lt::kR16F == CUDA_R_16F && lt::kR16BF == CUDA_R_16BF, "cudaDataType_t");
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA, "kDescTransA");
static_assert(lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB, "kDescTransB");
static_assert(lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE, "kDescEpilogue");
static_assert(lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER, "kDescBiasPointer");
static_assert(lt::kEpiDefault == CUBLASLT_EPILOGUE_DEFAULT, "kEpiDefault");
static_assert(lt::kEpiRelu == CUBLASLT_EPILOGUE_RELU, "kEpiRelu");
static_assert(lt::kEpiBias == CUBLASLT_EPILOGUE_BIAS, "kEpiBias");
static_assert(lt::kEpiGelu == CUBLASLT_EPILOGUE_GELU, "kEpiGelu");
static_assert((lt::kEpiRelu | lt::kEpiBias) == CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS");
static_assert((lt::kEpiGelu | lt::kEpiBias) == CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS");
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "kLayoutBatchCount");
static_assert(lt::kLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, "kLayoutStridedBatchOffset");
static_assert(lt::kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, "kPrefMaxWorkspaceBytes");
static_assert(lt::kPrefMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, "kPrefMinAlignmentA");
static_assert(lt::kPrefMinAlignmentB == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, "kPrefMinAlignmentB");
static_assert(lt::kPrefMinAlignmentC == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, "kPrefMinAlignmentC");
static_assert(lt::kPrefMinAlignmentD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, "kPrefMinAlignmentD");
// The structs the runtime passes by pointer: same size and layout.
static_assert(sizeof(lt::Algo) == sizeof(cublasLtMatmulAlgo_t), "Algo");
static_assert(sizeof(lt::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t), "HeuristicResult");
static_assert(offsetof(lt::HeuristicResult, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize),
              "HeuristicResult.workspaceSize");
static_assert(offsetof(lt::HeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state),
              "HeuristicResult.state");

TEST_CASE("cuBLASLt enum numbers and structs match the installed cublasLt.h") {
  CHECK(CUBLAS_VERSION >= 110400);  // the oldest the runtime accepts (cuBLASLt shares cuBLAS's version)
}
