// The pool-before-conv pass (core/transforms/pool_before_conv.cpp): average pooling of a 1x1 convolution's
// output pools its input instead. The trace after the pass (Before/After below), the cases it leaves alone, and
// the compiled model (pool-before-conv, channels-last, claiming, fusion; onednn, and blas for the
// convolutions) against the torch executor on the original trace, NaN and inf inputs too.
// Tolerance: float32 rtol 1e-4, atol 1e-5, as the other onednn tests.
#include <doctest/doctest.h>

#include <cmath>

#include "core/transforms/channels_last.h"
#include "core/transforms/fusion.h"
#include "core/transforms/pool_before_conv.h"
#include "pass_test_util.h"

using namespace blastest;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

Operand T(ValueId v) { return Operand::tensor(v); }

struct PoolArgs {
  std::int64_t k, s, pad = 0;
  bool ceil_mode = false, count_include_pad = true;
  std::optional<std::int64_t> divisor;
};

// 1x1 (or 3x3) convolutions of one image, each followed by an average pooling: the ones the pass swaps and
// the ones it must leave.
struct Transitions {
  Trace t;
  Rng rng{31};
  ValueId x, a;
  ValueId conv(std::int64_t oc, bool bias, std::int64_t groups = 1, std::int64_t k = 1) {
    return random_conv(t, rng, a, oc, k, k / 2, groups, bias);
  }
  ValueId pool(ValueId y, const PoolArgs& p) {
    AttrValue divisor = p.divisor ? AttrValue{*p.divisor} : AttrValue{None{}};
    return t.emit1(op("avg_pool2d"), {T(y)},
                   {{"kernel_size", IntList{p.k, p.k}}, {"stride", IntList{p.s, p.s}}, {"padding", IntList{p.pad, p.pad}},
                    {"ceil_mode", p.ceil_mode}, {"count_include_pad", p.count_include_pad}, {"divisor_override", divisor}});
  }
  Transitions() {
    x = t.add_input("x", tt({2, 6, 9, 10}));
    a = t.emit1(op("relu"), {T(x)}, {});
    ValueId swapped_bias = pool(conv(8, true), {2, 2});                      // DenseNet's transition, with a bias
    ValueId swapped_padded = pool(conv(4, false, 2), {3, 2, 1});             // no bias: counted padding is fine
    ValueId kept_padded = pool(conv(4, true), {3, 2, 1});                    // bias / a divisor counting padding
    ValueId swapped_ceil = pool(conv(4, true), {3, 2, 1, true, false});      // divisors count what they sum
    ValueId kept_divisor = pool(conv(4, true), {2, 2, 0, false, true, 3});   // divisor_override with a bias
    ValueId kept_3x3 = pool(conv(4, false, 1, 3), {2, 2});                   // not 1x1
    ValueId kept_same_size = pool(conv(4, false), {3, 1, 1});                // the image does not shrink
    ValueId read_twice = conv(4, true);
    ValueId kept_read_twice = pool(read_twice, {2, 2});                      // the convolution is also returned
    t.set_outputs({swapped_bias, swapped_padded, kept_padded, swapped_ceil, kept_divisor, kept_3x3, kept_same_size,
                   kept_read_twice, read_twice});
  }
};

std::string compile_with(const Trace& t, const std::vector<std::string>& executors, const std::string& name) {
  const TransformContext ctx = transform_context(executors);
  Trace c = channels_last(pool_before_conv(t, ctx), ctx);
  verify_trace(c, "channels-last");
  std::vector<const Executor*> exs;
  for (const std::string& e : executors) exs.push_back(find_executor(e));
  REQUIRE(claim_executors(c, exs).empty());
  return thunderc_test::compile_trace(fuse_cpp_regions(fuse_library_epilogues(c)), executors, name, THUNDERC_TEST_TMP);
}

}  // namespace

TEST_CASE("pool-before-conv: avg_pool2d of a 1x1 conv2d pools the conv2d's input instead") {
  Transitions m;
  const Trace after = pool_before_conv(m.t, transform_context({"cpp", "onednn"}));
  verify_trace(after, "pool-before-conv");
  CHECK(after.constructed_by == "pool-before-conv");
  // Before: relu, then eight conv2d -> avg_pool2d pairs. After: the three swappable pairs are avg_pool2d ->
  // conv2d, emitted where the pooling was; the other five are as they were.
  CHECK(op_names(after) == std::vector<std::string>{"relu",
                                                    "avg_pool2d", "conv2d",   // bias, 2x2
                                                    "avg_pool2d", "conv2d",   // no bias, padded
                                                    "conv2d", "avg_pool2d",   // bias, padding in the divisor
                                                    "avg_pool2d", "conv2d",   // bias, ceil_mode, exact divisors
                                                    "conv2d", "avg_pool2d",   // divisor_override
                                                    "conv2d", "avg_pool2d",   // 3x3
                                                    "conv2d", "avg_pool2d",   // same size
                                                    "conv2d", "avg_pool2d"}); // read twice
  const auto& syms = after.symbols();
  // The swapped pooling reads the relu (6 channels) and the convolution reads the pooled image, its weight
  // and bias as before.
  CHECK(syms[1].inputs[0].value == m.a);
  CHECK(after.type(syms[1].outputs[0]).shape == Shape{2, 6, 4, 5});
  CHECK(syms[2].inputs[0].value == syms[1].outputs[0]);
  CHECK(syms[2].inputs[1].value == m.t.symbols()[1].inputs[1].value);
  CHECK(syms[2].inputs[2].value == m.t.symbols()[1].inputs[2].value);
  CHECK(syms[2].attrs == m.t.symbols()[1].attrs);
  CHECK(syms[3].attrs == m.t.symbols()[4].attrs);  // the pooling's attributes travel with it
  // The returned values keep their types.
  REQUIRE(after.outputs().size() == m.t.outputs().size());
  for (std::size_t i = 0; i < m.t.outputs().size(); ++i) CHECK(after.type(after.outputs()[i]) == m.t.type(m.t.outputs()[i]));
  CHECK(after.outputs()[0] == syms[2].outputs[0]);
}

TEST_CASE("pool-before-conv: the compiled model matches the torch executor, NaN and inf included") {
  Transitions m;
  thunderc::Model want_model(compile(m.t, {"torch"}, "pool_before_conv_torch"));
  for (const std::vector<std::string>& executors : {std::vector<std::string>{"cpp", "onednn"}, {"cpp", "blas"}}) {
    thunderc::Model got_model(compile_with(m.t, executors, "pool_before_conv_" + executors[1]));
    for (std::uint64_t seed : {1, 2, 3, 4}) {
      auto in = random_inputs(m.t, seed);
      float* x = static_cast<float*>(in[0].raw());
      if (seed == 3) {  // a NaN, and infs of either sign in several windows
        x[5] = std::nanf("");
        x[200] = INFINITY;
        x[700] = -INFINITY;
      }
      if (seed == 4) {  // +inf and -inf in one window of one channel, and in two channels of another window
        x[0] = INFINITY;
        x[1] = -INFINITY;
        x[90 + 22] = INFINITY;
        x[2 * 90 + 23] = -INFINITY;
      }
      auto got = got_model.run(in), want = want_model.run(in);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(executors[1] << ", seed " << seed << ", output " << i);
        CHECK(got[i].shape() == want[i].shape());
        CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
      }
    }
  }
}
