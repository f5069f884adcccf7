#include "core/ir/error.h"
#include "core/ops/ops.h"

namespace thunderc {

const char* op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Elementwise: return "elementwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Normalization: return "normalization";
    case OpCategory::Shape: return "shape";
    case OpCategory::Matmul: return "matmul";
    case OpCategory::Convolution: return "convolution";
    case OpCategory::Pooling: return "pooling";
    case OpCategory::Indexing: return "indexing";
    case OpCategory::Attention: return "attention";
    case OpCategory::Spectral: return "spectral";
    case OpCategory::Fusion: return "fusion";
  }
  return "?";
}

void OpRegistry::add(OpDef def) {
  THUNDERC_CHECK(def.meta, "operator '", def.name, "' has no meta function");
  std::string name = def.name;
  bool inserted = ops_.emplace(name, std::move(def)).second;
  THUNDERC_CHECK(inserted, "operator '", name, "' is declared twice");
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::get(const std::string& name) const {
  const OpDef* def = find(name);
  if (!def) internal_error("unknown operator '", name, "'");
  return *def;
}

OpDef& OpRegistry::mutable_get(const std::string& name) {
  auto it = ops_.find(name);
  if (it == ops_.end()) internal_error("unknown operator '", name, "'");
  return it->second;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : ops_) out.push_back(&def);
  return out;
}

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_reduction_norm_ops(r);
    register_shape_ops(r);
    register_nn_ops(r);
    register_indexing_ops(r);
    register_sampling_ops(r);
    register_spectral_ops(r);
    register_fusion_op(r);
    return r;
  }();
  return registry;
}

}  // namespace thunderc
