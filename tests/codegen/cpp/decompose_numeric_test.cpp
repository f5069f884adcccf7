// decompose, checked numerically: every rule of core/transforms/decompose.cpp (forced with decompose_ops)
// against the original operator, both run by the torch executor (ATen through the shim) on the same random
// inputs. The golden traces of tests/transforms/ pin the rewritten text; this checks that it computes the
// same function (up to float32 rounding).
#include <doctest/doctest.h>

#include <functional>
#include <set>

#include "core/transforms/decompose.h"
#include "cpp_test_util.h"

using namespace cpptest;

namespace {

// Decomposes `t` forcing `name`, checks the operator is gone, and compares both traces' results.
void check_rule(const Trace& t, const std::string& name, const std::string& tag, Tol tol = {1e-5, 1e-5}) {
  TransformContext ctx;
  ctx.device = Device::cpu();
  ctx.executors = {find_executor("torch")};
  ctx.decompose_ops = {name};
  Trace after = decompose(t, ctx);
  verify_trace(after, "test");
  INFO(tag << ":\n" << print_trace(after));
  for (const BoundSymbol& s : after.symbols()) CHECK_MESSAGE(s.op->name != name, name << " was not rewritten");
  CHECK(after.constructed_by == "decompose");
  thunderc::Model mref(compile(claimed(t, {"torch"}), {"torch"}, "decompose_" + tag + "_orig"));
  thunderc::Model mdec(compile(claimed(after, {"torch"}), {"torch"}, "decompose_" + tag + "_rule"));
  for (unsigned seed : {3u, 4u}) {
    auto in = random_inputs(t, seed, false);
    auto want = mref.run(in);
    auto got = mdec.run(in);
    Mismatch m = compare(got, want, tol.rtol, tol.atol);
    INFO(tag << ": output " << m.output << " element " << m.index << ": rule " << m.got << ", original " << m.want);
    CHECK_FALSE(m.any);
  }
}

}  // namespace

TEST_CASE("decompose: every rule computes what the original operator does (torch executor, random inputs)") {
  std::set<std::string> checked;
  auto one = [&](const std::string& name, const std::string& tag, const std::function<void(Trace&)>& build, Tol tol = {1e-5, 1e-5}) {
    Trace t;
    build(t);
    check_rule(t, name, tag, tol);
    checked.insert(name);
  };
  one("linear", "linear_bias", [](Trace& t) {
    ValueId a = t.add_input("a", f32({3, 5, 8})), w = t.add_input("w", f32({4, 8})), b = t.add_input("b", f32({4}));
    t.set_outputs({t.emit1(op("linear"), {T(a), T(w), T(b)}, {})});
  });
  one("linear", "linear_nobias", [](Trace& t) {
    ValueId a = t.add_input("a", f32({6, 8})), w = t.add_input("w", f32({4, 8}));
    t.set_outputs({t.emit1(op("linear"), {T(a), T(w), Operand::none()}, {})});
  });
  one("linear", "linear_1d_weight", [](Trace& t) {
    // no bias: the torch executor's linear of a 1-D weight with a bias fails ("mat2 must be a matrix")
    ValueId a = t.add_input("a", f32({2, 6, 8})), w = t.add_input("w", f32({8}));
    t.set_outputs({t.emit1(op("linear"), {T(a), T(w), Operand::none()}, {})});
  });
  one("addmm", "addmm_default", [](Trace& t) {
    ValueId c = t.add_input("c", f32({5})), a = t.add_input("a", f32({3, 4})), b = t.add_input("b", f32({4, 5}));
    t.set_outputs({t.emit1(op("addmm"), {T(c), T(a), T(b)}, {})});
  });
  one("addmm", "addmm_scaled", [](Trace& t) {
    ValueId c = t.add_input("c", f32({3, 5})), a = t.add_input("a", f32({3, 4})), b = t.add_input("b", f32({4, 5}));
    t.set_outputs({t.emit1(op("addmm"), {T(c), T(a), T(b)}, {{"alpha", 0.5}, {"beta", -2.0}})});
  });
  for (const char* sm : {"softmax", "log_softmax"}) {
    one(sm, std::string(sm) + "_dim1", [&](Trace& t) {
      ValueId x = t.add_input("x", f32({3, 7, 5}));
      t.set_outputs({t.emit1(op(sm), {T(x)}, {{"dim", std::int64_t{1}}})});
    });
    one(sm, std::string(sm) + "_f64", [&](Trace& t) {
      ValueId x = t.add_input("x", f32({4, 9}));
      t.set_outputs({t.emit1(op(sm), {T(x)}, {{"dim", std::int64_t{-1}}, {"dtype", DType::Float64}})});
    });
  }
  one("layer_norm", "layer_norm_affine", [](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 3, 8})), w = t.add_input("w", f32({3, 8})), b = t.add_input("b", f32({3, 8}));
    t.set_outputs({t.emit1(op("layer_norm"), {T(x), T(w), T(b)}, {{"normalized_shape", IntList{3, 8}}, {"eps", 1e-3}})});
  }, {1e-4, 1e-5});
  one("layer_norm", "layer_norm_plain", [](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 16}));
    t.set_outputs({t.emit1(op("layer_norm"), {T(x), Operand::none(), Operand::none()}, {{"normalized_shape", IntList{16}}})});
  }, {1e-4, 1e-5});
  one("rms_norm", "rms_norm_weight", [](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 3, 8})), w = t.add_input("w", f32({8}));
    t.set_outputs({t.emit1(op("rms_norm"), {T(x), T(w)}, {{"normalized_shape", IntList{8}}, {"eps", 1e-6}})});
  }, {1e-4, 1e-5});
  one("rms_norm", "rms_norm_plain", [](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 3, 16}));
    t.set_outputs({t.emit1(op("rms_norm"), {T(x), Operand::none()}, {{"normalized_shape", IntList{3, 16}}, {"eps", 0x1p-23}})});
  }, {1e-4, 1e-5});
  one("batch_norm", "batch_norm_affine", [](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 3, 4, 5})), w = t.add_input("w", f32({3})), b = t.add_input("b", f32({3}));
    ValueId m = t.add_input("m", f32({3})), v0 = t.add_input("v0", f32({3}));
    ValueId v = t.emit1(op("abs"), {T(v0)}, {});
    t.set_outputs({t.emit1(op("batch_norm"), {T(x), T(w), T(b), T(m), T(v)}, {{"eps", 1e-3}})});
  }, {1e-4, 1e-5});
  one("batch_norm", "batch_norm_plain", [](Trace& t) {
    ValueId x = t.add_input("x", f32({6, 3})), m = t.add_input("m", f32({3})), v0 = t.add_input("v0", f32({3}));
    ValueId v = t.emit1(op("abs"), {T(v0)}, {});
    t.set_outputs({t.emit1(op("batch_norm"), {T(x), Operand::none(), Operand::none(), T(m), T(v)}, {})});
  }, {1e-4, 1e-5});
  one("gelu", "gelu_erf", [](Trace& t) {
    ValueId x = t.add_input("x", f32({5, 33}));
    t.set_outputs({t.emit1(op("gelu"), {T(x)}, {})});
  });
  one("gelu", "gelu_tanh", [](Trace& t) {
    ValueId x = t.add_input("x", f32({5, 33}));
    t.set_outputs({t.emit1(op("gelu"), {T(x)}, {{"approximate", std::string("tanh")}})});
  });
  for (const char* name : {"silu", "hardswish", "hardsigmoid"})
    one(name, name, [&](Trace& t) {
      ValueId x = t.add_input("x", f32({5, 33}));
      ValueId y = t.emit1(op("mul"), {T(x), N(4.0)}, {});  // reach both sides of hardtanh's bounds
      t.set_outputs({t.emit1(op(name), {T(y)}, {})});
    });
  const std::string sdpa = "scaled_dot_product_attention";
  one(sdpa, "sdpa_plain", [&](Trace& t) {
    ValueId q = t.add_input("q", f32({2, 3, 4, 8})), k = t.add_input("k", f32({2, 3, 6, 8})), v = t.add_input("v", f32({2, 3, 6, 8}));
    t.set_outputs({t.emit1(op(sdpa), {T(q), T(k), T(v), Operand::none()}, {})});
  }, {1e-4, 1e-5});
  one(sdpa, "sdpa_causal_scale", [&](Trace& t) {
    ValueId q = t.add_input("q", f32({1, 2, 5, 8})), k = t.add_input("k", f32({1, 2, 5, 8})), v = t.add_input("v", f32({1, 2, 5, 8}));
    t.set_outputs({t.emit1(op(sdpa), {T(q), T(k), T(v), Operand::none()}, {{"is_causal", true}, {"scale", 0.3}})});
  }, {1e-4, 1e-5});
  one(sdpa, "sdpa_bool_mask", [&](Trace& t) {
    ValueId q = t.add_input("q", f32({2, 4, 8})), k = t.add_input("k", f32({2, 6, 8})), v = t.add_input("v", f32({2, 6, 8}));
    ValueId m = t.add_input("m", b8({4, 6}));
    // keep one key per query so that no row is all -inf
    ValueId keep = t.add_input("keep", b8({4, 1}));
    ValueId mask = t.emit1(op("logical_or"), {T(m), T(keep)}, {});
    t.set_outputs({t.emit1(op(sdpa), {T(q), T(k), T(v), T(mask)}, {})});
  }, {1e-4, 1e-5});
  one(sdpa, "sdpa_float_mask", [&](Trace& t) {
    ValueId q = t.add_input("q", f32({2, 4, 8})), k = t.add_input("k", f32({2, 6, 8})), v = t.add_input("v", f32({2, 6, 8}));
    ValueId m = t.add_input("m", f32({4, 6}));
    t.set_outputs({t.emit1(op(sdpa), {T(q), T(k), T(v), T(m)}, {})});
  }, {1e-4, 1e-5});
  auto red = [](IntList dims, bool keepdim) { return Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}}; };
  one("amin", "amin", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 5, 6}));
    t.set_outputs({t.emit1(op("amin"), {T(x)}, red({1}, false)), t.emit1(op("amin"), {T(x)}, red({}, true)),
                   t.emit1(op("amin"), {T(x)}, red({0, 2}, true))});
  });
  for (const char* name : {"any", "all"}) {
    one(name, name, [&](Trace& t) {
      ValueId x = t.add_input("x", f32({4, 5, 6})), b = t.add_input("b", b8({3, 7}));
      // x > 0.8 is rarely true and x > -2 rarely false: rows where any or all go either way
      ValueId few = t.emit1(op("gt"), {T(x), N(0.8)}, {}), most = t.emit1(op("gt"), {T(x), N(-2.0)}, {});
      t.set_outputs({t.emit1(op(name), {T(few)}, red({2}, false)), t.emit1(op(name), {T(most)}, red({2}, true)),
                     t.emit1(op(name), {T(x)}, red({}, false)), t.emit1(op(name), {T(b)}, red({0}, false))});
    });
  }
  one("var", "var", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 5, 6})), one_row = t.add_input("o", f32({3, 1}));
    auto var = [&](ValueId v, IntList dims, bool keepdim, double correction) {
      return t.emit1(op("var"), {T(v)}, {{"dims", std::move(dims)}, {"keepdim", keepdim}, {"correction", correction}});
    };
    t.set_outputs({var(x, {2}, false, 1.0), var(x, {0, 1}, true, 0.0), var(x, {}, false, 1.0), var(x, {1}, false, 2.5),
                   var(one_row, {1}, false, 1.0)});  // one element, correction 1: 0 / 0 is NaN
  });
  one("repeat", "repeat", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 3}));
    auto rep = [&](IntList r) { return t.emit1(op("repeat"), {T(x)}, {{"repeats", std::move(r)}}); };
    t.set_outputs({rep({2, 3}), rep({1, 1}), rep({3, 1, 2}), rep({2, 0})});
  });
  one("constant_pad_nd", "constant_pad_nd", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 3, 5}));
    auto pad = [&](IntList p, double v) { return t.emit1(op("constant_pad_nd"), {T(x)}, {{"pad", std::move(p)}, {"value", v}}); };
    t.set_outputs({pad({1, 2}, 0.0), pad({0, 0, 2, 1}, -1.5), pad({-1, 2, 1, -2}, 3.0), pad({1, 1, 1, 1, 1, 1}, 0.0),
                   pad({-2, -3}, 0.0)});
  });
  one("pad", "pad", [&](Trace& t) {
    ValueId x3 = t.add_input("x3", f32({2, 3, 6})), x4 = t.add_input("x4", f32({1, 2, 4, 5}));
    auto pad = [&](ValueId v, IntList p, const char* mode) {
      return t.emit1(op("pad"), {T(v)}, {{"pad", std::move(p)}, {"mode", std::string(mode)}});
    };
    t.set_outputs({pad(x3, {2, 5}, "reflect"), pad(x3, {0, 3}, "replicate"), pad(x4, {1, 2, 3, 1}, "reflect"),
                   pad(x4, {4, 0, 2, 2}, "replicate")});
  });
  one("upsample_nearest2d", "upsample_nearest2d", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({1, 2, 4, 5}));
    auto up = [&](IntList size, AttrValue sh, AttrValue sw) {
      return t.emit1(op("upsample_nearest2d"), {T(x)}, {{"output_size", std::move(size)}, {"scale_h", sh}, {"scale_w", sw}});
    };
    t.set_outputs({up({8, 10}, None{}, None{}), up({6, 7}, None{}, None{}), up({3, 2}, None{}, None{}),
                   up({12, 7}, 3.0, 1.5), up({4, 5}, None{}, None{})});
  });
  one("group_norm", "group_norm", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({2, 6, 3, 4})), w = t.add_input("w", f32({6})), b = t.add_input("b", f32({6}));
    ValueId x2 = t.add_input("x2", f32({3, 4}));
    t.set_outputs({t.emit1(op("group_norm"), {T(x), T(w), T(b)}, {{"num_groups", std::int64_t{3}}}),
                   t.emit1(op("group_norm"), {T(x), Operand::none(), Operand::none()}, {{"num_groups", std::int64_t{6}}, {"eps", 1e-3}}),
                   t.emit1(op("group_norm"), {T(x2), Operand::none(), Operand::none()}, {{"num_groups", std::int64_t{2}}})});
  });
  one("slice_scatter", "slice_scatter", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 6})), s0 = t.add_input("s0", f32({2, 6})), s1 = t.add_input("s1", f64({4, 6}));
    ValueId s2 = t.add_input("s2", f32({4, 1}));
    auto scatter = [&](ValueId src, std::int64_t dim, std::int64_t start, std::int64_t end) {
      return t.emit1(op("slice_scatter"), {T(x), T(src)}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}});
    };
    t.set_outputs({scatter(s0, 0, 1, 3), scatter(s1, 1, 0, 6), scatter(s2, 1, 5, 6), scatter(s2, 1, 0, 1)});
  });
  one("select_scatter", "select_scatter", [&](Trace& t) {
    ValueId x = t.add_input("x", f32({4, 6})), s0 = t.add_input("s0", f32({6})), s1 = t.add_input("s1", f64({4}));
    auto scatter = [&](ValueId src, std::int64_t dim, std::int64_t index) {
      return t.emit1(op("select_scatter"), {T(x), T(src)}, {{"dim", dim}, {"index", index}});
    };
    t.set_outputs({scatter(s0, 0, 0), scatter(s0, 0, 3), scatter(s1, 1, 2), scatter(s1, 1, 5)});
  });
  // conv2d's gradients: the GEMM forms against ATen's convolution_backward, batch 1 (its own reshapes) and 2,
  // groups, stride with rows no window reads, dilation, depthwise.
  struct ConvGrad {
    Shape x, w;
    IntList stride, padding, dilation;
    std::int64_t groups;
  };
  const std::vector<ConvGrad> conv_grads = {{{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                                            {{1, 4, 9, 8}, {6, 2, 3, 2}, {2, 2}, {0, 1}, {1, 1}, 2},
                                            {{2, 2, 11, 10}, {3, 2, 3, 2}, {2, 3}, {1, 0}, {2, 3}, 1},
                                            {{1, 4, 8, 7}, {4, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4}};
  for (const char* name : {"conv2d_backward_input", "conv2d_backward_weight"}) {
    int k = 0;
    for (const ConvGrad& c : conv_grads) {
      one(name, std::string(name) + "_" + std::to_string(k++), [&](Trace& t) {
        Attrs a{{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
        const TensorType xt = f32(c.x), wt = f32(c.w);
        const std::vector<OperandInfo> args = {{OperandKind::Tensor, &xt, {}}, {OperandKind::Tensor, &wt, {}}, {}};
        const Shape y = op("conv2d").meta(MetaArgs{op("conv2d"), args, a})[0].shape;
        const bool input = std::string(name) == "conv2d_backward_input";
        if (input) a.set("input_size", IntList(c.x.begin(), c.x.end()));
        else a.set("weight_size", IntList(c.w.begin(), c.w.end()));
        ValueId g = t.add_input("g", f32(y)), other = t.add_input(input ? "w" : "x", input ? wt : xt);
        t.set_outputs({t.emit1(op(name), {T(g), T(other)}, a)});
      });
    }
  }
  // Every rule decompose has is checked here: a new rule needs a case above.
  for (const std::string& name : decomposable_ops()) CHECK_MESSAGE(checked.count(name) == 1, "no numeric check for rule " << name);
}
