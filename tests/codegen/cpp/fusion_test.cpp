// The fusion pass: Before/After golden traces (print_trace) for grouping by dataflow, cycle avoidance,
// reshape-only groups left unfused and merging of several producer regions; every result verifies.
#include <doctest/doctest.h>

#include "cpp_test_util.h"
#include "golden_util.h"

using namespace cpptest;

namespace {

std::string before_after(const Trace& t) {
  Trace claimed_trace = t;
  claim_executors(claimed_trace, {find_executor("cpp"), find_executor("torch")});
  Trace fused = fuse_cpp_regions(claimed_trace);
  verify_trace(fused, "fusion");
  return "# Before\n" + print_trace(claimed_trace) + "\n# After\n" + print_trace(fused);
}

void check_golden(const std::string& name, const Trace& t) {
  std::string got = before_after(t);
  ::check_golden(name, got);
}

}  // namespace

TEST_CASE("fusion groups by dataflow across a torch symbol (symbols move as dependencies allow)") {
  Trace t;
  ValueId x = t.add_input("x", f32({4, 8})), w = t.add_input("w", f32({8, 8}));
  ValueId a = t.emit1(op("exp"), {T(x)}, {});
  ValueId l = t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {});
  ValueId b = t.emit1(op("mul"), {T(a), N(2.0)}, {});
  ValueId c = t.emit1(op("add"), {T(l), T(b)}, {});
  t.set_outputs({c});
  check_golden("fusion_dataflow.txt", t);
}

TEST_CASE("fusion never creates a cycle through the rest of the trace") {
  Trace t;
  ValueId x = t.add_input("x", f32({4, 8})), w = t.add_input("w", f32({8, 8}));
  ValueId a = t.emit1(op("exp"), {T(x)}, {});
  ValueId l = t.emit1(op("linear"), {T(a), T(w), Operand::none()}, {});
  ValueId c = t.emit1(op("add"), {T(a), T(l)}, {});
  ValueId d = t.emit1(op("relu"), {T(c)}, {});
  t.set_outputs({d});
  check_golden("fusion_no_cycle.txt", t);
}

TEST_CASE("fusion leaves reshape-only groups top-level and merges producer regions") {
  Trace t;
  ValueId x = t.add_input("x", f32({4, 8})), y = t.add_input("y", f32({4, 8})), w = t.add_input("w", f32({8, 8}));
  ValueId l = t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {});
  ValueId r = t.emit1(op("reshape"), {T(l)}, {{"shape", IntList{8, 4}}});
  ValueId l2 = t.emit1(op("matmul"), {T(r), T(x)}, {});
  ValueId a = t.emit1(op("exp"), {T(x)}, {});
  ValueId b = t.emit1(op("tanh"), {T(y)}, {});
  ValueId c = t.emit1(op("add"), {T(a), T(b)}, {});
  ValueId s = t.emit1(op("sum"), {T(c)}, {{"dims", IntList{1}}});
  t.set_outputs({l2, s, a});
  check_golden("fusion_merge.txt", t);
}
