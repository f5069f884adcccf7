// A fake CUDA driver (built as libcuda.so.1 in its own directory) for testing the runtime's CUDA path on
// machines without a GPU. It implements the subset of the driver API the runtime uses, on the host:
// "device pointers" are host pointers, copies are memcpy, streams and events are trivial (events read a host
// clock), and kernels are host functions (thunderc_emu_launch_<name>) found in registered kernel libraries.
// Launches are validated like the driver does (block <= 1024 threads, grid/block limits, dynamic shared
// memory <= 48 KiB unless opted in with cuFuncSetAttribute, up to the device's opt-in limit), and every
// pointer handed to a copy must lie inside a live allocation. See fake_cuda.h for the environment and the
// test-only extensions.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_cuda.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_ILLEGAL_STATE = 401,
};

struct ErrorInfo {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorInfo kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted in this state"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};

using Launcher = void (*)(const unsigned* grid, const unsigned* block, unsigned shared_bytes, void** args);

struct Ctx {
  int device = 0;
};
struct KernelLib {
  std::string path;
  void* handle = nullptr;
};
struct Module {
  Ctx* ctx = nullptr;
  const KernelLib* lib = nullptr;
};
struct Function {
  Module* module = nullptr;
  std::string name;
  Launcher launcher = nullptr;
  int max_dynamic_shared = 48 * 1024;
  // thunderc_emu_param_sizes_<name>: {count, size of parameter 0, ...}; null when the kernel library has
  // none (hand-written test kernels), and then a launch cannot be captured (the arguments cannot be copied).
  const unsigned long* param_sizes = nullptr;
};
// One node of a captured graph: work replayed on the host, in capture order.
using Node = std::function<void()>;
struct Stream {
  Ctx* ctx = nullptr;
  bool capturing = false;    // between cuStreamBeginCapture and cuStreamEndCapture
  bool invalidated = false;  // something was enqueued that cannot be captured
  std::vector<Node> nodes;
};
struct Graph {
  std::vector<Node> nodes;
};
struct Event {
  std::chrono::steady_clock::time_point time{};
  bool recorded = false;
};
struct Alloc {
  size_t size = 0;
  Ctx* ctx = nullptr;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int device_count = 1;
  std::vector<std::unique_ptr<Ctx>> contexts;
  std::vector<std::unique_ptr<KernelLib>> libs;  // registration order
  std::set<Module*> modules;
  std::set<Function*> functions;
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::set<Graph*> graphs, graph_execs;
  std::map<uintptr_t, Alloc> allocs;  // base -> size
  thunderc_fake_cuda_stats_t stats{};
};

State& st() {
  static State* s = new State;  // never destroyed: the runtime may free memory during static destruction
  return *s;
}

thread_local std::vector<Ctx*> t_ctx_stack;

Ctx* current() { return t_ctx_stack.empty() ? nullptr : t_ctx_stack.back(); }

// Compute capability of `device` from $THUNDERC_FAKE_CUDA_CC ("9.0" or "8.6,9.0", per device).
void compute_capability(int device, int* major, int* minor) {
  *major = 9;
  *minor = 0;
  const char* env = std::getenv("THUNDERC_FAKE_CUDA_CC");
  if (!env || !*env) return;
  std::string s = env;
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t comma = s.find(',', pos);
    parts.push_back(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const std::string& cc = parts[static_cast<size_t>(device) < parts.size() ? static_cast<size_t>(device) : parts.size() - 1];
  int a = 0, b = 0;
  if (std::sscanf(cc.c_str(), "%d.%d", &a, &b) == 2) {
    *major = a;
    *minor = b;
  }
}

int optin_shared_limit(int major, int minor) {
  if (major >= 9) return 227 * 1024;
  if (major == 8 && (minor == 0 || minor == 7)) return 163 * 1024;
  if (major == 8) return 99 * 1024;
  if (major == 7 && minor == 5) return 64 * 1024;
  if (major == 7) return 96 * 1024;
  return 48 * 1024;
}

CUresult register_lib_locked(State& s, const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    std::fprintf(stderr, "fake libcuda: cannot load kernel library '%s': %s\n", path, e ? e : "?");
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  auto lib = std::make_unique<KernelLib>();
  lib->path = path;
  lib->handle = h;
  s.libs.push_back(std::move(lib));
  return CUDA_SUCCESS;
}

bool valid_stream(State& s, void* stream) {
  const auto v = reinterpret_cast<uintptr_t>(stream);
  if (v == 0 || v == 1 || v == 2) return true;  // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
  return s.streams.count(static_cast<Stream*>(stream)) != 0;
}

// The stream when it is a created stream that is capturing (the lock is held), else null.
Stream* capturing_stream(State& s, void* stream) {
  const auto v = reinterpret_cast<uintptr_t>(stream);
  if (v <= 2) return nullptr;
  auto it = s.streams.find(static_cast<Stream*>(stream));
  return it != s.streams.end() && (*it)->capturing ? *it : nullptr;
}

// Whether [p, p + n) lies in one live allocation.
bool in_device_memory(State& s, uintptr_t p, size_t n) {
  auto it = s.allocs.upper_bound(p);
  if (it == s.allocs.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second.size && p + n >= p;
}

#define REQUIRE_INIT(s)                                 \
  do {                                                  \
    if (!(s).initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

void copy_name(char* dst, size_t cap, const std::string& src) { std::snprintf(dst, cap, "%s", src.c_str()); }

}  // namespace

// ---- initialization, devices, contexts -------------------------------------------------------------

// NVRTC looks this up when a libcuda.so.1 is loaded in the process (tests compile models in-process while
// the fake is loaded); a driver without private export tables says so and NVRTC compiles on its own.
EXPORT CUresult cuGetExportTable(const void** table, const void* table_id) {
  (void)table_id;
  if (table) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = st();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized) return CUDA_SUCCESS;
  if (const char* n = std::getenv("THUNDERC_FAKE_CUDA_DEVICES"); n && *n) s.device_count = std::atoi(n);
  if (s.device_count < 0) s.device_count = 0;
  for (int i = 0; i < s.device_count; ++i) {
    s.contexts.push_back(std::make_unique<Ctx>());
    s.contexts.back()->device = i;
  }
  if (const char* libs = std::getenv("THUNDERC_FAKE_CUDA_KERNELS"); libs && *libs) {
    std::string list = libs;
    size_t pos = 0;
    while (pos <= list.size()) {
      const size_t colon = list.find(':', pos);
      const std::string path = list.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
      if (!path.empty()) register_lib_locked(s, path.c_str());
      if (colon == std::string::npos) break;
      pos = colon + 1;
    }
  }
  s.initialized = true;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int* count) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = s.device_count;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(int* device, int ordinal) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, int device) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "thunderc fake CUDA device %d", device);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  int major = 0, minor = 0;
  compute_capability(device, &major, &minor);
  switch (attribute) {
    case 1: *value = 1024; break;                                   // MAX_THREADS_PER_BLOCK
    case 2: case 3: *value = 1024; break;                           // MAX_BLOCK_DIM_X/Y
    case 4: *value = 64; break;                                     // MAX_BLOCK_DIM_Z
    case 5: *value = 2147483647; break;                             // MAX_GRID_DIM_X
    case 6: case 7: *value = 65535; break;                          // MAX_GRID_DIM_Y/Z
    case 8: *value = 48 * 1024; break;                              // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *value = 32; break;                                    // WARP_SIZE
    case 16: *value = 4; break;                                     // MULTIPROCESSOR_COUNT
    case 75: *value = major; break;                                 // COMPUTE_CAPABILITY_MAJOR
    case 76: *value = minor; break;                                 // COMPUTE_CAPABILITY_MINOR
    case 97: *value = optin_shared_limit(major, minor); break;      // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    default:
      if (attribute <= 0 || attribute > 200) return CUDA_ERROR_INVALID_VALUE;
      *value = 0;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, int device) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = s.contexts[static_cast<size_t>(device)].get();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  State& s = st();
  REQUIRE_INIT(s);
  return device < 0 || device >= s.device_count ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease(int device) { return cuDevicePrimaryCtxRelease_v2(device); }

static bool valid_ctx(State& s, void* ctx) {
  for (auto& c : s.contexts)
    if (c.get() == ctx) return true;
  return false;
}

EXPORT CUresult cuCtxPushCurrent_v2(void* ctx) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!valid_ctx(s, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  t_ctx_stack.push_back(static_cast<Ctx*>(ctx));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(void** ctx) {
  State& s = st();
  REQUIRE_INIT(s);
  if (t_ctx_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx) *ctx = t_ctx_stack.back();
  t_ctx_stack.pop_back();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(void** ctx) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(void* ctx) {
  State& s = st();
  REQUIRE_INIT(s);
  if (ctx && !valid_ctx(s, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!t_ctx_stack.empty()) t_ctx_stack.pop_back();
  if (ctx) t_ctx_stack.push_back(static_cast<Ctx*>(ctx));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
  State& s = st();
  REQUIRE_INIT(s);
  return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// ---- memory ------------------------------------------------------------------------------------------

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Ctx* ctx = current();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes > (size_t{1} << 40)) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xCD, bytes);  // like uninitialized device memory: not zero
  std::lock_guard<std::mutex> lock(s.mutex);
  s.allocs[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes, ctx};
  ++s.stats.live_allocations;
  s.stats.live_bytes += bytes;
  ++s.stats.total_allocations;
  *ptr = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  State& s = st();
  REQUIRE_INIT(s);
  if (ptr == 0) return CUDA_SUCCESS;
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocs.find(static_cast<uintptr_t>(ptr));
  if (it == s.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  --s.stats.live_allocations;
  s.stats.live_bytes -= it->second.size;
  s.allocs.erase(it);
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)));
  return CUDA_SUCCESS;
}

namespace {

enum class Dir { HtoD, DtoH, DtoD };

CUresult do_copy(Dir dir, uintptr_t dst, uintptr_t src, size_t bytes, void* stream) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (dir != Dir::DtoH && !in_device_memory(s, dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
    if (dir != Dir::HtoD && !in_device_memory(s, src, bytes)) return CUDA_ERROR_INVALID_VALUE;
    if (Stream* str = capturing_stream(s, stream)) {
      // Only device-to-device copies are captured here (the runtime captures nothing else); a host copy
      // invalidates the capture as an unsupported operation would.
      if (dir != Dir::DtoD) {
        str->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      }
      str->nodes.push_back([=] {
        std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
        std::lock_guard<std::mutex> l(st().mutex);
        ++st().stats.dtod_copies;
      });
      return CUDA_SUCCESS;
    }
    if (dir == Dir::HtoD) ++s.stats.htod_copies, s.stats.htod_bytes += bytes;
    if (dir == Dir::DtoH) ++s.stats.dtoh_copies, s.stats.dtoh_bytes += bytes;
    if (dir == Dir::DtoD) ++s.stats.dtod_copies;
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

}  // namespace

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return do_copy(Dir::HtoD, static_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes, nullptr);
}
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return do_copy(Dir::DtoH, reinterpret_cast<uintptr_t>(dst), static_cast<uintptr_t>(src), bytes, nullptr);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return do_copy(Dir::DtoD, static_cast<uintptr_t>(dst), static_cast<uintptr_t>(src), bytes, nullptr);
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void* stream) {
  return do_copy(Dir::HtoD, static_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes, stream);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* stream) {
  return do_copy(Dir::DtoH, reinterpret_cast<uintptr_t>(dst), static_cast<uintptr_t>(src), bytes, stream);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
  return do_copy(Dir::DtoD, static_cast<uintptr_t>(dst), static_cast<uintptr_t>(src), bytes, stream);
}

// ---- streams and events --------------------------------------------------------------------------------

EXPORT CUresult cuStreamCreate(void** stream, unsigned flags) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!stream || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  Ctx* ctx = current();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  auto* str = new Stream{ctx};
  std::lock_guard<std::mutex> lock(s.mutex);
  s.streams.insert(str);
  ++s.stats.live_streams;
  *stream = str;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(void* stream) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.streams.find(static_cast<Stream*>(stream));
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  delete *it;
  s.streams.erase(it);
  --s.stats.live_streams;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy(void* stream) { return cuStreamDestroy_v2(stream); }

EXPORT CUresult cuStreamSynchronize(void* stream) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  return valid_stream(s, stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventCreate(void** event, unsigned flags) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  auto* e = new Event;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.events.insert(e);
  ++s.stats.live_events;
  *event = e;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(void* event) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(static_cast<Event*>(event));
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  delete *it;
  s.events.erase(it);
  --s.stats.live_events;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(void* event) { return cuEventDestroy_v2(event); }

EXPORT CUresult cuEventRecord(void* event, void* stream) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.events.find(static_cast<Event*>(event));
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  (*it)->time = std::chrono::steady_clock::now();  // work is synchronous: everything before it has finished
  (*it)->recorded = true;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(void* event) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.events.count(static_cast<Event*>(event)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* a = static_cast<Event*>(start);
  auto* b = static_cast<Event*>(end);
  if (!s.events.count(a) || !s.events.count(b) || !a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b->time - a->time).count();
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) { return cuEventElapsedTime(ms, start, end); }

// ---- modules and kernels ---------------------------------------------------------------------------------

EXPORT CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned num_options, int* options,
                                   void** values) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  Ctx* ctx = current();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  char* log = nullptr;
  size_t log_size = 0;
  int log_size_index = -1;
  for (unsigned i = 0; i < num_options; ++i) {
    if (!options || !values) return CUDA_ERROR_INVALID_VALUE;
    if (options[i] == 5) log = static_cast<char*>(values[i]);  // CU_JIT_ERROR_LOG_BUFFER
    if (options[i] == 6) {                                     // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
      log_size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
      log_size_index = static_cast<int>(i);
    }
  }
  auto jit_error = [&](CUresult r, const std::string& text) {
    if (log && log_size > 0) {
      std::snprintf(log, log_size, "%s", text.c_str());
      if (log_size_index >= 0)
        values[log_size_index] = reinterpret_cast<void*>(static_cast<uintptr_t>(std::strlen(log) + 1));
    }
    return r;
  };
  int major = 0, minor = 0;
  compute_capability(ctx->device, &major, &minor);
  const auto* bytes = static_cast<const unsigned char*>(image);
  int kind = 0;
  std::string arch;
  if (bytes[0] == 0) return CUDA_ERROR_INVALID_IMAGE;  // empty
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    kind = 1;
    // Test cubins carry "thunderc-fake-arch=sm_XY" right after the magic; real ones are accepted as they are.
    static const char kMarker[] = "thunderc-fake-arch=";
    if (std::memcmp(bytes + 4, kMarker, sizeof kMarker - 1) == 0) {
      arch = reinterpret_cast<const char*>(bytes + 4 + sizeof kMarker - 1);
      int v = 0;
      if (std::sscanf(arch.c_str(), "sm_%d", &v) != 1) return CUDA_ERROR_INVALID_IMAGE;
      if (v / 10 != major || v % 10 != minor) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
  } else if (bytes[0] == 0x50 && bytes[1] == 0xed && bytes[2] == 0x55 && bytes[3] == 0xba) {
    kind = 3;  // fatbin: accepted as is
  } else {
    const char* text = static_cast<const char*>(image);
    const char* target = std::strstr(text, ".target sm_");
    if (!target) return CUDA_ERROR_INVALID_IMAGE;
    kind = 2;
    int v = 0;
    if (std::sscanf(target, ".target sm_%d", &v) != 1) return CUDA_ERROR_INVALID_IMAGE;
    arch = "sm_" + std::to_string(v);
    if (std::strstr(text, "THUNDERC_FAKE_JIT_ERROR"))
      return jit_error(CUDA_ERROR_INVALID_PTX, "ptxas fatal   : (fake) the image asked for a JIT error");
    if (v / 10 > major || (v / 10 == major && v % 10 > minor))
      return jit_error(CUDA_ERROR_INVALID_PTX,
                       "ptxas fatal   : SM version specified by .target is higher than default SM version assumed");
  }
  if (log && log_size > 0) log[0] = '\0';
  auto* m = new Module;
  m->ctx = ctx;
  std::lock_guard<std::mutex> lock(s.mutex);
  m->lib = s.libs.empty() ? nullptr : s.libs.back().get();
  s.modules.insert(m);
  ++s.stats.module_loads;
  ++s.stats.live_modules;
  s.stats.last_image_kind = kind;
  copy_name(s.stats.last_image_arch, sizeof s.stats.last_image_arch, arch);
  *module = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(void** module, const void* image) {
  return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

EXPORT CUresult cuModuleUnload(void* module) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.modules.find(static_cast<Module*>(module));
  if (it == s.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
  for (auto f = s.functions.begin(); f != s.functions.end();) {
    if ((*f)->module == *it) {
      delete *f;
      f = s.functions.erase(f);
    } else {
      ++f;
    }
  }
  delete *it;
  s.modules.erase(it);
  --s.stats.live_modules;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.modules.find(static_cast<Module*>(module));
  if (it == s.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!(*it)->lib) return CUDA_ERROR_NOT_FOUND;
  const std::string symbol = std::string("thunderc_emu_launch_") + name;
  auto launcher = reinterpret_cast<Launcher>(dlsym((*it)->lib->handle, symbol.c_str()));
  if (!launcher) return CUDA_ERROR_NOT_FOUND;
  auto* f = new Function;
  f->module = *it;
  f->name = name;
  f->launcher = launcher;
  f->param_sizes = static_cast<const unsigned long*>(
      dlsym((*it)->lib->handle, (std::string("thunderc_emu_param_sizes_") + name).c_str()));
  s.functions.insert(f);
  *function = f;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(void* function, int attribute, int value) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.functions.find(static_cast<Function*>(function));
  if (it == s.functions.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != 8) return CUDA_SUCCESS;  // only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is modelled
  int major = 0, minor = 0;
  compute_capability((*it)->module->ctx->device, &major, &minor);
  if (value < 0 || value > optin_shared_limit(major, minor)) return CUDA_ERROR_INVALID_VALUE;
  (*it)->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared_bytes, void* stream, void** params, void** extra) {
  State& s = st();
  REQUIRE_INIT(s);
  Function* f = nullptr;
  CUresult r = CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.functions.find(static_cast<Function*>(function));
    if (it == s.functions.end()) {
      ++s.stats.failed_launches;
      return CUDA_ERROR_INVALID_HANDLE;
    }
    f = *it;
    copy_name(s.stats.last_kernel, sizeof s.stats.last_kernel, f->name);
    const uint64_t threads = static_cast<uint64_t>(bx) * by * bz;
    if (current() != f->module->ctx) r = CUDA_ERROR_INVALID_CONTEXT;
    else if (!valid_stream(s, stream)) r = CUDA_ERROR_INVALID_HANDLE;
    else if (gx == 0 || gy == 0 || gz == 0 || gx > 2147483647u || gy > 65535 || gz > 65535) r = CUDA_ERROR_INVALID_VALUE;
    else if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64) r = CUDA_ERROR_INVALID_VALUE;
    else if (threads > 1024) r = CUDA_ERROR_INVALID_VALUE;
    else if (shared_bytes > static_cast<unsigned>(f->max_dynamic_shared)) r = CUDA_ERROR_INVALID_VALUE;
    else if (params && extra) r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS) {
      ++s.stats.failed_launches;
      return r;
    }
    if (Stream* str = capturing_stream(s, stream)) {
      if (!f->param_sizes || (f->param_sizes[0] > 0 && !params)) {
        str->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      }
      // A kernel node keeps copies of its arguments, as cuLaunchKernel's capture does.
      const unsigned long n = f->param_sizes[0];
      auto copies = std::make_shared<std::vector<std::vector<unsigned char>>>(n);
      for (unsigned long i = 0; i < n; ++i) {
        const auto* p = static_cast<const unsigned char*>(params[i]);
        (*copies)[i].assign(p, p + f->param_sizes[i + 1]);
      }
      const Launcher launcher = f->launcher;
      str->nodes.push_back([=] {
        std::vector<void*> args;
        for (auto& c : *copies) args.push_back(c.data());
        const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
        launcher(g, b, shared_bytes, args.data());
        std::lock_guard<std::mutex> l(st().mutex);
        ++st().stats.launches;
      });
      return CUDA_SUCCESS;
    }
    ++s.stats.launches;
  }
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  try {
    f->launcher(grid, block, shared_bytes, params);
  } catch (const std::exception& e) {
    // A kernel's __trap() (the emulator's Error "__trap() in block ..."): the launch fails, as on a GPU (where
    // the error shows at the next synchronization). Other emulator errors are test failures: rethrown.
    if (std::strncmp(e.what(), "__trap()", 8) != 0) throw;
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stats.failed_launches;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

// ---- stream capture and graphs --------------------------------------------------------------------------
// Work enqueued on a capturing stream is recorded as host closures, not run; cuGraphLaunch runs a graph's
// closures in order. The legacy/NULL stream cannot capture, as on a real device.

EXPORT CUresult cuStreamBeginCapture_v2(void* stream, int mode) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto it = s.streams.find(static_cast<Stream*>(stream));
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
  if ((*it)->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  (*it)->capturing = true;
  (*it)->invalidated = false;
  (*it)->nodes.clear();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(void* stream, void** graph) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mutex);
  Stream* str = capturing_stream(s, stream);
  if (!str) return CUDA_ERROR_ILLEGAL_STATE;
  str->capturing = false;
  std::vector<Node> nodes = std::move(str->nodes);
  str->nodes.clear();
  *graph = nullptr;
  if (str->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* g = new Graph{std::move(nodes)};
  s.graphs.insert(g);
  *graph = g;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  State& s = st();
  REQUIRE_INIT(s);
  if (!exec || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.graphs.find(static_cast<Graph*>(graph));
  if (it == s.graphs.end()) return CUDA_ERROR_INVALID_HANDLE;
  auto* e = new Graph{(*it)->nodes};
  s.graph_execs.insert(e);
  *exec = e;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(void* exec, void* stream) {
  State& s = st();
  REQUIRE_INIT(s);
  Graph* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.graph_execs.find(static_cast<Graph*>(exec));
    if (it == s.graph_execs.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (capturing_stream(s, stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    e = *it;
    ++s.stats.graph_launches;
  }
  for (const Node& n : e->nodes) n();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(void* exec) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.graph_execs.find(static_cast<Graph*>(exec));
  if (it == s.graph_execs.end()) return CUDA_ERROR_INVALID_HANDLE;
  delete *it;
  s.graph_execs.erase(it);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(void* graph) {
  State& s = st();
  REQUIRE_INIT(s);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.graphs.find(static_cast<Graph*>(graph));
  if (it == s.graphs.end()) return CUDA_ERROR_INVALID_HANDLE;
  delete *it;
  s.graphs.erase(it);
  return CUDA_SUCCESS;
}

// ---- errors -------------------------------------------------------------------------------------------

EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorInfo& e : kErrors)
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorInfo& e : kErrors)
    if (e.code == error) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// ---- test-only extensions (fake_cuda.h) -------------------------------------------------------------------

EXPORT void thunderc_fake_cuda_stats(thunderc_fake_cuda_stats_t* out) {
  if (!out) return;
  State& s = st();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = s.stats;
}

EXPORT void thunderc_fake_cuda_reset_counters(void) {
  State& s = st();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.launches = s.stats.failed_launches = s.stats.total_allocations = 0;
  s.stats.htod_copies = s.stats.htod_bytes = s.stats.dtoh_copies = s.stats.dtoh_bytes = s.stats.dtod_copies = 0;
  s.stats.module_loads = 0;
  s.stats.graph_launches = 0;
  s.stats.last_image_kind = 0;
  s.stats.last_image_arch[0] = '\0';
  s.stats.last_kernel[0] = '\0';
}

EXPORT int thunderc_fake_cuda_enqueue(void* stream, void (*fn)(void*), void* context, void (*release)(void*)) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  State& s = st();
  {
    // Only a capturing stream changes anything; the fake libraries' own tests pass made-up stream handles.
    std::lock_guard<std::mutex> lock(s.mutex);
    if (Stream* str = capturing_stream(s, stream)) {
      std::shared_ptr<void> owned(context, [release](void* p) {
        if (release) release(p);
      });
      str->nodes.push_back([fn, owned] { fn(owned.get()); });
      return CUDA_SUCCESS;
    }
  }
  fn(context);
  if (release) release(context);
  return CUDA_SUCCESS;
}

EXPORT int thunderc_fake_cuda_register_kernels(const char* so_path) {
  if (!so_path || !*so_path) return CUDA_ERROR_INVALID_VALUE;
  State& s = st();
  std::lock_guard<std::mutex> lock(s.mutex);
  return register_lib_locked(s, so_path);
}
