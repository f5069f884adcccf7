// Meta functions of the pointwise operators: broadcasting and type promotion, checked against the answers
// of PyTorch 1.13 (torch.result_type, torch.promote_types, and running the ops), hard-coded here.
#include "core/ops/meta_util.h"
#include "core_test_util.h"

using namespace coretest;

namespace {
constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i1 = DType::Int8, i2 = DType::Int16, i4 = DType::Int32,
                i8 = DType::Int64, f2 = DType::Float16, bf = DType::BFloat16, f4 = DType::Float32,
                f8 = DType::Float64, c4 = DType::Complex64, c8 = DType::Complex128;
}  // namespace

TEST_CASE("dtypes: names, sizes, parsing and torch.promote_types") {
  CHECK(std::string(dtype_name(f4)) == "float32");
  CHECK(std::string(dtype_short_name(bf)) == "bf16");
  CHECK(std::string(dtype_short_name(b1)) == "b8");
  CHECK(dtype_size(f8) == 8);
  CHECK(dtype_size(bf) == 2);
  CHECK(dtype_size(b1) == 1);
  CHECK(parse_dtype("float") == f4);
  CHECK(parse_dtype("long") == i8);
  CHECK(parse_dtype("int") == i4);
  CHECK(parse_dtype("half") == f2);
  CHECK(parse_dtype("double") == f8);
  CHECK(parse_dtype("i64") == i8);
  CHECK(parse_dtype("bool") == b1);
  CHECK_FALSE(parse_dtype("float8").has_value());
  CHECK_FALSE(parse_dtype("").has_value());
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DType>(i);
    CHECK(parse_dtype(dtype_name(d)) == d);
    CHECK(parse_dtype(dtype_short_name(d)) == d);
    CHECK(is_floating(d) + is_integral(d) + is_bool(d) + is_complex(d) == 1);
  }
  // torch.promote_types(row, column), printed by PyTorch 1.13 (c4/c8: complex64/complex128).
  const DType expected[kNumDTypes][kNumDTypes] = {
      {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8}, {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8}, {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, c4, c8}, {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, c4, c8},
      {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, c4, c8}, {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, c4, c8},
      {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, c4, c8}, {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
      {c4, c4, c4, c4, c4, c4, c4, c4, c4, c8, c4, c8}, {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
  };
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b) {
      CAPTURE(a);
      CAPTURE(b);
      CHECK(promote_types(static_cast<DType>(a), static_cast<DType>(b)) == expected[a][b]);
    }
}

TEST_CASE("devices") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::cuda(2).str() == "cuda:2");
  CHECK_THROWS_AS(Device::parse("gpu"), UserError);
  CHECK_THROWS_AS(Device::parse("cuda:"), UserError);
  CHECK_THROWS_AS(Device::parse("cuda:x"), UserError);
}

OPS_TEST_CASE("meta add/sub/mul/pow/maximum/minimum: broadcasting", "add", "sub", "mul", "pow", "maximum",
              "minimum") {
  for (const char* name : {"add", "sub", "mul", "pow", "maximum", "minimum"}) {
    CAPTURE(name);
    CHECK(meta_shape(name, {T(f4, {2, 1, 4}), T(f4, {3, 1})}) == Shape{2, 3, 4});
    CHECK(meta_shape(name, {T(f4, {5}), T(f4, {})}) == Shape{5});
    CHECK(meta_shape(name, {T(f4, {}), T(f4, {})}) == Shape{});
    CHECK(meta_shape(name, {T(f4, {1}), T(f4, {7, 1, 1})}) == Shape{7, 1, 1});
    CHECK(meta_shape(name, {T(f4, {0, 1}), T(f4, {1, 3})}) == Shape{0, 3});
    CHECK(meta_shape(name, {T(f4, {2, 3}), S(2)}) == Shape{2, 3});
    CHECK(meta_shape(name, {S(2.0), T(f4, {4, 1})}) == Shape{4, 1});
    CHECK_USER_ERROR(meta_error(name, {T(f4, {2, 3}), T(f4, {4})}), name, "[2, 3]", "[4]", "broadcast");
    CHECK_USER_ERROR(meta_error(name, {T(f4, {2, 3, 5}), T(f4, {4, 1})}), "[2, 3, 5]", "[4, 1]");
    // Promotion is shared by all of them.
    CHECK(meta_dtype(name, {T(i4, {2}), S(2.5)}) == f4);
    CHECK(meta_dtype(name, {T(u1, {2}), T(i1, {2})}) == i2);
  }
}

TEST_CASE("broadcast_shapes directly") {
  CHECK(broadcast_shapes({{8, 1, 6, 1}, {7, 1, 5}}, "op") == Shape{8, 7, 6, 5});
  CHECK(broadcast_shapes({{}, {}, {}}, "op") == Shape{});
  CHECK(broadcast_shapes({{3}, {1, 3}, {2, 1, 1}}, "op") == Shape{2, 1, 3});
  std::string msg;
  try {
    broadcast_shapes({{2}, {3}}, "myop");
  } catch (const UserError& e) {
    msg = e.what();
  }
  CHECK(contains(msg, "myop"));
  CHECK(contains(msg, "[2] and [3]"));
}

OPS_TEST_CASE("meta add: type promotion as torch.result_type", "add") {
  struct Case {
    const char* what;
    std::vector<Arg> args;
    DType want;
  };
  const std::vector<Case> cases = {
      {"int tensor + float number", {T(i4, {2}), S(2.5)}, f4},
      {"int64 tensor + float64 0-dim tensor", {T(i8, {2}), T(f8, {})}, f8},
      {"float16 tensor + float64 0-dim tensor", {T(f2, {2}), T(f8, {})}, f2},
      {"bool + bool", {T(b1, {2}), T(b1, {2})}, b1},
      {"uint8 + int8", {T(u1, {2}), T(i1, {2})}, i2},
      {"float16 tensor + int number", {T(f2, {2}), S(2)}, f2},
      {"float16 tensor + float number", {T(f2, {2}), S(2.5)}, f2},
      {"int32 tensor + bool number", {T(i4, {2}), S(true)}, i4},
      {"bool tensor + int number", {T(b1, {2}), S(2)}, i8},
      {"bool tensor + float number", {T(b1, {2}), S(2.5)}, f4},
      {"uint8 tensor + int64 0-dim", {T(u1, {2}), T(i8, {})}, u1},
      {"int8 0-dim + float number", {T(i1, {}), S(2.5)}, f4},
      {"int8 0-dim + int number", {T(i1, {}), S(2)}, i1},
      {"int8 0-dim + int32 0-dim", {T(i1, {}), T(i4, {})}, i4},
      {"bfloat16 + float16", {T(bf, {2}), T(f2, {2})}, f4},
      {"bool tensor + int8 0-dim", {T(b1, {2}), T(i1, {})}, i1},
      {"bool tensor + float64 0-dim", {T(b1, {2}), T(f8, {})}, f8},
      {"float64 0-dim + int number", {T(f8, {}), S(2)}, f8},
      {"float16 0-dim + int32 tensor", {T(f2, {}), T(i4, {2})}, f2},
      {"float number + int64 tensor (number first)", {S(0.5), T(i8, {3})}, f4},
      {"int32 + int64", {T(i4, {2}), T(i8, {2})}, i8},
      {"float32 + float64", {T(f4, {2}), T(f8, {2})}, f8},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(meta_dtype("add", c.args) == c.want);
  }
}

TEST_CASE("result_type directly, None operands ignored") {
  TensorType a = tt(i4, {2}), z = tt(f8, {});
  std::vector<OperandInfo> ops(3);
  ops[0].kind = OperandKind::Tensor;
  ops[0].tensor = &a;
  ops[1].kind = OperandKind::None;
  ops[2].kind = OperandKind::Tensor;
  ops[2].tensor = &z;
  CHECK(result_type(ops) == f8);
  ops[2].kind = OperandKind::Scalar;
  ops[2].scalar = Scalar(true);
  CHECK(result_type(ops) == i4);
}

OPS_TEST_CASE("meta div: true division and rounding modes", "div") {
  CHECK(meta_dtype("div", {T(i4, {2}), T(i4, {2})}) == f4);
  CHECK(meta_dtype("div", {T(i8, {2}), S(2)}) == f4);
  CHECK(meta_dtype("div", {T(b1, {2}), T(b1, {2})}) == f4);
  CHECK(meta_dtype("div", {T(f2, {2}), S(2)}) == f2);
  CHECK(meta_dtype("div", {T(f8, {2}), T(f4, {2})}) == f8);
  CHECK(meta_dtype("div", {T(i4, {2}), T(i4, {2})}, {{"rounding_mode", std::string("floor")}}) == i4);
  CHECK(meta_dtype("div", {T(i4, {2}), T(i8, {})}, {{"rounding_mode", std::string("trunc")}}) == i4);
  CHECK(meta_dtype("div", {T(i4, {2}), S(2.5)}, {{"rounding_mode", std::string("floor")}}) == f4);
  CHECK(meta_shape("div", {T(f4, {3, 1}), T(f4, {4})}) == Shape{3, 4});
  CHECK_USER_ERROR(meta_error("div", {T(f4, {2}), S(2)}, {{"rounding_mode", std::string("round")}}),
                   "rounding_mode", "'round'");
}

OPS_TEST_CASE("meta comparisons and logical ops give bool", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
              "logical_or") {
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i4, {2, 1}), S(2.5)}) == tt(b1, {2, 1}));
    CHECK(meta1(name, {T(f2, {3}), T(f8, {2, 1})}) == tt(b1, {2, 3}));
    CHECK(meta1(name, {S(1), T(b1, {})}) == tt(b1, {}));
    CHECK_USER_ERROR(meta_error(name, {T(f4, {3}), T(f4, {2})}), "[3]", "[2]");
  }
}

TEST_CASE("meta binary: devices and two numbers") {
  auto cuda = [](DType dt, Shape s) { return T(tt(dt, std::move(s), Device::cuda())); };
  CHECK(meta1("add", {cuda(f4, {2}), cuda(f4, {2})}).device == Device::cuda());
  // A 0-dim CPU tensor may join a CUDA tensor.
  CHECK(meta1("add", {T(f4, {}), cuda(f4, {2})}).device == Device::cuda());
  CHECK(meta1("mul", {cuda(f4, {}), S(2)}).device == Device::cuda());
  CHECK_USER_ERROR(meta_error("add", {T(f4, {2}), cuda(f4, {2})}), "different devices", "cpu", "cuda:0");
  // Two numbers never reach a meta function (the frontend folds them): an internal error.
  CHECK_THROWS_AS(meta("add", {S(1), S(2)}), InternalError);
}

OPS_TEST_CASE("meta unary: dtype rules", "relu", "neg", "abs", "hardtanh", "clamp", "exp", "log", "sqrt", "rsqrt",
              "reciprocal", "sin", "cos", "erf", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid",
              "leaky_relu", "logical_not") {
  // Integer-preserving (torch.relu(int32) is int32).
  for (const char* name : {"relu", "neg", "abs", "hardtanh", "clamp"}) {
    CAPTURE(name);
    Attrs a = std::string(name) == "clamp" ? Attrs{{"min", I(0)}} : Attrs{};  // torch.clamp(int32, min=0): int32
    CHECK(meta1(name, {T(i4, {2, 3})}, a) == tt(i4, {2, 3}));
    CHECK(meta1(name, {T(f2, {})}, a) == tt(f2, {}));
  }
  // Integer to float32 (torch.exp(int32) and torch.exp(bool) are float32).
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "sigmoid", "tanh"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i4, {4})}) == tt(f4, {4}));
    CHECK(meta1(name, {T(b1, {4})}) == tt(f4, {4}));
    CHECK(meta1(name, {T(i8, {})}) == tt(f4, {}));
    CHECK(meta1(name, {T(f8, {1, 2})}) == tt(f8, {1, 2}));
    CHECK(meta1(name, {T(bf, {1})}) == tt(bf, {1}));
  }
  // Floating point only (torch rejects integer inputs).
  for (const char* name : {"gelu", "silu", "hardswish", "hardsigmoid", "leaky_relu"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f2, {5})}) == tt(f2, {5}));
    CHECK_USER_ERROR(meta_error(name, {T(i4, {5})}), name, "floating point", "int32");
  }
  CHECK(meta1("logical_not", {T(f4, {2})}) == tt(b1, {2}));
  CHECK(meta1("logical_not", {T(i8, {})}) == tt(b1, {}));
  // Devices are kept.
  CHECK(meta1("tanh", {T(tt(f4, {2}, Device::cuda(1)))}).device == Device::cuda(1));
  // Attributes are typed: gelu's approximate is a string.
  CHECK(meta1("gelu", {T(f4, {1})}, {{"approximate", std::string("tanh")}}) == tt(f4, {1}));
  CHECK_THROWS_AS(meta("gelu", {T(f4, {1})}, {{"approximate", true}}), InternalError);
  CHECK(meta1("clamp", {T(f4, {1})}, {{"min", None{}}, {"max", 6.0}}) == tt(f4, {1}));
}

OPS_TEST_CASE("meta math, rounding and predicates: dtype rules", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
              "acosh", "atanh", "expm1", "log1p", "log2", "log10", "ceil", "floor", "trunc", "round", "sign", "isnan",
              "isinf", "bitwise_not", "elu") {
  // Integer to float32, as torch.atan(int32).
  for (const char* name : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p",
                           "log2", "log10"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i4, {4})}) == tt(f4, {4}));
    CHECK(meta1(name, {T(b1, {})}) == tt(f4, {}));
    CHECK(meta1(name, {T(f8, {1, 2})}) == tt(f8, {1, 2}));
    CHECK(meta1(name, {T(bf, {3})}) == tt(bf, {3}));
  }
  // Rounding and sign keep the dtype (torch.floor(int64) is int64).
  for (const char* name : {"ceil", "floor", "trunc", "round", "sign"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i8, {2, 3})}) == tt(i8, {2, 3}));
    CHECK(meta1(name, {T(f2, {})}) == tt(f2, {}));
  }
  for (const char* name : {"isnan", "isinf"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f4, {2})}) == tt(b1, {2}));
    CHECK(meta1(name, {T(i4, {})}) == tt(b1, {}));
  }
  CHECK(meta1("bitwise_not", {T(i1, {3})}) == tt(i1, {3}));
  CHECK(meta1("bitwise_not", {T(b1, {3})}) == tt(b1, {3}));
  CHECK_USER_ERROR(meta_error("bitwise_not", {T(f4, {3})}), "bitwise_not", "integer or bool", "float32");
  CHECK(meta1("elu", {T(f4, {2})}, {{"alpha", 0.5}}) == tt(f4, {2}));
  CHECK_USER_ERROR(meta_error("elu", {T(i8, {2})}), "elu", "floating point", "int64");
}

OPS_TEST_CASE("meta binary math and bitwise ops", "atan2", "fmod", "remainder", "logical_xor", "bitwise_and",
              "bitwise_or", "bitwise_xor") {
  CHECK(meta1("atan2", {T(i4, {2, 1}), T(i8, {3})}) == tt(f4, {2, 3}));  // integers to float32
  CHECK(meta1("atan2", {T(f8, {2}), S(1)}) == tt(f8, {2}));
  for (const char* name : {"fmod", "remainder"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i4, {2}), S(3)}) == tt(i4, {2}));  // integers stay integers
    CHECK(meta1(name, {T(i4, {2}), S(2.5)}) == tt(f4, {2}));
    CHECK(meta1(name, {T(f2, {3, 1}), T(f4, {4})}) == tt(f4, {3, 4}));
  }
  CHECK(meta1("logical_xor", {T(f4, {2}), T(i4, {2})}) == tt(b1, {2}));
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(i1, {2}), T(i8, {2})}) == tt(i8, {2}));
    CHECK(meta1(name, {T(i4, {2}), S(7)}) == tt(i4, {2}));
    CHECK(meta1(name, {T(b1, {2}), T(b1, {1})}) == tt(b1, {2}));
    CHECK(meta1(name, {T(i4, {2}), T(b1, {2})}) == tt(i4, {2}));
    CHECK_USER_ERROR(meta_error(name, {T(i4, {2}), S(2.5)}), name, "integers or bools", "float32");
    CHECK_USER_ERROR(meta_error(name, {T(f8, {2}), T(i4, {2})}), name, "float64");
  }
}

OPS_TEST_CASE("meta to_dtype", "to_dtype") {
  CHECK(meta1("to_dtype", {T(f4, {2, 3})}, {{"dtype", f2}}) == tt(f2, {2, 3}));
  CHECK(meta1("to_dtype", {T(i8, {})}, {{"dtype", b1}}) == tt(b1, {}));
  CHECK(meta1("to_dtype", {T(tt(f4, {1}, Device::cuda()))}, {{"dtype", bf}}).device == Device::cuda());
  // dtype is required and not nullable.
  CHECK_THROWS_AS(meta("to_dtype", {T(f4, {2})}), InternalError);
  CHECK_THROWS_AS(meta("to_dtype", {T(f4, {2})}, {{"dtype", None{}}}), InternalError);
}

OPS_TEST_CASE("meta where", "where") {
  CHECK(meta1("where", {T(b1, {2, 1}), T(i4, {3}), S(2.5)}) == tt(f4, {2, 3}));
  CHECK(meta1("where", {T(b1, {2}), T(i4, {2}), T(i1, {2})}) == tt(i4, {2}));
  CHECK(meta1("where", {T(b1, {2}), S(1.0), S(0)}) == tt(f4, {2}));
  CHECK(meta1("where", {T(b1, {4, 1, 1}), T(f2, {1, 3, 1}), T(f8, {})}) == tt(f2, {4, 3, 1}));
  CHECK_USER_ERROR(meta_error("where", {T(f4, {2}), T(f4, {2}), T(f4, {2})}), "condition", "bool", "float32");
  CHECK_USER_ERROR(meta_error("where", {T(b1, {2}), T(f4, {3}), T(f4, {1})}), "where", "[2]", "[3]");
}

OPS_TEST_CASE("meta masked_fill", "masked_fill") {
  // The input's dtype is kept (torch: int32.masked_fill(mask, 2.5) is int32); shapes broadcast.
  CHECK(meta1("masked_fill", {T(i4, {2}), T(b1, {2}), S(2.5)}) == tt(i4, {2}));
  CHECK(meta1("masked_fill", {T(f2, {3, 1}), T(b1, {4}), S(1)}) == tt(f2, {3, 4}));
  CHECK(meta1("masked_fill", {T(f4, {2, 2}), T(b1, {2, 2}), T(f8, {})}) == tt(f4, {2, 2}));
  CHECK_USER_ERROR(meta_error("masked_fill", {T(f4, {2}), T(i8, {2}), S(0)}), "mask", "bool", "int64");
  CHECK_USER_ERROR(meta_error("masked_fill", {T(f4, {2}), T(b1, {2}), T(f4, {2})}), "value", "0-dim", "[2]");
  CHECK_USER_ERROR(meta_error("masked_fill", {T(f4, {2}), T(b1, {3}), S(0)}), "[2]", "[3]");
}
