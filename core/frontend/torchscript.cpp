// The TorchScript frontend: load, freeze, inline, then walk the graph into a Trace (see torchscript.h).
#include "core/frontend/torchscript.h"

#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/version.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/frontend/complex_ops.h"
#include "core/frontend/torchscript_importer.h"
#include "core/ir/error.h"

namespace thunderc {

using torch::jit::Node;
using JitValue = torch::jit::Value;

std::string libtorch_version() { return TORCH_VERSION; }

std::vector<std::string> torchscript_imported_kinds() {
  std::vector<std::string> kinds;
  for (const auto& [kind, handler] : ts::op_handlers()) kinds.push_back(kind);
  return kinds;
}

namespace ts {

DType dtype_from_torch(c10::ScalarType t, const std::string& context) {
  switch (t) {
    case c10::ScalarType::Bool: return DType::Bool;
    case c10::ScalarType::Byte: return DType::UInt8;
    case c10::ScalarType::Char: return DType::Int8;
    case c10::ScalarType::Short: return DType::Int16;
    case c10::ScalarType::Int: return DType::Int32;
    case c10::ScalarType::Long: return DType::Int64;
    case c10::ScalarType::Half: return DType::Float16;
    case c10::ScalarType::BFloat16: return DType::BFloat16;
    case c10::ScalarType::Float: return DType::Float32;
    case c10::ScalarType::Double: return DType::Float64;
    case c10::ScalarType::ComplexFloat: return DType::Complex64;
    case c10::ScalarType::ComplexDouble: return DType::Complex128;
    default: user_error(context, ": dtype ", c10::toString(t), " is not supported by thunderc");
  }
}

c10::ScalarType dtype_to_torch(DType t) {
  switch (t) {
    case DType::Bool: return c10::ScalarType::Bool;
    case DType::UInt8: return c10::ScalarType::Byte;
    case DType::Int8: return c10::ScalarType::Char;
    case DType::Int16: return c10::ScalarType::Short;
    case DType::Int32: return c10::ScalarType::Int;
    case DType::Int64: return c10::ScalarType::Long;
    case DType::Float16: return c10::ScalarType::Half;
    case DType::BFloat16: return c10::ScalarType::BFloat16;
    case DType::Float32: return c10::ScalarType::Float;
    case DType::Float64: return c10::ScalarType::Double;
    case DType::Complex64: return c10::ScalarType::ComplexFloat;
    case DType::Complex128: return c10::ScalarType::ComplexDouble;
  }
  internal_error("unknown dtype");
}

namespace {

// aten ops whose output may share memory with input 0; in-place updates must then reach the other aliases.
bool is_view_kind(const std::string& kind) {
  static const std::unordered_set<std::string> views = {
      "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::flatten", "aten::unflatten", "aten::unsqueeze",
      "aten::squeeze", "aten::permute", "aten::transpose", "aten::t", "aten::expand", "aten::expand_as",
      "aten::slice", "aten::select", "aten::narrow", "aten::split", "aten::split_with_sizes", "aten::chunk",
      "aten::unbind", "aten::contiguous", "aten::detach", "aten::dropout", "aten::feature_dropout",
      "aten::alpha_dropout", "aten::alias", "aten::to", "aten::type_as", "aten::view_as", "aten::reshape_as",
      "prim::ListUnpack", "aten::__getitem__", "prim::unchecked_cast"};
  return views.count(kind) > 0;
}

// Nodes with side effects that do not change the result.
bool is_ignorable_effect(const std::string& kind) {
  return kind == "prim::Print" || kind == "aten::warn" || kind == "prim::AutogradAllZero" || kind == "aten::_assert_async";
}

[[noreturn]] void refuse_load(const std::string& path, const std::string& msg) {
  // TorchScript saved by a newer torch names operators this LibTorch lacks (aten::rms_norm before 2.4, ...).
  std::string hint;
  if (msg.find("Unknown builtin op") != std::string::npos)
    hint = std::string("\n  note: thunderc is built with LibTorch ") + TORCH_VERSION +
           ", which lacks an operator the module uses. Export the model with torch.export (.pt2, read without "
           "LibTorch), or build thunderc against a newer LibTorch: bash scripts/build.sh --libtorch-venv VENV";
  user_error(path, ": cannot load it as a TorchScript module: ", msg.substr(0, 600), hint);
}

}  // namespace

std::string Importer::location(const Node* n) const {
  torch::jit::SourceRange range = n->sourceRange();
  if (auto original = range.findSourceRangeThatGenerated()) range = *original;
  if (auto flc = range.file_line_col()) {
    const std::string& file = std::get<0>(*flc);
    if (!file.empty()) return file + ":" + std::to_string(std::get<1>(*flc));
  }
  return "";
}

void Importer::fail(const Node* n, const std::string& why) const {
  std::string loc = location(n);
  user_error(model_path_, ": ", n->kind().toQualString(), loc.empty() ? "" : " at " + loc, ": ", why);
}

void Importer::sharp_edge(const Node* n, const std::string& kind, const std::string& message) {
  edges_.push_back({kind, message, n ? location(n) : ""});
}


const JVal& Importer::in(const Node* n, std::size_t i) const {
  auto it = env_.find(n->input(i));
  THUNDERC_CHECK(it != env_.end(), "TorchScript value %", n->input(i)->debugName(), " used before definition");
  return it->second;
}

bool Importer::is_none(const Node* n, std::size_t i) const {
  const JVal& j = in(n, i);
  return j.kind == JVal::Kind::Known && j.known.isNone();
}

ValueId Importer::materialize(const JitValue* v, const at::Tensor& t, const std::string* source_name) {
  auto it = constants_.find(t.unsafeGetTensorImpl());
  if (it != constants_.end()) return it->second.second;
  std::string name = source_name ? "self." + *source_name : v && v->hasDebugName() ? v->debugName() : "";
  std::string context = "constant " + name;
  TensorType type;
  type.dtype = dtype_from_torch(t.scalar_type(), context);
  type.shape.assign(t.sizes().begin(), t.sizes().end());
  type.device = device_;
  at::Tensor cpu = t.detach().to(at::kCPU).contiguous();
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(type.nbytes());
  if (!data->bytes.empty()) std::memcpy(data->bytes.data(), cpu.data_ptr(), data->bytes.size());
  if (name.rfind("self.", 0) == 0) name = name.substr(5);
  if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) name.clear();  // "%12": no real name
  ValueId id = trace_.add_constant(name.empty() ? "c" + std::to_string(constants_.size()) : name, type, data);
  constants_.emplace(t.unsafeGetTensorImpl(), std::make_pair(t, id));
  return id;
}

ValueId Importer::tensor(const Node* n, std::size_t i) {
  const JVal& j = in(n, i);
  if (j.kind == JVal::Kind::Tensor) return j.tensor;
  if (j.kind == JVal::Kind::Known && j.known.isTensor()) return materialize(n->input(i), j.known.toTensor());
  fail(n, "argument " + std::to_string(i) + " must be a tensor");
}

Operand Importer::operand(const Node* n, std::size_t i) {
  const JVal& j = in(n, i);
  if (j.kind == JVal::Kind::Known) {
    const c10::IValue& v = j.known;
    if (v.isNone()) return Operand::none();
    if (v.isInt()) return Operand::number(Scalar(v.toInt()));
    if (v.isDouble()) return Operand::number(Scalar(v.toDouble()));
    if (v.isBool()) return Operand::number(Scalar(v.toBool()));
  }
  return Operand::tensor(tensor(n, i));
}

namespace {
const c10::IValue& known_arg(const Importer& imp, const Node* n, std::size_t i, const char* what) {
  const JVal& j = imp.in(n, i);
  if (j.kind != JVal::Kind::Known)
    imp.fail(n, "argument " + std::to_string(i) + " (" + what +
                    ") depends on tensor data; thunderc needs it to be known at compile time");
  return j.known;
}
}  // namespace

std::int64_t Importer::int_arg(const Node* n, std::size_t i) const {
  const c10::IValue& v = known_arg(*this, n, i, "an int");
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool();
  fail(n, "argument " + std::to_string(i) + " must be an int, got " + v.tagKind());
}

std::optional<std::int64_t> Importer::opt_int_arg(const Node* n, std::size_t i) const {
  if (is_none(n, i)) return std::nullopt;
  return int_arg(n, i);
}

double Importer::float_arg(const Node* n, std::size_t i) const {
  const c10::IValue& v = known_arg(*this, n, i, "a number");
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool();
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item<double>();
  fail(n, "argument " + std::to_string(i) + " must be a number, got " + v.tagKind());
}

bool Importer::bool_arg(const Node* n, std::size_t i) const {
  const c10::IValue& v = known_arg(*this, n, i, "a bool");
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  fail(n, "argument " + std::to_string(i) + " must be a bool, got " + v.tagKind());
}

std::string Importer::string_arg(const Node* n, std::size_t i) const {
  const c10::IValue& v = known_arg(*this, n, i, "a string");
  if (v.isString()) return v.toStringRef();
  fail(n, "argument " + std::to_string(i) + " must be a string, got " + v.tagKind());
}

IntList Importer::ints_arg(const Node* n, std::size_t i) const {
  const c10::IValue& v = known_arg(*this, n, i, "a list of ints");
  if (v.isInt()) return {v.toInt()};
  if (v.isIntList()) return v.toIntVector();
  if (v.isList()) {
    IntList out;
    for (const c10::IValue& e : v.toListRef()) {
      if (!e.isInt()) fail(n, "argument " + std::to_string(i) + " must be a list of ints");
      out.push_back(e.toInt());
    }
    return out;
  }
  fail(n, "argument " + std::to_string(i) + " must be a list of ints, got " + v.tagKind());
}

std::optional<DType> Importer::opt_dtype_arg(const Node* n, std::size_t i) const {
  if (is_none(n, i)) return std::nullopt;
  return dtype_from_torch(static_cast<c10::ScalarType>(int_arg(n, i)), n->kind().toQualString());
}

std::vector<ValueId> Importer::tensors_arg(const Node* n, std::size_t i) {
  const JVal& j = in(n, i);
  std::vector<ValueId> out;
  if (j.kind == JVal::Kind::Seq) {
    for (const JVal& item : j.items) {
      if (item.kind == JVal::Kind::Tensor) out.push_back(item.tensor);
      else if (item.kind == JVal::Kind::Known && item.known.isTensor()) out.push_back(materialize(n->input(i), item.known.toTensor()));
      else fail(n, "argument " + std::to_string(i) + " must be a list of tensors");
    }
    return out;
  }
  if (j.kind == JVal::Kind::Known && j.known.isTensorList()) {
    for (const at::Tensor& t : j.known.toTensorVector()) out.push_back(materialize(n->input(i), t));
    return out;
  }
  fail(n, "argument " + std::to_string(i) + " must be a list of tensors");
}

std::vector<std::optional<ValueId>> Importer::optional_tensors_arg(const Node* n, std::size_t i) {
  const JVal& j = in(n, i);
  std::vector<JVal> items;
  if (j.kind == JVal::Kind::Seq) items = j.items;
  else if (j.kind == JVal::Kind::Known && j.known.isList())
    for (const c10::IValue& v : j.known.toListRef()) items.push_back(JVal::of_known(v));
  else fail(n, "argument " + std::to_string(i) + " must be a list of tensors or None");
  std::vector<std::optional<ValueId>> out;
  for (const JVal& item : items) {
    if (item.kind == JVal::Kind::Tensor) out.push_back(item.tensor);
    else if (item.kind == JVal::Kind::Known && item.known.isNone()) out.push_back(std::nullopt);
    else if (item.kind == JVal::Kind::Known && item.known.isTensor()) out.push_back(materialize(n->input(i), item.known.toTensor()));
    else fail(n, "argument " + std::to_string(i) + " must be a list of tensors or None");
  }
  return out;
}

std::vector<ValueId> Importer::emit_all(const std::string& op_name, std::vector<Operand> inputs, Attrs attrs) {
  if (complex_ops::needs_lowering(*this, op(op_name), inputs, attrs)) return {emit(op_name, std::move(inputs), std::move(attrs))};
  return trace_.emit(op(op_name), std::move(inputs), std::move(attrs), current_ ? location(current_) : "");
}

ValueId Importer::emit(const std::string& op_name, std::vector<Operand> inputs, Attrs attrs) {
  if (complex_ops::needs_lowering(*this, op(op_name), inputs, attrs))
    return complex_ops::lower(*this, op(op_name), std::move(inputs), std::move(attrs), [&](const std::string& why) {
      if (current_) fail(current_, why);
      user_error(why);
    });
  ValueId out = trace_.emit1(op(op_name), std::move(inputs), std::move(attrs), current_ ? location(current_) : "");
  record_view(trace_.symbols().back());
  return out;
}

void Importer::record_view(const BoundSymbol& sym) {
  const std::string& name = sym.op->name;
  if (name != "reshape" && name != "permute" && name != "slice" && name != "select" && name != "expand") return;
  if (!sym.inputs[0].is_tensor()) return;
  const ValueId in = sym.inputs[0].value, out = sym.outputs[0];
  const Shape& shape = trace_.type(in).shape;
  const bool in_dense = !non_contiguous_.count(in);
  // Does the result keep dense row-major strides? (slice/select do when every dim before theirs is 1.)
  auto leading_ones = [&](std::int64_t dim) {
    for (std::int64_t d = 0; d < dim; ++d)
      if (shape[d] != 1) return false;
    return true;
  };
  bool dense = in_dense;
  if (name == "permute" || name == "expand") dense = false;
  if (name == "slice") dense = in_dense && leading_ones(sym.attrs.get_int("dim")) && sym.attrs.get_int("step") == 1;
  if (name == "select") dense = in_dense && leading_ones(sym.attrs.get_int("dim"));
  if (name == "reshape") {
    dense = true;
    if (!in_dense) return;  // PyTorch copies a non-contiguous tensor it reshapes: no alias
  }
  if (!dense) non_contiguous_.insert(out);
  // Only ops of aten view kinds alias (aten::reshape's copies were excluded above).
  if (!current_ || !is_view_kind(current_->kind().toQualString())) return;
  view_of_[out] = views_.size();
  views_.push_back({out, in, sym});
}

// The base `parent` with the region that `view` shows replaced by `new_child`.
ValueId Importer::write_back(const ViewRecord& view, ValueId parent, ValueId new_child, const Node* n) {
  const std::string& name = view.sym.op->name;
  const Attrs& a = view.sym.attrs;
  if (name == "reshape") return emit("reshape", {Operand::tensor(new_child)}, {{"shape", trace_.type(parent).shape}});
  if (name == "permute") {
    const IntList& dims = a.get_ints("dims");
    IntList inverse(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) inverse[dims[i]] = static_cast<std::int64_t>(i);
    return emit("permute", {Operand::tensor(new_child)}, {{"dims", inverse}});
  }
  if (name == "slice")
    return emit("slice_scatter", {Operand::tensor(parent), Operand::tensor(new_child)},
                {{"dim", a.get_int("dim")}, {"start", a.get_int("start")}, {"end", a.get_int("end")}, {"step", a.get_int("step")}});
  if (name == "select")
    return emit("select_scatter", {Operand::tensor(parent), Operand::tensor(new_child)},
                {{"dim", a.get_int("dim")}, {"index", a.get_int("index")}});
  fail(n, "writes in place into an expanded tensor, where several elements share one memory location (PyTorch "
          "rejects this too)");
}

void Importer::bind(const JitValue* v, JVal j) { env_[v] = std::move(j); }

void Importer::bind_inplace_result(const Node* n, ValueId result) {
  const JitValue* self = n->input(0);
  const JVal& before = in(n, 0);
  if (before.kind != JVal::Kind::Tensor) {
    sharp_edge(n, "inplace-weight",
               "modifies a weight or constant in place; the compiled model keeps its weights constant, so every call "
               "starts from the original values");
    bind(self, JVal::of_tensor(result));
    bind(n->output(0), JVal::of_tensor(result));
    return;
  }
  auto root_of = [&](const JitValue* v) {
    for (auto it = alias_root_.find(v); it != alias_root_.end(); it = alias_root_.find(v)) v = it->second;
    return v;
  };
  const JitValue* root = root_of(self);
  if (root->node()->kind() == c10::prim::Constant)
    sharp_edge(n, "inplace-weight",
               "modifies the module's weight or buffer '" + root->debugName() +
                   "' in place; the compiled model keeps its weights constant, so every call starts from the "
                   "original values");
  if (graph_inputs_.count(root))
    sharp_edge(n, "inplace-input",
               "modifies the model input '" + trace_.value(env_.at(root).tensor).name +
                   "' in place; the compiled model computes with the updated value but leaves the caller's tensor "
                   "unchanged");
  ValueId old = before.tensor;
  // New values: the mutated tensor, then (with alias updates) every base it views and every other view of
  // those bases, recomputed in the order the model made them.
  std::unordered_map<ValueId, ValueId> updated = {{old, result}};
  if (alias_updates_) {
    ValueId cur = old, now = result;
    for (auto v = view_of_.find(cur); v != view_of_.end(); v = view_of_.find(cur)) {
      const ViewRecord& view = views_[v->second];
      now = write_back(view, view.parent, now, n);
      cur = view.parent;
      updated[cur] = now;
    }
    const std::size_t known = views_.size();
    for (std::size_t i = 0; i < known; ++i) {
      const ViewRecord view = views_[i];  // copied: emit() appends to views_
      auto p = updated.find(view.parent);
      if (p == updated.end() || updated.count(view.child)) continue;
      BoundSymbol again = view.sym;
      again.inputs[0] = Operand::tensor(p->second);
      updated[view.child] = emit(again.op->name, again.inputs, again.attrs);
    }
  }
  // Every TorchScript value that held an updated tensor now holds its new value.
  for (auto& [v, j] : env_)
    if (j.kind == JVal::Kind::Tensor)
      if (auto u = updated.find(j.tensor); u != updated.end()) j = JVal::of_tensor(u->second);
  bind(self, JVal::of_tensor(result));
  bind(n->output(0), JVal::of_tensor(result));
  alias_root_[n->output(0)] = self;
}

void Importer::note_unsupported(const Node* n, const std::string& why) {
  UnsupportedUse& u = unsupported_[n->kind().toQualString()];
  ++u.count;
  std::string loc = location(n);
  if (!loc.empty() && u.where.size() < 3) u.where.push_back(loc);
  if (u.why.empty()) u.why = why;
  for (const JitValue* out : n->outputs()) bind(out, JVal{});
}

// A weight broadcast by expand (a class token expanded to the batch: expand(w, [B, -1, -1])) stays an
// expand of the weight in the trace rather than a folded constant: it is a free view for the executors, a
// folded copy would embed one row per batch element, and the program must be the same at every batch size
// for a symbolic variant (so also when B = 1 makes it an identity).
bool Importer::expands_known_tensor(const torch::jit::Node* n) const {
  const std::string kind = n->kind().toQualString();
  if (kind != "aten::expand" && kind != "aten::expand_as") return false;
  const JVal& self = in(n, 0);
  return self.kind == JVal::Kind::Known && self.known.isTensor();
}

void Importer::evaluate_known(Node* n) {
  std::string kind = n->kind().toQualString();
  if (n->isNondeterministic())
    sharp_edge(n, "random",
               "is a random operator; it is sampled once at compile time and every call of the compiled model sees "
               "the same values");
  static const std::unordered_set<std::string> global_state = {
      "aten::is_grad_enabled", "aten::is_autocast_enabled", "aten::is_autocast_cpu_enabled", "aten::get_num_threads",
      "aten::is_inference_mode_enabled"};
  if (global_state.count(kind))
    sharp_edge(n, "global-state", "reads global state (" + kind + "); its value at compile time is frozen into the model");
  if (kind == "prim::RaiseException") {
    std::string msg = n->inputs().empty() ? "" : in(n, 0).known.isString() ? in(n, 0).known.toStringRef() : "";
    fail(n, "the model raises an exception for these input shapes: " + msg);
  }
  torch::jit::Stack stack;
  for (std::size_t i = 0; i < n->inputs().size(); ++i) stack.push_back(in(n, i).known);
  try {
    torch::jit::Operation operation = n->getOperation();
    operation(stack);
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    msg = msg.substr(0, msg.find("\n"));
    fail(n, "could not be evaluated at compile time: " + msg);
  }
  THUNDERC_CHECK(stack.size() == n->outputs().size(), kind, " left ", stack.size(), " values for ", n->outputs().size(),
                 " outputs");
  for (std::size_t i = 0; i < stack.size(); ++i) bind(n->output(i), JVal::of_known(std::move(stack[i])));
  for (const JitValue* input : n->inputs())
    if (shape_derived_.count(input)) {
      for (const JitValue* out : n->outputs()) shape_derived_.insert(out);
      break;
    }
}

// Control flow and bookkeeping nodes that touch trace tensors without computing on their data.
bool Importer::import_structural(Node* n) {
  std::string kind = n->kind().toQualString();
  auto tensor_in = [&](std::size_t i) { return in(n, i).kind == JVal::Kind::Tensor; };
  auto any_tensor_or_seq = [&] {
    for (std::size_t i = 0; i < n->inputs().size(); ++i)
      if (in(n, i).kind != JVal::Kind::Known) return true;
    return false;
  };
  if (kind == "prim::If") {
    const JVal& cond = in(n, 0);
    if (cond.kind != JVal::Kind::Known) fail(n, "branches on tensor data (data-dependent control flow)");
    if (shape_derived_.count(n->input(0)))
      sharp_edge(n, "shape-dependent-control-flow",
                 std::string("branches on the input shapes; the compiled variant keeps the ") +
                     (cond.known.toBool() ? "then" : "else") + "-branch taken for these shapes (other shapes get their "
                     "own --shapes specialization)");
    torch::jit::Block* taken = n->blocks()[cond.known.toBool() ? 0 : 1];
    import_block(taken);
    for (std::size_t i = 0; i < n->outputs().size(); ++i) bind(n->output(i), env_.at(taken->outputs()[i]));
    return true;
  }
  if (kind == "prim::Loop") {
    // Unrolled: the trip count and the loop condition must be known at compile time.
    std::int64_t trips = int_arg(n, 0);
    bool go = bool_arg(n, 1);
    if (shape_derived_.count(n->input(0)) || shape_derived_.count(n->input(1)))
      sharp_edge(n, "shape-dependent-control-flow",
                 "loops a number of times that depends on the input shapes; the loop is unrolled for these shapes");
    torch::jit::Block* body = n->blocks()[0];
    std::vector<JVal> carried;
    for (std::size_t i = 2; i < n->inputs().size(); ++i) carried.push_back(in(n, i));
    constexpr std::int64_t kMaxUnroll = 100000;
    for (std::int64_t it = 0; go && it < trips; ++it) {
      if (it == kMaxUnroll) fail(n, "loops more than 100000 times; thunderc unrolls loops at compile time");
      bind(body->inputs()[0], JVal::of_known(it));
      for (std::size_t i = 0; i < carried.size(); ++i) bind(body->inputs()[i + 1], carried[i]);
      import_block(body);
      const JVal& c = env_.at(body->outputs()[0]);
      if (c.kind != JVal::Kind::Known) fail(n, "has a loop condition that depends on tensor data");
      go = c.known.toBool();
      for (std::size_t i = 0; i < carried.size(); ++i) carried[i] = env_.at(body->outputs()[i + 1]);
    }
    for (std::size_t i = 0; i < carried.size(); ++i) bind(n->output(i), carried[i]);
    return true;
  }
  // Lists and tuples are built and taken apart here (the interpreter, not an operator, implements them).
  if (kind == "prim::ListConstruct" || kind == "prim::TupleConstruct") {
    std::vector<JVal> items;
    for (std::size_t i = 0; i < n->inputs().size(); ++i) items.push_back(in(n, i));
    if (any_tensor_or_seq()) {
      bind(n->output(0), JVal::of_seq(std::move(items)));
    } else if (kind == "prim::TupleConstruct") {
      std::vector<c10::IValue> elems;
      for (const JVal& j : items) elems.push_back(j.known);
      bind(n->output(0), JVal::of_known(c10::ivalue::Tuple::create(std::move(elems))));
    } else {
      auto list_type = n->output(0)->type()->cast<c10::ListType>();
      THUNDERC_CHECK(list_type, "ListConstruct without a list type");
      c10::impl::GenericList list(list_type->getElementType());
      for (const JVal& j : items) list.push_back(j.known);
      bind(n->output(0), JVal::of_known(c10::IValue(std::move(list))));
    }
    return true;
  }
  if (kind == "prim::ListUnpack" || kind == "prim::TupleUnpack") {
    const JVal& seq = in(n, 0);
    std::vector<JVal> items;
    if (seq.kind == JVal::Kind::Seq) {
      items = seq.items;
    } else if (seq.known.isTuple()) {
      for (const c10::IValue& e : seq.known.toTupleRef().elements()) items.push_back(JVal::of_known(e));
    } else if (seq.known.isList()) {
      for (const c10::IValue& e : seq.known.toListRef()) items.push_back(JVal::of_known(e));
    }
    if (items.size() != n->outputs().size())
      fail(n, "unpacks " + std::to_string(n->outputs().size()) + " values from a sequence of " + std::to_string(items.size()));
    for (std::size_t i = 0; i < items.size(); ++i) bind(n->output(i), items[i]);
    return true;
  }
  if (kind == "prim::TupleIndex" && in(n, 0).kind == JVal::Kind::Known) {
    const auto& elems = in(n, 0).known.toTupleRef().elements();
    std::int64_t i = int_arg(n, 1), size = static_cast<std::int64_t>(elems.size());
    if (i < -size || i >= size) fail(n, "tuple index out of range");
    bind(n->output(0), JVal::of_known(elems[i < 0 ? i + size : i]));
    return true;
  }
  if (!any_tensor_or_seq()) return false;  // all known: evaluated at compile time
  if (kind == "aten::__getitem__" || kind == "prim::TupleIndex") {
    const JVal& seq = in(n, 0);
    if (seq.kind != JVal::Kind::Seq) return false;
    auto size = static_cast<std::int64_t>(seq.items.size());
    std::int64_t i = int_arg(n, 1);
    if (i < -size || i >= size) fail(n, "index " + std::to_string(i) + " is out of range for a list of " + std::to_string(size));
    bind(n->output(0), seq.items[i < 0 ? i + size : i]);
    return true;
  }
  if (kind == "aten::len" && in(n, 0).kind == JVal::Kind::Seq) {
    bind(n->output(0), JVal::of_known(static_cast<std::int64_t>(in(n, 0).items.size())));
    return true;
  }
  if (!n->inputs().empty() && tensor_in(0)) {
    const TensorType& t = type(in(n, 0).tensor);
    auto known = [&](c10::IValue v) {
      bind(n->output(0), JVal::of_known(std::move(v)));
      shape_derived_.insert(n->output(0));
    };
    if (kind == "aten::size" && n->inputs().size() == 1) return known(c10::IValue(std::vector<std::int64_t>(t.shape))), true;
    if (kind == "prim::shape") return known(c10::IValue(std::vector<std::int64_t>(t.shape))), true;
    if (kind == "aten::size") {
      std::int64_t d = int_arg(n, 1), r = static_cast<std::int64_t>(t.rank());
      if (d < -r || d >= r) fail(n, "dimension " + std::to_string(d) + " is out of range for shape " + shape_str(t.shape));
      return known(t.shape[d < 0 ? d + r : d]), true;
    }
    if (kind == "aten::dim") return known(static_cast<std::int64_t>(t.rank())), true;
    if (kind == "aten::numel") return known(t.numel()), true;
    if (kind == "prim::dtype") return known(static_cast<std::int64_t>(dtype_to_torch(t.dtype))), true;
    if (kind == "prim::device") return known(c10::Device(t.device.kind == DeviceKind::CPU ? c10::kCPU : c10::kCUDA, t.device.index)), true;
    if (kind == "prim::is_cuda") return known(t.device.kind == DeviceKind::CUDA), true;
    if (kind == "aten::is_floating_point") return known(is_floating(t.dtype)), true;
    // A computed tensor is never None (and never the same object as a constant).
    if (kind == "aten::__is__") return known(false), true;
    if (kind == "aten::__isnot__") return known(true), true;
    if (kind == "prim::unchecked_cast") return bind(n->output(0), in(n, 0)), true;
    if (kind == "aten::Int" || kind == "aten::Float" || kind == "aten::Bool" || kind == "aten::item" ||
        kind == "aten::ScalarImplicit" || kind == "aten::is_nonzero" || kind == "aten::tolist" ||
        kind == "aten::FloatImplicit" || kind == "aten::IntImplicit")
      fail(n, "reads a number out of a computed tensor (data-dependent value); thunderc compiles the model for fixed "
              "input shapes and needs such values at compile time");
  }
  return false;
}

void Importer::import_node(Node* n) {
  std::string kind = n->kind().toQualString();
  for (std::size_t i = 0; i < n->inputs().size(); ++i) {
    if (in(n, i).kind == JVal::Kind::Poison) {
      // Downstream of an unsupported operator: still report this node if thunderc cannot import it either,
      // so one run lists every unsupported operator.
      if (kind.rfind("aten::", 0) == 0 && !op_handlers().count(kind)) note_unsupported(n, "");
      for (const JitValue* out : n->outputs()) bind(out, JVal{});
      return;
    }
  }
  if (kind == "prim::GetAttr" && module_) {
    // An attribute freezing kept (--autograd: parameters and buffers stay distinct even when equal in value,
    // which freezing would pool into one constant).
    const JVal& owner = in(n, 0);
    if (owner.kind != JVal::Kind::Known || !owner.known.isObject()) fail(n, "reads an attribute of a value that is no module");
    const c10::intrusive_ptr<c10::ivalue::Object> obj = owner.known.toObject();
    const std::string attr = n->s(torch::jit::attr::name);
    c10::IValue v = obj->getAttr(attr);
    auto p = module_paths_.find(obj.get());
    const std::string path = p == module_paths_.end() || p->second.empty() ? attr : p->second + "." + attr;
    if (v.isTensor() && traced_parameters_.count(path)) {
      bind(n->output(0), JVal::of_tensor(materialize(n->output(0), v.toTensor(), &path)));
      return;
    }
    bind(n->output(0), JVal::of_known(std::move(v)));
    return;
  }
  if (kind == "prim::Constant") {
    c10::IValue v = torch::jit::toIValue(n->output(0)).value();
    const std::string& name = n->output(0)->debugName();
    if (name.rfind("self.", 0) == 0 && !v.isTensor() && !v.isNone() && !n->output(0)->uses().empty()) {
      std::ostringstream text;
      text << v;
      sharp_edge(n, "frozen-attribute", "module attribute " + name + " = " + text.str().substr(0, 60) +
                                            " is frozen into the compiled model; changing it later has no effect");
    }
    // --autograd: a parameter is a trace value, so the ops on it are traced (and differentiated) rather
    // than evaluated here. Frozen parameters are constants named "self.<state_dict name>".
    if (v.isTensor() && name.rfind("self.", 0) == 0 && traced_parameters_.count(name.substr(5))) {
      bind(n->output(0), JVal::of_tensor(materialize(n->output(0), v.toTensor())));
      return;
    }
    bind(n->output(0), JVal::of_known(std::move(v)));
    return;
  }
  if (is_ignorable_effect(kind)) return;
  if (import_structural(n)) return;
  bool all_known = true;
  for (std::size_t i = 0; i < n->inputs().size(); ++i) all_known = all_known && in(n, i).kind == JVal::Kind::Known;
  if (all_known && n->blocks().empty() && !expands_known_tensor(n)) {
    evaluate_known(n);
  } else {
    auto it = op_handlers().find(kind);
    if (it == op_handlers().end()) {
      note_unsupported(n, "");
      return;
    }
    try {
      current_ = n;
      it->second(*this, n);
    } catch (const UserError& e) {
      std::string msg = e.what();
      if (msg.rfind(model_path_ + ": ", 0) == 0) throw;  // already located
      fail(n, msg);
    }
  }
  if (is_view_kind(kind))
    for (const JitValue* out : n->outputs()) alias_root_[out] = n->input(0);
  // A tensor known at compile time that the model later updates in place (through itself or a view)
  // becomes a trace constant now, so its views are trace values and the update can reach them.
  for (const JitValue* out : n->outputs()) {
    auto it = env_.find(out);
    if (mutated_.count(out) && it != env_.end() && it->second.kind == JVal::Kind::Known && it->second.known.isTensor())
      it->second = JVal::of_tensor(materialize(out, it->second.known.toTensor()));
  }
}

namespace {
// In-place aten ops end in one underscore ("add_"), dunders ("__and__") do not count.
bool is_inplace_kind(const std::string& kind) {
  return kind.rfind("aten::", 0) == 0 && kind.size() > 7 && kind.back() == '_' && kind[kind.size() - 2] != '_';
}
}  // namespace

void Importer::find_mutated(torch::jit::Block* block) {
  for (Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) find_mutated(b);
    if (!is_inplace_kind(n->kind().toQualString()) || n->inputs().empty()) continue;
    // The mutated tensor and every tensor it is a view of.
    for (const JitValue* v = n->input(0); v && mutated_.insert(v).second;) {
      const Node* producer = v->node();
      v = is_view_kind(producer->kind().toQualString()) && !producer->inputs().empty() ? producer->input(0) : nullptr;
    }
  }
}

void Importer::import_block(torch::jit::Block* block) {
  for (Node* n : block->nodes()) import_node(n);
}

void Importer::flatten_outputs(const JVal& j, std::vector<ValueId>& out) {
  switch (j.kind) {
    case JVal::Kind::Tensor: out.push_back(j.tensor); return;
    case JVal::Kind::Seq:
      for (const JVal& item : j.items) flatten_outputs(item, out);
      return;
    case JVal::Kind::Known: {
      const c10::IValue& v = j.known;
      if (v.isTensor()) {
        out.push_back(materialize(nullptr, v.toTensor()));
      } else if (v.isTuple()) {
        for (const c10::IValue& e : v.toTupleRef().elements()) flatten_outputs(JVal::of_known(e), out);
      } else if (v.isList()) {
        for (const c10::IValue& e : v.toListRef()) flatten_outputs(JVal::of_known(e), out);
      } else {
        user_error(model_path_, ": forward() returns a ", v.tagKind(),
                   "; thunderc compiles models that return tensors (or tuples/lists of tensors)");
      }
      return;
    }
    case JVal::Kind::Poison: return;
  }
}

void Importer::import_graph(torch::jit::Graph& graph, const std::vector<TensorType>& input_types) {
  auto inputs = graph.inputs();
  THUNDERC_CHECK(inputs.size() == input_types.size() + 1, "graph has ", inputs.size(), " inputs for ",
                 input_types.size(), " types");
  if (module_) bind(inputs[0], JVal::of_known(c10::IValue(module_)));
  for (std::size_t i = 0; i < input_types.size(); ++i) {
    const JitValue* v = inputs[i + 1];
    std::string name = v->debugName();
    if (auto dot = name.rfind('.'); dot != std::string::npos && dot + 1 < name.size() &&
                                    std::isdigit(static_cast<unsigned char>(name[dot + 1])))
      name = name.substr(0, dot);  // "x.1" -> "x"
    bind(v, JVal::of_tensor(trace_.add_input(name, input_types[i])));
    graph_inputs_.insert(v);
  }
  find_mutated(graph.block());
  import_block(graph.block());
  if (!unsupported_.empty()) throw_unsupported(model_path_, unsupported_);
  std::vector<ValueId> outs;
  for (const JitValue* v : graph.outputs()) {
    flatten_outputs(env_.at(v), outs);
  }
  // An output that is an input, or a view of one, aliases it in PyTorch; the compiled model returns a copy.
  std::unordered_map<ValueId, const BoundSymbol*> producer;
  for (const BoundSymbol& s : trace_.symbols())
    for (ValueId o : s.outputs) producer[o] = &s;
  for (ValueId out : outs) {
    ValueId v = out;
    for (auto p = producer.find(v); p != producer.end() && p->second->op->category == OpCategory::Shape &&
                                    p->second->op->name != "cat";
         p = producer.find(v))
      v = p->second->inputs[0].value;
    if (trace_.value(v).origin == ValueOrigin::Input)
      sharp_edge(nullptr, "output-aliases-input",
                 "forward() returns " + std::string(v == out ? "its input '" : "a view of its input '") +
                     trace_.value(v).name + "'; the compiled model returns a copy, so writes to the output do not "
                     "reach the input");
  }
  if (outs.empty()) user_error(model_path_, ": forward() returns no tensors");
  trace_.set_outputs(outs);
}

}  // namespace ts

// ---------------------------------------------------------------------------------------------------------

struct TorchScriptModel::Impl {
  std::string path;
  torch::jit::Module module;
  std::shared_ptr<torch::jit::Graph> graph;
  std::vector<std::string> input_names;
  std::optional<Specialization> recorded;
  std::vector<std::string> parameters;  // named_parameters() requiring grad, before freezing
  std::vector<std::string> buffers;     // floating-point named_buffers(), before freezing
  bool trace_parameters = false;
  bool training_mode = false;
  // --autograd: the module frozen again with its parameters and buffers kept as attributes (freezing pools
  // equal constants, which would merge e.g. every zero-initialized bias into one parameter), made on first use.
  torch::jit::Module loaded;  // eval mode, not frozen
  torch::jit::Module state_module;
  std::shared_ptr<torch::jit::Graph> state_graph;
};

TorchScriptModel::TorchScriptModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchScriptModel::TorchScriptModel(TorchScriptModel&&) noexcept = default;
TorchScriptModel& TorchScriptModel::operator=(TorchScriptModel&&) noexcept = default;
TorchScriptModel::~TorchScriptModel() = default;

const std::string& TorchScriptModel::path() const { return impl_->path; }
const std::vector<std::string>& TorchScriptModel::input_names() const { return impl_->input_names; }
std::optional<Specialization> TorchScriptModel::recorded_shapes() const { return impl_->recorded; }
std::string TorchScriptModel::graph_str() const { return impl_->graph->toString(); }

namespace {
std::optional<Specialization> parse_recorded(const std::string& path, const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(text);
    Specialization spec;
    for (const auto& in : j.at("inputs")) {
      InputShape s;
      s.name = in.at("name").get<std::string>();
      s.shape = in.at("shape").get<Shape>();
      if (in.contains("dtype")) {
        s.dtype = parse_dtype(in.at("dtype").get<std::string>());
        if (!s.dtype) throw std::runtime_error("unknown dtype " + in.at("dtype").dump());
      }
      spec.push_back(std::move(s));
    }
    return spec;
  } catch (const std::exception& e) {
    user_error(path, ": its thunderc.json (recorded input shapes) is malformed: ", e.what());
  }
}
}  // namespace

TorchScriptModel TorchScriptModel::load(const std::string& path) {
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) user_error(path, ": cannot open the model file (", std::strerror(errno), ")");
    char magic[2] = {0, 0};
    probe.read(magic, 2);
    if (magic[0] != 'P' || magic[1] != 'K')
      user_error(path, ": not a TorchScript model (expected a zip archive written by torch.jit.save)");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  torch::jit::ExtraFilesMap extra = {{"thunderc.json", ""}};
  try {
    torch::jit::Module m = torch::jit::load(path, c10::Device(c10::kCPU), extra);
    m.eval();
    for (const auto& p : m.named_parameters(/*recurse=*/true))
      if (p.value.requires_grad()) impl->parameters.push_back(p.name);
    for (const auto& b : m.named_buffers(/*recurse=*/true))
      if (b.value.is_floating_point()) impl->buffers.push_back(b.name);
    impl->loaded = m;
    impl->module = torch::jit::freeze_module(m);
  } catch (const c10::Error& e) {
    ts::refuse_load(path, e.what_without_backtrace());
  } catch (const std::exception& e) {
    ts::refuse_load(path, e.what());
  }
  auto method = impl->module.find_method("forward");
  if (!method) user_error(path, ": the module has no forward() method");
  impl->graph = method->graph()->copy();
  torch::jit::Inline(*impl->graph);
  torch::jit::EliminateDeadCode(impl->graph);
  const auto& args = method->function().getSchema().arguments();
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto& type = args[i].type();
    if (type->kind() != c10::TypeKind::TensorType)
      user_error(path, ": forward() argument '", args[i].name(), "' has type ", type->str(),
                 "; thunderc compiles models whose inputs are tensors");
    impl->input_names.push_back(args[i].name());
  }
  impl->recorded = parse_recorded(path, extra["thunderc.json"]);
  return TorchScriptModel(std::move(impl));
}

std::vector<TensorType> TorchScriptModel::resolve_shapes(const Specialization& spec, Device device) const {
  const auto& names = impl_->input_names;
  std::vector<InputShape> given = match_input_shapes(impl_->path, names, spec, "forward()");
  std::vector<TensorType> types;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::optional<DType> dtype = given[i].dtype;
    if (!dtype && impl_->recorded)
      for (const InputShape& r : *impl_->recorded)
        if (r.name == names[i]) dtype = r.dtype;
    types.push_back(TensorType{dtype.value_or(DType::Float32), given[i].shape, device});
  }
  return types;
}

std::vector<std::string> TorchScriptModel::parameter_names() const { return impl_->parameters; }
void TorchScriptModel::set_trace_parameters(bool on) { impl_->trace_parameters = on; }
std::vector<std::string> TorchScriptModel::buffer_names() const { return impl_->buffers; }
void TorchScriptModel::set_training_mode(bool on) { impl_->training_mode = on; }

Trace TorchScriptModel::import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges,
                               bool alias_updates) const {
  THUNDERC_CHECK(input_types.size() == impl_->input_names.size(), "import with ", input_types.size(),
                 " input types for ", impl_->input_names.size(), " inputs");
  Trace trace;
  trace.constructed_by = "torchscript-import";
  Device device = input_types.empty() ? Device::cpu() : input_types[0].device;
  ts::Importer importer(trace, device, impl_->path, alias_updates);
  torch::jit::Graph* graph = impl_->graph.get();
  if (impl_->trace_parameters) {
    importer.trace_parameters(impl_->parameters);
    if (!impl_->state_graph) {
      std::vector<std::string> keep = impl_->parameters;
      keep.insert(keep.end(), impl_->buffers.begin(), impl_->buffers.end());
      try {
        impl_->state_module = torch::jit::freeze_module(impl_->loaded, keep);
        impl_->state_graph = impl_->state_module.get_method("forward").graph()->copy();
        torch::jit::Inline(*impl_->state_graph);
        torch::jit::EliminateDeadCode(impl_->state_graph);
      } catch (const c10::Error& e) {
        user_error(impl_->path, ": LibTorch could not freeze the module with its parameters kept: ",
                   e.what_without_backtrace());
      }
    }
    std::unordered_map<const c10::ivalue::Object*, std::string> paths;
    for (const auto& sub : impl_->state_module.named_modules()) paths[sub.value._ivalue().get()] = sub.name;
    importer.set_module(impl_->state_module._ivalue(), std::move(paths));
    graph = impl_->state_graph.get();
  }
  if (impl_->training_mode) {
    importer.trace_parameters(impl_->buffers);  // the running statistics are state the forward updates
    importer.set_training_mode(true);
  }
  try {
    importer.import_graph(*graph, input_types);
  } catch (const c10::Error& e) {
    user_error(impl_->path, ": LibTorch failed while importing: ", e.what_without_backtrace());
  }
  if (sharp_edges) sharp_edges->insert(sharp_edges->end(), importer.sharp_edges().begin(), importer.sharp_edges().end());
  return trace;
}

}  // namespace thunderc
