#include "codegen/resources.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace thunderc {

namespace fs = std::filesystem;

namespace {

// The build tree's paths (codegen/CMakeLists.txt defines them).
ResourcePaths build_tree_paths() {
  ResourcePaths p;
  p.runtime_include = THUNDERC_BUILD_RUNTIME_INCLUDE_DIR;
  p.codegen_include = THUNDERC_BUILD_CODEGEN_INCLUDE_DIR;
  p.cpp_include = THUNDERC_BUILD_CPP_INCLUDE_DIR;
  p.blas_include = THUNDERC_BUILD_BLAS_INCLUDE_DIR;
  p.onednn_include = THUNDERC_BUILD_ONEDNN_INCLUDE_DIR;
  p.aten_shim_include = THUNDERC_BUILD_ATEN_SHIM_INCLUDE_DIR;
  p.aten_shim_library = THUNDERC_BUILD_ATEN_SHIM_LIBRARY;
  return p;
}

// PREFIX for an executable at PREFIX/<bindir>/thunderc: one ".." per component of bindir.
fs::path prefix_of_executable(const fs::path& exe) {
  fs::path prefix = exe.parent_path();
  for (const auto& part : fs::path(THUNDERC_INSTALL_BINDIR)) {
    if (part.empty() || part == ".") continue;
    prefix = prefix.parent_path();
  }
  return prefix;
}

ResourcePaths resolve() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  ResourcePaths installed;
  if (!ec && installed_resource_paths(prefix_of_executable(exe).string(), installed)) return installed;
  return build_tree_paths();
}

}  // namespace

bool installed_resource_paths(const std::string& prefix_in, ResourcePaths& out) {
  std::error_code ec;
  const fs::path prefix(prefix_in);
  const fs::path kernels = prefix / THUNDERC_INSTALL_DATADIR / "thunderc" / "include";
  const fs::path runtime = prefix / THUNDERC_INSTALL_INCLUDEDIR;
  // Both halves must be there: a prefix with only the runtime installed (a deployment) is not a compiler's.
  if (!fs::is_regular_file(kernels / "thunderc" / "buffer.h", ec) ||
      !fs::is_regular_file(runtime / "thunderc" / "abi.h", ec))
    return false;
  ResourcePaths p;
  p.installed = true;
  p.prefix = prefix.string();
  p.runtime_include = runtime.string();
  p.codegen_include = p.cpp_include = p.blas_include = p.onednn_include = p.aten_shim_include = kernels.string();
  const std::string shim_name = fs::path(THUNDERC_BUILD_ATEN_SHIM_LIBRARY).filename().string();
  if (!shim_name.empty()) p.aten_shim_library = (prefix / THUNDERC_INSTALL_LIBDIR / shim_name).string();
  out = p;
  return true;
}

const ResourcePaths& resource_paths() {
  static const ResourcePaths paths = resolve();
  return paths;
}

}  // namespace thunderc
