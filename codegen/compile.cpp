#include "codegen/compile.h"

#include "codegen/nvfuser/nvrtc.h"
#include "core/ir/error.h"

namespace thunderc {

CompileSummary compile_model(const CompileRequest& request, const Toolchain& build_toolchain) {
  // The host code's instruction set (the manifest records it; the runtime checks it at open).
  Toolchain toolchain = build_toolchain;
  toolchain.extra_flags.insert(toolchain.extra_flags.begin(), "-march=" + request.options.cpu_target);
  BackendSet backends = make_backends(toolchain, request.options.precision, request.options.conv_algorithm);
  ModulePlan plan = plan_module(request.variants, backends);
  GeneratedModule module = generate_module(request.variants, plan, backends, "source model: " + request.source.path,
                                           request.cuda_archs, request.split_lines);
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
                                   ManifestCuda{request.cuda_archs, &module, &cuda.resources});
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
