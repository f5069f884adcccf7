// generalize_code (codegen/symbolic_code.h): one symbol's code printed at several bindings becomes one text
// with its sizes as expressions in the symbols; anything else that differs is a UserError. Before (the
// samples) / Expected (the merged text) pairs.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/symbolic_code.h"
#include "core/ir/error.h"

using namespace thunderc;

namespace {

const std::vector<SymbolRange> kB = {{"B", 1, 32}};
const std::vector<std::string> kVars = {"s0_B"};

// The code at each binding of codegen_bindings({B in 1..32}) = {2}, {32}, {17}, from a printer of B.
template <typename F>
std::vector<CodeSample> samples_of(F print) {
  std::vector<CodeSample> out;
  for (const auto& b : codegen_bindings(kB, {Affine{0, {1}}})) out.push_back({b, print(b[0])});
  return out;
}

std::size_t max_index(const std::vector<CodeSample>& s) {
  for (std::size_t k = 0; k < s.size(); ++k)
    if (s[k].values[0] == 32) return k;
  return 0;
}

std::string merge(const std::vector<CodeSample>& s) { return generalize_code(kB, kVars, s, max_index(s), "operation 1 (relu)"); }

std::string merge_error(const std::vector<CodeSample>& s) {
  try {
    merge(s);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string S(long long v) { return std::to_string(v); }

}  // namespace

TEST_CASE("symbolic code: codegen bindings are a grid with every symbolic size >= 2 where the range allows") {
  using Bindings = std::vector<std::vector<std::int64_t>>;
  const Affine B{0, {1}}, T_minus_1{-1, {1}};
  CHECK(codegen_bindings({{"B", 1, 32}}, {B}) == Bindings{{2}, {12}, {22}, {32}});
  CHECK(codegen_bindings({{"B", 1, 3}}, {B}) == Bindings{{2}, {3}});
  CHECK(codegen_bindings({{"B", 1, 2}}, {B}) == Bindings{{1}, {2}});  // two values must remain
  CHECK(codegen_bindings({{"B", 4, 8}}, {B}) == Bindings{{4}, {5}, {6}, {8}});
  CHECK(codegen_bindings({{"B", 1, 32}}, {}) == Bindings{{1}, {11}, {21}, {32}});
  CHECK(codegen_bindings({{"T", 2, 6}}, {B, T_minus_1}) == Bindings{{3}, {4}, {5}, {6}});  // narrow(1, 1, T - 1)
  // Two symbols: a 4 x 4 grid; only the symbol a small dimension depends on is raised.
  Bindings two = codegen_bindings({{"B", 1, 4}, {"T", 2, 6}}, {Affine{-1, {0, 1}}});
  REQUIRE(two.size() == 16);
  CHECK(two.front() == std::vector<std::int64_t>{1, 3});
  CHECK(two.back() == std::vector<std::int64_t>{4, 6});
  // Three symbols: 3 values each.
  CHECK(codegen_bindings({{"A", 1, 9}, {"B", 1, 9}, {"C", 1, 9}}, {}).size() == 27);
}

TEST_CASE("symbolic code: sizes become expressions, everything else is kept") {
  auto s = samples_of([](long long b) {
    return "{\n"
           "  // relu " + S(b) + "x64\n"
           "  const float* __restrict b0 = static_cast<const float*>(v1_x.data);\n"
           "  for (int64_t i0 = 0; i0 < " + S(b * 64) + "; ++i0) b1[i0] = b0[i0 + " + S(b) + "] > 0 ? 1.5e-05f : 2LL;\n"
           "}\n";
  });
  CHECK(merge(s) ==
        "{\n"
        "  // relu 32x64\n"
        "  const float* __restrict b0 = static_cast<const float*>(v1_x.data);\n"
        "  for (int64_t i0 = 0; i0 < (0LL + 64LL * s0_B); ++i0) b1[i0] = b0[i0 + (0LL + 1LL * s0_B)] > 0 ? 1.5e-05f : 2LL;\n"
        "}\n");
}

TEST_CASE("symbolic code: static locals with sizes lose static, marked bounds take the maxima") {
  auto s = samples_of([](long long b) {
    return "static const int64_t shape[] = {" + S(b) + "LL, 8LL};\n"
           "static const int64_t strides[] = {8LL, 1LL};\n"
           "float* __restrict b2 = reinterpret_cast<float*>(ws + 128 + " + kAtMax + S((b * 40 + 63) / 64 * 64) + ");\n";
  });
  CHECK(merge(s) ==
        "const int64_t shape[] = {(0LL + 1LL * s0_B), 8LL};\n"
        "static const int64_t strides[] = {8LL, 1LL};\n"
        "float* __restrict b2 = reinterpret_cast<float*>(ws + 128 + /*at-max*/1280);\n");
}

TEST_CASE("symbolic code: a pragma may take a size in an if() clause only") {
  auto ok = samples_of([](long long b) {
    return "#pragma omp parallel for num_threads(nt) schedule(static) if(" + S(b * 4096) + " >= 16384 && " + S(b) +
           " > 1)\n";
  });
  CHECK(merge(ok) ==
        "#pragma omp parallel for num_threads(nt) schedule(static) if((0LL + 4096LL * s0_B) >= 16384 && (0LL + 1LL * "
        "s0_B) > 1)\n");
  auto bad = samples_of([](long long b) { return "#pragma omp simd simdlen(" + S(b) + ")\n"; });
  std::string msg = merge_error(bad);
  INFO(msg);
  CHECK(msg.find("preprocessor line") != std::string::npos);
}

TEST_CASE("symbolic code: what is not an affine size is refused, naming the operation, line and values") {
  SUBCASE("a size that is not c + a*B (a rounded block count)") {
    std::string msg = merge_error(samples_of([](long long b) { return "n = " + S((b + 15) / 16) + ";\n"; }));
    INFO(msg);
    CHECK(msg.find("operation 1 (relu)") != std::string::npos);
    CHECK(msg.find("n = 2;") != std::string::npos);
    CHECK(msg.find("1 at B=2") != std::string::npos);
    CHECK(msg.find("torch executor") != std::string::npos);
  }
  SUBCASE("a floating-point literal that depends on B (1/B)") {
    std::string msg = merge_error(samples_of([](long long b) { return "acc *= " + std::to_string(1.0 / b) + "f;\n"; }));
    INFO(msg);
    CHECK(msg.find("not an integer size") != std::string::npos);
  }
  SUBCASE("different code (a loop present at one size only)") {
    std::string msg = merge_error(samples_of([](long long b) {
      return b > 16 ? std::string("#pragma omp parallel for\nfor (;;) {}\n") : std::string("for (;;) {}\n");
    }));
    INFO(msg);
    CHECK(msg.find("lines") != std::string::npos);
  }
  SUBCASE("a different identifier") {
    std::string msg =
        merge_error(samples_of([](long long b) { return std::string(b > 16 ? "gemm" : "gemv") + "(1);\n"; }));
    INFO(msg);
    CHECK(msg.find("'gemv' where the maxima have 'gemm'") != std::string::npos);
  }
}

TEST_CASE("symbolic code: two symbols, products of sizes") {
  const std::vector<SymbolRange> bt = {{"B", 1, 4}, {"T", 2, 6}};
  const std::vector<std::string> vars = {"s0_B", "s1_T"};
  auto merge2 = [&](const std::function<std::string(std::int64_t, std::int64_t)>& print) {
    std::vector<CodeSample> s;
    std::size_t top = 0;
    for (const auto& v : codegen_bindings(bt, {Affine{0, {1, 0}}, Affine{0, {0, 1}}})) {
      if (v[0] == 4 && v[1] == 6) top = s.size();
      s.push_back({v, print(v[0], v[1])});
    }
    return generalize_code(bt, vars, s, top, "operation 2 (add)");
  };
  // A loop bound B*T*8 and a stride T*T*64 (a [B, T, T, 64] tensor), and an affine offset.
  CHECK(merge2([](std::int64_t b, std::int64_t t) {
          return "x[" + S(b * t * 8) + "]; y[i * " + S(t * t * 64) + " + " + S(3 + 2 * b + 5 * t) + "];\n";
        }) == "x[(0LL + 8LL * s0_B * s1_T)]; y[i * (0LL + 64LL * s1_T * s1_T) + (3LL + 5LL * s1_T + 2LL * s0_B)];\n");
  std::string msg;
  try {
    merge2([](std::int64_t b, std::int64_t t) { return "x[" + S(b * b * b * t) + "];\n"; });  // degree 3 in B
  } catch (const UserError& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("not a polynomial of degree 2 or less") != std::string::npos);
}
