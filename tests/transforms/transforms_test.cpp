// Golden Before/After traces for each transform (hand-built traces, exact print_trace text in golden/),
// plus the properties each header promises.
#include <cmath>

#include "core/executors/executor.h"
#include "core/transforms/constant_folding.h"
#include "core/transforms/cse.h"
#include "core/transforms/dce.h"
#include "core/transforms/decompose.h"
#include "core/transforms/remat.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

// An executor that implements the given operators (and is not an always-executor).
std::unique_ptr<Executor> executor_for(const std::string& name, const std::vector<std::string>& ops) {
  Executor::Info info;
  info.name = name;
  info.description = "test executor";
  info.devices = {DeviceKind::CPU};
  info.implemented = true;
  auto e = std::make_unique<Executor>(std::move(info));
  for (const std::string& op : ops) e->register_impl(op);
  return e;
}

// Runs everything simple: what decompose rewrites into.
const Executor& simple_executor() {
  static const auto e = executor_for(
      "simple", {"add", "sub", "mul", "div", "exp", "log", "rsqrt", "erf", "tanh", "sigmoid", "hardtanh", "amax",
                 "sum", "mean", "permute", "reshape", "matmul", "masked_fill", "logical_not", "to_dtype"});
  return *e;
}

// The always-executor: implements every operator.
const Executor& torch_like() { return *find_executor("torch"); }

TransformContext context_with(std::vector<const Executor*> executors, std::vector<std::string> forced = {}) {
  TransformContext ctx;
  ctx.device = Device::cpu();
  ctx.executors = std::move(executors);
  ctx.decompose_ops = std::move(forced);
  return ctx;
}

}  // namespace

TEST_CASE("dce: unused symbols and constants are removed, inputs, outputs and order stay") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3}));
  ValueId unused_in = t.add_input("unused", f32({2}));
  ValueId w = t.add_constant("w", f32({3}), zeros(f32({3})));
  ValueId dead_w = t.add_constant("dead.w", f32({3}), zeros(f32({3})));
  ValueId t0 = t.emit1(op("mul"), {T(x), T(w)}, {});
  ValueId t1 = t.emit1(op("exp"), {T(x)}, {});          // dead
  ValueId t2 = t.emit1(op("add"), {T(t1), T(dead_w)}, {});  // dead (and its constant)
  ValueId t3 = t.emit1(op("relu"), {T(t0)}, {});
  (void)t2;
  (void)unused_in;
  t.set_outputs({t3});
  Trace after = dce(t);
  check_before_after("dce", t, after);
  CHECK(after.symbols().size() == 2);
  CHECK(after.constants() == std::vector<ValueId>{w});
  CHECK(after.inputs().size() == 2);
  CHECK(after.constructed_by == "dce");
}

TEST_CASE("dce: a region is kept whole when one of its outputs is used") {
  Trace t;
  ValueId x = t.add_input("x", f32({4}));
  ValueId a = t.new_intermediate(f32({4}));
  ValueId b = t.new_intermediate(f32({4}));
  BoundSymbol region;
  region.op = &op("fusion");
  region.inputs = {T(x)};
  region.attrs = {{"name", std::string("r0")}};
  BoundSymbol s1;
  s1.op = &op("relu"), s1.inputs = {T(x)}, s1.outputs = {a};
  BoundSymbol s2;
  s2.op = &op("exp"), s2.inputs = {T(a)}, s2.outputs = {b};
  region.subsymbols = {s1, s2};
  region.outputs = {a, b};
  t.append(region);
  t.set_outputs({b});
  Trace after = dce(t);
  verify_trace(after, "dce");
  REQUIRE(after.symbols().size() == 1);
  CHECK(after.symbols()[0].subsymbols.size() == 2);
}

TEST_CASE("cse: identical symbols are computed once, returned duplicates and regions are kept") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3}));
  ValueId t0 = t.emit1(op("add"), {T(x), N(1.0)}, {});
  ValueId t1 = t.emit1(op("add"), {T(x), N(1.0)}, {});          // duplicate of t0
  ValueId t2 = t.emit1(op("add"), {T(x), N(std::int64_t{1})}, {});  // 1 is not 1.0: kept
  ValueId t3 = t.emit1(op("softmax"), {T(t0)}, {{"dim", I(1)}});
  ValueId t4 = t.emit1(op("softmax"), {T(t1)}, {{"dim", I(1)}});  // duplicate once t1 -> t0
  ValueId t5 = t.emit1(op("softmax"), {T(t1)}, {{"dim", I(0)}});  // other attribute: kept
  ValueId t6 = t.emit1(op("mul"), {T(t3), T(t4)}, {});
  ValueId t7 = t.emit1(op("mul"), {T(t3), T(t4)}, {});  // duplicate, but returned: kept
  ValueId t8 = t.emit1(op("add"), {T(t6), T(t7)}, {});
  ValueId t9 = t.emit1(op("add"), {T(t8), T(t2)}, {});
  ValueId t10 = t.emit1(op("add"), {T(t9), T(t5)}, {});
  t.set_outputs({t10, t7});
  Trace after = cse(t);
  check_before_after("cse", t, after);
  CHECK(after.symbols().size() == t.symbols().size() - 2);
}

TEST_CASE("constant-folding: data movement and small arithmetic on constants become constants") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3}));
  ValueId w = t.add_constant("w", f32({3, 2}), data_of<float>({1, 2, 3, 4, 5, 6}));
  ValueId scale = t.add_constant("scale", tt(DType::Float64, {}), data_of<double>({0.5}));
  ValueId wt = t.emit1(op("permute"), {T(w)}, {{"dims", IntList{1, 0}}});  // [[1,3,5],[2,4,6]]
  ValueId ws = t.emit1(op("mul"), {T(wt), N(2.0)}, {});                       // folds along the chain
  ValueId y = t.emit1(op("mul"), {T(x), T(ws)}, {});                          // reads the input: stays
  ValueId s = t.emit1(op("sum"), {T(ws)}, {{"dims", IntList{1}}});            // [18, 24]
  ValueId sc = t.emit1(op("to_dtype"), {T(scale)}, {{"dtype", DType::Float32}});
  ValueId y2 = t.emit1(op("mul"), {T(y), T(sc)}, {});
  ValueId big = t.emit1(op("expand"), {T(s)}, {{"shape", IntList{10000, 2}}});  // 78 KiB: over the limit
  ValueId ret = t.emit1(op("neg"), {T(s)}, {});                                   // returned: stays
  t.set_outputs({y2, big, ret});
  Trace after = constant_folding(t);
  check_before_after("constant_folding", t, after);
  // folded_t1 (2 * w.T) and folded_t3 (its row sums) hold the computed values.
  bool saw_ws = false, saw_sum = false;
  for (ValueId c : after.constants()) {
    if (after.value(c).name == "folded_t1") {
      saw_ws = true;
      CHECK(values_of<float>(after, c) == std::vector<float>{2, 6, 10, 4, 8, 12});
    }
    if (after.value(c).name == "folded_t3") {
      saw_sum = true;
      CHECK(values_of<float>(after, c) == std::vector<float>{18, 24});
    }
  }
  CHECK(saw_ws);
  CHECK(saw_sum);
  // The intermediate folded_t0 (w.T) fed only another fold, so it is gone again; w is left to dce.
  for (ValueId c : after.constants()) CHECK(after.value(c).name != "folded_t0");
}

TEST_CASE("constant-folding: an expand of a constant stays an op, even a small or identity one") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 1, 3}));
  ValueId w = t.add_constant("w", f32({1, 1, 3}), data_of<float>({1, 2, 3}));
  ValueId e = t.emit1(op("expand"), {T(w)}, {{"shape", IntList{2, 1, 3}}});  // 24 bytes: under the limit
  ValueId same = t.emit1(op("expand"), {T(w)}, {{"shape", IntList{1, 1, 3}}});
  ValueId y = t.emit1(op("add"), {T(x), T(e)}, {});
  t.set_outputs({t.emit1(op("add"), {T(y), T(same)}, {})});
  Trace after = constant_folding(t);
  int expands = 0;
  for (const BoundSymbol& s : after.symbols()) expands += s.op->name == "expand";
  CHECK(expands == 2);
  CHECK(after.constants().size() == 1);
}

TEST_CASE("constant-folding: large data movement that does not grow the data is folded at any size") {
  Trace t;
  ValueId x = t.add_input("x", f32({4, 200}));
  TensorType wtype = f32({100, 200});  // 78 KiB
  ValueId w = t.add_constant("w", wtype, zeros(wtype));
  ValueId wt = t.emit1(op("permute"), {T(w)}, {{"dims", IntList{1, 0}}});
  ValueId y = t.emit1(op("matmul"), {T(x), T(wt)}, {});
  ValueId w2 = t.emit1(op("mul"), {T(w), N(2.0)}, {});  // arithmetic over the limit: not folded
  ValueId z = t.emit1(op("matmul"), {T(x), T(t.emit1(op("permute"), {T(w2)}, {{"dims", IntList{1, 0}}}))}, {});
  t.set_outputs({y, z});
  Trace after = dce(constant_folding(t));
  verify_trace(after, "constant-folding");
  REQUIRE(after.symbols().size() == 4);
  CHECK(after.symbols()[0].op->name == "matmul");
  CHECK(after.symbols()[1].op->name == "mul");
}

TEST_CASE("decompose: composite operators no native executor implements become simple ones") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 8}));
  ValueId w = t.add_constant("w", f32({4, 8}), zeros(f32({4, 8})));
  ValueId b = t.add_constant("b", f32({4}), zeros(f32({4})));
  ValueId g = t.add_constant("g", f32({4}), zeros(f32({4})));
  ValueId lin = t.emit1(op("linear"), {T(x), T(w), T(b)}, {}, "model.py:3");
  ValueId sm = t.emit1(op("softmax"), {T(lin)}, {{"dim", I(-1)}});
  ValueId ln = t.emit1(op("layer_norm"), {T(sm), T(g), Operand::none()}, {{"normalized_shape", IntList{4}}});
  ValueId ge = t.emit1(op("gelu"), {T(ln)}, {});
  ValueId hs = t.emit1(op("hardswish"), {T(ge)}, {});
  t.set_outputs({hs});
  Trace after = decompose(t, context_with({&simple_executor(), &torch_like()}));
  check_before_after("decompose", t, after);
  // Every symbol of the result is one the simple executor runs; the output keeps its value.
  for (const BoundSymbol& s : after.symbols()) CHECK_MESSAGE(simple_executor().can_execute(after, s), s.op->name);
  CHECK(after.outputs() == t.outputs());
}

TEST_CASE("decompose: attention (causal) is rewritten to matmul/softmax/matmul, softmax further") {
  Trace t;
  ValueId q = t.add_input("q", f32({1, 2, 4, 8}));
  ValueId k = t.add_input("k", f32({1, 2, 4, 8}));
  ValueId v = t.add_input("v", f32({1, 2, 4, 8}));
  ValueId a = t.emit1(op("scaled_dot_product_attention"), {T(q), T(k), T(v), Operand::none()}, {{"is_causal", true}});
  t.set_outputs({a});
  Trace after = decompose(t, context_with({&simple_executor(), &torch_like()}));
  check_before_after("decompose_sdpa", t, after);
  bool has_mask = false;
  for (ValueId c : after.constants())
    if (after.value(c).name == "causal_mask") {
      has_mask = true;
      CHECK(values_of<unsigned char>(after, c) ==
            std::vector<unsigned char>{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0});
    }
  CHECK(has_mask);
}

TEST_CASE("decompose: driven by the executor list") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 8}));
  ValueId sm = t.emit1(op("softmax"), {T(x)}, {{"dim", I(1)}});
  t.set_outputs({sm});
  auto count = [](const Trace& tr) { return tr.symbols().size(); };

  SUBCASE("only torch: nothing to gain, nothing rewritten") {
    CHECK(count(decompose(t, context_with({&torch_like()}))) == 1);
  }
  SUBCASE("a native executor implements softmax: kept") {
    auto with_softmax = executor_for("has_softmax", {"softmax"});
    CHECK(count(decompose(t, context_with({with_softmax.get(), &simple_executor(), &torch_like()}))) == 1);
  }
  SUBCASE("no native executor implements softmax, one runs its pieces: rewritten") {
    CHECK(count(decompose(t, context_with({&simple_executor(), &torch_like()}))) == 5);
  }
  SUBCASE("the pieces would need torch too: kept") {
    auto partial = executor_for("partial", {"exp", "sub", "div"});  // no amax, no sum
    CHECK(count(decompose(t, context_with({partial.get(), &torch_like()}))) == 1);
  }
  SUBCASE("explicitly requested: rewritten even for torch alone") {
    CHECK(count(decompose(t, context_with({&torch_like()}, {"softmax"}))) == 5);
  }
  SUBCASE("an unknown requested operator is a user error") {
    CHECK_THROWS_AS(decompose(t, context_with({&torch_like()}, {"conv2d"})), UserError);
  }
}

TEST_CASE("decompose: rms_norm over the last dim with a weight and over the last two without") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 8}));
  ValueId g = t.add_constant("g", f32({8}), zeros(f32({8})));
  ValueId a = t.emit1(op("rms_norm"), {T(x), T(g)}, {{"normalized_shape", IntList{8}}, {"eps", 1e-6}});
  ValueId b = t.emit1(op("rms_norm"), {T(a), Operand::none()}, {{"normalized_shape", IntList{3, 8}}, {"eps", 0x1p-23}});
  t.set_outputs({b});
  Trace after = decompose(t, context_with({&simple_executor(), &torch_like()}));
  check_before_after("decompose_rms_norm", t, after);
  for (const BoundSymbol& s : after.symbols()) CHECK_MESSAGE(simple_executor().can_execute(after, s), s.op->name);
  CHECK(after.outputs() == t.outputs());
}

TEST_CASE("rms_norm: normalized_shape must be the input's trailing dims, the weight must match it") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 8}));
  ValueId g = t.add_input("g", f32({4}));
  CHECK_THROWS_WITH_AS(t.emit1(op("rms_norm"), {T(x), Operand::none()}, {{"normalized_shape", IntList{4}}, {"eps", 1e-6}}),
                       doctest::Contains("does not match the trailing dimensions"), UserError);
  CHECK_THROWS_WITH_AS(t.emit1(op("rms_norm"), {T(x), T(g)}, {{"normalized_shape", IntList{8}}, {"eps", 1e-6}}),
                       doctest::Contains("weight has shape [4], expected [8]"), UserError);
}

TEST_CASE("decompose: float16 is never rewritten (ATen computes it in float32)") {
  Trace t;
  ValueId x = t.add_input("x", tt(DType::Float16, {2, 8}));
  ValueId sm = t.emit1(op("softmax"), {T(x)}, {{"dim", I(1)}});
  t.set_outputs({sm});
  CHECK(decompose(t, context_with({&torch_like()}, {"softmax"})).symbols().size() == 1);
}

TEST_CASE("decompose: addmm, batch_norm, log_softmax, silu, hardsigmoid, 1-D linear, sdpa with masks") {
  std::vector<std::string> forced = {"addmm", "batch_norm", "log_softmax", "silu", "hardsigmoid", "linear",
                                     "scaled_dot_product_attention", "softmax", "gelu"};
  Trace t;
  ValueId x = t.add_input("x", f32({2, 3, 4, 4}));
  ValueId m = t.add_input("m", f32({4, 5}));
  ValueId c = t.add_constant("c", f32({3}), zeros(f32({3})));
  ValueId bias = t.add_constant("bias", f32({5}), zeros(f32({5})));
  ValueId mask = t.add_input("mask", tt(DType::Bool, {4, 4}));
  ValueId fmask = t.add_input("fmask", f32({4, 4}));
  ValueId bn = t.emit1(op("batch_norm"), {T(x), T(c), T(c), T(c), T(c)}, {{"eps", 1e-3}});
  ValueId a1 = t.emit1(op("scaled_dot_product_attention"), {T(bn), T(x), T(x), T(mask)}, {{"scale", 0.25}});
  ValueId a2 = t.emit1(op("scaled_dot_product_attention"), {T(a1), T(x), T(x), T(fmask)}, {});
  ValueId ga = t.emit1(op("gelu"), {T(a2)}, {{"approximate", std::string("tanh")}});
  ValueId flat = t.emit1(op("reshape"), {T(ga)}, {{"shape", IntList{24, 4}}});
  ValueId mm = t.emit1(op("addmm"), {T(bias), T(flat), T(m)}, {{"beta", 0.5}, {"alpha", 2.0}});
  ValueId ls = t.emit1(op("log_softmax"), {T(mm)}, {{"dim", I(0)}, {"dtype", DType::Float64}});
  ValueId si = t.emit1(op("silu"), {T(ls)}, {});
  ValueId hs = t.emit1(op("hardsigmoid"), {T(si)}, {});
  ValueId w1 = t.emit1(op("to_dtype"), {T(bias)}, {{"dtype", DType::Float64}});
  ValueId v1 = t.emit1(op("linear"), {T(hs), T(w1), Operand::none()}, {});
  t.set_outputs({v1});
  Trace after = decompose(t, context_with({&torch_like()}, forced));
  check_before_after("decompose_more", t, after);
  for (const BoundSymbol& s : after.symbols())
    CHECK_MESSAGE(std::find(forced.begin(), forced.end(), s.op->name) == forced.end(), s.op->name);
}

TEST_CASE("remat: a cheap elementwise value read far away is recomputed there") {
  Trace t;
  ValueId x = t.add_input("x", f32({16}));
  ValueId s = t.emit1(op("sigmoid"), {T(x)}, {});  // reads only the input: free to recompute
  ValueId y = t.emit1(op("mul"), {T(s), T(x)}, {});
  for (int i = 0; i < 10; ++i) y = t.emit1(op("tanh"), {T(y)}, {});
  ValueId z = t.emit1(op("add"), {T(y), T(s)}, {});  // 11 symbols after the previous reader of s
  ValueId e = t.emit1(op("exp"), {T(y)}, {});         // reads an intermediate that dies here
  ValueId w = t.emit1(op("mul"), {T(z), N(2.0)}, {});
  for (int i = 0; i < 9; ++i) w = t.emit1(op("tanh"), {T(w)}, {});
  ValueId out = t.emit1(op("add"), {T(w), T(e)}, {});  // e is not recomputed: y would have to live longer
  for (BoundSymbol& sym : t.mutable_symbols()) sym.executor = "torch";
  t.set_outputs({out});
  Trace after = remat(t);
  check_before_after("remat", t, after);
  CHECK(after.symbols().size() == t.symbols().size() + 1);
  // The copy sits right before its reader and keeps the executor.
  const auto& syms = after.symbols();
  bool found = false;
  for (std::size_t i = 1; i < syms.size(); ++i)
    if (syms[i].op->name == "add" && syms[i].inputs[1].value != s && syms[i - 1].op->name == "sigmoid") {
      found = true;
      CHECK(syms[i - 1].executor == "torch");
      CHECK(syms[i].inputs[1].value == syms[i - 1].outputs[0]);
    }
  CHECK(found);
  // Followed by dce, the original stays (its near reader still reads it).
  CHECK(dce(after).symbols().size() == after.symbols().size());
}

// THUNDERC_UPDATE_GOLDEN rewrites a golden file and fails: a run with it set never passes.
TEST_CASE("golden update mode fails after writing" * doctest::should_fail()) {
  std::string path = std::string(THUNDERC_TRANSFORMS_GOLDEN) + "/decompose.before.txt";
  std::string current = xftest::read_file(path);
  REQUIRE(!current.empty());
  setenv("THUNDERC_UPDATE_GOLDEN", "1", 1);
  xftest::check_golden("decompose.before.txt", current);  // same text: the file is unchanged
  unsetenv("THUNDERC_UPDATE_GOLDEN");
}
