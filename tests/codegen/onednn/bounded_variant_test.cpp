// Bounded variants (core/transforms/value_bounds.h): oneDNN convolutions with their activation fused as a
// post-op, which turns NaN into a number, in a variant the runtime runs only for finite inputs within a
// bound; the exact variant beside it keeps PyTorch's NaN and inf. Checked: which activations fuse where
// (Before/After), the spec the generated code passes, the manifest guard, which variant a call takes, and
// every output against the torch executor for finite, NaN, inf and out-of-bound inputs, also under the
// "same input" cache; convolutions marked for Winograd (--conv-algorithm auto) in bounded variants only. Tolerance: float32 rtol 1e-4, atol 1e-5 (oneDNN sums in another order than ATen).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "blas_test_util.h"
#include "core/transforms/fusion.h"
#include "core/transforms/value_bounds.h"
#include <nlohmann/json.hpp>

using namespace blastest;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

ValueId conv(Trace& t, ValueId x, ValueId w, ValueId b) {
  return t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), Operand::tensor(b)},
                 {{"stride", IntList{1, 1}}, {"padding", IntList{1, 1}}, {"dilation", IntList{1, 1}},
                  {"groups", std::int64_t{1}}});
}

// x -> conv -> relu -> conv (+ x) -> hardtanh(0, 6) -> out0; x -> log -> conv -> relu -> out1 (log makes NaN
// from negative inputs, so nothing after it is NaN-free); x -> conv -> silu -> out2.
Trace model() {
  Trace t;
  Rng rng(5);
  const ValueId x = t.add_input("x", tt({1, 4, 6, 6}));
  auto w = [&](const char* name) { return random_constant(t, name, tt({4, 4, 3, 3}), rng, -0.5, 0.5); };
  auto b = [&](const char* name) { return random_constant(t, name, tt({4}), rng, -0.1, 0.1); };
  ValueId y = t.emit1(op("relu"), {Operand::tensor(conv(t, x, w("w0"), b("b0")))}, {});
  y = t.emit1(op("add"), {Operand::tensor(conv(t, y, w("w1"), b("b1"))), Operand::tensor(x)}, {});
  y = t.emit1(op("hardtanh"), {Operand::tensor(y)}, {{"min_val", 0.0}, {"max_val", 6.0}});
  ValueId l = t.emit1(op("log"), {Operand::tensor(x)}, {});
  l = t.emit1(op("relu"), {Operand::tensor(conv(t, l, w("w2"), b("b2")))}, {});
  ValueId s = t.emit1(op("silu"), {Operand::tensor(conv(t, x, w("w3"), b("b3")))}, {});
  t.set_outputs({y, l, s});
  return t;
}

Trace claimed(const Trace& t) {
  Trace c = t;
  REQUIRE(claim_executors(c, {find_executor("onednn"), find_executor("cpp")}).empty());
  return c;
}

std::vector<std::string> op_list(const Trace& t) {
  std::vector<std::string> got;
  for (const BoundSymbol& r : t.symbols()) {
    std::string what = r.executor + ":";
    for (const BoundSymbol& m : r.is_region() ? r.subsymbols : std::vector<BoundSymbol>{r}) what += " " + m.op->name;
    got.push_back(what);
  }
  return got;
}

// The bounded and the exact variant of `t` in one .so, as the pipeline builds them.
struct Built {
  std::string so, json, sources;
  double bound = 0;
};

Built build(const Trace& t, const std::string& name, const std::string& cache = "constant values") {
  static Trace bounded, exact;  // the request points at them while compiling
  const Trace c = claimed(t);
  bounded = fuse_cpp_regions(fuse_library_epilogues(c, nan_free_values(c)));
  exact = fuse_cpp_regions(fuse_library_epilogues(c));
  verify_trace(bounded, "test");
  verify_trace(exact, "test");
  Built b;
  b.bound = bounded_input_limit(bounded);
  const fs::path dir = fs::path(THUNDERC_TEST_TMP);
  fs::create_directories(dir);
  b.sources = (dir / (name + "_src")).string();
  fs::remove_all(b.sources);
  CompileRequest req;
  req.source = {"test:" + name, "", "test"};
  req.options.executors = {"onednn", "cpp"};
  req.options.device = "cpu";
  req.options.cache = cache;
  req.input_names = {"x"};
  ModuleVariant v0{&bounded, name + " bounded"};
  v0.input_bound = b.bound;
  req.variants = {v0, ModuleVariant{&exact, name}};
  req.out_so = (dir / (name + ".so")).string();
  req.out_json = (dir / (name + ".json")).string();
  req.keep_sources = b.sources;
  compile_model(req, Toolchain::from_build());
  b.so = req.out_so;
  b.json = req.out_json;
  return b;
}

// One call of the two-variant model `mo`: the variant the runtime picks for `in`, and every output against
// the torch executor's model `mt`.
void check_call(thunderc::Model& mo, thunderc::Model& mt, std::vector<HostTensor> in, std::size_t want_variant) {
  std::vector<DLTensor> dl;
  for (HostTensor& h : in) dl.push_back(h.dl());
  CHECK(mo.select_variant(dl) == want_variant);
  auto got = mo.run(in), want = mt.run(in);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
  }
}

}  // namespace

TEST_CASE("a bounded variant fuses the activations whose input is NaN-free, the exact variant none") {
  const Trace c = claimed(model());
  // Before (claimed): onednn conv2d, cpp relu, onednn conv2d, cpp add, cpp hardtanh, cpp log, onednn conv2d,
  // cpp relu, onednn conv2d, cpp silu.
  const Trace bounded_trace = fuse_library_epilogues(c, nan_free_values(c));
  const std::vector<std::string> bounded = op_list(bounded_trace);
  CHECK(bounded == std::vector<std::string>{"onednn: conv2d relu", "onednn: conv2d add hardtanh", "cpp: log",
                                            "onednn: conv2d", "cpp: relu", "onednn: conv2d silu"});
  const std::vector<std::string> exact = op_list(fuse_library_epilogues(c));
  CHECK(exact == std::vector<std::string>{"onednn: conv2d", "cpp: relu", "onednn: conv2d add", "cpp: hardtanh",
                                          "cpp: log", "onednn: conv2d", "cpp: relu", "onednn: conv2d", "cpp: silu"});
  // Without a NaN-hiding epilogue there is no bounded variant to build.
  CHECK(bounded_input_limit(fuse_library_epilogues(c)) == 0);
  // What the compile message says of each.
  CHECK(bounded_variant_summary(bounded_trace) == "oneDNN: 3 fused activations, 3 convolutions that may use Winograd");
  CHECK(bounded_variant_summary(fuse_library_epilogues(c)) == "oneDNN: nothing");
}

TEST_CASE("the bounded and the exact variant in one model: guards, generated spec, dispatch and parity") {
  const Trace t = model();
  const Built b = build(t, "bounded");
  REQUIRE(b.bound >= 1);
  // hardtanh clamps the first chain and w2's conv never runs bounded: the bound comes from the silu branch
  // (4 * 9 weights of at most 0.5, bias 0.1: |conv| <= 18 T + 0.1), far from float's range: 2^64.
  CHECK(b.bound == std::ldexp(1.0, 64));

  std::ifstream js(b.json);
  const auto m = nlohmann::json::parse(js);
  REQUIRE(m["variants"].size() == 2);
  CHECK(m["variants"][0]["guards"][0]["finite_max_abs"].get<double>() == b.bound);
  CHECK_FALSE(m["variants"][1]["guards"][0].contains("finite_max_abs"));

  const std::string code = read_dir_text(b.sources);
  CHECK(code.find("oneDNN: conv2d [1, 4, 6, 6] -> [1, 4, 6, 6], kernel 3x3 +bias +residual hardtanh(0.0, 6.0)") !=
        std::string::npos);
  // has_bias, has_residual, channels_last, winograd (a 3x3 stride-1 convolution whose output is finite here), ...,
  // weights_vary
  CHECK(code.find("1LL, 1LL, 0LL, 1LL, thunderc_onednn::kClip, static_cast<float>(0.0), static_cast<float>(6.0), 0LL};") !=
        std::string::npos);
  CHECK(code.find("thunderc_onednn::kRelu") != std::string::npos);
  CHECK(code.find("thunderc_onednn::kSilu") != std::string::npos);

  thunderc::Model mo(b.so), mt(compile(t, {"torch"}, "bounded_torch"));
  SUBCASE("finite inputs run the bounded variant") { check_call(mo, mt, random_inputs(t, 1), 0); }
  SUBCASE("a NaN runs the exact variant, and it comes out as PyTorch's") {
    auto in = random_inputs(t, 2);
    static_cast<float*>(in[0].raw())[10] = std::nanf("");
    check_call(mo, mt, in, 1);
  }
  SUBCASE("an infinity runs the exact variant") {
    auto in = random_inputs(t, 3);
    static_cast<float*>(in[0].raw())[0] = -INFINITY;
    check_call(mo, mt, in, 1);
  }
}

TEST_CASE("a bound below float's range: a value above it runs the exact variant") {
  // conv -> relu chains with growing weights: each conv multiplies the range by 4 * 9 * 30 (and the input by
  // 2^k); the bound is the largest power of two that keeps every fused activation's input finite.
  Trace t;
  Rng rng(9);
  ValueId y = t.add_input("x", tt({1, 4, 5, 5}));
  for (int i = 0; i < 10; ++i) {
    ValueId w = random_constant(t, "w" + std::to_string(i), tt({4, 4, 3, 3}), rng, 29.0, 30.0);
    ValueId b = random_constant(t, "b" + std::to_string(i), tt({4}), rng, 0.0, 0.0);
    y = t.emit1(op("relu"), {Operand::tensor(conv(t, y, w, b))}, {});
  }
  t.set_outputs({y});
  const Built b = build(t, "bounded_small");
  // 10 layers of at most 36 * 30 = 1080 (2^10.08): 2^101 of growth; float32's limit here is 2^128 / 256.
  REQUIRE(b.bound >= 1);
  CHECK(b.bound <= std::ldexp(1.0, 20));
  CHECK(b.bound >= std::ldexp(1.0, 8));
  thunderc::Model mo(b.so), mt(compile(t, {"torch"}, "bounded_small_torch"));
  auto in = random_inputs(t, 4);  // in [-1, 1)
  std::vector<DLTensor> dl = {in[0].dl()};
  CHECK(mo.select_variant(dl) == 0);
  static_cast<float*>(in[0].raw())[3] = static_cast<float>(b.bound * 2);
  CHECK(mo.select_variant(dl) == 1);
  static_cast<float*>(in[0].raw())[3] = static_cast<float>(b.bound);  // the bound itself is inside
  CHECK(mo.select_variant(dl) == 0);
  static_cast<float*>(in[0].raw())[3] = static_cast<float>(-b.bound * 2);
  auto got = mo.run(in), want = mt.run(in);
  CHECK(worst_ratio(got[0], want[0], kRtol, kAtol) <= 1.0);
}

TEST_CASE("the \"same input\" cache never skips a bounded variant's value guard") {
  const Trace t = model();
  const Built b = build(t, "bounded_same_input", "same input");
  thunderc::Model mo(b.so), mt(compile(t, {"torch"}, "bounded_same_input_torch"));
  auto finite = random_inputs(t, 5);
  auto nan = random_inputs(t, 6);
  static_cast<float*>(nan[0].raw())[0] = std::nanf("");
  for (const auto* in : {&finite, &nan, &finite, &nan}) {  // the remembered variant, then a NaN, and back
    std::vector<DLTensor> dl = {(*in)[0].dl()};
    CHECK(mo.select_variant(dl) == (in == &finite ? 0u : 1u));
    auto got = mo.run(*in), want = mt.run(*in);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
  }
}

TEST_CASE("Winograd convolutions: marked in the bounded variant only, their outputs kept finite, parity") {
  // x -> conv 3x3 -> relu -> conv 3x3 (+ x) -> out0; x -> conv 3x3 -> out1 (nothing to fuse: a region of its
  // own, for Winograd); x -> conv 3x3 stride 2 -> out2 (not a candidate). 32 channels on 14x14 maps: where
  // oneDNN has a Winograd kernel (AVX-512; winograd_test.cpp checks which kernel a plan gets) it runs these.
  Trace t;
  Rng rng(11);
  const ValueId x = t.add_input("x", tt({1, 32, 14, 14}));
  auto w = [&](const char* name) { return random_constant(t, name, tt({32, 32, 3, 3}), rng, -0.1, 0.1); };
  auto b = [&](const char* name) { return random_constant(t, name, tt({32}), rng, -0.1, 0.1); };
  ValueId y = t.emit1(op("relu"), {Operand::tensor(conv(t, x, w("w0"), b("b0")))}, {});
  y = t.emit1(op("add"), {Operand::tensor(conv(t, y, w("w1"), b("b1"))), Operand::tensor(x)}, {});
  const ValueId lone = conv(t, x, w("w2"), b("b2"));
  const ValueId strided = t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w("w3")), Operand::tensor(b("b3"))},
                                  {{"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}, {"dilation", IntList{1, 1}},
                                   {"groups", std::int64_t{1}}});
  t.set_outputs({y, lone, strided});

  const Trace c = claimed(t);
  const Trace bounded = fuse_library_epilogues(c, nan_free_values(c));
  CHECK(op_list(bounded) == std::vector<std::string>{"onednn: conv2d relu", "onednn: conv2d add", "onednn: conv2d",
                                                     "onednn: conv2d"});
  std::vector<bool> marked;
  for (const BoundSymbol& s : bounded.symbols()) marked.push_back(winograd_marked(s));
  CHECK(marked == std::vector<bool>{true, true, true, false});
  CHECK(bounded.symbols()[2].is_region());
  CHECK(bounded.symbols()[2].attrs.get_string("name") == "onednn_fusion2");
  for (const BoundSymbol& s : fuse_library_epilogues(c).symbols()) CHECK_FALSE(s.attrs.has("winograd"));
  // The lone convolution's output is one of the values the bound keeps finite.
  CHECK(bounded_values(bounded.symbols()[2]) == std::vector<ValueId>{lone});

  const Built built = build(t, "winograd");
  REQUIRE(built.bound >= 1);
  const std::string code = read_dir_text(built.sources);
  CHECK(code.find("kernel 3x3 +bias, Winograd where it pays") != std::string::npos);
  thunderc::Model mo(built.so), mt(compile(t, {"torch"}, "winograd_torch"));
  for (std::uint64_t seed : {1, 2}) check_call(mo, mt, random_inputs(t, seed), 0);
  // A block of +inf: PyTorch's direct sum keeps inf (or NaN where signs meet); Winograd's transforms would
  // make NaN of some of those infs (inf - inf), so such a call must take the exact variant.
  auto in = random_inputs(t, 3);
  for (int k = 0; k < 32 * 14 * 14; k += 7) static_cast<float*>(in[0].raw())[k] = INFINITY;
  check_call(mo, mt, in, 1);
}
