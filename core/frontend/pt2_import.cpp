// ExportedProgram -> Trace: one handler per ATen overload the exports produce (torch.export's training IR:
// linear, conv2d, batch_norm, ...; and the core ATen IR of run_decompositions(): addmm, convolution,
// _native_batch_norm_legit_no_training, ...). The mapping to catalog ops follows torchscript_ops.cpp. Arguments
// are looked up by their schema names; the serializer leaves out those at their defaults, so each handler
// states the defaults. Symbolic ints (sym_size) are evaluated from the specialization's concrete shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/frontend/advanced_indexing.h"
#include "core/frontend/complex_ops.h"
#include "core/frontend/composite_ops.h"
#include "core/frontend/fft_ops.h"
#include "core/frontend/pt2.h"
#include "core/frontend/same_name_ops.h"
#include "core/frontend/unsupported_ops.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

class Pt2Importer;
using Pt2Handler = std::function<void(Pt2Importer&, const Pt2Node&)>;
const std::map<std::string, Pt2Handler>& pt2_handlers();

class Pt2Importer {
 public:
  Pt2Importer(const Pt2Model& model, Trace& trace, Device device) : model_(model), p_(model.program()), trace_(trace), device_(device) {}

  void run(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* edges);

  // --- for handlers ---
  const Pt2Arg* find(const Pt2Node& n, const std::string& name) const {
    for (const Pt2NamedArg& a : n.inputs)
      if (a.name == name) return &a.arg;
    return nullptr;
  }
  const Pt2Arg& need(const Pt2Node& n, const std::string& name) const {
    const Pt2Arg* a = find(n, name);
    if (!a) fail(n, "has no argument '" + name + "'");
    return *a;
  }
  bool has(const Pt2Node& n, const std::string& name) const {
    const Pt2Arg* a = find(n, name);
    return a && a->kind != Pt2Arg::Kind::None;
  }
  ValueId tensor(const Pt2Node& n, const std::string& name) {
    const Pt2Arg& a = need(n, name);
    if (a.kind != Pt2Arg::Kind::Tensor) fail(n, "argument '" + name + "' must be a tensor, got " + a.tag);
    return value(a.names[0]);
  }
  Operand operand(const Pt2Node& n, const std::string& name) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) return Operand::none();
    switch (a->kind) {
      case Pt2Arg::Kind::Tensor: return Operand::tensor(value(a->names[0]));
      case Pt2Arg::Kind::Int: return Operand::number(Scalar(a->ints[0]));
      case Pt2Arg::Kind::Float: return Operand::number(Scalar(a->floats[0]));
      case Pt2Arg::Kind::Bool: return Operand::number(Scalar(a->ints[0] != 0));
      case Pt2Arg::Kind::SymInt: return Operand::number(Scalar(sym(n, *a, 0)));
      default: fail(n, "argument '" + name + "' must be a tensor or a number, got " + a->tag);
    }
  }
  std::int64_t int_arg(const Pt2Node& n, const std::string& name, std::optional<std::int64_t> dflt = std::nullopt) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) {
      if (!dflt) fail(n, "has no argument '" + name + "'");
      return *dflt;
    }
    if (a->kind == Pt2Arg::Kind::Int || a->kind == Pt2Arg::Kind::Bool) return a->ints[0];
    if (a->kind == Pt2Arg::Kind::SymInt) return sym(n, *a, 0);
    fail(n, "argument '" + name + "' must be an int, got " + a->tag);
  }
  std::optional<std::int64_t> opt_int_arg(const Pt2Node& n, const std::string& name) {
    if (!has(n, name)) return std::nullopt;
    return int_arg(n, name);
  }
  double float_arg(const Pt2Node& n, const std::string& name, std::optional<double> dflt = std::nullopt) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) {
      if (!dflt) fail(n, "has no argument '" + name + "'");
      return *dflt;
    }
    if (a->kind == Pt2Arg::Kind::Float) return a->floats[0];
    if (a->kind == Pt2Arg::Kind::Int || a->kind == Pt2Arg::Kind::Bool) return static_cast<double>(a->ints[0]);
    fail(n, "argument '" + name + "' must be a number, got " + a->tag);
  }
  bool bool_arg(const Pt2Node& n, const std::string& name, std::optional<bool> dflt = std::nullopt) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) {
      if (!dflt) fail(n, "has no argument '" + name + "'");
      return *dflt;
    }
    if (a->kind == Pt2Arg::Kind::Bool || a->kind == Pt2Arg::Kind::Int) return a->ints[0] != 0;
    fail(n, "argument '" + name + "' must be a bool, got " + a->tag);
  }
  std::string string_arg(const Pt2Node& n, const std::string& name, const std::string& dflt) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) return dflt;
    if (a->kind != Pt2Arg::Kind::String) fail(n, "argument '" + name + "' must be a string, got " + a->tag);
    return a->strings[0];
  }
  IntList ints_arg(const Pt2Node& n, const std::string& name, std::optional<IntList> dflt = std::nullopt) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) {
      if (!dflt) fail(n, "has no argument '" + name + "'");
      return *dflt;
    }
    if (a->kind == Pt2Arg::Kind::Ints || a->kind == Pt2Arg::Kind::Int) return a->ints;
    if (a->kind == Pt2Arg::Kind::SymInts || a->kind == Pt2Arg::Kind::SymInt) {
      IntList out;
      for (std::size_t i = 0; i < a->ints.size(); ++i) out.push_back(sym(n, *a, i));
      return out;
    }
    fail(n, "argument '" + name + "' must be a list of ints, got " + a->tag);
  }
  std::vector<ValueId> tensors_arg(const Pt2Node& n, const std::string& name) {
    const Pt2Arg& a = need(n, name);
    if (a.kind != Pt2Arg::Kind::Tensors) fail(n, "argument '" + name + "' must be a list of tensors, got " + a.tag);
    std::vector<ValueId> out;
    for (const std::string& t : a.names) out.push_back(value(t));
    return out;
  }
  std::optional<DType> dtype_arg(const Pt2Node& n, const std::string& name) {
    const Pt2Arg* a = find(n, name);
    if (!a || a->kind == Pt2Arg::Kind::None) return std::nullopt;
    if (a->kind != Pt2Arg::Kind::ScalarType) fail(n, "argument '" + name + "' must be a dtype, got " + a->tag);
    auto dt = pt2_dtype(static_cast<int>(a->ints[0]));
    if (!dt) fail(n, "dtype " + pt2_scalar_type_name(static_cast<int>(a->ints[0])) + " is not supported");
    return dt;
  }
  const TensorType& type(ValueId v) const { return trace_.type(v); }
  bool arg_is_float(const Pt2Node& n, const std::string& name) const { return need(n, name).kind == Pt2Arg::Kind::Float; }
  Device device() const { return device_; }
  ValueId constant(const std::string& name, TensorType type, std::shared_ptr<ConstantData> data) {
    return trace_.add_constant(name, std::move(type), std::move(data));
  }

  ValueId emit(const std::string& op_name, std::vector<Operand> inputs, Attrs attrs = {}) {
    if (complex_ops::needs_lowering(*this, op(op_name), inputs, attrs))
      return complex_ops::lower(*this, op(op_name), std::move(inputs), std::move(attrs), [&](const std::string& why) {
        if (current_) fail(*current_, why);
        user_error(why);
      });
    return trace_.emit1(op(op_name), std::move(inputs), std::move(attrs), current_ ? current_->location() : "");
  }
  std::vector<ValueId> emit_all(const std::string& op_name, std::vector<Operand> inputs, Attrs attrs = {}) {
    if (complex_ops::needs_lowering(*this, op(op_name), inputs, attrs)) return {emit(op_name, std::move(inputs), std::move(attrs))};
    return trace_.emit(op(op_name), std::move(inputs), std::move(attrs), current_ ? current_->location() : "");
  }
  const Trace& trace() const { return trace_; }
  // Tensor?[] (index.Tensor's indices): None entries are nullopt.
  std::vector<std::optional<ValueId>> optional_tensors_arg(const Pt2Node& n, const std::string& name) {
    const Pt2Arg& a = need(n, name);
    if (a.kind != Pt2Arg::Kind::OptionalTensors && a.kind != Pt2Arg::Kind::Tensors)
      fail(n, "argument '" + name + "' must be a list of optional tensors, got " + a.tag);
    std::vector<std::optional<ValueId>> out;
    for (const std::string& t : a.names) out.push_back(t.empty() ? std::nullopt : std::optional<ValueId>(value(t)));
    return out;
  }
  // Binds output `i` of the node (an as_tensor output, or element i of an as_tensors output).
  void bind(const Pt2Node& n, std::size_t i, ValueId v) {
    const std::string* name = output_name(n, i);
    if (!name) fail(n, "has no output " + std::to_string(i));
    if (!name->empty()) env_[*name] = v;
  }
  void bind_sym(const Pt2Node& n, std::int64_t v) {
    if (n.outputs.size() != 1 || n.outputs[0].kind != Pt2Arg::Kind::SymInt || n.outputs[0].names[0].empty())
      fail(n, "should produce one symbolic int");
    syms_[n.outputs[0].names[0]] = v;
  }
  std::int64_t sym(const Pt2Node& n, const Pt2Arg& a, std::size_t i) const {
    if (a.names[i].empty()) return a.ints[i];
    auto it = syms_.find(a.names[i]);
    if (it == syms_.end()) fail(n, "uses symbolic int '" + a.names[i] + "', which thunderc could not evaluate");
    return it->second;
  }
  // For in-place ATen ops (relu_, add_.Tensor, ...), after the functional handler bound output 0: the result
  // replaces `self` from here on (torch.export's training IR keeps such ops; its later nodes read either name).
  // For out= variants (atan2.out) `arg` is "out", the tensor written; it may be one the program made itself
  // (empty_like), which imports as a constant.
  void bind_inplace(const Pt2Node& n, const std::string& arg = "self");
  // A sharp edge (sharp_edges.h) of this node, when the caller collects them.
  void sharp_edge(const Pt2Node& n, const std::string& kind, const std::string& message) {
    if (edges_) edges_->push_back({kind, short_target(n.target) + " " + message, n.location()});
  }
  // The position of the node being imported in the program (a seed that differs per node, same every compile).
  std::size_t node_index() const { return current_index_; }
  // The shape, strides and storage offset the export recorded for a tensor argument, or null.
  const Pt2TensorMeta* recorded_meta(const Pt2Node& n, const std::string& arg) const {
    const Pt2Arg* a = find(n, arg);
    if (!a || a->kind != Pt2Arg::Kind::Tensor) return nullptr;
    auto it = p_.tensor_values.find(a->names[0]);
    return it == p_.tensor_values.end() ? nullptr : &it->second;
  }
  // Whether a tensor argument is a weight or a program input (updating it in place would change the model).
  bool is_weight_or_input(const Pt2Node& n, const std::string& arg) {
    const std::string root = alias_root(need(n, arg).names[0]);
    return lazy_.count(root) || trace_.value(value(root)).origin == ValueOrigin::Input;
  }
  // Whether a tensor argument (or a tensor it views) is read by a later node or is a program output.
  bool read_later(const Pt2Node& n, const std::string& arg) const {
    const std::string root = alias_root(need(n, arg).names[0]);
    if (read_after_current(root)) return true;
    for (const auto& [name, r] : alias_root_)
      if (r == root && read_after_current(name)) return true;
    return false;
  }
  [[noreturn]] void fail(const Pt2Node& n, const std::string& why) const {
    std::string loc = n.location();
    user_error(model_.path(), ": ", short_target(n.target), loc.empty() ? "" : " at " + loc, ": ", why);
  }
  static std::string short_target(const std::string& target) {
    const std::string prefix = "torch.ops.";
    return target.rfind(prefix, 0) == 0 ? target.substr(prefix.size()) : target;
  }

 private:
  const std::string* output_name(const Pt2Node& n, std::size_t i) const {
    if (n.outputs.size() == 1 && (n.outputs[0].kind == Pt2Arg::Kind::Tensors || n.outputs[0].kind == Pt2Arg::Kind::OptionalTensors))
      return i < n.outputs[0].names.size() ? &n.outputs[0].names[i] : nullptr;
    if (i >= n.outputs.size()) return nullptr;
    if (n.outputs[i].kind == Pt2Arg::Kind::None) return &empty_;
    if (n.outputs[i].kind != Pt2Arg::Kind::Tensor) return nullptr;
    return &n.outputs[i].names[0];
  }
  ValueId value(const std::string& name);
  std::vector<std::string> tensor_inputs(const Pt2Node& n) const {
    std::vector<std::string> out;
    for (const Pt2NamedArg& a : n.inputs)
      if (a.arg.kind == Pt2Arg::Kind::Tensor || a.arg.kind == Pt2Arg::Kind::Tensors || a.arg.kind == Pt2Arg::Kind::OptionalTensors)
        for (const std::string& t : a.arg.names)
          if (!t.empty()) out.push_back(t);
    return out;
  }
  void check_meta(const Pt2Node& n);
  void note_views(const Pt2Node& n);
  std::string alias_root(const std::string& name) const {
    auto it = alias_root_.find(name);
    return it == alias_root_.end() ? name : it->second;
  }
  bool read_after_current(const std::string& name) const;
  bool is_copy(const std::string& name) const;

  const Pt2Model& model_;
  const Pt2Program& p_;
  Trace& trace_;
  Device device_;
  std::unordered_map<std::string, ValueId> env_;
  std::unordered_map<std::string, std::int64_t> syms_;
  std::set<std::string> poisoned_;  // outputs of unsupported nodes
  std::unordered_map<std::string, std::string> lazy_;  // graph input name -> weight/constant fqn
  const Pt2Node* current_ = nullptr;
  std::size_t current_index_ = 0;
  // Output name of a view op (view, slice, transpose, ...) -> the tensor it views, followed to the first
  // tensor that is no view: PyTorch shares their memory, so an in-place update of one reaches the others.
  std::unordered_map<std::string, std::string> alias_root_;
  bool at_recorded_shapes_ = false;
  std::vector<SharpEdge>* edges_ = nullptr;
  const std::string empty_;
};

ValueId Pt2Importer::value(const std::string& name) {
  auto it = env_.find(name);
  if (it != env_.end()) return it->second;
  auto lz = lazy_.find(name);
  if (lz != lazy_.end()) {
    const Pt2Tensor* t = nullptr;
    if (auto w = p_.weights.find(lz->second); w != p_.weights.end()) t = &w->second;
    else if (auto c = p_.constants.find(lz->second); c != p_.constants.end()) t = &c->second;
    THUNDERC_CHECK(t, "weight ", lz->second, " checked at load but missing");
    ValueId v = trace_.add_constant(lz->second, TensorType{t->dtype, t->meta.sizes, device_}, t->data);
    env_[name] = v;
    return v;
  }
  internal_error("pt2 value '", name, "' used before definition");
}

// After a node: at the example's shapes, the trace must agree with the shapes and dtypes the export recorded.
void Pt2Importer::check_meta(const Pt2Node& n) {
  if (!at_recorded_shapes_) return;
  for (std::size_t i = 0;; ++i) {
    const std::string* name = output_name(n, i);
    if (!name) break;
    if (name->empty() || !env_.count(*name)) continue;
    auto it = p_.tensor_values.find(*name);
    if (it == p_.tensor_values.end() || !it->second.is_static()) continue;
    const TensorType& t = trace_.type(env_.at(*name));
    auto dt = pt2_dtype(it->second.scalar_type);
    if (t.shape != it->second.sizes || (dt && *dt != t.dtype))
      internal_error("pt2 import of ", n.target, " (", n.name, ") gives ", t.str(), " but the export recorded ",
                     dt ? dtype_name(*dt) : "?", shape_str(it->second.sizes));
  }
}

void Pt2Importer::note_views(const Pt2Node& n) {
  // ATen ops whose outputs may share memory with `self` (or `input`).
  static const std::set<std::string> views = {
      "view", "reshape", "_unsafe_view", "flatten", "unflatten", "unsqueeze", "squeeze", "permute", "transpose", "t",
      "expand", "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "alias", "detach",
      "contiguous", "dropout", "dropout_", "view_as", "reshape_as", "expand_as", "as_strided"};
  const std::string prefix = "torch.ops.aten.";
  if (n.target.rfind(prefix, 0) != 0) return;
  std::string base = n.target.substr(prefix.size());
  base = base.substr(0, base.find('.'));
  if (!views.count(base)) return;
  const Pt2Arg* self = find(n, "self");
  if (!self) self = find(n, "input");
  if (!self || self->kind != Pt2Arg::Kind::Tensor) return;
  const std::string root = alias_root(self->names[0]);
  for (const Pt2Arg& o : n.outputs)
    for (const std::string& name : o.names)
      if (!name.empty()) alias_root_[name] = root;
}

bool Pt2Importer::is_copy(const std::string& name) const {
  // clone and lift_fresh_copy import as their input's value (nothing is mutated in place in the trace), but in
  // the program they are new tensors: updating one in place leaves the input as it was.
  for (const Pt2Node& node : p_.nodes) {
    if (node.target != "torch.ops.aten.clone.default" && node.target != "torch.ops.aten.lift_fresh_copy.default") continue;
    for (const Pt2Arg& o : node.outputs)
      for (const std::string& out : o.names)
        if (out == name) return true;
  }
  return false;
}

bool Pt2Importer::read_after_current(const std::string& name) const {
  for (std::size_t i = current_index_ + 1; i < p_.nodes.size(); ++i)
    for (const std::string& t : tensor_inputs(p_.nodes[i]))
      if (t == name) return true;
  for (const Pt2Arg& o : p_.graph_outputs)
    for (const std::string& t : o.names)
      if (t == name) return true;
  return false;
}

void Pt2Importer::bind_inplace(const Pt2Node& n, const std::string& arg) {
  const Pt2Arg& self_arg = need(n, arg);
  if (self_arg.kind != Pt2Arg::Kind::Tensor) fail(n, "argument '" + arg + "' must be a tensor, got " + self_arg.tag);
  const std::string& self = self_arg.names[0];
  const std::string* out = output_name(n, 0);
  if (!out || out->empty()) fail(n, "has no output");
  ValueId before = value(self), result = env_.at(*out);
  const TensorType& bt = trace_.type(before);
  if (trace_.type(result).shape != bt.shape)
    fail(n, "in-place result of shape " + shape_str(trace_.type(result).shape) + " does not fit the tensor of shape " +
                shape_str(bt.shape));
  if (trace_.type(result).dtype != bt.dtype) result = emit("to_dtype", {Operand::tensor(result)}, {{"dtype", bt.dtype}});
  const std::string root = alias_root(self);
  const ValueOrigin origin = trace_.value(value(root)).origin;
  const bool made_here = origin == ValueOrigin::Intermediate || is_copy(root) || (arg == "out" && origin != ValueOrigin::Input);
  if (lazy_.count(root) || !made_here)
    fail(n, "modifies the program's input or weight '" + root + "' in place; thunderc compiles programs whose inputs "
            "and weights stay unchanged (export the model in eval mode, without such updates)");
  // An update through a view (or of a tensor that has views) changes every alias; that is supported only when
  // no other alias is read afterwards.
  for (const auto& [name, r] : alias_root_)
    if (r == root && name != self && read_after_current(name))
      fail(n, "writes in place into '" + self + "', which shares memory with '" + name + "' read later; in-place "
              "updates through views are not supported in .pt2 programs yet (export after "
              "ep.run_decompositions(), which makes them functional)");
  if (root != self && read_after_current(root))
    fail(n, "writes in place into '" + self + "', a view of '" + root + "' read later; in-place updates through "
            "views are not supported in .pt2 programs yet (export after ep.run_decompositions(), which makes them "
            "functional)");
  env_[self] = result;
  env_[*out] = result;
  alias_root_[*out] = root;
}

void Pt2Importer::run(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* edges) {
  edges_ = edges;
  const auto& names = model_.input_names();
  THUNDERC_CHECK(input_types.size() == names.size(), "import with ", input_types.size(), " types for ", names.size(), " inputs");
  at_recorded_shapes_ = true;
  std::size_t k = 0;
  for (const Pt2InputSpec& s : p_.input_specs) {
    if (s.kind != "user_input") {
      lazy_[s.name] = s.target;
      continue;
    }
    const TensorType& t = input_types[k++];
    const Pt2TensorMeta& meta = p_.tensor_values.at(s.name);
    env_[s.name] = trace_.add_input(s.name, t);
    at_recorded_shapes_ = at_recorded_shapes_ && t.shape == meta.sizes && pt2_dtype(meta.scalar_type) == t.dtype;
    for (std::size_t d = 0; d < meta.sizes.size() && d < t.shape.size(); ++d) {
      if (meta.size_exprs[d].empty()) continue;
      // A plain symbol ("Symbol('s77', positive=True, integer=True)" or "s77") is bound to the given size.
      std::string sym_name = pt2_plain_symbol(meta.size_exprs[d]);
      if (!sym_name.empty()) syms_[sym_name] = t.shape[d];
      if (edges) {
        std::string range;
        for (const auto& [name, r] : p_.range_constraints)
          if (name == sym_name)
            range = " in " + (r.min ? std::to_string(*r.min) : "-inf") + ".." + (r.max ? std::to_string(*r.max) : "inf");
        edges->push_back({"specialized-dynamic-dim",
                          "input " + s.name + " dimension " + std::to_string(d) + " is dynamic in the export (" +
                              (sym_name.empty() ? std::string("an expression") : sym_name) + range +
                              "); this variant is specialized to " + std::to_string(t.shape[d]) +
                              (sym_name.empty() ? std::string(" (compile one variant per size with --shapes)")
                                                : " (--dim " + sym_name + "=LO:HI compiles one symbolic variant "
                                                  "for that range; --shapes, one variant per size)"),
                          ""});
      }
    }
  }

  std::map<std::string, UnsupportedUse> unsupported;
  for (std::size_t index = 0; index < p_.nodes.size(); ++index) {
    const Pt2Node& n = p_.nodes[index];
    current_ = &n;
    current_index_ = index;
    bool poisoned = false;
    for (const std::string& t : tensor_inputs(n)) poisoned = poisoned || poisoned_.count(t);
    for (const Pt2NamedArg& a : n.inputs)
      if (a.arg.kind == Pt2Arg::Kind::SymInt || a.arg.kind == Pt2Arg::Kind::SymInts)
        for (const std::string& s : a.arg.names) poisoned = poisoned || (!s.empty() && poisoned_.count(s));
    auto it = pt2_handlers().find(n.target);
    if (it == pt2_handlers().end() || poisoned) {
      if (it == pt2_handlers().end()) {
        UnsupportedUse& u = unsupported[short_target(n.target)];
        ++u.count;
        std::string loc = n.location();
        if (!loc.empty() && u.where.size() < 3) u.where.push_back(loc);
      }
      for (const Pt2Arg& o : n.outputs) for (const std::string& name : o.names) if (!name.empty()) poisoned_.insert(name);
      continue;
    }
    try {
      it->second(*this, n);
    } catch (const UserError& e) {
      std::string msg = e.what();
      if (msg.rfind(model_.path() + ": ", 0) == 0) throw;
      fail(n, msg);
    }
    note_views(n);
    check_meta(n);
  }
  current_ = nullptr;
  if (!unsupported.empty()) throw_unsupported(model_.path(), unsupported);
  std::vector<ValueId> outs;
  for (std::size_t i = 0; i < p_.graph_outputs.size(); ++i) {
    const std::string kind = i < p_.output_kinds.size() ? p_.output_kinds[i] : "user_output";
    if (kind != "user_output")
      user_error(model_.path(), ": the program has a ", kind, " output (", i, "); thunderc compiles inference programs whose "
                 "outputs are all user outputs (export the model in eval mode, without buffer mutations)");
    const Pt2Arg& o = p_.graph_outputs[i];
    if (o.kind != Pt2Arg::Kind::Tensor && o.kind != Pt2Arg::Kind::Tensors)
      user_error(model_.path(), ": output ", i, " is a ", o.tag, "; thunderc compiles tensor outputs only");
    for (const std::string& name : o.names) {
      ValueId v = value(name);
      // An output that is an input or a weight is returned as a copy.
      if (trace_.value(v).origin != ValueOrigin::Intermediate) v = emit("to_dtype", {Operand::tensor(v)}, {{"dtype", trace_.type(v).dtype}});
      outs.push_back(v);
    }
  }
  trace_.set_outputs(std::move(outs));
}

// --- handlers ----------------------------------------------------------------------------------------

std::int64_t wrap(Pt2Importer& m, const Pt2Node& n, std::int64_t dim, std::size_t rank) {
  auto r = static_cast<std::int64_t>(std::max<std::size_t>(rank, 1));
  if (dim < -r || dim >= r) m.fail(n, "dimension " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

ValueId reshape(Pt2Importer& m, ValueId v, Shape shape) {
  if (m.type(v).shape == shape) return v;
  return m.emit("reshape", {Operand::tensor(v)}, {{"shape", shape}});
}

ValueId permute(Pt2Importer& m, ValueId v, IntList dims) {
  bool identity = true;
  for (std::size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<std::int64_t>(i);
  if (identity) return v;
  return m.emit("permute", {Operand::tensor(v)}, {{"dims", dims}});
}

ValueId slice(Pt2Importer& m, ValueId v, std::int64_t dim, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
              std::int64_t step) {
  std::int64_t size = m.type(v).shape[dim];
  auto norm = [&](std::optional<std::int64_t> x, std::int64_t dflt) {
    std::int64_t b = x.value_or(dflt);
    if (b < 0) b += size;
    return std::clamp<std::int64_t>(b, 0, size);
  };
  std::int64_t s = norm(start, 0), e = std::max(norm(end, size), s);
  if (s == 0 && e == size && step == 1) return v;
  return m.emit("slice", {Operand::tensor(v)}, {{"dim", dim}, {"start", s}, {"end", e}, {"step", step}});
}

void bind_pieces(Pt2Importer& m, const Pt2Node& n, ValueId v, std::int64_t dim, const IntList& sizes) {
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    m.bind(n, i, slice(m, v, dim, offset, offset + sizes[i], 1));
    offset += sizes[i];
  }
  if (offset != m.type(v).shape[dim]) m.fail(n, "split sizes " + shape_str(sizes) + " do not add up to the dimension");
}

ValueId conv2d(Pt2Importer& m, const Pt2Node& n, const std::string& input, bool has_defaults) {
  ValueId x = m.tensor(n, input), w = m.tensor(n, "weight");
  if (m.type(w).rank() != 4) m.fail(n, "only 2-D convolutions are supported yet, the weight has shape " + shape_str(m.type(w).shape));
  auto pair = [](IntList v) { return v.size() == 1 ? IntList{v[0], v[0]} : v; };
  std::optional<IntList> one = has_defaults ? std::optional<IntList>(IntList{1, 1}) : std::nullopt;
  std::optional<IntList> zero = has_defaults ? std::optional<IntList>(IntList{0, 0}) : std::nullopt;
  return m.emit("conv2d", {Operand::tensor(x), Operand::tensor(w), m.operand(n, "bias")},
                {{"stride", pair(m.ints_arg(n, "stride", one))}, {"padding", pair(m.ints_arg(n, "padding", zero))},
                 {"dilation", pair(m.ints_arg(n, "dilation", one))}, {"groups", m.int_arg(n, "groups", 1)}});
}

using Fn = std::function<ValueId(Pt2Importer&, const Pt2Node&)>;

struct Table {
  std::map<std::string, Pt2Handler> handlers;
  // torch.ops.aten.<name> for each overload: output 0 is fn's result.
  void def(const std::string& name, std::initializer_list<const char*> overloads, Fn fn) {
    for (const char* o : overloads)
      handlers["torch.ops.aten." + name + "." + o] = [fn](Pt2Importer& m, const Pt2Node& n) { m.bind(n, 0, fn(m, n)); };
  }
  void raw(const std::string& target, Pt2Handler h) { handlers[target] = std::move(h); }
};

void elementwise(Table& t) {
  auto unary = [](const std::string& op_name) {
    return [op_name](Pt2Importer& m, const Pt2Node& n) { return m.emit(op_name, {m.operand(n, "self")}); };
  };
  for (const char* name : kSameNameUnaryOps) t.def(name, {"default"}, unary(name));
  for (const char* name : {"round", "isnan", "isinf"}) t.def(name, {"default"}, unary(name));  // (round: decimals=0)
  t.def("elu", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("elu", {m.operand(n, "self")},
                  {{"alpha", m.float_arg(n, "alpha", 1.0)},
                   {"scale", m.float_arg(n, "scale", 1.0)},
                   {"input_scale", m.float_arg(n, "input_scale", 1.0)}});
  });
  t.def("gelu", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    std::string approx = m.string_arg(n, "approximate", "none");
    if (approx != "none" && approx != "tanh") m.fail(n, "approximate must be 'none' or 'tanh', got '" + approx + "'");
    return m.emit("gelu", {m.operand(n, "self")}, {{"approximate", approx}});
  });
  t.def("hardtanh", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("hardtanh", {m.operand(n, "self")}, {{"min_val", m.float_arg(n, "min_val", -1.0)}, {"max_val", m.float_arg(n, "max_val", 1.0)}});
  });
  t.def("leaky_relu", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("leaky_relu", {m.operand(n, "self")}, {{"negative_slope", m.float_arg(n, "negative_slope", 0.01)}});
  });
  for (const char* name : {"add", "sub"}) {
    std::string op_name = name;
    t.def(name, {"Tensor", "Scalar"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      Operand b = m.operand(n, "other");
      double alpha = m.float_arg(n, "alpha", 1.0);
      if (alpha != 1.0)
        b = b.is_tensor() ? Operand::tensor(m.emit("mul", {b, Operand::number(Scalar(alpha))}))
                          : Operand::number(Scalar(b.scalar.to_double() * alpha));
      return m.emit(op_name, {m.operand(n, "self"), b});
    });
  }
  t.def("rsub", {"Scalar", "Tensor"}, [](Pt2Importer& m, const Pt2Node& n) {
    Operand self = m.operand(n, "self");
    double alpha = m.float_arg(n, "alpha", 1.0);
    if (alpha != 1.0) self = Operand::tensor(m.emit("mul", {self, Operand::number(Scalar(alpha))}));
    return m.emit("sub", {m.operand(n, "other"), self});
  });
  auto binary = [](const std::string& op_name) {
    return [op_name](Pt2Importer& m, const Pt2Node& n) { return m.emit(op_name, {m.operand(n, "self"), m.operand(n, "other")}); };
  };
  for (const char* name : kSameNameBinaryOps) t.def(name, {"Tensor", "Scalar", "default"}, binary(name));
  // &, | and ^, also as written before decompositions (__and__.Tensor, ...).
  for (auto [dunder, op_name] : {std::pair{"__and__", "bitwise_and"}, {"__or__", "bitwise_or"}, {"__xor__", "bitwise_xor"}}) {
    t.def(op_name, {"Tensor", "Scalar"}, binary(op_name));
    t.def(dunder, {"Tensor", "Scalar"}, binary(op_name));
  }
  t.def("pow", {"Tensor_Scalar", "Tensor_Tensor", "Scalar"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("pow", {m.operand(n, "self"), m.operand(n, "exponent")});
  });
  t.def("div", {"Tensor", "Scalar", "Tensor_mode", "Scalar_mode"}, [](Pt2Importer& m, const Pt2Node& n) {
    AttrValue mode = None{};
    if (m.has(n, "rounding_mode")) mode = m.string_arg(n, "rounding_mode", "");
    return m.emit("div", {m.operand(n, "self"), m.operand(n, "other")}, {{"rounding_mode", mode}});
  });
  t.def("where", {"self"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("where", {Operand::tensor(m.tensor(n, "condition")), m.operand(n, "self"), m.operand(n, "other")});
  });
  t.def("masked_scatter", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("masked_scatter", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "mask")),
                                     Operand::tensor(m.tensor(n, "source"))});
  });
  t.def("masked_fill", {"Scalar", "Tensor"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("masked_fill", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "mask")), m.operand(n, "value")});
  });
  // Identities at inference.
  for (const char* name : {"contiguous", "clone", "detach", "alias", "lift_fresh_copy"})
    t.def(name, {"default"}, [](Pt2Importer& m, const Pt2Node& n) { return m.tensor(n, "self"); });
  t.def("dropout", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    if (m.bool_arg(n, "train", false) && m.float_arg(n, "p", 0.0) > 0) m.fail(n, "is dropout in training mode; export the model in eval mode");
    return m.tensor(n, "input");
  });
  t.def("dropout_", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {  // in place: leaves self as it is at eval
    if (m.bool_arg(n, "train", false) && m.float_arg(n, "p", 0.0) > 0) m.fail(n, "is dropout in training mode; export the model in eval mode");
    return m.tensor(n, "self");
  });
  auto to_dtype = [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::optional<DType> dt = m.dtype_arg(n, "dtype");
    if (!dt || *dt == m.type(x).dtype) return x;
    return m.emit("to_dtype", {Operand::tensor(x)}, {{"dtype", *dt}});
  };
  t.def("to", {"dtype", "dtype_layout"}, to_dtype);
  t.def("_to_copy", {"default"}, to_dtype);
}

void reductions(Table& t) {
  auto sum_like = [](const std::string& op_name, bool with_dtype) {
    return [op_name, with_dtype](Pt2Importer& m, const Pt2Node& n) {
      Attrs a;
      a.set("dims", m.ints_arg(n, "dim", IntList{}));
      a.set("keepdim", m.bool_arg(n, "keepdim", false));
      if (with_dtype) {
        auto dt = m.dtype_arg(n, "dtype");
        a.set("dtype", dt ? AttrValue(*dt) : AttrValue(None{}));
      }
      return m.emit(op_name, {m.operand(n, "self")}, a);
    };
  };
  t.def("sum", {"dim_IntList", "default"}, sum_like("sum", true));
  t.def("mean", {"dim", "default"}, sum_like("mean", true));
  t.def("amax", {"default"}, sum_like("amax", false));
  t.def("amin", {"default"}, sum_like("amin", false));
  for (const char* name : {"argmax", "argmin"}) {
    std::string op_name = name;
    t.def(name, {"default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      AttrValue dim = m.has(n, "dim") ? AttrValue(m.int_arg(n, "dim")) : AttrValue(None{});
      return m.emit(op_name, {Operand::tensor(m.tensor(n, "self"))}, {{"dim", dim}, {"keepdim", m.bool_arg(n, "keepdim", false)}});
    });
  }
  // max.dim / min.dim: (values, indices).
  for (auto [name, extreme, arg] : {std::tuple{"max", "amax", "argmax"}, {"min", "amin", "argmin"}}) {
    std::string extreme_op = extreme, arg_op = arg;
    t.raw(std::string("torch.ops.aten.") + name + ".dim", [extreme_op, arg_op](Pt2Importer& m, const Pt2Node& n) {
      const std::int64_t dim = m.int_arg(n, "dim");
      const bool keepdim = m.bool_arg(n, "keepdim", false);
      const Operand x = Operand::tensor(m.tensor(n, "self"));
      m.bind(n, 0, m.emit(extreme_op, {x}, {{"dims", IntList{dim}}, {"keepdim", keepdim}}));
      m.bind(n, 1, m.emit(arg_op, {x}, {{"dim", dim}, {"keepdim", keepdim}}));
    });
  }
  t.def("cumsum", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    auto dt = m.dtype_arg(n, "dtype");
    return m.emit("cumsum", {Operand::tensor(m.tensor(n, "self"))},
                  {{"dim", m.int_arg(n, "dim")}, {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
  });
  for (const char* name : {"index_select", "gather"}) {
    std::string op_name = name;
    t.def(name, {"default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      return m.emit(op_name, {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "index"))},
                    {{"dim", m.int_arg(n, "dim")}});
    });
  }
  // prod.default(self, *, dtype=None), prod.dim_int(self, dim, keepdim=False, *, dtype=None).
  t.def("prod", {"default", "dim_int"}, [](Pt2Importer& m, const Pt2Node& n) {
    auto dt = m.dtype_arg(n, "dtype");
    const bool by_dim = m.has(n, "dim");
    return m.emit("prod", {Operand::tensor(m.tensor(n, "self"))},
                  {{"dim", by_dim ? AttrValue(m.int_arg(n, "dim")) : AttrValue(None{})},
                   {"keepdim", by_dim && m.bool_arg(n, "keepdim", false)}, {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
  });
  // sort.default(self, dim=-1, descending=False), sort.stable(self, *, stable, dim=-1, descending=False) and
  // topk.default(self, k, dim=-1, largest=True, sorted=True): (values, indices).
  for (const char* target : {"torch.ops.aten.sort.default", "torch.ops.aten.sort.stable"})
  t.raw(target, [](Pt2Importer& m, const Pt2Node& n) {
    auto out = m.emit_all("sort", {Operand::tensor(m.tensor(n, "self"))},
                          {{"dim", m.int_arg(n, "dim", -1)}, {"descending", m.bool_arg(n, "descending", false)},
                           {"stable", m.bool_arg(n, "stable", false)}});
    m.bind(n, 0, out[0]);
    m.bind(n, 1, out[1]);
  });
  t.raw("torch.ops.aten.topk.default", [](Pt2Importer& m, const Pt2Node& n) {
    auto out = m.emit_all("topk", {Operand::tensor(m.tensor(n, "self"))},
                          {{"k", m.int_arg(n, "k")}, {"dim", m.int_arg(n, "dim", -1)}, {"largest", m.bool_arg(n, "largest", true)},
                           {"sorted", m.bool_arg(n, "sorted", true)}});
    m.bind(n, 0, out[0]);
    m.bind(n, 1, out[1]);
  });
  t.def("diagonal", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("diagonal", {Operand::tensor(m.tensor(n, "self"))},
                  {{"offset", m.int_arg(n, "offset", 0)}, {"dim1", m.int_arg(n, "dim1", 0)}, {"dim2", m.int_arg(n, "dim2", 1)}});
  });
  // scatter.src(self, dim, index, src), scatter.value(self, dim, index, value), scatter_add.default(self, dim,
  // index, src), scatter_reduce.two(self, dim, index, src, reduce, *, include_self=True).
  t.def("scatter", {"src", "value"}, [](Pt2Importer& m, const Pt2Node& n) {
    const bool value = m.has(n, "value");
    return m.emit("scatter", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "index")),
                              m.operand(n, value ? "value" : "src")},
                  {{"dim", m.int_arg(n, "dim")}});
  });
  t.def("scatter_add", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("scatter_reduce", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "index")),
                                     Operand::tensor(m.tensor(n, "src"))},
                  {{"dim", m.int_arg(n, "dim")}, {"reduce", std::string("sum")}, {"include_self", true}});
  });
  t.def("scatter_reduce", {"two"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("scatter_reduce", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "index")),
                                     Operand::tensor(m.tensor(n, "src"))},
                  {{"dim", m.int_arg(n, "dim")}, {"reduce", m.string_arg(n, "reduce", "sum")},
                   {"include_self", m.bool_arg(n, "include_self", true)}});
  });
  // index.Tensor(self, indices: Tensor?[]), index_put.default(self, indices, values, accumulate=False).
  t.def("index", {"Tensor"}, [](Pt2Importer& m, const Pt2Node& n) {
    return emit_index(m, m.tensor(n, "self"), m.optional_tensors_arg(n, "indices"), [&](const std::string& why) { m.fail(n, why); });
  });
  t.def("index_put", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return emit_index_put(m, m.tensor(n, "self"), m.tensor(n, "values"), m.optional_tensors_arg(n, "indices"),
                          m.bool_arg(n, "accumulate", false), [&](const std::string& why) { m.fail(n, why); });
  });
  t.def("any", {"default", "dim", "dims"}, sum_like("any", false));
  t.def("all", {"default", "dim", "dims"}, sum_like("all", false));
  // var.correction(input, dim=None, *, correction=None, keepdim=False); var.dim(self, dim, unbiased, keepdim).
  t.def("var", {"correction", "dim", "default"}, [](Pt2Importer& m, const Pt2Node& n) {
    double correction = m.bool_arg(n, "unbiased", true) ? 1.0 : 0.0;
    if (m.has(n, "correction")) correction = m.float_arg(n, "correction", 1.0);
    const bool input = m.has(n, "input");
    return m.emit("var", {m.operand(n, input ? "input" : "self")},
                  {{"dims", m.ints_arg(n, "dim", IntList{})}, {"keepdim", m.bool_arg(n, "keepdim", false)}, {"correction", correction}});
  });
  for (const char* name : {"softmax", "log_softmax"}) {
    std::string op_name = name;
    t.def(name, {"int"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      auto dt = m.dtype_arg(n, "dtype");
      return m.emit(op_name, {m.operand(n, "self")}, {{"dim", m.int_arg(n, "dim")}, {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
    });
    t.def(std::string("_") + name, {"default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      ValueId x = m.tensor(n, "self");
      AttrValue dt = None{};
      if (m.bool_arg(n, "half_to_float", false) && m.type(x).dtype == DType::Float16) dt = DType::Float32;
      return m.emit(op_name, {Operand::tensor(x)}, {{"dim", m.int_arg(n, "dim")}, {"dtype", dt}});
    });
  }
  t.def("layer_norm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("layer_norm", {m.operand(n, "input"), m.operand(n, "weight"), m.operand(n, "bias")},
                  {{"normalized_shape", m.ints_arg(n, "normalized_shape")}, {"eps", m.float_arg(n, "eps", 1e-5)}});
  });
  t.def("rms_norm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "input");
    double eps = m.has(n, "eps") ? m.float_arg(n, "eps") : machine_epsilon(m.type(x).dtype);  // PyTorch's eps=None
    return m.emit("rms_norm", {Operand::tensor(x), m.operand(n, "weight")},
                  {{"normalized_shape", m.ints_arg(n, "normalized_shape")}, {"eps", eps}});
  });
  // native_layer_norm returns (out, mean, rstd); only `out` is supported downstream.
  t.raw("torch.ops.aten.native_layer_norm.default", [](Pt2Importer& m, const Pt2Node& n) {
    m.bind(n, 0, m.emit("layer_norm", {m.operand(n, "input"), m.operand(n, "weight"), m.operand(n, "bias")},
                        {{"normalized_shape", m.ints_arg(n, "normalized_shape")}, {"eps", m.float_arg(n, "eps")}}));
  });
  // Batch norm. With running statistics at eval: the catalog's batch_norm. PyTorch normalizes with the batch's own
  // statistics in training mode (nn.BatchNorm without running statistics passes training=True): composite_ops.h.
  // In training mode with running statistics it also updates them in place, which would change the model's
  // weights between calls: refused, as the other in-place updates of weights are.
  auto running_stats = [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("batch_norm", {m.operand(n, "input"), m.operand(n, "weight"), m.operand(n, "bias"), m.operand(n, "running_mean"),
                                 m.operand(n, "running_var")},
                  {{"eps", m.float_arg(n, "eps")}});
  };
  auto batch_stats = [](Pt2Importer& m, const Pt2Node& n) {
    return composite::batch_norm_batch_stats(m, m.tensor(n, "input"), m.operand(n, "weight"), m.operand(n, "bias"),
                                             m.float_arg(n, "eps", 1e-5), [&](const std::string& why) { m.fail(n, why); });
  };
  auto bind_batch_stats = [batch_stats](Pt2Importer& m, const Pt2Node& n) {  // (out, save_mean, save_invstd)
    const composite::BatchStatsNorm r = batch_stats(m, n);
    m.bind(n, 0, r.out);
    m.bind(n, 1, r.mean);
    m.bind(n, 2, r.invstd);
  };
  const std::string running_stats_refusal =
      "in training mode, which updates the running statistics in place; thunderc compiles programs whose weights "
      "stay unchanged (export the model in eval mode, or build the batch norm with track_running_stats=False)";
  t.def("batch_norm", {"default"}, [running_stats, batch_stats, running_stats_refusal](Pt2Importer& m, const Pt2Node& n) {
    const bool stats = m.has(n, "running_mean") && m.has(n, "running_var"), training = m.bool_arg(n, "training", false);
    if (stats && !training) return running_stats(m, n);
    if (stats) m.fail(n, "is batch_norm " + running_stats_refusal);
    if (!training) m.fail(n, "needs running statistics in eval mode (training=False), as PyTorch does");
    return batch_stats(m, n).out;
  });
  // (out, save_mean, save_rstd): element 0 is the result; the others are empty at inference.
  t.raw("torch.ops.aten._native_batch_norm_legit_no_training.default",
        [running_stats](Pt2Importer& m, const Pt2Node& n) { m.bind(n, 0, running_stats(m, n)); });
  t.raw("torch.ops.aten._native_batch_norm_legit.no_stats", [bind_batch_stats](Pt2Importer& m, const Pt2Node& n) {
    if (!m.bool_arg(n, "training")) m.fail(n, "without running statistics needs training=True");
    bind_batch_stats(m, n);
  });
  t.raw("torch.ops.aten._native_batch_norm_legit.default",
        [running_stats, bind_batch_stats, running_stats_refusal](Pt2Importer& m, const Pt2Node& n) {
          if (!m.bool_arg(n, "training")) return m.bind(n, 0, running_stats(m, n));
          for (const char* stat : {"running_mean", "running_var"})
            if (m.is_weight_or_input(n, stat) || m.read_later(n, stat)) m.fail(n, "is batch norm " + running_stats_refusal);
          bind_batch_stats(m, n);
        });
}

void shapes(Table& t) {
  auto view = [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    IntList shape = m.ints_arg(n, m.has(n, "size") ? "size" : "shape");
    return m.emit("reshape", {Operand::tensor(x)}, {{"shape", shape}});
  };
  t.def("view", {"default"}, view);
  t.def("reshape", {"default"}, view);
  t.def("_unsafe_view", {"default"}, view);
  t.def("flatten", {"using_ints"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    Shape s = m.type(x).shape;
    if (s.empty()) return reshape(m, x, {1});
    std::int64_t a = wrap(m, n, m.int_arg(n, "start_dim", 0), s.size()), b = wrap(m, n, m.int_arg(n, "end_dim", -1), s.size());
    if (a > b) m.fail(n, "start_dim must not come after end_dim");
    Shape out(s.begin(), s.begin() + a);
    std::int64_t prod = 1;
    for (std::int64_t i = a; i <= b; ++i) prod *= s[i];
    out.push_back(prod);
    out.insert(out.end(), s.begin() + b + 1, s.end());
    return reshape(m, x, out);
  });
  // arange(start, end, step): a constant (run_decompositions() writes select_scatter-like updates with it).
  t.def("arange", {"default", "start", "start_step"}, [](Pt2Importer& m, const Pt2Node& n) {
    const bool floating = (m.has(n, "start") && m.arg_is_float(n, "start")) || m.arg_is_float(n, "end") ||
                          (m.has(n, "step") && m.arg_is_float(n, "step"));
    const double start = m.float_arg(n, "start", 0.0), end = m.float_arg(n, "end"), step = m.float_arg(n, "step", 1.0);
    if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
      m.fail(n, "needs finite bounds and a non-zero step");
    const double count = std::ceil((end - start) / step);
    if (count > double(1 << 24)) m.fail(n, "would make " + std::to_string(count) + " elements; at most 2^24 are supported");
    const auto size = static_cast<std::int64_t>(std::max(count, 0.0));
    const DType dt = m.dtype_arg(n, "dtype").value_or(floating ? DType::Float32 : DType::Int64);
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(static_cast<std::size_t>(size) * dtype_size(dt));
    for (std::int64_t i = 0; i < size; ++i) {
      const double v = start + static_cast<double>(i) * step;
      unsigned char* dst = data->bytes.data() + static_cast<std::size_t>(i) * dtype_size(dt);
      if (dt == DType::Int64) { auto x = static_cast<std::int64_t>(v); std::memcpy(dst, &x, 8); }
      else if (dt == DType::Int32) { auto x = static_cast<std::int32_t>(v); std::memcpy(dst, &x, 4); }
      else if (dt == DType::Float32) { auto x = static_cast<float>(v); std::memcpy(dst, &x, 4); }
      else if (dt == DType::Float64) std::memcpy(dst, &v, 8);
      else m.fail(n, std::string("dtype ") + dtype_name(dt) + " is not supported for arange");
    }
    return m.constant("arange", TensorType{dt, {size}, m.device()}, std::move(data));
  });
  t.def("repeat", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("repeat", {Operand::tensor(m.tensor(n, "self"))}, {{"repeats", m.ints_arg(n, "repeats")}});
  });
  t.def("constant_pad_nd", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("constant_pad_nd", {Operand::tensor(m.tensor(n, m.has(n, "self") ? "self" : "input"))},
                  {{"pad", m.ints_arg(n, "pad")}, {"value", m.float_arg(n, "value", 0.0)}});
  });
  // F.pad before decompositions: pad(self, pad, mode='constant', value=None).
  t.def("pad", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    const std::string mode = m.string_arg(n, "mode", "constant");
    ValueId x = m.tensor(n, "self");
    if (mode == "reflect" || mode == "replicate")
      return m.emit("pad", {Operand::tensor(x)}, {{"pad", m.ints_arg(n, "pad")}, {"mode", mode}});
    if (mode != "constant") m.fail(n, "pad mode '" + mode + "' is not supported yet; constant, reflect and replicate are");
    return m.emit("constant_pad_nd", {Operand::tensor(x)}, {{"pad", m.ints_arg(n, "pad")}, {"value", m.float_arg(n, "value", 0.0)}});
  });
  // An assertion the export recorded about a tensor's dtype: checked against the import; it has no value.
  t.raw("torch.ops.aten._assert_tensor_metadata.default", [](Pt2Importer& m, const Pt2Node& n) {
    const TensorType& type = m.type(m.tensor(n, "a"));
    if (auto dt = m.dtype_arg(n, "dtype"); dt && *dt != type.dtype)
      m.fail(n, std::string("asserts dtype ") + dtype_name(*dt) + ", the tensor is " + dtype_name(type.dtype));
  });
  // Tensors of one value (full, zeros_like, empty, fill, scalar_tensor, ...): a 0-dim constant broadcast to the
  // shape, so that a symbolic shape stays symbolic and no bytes but one element are embedded. empty's contents are
  // unspecified; zeros are as good as any.
  auto filled = [](Pt2Importer& m, const Pt2Node& n, double value, DType dt, const Shape& shape) {
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(dtype_size(dt));
    if (!scalar_to_bytes(value, dt, data->bytes.data()))
      m.fail(n, "fill value " + std::to_string(value) + " does not fit dtype " + dtype_name(dt));
    ValueId v = m.constant("fill", TensorType{dt, {}, m.device()}, std::move(data));
    if (shape.empty()) return v;
    v = m.emit("reshape", {Operand::tensor(v)}, {{"shape", IntList(shape.size(), 1)}});
    return m.emit("expand", {Operand::tensor(v)}, {{"shape", IntList(shape.begin(), shape.end())}});
  };
  // The dtype PyTorch gives a tensor filled with this number when none is named: bool, int64 or float32.
  auto number_dtype = [](Pt2Importer& m, const Pt2Node& n, const std::string& arg) {
    const Pt2Arg& a = m.need(n, arg);
    return a.kind == Pt2Arg::Kind::Bool ? DType::Bool : a.kind == Pt2Arg::Kind::Float ? DType::Float32 : DType::Int64;
  };
  t.def("full", {"default"}, [filled, number_dtype](Pt2Importer& m, const Pt2Node& n) {
    const DType dt = m.dtype_arg(n, "dtype").value_or(number_dtype(m, n, "fill_value"));
    return filled(m, n, m.float_arg(n, "fill_value"), dt, m.ints_arg(n, "size"));
  });
  // index_fill.int_Scalar(self, dim, index, value) and .int_Tensor (value a 0-dim tensor): index_put with the
  // index at dim, the value broadcast.
  t.def("index_fill", {"int_Scalar", "int_Tensor"}, [filled](Pt2Importer& m, const Pt2Node& n) {
    const ValueId self = m.tensor(n, "self");
    const TensorType& st = m.type(self);
    const std::int64_t rank = static_cast<std::int64_t>(std::max<std::size_t>(st.rank(), 1));
    std::int64_t dim = m.int_arg(n, "dim");
    if (dim < -rank || dim >= rank) m.fail(n, "dim " + std::to_string(dim) + " is out of range for " + shape_str(st.shape));
    if (dim < 0) dim += rank;
    const ValueId value = m.need(n, "value").kind == Pt2Arg::Kind::Tensor ? m.tensor(n, "value")
                                                                           : filled(m, n, m.float_arg(n, "value"), st.dtype, {});
    std::vector<std::optional<ValueId>> indices(static_cast<std::size_t>(dim), std::nullopt);
    indices.push_back(m.tensor(n, "index"));
    return emit_index_put(m, self, value, indices, false, [&](const std::string& why) { m.fail(n, why); });
  });
  t.def("scalar_tensor", {"default"}, [filled](Pt2Importer& m, const Pt2Node& n) {
    return filled(m, n, m.float_arg(n, "s"), m.dtype_arg(n, "dtype").value_or(DType::Float32), {});
  });
  for (const char* name : {"zeros", "ones", "empty"}) {
    const double value = std::string(name) == "ones" ? 1.0 : 0.0;
    t.def(name, {"default", "memory_format"}, [filled, value](Pt2Importer& m, const Pt2Node& n) {
      return filled(m, n, value, m.dtype_arg(n, "dtype").value_or(DType::Float32), m.ints_arg(n, "size"));
    });
  }
  t.def("empty_strided", {"default"}, [filled](Pt2Importer& m, const Pt2Node& n) {
    return filled(m, n, 0.0, m.dtype_arg(n, "dtype").value_or(DType::Float32), m.ints_arg(n, "size"));
  });
  for (const char* name : {"zeros_like", "ones_like", "empty_like", "full_like"}) {
    const std::string base = name;
    t.def(name, {"default"}, [filled, base](Pt2Importer& m, const Pt2Node& n) {
      const TensorType like = m.type(m.tensor(n, "self"));
      const double value = base == "full_like" ? m.float_arg(n, "fill_value") : base == "ones_like" ? 1.0 : 0.0;
      return filled(m, n, value, m.dtype_arg(n, "dtype").value_or(like.dtype), like.shape);
    });
  }
  t.def("fill", {"Scalar"}, [filled](Pt2Importer& m, const Pt2Node& n) {
    const TensorType like = m.type(m.tensor(n, "self"));
    return filled(m, n, m.float_arg(n, "value"), like.dtype, like.shape);
  });
  for (const char* name : {"new_zeros", "new_ones", "new_empty", "new_full"}) {
    const std::string base = name;
    t.def(name, {"default"}, [filled, base](Pt2Importer& m, const Pt2Node& n) {
      const TensorType like = m.type(m.tensor(n, "self"));
      const double value = base == "new_full" ? m.float_arg(n, "fill_value") : base == "new_ones" ? 1.0 : 0.0;
      return filled(m, n, value, m.dtype_arg(n, "dtype").value_or(like.dtype), m.ints_arg(n, "size"));
    });
  }
  // copy(self, src): src converted to self's dtype and broadcast to its shape (a functional copy_).
  t.def("copy", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    const TensorType self = m.type(m.tensor(n, "self"));
    ValueId src = m.tensor(n, "src");
    if (m.type(src).dtype != self.dtype) src = m.emit("to_dtype", {Operand::tensor(src)}, {{"dtype", self.dtype}});
    if (m.type(src).shape != self.shape) src = m.emit("expand", {Operand::tensor(src)}, {{"shape", IntList(self.shape.begin(), self.shape.end())}});
    return src;
  });
  // clamp(self, min, max) with number bounds (either may be None); clamp_min / clamp_max.
  t.def("clamp", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    auto bound = [&](const char* arg) { return m.has(n, arg) ? AttrValue(m.float_arg(n, arg)) : AttrValue(None{}); };
    return m.emit("clamp", {Operand::tensor(m.tensor(n, "self"))}, {{"min", bound("min")}, {"max", bound("max")}});
  });
  t.def("clamp_min", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("clamp", {Operand::tensor(m.tensor(n, "self"))}, {{"min", m.float_arg(n, "min")}, {"max", None{}}});
  });
  t.def("clamp_max", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("clamp", {Operand::tensor(m.tensor(n, "self"))}, {{"min", None{}}, {"max", m.float_arg(n, "max")}});
  });
  // clamp(self, min, max) with tensor bounds: maximum, then minimum (NaN in any of them propagates, as ATen).
  t.def("clamp", {"Tensor"}, [](Pt2Importer& m, const Pt2Node& n) {
    Operand x = Operand::tensor(m.tensor(n, "self"));
    if (m.has(n, "min")) x = Operand::tensor(m.emit("maximum", {x, m.operand(n, "min")}));
    if (m.has(n, "max")) x = Operand::tensor(m.emit("minimum", {x, m.operand(n, "max")}));
    if (!m.has(n, "min") && !m.has(n, "max")) m.fail(n, "needs at least one of min and max");
    return x.value;
  });
  for (const char* kind : {"reflection", "replication"}) {
    const std::string mode = std::string(kind) == "reflection" ? "reflect" : "replicate";
    for (const char* d : {"1d", "2d", "3d"})
      t.def(std::string(kind) + "_pad" + d, {"default"}, [mode](Pt2Importer& m, const Pt2Node& n) {
        return m.emit("pad", {Operand::tensor(m.tensor(n, "self"))}, {{"pad", m.ints_arg(n, "padding")}, {"mode", mode}});
      });
  }
  // upsample_nearest2d.vec(input, output_size?, scale_factors?), .default(self, output_size, scales_h?,
  // scales_w?), and upsample_bilinear2d's with align_corners after output_size: the output size (given, or the
  // input's times the scale factors, rounded down) and the scales (which ATen's source index uses).
  for (const char* name : {"upsample_nearest2d", "upsample_bilinear2d"}) {
    const std::string op_name = name;
    t.def(name, {"vec", "default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      const bool vec = m.has(n, "input");
      ValueId x = m.tensor(n, vec ? "input" : "self");
      const Shape& s = m.type(x).shape;
      if (s.size() != 4) m.fail(n, "expects a 4-D input, got " + shape_str(s));
      AttrValue sh = None{}, sw = None{};
      IntList size;
      if (vec && m.has(n, "scale_factors")) {
        const Pt2Arg& f = m.need(n, "scale_factors");
        if (f.floats.size() != 2) m.fail(n, "needs two scale factors");
        sh = f.floats[0], sw = f.floats[1];
        if (!m.has(n, "output_size"))
          size = {static_cast<std::int64_t>(std::floor(static_cast<double>(s[2]) * f.floats[0])),
                  static_cast<std::int64_t>(std::floor(static_cast<double>(s[3]) * f.floats[1]))};
      } else if (!vec) {
        if (m.has(n, "scales_h")) sh = m.float_arg(n, "scales_h");
        if (m.has(n, "scales_w")) sw = m.float_arg(n, "scales_w");
      }
      if (m.has(n, "output_size")) size = m.ints_arg(n, "output_size");
      if (size.size() != 2) m.fail(n, "needs an output size or scale factors");
      Attrs attrs = {{"output_size", size}, {"scale_h", sh}, {"scale_w", sw}};
      if (op_name == "upsample_bilinear2d") attrs.set("align_corners", m.bool_arg(n, "align_corners"));
      return m.emit(op_name, {Operand::tensor(x)}, attrs);
    });
  }
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd): out; group_norm too.
  t.raw("torch.ops.aten.native_group_norm.default", [](Pt2Importer& m, const Pt2Node& n) {
    m.bind(n, 0, m.emit("group_norm", {Operand::tensor(m.tensor(n, "input")), m.operand(n, "weight"), m.operand(n, "bias")},
                        {{"num_groups", m.int_arg(n, "group")}, {"eps", m.float_arg(n, "eps")}}));
  });
  t.def("group_norm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("group_norm", {Operand::tensor(m.tensor(n, "input")), m.operand(n, "weight"), m.operand(n, "bias")},
                  {{"num_groups", m.int_arg(n, "num_groups")}, {"eps", m.float_arg(n, "eps", 1e-5)}});
  });
  // native_dropout(input, p, train) -> (out, mask): at inference the input and an all-true mask.
  t.raw("torch.ops.aten.native_dropout.default", [filled](Pt2Importer& m, const Pt2Node& n) {
    if (m.bool_arg(n, "train", false) && m.float_arg(n, "p", 0.0) > 0)
      m.fail(n, "is dropout in training mode; export the model in eval mode");
    ValueId x = m.tensor(n, "input");
    m.bind(n, 0, x);
    m.bind(n, 1, filled(m, n, 1.0, DType::Bool, m.type(x).shape));
  });
  // slice_scatter / select_scatter: self with a slice (or a select) replaced by src.
  t.def("slice_scatter", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    const std::int64_t dim = wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank()), size = m.type(x).shape[dim];
    const std::int64_t step = m.int_arg(n, "step", 1);
    if (step < 1) m.fail(n, "slice step must be positive, got " + std::to_string(step));
    auto norm = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
      std::int64_t b = v.value_or(dflt);
      if (b < 0) b += size;
      return std::clamp<std::int64_t>(b, 0, size);
    };
    const std::int64_t start = norm(m.opt_int_arg(n, "start"), 0), end = std::max(norm(m.opt_int_arg(n, "end"), size), start);
    return m.emit("slice_scatter", {Operand::tensor(x), Operand::tensor(m.tensor(n, "src"))},
                  {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
  });
  t.def("select_scatter", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    const std::int64_t dim = wrap(m, n, m.int_arg(n, "dim"), m.type(x).rank()), size = m.type(x).shape[dim];
    const std::int64_t index = m.int_arg(n, "index");
    if (index < -size || index >= size) m.fail(n, "index " + std::to_string(index) + " is out of range");
    return m.emit("select_scatter", {Operand::tensor(x), Operand::tensor(m.tensor(n, "src"))},
                  {{"dim", dim}, {"index", index < 0 ? index + size : index}});
  });
  t.def("unflatten", {"int"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    const Shape s = m.type(x).shape;
    if (s.empty()) m.fail(n, "cannot unflatten a 0-dim tensor");
    const std::int64_t d = wrap(m, n, m.int_arg(n, "dim"), s.size());
    IntList sizes = m.ints_arg(n, "sizes");
    std::int64_t known = 1, infer = -1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && infer < 0) infer = static_cast<std::int64_t>(i);
      else if (sizes[i] < 0) m.fail(n, "sizes " + shape_str(sizes) + " may hold one -1 and no other negative size");
      else known *= sizes[i];
    }
    if (infer >= 0 && known != 0 && s[d] % known == 0) sizes[infer] = s[d] / known;
    std::int64_t prod = 1;
    for (std::int64_t v : sizes) prod *= v;
    if (sizes.empty() || prod != s[d] || (infer >= 0 && known == 0))
      m.fail(n, "sizes " + shape_str(m.ints_arg(n, "sizes")) + " do not unflatten dimension " + std::to_string(d) +
                    " of size " + std::to_string(s[d]));
    Shape out(s.begin(), s.begin() + d);
    out.insert(out.end(), sizes.begin(), sizes.end());
    out.insert(out.end(), s.begin() + d + 1, s.end());
    return reshape(m, x, out);
  });
  t.def("unsqueeze", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    Shape s = m.type(x).shape;
    s.insert(s.begin() + wrap(m, n, m.int_arg(n, "dim"), s.size() + 1), 1);
    return reshape(m, x, s);
  });
  t.def("squeeze", {"default", "dim", "dims"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    Shape s = m.type(x).shape;
    std::vector<bool> drop(s.size(), !m.has(n, "dim"));
    if (m.has(n, "dim"))
      for (std::int64_t d : m.ints_arg(n, "dim")) drop[wrap(m, n, d, s.size())] = true;
    Shape out;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!(drop[i] && s[i] == 1)) out.push_back(s[i]);
    return reshape(m, x, out);
  });
  for (const char* name : {"permute", "flip"}) {  // (self, dims)
    std::string op_name = name;
    t.def(name, {"default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      ValueId x = m.tensor(n, "self");
      IntList dims = m.ints_arg(n, "dims");
      for (auto& d : dims) d = wrap(m, n, d, m.type(x).rank());
      return m.emit(op_name, {Operand::tensor(x)}, {{"dims", dims}});
    });
  }
  t.def("transpose", {"int"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::size_t r = m.type(x).rank();
    if (r == 0) return x;
    IntList dims(r);
    for (std::size_t i = 0; i < r; ++i) dims[i] = static_cast<std::int64_t>(i);
    std::swap(dims[wrap(m, n, m.int_arg(n, "dim0"), r)], dims[wrap(m, n, m.int_arg(n, "dim1"), r)]);
    return permute(m, x, dims);
  });
  t.def("t", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    if (m.type(x).rank() > 2) m.fail(n, "t() expects a tensor of rank <= 2");
    return m.type(x).rank() == 2 ? permute(m, x, {1, 0}) : x;
  });
  t.def("expand", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("expand", {Operand::tensor(m.tensor(n, "self"))}, {{"shape", m.ints_arg(n, "size")}});
  });
  t.def("slice", {"Tensor"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::int64_t dim = wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank());
    std::int64_t step = m.int_arg(n, "step", 1);
    if (step < 1) m.fail(n, "slice step must be positive, got " + std::to_string(step));
    return slice(m, x, dim, m.opt_int_arg(n, "start"), m.opt_int_arg(n, "end"), step);
  });
  t.def("select", {"int"}, [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::int64_t dim = wrap(m, n, m.int_arg(n, "dim"), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim], index = m.int_arg(n, "index");
    if (index < -size || index >= size) m.fail(n, "index " + std::to_string(index) + " is out of range");
    return m.emit("select", {Operand::tensor(x)}, {{"dim", dim}, {"index", index < 0 ? index + size : index}});
  });
  t.raw("torch.ops.aten.split.Tensor", [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::int64_t dim = wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim], piece = m.int_arg(n, "split_size");
    if (piece <= 0) m.fail(n, "split size must be positive");
    IntList sizes;
    for (std::int64_t off = 0; off < size; off += piece) sizes.push_back(std::min(piece, size - off));
    bind_pieces(m, n, x, dim, sizes);
  });
  t.raw("torch.ops.aten.split_with_sizes.default", [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    bind_pieces(m, n, x, wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank()), m.ints_arg(n, "split_sizes"));
  });
  t.raw("torch.ops.aten.chunk.default", [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::int64_t chunks = m.int_arg(n, "chunks");
    std::int64_t dim = wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim];
    if (chunks <= 0) m.fail(n, "chunks must be positive");
    std::int64_t piece = std::max<std::int64_t>((size + chunks - 1) / chunks, 1);
    IntList sizes;
    for (std::int64_t off = 0; off < size; off += piece) sizes.push_back(std::min(piece, size - off));
    bind_pieces(m, n, x, dim, sizes);
  });
  t.raw("torch.ops.aten.unbind.int", [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    std::int64_t dim = wrap(m, n, m.int_arg(n, "dim", 0), m.type(x).rank());
    for (std::int64_t i = 0; i < m.type(x).shape[dim]; ++i)
      m.bind(n, static_cast<std::size_t>(i), m.emit("select", {Operand::tensor(x)}, {{"dim", dim}, {"index", i}}));
  });
  t.def("cat", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    std::vector<ValueId> xs = m.tensors_arg(n, "tensors");
    if (xs.empty()) m.fail(n, "needs at least one tensor");
    if (xs.size() == 1) return xs[0];
    std::vector<Operand> ins;
    for (ValueId x : xs) ins.push_back(Operand::tensor(x));
    return m.emit("cat", ins, {{"dim", wrap(m, n, m.int_arg(n, "dim", 0), m.type(xs[0]).rank())}});
  });
  // Symbolic ints: sizes of the (concrete) tensors, and Python arithmetic on them.
  t.raw("torch.ops.aten.sym_size.int", [](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    m.bind_sym(n, m.type(x).shape[wrap(m, n, m.int_arg(n, "dim"), m.type(x).rank())]);
  });
  for (const char* op : {"add", "sub", "mul", "floordiv"}) {
    std::string o = op;
    t.raw(std::string("_operator.") + op, [o](Pt2Importer& m, const Pt2Node& n) {
      if (n.inputs.size() != 2) m.fail(n, "expects two arguments");
      auto val = [&](const Pt2Arg& a) {
        if (a.kind == Pt2Arg::Kind::SymInt) return m.sym(n, a, 0);
        if (a.kind == Pt2Arg::Kind::Int) return a.ints[0];
        m.fail(n, "supports symbolic ints only, got " + a.tag);
      };
      std::int64_t a = val(n.inputs[0].arg), b = val(n.inputs[1].arg);
      if (o == "floordiv" && b == 0) m.fail(n, "divides by zero");
      std::int64_t r = o == "add" ? a + b : o == "sub" ? a - b : o == "mul" ? a * b
                                                        : (a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
      m.bind_sym(n, r);
    });
  }
  // getitem on a multi-output node (older serializations keep these nodes).
  t.raw("_operator.getitem", [](Pt2Importer& m, const Pt2Node& n) {
    if (n.inputs.size() != 2 || n.inputs[0].arg.kind != Pt2Arg::Kind::Tensors || n.inputs[1].arg.kind != Pt2Arg::Kind::Int)
      m.fail(n, "supports getitem(list of tensors, int) only");
    const auto& names = n.inputs[0].arg.names;
    std::int64_t i = n.inputs[1].arg.ints[0];
    if (i < 0) i += static_cast<std::int64_t>(names.size());
    if (i < 0 || i >= static_cast<std::int64_t>(names.size())) m.fail(n, "index out of range");
    Pt2Node one = n;
    one.inputs = {{"self", Pt2Arg{Pt2Arg::Kind::Tensor, "as_tensor", {names[i]}, {}, {}, {}}}};
    m.bind(n, 0, m.tensor(one, "self"));
  });
}

void nn(Table& t) {
  t.def("linear", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("linear", {Operand::tensor(m.tensor(n, "input")), Operand::tensor(m.tensor(n, "weight")), m.operand(n, "bias")});
  });
  t.def("matmul", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("matmul", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "other"))});
  });
  t.def("mm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("matmul", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "mat2"))});
  });
  t.def("bmm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("bmm", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "mat2"))});
  });
  t.def("addmm", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("addmm", {Operand::tensor(m.tensor(n, "self")), Operand::tensor(m.tensor(n, "mat1")), Operand::tensor(m.tensor(n, "mat2"))},
                  {{"beta", m.float_arg(n, "beta", 1.0)}, {"alpha", m.float_arg(n, "alpha", 1.0)}});
  });
  t.def("conv2d", {"default"}, [](Pt2Importer& m, const Pt2Node& n) { return conv2d(m, n, "input", true); });
  t.def("convolution", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    if (m.bool_arg(n, "transposed")) m.fail(n, "transposed convolution is not supported yet");
    return conv2d(m, n, "input", false);
  });
  // max_poolNd(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) and
  // max_poolNd_with_indices (values, indices: the values), avg_poolNd(self, kernel_size, stride=[], padding=0,
  // ceil_mode=False, count_include_pad=True, divisor_override=None); N = 2, 3. stride [] is the kernel size.
  for (const char* nd : {"2d", "3d"}) {
    const std::string max = std::string("max_pool") + nd, avg = std::string("avg_pool") + nd;
    auto window = [](Pt2Importer& m, const Pt2Node& n, Attrs attrs) {
      IntList kernel = m.ints_arg(n, "kernel_size");
      IntList stride = m.ints_arg(n, "stride", IntList{});
      attrs.set("stride", stride.empty() ? kernel : stride);
      attrs.set("kernel_size", kernel);
      attrs.set("padding", m.ints_arg(n, "padding", IntList{0}));
      attrs.set("ceil_mode", m.bool_arg(n, "ceil_mode", false));
      return attrs;
    };
    auto max_pool = [max, window](Pt2Importer& m, const Pt2Node& n) {
      return m.emit(max, {Operand::tensor(m.tensor(n, "self"))}, window(m, n, {{"dilation", m.ints_arg(n, "dilation", IntList{1})}}));
    };
    t.def(max, {"default"}, max_pool);
    t.raw("torch.ops.aten." + max + "_with_indices.default", [max_pool](Pt2Importer& m, const Pt2Node& n) { m.bind(n, 0, max_pool(m, n)); });
    t.def(avg, {"default"}, [avg, window](Pt2Importer& m, const Pt2Node& n) {
      auto div = m.opt_int_arg(n, "divisor_override");
      return m.emit(avg, {Operand::tensor(m.tensor(n, "self"))},
                    window(m, n, {{"count_include_pad", m.bool_arg(n, "count_include_pad", true)},
                                  {"divisor_override", div ? AttrValue(*div) : AttrValue(None{})}}));
    });
  }
  for (const char* name : {"adaptive_avg_pool3d", "_adaptive_avg_pool3d"}) {
    t.def(name, {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
      return m.emit("adaptive_avg_pool3d", {Operand::tensor(m.tensor(n, "self"))}, {{"output_size", m.ints_arg(n, "output_size")}});
    });
  }
  for (const char* name : {"grid_sampler_2d", "grid_sampler"}) {
    t.def(name, {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
      if (m.type(m.tensor(n, "input")).rank() != 4) m.fail(n, "only 4-D inputs (grid_sampler_2d) are supported");
      return m.emit("grid_sampler_2d", {Operand::tensor(m.tensor(n, "input")), Operand::tensor(m.tensor(n, "grid"))},
                    {{"interpolation_mode", m.int_arg(n, "interpolation_mode")}, {"padding_mode", m.int_arg(n, "padding_mode")},
                     {"align_corners", m.bool_arg(n, "align_corners")}});
    });
  }
  // _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  // include_last_offset, padding_idx=-1) and embedding_bag(.padding_idx) -> (output, offset2bag, bag_size,
  // max_indices): the output.
  for (const char* target : {"torch.ops.aten._embedding_bag.default", "torch.ops.aten.embedding_bag.default",
                             "torch.ops.aten.embedding_bag.padding_idx"}) {
    t.raw(target, [](Pt2Importer& m, const Pt2Node& n) {
      std::optional<std::int64_t> padding = m.opt_int_arg(n, "padding_idx");
      if (padding && *padding < 0) padding.reset();  // -1: none
      m.bind(n, 0, m.emit("embedding_bag", {Operand::tensor(m.tensor(n, "weight")), Operand::tensor(m.tensor(n, "indices")),
                                            m.operand(n, "offsets"), m.operand(n, "per_sample_weights")},
                          {{"mode", m.int_arg(n, "mode", 0)}, {"include_last_offset", m.bool_arg(n, "include_last_offset", false)},
                           {"padding_idx", padding ? AttrValue(*padding) : AttrValue(None{})}}));
    });
  }
  auto adaptive = [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("adaptive_avg_pool2d", {Operand::tensor(m.tensor(n, "self"))}, {{"output_size", m.ints_arg(n, "output_size")}});
  };
  t.def("adaptive_avg_pool2d", {"default"}, adaptive);
  t.def("_adaptive_avg_pool2d", {"default"}, adaptive);
  t.def("embedding", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    Attrs a;
    if (const std::int64_t pad = m.int_arg(n, "padding_idx", -1); pad >= 0) a.set("padding_idx", pad);
    if (m.bool_arg(n, "scale_grad_by_freq", false)) a.set("scale_grad_by_freq", true);
    return m.emit("embedding", {Operand::tensor(m.tensor(n, "weight")), Operand::tensor(m.tensor(n, "indices"))}, a);
  });
  t.def("scaled_dot_product_attention", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    if (m.float_arg(n, "dropout_p", 0.0) != 0.0) m.fail(n, "has dropout_p > 0 (random); pass dropout_p=0.0 at inference");
    if (m.bool_arg(n, "enable_gqa", false)) m.fail(n, "enable_gqa=True is not supported yet");
    AttrValue scale = None{};
    if (m.has(n, "scale")) scale = m.float_arg(n, "scale");
    return m.emit("scaled_dot_product_attention",
                  {Operand::tensor(m.tensor(n, "query")), Operand::tensor(m.tensor(n, "key")), Operand::tensor(m.tensor(n, "value")),
                   m.has(n, "attn_mask") ? Operand::tensor(m.tensor(n, "attn_mask")) : Operand::none()},
                  {{"is_causal", m.bool_arg(n, "is_causal", false)}, {"scale", scale}});
  });
}

// Row-major strides of a shape.
IntList contiguous_strides(const Shape& sizes) {
  IntList strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return strides;
}

// Core ATen operators without a catalog operator of their own, rewritten at import (composite_ops.h): cdist,
// pdist, as_strided, col2im (batch norm with batch statistics is with the other batch norms, in reductions());
// random tensors sampled at compile time, an out= variant and the symbolic ints of a tensor's layout.
void composites(Table& t) {
  auto failing = [](Pt2Importer& m, const Pt2Node& n) { return [&m, &n](const std::string& why) { m.fail(n, why); }; };
  auto cdist = [failing](Pt2Importer& m, const Pt2Node& n) {
    return composite::cdist(m, m.tensor(n, "x1"), m.tensor(n, "x2"), m.float_arg(n, "p", 2.0), failing(m, n));
  };
  t.def("_cdist_forward", {"default"}, cdist);
  t.def("cdist", {"default"}, cdist);
  auto pdist = [failing](Pt2Importer& m, const Pt2Node& n) {
    return composite::pdist(m, m.tensor(n, m.has(n, "self") ? "self" : "input"), m.float_arg(n, "p", 2.0), failing(m, n));
  };
  t.def("_pdist_forward", {"default"}, pdist);
  t.def("pdist", {"default"}, pdist);

  // thunderc's tensors are contiguous, so as_strided is PyTorch's only where self is too: the export's record of
  // self must be contiguous at offset 0 (and the gather stays within self's elements).
  t.def("as_strided", {"default"}, [failing](Pt2Importer& m, const Pt2Node& n) {
    ValueId x = m.tensor(n, "self");
    const Pt2TensorMeta* meta = m.recorded_meta(n, "self");
    bool contiguous = meta && meta->storage_offset == 0 && meta->strides.size() == meta->sizes.size();
    const IntList want = contiguous ? contiguous_strides(meta->sizes) : IntList{};
    for (std::size_t d = 0; contiguous && d < want.size(); ++d)  // a size-1 dim's stride is never used
      contiguous = meta->sizes[d] == 1 || meta->strides[d] == want[d];
    if (!contiguous)
      m.fail(n, "reads the storage of a tensor that is not contiguous or starts at an offset (a view); thunderc "
                "supports as_strided on contiguous tensors only");
    return composite::as_strided(m, x, m.ints_arg(n, "size"), m.ints_arg(n, "stride"), m.int_arg(n, "storage_offset", 0),
                                 failing(m, n));
  });
  t.def("col2im", {"default"}, [failing](Pt2Importer& m, const Pt2Node& n) {
    return composite::col2im(m, m.tensor(n, "self"), m.ints_arg(n, "output_size"), m.ints_arg(n, "kernel_size"),
                             m.ints_arg(n, "dilation"), m.ints_arg(n, "padding"), m.ints_arg(n, "stride"), failing(m, n));
  });

  // Random tensors: sampled once at compile time (a sharp edge, as TorchScript's are), from a counter-based
  // generator seeded by the node's position, so that compiles are deterministic. The values are not PyTorch's
  // (its generator's state is not in the export).
  // value(seed, i): element i; the seed is the node's position.
  auto sampled = [](Pt2Importer& m, const Pt2Node& n, const char* what, DType dt, const Shape& shape,
                    const std::function<double(std::uint64_t, std::uint64_t)>& value) {
    const std::uint64_t seed = 2 * m.node_index() + 1;
    m.sharp_edge(n, "random", std::string("is a random operator (") + what + "); it is sampled once at compile time "
                 "and every call of the compiled model sees the same values");
    std::int64_t count = 1;
    for (std::int64_t d : shape) {
      if (d < 0) m.fail(n, "needs non-negative sizes, got " + shape_str(shape));
      count *= d;
    }
    if (count > composite::kMaxIndexElements) m.fail(n, "would sample more than 2^24 elements at compile time");
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(static_cast<std::size_t>(count) * dtype_size(dt));
    for (std::int64_t i = 0; i < count; ++i)
      if (!scalar_to_bytes(value(seed, static_cast<std::uint64_t>(i)), dt, data->bytes.data() + i * dtype_size(dt)))
        m.fail(n, std::string("cannot sample into dtype ") + dtype_name(dt));
    return m.constant(what, TensorType{dt, shape, m.device()}, std::move(data));
  };
  // Element i of stream `seed`: splitmix64 of (seed, i), 53 bits as a double in [0, 1).
  auto uniform = [](std::uint64_t seed, std::uint64_t i) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  auto float_dtype = [](Pt2Importer& m, const Pt2Node& n) {
    const DType dt = m.dtype_arg(n, "dtype").value_or(DType::Float32);
    if (!is_floating(dt)) m.fail(n, std::string("samples floating-point dtypes only, got ") + dtype_name(dt));
    return dt;
  };
  auto rand = [sampled, uniform, float_dtype](Pt2Importer& m, const Pt2Node& n, const Shape& shape) {
    return sampled(m, n, "rand", float_dtype(m, n), shape, [&](std::uint64_t seed, std::uint64_t i) {
      return std::min(uniform(seed, i), 1.0 - 0x1.0p-24);  // [0, 1) also once rounded to float32
    });
  };
  auto randn = [sampled, uniform, float_dtype](Pt2Importer& m, const Pt2Node& n, const Shape& shape) {
    return sampled(m, n, "randn", float_dtype(m, n), shape, [&](std::uint64_t seed, std::uint64_t i) {  // Box-Muller
      const double u1 = 1.0 - uniform(seed, 2 * i), u2 = uniform(seed, 2 * i + 1);
      return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    });
  };
  t.def("rand", {"default"}, [rand](Pt2Importer& m, const Pt2Node& n) { return rand(m, n, m.ints_arg(n, "size")); });
  t.def("randn", {"default"}, [randn](Pt2Importer& m, const Pt2Node& n) { return randn(m, n, m.ints_arg(n, "size")); });
  t.def("rand_like", {"default"}, [rand](Pt2Importer& m, const Pt2Node& n) { return rand(m, n, m.type(m.tensor(n, "self")).shape); });
  t.def("randn_like", {"default"}, [randn](Pt2Importer& m, const Pt2Node& n) { return randn(m, n, m.type(m.tensor(n, "self")).shape); });
  // randperm(n): a permutation of 0..n-1 (Fisher-Yates on the same generator).
  t.def("randperm", {"default"}, [sampled, uniform](Pt2Importer& m, const Pt2Node& n) {
    const std::int64_t count = m.int_arg(n, "n");
    if (count < 0 || count > composite::kMaxIndexElements) m.fail(n, "needs 0 <= n <= 2^24, got " + std::to_string(count));
    const DType dt = m.dtype_arg(n, "dtype").value_or(DType::Int64);
    std::vector<std::int64_t> perm(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) perm[static_cast<std::size_t>(i)] = i;
    const std::uint64_t seed = 2 * m.node_index() + 1;  // as sampled() gives the others
    for (std::int64_t i = count - 1; i > 0; --i) {
      const auto j = static_cast<std::int64_t>(uniform(seed, static_cast<std::uint64_t>(i)) * static_cast<double>(i + 1));
      std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(std::min(j, i))]);
    }
    return sampled(m, n, "randperm", dt, {count}, [&](std::uint64_t, std::uint64_t i) { return static_cast<double>(perm[i]); });
  });

  // atan2(self, other, out=): the result, which then replaces `out`.
  t.raw("torch.ops.aten.atan2.out", [](Pt2Importer& m, const Pt2Node& n) {
    m.bind(n, 0, m.emit("atan2", {m.operand(n, "self"), m.operand(n, "other")}));
    m.bind_inplace(n, "out");
  });

  // Symbolic ints of a tensor's layout. thunderc's tensors are contiguous; a stride or offset is PyTorch's only
  // where the export recorded the tensor so.
  t.raw("torch.ops.aten.sym_numel.default", [](Pt2Importer& m, const Pt2Node& n) {
    m.bind_sym(n, m.type(m.tensor(n, "self")).numel());
  });
  t.raw("torch.ops.aten.sym_stride.int", [](Pt2Importer& m, const Pt2Node& n) {
    const TensorType& xt = m.type(m.tensor(n, "self"));
    const std::int64_t dim = wrap(m, n, m.int_arg(n, "dim"), xt.rank());
    const Pt2TensorMeta* meta = m.recorded_meta(n, "self");
    const auto d = static_cast<std::size_t>(dim);
    if (!meta || meta->strides.size() != xt.rank() || meta->sizes.size() != xt.rank() ||
        meta->strides[d] != contiguous_strides(meta->sizes)[d])
      m.fail(n, "asks the stride of a tensor the export recorded as not contiguous (a view); thunderc's tensors are "
                "contiguous");
    m.bind_sym(n, contiguous_strides(xt.shape)[d]);
  });
  t.raw("torch.ops.aten.sym_storage_offset.default", [](Pt2Importer& m, const Pt2Node& n) {
    const Pt2TensorMeta* meta = m.recorded_meta(n, "self");
    if (!meta || meta->storage_offset != 0)
      m.fail(n, "asks the storage offset of a view; thunderc's tensors start at their storage's first element");
    m.bind_sym(n, 0);
  });
}

// ATen's FFT primitives (torch.fft's functions and stft export as these) and the complex views; complex
// arithmetic on their results is lowered by emit (core/frontend/complex_ops.h).
void spectral(Table& t) {
  t.def("_fft_r2c", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("fft_r2c", {Operand::tensor(m.tensor(n, "self"))},
                  {{"dim", m.ints_arg(n, "dim")}, {"normalization", m.int_arg(n, "normalization")}, {"onesided", m.bool_arg(n, "onesided")}});
  });
  t.def("_fft_c2r", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("fft_c2r", {Operand::tensor(m.tensor(n, "self"))},
                  {{"dim", m.ints_arg(n, "dim")}, {"normalization", m.int_arg(n, "normalization")},
                   {"last_dim_size", m.int_arg(n, "last_dim_size")}});
  });
  t.def("_fft_c2c", {"default"}, [](Pt2Importer& m, const Pt2Node& n) {
    return m.emit("fft_c2c", {Operand::tensor(m.tensor(n, "self"))},
                  {{"dim", m.ints_arg(n, "dim")}, {"normalization", m.int_arg(n, "normalization")}, {"forward", m.bool_arg(n, "forward")}});
  });
  for (const char* name : {"view_as_real", "view_as_complex"}) {
    std::string op_name = name;
    t.def(name, {"default"}, [op_name](Pt2Importer& m, const Pt2Node& n) {
      return m.emit(op_name, {Operand::tensor(m.tensor(n, "self"))});
    });
  }
  // torch.fft's functions as an export without run_decompositions() writes them (core/frontend/fft_ops.h).
  auto failing = [](Pt2Importer& m, const Pt2Node& n) { return [&m, &n](const std::string& why) { m.fail(n, why); }; };
  for (const fft_ops::Function& f : fft_ops::functions()) {
    t.def(f.name, {"default"}, [f, failing](Pt2Importer& m, const Pt2Node& n) {
      fft_ops::Args a;
      const char* size_arg = f.many_dims ? "s" : "n";
      if (m.has(n, size_arg)) a.sizes = f.many_dims ? m.ints_arg(n, "s") : IntList{m.int_arg(n, "n")};
      if (m.has(n, "dim")) a.dims = f.many_dims ? m.ints_arg(n, "dim") : IntList{m.int_arg(n, "dim")};
      a.norm = m.string_arg(n, "norm", "backward");
      return fft_ops::transform(m, f, m.tensor(n, "self"), a, failing(m, n));
    });
  }
  t.def("real", {"default"}, [failing](Pt2Importer& m, const Pt2Node& n) { return fft_ops::part(m, m.tensor(n, "self"), 0, failing(m, n)); });
  t.def("imag", {"default"}, [failing](Pt2Importer& m, const Pt2Node& n) { return fft_ops::part(m, m.tensor(n, "self"), 1, failing(m, n)); });
  t.def("angle", {"default"}, [failing](Pt2Importer& m, const Pt2Node& n) { return fft_ops::angle(m, m.tensor(n, "self"), failing(m, n)); });
  for (const char* name : {"conj", "conj_physical", "_conj", "_conj_physical"})
    t.def(name, {"default"}, [](Pt2Importer& m, const Pt2Node& n) { return fft_ops::conj(m, m.tensor(n, "self")); });
  for (const char* name : {"resolve_conj", "resolve_neg"})
    t.def(name, {"default"}, [](Pt2Importer& m, const Pt2Node& n) { return m.tensor(n, "self"); });
}

const std::map<std::string, Pt2Handler>& pt2_handlers() {
  static const std::map<std::string, Pt2Handler> handlers = [] {
    Table t;
    elementwise(t);
    reductions(t);
    shapes(t);
    nn(t);
    composites(t);
    spectral(t);
    // In-place variants of the elementwise ops (relu_, add_.Tensor, hardtanh_, ...): the same result, which then
    // replaces `self`.
    static const std::set<std::string> inplace = [] {
      std::set<std::string> names = {"gelu", "hardtanh", "leaky_relu", "elu", "round", "add", "sub", "div", "pow",
                                     "masked_fill", "clamp", "clamp_min", "clamp_max", "bitwise_and", "bitwise_or",
                                     "bitwise_xor", "index_put", "index_fill", "scatter", "scatter_add", "scatter_reduce",
                                     "masked_scatter"};
      names.insert(std::begin(kSameNameUnaryOps), std::end(kSameNameUnaryOps));
      names.insert(std::begin(kSameNameBinaryOps), std::end(kSameNameBinaryOps));
      names.erase("maximum");  // ATen has no maximum_ / minimum_
      names.erase("minimum");
      return names;
    }();
    const std::string prefix = "torch.ops.aten.";
    std::map<std::string, Pt2Handler> variants;
    for (const auto& [target, handler] : t.handlers) {
      if (target.rfind(prefix, 0) != 0) continue;
      const std::string rest = target.substr(prefix.size());
      const std::size_t dot = rest.find('.');
      if (!inplace.count(rest.substr(0, dot))) continue;
      variants[prefix + rest.substr(0, dot) + "_" + rest.substr(dot)] = [h = handler](Pt2Importer& m, const Pt2Node& n) {
        h(m, n);
        m.bind_inplace(n);
      };
    }
    t.handlers.insert(variants.begin(), variants.end());
    return t.handlers;
  }();
  return handlers;
}

}  // namespace

std::vector<std::string> pt2_imported_targets() {
  std::vector<std::string> names;
  for (const auto& [target, handler] : pt2_handlers()) names.push_back(target);
  return names;
}

Trace Pt2Model::import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges, bool) const {
  Trace trace;
  trace.constructed_by = "pt2-import";
  Device device = input_types.empty() ? Device::cpu() : input_types[0].device;
  Pt2Importer importer(*this, trace, device);
  importer.run(input_types, sharp_edges);
  return trace;
}

}  // namespace thunderc
