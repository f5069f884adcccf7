// Pointwise operators: unary math and activations, binary arithmetic and comparisons with broadcasting and
// type promotion, where, masked_fill, casts.
#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

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
}

}  // namespace thunderc
