// Golden generated source for one small fusion: mul -> add -> relu -> sum over the last dim. The text
// shows the properties the backend promises: one flat vectorizable loop per nest, offsets hoisted, the
// elementwise chain in registers, a simd reduction accumulator per row.
#include <doctest/doctest.h>

#include "codegen/cpp/cpp_backend.h"
#include "cpp_test_util.h"
#include "golden_util.h"

using namespace cpptest;

TEST_CASE("generated source of a small fusion matches the golden file") {
  Trace t;
  ValueId x = t.add_input("x", f32({4, 1000})), w = t.add_input("w", f32({1000}));
  ValueId m = t.emit1(op("mul"), {T(x), T(w)}, {});
  ValueId a = t.emit1(op("add"), {T(m), N(1.0)}, {});
  ValueId r = t.emit1(op("relu"), {T(a)}, {});
  ValueId s = t.emit1(op("sum"), {T(r)}, {{"dims", IntList{1}}});
  ValueId p = t.emit1(op("permute"), {T(r)}, {{"dims", IntList{1, 0}}});
  ValueId e = t.emit1(op("exp"), {T(p)}, {});
  t.set_outputs({s, e});
  Trace fused = claimed(t, {"cpp"});
  REQUIRE(fused.symbols().size() == 1);
  CppBackend backend;
  CHECK(backend.scratch_bytes(fused, fused.symbols()[0]) == 16000);
  SourceWriter out;
  backend.emit_symbol(SourceCtx(fused), fused.symbols()[0], out);
  std::string got = print_trace(fused) + "\n" + out.str();
  check_golden("small_fusion.cpp.txt", got);
}

// THUNDERC_UPDATE_GOLDEN rewrites a golden file and fails: a run with it set never passes.
TEST_CASE("golden update mode fails after writing" * doctest::should_fail()) {
  std::string current = read_golden("small_fusion.cpp.txt");
  REQUIRE(!current.empty());
  setenv("THUNDERC_UPDATE_GOLDEN", "1", 1);
  check_golden("small_fusion.cpp.txt", current);  // same text: the file is unchanged
  unsetenv("THUNDERC_UPDATE_GOLDEN");
}

// DenseNet's dense layer as the channels-last pass leaves it: an NHWC cat of three pieces, the NCHW permute, a
// pre-activation batch norm and relu, back to NHWC. The cat is lazy (codegen/loops/region_lowering.h): the
// golden text has one nest per piece writing batch_norm+relu of that piece into its channels of the output,
// and no nest copying the concatenation. Scratch holds only the batch norm's two per-channel vectors.
TEST_CASE("generated source of cat -> batch_norm -> relu (channels-last) stores each piece once") {
  Trace t;
  ValueId q0 = t.add_input("q0", f32({1, 3, 5, 16})), q1 = t.add_input("q1", f32({1, 3, 5, 32}));
  ValueId q2 = t.add_input("q2", f32({1, 3, 5, 32}));
  ValueId g = t.add_input("g", f32({80})), b = t.add_input("b", f32({80})), m = t.add_input("m", f32({80}));
  ValueId v = t.add_input("v", f32({80}));
  ValueId c = t.emit1(op("cat"), {T(q0), T(q1), T(q2)}, {{"dim", std::int64_t{3}}});
  ValueId as_nchw = t.emit1(op("permute"), {T(c)}, {{"dims", IntList{0, 3, 1, 2}}});
  ValueId bn = t.emit1(op("batch_norm"), {T(as_nchw), T(g), T(b), T(m), T(v)}, {});
  ValueId r = t.emit1(op("relu"), {T(bn)}, {});
  t.set_outputs({t.emit1(op("permute"), {T(r)}, {{"dims", IntList{0, 2, 3, 1}}})});
  Trace fused = claimed(t, {"cpp"});
  REQUIRE(fused.symbols().size() == 1);
  CppBackend backend;
  CHECK(backend.scratch_bytes(fused, fused.symbols()[0]) == 2 * 320);  // alpha and beta: 80 floats each
  SourceWriter out;
  backend.emit_symbol(SourceCtx(fused), fused.symbols()[0], out);
  const std::string src = out.str();
  // Three stores into the output (b9), each from its piece (b0, b1, b2) into its channels (0, 16, 48 of 80 per pixel).
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("b9[") == 3);
  for (const char* at : {"o0_0 = i0 * 80;", "o0_0 = 16 + i0 * 80;", "o0_0 = 48 + i0 * 80;", "= b0[o1_0 + i1];",
                         "= b1[o1_0 + i1];", "= b2[o1_0 + i1];"})
    CHECK_MESSAGE(count(at) == 1, at);
  check_golden("lazy_cat_nhwc.cpp.txt", print_trace(fused) + "\n" + src);
}
