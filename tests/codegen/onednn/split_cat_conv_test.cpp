// The split-cat-conv pass (core/transforms/split_cat_conv.cpp): a conv2d of a concatenation of channels becomes
// a sum of conv2ds of the pieces, which fusion turns into oneDNN convolutions with a sum post-op. The trace after
// the pass (Before/After below), the cases it leaves alone, and the compiled model (split-cat-conv,
// channels-last, claiming, fusion) against the torch executor on the original trace, NaN and inf inputs too.
// Tolerance: float32 rtol 1e-4, atol 1e-5, as the other onednn tests.
#include <doctest/doctest.h>

#include <cmath>

#include "core/transforms/channels_last.h"
#include "core/transforms/fusion.h"
#include "core/transforms/split_cat_conv.h"
#include "pass_test_util.h"

using namespace blastest;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

Operand T(ValueId v) { return Operand::tensor(v); }

// A SqueezeNet Fire module and its successor's squeeze convolution, plus concatenations the pass must leave:
// one read twice, one along the height, one feeding a grouped convolution.
struct Fire {
  Trace t;
  Rng rng{23};
  ValueId conv(ValueId x, std::int64_t oc, std::int64_t k, std::int64_t pad, bool bias = true, std::int64_t groups = 1) {
    return random_conv(t, rng, x, oc, k, pad, groups, bias);
  }
  ValueId relu(ValueId x) { return t.emit1(op("relu"), {T(x)}, {}); }
  ValueId cat(std::vector<ValueId> parts, std::int64_t dim) {
    std::vector<Operand> ins;
    for (ValueId p : parts) ins.push_back(T(p));
    return t.emit1(op("cat"), ins, {{"dim", dim}});
  }
  Fire() {
    ValueId x = t.add_input("x", tt({2, 8, 9, 9}));
    ValueId s = relu(conv(x, 4, 1, 0));
    ValueId e1 = relu(conv(s, 8, 1, 0)), e3 = relu(conv(s, 16, 3, 1));
    ValueId squeeze = relu(conv(cat({e1, e3}, 1), 6, 1, 0));  // split: [8 + 16] channels -> 6
    ValueId three = conv(cat({e1, x, e3}, -3), 5, 3, 1, false);  // split, three pieces, no bias, 3x3
    ValueId twice = cat({e1, e3}, 1);
    ValueId read_twice = conv(twice, 4, 1, 0);                 // kept: the cat is also returned
    ValueId along_h = conv(cat({e1, e1}, 2), 4, 1, 0);          // kept: not the channels
    ValueId grouped = conv(cat({e1, e3}, 1), 8, 1, 0, true, 4);  // kept: groups 4
    t.set_outputs({squeeze, three, read_twice, twice, along_h, grouped});
  }
};

std::string compile_onednn(const Trace& t, const std::string& name) {
  const TransformContext ctx = transform_context({"cpp", "onednn"});
  Trace c = channels_last(split_cat_conv(t, ctx), ctx);
  verify_trace(c, "channels-last");
  auto unclaimed = claim_executors(c, {find_executor("cpp"), find_executor("onednn")});
  REQUIRE(unclaimed.empty());
  return thunderc_test::compile_trace(fuse_cpp_regions(fuse_library_epilogues(c)), {"cpp", "onednn"}, name, THUNDERC_TEST_TMP);
}

}  // namespace

TEST_CASE("split-cat-conv: a conv2d of a channel concatenation becomes a sum of the pieces' conv2ds") {
  Fire m;
  const Trace after = split_cat_conv(m.t, transform_context({"cpp", "onednn"}));
  verify_trace(after, "split-cat-conv");
  // Before: conv2d relu conv2d relu conv2d relu | cat conv2d relu | cat conv2d | cat conv2d | cat conv2d | cat conv2d.
  // After: the first two cats are gone, their convolutions are one per piece summed by adds; the other three stay.
  CHECK(op_names(after) == std::vector<std::string>{
                               "conv2d", "relu", "conv2d", "relu", "conv2d", "relu",         // squeeze, expand 1x1, 3x3
                               "conv2d", "conv2d", "add", "relu",                           // next squeeze, 2 pieces
                               "conv2d", "conv2d", "add", "conv2d", "add",                  // 3 pieces
                               "cat", "conv2d", "cat", "conv2d", "cat", "conv2d"});
  // Each piece's weight holds its channels; the bias goes with the first piece only.
  const auto& syms = after.symbols();
  CHECK(after.type(syms[6].inputs[1].value).shape == Shape{6, 8, 1, 1});
  CHECK(after.type(syms[7].inputs[1].value).shape == Shape{6, 16, 1, 1});
  CHECK(syms[6].inputs[2].is_tensor());
  CHECK(syms[7].inputs[2].kind == OperandKind::None);
  CHECK(after.type(syms[10].inputs[1].value).shape == Shape{5, 8, 3, 3});
  CHECK(after.type(syms[11].inputs[1].value).shape == Shape{5, 8, 3, 3});
  CHECK(after.type(syms[13].inputs[1].value).shape == Shape{5, 16, 3, 3});
  // The returned values keep their types.
  for (std::size_t i = 0; i < m.t.outputs().size(); ++i) CHECK(after.type(after.outputs()[i]) == m.t.type(m.t.outputs()[i]));
}

TEST_CASE("split-cat-conv: the compiled model matches the torch executor, NaN and inf included") {
  Fire m;
  thunderc::Model got_model(compile_onednn(m.t, "split_cat_conv")), want_model(compile(m.t, {"torch"}, "split_cat_conv_torch"));
  for (std::uint64_t seed : {1, 2, 3}) {
    auto in = random_inputs(m.t, seed);
    if (seed == 3) {
      float* x = static_cast<float*>(in[0].raw());
      x[5] = std::nanf("");
      x[200] = INFINITY;
      x[700] = -INFINITY;
    }
    auto got = got_model.run(in), want = want_model.run(in);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("seed " << seed << ", output " << i);
      CHECK(got[i].shape() == want[i].shape());
      CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
    }
  }
}

TEST_CASE("split-cat-conv changes nothing where onednn does not run the convolution") {
  Fire m;
  CHECK(op_names(split_cat_conv(m.t, transform_context({"cpp", "blas", "onednn"}))) == op_names(m.t));  // blas claims first
  CHECK(op_names(split_cat_conv(m.t, transform_context({"cpp", "torch"}))) == op_names(m.t));
}
