// Regions: a "fusion" bound symbol whose subsymbols run as a unit. The verifier checks them by walking the
// subsymbols (the fusion op has no meta function of its own); the printer shows them indented.
#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core_test_util.h"

using namespace coretest;

namespace {

// x: f32[2, 3]; t0 = relu(x); t1 = mul(t0, 2.0); t2 = add(t1, x) — with t0..t1 grouped into a region.
struct RegionTrace {
  Trace t;
  ValueId x, t0, t1, t2;
  RegionTrace() {
    x = t.add_input("x", f32({2, 3}));
    t0 = t.emit1(op("relu"), {Operand::tensor(x)}, {});
    t1 = t.emit1(op("mul"), {Operand::tensor(t0), Operand::number(2.0)}, {});
    t2 = t.emit1(op("add"), {Operand::tensor(t1), Operand::tensor(x)}, {});
    t.set_outputs({t2});
    group_first_symbols(t, 2, "cpp", {Operand::tensor(x)}, {t1});
  }
};

std::string verify_error(const Trace& t) {
  try {
    verify_trace(t, "fusion");
  } catch (const InternalError& e) {
    return e.what();
  }
  return "<valid>";
}

}  // namespace

OPS_TEST_CASE("fusion regions verify through their subsymbols and print indented", "fusion") {
  RegionTrace r;
  CHECK(verify_error(r.t) == "<valid>");
  CHECK(print_trace(r.t) == R"(def forward(x: "cpu f32[2, 3]"):
  t1 = cpp.fusion(x, name='cpp_fusion0')  # t1: "cpu f32[2, 3]"
    # t0 = relu(x)  # t0: "cpu f32[2, 3]"
    # t1 = mul(t0, 2.0)  # t1: "cpu f32[2, 3]"
  t2 = add(t1, x)  # t2: "cpu f32[2, 3]"
  return t2
)");
  SUBCASE("the fusion op has no meta function of its own") {
    std::vector<OperandInfo> infos;
    Attrs a;
    CHECK_THROWS_AS(op("fusion").meta(MetaArgs{op("fusion"), infos, a}), InternalError);
  }
  SUBCASE("a region may not read values it was not given") {
    r.t.mutable_symbols()[0].inputs.clear();
    r.t.mutable_symbols()[0].inputs.push_back(Operand::tensor(r.t0));  // t0 is computed inside
    CHECK(contains(verify_error(r.t), "before it is defined"));
  }
  SUBCASE("a region must return values its subsymbols compute") {
    r.t.mutable_symbols()[0].outputs = {r.t2};
    CHECK(contains(verify_error(r.t), "returns a value none of its subsymbols computes"));
  }
  SUBCASE("values internal to a region are not visible after it") {
    r.t.set_outputs({r.t0});
    CHECK(contains(verify_error(r.t), "an output is not defined"));
  }
}
