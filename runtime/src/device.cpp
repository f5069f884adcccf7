// The device helpers of the C API (runtime.h, "devices"): memory, copies, streams and event timing on the CPU
// or a CUDA device, through the dlopen'ed driver (cuda_driver.cpp), so that tools need no CUDA library.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "internal.hpp"

using namespace thunderc::rt;

struct thunderc_device_event_s {
  DLDevice device;
  cu::CUevent event = nullptr;                        // CUDA
  std::chrono::steady_clock::time_point host_time{};  // CPU
  bool recorded = false;
};

namespace {

bool is_cpu(DLDevice d) { return d.device_type == kDLCPU; }

void check_type(DLDevice d, const char* fn) {
  if (d.device_type != kDLCPU && d.device_type != kDLCUDA)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT,
         std::string(fn) + ": " + device_to_string(d) + " is neither the CPU nor a CUDA device");
  if (d.device_type == kDLCPU && d.device_id != 0)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": the CPU device is {kDLCPU, 0}, got device_id " +
                                               std::to_string(d.device_id));
}

// Throws for a failed driver call made by `fn` on `device`.
void check_cu(cu::CUresult r, const char* fn, DLDevice device, const std::string& what) {
  if (r == cu::kSuccess) return;
  fail(cuda_status_code(r, THUNDERC_STATUS_KERNEL_FAILED),
       std::string(fn) + " on " + device_to_string(device) + ": " + cuda_driver().failed(what, r));
}

}  // namespace


extern "C" {

THUNDERC_API thunderc_status thunderc_device_count(DLDeviceType device_type, int32_t* out_count) {
  return guarded([&] {
    if (!out_count) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_count: out_count is NULL");
    if (device_type == kDLCPU) {
      *out_count = 1;
    } else if (device_type == kDLCUDA) {
      *out_count = cuda_driver().device_count;
    } else {
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_count: device type " +
                                                 std::to_string(static_cast<int>(device_type)) +
                                                 " is neither kDLCPU nor kDLCUDA");
    }
  });
}

THUNDERC_API thunderc_status thunderc_device_available(DLDevice device) {
  return guarded([&] {
    check_type(device, "thunderc_device_available");
    if (!is_cpu(device)) require_cuda_device(device);
  });
}

THUNDERC_API thunderc_status thunderc_device_compute_capability(DLDevice device, int32_t* out_major,
                                                                int32_t* out_minor) {
  return guarded([&] {
    if (!out_major || !out_minor)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_compute_capability: NULL output pointer");
    if (device.device_type != kDLCUDA)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT,
           "thunderc_device_compute_capability: " + device_to_string(device) + " is not a CUDA device");
    require_cuda_device(device);
    const CudaDriver& d = cuda_driver();
    cu::CUdevice dev = 0;
    check_cu(d.cuDeviceGet(&dev, device.device_id), "thunderc_device_compute_capability", device, "cuDeviceGet");
    int major = 0, minor = 0;
    check_cu(d.cuDeviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, dev), "thunderc_device_compute_capability",
             device, "cuDeviceGetAttribute");
    check_cu(d.cuDeviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, dev), "thunderc_device_compute_capability",
             device, "cuDeviceGetAttribute");
    *out_major = major;
    *out_minor = minor;
  });
}

THUNDERC_API thunderc_status thunderc_device_alloc(DLDevice device, size_t bytes, void** out_ptr) {
  if (out_ptr) *out_ptr = nullptr;
  return guarded([&] {
    if (!out_ptr) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_alloc: out_ptr is NULL");
    check_type(device, "thunderc_device_alloc");
    if (is_cpu(device)) {
      const size_t n = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, n);
      if (!p)
        fail(THUNDERC_STATUS_OUT_OF_MEMORY, "thunderc_device_alloc: cannot allocate " + std::to_string(bytes) +
                                                " bytes of host memory");
      *out_ptr = p;
      return;
    }
    CudaContextScope scope(cuda_primary_context(device.device_id));
    cu::CUdeviceptr p = 0;
    check_cu(cuda_driver().cuMemAlloc(&p, bytes == 0 ? 1 : bytes), "thunderc_device_alloc", device,
             "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
    *out_ptr = cu::to_ptr(p);
  });
}

THUNDERC_API thunderc_status thunderc_device_free(DLDevice device, void* ptr) {
  return guarded([&] {
    check_type(device, "thunderc_device_free");
    if (!ptr) return;
    if (is_cpu(device)) {
      std::free(ptr);
      return;
    }
    CudaContextScope scope(cuda_primary_context(device.device_id));
    check_cu(cuda_driver().cuMemFree(cu::to_dev(ptr)), "thunderc_device_free", device, "cuMemFree");
  });
}

THUNDERC_API thunderc_status thunderc_device_copy_to_device(DLDevice device, void* device_dst, const void* host_src,
                                                            size_t bytes, void* stream) {
  return guarded([&] {
    check_type(device, "thunderc_device_copy_to_device");
    if (bytes == 0) return;
    if (!device_dst || !host_src) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_copy_to_device: NULL pointer");
    if (is_cpu(device)) {
      std::memcpy(device_dst, host_src, bytes);
      return;
    }
    CudaContextScope scope(cuda_primary_context(device.device_id));
    const CudaDriver& d = cuda_driver();
    check_cu(d.cuMemcpyHtoDAsync(cu::to_dev(device_dst), host_src, bytes, stream), "thunderc_device_copy_to_device",
             device, "cuMemcpyHtoDAsync(" + std::to_string(bytes) + " bytes)");
    check_cu(d.cuStreamSynchronize(stream), "thunderc_device_copy_to_device", device, "cuStreamSynchronize");
  });
}

THUNDERC_API thunderc_status thunderc_device_copy_to_host(DLDevice device, void* host_dst, const void* device_src,
                                                          size_t bytes, void* stream) {
  return guarded([&] {
    check_type(device, "thunderc_device_copy_to_host");
    if (bytes == 0) return;
    if (!host_dst || !device_src) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_copy_to_host: NULL pointer");
    if (is_cpu(device)) {
      std::memcpy(host_dst, device_src, bytes);
      return;
    }
    CudaContextScope scope(cuda_primary_context(device.device_id));
    const CudaDriver& d = cuda_driver();
    check_cu(d.cuMemcpyDtoHAsync(host_dst, cu::to_dev(device_src), bytes, stream), "thunderc_device_copy_to_host",
             device, "cuMemcpyDtoHAsync(" + std::to_string(bytes) + " bytes)");
    check_cu(d.cuStreamSynchronize(stream), "thunderc_device_copy_to_host", device, "cuStreamSynchronize");
  });
}

THUNDERC_API thunderc_status thunderc_device_synchronize(DLDevice device, void* stream) {
  return guarded([&] {
    check_type(device, "thunderc_device_synchronize");
    if (is_cpu(device)) return;
    CudaContextScope scope(cuda_primary_context(device.device_id));
    const CudaDriver& d = cuda_driver();
    if (stream)
      check_cu(d.cuStreamSynchronize(stream), "thunderc_device_synchronize", device, "cuStreamSynchronize");
    else
      check_cu(d.cuCtxSynchronize(), "thunderc_device_synchronize", device, "cuCtxSynchronize");
  });
}

THUNDERC_API thunderc_status thunderc_device_stream_create(DLDevice device, void** out_stream) {
  if (out_stream) *out_stream = nullptr;
  return guarded([&] {
    if (!out_stream) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_stream_create: out_stream is NULL");
    check_type(device, "thunderc_device_stream_create");
    if (is_cpu(device)) {
      static char cpu_stream;
      *out_stream = &cpu_stream;
      return;
    }
    CudaContextScope scope(cuda_primary_context(device.device_id));
    cu::CUstream s = nullptr;
    check_cu(cuda_driver().cuStreamCreate(&s, 0), "thunderc_device_stream_create", device, "cuStreamCreate");
    *out_stream = s;
  });
}

THUNDERC_API thunderc_status thunderc_device_stream_destroy(DLDevice device, void* stream) {
  return guarded([&] {
    check_type(device, "thunderc_device_stream_destroy");
    if (!stream || is_cpu(device)) return;
    CudaContextScope scope(cuda_primary_context(device.device_id));
    const CudaDriver& d = cuda_driver();
    const cu::CUresult sync = d.cuStreamSynchronize(stream);
    check_cu(d.cuStreamDestroy(stream), "thunderc_device_stream_destroy", device, "cuStreamDestroy");
    check_cu(sync, "thunderc_device_stream_destroy", device, "cuStreamSynchronize");
  });
}

THUNDERC_API thunderc_status thunderc_device_event_create(DLDevice device, thunderc_device_event* out_event) {
  if (out_event) *out_event = nullptr;
  return guarded([&] {
    if (!out_event) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_event_create: out_event is NULL");
    check_type(device, "thunderc_device_event_create");
    auto e = std::make_unique<thunderc_device_event_s>();
    e->device = device;
    if (!is_cpu(device)) {
      CudaContextScope scope(cuda_primary_context(device.device_id));
      check_cu(cuda_driver().cuEventCreate(&e->event, 0), "thunderc_device_event_create", device, "cuEventCreate");
    }
    *out_event = e.release();
  });
}

THUNDERC_API thunderc_status thunderc_device_event_record(thunderc_device_event event, void* stream) {
  return guarded([&] {
    if (!event) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_event_record: event is NULL");
    if (is_cpu(event->device)) {
      event->host_time = std::chrono::steady_clock::now();
    } else {
      CudaContextScope scope(cuda_primary_context(event->device.device_id));
      check_cu(cuda_driver().cuEventRecord(event->event, stream), "thunderc_device_event_record", event->device,
               "cuEventRecord");
    }
    event->recorded = true;
  });
}

THUNDERC_API thunderc_status thunderc_device_event_elapsed_ms(thunderc_device_event start, thunderc_device_event end,
                                                              float* out_ms) {
  return guarded([&] {
    if (!start || !end || !out_ms)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_event_elapsed_ms: NULL argument");
    if (!start->recorded || !end->recorded)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_event_elapsed_ms: record both events first");
    if (start->device.device_type != end->device.device_type || start->device.device_id != end->device.device_id)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_device_event_elapsed_ms: the events are on different devices (" +
                                                 device_to_string(start->device) + ", " +
                                                 device_to_string(end->device) + ")");
    if (is_cpu(start->device)) {
      *out_ms = std::chrono::duration<float, std::milli>(end->host_time - start->host_time).count();
      return;
    }
    CudaContextScope scope(cuda_primary_context(end->device.device_id));
    const CudaDriver& d = cuda_driver();
    check_cu(d.cuEventSynchronize(end->event), "thunderc_device_event_elapsed_ms", end->device, "cuEventSynchronize");
    float ms = 0;
    check_cu(d.cuEventElapsedTime(&ms, start->event, end->event), "thunderc_device_event_elapsed_ms", end->device,
             "cuEventElapsedTime");
    *out_ms = ms;
  });
}

THUNDERC_API void thunderc_device_event_destroy(thunderc_device_event event) {
  if (!event) return;
  if (event->event) {
    try {
      CudaContextScope scope(cuda_primary_context(event->device.device_id));
      cuda_driver().cuEventDestroy(event->event);
    } catch (...) {
    }
  }
  delete event;
}

}  // extern "C"
