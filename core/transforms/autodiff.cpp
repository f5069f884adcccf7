#include "core/transforms/autodiff.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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

}  // namespace

TrainingTraces build_training_traces(const Trace& imported, const std::vector<std::string>& parameter_names,
                                     const std::vector<std::string>& input_names,
                                     const std::vector<std::string>& requires_grad) {
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
  // Constants of `imported` that are parameters, in the model's parameter order (its state_dict's).
  std::vector<ValueId> params;
  for (const std::string& name : parameter_names)
    for (ValueId c : imported.constants())
      if (imported.value(c).source_name == name && is_floating(imported.type(c).dtype)) {
        params.push_back(c);
        break;
      }

  // Operators without a rule that `decompose` can rewrite are rewritten first.
  Trace source = imported;
  {
    std::vector<bool> needs(source.num_values(), false);
    for (std::size_t k : grad_inputs) needs[source.inputs()[k]] = true;
    for (ValueId p : params) needs[p] = true;
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
    out.parameters.push_back({c.source_name, c.type, c.data});
  }
  std::vector<ValueId> grad_outputs;
  for (std::size_t k = 0; k < source.outputs().size(); ++k) {
    const Value& o = source.value(source.outputs()[k]);
    grad_outputs.push_back(joint.add_input("grad_" + o.name, o.type));
  }
  for (ValueId c : source.constants())
    if (!m.count(c)) constant_into(joint, source, c, m);
  for (const BoundSymbol& s : source.symbols()) reemit(joint, s, m);
  const std::size_t forward_symbols = joint.symbols().size();
  std::vector<ValueId> model_outputs;
  for (ValueId v : source.outputs()) model_outputs.push_back(mapped(m, v));

  // Which joint values depend on what gets gradients.
  std::vector<bool> needs(joint.num_values(), false);
  for (std::size_t k : grad_inputs) needs[joint.inputs()[k]] = true;
  for (ValueId p : joint_params) needs[p] = true;
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
  for (std::size_t p = 0; p < joint_params.size(); ++p) {
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
  const std::vector<ValueId> saved(saved_set.begin(), saved_set.end());  // ValueId order: deterministic

  // forward(inputs..., parameters...) -> (outputs..., saved...)
  Remap fm;
  out.forward.name = "forward";
  out.forward.constructed_by = "autodiff";
  for (std::size_t k = 0; k < source.inputs().size(); ++k)
    fm[joint.inputs()[k]] = out.forward.add_input(joint.value(joint.inputs()[k]).source_name,
                                                  joint.type(joint.inputs()[k]));
  for (ValueId p : joint_params) fm[p] = out.forward.add_input(joint.value(p).source_name, joint.type(p));
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
  out.forward.set_outputs(forward_outputs);
  out.num_outputs = model_outputs.size();

  // backward(parameters..., saved..., grad_outputs...) -> (gradients...)
  Remap bm;
  out.backward.name = "backward";
  out.backward.constructed_by = "autodiff";
  for (ValueId p : joint_params) bm[p] = out.backward.add_input(joint.value(p).source_name, joint.type(p));
  for (ValueId v : saved) bm[v] = out.backward.add_input("saved_" + joint.value(v).name, joint.type(v));
  for (ValueId g : grad_outputs) bm[g] = out.backward.add_input(joint.value(g).source_name, joint.type(g));
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
