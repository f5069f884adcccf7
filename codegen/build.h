// Compiles generated sources into the model .so with the system C++ compiler. The compiler runs in a
// private temporary directory on relative file names, without debug info, so the output does not
// depend on where or when it was built.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/module_codegen.h"
#include "codegen/torch/torch_backend.h"

namespace thunderc {

struct Toolchain {
  std::string cxx;                          // compiler driver: $THUNDERC_CXX, else $CXX, else c++
  std::vector<std::string> include_dirs;    // thunderc/abi.h, thunderc/buffer.h, dlpack/dlpack.h
  ShimLocation aten_shim;                   // for the torch executor
  std::vector<std::string> extra_flags;     // appended to the compile command (e.g. -march=native)

  // Locations this thunderc was built with.
  static Toolchain from_build();
};

// The backends of every executor with code generation, configured for this toolchain.
BackendSet make_backends(const Toolchain& toolchain);

// Writes model.cpp, model_data.S, weights.bin and manifest.json into a temporary directory (or
// `keep_sources_dir`, which is created and kept), compiles them into `out_so` (replaced atomically) and
// writes the manifest to `out_json`. UserError when files cannot be written; InternalError (with the
// compiler's output) when the generated code does not compile.
void build_shared_object(const GeneratedModule& module, const Toolchain& toolchain, const std::string& out_so,
                         const std::string& out_json, const std::optional<std::string>& keep_sources_dir);

}  // namespace thunderc
