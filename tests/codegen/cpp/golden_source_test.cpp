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
