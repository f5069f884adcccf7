#include "codegen/manifest.h"

#include <nlohmann/json.hpp>

#include "codegen/nvfuser/nvrtc.h"
#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "runtime/include/thunderc/abi.h"

namespace thunderc {

std::string write_manifest(const ManifestSource& source, const ManifestOptions& options,
                           const std::vector<std::string>& input_names, const std::vector<ModuleVariant>& variants,
                           const ModulePlan& plan, const ManifestCuda& cuda, const TrainingModule* training) {
  THUNDERC_CHECK(!variants.empty(), "a manifest needs at least one variant");
  // The model's outputs of a variant (a training forward's saved tensors follow them).
  auto model_outputs = [](const ModuleVariant& v) { return v.backward ? v.model_outputs : v.trace->outputs().size(); };
  // Programs (backwards, the optimizer's update) are entries, not variants: they follow every variant, so ids
  // stay positions.
  std::size_t num_variants = 0;
  for (const ModuleVariant& v : variants) {
    THUNDERC_CHECK(v.is_program || num_variants == static_cast<std::size_t>(&v - variants.data()),
                   "a program before a variant");
    num_variants += v.is_program ? 0 : 1;
  }
  using nlohmann::json;
  json m;
  m["format"] = "thunderc-manifest";
  m["format_version"] = 1;
  m["abi_version"] = THUNDERC_ABI_VERSION;
  m["thunderc_version"] = THUNDERC_VERSION;
  m["source"] = {{"path", source.path}, {"sha256", source.sha256}, {"frontend", source.frontend}};
  m["options"] = {{"executors", options.executors}, {"device", options.device}, {"cache", options.cache},
                  {"transforms", options.transforms}, {"standalone", options.standalone},
                  {"disable_torch_autograd", options.disable_torch_autograd}, {"sharp_edges", options.sharp_edges},
                  {"skip_inplace_alias_updates", options.skip_inplace_alias_updates},
                  {"precision", options.precision}, {"cpu_target", options.cpu_target},
                  {"conv_algorithm", options.conv_algorithm}};
  if (options.cuda_graphs) m["options"]["cuda_graphs"] = true;  // absent: off (older runtimes ignore it)
  if (options.profile) m["options"]["profile"] = true;  // absent: off (older runtimes ignore it)
  // Absent for one level; older runtimes ignore it and run the lowest level's entries.
  if (options.cpu_targets.size() > 1) m["options"]["cpu_targets"] = options.cpu_targets;
  if (training) m["options"]["autograd"] = true;

  const Trace& first = *variants[0].trace;
  json inputs = json::array();
  for (std::size_t i = 0; i < input_names.size(); ++i)
    inputs.push_back({{"name", input_names[i]}, {"dtype", dtype_name(first.type(first.inputs().at(i)).dtype)}});
  m["inputs"] = inputs;
  json outputs = json::array();
  for (std::size_t j = 0; j < model_outputs(variants[0]); ++j)
    outputs.push_back({{"name", "output" + std::to_string(j)}, {"dtype", dtype_name(first.type(first.outputs()[j]).dtype)}});
  m["outputs"] = outputs;

  m["weights"] = {{"count", plan.weights.count}, {"bytes", plan.weights.bytes.size()}, {"storage", "embedded"}};

  json vs = json::array();
  for (std::size_t i = 0; i < num_variants; ++i) {
    const Trace& t = *variants[i].trace;
    const std::size_t num_outputs = model_outputs(variants[i]);
    if (num_outputs != model_outputs(variants[0]))
      user_error("specialization ", variants[i].label, " returns ", num_outputs, " outputs, but ",
                 variants[0].label, " returns ", model_outputs(variants[0]));
    json guards = json::array();
    for (std::size_t k = 0; k < input_names.size(); ++k) {
      const TensorType& type = t.type(t.inputs()[k]);
      json shape = type.shape;
      if (const SymbolicTrace* st = variants[i].symbolic)
        for (std::size_t d = 0; d < st->input_symbols.at(k).size(); ++d)
          if (st->input_symbols[k][d] >= 0) shape[d] = st->symbols[st->input_symbols[k][d]].name;
      json guard = {{"input", input_names.at(k)}, {"dtype", dtype_name(type.dtype)}, {"shape", shape},
                    {"device", type.device.str()}, {"contiguous", true}};
      if (variants[i].input_bound > 0 && is_floating(type.dtype)) guard["finite_max_abs"] = variants[i].input_bound;
      guards.push_back(std::move(guard));
    }
    json shapes = json::array();
    for (std::size_t j = 0; j < num_outputs; ++j) {
      const TensorType& type = t.type(t.outputs()[j]);
      if (type.dtype != first.type(first.outputs()[j]).dtype)
        user_error("output ", j, " is ", dtype_name(type.dtype), " in specialization ", variants[i].label, " but ",
                   dtype_name(first.type(first.outputs()[j]).dtype), " in ", variants[0].label,
                   "; compile specializations with different output dtypes into separate .so files");
      json shape = type.shape;
      if (const SymbolicTrace* st = variants[i].symbolic)
        for (std::size_t d = 0; d < type.rank(); ++d) {
          Affine f = st->dim(t, t.outputs()[j], d);
          if (f.is_const()) continue;
          json e = {{"const", f.c}};
          for (std::size_t s = 0; s < f.a.size(); ++s)
            if (f.a[s] != 0) e[st->symbols[s].name] = f.a[s];
          shape[d] = e;
        }
      shapes.push_back(shape);
    }
    json counts = json::object();
    for (const auto& [executor, count] : executor_counts(t))
      if (!executor.empty()) counts[executor] = count;
    json variant = {{"id", i}, {"entry", variant_entry(i)}, {"guards", guards}, {"output_shapes", shapes},
                    {"workspace_bytes", plan.memory[i].workspace_bytes}, {"executors", counts}};
    variant["device"] = is_cuda_variant(t) ? t.type(t.inputs().empty() ? t.outputs()[0] : t.inputs()[0]).device.str()
                                           : std::string("cpu");
    if (is_cuda_variant(t) && cuda.module) {
      json kernels = json::array();
      for (std::size_t k = 0; k < cuda.module->kernels.size(); ++k) {
        if (cuda.module->kernel_variant[k] != i) continue;
        const CudaKernel& kern = cuda.module->kernels[k];
        json entry = {{"index", k},
                      {"name", kern.name},
                      {"what", kern.what},
                      {"grid", {kern.grid[0], kern.grid[1], kern.grid[2]}},
                      {"block", {kern.block[0], kern.block[1], kern.block[2]}},
                      {"dynamic_shared_bytes", kern.shared_bytes}};
        json per_arch = json::object();
        if (cuda.resources)
          for (const KernelResources& r : *cuda.resources)
            if (r.kernel == kern.name)
              per_arch[r.arch] = {{"registers", r.registers}, {"static_shared_bytes", r.static_shared_bytes},
                                  {"local_bytes", r.local_bytes}};
        entry["resources"] = per_arch;
        kernels.push_back(entry);
      }
      json calls = json::array();
      for (std::size_t c = 0; c < cuda.module->library_calls.size(); ++c) {
        if (cuda.module->library_call_variant[c] != i) continue;
        const LibraryCall& lc = cuda.module->library_calls[c];
        calls.push_back({{"id", lc.id}, {"library", lc.library}, {"what", lc.what}});
      }
      variant["cuda"] = {{"archs", cuda.archs}, {"kernels", kernels}, {"library_calls", calls}};
    }
    if (const SymbolicTrace* st = variants[i].symbolic) {
      json dims = json::object();
      for (const SymbolRange& r : st->symbols) dims[r.name] = {{"min", r.lo}, {"max", r.hi}};
      variant["dims"] = dims;
    }
    if (variants[i].backward) {
      const std::size_t b = *variants[i].backward;
      const Trace& bt = *variants.at(b).trace;
      json saved = json::array();
      const std::size_t num_updates = training ? training->updates.size() : 0;
      for (std::size_t j = num_outputs; j + num_updates < t.outputs().size(); ++j)
        saved.push_back({{"dtype", dtype_name(t.type(t.outputs()[j]).dtype)}, {"shape", t.type(t.outputs()[j]).shape}});
      json grad_shapes = json::array();
      for (ValueId g : bt.outputs()) grad_shapes.push_back(bt.type(g).shape);
      json bcounts = json::object();
      for (const auto& [executor, count] : executor_counts(bt))
        if (!executor.empty()) bcounts[executor] = count;
      variant["training"] = {{"saved", saved},
                             {"backward", {{"entry", variant_entry(b)},
                                           {"workspace_bytes", plan.memory[b].workspace_bytes},
                                           {"executors", bcounts},
                                           {"gradient_shapes", grad_shapes}}}};
      if (variants[i].rng_blocks > 0) variant["training"]["rng_blocks"] = variants[i].rng_blocks;
    }
    vs.push_back(variant);
  }
  m["variants"] = vs;
  if (training) {
    json params = json::array();
    for (const TrainingModule::Parameter& p : training->parameters) {
      params.push_back({{"name", p.name}, {"dtype", dtype_name(p.type.dtype)}, {"shape", p.type.shape},
                        {"offset", p.offset}, {"bytes", p.type.nbytes()}});
      if (!p.trainable) params.back()["trainable"] = false;  // absent: true
    }
    json grads = json::array();
    for (const TrainingModule::Gradient& g : training->gradients)
      grads.push_back({{"name", g.name}, {"kind", g.parameter ? "parameter" : "input"}});
    m["training"] = {{"parameters", params}, {"gradients", grads}};
    if (!training->updates.empty()) m["training"]["updates"] = training->updates;
    if (const auto& o = training->optimizer) {
      json counts = json::object();
      for (const auto& [executor, count] : executor_counts(*variants.at(o->program).trace))
        if (!executor.empty()) counts[executor] = count;
      m["training"]["optimizer"] = {{"kind", o->kind},
                                    {"entry", variant_entry(o->program)},
                                    {"workspace_bytes", plan.memory[o->program].workspace_bytes},
                                    {"executors", counts},
                                    {"state", o->state_slots},
                                    {"scalars", o->scalars}};
    }
  }
  if (cuda.module && !cuda.module->cuda_source.empty()) {
    json images = json::array();
    for (const CudaImageFile& im : cuda.module->cuda_images)
      images.push_back({{"arch", im.arch}, {"kind", im.ptx ? "ptx" : "cubin"}, {"bytes", im.data.size()}});
    m["cuda"] = {{"archs", cuda.archs},
                 {"kernels", cuda.module->kernels.size()},
                 {"library_calls", cuda.module->library_calls.size()},
                 {"images", images}};
  }
  return m.dump(2) + "\n";
}

}  // namespace thunderc
