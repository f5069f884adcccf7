// A fake cuDNN 9 (built as libcudnn.so.9 next to the fake libcuda.so.1) for testing the runtime's cuDNN path
// on machines without a GPU: the graph-API subset runtime/src/cudnn.cpp uses, validated strictly and run on the
// host in double precision. See fake_cudnn.h for what it checks, its engines and its environment knobs.
//
// Descriptors keep their attributes as typed byte arrays; Finalize validates them and takes a snapshot of
// everything it refers to (as cuDNN copies them), so a later destroy of a referenced descriptor is harmless.
// The enum numbers are the runtime's (runtime/src/cudnn_api.hpp), which a test checks against cudnn_graph.h.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../../runtime/src/cudnn_api.hpp"
#include "../../../core/ir/half.h"
#include "fake_cudnn.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

namespace dnn = thunderc::rt::dnn;
using Status = dnn::Status;

constexpr Status kNotInitialized = 1001;           // CUDNN_STATUS_NOT_INITIALIZED
constexpr Status kBadParamNullPointer = 2002;      // CUDNN_STATUS_BAD_PARAM_NULL_POINTER
constexpr Status kBadParamMisaligned = 2003;       // CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER
constexpr Status kBadParamNotFinalized = 2004;     // CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED
constexpr Status kBadParamShapeMismatch = 2008;    // CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH
constexpr Status kBadParamDuplicated = 2009;       // CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES
constexpr Status kBadParamAttributeType = 2010;    // CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE
constexpr Status kBadParamDescriptorType = 2012;   // CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE
constexpr Status kNotSupportedGraphPattern = 3001; // CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN

const char* status_name(Status s) {
  switch (s) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 2000: return "CUDNN_STATUS_BAD_PARAM";
    case 2002: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case 2003: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case 2004: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case 2008: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case 2009: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case 2010: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case 2012: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
    case 3001: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case 4000: return "CUDNN_STATUS_INTERNAL_ERROR";
    case 5000: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

thread_local std::string t_last_error;

// Every failure goes through here: it records why, for cudnnGetLastErrorString.
Status fail(Status s, const std::string& why);

int64_t env_int(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::strtoll(e, nullptr, 10) : fallback;
}

// ---- snapshots of finalized descriptors -------------------------------------------------------------------

struct TensorInfo {
  int64_t uid = 0;
  int dtype = 0;
  int64_t dims[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t alignment = 0;
  bool is_virtual = false;
  bool by_value = false;  // a host scalar: the variant pack points at its value, read at execute
  bool same(const TensorInfo& o) const {
    return uid == o.uid && dtype == o.dtype && is_virtual == o.is_virtual && by_value == o.by_value &&
           alignment == o.alignment &&
           std::memcmp(dims, o.dims, sizeof dims) == 0 && std::memcmp(strides, o.strides, sizeof strides) == 0;
  }
  int64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

struct ConvInfo {
  int comp = 0;
  int64_t pre[2] = {0, 0}, post[2] = {0, 0}, stride[2] = {1, 1}, dil[2] = {1, 1};
};

enum class OpKind { kConv, kPointwise, kMatmul, kReduction };

struct OpInfo {
  OpKind kind = OpKind::kPointwise;
  bool is_conv = false;
  TensorInfo x, w_or_b, y;  // conv: x, w, y; pointwise: x, b (when binary), y; matmul: a, b, c; reduction: x, y
  bool has_b = false;
  TensorInfo t;              // BINARY_SELECT's condition
  bool has_t = false;
  ConvInfo conv;
  int mode = 0;              // pointwise mode, or the reduction operator
  int64_t axis = -1;         // GEN_INDEX
  double alpha = 1, beta = 0, alpha2 = 1;
};

struct GraphInfo {
  std::vector<OpInfo> ops;             // topologically sorted
  std::map<int64_t, TensorInfo> tensors;
  bool grouped = false;
  bool non_float_io = false;
  bool attention = false;              // the fused-attention pattern (two matmuls around a softmax)
  int64_t head_dim = 0, value_dim = 0; // attention: d and dv
};

struct Engine {
  int64_t index = 0;
  bool tensor_core = false;
  int64_t workspace = 0;
};

Engine engine(int64_t index) {
  Engine e;
  e.index = index;
  e.tensor_core = index == 0;
  e.workspace = index == 0 ? 0 : env_int("THUNDERC_FAKE_CUDNN_WORKSPACE", 4096);
  return e;
}

// ---- descriptors -------------------------------------------------------------------------------------------

struct Attr {
  int type = 0;
  int64_t count = 0;
  std::vector<unsigned char> bytes;
  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
};

struct Handle {
  void* ctx = nullptr;     // the context current at cudnnCreate (when the fake driver is loaded)
  void* stream = nullptr;
  std::thread::id stream_setter;
  std::atomic<int> busy{0};
};

struct Desc {
  int kind = 0;
  bool finalized = false;
  std::map<int, Attr> attrs;
  // Snapshot, by kind.
  TensorInfo tensor;
  ConvInfo conv;
  int pw_mode = 0;
  int pw_prec = 0;
  int64_t pw_axis = -1;
  int reduce_op = 0;
  OpInfo op;
  std::shared_ptr<const GraphInfo> graph;  // graph, heuristics, engine config, engine, plan
  std::vector<Engine> results;             // heuristics
  Engine eng;                              // engine config, engine, plan
  Handle* handle = nullptr;                // plan
  std::vector<int64_t> pack_uids;          // variant pack
  std::vector<void*> pack_ptrs;
  void* pack_workspace = nullptr;
};

struct State {
  State() { stats.last_engine = -1; }
  std::recursive_mutex mutex;  // recursive: fail() counts failures while a caller holds it
  std::set<Desc*> descs;
  std::set<Handle*> handles;
  thunderc_fake_cudnn_stats_t stats{};
};

State& st() {
  static State* s = new State;  // never destroyed: the runtime may destroy descriptors during exit
  return *s;
}

Status fail(Status s, const std::string& why) {
  t_last_error = why;
  std::lock_guard<std::recursive_mutex> lock(st().mutex);
  ++st().stats.failed_calls;
  return s;
}

size_t element_size(int type) {
  switch (type) {
    case dnn::kTypeBoolean: return sizeof(bool);
    case dnn::kTypeInt64: case dnn::kTypeDouble: return 8;
    case dnn::kTypeHandle: case dnn::kTypeVoidPtr: case dnn::kTypeBackendDescriptor: return sizeof(void*);
    case dnn::kTypeDataType: case dnn::kTypeFloat: case dnn::kTypeConvolutionMode: case dnn::kTypeHeurMode:
    case dnn::kTypeNumericalNote: case dnn::kTypePointwiseMode: case dnn::kTypeReductionOperator: return 4;
    default: return 0;
  }
}

// What may be set on each descriptor kind: attribute -> (types allowed, count range, kind of the descriptors
// referred to, -1 for any operation).
struct Spec {
  int kind, attr;
  int type, alt_type;  // alt_type: -1, or a second allowed type (alpha as float or double)
  int64_t min_count, max_count;
  int ref_kind;        // for CUDNN_TYPE_BACKEND_DESCRIPTOR
};

constexpr int kAnyOp = -1, kNone = -2;
const Spec kSpecs[] = {
    {dnn::kTensorDescriptor, dnn::kAttrTensorDataType, dnn::kTypeDataType, -1, 1, 1, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorDimensions, dnn::kTypeInt64, -1, 1, 8, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorStrides, dnn::kTypeInt64, -1, 1, 8, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorUniqueId, dnn::kTypeInt64, -1, 1, 1, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorByteAlignment, dnn::kTypeInt64, -1, 1, 1, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorIsVirtual, dnn::kTypeBoolean, -1, 1, 1, kNone},
    {dnn::kTensorDescriptor, dnn::kAttrTensorIsByValue, dnn::kTypeBoolean, -1, 1, 1, kNone},
    {dnn::kPointwiseDescriptor, dnn::kAttrPointwiseMode, dnn::kTypePointwiseMode, -1, 1, 1, kNone},
    {dnn::kPointwiseDescriptor, dnn::kAttrPointwiseMathPrec, dnn::kTypeDataType, -1, 1, 1, kNone},
    {dnn::kPointwiseDescriptor, dnn::kAttrPointwiseAxis, dnn::kTypeInt64, -1, 1, 1, kNone},
    {dnn::kMatmulDescriptor, dnn::kAttrMatmulCompType, dnn::kTypeDataType, -1, 1, 1, kNone},
    {dnn::kReductionDescriptor, dnn::kAttrReductionOperator, dnn::kTypeReductionOperator, -1, 1, 1, kNone},
    {dnn::kReductionDescriptor, dnn::kAttrReductionCompType, dnn::kTypeDataType, -1, 1, 1, kNone},
    {dnn::kOpMatmulDescriptor, dnn::kAttrOpMatmulADesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpMatmulDescriptor, dnn::kAttrOpMatmulBDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpMatmulDescriptor, dnn::kAttrOpMatmulCDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpMatmulDescriptor, dnn::kAttrOpMatmulDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kMatmulDescriptor},
    {dnn::kOpReductionDescriptor, dnn::kAttrOpReductionXDesc, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kTensorDescriptor},
    {dnn::kOpReductionDescriptor, dnn::kAttrOpReductionYDesc, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kTensorDescriptor},
    {dnn::kOpReductionDescriptor, dnn::kAttrOpReductionDesc, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kReductionDescriptor},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionCompType, dnn::kTypeDataType, -1, 1, 1, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionConvMode, dnn::kTypeConvolutionMode, -1, 1, 1, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionSpatialDims, dnn::kTypeInt64, -1, 1, 1, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionDilations, dnn::kTypeInt64, -1, 1, 3, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionFilterStrides, dnn::kTypeInt64, -1, 1, 3, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionPrePaddings, dnn::kTypeInt64, -1, 1, 3, kNone},
    {dnn::kConvolutionDescriptor, dnn::kAttrConvolutionPostPaddings, dnn::kTypeInt64, -1, 1, 3, kNone},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardAlpha, dnn::kTypeFloat, dnn::kTypeDouble, 1, 1, kNone},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardBeta, dnn::kTypeFloat, dnn::kTypeDouble, 1, 1, kNone},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardConvDesc, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kConvolutionDescriptor},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardW, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardX, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpConvForwardDescriptor, dnn::kAttrOpConvForwardY, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpPointwiseDescriptor, dnn::kAttrOpPointwisePwDescriptor, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kPointwiseDescriptor},
    {dnn::kOpPointwiseDescriptor, dnn::kAttrOpPointwiseXDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpPointwiseDescriptor, dnn::kAttrOpPointwiseBDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpPointwiseDescriptor, dnn::kAttrOpPointwiseYDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpPointwiseDescriptor, dnn::kAttrOpPointwiseTDesc, dnn::kTypeBackendDescriptor, -1, 1, 1, dnn::kTensorDescriptor},
    {dnn::kOpPointwiseDescriptor, 754 /* ALPHA1 */, dnn::kTypeFloat, dnn::kTypeDouble, 1, 1, kNone},
    {dnn::kOpPointwiseDescriptor, 755 /* ALPHA2 */, dnn::kTypeFloat, dnn::kTypeDouble, 1, 1, kNone},
    {dnn::kOperationGraphDescriptor, dnn::kAttrOperationGraphOps, dnn::kTypeBackendDescriptor, -1, 1, 64, kAnyOp},
    {dnn::kOperationGraphDescriptor, dnn::kAttrOperationGraphHandle, dnn::kTypeHandle, -1, 1, 1, kNone},
    {dnn::kEngineHeurDescriptor, dnn::kAttrEngineHeurOperationGraph, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kOperationGraphDescriptor},
    {dnn::kEngineHeurDescriptor, dnn::kAttrEngineHeurMode, dnn::kTypeHeurMode, -1, 1, 1, kNone},
    {dnn::kExecutionPlanDescriptor, dnn::kAttrExecutionPlanHandle, dnn::kTypeHandle, -1, 1, 1, kNone},
    {dnn::kExecutionPlanDescriptor, dnn::kAttrExecutionPlanEngineConfig, dnn::kTypeBackendDescriptor, -1, 1, 1,
     dnn::kEngineCfgDescriptor},
    {dnn::kVariantPackDescriptor, dnn::kAttrVariantPackUniqueIds, dnn::kTypeInt64, -1, 0, 64, kNone},
    {dnn::kVariantPackDescriptor, dnn::kAttrVariantPackDataPointers, dnn::kTypeVoidPtr, -1, 0, 64, kNone},
    {dnn::kVariantPackDescriptor, dnn::kAttrVariantPackWorkspace, dnn::kTypeVoidPtr, -1, 1, 1, kNone},
};

const Spec* find_spec(int kind, int attr) {
  for (const Spec& s : kSpecs)
    if (s.kind == kind && s.attr == attr) return &s;
  return nullptr;
}

// The caller holds the state mutex.
bool live(Desc* d) { return d && st().descs.count(d) != 0; }

const Attr* attr(const Desc& d, int name) {
  auto it = d.attrs.find(name);
  return it == d.attrs.end() ? nullptr : &it->second;
}

double scalar(const Attr& a) { return a.type == dnn::kTypeFloat ? *a.as<float>() : *a.as<double>(); }

// Reads the single descriptor an attribute refers to (validated at set time; finalized then).
const Desc* ref(const Desc& d, int name) {
  const Attr* a = attr(d, name);
  return a ? *a->as<Desc*>() : nullptr;
}

std::string dims_text(const int64_t* d, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Marks a handle busy for the scope; counts overlapping use (the caller's lock is missing).
class BusyScope {
 public:
  explicit BusyScope(Handle* h) : h_(h) {
    if (h_->busy.fetch_add(1) != 0) {
      std::lock_guard<std::recursive_mutex> lock(st().mutex);
      ++st().stats.interleaved;
    }
  }
  ~BusyScope() { h_->busy.fetch_sub(1); }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  Handle* h_;
};

// ---- finalize, per kind -------------------------------------------------------------------------------------

#define REQUIRE_ATTR(d, name, label) \
  if (!attr(d, name)) return fail(dnn::kBadParam, std::string(label) + " is required")

Status finalize_tensor(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrTensorDataType, "CUDNN_ATTR_TENSOR_DATA_TYPE");
  REQUIRE_ATTR(d, dnn::kAttrTensorDimensions, "CUDNN_ATTR_TENSOR_DIMENSIONS");
  REQUIRE_ATTR(d, dnn::kAttrTensorStrides, "CUDNN_ATTR_TENSOR_STRIDES");
  REQUIRE_ATTR(d, dnn::kAttrTensorUniqueId, "CUDNN_ATTR_TENSOR_UNIQUE_ID");
  REQUIRE_ATTR(d, dnn::kAttrTensorByteAlignment, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT");
  const Attr& dims = *attr(d, dnn::kAttrTensorDimensions);
  const Attr& strides = *attr(d, dnn::kAttrTensorStrides);
  if (dims.count != strides.count)
    return fail(dnn::kBadParam, "tensor: " + std::to_string(dims.count) + " dimensions but " +
                                    std::to_string(strides.count) + " strides");
  TensorInfo t;
  t.dtype = *attr(d, dnn::kAttrTensorDataType)->as<int>();
  if (t.dtype != dnn::kDataFloat && t.dtype != dnn::kDataHalf && t.dtype != dnn::kDataBfloat16 &&
      t.dtype != dnn::kDataInt32 && t.dtype != dnn::kDataBoolean)
    return fail(dnn::kNotSupported, "tensor: data type " + std::to_string(t.dtype) + " not supported by the fake");
  if (dims.count != 4) return fail(dnn::kNotSupported, "tensor: the fake supports 4-d tensors only");
  for (int i = 0; i < 4; ++i) {
    t.dims[i] = dims.as<int64_t>()[i];
    t.strides[i] = strides.as<int64_t>()[i];
    if (t.dims[i] <= 0 || t.strides[i] <= 0)
      return fail(dnn::kBadParam, "tensor: dimensions and strides must be positive, got " + dims_text(t.dims, 4) +
                                      " strides " + dims_text(t.strides, 4));
  }
  t.uid = *attr(d, dnn::kAttrTensorUniqueId)->as<int64_t>();
  t.alignment = *attr(d, dnn::kAttrTensorByteAlignment)->as<int64_t>();
  const int64_t esize = t.dtype == dnn::kDataFloat || t.dtype == dnn::kDataInt32 ? 4 : t.dtype == dnn::kDataBoolean ? 1 : 2;
  if (t.alignment < esize || (t.alignment & (t.alignment - 1)) != 0)
    return fail(dnn::kBadParam, "tensor: byte alignment " + std::to_string(t.alignment) +
                                    " is not a power of two >= the element size");
  if (const Attr* v = attr(d, dnn::kAttrTensorIsVirtual)) t.is_virtual = *v->as<bool>();
  if (const Attr* v = attr(d, dnn::kAttrTensorIsByValue)) t.by_value = *v->as<bool>();
  if ((t.dtype == dnn::kDataInt32 || t.dtype == dnn::kDataBoolean) && !t.is_virtual)
    return fail(dnn::kNotSupported, "tensor: the fake has INT32 and BOOLEAN tensors only as virtual ones");
  if (t.by_value && (t.is_virtual || t.elements() != 1 || t.dtype != dnn::kDataFloat))
    return fail(dnn::kBadParam, "tensor: a by-value tensor must be one float element and not virtual");
  d.tensor = t;
  return dnn::kSuccess;
}

Status finalize_conv(Desc& d) {
  for (int a : {dnn::kAttrConvolutionCompType, dnn::kAttrConvolutionConvMode, dnn::kAttrConvolutionSpatialDims,
                dnn::kAttrConvolutionDilations, dnn::kAttrConvolutionFilterStrides, dnn::kAttrConvolutionPrePaddings,
                dnn::kAttrConvolutionPostPaddings})
    if (!attr(d, a)) return fail(dnn::kBadParam, "convolution: attribute " + std::to_string(a) + " is required");
  const int64_t spatial = *attr(d, dnn::kAttrConvolutionSpatialDims)->as<int64_t>();
  if (spatial != 2) return fail(dnn::kNotSupported, "convolution: the fake supports 2 spatial dims only");
  ConvInfo c;
  c.comp = *attr(d, dnn::kAttrConvolutionCompType)->as<int>();
  if (c.comp != dnn::kDataFloat) return fail(dnn::kNotSupported, "convolution: compute type must be float");
  const int mode = *attr(d, dnn::kAttrConvolutionConvMode)->as<int>();
  if (mode != dnn::kCrossCorrelation) return fail(dnn::kNotSupported, "convolution: only cross-correlation");
  struct {
    int a;
    int64_t* out;
    int64_t min;
    const char* name;
  } arrays[] = {{dnn::kAttrConvolutionDilations, c.dil, 1, "dilations"},
                {dnn::kAttrConvolutionFilterStrides, c.stride, 1, "filter strides"},
                {dnn::kAttrConvolutionPrePaddings, c.pre, 0, "pre paddings"},
                {dnn::kAttrConvolutionPostPaddings, c.post, 0, "post paddings"}};
  for (auto& arr : arrays) {
    const Attr& a = *attr(d, arr.a);
    if (a.count != spatial)
      return fail(dnn::kBadParam, std::string("convolution: ") + arr.name + " has " + std::to_string(a.count) +
                                      " values for " + std::to_string(spatial) + " spatial dims");
    for (int i = 0; i < 2; ++i) {
      arr.out[i] = a.as<int64_t>()[i];
      if (arr.out[i] < arr.min) return fail(dnn::kBadParam, std::string("convolution: bad ") + arr.name);
    }
  }
  d.conv = c;
  return dnn::kSuccess;
}

Status finalize_pointwise(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrPointwiseMode, "CUDNN_ATTR_POINTWISE_MODE");
  REQUIRE_ATTR(d, dnn::kAttrPointwiseMathPrec, "CUDNN_ATTR_POINTWISE_MATH_PREC");
  d.pw_mode = *attr(d, dnn::kAttrPointwiseMode)->as<int>();
  d.pw_prec = *attr(d, dnn::kAttrPointwiseMathPrec)->as<int>();
  int allowed_prec = dnn::kDataFloat;  // what else the mode may compute in
  switch (d.pw_mode) {
    case dnn::kPointwiseAdd: case dnn::kPointwiseReluFwd: case dnn::kPointwiseSigmoidFwd:
    case dnn::kPointwiseSwishFwd: case dnn::kPointwiseGeluApproxTanhFwd: case dnn::kPointwiseMul:
    case dnn::kPointwiseSub: case dnn::kPointwiseDiv: case dnn::kPointwiseExp: case dnn::kPointwiseBinarySelect:
      break;
    case dnn::kPointwiseGenIndex: allowed_prec = dnn::kDataInt32; break;
    case dnn::kPointwiseCmpGe: allowed_prec = dnn::kDataBoolean; break;
    default: return fail(dnn::kNotSupported, "pointwise: mode " + std::to_string(d.pw_mode) + " not in the fake");
  }
  if (d.pw_prec != dnn::kDataFloat && d.pw_prec != allowed_prec)
    return fail(dnn::kNotSupported, "pointwise: math precision " + std::to_string(d.pw_prec) + " for mode " +
                                        std::to_string(d.pw_mode));
  if (const Attr* a = attr(d, dnn::kAttrPointwiseAxis)) d.pw_axis = *a->as<int64_t>();
  if (d.pw_mode == dnn::kPointwiseGenIndex && (d.pw_axis < 0 || d.pw_axis > 3))
    return fail(dnn::kBadParam, "pointwise: GEN_INDEX needs CUDNN_ATTR_POINTWISE_AXIS 0..3");
  if (d.pw_mode != dnn::kPointwiseGenIndex && d.pw_axis != -1)
    return fail(dnn::kBadParam, "pointwise: CUDNN_ATTR_POINTWISE_AXIS is GEN_INDEX's");
  return dnn::kSuccess;
}

Status finalize_conv_op(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardX, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X");
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardW, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W");
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardY, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y");
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardConvDesc, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC");
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardAlpha, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA");
  REQUIRE_ATTR(d, dnn::kAttrOpConvForwardBeta, "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA");
  OpInfo op;
  op.is_conv = true;
  op.x = ref(d, dnn::kAttrOpConvForwardX)->tensor;
  op.w_or_b = ref(d, dnn::kAttrOpConvForwardW)->tensor;
  op.y = ref(d, dnn::kAttrOpConvForwardY)->tensor;
  op.conv = ref(d, dnn::kAttrOpConvForwardConvDesc)->conv;
  op.alpha = scalar(*attr(d, dnn::kAttrOpConvForwardAlpha));
  op.beta = scalar(*attr(d, dnn::kAttrOpConvForwardBeta));
  if (op.beta != 0) return fail(dnn::kNotSupported, "convolution forward: the fake supports beta 0 only");
  const TensorInfo &x = op.x, &w = op.w_or_b, &y = op.y;
  if (x.dtype != w.dtype) return fail(dnn::kBadParam, "convolution forward: x and w differ in data type");
  if (w.dims[1] <= 0 || x.dims[1] % w.dims[1] != 0)
    return fail(kBadParamShapeMismatch, "convolution forward: x has C=" + std::to_string(x.dims[1]) +
                                            ", not a multiple of w's " + std::to_string(w.dims[1]));
  const int64_t groups = x.dims[1] / w.dims[1];
  if (w.dims[0] % groups != 0)
    return fail(kBadParamShapeMismatch, "convolution forward: K=" + std::to_string(w.dims[0]) +
                                            " is not a multiple of the groups " + std::to_string(groups));
  int64_t expect[4] = {x.dims[0], w.dims[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = x.dims[2 + i] + op.conv.pre[i] + op.conv.post[i] - op.conv.dil[i] * (w.dims[2 + i] - 1) - 1;
    if (span < 0) return fail(kBadParamShapeMismatch, "convolution forward: the filter is larger than the input");
    expect[2 + i] = span / op.conv.stride[i] + 1;
  }
  if (std::memcmp(expect, y.dims, sizeof expect) != 0)
    return fail(kBadParamShapeMismatch, "convolution forward: y is " + dims_text(y.dims, 4) + ", expected " +
                                            dims_text(expect, 4));
  d.op = op;
  return dnn::kSuccess;
}

Status finalize_pointwise_op(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrOpPointwisePwDescriptor, "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR");
  REQUIRE_ATTR(d, dnn::kAttrOpPointwiseXDesc, "CUDNN_ATTR_OPERATION_POINTWISE_XDESC");
  REQUIRE_ATTR(d, dnn::kAttrOpPointwiseYDesc, "CUDNN_ATTR_OPERATION_POINTWISE_YDESC");
  OpInfo op;
  const Desc* pw = ref(d, dnn::kAttrOpPointwisePwDescriptor);
  op.mode = pw->pw_mode;
  op.axis = pw->pw_axis;
  op.x = ref(d, dnn::kAttrOpPointwiseXDesc)->tensor;
  op.y = ref(d, dnn::kAttrOpPointwiseYDesc)->tensor;
  const bool binary = op.mode == dnn::kPointwiseAdd || op.mode == dnn::kPointwiseMul || op.mode == dnn::kPointwiseSub ||
                      op.mode == dnn::kPointwiseDiv || op.mode == dnn::kPointwiseCmpGe ||
                      op.mode == dnn::kPointwiseBinarySelect;
  const bool ternary = op.mode == dnn::kPointwiseBinarySelect;
  if (binary != (attr(d, dnn::kAttrOpPointwiseBDesc) != nullptr))
    return fail(dnn::kBadParam, binary ? "pointwise: a binary mode needs CUDNN_ATTR_OPERATION_POINTWISE_BDESC"
                                       : "pointwise: a unary mode takes no BDESC");
  if (ternary != (attr(d, dnn::kAttrOpPointwiseTDesc) != nullptr))
    return fail(dnn::kBadParam, ternary ? "pointwise: BINARY_SELECT needs CUDNN_ATTR_OPERATION_POINTWISE_TDESC"
                                        : "pointwise: only BINARY_SELECT takes a TDESC");
  auto broadcasts = [&](const TensorInfo& b, const char* name) -> Status {
    for (int i = 0; i < 4; ++i)
      if (b.dims[i] != 1 && b.dims[i] != op.x.dims[i])
        return fail(kBadParamShapeMismatch, std::string("pointwise: ") + name + " " + dims_text(b.dims, 4) +
                                                " does not broadcast to x " + dims_text(op.x.dims, 4));
    return dnn::kSuccess;
  };
  if (binary) {
    op.has_b = true;
    op.w_or_b = ref(d, dnn::kAttrOpPointwiseBDesc)->tensor;
    if (Status st = broadcasts(op.w_or_b, "b"); st) return st;
  }
  if (ternary) {
    op.has_t = true;
    op.t = ref(d, dnn::kAttrOpPointwiseTDesc)->tensor;
    if (Status st = broadcasts(op.t, "t"); st) return st;
    if (op.t.dtype != dnn::kDataBoolean) return fail(dnn::kBadParam, "pointwise: BINARY_SELECT's t must be BOOLEAN");
  }
  if (op.mode == dnn::kPointwiseGenIndex && op.y.dtype != dnn::kDataInt32 && op.y.dtype != dnn::kDataFloat)
    return fail(dnn::kBadParam, "pointwise: GEN_INDEX writes INT32 or FLOAT");
  if (op.mode == dnn::kPointwiseCmpGe && op.y.dtype != dnn::kDataBoolean)
    return fail(dnn::kBadParam, "pointwise: CMP_GE writes BOOLEAN");
  if (std::memcmp(op.x.dims, op.y.dims, sizeof op.x.dims) != 0)
    return fail(kBadParamShapeMismatch, "pointwise: y " + dims_text(op.y.dims, 4) + " differs from x " +
                                            dims_text(op.x.dims, 4));
  if (const Attr* a = attr(d, 754)) op.alpha = scalar(*a);
  if (const Attr* a = attr(d, 755)) op.alpha2 = scalar(*a);
  d.op = op;
  return dnn::kSuccess;
}

Status finalize_matmul(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrMatmulCompType, "CUDNN_ATTR_MATMUL_COMP_TYPE");
  if (*attr(d, dnn::kAttrMatmulCompType)->as<int>() != dnn::kDataFloat)
    return fail(dnn::kNotSupported, "matmul: the fake accumulates in float only");
  return dnn::kSuccess;
}

Status finalize_reduction(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrReductionOperator, "CUDNN_ATTR_REDUCTION_OPERATOR");
  REQUIRE_ATTR(d, dnn::kAttrReductionCompType, "CUDNN_ATTR_REDUCTION_COMP_TYPE");
  d.reduce_op = *attr(d, dnn::kAttrReductionOperator)->as<int>();
  if (d.reduce_op != dnn::kReduceAdd && d.reduce_op != dnn::kReduceMax)
    return fail(dnn::kNotSupported, "reduction: operator " + std::to_string(d.reduce_op) + " not in the fake");
  if (*attr(d, dnn::kAttrReductionCompType)->as<int>() != dnn::kDataFloat)
    return fail(dnn::kNotSupported, "reduction: compute type must be float");
  return dnn::kSuccess;
}

// C [b, h, M, N] = A [b, h, M, K] . B [b, h, K, N]; A's and B's batch dims may be 1 (broadcast).
Status finalize_matmul_op(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrOpMatmulADesc, "CUDNN_ATTR_OPERATION_MATMUL_ADESC");
  REQUIRE_ATTR(d, dnn::kAttrOpMatmulBDesc, "CUDNN_ATTR_OPERATION_MATMUL_BDESC");
  REQUIRE_ATTR(d, dnn::kAttrOpMatmulCDesc, "CUDNN_ATTR_OPERATION_MATMUL_CDESC");
  REQUIRE_ATTR(d, dnn::kAttrOpMatmulDesc, "CUDNN_ATTR_OPERATION_MATMUL_DESC");
  OpInfo op;
  op.kind = OpKind::kMatmul;
  op.has_b = true;
  op.x = ref(d, dnn::kAttrOpMatmulADesc)->tensor;
  op.w_or_b = ref(d, dnn::kAttrOpMatmulBDesc)->tensor;
  op.y = ref(d, dnn::kAttrOpMatmulCDesc)->tensor;
  const TensorInfo &a = op.x, &b = op.w_or_b, &c = op.y;
  bool ok = a.dims[2] == c.dims[2] && b.dims[3] == c.dims[3] && a.dims[3] == b.dims[2];
  for (int i = 0; i < 2; ++i) ok = ok && (a.dims[i] == 1 || a.dims[i] == c.dims[i]) && (b.dims[i] == 1 || b.dims[i] == c.dims[i]);
  if (!ok)
    return fail(kBadParamShapeMismatch, "matmul: a " + dims_text(a.dims, 4) + " . b " + dims_text(b.dims, 4) +
                                            " does not give c " + dims_text(c.dims, 4));
  if (a.dtype != b.dtype) return fail(dnn::kBadParam, "matmul: a and b differ in data type");
  d.op = op;
  return dnn::kSuccess;
}

// Y = reduce(X) over the dims where Y has size 1.
Status finalize_reduction_op(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrOpReductionXDesc, "CUDNN_ATTR_OPERATION_REDUCTION_XDESC");
  REQUIRE_ATTR(d, dnn::kAttrOpReductionYDesc, "CUDNN_ATTR_OPERATION_REDUCTION_YDESC");
  REQUIRE_ATTR(d, dnn::kAttrOpReductionDesc, "CUDNN_ATTR_OPERATION_REDUCTION_DESC");
  OpInfo op;
  op.kind = OpKind::kReduction;
  op.x = ref(d, dnn::kAttrOpReductionXDesc)->tensor;
  op.y = ref(d, dnn::kAttrOpReductionYDesc)->tensor;
  op.mode = ref(d, dnn::kAttrOpReductionDesc)->reduce_op;
  for (int i = 0; i < 4; ++i)
    if (op.y.dims[i] != 1 && op.y.dims[i] != op.x.dims[i])
      return fail(kBadParamShapeMismatch, "reduction: y " + dims_text(op.y.dims, 4) + " is not x " +
                                              dims_text(op.x.dims, 4) + " with reduced dims of size 1");
  d.op = op;
  return dnn::kSuccess;
}

// Whether `ops` form inference flash attention as cuDNN's fused engines take it: Q.K^T (real half/bf16 Q and
// K, K's head dim contiguous), pointwise/reduction ops on virtual tensors (real inputs: by-value scalars and a
// bias of the I/O type), then P.V with P virtual of the I/O type and V, O real. Empty when it does, else why not.
std::string attention_pattern(const std::vector<OpInfo>& ops, GraphInfo& g) {
  std::vector<const OpInfo*> mms;
  for (const OpInfo& op : ops)
    if (op.kind == OpKind::kMatmul) mms.push_back(&op);
  if (mms.size() != 2) return "attention needs exactly two matmuls";
  const OpInfo *first = nullptr, *second = nullptr;
  for (const OpInfo* m : mms) (m->x.is_virtual ? second : first) = m;
  if (!first || !second) return "one matmul must read real Q and K, the other virtual P";
  const int io = first->x.dtype;
  if (io != dnn::kDataHalf && io != dnn::kDataBfloat16) return "Q and K must be half or bfloat16";
  if (first->w_or_b.is_virtual || first->w_or_b.dtype != io) return "K must be real, of Q's type";
  if (first->w_or_b.strides[2] != 1) return "K's head dim must be contiguous (K given as K^T, strides swapped)";
  if (!first->y.is_virtual || first->y.dtype != dnn::kDataFloat) return "Q.K^T must be a virtual float tensor";
  if (second->x.dtype != io) return "P (the softmax) must have the I/O type for the second matmul";
  if (second->w_or_b.is_virtual || second->w_or_b.dtype != io) return "V must be real, of Q's type";
  if (second->y.is_virtual || second->y.dtype != io) return "O must be real, of Q's type";
  for (const OpInfo& op : ops) {
    if (op.kind == OpKind::kConv) return "a convolution in an attention graph";
    if (&op == first || &op == second) continue;
    if (op.y.is_virtual == false) return "an intermediate op writes a real tensor";
    for (const TensorInfo* in : {&op.x, op.has_b ? &op.w_or_b : nullptr, op.has_t ? &op.t : nullptr})
      if (in && !in->is_virtual && !in->by_value && in->dtype != io) return "a real bias not of the I/O type";
  }
  g.attention = true;
  g.head_dim = first->x.dims[3];
  g.value_dim = second->w_or_b.dims[3];
  return {};
}

Status finalize_graph(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrOperationGraphOps, "CUDNN_ATTR_OPERATIONGRAPH_OPS");
  REQUIRE_ATTR(d, dnn::kAttrOperationGraphHandle, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE");
  Handle* h = *attr(d, dnn::kAttrOperationGraphHandle)->as<Handle*>();
  if (!st().handles.count(h)) return fail(dnn::kBadParam, "operation graph: not a live cudnnHandle");
  BusyScope busy(h);  // cuDNN uses the handle here: not concurrently with another call on it
  const Attr& ops = *attr(d, dnn::kAttrOperationGraphOps);
  auto g = std::make_shared<GraphInfo>();
  std::vector<OpInfo> pending;
  std::map<int64_t, int> producers, consumers;
  auto add_tensor = [&](const TensorInfo& t) -> Status {
    auto [it, inserted] = g->tensors.emplace(t.uid, t);
    if (!inserted && !it->second.same(t))
      return fail(kBadParamDuplicated, "operation graph: unique id " + std::to_string(t.uid) +
                                           " names two different tensors");
    if (t.dtype != dnn::kDataFloat && !t.is_virtual) g->non_float_io = true;
    return dnn::kSuccess;
  };
  int convs = 0, matmuls = 0, reductions = 0;
  for (int64_t i = 0; i < ops.count; ++i) {
    const OpInfo& op = ops.as<Desc*>()[i]->op;
    pending.push_back(op);
    convs += op.is_conv;
    matmuls += op.kind == OpKind::kMatmul;
    reductions += op.kind == OpKind::kReduction;
    for (const TensorInfo* t : {&op.x, &op.y}) {
      if (Status s = add_tensor(*t); s) return s;
    }
    if (op.is_conv || op.has_b) {
      if (Status s = add_tensor(op.w_or_b); s) return s;
      ++consumers[op.w_or_b.uid];
    }
    if (op.has_t) {
      if (Status s = add_tensor(op.t); s) return s;
      ++consumers[op.t.uid];
    }
    if (op.y.by_value)
      return fail(dnn::kBadParam, "operation graph: by-value tensor " + std::to_string(op.y.uid) + " is written");
    if (op.is_conv && op.w_or_b.dims[1] != op.x.dims[1]) g->grouped = true;
    ++consumers[op.x.uid];
    if (++producers[op.y.uid] > 1)
      return fail(dnn::kBadParam, "operation graph: tensor " + std::to_string(op.y.uid) + " is written twice");
  }
  for (const auto& [uid, t] : g->tensors) {
    if (t.is_virtual && (!producers.count(uid) || !consumers.count(uid)))
      return fail(dnn::kBadParam, "operation graph: virtual tensor " + std::to_string(uid) +
                                      " must be produced and consumed inside the graph");
    if (!t.is_virtual && producers.count(uid) && consumers.count(uid))
      return fail(kNotSupportedGraphPattern, "operation graph: real tensor " + std::to_string(uid) +
                                                 " both written and read");
  }
  if (matmuls > 0 || reductions > 0) {
    if (std::string why = attention_pattern(pending, *g); !why.empty())
      return fail(kNotSupportedGraphPattern, "operation graph: not the fused-attention pattern: " + why);
  } else if (convs != 1) {
    return fail(kNotSupportedGraphPattern, "operation graph: the fake runs exactly one convolution, or attention");
  }
  // Topological order: an op runs once every tensor it reads that some op writes is written.
  std::set<int64_t> ready;
  for (const auto& [uid, t] : g->tensors)
    if (!producers.count(uid)) ready.insert(uid);
  while (!pending.empty()) {
    bool progress = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      const OpInfo& op = pending[i];
      const bool needs_b = op.is_conv || op.has_b;
      if (ready.count(op.x.uid) && (!needs_b || ready.count(op.w_or_b.uid)) && (!op.has_t || ready.count(op.t.uid))) {
        ready.insert(op.y.uid);
        g->ops.push_back(op);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        progress = true;
        break;
      }
    }
    if (!progress) return fail(dnn::kBadParam, "operation graph: a cycle, or an input nothing writes");
  }
  d.graph = g;
  ++st().stats.graphs_finalized;
  return dnn::kSuccess;
}

Status finalize_heur(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrEngineHeurOperationGraph, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH");
  REQUIRE_ATTR(d, dnn::kAttrEngineHeurMode, "CUDNN_ATTR_ENGINEHEUR_MODE");
  const int mode = *attr(d, dnn::kAttrEngineHeurMode)->as<int>();
  if (mode < 0 || mode > 3) return fail(dnn::kBadParam, "heuristics: bad mode " + std::to_string(mode));
  d.graph = ref(d, dnn::kAttrEngineHeurOperationGraph)->graph;
  d.results.clear();
  const GraphInfo& g = *d.graph;
  // cuDNN's fused attention takes head dims that are multiples of 8 up to 128.
  const bool attention_unsupported = g.attention && (g.head_dim % 8 != 0 || g.head_dim > 128 ||
                                                     g.value_dim % 8 != 0 || g.value_dim > 128);
  const bool none = env_int("THUNDERC_FAKE_CUDNN_NO_ENGINE", 0) != 0 ||
                    (g.grouped && env_int("THUNDERC_FAKE_CUDNN_NO_GROUPED", 0) != 0) ||
                    (g.attention && env_int("THUNDERC_FAKE_CUDNN_NO_ATTENTION", 0) != 0) || attention_unsupported;
  if (!none) {
    if (mode != dnn::kHeurModeFallback) d.results.push_back(engine(0));
    d.results.push_back(engine(1));
  }
  ++st().stats.heuristics_finalized;
  return dnn::kSuccess;
}

Status finalize_plan(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrExecutionPlanHandle, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
  REQUIRE_ATTR(d, dnn::kAttrExecutionPlanEngineConfig, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
  Handle* h = *attr(d, dnn::kAttrExecutionPlanHandle)->as<Handle*>();
  if (!st().handles.count(h)) return fail(dnn::kBadParam, "execution plan: not a live cudnnHandle");
  BusyScope busy(h);
  const Desc* cfg = ref(d, dnn::kAttrExecutionPlanEngineConfig);
  // A real build takes a while (engine selection, maybe a kernel compile): long enough for a caller that uses
  // the handle concurrently to be caught.
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (cfg->eng.index == env_int("THUNDERC_FAKE_CUDNN_FAIL_ENGINE", -1))
    return fail(dnn::kNotSupported, "execution plan: engine " + std::to_string(cfg->eng.index) +
                                        " cannot run this graph ($THUNDERC_FAKE_CUDNN_FAIL_ENGINE)");
  d.graph = cfg->graph;
  d.eng = cfg->eng;
  d.handle = h;
  ++st().stats.plans_finalized;
  return dnn::kSuccess;
}

Status finalize_pack(Desc& d) {
  REQUIRE_ATTR(d, dnn::kAttrVariantPackUniqueIds, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS");
  REQUIRE_ATTR(d, dnn::kAttrVariantPackDataPointers, "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS");
  const Attr& uids = *attr(d, dnn::kAttrVariantPackUniqueIds);
  const Attr& ptrs = *attr(d, dnn::kAttrVariantPackDataPointers);
  if (uids.count != ptrs.count)
    return fail(dnn::kBadParam, "variant pack: " + std::to_string(uids.count) + " unique ids but " +
                                    std::to_string(ptrs.count) + " data pointers");
  d.pack_uids.assign(uids.as<int64_t>(), uids.as<int64_t>() + uids.count);
  d.pack_ptrs.assign(ptrs.as<void*>(), ptrs.as<void*>() + ptrs.count);
  if (std::set<int64_t>(d.pack_uids.begin(), d.pack_uids.end()).size() != d.pack_uids.size())
    return fail(kBadParamDuplicated, "variant pack: a unique id appears twice");
  if (const Attr* w = attr(d, dnn::kAttrVariantPackWorkspace)) d.pack_workspace = *w->as<void*>();
  return dnn::kSuccess;
}

// ---- execution (host, double precision) ---------------------------------------------------------------------

// float16/bfloat16 as the compiler stores them (core/ir/half.h: round to nearest even).
using thunderc::bf16_to_float;
using thunderc::float_to_bf16;
float half_to_float(uint16_t h) { return thunderc::f16_to_float(h); }
uint16_t float_to_half(float f) { return thunderc::float_to_f16(f); }

// TF32: float with a 10-bit mantissa (round to nearest even), as tensor cores read float inputs.
double to_tf32(double v) {
  float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Buffer {
  const TensorInfo* t = nullptr;
  unsigned char* data = nullptr;  // real tensors
  std::vector<double> values;     // virtual tensors (dense)
  size_t offset(const int64_t i[4]) const {
    return static_cast<size_t>(i[0] * t->strides[0] + i[1] * t->strides[1] + i[2] * t->strides[2] +
                               i[3] * t->strides[3]);
  }
  double load(const int64_t i[4]) const {
    if (!data) return values[static_cast<size_t>(((i[0] * t->dims[1] + i[1]) * t->dims[2] + i[2]) * t->dims[3] + i[3])];
    const size_t o = offset(i);
    switch (t->dtype) {
      case dnn::kDataHalf: return half_to_float(reinterpret_cast<const uint16_t*>(data)[o]);
      case dnn::kDataBfloat16: return bf16_to_float(reinterpret_cast<const uint16_t*>(data)[o]);
      default: return reinterpret_cast<const float*>(data)[o];
    }
  }
  void store(const int64_t i[4], double v) {
    if (!data) {
      // A virtual tensor of a 16-bit type holds what the engine would: the value rounded to that type.
      if (t->dtype == dnn::kDataHalf) v = half_to_float(float_to_half(static_cast<float>(v)));
      if (t->dtype == dnn::kDataBfloat16) v = bf16_to_float(float_to_bf16(static_cast<float>(v)));
      values[static_cast<size_t>(((i[0] * t->dims[1] + i[1]) * t->dims[2] + i[2]) * t->dims[3] + i[3])] = v;
      return;
    }
    const size_t o = offset(i);
    switch (t->dtype) {
      case dnn::kDataHalf: reinterpret_cast<uint16_t*>(data)[o] = float_to_half(static_cast<float>(v)); break;
      case dnn::kDataBfloat16: reinterpret_cast<uint16_t*>(data)[o] = float_to_bf16(static_cast<float>(v)); break;
      default: reinterpret_cast<float*>(data)[o] = static_cast<float>(v);
    }
  }
};

template <class F>
void for_each_index(const int64_t dims[4], F&& f) {
  int64_t i[4];
  for (i[0] = 0; i[0] < dims[0]; ++i[0])
    for (i[1] = 0; i[1] < dims[1]; ++i[1])
      for (i[2] = 0; i[2] < dims[2]; ++i[2])
        for (i[3] = 0; i[3] < dims[3]; ++i[3]) f(i);
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

void run_graph(const GraphInfo& g, const Engine& e, std::map<int64_t, Buffer>& bufs) {
  for (const OpInfo& op : g.ops) {
    const Buffer& x = bufs.at(op.x.uid);
    Buffer& y = bufs.at(op.y.uid);
    if (op.is_conv) {
      const Buffer& w = bufs.at(op.w_or_b.uid);
      const int64_t cg = op.w_or_b.dims[1], groups = op.x.dims[1] / cg, kg = op.w_or_b.dims[0] / groups;
      const int64_t R = op.w_or_b.dims[2], S = op.w_or_b.dims[3];
      auto in = [&](double v) { return e.tensor_core ? to_tf32(v) : v; };
      for_each_index(op.y.dims, [&](const int64_t* o) {
        const int64_t g0 = o[1] / kg * cg;
        double acc = 0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s) {
              const int64_t ih = o[2] * op.conv.stride[0] - op.conv.pre[0] + r * op.conv.dil[0];
              const int64_t iw = o[3] * op.conv.stride[1] - op.conv.pre[1] + s * op.conv.dil[1];
              if (ih < 0 || iw < 0 || ih >= op.x.dims[2] || iw >= op.x.dims[3]) continue;
              const int64_t xi[4] = {o[0], g0 + c, ih, iw}, wi[4] = {o[1], c, r, s};
              acc += in(x.load(xi)) * in(w.load(wi));
            }
        y.store(o, op.alpha * acc);
      });
      continue;
    }
    if (op.kind == OpKind::kMatmul) {
      const Buffer& b = bufs.at(op.w_or_b.uid);
      const int64_t K = op.x.dims[3];
      for_each_index(op.y.dims, [&](const int64_t* o) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t ai[4] = {op.x.dims[0] == 1 ? 0 : o[0], op.x.dims[1] == 1 ? 0 : o[1], o[2], k};
          const int64_t bi[4] = {op.w_or_b.dims[0] == 1 ? 0 : o[0], op.w_or_b.dims[1] == 1 ? 0 : o[1], k, o[3]};
          acc += x.load(ai) * b.load(bi);
        }
        y.store(o, acc);
      });
      continue;
    }
    if (op.kind == OpKind::kReduction) {
      const bool max = op.mode == dnn::kReduceMax;
      std::vector<double> acc(static_cast<size_t>(op.y.elements()), max ? -INFINITY : 0.0);
      auto slot = [&](const int64_t* i) {
        int64_t r[4];
        for (int k = 0; k < 4; ++k) r[k] = op.y.dims[k] == 1 ? 0 : i[k];
        return static_cast<size_t>(((r[0] * op.y.dims[1] + r[1]) * op.y.dims[2] + r[2]) * op.y.dims[3] + r[3]);
      };
      for_each_index(op.x.dims, [&](const int64_t* i) {
        double& a = acc[slot(i)];
        const double v = x.load(i);
        a = max ? (v > a ? v : a) : a + v;
      });
      for_each_index(op.y.dims, [&](const int64_t* i) { y.store(i, acc[slot(i)]); });
      continue;
    }
    const Buffer* b = op.has_b ? &bufs.at(op.w_or_b.uid) : nullptr;
    const Buffer* t = op.has_t ? &bufs.at(op.t.uid) : nullptr;
    for_each_index(op.y.dims, [&](const int64_t* i) {
      const double a = x.load(i);
      int64_t bi[4], ti[4];
      for (int k = 0; k < 4; ++k) bi[k] = op.w_or_b.dims[k] == 1 ? 0 : i[k], ti[k] = op.t.dims[k] == 1 ? 0 : i[k];
      double v = 0;
      switch (op.mode) {
        case dnn::kPointwiseAdd: v = op.alpha * a + op.alpha2 * b->load(bi); break;
        case dnn::kPointwiseMul: v = a * b->load(bi); break;
        case dnn::kPointwiseSub: v = a - b->load(bi); break;
        case dnn::kPointwiseDiv: v = a / b->load(bi); break;
        case dnn::kPointwiseExp: v = std::exp(a); break;
        case dnn::kPointwiseGenIndex: v = static_cast<double>(i[op.axis]); break;
        case dnn::kPointwiseCmpGe: v = a >= b->load(bi) ? 1 : 0; break;
        case dnn::kPointwiseBinarySelect: v = t->load(ti) != 0 ? a : b->load(bi); break;
        case dnn::kPointwiseReluFwd: v = a > 0 ? a : 0; break;
        case dnn::kPointwiseSigmoidFwd: v = sigmoid(a); break;
        case dnn::kPointwiseSwishFwd: v = a * sigmoid(a); break;
        case dnn::kPointwiseGeluApproxTanhFwd:
          v = 0.5 * a * (1 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
          break;
      }
      y.store(i, v);
    });
  }
}

void* fake_cuda_current_context() {
  using Fn = int (*)(void**);
  static Fn fn = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return h ? reinterpret_cast<Fn>(dlsym(h, "cuCtxGetCurrent")) : nullptr;
  }();
  void* ctx = nullptr;
  if (fn && fn(&ctx) != 0) ctx = nullptr;
  return ctx;
}

// One cudnnBackendExecute, with what it reads.
struct ExecuteJob {
  std::shared_ptr<const GraphInfo> g;  // keeps the tensors the buffers point into alive
  Engine e;
  std::map<int64_t, Buffer> bufs;
  void* workspace;
  void* stream;
};

void run_execute(void* p) {
  auto& j = *static_cast<ExecuteJob*>(p);
  if (j.e.workspace > 0) std::memset(j.workspace, 0xAB, static_cast<size_t>(j.e.workspace));  // garbage after
  run_graph(*j.g, j.e, j.bufs);
  State& s = st();
  std::lock_guard<std::recursive_mutex> l(s.mutex);
  ++s.stats.executes;
  s.stats.last_engine = j.e.index;
  s.stats.last_workspace_size = j.e.workspace;
  s.stats.last_stream = j.stream;
}

void release_execute(void* p) { delete static_cast<ExecuteJob*>(p); }

int enqueue_on_stream(void* stream, ExecuteJob* job) {
  using Fn = int (*)(void*, void (*)(void*), void*, void (*)(void*));
  static const Fn fn = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return h ? reinterpret_cast<Fn>(dlsym(h, "thunderc_fake_cuda_enqueue")) : nullptr;
  }();
  if (!fn) {  // no fake driver loaded: run now
    run_execute(job);
    release_execute(job);
    return 0;
  }
  return fn(stream, run_execute, job, release_execute);
}

}  // namespace

// ---- the API -------------------------------------------------------------------------------------------------

EXPORT size_t cudnnGetVersion(void) { return static_cast<size_t>(env_int("THUNDERC_FAKE_CUDNN_VERSION", 91900)); }

EXPORT const char* cudnnGetErrorString(Status s) { return status_name(s); }

EXPORT void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (!message || max_size == 0) return;
  std::snprintf(message, max_size, "%s", t_last_error.c_str());
  t_last_error.clear();
}

EXPORT Status cudnnCreate(void** handle) {
  if (!handle) return fail(kBadParamNullPointer, "cudnnCreate: NULL");
  auto* h = new Handle;
  h->ctx = fake_cuda_current_context();
  std::lock_guard<std::recursive_mutex> lock(st().mutex);
  st().handles.insert(h);
  ++st().stats.live_handles;
  *handle = h;
  return dnn::kSuccess;
}

EXPORT Status cudnnDestroy(void* handle) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  auto it = s.handles.find(static_cast<Handle*>(handle));
  if (it == s.handles.end()) {
    lock.unlock();
    return fail(dnn::kBadParam, "cudnnDestroy: not a live handle");
  }
  delete *it;
  s.handles.erase(it);
  --s.stats.live_handles;
  return dnn::kSuccess;
}

EXPORT Status cudnnSetStream(void* handle, void* stream) {
  Handle* h = static_cast<Handle*>(handle);
  {
    std::lock_guard<std::recursive_mutex> lock(st().mutex);
    if (!st().handles.count(h)) h = nullptr;
  }
  if (!h) return fail(dnn::kBadParam, "cudnnSetStream: not a live handle");
  BusyScope busy(h);
  h->stream = stream;
  h->stream_setter = std::this_thread::get_id();
  return dnn::kSuccess;
}

EXPORT Status cudnnBackendCreateDescriptor(int type, void** out) {
  if (!out) return fail(kBadParamNullPointer, "cudnnBackendCreateDescriptor: NULL");
  switch (type) {
    case dnn::kPointwiseDescriptor: case dnn::kConvolutionDescriptor: case dnn::kEngineDescriptor:
    case dnn::kEngineCfgDescriptor: case dnn::kEngineHeurDescriptor: case dnn::kExecutionPlanDescriptor:
    case dnn::kOpConvForwardDescriptor: case dnn::kOpPointwiseDescriptor: case dnn::kOperationGraphDescriptor:
    case dnn::kVariantPackDescriptor: case dnn::kTensorDescriptor: case dnn::kMatmulDescriptor:
    case dnn::kOpMatmulDescriptor: case dnn::kReductionDescriptor: case dnn::kOpReductionDescriptor: break;
    default: return fail(dnn::kNotSupported, "descriptor type " + std::to_string(type) + " not in the fake");
  }
  auto* d = new Desc;
  d->kind = type;
  std::lock_guard<std::recursive_mutex> lock(st().mutex);
  st().descs.insert(d);
  ++st().stats.live_descriptors;
  *out = d;
  return dnn::kSuccess;
}

EXPORT Status cudnnBackendDestroyDescriptor(void* desc) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  auto it = s.descs.find(static_cast<Desc*>(desc));
  if (it == s.descs.end()) {
    lock.unlock();
    return fail(dnn::kBadParam, "cudnnBackendDestroyDescriptor: not a live descriptor (destroyed twice?)");
  }
  delete *it;
  s.descs.erase(it);
  --s.stats.live_descriptors;
  return dnn::kSuccess;
}

EXPORT Status cudnnBackendSetAttribute(void* desc, int name, int type, int64_t count, const void* elements) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  Desc* d = static_cast<Desc*>(desc);
  auto bad = [&](Status code, const std::string& why) {
    lock.unlock();
    return fail(code, "cudnnBackendSetAttribute(attribute " + std::to_string(name) + "): " + why);
  };
  if (!live(d)) return bad(dnn::kBadParam, "not a live descriptor");
  if (d->finalized) return bad(dnn::kBadParam, "the descriptor is already finalized");
  const Spec* spec = find_spec(d->kind, name);
  if (!spec) return bad(dnn::kBadParam, "not an attribute of descriptor type " + std::to_string(d->kind));
  if (type != spec->type && type != spec->alt_type)
    return bad(kBadParamAttributeType, "type " + std::to_string(type) + ", expected " + std::to_string(spec->type));
  if (count < spec->min_count || count > spec->max_count)
    return bad(dnn::kBadParam, "count " + std::to_string(count) + " outside " + std::to_string(spec->min_count) +
                                   ".." + std::to_string(spec->max_count));
  if (count > 0 && !elements) return bad(kBadParamNullPointer, "NULL elements");
  if (type == dnn::kTypeBackendDescriptor) {
    for (int64_t i = 0; i < count; ++i) {
      Desc* r = static_cast<Desc* const*>(elements)[i];
      if (!live(r)) return bad(dnn::kBadParam, "element " + std::to_string(i) + " is not a live descriptor");
      const bool kind_ok = spec->ref_kind == kAnyOp
                               ? (r->kind == dnn::kOpConvForwardDescriptor || r->kind == dnn::kOpPointwiseDescriptor ||
                                  r->kind == dnn::kOpMatmulDescriptor || r->kind == dnn::kOpReductionDescriptor)
                               : r->kind == spec->ref_kind;
      if (!kind_ok)
        return bad(kBadParamDescriptorType, "element " + std::to_string(i) + " is a descriptor of type " +
                                                std::to_string(r->kind));
      if (!r->finalized) return bad(kBadParamNotFinalized, "element " + std::to_string(i) + " is not finalized");
    }
  }
  Attr a;
  a.type = type;
  a.count = count;
  const size_t n = static_cast<size_t>(count) * element_size(type);
  a.bytes.assign(static_cast<const unsigned char*>(elements), static_cast<const unsigned char*>(elements) + n);
  d->attrs[name] = std::move(a);
  return dnn::kSuccess;
}

EXPORT Status cudnnBackendFinalize(void* desc) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  Desc* d = static_cast<Desc*>(desc);
  if (!live(d)) {
    lock.unlock();
    return fail(dnn::kBadParam, "cudnnBackendFinalize: not a live descriptor");
  }
  if (d->finalized) {
    lock.unlock();
    return fail(dnn::kBadParam, "cudnnBackendFinalize: already finalized");
  }
  Status r = dnn::kSuccess;
  switch (d->kind) {
    case dnn::kTensorDescriptor: r = finalize_tensor(*d); break;
    case dnn::kConvolutionDescriptor: r = finalize_conv(*d); break;
    case dnn::kPointwiseDescriptor: r = finalize_pointwise(*d); break;
    case dnn::kOpConvForwardDescriptor: r = finalize_conv_op(*d); break;
    case dnn::kOpPointwiseDescriptor: r = finalize_pointwise_op(*d); break;
    case dnn::kMatmulDescriptor: r = finalize_matmul(*d); break;
    case dnn::kReductionDescriptor: r = finalize_reduction(*d); break;
    case dnn::kOpMatmulDescriptor: r = finalize_matmul_op(*d); break;
    case dnn::kOpReductionDescriptor: r = finalize_reduction_op(*d); break;
    case dnn::kOperationGraphDescriptor: r = finalize_graph(*d); break;
    case dnn::kEngineHeurDescriptor: r = finalize_heur(*d); break;
    case dnn::kExecutionPlanDescriptor: r = finalize_plan(*d); break;
    case dnn::kVariantPackDescriptor: r = finalize_pack(*d); break;
    default: r = fail(dnn::kBadParam, "cudnnBackendFinalize: descriptor type " + std::to_string(d->kind) +
                                          " is finalized by cuDNN (heuristics results), not by the user");
  }
  if (r == dnn::kSuccess) d->finalized = true;
  return r;
}

EXPORT Status cudnnBackendGetAttribute(void* desc, int name, int type, int64_t requested, int64_t* count,
                                       void* elements) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  Desc* d = static_cast<Desc*>(desc);
  auto bad = [&](Status code, const std::string& why) {
    lock.unlock();
    return fail(code, "cudnnBackendGetAttribute(attribute " + std::to_string(name) + "): " + why);
  };
  if (!live(d)) return bad(dnn::kBadParam, "not a live descriptor");
  if (!count) return bad(kBadParamNullPointer, "NULL elementCount");
  if (requested < 0 || (requested > 0 && !elements)) return bad(dnn::kBadParam, "bad requested count or NULL elements");
  if (!d->finalized) return bad(kBadParamNotFinalized, "the descriptor is not finalized");
  auto expect_type = [&](int t) { return type == t; };
  if (d->kind == dnn::kEngineHeurDescriptor && name == dnn::kAttrEngineHeurResults) {
    if (!expect_type(dnn::kTypeBackendDescriptor)) return bad(kBadParamAttributeType, "expected BACKEND_DESCRIPTOR");
    const int64_t available = static_cast<int64_t>(d->results.size());
    if (requested == 0) {
      *count = available;
      return dnn::kSuccess;
    }
    const int64_t n = requested < available ? requested : available;
    for (int64_t i = 0; i < n; ++i) {
      Desc* cfg = static_cast<Desc**>(elements)[i];
      if (!live(cfg) || cfg->kind != dnn::kEngineCfgDescriptor || cfg->finalized)
        return bad(dnn::kBadParam, "element " + std::to_string(i) + " is not a fresh engine config descriptor");
    }
    for (int64_t i = 0; i < n; ++i) {
      Desc* cfg = static_cast<Desc**>(elements)[i];
      cfg->graph = d->graph;
      cfg->eng = d->results[static_cast<size_t>(i)];
      cfg->finalized = true;
    }
    *count = n;
    return dnn::kSuccess;
  }
  if (d->kind == dnn::kEngineCfgDescriptor && name == dnn::kAttrEngineCfgEngine) {
    if (!expect_type(dnn::kTypeBackendDescriptor)) return bad(kBadParamAttributeType, "expected BACKEND_DESCRIPTOR");
    if (requested != 1) return bad(dnn::kBadParam, "an engine config has one engine");
    Desc* e = static_cast<Desc**>(elements)[0];
    if (!live(e) || e->kind != dnn::kEngineDescriptor || e->finalized)
      return bad(dnn::kBadParam, "the element is not a fresh engine descriptor");
    e->graph = d->graph;
    e->eng = d->eng;
    e->finalized = true;
    *count = 1;
    return dnn::kSuccess;
  }
  if (d->kind == dnn::kEngineDescriptor && name == dnn::kAttrEngineNumericalNote) {
    if (!expect_type(dnn::kTypeNumericalNote)) return bad(kBadParamAttributeType, "expected NUMERICAL_NOTE");
    std::vector<int> notes;
    if (d->eng.tensor_core) notes.push_back(dnn::kNoteTensorCore);
    const int64_t n = requested < static_cast<int64_t>(notes.size()) ? requested : static_cast<int64_t>(notes.size());
    for (int64_t i = 0; i < n; ++i) static_cast<int*>(elements)[i] = notes[static_cast<size_t>(i)];
    *count = requested == 0 ? static_cast<int64_t>(notes.size()) : n;
    return dnn::kSuccess;
  }
  if ((d->kind == dnn::kExecutionPlanDescriptor && name == dnn::kAttrExecutionPlanWorkspaceSize) ||
      (d->kind == dnn::kEngineCfgDescriptor && name == 303 /* ENGINECFG_WORKSPACE_SIZE */)) {
    if (!expect_type(dnn::kTypeInt64)) return bad(kBadParamAttributeType, "expected INT64");
    if (requested != 1) return bad(dnn::kBadParam, "requested count must be 1");
    *static_cast<int64_t*>(elements) = d->eng.workspace;
    *count = 1;
    return dnn::kSuccess;
  }
  return bad(dnn::kNotSupported, "not readable from descriptor type " + std::to_string(d->kind) + " in the fake");
}

EXPORT Status cudnnBackendExecute(void* handle, void* plan, void* pack) {
  State& s = st();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  Handle* h = static_cast<Handle*>(handle);
  Desc* p = static_cast<Desc*>(plan);
  Desc* v = static_cast<Desc*>(pack);
  auto bad = [&](Status code, const std::string& why) {
    if (lock.owns_lock()) lock.unlock();
    return fail(code, "cudnnBackendExecute: " + why);
  };
  if (!s.handles.count(h)) return bad(dnn::kBadParam, "not a live handle");
  if (!live(p) || p->kind != dnn::kExecutionPlanDescriptor || !p->finalized)
    return bad(dnn::kBadParam, "not a finalized execution plan");
  if (!live(v) || v->kind != dnn::kVariantPackDescriptor || !v->finalized)
    return bad(dnn::kBadParam, "not a finalized variant pack");
  if (p->handle != h) return bad(dnn::kBadParam, "the plan was built for another handle");
  const std::shared_ptr<const GraphInfo> g = p->graph;
  const Engine e = p->eng;
  const std::vector<int64_t> uids = v->pack_uids;
  const std::vector<void*> ptrs = v->pack_ptrs;
  void* workspace = v->pack_workspace;
  lock.unlock();

  BusyScope busy(h);
  // Enqueueing takes a moment on a real GPU too: a caller that uses the handle meanwhile gets caught.
  std::this_thread::sleep_for(std::chrono::microseconds(500));
  if (h->stream_setter != std::this_thread::get_id()) {
    std::lock_guard<std::recursive_mutex> l(s.mutex);
    ++s.stats.interleaved;
  }
  if (h->ctx && fake_cuda_current_context() != h->ctx)
    return bad(dnn::kBadParam, "the handle's CUDA context is not current");
  if (Status forced = static_cast<Status>(env_int("THUNDERC_FAKE_CUDNN_EXECUTE_STATUS", 0)); forced != 0)
    return bad(forced, "failure forced by $THUNDERC_FAKE_CUDNN_EXECUTE_STATUS");
  std::map<int64_t, Buffer> bufs;
  for (const auto& [uid, t] : g->tensors) {
    Buffer b;
    b.t = &t;
    if (t.is_virtual) {
      b.values.assign(static_cast<size_t>(t.elements()), 0.0);
    } else if (t.by_value) {
      // Read now, as cuDNN does (a by-value scalar becomes a kernel argument when the plan is enqueued).
      size_t i = 0;
      while (i < uids.size() && uids[i] != uid) ++i;
      if (i == uids.size()) return bad(dnn::kBadParam, "the variant pack has no pointer for by-value tensor " + std::to_string(uid));
      if (!ptrs[i]) return bad(kBadParamNullPointer, "NULL pointer for by-value tensor " + std::to_string(uid));
      b.values.assign(1, static_cast<double>(*static_cast<const float*>(ptrs[i])));
    } else {
      size_t i = 0;
      while (i < uids.size() && uids[i] != uid) ++i;
      if (i == uids.size()) return bad(dnn::kBadParam, "the variant pack has no pointer for tensor " + std::to_string(uid));
      if (!ptrs[i]) return bad(kBadParamNullPointer, "NULL pointer for tensor " + std::to_string(uid));
      if (reinterpret_cast<uintptr_t>(ptrs[i]) % static_cast<uintptr_t>(t.alignment) != 0)
        return bad(kBadParamMisaligned, "tensor " + std::to_string(uid) + " is not aligned to " +
                                            std::to_string(t.alignment) + " bytes");
      b.data = static_cast<unsigned char*>(ptrs[i]);
    }
    bufs.emplace(uid, std::move(b));
  }
  for (int64_t uid : uids) {
    auto it = g->tensors.find(uid);
    if (it == g->tensors.end() || it->second.is_virtual)
      return bad(dnn::kBadParam, "the variant pack names tensor " + std::to_string(uid) + ", not a graph input/output");
  }
  if (e.workspace > 0 && !workspace)
    return bad(kBadParamNullPointer, "the plan needs workspace, the variant pack has none");
  // The graph runs "on the handle's stream": now, or when a CUDA graph captured on it is launched (the fake
  // driver's thunderc_fake_cuda_enqueue); what it reads is taken now, as a real engine's kernel arguments are.
  auto* job = new ExecuteJob{g, e, std::move(bufs), workspace, h->stream};
  if (enqueue_on_stream(h->stream, job) != 0) return bad(dnn::kBadParam, "the fake driver refused the stream");
  return dnn::kSuccess;
}

EXPORT void thunderc_fake_cudnn_stats(thunderc_fake_cudnn_stats_t* out) {
  std::lock_guard<std::recursive_mutex> lock(st().mutex);
  *out = st().stats;
}

EXPORT void thunderc_fake_cudnn_reset_counters(void) {
  std::lock_guard<std::recursive_mutex> lock(st().mutex);
  thunderc_fake_cudnn_stats_t& s = st().stats;
  s.graphs_finalized = s.heuristics_finalized = s.plans_finalized = s.executes = s.failed_calls = s.interleaved = 0;
  s.last_engine = -1;
}
