#include "core/transforms/optimizer.h"

#include <algorithm>

#include "core/ir/error.h"
#include "core/ir/op.h"

namespace thunderc {

namespace {

Operand T(ValueId v) { return Operand::tensor(v); }

// Builds the trace: parameters, gradients, state and hyperparameter inputs in the header's order.
class UpdateBuilder {
 public:
  UpdateBuilder(OptimizerProgram& prog, const std::vector<TensorType>& params) : prog_(prog), params_(params) {
    for (std::size_t i = 0; i < params.size(); ++i) p_.push_back(t().add_input("param" + std::to_string(i), params[i]));
    for (std::size_t i = 0; i < params.size(); ++i) g_.push_back(t().add_input("grad" + std::to_string(i), params[i]));
  }

  // Every parameter's input of state slot `name` (call in slot order, before any scalar).
  std::vector<ValueId> slot(const std::string& name) {
    prog_.state_slots.push_back(name);
    std::vector<ValueId> s;
    for (std::size_t i = 0; i < params_.size(); ++i)
      s.push_back(t().add_input(name + std::to_string(i), params_[i]));
    return s;
  }

  // A hyperparameter: a 0-d float32 input on the parameters' device.
  ValueId scalar(const std::string& name) {
    prog_.scalars.push_back(name);
    return t().add_input(name, TensorType{DType::Float32, {}, params_.empty() ? Device::cpu() : params_[0].device});
  }

  ValueId e(const char* name, std::vector<Operand> in) { return t().emit1(op(name), std::move(in), {}, "optimizer"); }
  ValueId add(ValueId a, ValueId b) { return e("add", {T(a), T(b)}); }
  ValueId mul(ValueId a, ValueId b) { return e("mul", {T(a), T(b)}); }
  ValueId div(ValueId a, ValueId b) { return e("div", {T(a), T(b)}); }
  // where(s != 0, a, b) for a 0-d hyperparameter s: exact selection, so a branch PyTorch skips never reaches
  // the result (0 * inf would be NaN).
  ValueId if_nonzero(ValueId s, ValueId a, ValueId b) {
    return e("where", {T(e("ne", {T(s), Operand::number(Scalar(0.0))})), T(a), T(b)});
  }

  const std::vector<ValueId>& p() const { return p_; }
  const std::vector<ValueId>& g() const { return g_; }
  Trace& t() { return prog_.trace; }

 private:
  OptimizerProgram& prog_;
  const std::vector<TensorType>& params_;
  std::vector<ValueId> p_, g_;
};

void build_sgd(UpdateBuilder& b) {
  const std::vector<ValueId> buf = b.slot("momentum_buffer");
  const ValueId neg_lr = b.scalar("neg_lr"), wd = b.scalar("weight_decay"), momentum = b.scalar("momentum"),
                momentum_now = b.scalar("momentum_now"), keep = b.scalar("one_minus_dampening"),
                nesterov = b.scalar("nesterov");
  std::vector<ValueId> new_p, new_buf;
  for (std::size_t i = 0; i < b.p().size(); ++i) {
    const ValueId p = b.p()[i];
    ValueId d = b.if_nonzero(wd, b.add(b.g()[i], b.mul(wd, p)), b.g()[i]);
    // momentum_now is 0 on the first step (the buffer starts as d) and whenever momentum is 0 (no buffer).
    const ValueId nb = b.if_nonzero(momentum_now, b.add(b.mul(buf[i], momentum_now), b.mul(keep, d)), d);
    d = b.if_nonzero(nesterov, b.add(d, b.mul(momentum, nb)), nb);
    new_p.push_back(b.add(p, b.mul(neg_lr, d)));
    new_buf.push_back(nb);
  }
  new_p.insert(new_p.end(), new_buf.begin(), new_buf.end());
  b.t().set_outputs(new_p);
}

void build_adamw(UpdateBuilder& b) {
  const std::vector<ValueId> m = b.slot("exp_avg"), v = b.slot("exp_avg_sq");
  const ValueId decay = b.scalar("decay"), beta1 = b.scalar("beta1"), one_minus_beta1 = b.scalar("one_minus_beta1"),
                beta2 = b.scalar("beta2"), one_minus_beta2 = b.scalar("one_minus_beta2"),
                neg_step = b.scalar("neg_step_size"), bc2_sqrt = b.scalar("bias_correction2_sqrt"), eps = b.scalar("eps");
  std::vector<ValueId> new_p, new_m, new_v;
  for (std::size_t i = 0; i < b.p().size(); ++i) {
    const ValueId g = b.g()[i];
    const ValueId p = b.mul(b.p()[i], decay);
    const ValueId nm = b.add(b.mul(m[i], beta1), b.mul(one_minus_beta1, g));
    const ValueId nv = b.add(b.mul(v[i], beta2), b.mul(b.mul(one_minus_beta2, g), g));
    const ValueId denom = b.add(b.div(b.e("sqrt", {T(nv)}), bc2_sqrt), eps);
    new_p.push_back(b.add(p, b.div(b.mul(neg_step, nm), denom)));
    new_m.push_back(nm);
    new_v.push_back(nv);
  }
  new_p.insert(new_p.end(), new_m.begin(), new_m.end());
  new_p.insert(new_p.end(), new_v.begin(), new_v.end());
  b.t().set_outputs(new_p);
}

// A symbol (or a region's subsymbol) the in-place update allows: elementwise, every tensor operand 0-d or of
// its output's shape.
void check_symbol(const Trace& t, const BoundSymbol& s) {
  if (s.is_region()) {
    for (const BoundSymbol& sub : s.subsymbols) check_symbol(t, sub);
    return;
  }
  THUNDERC_CHECK(s.op && s.op->category == OpCategory::Elementwise, "optimizer: ", s.op ? s.op->name : "?",
                 " is not elementwise; the in-place update needs every operator elementwise");
  for (ValueId o : s.outputs)
    for (const Operand& in : s.inputs)
      if (in.is_tensor()) {
        const Shape& shape = t.type(in.value).shape;
        THUNDERC_CHECK(shape.empty() || shape == t.type(o).shape, "optimizer: ", s.op->name, " reads ",
                       shape_str(shape), " to write ", shape_str(t.type(o).shape), "; the in-place update needs equal shapes");
      }
}

}  // namespace

const std::vector<std::string>& optimizer_kinds() {
  static const std::vector<std::string> k = {"sgd", "adamw"};
  return k;
}

OptimizerProgram build_optimizer_program(const std::string& kind, const std::vector<TensorType>& parameters) {
  const auto& kinds = optimizer_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    user_error("--optimizer must be sgd or adamw, got '", kind, "'");
  for (const TensorType& p : parameters)
    if (p.dtype != DType::Float32)
      user_error("--optimizer updates float32 parameters, this model has a ", dtype_name(p.dtype), " one");
  OptimizerProgram prog;
  prog.kind = kind;
  prog.trace.name = "optimizer_" + kind;
  UpdateBuilder b(prog, parameters);
  if (kind == "sgd") build_sgd(b);
  else build_adamw(b);
  prog.trace.constructed_by = "optimizer";
  return prog;
}

void check_in_place_update(const Trace& trace) {
  for (const BoundSymbol& s : trace.symbols()) check_symbol(trace, s);
}

}  // namespace thunderc
