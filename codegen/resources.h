// Where thunderc finds the files that generated code compiles and links against: the runtime's ABI headers,
// the kernel headers of each backend, and the ATen shim library. Two layouts:
//
//   build tree  the source folders and build outputs this thunderc was built from (paths compiled in);
//   installed   `cmake --install` output, found relative to the running executable:
//                 PREFIX/<bindir>/thunderc
//                 PREFIX/<includedir>/thunderc/abi.h ...               (runtime headers)
//                 PREFIX/<datadir>/thunderc/include/thunderc/*.h       (every backend's kernel headers)
//                 PREFIX/<libdir>/libthunderc_aten_shim.so             (with LibTorch)
//
// The installed layout wins when the running executable sits in one (its marker header exists), so an
// installed thunderc keeps working after the build tree is deleted, and the prefix can be moved as a whole.
#pragma once

#include <string>

namespace thunderc {

struct ResourcePaths {
  bool installed = false;          // true: found relative to the executable; false: the build tree's paths
  std::string prefix;              // installed: PREFIX; build tree: empty
  std::string runtime_include;     // thunderc/abi.h, thunderc/runtime.h
  std::string codegen_include;     // thunderc/buffer.h
  std::string cpp_include;         // thunderc/cpp_math.h
  std::string blas_include;        // thunderc/blas_kernels.h
  std::string onednn_include;      // thunderc/onednn_kernels.h
  std::string aten_shim_include;   // thunderc/aten_shim.h
  std::string aten_shim_library;   // libthunderc_aten_shim.so; empty when built without LibTorch
};

// Resolved once per process.
const ResourcePaths& resource_paths();

// The installed layout under `prefix` if it holds one, else nothing (exposed for tests).
bool installed_resource_paths(const std::string& prefix, ResourcePaths& out);

}  // namespace thunderc
