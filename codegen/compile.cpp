#include "codegen/compile.h"

namespace thunderc {

CompileSummary compile_model(const CompileRequest& request, const Toolchain& toolchain) {
  BackendSet backends = make_backends(toolchain);
  ModulePlan plan = plan_module(request.variants, backends);
  std::string manifest = write_manifest(request.source, request.options, request.input_names, request.variants, plan);
  GeneratedModule module = generate_module(request.variants, plan, backends, manifest,
                                           "source model: " + request.source.path);
  build_shared_object(module, toolchain, request.out_so, request.out_json, request.keep_sources);
  CompileSummary summary;
  summary.weight_count = plan.weights.count;
  summary.weight_bytes = plan.weights.bytes.size();
  for (const auto& m : plan.memory) summary.workspace_bytes.push_back(m.workspace_bytes);
  return summary;
}

}  // namespace thunderc
