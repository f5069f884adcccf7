// A fake cuBLASLt (built as libcublasLt.so.13 next to the fake driver, found through LD_LIBRARY_PATH) for
// testing the runtime's library calls without a GPU: "device" memory is host memory (fake_libcuda.cpp), so
// cublasLtMatmul computes on the host, in double, and stores float.
//
// It implements exactly the subset runtime/src/cublaslt.cpp uses, and is strict where the real library is:
// unknown attributes, wrong attribute sizes, a leading dimension smaller than the rows, operand shapes
// that do not chain (op(A) is m x k, op(B) k x n, D m x n), a batch count that differs between layouts, or
// pointers less aligned than the preference promised are CUBLAS_STATUS_INVALID_VALUE or NOT_SUPPORTED.
//
// Test knobs (read on every call): THUNDERC_FAKE_CUBLASLT_NO_ALGO=1 makes the heuristic find nothing.
// thunderc_fake_cublaslt_stats() counts heuristic queries and matmuls (see fake_cuda.h).
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../../../core/ir/half.h"
#include "../../../runtime/src/cublaslt_api.hpp"
#include "fake_cuda.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The types and enum numbers are the runtime's (checked against cublasLt.h by test_cublaslt_header.cpp).
using namespace thunderc::rt::lt;
constexpr Status kNotInitialized = 1, kInvalidValue = 7;  // cublasStatus_t values the runtime never names
constexpr uint64_t kMagic = 0x7468756e64657263ull;  // "thunderc"

struct Desc {
  uint64_t magic = kMagic;
  int compute = 0;
  int32_t transa = kOpN, transb = kOpN;
  uint32_t epilogue = kEpiDefault;
  const void* bias = nullptr;
};
struct Layout {
  uint64_t magic = kMagic;
  int type = kR32F;  // kR32F, kR16F or kR16BF
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Pref {
  uint64_t magic = kMagic;
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D: cuBLASLt's default
};
std::mutex g_mutex;
thunderc_fake_cublaslt_stats_t g_stats;

template <class T>
T* as(void* p) {
  auto* t = static_cast<T*>(p);
  return t && t->magic == kMagic ? t : nullptr;
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

template <class T>
Status read_attr(const void* buf, size_t size, T* out) {
  if (!buf || size != sizeof(T)) return kInvalidValue;
  std::memcpy(out, buf, sizeof(T));
  return kSuccess;
}

// op(X) rows/cols for a stored layout.
void op_dims(const Layout& l, int op, uint64_t* r, uint64_t* c) {
  *r = op == kOpN ? l.rows : l.cols;
  *c = op == kOpN ? l.cols : l.rows;
}

bool layout_ok(const Layout& l) { return l.ld >= static_cast<int64_t>(l.rows) && l.ld >= 1; }

Status validate(const Desc& d, const Layout& a, const Layout& b, const Layout& c, const Layout& dl) {
  if (!layout_ok(a) || !layout_ok(b) || !layout_ok(c) || !layout_ok(dl)) return kInvalidValue;
  uint64_t am, ak, bk, bn;
  op_dims(a, d.transa, &am, &ak);
  op_dims(b, d.transb, &bk, &bn);
  if (ak != bk || am != dl.rows || bn != dl.cols || c.rows != dl.rows || c.cols != dl.cols) return kInvalidValue;
  if (a.batch != dl.batch || b.batch != dl.batch || c.batch != dl.batch) return kInvalidValue;
  // One element type for all four (what the runtime asks for); TF32 only makes sense for float32 inputs.
  if (a.type != dl.type || b.type != dl.type || c.type != dl.type) return kNotSupported;
  if (d.compute != kCompute32F && !(d.compute == kCompute32FFastTF32 && dl.type == kR32F)) return kNotSupported;
  const uint32_t epi = d.epilogue;
  if (epi != kEpiDefault && epi != kEpiRelu && epi != kEpiBias && epi != (kEpiRelu | kEpiBias) && epi != kEpiGelu &&
      epi != (kEpiGelu | kEpiBias))
    return kNotSupported;
  return kSuccess;
}

// One cublasLtMatmul, with copies of its descriptors.
struct Job {
  Desc desc;
  Layout a, b, c, d;
  float alpha, beta;
  const void *A, *B, *C;
  void* D;
};

// Element i of an array of `type`, as float (the half types widened exactly).
float load(const void* base, int type, int64_t i) {
  if (type == kR32F) return static_cast<const float*>(base)[i];
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return type == kR16F ? thunderc::f16_to_float(h) : thunderc::bf16_to_float(h);
}

void store(void* base, int type, int64_t i, float v) {
  if (type == kR32F) static_cast<float*>(base)[i] = v;
  else static_cast<uint16_t*>(base)[i] = type == kR16F ? thunderc::float_to_f16(v) : thunderc::float_to_bf16(v);
}

void run_job(void* p) {
  const Job& j = *static_cast<const Job*>(p);
  const Desc& ds = j.desc;
  uint64_t m, k, n, kb;
  op_dims(j.a, ds.transa, &m, &k);
  op_dims(j.b, ds.transb, &kb, &n);
  const int type = j.d.type;
  const bool bias = ds.epilogue & kEpiBias;
  // Column-major: X[i][j] of op(X) at (op N) i + j*ld, (op T) j + i*ld.
  auto at = [&](const void* base, const Layout& l, int64_t off, int op, uint64_t i, uint64_t q) {
    return load(base, type, off + static_cast<int64_t>(op == kOpN ? i + q * l.ld : q + i * l.ld));
  };
  for (int32_t bt = 0; bt < j.d.batch; ++bt) {
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t c = 0; c < n; ++c) {
        double acc = 0;
        for (uint64_t q = 0; q < k; ++q)
          acc += double(at(j.A, j.a, bt * j.a.stride, ds.transa, i, q)) * at(j.B, j.b, bt * j.b.stride, ds.transb, q, c);
        double v = j.alpha * acc;
        if (j.beta != 0.0f) v += j.beta * double(load(j.C, type, bt * j.c.stride + static_cast<int64_t>(i + c * j.c.ld)));
        if (bias) v += load(ds.bias, type, static_cast<int64_t>(i));  // one per row of D, of D's type
        if (ds.epilogue & kEpiRelu) v = v > 0 ? v : 0;
        if (ds.epilogue & kEpiGelu) v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        store(j.D, type, bt * j.d.stride + static_cast<int64_t>(i + c * j.d.ld), static_cast<float>(v));
      }
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.matmuls;
}

void release_job(void* p) { delete static_cast<Job*>(p); }

Status enqueue(void* stream, Job* job) {
  static const thunderc_fake_cuda_enqueue_fn fn = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return h ? reinterpret_cast<thunderc_fake_cuda_enqueue_fn>(dlsym(h, "thunderc_fake_cuda_enqueue")) : nullptr;
  }();
  if (!fn) {  // no fake driver loaded (a test of this library alone): run now
    run_job(job);
    release_job(job);
    return kSuccess;
  }
  return fn(stream, run_job, job, release_job) == 0 ? kSuccess : kInvalidValue;
}

}  // namespace

EXPORT size_t cublasLtGetVersion(void) { return 130100; }
EXPORT const char* cublasLtGetStatusName(Status s) {
  switch (s) {
    case kSuccess: return "CUBLAS_STATUS_SUCCESS";
    case kNotInitialized: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case kInvalidValue: return "CUBLAS_STATUS_INVALID_VALUE";
    case kNotSupported: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}
EXPORT const char* cublasLtGetStatusString(Status s) { return s == kSuccess ? "success" : "fake cuBLASLt error"; }

EXPORT Status cublasLtCreate(void** handle) {
  if (!handle) return kInvalidValue;
  *handle = new uint64_t(kMagic);
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.live_handles;
  return kSuccess;
}
EXPORT Status cublasLtDestroy(void* handle) {
  if (!handle) return kNotInitialized;
  delete static_cast<uint64_t*>(handle);
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_stats.live_handles;
  return kSuccess;
}

EXPORT Status cublasLtMatmulDescCreate(void** desc, int compute, int scale) {
  if (!desc || scale != kR32F) return kInvalidValue;
  auto* d = new Desc;
  d->compute = compute;
  *desc = d;
  return kSuccess;
}
EXPORT Status cublasLtMatmulDescDestroy(void* desc) {
  delete as<Desc>(desc);
  return kSuccess;
}
EXPORT Status cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, size_t size) {
  Desc* d = as<Desc>(desc);
  if (!d) return kInvalidValue;
  switch (attr) {
    case kDescTransA: return read_attr(buf, size, &d->transa);
    case kDescTransB: return read_attr(buf, size, &d->transb);
    case kDescEpilogue: return read_attr(buf, size, &d->epilogue);
    case kDescBiasPointer: return read_attr(buf, size, &d->bias);
    default: return kInvalidValue;
  }
}

EXPORT Status cublasLtMatrixLayoutCreate(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout || (type != kR32F && type != kR16F && type != kR16BF)) return kInvalidValue;
  auto* l = new Layout;
  l->type = type;
  l->rows = rows, l->cols = cols, l->ld = ld;
  *layout = l;
  return kSuccess;
}
EXPORT Status cublasLtMatrixLayoutDestroy(void* layout) {
  delete as<Layout>(layout);
  return kSuccess;
}
EXPORT Status cublasLtMatrixLayoutSetAttribute(void* layout, int attr, const void* buf, size_t size) {
  Layout* l = as<Layout>(layout);
  if (!l) return kInvalidValue;
  if (attr == kLayoutBatchCount) return read_attr(buf, size, &l->batch);
  if (attr == kLayoutStridedBatchOffset) return read_attr(buf, size, &l->stride);
  return kInvalidValue;
}

EXPORT Status cublasLtMatmulPreferenceCreate(void** pref) {
  if (!pref) return kInvalidValue;
  *pref = new Pref;
  return kSuccess;
}
EXPORT Status cublasLtMatmulPreferenceDestroy(void* pref) {
  delete as<Pref>(pref);
  return kSuccess;
}
EXPORT Status cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t size) {
  Pref* p = as<Pref>(pref);
  if (!p) return kInvalidValue;
  if (attr == kPrefMaxWorkspaceBytes) return read_attr(buf, size, &p->max_workspace);
  if (attr >= kPrefMinAlignmentA && attr <= kPrefMinAlignmentD)
    return read_attr(buf, size, &p->align[attr - kPrefMinAlignmentA]);
  return kInvalidValue;
}

EXPORT Status cublasLtMatmulAlgoGetHeuristic(void* handle, void* desc, void* a, void* b, void* c, void* d, void* pref,
                                             int requested, HeuristicResult* results, int* count) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.heuristics;
  }
  Desc* ds = as<Desc>(desc);
  Layout *la = as<Layout>(a), *lb = as<Layout>(b), *lc = as<Layout>(c), *ld = as<Layout>(d);
  Pref* p = as<Pref>(pref);
  if (!handle || !ds || !la || !lb || !lc || !ld || !p || requested < 1 || !results || !count) return kInvalidValue;
  if (Status s = validate(*ds, *la, *lb, *lc, *ld); s != kSuccess) return s;
  *count = 0;
  if (env_on("THUNDERC_FAKE_CUBLASLT_NO_ALGO")) return kNotSupported;
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].algo.data[0] = kMagic;
  // Alignment the algorithm relies on (the smallest promised), checked again at cublasLtMatmul.
  uint32_t align = p->align[0];
  for (uint32_t v : p->align) align = v < align ? v : align;
  results[0].algo.data[1] = align;
  results[0].workspace_size = p->max_workspace < 4096 ? p->max_workspace : 4096;
  results[0].state = kSuccess;
  *count = 1;
  return kSuccess;
}

EXPORT Status cublasLtMatmul(void* handle, void* desc, const void* alpha, const void* A, void* a, const void* B,
                             void* b, const void* beta, const void* C, void* c, void* D, void* d, const Algo* algo,
                             void* workspace, size_t workspace_size, void* stream) {
  Desc* ds = as<Desc>(desc);
  Layout *la = as<Layout>(a), *lb = as<Layout>(b), *lc = as<Layout>(c), *ld = as<Layout>(d);
  if (!handle || !ds || !la || !lb || !lc || !ld || !alpha || !beta || !A || !B || !D || !algo ||
      algo->data[0] != kMagic)
    return kInvalidValue;
  if (Status s = validate(*ds, *la, *lb, *lc, *ld); s != kSuccess) return s;
  if (workspace_size > 0 && !workspace) return kInvalidValue;
  const uintptr_t align = algo->data[1];
  for (const void* ptr : {A, B, static_cast<const void*>(D)})
    if (reinterpret_cast<uintptr_t>(ptr) % align != 0) return kInvalidValue;
  const bool bias = ds->epilogue & kEpiBias;
  if (bias && !ds->bias) return kInvalidValue;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  if (be != 0.0f && !C) return kInvalidValue;
  // The product runs "on the stream": now, or when a CUDA graph captured on it is launched (the fake driver's
  // thunderc_fake_cuda_enqueue). Everything it reads is copied now, as the real library's kernel arguments are.
  auto* job = new Job{*ds, *la, *lb, *lc, *ld, al, be, A, B, C, D};
  return enqueue(stream, job);
}

EXPORT void thunderc_fake_cublaslt_stats(thunderc_fake_cublaslt_stats_t* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *out = g_stats;
}
