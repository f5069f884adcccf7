// cuBLASLt through dlopen (see cuda_libs.hpp): thunderc_gemm (row-major, ABI 3) onto cublasLtMatmul.
//
// Row-major D[m][n] = A[m][k] B[k][n] is, read column-major, D' = B' A' with D' = Dᵀ (n x m), B' = Bᵀ
// (n x k) and A' = Aᵀ (k x m): the operands swap places and nothing is copied. Each operand is given to
// cuBLASLt as stored: an operand whose rows are contiguous is already the transposed matrix cuBLASLt wants
// (op N), one whose columns are contiguous is passed as is with op T. The bias (N elements, one per column
// of D) is then one per row of D', which is what cuBLASLt's BIAS epilogues add.
//
// No cuBLASLt header is needed to build this file: the few types and enum values it uses are declared in
// cublaslt_api.hpp (a test checks them against the real headers where they are installed).
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "cublaslt_api.hpp"
#include "cuda_libs.hpp"

namespace thunderc::rt {
namespace lt {

struct Api {
  void* lib = nullptr;
  std::string text;  // what loaded, or why nothing did
  size_t (*GetVersion)() = nullptr;
  const char* (*GetStatusName)(Status) = nullptr;
  const char* (*GetStatusString)(Status) = nullptr;
  Status (*Create)(Handle*) = nullptr;
  Status (*Destroy)(Handle) = nullptr;
  Status (*MatmulDescCreate)(MatmulDesc*, int, int) = nullptr;
  Status (*MatmulDescDestroy)(MatmulDesc) = nullptr;
  Status (*MatmulDescSetAttribute)(MatmulDesc, int, const void*, size_t) = nullptr;
  Status (*MatrixLayoutCreate)(MatrixLayout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*MatrixLayoutDestroy)(MatrixLayout) = nullptr;
  Status (*MatrixLayoutSetAttribute)(MatrixLayout, int, const void*, size_t) = nullptr;
  Status (*MatmulPreferenceCreate)(Preference*) = nullptr;
  Status (*MatmulPreferenceDestroy)(Preference) = nullptr;
  Status (*MatmulPreferenceSetAttribute)(Preference, int, const void*, size_t) = nullptr;
  Status (*MatmulAlgoGetHeuristic)(Handle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout, MatrixLayout,
                                   Preference, int, HeuristicResult*, int*) = nullptr;
  Status (*Matmul)(Handle, MatmulDesc, const void*, const void*, MatrixLayout, const void*, MatrixLayout,
                   const void*, const void*, MatrixLayout, void*, MatrixLayout, const Algo*, void*, size_t,
                   void*) = nullptr;

  std::string status_text(Status s) const {
    const char* name = GetStatusName ? GetStatusName(s) : nullptr;
    const char* text = GetStatusString ? GetStatusString(s) : nullptr;
    std::string out = name ? name : "cuBLAS status " + std::to_string(s);
    if (text && *text) out += std::string(" (") + text + ")";
    return out;
  }
};

// cuBLASLt 11.4 added the epilogues and strided batches as used here.
constexpr size_t kMinVersion = 110400;

template <class F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

const Api& api() {
  static const Api* a = [] {
    auto* r = new Api;  // never destroyed: handles may be released during static destruction
    std::vector<std::string> names;
    if (const char* env = std::getenv("THUNDERC_CUBLASLT_LIBRARY"); env && *env) names.push_back(env);
    else names = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"};
    std::string tried;
    for (const std::string& n : names) {
      dlerror();
      r->lib = dlopen(n.c_str(), RTLD_LOCAL | RTLD_NOW);
      if (r->lib) {
        r->text = n;
        break;
      }
      tried += (tried.empty() ? "" : ", ") + n;
    }
    if (!r->lib) {
      r->text = "not found (" + tried + ")";
      return r;
    }
    std::string missing;
    auto need = [&](bool found, const char* name) {
      if (!found) missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    need(sym(r->lib, "cublasLtGetVersion", &r->GetVersion), "cublasLtGetVersion");
    sym(r->lib, "cublasLtGetStatusName", &r->GetStatusName);
    sym(r->lib, "cublasLtGetStatusString", &r->GetStatusString);
    need(sym(r->lib, "cublasLtCreate", &r->Create), "cublasLtCreate");
    need(sym(r->lib, "cublasLtDestroy", &r->Destroy), "cublasLtDestroy");
    need(sym(r->lib, "cublasLtMatmulDescCreate", &r->MatmulDescCreate), "cublasLtMatmulDescCreate");
    need(sym(r->lib, "cublasLtMatmulDescDestroy", &r->MatmulDescDestroy), "cublasLtMatmulDescDestroy");
    need(sym(r->lib, "cublasLtMatmulDescSetAttribute", &r->MatmulDescSetAttribute), "cublasLtMatmulDescSetAttribute");
    need(sym(r->lib, "cublasLtMatrixLayoutCreate", &r->MatrixLayoutCreate), "cublasLtMatrixLayoutCreate");
    need(sym(r->lib, "cublasLtMatrixLayoutDestroy", &r->MatrixLayoutDestroy), "cublasLtMatrixLayoutDestroy");
    need(sym(r->lib, "cublasLtMatrixLayoutSetAttribute", &r->MatrixLayoutSetAttribute),
         "cublasLtMatrixLayoutSetAttribute");
    need(sym(r->lib, "cublasLtMatmulPreferenceCreate", &r->MatmulPreferenceCreate), "cublasLtMatmulPreferenceCreate");
    need(sym(r->lib, "cublasLtMatmulPreferenceDestroy", &r->MatmulPreferenceDestroy),
         "cublasLtMatmulPreferenceDestroy");
    need(sym(r->lib, "cublasLtMatmulPreferenceSetAttribute", &r->MatmulPreferenceSetAttribute),
         "cublasLtMatmulPreferenceSetAttribute");
    need(sym(r->lib, "cublasLtMatmulAlgoGetHeuristic", &r->MatmulAlgoGetHeuristic), "cublasLtMatmulAlgoGetHeuristic");
    need(sym(r->lib, "cublasLtMatmul", &r->Matmul), "cublasLtMatmul");
    if (!missing.empty()) {
      r->text += " lacks " + missing;
      dlclose(r->lib);
      r->lib = nullptr;
      return r;
    }
    const size_t v = r->GetVersion();
    r->text += " (cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
               std::to_string(v % 100) + ")";
    if (v < kMinVersion) {
      r->text += ": too old, thunderc needs 11.4 or newer";
      r->lib = nullptr;  // kept loaded; unusable
    }
    return r;
  }();
  return *a;
}

}  // namespace lt

namespace {

// $THUNDERC_CUBLASLT_LOG=1: one line per device (the library, or why there is none) and per plan (built, or
// why its calls fall back), on stderr: what a first run on a GPU wants to see.
bool log_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("THUNDERC_CUBLASLT_LOG");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

void write_error(char* error, size_t capacity, const std::string& message) {
  if (error && capacity > 0) std::snprintf(error, capacity, "%s", message.c_str());
}

// "gemm #3 [batch 1, 16x192x64, +bias, relu]"
std::string describe(const thunderc_gemm& g) {
  std::string s = "gemm #" + std::to_string(g.id) + " [batch " + std::to_string(g.batch) + ", M=" +
                  std::to_string(g.m) + " N=" + std::to_string(g.n) + " K=" + std::to_string(g.k);
  if (g.has_bias) s += ", +bias";
  if (g.activation == THUNDERC_LIB_ACT_RELU) s += ", relu";
  if (g.activation == THUNDERC_LIB_ACT_GELU_TANH) s += ", gelu(tanh)";
  return s + "]";
}

// One operand as cuBLASLt stores it: rows x cols column-major with leading dimension ld, and the op that
// turns it into the matrix the product needs. False when neither dimension is contiguous.
struct Operand {
  int op = lt::kOpN;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};
// The column-major matrix X' (r x c, X'[i][j] at `contig`*i + `other`*j in the row-major operand's
// strides) that an operand with strides (along r, along c) stands for.
bool operand(int64_t r, int64_t c, int64_t stride_r, int64_t stride_c, Operand* out) {
  // X' as stored (op N): its rows are contiguous, columns stride_c apart.
  if (stride_r == 1 && (stride_c >= r || c == 1)) {
    *out = {lt::kOpN, uint64_t(r), uint64_t(c), std::max<int64_t>(stride_c, std::max<int64_t>(r, 1))};
    return true;
  }
  // X'ᵀ stored (op T): c x r with leading dimension stride_r.
  if (stride_c == 1 && (stride_r >= c || r == 1)) {
    *out = {lt::kOpT, uint64_t(c), uint64_t(r), std::max<int64_t>(stride_r, std::max<int64_t>(c, 1))};
    return true;
  }
  return false;
}

}  // namespace

class CublasLtDevice {
 public:
  explicit CublasLtDevice(int ordinal) : ordinal_(ordinal) {
    const lt::Api& a = lt::api();
    std::string state = a.text;
    if (a.lib) {
      if (lt::Status s = a.Create(&handle_); s != lt::kSuccess) {
        handle_ = nullptr;
        state += ", but cublasLtCreate failed: " + a.status_text(s);
      }
    }
    if (log_enabled())
      std::fprintf(stderr, "thunderc: cuBLASLt on cuda:%d: %s%s\n", ordinal, state.c_str(),
                   handle_ ? "" : "; GEMMs use the model's kernels");
  }
  ~CublasLtDevice() {
    const lt::Api& a = lt::api();
    for (auto& [id, p] : plans_) p.release(a);
    if (handle_) a.Destroy(handle_);
  }

  int32_t gemm(const LibCall& call, const thunderc_gemm& g, void* d, const void* a, const void* b, const void* bias,
               char* error, size_t cap) noexcept;

 private:
  struct Plan {
    bool built = false;  // build() ran (once, even when it failed: a failing plan falls back from then on)
    bool usable = false;
    lt::MatmulDesc desc = nullptr;
    lt::MatrixLayout la = nullptr, lb = nullptr, ld = nullptr;  // A' (from B), B' (from A), D'
    lt::Algo algo{};
    size_t workspace = 0;
    const void* bias = nullptr;  // the pointer set on desc
    std::mutex mutex;            // serializes the bias update and the enqueue
    void release(const lt::Api& a) {
      if (desc) a.MatmulDescDestroy(desc);
      for (auto l : {la, lb, ld})
        if (l) a.MatrixLayoutDestroy(l);
      desc = nullptr, la = lb = ld = nullptr;
    }
  };
  // Builds the plan of g; throws std::runtime_error for a library error (the plan stays unusable).
  void build(Plan& p, const thunderc_gemm& g, size_t workspace_bytes);

  int ordinal_;
  lt::Handle handle_ = nullptr;
  std::mutex plans_mutex_;
  std::unordered_map<uint32_t, Plan> plans_;  // by library-call id; Plan addresses are stable
};

void CublasLtDevice::build(Plan& p, const thunderc_gemm& g, size_t workspace_bytes) {
  const lt::Api& a = lt::api();
  auto check = [&](lt::Status s, const char* what) {
    if (s != lt::kSuccess) throw std::runtime_error(std::string(what) + " failed: " + a.status_text(s));
  };
  int dtype = g.dtype == THUNDERC_LIB_FLOAT16 ? lt::kR16F : g.dtype == THUNDERC_LIB_BFLOAT16 ? lt::kR16BF : lt::kR32F;
  // D' (n x m) = A' (n x k, from B) * B' (k x m, from A).
  Operand oa, ob;
  if (!operand(g.n, g.k, g.b_col, g.b_row, &oa) || !operand(g.k, g.m, g.a_col, g.a_row, &ob)) return;  // unusable
  if (g.n > 0 && g.d_row < g.n) return;
  int compute = g.math == THUNDERC_LIB_MATH_TF32 ? lt::kCompute32FFastTF32 : lt::kCompute32F;
  check(a.MatmulDescCreate(&p.desc, compute, lt::kR32F), "cublasLtMatmulDescCreate");
  check(a.MatmulDescSetAttribute(p.desc, lt::kDescTransA, &oa.op, sizeof oa.op), "set TRANSA");
  check(a.MatmulDescSetAttribute(p.desc, lt::kDescTransB, &ob.op, sizeof ob.op), "set TRANSB");
  uint32_t epi = g.has_bias ? lt::kEpiBias : lt::kEpiDefault;
  if (g.activation == THUNDERC_LIB_ACT_RELU) epi = g.has_bias ? (lt::kEpiRelu | lt::kEpiBias) : lt::kEpiRelu;
  else if (g.activation == THUNDERC_LIB_ACT_GELU_TANH) epi = g.has_bias ? (lt::kEpiGelu | lt::kEpiBias) : lt::kEpiGelu;
  else if (g.activation != THUNDERC_LIB_ACT_NONE) return;  // no such epilogue in cuBLASLt
  check(a.MatmulDescSetAttribute(p.desc, lt::kDescEpilogue, &epi, sizeof epi), "set EPILOGUE");
  check(a.MatrixLayoutCreate(&p.la, dtype, oa.rows, oa.cols, oa.ld), "cublasLtMatrixLayoutCreate(A)");
  check(a.MatrixLayoutCreate(&p.lb, dtype, ob.rows, ob.cols, ob.ld), "cublasLtMatrixLayoutCreate(B)");
  check(a.MatrixLayoutCreate(&p.ld, dtype, uint64_t(g.n), uint64_t(g.m), std::max<int64_t>(g.d_row, 1)),
        "cublasLtMatrixLayoutCreate(D)");
  if (g.batch > 1) {
    const int32_t count = static_cast<int32_t>(g.batch);
    const int64_t strides[3] = {g.b_batch, g.a_batch, g.d_batch};
    lt::MatrixLayout layouts[3] = {p.la, p.lb, p.ld};
    for (int i = 0; i < 3; ++i) {
      check(a.MatrixLayoutSetAttribute(layouts[i], lt::kLayoutBatchCount, &count, sizeof count), "set BATCH_COUNT");
      check(a.MatrixLayoutSetAttribute(layouts[i], lt::kLayoutStridedBatchOffset, &strides[i], sizeof strides[i]),
            "set STRIDED_BATCH_OFFSET");
    }
  }
  lt::Preference pref = nullptr;
  check(a.MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  struct PrefGuard {
    const lt::Api& a;
    lt::Preference p;
    ~PrefGuard() { a.MatmulPreferenceDestroy(p); }
  } guard{a, pref};
  const uint64_t ws = workspace_bytes;
  check(a.MatmulPreferenceSetAttribute(pref, lt::kPrefMaxWorkspaceBytes, &ws, sizeof ws), "set MAX_WORKSPACE_BYTES");
  // The runtime guarantees 16-byte aligned operands (cublaslt_gemm checks them), not cuBLASLt's default 256.
  const uint32_t align = 16;
  for (int attr : {lt::kPrefMinAlignmentA, lt::kPrefMinAlignmentB, lt::kPrefMinAlignmentC, lt::kPrefMinAlignmentD})
    check(a.MatmulPreferenceSetAttribute(pref, attr, &align, sizeof align), "set MIN_ALIGNMENT");
  lt::HeuristicResult result{};
  int found = 0;
  lt::Status s = a.MatmulAlgoGetHeuristic(handle_, p.desc, p.la, p.lb, p.ld, p.ld, pref, 1, &result, &found);
  if (s == lt::kNotSupported || (s == lt::kSuccess && (found == 0 || result.state != lt::kSuccess))) return;
  check(s, "cublasLtMatmulAlgoGetHeuristic");
  p.algo = result.algo;
  p.workspace = result.workspace_size;
  p.usable = true;
}

int32_t CublasLtDevice::gemm(const LibCall& call, const thunderc_gemm& g, void* d, const void* a, const void* b,
                             const void* bias, char* error, size_t cap) noexcept {
  const lt::Api& api = lt::api();
  if (!api.lib || !handle_) return THUNDERC_DEVICE_API_FALLBACK;
  // Degenerate or unaligned problems: nvfuser's kernel handles them.
  auto aligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; };
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 || !aligned(d) || !aligned(a) || !aligned(b) ||
      (g.has_bias && (!bias || !aligned(bias))) || g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX ||
      g.batch > INT32_MAX)
    return THUNDERC_DEVICE_API_FALLBACK;
  Plan* plan = nullptr;
  try {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    plan = &plans_[g.id];
    if (!plan->built) {
      plan->built = true;
      try {
        build(*plan, g, call.workspace_bytes);
      } catch (const std::exception& e) {
        plan->release(api);
        plan->usable = false;
        write_error(error, cap, describe(g) + " on cuda:" + std::to_string(ordinal_) + ": " + e.what());
        return 1;
      }
      if (!plan->usable) plan->release(api);
      if (log_enabled())
        std::fprintf(stderr, "thunderc: cuBLASLt on cuda:%d: %s: %s\n", ordinal_, describe(g).c_str(),
                     plan->usable ? ("plan built, " + std::to_string(plan->workspace) + " bytes of workspace").c_str()
                                  : "no algorithm for it here: falls back to the model's kernel");
    }
  } catch (const std::exception& e) {  // bad_alloc from the maps
    write_error(error, cap, describe(g) + ": " + e.what());
    return 1;
  }
  if (!plan->usable) return THUNDERC_DEVICE_API_FALLBACK;
  std::lock_guard<std::mutex> lock(plan->mutex);
  if (g.has_bias && plan->bias != bias) {
    if (lt::Status s = api.MatmulDescSetAttribute(plan->desc, lt::kDescBiasPointer, &bias, sizeof bias);
        s != lt::kSuccess) {
      write_error(error, cap, describe(g) + ": set BIAS_POINTER failed: " + api.status_text(s));
      return 1;
    }
    plan->bias = bias;
  }
  const float one = 1.0f, zero = 0.0f;
  // Operands swap places (see the top of this file): A' comes from b, B' from a.
  lt::Status s = api.Matmul(handle_, plan->desc, &one, b, plan->la, a, plan->lb, &zero, d, plan->ld, d, plan->ld,
                            &plan->algo, call.workspace, plan->workspace, call.stream);
  if (s != lt::kSuccess) {
    write_error(error, cap, describe(g) + " on cuda:" + std::to_string(ordinal_) +
                                ": cublasLtMatmul failed: " + api.status_text(s));
    return 1;
  }
  return 0;
}

void CublasLtDeviceDeleter::operator()(CublasLtDevice* p) const noexcept { delete p; }

CublasLtDevicePtr make_cublaslt_device(int ordinal) { return CublasLtDevicePtr(new CublasLtDevice(ordinal)); }

int32_t cublaslt_gemm(CublasLtDevice& dev, const LibCall& call, const thunderc_gemm* op, void* d, const void* a,
                      const void* b, const void* bias, char* error, size_t error_capacity) noexcept {
  return dev.gemm(call, *op, d, a, b, bias, error, error_capacity);
}

}  // namespace thunderc::rt
