#include "core/transforms/autodiff.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/ir/error.h"
#include "core/ops/vjp.h"
#include "core/transforms/decompose.h"

namespace thunderc {

namespace {

// Old trace's value -> new trace's value, while a trace is rebuilt symbol by symbol.
using Remap = std::unordered_map<ValueId, ValueId>;

ValueId mapped(const Remap& m, ValueId v) {
  auto it = m.find(v);
  THUNDERC_CHECK(it != m.end(), "autodiff: value %", v, " used before it is defined");
  return it->second;
}

// Re-emits `sym` (of another trace) into `t` with its operands mapped; records its outputs in `m`.
void reemit(Trace& t, const BoundSymbol& sym, Remap& m) {
  THUNDERC_CHECK(!sym.is_region(), "autodiff runs before fusion; found a region");
  std::vector<Operand> inputs = sym.inputs;
  for (Operand& o : inputs)
    if (o.is_tensor()) o.value = mapped(m, o.value);
  std::vector<ValueId> outs = t.emit(*sym.op, std::move(inputs), sym.attrs, sym.source);
  THUNDERC_CHECK(outs.size() == sym.outputs.size(), "autodiff: ", sym.op->name, " changed its output count");
  for (std::size_t k = 0; k < outs.size(); ++k) m[sym.outputs[k]] = outs[k];
}

// Adds `src`'s constant `v` to `t` (same bytes, shared) unless it is there already.
ValueId constant_into(Trace& t, const Trace& src, ValueId v, Remap& m) {
  auto it = m.find(v);
  if (it != m.end()) return it->second;
  const Value& c = src.value(v);
  return m[v] = t.add_constant(c.source_name, c.type, c.data);
}

// Operators that need a rule for this trace: those reading a value that depends on a parameter or an input
// requiring grad, whose output is floating point.
std::set<std::string> differentiated_ops(const Trace& t, std::vector<bool> needs, std::set<std::string>* missing) {
  std::set<std::string> ops;
  for (const BoundSymbol& s : t.symbols()) {
    bool any = false, floating = false;
    for (const Operand& o : s.inputs) any = any || (o.is_tensor() && needs[o.value]);
    if (!any) continue;
    for (ValueId out : s.outputs)
      if (is_floating(t.type(out).dtype)) needs[out] = floating = true;
    if (!floating) continue;  // argmax, comparisons: no gradient flows through an integer or bool result
    ops.insert(s.op->name);
    if (missing && !s.op->vjp) missing->insert(s.op->name);
  }
  return ops;
}

// Max-flow (Dinic) on a small graph, for the min-cut below.
class FlowGraph {
 public:
  static constexpr std::int64_t kInf = std::int64_t{1} << 60;
  explicit FlowGraph(std::size_t nodes) : adj_(nodes) {}
  void edge(std::size_t from, std::size_t to, std::int64_t cap) {
    adj_[from].push_back(edges_.size());
    edges_.push_back({to, cap});
    adj_[to].push_back(edges_.size());
    edges_.push_back({from, 0});
  }
  void max_flow(std::size_t s, std::size_t t) {
    while (levels(s, t)) {
      next_.assign(adj_.size(), 0);
      while (push(s, t, kInf) > 0) {
      }
    }
  }
  // Nodes reachable from s in the residual graph: the source side of a minimum cut.
  std::vector<bool> source_side(std::size_t s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<std::size_t> stack = {s};
    seen[s] = true;
    while (!stack.empty()) {
      std::size_t u = stack.back();
      stack.pop_back();
      for (std::size_t e : adj_[u])
        if (edges_[e].cap > 0 && !seen[edges_[e].to]) seen[edges_[e].to] = true, stack.push_back(edges_[e].to);
    }
    return seen;
  }

 private:
  struct Edge {
    std::size_t to;
    std::int64_t cap;
  };
  bool levels(std::size_t s, std::size_t t) {
    level_.assign(adj_.size(), -1);
    std::vector<std::size_t> queue = {s};
    level_[s] = 0;
    for (std::size_t q = 0; q < queue.size(); ++q)
      for (std::size_t e : adj_[queue[q]])
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[queue[q]] + 1;
          queue.push_back(edges_[e].to);
        }
    return level_[t] >= 0;
  }
  std::int64_t push(std::size_t u, std::size_t t, std::int64_t f) {
    if (u == t) return f;
    for (; next_[u] < adj_[u].size(); ++next_[u]) {
      Edge& e = edges_[adj_[u][next_[u]]];
      if (e.cap <= 0 || level_[e.to] != level_[u] + 1) continue;
      std::int64_t got = push(e.to, t, std::min(f, e.cap));
      if (got > 0) {
        e.cap -= got;
        edges_[adj_[u][next_[u]] ^ 1].cap += got;
        return got;
      }
    }
    return 0;
  }
  std::vector<std::vector<std::size_t>> adj_;
  std::vector<Edge> edges_;
  std::vector<int> level_;
  std::vector<std::size_t> next_;
};

// Cheap enough to recompute in the backward instead of saving: pointwise math and data movement (which
// the backward's fused loops absorb). Products, convolutions, normalizations and reductions are saved.
// A dropout mask too: the backward draws it again from the saved 16-byte RNG state instead of saving it.
bool recomputable(const BoundSymbol& s) {
  return !s.is_region() && (s.op->category == OpCategory::Elementwise || s.op->category == OpCategory::Shape ||
                            s.op->name == "dropout_mask");
}

struct Rematerialization {
  std::vector<ValueId> saved;        // forward values the forward returns for the backward
  std::vector<std::size_t> recompute;  // joint symbols (forward ones, in order) the backward runs again
};

// Which forward values to save, by a minimum cut over their bytes (Thunder's rematerialization, as
// AOTAutograd's partitioner does it): every value the backward reads must be saved or recomputable from saved
// ones, parameters and constants, through recomputable symbols only; among such choices the one saving the
// fewest bytes. Each forward value v is an edge in(v) -> out(v) of capacity bytes(v); an operand u of v's
// symbol is an edge out(u) -> in(v); the source feeds model inputs and results of symbols that are not
// recomputable; what the backward reads feeds the sink. Saved: values whose edge the cut crosses.
Rematerialization rematerialize(const Trace& joint, std::size_t forward_symbols, const std::set<ValueId>& needed,
                                const std::set<ValueId>& free_values) {
  std::unordered_map<ValueId, std::size_t> index;  // forward value -> its node pair
  std::vector<ValueId> values;
  auto node = [&](ValueId v) {
    auto [it, inserted] = index.emplace(v, values.size());
    if (inserted) values.push_back(v);
    return it->second;
  };
  std::unordered_map<ValueId, std::size_t> producer;
  for (std::size_t i = 0; i < forward_symbols; ++i)
    for (ValueId v : joint.symbols()[i].outputs) producer[v] = i, node(v);
  for (ValueId v : joint.inputs())
    if (!free_values.count(v)) node(v);
  const std::size_t n = values.size(), source = 2 * n, sink = 2 * n + 1;
  FlowGraph g(2 * n + 2);
  for (std::size_t k = 0; k < n; ++k) {
    const ValueId v = values[k];
    g.edge(2 * k, 2 * k + 1, static_cast<std::int64_t>(std::max<std::size_t>(1, joint.type(v).nbytes())));
    auto p = producer.find(v);
    if (p == producer.end() || !recomputable(joint.symbols()[p->second])) {
      g.edge(source, 2 * k, FlowGraph::kInf);
    } else {
      for (const Operand& o : joint.symbols()[p->second].inputs)
        if (o.is_tensor() && !free_values.count(o.value)) g.edge(2 * index.at(o.value) + 1, 2 * k, FlowGraph::kInf);
    }
    if (needed.count(v)) g.edge(2 * k + 1, sink, FlowGraph::kInf);
  }
  g.max_flow(source, sink);
  const std::vector<bool> side = g.source_side(source);
  Rematerialization r;
  std::set<ValueId> saved;
  for (std::size_t k = 0; k < n; ++k)
    if (side[2 * k] && !side[2 * k + 1]) saved.insert(values[k]);
  r.saved.assign(saved.begin(), saved.end());
  // The symbols recomputing what the backward reads from the saved values.
  std::set<std::size_t> rerun;
  std::vector<ValueId> stack(needed.begin(), needed.end());
  std::set<ValueId> seen;
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    if (saved.count(v) || free_values.count(v) || !seen.insert(v).second) continue;
    auto p = producer.find(v);
    THUNDERC_CHECK(p != producer.end() && recomputable(joint.symbols()[p->second]), "autodiff: the cut leaves ",
                   joint.value(v).name, " neither saved nor recomputable");
    rerun.insert(p->second);
    for (const Operand& o : joint.symbols()[p->second].inputs)
      if (o.is_tensor()) stack.push_back(o.value);
  }
  r.recompute.assign(rerun.begin(), rerun.end());
  return r;
}

// Training mode's batch norm: every batch_norm whose running statistics are buffers (constants named in
// `buffers`) normalizes with the batch's statistics instead (biased variance, over every dim but 1), and the
// running statistics move toward them by the momentum (the variance's unbiased: * n / (n - 1)), as
// nn.BatchNorm in train() mode. A buffer updated twice (a shared module) starts its second update from the
// first's result, as PyTorch's in-place updates do. `updates` gets each updated buffer's name and final value.
Trace batch_norm_in_training_mode(const Trace& in, const std::set<std::string>& buffers,
                                  std::vector<std::pair<std::string, ValueId>>* updates) {
  auto is_buffer = [&](const Operand& o) {
    return o.is_tensor() && in.value(o.value).origin == ValueOrigin::Constant && buffers.count(in.value(o.value).source_name);
  };
  Trace t;
  t.name = in.name;
  t.constructed_by = in.constructed_by;
  Remap m;
  for (ValueId v : in.inputs()) m[v] = t.add_input(in.value(v).source_name, in.type(v));
  for (ValueId c : in.constants()) constant_into(t, in, c, m);
  std::map<std::string, ValueId> current;  // a buffer's latest value
  auto T = [](ValueId v) { return Operand::tensor(v); };
  auto N = [](double x) { return Operand::number(x); };
  auto emit = [&](const char* name, std::vector<Operand> ops, Attrs a, const std::string& src) {
    return t.emit(op(name), std::move(ops), std::move(a), src)[0];
  };
  for (const BoundSymbol& s : in.symbols()) {
    if (s.op->name != "batch_norm" || !is_buffer(s.inputs[3]) || !is_buffer(s.inputs[4])) {
      reemit(t, s, m);
      continue;
    }
    const ValueId x = mapped(m, s.inputs[0].value);
    const Shape xs = t.type(x).shape;
    Shape channel(xs.size(), 1);
    channel[1] = xs[1];
    IntList dims;
    std::int64_t n = 1;
    for (std::size_t d = 0; d < xs.size(); ++d)
      if (d != 1) dims.push_back(static_cast<std::int64_t>(d)), n *= xs[d];
    if (n <= 1)
      user_error("--module-mode train: batch_norm over ", shape_str(xs), " has ", n, " value per channel; PyTorch ",
                 "refuses that in training mode (\"Expected more than 1 value per channel when training\"): compile a ",
                 "larger batch, or use --module-mode eval");
    const std::string& src = s.source;
    const Attrs reduce{{"dims", dims}, {"keepdim", true}};
    const ValueId mean = emit("mean", {T(x)}, reduce, src);
    const ValueId centered = emit("sub", {T(x), T(mean)}, {}, src);
    const ValueId var = emit("mean", {T(emit("mul", {T(centered), T(centered)}, {}, src))}, reduce, src);
    const ValueId rstd = emit("rsqrt", {T(emit("add", {T(var), N(s.attrs.get_float("eps"))}, {}, src))}, {}, src);
    ValueId y = emit("mul", {T(centered), T(rstd)}, {}, src);
    for (std::size_t k : {std::size_t{1}, std::size_t{2}})
      if (s.inputs[k].is_tensor())
        y = emit(k == 1 ? "mul" : "add",
                 {T(y), T(emit("reshape", {T(mapped(m, s.inputs[k].value))}, {{"shape", channel}}, src))}, {}, src);
    m[s.outputs[0]] = y;
    const double momentum = s.attrs.get_float("momentum");
    const double unbiased = static_cast<double>(n) / static_cast<double>(n - 1);
    for (auto [k, stat, scale] : {std::tuple<std::size_t, ValueId, double>{3, mean, 1.0}, {4, var, unbiased}}) {
      const std::string& name = in.value(s.inputs[k].value).source_name;
      auto it = current.find(name);
      const ValueId old = it != current.end() ? it->second : mapped(m, s.inputs[k].value);
      const ValueId flat = emit("reshape", {T(stat)}, {{"shape", Shape{xs[1]}}}, src);
      const ValueId moved = emit("add", {T(emit("mul", {T(old), N(1.0 - momentum)}, {}, src)),
                                         T(emit("mul", {T(flat), N(momentum * scale)}, {}, src))}, {}, src);
      current[name] = moved;
    }
  }
  std::vector<ValueId> outs;
  for (ValueId v : in.outputs()) outs.push_back(mapped(m, v));
  t.set_outputs(outs);
  for (const auto& [name, v] : current) updates->push_back({name, v});
  return t;
}

}  // namespace

TrainingTraces build_training_traces(const Trace& imported, const std::vector<std::string>& parameter_names,
                                     const std::vector<std::string>& input_names,
                                     const std::vector<std::string>& requires_grad,
                                     const std::vector<std::string>& buffer_names) {
  THUNDERC_CHECK(imported.inputs().size() == input_names.size(), "autodiff: ", imported.inputs().size(),
                 " trace inputs for ", input_names.size(), " model inputs");
  TrainingTraces out;
  // Which inputs and constants get gradients.
  std::vector<std::size_t> grad_inputs;
  for (const std::string& name : requires_grad) {
    auto it = std::find(input_names.begin(), input_names.end(), name);
    if (it == input_names.end())
      user_error("--requires-grad ", name, ": the model has no input of that name (its inputs: ",
                 [&] {
                   std::string s;
                   for (const std::string& n : input_names) s += (s.empty() ? "" : ", ") + n;
                   return s;
                 }(),
                 ")");
    const std::size_t k = static_cast<std::size_t>(it - input_names.begin());
    if (!is_floating(imported.type(imported.inputs()[k]).dtype))
      user_error("--requires-grad ", name, ": the input is ", dtype_name(imported.type(imported.inputs()[k]).dtype),
                 "; only floating-point tensors have gradients");
    if (std::find(grad_inputs.begin(), grad_inputs.end(), k) == grad_inputs.end()) grad_inputs.push_back(k);
  }
  // Training mode: batch norms on buffers use batch statistics; the buffers' new values become extra outputs
  // (after the model's) until the split makes them forward outputs after the saved ones.
  const std::size_t num_model_outputs = imported.outputs().size();
  std::vector<std::pair<std::string, ValueId>> updates;
  Trace source = imported;
  if (!buffer_names.empty()) {
    source = batch_norm_in_training_mode(imported, std::set<std::string>(buffer_names.begin(), buffer_names.end()), &updates);
    std::vector<ValueId> outs = source.outputs();
    for (const auto& u : updates) outs.push_back(u.second);
    source.set_outputs(outs);
  }
  // Constants that are parameters, in the model's parameter order (its state_dict's); then the buffers
  // training mode updates, in the model's buffer order (state without gradients).
  std::vector<ValueId> params;
  auto find_constant = [&](const std::string& name) {
    for (ValueId c : source.constants())
      if (source.value(c).source_name == name && is_floating(source.type(c).dtype)) {
        params.push_back(c);
        return;
      }
  };
  for (const std::string& name : parameter_names) find_constant(name);
  const std::size_t num_trainable = params.size();
  for (const std::string& name : buffer_names)
    for (const auto& u : updates)
      if (u.first == name) find_constant(name);

  // Operators without a rule that `decompose` can rewrite are rewritten first.
  {
    std::vector<bool> needs(source.num_values(), false);
    for (std::size_t k : grad_inputs) needs[source.inputs()[k]] = true;
    for (std::size_t p = 0; p < num_trainable; ++p) needs[params[p]] = true;
    std::set<std::string> missing;
    differentiated_ops(source, needs, &missing);
    std::vector<std::string> rewrite;
    const std::vector<std::string> known = decomposable_ops();
    for (const std::string& op : missing)
      if (std::find(known.begin(), known.end(), op) != known.end()) rewrite.push_back(op);
    if (!rewrite.empty()) {
      TransformContext ctx{imported.inputs().empty() ? Device::cpu() : imported.type(imported.inputs()[0]).device,
                           {}, rewrite};
      source = decompose(source, ctx);
    }
  }

  // The joint trace: model inputs, parameters, one gradient per model output; the forward symbols, then the
  // backward ones.
  Trace joint;
  joint.name = "joint";
  Remap m;
  for (ValueId v : source.inputs()) m[v] = joint.add_input(source.value(v).source_name, source.type(v));
  std::vector<ValueId> joint_params;
  for (ValueId p : params) {
    const Value& c = source.value(p);
    joint_params.push_back(m[p] = joint.add_input(c.source_name, c.type));
    out.parameters.push_back({c.source_name, c.type, c.data, out.parameters.size() < num_trainable});
  }
  std::vector<ValueId> grad_outputs;
  for (std::size_t k = 0; k < num_model_outputs; ++k) {
    const Value& o = source.value(source.outputs()[k]);
    grad_outputs.push_back(joint.add_input("grad_" + o.name, o.type));
  }
  for (ValueId c : source.constants())
    if (!m.count(c)) constant_into(joint, source, c, m);
  // Dropout (--module-mode train): every mask draws from the forward's RNG state input, each from counter
  // blocks of its own, in trace order (docs/training.md "Dropout").
  std::optional<ValueId> rng;
  for (const BoundSymbol& s : source.symbols()) {
    if (s.op->name != "dropout_mask" || s.inputs[0].is_tensor()) {
      reemit(joint, s, m);
      continue;
    }
    // On the masks' device (the runtime copies the state there per call).
    if (!rng) rng = joint.add_input("rng", TensorType{DType::Int64, {2}, source.type(s.outputs[0]).device});
    Attrs a = s.attrs;
    a.set("block", static_cast<std::int64_t>(out.rng_blocks));
    const ValueId mask = joint.emit(*s.op, {Operand::tensor(*rng)}, std::move(a), s.source)[0];
    m[s.outputs[0]] = mask;
    out.rng_blocks += static_cast<std::uint64_t>((joint.type(mask).numel() + 3) / 4);
  }
  const std::size_t forward_symbols = joint.symbols().size();
  std::vector<ValueId> model_outputs, updated;
  for (std::size_t k = 0; k < num_model_outputs; ++k) model_outputs.push_back(mapped(m, source.outputs()[k]));
  // The buffers' updates: `decompose` may have rebuilt the trace, so they are found through its extra outputs.
  for (std::size_t k = num_model_outputs; k < source.outputs().size(); ++k) {
    const std::string& name = updates[k - num_model_outputs].first;
    for (std::size_t p = num_trainable; p < out.parameters.size(); ++p)
      if (out.parameters[p].name == name) {
        out.updates.push_back(p);
        updated.push_back(mapped(m, source.outputs()[k]));
      }
  }

  // Which joint values depend on what gets gradients.
  std::vector<bool> needs(joint.num_values(), false);
  for (std::size_t k : grad_inputs) needs[joint.inputs()[k]] = true;
  for (std::size_t p = 0; p < num_trainable; ++p) needs[joint_params[p]] = true;
  for (const BoundSymbol& s : joint.symbols()) {
    bool any = false;
    for (const Operand& o : s.inputs) any = any || (o.is_tensor() && needs[o.value]);
    if (any)
      for (ValueId v : s.outputs)
        if (is_floating(joint.type(v).dtype)) needs[v] = true;
  }

  // Every operator on a differentiated path needs a rule: all those without one are reported at once.
  std::set<std::string> missing;
  differentiated_ops(joint, needs, &missing);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& op : missing) list += (list.empty() ? "" : ", ") + op;
    user_error("--autograd: no gradient rule for ", list,
               " (each of these operators reads a value that depends on a parameter or an input requiring grad); "
               "docs/training.md lists the differentiable operators");
  }

  // The reverse sweep.
  std::map<ValueId, ValueId> grads;
  auto accumulate = [&](ValueId v, ValueId g) {
    auto it = grads.find(v);
    if (it == grads.end())
      grads.emplace(v, g);
    else
      it->second = joint.emit1(op("add"), {Operand::tensor(it->second), Operand::tensor(g)}, {});
  };
  for (std::size_t k = 0; k < model_outputs.size(); ++k)
    if (needs[model_outputs[k]]) accumulate(model_outputs[k], grad_outputs[k]);
  for (std::size_t i = forward_symbols; i-- > 0;) {
    const BoundSymbol sym = joint.symbols()[i];  // a copy: the rule appends to joint.symbols()
    std::vector<std::optional<ValueId>> out_grads;
    bool any_grad = false;
    for (ValueId v : sym.outputs) {
      auto it = grads.find(v);
      out_grads.push_back(it == grads.end() ? std::nullopt : std::optional<ValueId>(it->second));
      any_grad = any_grad || it != grads.end();
    }
    std::vector<bool> wants;
    bool any_wanted = false;
    for (const Operand& o : sym.inputs) {
      wants.push_back(o.is_tensor() && needs[o.value]);
      any_wanted = any_wanted || wants.back();
    }
    if (!any_grad || !any_wanted) continue;
    THUNDERC_CHECK(sym.op->vjp, "autodiff: ", sym.op->name, " has no rule but was not reported");
    // Single-output rules read g(): give them explicit zeros only when the gradient is absent.
    if (!out_grads[0] && sym.outputs.size() == 1) continue;
    VjpBuilder b(joint, sym, out_grads, wants);
    sym.op->vjp(b);
    for (const auto& [k, g] : b.given()) accumulate(sym.inputs[k].value, g);
  }
  // The gradients, zeros for what no path reaches (PyTorch would give None; the .so always writes them).
  std::vector<ValueId> grad_values;
  auto gradient_of = [&](ValueId v) {
    auto it = grads.find(v);
    if (it != grads.end()) return it->second;
    BoundSymbol none;
    none.op = &op("neg");
    VjpBuilder b(joint, none, {}, {});
    return b.zeros(joint.type(v));
  };
  for (std::size_t k : grad_inputs) {
    grad_values.push_back(gradient_of(joint.inputs()[k]));
    out.gradients.push_back({input_names[k], false});
  }
  for (std::size_t p = 0; p < num_trainable; ++p) {
    grad_values.push_back(gradient_of(joint_params[p]));
    out.gradients.push_back({out.parameters[p].name, true});
  }

  // The split. Saved: what the backward part (or a gradient output) reads that the forward part defines or
  // takes as a model input; parameters, constants and output gradients reach the backward on their own.
  std::set<ValueId> joint_inputs(joint.inputs().begin(), joint.inputs().end());
  std::set<ValueId> free_in_backward(joint_params.begin(), joint_params.end());
  free_in_backward.insert(grad_outputs.begin(), grad_outputs.end());
  free_in_backward.insert(joint.constants().begin(), joint.constants().end());
  std::set<ValueId> defined_backward;
  std::set<ValueId> saved_set;
  auto reads = [&](ValueId v) {
    if (!free_in_backward.count(v) && !defined_backward.count(v)) saved_set.insert(v);
  };
  for (std::size_t i = forward_symbols; i < joint.symbols().size(); ++i) {
    const BoundSymbol& s = joint.symbols()[i];
    for (const Operand& o : s.inputs)
      if (o.is_tensor()) reads(o.value);
    defined_backward.insert(s.outputs.begin(), s.outputs.end());
  }
  for (ValueId g : grad_values) reads(g);
  std::set<ValueId> free_values(joint_params.begin(), joint_params.end());
  free_values.insert(joint.constants().begin(), joint.constants().end());
  const Rematerialization remat = rematerialize(joint, forward_symbols, saved_set, free_values);
  const std::vector<ValueId>& saved = remat.saved;
  out.saved_bytes_without_remat = 0;
  for (ValueId v : saved_set) out.saved_bytes_without_remat += joint.type(v).nbytes();

  // forward(inputs..., parameters...) -> (outputs..., saved...)
  Remap fm;
  out.forward.name = "forward";
  out.forward.constructed_by = "autodiff";
  for (std::size_t k = 0; k < source.inputs().size(); ++k)
    fm[joint.inputs()[k]] = out.forward.add_input(joint.value(joint.inputs()[k]).source_name,
                                                  joint.type(joint.inputs()[k]));
  for (ValueId p : joint_params) fm[p] = out.forward.add_input(joint.value(p).source_name, joint.type(p));
  if (rng) fm[*rng] = out.forward.add_input("rng", joint.type(*rng));
  for (std::size_t i = 0; i < forward_symbols; ++i) {
    const BoundSymbol& s = joint.symbols()[i];
    for (const Operand& o : s.inputs)
      if (o.is_tensor() && !fm.count(o.value)) constant_into(out.forward, joint, o.value, fm);
    reemit(out.forward, s, fm);
  }
  std::vector<ValueId> forward_outputs;
  for (ValueId v : model_outputs) forward_outputs.push_back(mapped(fm, v));
  for (ValueId v : saved) {
    forward_outputs.push_back(mapped(fm, v));
    out.saved.push_back(joint.type(v));
  }
  for (ValueId v : updated) forward_outputs.push_back(mapped(fm, v));
  out.forward.set_outputs(forward_outputs);
  out.num_outputs = model_outputs.size();

  // backward(parameters..., saved..., grad_outputs...) -> (gradients...)
  Remap bm;
  out.backward.name = "backward";
  out.backward.constructed_by = "autodiff";
  for (ValueId p : joint_params) bm[p] = out.backward.add_input(joint.value(p).source_name, joint.type(p));
  for (ValueId v : saved) bm[v] = out.backward.add_input("saved_" + joint.value(v).name, joint.type(v));
  for (ValueId g : grad_outputs) bm[g] = out.backward.add_input(joint.value(g).source_name, joint.type(g));
  // What rematerialization recomputes instead of saving comes first.
  for (std::size_t i : remat.recompute) {
    const BoundSymbol& s = joint.symbols()[i];
    for (const Operand& o : s.inputs)
      if (o.is_tensor() && !bm.count(o.value)) constant_into(out.backward, joint, o.value, bm);
    reemit(out.backward, s, bm);
  }
  for (std::size_t i = forward_symbols; i < joint.symbols().size(); ++i) {
    const BoundSymbol& s = joint.symbols()[i];
    for (const Operand& o : s.inputs)
      if (o.is_tensor() && !bm.count(o.value)) constant_into(out.backward, joint, o.value, bm);
    reemit(out.backward, s, bm);
  }
  std::vector<ValueId> backward_outputs;
  for (ValueId g : grad_values) {
    if (!bm.count(g)) constant_into(out.backward, joint, g, bm);
    backward_outputs.push_back(mapped(bm, g));
  }
  out.backward.set_outputs(backward_outputs);
  return out;
}

}  // namespace thunderc
