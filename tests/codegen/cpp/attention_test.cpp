// The cpp executor's fused attention kernel (codegen/cpp/attention.h): numeric parity with the torch
// executor (which runs the math formulation: matmul, scale, mask, softmax, matmul in ATen) over shapes and
// masks, what it claims, that it never joins a fusion region, and the generated source.
// Built again into the nvfuser conformance executable (THUNDERC_CONFORMANCE_NVFUSER): the same float32
// parity cases then run nvfuser's flash kernel (codegen/nvfuser/attention.h) emulated, through the runtime.
// Tolerance: float32 rtol 1e-5 / atol 1e-5 (the kernel sums the dot products and the weighted values in
// another order, and rescales partial sums: the online softmax); float64 1e-12 / 1e-12.
#include <doctest/doctest.h>

#include "codegen/cpp/cpp_backend.h"
#include "cpp_test_util.h"
#ifndef THUNDERC_CONFORMANCE_NVFUSER
#include "golden_util.h"
#endif

using namespace cpptest;

#ifdef THUNDERC_CONFORMANCE_NVFUSER
#define KERNEL "nvfuser "  // test names say whose kernel ran
#else
#define KERNEL "cpp "
#endif

namespace {

const char* kSdpa = "scaled_dot_product_attention";

struct Case {
  Shape q, k, v;
  std::optional<TensorType> mask;  // an input of the trace
  bool causal = false;
  std::optional<double> scale;
};

Trace attention_trace(const Case& c, DType dt = DType::Float32) {
  Trace t;
  auto ty = [&](const Shape& s) { return TensorType{dt, s, Device::cpu()}; };
  ValueId q = t.add_input("q", ty(c.q)), k = t.add_input("k", ty(c.k)), v = t.add_input("v", ty(c.v));
  Operand mask = Operand::none();
  if (c.mask) mask = T(t.add_input("mask", *c.mask));
  Attrs attrs{{"is_causal", c.causal}};
  if (c.scale) attrs.set("scale", *c.scale);
  t.set_outputs({t.emit1(op(kSdpa), {T(q), T(k), T(v), mask}, attrs)});
  return t;
}

#ifndef THUNDERC_CONFORMANCE_NVFUSER  // the cpp kernel's source, for the generated-source checks below
std::string generated(const Trace& claimed_trace) {
  for (const BoundSymbol& s : claimed_trace.symbols())
    if (s.op->name == kSdpa) {
      SourceWriter out;
      CppBackend().emit_symbol(SourceCtx(claimed_trace), s, out);
      return out.str();
    }
  FAIL("no attention symbol");
  return "";
}
#endif

#ifdef THUNDERC_CONFORMANCE_NVFUSER
// Whether nvfuser claims the trace's attention when it runs on CUDA.
bool claimed_by_cpp(const Trace& t) {
  Trace on_cuda = t;
  on_cuda.set_device(Device::cuda(0));
  std::vector<const Executor*> exs = {find_executor("nvfuser")};
  claim_executors(on_cuda, exs);
  for (const BoundSymbol& s : on_cuda.symbols())
    if (s.op->name == kSdpa) return s.executor == "nvfuser";
  return false;
}
#else
bool claimed_by_cpp(const Trace& t) {
  Trace c = claimed(t, {"cpp", "torch"});
  for (const BoundSymbol& s : c.symbols())
    if (s.op->name == kSdpa) return s.executor == "cpp";
  return false;
}
#endif

}  // namespace

TEST_CASE(KERNEL "attention matches the torch executor: shapes, broadcasting, causal, masks") {
  struct Named {
    const char* name;
    Case c;
  };
  const std::vector<Named> cases = {
      {"plain", {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, {}, false, {}}},
      {"l_ne_s_e_ne_ev", {{2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 6}, {}, false, 0.3}},
      {"batch_broadcast", {{2, 3, 5, 8}, {1, 3, 7, 8}, {2, 1, 7, 6}, {}, false, {}}},
      {"rank2", {{5, 8}, {9, 8}, {9, 3}, {}, false, {}}},
      {"rank3_odd", {{3, 1, 17}, {3, 70, 17}, {3, 70, 5}, {}, false, {}}},  // one query, keys over two tiles
      {"causal_square", {{1, 2, 40, 16}, {1, 2, 40, 16}, {1, 2, 40, 16}, {}, true, {}}},
      {"causal_long", {{1, 1, 150, 8}, {1, 1, 150, 8}, {1, 1, 150, 4}, {}, true, {}}},  // blocks and tiles
      {"causal_l_lt_s", {{2, 5, 8}, {2, 9, 8}, {2, 9, 8}, {}, true, {}}},
      {"causal_l_gt_s", {{2, 9, 8}, {2, 5, 8}, {2, 5, 8}, {}, true, {}}},
      {"bool_mask_ls", {{2, 2, 6, 8}, {2, 2, 10, 8}, {2, 2, 10, 8}, b8({6, 10}), false, {}}},
      {"bool_key_padding", {{2, 2, 6, 8}, {2, 2, 10, 8}, {2, 2, 10, 8}, b8({2, 1, 1, 10}), false, {}}},
      {"bool_mask_and_causal", {{1, 2, 12, 8}, {1, 2, 12, 8}, {1, 2, 12, 8}, b8({1, 1, 12, 12}), true, {}}},
      {"additive_mask", {{2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 8}, f32({1, 3, 5, 7}), false, 0.5}},
      {"additive_row_mask", {{2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 8}, f32({5, 1}), false, {}}},
      {"parallel", {{2, 4, 64, 32}, {2, 4, 80, 32}, {2, 4, 80, 32}, b8({1, 1, 64, 80}), false, {}}},
      {"parallel_causal", {{2, 4, 96, 32}, {2, 4, 96, 32}, {2, 4, 96, 32}, {}, true, {}}},
  };
  for (const Named& n : cases) {
    INFO(n.name);
    Trace t = attention_trace(n.c);
    CHECK(claimed_by_cpp(t));
    check_against_torch(t, std::string("attn_") + n.name, false, Tol{1e-5, 1e-5});
  }
}

TEST_CASE(KERNEL "attention: float64, NaN inputs, fully masked rows give NaN as PyTorch") {
#ifndef THUNDERC_CONFORMANCE_NVFUSER  // nvfuser's kernel is float32 only
  SUBCASE("float64") {
    Trace t = attention_trace({{2, 3, 7, 8}, {2, 1, 20, 8}, {2, 3, 20, 5}, {}, true, {}}, DType::Float64);
    CHECK(claimed_by_cpp(t));
    check_against_torch(t, "attn_f64", false, Tol{1e-12, 1e-12});
  }
#endif
  SUBCASE("NaN in q, k, v propagates as in the math formulation") {
    Trace t = attention_trace({{2, 6, 8}, {2, 70, 8}, {2, 70, 8}, b8({6, 70}), false, {}});
    check_against_torch(t, "attn_nan", false, Tol{1e-5, 1e-5}, 1, InputOpts{0.01});
  }
  SUBCASE("a bool mask masking every key of some rows") {
    // A [L, 1] mask keeps all keys of a row or none: about half of the rows are NaN on both sides.
    Trace t = attention_trace({{2, 8, 8}, {2, 5, 8}, {2, 5, 8}, b8({8, 1}), false, {}});
    check_against_torch(t, "attn_masked_rows", false, Tol{1e-5, 1e-5});
  }
}

// float16 and bfloat16: q, k, v (and an additive mask) in 16 bits, computed in float, the output rounded once;
// against half_rounded_reference (the float32 formulation, rounded). Tolerance: one unit in the last place.
TEST_CASE(KERNEL "attention in float16 and bfloat16, computed in float") {
  for (DType d : {DType::Float16, DType::BFloat16}) {
    CAPTURE(std::string(dtype_name(d)));
    const Tol tol = d == DType::Float16 ? kF16Op : kBF16Op;
    const TensorType additive{d, {1, 3, 5, 7}, Device::cpu()};
    const std::vector<std::pair<const char*, Case>> cases = {
        {"plain", {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, {}, false, {}}},
        {"causal_long", {{1, 1, 150, 8}, {1, 1, 150, 8}, {1, 1, 150, 4}, {}, true, {}}},  // blocks and tiles
        {"bool_mask", {{2, 2, 6, 8}, {2, 2, 10, 8}, {2, 2, 10, 8}, b8({2, 1, 1, 10}), false, {}}},
        {"additive_mask", {{2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 6}, additive, false, 0.5}},  // Ev not a key group
        {"parallel", {{2, 4, 64, 32}, {2, 4, 80, 32}, {2, 4, 80, 32}, {}, false, {}}},
    };
    for (const auto& [name, c] : cases) {
      INFO(name);
      Trace t = attention_trace(c, d);
      CHECK(claimed_by_cpp(t));
      check_half_against_torch(t, std::string("attn_") + dtype_short_name(d) + "_" + name, false, tol);
    }
  }
}

#ifdef THUNDERC_CONFORMANCE_NVFUSER
TEST_CASE("nvfuser attention: what the checker leaves to others, and head sizes up to 128") {
  CHECK_FALSE(claimed_by_cpp(attention_trace({{2, 4, 8}, {2, 4, 8}, {2, 4, 8}, {}, false, {}}, DType::Float64)));
  CHECK_FALSE(claimed_by_cpp(attention_trace({{1, 4, 129}, {1, 4, 129}, {1, 4, 8}, {}, false, {}})));
  CHECK_FALSE(claimed_by_cpp(attention_trace({{1, 4, 8}, {1, 4, 8}, {1, 4, 129}, {}, false, {}})));
  CHECK_FALSE(claimed_by_cpp(attention_trace({{1, 4, 8}, {1, 0, 8}, {1, 0, 8}, {}, false, {}})));  // no key
  CHECK_FALSE(claimed_by_cpp(attention_trace({{2, 4, 8}, {2, 4, 8}, {2, 4, 8}, b8({1, 1, 4, 4}), false, {}})));
  Trace big = attention_trace({{1, 2, 40, 128}, {1, 2, 70, 128}, {1, 2, 70, 128}, b8({40, 70}), false, {}});
  CHECK(claimed_by_cpp(big));
  check_against_torch(big, "attn_e128", false, Tol{1e-5, 1e-5});
}
#else
TEST_CASE("cpp attention: head sizes past the stack budget keep their tiles on the heap") {
  // E = Ev = 4096: a 16-key tile of it is 256 KiB, more than kMaxStackBytes with the accumulators.
  Trace t = attention_trace({{1, 3, 4096}, {1, 5, 4096}, {1, 5, 4096}, {}, false, {}});
  CHECK(claimed_by_cpp(t));
  const std::string src = generated(claimed(t, {"cpp"}));
  CHECK(src.find("std::vector<float> tiles(") != std::string::npos);
  CHECK(src.find("kt[4096][16]") == std::string::npos);
  check_against_torch(t, "attn_e4096", false, Tol{1e-5, 1e-5});
  // E = 64 stays on the stack.
  CHECK(generated(claimed(attention_trace({{1, 3, 64}, {1, 5, 64}, {1, 5, 64}, {}, false, {}}), {"cpp"})).find("tiles(") ==
        std::string::npos);
}

TEST_CASE("cpp attention: what the checker leaves to others") {
  // Masks that would broadcast the weights to more batches.
  CHECK_FALSE(claimed_by_cpp(attention_trace({{1, 4, 8}, {1, 4, 8}, {1, 4, 8}, b8({3, 4, 4}), false, {}})));
  CHECK_FALSE(claimed_by_cpp(attention_trace({{1, 4, 8}, {1, 4, 8}, {1, 4, 8}, f32({2, 1, 4, 4}), false, {}})));
  // More mask dims than the weights, even of size 1: ATen's math formulation gives the result those dims.
  CHECK_FALSE(claimed_by_cpp(attention_trace({{2, 4, 8}, {2, 4, 8}, {2, 4, 8}, b8({1, 1, 4, 4}), false, {}})));
  CHECK(claimed_by_cpp(attention_trace({{2, 4, 8}, {2, 4, 8}, {2, 4, 8}, b8({4}), false, {}})));
}

TEST_CASE("cpp attention stays out of fusion regions, its cpp neighbours still fuse") {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 4, 8}));
  ValueId q = t.emit1(op("relu"), {T(x)}, {});
  ValueId a = t.emit1(op(kSdpa), {T(q), T(x), T(x), Operand::none()}, {});
  ValueId r = t.emit1(op("exp"), {T(a)}, {});
  t.set_outputs({t.emit1(op("neg"), {T(r)}, {})});
  Trace c = claimed(t, {"cpp", "torch"});
  REQUIRE(c.symbols().size() == 3);
  CHECK(c.symbols()[0].op->name == "fusion");
  CHECK(c.symbols()[1].op->name == kSdpa);
  CHECK(c.symbols()[1].executor == "cpp");
  CHECK(c.symbols()[2].op->name == "fusion");
  CHECK(c.symbols()[2].subsymbols.size() == 2);
  check_against_torch(t, "attn_in_chain", false, Tol{1e-5, 1e-5}, 3);
}

TEST_CASE("generated source of the attention kernel: tiles, online softmax, no L x S buffer") {
  Trace t = attention_trace({{1, 2, 100, 16}, {1, 2, 100, 16}, {1, 2, 100, 16}, b8({1, 1, 1, 100}), true, 0.25});
  Trace c = claimed(t, {"cpp"});
  std::string src = generated(c);
  check_golden("attention.cpp.txt", print_trace(c) + "\n" + src);
  CHECK(src.find("kt[16][64]") != std::string::npos);              // a transposed key tile
  CHECK(src.find("acc[64][16]") != std::string::npos);             // 64 query rows' accumulators
  CHECK(src.find("s[64][64]") != std::string::npos);               // scores of the block's rows, one tile only
  CHECK(src.find("vector_size(32)") != std::string::npos);         // register-blocked micro-kernels: 4 rows x
  CHECK(src.find("c3a += x * ka; c3b += x * kb;") != std::string::npos);  // 2 vectors of keys, and of values
  CHECK(src.find("a3a += x * va; a3b += x * vb;") != std::string::npos);
  CHECK(src.find("[100]") == std::string::npos);                   // nothing sized by S (or L)
  CHECK(src.find("thunderc_expf(m_run[r] - m_new)") != std::string::npos);  // the running-max rescale
  CHECK(src.find("if (j0 > i) continue;") != std::string::npos);   // causal: tiles above the diagonal skipped
  CHECK(src.find("am[om + i * 0 + (j0 + jj) * 1]") != std::string::npos);  // key-padding mask, broadcast rows
  CHECK(src.find("static_cast<float>(0.25)") != std::string::npos);
  CHECK(src.find("omp parallel for") != std::string::npos);        // 2 * 2 blocks of work, enough to share
  CppBackend backend;
  CHECK(backend.scratch_bytes(c, c.symbols()[0]) == 0);
}
#endif  // THUNDERC_CONFORMANCE_NVFUSER
