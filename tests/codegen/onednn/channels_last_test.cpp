// The channels-last pass (core/transforms/channels_last.cpp) and what it hands the executors: conv2d_nhwc on
// onednn, max_pool2d_nhwc / avg_pool2d_nhwc on cpp, elementwise ops with permuted broadcast operands, the
// global pool as a mean, cat along the channels and reductions. The trace after the pass (Before/After below)
// and the compiled model against the torch executor on the original trace, with NaN and inf inputs too.
// Tolerance: float32 rtol 1e-4, atol 1e-5, as the other onednn tests.
#include <doctest/doctest.h>

#include <cmath>

#include "pass_test_util.h"
#include "core/transforms/channels_last.h"
#include "core/transforms/fusion.h"

using namespace blastest;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

Operand T(ValueId v) { return Operand::tensor(v); }

// A small CNN with every kind of reader the pass rewrites, and some it does not (flatten via reshape).
struct Cnn {
  Trace t;
  Rng rng{11};

  ValueId conv(ValueId x, std::int64_t oc, std::int64_t k, std::int64_t pad, std::int64_t groups = 1) {
    return random_conv(t, rng, x, oc, k, pad, groups);
  }
  ValueId unary(const char* name, ValueId x) { return t.emit1(op(name), {T(x)}, {}); }
  ValueId binary(const char* name, ValueId a, ValueId b) { return t.emit1(op(name), {T(a), T(b)}, {}); }

  Cnn() {
    ValueId x = t.add_input("x", tt({2, 3, 10, 10}));
    ValueId y1 = unary("relu", conv(x, 16, 3, 1));                                      // [2, 16, 10, 10]
    ValueId p = t.emit1(op("max_pool2d"), {T(y1)},
                        {{"kernel_size", IntList{3, 3}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}});  // 5x5
    ValueId y2 = unary("relu", binary("add", conv(p, 16, 3, 1), p));                    // residual
    ValueId dw = unary("hardtanh", conv(y2, 16, 3, 1, 16));                             // depthwise, relu6
    ValueId a = t.emit1(op("avg_pool2d"), {T(dw)},
                        {{"kernel_size", IntList{2, 2}}, {"stride", IntList{1, 1}}, {"padding", IntList{1, 1}},
                         {"count_include_pad", false}});                                // [2, 16, 6, 6]
    ValueId s = t.emit1(op("adaptive_avg_pool2d"), {T(dw)}, {{"output_size", IntList{1, 1}}});
    ValueId gate = unary("sigmoid", conv(s, 16, 1, 0));                                  // squeeze-excitation
    ValueId z = binary("mul", dw, gate);
    ValueId bias = random_constant(t, "chan_bias", tt({16, 1, 1}), rng);                 // a lower-rank operand
    ValueId z2 = binary("add", z, bias);
    ValueId c = t.emit1(op("cat"), {T(z2), T(y2)}, {{"dim", std::int64_t{1}}});           // [2, 32, 5, 5]
    ValueId m = t.emit1(op("mean"), {T(c)}, {{"dims", IntList{2, 3}}, {"keepdim", false}});  // [2, 32]
    ValueId h = t.emit1(op("amax"), {T(c)}, {{"dims", IntList{3}}, {"keepdim", false}});     // [2, 32, 5]: not kept NHWC
    ValueId flat = t.emit1(op("reshape"), {T(a)}, {{"shape", IntList{2, -1}}});
    t.set_outputs({m, h, flat, c});
  }
};

std::string compile_channels_last(const Trace& t, const std::string& name) {
  Trace c = channels_last(t, transform_context({"cpp", "onednn"}));
  verify_trace(c, "channels-last");
  auto unclaimed = claim_executors(c, {find_executor("cpp"), find_executor("onednn")});
  REQUIRE(unclaimed.empty());
  return thunderc_test::compile_trace(fuse_cpp_regions(fuse_library_epilogues(c)), {"cpp", "onednn"}, name, THUNDERC_TEST_TMP);
}

void check_against_torch(const Trace& t, const std::string& name, bool non_finite) {
  thunderc::Model got_model(compile_channels_last(t, name)), want_model(compile(t, {"torch"}, name + "_torch"));
  for (std::uint64_t seed : {1, 2}) {
    auto in = random_inputs(t, seed);
    if (non_finite) {
      float* x = static_cast<float*>(in[0].raw());
      x[5] = std::nanf("");
      x[123] = INFINITY;
      x[400] = -INFINITY;
    }
    auto got = got_model.run(in), want = want_model.run(in);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("output " << i);
      CHECK(got[i].shape() == want[i].shape());
      CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
    }
  }
}

}  // namespace

TEST_CASE("channels-last: conv chains, pooling, elementwise, cat and reductions stay NHWC between permutes") {
  Cnn m;
  const Trace after = channels_last(m.t, transform_context({"cpp", "onednn"}));
  verify_trace(after, "channels-last");
  // Before: conv2d relu max_pool2d conv2d add relu conv2d hardtanh avg_pool2d adaptive_avg_pool2d conv2d sigmoid
  //         mul add cat mean amax reshape.
  // After: one permute in; everything NHWC; permutes out only where an NCHW reader (amax over W, the flatten
  // of the avg pool, the returned cat: one permute serves amax and the output) needs one; the global pool is
  // a mean over H and W.
  CHECK(op_names(after) == std::vector<std::string>{
                               "permute", "conv2d_nhwc", "relu", "max_pool2d_nhwc", "conv2d_nhwc", "add", "relu",
                               "conv2d_nhwc", "hardtanh", "avg_pool2d_nhwc", "mean", "conv2d_nhwc", "sigmoid", "mul",
                               "reshape", "permute", "add", "cat", "mean", "permute", "amax", "permute", "reshape"});
  // The lower-rank bias [16, 1, 1] becomes [1, 1, 1, 16]; cat joins along the channels, now dim 3.
  for (const BoundSymbol& s : after.symbols()) {
    if (s.op->name == "cat") CHECK(s.attrs.get_int("dim") == 3);
    if (s.op->name == "mean" && after.type(s.outputs[0]).rank() == 2) CHECK(s.attrs.get_ints("dims") == IntList{1, 2});
  }
  // The returned values keep their NCHW shapes.
  for (std::size_t i = 0; i < m.t.outputs().size(); ++i)
    CHECK(after.type(after.outputs()[i]).shape == m.t.type(m.t.outputs()[i]).shape);
  check_against_torch(m.t, "channels_last_cnn", false);
}

TEST_CASE("channels-last: NaN and inf reach the outputs as in ATen (max pooling keeps NaN)") {
  Cnn m;
  check_against_torch(m.t, "channels_last_nan", true);
}

TEST_CASE("channels-last changes nothing where onednn does not run the convolutions") {
  Cnn m;
  // blas before onednn: blas claims the convolutions, so NCHW stays.
  const Trace blas_first = channels_last(m.t, transform_context({"cpp", "blas", "onednn"}));
  CHECK(op_names(blas_first) == op_names(m.t));
  // No executor other than onednn for the pooling: the convolutions go NHWC, the pooling reads NCHW.
  const Trace no_cpp = channels_last(m.t, transform_context({"onednn"}));
  const std::vector<std::string> names = op_names(no_cpp);
  CHECK(std::count(names.begin(), names.end(), "conv2d_nhwc") == 4);
  CHECK(std::count(names.begin(), names.end(), "max_pool2d_nhwc") == 0);
  CHECK(std::count(names.begin(), names.end(), "max_pool2d") == 1);
}
