// The reference interpreter behind constant folding: values for each family of operators.
#include <cmath>
#include <limits>

#include "core/transforms/reference_eval.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

// Evaluates op(operands) where every tensor operand is a constant; returns the output's elements as E.
template <typename E>
std::optional<std::vector<E>> eval(Trace& t, const std::string& name, std::vector<Operand> ins, Attrs attrs = {}) {
  ValueId out = t.emit1(op(name), std::move(ins), std::move(attrs));
  auto data = evaluate_symbol(t, t.symbols().back());
  if (!data) return std::nullopt;
  std::vector<E> v((*data)->bytes.size() / sizeof(E));
  std::memcpy(v.data(), (*data)->bytes.data(), (*data)->bytes.size());
  (void)out;
  return v;
}

}  // namespace

TEST_CASE("reference_eval: elementwise with broadcasting, promotion and scalars") {
  Trace t;
  ValueId a = t.add_constant("a", f32({2, 2}), data_of<float>({1, -2, 3, -4}));
  ValueId b = t.add_constant("b", f32({2}), data_of<float>({10, 20}));
  ValueId i = t.add_constant("i", tt(DType::Int64, {3}), data_of<std::int64_t>({7, -7, 9}));
  CHECK(*eval<float>(t, "add", {T(a), T(b)}) == std::vector<float>{11, 18, 13, 16});
  CHECK(*eval<float>(t, "mul", {T(a), N(0.5)}) == std::vector<float>{0.5f, -1, 1.5f, -2});
  CHECK(*eval<float>(t, "relu", {T(a)}) == std::vector<float>{1, 0, 3, 0});
  CHECK(*eval<float>(t, "clamp", {T(a)}, {{"min", -1.0}, {"max", 2.0}}) == std::vector<float>{1, -1, 2, -1});
  CHECK(*eval<std::int64_t>(t, "div", {T(i), N(std::int64_t{2})}, {{"rounding_mode", std::string("floor")}}) ==
        std::vector<std::int64_t>{3, -4, 4});
  CHECK(*eval<std::int64_t>(t, "div", {T(i), N(std::int64_t{2})}, {{"rounding_mode", std::string("trunc")}}) ==
        std::vector<std::int64_t>{3, -3, 4});
  CHECK(*eval<float>(t, "div", {T(i), N(std::int64_t{2})}) == std::vector<float>{3.5f, -3.5f, 4.5f});  // true division
  CHECK(*eval<unsigned char>(t, "gt", {T(a), N(0.0)}) == std::vector<unsigned char>{1, 0, 1, 0});
  CHECK(*eval<std::int64_t>(t, "pow", {T(i), N(std::int64_t{2})}) == std::vector<std::int64_t>{49, 49, 81});
  auto e = *eval<float>(t, "exp", {T(a)});
  CHECK(e[0] == static_cast<float>(std::exp(1.0)));
  auto g = *eval<float>(t, "gelu", {T(a)});
  CHECK(g[0] == doctest::Approx(0.8413447).epsilon(1e-6));
  ValueId m = t.add_constant("m", tt(DType::Bool, {2}), data_of<unsigned char>({1, 0}));
  CHECK(*eval<float>(t, "masked_fill", {T(a), T(m), N(9.0)}) == std::vector<float>{9, -2, 9, -4});
  CHECK(*eval<float>(t, "where", {T(m), T(a), N(0.0)}) == std::vector<float>{1, 0, 3, 0});
  CHECK(*eval<std::int32_t>(t, "to_dtype", {T(a)}, {{"dtype", DType::Int32}}) == std::vector<std::int32_t>{1, -2, 3, -4});
}

TEST_CASE("reference_eval: reductions") {
  Trace t;
  ValueId a = t.add_constant("a", f32({2, 3}), data_of<float>({1, 2, 3, 4, 5, 6}));
  CHECK(*eval<float>(t, "sum", {T(a)}, {{"dims", IntList{1}}}) == std::vector<float>{6, 15});
  CHECK(*eval<float>(t, "sum", {T(a)}) == std::vector<float>{21});
  CHECK(*eval<float>(t, "mean", {T(a)}, {{"dims", IntList{0}}, {"keepdim", true}}) == std::vector<float>{2.5f, 3.5f, 4.5f});
  CHECK(*eval<float>(t, "amax", {T(a)}, {{"dims", IntList{-1}}}) == std::vector<float>{3, 6});
  CHECK(*eval<double>(t, "sum", {T(a)}, {{"dims", IntList{0}}, {"dtype", DType::Float64}}) == std::vector<double>{5, 7, 9});
}

TEST_CASE("reference_eval: data movement (any dtype)") {
  Trace t;
  ValueId a = t.add_constant("a", f32({2, 3}), data_of<float>({1, 2, 3, 4, 5, 6}));
  ValueId h = t.add_constant("h", tt(DType::Float16, {2}), data_of<std::uint16_t>({0x3c00, 0x4000}));
  CHECK(*eval<float>(t, "permute", {T(a)}, {{"dims", IntList{1, 0}}}) == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(*eval<float>(t, "reshape", {T(a)}, {{"shape", IntList{3, 2}}}) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(*eval<float>(t, "slice", {T(a)}, {{"dim", I(1)}, {"start", I(0)}, {"end", I(3)}, {"step", I(2)}}) ==
        std::vector<float>{1, 3, 4, 6});
  CHECK(*eval<float>(t, "select", {T(a)}, {{"dim", I(0)}, {"index", I(1)}}) == std::vector<float>{4, 5, 6});
  ValueId row = t.emit1(op("select"), {T(a)}, {{"dim", I(0)}, {"index", I(0)}});
  CHECK_FALSE(eval<float>(t, "expand", {T(row)}, {{"shape", IntList{2, 3}}}).has_value());  // reads a non-constant
  CHECK(*eval<float>(t, "cat", {T(a), T(a)}, {{"dim", I(1)}}) ==
        std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  CHECK(*eval<std::uint16_t>(t, "expand", {T(h)}, {{"shape", IntList{2, 2}}}) ==
        std::vector<std::uint16_t>{0x3c00, 0x4000, 0x3c00, 0x4000});
}

TEST_CASE("reference_eval: declines what it cannot do exactly") {
  Trace t;
  ValueId h = t.add_constant("h", tt(DType::Float16, {2}), data_of<std::uint16_t>({0x3c00, 0x4000}));
  ValueId i = t.add_constant("i", tt(DType::Int64, {2}), data_of<std::int64_t>({1, 2}));
  ValueId z = t.add_constant("z", tt(DType::Int64, {2}), data_of<std::int64_t>({0, 1}));
  ValueId nan = t.add_constant("nan", f32({1}), data_of<float>({std::numeric_limits<float>::quiet_NaN()}));
  CHECK_FALSE(eval<std::uint16_t>(t, "exp", {T(h)}).has_value());                                        // float16 math
  CHECK_FALSE(eval<std::int64_t>(t, "div", {T(i), T(z)}, {{"rounding_mode", std::string("trunc")}}).has_value());  // / 0
  CHECK_FALSE(eval<std::int64_t>(t, "pow", {T(i), N(std::int64_t{-1})}).has_value());
  CHECK_FALSE(eval<std::int64_t>(t, "to_dtype", {T(nan)}, {{"dtype", DType::Int64}}).has_value());
  ValueId w = t.add_constant("w", f32({2, 2}), zeros(f32({2, 2})));
  t.emit1(op("matmul"), {T(w), T(w)}, {});
  CHECK_FALSE(evaluate_symbol(t, t.symbols().back()).has_value());  // not an operator it knows
}
