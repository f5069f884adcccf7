#include "codegen/compile.h"

#include <algorithm>

#include "codegen/nvfuser/nvrtc.h"
#include "core/ir/error.h"
#include "runtime/src/cpu_isa.hpp"

namespace thunderc {

std::vector<std::string> parse_cpu_targets(const std::string& text) {
  std::vector<std::string> levels;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (word == "native") {
      // The highest level this machine runs: a named level, never -march=native (which would bake in every
      // extension of this CPU, unchecked at open).
      word = rt::choose_cpu_target(rt::cpu_isa_level_names(), rt::host_cpu_supports);
      if (word.empty()) user_error("--cpu-target native: this machine runs none of the x86-64 levels");
    }
    if (!rt::is_cpu_isa_level(word))
      user_error("--cpu-target takes x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or native, or a comma-separated list "
                 "of them (e.g. x86-64-v3,x86-64-v4); got '", word, "'");
    if (std::find(levels.begin(), levels.end(), word) == levels.end()) levels.push_back(word);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(levels.begin(), levels.end(),
            [](const std::string& a, const std::string& b) { return rt::cpu_isa_rank(a) < rt::cpu_isa_rank(b); });
  return levels;
}

CompileSummary compile_model(const CompileRequest& request, const Toolchain& build_toolchain) {
  // The host code's instruction set: its levels go to the build (one copy of the code per level) and the
  // manifest; the runtime checks them at open.
  const Toolchain& toolchain = build_toolchain;
  std::vector<std::string> cpu_targets = request.options.cpu_targets;
  if (cpu_targets.empty()) cpu_targets = {request.options.cpu_target};
  THUNDERC_CHECK(cpu_targets.front() == request.options.cpu_target, "cpu_targets begins with ", cpu_targets.front(),
                 ", cpu_target is ", request.options.cpu_target);
  BackendSet backends = make_backends(toolchain, request.options.precision, request.options.conv_algorithm);
  ModulePlan plan = plan_module(request.variants, backends);
  // --autograd: the parameters' initial values follow the weights, each 64-byte aligned; the runtime copies
  // them into its parameter state at open (thunderc_parameters, ABI 5).
  std::optional<TrainingModule> training = request.training;
  std::size_t parameters_base = 0, parameters_bytes = 0;
  if (training) {
    auto align = [](std::size_t n) { return (n + 63) / 64 * 64; };
    parameters_base = align(plan.weights.bytes.size());
    std::size_t end = 0;
    for (TrainingModule::Parameter& p : training->parameters) {
      THUNDERC_CHECK(p.initial && p.initial->bytes.size() == p.type.nbytes(), "parameter ", p.name, " has ",
                     p.initial ? p.initial->bytes.size() : 0, " bytes for ", p.type.str());
      p.offset = align(end);
      end = p.offset + p.type.nbytes();
    }
    parameters_bytes = end;
    plan.weights.bytes.resize(parameters_base + end, 0);
    for (const TrainingModule::Parameter& p : training->parameters)
      std::copy(p.initial->bytes.begin(), p.initial->bytes.end(), plan.weights.bytes.begin() + static_cast<std::ptrdiff_t>(parameters_base + p.offset));
  }
  GeneratedModule module = generate_module(request.variants, plan, backends, "source model: " + request.source.path,
                                           request.cuda_archs, request.split_lines, request.options.profile);
  module.cpu_targets = cpu_targets;
  if (training) {
    module.cpp += "\n// --autograd: the parameters' initial values (the manifest's training.parameters give offsets).\n";
    module.cpp += "extern \"C\" THUNDERC_EXPORT const unsigned char* thunderc_parameters(size_t* len) {\n";
    module.cpp += "  *len = " + std::to_string(parameters_bytes) + ";\n";
    module.cpp += "  return thunderc_weights + " + std::to_string(parameters_base) + ";\n}\n";
  }
  // The CUDA module is compiled first: the manifest records each kernel's registers and shared memory.
  CudaCompileResult cuda;
  if (!module.cuda_source.empty()) {
    std::vector<std::string> names;
    for (const CudaKernel& k : module.kernels) names.push_back(k.name);
    cuda = compile_cuda(module.cuda_source, request.cuda_archs, names);
    THUNDERC_CHECK(cuda.images.size() == module.cuda_images.size(), "NVRTC returned ", cuda.images.size(),
                   " images, expected ", module.cuda_images.size());
    for (std::size_t i = 0; i < cuda.images.size(); ++i) {
      THUNDERC_CHECK(cuda.images[i].arch == module.cuda_images[i].arch, "NVRTC image ", i, " is for ",
                     cuda.images[i].arch, ", expected ", module.cuda_images[i].arch);
      module.cuda_images[i].data = std::move(cuda.images[i].data);
    }
  }
  module.manifest = write_manifest(request.source, request.options, request.input_names, request.variants, plan,
                                   ManifestCuda{request.cuda_archs, &module, &cuda.resources},
                                   training ? &*training : nullptr);
  CompileSummary summary;
  if (request.emit_build)
    summary.build_steps = write_build_dir(module, toolchain, *request.emit_build);
  else
    build_shared_object(module, toolchain, request.out_so, request.out_json, request.keep_sources);
  summary.cpp_sources = 1 + module.part_sources.size();
  summary.weight_count = plan.weights.count;
  summary.weight_bytes = plan.weights.bytes.size();
  for (const auto& m : plan.memory) summary.workspace_bytes.push_back(m.workspace_bytes);
  summary.cuda_kernels = module.kernels.size();
  summary.library_calls = module.library_calls.size();
  return summary;
}

}  // namespace thunderc
