// The CUDA driver API, reached through dlopen("libcuda.so.1") at run time: the runtime never links CUDA,
// so it loads on machines without a GPU and reports DEVICE_UNAVAILABLE only for variants that need one.
#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "internal.hpp"

namespace thunderc::rt {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;

struct Driver {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CudaProbe probe;
  std::mutex ctx_mutex;
  std::vector<CUcontext> contexts;  // primary context per device, retained for the process lifetime

  std::string err(const char* what, CUresult r) const {
    const char* s = nullptr;
    if (cuGetErrorString) cuGetErrorString(r, &s);
    return std::string(what) + " failed with CUDA error " + std::to_string(r) + (s ? std::string(" (") + s + ")" : "");
  }
};

template <class F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.lib = dlopen("libcuda.so.1", RTLD_LOCAL | RTLD_NOW);
    if (!d.lib) {
      const char* e = dlerror();
      d.probe.error = std::string("no CUDA driver (dlopen libcuda.so.1: ") + (e ? e : "unknown error") + ")";
      return;
    }
    if (!sym(d.lib, "cuInit", &d.cuInit) || !sym(d.lib, "cuDeviceGetCount", &d.cuDeviceGetCount) ||
        !sym(d.lib, "cuDeviceGet", &d.cuDeviceGet) ||
        !sym(d.lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) ||
        !sym(d.lib, "cuCtxPushCurrent_v2", &d.cuCtxPushCurrent) ||
        !sym(d.lib, "cuCtxPopCurrent_v2", &d.cuCtxPopCurrent) || !sym(d.lib, "cuMemAlloc_v2", &d.cuMemAlloc) ||
        !sym(d.lib, "cuMemFree_v2", &d.cuMemFree)) {
      d.probe.error = "the CUDA driver libcuda.so.1 lacks required symbols";
      return;
    }
    sym(d.lib, "cuGetErrorString", &d.cuGetErrorString);
    d.probe.driver_loaded = true;
    if (CUresult r = d.cuInit(0); r != 0) {
      d.probe.error = d.err("cuInit", r);
      return;
    }
    int count = 0;
    if (CUresult r = d.cuDeviceGetCount(&count); r != 0) {
      d.probe.error = d.err("cuDeviceGetCount", r);
      return;
    }
    d.probe.device_count = count;
    d.contexts.assign(static_cast<size_t>(count), nullptr);
    if (count == 0) d.probe.error = "the CUDA driver reports no devices";
  });
  return d;
}

}  // namespace

const CudaProbe& cuda_probe() { return driver().probe; }

void* cuda_alloc(int device, size_t bytes, std::string* error) {
  Driver& d = driver();
  if (device < 0 || device >= d.probe.device_count) {
    *error = "CUDA device " + std::to_string(device) + " is not available";
    return nullptr;
  }
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.ctx_mutex);
    if (!d.contexts[static_cast<size_t>(device)]) {
      CUdevice dev = 0;
      if (CUresult r = d.cuDeviceGet(&dev, device); r != 0) {
        *error = d.err("cuDeviceGet", r);
        return nullptr;
      }
      if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, dev); r != 0) {
        *error = d.err("cuDevicePrimaryCtxRetain", r);
        return nullptr;
      }
      d.contexts[static_cast<size_t>(device)] = ctx;
    }
    ctx = d.contexts[static_cast<size_t>(device)];
  }
  if (CUresult r = d.cuCtxPushCurrent(ctx); r != 0) {
    *error = d.err("cuCtxPushCurrent", r);
    return nullptr;
  }
  CUdeviceptr p = 0;
  const CUresult r = d.cuMemAlloc(&p, bytes == 0 ? 1 : bytes);
  CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
  if (r != 0) {
    *error = d.err("cuMemAlloc", r);
    return nullptr;
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void cuda_free(int device, void* ptr) {
  if (!ptr) return;
  Driver& d = driver();
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.ctx_mutex);
    if (device < 0 || static_cast<size_t>(device) >= d.contexts.size()) return;
    ctx = d.contexts[static_cast<size_t>(device)];
  }
  if (!ctx || d.cuCtxPushCurrent(ctx) != 0) return;
  d.cuMemFree(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr)));
  CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
}

}  // namespace thunderc::rt
