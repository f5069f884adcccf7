// Internal to the TorchScript frontend (includes LibTorch): the graph walker and the aten -> IR handlers.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/frontend/sharp_edges.h"
#include "core/frontend/unsupported_ops.h"
#include "core/ir/trace.h"

namespace thunderc::ts {

// What a TorchScript value is while importing. Everything computable at import time (numbers, lists,
// weights, shapes derived from static input shapes) is Known; tensors computed from inputs live in the trace.
struct JVal {
  enum class Kind { Known, Tensor, Seq, Poison };
  Kind kind = Kind::Poison;
  c10::IValue known;        // Known
  ValueId tensor = 0;       // Tensor
  std::vector<JVal> items;  // Seq: a list or tuple holding trace tensors

  static JVal of_known(c10::IValue v) { JVal j; j.kind = Kind::Known; j.known = std::move(v); return j; }
  static JVal of_tensor(ValueId id) { JVal j; j.kind = Kind::Tensor; j.tensor = id; return j; }
  static JVal of_seq(std::vector<JVal> items) { JVal j; j.kind = Kind::Seq; j.items = std::move(items); return j; }
};

class Importer;
using Handler = std::function<void(Importer&, const torch::jit::Node*)>;

// aten/prim kind ("aten::linear") -> handler, for nodes that take at least one trace tensor.
const std::map<std::string, Handler>& op_handlers();

class Importer {
 public:
  Importer(Trace& trace, Device device, std::string model_path, bool alias_updates = true)
      : trace_(trace), device_(device), model_path_(std::move(model_path)), alias_updates_(alias_updates) {}

  void import_graph(torch::jit::Graph& graph, const std::vector<TensorType>& input_types);
  // Parameters (state_dict names) to import as trace constants that computation is traced on, not folded.
  void trace_parameters(const std::vector<std::string>& names) { traced_parameters_.insert(names.begin(), names.end()); }
  // A module whose parameters (and buffers) freezing kept as attributes: the graph's self input is `self`,
  // and prim::GetAttr chains from it resolve to its attributes; a tensor at a traced path ("layer1.0.conv1.weight",
  // from `paths`: each submodule object's dotted name) becomes that traced constant, anything else a known value.
  void set_module(c10::intrusive_ptr<c10::ivalue::Object> self,
                  std::unordered_map<const c10::ivalue::Object*, std::string> paths) {
    module_ = std::move(self);
    module_paths_ = std::move(paths);
  }
  // --module-mode train: batch norm records its momentum, dropout with p > 0 is refused (see ModelFrontend).
  void set_training_mode(bool on) { training_mode_ = on; }
  bool training_mode() const { return training_mode_; }

  // --- for handlers ---
  const JVal& in(const torch::jit::Node* n, std::size_t i) const;
  bool is_none(const torch::jit::Node* n, std::size_t i) const;
  ValueId tensor(const torch::jit::Node* n, std::size_t i);  // a trace tensor (weights become constants)
  Operand operand(const torch::jit::Node* n, std::size_t i); // tensor, number or None
  std::int64_t int_arg(const torch::jit::Node* n, std::size_t i) const;
  std::optional<std::int64_t> opt_int_arg(const torch::jit::Node* n, std::size_t i) const;
  double float_arg(const torch::jit::Node* n, std::size_t i) const;
  bool bool_arg(const torch::jit::Node* n, std::size_t i) const;
  std::string string_arg(const torch::jit::Node* n, std::size_t i) const;
  IntList ints_arg(const torch::jit::Node* n, std::size_t i) const;
  std::optional<DType> opt_dtype_arg(const torch::jit::Node* n, std::size_t i) const;
  std::vector<ValueId> tensors_arg(const torch::jit::Node* n, std::size_t i);  // Tensor[] (cat, stack)
  std::vector<std::optional<ValueId>> optional_tensors_arg(const torch::jit::Node* n, std::size_t i);  // Tensor?[] (index)
  const TensorType& type(ValueId v) const { return trace_.type(v); }
  // A constant tensor known at compile time, as a trace constant.
  ValueId constant(const at::Tensor& t) { return materialize(nullptr, t); }
  // A constant made at import (index maps, fills).
  ValueId constant(const std::string& name, TensorType type, std::shared_ptr<ConstantData> data) {
    return trace_.add_constant(name, std::move(type), std::move(data));
  }

  ValueId emit(const std::string& op, std::vector<Operand> inputs, Attrs attrs = {});
  std::vector<ValueId> emit_all(const std::string& op, std::vector<Operand> inputs, Attrs attrs = {});  // every output
  void bind(const torch::jit::Value* v, JVal j);
  void bind_tensor(const torch::jit::Node* n, std::size_t out, ValueId id) { bind(n->output(out), JVal::of_tensor(id)); }
  // For in-place aten ops (relu_, add_): the result replaces the mutated input from here on.
  void bind_inplace_result(const torch::jit::Node* n, ValueId result);
  [[noreturn]] void fail(const torch::jit::Node* n, const std::string& why) const;
  void sharp_edge(const torch::jit::Node* n, const std::string& kind, const std::string& message);
  const std::vector<SharpEdge>& sharp_edges() const { return edges_; }
  // Whether the model updates v in place later (itself or through a view of it).
  bool mutated_later(const torch::jit::Value* v) const { return mutated_.count(v) > 0; }
  std::string location(const torch::jit::Node* n) const;

  Trace& trace() { return trace_; }
  Device device() const { return device_; }

 private:
  void import_block(torch::jit::Block* block);
  void import_node(torch::jit::Node* n);
  void evaluate_known(torch::jit::Node* n);
  bool expands_known_tensor(const torch::jit::Node* n) const;
  bool import_structural(torch::jit::Node* n);
  // `source_name`: the constant's name (default: v's debug name without "self.").
  ValueId materialize(const torch::jit::Value* v, const at::Tensor& t, const std::string* source_name = nullptr);
  void note_unsupported(const torch::jit::Node* n, const std::string& why);
  JVal to_output(const JVal& j, const torch::jit::Value* v);
  void flatten_outputs(const JVal& j, std::vector<ValueId>& out);

  Trace& trace_;
  Device device_;
  std::string model_path_;
  std::unordered_map<const torch::jit::Value*, JVal> env_;
  // Keyed by the tensor's storage object; the tensor is kept alive so that address is never reused.
  std::unordered_map<const c10::TensorImpl*, std::pair<at::Tensor, ValueId>> constants_;
  // The TorchScript value each view was made from (to find a mutated tensor's base: model inputs).
  std::unordered_map<const torch::jit::Value*, const torch::jit::Value*> alias_root_;
  std::unordered_set<const torch::jit::Value*> graph_inputs_;
  const torch::jit::Node* current_ = nullptr;  // the node being imported, for source locations
  std::vector<SharpEdge> edges_;
  // In-place updates through views (PyTorch aliasing), at the level of trace values: each view the model
  // made (reshape of a contiguous tensor, permute, slice, select, expand) with the symbol that made it, in
  // creation order. An in-place update of a view writes back into its bases (inverse view or *_scatter)
  // and recomputes every other view of them; --skip-inplace-alias-updates turns this off.
  struct ViewRecord {
    ValueId child, parent;
    BoundSymbol sym;
  };
  std::vector<ViewRecord> views_;
  std::unordered_map<ValueId, std::size_t> view_of_;    // child -> index in views_
  std::unordered_set<ValueId> non_contiguous_;          // values PyTorch would hold with non-dense strides
  bool alias_updates_ = true;
  std::unordered_set<std::string> traced_parameters_;  // trace_parameters()
  bool training_mode_ = false;
  c10::intrusive_ptr<c10::ivalue::Object> module_;  // set_module()
  std::unordered_map<const c10::ivalue::Object*, std::string> module_paths_;
  void record_view(const BoundSymbol& sym);
  // Values updated in place (directly or through a view) are kept as trace values, not compile-time ones.
  std::unordered_set<const torch::jit::Value*> mutated_;
  void find_mutated(torch::jit::Block* block);
  ValueId write_back(const ViewRecord& view, ValueId parent, ValueId new_child, const torch::jit::Node* n);
  // Known values computed from input shapes (size(), dim(), ...): branching on them specializes the model.
  std::unordered_set<const torch::jit::Value*> shape_derived_;
  std::map<std::string, UnsupportedUse> unsupported_;
};

DType dtype_from_torch(c10::ScalarType t, const std::string& context);
c10::ScalarType dtype_to_torch(DType t);

}  // namespace thunderc::ts
