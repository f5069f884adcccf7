// The part of cuDNN 9's C API that cudnn.cpp uses, declared here so that the runtime builds without cuDNN's
// headers (it dlopens the library; see cuda_libs.hpp). Every number below is copied from cuDNN 9's
// cudnn_graph.h (the values are part of cuDNN's ABI and stable across 9.x); tests/runtime/test_cudnn_header.cpp
// static_asserts each one against the real header when it is installed at configure time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace thunderc::rt::dnn {

using Handle = void*;      // cudnnHandle_t
using Descriptor = void*;  // cudnnBackendDescriptor_t
using Status = int;        // cudnnStatus_t

// cudnnStatus_t (only the codes the runtime tells apart; errors are grouped by thousands: the category).
constexpr Status kSuccess = 0;               // CUDNN_STATUS_SUCCESS
constexpr Status kBadParam = 2000;           // CUDNN_STATUS_BAD_PARAM
constexpr Status kNotSupported = 3000;       // CUDNN_STATUS_NOT_SUPPORTED (3000..3999: NOT_SUPPORTED_*)
constexpr Status kInternalError = 4000;      // CUDNN_STATUS_INTERNAL_ERROR
constexpr Status kExecutionFailed = 5000;    // CUDNN_STATUS_EXECUTION_FAILED
inline bool is_not_supported(Status s) { return s / 1000 * 1000 == kNotSupported; }

// cudnnDataType_t
constexpr int kDataFloat = 0;     // CUDNN_DATA_FLOAT
constexpr int kDataHalf = 2;      // CUDNN_DATA_HALF
constexpr int kDataInt32 = 4;     // CUDNN_DATA_INT32
constexpr int kDataBfloat16 = 9;  // CUDNN_DATA_BFLOAT16
constexpr int kDataBoolean = 11;  // CUDNN_DATA_BOOLEAN

// cudnnConvolutionMode_t
constexpr int kCrossCorrelation = 1;  // CUDNN_CROSS_CORRELATION

// cudnnReduceTensorOp_t
constexpr int kReduceAdd = 0;  // CUDNN_REDUCE_TENSOR_ADD
constexpr int kReduceMax = 3;  // CUDNN_REDUCE_TENSOR_MAX

// cudnnPointwiseMode_t
constexpr int kPointwiseAdd = 0;                 // CUDNN_POINTWISE_ADD
constexpr int kPointwiseMul = 1;                 // CUDNN_POINTWISE_MUL
constexpr int kPointwiseDiv = 6;                 // CUDNN_POINTWISE_DIV
constexpr int kPointwiseSub = 9;                 // CUDNN_POINTWISE_SUB
constexpr int kPointwiseExp = 13;                // CUDNN_POINTWISE_EXP
constexpr int kPointwiseReluFwd = 100;           // CUDNN_POINTWISE_RELU_FWD
constexpr int kPointwiseSigmoidFwd = 102;        // CUDNN_POINTWISE_SIGMOID_FWD
constexpr int kPointwiseSwishFwd = 106;          // CUDNN_POINTWISE_SWISH_FWD
constexpr int kPointwiseGeluApproxTanhFwd = 107; // CUDNN_POINTWISE_GELU_APPROX_TANH_FWD
constexpr int kPointwiseCmpGe = 303;             // CUDNN_POINTWISE_CMP_GE
constexpr int kPointwiseGenIndex = 501;          // CUDNN_POINTWISE_GEN_INDEX
constexpr int kPointwiseBinarySelect = 601;      // CUDNN_POINTWISE_BINARY_SELECT

// cudnnBackendHeurMode_t
constexpr int kHeurModeFallback = 2;  // CUDNN_HEUR_MODE_FALLBACK
constexpr int kHeurModeA = 3;         // CUDNN_HEUR_MODE_A

// cudnnBackendNumericalNote_t
constexpr int kNoteTensorCore = 0;          // CUDNN_NUMERICAL_NOTE_TENSOR_CORE
constexpr int kNoteDownConvertInputs = 1;   // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
constexpr int kNoteTypeCount = 10;          // CUDNN_NUMERICAL_NOTE_TYPE_COUNT

// cudnnBackendAttributeType_t
constexpr int kTypeHandle = 0;             // CUDNN_TYPE_HANDLE
constexpr int kTypeDataType = 1;           // CUDNN_TYPE_DATA_TYPE
constexpr int kTypeBoolean = 2;            // CUDNN_TYPE_BOOLEAN (a C++ bool)
constexpr int kTypeInt64 = 3;              // CUDNN_TYPE_INT64
constexpr int kTypeFloat = 4;              // CUDNN_TYPE_FLOAT
constexpr int kTypeDouble = 5;             // CUDNN_TYPE_DOUBLE
constexpr int kTypeVoidPtr = 6;            // CUDNN_TYPE_VOID_PTR
constexpr int kTypeConvolutionMode = 7;    // CUDNN_TYPE_CONVOLUTION_MODE
constexpr int kTypeHeurMode = 8;           // CUDNN_TYPE_HEUR_MODE
constexpr int kTypeNumericalNote = 11;     // CUDNN_TYPE_NUMERICAL_NOTE
constexpr int kTypePointwiseMode = 14;     // CUDNN_TYPE_POINTWISE_MODE
constexpr int kTypeBackendDescriptor = 15; // CUDNN_TYPE_BACKEND_DESCRIPTOR
constexpr int kTypeReductionOperator = 18; // CUDNN_TYPE_REDUCTION_OPERATOR_TYPE

// cudnnBackendDescriptorType_t
constexpr int kPointwiseDescriptor = 0;          // CUDNN_BACKEND_POINTWISE_DESCRIPTOR
constexpr int kConvolutionDescriptor = 1;        // CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
constexpr int kEngineDescriptor = 2;             // CUDNN_BACKEND_ENGINE_DESCRIPTOR
constexpr int kEngineCfgDescriptor = 3;          // CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
constexpr int kEngineHeurDescriptor = 4;         // CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
constexpr int kExecutionPlanDescriptor = 5;      // CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
constexpr int kOpConvForwardDescriptor = 10;     // CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
constexpr int kOpPointwiseDescriptor = 13;       // CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR
constexpr int kOperationGraphDescriptor = 15;    // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
constexpr int kVariantPackDescriptor = 16;       // CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
constexpr int kTensorDescriptor = 17;            // CUDNN_BACKEND_TENSOR_DESCRIPTOR
constexpr int kMatmulDescriptor = 18;            // CUDNN_BACKEND_MATMUL_DESCRIPTOR
constexpr int kOpMatmulDescriptor = 19;          // CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR
constexpr int kReductionDescriptor = 21;         // CUDNN_BACKEND_REDUCTION_DESCRIPTOR
constexpr int kOpReductionDescriptor = 22;       // CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR

// cudnnBackendAttributeName_t
constexpr int kAttrPointwiseMode = 0;                 // CUDNN_ATTR_POINTWISE_MODE
constexpr int kAttrPointwiseMathPrec = 1;             // CUDNN_ATTR_POINTWISE_MATH_PREC
constexpr int kAttrPointwiseAxis = 9;                 // CUDNN_ATTR_POINTWISE_AXIS
constexpr int kAttrConvolutionCompType = 100;         // CUDNN_ATTR_CONVOLUTION_COMP_TYPE
constexpr int kAttrConvolutionConvMode = 101;         // CUDNN_ATTR_CONVOLUTION_CONV_MODE
constexpr int kAttrConvolutionDilations = 102;        // CUDNN_ATTR_CONVOLUTION_DILATIONS
constexpr int kAttrConvolutionFilterStrides = 103;    // CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES
constexpr int kAttrConvolutionPostPaddings = 104;     // CUDNN_ATTR_CONVOLUTION_POST_PADDINGS
constexpr int kAttrConvolutionPrePaddings = 105;      // CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS
constexpr int kAttrConvolutionSpatialDims = 106;      // CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS
constexpr int kAttrEngineHeurMode = 200;              // CUDNN_ATTR_ENGINEHEUR_MODE
constexpr int kAttrEngineHeurOperationGraph = 201;    // CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH
constexpr int kAttrEngineHeurResults = 202;           // CUDNN_ATTR_ENGINEHEUR_RESULTS
constexpr int kAttrEngineCfgEngine = 300;             // CUDNN_ATTR_ENGINECFG_ENGINE
constexpr int kAttrExecutionPlanHandle = 400;         // CUDNN_ATTR_EXECUTION_PLAN_HANDLE
constexpr int kAttrExecutionPlanEngineConfig = 401;   // CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG
constexpr int kAttrExecutionPlanWorkspaceSize = 402;  // CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE
constexpr int kAttrOpConvForwardAlpha = 700;          // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA
constexpr int kAttrOpConvForwardBeta = 701;           // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA
constexpr int kAttrOpConvForwardConvDesc = 702;       // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC
constexpr int kAttrOpConvForwardW = 703;              // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W
constexpr int kAttrOpConvForwardX = 704;              // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X
constexpr int kAttrOpConvForwardY = 705;              // CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y
constexpr int kAttrOpPointwisePwDescriptor = 750;     // CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR
constexpr int kAttrOpPointwiseXDesc = 751;            // CUDNN_ATTR_OPERATION_POINTWISE_XDESC
constexpr int kAttrOpPointwiseBDesc = 752;            // CUDNN_ATTR_OPERATION_POINTWISE_BDESC
constexpr int kAttrOpPointwiseYDesc = 753;            // CUDNN_ATTR_OPERATION_POINTWISE_YDESC
constexpr int kAttrOpPointwiseTDesc = 758;            // CUDNN_ATTR_OPERATION_POINTWISE_TDESC
constexpr int kAttrOperationGraphHandle = 800;        // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
constexpr int kAttrOperationGraphOps = 801;           // CUDNN_ATTR_OPERATIONGRAPH_OPS
constexpr int kAttrTensorByteAlignment = 900;         // CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT
constexpr int kAttrTensorDataType = 901;              // CUDNN_ATTR_TENSOR_DATA_TYPE
constexpr int kAttrTensorDimensions = 902;            // CUDNN_ATTR_TENSOR_DIMENSIONS
constexpr int kAttrTensorStrides = 903;               // CUDNN_ATTR_TENSOR_STRIDES
constexpr int kAttrTensorUniqueId = 906;              // CUDNN_ATTR_TENSOR_UNIQUE_ID
constexpr int kAttrTensorIsVirtual = 907;             // CUDNN_ATTR_TENSOR_IS_VIRTUAL
constexpr int kAttrTensorIsByValue = 908;             // CUDNN_ATTR_TENSOR_IS_BY_VALUE
constexpr int kAttrVariantPackUniqueIds = 1000;       // CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS
constexpr int kAttrVariantPackDataPointers = 1001;    // CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS
constexpr int kAttrVariantPackWorkspace = 1003;       // CUDNN_ATTR_VARIANT_PACK_WORKSPACE
constexpr int kAttrEngineNumericalNote = 1303;        // CUDNN_ATTR_ENGINE_NUMERICAL_NOTE
constexpr int kAttrMatmulCompType = 1500;             // CUDNN_ATTR_MATMUL_COMP_TYPE
constexpr int kAttrOpMatmulADesc = 1520;              // CUDNN_ATTR_OPERATION_MATMUL_ADESC
constexpr int kAttrOpMatmulBDesc = 1521;              // CUDNN_ATTR_OPERATION_MATMUL_BDESC
constexpr int kAttrOpMatmulCDesc = 1522;              // CUDNN_ATTR_OPERATION_MATMUL_CDESC
constexpr int kAttrOpMatmulDesc = 1523;               // CUDNN_ATTR_OPERATION_MATMUL_DESC
constexpr int kAttrReductionOperator = 1600;          // CUDNN_ATTR_REDUCTION_OPERATOR
constexpr int kAttrReductionCompType = 1601;          // CUDNN_ATTR_REDUCTION_COMP_TYPE
constexpr int kAttrOpReductionXDesc = 1610;           // CUDNN_ATTR_OPERATION_REDUCTION_XDESC
constexpr int kAttrOpReductionYDesc = 1611;           // CUDNN_ATTR_OPERATION_REDUCTION_YDESC
constexpr int kAttrOpReductionDesc = 1612;            // CUDNN_ATTR_OPERATION_REDUCTION_DESC

// The functions, as dlsym finds them in libcudnn.so.9 (enums passed as int: same ABI as a C enum).
extern "C" {
using GetVersionFn = size_t (*)();
using GetErrorStringFn = const char* (*)(Status);
using GetLastErrorStringFn = void (*)(char* message, size_t max_size);  // new in 9.0; optional
using CreateFn = Status (*)(Handle*);
using DestroyFn = Status (*)(Handle);
using SetStreamFn = Status (*)(Handle, void* stream);  // cudaStream_t is a CUstream
using BackendCreateDescriptorFn = Status (*)(int type, Descriptor*);
using BackendDestroyDescriptorFn = Status (*)(Descriptor);
using BackendFinalizeFn = Status (*)(Descriptor);
using BackendSetAttributeFn = Status (*)(Descriptor, int name, int type, int64_t count, const void* elements);
using BackendGetAttributeFn = Status (*)(Descriptor, int name, int type, int64_t requested, int64_t* count,
                                         void* elements);
using BackendExecuteFn = Status (*)(Handle, Descriptor plan, Descriptor variant_pack);
}

}  // namespace thunderc::rt::dnn
