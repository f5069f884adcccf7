// The blas executor against the torch executor: every claimed op on odd, size-1, batched-broadcast and
// 1-D shapes, with and without bias; conv2d with stride, padding, dilation, groups, depthwise and 1x1.
// Tolerances: float32 rtol 1e-4, atol 1e-5 (GEMM blocking reassociates the sums differently from ATen's
// kernels); float64 rtol 1e-10, atol 1e-12.
#include <doctest/doctest.h>

#include "common/run_process.h"

#include <array>
#include <cstdio>
#include <optional>

#include <omp.h>

#include "blas_test_util.h"

extern "C" {
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);
}

using namespace blastest;

namespace {

struct Suite {
  Trace t;
  Rng rng{42};
  std::vector<std::string> labels;  // per output
  DType dt;
  DType values_of;  // a half type: constants of dt hold values of it (the float32 reference of a half suite)
  explicit Suite(DType d = DType::Float32, DType values = DType::Float64) : dt(d), values_of(values) {}

  ValueId input(const Shape& s) { return t.add_input("x" + std::to_string(t.inputs().size()), tt(s, dt)); }
  ValueId constant(const Shape& s) {
    return random_constant(t, "c" + std::to_string(t.constants().size()), tt(s, dt), rng, -1, 1, values_of);
  }
  Operand opt(std::optional<Shape> s) { return s ? Operand::tensor(constant(*s)) : Operand::none(); }
  void out(ValueId v, std::string label) {
    auto outs = t.outputs();
    outs.push_back(v);
    t.set_outputs(outs);
    labels.push_back(std::move(label) + " -> " + shape_str(t.type(v).shape));
  }
  void linear(const Shape& x, const Shape& w, std::optional<Shape> b) {
    ValueId y = t.emit1(op("linear"), {Operand::tensor(input(x)), Operand::tensor(constant(w)), opt(b)}, {});
    out(y, "linear " + shape_str(x) + " w " + shape_str(w) + (b ? " b " + shape_str(*b) : " no bias"));
  }
  void matmul(const Shape& a, const Shape& b, const char* name = "matmul") {
    ValueId y = t.emit1(op(name), {Operand::tensor(input(a)), Operand::tensor(input(b))}, {});
    out(y, std::string(name) + " " + shape_str(a) + " @ " + shape_str(b));
  }
  void addmm(const Shape& bias, const Shape& a, const Shape& b, double beta, double alpha) {
    ValueId y = t.emit1(op("addmm"), {Operand::tensor(constant(bias)), Operand::tensor(input(a)), Operand::tensor(input(b))},
                        {{"beta", beta}, {"alpha", alpha}});
    out(y, "addmm bias " + shape_str(bias) + " " + shape_str(a) + " @ " + shape_str(b) + " beta " + format_double(beta) +
               " alpha " + format_double(alpha));
  }
  void conv(const Shape& x, const Shape& w, bool bias, IntList stride, IntList pad, IntList dil, std::int64_t groups) {
    ValueId y = t.emit1(op("conv2d"),
                        {Operand::tensor(input(x)), Operand::tensor(constant(w)), bias ? Operand::tensor(constant({w[0]})) : Operand::none()},
                        {{"stride", stride}, {"padding", pad}, {"dilation", dil}, {"groups", groups}});
    out(y, "conv2d " + shape_str(x) + " w " + shape_str(w) + (bias ? " bias" : "") + " stride " + shape_str(stride) +
               " pad " + shape_str(pad) + " dil " + shape_str(dil) + " groups " + std::to_string(groups));
  }

  // Compiles with {blas} (every symbol must be claimed by blas) and with {torch}; compares every output
  // (the blas model run with `threads`; 0: the caller's OpenMP count).
  void check(const std::string& name, double rtol, double atol, int threads = 0) {
    Trace claimed = t;
    claim_executors(claimed, {find_executor("blas")});
    for (const BoundSymbol& s : claimed.symbols()) CHECK_MESSAGE(s.executor == "blas", s.op->name << " not claimed by blas");
    std::string so_blas = compile(t, {"blas"}, name + "_blas");
    std::string so_torch = compile(t, {"torch"}, name + "_torch");
    OpenOptions opts;
    opts.num_threads = threads;
    thunderc::Model mb(so_blas, opts), mt(so_torch);
    for (std::uint64_t seed : {1, 2}) {
      auto in = random_inputs(t, seed);
      auto got = mb.run(in), want = mt.run(in);
      REQUIRE(got.size() == labels.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(labels[i]);
        CHECK(got[i].shape() == want[i].shape());
        CHECK(worst_ratio(got[i], want[i], rtol, atol) <= 1.0);
      }
    }
  }
};

std::string run_command(const std::string& cmd) { return thunderc_test::run_shell(cmd).out; }

}  // namespace

TEST_CASE("blas linear / matmul / bmm / addmm match the torch executor (float32)") {
  Suite s;
  s.linear({1, 64}, {128, 64}, Shape{128});
  s.linear({16, 64}, {192, 64}, Shape{192});
  s.linear({2, 7, 33}, {5, 33}, std::nullopt);
  s.linear({3, 1, 17}, {1, 17}, Shape{1});
  s.linear({4, 13}, {13}, std::nullopt);  // 1-D weight: [4]
  s.linear({9}, {6, 9}, Shape{6});        // 1-D input: [6]
  s.linear({5, 3}, {7, 3}, Shape{5, 7});  // full-shape bias
  s.linear({5, 3}, {7, 3}, Shape{5, 1});  // bias broadcast along the features
  s.matmul({31, 47}, {47, 29});
  s.matmul({2, 3, 5, 8}, {8, 6});          // shared b: one GEMM with M = 30
  s.matmul({2, 1, 5, 8}, {3, 8, 6});       // broadcast batch [2, 3]
  s.matmul({5, 7}, {2, 7, 3});             // a broadcast over b's batch
  s.matmul({8}, {4, 8, 5});                // 1-D a
  s.matmul({3, 4, 8}, {8});                // 1-D b
  s.matmul({8}, {8});                      // dot: rank-0 output
  s.matmul({1, 6}, {6, 1});
  s.matmul({4, 16, 16}, {4, 16, 16});
  s.matmul({3, 5, 7}, {3, 7, 2}, "bmm");
  s.matmul({1, 1, 9}, {1, 9, 1}, "bmm");
  s.matmul({2, 16, 1}, {2, 1, 16}, "bmm");  // K = 1
  s.addmm({6}, {4, 5}, {5, 6}, 1.0, 1.0);
  s.addmm({6}, {4, 5}, {5, 6}, 1.0, INFINITY);  // non-finite attributes are valid literals in the source
  s.addmm({6}, {4, 5}, {5, 6}, NAN, -INFINITY);
  s.addmm({4, 1}, {4, 5}, {5, 6}, 0.5, 2.0);
  s.addmm({1}, {3, 5}, {5, 2}, 0.0, 1.5);
  s.check("gemm_f32", 1e-4, 1e-5);
}

TEST_CASE("blas GEMMs in float64") {
  Suite s(DType::Float64);
  s.linear({3, 5, 19}, {11, 19}, Shape{11});
  s.matmul({2, 1, 5, 8}, {3, 8, 6});
  s.matmul({7}, {7, 3});
  s.addmm({6}, {4, 5}, {5, 6}, 0.5, 2.0);
  s.conv({1, 3, 9, 9}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1);
  s.conv({1, 4, 7, 7}, {4, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 4);
  s.check("gemm_f64", 1e-10, 1e-12);
}

TEST_CASE("blas conv2d matches the torch executor (float32)") {
  Suite s;
  for (const ConvCase& c : conv_cases()) s.conv(c.x, c.w, c.bias, c.stride, c.pad, c.dil, c.groups);
  s.conv({3, 7, 7}, {2, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1);  // unbatched
  s.check("conv_f32", 1e-4, 1e-5);
}

// Products big enough (>= 262,144 multiply-adds) to be split over threads: rows, columns (odd N), whole
// batches, and convolutions (im2col, 1x1, grouped, depthwise).
Suite threaded_suite() {
  Suite s;
  s.linear({300, 128}, {96, 128}, Shape{96});
  s.matmul({64, 16}, {16, 517});
  s.matmul({4, 40, 64}, {4, 64, 50});
  s.matmul({2, 48, 64}, {2, 64, 48}, "bmm");
  s.conv({2, 16, 20, 20}, {32, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1);
  s.conv({1, 64, 14, 14}, {128, 64, 1, 1}, false, {1, 1}, {0, 0}, {1, 1}, 1);
  s.conv({1, 32, 16, 16}, {64, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 2);
  s.conv({2, 24, 12, 12}, {24, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 24);
  return s;
}

TEST_CASE("blas splits GEMMs and convolutions over 1, 2 and 3 threads") {
  Suite s = threaded_suite();
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    s.check("threads" + std::to_string(threads), 1e-4, 1e-5, threads);
  }
}

// OpenBLAS's thread count is process-wide; the blas executor used to set it to each call's count, which
// races between models run concurrently with different counts (and, in OpenBLAS's OpenMP build, also
// changed the calling thread's OpenMP count). Now the calls run on thunderc's own threads.
TEST_CASE("a blas model's call leaves the caller's OpenMP count alone and never sets OpenBLAS's to its own") {
  Suite s = threaded_suite();
  thunderc::Model want(compile(s.t, {"torch"}, "state_torch"));
  const std::string so = compile(s.t, {"blas"}, "state_blas");
  const auto in = random_inputs(s.t, 3);
  const auto expected = want.run(in);

  omp_set_num_threads(3);
  openblas_set_num_threads(3);
  OpenOptions opts;
  opts.num_threads = 2;
  thunderc::Model m(so, opts);
  auto got = m.run(in);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(worst_ratio(got[i], expected[i], 1e-4, 1e-5) <= 1.0);
  CHECK(omp_get_max_threads() == 3);
  CHECK(openblas_get_num_threads() != 2);

  // Two models called at once with 1 and 2 threads, each checked on every call.
  const auto worst = worst_ratio_concurrent(so, in, expected, 1e-4, 1e-5);
  CHECK(worst[0] <= 1.0);
  CHECK(worst[1] <= 1.0);
}

// float16 / bfloat16: blas widens the operands to float, runs the float kernels and rounds the result once. The
// reference is the torch executor running the same function in float32 on the same (half-representable) values,
// its result rounded to the half type. Tolerance: one unit in the last place (rtol 1e-3 float16, 8e-3
// bfloat16: the two float sums, in different orders, may round to neighbours) and atol 1e-5 (sums near zero).
TEST_CASE("blas GEMMs and convolutions in float16 and bfloat16, computed in float") {
  auto build = [](Suite& s) {
    s.linear({16, 64}, {48, 64}, Shape{48});
    s.linear({2, 7, 33}, {5, 33}, std::nullopt);
    s.matmul({2, 1, 5, 8}, {3, 8, 6});
    s.matmul({8}, {4, 8, 5});
    s.matmul({3, 5, 7}, {3, 7, 2}, "bmm");
    s.addmm({6}, {4, 5}, {5, 6}, 0.5, 2.0);
    s.conv({1, 3, 9, 11}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1);
    s.conv({1, 8, 9, 9}, {8, 1, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 8);   // depthwise
    s.conv({2, 16, 5, 5}, {32, 16, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1);  // 1x1: no im2col
  };
  for (DType d : {DType::Float16, DType::BFloat16}) {
    CAPTURE(std::string(dtype_name(d)));
    Suite h(d), ref(DType::Float32, d);
    build(h);
    build(ref);
    Trace claimed = h.t;
    claim_executors(claimed, {find_executor("blas")});
    for (const BoundSymbol& s : claimed.symbols()) CHECK_MESSAGE(s.executor == "blas", s.op->name << " not claimed by blas");
    const std::string tag = dtype_short_name(d);
    thunderc::Model mb(compile(h.t, {"blas"}, "gemm_" + tag + "_blas")), mt(compile(ref.t, {"torch"}, "gemm_" + tag + "_ref"));
    const double rtol = d == DType::Float16 ? 1e-3 : 8e-3;
    for (std::uint64_t seed : {1, 2}) {
      auto got = mb.run(random_inputs(h.t, seed)), want = mt.run(random_inputs(ref.t, seed, d));
      REQUIRE(got.size() == h.labels.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(h.labels[i]);
        CHECK(dtype_equal(got[i].dtype(), dl_dtype(d)));
        HostTensor rounded(dl_dtype(d), want[i].shape());
        for (std::size_t e = 0; e < want[i].numel(); ++e) {
          const float f = static_cast<const float*>(want[i].raw())[e];
          static_cast<std::uint16_t*>(rounded.raw())[e] = d == DType::Float16 ? float_to_f16(f) : float_to_bf16(f);
        }
        CHECK(worst_ratio(got[i], rounded, rtol, 1e-5) <= 1.0);
      }
    }
  }
}

TEST_CASE("blas rejects what it does not implement: integer dtypes, mixed dtypes") {
  Trace t;
  ValueId a = t.add_input("a", tt({2, 3}, DType::Int64)), b = t.add_input("b", tt({3, 2}, DType::Int64));
  ValueId y = t.emit1(op("matmul"), {Operand::tensor(a), Operand::tensor(b)}, {});
  ValueId h = t.add_input("h", tt({2, 3}, DType::Float16)), w = t.add_input("w", tt({4, 3}, DType::Float16));
  ValueId z = t.emit1(op("linear"), {Operand::tensor(h), Operand::tensor(w), Operand::none()}, {});
  t.set_outputs({y, z});
  // the linear's bias in float32: one dtype per call
  t.mutable_symbols().back().inputs[2] = Operand::tensor(t.add_input("bias", tt({4}, DType::Float32)));
  const Executor* blas = find_executor("blas");
  CHECK(blas->implemented());
  for (const BoundSymbol& s : t.symbols()) CHECK_FALSE(blas->can_execute(t, s));
}

TEST_CASE("a blas-only model .so links OpenBLAS and OpenMP, not LibTorch") {
  Suite s;
  s.linear({2, 8}, {4, 8}, Shape{4});
  s.conv({1, 3, 6, 6}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1);
  std::string so = compile(s.t, {"blas"}, "elf_blas_only");
  // The NEEDED entries only: other lines hold addresses ("STRTAB 0xc10" would match "c10").
  std::string needed = run_command("readelf -d " + thunderc_test::shell_quote(so) + " | grep NEEDED");
  INFO(needed);
  CHECK(needed.find("(NEEDED)") != std::string::npos);
  CHECK(needed.find("libopenblas") != std::string::npos);
  CHECK(needed.find("libgomp") != std::string::npos);  // its own threads split the GEMMs
  for (const char* lib : {"torch", "c10", "aten_shim"}) CHECK(needed.find(lib) == std::string::npos);
}
