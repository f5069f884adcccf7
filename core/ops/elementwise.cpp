// Pointwise operators: unary math and activations, binary arithmetic and comparisons with broadcasting and
// type promotion, where, masked_fill, casts.
#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"
#include "core/ops/vjp.h"

#include <cmath>
#include <numeric>

namespace thunderc {

namespace {

enum class UnaryDType {
  Same,       // relu(int) stays int
  ToFloat,    // exp(int) -> float32, as PyTorch's int-to-float ops
  FloatOnly,  // gelu, silu, ...: PyTorch rejects integer inputs
  ToBool,     // logical_not, isnan
  Integer,    // bitwise_not: integer or bool input, same dtype
};

void add_unary(OpRegistry& r, const std::string& name, UnaryDType rule, std::vector<AttrSpec> attrs,
               const std::string& doc) {
  r.add({name, OpCategory::Elementwise, {{"a"}}, std::move(attrs),
         [rule](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType t = m.tensor(0);
           switch (rule) {
             case UnaryDType::Same: break;
             case UnaryDType::ToFloat:
               if (!is_floating(t.dtype)) t.dtype = DType::Float32;
               break;
             case UnaryDType::FloatOnly: require_floating(t, m.op.name, "the input"); break;
             case UnaryDType::ToBool: t.dtype = DType::Bool; break;
             case UnaryDType::Integer:
               if (is_floating(t.dtype))
                 user_error(m.op.name, ": the input must be an integer or bool tensor, got ", dtype_name(t.dtype));
               break;
           }
           return {t};
         },
         doc});
}

enum class BinaryDType {
  Promote,      // torch.result_type
  TrueDivide,   // result_type, integers -> float32
  Compare,      // bool
  Logical,      // bool
  IntToFloat,   // result_type, integers and bool -> float32 (atan2)
  FloatOnly,    // result_type, which must be floating (hypot: ATen refuses integers)
  Integer,      // result_type, which must be an integer or bool (bitwise_and)
};

void add_binary(OpRegistry& r, const std::string& name, BinaryDType rule, std::vector<AttrSpec> attrs,
                const std::string& doc) {
  r.add({name, OpCategory::Elementwise, {{"a", false, true}, {"b", false, true}}, std::move(attrs),
         [rule](const MetaArgs& m) -> std::vector<TensorType> {
           const auto& in = m.inputs;
           if (in[0].kind != OperandKind::Tensor && in[1].kind != OperandKind::Tensor)
             internal_error(m.op.name, " of two numbers (should have been folded at import)");
           TensorType out;
           out.shape = broadcast_shapes({operand_shape(in[0]), operand_shape(in[1])}, m.op.name);
           out.device = common_device(m);
           DType dt = result_type(in);
           switch (rule) {
             case BinaryDType::Promote: break;
             case BinaryDType::TrueDivide:
               if (!m.attrs.is_none("rounding_mode")) {
                 const std::string& mode = m.attrs.get_string("rounding_mode");
                 if (mode != "trunc" && mode != "floor")
                   user_error("div: rounding_mode must be None, 'trunc' or 'floor', got ", quote_string(mode));
               } else if (!is_floating(dt)) {
                 dt = DType::Float32;
               }
               break;
             case BinaryDType::Compare:
             case BinaryDType::Logical: dt = DType::Bool; break;
             case BinaryDType::IntToFloat:
               if (!is_floating(dt)) dt = DType::Float32;
               break;
             case BinaryDType::FloatOnly:
               if (!is_floating(dt))
                 user_error(m.op.name, ": the operands must be floating point, got ", dtype_name(dt));
               break;
             case BinaryDType::Integer:
               if (is_floating(dt))
                 user_error(m.op.name, ": the operands must be integers or bools, got ", dtype_name(dt));
               break;
           }
           out.dtype = dt;
           return {out};
         },
         doc});
}

Operand T(ValueId v) { return Operand::tensor(v); }
Operand N(double x) { return Operand::number(x); }

// Reverse-mode rules (PyTorch's derivatives.yaml formulas). `x` is the input, `y` the output, `g` dL/dy.
void register_elementwise_vjps(OpRegistry& r) {
  using V = VjpBuilder;
  // Unary ops whose derivative is g * f'(x, y) with f' built from elementwise ops.
  auto unary = [&](const char* name, std::function<ValueId(V&, ValueId x, ValueId y, ValueId g)> dx) {
    set_vjp(r, name, [dx](V& b) {
      if (b.wants(0)) b.give(0, dx(b, b.in(0), b.out(), b.g()));
    });
  };
  unary("neg", [](V& b, ValueId, ValueId, ValueId g) { return b.neg(T(g)); });
  // ATen's threshold_backward: the gradient passes where the result is > 0.
  unary("relu", [](V& b, ValueId, ValueId y, ValueId g) { return b.where(b.cmp("gt", T(y), N(0)), T(g), N(0)); });
  unary("abs", [](V& b, ValueId x, ValueId, ValueId g) { return b.mul(T(g), T(b.emit("sign", {T(x)}))); });
  unary("exp", [](V& b, ValueId, ValueId y, ValueId g) { return b.mul(T(g), T(y)); });
  unary("expm1", [](V& b, ValueId, ValueId y, ValueId g) { return b.mul(T(g), T(b.add(T(y), N(1)))); });
  unary("log", [](V& b, ValueId x, ValueId, ValueId g) { return b.div(T(g), T(x)); });
  unary("log1p", [](V& b, ValueId x, ValueId, ValueId g) { return b.div(T(g), T(b.add(T(x), N(1)))); });
  unary("log2", [](V& b, ValueId x, ValueId, ValueId g) { return b.div(T(g), T(b.mul(T(x), N(std::log(2.0))))); });
  unary("log10", [](V& b, ValueId x, ValueId, ValueId g) { return b.div(T(g), T(b.mul(T(x), N(std::log(10.0))))); });
  unary("sqrt", [](V& b, ValueId, ValueId y, ValueId g) { return b.div(T(g), T(b.mul(T(y), N(2)))); });
  // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
  unary("rsqrt", [](V& b, ValueId, ValueId y, ValueId g) {
    return b.mul(T(g), T(b.mul(T(b.mul(T(y), T(b.mul(T(y), T(y))))), N(-0.5))));
  });
  unary("reciprocal", [](V& b, ValueId, ValueId y, ValueId g) { return b.mul(T(g), T(b.neg(T(b.mul(T(y), T(y)))))); });
  unary("sin", [](V& b, ValueId x, ValueId, ValueId g) { return b.mul(T(g), T(b.emit("cos", {T(x)}))); });
  unary("cos", [](V& b, ValueId x, ValueId, ValueId g) { return b.mul(T(g), T(b.neg(T(b.emit("sin", {T(x)}))))); });
  unary("tanh", [](V& b, ValueId, ValueId y, ValueId g) {
    return b.mul(T(g), T(b.sub(N(1), T(b.mul(T(y), T(y))))));
  });
  unary("sigmoid", [](V& b, ValueId, ValueId y, ValueId g) {
    return b.mul(T(g), T(b.mul(T(y), T(b.sub(N(1), T(y))))));
  });
  unary("erf", [](V& b, ValueId x, ValueId, ValueId g) {
    ValueId e = b.emit("exp", {T(b.neg(T(b.mul(T(x), T(x)))))});
    return b.mul(T(g), T(b.mul(T(e), N(2.0 / std::sqrt(M_PI)))));
  });
  // silu'(x) = s * (1 + x * (1 - s)), s = sigmoid(x)
  unary("silu", [](V& b, ValueId x, ValueId, ValueId g) {
    ValueId sg = b.emit("sigmoid", {T(x)});
    ValueId inner = b.add(N(1), T(b.mul(T(x), T(b.sub(N(1), T(sg))))));
    return b.mul(T(g), T(b.mul(T(sg), T(inner))));
  });
  set_vjp(r, "gelu", [](V& b) {
    if (!b.wants(0)) return;
    const ValueId x = b.in(0), g = b.g();
    if (b.attrs().get_string("approximate") == "tanh") {
      // ATen's gelu_backward (tanh): with u = sqrt(2/pi) * (x + 0.044715 x^3), t = tanh(u):
      // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
      const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
      ValueId x2 = b.mul(T(x), T(x));
      ValueId u = b.mul(T(b.add(T(x), T(b.mul(T(x2), T(b.mul(T(x), N(c))))))), N(k));
      ValueId t = b.emit("tanh", {T(u)});
      ValueId left = b.mul(T(b.add(T(t), N(1))), N(0.5));
      ValueId du = b.mul(T(b.add(T(b.mul(T(x2), N(3 * c))), N(1))), N(k));
      ValueId right = b.mul(T(b.mul(T(x), N(0.5))), T(b.mul(T(b.sub(N(1), T(b.mul(T(t), T(t))))), T(du))));
      b.give(0, b.mul(T(g), T(b.add(T(left), T(right)))));
    } else {
      // Phi(x) + x phi(x)
      ValueId cdf = b.mul(T(b.add(T(b.emit("erf", {T(b.mul(T(x), N(M_SQRT1_2)))})), N(1))), N(0.5));
      ValueId pdf = b.mul(T(b.emit("exp", {T(b.mul(T(b.mul(T(x), T(x))), N(-0.5)))})), N(1.0 / std::sqrt(2 * M_PI)));
      b.give(0, b.mul(T(g), T(b.add(T(cdf), T(b.mul(T(x), T(pdf)))))));
    }
  });
  unary("leaky_relu", [](V& b, ValueId x, ValueId, ValueId g) {
    return b.where(b.cmp("gt", T(x), N(0)), T(g), T(b.mul(T(g), N(b.attrs().get_float("negative_slope")))));
  });
  // ATen's hardtanh_backward: zero where x <= min_val or x >= max_val.
  unary("hardtanh", [](V& b, ValueId x, ValueId, ValueId g) {
    ValueId inside = b.emit("logical_and", {T(b.cmp("gt", T(x), N(b.attrs().get_float("min_val")))),
                                            T(b.cmp("lt", T(x), N(b.attrs().get_float("max_val"))))});
    return b.where(inside, T(g), N(0));
  });
  // ATen's clamp_backward: the gradient passes where min <= x <= max (either bound may be absent).
  unary("clamp", [](V& b, ValueId x, ValueId, ValueId g) {
    std::optional<ValueId> keep;
    auto both = [&](ValueId c) { keep = keep ? b.emit("logical_and", {T(*keep), T(c)}) : c; };
    if (!b.attrs().is_none("min")) both(b.cmp("ge", T(x), N(b.attrs().get_float("min"))));
    if (!b.attrs().is_none("max")) both(b.cmp("le", T(x), N(b.attrs().get_float("max"))));
    return keep ? b.where(*keep, T(g), N(0)) : g;
  });
  // ATen's hardsigmoid_backward multiplies by 1.0f / 6.0f, a float constant, in every dtype: so does this.
  unary("hardsigmoid", [](V& b, ValueId x, ValueId, ValueId g) {
    ValueId inside = b.emit("logical_and", {T(b.cmp("gt", T(x), N(-3))), T(b.cmp("lt", T(x), N(3)))});
    return b.where(inside, T(b.mul(T(g), N(static_cast<double>(1.0f / 6.0f)))), N(0));
  });
  // ATen: 0 for x < -3, g * (x / 3 + 0.5) for x <= 3, g above.
  unary("hardswish", [](V& b, ValueId x, ValueId, ValueId g) {
    ValueId mid = b.mul(T(g), T(b.add(T(b.div(T(x), N(3))), N(0.5))));
    ValueId upper = b.where(b.cmp("le", T(x), N(3)), T(mid), T(g));
    return b.where(b.cmp("lt", T(x), N(-3)), N(0), T(upper));
  });
  // Rounding and sign: zero almost everywhere, as in PyTorch.
  for (const char* name : {"ceil", "floor", "trunc", "round", "sign"})
    unary(name, [](V& b, ValueId x, ValueId, ValueId) { return b.zeros(b.type(x)); });
  unary("to_dtype", [](V&, ValueId, ValueId, ValueId g) { return g; });  // give() converts back

  auto operand_or = [](V& b, std::size_t i) { return b.operand(i); };
  set_vjp(r, "add", [](V& b) {
    b.give(0, b.g());
    b.give(1, b.g());
  });
  set_vjp(r, "sub", [](V& b) {
    b.give(0, b.g());
    if (b.wants(1)) b.give(1, b.neg(T(b.g())));
  });
  set_vjp(r, "mul", [operand_or](V& b) {
    if (b.wants(0)) b.give(0, b.mul(T(b.g()), operand_or(b, 1)));
    if (b.wants(1)) b.give(1, b.mul(T(b.g()), operand_or(b, 0)));
  });
  set_vjp(r, "div", [](V& b) {
    if (!b.attrs().is_none("rounding_mode")) {  // piecewise constant: PyTorch's gradient is zero
      for (std::size_t i : {0, 1})
        if (b.wants(i)) b.give(i, b.zeros(b.type(b.in(i))));
      return;
    }
    if (b.wants(0)) b.give(0, b.div(T(b.g()), b.operand(1)));
    // d(a/b)/db = -a/b^2 = -(a/b)/b
    if (b.wants(1)) b.give(1, b.neg(T(b.div(T(b.mul(T(b.g()), T(b.out()))), b.operand(1)))));
  });
  set_vjp(r, "pow", [](V& b) {
    const Operand& base = b.operand(0);
    const Operand& ex = b.operand(1);
    if (b.wants(0)) {
      // g * e * a^(e-1), zero where e == 0 (so 0^0 has gradient 0, as ATen's pow_backward)
      if (!ex.is_tensor()) {
        const double e = ex.scalar.to_double();
        if (e == 0)
          b.give(0, b.zeros(b.type(b.in(0))));
        else
          b.give(0, b.mul(T(b.g()), T(b.mul(T(b.emit("pow", {base, N(e - 1)})), N(e)))));
      } else {
        ValueId d = b.mul(ex, T(b.emit("pow", {base, T(b.sub(ex, N(1)))})));
        d = b.where(b.cmp("eq", ex, N(0)), N(0), T(d));
        b.give(0, b.mul(T(b.g()), T(d)));
      }
    }
    if (b.wants(1)) {
      // g * a^e * log(a), zero where a == 0 and e >= 0 (ATen's pow_backward_exponent)
      if (!base.is_tensor()) {
        const double a = base.scalar.to_double();
        b.give(1, a == 0 ? b.zeros(b.type(b.in(1))) : b.mul(T(b.g()), T(b.mul(T(b.out()), N(std::log(a))))));
      } else {
        ValueId d = b.mul(T(b.out()), T(b.emit("log", {base})));
        ValueId zero_base = b.emit("logical_and", {T(b.cmp("eq", base, N(0))), T(b.cmp("ge", ex, N(0)))});
        b.give(1, b.mul(T(b.g()), T(b.where(zero_base, N(0), T(d)))));
      }
    }
  });
  // ATen: at ties each side gets half the gradient.
  for (const char* name : {"maximum", "minimum"}) {
    const bool is_max = std::string(name) == "maximum";
    set_vjp(r, name, [is_max](V& b) {
      const Operand a = b.operand(0), c = b.operand(1);
      ValueId tie = b.cmp("eq", a, c);
      ValueId half = b.mul(T(b.g()), N(0.5));
      if (b.wants(0)) {
        ValueId wins = b.cmp(is_max ? "gt" : "lt", a, c);
        b.give(0, b.where(tie, T(half), T(b.where(wins, T(b.g()), N(0)))));
      }
      if (b.wants(1)) {
        ValueId wins = b.cmp(is_max ? "lt" : "gt", a, c);
        b.give(1, b.where(tie, T(half), T(b.where(wins, T(b.g()), N(0)))));
      }
    });
  }
  set_vjp(r, "where", [](V& b) {
    if (b.wants(1)) b.give(1, b.where(b.in(0), T(b.g()), N(0)));
    if (b.wants(2)) b.give(2, b.where(b.in(0), N(0), T(b.g())));
  });
  set_vjp(r, "masked_fill", [](V& b) {
    if (b.wants(0)) b.give(0, b.where(b.in(1), N(0), T(b.g())));
    if (b.wants(2)) {  // a 0-dim value tensor: the sum of what it filled
      ValueId filled = b.where(b.in(1), T(b.g()), N(0));
      std::vector<std::int64_t> all(b.shape(filled).size());
      std::iota(all.begin(), all.end(), 0);
      b.give(2, all.empty() ? filled : b.sum(filled, all, false));
    }
  });
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  using U = UnaryDType;
  add_unary(r, "relu", U::Same, {}, "max(a, 0)");
  add_unary(r, "neg", U::Same, {}, "-a");
  add_unary(r, "abs", U::Same, {}, "|a|");
  add_unary(r, "exp", U::ToFloat, {}, "e^a");
  add_unary(r, "log", U::ToFloat, {}, "natural logarithm");
  add_unary(r, "sqrt", U::ToFloat, {}, "square root");
  add_unary(r, "rsqrt", U::ToFloat, {}, "1 / sqrt(a)");
  add_unary(r, "reciprocal", U::ToFloat, {}, "1 / a");
  add_unary(r, "sin", U::ToFloat, {}, "sine");
  add_unary(r, "cos", U::ToFloat, {}, "cosine");
  add_unary(r, "erf", U::ToFloat, {}, "error function");
  add_unary(r, "sigmoid", U::ToFloat, {}, "1 / (1 + e^-a)");
  add_unary(r, "tanh", U::ToFloat, {}, "hyperbolic tangent");
  add_unary(r, "tan", U::ToFloat, {}, "tangent");
  add_unary(r, "asin", U::ToFloat, {}, "inverse sine");
  add_unary(r, "acos", U::ToFloat, {}, "inverse cosine");
  add_unary(r, "atan", U::ToFloat, {}, "inverse tangent");
  add_unary(r, "sinh", U::ToFloat, {}, "hyperbolic sine");
  add_unary(r, "cosh", U::ToFloat, {}, "hyperbolic cosine");
  add_unary(r, "asinh", U::ToFloat, {}, "inverse hyperbolic sine");
  add_unary(r, "acosh", U::ToFloat, {}, "inverse hyperbolic cosine");
  add_unary(r, "atanh", U::ToFloat, {}, "inverse hyperbolic tangent");
  add_unary(r, "expm1", U::ToFloat, {}, "e^a - 1");
  add_unary(r, "log1p", U::ToFloat, {}, "log(1 + a)");
  add_unary(r, "log2", U::ToFloat, {}, "base-2 logarithm");
  add_unary(r, "log10", U::ToFloat, {}, "base-10 logarithm");
  add_unary(r, "ceil", U::Same, {}, "smallest integer >= a (integers unchanged)");
  add_unary(r, "floor", U::Same, {}, "largest integer <= a (integers unchanged)");
  add_unary(r, "trunc", U::Same, {}, "a rounded toward zero (integers unchanged)");
  add_unary(r, "round", U::Same, {}, "a rounded to the nearest integer, halves to even (integers unchanged)");
  add_unary(r, "sign", U::Same, {}, "-1, 0 or 1 by the sign of a (0 for NaN, as ATen)");
  add_unary(r, "isnan", U::ToBool, {}, "a is NaN");
  add_unary(r, "isinf", U::ToBool, {}, "a is +inf or -inf");
  add_unary(r, "bitwise_not", U::Integer, {}, "~a (not a for bool)");
  add_unary(r, "elu", U::FloatOnly,
            {{"alpha", AttrType::Float, false, 1.0},
             {"scale", AttrType::Float, false, 1.0},
             {"input_scale", AttrType::Float, false, 1.0}},
            "scale * a if a > 0 else scale * alpha * (e^(input_scale * a) - 1)");
  add_unary(r, "gelu", U::FloatOnly, {{"approximate", AttrType::String, false, std::string("none")}},
            "Gaussian error linear unit; approximate is 'none' (erf) or 'tanh'");
  add_unary(r, "silu", U::FloatOnly, {}, "a * sigmoid(a)");
  add_unary(r, "hardswish", U::FloatOnly, {}, "a * relu6(a + 3) / 6");
  add_unary(r, "hardsigmoid", U::FloatOnly, {}, "relu6(a + 3) / 6");
  add_unary(r, "hardtanh", U::Same,
            {{"min_val", AttrType::Float, false, -1.0}, {"max_val", AttrType::Float, false, 1.0}},
            "clamp(a, min_val, max_val); relu6 is hardtanh(a, 0, 6)");
  add_unary(r, "leaky_relu", U::FloatOnly, {{"negative_slope", AttrType::Float, false, 0.01}},
            "a if a > 0 else negative_slope * a");
  add_unary(r, "clamp", U::Same,
            {{"min", AttrType::Float, true, None{}}, {"max", AttrType::Float, true, None{}}},
            "min(max(a, min), max); either bound may be None");
  add_unary(r, "logical_not", U::ToBool, {}, "not a");
  r.add({"to_dtype", OpCategory::Elementwise, {{"a"}}, {{"dtype", AttrType::DType}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType t = m.tensor(0);
           t.dtype = m.attrs.get_dtype("dtype");
           return {t};
         },
         "converts the element type (Thunder's convert_element_type)"});

  using B = BinaryDType;
  add_binary(r, "add", B::Promote, {}, "a + b");
  add_binary(r, "sub", B::Promote, {}, "a - b");
  add_binary(r, "mul", B::Promote, {}, "a * b");
  add_binary(r, "div", B::TrueDivide, {{"rounding_mode", AttrType::String, true, None{}}},
             "a / b; rounding_mode None (true division), 'trunc' or 'floor'");
  add_binary(r, "pow", B::Promote, {}, "a ** b");
  add_binary(r, "maximum", B::Promote, {}, "elementwise max");
  add_binary(r, "minimum", B::Promote, {}, "elementwise min");
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"}) add_binary(r, cmp, B::Compare, {}, "comparison");
  add_binary(r, "logical_and", B::Logical, {}, "a and b");
  add_binary(r, "logical_or", B::Logical, {}, "a or b");
  add_binary(r, "logical_xor", B::Logical, {}, "a xor b");
  add_binary(r, "bitwise_and", B::Integer, {}, "a & b");
  add_binary(r, "bitwise_or", B::Integer, {}, "a | b");
  add_binary(r, "bitwise_xor", B::Integer, {}, "a ^ b");
  add_binary(r, "atan2", B::IntToFloat, {}, "atan(a / b) in the quadrant of (b, a)");
  add_binary(r, "hypot", B::FloatOnly, {}, "sqrt(a^2 + b^2) without overflow or underflow on the way (C's hypot)");
  add_binary(r, "fmod", B::Promote, {}, "a - b * trunc(a / b), the sign of a (C's fmod)");
  add_binary(r, "remainder", B::Promote, {}, "a - b * floor(a / b), the sign of b (Python's %)");

  r.add({"where", OpCategory::Elementwise, {{"condition"}, {"a", false, true}, {"b", false, true}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           if (!is_bool(m.tensor(0).dtype))
             user_error("where: condition must be a bool tensor, got ", dtype_name(m.tensor(0).dtype));
           TensorType out;
           out.shape = broadcast_shapes(
               {m.tensor(0).shape, operand_shape(m.inputs[1]), operand_shape(m.inputs[2])}, "where");
           out.dtype = result_type({m.inputs[1], m.inputs[2]});
           out.device = common_device(m);
           return {out};
         },
         "condition ? a : b"});
  r.add({"masked_fill", OpCategory::Elementwise, {{"a"}, {"mask"}, {"value", false, true}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           if (!is_bool(m.tensor(1).dtype))
             user_error("masked_fill: mask must be a bool tensor, got ", dtype_name(m.tensor(1).dtype));
           if (m.inputs[2].kind == OperandKind::Tensor && m.tensor(2).rank() != 0)
             user_error("masked_fill: value must be a number or a 0-dim tensor, got shape ",
                        shape_str(m.tensor(2).shape));
           TensorType out = m.tensor(0);
           out.shape = broadcast_shapes({m.tensor(0).shape, m.tensor(1).shape}, "masked_fill");
           out.device = common_device(m);
           return {out};
         },
         "a with value where mask is true"});
  register_elementwise_vjps(r);
}

}  // namespace thunderc
