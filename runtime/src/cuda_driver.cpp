// The CUDA driver API, reached through dlopen("libcuda.so.1") at run time: the runtime never links CUDA,
// so it loads on machines without a GPU and reports DEVICE_UNAVAILABLE only for what needs one.
#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <vector>

#include "internal.hpp"

namespace thunderc::rt {
namespace {

template <class F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// The first of `names` the library exports.
template <class F>
bool sym_any(void* lib, std::initializer_list<const char*> names, F* out) {
  for (const char* n : names)
    if (sym(lib, n, out)) return true;
  return false;
}

struct DriverState {
  CudaDriver d;
  std::mutex ctx_mutex;
  std::vector<cu::CUcontext> contexts;  // primary context per device, retained for the process lifetime
};

DriverState& state() {
  static DriverState* s = new DriverState;  // never destroyed: outputs may be freed during static destruction
  static std::once_flag once;
  std::call_once(once, [] {
    CudaDriver& d = s->d;
    dlerror();
    d.lib = dlopen("libcuda.so.1", RTLD_LOCAL | RTLD_NOW);
    if (!d.lib) {
      const char* e = dlerror();
      d.error = std::string("no CUDA driver (dlopen libcuda.so.1: ") + (e ? e : "unknown error") + ")";
      return;
    }
    std::string missing;
    auto need = [&](bool found, const char* name) {
      if (!found) missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    need(sym(d.lib, "cuInit", &d.cuInit), "cuInit");
    need(sym(d.lib, "cuDeviceGetCount", &d.cuDeviceGetCount), "cuDeviceGetCount");
    need(sym(d.lib, "cuDeviceGet", &d.cuDeviceGet), "cuDeviceGet");
    need(sym(d.lib, "cuDeviceGetAttribute", &d.cuDeviceGetAttribute), "cuDeviceGetAttribute");
    need(sym(d.lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain");
    need(sym(d.lib, "cuCtxPushCurrent_v2", &d.cuCtxPushCurrent), "cuCtxPushCurrent_v2");
    need(sym(d.lib, "cuCtxPopCurrent_v2", &d.cuCtxPopCurrent), "cuCtxPopCurrent_v2");
    need(sym(d.lib, "cuCtxSynchronize", &d.cuCtxSynchronize), "cuCtxSynchronize");
    need(sym(d.lib, "cuMemAlloc_v2", &d.cuMemAlloc), "cuMemAlloc_v2");
    need(sym(d.lib, "cuMemFree_v2", &d.cuMemFree), "cuMemFree_v2");
    need(sym(d.lib, "cuMemcpyHtoD_v2", &d.cuMemcpyHtoD), "cuMemcpyHtoD_v2");
    need(sym(d.lib, "cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync), "cuMemcpyHtoDAsync_v2");
    need(sym(d.lib, "cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync), "cuMemcpyDtoHAsync_v2");
    need(sym(d.lib, "cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync), "cuMemcpyDtoDAsync_v2");
    need(sym(d.lib, "cuStreamCreate", &d.cuStreamCreate), "cuStreamCreate");
    need(sym_any(d.lib, {"cuStreamDestroy_v2", "cuStreamDestroy"}, &d.cuStreamDestroy), "cuStreamDestroy_v2");
    need(sym(d.lib, "cuStreamSynchronize", &d.cuStreamSynchronize), "cuStreamSynchronize");
    need(sym(d.lib, "cuEventCreate", &d.cuEventCreate), "cuEventCreate");
    need(sym_any(d.lib, {"cuEventDestroy_v2", "cuEventDestroy"}, &d.cuEventDestroy), "cuEventDestroy_v2");
    need(sym(d.lib, "cuEventRecord", &d.cuEventRecord), "cuEventRecord");
    need(sym(d.lib, "cuEventSynchronize", &d.cuEventSynchronize), "cuEventSynchronize");
    need(sym_any(d.lib, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &d.cuEventElapsedTime),
         "cuEventElapsedTime");
    need(sym(d.lib, "cuModuleLoadDataEx", &d.cuModuleLoadDataEx), "cuModuleLoadDataEx");
    need(sym(d.lib, "cuModuleUnload", &d.cuModuleUnload), "cuModuleUnload");
    need(sym(d.lib, "cuModuleGetFunction", &d.cuModuleGetFunction), "cuModuleGetFunction");
    need(sym(d.lib, "cuLaunchKernel", &d.cuLaunchKernel), "cuLaunchKernel");
    sym(d.lib, "cuFuncSetAttribute", &d.cuFuncSetAttribute);
    sym(d.lib, "cuStreamBeginCapture_v2", &d.cuStreamBeginCapture);
    sym(d.lib, "cuStreamEndCapture", &d.cuStreamEndCapture);
    sym(d.lib, "cuGraphInstantiateWithFlags", &d.cuGraphInstantiateWithFlags);
    sym(d.lib, "cuGraphLaunch", &d.cuGraphLaunch);
    sym(d.lib, "cuGraphExecDestroy", &d.cuGraphExecDestroy);
    sym(d.lib, "cuGraphDestroy", &d.cuGraphDestroy);
    sym(d.lib, "cuGetErrorName", &d.cuGetErrorName);
    sym(d.lib, "cuGetErrorString", &d.cuGetErrorString);
    if (!missing.empty()) {
      d.error = "the CUDA driver libcuda.so.1 lacks required functions (" + missing + ")";
      return;
    }
    if (cu::CUresult r = d.cuInit(0); r != cu::kSuccess) {
      d.error = "the CUDA driver cannot start: " + d.failed("cuInit", r);
      return;
    }
    int count = 0;
    if (cu::CUresult r = d.cuDeviceGetCount(&count); r != cu::kSuccess) {
      d.error = d.failed("cuDeviceGetCount", r);
      return;
    }
    d.loaded = true;
    d.device_count = count < 0 ? 0 : count;
    s->contexts.assign(static_cast<size_t>(d.device_count), nullptr);
    if (d.device_count == 0) d.error = "the CUDA driver reports no devices";
  });
  return *s;
}

}  // namespace

std::string CudaDriver::error_text(cu::CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &name) != cu::kSuccess) name = nullptr;
  if (cuGetErrorString && cuGetErrorString(r, &text) != cu::kSuccess) text = nullptr;
  std::string s = name ? std::string(name) : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

const CudaDriver& cuda_driver() { return state().d; }

thunderc_status_code_t cuda_status_code(cu::CUresult r, thunderc_status_code_t otherwise) {
  if (r == cu::kOutOfMemory) return THUNDERC_STATUS_OUT_OF_MEMORY;
  if (r == cu::kInvalidValue || r == cu::kInvalidHandle) return THUNDERC_STATUS_INVALID_ARGUMENT;
  return otherwise;
}

void require_cuda_device(DLDevice device) {
  const CudaDriver& d = cuda_driver();
  const std::string name = device_to_string(device);
  if (device.device_type != kDLCUDA)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, name + " is not a CUDA device");
  if (d.device_count == 0) fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, name + " is not available: " + d.error);
  if (device.device_id < 0 || device.device_id >= d.device_count)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, name + " is not available: the CUDA driver reports " +
                                                 std::to_string(d.device_count) + " device(s) (cuda:0" +
                                                 (d.device_count > 1 ? " .. cuda:" + std::to_string(d.device_count - 1)
                                                                     : std::string()) +
                                                 ")");
}

cu::CUcontext cuda_primary_context(int ordinal) {
  require_cuda_device(DLDevice{kDLCUDA, ordinal});
  DriverState& s = state();
  std::lock_guard<std::mutex> lock(s.ctx_mutex);
  cu::CUcontext& ctx = s.contexts[static_cast<size_t>(ordinal)];
  if (!ctx) {
    cu::CUdevice dev = 0;
    if (cu::CUresult r = s.d.cuDeviceGet(&dev, ordinal); r != cu::kSuccess)
      fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, "cuda:" + std::to_string(ordinal) + ": " + s.d.failed("cuDeviceGet", r));
    cu::CUcontext c = nullptr;
    if (cu::CUresult r = s.d.cuDevicePrimaryCtxRetain(&c, dev); r != cu::kSuccess)
      fail(cuda_status_code(r, THUNDERC_STATUS_DEVICE_UNAVAILABLE),
           "cuda:" + std::to_string(ordinal) + ": " + s.d.failed("cuDevicePrimaryCtxRetain", r));
    ctx = c;
  }
  return ctx;
}

CudaContextScope::CudaContextScope(cu::CUcontext ctx) {
  const CudaDriver& d = cuda_driver();
  if (cu::CUresult r = d.cuCtxPushCurrent(ctx); r != cu::kSuccess)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, d.failed("cuCtxPushCurrent", r));
}

CudaContextScope::~CudaContextScope() {
  cu::CUcontext popped = nullptr;
  cuda_driver().cuCtxPopCurrent(&popped);
}

void* cuda_alloc(int ordinal, size_t bytes, std::string* error) {
  try {
    CudaContextScope scope(cuda_primary_context(ordinal));
    const CudaDriver& d = cuda_driver();
    cu::CUdeviceptr p = 0;
    if (cu::CUresult r = d.cuMemAlloc(&p, bytes == 0 ? 1 : bytes); r != cu::kSuccess) {
      *error = d.failed("cuMemAlloc", r);
      return nullptr;
    }
    return cu::to_ptr(p);
  } catch (const RtError& e) {
    *error = e.what();
    return nullptr;
  }
}

void cuda_free(int ordinal, void* ptr) {
  if (!ptr) return;
  try {
    CudaContextScope scope(cuda_primary_context(ordinal));
    cuda_driver().cuMemFree(cu::to_dev(ptr));
  } catch (const RtError&) {
    // Nothing to report to: a deleter cannot fail.
  }
}

namespace {

void check_copy(cu::CUresult r, int ordinal, const char* what, const std::string& of, const char* call) {
  if (r == cu::kSuccess) return;
  fail(cuda_status_code(r, THUNDERC_STATUS_KERNEL_FAILED),
       std::string(what) + " of " + of + " on cuda:" + std::to_string(ordinal) + ": " + cuda_driver().failed(call, r));
}

}  // namespace

void cuda_copy_to_device(int ordinal, void* dst, const void* host_src, size_t bytes, const char* what,
                         const std::string& of) {
  if (bytes == 0) return;
  CudaContextScope scope(cuda_primary_context(ordinal));
  const CudaDriver& d = cuda_driver();
  check_copy(d.cuMemcpyHtoD(cu::to_dev(dst), host_src, bytes), ordinal, what, of, "cuMemcpyHtoD");
}

void cuda_copy_on_device(int ordinal, void* dst, const void* src, size_t bytes, void* stream, const char* what,
                         const std::string& of) {
  if (bytes == 0) return;
  CudaContextScope scope(cuda_primary_context(ordinal));
  const CudaDriver& d = cuda_driver();
  check_copy(d.cuMemcpyDtoDAsync(cu::to_dev(dst), cu::to_dev(src), bytes, stream), ordinal, what, of,
             "cuMemcpyDtoDAsync");
}

void cuda_synchronize(int ordinal, void* stream, const char* what, const std::string& of) {
  CudaContextScope scope(cuda_primary_context(ordinal));
  const CudaDriver& d = cuda_driver();
  if (stream)
    check_copy(d.cuStreamSynchronize(stream), ordinal, what, of, "cuStreamSynchronize");
  else
    check_copy(d.cuCtxSynchronize(), ordinal, what, of, "cuCtxSynchronize");
}

}  // namespace thunderc::rt
