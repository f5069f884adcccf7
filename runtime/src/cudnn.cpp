// Convolutions and fused attention through cuDNN 9's graph API (backend descriptors), reached with dlopen (see
// cuda_libs.hpp and docs/runtime.md, "Library calls: cuDNN").
//
// Per (model, device): one cudnnHandle and, per library-call id, one execution plan, built at that id's first
// call, for either
//   y = act(conv2d(x, w) + bias + residual)
// (tensors X, W (and bias [1,K,1,1], residual) plus Y, a convolution forward operation whose output feeds a
// chain of pointwise operations on virtual tensors, only those the op asks for), or
//   O = softmax(scale * Q.K^T + mask, causal) . V
// (the graph cuDNN's fused flash-attention engines recognise: see make_sdpa_graph), then an operation graph,
// engine configs from heuristics (mode A, then FALLBACK) and the first config that finalizes into a plan
// within the call's workspace. An id cuDNN cannot run (no engine, NOT_SUPPORTED) is remembered as such and
// answers THUNDERC_DEVICE_API_FALLBACK at once on every later call.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
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
  size_t version = 0;  // cudnnGetVersion(): 91900 for 9.19.0
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
  L.version = L.GetVersion();
  const std::string label = name + " (cuDNN " + version_text(L.version, &major) + ")";
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
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidResidual = 5;
constexpr int64_t kUidQ = 11, kUidK = 12, kUidV = 13, kUidO = 14, kUidMask = 15, kUidScale = 16, kUidNegInf = 17;
constexpr int64_t kUidVirtual = 100;
// What every data pointer must be aligned to (the plan promises it to cuDNN; runtime tensors and every CUDA
// allocation are, and a call with a less aligned pointer falls back).
constexpr int64_t kAlignment = 16;

enum class OpKind { kConv2d, kSdpa };

struct Plan {
  OpKind kind = OpKind::kConv2d;
  std::vector<unsigned char> key;  // the operation it was built for (its struct, struct_size normalised)
  std::string text;                // op_text of that operation (names it in a message about a reused id)
  bool supported = false; // false: FALLBACK for this id, always
  std::string why;        // why not supported (THUNDERC_CUDNN_LOG)
  std::vector<Desc> keep; // every descriptor the plan refers to, alive as long as it
  Desc plan;
  int64_t workspace = 0;
  // sdpa: the values of its by-value scalar tensors (the variant pack points at them; cuDNN reads them when
  // the plan is executed, i.e. enqueued).
  float scale = 1.0f, neg_inf = -std::numeric_limits<float>::infinity();
};

template <class Op>
std::vector<unsigned char> key_of(const Op& op) {
  const auto* p = reinterpret_cast<const unsigned char*>(&op);
  return std::vector<unsigned char>(p, p + sizeof op);
}

std::string dims_pair(int64_t a, int64_t b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
}

const char* dtype_text(uint32_t dtype) {
  return dtype == THUNDERC_LIB_FLOAT16 ? "float16" : dtype == THUNDERC_LIB_BFLOAT16 ? "bfloat16" : "float32";
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

// "sdpa #2 [batch 2 heads 8 sq 128 skv 128 d 64 dv 64, causal, mask strides 0/128/128, scale 0.125, float16]"
std::string op_text(const thunderc_sdpa& op) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%g", op.scale);
  std::string t = "sdpa #" + std::to_string(op.id) + " [batch " + std::to_string(op.batch) + " heads " +
                  std::to_string(op.heads) + " sq " + std::to_string(op.sq) + " skv " + std::to_string(op.skv) +
                  " d " + std::to_string(op.d) + " dv " + std::to_string(op.dv);
  if (op.causal) t += ", causal";
  if (op.has_mask)
    t += ", mask strides " + std::to_string(op.mask_batch) + "/" + std::to_string(op.mask_head) + "/" +
         std::to_string(op.mask_row);
  return t + ", scale " + scale + ", " + dtype_text(op.dtype) + "]";
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

// Empty when `op` is a well-formed attention (whether cuDNN can run it is decided later), else what is wrong.
std::string check_op(const thunderc_sdpa& op) {
  auto name = [](int64_t v, const char* what) { return std::string(what) + " is " + std::to_string(v); };
  if (op.reserved != 0) return name(op.reserved, "reserved") + ", expected 0";
  if (op.dtype > THUNDERC_LIB_BFLOAT16) return name(op.dtype, "dtype") + ", not a THUNDERC_LIB_* type";
  if (op.causal > 1 || op.has_mask > 1) return "causal and has_mask must be 0 or 1";
  const std::pair<int64_t, const char*> positive[] = {{op.batch, "batch"}, {op.heads, "heads"}, {op.sq, "sq"},
                                                      {op.skv, "skv"},     {op.d, "d"},         {op.dv, "dv"}};
  for (const auto& [v, what] : positive)
    if (v < 1 || v > (int64_t{1} << 31)) return name(v, what) + ", expected 1 .. 2^31";
  if (op.has_mask) {
    const std::pair<int64_t, const char*> strides[] = {
        {op.mask_batch, "mask_batch"}, {op.mask_head, "mask_head"}, {op.mask_row, "mask_row"}};
    for (const auto& [v, what] : strides)
      if (v < 0 || v > (int64_t{1} << 48)) return name(v, what) + ", expected a stride 0 .. 2^48 (0: broadcast)";
  }
  if (!std::isfinite(op.scale)) return "scale is not a finite number";
  return {};
}

// Why cuDNN's fused attention is not even tried for a well-formed `op` (empty: it is): FALLBACK then.
std::string sdpa_unsupported(const thunderc_sdpa& op) {
  if (op.dtype == THUNDERC_LIB_FLOAT32) return "float32 (cuDNN's fused attention takes float16 or bfloat16)";
  if (op.d % 8 != 0 || op.d > 128 || op.dv % 8 != 0 || op.dv > 128)
    return "head dims d " + std::to_string(op.d) + ", dv " + std::to_string(op.dv) +
           " (each must be a multiple of 8, at most 128)";
  if (op.has_mask && (op.mask_batch % 8 != 0 || op.mask_head % 8 != 0 || op.mask_row % 8 != 0))
    return "mask strides not multiples of 8 elements (16 bytes)";
  return {};
}

int data_type(uint32_t dtype) {
  return dtype == THUNDERC_LIB_FLOAT16 ? dnn::kDataHalf : dtype == THUNDERC_LIB_BFLOAT16 ? dnn::kDataBfloat16
                                                                                         : dnn::kDataFloat;
}

// Builds a plan (see the top of the file). Throws DnnError; a NOT_SUPPORTED status or no usable engine gives a
// plan with supported == false instead.
class PlanBuilder {
 public:
  PlanBuilder(const CudnnLib& L, dnn::Handle handle, size_t workspace_limit)
      : L_(L), handle_(handle), limit_(workspace_limit) {}

  std::shared_ptr<Plan> build(const thunderc_conv2d& op) {
    auto p = std::make_shared<Plan>();
    p->kind = OpKind::kConv2d;
    p->key = key_of(op);
    p->text = op_text(op);
    dtype_ = op.dtype;
    math_ = op.math;
    return build(std::move(p), [&] { return make_conv_graph(op); });
  }

  std::shared_ptr<Plan> build(const thunderc_sdpa& op) {
    auto p = std::make_shared<Plan>();
    p->kind = OpKind::kSdpa;
    p->key = key_of(op);
    p->text = op_text(op);
    p->scale = static_cast<float>(op.scale);
    // cuDNN before 9.10 wants the largest negative float for masked scores; later ones take -inf (as the cuDNN
    // frontend does).
    if (L_.version < 91000) p->neg_inf = std::numeric_limits<float>::lowest();
    dtype_ = op.dtype;
    math_ = THUNDERC_LIB_MATH_TF32;  // half inputs: tensor cores are the point (numerics_allowed)
    return build(std::move(p), [&] { return make_sdpa_graph(op); });
  }

 private:
  std::shared_ptr<Plan> build(std::shared_ptr<Plan> p, const std::function<Desc()>& make_graph) {
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

  // A tensor of 4 dims; strides NULL: dense row-major. by_value: a host scalar the variant pack points at.
  Desc tensor(int64_t uid, const int64_t dims[4], const int64_t* strides_in, int dtype, bool is_virtual,
              const char* what, bool by_value = false) {
    Desc t(L_, dnn::kTensorDescriptor, what);
    const int64_t dense[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    const int64_t* strides = strides_in ? strides_in : dense;
    set(L_, t, dnn::kAttrTensorDataType, dnn::kTypeDataType, 1, &dtype, what);
    set(L_, t, dnn::kAttrTensorDimensions, dnn::kTypeInt64, 4, dims, what);
    set(L_, t, dnn::kAttrTensorStrides, dnn::kTypeInt64, 4, strides, what);
    set(L_, t, dnn::kAttrTensorUniqueId, dnn::kTypeInt64, 1, &uid, what);
    set(L_, t, dnn::kAttrTensorByteAlignment, dnn::kTypeInt64, 1, &kAlignment, what);
    if (is_virtual) {
      const bool v = true;
      set(L_, t, dnn::kAttrTensorIsVirtual, dnn::kTypeBoolean, 1, &v, what);
    }
    if (by_value) {
      const bool v = true;
      set(L_, t, dnn::kAttrTensorIsByValue, dnn::kTypeBoolean, 1, &v, what);
    }
    finalize(L_, t, what);
    return t;
  }

  // A virtual tensor with the next free unique id.
  Desc virtual_tensor(const int64_t dims[4], const int64_t* strides, int dtype, const char* what) {
    return tensor(next_virtual_++, dims, strides, dtype, true, what);
  }

  // y = op(x, b[, t]) (b: NULL for a unary op; t: BINARY_SELECT's condition) on the pointwise engine, math in
  // `prec`; axis >= 0: GEN_INDEX's axis.
  Desc pointwise(int mode, const Desc& x, const Desc* b, const Desc& y, const char* what, int prec = dnn::kDataFloat,
                 const Desc* t = nullptr, int64_t axis = -1) {
    Desc pw(L_, dnn::kPointwiseDescriptor, what);
    set(L_, pw, dnn::kAttrPointwiseMode, dnn::kTypePointwiseMode, 1, &mode, what);
    set(L_, pw, dnn::kAttrPointwiseMathPrec, dnn::kTypeDataType, 1, &prec, what);
    if (axis >= 0) set(L_, pw, dnn::kAttrPointwiseAxis, dnn::kTypeInt64, 1, &axis, what);
    finalize(L_, pw, what);
    Desc o(L_, dnn::kOpPointwiseDescriptor, what);
    set(L_, o, dnn::kAttrOpPointwisePwDescriptor, dnn::kTypeBackendDescriptor, 1, pw.ref(), what);
    set(L_, o, dnn::kAttrOpPointwiseXDesc, dnn::kTypeBackendDescriptor, 1, x.ref(), what);
    if (b) set(L_, o, dnn::kAttrOpPointwiseBDesc, dnn::kTypeBackendDescriptor, 1, b->ref(), what);
    if (t) set(L_, o, dnn::kAttrOpPointwiseTDesc, dnn::kTypeBackendDescriptor, 1, t->ref(), what);
    set(L_, o, dnn::kAttrOpPointwiseYDesc, dnn::kTypeBackendDescriptor, 1, y.ref(), what);
    finalize(L_, o, what);
    keep_.push_back(std::move(pw));
    return o;
  }

  // c = a . b (batched over the first two dims), accumulated in float.
  Desc matmul(const Desc& a, const Desc& b, const Desc& c, const char* what) {
    Desc mm(L_, dnn::kMatmulDescriptor, what);
    const int comp = dnn::kDataFloat;
    set(L_, mm, dnn::kAttrMatmulCompType, dnn::kTypeDataType, 1, &comp, what);
    finalize(L_, mm, what);
    Desc o(L_, dnn::kOpMatmulDescriptor, what);
    set(L_, o, dnn::kAttrOpMatmulADesc, dnn::kTypeBackendDescriptor, 1, a.ref(), what);
    set(L_, o, dnn::kAttrOpMatmulBDesc, dnn::kTypeBackendDescriptor, 1, b.ref(), what);
    set(L_, o, dnn::kAttrOpMatmulCDesc, dnn::kTypeBackendDescriptor, 1, c.ref(), what);
    set(L_, o, dnn::kAttrOpMatmulDesc, dnn::kTypeBackendDescriptor, 1, mm.ref(), what);
    finalize(L_, o, what);
    keep_.push_back(std::move(mm));
    return o;
  }

  // y = reduce(x) over the dims where y has size 1, in float.
  Desc reduction(int op, const Desc& x, const Desc& y, const char* what) {
    Desc r(L_, dnn::kReductionDescriptor, what);
    const int comp = dnn::kDataFloat;
    set(L_, r, dnn::kAttrReductionOperator, dnn::kTypeReductionOperator, 1, &op, what);
    set(L_, r, dnn::kAttrReductionCompType, dnn::kTypeDataType, 1, &comp, what);
    finalize(L_, r, what);
    Desc o(L_, dnn::kOpReductionDescriptor, what);
    set(L_, o, dnn::kAttrOpReductionXDesc, dnn::kTypeBackendDescriptor, 1, x.ref(), what);
    set(L_, o, dnn::kAttrOpReductionYDesc, dnn::kTypeBackendDescriptor, 1, y.ref(), what);
    set(L_, o, dnn::kAttrOpReductionDesc, dnn::kTypeBackendDescriptor, 1, r.ref(), what);
    finalize(L_, o, what);
    keep_.push_back(std::move(r));
    return o;
  }

  // The operation graph of `ops` (kept alive by the plan).
  Desc operation_graph(std::vector<Desc>& ops) {
    Desc graph(L_, dnn::kOperationGraphDescriptor, "operation graph");
    std::vector<dnn::Descriptor> raw;
    for (const Desc& o : ops) raw.push_back(o.get());
    set(L_, graph, dnn::kAttrOperationGraphOps, dnn::kTypeBackendDescriptor, static_cast<int64_t>(raw.size()),
        raw.data(), "operation graph");
    // Deprecated since 9.x in favour of device properties, but accepted by every 9.x and required by 9.0.
    set(L_, graph, dnn::kAttrOperationGraphHandle, dnn::kTypeHandle, 1, &handle_, "operation graph");
    finalize(L_, graph, "operation graph");
    for (Desc& d : ops) keep_.push_back(std::move(d));
    return graph;
  }

  Desc make_conv_graph(const thunderc_conv2d& op) {
    const int io = data_type(op.dtype);
    const int64_t x_dims[4] = {op.n, op.c, op.h, op.w};
    // Groups are expressed by W's second dimension (C / groups), as in cuDNN's graph API.
    const int64_t w_dims[4] = {op.k, op.c / op.groups, op.r, op.s};
    const int64_t y_dims[4] = {op.n, op.k, op.oh, op.ow};
    const int64_t bias_dims[4] = {1, op.k, 1, 1};
    int act = -1;
    switch (op.activation) {
      case THUNDERC_LIB_ACT_RELU: act = dnn::kPointwiseReluFwd; break;
      case THUNDERC_LIB_ACT_SIGMOID: act = dnn::kPointwiseSigmoidFwd; break;
      case THUNDERC_LIB_ACT_SILU: act = dnn::kPointwiseSwishFwd; break;  // x * sigmoid(x) (swish beta 1)
      case THUNDERC_LIB_ACT_GELU_TANH: act = dnn::kPointwiseGeluApproxTanhFwd; break;
      default: break;
    }
    const int epilogue = static_cast<int>(op.has_bias) + static_cast<int>(op.has_residual) + (act >= 0 ? 1 : 0);

    std::vector<Desc> ops;
    Desc x = tensor(kUidX, x_dims, nullptr, io, false, "tensor x");
    Desc w = tensor(kUidW, w_dims, nullptr, io, false, "tensor w");
    Desc y = tensor(kUidY, y_dims, nullptr, io, false, "tensor y");
    // The output of the next step: y for the last one, else a float virtual tensor.
    int remaining = epilogue;
    auto step_output = [&](const char* what) {
      return remaining-- == 0 ? Desc() : virtual_tensor(y_dims, nullptr, dnn::kDataFloat, what);
    };

    Desc conv(L_, dnn::kConvolutionDescriptor, "convolution");
    {
      const int comp = dnn::kDataFloat, mode = dnn::kCrossCorrelation;
      const int64_t spatial = 2, pad[2] = {op.pad_h, op.pad_w}, stride[2] = {op.stride_h, op.stride_w},
                    dil[2] = {op.dil_h, op.dil_w};
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
    if (op.has_bias) {
      Desc bias = tensor(kUidBias, bias_dims, nullptr, io, false, "tensor bias");
      chain(dnn::kPointwiseAdd, &bias, "tensor conv+bias", "pointwise add bias");
      keep_.push_back(std::move(bias));
    }
    if (op.has_residual) {
      Desc res = tensor(kUidResidual, y_dims, nullptr, io, false, "tensor residual");
      chain(dnn::kPointwiseAdd, &res, "tensor +residual", "pointwise add residual");
      keep_.push_back(std::move(res));
    }
    if (act >= 0) chain(act, nullptr, "tensor activation", "pointwise activation");

    Desc graph = operation_graph(ops);
    for (Desc* d : {&x, &w, &y, &conv}) keep_.push_back(std::move(*d));
    return graph;
  }

  // Inference-mode flash attention as cuDNN's fused attention engines expect it (the graph the cuDNN frontend's
  // sdpa node lowers to, without dropout and statistics):
  //   S = Q . K^T                     matmul; K given transposed: [b, h, d, skv] with strides swapped
  //   S = S * scale                   pointwise MUL by a by-value float scalar
  //   S = S + mask                    pointwise ADD (has_mask; broadcast dims have size 1)
  //   S = (row >= col) ? S : -inf     GEN_INDEX(axis 2), GEN_INDEX(axis 3) as INT32, CMP_GE as BOOLEAN,
  //                                   BINARY_SELECT with a by-value float -inf (causal)
  //   M = max_j S; E = exp(S - M); Z = sum_j E; P = E / Z    softmax: reductions to [b, h, sq, 1]
  //   O = P . V                       matmul; P (virtual) has the I/O type, as the engines require
  // Every other intermediate is a virtual float tensor.
  Desc make_sdpa_graph(const thunderc_sdpa& op) {
    const int io = data_type(op.dtype);
    const int64_t B = op.batch, H = op.heads, SQ = op.sq, SKV = op.skv, D = op.d, DV = op.dv;
    const int64_t q_dims[4] = {B, H, SQ, D};
    const int64_t kt_dims[4] = {B, H, D, SKV}, kt_strides[4] = {H * SKV * D, SKV * D, 1, D};
    const int64_t v_dims[4] = {B, H, SKV, DV};
    const int64_t o_dims[4] = {B, H, SQ, DV};
    const int64_t s_dims[4] = {B, H, SQ, SKV};
    const int64_t row_dims[4] = {B, H, SQ, 1}, row_strides[4] = {H * SQ, SQ, 1, 1};
    const int64_t scalar_dims[4] = {1, 1, 1, 1}, scalar_strides[4] = {1, 1, 1, 1};

    std::vector<Desc> ops;
    std::deque<Desc> tensors;  // kept by the plan (a deque: references to its elements stay valid)
    auto keep = [&](Desc d) -> const Desc& {
      tensors.push_back(std::move(d));
      return tensors.back();
    };
    const Desc& q = keep(tensor(kUidQ, q_dims, nullptr, io, false, "tensor q"));
    const Desc& kt = keep(tensor(kUidK, kt_dims, kt_strides, io, false, "tensor k (transposed)"));
    const Desc& v = keep(tensor(kUidV, v_dims, nullptr, io, false, "tensor v"));
    const Desc& o = keep(tensor(kUidO, o_dims, nullptr, io, false, "tensor o"));
    const Desc& scale = keep(tensor(kUidScale, scalar_dims, scalar_strides, dnn::kDataFloat, false, "tensor scale", true));

    const Desc* s = &keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor q.k"));
    ops.push_back(matmul(q, kt, *s, "matmul q.k"));
    const Desc* scaled = &keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor scaled"));
    ops.push_back(pointwise(dnn::kPointwiseMul, *s, &scale, *scaled, "pointwise mul scale"));
    s = scaled;
    if (op.has_mask) {
      // Broadcast dims have size 1; their stride is what a dense tensor would give them.
      int64_t m_dims[4] = {op.mask_batch ? B : 1, op.mask_head ? H : 1, op.mask_row ? SQ : 1, SKV};
      int64_t m_strides[4] = {0, 0, 0, 1};
      m_strides[2] = op.mask_row ? op.mask_row : SKV;
      m_strides[1] = op.mask_head ? op.mask_head : m_dims[2] * m_strides[2];
      m_strides[0] = op.mask_batch ? op.mask_batch : m_dims[1] * m_strides[1];
      const Desc& mask = keep(tensor(kUidMask, m_dims, m_strides, io, false, "tensor mask"));
      const Desc* masked = &keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor +mask"));
      ops.push_back(pointwise(dnn::kPointwiseAdd, *s, &mask, *masked, "pointwise add mask"));
      s = masked;
    }
    if (op.causal) {
      const Desc& row = keep(virtual_tensor(s_dims, nullptr, dnn::kDataInt32, "tensor row index"));
      ops.push_back(pointwise(dnn::kPointwiseGenIndex, *s, nullptr, row, "pointwise row index", dnn::kDataInt32,
                              nullptr, 2));
      const Desc& col = keep(virtual_tensor(s_dims, nullptr, dnn::kDataInt32, "tensor column index"));
      ops.push_back(pointwise(dnn::kPointwiseGenIndex, *s, nullptr, col, "pointwise column index", dnn::kDataInt32,
                              nullptr, 3));
      const Desc& visible = keep(virtual_tensor(s_dims, nullptr, dnn::kDataBoolean, "tensor row >= column"));
      ops.push_back(pointwise(dnn::kPointwiseCmpGe, row, &col, visible, "pointwise row >= column", dnn::kDataBoolean));
      const Desc& neg_inf =
          keep(tensor(kUidNegInf, scalar_dims, scalar_strides, dnn::kDataFloat, false, "tensor -inf", true));
      const Desc* causal = &keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor causal"));
      ops.push_back(pointwise(dnn::kPointwiseBinarySelect, *s, &neg_inf, *causal, "pointwise causal select",
                              dnn::kDataFloat, &visible));
      s = causal;
    }
    const Desc& max = keep(virtual_tensor(row_dims, row_strides, dnn::kDataFloat, "tensor row max"));
    ops.push_back(reduction(dnn::kReduceMax, *s, max, "reduction max"));
    const Desc& shifted = keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor s - max"));
    ops.push_back(pointwise(dnn::kPointwiseSub, *s, &max, shifted, "pointwise sub max"));
    const Desc& e = keep(virtual_tensor(s_dims, nullptr, dnn::kDataFloat, "tensor exp"));
    ops.push_back(pointwise(dnn::kPointwiseExp, shifted, nullptr, e, "pointwise exp"));
    const Desc& sum = keep(virtual_tensor(row_dims, row_strides, dnn::kDataFloat, "tensor row sum"));
    ops.push_back(reduction(dnn::kReduceAdd, e, sum, "reduction sum"));
    const Desc& p = keep(virtual_tensor(s_dims, nullptr, io, "tensor softmax"));
    ops.push_back(pointwise(dnn::kPointwiseDiv, e, &sum, p, "pointwise div sum"));
    ops.push_back(matmul(p, v, o, "matmul p.v"));

    Desc graph = operation_graph(ops);
    for (Desc& d : tensors) keep_.push_back(std::move(d));
    return graph;
  }

  // Whether `cfg` may run under math_. FP32 excludes engines that use tensor cores (TF32 on float inputs)
  // and engines that down-convert inputs; TF32 allows tensor cores. This is how cuDNN users choose TF32 or
  // not in the graph API (the engine's CUDNN_ATTR_ENGINE_NUMERICAL_NOTE; PyTorch and cuDNN's frontend
  // deselect_numeric_notes do the same): the convolution's compute type stays float either way.
  bool numerics_allowed(const Desc& cfg, std::string* why) {
    if (dtype_ != THUNDERC_LIB_FLOAT32) return true;  // half inputs: tensor cores are the point
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
      if (notes[i] == dnn::kNoteTensorCore && math_ != THUNDERC_LIB_MATH_TF32)
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
  size_t limit_;
  uint32_t dtype_ = THUNDERC_LIB_FLOAT32;
  uint32_t math_ = THUNDERC_LIB_MATH_FP32;
  int64_t next_virtual_ = kUidVirtual;
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

namespace {

// The plan of `id` on `dev`, built by `build` at the id's first call (under the handle lock) and cached.
std::shared_ptr<const Plan> plan_for(CudnnDevice& dev, uint32_t id, const std::function<std::shared_ptr<Plan>()>& build) {
  std::shared_ptr<const Plan> plan;
  {
    std::lock_guard<std::mutex> lock(dev.cache_mutex);
    if (auto it = dev.plans.find(id); it != dev.plans.end()) return it->second;
  }
  std::lock_guard<std::mutex> building(dev.handle_mutex);
  {
    std::lock_guard<std::mutex> lock(dev.cache_mutex);
    if (auto it = dev.plans.find(id); it != dev.plans.end()) return it->second;
  }
  std::shared_ptr<Plan> built = build();
  if (log_enabled())
    std::fprintf(stderr, "thunderc: cuDNN on cuda:%d: %s: %s\n", dev.ordinal, built->text.c_str(),
                 built->supported ? ("plan built, " + std::to_string(built->workspace) + " bytes of workspace").c_str()
                                  : ("falls back: " + built->why).c_str());
  plan = built;
  std::lock_guard<std::mutex> lock(dev.cache_mutex);
  dev.plans.emplace(id, plan);
  return plan;
}

// Empty when `plan` was built for exactly this operation, else the message for an id used twice.
std::string reused_id(const Plan& plan, OpKind kind, const std::vector<unsigned char>& key, const std::string& text,
                      uint32_t id) {
  if (plan.kind == kind && plan.key == key) return {};
  return text + ": library-call id " + std::to_string(id) + " was first used for another problem (" + plan.text +
         "); ids must be unique within a model";
}

// Runs `plan` on the call's stream with the given tensors (uids[i] at ptrs[i]). Throws DnnError.
void execute(CudnnDevice& dev, const LibCall& call, const Plan& plan, const int64_t* uids, void* const* ptrs,
             int64_t n) {
  const CudnnLib& L = dev.L;
  Desc pack(L, dnn::kVariantPackDescriptor, "variant pack");
  void* workspace = call.workspace;
  set(L, pack, dnn::kAttrVariantPackUniqueIds, dnn::kTypeInt64, n, uids, "variant pack");
  set(L, pack, dnn::kAttrVariantPackDataPointers, dnn::kTypeVoidPtr, n, ptrs, "variant pack");
  set(L, pack, dnn::kAttrVariantPackWorkspace, dnn::kTypeVoidPtr, 1, &workspace, "variant pack");
  finalize(L, pack, "variant pack");
  std::lock_guard<std::mutex> lock(dev.handle_mutex);
  check(L.SetStream(dev.handle, call.stream), "cudnnSetStream");
  check(L.Execute(dev.handle, plan.plan.get(), pack.get()), "cudnnBackendExecute");
}

// Whether the call's workspace holds what `plan` needs (else FALLBACK).
bool workspace_fits(const Plan& plan, const LibCall& call) {
  return static_cast<uint64_t>(plan.workspace) <= call.workspace_bytes && (plan.workspace == 0 || call.workspace);
}

// The message of an exception escaping a call of operation `what` ("conv2d #3 [...]").
int32_t report(const CudnnLib& L, const std::string& what, char* error, size_t error_capacity) noexcept {
  try {
    throw;
  } catch (const DnnError& e) {
    write_error(error, error_capacity, what + ": " + e.what + " failed: " + status_text(L, e.status));
    return e.status != 0 ? e.status : 1;
  } catch (const std::bad_alloc&) {
    write_error(error, error_capacity, what + ": out of memory");
  } catch (const std::exception& e) {
    write_error(error, error_capacity, what + ": " + e.what());
  } catch (...) {
    write_error(error, error_capacity, what + ": unknown error");
  }
  return 1;
}

}  // namespace

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

    std::shared_ptr<const Plan> plan =
        plan_for(dev, op.id, [&] { return PlanBuilder(dev.L, dev.handle, call.workspace_bytes).build(op); });
    if (std::string bad = reused_id(*plan, OpKind::kConv2d, key_of(op), op_text(op), op.id); !bad.empty()) {
      write_error(error, error_capacity, bad);
      return 1;
    }
    if (!plan->supported || !workspace_fits(*plan, call)) return THUNDERC_DEVICE_API_FALLBACK;

    int64_t uids[5] = {kUidX, kUidW, kUidY};
    void* ptrs[5] = {const_cast<void*>(x), const_cast<void*>(w), y};
    int64_t n = 3;
    if (op.has_bias) uids[n] = kUidBias, ptrs[n++] = const_cast<void*>(bias);
    if (op.has_residual) uids[n] = kUidResidual, ptrs[n++] = const_cast<void*>(residual);
    execute(dev, call, *plan, uids, ptrs, n);
    return 0;
  } catch (...) {
    return report(dev.L, op_text(op), error, error_capacity);
  }
}

int32_t cudnn_sdpa(CudnnDevice& dev, const LibCall& call, const thunderc_sdpa* op_in, void* o, const void* q,
                   const void* k, const void* v, const void* mask, char* error, size_t error_capacity) noexcept {
  thunderc_sdpa op{};
  std::memcpy(&op, op_in, sizeof op);  // the caller checked struct_size >= sizeof op
  op.struct_size = sizeof op;
  if (!op.has_mask) op.mask_batch = op.mask_head = op.mask_row = 0;  // unused: not part of the problem
  try {
    if (std::string bad = check_op(op); !bad.empty()) {
      write_error(error, error_capacity, op_text(op) + ": invalid operation: " + bad);
      return 1;
    }
    if (!q || !k || !v || !o || !mask != !op.has_mask) {
      write_error(error, error_capacity,
                  op_text(op) + ": q, k, v and o must not be NULL, mask NULL exactly when has_mask is 0");
      return 1;
    }
    if (!dev.handle) return THUNDERC_DEVICE_API_FALLBACK;
    if (std::string why = sdpa_unsupported(op); !why.empty()) {
      if (log_enabled())
        std::fprintf(stderr, "thunderc: cuDNN on cuda:%d: %s: falls back: %s\n", dev.ordinal, op_text(op).c_str(),
                     why.c_str());
      return THUNDERC_DEVICE_API_FALLBACK;
    }
    for (const void* p : {q, k, v, static_cast<const void*>(o), mask})
      if (p && !aligned(p)) return THUNDERC_DEVICE_API_FALLBACK;  // the plan promised 16-byte alignment

    std::shared_ptr<const Plan> plan =
        plan_for(dev, op.id, [&] { return PlanBuilder(dev.L, dev.handle, call.workspace_bytes).build(op); });
    if (std::string bad = reused_id(*plan, OpKind::kSdpa, key_of(op), op_text(op), op.id); !bad.empty()) {
      write_error(error, error_capacity, bad);
      return 1;
    }
    if (!plan->supported || !workspace_fits(*plan, call)) return THUNDERC_DEVICE_API_FALLBACK;

    int64_t uids[7] = {kUidQ, kUidK, kUidV, kUidO, kUidScale};
    void* ptrs[7] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o,
                     const_cast<float*>(&plan->scale)};
    int64_t n = 5;
    if (op.has_mask) uids[n] = kUidMask, ptrs[n++] = const_cast<void*>(mask);
    if (op.causal) uids[n] = kUidNegInf, ptrs[n++] = const_cast<float*>(&plan->neg_inf);
    execute(dev, call, *plan, uids, ptrs, n);
    return 0;
  } catch (...) {
    return report(dev.L, op_text(op), error, error_capacity);
  }
}

std::string cudnn_library_text() { return cudnn_lib().text; }

}  // namespace thunderc::rt
