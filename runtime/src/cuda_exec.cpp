// The CUDA path of the runtime: see cuda_exec.hpp and docs/runtime.md ("CUDA variants").
#include "cuda_exec.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "cuda_libs.hpp"

namespace thunderc::rt {

struct CudaModel::Device {
  int ordinal = 0;
  std::mutex init_mutex;
  std::atomic<bool> ready{false};
  bool failed = false;  // a permanent failure, repeated to every later call
  thunderc_status_code_t fail_code = THUNDERC_STATUS_OK;
  std::string fail_message;

  int major = 0, minor = 0;
  std::string image;  // "sm_90 cubin"
  cu::CUcontext ctx = nullptr;
  cu::CUmodule module = nullptr;
  std::vector<cu::CUfunction> functions;
  std::unique_ptr<std::atomic<uint32_t>[]> shared_optin;  // per kernel: dynamic shared bytes opted in so far
  void* weights = nullptr;

  std::mutex pool_mutex;
  std::unordered_map<void*, std::vector<void*>> free_blocks;      // workspace blocks by stream
  std::unordered_map<void*, std::vector<void*>> free_lib_blocks;  // library scratch (kLibWorkspaceBytes) by stream

  // The libraries, set up at the first library call on this device.
  std::once_flag blas_once, dnn_once;
  CublasLtDevicePtr blas;
  CudnnDevicePtr dnn;

  // --cuda-graphs: one graph per (stream, variant entry).
  std::mutex graphs_mutex;
  std::map<std::pair<void*, thunderc_entry_fn>, std::unique_ptr<CudaModel::Graph>> graphs;
};

// A captured variant call and the static device buffers its graph reads and writes.
struct CudaModel::Graph {
  std::mutex mutex;
  bool warmed_up = false;     // the first call ran (directly)
  bool used_library = false;  // the first call made a library call (the capture needs library scratch)
  bool disabled = false;      // runs directly from now on
  void* exec = nullptr;       // CUgraphExec
  cu::CUstream capture_stream = nullptr;
  std::vector<void*> inputs, outputs;  // static device buffers
  std::vector<size_t> input_bytes, output_bytes;
  void* workspace = nullptr;
  void* lib_workspace = nullptr;
};

namespace {

constexpr uint32_t kDefaultSharedLimit = 48 * 1024;

std::string basename_of(const std::string& path) {
  const auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

// "sm_90" / "sm_90a" / "compute_80" / "sm_100" -> major, minor.
bool parse_arch(const char* arch, int* major, int* minor) {
  if (!arch) return false;
  std::string s = arch;
  size_t pos = 0;
  if (s.rfind("sm_", 0) == 0) pos = 3;
  else if (s.rfind("compute_", 0) == 0) pos = 8;
  else return false;
  int value = 0, digits = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 4) value = value * 10 + (s[pos++] - '0'), ++digits;
  if (digits < 2) return false;
  if (pos < s.size() && !(pos + 1 == s.size() && (s[pos] == 'a' || s[pos] == 'f'))) return false;
  *major = value / 10;
  *minor = value % 10;
  return true;
}

void write_error(char* error, size_t capacity, const std::string& message) {
  if (error && capacity > 0) std::snprintf(error, capacity, "%s", message.c_str());
}

std::string dims_text(const uint32_t d[3]) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
}

}  // namespace

namespace {

// A workspace block of one stream's pool, lent to one call (the context is current).
class PoolLease {
 public:
  using Pool = std::unordered_map<void*, std::vector<void*>>;
  // `what` and `model` name the block in the message of a failed allocation (built only then: a call that
  // reuses a pooled block allocates nothing).
  PoolLease(CudaModel::Device& dev, Pool& pool, void* stream, size_t bytes, const char* what, const std::string& model)
      : dev_(dev), pool_(pool), stream_(stream) {
    if (bytes == 0) return;
    {
      std::lock_guard<std::mutex> lock(dev.pool_mutex);
      auto& list = pool[stream];
      if (!list.empty()) {
        ptr_ = list.back();
        list.pop_back();
        return;
      }
    }
    const CudaDriver& d = cuda_driver();
    cu::CUdeviceptr p = 0;
    if (cu::CUresult r = d.cuMemAlloc(&p, bytes); r != cu::kSuccess)
      fail(cuda_status_code(r, THUNDERC_STATUS_KERNEL_FAILED) == THUNDERC_STATUS_OUT_OF_MEMORY
               ? THUNDERC_STATUS_OUT_OF_MEMORY
               : THUNDERC_STATUS_KERNEL_FAILED,
           "cannot allocate " + std::to_string(bytes) + " bytes of " + what + " for " + basename_of(model) + " on cuda:" +
               std::to_string(dev.ordinal) + ": " + d.failed("cuMemAlloc", r));
    ptr_ = cu::to_ptr(p);
  }
  ~PoolLease() {
    if (!ptr_) return;
    // Safe to reuse at once: the next call on this stream is ordered after this call's work.
    try {
      std::lock_guard<std::mutex> lock(dev_.pool_mutex);
      pool_[stream_].push_back(ptr_);
    } catch (...) {
      cuda_driver().cuMemFree(cu::to_dev(ptr_));
    }
  }
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;
  void* get() const { return ptr_; }

 private:
  CudaModel::Device& dev_;
  Pool& pool_;
  void* stream_;
  void* ptr_ = nullptr;
};

}  // namespace

// What a generated entry's device_api.context points at during one call.
struct CudaCall {
  const CudaModel* model;
  CudaModel::Device* dev;
  cu::CUstream stream;
  std::optional<PoolLease> lib_ws;  // library scratch, leased at the call's first library call
  void* preset_lib_ws = nullptr;     // a graph capture's own library scratch (nothing is leased then)
  bool used_library = false;

  // The LibCall for a library call of this call (leases the scratch once).
  LibCall lib_call() {
    used_library = true;
    if (preset_lib_ws) return LibCall{dev->ordinal, stream, preset_lib_ws, kLibWorkspaceBytes};
    if (!lib_ws)
      lib_ws.emplace(*dev, dev->free_lib_blocks, stream, kLibWorkspaceBytes, "library workspace", model->path_);
    return LibCall{dev->ordinal, stream, lib_ws->get(), kLibWorkspaceBytes};
  }

  static int32_t gemm(void* context, const thunderc_gemm* op, void* d, const void* a, const void* b,
                      const void* bias, char* error, size_t error_capacity) noexcept {
    auto* c = static_cast<CudaCall*>(context);
    if (!c || !op || op->struct_size < sizeof(thunderc_gemm)) {
      write_error(error, error_capacity, "device_api.gemm: NULL context or an operation of an older ABI");
      return 1;
    }
    try {
      std::call_once(c->dev->blas_once, [&] { c->dev->blas = make_cublaslt_device(c->dev->ordinal); });
      return cublaslt_gemm(*c->dev->blas, c->lib_call(), op, d, a, b, bias, error, error_capacity);
    } catch (const std::exception& e) {
      write_error(error, error_capacity, "gemm #" + std::to_string(op->id) + ": " + e.what());
      return 1;
    }
  }

  static int32_t conv2d(void* context, const thunderc_conv2d* op, void* y, const void* x, const void* w,
                        const void* bias, const void* residual, char* error, size_t error_capacity) noexcept {
    auto* c = static_cast<CudaCall*>(context);
    if (!c || !op || op->struct_size < sizeof(thunderc_conv2d)) {
      write_error(error, error_capacity, "device_api.conv2d: NULL context or an operation of an older ABI");
      return 1;
    }
    try {
      std::call_once(c->dev->dnn_once, [&] { c->dev->dnn = make_cudnn_device(c->dev->ordinal); });
      return cudnn_conv2d(*c->dev->dnn, c->lib_call(), op, y, x, w, bias, residual, error, error_capacity);
    } catch (const std::exception& e) {
      write_error(error, error_capacity, "conv2d #" + std::to_string(op->id) + ": " + e.what());
      return 1;
    }
  }

  static int32_t sdpa(void* context, const thunderc_sdpa* op, void* o, const void* q, const void* k, const void* v,
                      const void* mask, char* error, size_t error_capacity) noexcept {
    auto* c = static_cast<CudaCall*>(context);
    if (!c || !op || op->struct_size < sizeof(thunderc_sdpa)) {
      write_error(error, error_capacity,
                  "device_api.sdpa" + (op ? " #" + std::to_string(op->id) : std::string()) +
                      ": NULL context or an operation of an older ABI (struct_size " +
                      (op ? std::to_string(op->struct_size) : std::string("-")) + ", expected at least " +
                      std::to_string(sizeof(thunderc_sdpa)) + ")");
      return 1;
    }
    try {
      std::call_once(c->dev->dnn_once, [&] { c->dev->dnn = make_cudnn_device(c->dev->ordinal); });
      return cudnn_sdpa(*c->dev->dnn, c->lib_call(), op, o, q, k, v, mask, error, error_capacity);
    } catch (const std::exception& e) {
      write_error(error, error_capacity, "sdpa #" + std::to_string(op->id) + ": " + e.what());
      return 1;
    }
  }

  static int32_t launch(void* context, uint32_t kernel, const uint32_t grid[3], const uint32_t block[3],
                        uint32_t shared_bytes, void** args, char* error, size_t error_capacity) noexcept {
    auto* c = static_cast<CudaCall*>(context);
    try {
      const CudaDriver& d = cuda_driver();
      if (!c || !grid || !block) {
        write_error(error, error_capacity, "device_api.launch: NULL context, grid or block");
        return 1;
      }
      const auto& names = c->model->kernel_names_;
      if (kernel >= names.size()) {
        write_error(error, error_capacity, "device_api.launch: kernel index " + std::to_string(kernel) +
                                               " out of range (the model has " + std::to_string(names.size()) +
                                               " kernels)");
        return 1;
      }
      // Built only for a message: a launch that succeeds allocates nothing.
      auto where = [&] {
        return "kernel '" + names[kernel] + "' (grid " + dims_text(grid) + ", block " + dims_text(block) + ", " +
               std::to_string(shared_bytes) + " bytes of dynamic shared memory) on cuda:" +
               std::to_string(c->dev->ordinal);
      };
      cu::CUfunction f = c->dev->functions[kernel];
      // More than 48 KiB of dynamic shared memory needs an opt-in per function (once, to the largest size used).
      if (shared_bytes > kDefaultSharedLimit && d.cuFuncSetAttribute) {
        std::atomic<uint32_t>& opted = c->dev->shared_optin[kernel];
        uint32_t cur = opted.load(std::memory_order_acquire);
        if (shared_bytes > cur) {
          if (cu::CUresult r = d.cuFuncSetAttribute(f, cu::kFuncAttrMaxDynamicSharedSizeBytes,
                                                    static_cast<int>(shared_bytes));
              r != cu::kSuccess) {
            write_error(error, error_capacity,
                        where() + ": cannot allow that much shared memory: " +
                            d.failed("cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", r));
            return r;
          }
          while (shared_bytes > cur && !opted.compare_exchange_weak(cur, shared_bytes)) {
          }
        }
      }
      if (cu::CUresult r = d.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                                            c->stream, args, nullptr);
          r != cu::kSuccess) {
        write_error(error, error_capacity, where() + ": " + d.failed("cuLaunchKernel", r));
        return r;
      }
      return 0;
    } catch (const std::exception& e) {
      write_error(error, error_capacity, std::string("device_api.launch: ") + e.what());
      return 1;
    } catch (...) {
      write_error(error, error_capacity, "device_api.launch: unknown error");
      return 1;
    }
  }

  static int32_t copy(void* context, void* dst, const void* src, size_t bytes, char* error,
                      size_t error_capacity) noexcept {
    auto* c = static_cast<CudaCall*>(context);
    if (!c) {
      write_error(error, error_capacity, "device_api.copy: NULL context");
      return 1;
    }
    if (bytes == 0) return 0;
    const CudaDriver& d = cuda_driver();
    if (cu::CUresult r = d.cuMemcpyDtoDAsync(cu::to_dev(dst), cu::to_dev(src), bytes, c->stream); r != cu::kSuccess) {
      try {
        write_error(error, error_capacity, "device-to-device copy of " + std::to_string(bytes) + " bytes on cuda:" +
                                               std::to_string(c->dev->ordinal) + ": " +
                                               d.failed("cuMemcpyDtoDAsync", r));
      } catch (...) {
        write_error(error, error_capacity, "device-to-device copy failed");
      }
      return r;
    }
    return 0;
  }
};

namespace {

// The table a generated entry calls through during one call.
thunderc_device_api device_api_for(CudaCall* ctx) {
  thunderc_device_api api{};
  api.struct_size = sizeof api;
  api.context = ctx;
  api.launch = &CudaCall::launch;
  api.copy = &CudaCall::copy;
  api.gemm = &CudaCall::gemm;
  api.conv2d = &CudaCall::conv2d;
  api.sdpa = &CudaCall::sdpa;
  return api;
}

}  // namespace

CudaModel::CudaModel(const thunderc_cuda_module* mod, std::string model_path, size_t workspace_bytes, bool graphs)
    : path_(std::move(model_path)), workspace_bytes_(workspace_bytes), graphs_(graphs) {
  const std::string what = "'" + path_ + "': thunderc_cuda_module()";
  auto bad = [&](const std::string& why) { fail(THUNDERC_STATUS_MANIFEST, what + " " + why); };
  if (!mod) bad("returned NULL");
  if (mod->struct_size < sizeof(thunderc_cuda_module))
    bad("has struct_size " + std::to_string(mod->struct_size) + ", expected at least " +
        std::to_string(sizeof(thunderc_cuda_module)));
  if (mod->num_images == 0 || !mod->images) bad("lists no images (cubins or PTX)");
  for (size_t i = 0; i < mod->num_images; ++i) {
    const thunderc_cuda_image& im = mod->images[i];
    Image m;
    const std::string at = "image #" + std::to_string(i);
    if (!parse_arch(im.arch, &m.major, &m.minor))
      bad(at + " has architecture '" + (im.arch ? im.arch : "(null)") + "'; expected sm_XY or compute_XY");
    m.arch = im.arch;
    if (im.kind != THUNDERC_CUDA_CUBIN && im.kind != THUNDERC_CUDA_PTX)
      bad(at + " (" + m.arch + ") has kind " + std::to_string(im.kind) + "; expected 1 (cubin) or 2 (PTX)");
    m.kind = im.kind;
    if (!im.data || im.size == 0) bad(at + " (" + m.arch + ") is empty");
    m.data = im.data;
    m.size = im.size;
    archs_text_ += (i ? ", " : "") + m.arch + (m.kind == THUNDERC_CUDA_CUBIN ? " (cubin)" : " (PTX)");
    images_.push_back(std::move(m));
  }
  if (mod->num_kernels > 0 && !mod->kernel_names) bad("has " + std::to_string(mod->num_kernels) + " kernels but no names");
  for (size_t k = 0; k < mod->num_kernels; ++k) {
    const char* n = mod->kernel_names[k];
    if (!n || !*n) bad("kernel #" + std::to_string(k) + " has no name");
    kernel_names_.emplace_back(n);
  }
  if (mod->weights_size > 0 && !mod->weights) bad("has " + std::to_string(mod->weights_size) + " bytes of weights at NULL");
  weights_ = mod->weights;
  weights_size_ = mod->weights_size;

  const CudaDriver& d = cuda_driver();
  for (int i = 0; i < d.device_count; ++i) {
    devices_.push_back(std::make_unique<Device>());
    devices_.back()->ordinal = i;
  }
}

CudaModel::~CudaModel() {
  for (auto& dev : devices_) release_device(*dev);
}

void CudaModel::release_device(Device& dev) noexcept {
  if (!dev.ctx) return;
  const CudaDriver& d = cuda_driver();
  if (d.cuCtxPushCurrent(dev.ctx) != cu::kSuccess) return;
  for (auto& [key, g] : dev.graphs) {
    if (g->exec) d.cuGraphExecDestroy(g->exec);
    if (g->capture_stream) d.cuStreamDestroy(g->capture_stream);
    for (auto* list : {&g->inputs, &g->outputs})
      for (void* p : *list) d.cuMemFree(cu::to_dev(p));
    for (void* p : {g->workspace, g->lib_workspace})
      if (p) d.cuMemFree(cu::to_dev(p));
  }
  dev.graphs.clear();
  for (auto* pool : {&dev.free_blocks, &dev.free_lib_blocks}) {
    for (auto& [stream, blocks] : *pool)
      for (void* p : blocks) d.cuMemFree(cu::to_dev(p));
    pool->clear();
  }
  dev.blas.reset();
  dev.dnn.reset();
  if (dev.weights) d.cuMemFree(cu::to_dev(dev.weights));
  dev.weights = nullptr;
  if (dev.module) d.cuModuleUnload(dev.module);
  dev.module = nullptr;
  dev.functions.clear();
  cu::CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
}

void CudaModel::init_device(Device& dev) {
  const CudaDriver& d = cuda_driver();
  const std::string name = "cuda:" + std::to_string(dev.ordinal);
  const std::string model = basename_of(path_);
  cu::CUcontext ctx = cuda_primary_context(dev.ordinal);
  CudaContextScope scope(ctx);
  dev.ctx = ctx;

  cu::CUdevice cudev = 0;
  if (cu::CUresult r = d.cuDeviceGet(&cudev, dev.ordinal); r != cu::kSuccess)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, name + ": " + d.failed("cuDeviceGet", r));
  if (cu::CUresult r = d.cuDeviceGetAttribute(&dev.major, cu::kAttrComputeCapabilityMajor, cudev); r != cu::kSuccess)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, name + ": " + d.failed("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r));
  if (cu::CUresult r = d.cuDeviceGetAttribute(&dev.minor, cu::kAttrComputeCapabilityMinor, cudev); r != cu::kSuccess)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, name + ": " + d.failed("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r));
  const std::string sm = "sm_" + std::to_string(dev.major) + std::to_string(dev.minor);

  // The cubin for exactly this architecture, else the newest PTX not newer than the device.
  const Image* chosen = nullptr;
  for (const Image& im : images_)
    if (im.kind == THUNDERC_CUDA_CUBIN && im.major == dev.major && im.minor == dev.minor) {
      chosen = &im;
      break;
    }
  if (!chosen) {
    for (const Image& im : images_) {
      if (im.kind != THUNDERC_CUDA_PTX) continue;
      if (im.major > dev.major || (im.major == dev.major && im.minor > dev.minor)) continue;
      if (!chosen || im.major > chosen->major || (im.major == chosen->major && im.minor > chosen->minor)) chosen = &im;
    }
  }
  if (!chosen)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE,
         model + " has no CUDA code that runs on " + name + " (" + sm + "): it has " + archs_text_ +
             " (a cubin runs only on its own architecture, PTX on its own and newer ones); recompile the model "
             "for " + sm);
  dev.image = chosen->kind == THUNDERC_CUDA_CUBIN ? chosen->arch + " cubin"
                                                  : chosen->arch + " PTX (JIT-compiled for " + sm + ")";

  char log[8192];
  log[0] = '\0';
  int options[2] = {cu::kJitErrorLogBuffer, cu::kJitErrorLogBufferSizeBytes};
  void* values[2] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log))};
  if (cu::CUresult r = d.cuModuleLoadDataEx(&dev.module, chosen->data, 2, options, values); r != cu::kSuccess) {
    dev.module = nullptr;
    log[sizeof log - 1] = '\0';
    std::string msg = "cannot load the " + dev.image + " of " + model + " on " + name + ": " +
                      d.failed("cuModuleLoadDataEx", r);
    if (log[0]) msg += "; JIT log: " + std::string(log);
    fail(cuda_status_code(r, THUNDERC_STATUS_DEVICE_UNAVAILABLE) == THUNDERC_STATUS_OUT_OF_MEMORY
             ? THUNDERC_STATUS_OUT_OF_MEMORY
             : THUNDERC_STATUS_DEVICE_UNAVAILABLE,
         msg);
  }
  dev.functions.assign(kernel_names_.size(), nullptr);
  for (size_t k = 0; k < kernel_names_.size(); ++k) {
    if (cu::CUresult r = d.cuModuleGetFunction(&dev.functions[k], dev.module, kernel_names_[k].c_str());
        r != cu::kSuccess)
      fail(THUNDERC_STATUS_KERNEL_FAILED, "kernel '" + kernel_names_[k] + "' of " + model + " is not in its " +
                                              dev.image + " loaded on " + name + ": " +
                                              d.failed("cuModuleGetFunction", r));
  }
  dev.shared_optin.reset(new std::atomic<uint32_t>[kernel_names_.size() + 1]);
  for (size_t k = 0; k <= kernel_names_.size(); ++k) dev.shared_optin[k].store(kDefaultSharedLimit);

  if (weights_size_ > 0) {
    cu::CUdeviceptr p = 0;
    if (cu::CUresult r = d.cuMemAlloc(&p, weights_size_); r != cu::kSuccess)
      fail(cuda_status_code(r, THUNDERC_STATUS_KERNEL_FAILED),
           "cannot allocate " + std::to_string(weights_size_) + " bytes for the weights of " + model + " on " + name +
               ": " + d.failed("cuMemAlloc", r));
    dev.weights = cu::to_ptr(p);
    if (cu::CUresult r = d.cuMemcpyHtoD(p, weights_, weights_size_); r != cu::kSuccess)
      fail(cuda_status_code(r, THUNDERC_STATUS_KERNEL_FAILED),
           "cannot upload the weights of " + model + " to " + name + ": " + d.failed("cuMemcpyHtoD", r));
  }
}

CudaModel::Device& CudaModel::ready_device(int ordinal) {
  require_cuda_device(DLDevice{kDLCUDA, ordinal});
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= devices_.size())
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, "cuda:" + std::to_string(ordinal) + " is not available");
  Device& dev = *devices_[static_cast<size_t>(ordinal)];
  if (dev.ready.load(std::memory_order_acquire)) return dev;
  std::lock_guard<std::mutex> lock(dev.init_mutex);
  if (dev.ready.load(std::memory_order_relaxed)) return dev;
  if (dev.failed) fail(dev.fail_code, dev.fail_message);
  try {
    init_device(dev);
  } catch (const RtError& e) {
    release_device(dev);
    // Out of memory may pass; anything else (no image for the device, a kernel missing) will not.
    if (e.code() != THUNDERC_STATUS_OUT_OF_MEMORY) {
      dev.failed = true;
      dev.fail_code = e.code();
      dev.fail_message = e.what();
    }
    throw;
  }
  dev.ready.store(true, std::memory_order_release);
  return dev;
}

const std::string& CudaModel::prepare(int ordinal) { return ready_device(ordinal).image; }


int32_t CudaModel::run_direct(Device& dev, thunderc_entry_fn fn, thunderc_call* call, void* stream,
                              bool* used_library) {
  PoolLease ws(dev, dev.free_blocks, stream, call->workspace_bytes > 0 ? workspace_bytes_ : 0, "workspace", path_);
  CudaCall ctx{this, &dev, static_cast<cu::CUstream>(stream), std::nullopt};
  thunderc_device_api api = device_api_for(&ctx);
  call->workspace = ws.get();
  if (!ws.get()) call->workspace_bytes = 0;
  call->device = DLDevice{kDLCUDA, dev.ordinal};
  call->stream = stream;
  call->weights = dev.weights;
  call->device_api = &api;
  const int32_t rc = fn(call);
  if (used_library) *used_library = ctx.used_library;
  return rc;
}

namespace {

bool graphs_log() {
  static const bool on = [] {
    const char* v = std::getenv("THUNDERC_CUDA_GRAPHS_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

size_t tensor_bytes(const DLTensor& t) {
  size_t n = 0;
  return dense_nbytes(t.shape, t.ndim, t.dtype, &n) ? n : 0;
}

}  // namespace

bool CudaModel::capture(Device& dev, Graph& g, thunderc_entry_fn fn, const thunderc_call* call) {
  const CudaDriver& d = cuda_driver();
  std::string why;
  auto alloc = [&](size_t bytes, void** out) {
    cu::CUdeviceptr p = 0;
    if (cu::CUresult r = d.cuMemAlloc(&p, bytes == 0 ? 1 : bytes); r != cu::kSuccess) {
      why = d.failed("cuMemAlloc", r);
      return false;
    }
    *out = cu::to_ptr(p);
    return true;
  };
  // Static buffers with the shapes of this call (the variant's guards fix them): a copy of each tensor's
  // description pointing at its own buffer.
  std::vector<DLTensor> in_t(call->num_inputs), out_t(call->num_outputs);
  std::vector<const DLTensor*> in_p(call->num_inputs);
  std::vector<DLTensor*> out_p(call->num_outputs);
  auto stage = [&](const DLTensor& from, DLTensor& to, std::vector<size_t>& bytes, std::vector<void*>& bufs) {
    to = from;
    bytes.push_back(tensor_bytes(from));
    bufs.push_back(nullptr);
    const bool done = alloc(bytes.back(), &bufs.back());
    to.data = bufs.back();
    to.byte_offset = 0;
    return done;
  };
  bool ok = true;
  for (size_t i = 0; ok && i < call->num_inputs; ++i) {
    ok = stage(*call->inputs[i], in_t[i], g.input_bytes, g.inputs);
    in_p[i] = &in_t[i];
  }
  for (size_t i = 0; ok && i < call->num_outputs; ++i) {
    ok = stage(*call->outputs[i], out_t[i], g.output_bytes, g.outputs);
    out_p[i] = &out_t[i];
  }
  if (ok && call->workspace_bytes > 0) ok = alloc(workspace_bytes_, &g.workspace);
  if (ok && g.used_library) ok = alloc(kLibWorkspaceBytes, &g.lib_workspace);
  if (ok) {
    if (cu::CUresult r = d.cuStreamCreate(&g.capture_stream, 1 /* CU_STREAM_NON_BLOCKING */); r != cu::kSuccess) {
      why = d.failed("cuStreamCreate", r);
      g.capture_stream = nullptr;
      ok = false;
    }
  }
  if (ok) {
    CudaCall ctx{this, &dev, g.capture_stream, std::nullopt};
    ctx.preset_lib_ws = g.lib_workspace;
    thunderc_device_api api = device_api_for(&ctx);
    thunderc_call shadow = *call;
    shadow.inputs = in_p.data();
    shadow.outputs = out_p.data();
    shadow.workspace = g.workspace;
    shadow.workspace_bytes = g.workspace ? workspace_bytes_ : 0;
    shadow.device = DLDevice{kDLCUDA, dev.ordinal};
    shadow.stream = g.capture_stream;
    shadow.weights = dev.weights;
    shadow.device_api = &api;
    // Thread-local mode: an allocation or synchronization by this thread during the capture fails it.
    if (cu::CUresult r = d.cuStreamBeginCapture(g.capture_stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */);
        r != cu::kSuccess) {
      why = d.failed("cuStreamBeginCapture", r);
      ok = false;
    } else {
      const int32_t rc = fn(&shadow);
      void* graph = nullptr;
      cu::CUresult end = d.cuStreamEndCapture(g.capture_stream, &graph);
      if (rc != 0) why = std::string("the variant failed while captured: ") + (call->error ? call->error : "");
      else if (end != cu::kSuccess) why = d.failed("cuStreamEndCapture", end);
      else if (cu::CUresult r = d.cuGraphInstantiateWithFlags(&g.exec, graph, 0); r != cu::kSuccess)
        why = d.failed("cuGraphInstantiateWithFlags", r), g.exec = nullptr;
      if (graph) d.cuGraphDestroy(graph);
      ok = rc == 0 && end == cu::kSuccess && g.exec;
    }
  }
  if (graphs_log())
    std::fprintf(stderr, "thunderc runtime: %s on cuda:%d: %s\n", basename_of(path_).c_str(), dev.ordinal,
                 ok ? "captured a CUDA graph" : ("not captured, runs without a graph: " + why).c_str());
  if (!ok) g.disabled = true;  // its buffers stay until the model closes (release_device frees them)
  return ok;
}

int32_t CudaModel::replay(Graph& g, thunderc_call* call, void* stream) {
  const CudaDriver& d = cuda_driver();
  auto fail_with = [&](const std::string& what, cu::CUresult r) {
    const std::string msg = basename_of(path_) + ": CUDA graph replay: " + d.failed(what, r);
    if (call->error && call->error_capacity > 0) std::snprintf(call->error, call->error_capacity, "%s", msg.c_str());
    return static_cast<int32_t>(r);
  };
  auto at = [](const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; };
  for (size_t i = 0; i < call->num_inputs; ++i) {
    void* src = at(call->inputs[i]);
    if (src == g.inputs[i] || g.input_bytes[i] == 0) continue;
    if (cu::CUresult r = d.cuMemcpyDtoDAsync(cu::to_dev(g.inputs[i]), cu::to_dev(src), g.input_bytes[i], stream);
        r != cu::kSuccess)
      return fail_with("cuMemcpyDtoDAsync (input)", r);
  }
  if (cu::CUresult r = d.cuGraphLaunch(g.exec, stream); r != cu::kSuccess) return fail_with("cuGraphLaunch", r);
  for (size_t i = 0; i < call->num_outputs; ++i) {
    void* dst = at(call->outputs[i]);
    if (dst == g.outputs[i] || g.output_bytes[i] == 0) continue;
    if (cu::CUresult r = d.cuMemcpyDtoDAsync(cu::to_dev(dst), cu::to_dev(g.outputs[i]), g.output_bytes[i], stream);
        r != cu::kSuccess)
      return fail_with("cuMemcpyDtoDAsync (output)", r);
  }
  return 0;
}

int32_t CudaModel::call(int ordinal, thunderc_entry_fn fn, thunderc_call* call, void* stream) {
  Device& dev = ready_device(ordinal);
  CudaContextScope scope(dev.ctx);
  if (!graphs_ || !cuda_driver().has_graphs()) return run_direct(dev, fn, call, stream, nullptr);
  Graph* g = nullptr;
  {
    std::lock_guard<std::mutex> lock(dev.graphs_mutex);
    auto& slot = dev.graphs[{stream, fn}];
    if (!slot) slot = std::make_unique<Graph>();
    g = slot.get();
  }
  std::lock_guard<std::mutex> lock(g->mutex);
  if (g->disabled) return run_direct(dev, fn, call, stream, nullptr);
  if (!g->warmed_up) {  // the first call runs uncaptured: it builds the plans a capture must not build
    g->warmed_up = true;
    return run_direct(dev, fn, call, stream, &g->used_library);
  }
  if (!g->exec && !capture(dev, *g, fn, call)) return run_direct(dev, fn, call, stream, nullptr);
  // Same sizes as captured (a variant's guards fix them); anything else runs directly.
  for (size_t i = 0; i < call->num_inputs; ++i)
    if (i >= g->input_bytes.size() || tensor_bytes(*call->inputs[i]) != g->input_bytes[i])
      return run_direct(dev, fn, call, stream, nullptr);
  return replay(*g, call, stream);
}

}  // namespace thunderc::rt
