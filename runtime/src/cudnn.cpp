// Convolutions through cuDNN 9's graph API (backend descriptors), reached with dlopen (see cuda_libs.hpp and
// docs/runtime.md, "Library calls: cuDNN").
//
// Per (model, device): one cudnnHandle and, per library-call id, one execution plan for
//   y = act(conv2d(x, w) + bias + residual)
// built at that id's first call: tensors X, W (and bias [1,K,1,1], residual) plus Y, a convolution forward
// operation whose output feeds a chain of pointwise operations on virtual tensors (only those the op asks
// for), an operation graph, engine configs from heuristics (mode A, then FALLBACK) and the first config that
// finalizes into a plan within the call's workspace. An id cuDNN cannot run (no engine, NOT_SUPPORTED) is
// remembered as such and answers THUNDERC_DEVICE_API_FALLBACK at once on every later call.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda_libs.hpp"
#include "cudnn_api.hpp"

namespace thunderc::rt {
namespace {

// ---- the library ---------------------------------------------------------------------------------------

struct CudnnLib {
  bool ok = false;   // loaded, cuDNN >= 9, every required function found
  std::string text;  // "libcudnn.so.9 (cuDNN 9.19.0)" or why not
  dnn::GetVersionFn GetVersion = nullptr;
  dnn::GetErrorStringFn GetErrorString = nullptr;
  dnn::GetLastErrorStringFn GetLastErrorString = nullptr;  // optional
  dnn::CreateFn Create = nullptr;
  dnn::DestroyFn Destroy = nullptr;
  dnn::SetStreamFn SetStream = nullptr;
  dnn::BackendCreateDescriptorFn CreateDescriptor = nullptr;
  dnn::BackendDestroyDescriptorFn DestroyDescriptor = nullptr;
  dnn::BackendFinalizeFn Finalize = nullptr;
  dnn::BackendSetAttributeFn SetAttribute = nullptr;
  dnn::BackendGetAttributeFn GetAttribute = nullptr;
  dnn::BackendExecuteFn Execute = nullptr;
};

template <class F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// cudnnGetVersion(): major*10000 + minor*100 + patch since 9.0; major*1000 + minor*100 + patch before.
std::string version_text(size_t v, int* major) {
  size_t ma, mi, pa;
  if (v >= 10000) ma = v / 10000, mi = v / 100 % 100, pa = v % 100;
  else ma = v / 1000, mi = v / 100 % 10, pa = v % 100;
  *major = static_cast<int>(ma);
  return std::to_string(ma) + "." + std::to_string(mi) + "." + std::to_string(pa);
}

void load(CudnnLib& L) {
  const char* env = std::getenv("THUNDERC_CUDNN_LIBRARY");
  const bool from_env = env && *env;
  const std::vector<std::string> names =
      from_env ? std::vector<std::string>{env} : std::vector<std::string>{"libcudnn.so.9", "libcudnn.so"};
  void* h = nullptr;
  std::string name, last_error;
  for (const std::string& n : names) {
    dlerror();
    if ((h = dlopen(n.c_str(), RTLD_LOCAL | RTLD_NOW))) {
      name = n;
      break;
    }
    const char* e = dlerror();
    last_error = e ? e : "unknown error";
  }
  if (!h) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    L.text = "not found: " + list + (from_env ? " (named by $THUNDERC_CUDNN_LIBRARY)" : "") + " (dlopen: " +
             last_error + ")";
    return;
  }
  if (!sym(h, "cudnnGetVersion", &L.GetVersion)) {
    L.text = name + " is not cuDNN (it has no cudnnGetVersion)";
    dlclose(h);
    return;
  }
  int major = 0;
  const std::string label = name + " (cuDNN " + version_text(L.GetVersion(), &major) + ")";
  if (major < 9) {
    // The graph API's attributes and statuses used here are cuDNN 9's.
    L.text = label + ": too old, cuDNN 9 or newer is needed";
    dlclose(h);
    return;
  }
  std::string missing;
  auto need = [&](bool found, const char* fn) {
    if (!found) missing += (missing.empty() ? "" : ", ") + std::string(fn);
  };
  need(sym(h, "cudnnGetErrorString", &L.GetErrorString), "cudnnGetErrorString");
  need(sym(h, "cudnnCreate", &L.Create), "cudnnCreate");
  need(sym(h, "cudnnDestroy", &L.Destroy), "cudnnDestroy");
  need(sym(h, "cudnnSetStream", &L.SetStream), "cudnnSetStream");
  need(sym(h, "cudnnBackendCreateDescriptor", &L.CreateDescriptor), "cudnnBackendCreateDescriptor");
  need(sym(h, "cudnnBackendDestroyDescriptor", &L.DestroyDescriptor), "cudnnBackendDestroyDescriptor");
  need(sym(h, "cudnnBackendFinalize", &L.Finalize), "cudnnBackendFinalize");
  need(sym(h, "cudnnBackendSetAttribute", &L.SetAttribute), "cudnnBackendSetAttribute");
  need(sym(h, "cudnnBackendGetAttribute", &L.GetAttribute), "cudnnBackendGetAttribute");
  need(sym(h, "cudnnBackendExecute", &L.Execute), "cudnnBackendExecute");
  sym(h, "cudnnGetLastErrorString", &L.GetLastErrorString);
  if (!missing.empty()) {
    L.text = label + " lacks " + missing;
    dlclose(h);
    return;
  }
  L.text = label;
  L.ok = true;
}

// The process-wide library, opened at first use (never closed: plans may outlive any one model).
const CudnnLib& cudnn_lib() {
  static CudnnLib* lib = new CudnnLib;
  static std::once_flag once;
  std::call_once(once, [] { load(*lib); });
  return *lib;
}

// "CUDNN_STATUS_BAD_PARAM (detail)": cudnnGetErrorString names the status; cuDNN 9's
// cudnnGetLastErrorString adds what went wrong on this thread, when it has something.
std::string status_text(const CudnnLib& L, dnn::Status s) {
  const char* str = L.GetErrorString ? L.GetErrorString(s) : nullptr;
  std::string t = str && *str ? std::string(str) : "cuDNN status " + std::to_string(s);
  if (t.find("CUDNN_STATUS") == std::string::npos) t = "cuDNN status " + std::to_string(s) + " (" + t + ")";
  if (L.GetLastErrorString) {
    char detail[512] = {0};
    L.GetLastErrorString(detail, sizeof detail);
    detail[sizeof detail - 1] = '\0';
    if (detail[0]) t += ": " + std::string(detail);
  }
  return t;
}

bool log_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("THUNDERC_CUDNN_LOG");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

// ---- descriptors -----------------------------------------------------------------------------------------

// A failed cuDNN call while a plan is built or run (thrown inside this file only, caught in cudnn_conv2d).
struct DnnError {
  std::string what;  // "cudnnBackendFinalize(convolution forward)"
  dnn::Status status;
};

// An owned backend descriptor.
class Desc {
 public:
  Desc() = default;
  Desc(const CudnnLib& L, int type, const char* what) : L_(&L) {
    if (dnn::Status s = L.CreateDescriptor(type, &d_); s != dnn::kSuccess) {
      d_ = nullptr;
      throw DnnError{std::string("cudnnBackendCreateDescriptor(") + what + ")", s};
    }
  }
  ~Desc() {
    if (d_) L_->DestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : L_(o.L_), d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      if (d_) L_->DestroyDescriptor(d_);
      L_ = o.L_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  dnn::Descriptor get() const { return d_; }
  // The descriptor handle itself, for an attribute of type CUDNN_TYPE_BACKEND_DESCRIPTOR.
  const dnn::Descriptor* ref() const { return &d_; }

 private:
  const CudnnLib* L_ = nullptr;
  dnn::Descriptor d_ = nullptr;
};

void check(dnn::Status s, const std::string& what) {
  if (s != dnn::kSuccess) throw DnnError{what, s};
}

void set(const CudnnLib& L, const Desc& d, int name, int type, int64_t count, const void* v, const char* what) {
  check(L.SetAttribute(d.get(), name, type, count, v), std::string("cudnnBackendSetAttribute(") + what + ")");
}

void finalize(const CudnnLib& L, const Desc& d, const char* what) {
  check(L.Finalize(d.get()), std::string("cudnnBackendFinalize(") + what + ")");
}

// ---- plans -----------------------------------------------------------------------------------------------

// Unique ids of the graph's tensors (any distinct values; virtual ones too).
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidResidual = 5, kUidVirtual = 100;
// What every data pointer must be aligned to (the plan promises it to cuDNN; runtime tensors and every CUDA
// allocation are, and a call with a less aligned pointer falls back).
constexpr int64_t kAlignment = 16;

struct Plan {
  thunderc_conv2d op{};   // the problem it was built for (struct_size normalised)
  bool supported = false; // false: FALLBACK for this id, always
  std::string why;        // why not supported (THUNDERC_CUDNN_LOG)
  std::vector<Desc> keep; // every descriptor the plan refers to, alive as long as it
  Desc plan;
  int64_t workspace = 0;
};

std::string dims_pair(int64_t a, int64_t b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
}

// "conv2d #3 [N=1 C=64 H=56 W=56 K=64 3x3 stride 1 pad 1, bias, relu]"
std::string op_text(const thunderc_conv2d& op) {
  std::string t = "conv2d #" + std::to_string(op.id) + " [N=" + std::to_string(op.n) + " C=" +
                  std::to_string(op.c) + " H=" + std::to_string(op.h) + " W=" + std::to_string(op.w) + " K=" +
                  std::to_string(op.k) + " " + std::to_string(op.r) + "x" + std::to_string(op.s) + " stride " +
                  dims_pair(op.stride_h, op.stride_w) + " pad " + dims_pair(op.pad_h, op.pad_w);
  if (op.dil_h != 1 || op.dil_w != 1) t += " dilation " + dims_pair(op.dil_h, op.dil_w);
  if (op.groups != 1) t += " groups " + std::to_string(op.groups);
  if (op.has_bias) t += ", bias";
  if (op.has_residual) t += ", residual";
  switch (op.activation) {
    case THUNDERC_LIB_ACT_RELU: t += ", relu"; break;
    case THUNDERC_LIB_ACT_SIGMOID: t += ", sigmoid"; break;
    case THUNDERC_LIB_ACT_SILU: t += ", silu"; break;
    case THUNDERC_LIB_ACT_GELU_TANH: t += ", gelu tanh"; break;
    default: break;
  }
  if (op.dtype == THUNDERC_LIB_FLOAT16) t += ", float16";
  if (op.dtype == THUNDERC_LIB_BFLOAT16) t += ", bfloat16";
  if (op.math == THUNDERC_LIB_MATH_TF32) t += ", tf32";
  return t + "]";
}

// Empty when `op` describes a convolution this file can express, else what is wrong with it.
std::string check_op(const thunderc_conv2d& op) {
  auto name = [](int64_t v, const char* what) { return std::string(what) + " is " + std::to_string(v); };
  if (op.reserved != 0) return name(op.reserved, "reserved") + ", expected 0";
  if (op.dtype > THUNDERC_LIB_BFLOAT16) return name(op.dtype, "dtype") + ", not a THUNDERC_LIB_* type";
  if (op.math > THUNDERC_LIB_MATH_TF32) return name(op.math, "math") + ", not a THUNDERC_LIB_MATH_* mode";
  if (op.activation > THUNDERC_LIB_ACT_SILU) return name(op.activation, "activation") + ", not a THUNDERC_LIB_ACT_*";
  if (op.has_bias > 1 || op.has_residual > 1) return "has_bias and has_residual must be 0 or 1";
  const std::pair<int64_t, const char*> positive[] = {
      {op.n, "n"},   {op.c, "c"},   {op.h, "h"},   {op.w, "w"},   {op.k, "k"},
      {op.r, "r"},   {op.s, "s"},   {op.oh, "oh"}, {op.ow, "ow"}, {op.stride_h, "stride_h"},
      {op.stride_w, "stride_w"},    {op.dil_h, "dil_h"},          {op.dil_w, "dil_w"},
      {op.groups, "groups"}};
  for (const auto& [v, what] : positive)
    if (v < 1 || v > (int64_t{1} << 31)) return name(v, what) + ", expected 1 .. 2^31";
  if (op.pad_h < 0 || op.pad_w < 0 || op.pad_h > (int64_t{1} << 31) || op.pad_w > (int64_t{1} << 31))
    return "negative or huge padding";
  if (op.c % op.groups != 0 || op.k % op.groups != 0)
    return "groups " + std::to_string(op.groups) + " does not divide C=" + std::to_string(op.c) + " and K=" +
           std::to_string(op.k);
  const int64_t span_h = op.h + 2 * op.pad_h - op.dil_h * (op.r - 1) - 1;
  const int64_t span_w = op.w + 2 * op.pad_w - op.dil_w * (op.s - 1) - 1;
  if (span_h < 0 || span_w < 0) return "the (dilated) kernel is larger than the padded input";
  if (op.oh != span_h / op.stride_h + 1 || op.ow != span_w / op.stride_w + 1)
    return "output " + std::to_string(op.oh) + "x" + std::to_string(op.ow) + " does not follow from the input, "
           "kernel, stride, padding and dilation (" + std::to_string(span_h / op.stride_h + 1) + "x" +
           std::to_string(span_w / op.stride_w + 1) + ")";
  return {};
}

int data_type(uint32_t dtype) {
  return dtype == THUNDERC_LIB_FLOAT16 ? dnn::kDataHalf : dtype == THUNDERC_LIB_BFLOAT16 ? dnn::kDataBfloat16
                                                                                         : dnn::kDataFloat;
}

// Builds the plan for `op` (see the top of the file). Throws DnnError; a NOT_SUPPORTED status or no usable
// engine gives a plan with supported == false instead.
class PlanBuilder {
 public:
  PlanBuilder(const CudnnLib& L, dnn::Handle handle, const thunderc_conv2d& op, size_t workspace_limit)
      : L_(L), handle_(handle), op_(op), limit_(workspace_limit) {}

  std::shared_ptr<Plan> build() {
    auto p = std::make_shared<Plan>();
    p->op = op_;
    try {
      graph_ = make_graph();
    } catch (const DnnError& e) {
      if (!dnn::is_not_supported(e.status)) throw;
      p->why = e.what + ": " + status_text(L_, e.status);
      return p;
    }
    for (int mode : {dnn::kHeurModeA, dnn::kHeurModeFallback}) {
      if (try_heuristics(mode, *p)) {
        p->supported = true;
        p->keep = std::move(keep_);
        return p;
      }
    }
    p->why = "no engine: " + why_;
    return p;
  }

 private:
  Desc tensor(int64_t uid, const int64_t dims[4], int dtype, bool is_virtual, const char* what) {
    Desc t(L_, dnn::kTensorDescriptor, what);
    // Dense NCHW (broadcast dims of size 1 get the stride a dense tensor would give them).
    const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    set(L_, t, dnn::kAttrTensorDataType, dnn::kTypeDataType, 1, &dtype, what);
    set(L_, t, dnn::kAttrTensorDimensions, dnn::kTypeInt64, 4, dims, what);
    set(L_, t, dnn::kAttrTensorStrides, dnn::kTypeInt64, 4, strides, what);
    set(L_, t, dnn::kAttrTensorUniqueId, dnn::kTypeInt64, 1, &uid, what);
    set(L_, t, dnn::kAttrTensorByteAlignment, dnn::kTypeInt64, 1, &kAlignment, what);
    if (is_virtual) {
      const bool v = true;
      set(L_, t, dnn::kAttrTensorIsVirtual, dnn::kTypeBoolean, 1, &v, what);
    }
    finalize(L_, t, what);
    return t;
  }

  // y = op(x, b) (b: NULL for a unary op) on the pointwise engine, math in float.
  Desc pointwise(int mode, const Desc& x, const Desc* b, const Desc& y, const char* what) {
    Desc pw(L_, dnn::kPointwiseDescriptor, what);
    const int prec = dnn::kDataFloat;
    set(L_, pw, dnn::kAttrPointwiseMode, dnn::kTypePointwiseMode, 1, &mode, what);
    set(L_, pw, dnn::kAttrPointwiseMathPrec, dnn::kTypeDataType, 1, &prec, what);
    finalize(L_, pw, what);
    Desc o(L_, dnn::kOpPointwiseDescriptor, what);
    set(L_, o, dnn::kAttrOpPointwisePwDescriptor, dnn::kTypeBackendDescriptor, 1, pw.ref(), what);
    set(L_, o, dnn::kAttrOpPointwiseXDesc, dnn::kTypeBackendDescriptor, 1, x.ref(), what);
    if (b) set(L_, o, dnn::kAttrOpPointwiseBDesc, dnn::kTypeBackendDescriptor, 1, b->ref(), what);
    set(L_, o, dnn::kAttrOpPointwiseYDesc, dnn::kTypeBackendDescriptor, 1, y.ref(), what);
    finalize(L_, o, what);
    keep_.push_back(std::move(pw));
    return o;
  }

  Desc make_graph() {
    const int io = data_type(op_.dtype);
    const int64_t x_dims[4] = {op_.n, op_.c, op_.h, op_.w};
    // Groups are expressed by W's second dimension (C / groups), as in cuDNN's graph API.
    const int64_t w_dims[4] = {op_.k, op_.c / op_.groups, op_.r, op_.s};
    const int64_t y_dims[4] = {op_.n, op_.k, op_.oh, op_.ow};
    const int64_t bias_dims[4] = {1, op_.k, 1, 1};
    int act = -1;
    switch (op_.activation) {
      case THUNDERC_LIB_ACT_RELU: act = dnn::kPointwiseReluFwd; break;
      case THUNDERC_LIB_ACT_SIGMOID: act = dnn::kPointwiseSigmoidFwd; break;
      case THUNDERC_LIB_ACT_SILU: act = dnn::kPointwiseSwishFwd; break;  // x * sigmoid(x) (swish beta 1)
      case THUNDERC_LIB_ACT_GELU_TANH: act = dnn::kPointwiseGeluApproxTanhFwd; break;
      default: break;
    }
    const int epilogue = static_cast<int>(op_.has_bias) + static_cast<int>(op_.has_residual) + (act >= 0 ? 1 : 0);

    std::vector<Desc> ops;
    Desc x = tensor(kUidX, x_dims, io, false, "tensor x");
    Desc w = tensor(kUidW, w_dims, io, false, "tensor w");
    Desc y = tensor(kUidY, y_dims, io, false, "tensor y");
    int64_t next_virtual = kUidVirtual;
    // The output of the next step: y for the last one, else a float virtual tensor.
    int remaining = epilogue;
    auto step_output = [&](const char* what) {
      return remaining-- == 0 ? Desc() : tensor(next_virtual++, y_dims, dnn::kDataFloat, true, what);
    };

    Desc conv(L_, dnn::kConvolutionDescriptor, "convolution");
    {
      const int comp = dnn::kDataFloat, mode = dnn::kCrossCorrelation;
      const int64_t spatial = 2, pad[2] = {op_.pad_h, op_.pad_w}, stride[2] = {op_.stride_h, op_.stride_w},
                    dil[2] = {op_.dil_h, op_.dil_w};
      const char* what = "convolution";
      set(L_, conv, dnn::kAttrConvolutionCompType, dnn::kTypeDataType, 1, &comp, what);
      set(L_, conv, dnn::kAttrConvolutionConvMode, dnn::kTypeConvolutionMode, 1, &mode, what);
      set(L_, conv, dnn::kAttrConvolutionSpatialDims, dnn::kTypeInt64, 1, &spatial, what);
      set(L_, conv, dnn::kAttrConvolutionPrePaddings, dnn::kTypeInt64, 2, pad, what);
      set(L_, conv, dnn::kAttrConvolutionPostPaddings, dnn::kTypeInt64, 2, pad, what);
      set(L_, conv, dnn::kAttrConvolutionFilterStrides, dnn::kTypeInt64, 2, stride, what);
      set(L_, conv, dnn::kAttrConvolutionDilations, dnn::kTypeInt64, 2, dil, what);
      finalize(L_, conv, what);
    }
    Desc cur = step_output("tensor conv out");
    const Desc& conv_y = cur.get() ? cur : y;
    {
      const char* what = "convolution forward";
      Desc o(L_, dnn::kOpConvForwardDescriptor, what);
      const float alpha = 1.0f, beta = 0.0f;
      set(L_, o, dnn::kAttrOpConvForwardX, dnn::kTypeBackendDescriptor, 1, x.ref(), what);
      set(L_, o, dnn::kAttrOpConvForwardW, dnn::kTypeBackendDescriptor, 1, w.ref(), what);
      set(L_, o, dnn::kAttrOpConvForwardY, dnn::kTypeBackendDescriptor, 1, conv_y.ref(), what);
      set(L_, o, dnn::kAttrOpConvForwardConvDesc, dnn::kTypeBackendDescriptor, 1, conv.ref(), what);
      set(L_, o, dnn::kAttrOpConvForwardAlpha, dnn::kTypeFloat, 1, &alpha, what);
      set(L_, o, dnn::kAttrOpConvForwardBeta, dnn::kTypeFloat, 1, &beta, what);
      finalize(L_, o, what);
      ops.push_back(std::move(o));
    }
    // Each epilogue step reads `cur` and writes the next virtual tensor (y for the last step).
    auto chain = [&](int mode, const Desc* b, const char* out_what, const char* what) {
      Desc out = step_output(out_what);
      const Desc& dst = out.get() ? out : y;
      ops.push_back(pointwise(mode, cur, b, dst, what));
      keep_.push_back(std::move(cur));
      cur = std::move(out);
    };
    if (op_.has_bias) {
      Desc bias = tensor(kUidBias, bias_dims, io, false, "tensor bias");
      chain(dnn::kPointwiseAdd, &bias, "tensor conv+bias", "pointwise add bias");
      keep_.push_back(std::move(bias));
    }
    if (op_.has_residual) {
      Desc res = tensor(kUidResidual, y_dims, io, false, "tensor residual");
      chain(dnn::kPointwiseAdd, &res, "tensor +residual", "pointwise add residual");
      keep_.push_back(std::move(res));
    }
    if (act >= 0) chain(act, nullptr, "tensor activation", "pointwise activation");

    Desc graph(L_, dnn::kOperationGraphDescriptor, "operation graph");
    std::vector<dnn::Descriptor> raw;
    for (const Desc& o : ops) raw.push_back(o.get());
    set(L_, graph, dnn::kAttrOperationGraphOps, dnn::kTypeBackendDescriptor, static_cast<int64_t>(raw.size()),
        raw.data(), "operation graph");
    // Deprecated since 9.x in favour of device properties, but accepted by every 9.x and required by 9.0.
    set(L_, graph, dnn::kAttrOperationGraphHandle, dnn::kTypeHandle, 1, &handle_, "operation graph");
    finalize(L_, graph, "operation graph");
    for (Desc& d : ops) keep_.push_back(std::move(d));
    for (Desc* d : {&x, &w, &y, &conv}) keep_.push_back(std::move(*d));
    return graph;
  }

  // Whether `cfg` may run under op_.math. FP32 excludes engines that use tensor cores (TF32 on float inputs)
  // and engines that down-convert inputs; TF32 allows tensor cores. This is how cuDNN users choose TF32 or
  // not in the graph API (the engine's CUDNN_ATTR_ENGINE_NUMERICAL_NOTE; PyTorch and cuDNN's frontend
  // deselect_numeric_notes do the same): the convolution's compute type stays float either way.
  bool numerics_allowed(const Desc& cfg, std::string* why) {
    if (op_.dtype != THUNDERC_LIB_FLOAT32) return true;  // half inputs: tensor cores are the point
    Desc engine(L_, dnn::kEngineDescriptor, "engine");
    int64_t n = 0;
    check(L_.GetAttribute(cfg.get(), dnn::kAttrEngineCfgEngine, dnn::kTypeBackendDescriptor, 1, &n,
                          const_cast<dnn::Descriptor*>(engine.ref())),
          "cudnnBackendGetAttribute(engine config: engine)");
    int notes[dnn::kNoteTypeCount] = {0};
    n = 0;
    check(L_.GetAttribute(engine.get(), dnn::kAttrEngineNumericalNote, dnn::kTypeNumericalNote, dnn::kNoteTypeCount,
                          &n, notes),
          "cudnnBackendGetAttribute(engine: numerical notes)");
    for (int64_t i = 0; i < n && i < dnn::kNoteTypeCount; ++i) {
      if (notes[i] == dnn::kNoteDownConvertInputs) return *why = "down-converts inputs", false;
      if (notes[i] == dnn::kNoteTensorCore && op_.math != THUNDERC_LIB_MATH_TF32)
        return *why = "uses tensor cores (TF32), math is FP32", false;
    }
    return true;
  }

  bool try_heuristics(int mode, Plan& p) {
    const char* mode_name = mode == dnn::kHeurModeA ? "heuristics A" : "heuristics FALLBACK";
    auto note = [&](const std::string& s) { why_ += (why_.empty() ? "" : "; ") + std::string(mode_name) + ": " + s; };
    Desc heur(L_, dnn::kEngineHeurDescriptor, "engine heuristics");
    set(L_, heur, dnn::kAttrEngineHeurOperationGraph, dnn::kTypeBackendDescriptor, 1, graph_.ref(), mode_name);
    set(L_, heur, dnn::kAttrEngineHeurMode, dnn::kTypeHeurMode, 1, &mode, mode_name);
    if (dnn::Status s = L_.Finalize(heur.get()); s != dnn::kSuccess) {
      if (!dnn::is_not_supported(s)) throw DnnError{std::string("cudnnBackendFinalize(") + mode_name + ")", s};
      note(status_text(L_, s));
      return false;
    }
    int64_t count = 0;
    check(L_.GetAttribute(heur.get(), dnn::kAttrEngineHeurResults, dnn::kTypeBackendDescriptor, 0, &count, nullptr),
          std::string("cudnnBackendGetAttribute(") + mode_name + ": number of results)");
    if (count <= 0) {
      note("no engine configs");
      return false;
    }
    std::vector<Desc> cfgs;
    std::vector<dnn::Descriptor> raw;
    for (int64_t i = 0; i < count; ++i) {
      cfgs.emplace_back(L_, dnn::kEngineCfgDescriptor, "engine config");
      raw.push_back(cfgs.back().get());
    }
    int64_t got = 0;
    check(L_.GetAttribute(heur.get(), dnn::kAttrEngineHeurResults, dnn::kTypeBackendDescriptor, count, &got,
                          raw.data()),
          std::string("cudnnBackendGetAttribute(") + mode_name + ": results)");
    for (int64_t i = 0; i < got && i < count; ++i) {
      const std::string at = "config " + std::to_string(i);
      std::string why;
      if (!numerics_allowed(cfgs[static_cast<size_t>(i)], &why)) {
        note(at + " " + why);
        continue;
      }
      Desc plan(L_, dnn::kExecutionPlanDescriptor, "execution plan");
      set(L_, plan, dnn::kAttrExecutionPlanHandle, dnn::kTypeHandle, 1, &handle_, "execution plan");
      set(L_, plan, dnn::kAttrExecutionPlanEngineConfig, dnn::kTypeBackendDescriptor, 1,
          cfgs[static_cast<size_t>(i)].ref(), "execution plan");
      if (dnn::Status s = L_.Finalize(plan.get()); s != dnn::kSuccess) {
        note(at + " does not finalize: " + status_text(L_, s));  // normal: heuristics over-promise
        continue;
      }
      int64_t ws = 0, n = 0;
      check(L_.GetAttribute(plan.get(), dnn::kAttrExecutionPlanWorkspaceSize, dnn::kTypeInt64, 1, &n, &ws),
            "cudnnBackendGetAttribute(execution plan: workspace size)");
      if (ws < 0 || static_cast<uint64_t>(ws) > limit_) {
        note(at + " needs " + std::to_string(ws) + " bytes of workspace, more than " + std::to_string(limit_));
        continue;
      }
      p.plan = std::move(plan);
      p.workspace = ws;
      keep_.push_back(std::move(heur));
      keep_.push_back(std::move(cfgs[static_cast<size_t>(i)]));
      keep_.push_back(std::move(graph_));
      return true;
    }
    return false;
  }

  const CudnnLib& L_;
  dnn::Handle handle_;
  const thunderc_conv2d& op_;
  size_t limit_;
  Desc graph_;
  std::vector<Desc> keep_;
  std::string why_;
};

void write_error(char* error, size_t capacity, const std::string& message) noexcept {
  if (error && capacity > 0) std::snprintf(error, capacity, "%s", message.c_str());
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

}  // namespace

class CudnnDevice {
 public:
  CudnnDevice(const CudnnLib& lib, int ordinal) : L(lib), ordinal(ordinal) {}
  ~CudnnDevice() {
    plans.clear();  // descriptors go before the handle they were built with
    if (handle) L.Destroy(handle);
  }
  CudnnDevice(const CudnnDevice&) = delete;
  CudnnDevice& operator=(const CudnnDevice&) = delete;

  const CudnnLib& L;
  int ordinal;
  dnn::Handle handle = nullptr;  // NULL: every call falls back
  // cuDNN lets a handle be used by one thread at a time: plan builds (first calls only) and cudnnSetStream +
  // cudnnBackendExecute (the stream is the handle's state) happen under this lock. Executing only enqueues, so
  // steady-state calls hold it briefly.
  std::mutex handle_mutex;
  std::mutex cache_mutex;  // plans (held only to look up or insert, never while cuDNN runs)
  std::unordered_map<uint32_t, std::shared_ptr<const Plan>> plans;
};

void CudnnDeviceDeleter::operator()(CudnnDevice* p) const noexcept { delete p; }

CudnnDevicePtr make_cudnn_device(int ordinal) {
  const CudnnLib& L = cudnn_lib();
  CudnnDevicePtr dev(new CudnnDevice(L, ordinal));
  if (!L.ok) return dev;
  // The caller made the device's context current: the handle belongs to it.
  if (dnn::Status s = L.Create(&dev->handle); s != dnn::kSuccess) {
    dev->handle = nullptr;
    if (log_enabled())
      std::fprintf(stderr, "thunderc: cuDNN on cuda:%d: cudnnCreate failed: %s; convolutions use the model's kernels\n",
                   ordinal, status_text(L, s).c_str());
  }
  return dev;
}

int32_t cudnn_conv2d(CudnnDevice& dev, const LibCall& call, const thunderc_conv2d* op_in, void* y, const void* x,
                     const void* w, const void* bias, const void* residual, char* error,
                     size_t error_capacity) noexcept {
  if (!dev.handle) return THUNDERC_DEVICE_API_FALLBACK;
  thunderc_conv2d op{};
  std::memcpy(&op, op_in, sizeof op);  // the caller checked struct_size >= sizeof op
  op.struct_size = sizeof op;
  try {
    if (std::string bad = check_op(op); !bad.empty()) {
      write_error(error, error_capacity, op_text(op) + ": invalid operation: " + bad);
      return 1;
    }
    if (!x || !w || !y || !bias != !op.has_bias || !residual != !op.has_residual) {
      write_error(error, error_capacity,
                  op_text(op) + ": x, w and y must not be NULL, bias and residual NULL exactly when not used");
      return 1;
    }
    for (const void* p : {x, w, static_cast<const void*>(y), bias, residual})
      if (p && !aligned(p)) return THUNDERC_DEVICE_API_FALLBACK;  // the plan promised 16-byte alignment

    std::shared_ptr<const Plan> plan;
    {
      std::lock_guard<std::mutex> lock(dev.cache_mutex);
      if (auto it = dev.plans.find(op.id); it != dev.plans.end()) plan = it->second;
    }
    if (!plan) {
      std::lock_guard<std::mutex> build(dev.handle_mutex);
      {
        std::lock_guard<std::mutex> lock(dev.cache_mutex);
        if (auto it = dev.plans.find(op.id); it != dev.plans.end()) plan = it->second;
      }
      if (!plan) {
        std::shared_ptr<Plan> built = PlanBuilder(dev.L, dev.handle, op, call.workspace_bytes).build();
        if (log_enabled())
          std::fprintf(stderr, "thunderc: cuDNN on cuda:%d: %s: %s\n", dev.ordinal, op_text(op).c_str(),
                       built->supported ? ("plan built, " + std::to_string(built->workspace) + " bytes of workspace").c_str()
                                        : ("falls back: " + built->why).c_str());
        plan = built;
        std::lock_guard<std::mutex> lock(dev.cache_mutex);
        dev.plans.emplace(op.id, plan);
      }
    }
    if (std::memcmp(&plan->op, &op, sizeof op) != 0) {
      write_error(error, error_capacity, op_text(op) + ": library-call id " + std::to_string(op.id) +
                                             " was first used for another problem (" + op_text(plan->op) +
                                             "); ids must be unique within a model");
      return 1;
    }
    if (!plan->supported) return THUNDERC_DEVICE_API_FALLBACK;
    if (static_cast<uint64_t>(plan->workspace) > call.workspace_bytes ||
        (plan->workspace > 0 && !call.workspace))
      return THUNDERC_DEVICE_API_FALLBACK;

    const CudnnLib& L = dev.L;
    int64_t uids[5] = {kUidX, kUidW, kUidY};
    void* ptrs[5] = {const_cast<void*>(x), const_cast<void*>(w), y};
    int64_t n = 3;
    if (op.has_bias) uids[n] = kUidBias, ptrs[n++] = const_cast<void*>(bias);
    if (op.has_residual) uids[n] = kUidResidual, ptrs[n++] = const_cast<void*>(residual);
    Desc pack(L, dnn::kVariantPackDescriptor, "variant pack");
    void* workspace = call.workspace;
    set(L, pack, dnn::kAttrVariantPackUniqueIds, dnn::kTypeInt64, n, uids, "variant pack");
    set(L, pack, dnn::kAttrVariantPackDataPointers, dnn::kTypeVoidPtr, n, ptrs, "variant pack");
    set(L, pack, dnn::kAttrVariantPackWorkspace, dnn::kTypeVoidPtr, 1, &workspace, "variant pack");
    finalize(L, pack, "variant pack");
    {
      std::lock_guard<std::mutex> lock(dev.handle_mutex);
      check(L.SetStream(dev.handle, call.stream), "cudnnSetStream");
      check(L.Execute(dev.handle, plan->plan.get(), pack.get()), "cudnnBackendExecute");
    }
    return 0;
  } catch (const DnnError& e) {
    write_error(error, error_capacity, op_text(op) + ": " + e.what + " failed: " + status_text(dev.L, e.status));
    return e.status != 0 ? e.status : 1;
  } catch (const std::bad_alloc&) {
    write_error(error, error_capacity, "conv2d #" + std::to_string(op.id) + ": out of memory");
    return 1;
  } catch (const std::exception& e) {
    write_error(error, error_capacity, "conv2d #" + std::to_string(op.id) + ": " + e.what());
    return 1;
  } catch (...) {
    write_error(error, error_capacity, "conv2d #" + std::to_string(op.id) + ": unknown error");
    return 1;
  }
}

std::string cudnn_library_text() { return cudnn_lib().text; }

}  // namespace thunderc::rt
