// The back half of `thunderc MODEL -o OUT.so`: claimed traces in, OUT.so + OUT.json out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "codegen/manifest.h"
#include "codegen/module_codegen.h"

namespace thunderc {

struct CompileRequest {
  ManifestSource source;
  ManifestOptions options;
  std::vector<std::string> input_names;
  std::vector<ModuleVariant> variants;  // claimed, verified traces
  std::string out_so;
  std::string out_json;
  std::optional<std::string> keep_sources;
  // --emit-build DIR: write the sources and DIR/build.ninja instead of compiling (out_so/out_json unused).
  std::optional<std::string> emit_build;
  std::size_t split_lines = kDefaultSplitLines;  // --split-lines
  std::vector<std::string> cuda_archs = {"sm_80", "sm_90"};  // for CUDA variants (--cuda-arch), oldest first
  // --autograd: parameters and gradients (variants then hold training forwards and their backward programs).
  std::optional<TrainingModule> training;
};

struct CompileSummary {
  std::size_t weight_count = 0;
  std::size_t weight_bytes = 0;
  std::vector<std::size_t> workspace_bytes;  // per variant
  std::size_t cuda_kernels = 0;              // kernels in the CUDA module (0: none)
  std::size_t library_calls = 0;             // cuBLASLt/cuDNN calls (each with a fallback kernel)
  std::size_t cpp_sources = 0;               // model.cpp and its parts
  std::size_t build_steps = 0;               // --emit-build: the build.ninja's steps
};

CompileSummary compile_model(const CompileRequest& request, const Toolchain& toolchain);

// --cpu-target's value: x86-64 micro-architecture levels, comma-separated (x86-64, x86-64-v2, x86-64-v3,
// x86-64-v4; `native`: the highest level this machine has), as the ascending list without repeats that
// ManifestOptions::cpu_targets holds. UserError naming the bad word.
std::vector<std::string> parse_cpu_targets(const std::string& text);

}  // namespace thunderc
