// Conformance: every operator the loop executors claim, against the torch executor, on shapes with
// broadcasting, size-1 and odd extents, views (permute/slice/expand/select) feeding elementwise ops, and
// empty tensors. Several ops share one trace (one output each) so that each case compiles two .so files.
// The same suite checks `cpp` (test_codegen_cpp) and `nvfuser` through the CUDA emulator
// (test_codegen_nvfuser_conformance, THUNDERC_CONFORMANCE_NVFUSER): see cpp_test_util.h.
// Tolerances: see cpptest::Tol (float32 rtol 1e-5, atol 1e-5; float64 1e-10).
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>

#include "codegen/cpp/cpp_backend.h"
#include "cpp_test_util.h"

using namespace cpptest;

namespace {

const Tol kF64{1e-10, 1e-10};

// All unary ops on one input of `shape`.
Trace unary_trace(const TensorType& type, bool positive_only_ops) {
  Trace t;
  ValueId x = t.add_input("x", type);
  std::vector<ValueId> outs;
  if (positive_only_ops) {
    for (const char* name : {"log", "sqrt", "rsqrt", "reciprocal", "log2", "log10", "acosh"})
      outs.push_back(t.emit1(op(name), {T(x)}, {}));
    outs.push_back(t.emit1(op("pow"), {T(x), N(0.7)}, {}));
    outs.push_back(t.emit1(op("pow"), {T(x), N(0.5)}, {}));
  } else {
    for (const char* name : {"relu", "neg", "abs", "exp", "sin", "cos", "erf", "sigmoid", "tanh", "silu", "hardswish",
                             "hardsigmoid", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "expm1",
                             "log1p", "ceil", "floor", "trunc", "round", "sign", "isnan", "isinf"})
      outs.push_back(t.emit1(op(name), {T(x)}, {}));
    outs.push_back(t.emit1(op("elu"), {T(x)}, {}));
    outs.push_back(t.emit1(op("elu"), {T(x)}, {{"alpha", 0.5}, {"scale", 1.0507}, {"input_scale", 2.0}}));
    outs.push_back(t.emit1(op("gelu"), {T(x)}, {}));
    outs.push_back(t.emit1(op("gelu"), {T(x)}, {{"approximate", std::string("tanh")}}));
    outs.push_back(t.emit1(op("hardtanh"), {T(x)}, {{"min_val", -0.5}, {"max_val", 0.7}}));
    outs.push_back(t.emit1(op("hardtanh"), {T(x)}, {{"min_val", 0.0}, {"max_val", 6.0}}));
    outs.push_back(t.emit1(op("leaky_relu"), {T(x)}, {{"negative_slope", 0.2}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", -0.3}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"max", 0.4}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", -0.3}, {"max", 0.4}}));
    outs.push_back(t.emit1(op("pow"), {T(x), N(2.0)}, {}));
    outs.push_back(t.emit1(op("pow"), {T(x), N(3.0)}, {}));
    outs.push_back(t.emit1(op("pow"), {T(x), Operand::number(Scalar(std::int64_t{1}))}, {}));
    DType other = type.dtype == DType::Float32 ? DType::Float64 : DType::Float32;
    outs.push_back(t.emit1(op("to_dtype"), {T(x)}, {{"dtype", other}}));
    outs.push_back(t.emit1(op("to_dtype"), {T(x)}, {{"dtype", DType::Bool}}));
    outs.push_back(t.emit1(op("logical_not"), {T(x)}, {}));
  }
  t.set_outputs(outs);
  return t;
}

Trace binary_trace(const TensorType& a_type, const TensorType& b_type) {
  Trace t;
  ValueId a = t.add_input("a", a_type), b = t.add_input("b", b_type);
  std::vector<ValueId> outs;
  for (const char* name : {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "atan2",
                           "fmod", "remainder", "hypot"})
    outs.push_back(t.emit1(op(name), {T(a), T(b)}, {}));
  outs.push_back(t.emit1(op("remainder"), {T(a), N(0.75)}, {}));
  outs.push_back(t.emit1(op("remainder"), {T(a), N(-0.75)}, {}));
  outs.push_back(t.emit1(op("fmod"), {T(a), N(-0.75)}, {}));
  outs.push_back(t.emit1(op("atan2"), {N(1.0), T(b)}, {}));
  outs.push_back(t.emit1(op("pow"), {N(2.0), T(b)}, {}));
  // number operands on either side
  outs.push_back(t.emit1(op("add"), {T(a), N(2.5)}, {}));
  outs.push_back(t.emit1(op("sub"), {N(2.5), T(b)}, {}));
  outs.push_back(t.emit1(op("mul"), {T(a), Operand::number(Scalar(std::int64_t{3}))}, {}));
  outs.push_back(t.emit1(op("div"), {T(a), N(0.3)}, {}));
  outs.push_back(t.emit1(op("div"), {N(1.5), T(b)}, {}));
  outs.push_back(t.emit1(op("gt"), {T(a), N(0.1)}, {}));
  outs.push_back(t.emit1(op("maximum"), {T(a), T(b)}, {}));
  t.set_outputs(outs);
  return t;
}

// Every use of the operators `ops` in `t` is claimed by the executor under test: cpp here (before fusion; torch
// takes what it leaves). Under THUNDERC_CONFORMANCE_NVFUSER, check_against_torch offers no torch fallback, so
// there every symbol must be claimed by the CUDA executors.
void check_native(const Trace& t, const std::set<std::string>& ops) {
#ifndef THUNDERC_CONFORMANCE_NVFUSER
  Trace c = t;
  claim_executors(c, {find_executor("cpp"), find_executor("torch")});
  std::size_t n = 0;
  for (const BoundSymbol& s : c.symbols()) {
    if (!ops.count(s.op->name)) continue;
    ++n;
    CHECK_MESSAGE(s.executor == "cpp", s.op->name << " left to " << s.executor);
  }
  CHECK(n > 0);
#else
  (void)t;
  (void)ops;
#endif
}

void unary_case(Shape s, DType d = DType::Float32) {
  TensorType type{d, s, Device::cpu()};
  std::string tag = std::to_string(s.size()) + "_" + (s.empty() ? std::string("s") : std::to_string(s.back())) + dtype_short_name(d);
  Tol tol = d == DType::Float64 ? kF64 : Tol{};
  check_native(unary_trace(type, false), {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "expm1", "log1p",
                                          "ceil", "floor", "trunc", "round", "sign", "isnan", "isinf", "elu"});
  check_native(unary_trace(type, true), {"log2", "log10", "acosh"});
  check_against_torch(unary_trace(type, false), "unary_" + tag, false, tol);
  check_against_torch(unary_trace(type, true), "unary_pos_" + tag, true, tol);
}

}  // namespace

TEST_CASE("unary elementwise ops: scalar, size-1, odd, large, empty shapes, float32 and float64") {
  SUBCASE("[]") { unary_case({}); }
  SUBCASE("[1]") { unary_case({1}); }
  SUBCASE("[7]") { unary_case({7}); }
  SUBCASE("[3, 1, 33]") { unary_case({3, 1, 33}); }
  SUBCASE("[64, 1031] (parallel)") { unary_case({64, 1031}); }
  SUBCASE("[0, 4]") { unary_case({0, 4}); }
  SUBCASE("float64 [5, 9]") { unary_case({5, 9}, DType::Float64); }
}

TEST_CASE("binary elementwise ops with broadcasting and numbers") {
  struct C {
    Shape a, b;
  };
  int i = 0;
  for (C c : {C{{3, 5}, {3, 5}}, C{{3, 1}, {1, 5}}, C{{5}, {2, 3, 5}}, C{{}, {4, 3}}, C{{1, 1}, {17, 1}},
              C{{0, 3}, {1, 3}}, C{{2, 1, 257}, {2, 129, 1}}}) {
    CAPTURE(i);
    check_native(binary_trace(f32(c.a), f32(c.b)), {"atan2", "fmod", "remainder", "pow", "hypot"});
    check_against_torch(binary_trace(f32(c.a), f32(c.b)), "binary_" + std::to_string(i++));
  }
  SUBCASE("float64") { check_against_torch(binary_trace(f64({4, 1}), f64({4, 6})), "binary_f64", false, kF64); }
  SUBCASE("float32 with float64 promotes") { check_against_torch(binary_trace(f32({4, 6}), f64({6})), "binary_mixed", false, kF64); }
  SUBCASE("pow of two tensors") {
    Trace t;
    ValueId a = t.add_input("a", f32({3, 4})), b = t.add_input("b", f32({4}));
    t.set_outputs({t.emit1(op("pow"), {T(a), T(b)}, {})});
    check_against_torch(t, "pow_tensors", true);
  }
}

TEST_CASE("where, masked_fill and logical ops") {
  Trace t;
  ValueId c = t.add_input("c", b8({3, 1})), a = t.add_input("a", f32({2, 3, 5})), b = t.add_input("b", f32({5}));
  ValueId m = t.add_input("m", b8({3, 5})), z = t.add_input("z", f32({}));
  std::vector<ValueId> outs;
  outs.push_back(t.emit1(op("where"), {T(c), T(a), T(b)}, {}));
  outs.push_back(t.emit1(op("where"), {T(c), T(a), N(0.5)}, {}));
  outs.push_back(t.emit1(op("where"), {T(m), N(-1.0), T(b)}, {}));
  outs.push_back(t.emit1(op("masked_fill"), {T(a), T(m), N(-1e9)}, {}));
  outs.push_back(t.emit1(op("masked_fill"), {T(a), T(m), N(-INFINITY)}, {}));
  outs.push_back(t.emit1(op("masked_fill"), {T(a), T(c), T(z)}, {}));
  outs.push_back(t.emit1(op("logical_and"), {T(c), T(m)}, {}));
  outs.push_back(t.emit1(op("logical_or"), {T(c), T(m)}, {}));
  outs.push_back(t.emit1(op("logical_xor"), {T(c), T(m)}, {}));
  outs.push_back(t.emit1(op("bitwise_and"), {T(c), T(m)}, {}));
  outs.push_back(t.emit1(op("bitwise_or"), {T(m), Operand::number(Scalar(false))}, {}));
  outs.push_back(t.emit1(op("bitwise_xor"), {T(c), T(m)}, {}));
  outs.push_back(t.emit1(op("bitwise_not"), {T(m)}, {}));
  outs.push_back(t.emit1(op("sign"), {T(m)}, {}));
  outs.push_back(t.emit1(op("logical_not"), {T(m)}, {}));
  outs.push_back(t.emit1(op("to_dtype"), {T(m)}, {{"dtype", DType::Float32}}));
  t.set_outputs(outs);
  check_native(t, {"logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "sign"});
  check_against_torch(t, "where_mask");
}

TEST_CASE("reductions: sum, mean, amax over dims, keepdim, all dims, empty dims") {
  int i = 0;
  struct C {
    Shape s;
    IntList dims;
    bool keepdim;
  };
  for (C c : {C{{4, 5, 6}, {}, false}, C{{4, 5, 6}, {0}, false}, C{{4, 5, 6}, {1}, true}, C{{4, 5, 6}, {-1}, false},
              C{{4, 5, 6}, {0, 2}, true}, C{{1, 7}, {1}, false}, C{{2, 33, 65}, {2}, false}, C{{2, 33, 65}, {1}, true},
              C{{300, 300}, {1}, false}, C{{300, 300}, {0}, false}, C{{}, {}, false}}) {
    CAPTURE(i);
    Trace t;
    ValueId x = t.add_input("x", f32(c.s));
    std::vector<ValueId> outs;
    for (const char* name : {"sum", "mean", "amax"})
      outs.push_back(t.emit1(op(name), {T(x)}, {{"dims", c.dims}, {"keepdim", c.keepdim}}));
    outs.push_back(t.emit1(op("sum"), {T(x)}, {{"dims", c.dims}, {"keepdim", c.keepdim}, {"dtype", DType::Float64}}));
    t.set_outputs(outs);
    check_against_torch(t, "reduce_" + std::to_string(i++), false, Tol{1e-5, 1e-4});
  }
  SUBCASE("sum and mean of an empty dim") {
    Trace t;
    ValueId x = t.add_input("x", f32({3, 0, 2}));
    t.set_outputs({t.emit1(op("sum"), {T(x)}, {{"dims", IntList{1}}}), t.emit1(op("mean"), {T(x)}, {{"dims", IntList{1}}})});
    check_against_torch(t, "reduce_empty");
  }
  SUBCASE("reduction of an elementwise chain over a permuted input") {
    Trace t;
    ValueId x = t.add_input("x", f32({6, 4, 5}));
    ValueId p = t.emit1(op("permute"), {T(x)}, {{"dims", IntList{2, 0, 1}}});
    ValueId e = t.emit1(op("exp"), {T(p)}, {});
    t.set_outputs({t.emit1(op("sum"), {T(e)}, {{"dims", IntList{1}}}), t.emit1(op("amax"), {T(e)}, {{"dims", IntList{2}}, {"keepdim", true}})});
    check_against_torch(t, "reduce_chain", false, Tol{1e-5, 1e-4});
  }
}

TEST_CASE("softmax and log_softmax along any dim") {
  int i = 0;
  struct C {
    Shape s;
    std::int64_t dim;
  };
  for (C c : {C{{3, 4, 5}, 0}, C{{3, 4, 5}, 1}, C{{3, 4, 5}, -1}, C{{2, 129}, 1}, C{{7}, 0}, C{{1, 1}, 1}, C{{0, 5}, 1},
              C{{64, 1000}, -1}}) {
    CAPTURE(i);
    Trace t;
    ValueId x = t.add_input("x", f32(c.s));
    ValueId y = t.emit1(op("mul"), {T(x), N(3.0)}, {});
    t.set_outputs({t.emit1(op("softmax"), {T(y)}, {{"dim", c.dim}}), t.emit1(op("log_softmax"), {T(y)}, {{"dim", c.dim}}),
                   t.emit1(op("softmax"), {T(x)}, {{"dim", c.dim}, {"dtype", DType::Float64}})});
    check_against_torch(t, "softmax_" + std::to_string(i++));
  }
  SUBCASE("masked attention-style softmax with -inf") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 4, 8, 8})), m = t.add_input("m", b8({8, 8}));
    ValueId s = t.emit1(op("mul"), {T(x), N(0.125)}, {});
    ValueId f = t.emit1(op("masked_fill"), {T(s), T(m), N(-INFINITY)}, {});
    t.set_outputs({t.emit1(op("softmax"), {T(f)}, {{"dim", std::int64_t{-1}}})});
    check_against_torch(t, "softmax_masked");
  }
}

TEST_CASE("layer_norm and batch_norm") {
  SUBCASE("layer_norm over the last dim and the last two, with and without weight and bias") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 3, 8})), w = t.add_input("w", f32({8})), b = t.add_input("b", f32({8}));
    ValueId w2 = t.add_input("w2", f32({3, 8}));
    std::vector<ValueId> outs;
    outs.push_back(t.emit1(op("layer_norm"), {T(x), T(w), T(b)}, {{"normalized_shape", IntList{8}}}));
    outs.push_back(t.emit1(op("layer_norm"), {T(x), Operand::none(), Operand::none()}, {{"normalized_shape", IntList{8}}, {"eps", 1e-3}}));
    outs.push_back(t.emit1(op("layer_norm"), {T(x), T(w2), Operand::none()}, {{"normalized_shape", IntList{3, 8}}}));
    t.set_outputs(outs);
    check_against_torch(t, "layer_norm");
  }
  SUBCASE("layer_norm of a wide row feeding gelu") {
    Trace t;
    ValueId x = t.add_input("x", f32({33, 768})), w = t.add_input("w", f32({768})), b = t.add_input("b", f32({768}));
    ValueId y = t.emit1(op("layer_norm"), {T(x), T(w), T(b)}, {{"normalized_shape", IntList{768}}});
    t.set_outputs({t.emit1(op("gelu"), {T(y)}, {})});
    check_against_torch(t, "layer_norm_gelu", false, Tol{1e-4, 1e-5});
  }
  SUBCASE("batch_norm (inference) on 4-D and 2-D inputs, with and without affine") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 3, 4, 5})), x2 = t.add_input("x2", f32({4, 3}));
    ValueId w = t.add_input("w", f32({3})), b = t.add_input("b", f32({3})), m = t.add_input("m", f32({3}));
    ValueId v0 = t.add_input("v0", f32({3}));
    ValueId v = t.emit1(op("abs"), {T(v0)}, {});
    std::vector<ValueId> outs;
    outs.push_back(t.emit1(op("batch_norm"), {T(x), T(w), T(b), T(m), T(v)}, {}));
    outs.push_back(t.emit1(op("batch_norm"), {T(x2), T(w), T(b), T(m), T(v)}, {{"eps", 1e-3}}));
    ValueId bn = t.emit1(op("batch_norm"), {T(x), Operand::none(), Operand::none(), T(m), T(v)}, {});
    outs.push_back(t.emit1(op("relu"), {T(bn)}, {}));
    t.set_outputs(outs);
    check_against_torch(t, "batch_norm", false, Tol{1e-5, 1e-4});
  }
}

TEST_CASE("flip: one dim, several, of views, of broadcasts, into reshapes and cats") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 4})), y = t.add_input("y", f32({3, 1}));
  auto flip = [&](ValueId v, IntList dims) { return t.emit1(op("flip"), {T(v)}, {{"dims", std::move(dims)}}); };
  std::vector<ValueId> outs;
  outs.push_back(flip(x, {2}));
  outs.push_back(t.emit1(op("add"), {T(flip(x, {0, 2})), T(x)}, {}));
  ValueId p = t.emit1(op("permute"), {T(x)}, {{"dims", IntList{2, 0, 1}}});
  outs.push_back(t.emit1(op("mul"), {T(flip(p, {1})), N(2.0)}, {}));
  ValueId e = t.emit1(op("expand"), {T(y)}, {{"shape", IntList{2, 3, 5}}});
  outs.push_back(flip(e, {0, 1, 2}));
  ValueId f = flip(x, {1});
  outs.push_back(t.emit1(op("reshape"), {T(f)}, {{"shape", IntList{6, 4}}}));
  outs.push_back(t.emit1(op("cat"), {T(f), T(x)}, {{"dim", std::int64_t{1}}}));
  outs.push_back(flip(flip(x, {1}), {1}));
  t.set_outputs(outs);
  check_native(t, {"flip"});
  check_against_torch(t, "flip");
}

TEST_CASE("data movement: views feeding elementwise ops, reshape, cat, lone copies") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 4})), y = t.add_input("y", f32({3, 1}));
  std::vector<ValueId> outs;
  ValueId p = t.emit1(op("permute"), {T(x)}, {{"dims", IntList{2, 0, 1}}});
  outs.push_back(t.emit1(op("add"), {T(p), N(1.0)}, {}));
  ValueId s = t.emit1(op("slice"), {T(x)}, {{"dim", std::int64_t{2}}, {"start", std::int64_t{1}}, {"end", std::int64_t{4}}, {"step", std::int64_t{2}}});
  outs.push_back(t.emit1(op("mul"), {T(s), T(s)}, {}));
  ValueId sel = t.emit1(op("select"), {T(x)}, {{"dim", std::int64_t{1}}, {"index", std::int64_t{2}}});
  outs.push_back(t.emit1(op("sigmoid"), {T(sel)}, {}));
  ValueId e = t.emit1(op("expand"), {T(y)}, {{"shape", IntList{2, 3, 5}}});
  outs.push_back(t.emit1(op("sub"), {T(e), N(0.5)}, {}));
  ValueId r1 = t.emit1(op("reshape"), {T(p)}, {{"shape", IntList{4, 6}}});  // not a view of the permute: copied
  outs.push_back(t.emit1(op("tanh"), {T(r1)}, {}));
  ValueId r2 = t.emit1(op("reshape"), {T(x)}, {{"shape", IntList{6, -1}}});
  outs.push_back(t.emit1(op("exp"), {T(r2)}, {}));
  ValueId r3 = t.emit1(op("reshape"), {T(s)}, {{"shape", IntList{12}}});  // slice then flatten: not a view
  outs.push_back(t.emit1(op("neg"), {T(r3)}, {}));
  outs.push_back(t.emit1(op("cat"), {T(x), T(x)}, {{"dim", std::int64_t{1}}}));
  ValueId pe = t.emit1(op("exp"), {T(p)}, {});
  outs.push_back(t.emit1(op("cat"), {T(pe), T(p)}, {{"dim", std::int64_t{0}}}));
  outs.push_back(t.emit1(op("permute"), {T(x)}, {{"dims", IntList{1, 2, 0}}}));  // a lone copy
  outs.push_back(t.emit1(op("expand"), {T(y)}, {{"shape", IntList{3, 4}}}));
  ValueId empty = t.emit1(op("slice"), {T(x)}, {{"dim", std::int64_t{1}}, {"start", std::int64_t{1}}, {"end", std::int64_t{1}}});
  outs.push_back(t.emit1(op("relu"), {T(empty)}, {}));
  t.set_outputs(outs);
  check_against_torch(t, "movement");
}

// A reshape that is not a view stores its input first, in an order that makes it one and keeps the input's own
// memory order (materialize_for_reshape). ShuffleNet's channel shuffle on NHWC tensors after the channels-last
// pass: cat the channels, permute to NCHW, split them into 2 groups, swap, merge, slice the halves, permute back.
// Every store walks each pixel's channels innermost; before, two stores transposed the whole map to NCHW.
TEST_CASE("a channel shuffle on NHWC tensors stores each pixel's channels together") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 5, 6, 8})), y = t.add_input("y", f32({2, 5, 6, 8}));
  ValueId c = t.emit1(op("cat"), {T(x), T(y)}, {{"dim", std::int64_t{3}}});                  // [2, 5, 6, 16]
  ValueId nchw = t.emit1(op("permute"), {T(c)}, {{"dims", IntList{0, 3, 1, 2}}});
  ValueId split = t.emit1(op("reshape"), {T(nchw)}, {{"shape", IntList{2, 2, 8, 5, 6}}});
  ValueId swapped = t.emit1(op("permute"), {T(split)}, {{"dims", IntList{0, 2, 1, 3, 4}}});
  ValueId merged = t.emit1(op("reshape"), {T(swapped)}, {{"shape", IntList{2, 16, 5, 6}}});  // not a view
  std::vector<ValueId> outs;
  for (std::int64_t half = 0; half < 2; ++half) {
    ValueId s = t.emit1(op("slice"), {T(merged)}, {{"dim", std::int64_t{1}}, {"start", 8 * half}, {"end", 8 * half + 8}});
    ValueId back = t.emit1(op("permute"), {T(s)}, {{"dims", IntList{0, 2, 3, 1}}});
    outs.push_back(half == 0 ? back : t.emit1(op("relu"), {T(back)}, {}));
  }
  // And a reshape that merges the channels and rows of an NHWC tensor seen as NCHW, then a sum over it.
  ValueId flat = t.emit1(op("reshape"), {T(t.emit1(op("permute"), {T(x)}, {{"dims", IntList{0, 3, 1, 2}}}))}, {{"shape", IntList{2, 40, 6}}});
  outs.push_back(t.emit1(op("sum"), {T(flat)}, {{"dims", IntList{2}}}));
  t.set_outputs(outs);
  check_against_torch(t, "channel_shuffle");

  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "channel_shuffle_src";
  fs::remove_all(src);
  compile(claimed(t, {"cpp"}), {"cpp"}, "channel_shuffle_src", src.string());
  std::ifstream in(src / "model.cpp");
  const std::string code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(code.find("// permute") != std::string::npos);
  // No vectorized loop walks the 30 pixels of a channel (a transposition between NHWC and NCHW).
  CHECK_FALSE(std::regex_search(code, std::regex(R"(#pragma omp (parallel for )?simd[^\n]*\n\s*for \(int64_t i\d+ = 0; i\d+ < 30;)")));
}

// cat is lazy in the loop lowering (codegen/loops/region_lowering.h): what is built on it is stored one nest
// per piece. Cases where pieces are split again (two cats with other boundaries, cats along two dims, a cat
// of a cat), where the cat must be materialized first (a second use, a view, a reduction, a broadcast of
// the cat itself), and pieces that are views, empty, or of another dtype.
TEST_CASE("cat feeding elementwise ops and batch_norm: split per piece, materialized where it must be") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 4})), y = t.add_input("y", f32({2, 5, 4})), z = t.add_input("z", f32({2, 1, 4}));
  ValueId w = t.add_input("w", f32({2, 9, 4})), m = t.add_input("m", f32({2, 4, 3})), bias = t.add_input("bias", f32({9, 1}));
  ValueId d = t.add_input("d", f64({2, 3, 4})), big = t.add_input("big", f32({3, 2, 2, 4}));
  ValueId u = t.add_input("u", f32({4, 3, 1})), v3 = t.add_input("v3", f32({4, 3, 3}));
  auto cat = [&](std::vector<ValueId> parts, std::int64_t dim) {
    std::vector<Operand> ins;
    for (ValueId p : parts) ins.push_back(T(p));
    return t.emit1(op("cat"), ins, {{"dim", dim}});
  };
  std::vector<ValueId> outs;
  ValueId xyz = cat({x, y, z}, 1);                                                 // [2, 9, 4]
  outs.push_back(t.emit1(op("relu"), {T(xyz)}, {}));
  outs.push_back(t.emit1(op("add"), {T(cat({x, y, z}, 1)), T(w)}, {}));
  outs.push_back(t.emit1(op("mul"), {T(cat({x, y, z}, 1)), T(cat({y, z, x}, 1))}, {}));  // other boundaries
  outs.push_back(t.emit1(op("exp"), {T(cat({cat({x, z}, 1), y}, 1))}, {}));         // a cat of a cat
  outs.push_back(t.emit1(op("sub"), {T(cat({x, y, z}, -2)), T(bias)}, {}));         // a broadcast operand
  ValueId xx = cat({x, x}, 0), uv = cat({u, v3}, 2);                                // [4, 3, 4] both
  outs.push_back(t.emit1(op("add"), {T(xx), T(uv)}, {}));                           // split along two dims
  ValueId mt = t.emit1(op("permute"), {T(m)}, {{"dims", IntList{0, 2, 1}}});        // a view as a piece
  outs.push_back(t.emit1(op("neg"), {T(cat({mt, x}, 2))}, {}));
  outs.push_back(t.emit1(op("mul"), {T(cat({x, d}, 1)), N(2.0)}, {}));             // float32 and float64 pieces
  ValueId empty = t.emit1(op("slice"), {T(y)}, {{"dim", std::int64_t{1}}, {"start", std::int64_t{2}}, {"end", std::int64_t{2}}});
  outs.push_back(t.emit1(op("tanh"), {T(cat({x, empty, z}, 1))}, {}));
  ValueId twice = cat({z, x}, 1);                                                   // read twice: materialized
  outs.push_back(t.emit1(op("add"), {T(t.emit1(op("sigmoid"), {T(twice)}, {})), T(t.emit1(op("sum"), {T(twice)}, {{"dims", IntList{1}}, {"keepdim", true}}))}, {}));
  ValueId viewed = cat({y, x}, 1);                                                  // a view of it
  outs.push_back(t.emit1(op("tanh"), {T(t.emit1(op("permute"), {T(viewed)}, {{"dims", IntList{2, 0, 1}}}))}, {}));
  outs.push_back(t.emit1(op("sum"), {T(t.emit1(op("exp"), {T(cat({x, z}, 1))}, {}))}, {{"dims", IntList{1}}}));
  ValueId zz = cat({z, z}, 1);                                                      // [2, 2, 4], broadcast itself
  outs.push_back(t.emit1(op("add"), {T(zz), T(big)}, {}));
  ValueId out_and_read = cat({x, z}, 1);                                            // a region output read again
  outs.push_back(out_and_read);
  outs.push_back(t.emit1(op("abs"), {T(out_and_read)}, {}));
  t.set_outputs(outs);
  check_against_torch(t, "lazy_cat");
}

TEST_CASE("batch_norm and relu over a cat of channels, NCHW and (as DenseNet's channels-last dense layers) NHWC") {
  Trace b;
  ValueId p0 = b.add_input("p0", f32({1, 8, 3, 5})), p1 = b.add_input("p1", f32({1, 16, 3, 5}));
  ValueId q0 = b.add_input("q0", f32({1, 3, 5, 8})), q1 = b.add_input("q1", f32({1, 3, 5, 16}));
  ValueId q2 = b.add_input("q2", f32({1, 3, 5, 16}));
  ValueId g = b.add_input("g", f32({24})), be = b.add_input("be", f32({24})), mu = b.add_input("mu", f32({24}));
  ValueId var = b.emit1(op("abs"), {T(b.add_input("var0", f32({24})))}, {});
  ValueId g40 = b.add_input("g40", f32({40})), mu40 = b.add_input("mu40", f32({40}));
  ValueId var40 = b.emit1(op("abs"), {T(b.add_input("var40", f32({40})))}, {});
  std::vector<ValueId> outs;
  ValueId c = b.emit1(op("cat"), {T(p0), T(p1)}, {{"dim", std::int64_t{1}}});
  outs.push_back(b.emit1(op("relu"), {T(b.emit1(op("batch_norm"), {T(c), T(g), T(be), T(mu), T(var)}, {}))}, {}));
  // NHWC: channels last; batch_norm runs on the NCHW permute and its result goes back to NHWC, as the
  // channels-last pass leaves a pre-activation batch norm between two oneDNN convolutions.
  ValueId cl = b.emit1(op("cat"), {T(q0), T(q1), T(q2)}, {{"dim", std::int64_t{3}}});
  ValueId as_nchw = b.emit1(op("permute"), {T(cl)}, {{"dims", IntList{0, 3, 1, 2}}});
  ValueId bn = b.emit1(op("batch_norm"), {T(as_nchw), T(g40), Operand::none(), T(mu40), T(var40)}, {});
  ValueId r = b.emit1(op("relu"), {T(bn)}, {});
  outs.push_back(b.emit1(op("permute"), {T(r)}, {{"dims", IntList{0, 2, 3, 1}}}));
  b.set_outputs(outs);
  check_against_torch(b, "lazy_cat_batch_norm", false, Tol{1e-5, 1e-4});
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER  // the channels-last pooling forms are the CPU's (nvfuser claims none)
// A cat of channels feeding channels-last pooling (SqueezeNet's Fire outputs before a max pool): each piece is
// pooled into its channels of the output, the concatenation never stored (scratch holds only the piece that is
// computed in the region).
TEST_CASE("max_pool2d_nhwc and avg_pool2d_nhwc of a cat of channels pool each piece into its channels") {
  Trace t;
  ValueId a = t.add_input("a", f32({2, 9, 7, 8})), b = t.add_input("b", f32({2, 9, 7, 16})), c = t.add_input("c", f32({2, 9, 7, 3}));
  ValueId rb = t.emit1(op("relu"), {T(b)}, {});
  ValueId cat = t.emit1(op("cat"), {T(a), T(rb), T(c)}, {{"dim", std::int64_t{3}}});  // [2, 9, 7, 27]
  auto k = [](IntList v) { return AttrValue(v); };
  std::vector<ValueId> outs;
  outs.push_back(t.emit1(op("max_pool2d_nhwc"), {T(cat)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"ceil_mode", true}}));
  ValueId cat2 = t.emit1(op("cat"), {T(a), T(c)}, {{"dim", std::int64_t{-1}}});
  outs.push_back(t.emit1(op("avg_pool2d_nhwc"), {T(cat2)}, {{"kernel_size", k({3, 2})}, {"stride", k({2, 1})}, {"padding", k({1, 1})}, {"count_include_pad", false}}));
  t.set_outputs(outs);
  check_native(t, {"max_pool2d_nhwc", "avg_pool2d_nhwc"});
  check_against_torch(t, "cat_nhwc_pool", false, Tol{1e-5, 1e-5}, 1, InputOpts{0.02});  // NaN wins a max window
  Trace one;
  ValueId x = one.add_input("x", f32({1, 6, 6, 16})), y = one.add_input("y", f32({1, 6, 6, 32}));
  ValueId xy = one.emit1(op("cat"), {T(x), T(y)}, {{"dim", std::int64_t{3}}});
  one.set_outputs({one.emit1(op("max_pool2d_nhwc"), {T(xy)}, {{"kernel_size", k({2, 2})}})});
  Trace fused = claimed(one, {"cpp"});
  REQUIRE(fused.symbols().size() == 1);
  CHECK(CppBackend().scratch_bytes(fused, fused.symbols()[0]) == 0);
}
#endif

#ifndef THUNDERC_CONFORMANCE_NVFUSER
// max_pool2d's gradient on channels-last tensors (a training backward's channels-last pass): overlapping windows
// (stride < kernel) that sum into shared positions, padding, dilation, ceil_mode, a channel count that is no
// multiple of the kernel's block of 16, ties and NaN (the first maximum; NaN wins, as ATen).
TEST_CASE("max_pool2d_backward_nhwc: ATen's picks and sums per channel") {
  Trace t;
  auto k = [](IntList v) { return AttrValue(v); };
  std::vector<ValueId> outs;
  struct Case {
    Shape x, g;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 11, 12, 20}, {2, 6, 6, 20}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}},
      {{1, 9, 11, 35}, {1, 3, 4, 35}, {{"kernel_size", k({3, 2})}, {"stride", k({2, 3})}, {"dilation", k({2, 1})},
                                        {"ceil_mode", true}}},
      {{1, 8, 8, 16}, {1, 7, 7, 16}, {{"kernel_size", k({2, 2})}, {"stride", k({1, 1})}}},
  };
  for (const Case& c : cases) {
    ValueId x = t.add_input("x" + std::to_string(outs.size()), f32(c.x));
    ValueId g = t.add_input("g" + std::to_string(outs.size()), f32(c.g));
    outs.push_back(t.emit1(op("max_pool2d_backward_nhwc"), {T(g), T(x)}, c.attrs));
  }
  t.set_outputs(outs);
  check_native(t, {"max_pool2d_backward_nhwc"});
  check_against_torch(t, "max_pool2d_backward_nhwc", false, Tol{1e-6, 1e-6}, 1, InputOpts{0.02});
}
#endif

TEST_CASE("pooling: max, average, adaptive average") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 9, 11})), x3 = t.add_input("x3", f32({3, 7, 7}));
  std::vector<ValueId> outs;
  auto k = [](IntList v) { return AttrValue(v); };
  outs.push_back(t.emit1(op("max_pool2d"), {T(x)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}));
  outs.push_back(t.emit1(op("max_pool2d"), {T(x)}, {{"kernel_size", k({2})}}));
  outs.push_back(t.emit1(op("max_pool2d"), {T(x)}, {{"kernel_size", k({3, 2})}, {"stride", k({2, 3})}, {"dilation", k({2, 1})}, {"ceil_mode", true}}));
  outs.push_back(t.emit1(op("avg_pool2d"), {T(x)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}));
  outs.push_back(t.emit1(op("avg_pool2d"), {T(x)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}, {"count_include_pad", false}}));
  outs.push_back(t.emit1(op("avg_pool2d"), {T(x)}, {{"kernel_size", k({2, 2})}, {"ceil_mode", true}}));
  outs.push_back(t.emit1(op("avg_pool2d"), {T(x)}, {{"kernel_size", k({3, 3})}, {"padding", k({1, 1})}, {"divisor_override", std::int64_t{5}}}));
  outs.push_back(t.emit1(op("adaptive_avg_pool2d"), {T(x)}, {{"output_size", k({1, 1})}}));
  outs.push_back(t.emit1(op("adaptive_avg_pool2d"), {T(x)}, {{"output_size", k({4, 5})}}));
  outs.push_back(t.emit1(op("max_pool2d"), {T(x3)}, {{"kernel_size", k({2, 2})}}));
  ValueId r = t.emit1(op("relu"), {T(x)}, {});  // pooling of an elementwise producer
  outs.push_back(t.emit1(op("max_pool2d"), {T(r)}, {{"kernel_size", k({2, 2})}}));
  t.set_outputs(outs);
  check_against_torch(t, "pooling");
}

TEST_CASE("fused chains: gpt-style block pieces") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 16, 64})), res = t.add_input("res", f32({2, 16, 64}));
  ValueId w = t.add_input("w", f32({64})), b = t.add_input("b", f32({64}));
  ValueId h = t.emit1(op("add"), {T(x), T(res)}, {});
  ValueId ln = t.emit1(op("layer_norm"), {T(h), T(w), T(b)}, {{"normalized_shape", IntList{64}}});
  ValueId r = t.emit1(op("reshape"), {T(ln)}, {{"shape", IntList{2, 16, 4, 16}}});
  ValueId p = t.emit1(op("permute"), {T(r)}, {{"dims", IntList{0, 2, 1, 3}}});
  ValueId sc = t.emit1(op("mul"), {T(p), N(0.25)}, {});
  ValueId sm = t.emit1(op("softmax"), {T(sc)}, {{"dim", std::int64_t{-1}}});
  ValueId g = t.emit1(op("gelu"), {T(h)}, {{"approximate", std::string("tanh")}});
  ValueId out = t.emit1(op("add"), {T(g), T(h)}, {});
  t.set_outputs({sm, out, h});
  check_against_torch(t, "chain", false, Tol{1e-5, 1e-5});
}

// float16 and bfloat16: stored in 16 bits, computed in float, against half_rounded_reference (eager PyTorch's
// float computation rounded after each operator). Tolerances: one unit in the last place where each output is
// one operator of the inputs (kF16Op/kBF16Op); where a fused loop keeps a chain's intermediates in float and the
// reference rounds each, a few more (stated per case).
namespace {

struct HalfCase {
  DType d;
  Tol op_tol;
  std::string tag;
  TensorType ty(Shape s) const { return {d, std::move(s), Device::cpu()}; }
  // A chain of k operators whose intermediates the reference rounds: up to k units more.
  Tol chain(int k) const { return {op_tol.rtol * (k + 1), op_tol.atol + op_tol.rtol * k}; }
};

const HalfCase kHalfCases[] = {{DType::Float16, kF16Op, "f16"}, {DType::BFloat16, kBF16Op, "bf16"}};

}  // namespace

TEST_CASE("float16 and bfloat16: elementwise ops, broadcasting, promotion and conversions") {
  for (const HalfCase& h : kHalfCases) {
    CAPTURE(h.tag);
    check_native(unary_trace(h.ty({3, 1, 33}), false), {"exp", "tan", "erf", "gelu", "round", "isnan", "to_dtype"});
    check_half_against_torch(unary_trace(h.ty({3, 1, 33}), false), "half_unary_" + h.tag, false, h.op_tol);
    check_half_against_torch(unary_trace(h.ty({64, 1031}), false), "half_unary_par_" + h.tag, false, h.op_tol);
    check_half_against_torch(unary_trace(h.ty({5, 7}), true), "half_unary_pos_" + h.tag, true, h.op_tol);
    check_half_against_torch(binary_trace(h.ty({3, 1}), h.ty({1, 5})), "half_binary_" + h.tag, false, h.op_tol);
    check_half_against_torch(binary_trace(h.ty({2, 1, 257}), h.ty({2, 129, 1})), "half_binary_big_" + h.tag, false,
                             h.op_tol);
    // half with float32 and float64 promotes to them; float16 with bfloat16 to float32
    check_half_against_torch(binary_trace(h.ty({4, 6}), f32({6})), "half_binary_f32_" + h.tag, false, Tol{});
    check_half_against_torch(binary_trace(f64({4, 1}), h.ty({4, 6})), "half_binary_f64_" + h.tag, false, kF64);
    Trace t;
    ValueId x = t.add_input("x", h.ty({3, 5}));
    ValueId c = t.add_input("c", b8({3, 1})), o = t.add_input("o", f32({3, 5}));
    const DType other = h.d == DType::Float16 ? DType::BFloat16 : DType::Float16;
    std::vector<ValueId> outs;
    for (DType to : {other, DType::Float32, DType::Float64, DType::Bool})
      outs.push_back(t.emit1(op("to_dtype"), {T(x)}, {{"dtype", to}}));
    outs.push_back(t.emit1(op("to_dtype"), {T(o)}, {{"dtype", h.d}}));  // float32 rounded to the half type
    ValueId i = t.add_input("i", {DType::Int64, {5}, Device::cpu()});
    outs.push_back(t.emit1(op("to_dtype"), {T(i)}, {{"dtype", h.d}}));
    outs.push_back(t.emit1(op("add"), {T(x), T(i)}, {}));  // an integer tensor converts to the half type
    outs.push_back(t.emit1(op("where"), {T(c), T(x), N(0.5)}, {}));
    outs.push_back(t.emit1(op("masked_fill"), {T(x), T(c), N(-INFINITY)}, {}));
    outs.push_back(t.emit1(op("mul"), {T(x), N(1e5)}, {}));  // float16: past 65504, inf as in PyTorch
    outs.push_back(t.emit1(op("mul"), {T(x), N(1e-6)}, {}));  // float16: subnormal results
    t.set_outputs(outs);
    check_native(t, {"to_dtype", "add", "where", "masked_fill", "mul"});
    check_half_against_torch(t, "half_convert_" + h.tag, false, h.op_tol, 1, InputOpts{0.1});
  }
}

TEST_CASE("float16 and bfloat16: reductions, softmax, norms and pooling sum in float") {
  for (const HalfCase& h : kHalfCases) {
    CAPTURE(h.tag);
    Trace t;
    ValueId x = t.add_input("x", h.ty({4, 33, 65})), w = t.add_input("w", h.ty({65})), b = t.add_input("b", h.ty({65}));
    ValueId img = t.add_input("img", h.ty({2, 3, 9, 11}));
    ValueId m = t.add_input("m", h.ty({3})), v0 = t.add_input("v0", h.ty({3})), g = t.add_input("g", h.ty({3}));
    ValueId gb = t.add_input("gb", h.ty({3}));
    std::vector<ValueId> outs;
    for (const char* name : {"sum", "mean", "amax"}) {
      outs.push_back(t.emit1(op(name), {T(x)}, {{"dims", IntList{2}}}));
      outs.push_back(t.emit1(op(name), {T(x)}, {{"dims", IntList{0, 1}}, {"keepdim", true}}));
    }
    outs.push_back(t.emit1(op("sum"), {T(x)}, {{"dims", IntList{1}}, {"dtype", DType::Float32}}));
    outs.push_back(t.emit1(op("softmax"), {T(x)}, {{"dim", std::int64_t{-1}}}));
    outs.push_back(t.emit1(op("softmax"), {T(x)}, {{"dim", std::int64_t{1}}}));
    outs.push_back(t.emit1(op("log_softmax"), {T(x)}, {{"dim", std::int64_t{-1}}}));
    outs.push_back(t.emit1(op("softmax"), {T(x)}, {{"dim", std::int64_t{-1}}, {"dtype", DType::Float32}}));
    outs.push_back(t.emit1(op("layer_norm"), {T(x), T(w), T(b)}, {{"normalized_shape", IntList{65}}}));
    ValueId v = t.emit1(op("abs"), {T(v0)}, {});
    outs.push_back(t.emit1(op("batch_norm"), {T(img), T(g), T(gb), T(m), T(v)}, {}));
    auto k = [](IntList l) { return AttrValue(l); };
    outs.push_back(t.emit1(op("max_pool2d"), {T(img)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}));
    outs.push_back(t.emit1(op("avg_pool2d"), {T(img)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}));
    outs.push_back(t.emit1(op("adaptive_avg_pool2d"), {T(img)}, {{"output_size", k({1, 1})}}));
    t.set_outputs(outs);
    check_native(t, {"sum", "mean", "amax", "softmax", "log_softmax", "layer_norm", "batch_norm", "max_pool2d",
                     "avg_pool2d", "adaptive_avg_pool2d"});
    // batch_norm's abs(v) is a chain of two; the rest one operator each
    check_half_against_torch(t, "half_reduce_" + h.tag, false, h.chain(1));
  }
}

TEST_CASE("float16 and bfloat16: data movement, cats and a fused gpt-style chain") {
  for (const HalfCase& h : kHalfCases) {
    CAPTURE(h.tag);
    Trace t;
    ValueId x = t.add_input("x", h.ty({2, 3, 4})), y = t.add_input("y", h.ty({2, 3, 1}));
    std::vector<ValueId> outs;
    ValueId p = t.emit1(op("permute"), {T(x)}, {{"dims", IntList{2, 0, 1}}});
    outs.push_back(t.emit1(op("reshape"), {T(p)}, {{"shape", IntList{4, 6}}}));
    outs.push_back(t.emit1(op("flip"), {T(x)}, {{"dims", IntList{1}}}));
    outs.push_back(t.emit1(op("cat"), {T(x), T(y)}, {{"dim", std::int64_t{2}}}));
    outs.push_back(t.emit1(op("slice"), {T(x)}, {{"dim", std::int64_t{2}}, {"start", std::int64_t{1}}, {"end", std::int64_t{4}}, {"step", std::int64_t{2}}}));
    outs.push_back(t.emit1(op("expand"), {T(y)}, {{"shape", IntList{2, 3, 5}}}));
    t.set_outputs(outs);
    check_native(t, {"permute", "reshape", "flip", "cat", "slice", "expand"});
    check_half_against_torch(t, "half_move_" + h.tag, false, Tol{0, 0});  // copies: exact

    Trace c;
    ValueId a = c.add_input("x", h.ty({2, 16, 64})), res = c.add_input("res", h.ty({2, 16, 64}));
    ValueId w = c.add_input("w", h.ty({64})), b = c.add_input("b", h.ty({64}));
    ValueId s = c.emit1(op("add"), {T(a), T(res)}, {});
    ValueId ln = c.emit1(op("layer_norm"), {T(s), T(w), T(b)}, {{"normalized_shape", IntList{64}}});
    ValueId sc = c.emit1(op("mul"), {T(ln), N(0.25)}, {});
    ValueId sm = c.emit1(op("softmax"), {T(sc)}, {{"dim", std::int64_t{-1}}});
    ValueId gl = c.emit1(op("gelu"), {T(s)}, {{"approximate", std::string("tanh")}});
    c.set_outputs({sm, c.emit1(op("add"), {T(gl), T(s)}, {})});
    // softmax(layer_norm(x + res) * 0.25): four operators, which the reference rounds after each
    check_half_against_torch(c, "half_chain_" + h.tag, false, h.chain(4));
  }
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER
TEST_CASE("checkers leave unsupported uses to torch") {
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Int64, {3}, Device::cpu()});
  ValueId h = t.add_input("h", TensorType{DType::Float16, {3}, Device::cpu()});
  ValueId f = t.add_input("f", f32({3}));
  t.emit1(op("remainder"), {T(x), T(x)}, {});  // by a tensor: ATen raises on a zero divisor
  t.emit1(op("to_dtype"), {T(h)}, {{"dtype", DType::Int32}});  // C++'s conversion of NaN is undefined
  t.emit1(op("div"), {T(f), N(2.0)}, {{"rounding_mode", std::string("floor")}});
  t.emit1(op("relu"), {T(f)}, {});
  t.set_outputs({t.symbols().back().outputs[0]});
  std::vector<const Executor*> exs = {find_executor("cpp"), find_executor("torch")};
  claim_executors(t, exs);
  CHECK(t.symbols()[0].executor == "torch");
  CHECK(t.symbols()[1].executor == "torch");
  CHECK(t.symbols()[2].executor == "torch");
  CHECK(t.symbols()[3].executor == "cpp");
}
#endif

// NaN in the inputs: PyTorch propagates it through amax, max_pool2d, maximum/minimum, clamp, relu, ...
// Every float input has NaNs at random positions (and, for odd seeds, in its first element) — so rows have a
// NaN first, in the middle, last, or none. The torch executor (ATen) is the reference.
TEST_CASE("NaN propagates as in PyTorch: reductions, softmax, pooling, min/max-like ops") {
  const InputOpts nan{0.15};
  SUBCASE("amax, sum, mean over every kind of reduced dims") {
    int i = 0;
    struct C {
      Shape s;
      IntList dims;
    };
    for (C c : {C{{1, 3}, {-1}}, C{{4, 5, 6}, {}}, C{{4, 5, 6}, {0}}, C{{4, 5, 6}, {-1}}, C{{4, 5, 6}, {0, 2}},
                C{{2, 33, 65}, {2}}, C{{2, 33, 65}, {1}}, C{{300, 300}, {1}}, C{{300, 300}, {0}}, C{{64, 2000}, {1}}}) {
      CAPTURE(i);
      Trace t;
      ValueId x = t.add_input("x", f32(c.s));
      std::vector<ValueId> outs;
      for (const char* name : {"amax", "sum", "mean"}) outs.push_back(t.emit1(op(name), {T(x)}, {{"dims", c.dims}}));
      t.set_outputs(outs);
      check_against_torch(t, "nan_reduce_" + std::to_string(i++), false, Tol{1e-5, 1e-4}, 1, nan);
    }
  }
  SUBCASE("softmax, log_softmax, layer_norm") {
    Trace t;
    ValueId x = t.add_input("x", f32({6, 9})), w = t.add_input("w", f32({9}));
    t.set_outputs({t.emit1(op("softmax"), {T(x)}, {{"dim", std::int64_t{-1}}}),
                   t.emit1(op("log_softmax"), {T(x)}, {{"dim", std::int64_t{0}}}),
                   t.emit1(op("layer_norm"), {T(x), T(w), Operand::none()}, {{"normalized_shape", IntList{9}}})});
    check_against_torch(t, "nan_softmax", false, Tol{}, 1, nan);
  }
  SUBCASE("max_pool2d") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 3, 9, 11}));
    auto k = [](IntList v) { return AttrValue(v); };
    t.set_outputs({t.emit1(op("max_pool2d"), {T(x)}, {{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}}),
                   t.emit1(op("max_pool2d"), {T(x)}, {{"kernel_size", k({2})}}),
                   t.emit1(op("avg_pool2d"), {T(x)}, {{"kernel_size", k({2, 2})}}),
                   t.emit1(op("adaptive_avg_pool2d"), {T(x)}, {{"output_size", k({2, 3})}})});
    check_against_torch(t, "nan_pool", false, Tol{}, 1, nan);
  }
  SUBCASE("unary min/max-like ops") {
    Trace t;
    ValueId x = t.add_input("x", f32({5, 33}));
    std::vector<ValueId> outs;
    for (const char* name : {"relu", "hardswish", "hardsigmoid", "abs", "neg", "sigmoid", "exp"})
      outs.push_back(t.emit1(op(name), {T(x)}, {}));
    outs.push_back(t.emit1(op("hardtanh"), {T(x)}, {{"min_val", -0.5}, {"max_val", 0.7}}));
    outs.push_back(t.emit1(op("leaky_relu"), {T(x)}, {{"negative_slope", 0.2}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", -0.3}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"max", 0.4}}));
    outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", -0.3}, {"max", 0.4}}));
    t.set_outputs(outs);
    check_against_torch(t, "nan_unary", false, Tol{}, 1, nan);
  }
  SUBCASE("math, rounding and predicates: NaN, +-inf, -0.0 and halves") {
    Trace t;
    ValueId x = t.add_input("x", f32({5, 33}));
    // Non-finite values (x / 0 is +-inf, NaN stays NaN), -0.0 (-0 * x for x > 0), and exact halves (round(4x) / 2).
    ValueId inf = t.emit1(op("div"), {T(x), N(0.0)}, {});
    ValueId zero = t.emit1(op("mul"), {T(x), N(-0.0)}, {});
    ValueId halves = t.emit1(op("div"), {T(t.emit1(op("round"), {T(t.emit1(op("mul"), {T(x), N(4.0)}, {}))}, {})), N(2.0)}, {});
    std::vector<ValueId> outs;
    for (ValueId v : {x, inf, zero, halves})
      for (const char* name : {"ceil", "floor", "trunc", "round", "sign", "isnan", "isinf", "atan", "tanh", "expm1",
                               "log1p", "asinh", "elu"})
        outs.push_back(t.emit1(op(name), {T(v)}, {}));
    for (ValueId v : {inf, zero}) {
      outs.push_back(t.emit1(op("remainder"), {T(x), T(v)}, {}));
      outs.push_back(t.emit1(op("fmod"), {T(v), N(1.5)}, {}));
      outs.push_back(t.emit1(op("atan2"), {T(v), T(x)}, {}));
    }
    t.set_outputs(outs);
    check_native(t, {"ceil", "floor", "trunc", "round", "sign", "isnan", "isinf", "atan", "expm1", "log1p", "asinh",
                     "elu", "remainder", "fmod", "atan2"});
    check_against_torch(t, "nan_math", false, Tol{}, 1, nan);
  }
  SUBCASE("maximum, minimum, where, comparisons") {
    Trace t;
    ValueId a = t.add_input("a", f32({4, 7})), b = t.add_input("b", f32({7}));
    std::vector<ValueId> outs;
    for (const char* name : {"maximum", "minimum", "gt", "eq", "ne"}) outs.push_back(t.emit1(op(name), {T(a), T(b)}, {}));
    outs.push_back(t.emit1(op("maximum"), {T(b), T(a)}, {}));
    outs.push_back(t.emit1(op("minimum"), {T(b), T(a)}, {}));
    t.set_outputs(outs);
    check_against_torch(t, "nan_binary", false, Tol{}, 1, nan);
  }
}

// Non-finite attributes (addmm alpha=inf, leaky_relu negative_slope=nan, clamp min=inf) are valid
// literals in the generated source (a bare `inf` or `nan` fails its build), with PyTorch's results.
TEST_CASE("non-finite attribute values compile and match PyTorch") {
  Trace t;
  ValueId x = t.add_input("x", f32({3, 17}));
  std::vector<ValueId> outs;
  outs.push_back(t.emit1(op("leaky_relu"), {T(x)}, {{"negative_slope", double(NAN)}}));
  outs.push_back(t.emit1(op("leaky_relu"), {T(x)}, {{"negative_slope", double(INFINITY)}}));
  outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", double(INFINITY)}}));
  outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"max", -double(INFINITY)}}));
  outs.push_back(t.emit1(op("clamp"), {T(x)}, {{"min", -double(INFINITY)}, {"max", double(INFINITY)}}));
  outs.push_back(t.emit1(op("hardtanh"), {T(x)}, {{"min_val", -double(INFINITY)}, {"max_val", double(INFINITY)}}));
  outs.push_back(t.emit1(op("mul"), {T(x), N(INFINITY)}, {}));
  outs.push_back(t.emit1(op("add"), {T(x), N(NAN)}, {}));
  t.set_outputs(outs);
  check_against_torch(t, "nonfinite_attrs");
  SUBCASE("clamp with a NaN bound gives NaN everywhere") {
    Trace c;
    ValueId y = c.add_input("y", f32({2, 5}));
    c.set_outputs({c.emit1(op("clamp"), {T(y)}, {{"min", double(NAN)}, {"max", 1.0}}),
                   c.emit1(op("clamp"), {T(y)}, {{"min", -1.0}, {"max", double(NAN)}})});
    check_against_torch(c, "nonfinite_clamp_nan");
  }
}

// Generated identifiers cannot collide whatever the values are named: `x` and `x_shape` (the shape array
// of x was once named v_x_shape, the buffer of x_shape too), names that sanitize alike.
TEST_CASE("values named like generated identifiers") {
  Trace t;
  ValueId x = t.add_input("x", f32({3, 4})), xs = t.add_input("x_shape", f32({3, 4}));
  ValueId a = t.add_input("a.b", f32({4})), b = t.add_input("a_b", f32({4}));
  ValueId s = t.emit1(op("add"), {T(x), T(xs)}, {});
  ValueId u = t.emit1(op("mul"), {T(a), T(b)}, {});
  t.set_outputs({s, t.emit1(op("add"), {T(s), T(u)}, {})});
  check_against_torch(t, "ident_collision");
}

namespace {

// Runs `m` (its inputs: a [10, 4] table, then int64 indices) with index element 1 set to each of 10, -1 and
// 2^40: every call must fail with an error holding message(index); then with 9, the last row, which must run
// and give that row as output 0's second row.
template <class Model, class Message>
void check_index_out_of_range(Model& m, std::vector<HostTensor> in, Message message) {
  for (std::int64_t bad : {std::int64_t{10}, std::int64_t{-1}, std::int64_t{1} << 40}) {
    CAPTURE(bad);
    static_cast<std::int64_t*>(in[1].raw())[1] = bad;
    try {
      m.run(in);
      FAIL("an out-of-range index did not fail the call");
    } catch (const thunderc::Error& e) {
      CHECK(std::string(e.what()).find(message(bad)) != std::string::npos);
    }
  }
  static_cast<std::int64_t*>(in[1].raw())[1] = 9;
  auto out = m.run(in);
  for (std::int64_t j = 0; j < 4; ++j) CHECK(element(out[0], 4 + j) == element(in[0], 9 * 4 + j));
}

}  // namespace

// Integer tensors (the loops move, convert and compare them, and read them as embedding indices; nvfuser too,
// with its embedding kernel): what a Hugging Face encoder does with its int64 input_ids and attention_mask.
// Integer inputs are in [0, 10).
TEST_CASE("integer tensors: embedding, data movement, conversion to floating types") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  Trace t;
  ValueId ids = t.add_input("ids", ty(DType::Int64, {2, 5})), ids32 = t.add_input("ids32", ty(DType::Int32, {7}));
  ValueId mask = t.add_input("mask", ty(DType::Int64, {2, 5})), u8 = t.add_input("u8", ty(DType::UInt8, {3, 4}));
  ValueId flag = t.add_input("flag", b8({4}));
  ValueId table = t.add_input("table", f32({10, 6})), table64 = t.add_input("table64", f64({12, 3}));
  std::vector<ValueId> outs;
  outs.push_back(t.emit1(op("embedding"), {T(table), T(ids)}, {}));
  outs.push_back(t.emit1(op("embedding"), {T(table64), T(ids32)}, {}));
  ValueId pos = t.emit1(op("select"), {T(ids)}, {{"dim", std::int64_t{0}}, {"index", std::int64_t{1}}});
  outs.push_back(t.emit1(op("embedding"), {T(table), T(pos)}, {}));  // indices that are a view
  // The extended attention mask: (1 - mask[:, None, None, :].float()) * -1e9
  ValueId m4 = t.emit1(op("reshape"), {T(mask)}, {{"shape", IntList{2, 1, 1, 5}}});
  ValueId mf = t.emit1(op("to_dtype"), {T(m4)}, {{"dtype", DType::Float32}});
  ValueId inv = t.emit1(op("sub"), {N(1.0), T(mf)}, {});
  outs.push_back(t.emit1(op("mul"), {T(inv), N(-1e9)}, {}));
  outs.push_back(t.emit1(op("permute"), {T(ids)}, {{"dims", IntList{1, 0}}}));
  ValueId sl = t.emit1(op("slice"), {T(ids)}, {{"dim", std::int64_t{1}}, {"start", std::int64_t{1}}, {"end", std::int64_t{4}}});
  outs.push_back(t.emit1(op("cat"), {T(sl), T(mask)}, {{"dim", std::int64_t{1}}}));
  ValueId col = t.emit1(op("reshape"), {T(ids32)}, {{"shape", IntList{7, 1}}});
  outs.push_back(t.emit1(op("expand"), {T(col)}, {{"shape", IntList{7, 3}}}));
  ValueId row = t.emit1(op("select"), {T(u8)}, {{"dim", std::int64_t{0}}, {"index", std::int64_t{1}}});
  outs.push_back(t.emit1(op("to_dtype"), {T(row)}, {{"dtype", DType::Float64}}));
  outs.push_back(t.emit1(op("to_dtype"), {T(ids)}, {{"dtype", DType::Bool}}));
  outs.push_back(t.emit1(op("to_dtype"), {T(flag)}, {{"dtype", DType::Int64}}));
  outs.push_back(t.emit1(op("to_dtype"), {T(ids32)}, {{"dtype", DType::Int64}}));
  // Comparisons: DistilBERT's `(mask == 0)` then masked_fill; an int against a float number compares in float.
  ValueId pad = t.emit1(op("eq"), {T(mask), Operand::number(Scalar(std::int64_t{0}))}, {});
  ValueId scores = t.emit1(op("embedding"), {T(table), T(ids)}, {});
  ValueId pad3 = t.emit1(op("reshape"), {T(pad)}, {{"shape", IntList{2, 5, 1}}});
  outs.push_back(t.emit1(op("masked_fill"), {T(scores), T(pad3), N(-INFINITY)}, {}));
  outs.push_back(t.emit1(op("lt"), {T(ids), N(2.5)}, {}));
  outs.push_back(t.emit1(op("ge"), {T(ids), T(mask)}, {}));
  outs.push_back(t.emit1(op("ne"), {T(ids32), Operand::number(Scalar(std::int64_t{3}))}, {}));
  t.set_outputs(outs);

#ifndef THUNDERC_CONFORMANCE_NVFUSER  // (under nvfuser, check_against_torch has no torch to leave anything to)
  Trace c = claimed(t, {"cpp", "torch"});
  INFO(print_trace(c));
  for (const BoundSymbol& s : c.symbols()) CHECK_MESSAGE(s.executor == "cpp", s.op->name << " left to " << s.executor);
#endif
  check_against_torch(t, "integers", false, Tol{}, 3);
}

// Integer arithmetic (add, sub, mul, neg, abs, relu, maximum, minimum; wrapping around on overflow), bitwise
// ops, rounding, sign and int-to-float math on integer tensors of each width (inputs in [0, 10), shifted to
// [-5, 5) so that signs vary, and scaled past each type's range so that results wrap).
TEST_CASE("integer tensors: bitwise ops, rounding, sign, predicates and int-to-float math") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  for (DType d : {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8}) {
    CAPTURE(std::string(dtype_name(d)));
    Trace t;
    ValueId a0 = t.add_input("a", ty(d, {3, 8})), b = t.add_input("b", ty(d, {8}));
    ValueId l = t.add_input("l", ty(DType::Int64, {8})), flag = t.add_input("flag", b8({3, 1}));
    std::vector<ValueId> outs;
    ValueId a = t.emit1(op("sub"), {T(a0), Operand::number(Scalar(std::int64_t{5}))}, {});  // uint8 wraps to 251..255
    // Past the range of each type, by a factor the type holds (a number converted to a narrower type is
    // another matter): wide = a * scale fits, wide * wide wraps.
    const int bits = static_cast<int>(8 * dtype_size(d));
    const std::int64_t scale = std::int64_t{1} << std::min(bits - 4, 40);
    ValueId wide = t.emit1(op("mul"), {T(a), Operand::number(Scalar(scale))}, {});
    outs.push_back(t.emit1(op("mul"), {T(wide), T(wide)}, {}));
    outs.push_back(t.emit1(op("add"), {T(wide), T(wide)}, {}));
    outs.push_back(t.emit1(op("sub"), {T(a), T(b)}, {}));
    outs.push_back(t.emit1(op("add"), {T(a), T(l)}, {}));  // promotes to int64
    outs.push_back(t.emit1(op("mul"), {T(a), T(flag)}, {}));
    outs.push_back(t.emit1(op("add"), {T(a), N(0.5)}, {}));  // a float number: float32
    outs.push_back(t.emit1(op("div"), {T(a), T(b)}, {}));    // true division: float32
    for (const char* name : {"neg", "abs", "relu"}) outs.push_back(t.emit1(op(name), {T(a)}, {}));
    outs.push_back(t.emit1(op("maximum"), {T(a), T(b)}, {}));
    outs.push_back(t.emit1(op("minimum"), {T(a), Operand::number(Scalar(std::int64_t{2}))}, {}));
    for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
      outs.push_back(t.emit1(op(name), {T(a), T(b)}, {}));
      outs.push_back(t.emit1(op(name), {T(a), Operand::number(Scalar(std::int64_t{6}))}, {}));
      outs.push_back(t.emit1(op(name), {T(a), T(flag)}, {}));  // bool promotes to the integer type
      outs.push_back(t.emit1(op(name), {T(b), T(l)}, {}));     // promotes to int64
    }
    for (const char* name : {"bitwise_not", "ceil", "floor", "trunc", "round", "sign", "isnan", "isinf", "exp",
                             "atan", "log1p", "sigmoid"})
      outs.push_back(t.emit1(op(name), {T(a)}, {}));
    // Division by a number (positive and negative divisors; dividends of both signs): floor and trunc
    // division, remainder (the divisor's sign) and fmod (the dividend's).
    for (std::int64_t divisor : {3, -4, 7}) {
      if (d == DType::UInt8 && divisor < 0) continue;
      const Operand by = Operand::number(Scalar(divisor));
      outs.push_back(t.emit1(op("remainder"), {T(a), by}, {}));
      outs.push_back(t.emit1(op("fmod"), {T(a), by}, {}));
      outs.push_back(t.emit1(op("div"), {T(a), by}, {{"rounding_mode", std::string("floor")}}));
      outs.push_back(t.emit1(op("div"), {T(a), by}, {{"rounding_mode", std::string("trunc")}}));
    }
    t.set_outputs(outs);
    check_native(t, {"add", "sub", "mul", "div", "neg", "abs", "relu", "maximum", "minimum", "bitwise_and", "bitwise_or",
                     "bitwise_xor", "bitwise_not", "ceil", "floor", "trunc", "round", "sign", "isnan", "isinf", "exp",
                     "atan", "log1p", "sigmoid", "remainder", "fmod"});
    check_against_torch(t, std::string("int_bitwise_") + dtype_short_name(d), false);
  }
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER
TEST_CASE("integer tensors: what cpp leaves to torch") {
  Trace t;
  ValueId f = t.add_input("f", f32({3}));
  ValueId i = t.add_input("i", TensorType{DType::Int64, {3}, Device::cpu()});
  ValueId table = t.add_input("table", TensorType{DType::Int32, {4, 2}, Device::cpu()});
  const Operand big = Operand::number(Scalar((std::int64_t{1} << 53) + 1));
  t.emit1(op("to_dtype"), {T(f)}, {{"dtype", DType::Int64}});  // NaN or out of range: undefined in C++
  t.emit1(op("div"), {T(i), T(i)}, {{"rounding_mode", std::string("floor")}});  // ATen raises on a zero divisor
  t.emit1(op("fmod"), {T(i), T(i)}, {});
  t.emit1(op("remainder"), {T(i), Operand::number(Scalar(std::int64_t{0}))}, {});  // by zero: ATen raises
  t.emit1(op("div"), {T(i), Operand::number(Scalar(std::int64_t{-1}))}, {{"rounding_mode", std::string("trunc")}});  // INT_MIN / -1
  t.emit1(op("div"), {T(f), Operand::number(Scalar(2.0))}, {{"rounding_mode", std::string("floor")}});  // floating floor division
  t.emit1(op("pow"), {T(i), T(i)}, {});                         // ATen raises on a negative power
  t.emit1(op("add"), {T(i), big}, {});                          // no exact literal: 2^53 + 1 is not a double
  t.emit1(op("bitwise_and"), {T(i), big}, {});
  t.emit1(op("clamp"), {T(i)}, {{"min", 1.0}});
  t.emit1(op("embedding"), {T(table), T(i)}, {});               // an integer table
  std::vector<ValueId> outs;
  for (const BoundSymbol& s : t.symbols()) outs.push_back(s.outputs[0]);
  t.set_outputs(outs);
  claim_executors(t, {find_executor("cpp"), find_executor("torch")});
  for (const BoundSymbol& s : t.symbols()) CHECK_MESSAGE(s.executor == "torch", s.op->name);
}

#endif

// index_select, gather, argmax/argmin and cumsum: code of their own (codegen/cpp/indexing.cpp; nvfuser's kernels,
// codegen/nvfuser/indexing.h, a thread per row or per element written). Integer inputs are in [0, 10): valid
// indices into dims of 10 or more.
TEST_CASE("index_select, gather, argmax, argmin, cumsum: dims, dtypes, NaN, ties, keepdim") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  Trace t;
  ValueId x = t.add_input("x", f32({10, 12, 3})), xd = t.add_input("xd", f64({11, 10}));
  ValueId i64 = t.add_input("i64", ty(DType::Int64, {4})), i32 = t.add_input("i32", ty(DType::Int32, {7}));
  ValueId g = t.add_input("g", ty(DType::Int64, {6, 5, 3})), n = t.add_input("n", ty(DType::Int32, {3, 10}));
  ValueId b = t.add_input("b", b8({4, 6}));
  std::vector<ValueId> outs;
  auto dim = [](std::int64_t d) { return AttrValue(d); };
  outs.push_back(t.emit1(op("index_select"), {T(x), T(i64)}, {{"dim", dim(0)}}));
  outs.push_back(t.emit1(op("index_select"), {T(x), T(i32)}, {{"dim", dim(1)}}));
  outs.push_back(t.emit1(op("index_select"), {T(n), T(i64)}, {{"dim", dim(-1)}}));  // integer data
  outs.push_back(t.emit1(op("gather"), {T(x), T(g)}, {{"dim", dim(0)}}));
  ValueId g2 = t.emit1(op("select"), {T(g)}, {{"dim", dim(2)}, {"index", dim(1)}});  // [6, 5], from a view
  outs.push_back(t.emit1(op("gather"), {T(xd), T(g2)}, {{"dim", dim(1)}}));
  // ties: round(2x) has many equal values; log(x) is NaN for the negative half
  ValueId ties = t.emit1(op("round"), {T(t.emit1(op("mul"), {T(x), N(2.0)}, {}))}, {});
  ValueId nans = t.emit1(op("log"), {T(x)}, {});
  for (const char* name : {"argmax", "argmin"}) {
    outs.push_back(t.emit1(op(name), {T(ties)}, {{"dim", dim(1)}}));
    outs.push_back(t.emit1(op(name), {T(ties)}, {{"dim", dim(-1)}, {"keepdim", true}}));
    outs.push_back(t.emit1(op(name), {T(ties)}, {}));
    outs.push_back(t.emit1(op(name), {T(nans)}, {{"dim", dim(0)}}));
    outs.push_back(t.emit1(op(name), {T(n)}, {{"dim", dim(1)}}));
    outs.push_back(t.emit1(op(name), {T(xd)}, {{"dim", dim(0)}, {"keepdim", true}}));
  }
  outs.push_back(t.emit1(op("cumsum"), {T(x)}, {{"dim", dim(1)}}));
  outs.push_back(t.emit1(op("cumsum"), {T(nans)}, {{"dim", dim(0)}}));
  outs.push_back(t.emit1(op("cumsum"), {T(xd)}, {{"dim", dim(-1)}}));
  outs.push_back(t.emit1(op("cumsum"), {T(n)}, {{"dim", dim(1)}}));                           // int32 into int64
  outs.push_back(t.emit1(op("cumsum"), {T(b)}, {{"dim", dim(0)}}));                           // bool into int64
  outs.push_back(t.emit1(op("cumsum"), {T(n)}, {{"dim", dim(0)}, {"dtype", DType::Float32}}));  // int32 into float32
  t.set_outputs(outs);
  check_native(t, {"index_select", "gather", "argmax", "argmin", "cumsum"});
  check_against_torch(t, "indexing");
}

// prod (rows, everything, keepdim, empty and 0-dim inputs, integers into int64, NaN and infinities), diagonal
// (offsets of both signs, dims in either order) and scatter (a tensor src and a number; indices that repeat
// along dim, where the last one along dim wins as in the cpp kernel's loop). Inputs in [0, 10).
TEST_CASE("prod, diagonal, scatter: dims, dtypes, empty and 0-dim inputs, repeated indices") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  Trace t;
  ValueId x = t.add_input("x", f32({4, 5, 3})), xd = t.add_input("xd", f64({6, 7}));
  ValueId n = t.add_input("n", ty(DType::Int32, {3, 4})), e = t.add_input("e", f32({0, 4})), z = t.add_input("z", f32({}));
  ValueId raw = t.add_input("raw", ty(DType::Int64, {5, 3}));
  std::vector<ValueId> outs;
  auto dim = [](std::int64_t d) { return AttrValue(d); };
  ValueId scaled = t.emit1(op("mul"), {T(x), N(0.3)}, {});  // products that stay finite
  outs.push_back(t.emit1(op("prod"), {T(scaled)}, {{"dim", dim(1)}}));
  outs.push_back(t.emit1(op("prod"), {T(scaled)}, {{"dim", dim(-1)}, {"keepdim", true}}));
  outs.push_back(t.emit1(op("prod"), {T(scaled)}, {}));
  outs.push_back(t.emit1(op("prod"), {T(t.emit1(op("log"), {T(xd)}, {}))}, {{"dim", dim(0)}}));  // NaN, -inf
  outs.push_back(t.emit1(op("prod"), {T(n)}, {{"dim", dim(1)}}));  // int32 into int64
  outs.push_back(t.emit1(op("prod"), {T(e)}, {{"dim", dim(0)}}));  // empty rows: ones
  outs.push_back(t.emit1(op("prod"), {T(z)}, {}));
  outs.push_back(t.emit1(op("diagonal"), {T(x)}, {{"offset", dim(0)}, {"dim1", dim(0)}, {"dim2", dim(1)}}));
  outs.push_back(t.emit1(op("diagonal"), {T(x)}, {{"offset", dim(1)}, {"dim1", dim(2)}, {"dim2", dim(0)}}));
  outs.push_back(t.emit1(op("diagonal"), {T(xd)}, {{"offset", dim(-2)}, {"dim1", dim(0)}, {"dim2", dim(1)}}));
  // scatter into [4, 5, 3] along dim 0 (index values raw / 3 in [0, 4)) and along dim 1 (raw / 2 in [0, 5)).
  ValueId idx0 = t.emit1(op("div"), {T(raw), Operand::number(Scalar(std::int64_t{3}))}, {{"rounding_mode", std::string("floor")}});
  ValueId idx1 = t.emit1(op("div"), {T(raw), Operand::number(Scalar(std::int64_t{2}))}, {{"rounding_mode", std::string("floor")}});
  ValueId rows4 = t.emit1(op("slice"), {T(idx0)}, {{"dim", dim(0)}, {"start", dim(0)}, {"end", dim(4)}});
  ValueId i3 = t.emit1(op("reshape"), {T(rows4)}, {{"shape", IntList{4, 1, 3}}});
  ValueId i3b = t.emit1(op("reshape"), {T(idx1)}, {{"shape", IntList{1, 5, 3}}});
  outs.push_back(t.emit1(op("scatter"), {T(x), T(i3), T(scaled)}, {{"dim", dim(0)}}));
  outs.push_back(t.emit1(op("scatter"), {T(xd), T(t.emit1(op("reshape"), {T(idx1)}, {{"shape", IntList{3, 5}}})),
                                         T(t.emit1(op("mul"), {T(xd), N(-1.0)}, {}))}, {{"dim", dim(1)}}));
  outs.push_back(t.emit1(op("scatter"), {T(x), T(i3b), N(-2.5)}, {{"dim", dim(1)}}));
  t.set_outputs(outs);
  check_native(t, {"prod", "diagonal", "scatter"});
  check_against_torch(t, "prod_diagonal_scatter");
}

// Bilinear upsampling (codegen/cpp/resample.cpp; nvfuser: codegen/nvfuser/sampling.h, the same arithmetic a
// thread per output element): scales given or derived, align_corners, downsampling, one output pixel, the same
// size, a permuted input, float64, a one-pixel dim.
TEST_CASE("upsample_bilinear2d: scales, align_corners, down- and upsampling, float32 and float64") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 5, 6}));
  std::vector<ValueId> outs;
  auto up = [&](ValueId v, IntList size, bool align, AttrValue sh = None{}, AttrValue sw = None{}) {
    outs.push_back(t.emit1(op("upsample_bilinear2d"), {T(v)},
                           {{"output_size", size}, {"align_corners", align}, {"scale_h", sh}, {"scale_w", sw}}));
  };
  up(x, {10, 12}, false, 2.0, 2.0);
  up(x, {10, 12}, true);
  up(x, {7, 5}, false);
  up(x, {3, 4}, false);
  up(x, {1, 1}, true);
  up(x, {8, 9}, false, 1.7, 1.4);
  up(x, {5, 6}, false);
  up(t.emit1(op("permute"), {T(t.add_input("nhwc", f32({1, 4, 4, 2})))}, {{"dims", IntList{0, 3, 1, 2}}}), {9, 7}, false);
  up(t.add_input("d", f64({1, 2, 4, 4})), {9, 9}, false);
  up(t.add_input("d1", f64({1, 1, 1, 3})), {4, 5}, true);
  t.set_outputs(outs);
  check_native(t, {"upsample_bilinear2d"});
  check_against_torch(t, "upsample_bilinear2d");
}

// sort (stable: equal elements keep their order; NaN above every number) and topk (ties by position; the
// cases avoid ties, whose order ATen leaves unspecified), values and positions, along strided and contiguous
// rows, ascending and descending, float64 and integers, empty rows and a 0-dim input. nvfuser ranks each element in its row (codegen/nvfuser/indexing.h).
TEST_CASE("sort and topk: orders, NaN, ties, dims, dtypes, empty and 0-dim inputs") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  Trace t;
  ValueId x = t.add_input("x", f32({5, 7})), d = t.add_input("d", f64({3, 4, 6}));
  ValueId n = t.add_input("n", ty(DType::Int32, {4, 9})), e = t.add_input("e", f32({0, 3})), z = t.add_input("z", f32({}));
  std::vector<ValueId> outs;
  auto all = [&](const char* name, ValueId v, Attrs a) {
    for (ValueId o : t.emit(op(name), {T(v)}, std::move(a))) outs.push_back(o);
  };
  auto dim = [](std::int64_t v) { return AttrValue(v); };
  ValueId ties = t.emit1(op("round"), {T(t.emit1(op("mul"), {T(x), N(2.0)}, {}))}, {});
  ValueId nans = t.emit1(op("log"), {T(x)}, {});
  all("sort", ties, {{"dim", dim(1)}, {"stable", true}});
  all("sort", ties, {{"dim", dim(0)}, {"descending", true}, {"stable", true}});
  all("sort", nans, {{"dim", dim(-1)}, {"stable", true}});
  all("sort", nans, {{"dim", dim(0)}, {"descending", true}, {"stable", true}});
  all("sort", d, {{"dim", dim(1)}, {"stable", true}});
  all("sort", n, {{"dim", dim(1)}, {"descending", true}, {"stable", true}});
  all("sort", e, {{"stable", true}});
  all("sort", z, {{"stable", true}});
  all("topk", x, {{"k", dim(3)}});
  all("topk", x, {{"k", dim(2)}, {"dim", dim(0)}, {"largest", false}});
  all("topk", d, {{"k", dim(4)}, {"dim", dim(-1)}});
  t.set_outputs(outs);
  check_native(t, {"sort", "topk"});
  check_against_torch(t, "sort_topk");
}

// Advanced indexing: index with one index tensor, two adjacent ones (broadcast together), two apart (their dims
// go in front), negative indices; index_put with and without accumulation, where positions repeat (the last one
// wins; accumulation adds them in position order), float and integer values broadcast to the indexed shape.
// Index inputs in [0, 10), shifted to [-5, 5).
TEST_CASE("index and index_put: adjacent and separated dims, broadcasting, negative and repeated indices") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  Trace t;
  ValueId x = t.add_input("x", f32({6, 5, 7})), n = t.add_input("n", ty(DType::Int64, {6, 5}));
  ValueId r1 = t.add_input("r1", ty(DType::Int64, {4})), r2 = t.add_input("r2", ty(DType::Int32, {3, 1}));
  ValueId vals = t.add_input("vals", f32({4, 7})), v5 = t.add_input("v5", f32({5}));
  ValueId ivals = t.add_input("ivals", ty(DType::Int64, {4, 1}));
  auto shifted = [&](ValueId v) { return t.emit1(op("sub"), {T(v), Operand::number(Scalar(std::int64_t{5}))}, {}); };
  const ValueId i1 = shifted(r1), i2 = shifted(r2);  // [-5, 5): valid for dims of 5 or more
  std::vector<ValueId> outs;
  auto dims = [](IntList d) { return AttrValue(d); };
  outs.push_back(t.emit1(op("index"), {T(x), T(i1)}, {{"dims", dims({0})}}));
  outs.push_back(t.emit1(op("index"), {T(x), T(i2), T(i1)}, {{"dims", dims({1, 2})}}));  // [3, 4] in place of dims 1, 2
  outs.push_back(t.emit1(op("index"), {T(x), T(i1), T(i2)}, {{"dims", dims({0, 2})}}));  // apart: [3, 4] in front
  outs.push_back(t.emit1(op("index"), {T(n), T(i1)}, {{"dims", dims({1})}}));            // integer data
  for (bool accumulate : {false, true}) {
    outs.push_back(t.emit1(op("index_put"), {T(x), T(vals), T(i1)}, {{"dims", dims({1})}, {"accumulate", accumulate}}));
    outs.push_back(t.emit1(op("index_put"), {T(x), T(v5), T(i2), T(i1)}, {{"dims", dims({0, 2})}, {"accumulate", accumulate}}));
    outs.push_back(t.emit1(op("index_put"), {T(n), T(ivals), T(i1)}, {{"dims", dims({0})}, {"accumulate", accumulate}}));
  }
  t.set_outputs(outs);
  check_native(t, {"index", "index_put"});
  check_against_torch(t, "index_index_put");
}

// embedding_bag: sum, mean and max bags from offsets (with include_last_offset, and repeats making empty bags),
// from 2-D indices, with padding_idx and per-sample weights; int64 and int32 indices. Offsets made in the trace:
// 0, then three sorted values in [0, 7]. Inputs in [0, 10).
TEST_CASE("embedding_bag: modes, offsets, empty bags, padding_idx, per-sample weights") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  for (DType it : {DType::Int64, DType::Int32}) {
    CAPTURE(dtype_name(it));
    Trace t;
    ValueId w = t.add_input("w", f32({10, 4})), idx = t.add_input("idx", ty(it, {7})), psw = t.add_input("psw", f32({7}));
    ValueId r = t.emit1(op("minimum"), {T(t.add_input("r", ty(it, {3}))), Operand::number(Scalar(std::int64_t{7}))}, {});
    ValueId sorted = t.emit(op("sort"), {T(r)}, {{"stable", true}})[0];
    ValueId first = t.emit1(op("slice"), {T(sorted)}, {{"dim", std::int64_t{0}}, {"start", std::int64_t{0}}, {"end", std::int64_t{1}}});
    ValueId zero = t.emit1(op("mul"), {T(first), Operand::number(Scalar(std::int64_t{0}))}, {});
    ValueId off = t.emit1(op("cat"), {T(zero), T(sorted)}, {{"dim", std::int64_t{0}}});
    ValueId rows2 = t.emit1(op("reshape"), {T(t.emit1(op("slice"), {T(idx)}, {{"dim", std::int64_t{0}}, {"start", std::int64_t{0}}, {"end", std::int64_t{6}}}))},
                            {{"shape", IntList{2, 3}}});
    std::vector<ValueId> outs;
    auto bag = [&](ValueId indices, Operand offsets, Operand weights, std::int64_t mode, bool last, AttrValue padding = None{}) {
      outs.push_back(t.emit1(op("embedding_bag"), {T(w), T(indices), offsets, weights},
                             {{"mode", mode}, {"include_last_offset", last}, {"padding_idx", padding}}));
    };
    for (std::int64_t mode : {0, 1, 2}) {
      bag(idx, T(off), Operand::none(), mode, false);
      if (mode != 2) bag(idx, T(off), Operand::none(), mode, true);  // LibTorch 1.13's max with it corrupts its heap
      bag(idx, T(off), Operand::none(), mode, false, std::int64_t{3});
      bag(rows2, Operand::none(), Operand::none(), mode, false);
    }
    bag(idx, T(off), T(psw), 0, false);
    t.set_outputs(outs);
    check_native(t, {"embedding_bag"});
    check_against_torch(t, std::string("embedding_bag_") + dtype_short_name(it));
  }
}

// grid_sampler_2d: bilinear and nearest, zeros, border and reflection padding, with and without align_corners,
// grid positions partly outside [-1, 1]; a one-pixel-wide input (reflection about a single pixel); float64.
TEST_CASE("grid_sampler_2d: modes, padding, align_corners, positions outside the image") {
  for (const DType d : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype_name(d));
    auto type = [&](Shape s) { return d == DType::Float64 ? f64(std::move(s)) : f32(std::move(s)); };
    Trace t;
    ValueId x = t.add_input("x", type({2, 3, 5, 6})), thin = t.add_input("thin", type({2, 1, 3, 1}));
    ValueId grid = t.emit1(op("mul"), {T(t.emit1(op("tanh"), {T(t.add_input("g", type({2, 4, 7, 2})))}, {})), N(1.2)}, {});
    std::vector<ValueId> outs;
    for (std::int64_t mode : {0, 1})
      for (std::int64_t padding : {0, 1, 2})
        for (bool align : {false, true})
          outs.push_back(t.emit1(op("grid_sampler_2d"), {T(x), T(grid)},
                                 {{"interpolation_mode", mode}, {"padding_mode", padding}, {"align_corners", align}}));
    for (bool align : {false, true})
      outs.push_back(t.emit1(op("grid_sampler_2d"), {T(thin), T(grid)},
                             {{"interpolation_mode", std::int64_t{0}}, {"padding_mode", std::int64_t{2}}, {"align_corners", align}}));
    t.set_outputs(outs);
    check_native(t, {"grid_sampler_2d"});
    check_against_torch(t, std::string("grid_sampler_") + dtype_short_name(d), false, d == DType::Float64 ? kF64 : Tol{});
  }
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER
TEST_CASE("index_select and gather: an index out of range fails the call with a message, as ATen raises") {
  auto ty = [](DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; };
  for (const char* name : {"index_select", "gather"}) {
    CAPTURE(name);
    Trace t;
    ValueId x = t.add_input("x", f32({10, 4}));
    ValueId ids = t.add_input("ids", std::string(name) == "gather" ? ty(DType::Int64, {3, 4}) : ty(DType::Int64, {3}));
    t.set_outputs({t.emit1(op(name), {T(x), T(ids)}, {{"dim", std::int64_t{0}}})});
    thunderc::Model m(compile(claimed(t, {"cpp"}), {"cpp"}, std::string(name) + "_range"));
    auto in = random_inputs(t, 1, false);
    for (std::int64_t bad : {std::int64_t{10}, std::int64_t{-1}}) {
      CAPTURE(bad);
      static_cast<std::int64_t*>(in[1].raw())[2] = bad;
      try {
        m.run(in);
        FAIL("an out-of-range index did not fail the call");
      } catch (const thunderc::Error& e) {
        CHECK(std::string(e.what()).find(std::string(name) + ": index " + std::to_string(bad) +
                                         " is out of range for dimension 0 of size 10") != std::string::npos);
      }
    }
  }
}

TEST_CASE("embedding: an index out of range fails the call with a message, as ATen raises") {
  Trace t;
  ValueId table = t.add_input("table", f32({10, 4}));
  ValueId ids = t.add_input("ids", TensorType{DType::Int64, {3}, Device::cpu()});
  t.set_outputs({t.emit1(op("embedding"), {T(table), T(ids)}, {})});
  thunderc::Model m(compile(claimed(t, {"cpp"}), {"cpp"}, "embedding_range"));
  check_index_out_of_range(m, random_inputs(t, 1, false), [](std::int64_t bad) {
    return "embedding: index " + std::to_string(bad) + " is out of range for a table of 10 rows";
  });
}
#endif

// scatter_reduce of floating tensors, every reduction with and without self, along the first and the last
// dim, with indices that repeat (inputs in [0, 10) scaled to the input's extent, so most places are hit
// several times and some never): the cpp kernel's loop, and nvfuser's kernels (codegen/nvfuser/indexing.h),
// whose group leaders reduce in the same order. Then embedding's gradient as autodiff writes it.
TEST_CASE("scatter_reduce: sum, prod, mean, amax, amin, with and without self, float32 and float64") {
  for (const DType d : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype_name(d));
    const bool f64_case = d == DType::Float64;
    auto type = [&](Shape s) { return f64_case ? f64(std::move(s)) : f32(std::move(s)); };
    Trace t;
    ValueId a = t.add_input("a", type({5, 6})), src = t.add_input("src", type({7, 6}));
    ValueId raw = t.add_input("raw", TensorType{DType::Int64, {7, 4}, Device::cpu()});
    // Index values in [0, 5) along dim 0 (raw / 2), and [0, 6) along dim 1 (raw % 6 on a [5, 4] slice).
    ValueId idx0 = t.emit1(op("div"), {T(raw), Operand::number(Scalar(std::int64_t{2}))}, {{"rounding_mode", std::string("floor")}});
    ValueId rows = t.emit1(op("slice"), {T(raw)}, {{"dim", std::int64_t{0}}, {"start", std::int64_t{0}}, {"end", std::int64_t{5}}});
    ValueId idx1 = t.emit1(op("remainder"), {T(rows), Operand::number(Scalar(std::int64_t{6}))}, {});
    std::vector<ValueId> outs;
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool self : {true, false}) {
        outs.push_back(t.emit1(op("scatter_reduce"), {T(a), T(idx0), T(src)},
                               {{"dim", std::int64_t{0}}, {"reduce", std::string(reduce)}, {"include_self", self}}));
        outs.push_back(t.emit1(op("scatter_reduce"), {T(a), T(idx1), T(src)},
                               {{"dim", std::int64_t{-1}}, {"reduce", std::string(reduce)}, {"include_self", self}}));
      }
    t.set_outputs(outs);
    check_native(t, {"scatter_reduce"});
    check_against_torch(t, std::string("scatter_reduce_") + dtype_short_name(d), false, f64_case ? kF64 : Tol{});
  }
  // embedding's gradient (core/ops/nn.cpp's VJP): rows accumulate by a column of indices expanded over the width.
  Trace t;
  ValueId ids = t.add_input("ids", TensorType{DType::Int64, {2, 9}, Device::cpu()}), g = t.add_input("g", f32({2, 9, 4}));
  ValueId col = t.emit1(op("reshape"), {T(ids)}, {{"shape", IntList{18, 1}}});
  ValueId index = t.emit1(op("expand"), {T(col)}, {{"shape", IntList{18, 4}}});
  ValueId src = t.emit1(op("reshape"), {T(g)}, {{"shape", IntList{18, 4}}});
  ValueId pad = t.emit1(op("eq"), {T(col), Operand::number(Scalar(std::int64_t{0}))}, {});
  ValueId kept = t.emit1(op("where"), {T(pad), N(0.0), T(src)}, {});
  ValueId zeros = t.emit1(op("mul"), {T(t.add_input("w", f32({10, 4}))), N(0.0)}, {});
  t.set_outputs({t.emit1(op("scatter_reduce"), {T(zeros), T(index), T(kept)},
                         {{"dim", std::int64_t{0}}, {"reduce", std::string("sum")}, {"include_self", true}})});
  check_native(t, {"scatter_reduce"});
  check_against_torch(t, "embedding_grad");
}

#ifdef THUNDERC_CONFORMANCE_NVFUSER
// On CUDA an index out of range stops nvfuser's kernel with __trap() (PyTorch's device-side assert): the launch
// fails (here at once; on a GPU where the runtime next synchronizes) and so does the call, with the CUDA error.
// embedding, index_select and gather (each giving the table's rows), with a scatter_reduce of those rows back.
// In range, the same model runs.
TEST_CASE("embedding, index_select, gather, scatter_reduce on CUDA: an index out of range traps, and the call fails") {
  for (const char* name : {"embedding", "index_select", "gather"}) {
    CAPTURE(name);
    Trace t;
    ValueId table = t.add_input("table", f32({10, 4}));
    ValueId ids = t.add_input("ids", TensorType{DType::Int64, {3}, Device::cpu()});
    ValueId index = t.emit1(op("expand"), {T(t.emit1(op("reshape"), {T(ids)}, {{"shape", IntList{3, 1}}}))},
                            {{"shape", IntList{3, 4}}});
    const std::string n = name;
    ValueId rows = n == "embedding"      ? t.emit1(op("embedding"), {T(table), T(ids)}, {})
                   : n == "index_select" ? t.emit1(op("index_select"), {T(table), T(ids)}, {{"dim", std::int64_t{0}}})
                                         : t.emit1(op("gather"), {T(table), T(index)}, {{"dim", std::int64_t{0}}});
    t.set_outputs({rows, t.emit1(op("scatter_reduce"), {T(table), T(index), T(rows)},
                                 {{"dim", std::int64_t{0}}, {"reduce", std::string("sum")}, {"include_self", true}})});
    Trace on_cuda = t;
    on_cuda.set_device(Device::cuda(0));
    const std::string sources = std::string(THUNDERC_TEST_TMP) + "/" + n + "_trap_nvfuser_src";
    nvfuser_emu::EmulatedModel m(compile(claimed(on_cuda, {"nvfuser"}), {"nvfuser"}, n + "_trap_nvfuser", sources),
                                 sources);
    check_index_out_of_range(m, random_inputs(t, 1, false),
                             [](std::int64_t) { return std::string("CUDA_ERROR_LAUNCH_FAILED"); });
  }
}
#endif

// The operators a CNN's backward adds (--autograd): im2col/col2im with strides, padding, dilation and
// asymmetric windows (col2im of overlapping windows adds up), and max_pool2d_backward with overlapping
// windows, padding, dilation and ceil_mode on a relu's output, whose zeros tie (the first maximum takes the
// gradient). nvfuser runs them as kernels of their own (codegen/nvfuser/cnn_gradients.h).
TEST_CASE("CNN gradient operators: im2col, col2im, max_pool2d_backward, float32 and float64") {
  auto k = [](IntList v) { return AttrValue(v); };
  for (const DType d : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype_name(d));
    const bool f64_case = d == DType::Float64;
    auto type = [&](Shape s) { return f64_case ? f64(std::move(s)) : f32(std::move(s)); };
    const std::string tag = f64_case ? "_f64" : "";
    const Tol tol = f64_case ? kF64 : Tol{};
    {
      Trace t;
      ValueId x = t.add_input("x", type({2, 3, 9, 8}));
      std::vector<ValueId> outs;
      struct W {
        IntList k, d, p, s;
      };
      for (const W& w : {W{{3, 3}, {1, 1}, {1, 1}, {1, 1}}, W{{3, 2}, {2, 1}, {2, 0}, {2, 3}}, W{{1, 1}, {1, 1}, {0, 0}, {2, 2}}}) {
        Attrs a{{"kernel_size", k(w.k)}, {"dilation", k(w.d)}, {"padding", k(w.p)}, {"stride", k(w.s)}};
        const ValueId cols = t.emit1(op("im2col"), {T(x)}, a);
        outs.push_back(cols);
        a.set("output_size", k({9, 8}));
        outs.push_back(t.emit1(op("col2im"), {T(cols)}, a));
      }
      t.set_outputs(outs);
      check_native(t, {"im2col", "col2im"});
      check_against_torch(t, "conv_columns" + tag, false, tol);
    }
    {
      Trace t;
      ValueId x = t.add_input("x", type({2, 3, 9, 11}));
      const ValueId r = t.emit1(op("relu"), {T(x)}, {});
      std::vector<ValueId> outs;
      for (const Attrs& a : {Attrs{{"kernel_size", k({3, 3})}, {"stride", k({2, 2})}, {"padding", k({1, 1})}},
                             Attrs{{"kernel_size", k({2})}},
                             Attrs{{"kernel_size", k({3, 2})}, {"stride", k({2, 3})}, {"dilation", k({2, 1})}, {"ceil_mode", true}}}) {
        const ValueId pooled = t.emit1(op("max_pool2d"), {T(r)}, a);
        const ValueId g = t.emit1(op("sub"), {N(0.75), T(pooled)}, {});  // distinct per window
        outs.push_back(t.emit1(op("max_pool2d_backward"), {T(g), T(r)}, a));
      }
      t.set_outputs(outs);
      check_native(t, {"max_pool2d_backward"});
      check_against_torch(t, "max_pool_backward" + tag, false, tol);
    }
  }
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER  // nvfuser has no FFT: these ops stay on the CPU executors
namespace {

TensorType c64(Shape s) { return {DType::Complex64, std::move(s), Device::cpu()}; }
TensorType c128(Shape s) { return {DType::Complex128, std::move(s), Device::cpu()}; }

Attrs fft_attrs(IntList dims, std::int64_t norm, const char* flag, bool value) {
  return {{"dim", std::move(dims)}, {"normalization", norm}, {flag, value}};
}
Attrs c2r_attrs(IntList dims, std::int64_t norm, std::int64_t n) {
  return {{"dim", std::move(dims)}, {"normalization", norm}, {"last_dim_size", n}};
}

// Every FFT flavour on real input x [.., .., n] and complex input z: onesided and full r2c over one and
// several dims, forward and inverse c2c, c2r of even and odd lengths, the views, and a chain through them
// into real elementwise ops (what the frontends' complex lowering produces). Non-finite inputs: see
// tests/codegen/cpp/fft_test.cpp (which bins stay finite is the FFT algorithm's, not ATen's).
Trace spectral_trace(const TensorType& real, const TensorType& cplx) {
  Trace t;
  ValueId x = t.add_input("x", real), z = t.add_input("z", cplx);
  const std::int64_t r = static_cast<std::int64_t>(real.rank());
  std::vector<ValueId> outs;
  outs.push_back(t.emit1(op("fft_r2c"), {T(x)}, fft_attrs({r - 1}, 0, "onesided", true)));
  outs.push_back(t.emit1(op("fft_r2c"), {T(x)}, fft_attrs({0, r - 1}, 1, "onesided", false)));
  outs.push_back(t.emit1(op("fft_r2c"), {T(x)}, fft_attrs({r - 1, 0}, 2, "onesided", true)));
  outs.push_back(t.emit1(op("fft_c2c"), {T(z)}, fft_attrs({r - 1}, 0, "forward", true)));
  outs.push_back(t.emit1(op("fft_c2c"), {T(z)}, fft_attrs({0, r - 1}, 2, "forward", false)));
  const std::int64_t half = cplx.shape.back();  // z's last dim as a onesided spectrum of 2(half-1) or 2half-1
  outs.push_back(t.emit1(op("fft_c2r"), {T(z)}, c2r_attrs({r - 1}, 2, 2 * (half - 1))));
  outs.push_back(t.emit1(op("fft_c2r"), {T(z)}, c2r_attrs({0, r - 1}, 1, 2 * half - 1)));
  // rfft -> view_as_real -> scale -> view_as_complex -> irfft: a filter in the frequency domain
  ValueId spec = t.emit1(op("fft_r2c"), {T(x)}, fft_attrs({r - 1}, 0, "onesided", true));
  ValueId pairs = t.emit1(op("view_as_real"), {T(spec)}, {});
  ValueId scaled = t.emit1(op("mul"), {T(pairs), N(0.5)}, {});
  ValueId back = t.emit1(op("view_as_complex"), {T(scaled)}, {});
  outs.push_back(t.emit1(op("fft_c2r"), {T(back)}, c2r_attrs({r - 1}, 2, real.shape.back())));
  outs.push_back(t.emit1(op("view_as_real"), {T(z)}, {}));
  t.set_outputs(outs);
  return t;
}

}  // namespace

TEST_CASE("FFTs and complex views: r2c, c2c, c2r against ATen's pocketfft, float32 and float64") {
  const std::set<std::string> ops = {"fft_r2c", "fft_c2c", "fft_c2r", "view_as_real", "view_as_complex"};
  // float32: cpp computes in double, ATen in float, so the absolute error scales with the largest bin (|X| up
  // to ~100 on 6x1000): atol 1e-4.
  const Tol f32_tol{1e-5, 1e-4}, f64_tol{1e-10, 1e-10};
  for (const Shape& s : std::vector<Shape>{{3, 8}, {4, 5, 12}, {2, 7}, {1, 2}, {6, 1000}}) {
    CAPTURE(shape_str(s));
    Shape zs = s;
    zs.back() = zs.back() / 2 + 1;
    check_native(spectral_trace(f32(s), c64(zs)), ops);
    check_against_torch(spectral_trace(f32(s), c64(zs)), "fft_f32", false, f32_tol, 9);
    check_against_torch(spectral_trace(f64(s), c128(zs)), "fft_f64", false, f64_tol, 9);
  }
}

#endif
