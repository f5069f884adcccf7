// Golden tests for the trace printer and the text helpers it relies on.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core_test_util.h"

using namespace coretest;

namespace {

std::shared_ptr<const ConstantData> bytes_for(const TensorType& t) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.assign(t.nbytes(), 0);
  return d;
}

// A two-output operator that is not in the catalog, to print "a, b = op(...)".
const OpDef& split2_op() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    r.add({"split2", OpCategory::Shape, {{"a"}}, {},
           [](const MetaArgs& m) -> std::vector<TensorType> {
             TensorType half = m.tensor(0);
             half.shape[0] /= 2;
             return {half, half};
           },
           "two halves along dim 0"});
    return r;
  }();
  return reg.get("split2");
}

struct Golden {
  Trace t;
  ValueId x, mask, w, b;
  std::vector<ValueId> out;
};

Golden build_golden() {
  Golden g;
  Trace& t = g.t;
  t.constructed_by = "import";
  g.x = t.add_input("input.1", f32({2, 3}));
  g.mask = t.add_input("mask", tt(DType::Bool, {2, 3}));
  TensorType wt = f32({3, 3}), bt = f32({3});
  g.w = t.add_constant("a.b'c\n", wt, bytes_for(wt));
  g.b = t.add_constant("", bt, bytes_for(bt));
  auto X = Operand::tensor(g.x);
  ValueId t0 = t.emit1(op("linear"), {X, Operand::tensor(g.w), Operand::tensor(g.b)}, {}, "model.py(3): forward");
  ValueId t1 = t.emit1(op("linear"), {X, Operand::tensor(g.w), Operand::none()}, {});
  ValueId t2 = t.emit1(op("add"), {Operand::tensor(t0), Operand::number(2.5)}, {});
  ValueId t3 = t.emit1(op("mul"), {Operand::tensor(t2), Operand::number(true)}, {});
  ValueId t4 = t.emit1(op("masked_fill"),
                       {Operand::tensor(t3), Operand::tensor(g.mask),
                        Operand::number(-std::numeric_limits<double>::infinity())},
                       {});
  ValueId t5 = t.emit1(op("gelu"), {Operand::tensor(t4)}, {{"approximate", std::string("tanh")}});
  ValueId t6 = t.emit1(op("leaky_relu"), {Operand::tensor(t5)}, {{"negative_slope", 0.2}});
  ValueId t7 = t.emit1(op("clamp"), {Operand::tensor(t6)}, {{"min", I(0)}});
  ValueId t8 = t.emit1(op("softmax"), {Operand::tensor(t7)}, {{"dim", I(-1)}});
  ValueId t9 = t.emit1(op("sum"), {Operand::tensor(t8)},
                       {{"dtype", DType::Float64}, {"keepdim", true}, {"dims", IntList{0}}});
  ValueId t10 = t.emit1(op("to_dtype"), {Operand::tensor(t1)}, {{"dtype", DType::Float16}});
  auto halves = t.emit(split2_op(), {Operand::tensor(t10)}, {});
  ValueId t13 = t.emit1(op("div"), {Operand::tensor(t2), Operand::number(1e-05)}, {});
  ValueId t14 = t.emit1(op("hardtanh"), {Operand::tensor(t13)}, {{"max_val", I(6)}}, "model.py(9): forward");
  (void)t14;
  t.mutable_symbols()[0].executor = "torch";
  t.mutable_symbols()[4].executor = "thunderc_cpp";
  g.out = {t9, halves[1]};
  t.set_outputs(g.out);
  return g;
}

const char* kGolden = R"(# Constructed by import
# Constants: 2 tensors, 48 B
#   a_b_c_: "cpu f32[3, 3]"  from 'a.b\'c\n'
#   c1: "cpu f32[3]"
def forward(input_1: "cpu f32[2, 3]", mask: "cpu b8[2, 3]"):
  # input_1  from 'input.1'
  t0 = torch.linear(input_1, a_b_c_, c1)  # t0: "cpu f32[2, 3]"
  t1 = linear(input_1, a_b_c_, None)  # t1: "cpu f32[2, 3]"
  t2 = add(t0, 2.5)  # t2: "cpu f32[2, 3]"
  t3 = mul(t2, True)  # t3: "cpu f32[2, 3]"
  t4 = thunderc_cpp.masked_fill(t3, mask, -inf)  # t4: "cpu f32[2, 3]"
  t5 = gelu(t4, approximate='tanh')  # t5: "cpu f32[2, 3]"
  t6 = leaky_relu(t5, negative_slope=0.2)  # t6: "cpu f32[2, 3]"
  t7 = clamp(t6, min=0.0, max=None)  # t7: "cpu f32[2, 3]"
  t8 = softmax(t7, dim=-1, dtype=None)  # t8: "cpu f32[2, 3]"
  t9 = sum(t8, dims=[0], keepdim=True, dtype=float64)  # t9: "cpu f64[1, 3]"
  t10 = to_dtype(t1, dtype=float16)  # t10: "cpu f16[2, 3]"
  t11, t12 = split2(t10)  # t11: "cpu f16[1, 3]", t12: "cpu f16[1, 3]"
  t13 = div(t2, 1e-05, rounding_mode=None)  # t13: "cpu f32[2, 3]"
  t14 = hardtanh(t13, min_val=-1.0, max_val=6.0)  # t14: "cpu f32[2, 3]"
  return (t9, t12)
)";

}  // namespace

TEST_CASE("printer: golden trace with constants, scalars, None, every attribute kind, executors") {
  Golden g = build_golden();
  std::string printed = print_trace(g.t);
  CHECK(printed == kGolden);
  // Stable: printing again (and printing a copy) gives the same text.
  CHECK(print_trace(g.t) == printed);
  Trace copy = g.t;
  CHECK(print_trace(copy) == printed);
  // The golden trace is well formed.
  CHECK_NOTHROW(verify_trace(g.t, "test"));
}

TEST_CASE("printer: executor can be unset again, and the trace name is sanitized") {
  Golden g = build_golden();
  g.t.mutable_symbols()[0].executor.clear();
  g.t.name = "my model.forward";
  std::string printed = print_trace(g.t);
  CHECK(contains(printed, "\n  t0 = linear(input_1, a_b_c_, c1)  # t0: \"cpu f32[2, 3]\"\n"));
  CHECK_FALSE(contains(printed, "torch.linear"));
  CHECK(contains(printed, "\ndef my_model_forward(input_1: "));
}

TEST_CASE("printer: options hide constants and show sources") {
  Golden g = build_golden();
  PrintOptions opts;
  opts.show_constants = false;
  opts.show_source = true;
  std::string printed = print_trace(g.t, opts);
  CHECK_FALSE(contains(printed, "# Constants"));
  CHECK_FALSE(contains(printed, "#   a_b_c_"));
  CHECK(contains(printed,
                 "):\n  # input_1  from 'input.1'\n  # from: 'model.py(3): forward'\n  t0 = torch.linear(input_1, "));
  CHECK(contains(printed, "  # from: 'model.py(9): forward'\n  t14 = hardtanh("));
  // Only the two symbols with a source get a "# from:" line.
  std::size_t n = 0;
  for (std::size_t p = printed.find("# from:"); p != std::string::npos; p = printed.find("# from:", p + 1)) ++n;
  CHECK(n == 2);
}

TEST_CASE("printer: minimal traces, single and empty returns") {
  Trace t;
  ValueId x = t.add_input("x", tt(DType::Int64, {}));
  ValueId y = t.emit1(op("neg"), {Operand::tensor(x)}, {});
  t.set_outputs({y});
  CHECK(print_trace(t) == R"(def forward(x: "cpu i64[]"):
  t0 = neg(x)  # t0: "cpu i64[]"
  return t0
)");
  t.set_outputs({});
  CHECK(contains(print_trace(t), "\n  return ()\n"));
  t.set_outputs({x, x});
  CHECK(contains(print_trace(t), "\n  return (x, x)\n"));

  Trace cuda;
  ValueId a = cuda.add_input("a", tt(DType::BFloat16, {4}, Device::cuda(1)));
  cuda.set_outputs({a});
  CHECK(print_trace(cuda) == "def forward(a: \"cuda:1 bf16[4]\"):\n  return a\n");
}

TEST_CASE("printer: operand_str and symbol_str") {
  Golden g = build_golden();
  const Trace& t = g.t;
  CHECK(operand_str(t, Operand::tensor(g.x)) == "input_1");
  CHECK(operand_str(t, Operand::none()) == "None");
  CHECK(operand_str(t, Operand::number(2.0)) == "2.0");
  CHECK(operand_str(t, Operand::number(std::int64_t{-7})) == "-7");
  CHECK(operand_str(t, Operand::number(false)) == "False");
  CHECK(symbol_str(t, t.symbols()[0]) == "t0 = torch.linear(input_1, a_b_c_, c1)");
  CHECK(symbol_str(t, t.symbols()[11]) == "t11, t12 = split2(t10)");
}

TEST_CASE("names: sanitization and uniqueness") {
  CHECK(sanitize_identifier("input.1") == "input_1");
  CHECK(sanitize_identifier("1x") == "_1x");
  CHECK(sanitize_identifier("") == "_");
  CHECK(sanitize_identifier("self.conv1.weight") == "self_conv1_weight");
  CHECK(sanitize_identifier("caf\xc3\xa9") == "caf__");
  CHECK(sanitize_identifier("ok_Name9") == "ok_Name9");

  Trace t;
  TensorType s = f32({1});
  CHECK(t.value(t.add_input("input.1", s)).name == "input_1");
  CHECK(t.value(t.add_input("input.1", s)).name == "input_1_1");
  CHECK(t.value(t.add_input("input_1", s)).name == "input_1_2");
  CHECK(t.value(t.add_input("input?1", s)).name == "input_1_3");
  CHECK(t.value(t.add_input("0", s)).name == "_0");
  CHECK(t.value(t.add_input("", s)).name == "_");
  CHECK(t.value(t.add_input("", s)).name == "__1");
  ValueId t0in = t.add_input("t0", s);
  CHECK(t.value(t0in).name == "t0");
  CHECK(t.value(t0in).source_name == "t0");
  // The first temporary would be t0, which an input already uses.
  ValueId r = t.emit1(op("relu"), {Operand::tensor(t0in)}, {});
  CHECK(t.value(r).name == "t0_1");
  ValueId r2 = t.emit1(op("relu"), {Operand::tensor(r)}, {});
  CHECK(t.value(r2).name == "t1");
  // Constants without a source name are c<k>; with one they keep it (sanitized).
  ValueId c = t.add_constant("", s, bytes_for(s));
  CHECK(t.value(c).name == "c0");
  ValueId c2 = t.add_constant("c0", s, bytes_for(s));
  CHECK(t.value(c2).name == "c0_1");
  CHECK(t.value(c2).source_name == "c0");
  t.set_outputs({r2});
  CHECK_NOTHROW(verify_trace(t, "names"));
}

TEST_CASE("format_double: shortest round-trip forms") {
  CHECK(format_double(1e-05) == "1e-05");
  CHECK(format_double(0.1) == "0.1");
  CHECK(format_double(3.0) == "3.0");
  CHECK(format_double(-2.0) == "-2.0");
  CHECK(format_double(100.0) == "100.0");
  CHECK(format_double(0.5) == "0.5");
  CHECK(format_double(-0.0) == "-0.0");
  CHECK(format_double(0.0) == "0.0");
  CHECK(format_double(1e20) == "1e+20");
  CHECK(format_double(0.1 + 0.2) == "0.30000000000000004");
  CHECK(format_double(5e-324) == "5e-324");
  CHECK(format_double(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(format_double(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(format_double(std::nan("")) == "nan");
  CHECK(format_double(std::numeric_limits<double>::quiet_NaN()) == "nan");
  for (double v : {1e-05, 0.1, 1.0 / 3.0, 2.0 / 3.0, 6.02214076e23, 1.7976931348623157e308, 2.2250738585072014e-308,
                   -123.456, 0.30000000000000004, 16777217.0, 9007199254740993.0}) {
    std::string s = format_double(v);
    CAPTURE(s);
    CHECK(std::strtod(s.c_str(), nullptr) == v);
    // Always recognizable as a float literal.
    CHECK(s.find_first_of(".e") != std::string::npos);
  }
}

TEST_CASE("Scalar: str and dtype") {
  CHECK(Scalar(true).str() == "True");
  CHECK(Scalar(false).str() == "False");
  CHECK(Scalar(2).str() == "2");
  CHECK(Scalar(std::int64_t{-9000000000}).str() == "-9000000000");
  CHECK(Scalar(0.5).str() == "0.5");
  CHECK(Scalar(2.0).str() == "2.0");
  CHECK(Scalar(true).dtype() == DType::Bool);
  CHECK(Scalar(3).dtype() == DType::Int64);
  CHECK(Scalar(3.0).dtype() == DType::Float32);
  CHECK(Scalar(2.9).to_int() == 2);
  CHECK(Scalar(true).to_double() == 1.0);
}

TEST_CASE("quote_string and attr_str") {
  CHECK(quote_string("tanh") == "'tanh'");
  CHECK(quote_string("") == "''");
  CHECK(quote_string("a'b") == R"('a\'b')");
  CHECK(quote_string("a\"b") == R"('a\"b')");
  CHECK(quote_string("back\\slash") == R"('back\\slash')");
  CHECK(quote_string("l1\nl2\tx\ry") == R"('l1\nl2\tx\ry')");
  CHECK(quote_string(std::string("\x01\x1f\x7f", 3)) == R"('\x01\x1f\x7f')");
  CHECK(quote_string(std::string("nul\0end", 7)) == R"('nul\x00end')");
  CHECK(quote_string("caf\xc3\xa9") == R"('caf\xc3\xa9')");
  CHECK(quote_string("~ !") == "'~ !'");

  CHECK(attr_str(None{}) == "None");
  CHECK(attr_str(true) == "True");
  CHECK(attr_str(false) == "False");
  CHECK(attr_str(I(-3)) == "-3");
  CHECK(attr_str(1e-05) == "1e-05");
  CHECK(attr_str(3.0) == "3.0");
  CHECK(attr_str(std::string("it's")) == R"('it\'s')");
  CHECK(attr_str(IntList{1, 2}) == "[1, 2]");
  CHECK(attr_str(IntList{}) == "[]");
  CHECK(attr_str(DType::BFloat16) == "bfloat16");
}

TEST_CASE("format_bytes and TensorType::str") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.0 KiB");
  CHECK(format_bytes(68 * 1024) == "68.0 KiB");
  CHECK(format_bytes(1536 * 1024) == "1.5 MiB");
  CHECK(format_bytes(std::size_t{3} << 30) == "3.0 GiB");
  CHECK(tt(DType::Float32, {1, 3, 224, 224}).str() == "cpu f32[1, 3, 224, 224]");
  CHECK(tt(DType::Int64, {}).str() == "cpu i64[]");
  CHECK(tt(DType::Bool, {0}, Device::cuda()).str() == "cuda:0 b8[0]");
  CHECK(tt(DType::UInt8, {2, 2}).nbytes() == 4);
  CHECK(tt(DType::Float64, {2, 3}).nbytes() == 48);
}
