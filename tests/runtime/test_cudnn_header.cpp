// The enum numbers runtime/src/cudnn_api.hpp declares (the runtime builds without cuDNN's headers) must equal
// cuDNN's own: compiled only when cudnn_graph.h was found at configure time. The static_asserts are the test;
// the test case below only records that they were compiled.
// Two of the attributes used (the handle of an operation graph and of an execution plan) are deprecated in
// later 9.x releases but still accepted; naming them here must not warn.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn_graph.h>
#include <cudnn_version.h>

#include <doctest/doctest.h>

#include "cudnn_api.hpp"

namespace dnn = thunderc::rt::dnn;

// One per constant of cudnn_api.hpp (written from its comments, "kName = value;  // CUDNN_NAME"; keep in step).
static_assert(dnn::kSuccess == CUDNN_STATUS_SUCCESS, "kSuccess != CUDNN_STATUS_SUCCESS");
static_assert(dnn::kBadParam == CUDNN_STATUS_BAD_PARAM, "kBadParam != CUDNN_STATUS_BAD_PARAM");
static_assert(dnn::kNotSupported == CUDNN_STATUS_NOT_SUPPORTED, "kNotSupported != CUDNN_STATUS_NOT_SUPPORTED");
static_assert(dnn::kInternalError == CUDNN_STATUS_INTERNAL_ERROR, "kInternalError != CUDNN_STATUS_INTERNAL_ERROR");
static_assert(dnn::kExecutionFailed == CUDNN_STATUS_EXECUTION_FAILED, "kExecutionFailed != CUDNN_STATUS_EXECUTION_FAILED");
static_assert(dnn::kDataFloat == CUDNN_DATA_FLOAT, "kDataFloat != CUDNN_DATA_FLOAT");
static_assert(dnn::kDataHalf == CUDNN_DATA_HALF, "kDataHalf != CUDNN_DATA_HALF");
static_assert(dnn::kDataBfloat16 == CUDNN_DATA_BFLOAT16, "kDataBfloat16 != CUDNN_DATA_BFLOAT16");
static_assert(dnn::kCrossCorrelation == CUDNN_CROSS_CORRELATION, "kCrossCorrelation != CUDNN_CROSS_CORRELATION");
static_assert(dnn::kPointwiseAdd == CUDNN_POINTWISE_ADD, "kPointwiseAdd != CUDNN_POINTWISE_ADD");
static_assert(dnn::kPointwiseReluFwd == CUDNN_POINTWISE_RELU_FWD, "kPointwiseReluFwd != CUDNN_POINTWISE_RELU_FWD");
static_assert(dnn::kPointwiseSigmoidFwd == CUDNN_POINTWISE_SIGMOID_FWD, "kPointwiseSigmoidFwd != CUDNN_POINTWISE_SIGMOID_FWD");
static_assert(dnn::kPointwiseSwishFwd == CUDNN_POINTWISE_SWISH_FWD, "kPointwiseSwishFwd != CUDNN_POINTWISE_SWISH_FWD");
static_assert(dnn::kPointwiseGeluApproxTanhFwd == CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, "kPointwiseGeluApproxTanhFwd != CUDNN_POINTWISE_GELU_APPROX_TANH_FWD");
static_assert(dnn::kHeurModeFallback == CUDNN_HEUR_MODE_FALLBACK, "kHeurModeFallback != CUDNN_HEUR_MODE_FALLBACK");
static_assert(dnn::kHeurModeA == CUDNN_HEUR_MODE_A, "kHeurModeA != CUDNN_HEUR_MODE_A");
static_assert(dnn::kNoteTensorCore == CUDNN_NUMERICAL_NOTE_TENSOR_CORE, "kNoteTensorCore != CUDNN_NUMERICAL_NOTE_TENSOR_CORE");
static_assert(dnn::kNoteDownConvertInputs == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, "kNoteDownConvertInputs != CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS");
static_assert(dnn::kNoteTypeCount == CUDNN_NUMERICAL_NOTE_TYPE_COUNT, "kNoteTypeCount != CUDNN_NUMERICAL_NOTE_TYPE_COUNT");
static_assert(dnn::kTypeHandle == CUDNN_TYPE_HANDLE, "kTypeHandle != CUDNN_TYPE_HANDLE");
static_assert(dnn::kTypeDataType == CUDNN_TYPE_DATA_TYPE, "kTypeDataType != CUDNN_TYPE_DATA_TYPE");
static_assert(dnn::kTypeBoolean == CUDNN_TYPE_BOOLEAN, "kTypeBoolean != CUDNN_TYPE_BOOLEAN");
static_assert(dnn::kTypeInt64 == CUDNN_TYPE_INT64, "kTypeInt64 != CUDNN_TYPE_INT64");
static_assert(dnn::kTypeFloat == CUDNN_TYPE_FLOAT, "kTypeFloat != CUDNN_TYPE_FLOAT");
static_assert(dnn::kTypeDouble == CUDNN_TYPE_DOUBLE, "kTypeDouble != CUDNN_TYPE_DOUBLE");
static_assert(dnn::kTypeVoidPtr == CUDNN_TYPE_VOID_PTR, "kTypeVoidPtr != CUDNN_TYPE_VOID_PTR");
static_assert(dnn::kTypeConvolutionMode == CUDNN_TYPE_CONVOLUTION_MODE, "kTypeConvolutionMode != CUDNN_TYPE_CONVOLUTION_MODE");
static_assert(dnn::kTypeHeurMode == CUDNN_TYPE_HEUR_MODE, "kTypeHeurMode != CUDNN_TYPE_HEUR_MODE");
static_assert(dnn::kTypeNumericalNote == CUDNN_TYPE_NUMERICAL_NOTE, "kTypeNumericalNote != CUDNN_TYPE_NUMERICAL_NOTE");
static_assert(dnn::kTypePointwiseMode == CUDNN_TYPE_POINTWISE_MODE, "kTypePointwiseMode != CUDNN_TYPE_POINTWISE_MODE");
static_assert(dnn::kTypeBackendDescriptor == CUDNN_TYPE_BACKEND_DESCRIPTOR, "kTypeBackendDescriptor != CUDNN_TYPE_BACKEND_DESCRIPTOR");
static_assert(dnn::kPointwiseDescriptor == CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "kPointwiseDescriptor != CUDNN_BACKEND_POINTWISE_DESCRIPTOR");
static_assert(dnn::kConvolutionDescriptor == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "kConvolutionDescriptor != CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR");
static_assert(dnn::kEngineDescriptor == CUDNN_BACKEND_ENGINE_DESCRIPTOR, "kEngineDescriptor != CUDNN_BACKEND_ENGINE_DESCRIPTOR");
static_assert(dnn::kEngineCfgDescriptor == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "kEngineCfgDescriptor != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR");
static_assert(dnn::kEngineHeurDescriptor == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "kEngineHeurDescriptor != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR");
static_assert(dnn::kExecutionPlanDescriptor == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "kExecutionPlanDescriptor != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR");
static_assert(dnn::kOpConvForwardDescriptor == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "kOpConvForwardDescriptor != CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR");
static_assert(dnn::kOpPointwiseDescriptor == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "kOpPointwiseDescriptor != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR");
static_assert(dnn::kOperationGraphDescriptor == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "kOperationGraphDescriptor != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR");
static_assert(dnn::kVariantPackDescriptor == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "kVariantPackDescriptor != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR");
static_assert(dnn::kTensorDescriptor == CUDNN_BACKEND_TENSOR_DESCRIPTOR, "kTensorDescriptor != CUDNN_BACKEND_TENSOR_DESCRIPTOR");
static_assert(dnn::kAttrPointwiseMode == CUDNN_ATTR_POINTWISE_MODE, "kAttrPointwiseMode != CUDNN_ATTR_POINTWISE_MODE");
static_assert(dnn::kAttrPointwiseMathPrec == CUDNN_ATTR_POINTWISE_MATH_PREC, "kAttrPointwiseMathPrec != CUDNN_ATTR_POINTWISE_MATH_PREC");
static_assert(dnn::kAttrConvolutionCompType == CUDNN_ATTR_CONVOLUTION_COMP_TYPE, "kAttrConvolutionCompType != CUDNN_ATTR_CONVOLUTION_COMP_TYPE");
static_assert(dnn::kAttrConvolutionConvMode == CUDNN_ATTR_CONVOLUTION_CONV_MODE, "kAttrConvolutionConvMode != CUDNN_ATTR_CONVOLUTION_CONV_MODE");
static_assert(dnn::kAttrConvolutionDilations == CUDNN_ATTR_CONVOLUTION_DILATIONS, "kAttrConvolutionDilations != CUDNN_ATTR_CONVOLUTION_DILATIONS");
static_assert(dnn::kAttrConvolutionFilterStrides == CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, "kAttrConvolutionFilterStrides != CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES");
static_assert(dnn::kAttrConvolutionPostPaddings == CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, "kAttrConvolutionPostPaddings != CUDNN_ATTR_CONVOLUTION_POST_PADDINGS");
static_assert(dnn::kAttrConvolutionPrePaddings == CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, "kAttrConvolutionPrePaddings != CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS");
static_assert(dnn::kAttrConvolutionSpatialDims == CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, "kAttrConvolutionSpatialDims != CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS");
static_assert(dnn::kAttrEngineHeurMode == CUDNN_ATTR_ENGINEHEUR_MODE, "kAttrEngineHeurMode != CUDNN_ATTR_ENGINEHEUR_MODE");
static_assert(dnn::kAttrEngineHeurOperationGraph == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, "kAttrEngineHeurOperationGraph != CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH");
static_assert(dnn::kAttrEngineHeurResults == CUDNN_ATTR_ENGINEHEUR_RESULTS, "kAttrEngineHeurResults != CUDNN_ATTR_ENGINEHEUR_RESULTS");
static_assert(dnn::kAttrEngineCfgEngine == CUDNN_ATTR_ENGINECFG_ENGINE, "kAttrEngineCfgEngine != CUDNN_ATTR_ENGINECFG_ENGINE");
static_assert(dnn::kAttrExecutionPlanHandle == CUDNN_ATTR_EXECUTION_PLAN_HANDLE, "kAttrExecutionPlanHandle != CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
static_assert(dnn::kAttrExecutionPlanEngineConfig == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, "kAttrExecutionPlanEngineConfig != CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
static_assert(dnn::kAttrExecutionPlanWorkspaceSize == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, "kAttrExecutionPlanWorkspaceSize != CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
static_assert(dnn::kAttrOpConvForwardAlpha == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, "kAttrOpConvForwardAlpha != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA");
static_assert(dnn::kAttrOpConvForwardBeta == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, "kAttrOpConvForwardBeta != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA");
static_assert(dnn::kAttrOpConvForwardConvDesc == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, "kAttrOpConvForwardConvDesc != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC");
static_assert(dnn::kAttrOpConvForwardW == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, "kAttrOpConvForwardW != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W");
static_assert(dnn::kAttrOpConvForwardX == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, "kAttrOpConvForwardX != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X");
static_assert(dnn::kAttrOpConvForwardY == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, "kAttrOpConvForwardY != CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y");
static_assert(dnn::kAttrOpPointwisePwDescriptor == CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, "kAttrOpPointwisePwDescriptor != CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR");
static_assert(dnn::kAttrOpPointwiseXDesc == CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "kAttrOpPointwiseXDesc != CUDNN_ATTR_OPERATION_POINTWISE_XDESC");
static_assert(dnn::kAttrOpPointwiseBDesc == CUDNN_ATTR_OPERATION_POINTWISE_BDESC, "kAttrOpPointwiseBDesc != CUDNN_ATTR_OPERATION_POINTWISE_BDESC");
static_assert(dnn::kAttrOpPointwiseYDesc == CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "kAttrOpPointwiseYDesc != CUDNN_ATTR_OPERATION_POINTWISE_YDESC");
static_assert(dnn::kAttrOperationGraphHandle == CUDNN_ATTR_OPERATIONGRAPH_HANDLE, "kAttrOperationGraphHandle != CUDNN_ATTR_OPERATIONGRAPH_HANDLE");
static_assert(dnn::kAttrOperationGraphOps == CUDNN_ATTR_OPERATIONGRAPH_OPS, "kAttrOperationGraphOps != CUDNN_ATTR_OPERATIONGRAPH_OPS");
static_assert(dnn::kAttrTensorByteAlignment == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, "kAttrTensorByteAlignment != CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT");
static_assert(dnn::kAttrTensorDataType == CUDNN_ATTR_TENSOR_DATA_TYPE, "kAttrTensorDataType != CUDNN_ATTR_TENSOR_DATA_TYPE");
static_assert(dnn::kAttrTensorDimensions == CUDNN_ATTR_TENSOR_DIMENSIONS, "kAttrTensorDimensions != CUDNN_ATTR_TENSOR_DIMENSIONS");
static_assert(dnn::kAttrTensorStrides == CUDNN_ATTR_TENSOR_STRIDES, "kAttrTensorStrides != CUDNN_ATTR_TENSOR_STRIDES");
static_assert(dnn::kAttrTensorUniqueId == CUDNN_ATTR_TENSOR_UNIQUE_ID, "kAttrTensorUniqueId != CUDNN_ATTR_TENSOR_UNIQUE_ID");
static_assert(dnn::kAttrTensorIsVirtual == CUDNN_ATTR_TENSOR_IS_VIRTUAL, "kAttrTensorIsVirtual != CUDNN_ATTR_TENSOR_IS_VIRTUAL");
static_assert(dnn::kAttrVariantPackUniqueIds == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, "kAttrVariantPackUniqueIds != CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS");
static_assert(dnn::kAttrVariantPackDataPointers == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, "kAttrVariantPackDataPointers != CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS");
static_assert(dnn::kAttrVariantPackWorkspace == CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "kAttrVariantPackWorkspace != CUDNN_ATTR_VARIANT_PACK_WORKSPACE");
static_assert(dnn::kAttrEngineNumericalNote == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, "kAttrEngineNumericalNote != CUDNN_ATTR_ENGINE_NUMERICAL_NOTE");
static_assert(dnn::kDataInt32 == CUDNN_DATA_INT32, "kDataInt32 != CUDNN_DATA_INT32");
static_assert(dnn::kDataBoolean == CUDNN_DATA_BOOLEAN, "kDataBoolean != CUDNN_DATA_BOOLEAN");
static_assert(dnn::kReduceAdd == CUDNN_REDUCE_TENSOR_ADD, "kReduceAdd != CUDNN_REDUCE_TENSOR_ADD");
static_assert(dnn::kReduceMax == CUDNN_REDUCE_TENSOR_MAX, "kReduceMax != CUDNN_REDUCE_TENSOR_MAX");
static_assert(dnn::kPointwiseMul == CUDNN_POINTWISE_MUL, "kPointwiseMul != CUDNN_POINTWISE_MUL");
static_assert(dnn::kPointwiseDiv == CUDNN_POINTWISE_DIV, "kPointwiseDiv != CUDNN_POINTWISE_DIV");
static_assert(dnn::kPointwiseSub == CUDNN_POINTWISE_SUB, "kPointwiseSub != CUDNN_POINTWISE_SUB");
static_assert(dnn::kPointwiseExp == CUDNN_POINTWISE_EXP, "kPointwiseExp != CUDNN_POINTWISE_EXP");
static_assert(dnn::kPointwiseCmpGe == CUDNN_POINTWISE_CMP_GE, "kPointwiseCmpGe != CUDNN_POINTWISE_CMP_GE");
static_assert(dnn::kPointwiseGenIndex == CUDNN_POINTWISE_GEN_INDEX, "kPointwiseGenIndex != CUDNN_POINTWISE_GEN_INDEX");
static_assert(dnn::kPointwiseBinarySelect == CUDNN_POINTWISE_BINARY_SELECT, "kPointwiseBinarySelect != CUDNN_POINTWISE_BINARY_SELECT");
static_assert(dnn::kTypeReductionOperator == CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, "kTypeReductionOperator != CUDNN_TYPE_REDUCTION_OPERATOR_TYPE");
static_assert(dnn::kMatmulDescriptor == CUDNN_BACKEND_MATMUL_DESCRIPTOR, "kMatmulDescriptor != CUDNN_BACKEND_MATMUL_DESCRIPTOR");
static_assert(dnn::kOpMatmulDescriptor == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "kOpMatmulDescriptor != CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR");
static_assert(dnn::kReductionDescriptor == CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "kReductionDescriptor != CUDNN_BACKEND_REDUCTION_DESCRIPTOR");
static_assert(dnn::kOpReductionDescriptor == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "kOpReductionDescriptor != CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR");
static_assert(dnn::kAttrPointwiseAxis == CUDNN_ATTR_POINTWISE_AXIS, "kAttrPointwiseAxis != CUDNN_ATTR_POINTWISE_AXIS");
static_assert(dnn::kAttrOpPointwiseTDesc == CUDNN_ATTR_OPERATION_POINTWISE_TDESC, "kAttrOpPointwiseTDesc != CUDNN_ATTR_OPERATION_POINTWISE_TDESC");
static_assert(dnn::kAttrTensorIsByValue == CUDNN_ATTR_TENSOR_IS_BY_VALUE, "kAttrTensorIsByValue != CUDNN_ATTR_TENSOR_IS_BY_VALUE");
static_assert(dnn::kAttrMatmulCompType == CUDNN_ATTR_MATMUL_COMP_TYPE, "kAttrMatmulCompType != CUDNN_ATTR_MATMUL_COMP_TYPE");
static_assert(dnn::kAttrOpMatmulADesc == CUDNN_ATTR_OPERATION_MATMUL_ADESC, "kAttrOpMatmulADesc != CUDNN_ATTR_OPERATION_MATMUL_ADESC");
static_assert(dnn::kAttrOpMatmulBDesc == CUDNN_ATTR_OPERATION_MATMUL_BDESC, "kAttrOpMatmulBDesc != CUDNN_ATTR_OPERATION_MATMUL_BDESC");
static_assert(dnn::kAttrOpMatmulCDesc == CUDNN_ATTR_OPERATION_MATMUL_CDESC, "kAttrOpMatmulCDesc != CUDNN_ATTR_OPERATION_MATMUL_CDESC");
static_assert(dnn::kAttrOpMatmulDesc == CUDNN_ATTR_OPERATION_MATMUL_DESC, "kAttrOpMatmulDesc != CUDNN_ATTR_OPERATION_MATMUL_DESC");
static_assert(dnn::kAttrReductionOperator == CUDNN_ATTR_REDUCTION_OPERATOR, "kAttrReductionOperator != CUDNN_ATTR_REDUCTION_OPERATOR");
static_assert(dnn::kAttrReductionCompType == CUDNN_ATTR_REDUCTION_COMP_TYPE, "kAttrReductionCompType != CUDNN_ATTR_REDUCTION_COMP_TYPE");
static_assert(dnn::kAttrOpReductionXDesc == CUDNN_ATTR_OPERATION_REDUCTION_XDESC, "kAttrOpReductionXDesc != CUDNN_ATTR_OPERATION_REDUCTION_XDESC");
static_assert(dnn::kAttrOpReductionYDesc == CUDNN_ATTR_OPERATION_REDUCTION_YDESC, "kAttrOpReductionYDesc != CUDNN_ATTR_OPERATION_REDUCTION_YDESC");
static_assert(dnn::kAttrOpReductionDesc == CUDNN_ATTR_OPERATION_REDUCTION_DESC, "kAttrOpReductionDesc != CUDNN_ATTR_OPERATION_REDUCTION_DESC");

// The attribute types the runtime writes must have the C sizes it assumes.
static_assert(sizeof(cudnnBackendDescriptor_t) == sizeof(dnn::Descriptor));
static_assert(sizeof(cudnnHandle_t) == sizeof(dnn::Handle));
static_assert(sizeof(cudnnStatus_t) == sizeof(dnn::Status));
static_assert(sizeof(cudnnDataType_t) == sizeof(int) && sizeof(cudnnPointwiseMode_t) == sizeof(int) &&
              sizeof(cudnnBackendHeurMode_t) == sizeof(int) && sizeof(cudnnBackendNumericalNote_t) == sizeof(int) &&
              sizeof(cudnnConvolutionMode_t) == sizeof(int) && sizeof(cudnnReduceTensorOp_t) == sizeof(int));
static_assert(CUDNN_MAJOR >= 9, "the runtime's numbers are cuDNN 9's");

TEST_CASE("cuDNN header: the runtime's enum numbers equal cudnn_graph.h's (109 checked at compile time)") {
  MESSAGE("checked against cuDNN " << CUDNN_MAJOR << "." << CUDNN_MINOR << "." << CUDNN_PATCHLEVEL);
  CHECK(dnn::kAttrEngineNumericalNote == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE);
}
