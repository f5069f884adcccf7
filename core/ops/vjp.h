// Reverse-mode rules: each differentiable operator declares one vector-Jacobian product in the file that
// declares the operator (`set_vjp(r, "relu", ...)` right after the family's r.add calls). Given the forward
// symbol and the gradients of its outputs, a rule emits backward symbols into the joint trace through a
// VjpBuilder and hands each differentiable input its gradient. core/transforms/autodiff.cpp drives the rules;
// the formulas are PyTorch's (tools/autograd/derivatives.yaml), so gradients agree with LibTorch autograd,
// including at ties and kinks (relu at 0, max at equal values).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/op.h"
#include "core/ir/trace.h"

namespace thunderc {

class VjpBuilder {
 public:
  // `output_grads[i]`: the gradient of sym's output i, or nullopt when none flows to it; `wants[i]`: whether
  // input i needs a gradient.
  VjpBuilder(Trace& trace, const BoundSymbol& sym, std::vector<std::optional<ValueId>> output_grads,
             std::vector<bool> wants);

  const BoundSymbol& sym() const { return sym_; }
  const Attrs& attrs() const { return sym_.attrs; }
  Trace& trace() { return trace_; }

  // The forward symbol's operands and results (values of the joint trace).
  bool is_tensor(std::size_t i) const { return i < sym_.inputs.size() && sym_.inputs[i].is_tensor(); }
  const Operand& operand(std::size_t i) const { return sym_.inputs.at(i); }
  ValueId in(std::size_t i) const;  // InternalError unless input i is a tensor
  ValueId out(std::size_t i = 0) const { return sym_.outputs.at(i); }
  // Copies: emitting grows the trace's value table, which would leave references dangling.
  TensorType type(ValueId v) const { return trace_.type(v); }
  Shape shape(ValueId v) const { return trace_.type(v).shape; }

  // The gradient flowing into output i; nullopt when none does (the rule may treat it as zeros).
  std::optional<ValueId> grad(std::size_t i = 0) const { return output_grads_.at(i); }
  ValueId g() const;  // grad(0), which a single-output rule always has (autodiff calls it only then)
  bool wants(std::size_t i) const { return i < wants_.size() && wants_[i]; }

  // Hands input i (when it wants one) its gradient `grad`: summed over the dimensions the forward broadcast
  // (leading ones, and size-1 ones of the input), reshaped to the input's shape when only that differs, and
  // converted to its dtype.
  void give(std::size_t i, ValueId grad);
  const std::map<std::size_t, ValueId>& given() const { return given_; }

  // Emitting: one symbol, single result; `source` is the forward symbol's.
  ValueId emit(const std::string& op, std::vector<Operand> inputs, Attrs attrs = {});
  ValueId add(Operand a, Operand b) { return emit("add", {a, b}); }
  ValueId sub(Operand a, Operand b) { return emit("sub", {a, b}); }
  ValueId mul(Operand a, Operand b) { return emit("mul", {a, b}); }
  ValueId div(Operand a, Operand b) { return emit("div", {a, b}); }
  ValueId neg(Operand a) { return emit("neg", {a}); }
  // where(cond, a, b) and the comparison cmp(a, b) ("gt", "eq", ...).
  ValueId where(ValueId cond, Operand a, Operand b) { return emit("where", {T(cond), a, b}); }
  ValueId cmp(const std::string& op, Operand a, Operand b) { return emit(op, {a, b}); }
  ValueId sum(ValueId v, std::vector<std::int64_t> dims, bool keepdim);
  ValueId reshape(ValueId v, const Shape& shape);
  ValueId permute(ValueId v, std::vector<std::int64_t> dims);
  ValueId transpose_last2(ValueId v);  // swaps the last two dimensions
  ValueId expand(ValueId v, const Shape& shape);
  ValueId cast(ValueId v, DType dtype);  // to_dtype, or v itself when it already has the dtype
  ValueId zeros(const TensorType& type);  // an expanded 0-dim constant
  // Sums `v` down to `shape` over the dimensions broadcasting added or stretched (the reverse of expand).
  ValueId sum_to(ValueId v, const Shape& shape);

  static Operand T(ValueId v) { return Operand::tensor(v); }
  static Operand N(double x) { return Operand::number(x); }

 private:
  Trace& trace_;
  const BoundSymbol& sym_;
  std::vector<std::optional<ValueId>> output_grads_;
  std::vector<bool> wants_;
  std::map<std::size_t, ValueId> given_;
};

// Declares `name`'s rule (InternalError if the operator is unknown or already has one).
void set_vjp(OpRegistry& r, const std::string& name, VjpFn rule);

}  // namespace thunderc
