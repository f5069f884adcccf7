// The few cuBLASLt types and enum values runtime/src/cublaslt.cpp uses, declared here so that the runtime
// builds without CUDA's headers. Numbers from cublasLt.h, cublas_api.h and library_types.h (unchanged from
// CUDA 11.4 to 13); tests/runtime/test_cublaslt_header.cpp checks them against the installed headers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace thunderc::rt::lt {


using Status = int;  // cublasStatus_t
using Handle = void*;
using MatmulDesc = void*;
using MatrixLayout = void*;
using Preference = void*;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};

constexpr Status kSuccess = 0;
constexpr Status kNotSupported = 15;
constexpr int kOpN = 0, kOpT = 1;                       // cublasOperation_t
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77;  // cublasComputeType_t
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;         // cudaDataType_t
// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
// cublasLtEpilogue_t
constexpr uint32_t kEpiDefault = 1, kEpiRelu = 2, kEpiBias = 4, kEpiGelu = 32;
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
// cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefMaxWorkspaceBytes = 1;
constexpr int kPrefMinAlignmentA = 5, kPrefMinAlignmentB = 6, kPrefMinAlignmentC = 7, kPrefMinAlignmentD = 8;

}  // namespace thunderc::rt::lt
