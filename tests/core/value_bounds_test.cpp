// value_ranges (core/transforms/value_bounds.h): the interval each operator rule gives, exactly, on small
// traces with hand-picked constants; unknown results (no rule, NaN constants, overflow); and the bound
// bounded_input_limit picks for a NaN-hiding onednn region.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/ir/op.h"
#include "core/ir/trace.h"
#include "core/transforms/value_bounds.h"

using namespace thunderc;

namespace {

TensorType f32(Shape s) { return {DType::Float32, std::move(s), Device::cpu()}; }

ValueId constant(Trace& t, const std::string& name, Shape shape, const std::vector<float>& values) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.resize(values.size() * 4);
  std::memcpy(d->bytes.data(), values.data(), d->bytes.size());
  return t.add_constant(name, f32(std::move(shape)), d);
}

ValueId emit(Trace& t, const char* name, std::vector<Operand> in, Attrs attrs = {}) {
  return t.emit1(op(name), std::move(in), std::move(attrs));
}
Operand T(ValueId v) { return Operand::tensor(v); }

void check_range(const ValueRange& r, double lo, double hi) {
  CHECK(r.lo == doctest::Approx(lo));
  CHECK(r.hi == doctest::Approx(hi));
}

}  // namespace

TEST_CASE("value ranges: each rule's interval for inputs in [-T, T]") {
  Trace t;
  const ValueId x = t.add_input("x", f32({1, 2, 3, 3}));
  const ValueId relu = emit(t, "relu", {T(x)});
  const ValueId sig = emit(t, "sigmoid", {T(x)});
  const ValueId six = emit(t, "hardtanh", {T(x)}, {{"min_val", 0.0}, {"max_val", 6.0}});
  const ValueId silu = emit(t, "silu", {T(x)});
  const ValueId mul = emit(t, "mul", {T(relu), T(x)});
  const ValueId sub = emit(t, "sub", {T(sig), Operand::number(2.0)});
  const ValueId sum = emit(t, "sum", {T(x)}, {{"dims", IntList{2, 3}}, {"keepdim", false}});
  // Output channel 0: weights {1, -2} (x2 channels, 1x1); channel 1: {0.5, 0.5}; bias {3, -1}.
  const ValueId w = constant(t, "w", {2, 2, 1, 1}, {1, -2, 0.5f, 0.5f});
  const ValueId b = constant(t, "b", {2}, {3, -1});
  const ValueId conv = emit(t, "conv2d", {T(relu), T(w), T(b)},
                            {{"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}},
                             {"groups", std::int64_t{1}}});
  const ValueId log = emit(t, "log", {T(relu)});
  const ValueId after_log = emit(t, "relu", {T(log)});
  const ValueId div = emit(t, "div", {T(x), T(relu)});
  t.set_outputs({mul, sub, sum, six, silu, conv, after_log, div});

  const std::vector<ValueRange> r = value_ranges(t, 4);
  check_range(r[x], -4, 4);
  check_range(r[relu], 0, 4);
  check_range(r[sig], 0, 1);
  check_range(r[six], 0, 4);
  check_range(r[silu], -0.28, 4);
  check_range(r[mul], -16, 16);
  check_range(r[sub], -2, -1);
  check_range(r[sum], -36, 36);  // 9 elements per output
  // relu's [0, 4]: channel 0 in [1*0 - 2*4 + 3, 1*4 - 2*0 + 3] = [-5, 7]; channel 1 in [-1, 3].
  check_range(r[conv], -5, 7);
  CHECK_FALSE(r[log].finite());        // no rule for log (log(0) = -inf)
  CHECK_FALSE(r[after_log].finite());  // unknown stays unknown
  CHECK_FALSE(r[div].finite());        // division by a computed tensor
  CHECK(r[conv].finite());
}

TEST_CASE("value ranges: a NaN or infinite constant, and overflow, are unknown") {
  Trace t;
  const ValueId x = t.add_input("x", f32({4}));
  const ValueId c = constant(t, "c", {4}, {1, std::numeric_limits<float>::quiet_NaN(), 2, 3});
  const ValueId add = emit(t, "add", {T(x), T(c)});
  const ValueId big = emit(t, "mul", {T(x), Operand::number(1e30)});
  const ValueId exp = emit(t, "exp", {T(x)});
  t.set_outputs({add, big, exp});
  CHECK_FALSE(value_ranges(t, 1)[add].finite());
  CHECK(value_ranges(t, 1)[big].finite());          // 1e30 is below float's 3.4e38 / 256 = 1.3e36
  CHECK_FALSE(value_ranges(t, 1e7)[big].finite());  // 1e37 is not
  check_range(value_ranges(t, 2)[exp], std::exp(-2.0), std::exp(2.0));
  CHECK_FALSE(value_ranges(t, 100)[exp].finite());  // e^100 overflows float
}

TEST_CASE("bounded_input_limit: the largest power of two keeping a NaN-hiding region's input finite") {
  Trace t;
  const ValueId x = t.add_input("x", f32({1, 1, 1, 1}));
  // One 1x1 conv with weight 2^60: |conv| <= 2^60 T must stay within float's largest value / 256, just
  // below 2^120, so T = 2^59 (2^60 * 2^60 = 2^120 is just outside).
  const ValueId w = constant(t, "w", {1, 1, 1, 1}, {std::ldexp(1.0f, 60)});
  const ValueId b = constant(t, "b", {1}, {0});
  const ValueId conv = emit(t, "conv2d", {T(x), T(w), T(b)},
                            {{"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}},
                             {"groups", std::int64_t{1}}});
  const ValueId relu = emit(t, "relu", {T(conv)});
  t.set_outputs({relu});
  CHECK(bounded_input_limit(t) == 0);  // no onednn region: nothing hides a NaN
  // The region fusion would build: onednn(conv2d, relu).
  Trace fused = t.clone_without_symbols();
  BoundSymbol region;
  region.op = &op("fusion");
  region.executor = "onednn";
  region.inputs = {T(x), T(w), T(b)};
  region.outputs = {relu};
  region.subsymbols = t.symbols();
  for (BoundSymbol& s : region.subsymbols) s.executor = "onednn";
  region.attrs.set("name", std::string("onednn_fusion0"));
  fused.append(region);
  CHECK(bounded_values(fused.symbols()[0]) == std::vector<ValueId>{conv});
  CHECK(bounded_input_limit(fused) == std::ldexp(1.0, 59));
}

TEST_CASE("value ranges per channel: NHWC convolutions sum each input channel's own range") {
  Trace t;
  const ValueId x = t.add_input("x", f32({1, 3, 3, 2}));  // NHWC, 2 channels
  auto conv1x1 = [&](ValueId in, const char* name, Shape shape, std::vector<float> w) {
    const ValueId wv = constant(t, name, shape, w);
    const ValueId b = constant(t, std::string(name) + "_b", {shape[0]}, std::vector<float>(shape[0], 0));
    return emit(t, "conv2d_nhwc", {T(in), T(wv), T(b)},
                {{"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}},
                 {"groups", std::int64_t{1}}});
  };
  // Channel 0 in [-1, 1], channel 1 in [-8, 8]; after relu [0, 1] and [0, 8].
  const ValueId c1 = emit(t, "relu", {T(conv1x1(x, "w1", {2, 2, 1, 1}, {0.5f, 0.5f, 4, 4}))});
  // Channel 0 = 2 * channel 0 in [0, 2], channel 1 = channel 1 in [0, 8].
  const ValueId c2 = conv1x1(c1, "w2", {2, 2, 1, 1}, {2, 0, 0, 1});
  // c2's channel 0 minus its channel 1: [0 - 8, 2 - 0]. From the one range [0, 8] it would be [-8, 8].
  const ValueId c3 = conv1x1(c2, "w3", {1, 2, 1, 1}, {1, -1});
  // Elementwise ops keep channels: + a per-channel constant [10, 20] (broadcast over N, H, W).
  const ValueId shifted = emit(t, "add", {T(c2), T(constant(t, "shift", {2}, {10, 20}))});
  const ValueId c4 = conv1x1(shifted, "w4", {1, 2, 1, 1}, {1, -1});
  t.set_outputs({c3, c4});
  const std::vector<ValueRange> r = value_ranges(t, 1);
  check_range(r[c1], 0, 8);
  check_range(r[c2], 0, 8);
  check_range(r[c3], -8, 2);
  check_range(r[shifted], 10, 28);
  check_range(r[c4], 10 - 28, 12 - 20);  // [10, 12] - [20, 28]
}
