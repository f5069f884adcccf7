// Writes the manifest (docs/manifest.md): deterministic JSON (sorted keys, no timestamps or temp paths).
#pragma once

#include <string>
#include <vector>

#include "codegen/module_codegen.h"

namespace thunderc {

struct ManifestSource {
  std::string path;    // as given on the command line
  std::string sha256;
  std::string frontend;
};

struct ManifestOptions {
  std::vector<std::string> executors;  // the resolved claiming order
  std::string device;
  std::string cache = "constant values";
  std::vector<std::string> transforms;  // the optional passes that ran, in order (core/transforms/pipeline.h)
  bool standalone = false;
  bool disable_torch_autograd = false;
  bool cuda_graphs = false;                   // --cuda-graphs: the runtime replays captured CUDA graphs
  bool profile = false;                       // --profile: every operation timed (the .so exports thunderc_profile)
  std::string sharp_edges = "allow";          // --sharp-edges
  std::string precision = "fp32";             // --precision (tf32: library calls may use tensor cores)
  std::string cpu_target = "x86-64-v3";       // --cpu-target: -march of the host code (its lowest level); checked at open
  // --cpu-target with several levels: all of them, ascending, cpu_target first (the manifest lists them when
  // there is more than one; the runtime runs the best the CPU has). Empty or one entry: cpu_target alone.
  std::vector<std::string> cpu_targets;
  std::string conv_algorithm = "auto";        // --conv-algorithm: auto (oneDNN's Winograd where it pays) or direct
  bool skip_inplace_alias_updates = false;    // --skip-inplace-alias-updates
};

struct KernelResources;

// What CUDA variants add to the manifest: the architectures, and per variant its kernels with their launch
// configurations and (from ptxas) registers, shared and local memory.
struct ManifestCuda {
  std::vector<std::string> archs;
  const GeneratedModule* module = nullptr;                 // kernels, their variants, the images
  const std::vector<KernelResources>* resources = nullptr;  // per arch per kernel (may be empty)
};

// UserError when the variants disagree on their outputs' count or dtypes (one manifest lists them once).
std::string write_manifest(const ManifestSource& source, const ManifestOptions& options,
                           const std::vector<std::string>& input_names, const std::vector<ModuleVariant>& variants,
                           const ModulePlan& plan, const ManifestCuda& cuda = {},
                           const TrainingModule* training = nullptr);

}  // namespace thunderc
