#include "core/executors/probe.h"

#include <dlfcn.h>
#include <glob.h>

#include <mutex>

namespace thunderc {

namespace {

using CuInitFn = int (*)(unsigned int);
using CuDeviceGetCountFn = int (*)(int*);

Availability probe_cuda_driver_uncached() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return {false, "no CUDA driver (libcuda.so.1 not found)"};
  // The handle stays open: unloading the driver after cuInit is not safe.
  auto cu_init = reinterpret_cast<CuInitFn>(dlsym(lib, "cuInit"));
  auto cu_count = reinterpret_cast<CuDeviceGetCountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (!cu_init || !cu_count) return {false, "CUDA driver libcuda.so.1 lacks cuInit/cuDeviceGetCount"};
  int rc = cu_init(0);
  if (rc != 0) return {false, "CUDA driver failed to initialise (cuInit returned " + std::to_string(rc) + ")"};
  int count = 0;
  rc = cu_count(&count);
  if (rc != 0) return {false, "CUDA driver cannot count devices (cuDeviceGetCount returned " + std::to_string(rc) + ")"};
  if (count <= 0) return {false, "no CUDA device found"};
  return {true, ""};
}

// Opens the library, checks the symbol, closes it again.
bool try_open(const std::string& file, const std::string& symbol) {
  void* lib = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!lib) return false;
  bool ok = symbol.empty() || dlsym(lib, symbol.c_str()) != nullptr;
  dlclose(lib);
  return ok;
}

}  // namespace

Availability probe_cuda_driver() {
  static std::once_flag once;
  static Availability result;
  std::call_once(once, [] { result = probe_cuda_driver_uncached(); });
  return result;
}

Availability probe_library(const std::string& what, const std::vector<std::string>& candidates,
                           const std::string& glob_stem, bool cuda_dirs, const std::string& symbol) {
  for (const std::string& c : candidates)
    if (try_open(c, symbol)) return {true, ""};
  if (cuda_dirs && !glob_stem.empty()) {
    const char* dirs[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/lib/x86_64-linux-gnu", "/usr/lib64"};
    for (const char* dir : dirs) {
      glob_t g{};
      std::string pattern = std::string(dir) + "/" + glob_stem + ".so*";
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
        for (std::size_t i = 0; i < g.gl_pathc; ++i) {
          if (try_open(g.gl_pathv[i], symbol)) {
            globfree(&g);
            return {true, ""};
          }
        }
      }
      globfree(&g);
    }
  }
  std::string shown = glob_stem.empty() ? (candidates.empty() ? what : candidates.front()) : glob_stem + ".so*";
  return {false, "no " + what + " (" + shown + " not found" + (symbol.empty() ? "" : " or lacks " + symbol) + ")"};
}

}  // namespace thunderc
