// The autocast transform (--precision bf16/fp16) on hand-built traces: a golden Before/After pair, the
// converted weights bit for bit, the op lists, and the cases it leaves alone.
#include "core/ir/half.h"
#include "core/transforms/autocast.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

// x [2, 8] -> linear(W1, b1) -> layer_norm -> gelu -> linear(W1 again, no bias) -> softmax; sum(x) also out.
struct Mlp {
  Trace t;
  ValueId x, w1, b1, ln_w, h, n, g, y, p, s;
  Mlp() {
    x = t.add_input("x", f32({2, 8}));
    w1 = t.add_constant("w1", f32({8, 8}), data_of(std::vector<float>(64, 1.0f / 3.0f)));
    b1 = t.add_constant("b1", f32({8}), data_of(std::vector<float>(8, 0.1f)));
    ln_w = t.add_constant("ln_w", f32({8}), data_of(std::vector<float>(8, 1.0f)));
    h = t.emit1(op("linear"), {T(x), T(w1), T(b1)}, {});
    n = t.emit1(op("layer_norm"), {T(h), T(ln_w), Operand::none()}, {{"normalized_shape", IntList{8}}});
    g = t.emit1(op("gelu"), {T(n)}, {});
    y = t.emit1(op("linear"), {T(g), T(w1), Operand::none()}, {});
    p = t.emit1(op("softmax"), {T(y)}, {{"dim", I(-1)}});
    s = t.emit1(op("sum"), {T(x)}, {{"dims", IntList{1}}});
    t.set_outputs({p, s, h});
  }
};

const BoundSymbol& find(const Trace& t, const std::string& name, int nth = 0) {
  for (const BoundSymbol& s : t.symbols())
    if (s.op->name == name && nth-- == 0) return s;
  FAIL("no " << name);  // throws
  return t.symbols().front();
}

}  // namespace

TEST_CASE("autocast bf16: golden Before/After of a small MLP") {
  Mlp m;
  Trace after = autocast(m.t, DType::BFloat16);
  check_before_after("autocast", m.t, after);
}

TEST_CASE("autocast: the low-precision list, the float32 list, and everything else") {
  for (DType low : {DType::BFloat16, DType::Float16}) {
    INFO(std::string(dtype_name(low)));
    Mlp m;
    Trace a = autocast(m.t, low);
    verify_trace(a, "autocast");
    // linear: every floating input in the low dtype, the result too.
    for (int i = 0; i < 2; ++i) {
      const BoundSymbol& lin = find(a, "linear", i);
      for (const Operand& o : lin.inputs)
        if (o.is_tensor()) CHECK(a.type(o.value).dtype == low);
      CHECK(a.type(lin.outputs[0]).dtype == low);
    }
    // layer_norm and softmax: back to float32 (their inputs are casts of the low-precision products).
    for (const char* f32_op : {"layer_norm", "softmax"}) {
      const BoundSymbol& s = find(a, f32_op);
      CHECK(a.type(s.inputs[0].value).dtype == DType::Float32);
      CHECK(a.type(s.outputs[0]).dtype == DType::Float32);
    }
    // gelu reads layer_norm's float32 result: not on a list, so it stays float32 and keeps its value.
    const BoundSymbol& gelu = find(a, "gelu");
    CHECK(gelu.outputs[0] == m.g);
    CHECK(a.type(m.g).dtype == DType::Float32);
    // sum(x) reads the float32 input: nothing to cast, the symbol is the same.
    CHECK(find(a, "sum").outputs[0] == m.s);
    CHECK(find(a, "sum").inputs[0].value == m.x);
    // Outputs keep the model's dtypes: softmax's is float32 already (same value); the first linear's result
    // is cast back from the low dtype, by the cast layer_norm already reads (one cast per value and dtype).
    REQUIRE(a.outputs().size() == 3);
    CHECK(a.outputs()[0] == m.p);
    CHECK(a.outputs()[1] == m.s);
    CHECK(a.type(a.outputs()[2]).dtype == DType::Float32);
    CHECK(a.outputs()[2] != m.h);
    CHECK(a.outputs()[2] == find(a, "layer_norm").inputs[0].value);
  }
}

TEST_CASE("autocast: weights become new constants, rounded to nearest even, once per constant") {
  Mlp m;
  Trace a = autocast(m.t, DType::BFloat16);
  const BoundSymbol &lin1 = find(a, "linear", 0), &lin2 = find(a, "linear", 1);
  const ValueId w = lin1.inputs[1].value;
  CHECK(lin2.inputs[1].value == w);  // W1 feeds both products: one converted copy
  CHECK(a.value(w).origin == ValueOrigin::Constant);
  CHECK(a.value(w).name == "w1_bf16");
  CHECK(a.type(w) == tt(DType::BFloat16, {8, 8}));
  for (std::uint16_t bits : values_of<std::uint16_t>(a, w)) CHECK(bits == 0x3eab);  // 1/3 = 0x3eaaaaab rounds up
  for (std::uint16_t bits : values_of<std::uint16_t>(a, lin1.inputs[2].value))
    CHECK(bits == float_to_bf16(0.1f));
  // No to_dtype for a constant; the input x gets one (it is computed at run time).
  int casts = 0;
  for (const BoundSymbol& s : a.symbols())
    if (s.op->name == "to_dtype") {
      CHECK(a.value(s.inputs[0].value).origin != ValueOrigin::Constant);
      ++casts;
    }
  // x -> bf16, the two products -> float32 (layer_norm, softmax; the first is also the output h), gelu's
  // float32 -> bf16.
  CHECK(casts == 4);
  Trace f = autocast(m.t, DType::Float16);
  for (std::uint16_t bits : values_of<std::uint16_t>(f, find(f, "linear").inputs[1].value)) CHECK(bits == 0x3555);
}

TEST_CASE("autocast: fp32 and tf32 leave the trace as it is, and the low dtype must be a half type") {
  Mlp m;
  const Transform& tr = autocast_transform();
  for (const char* precision : {"fp32", "tf32"}) {
    TransformContext ctx{Device::cpu(), {}, {}, precision};
    CHECK(print_trace(tr.run(m.t, ctx)) == print_trace(m.t));
  }
  TransformContext bf16{Device::cpu(), {}, {}, "bf16"};
  CHECK(print_trace(tr.run(m.t, bf16)) == print_trace(autocast(m.t, DType::BFloat16)));
  CHECK(autocast_dtype("fp16") == DType::Float16);
  CHECK_FALSE(autocast_dtype("fp8").has_value());
  CHECK_THROWS_AS(autocast(m.t, DType::Float32), InternalError);
}

TEST_CASE("autocast: a product already in the low dtype gets no casts") {
  Trace t;
  ValueId a = t.add_input("a", tt(DType::Float16, {4, 4}));
  ValueId b = t.add_input("b", tt(DType::Float16, {4, 4}));
  ValueId c = t.emit1(op("matmul"), {T(a), T(b)}, {});
  t.set_outputs({c});
  Trace after = autocast(t, DType::Float16);
  CHECK(print_trace(after) == print_trace(t));
}
