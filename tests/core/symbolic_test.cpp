// generalize_traces (core/ir/symbolic.h): traces of one program at several bindings of the symbols become
// affine sizes and attributes; anything that is not one program with affine sizes is a UserError.
#include <memory>

#include "core/ir/symbolic.h"
#include "core_test_util.h"

using namespace coretest;

namespace {

// x: f32[B, 8]; t0 = relu(x); t1 = reshape(t0, [2*B, 4]); t2 = add(t1, k) with `k` a scalar.
Trace program(std::int64_t b, std::int64_t width = 8, double k = 1.0) {
  Trace t;
  ValueId x = t.add_input("x", f32({b, width}));
  ValueId t0 = t.emit1(op("relu"), {Operand::tensor(x)}, {});
  ValueId t1 = t.emit1(op("reshape"), {Operand::tensor(t0)}, {{"shape", IntList{2 * b, width / 2}}});
  ValueId t2 = t.emit1(op("add"), {Operand::tensor(t1), Operand::number(k)}, {});
  t.set_outputs({t2});
  return t;
}

std::string generalize_error(const std::vector<Trace>& traces, const std::vector<std::int64_t>& values) {
  std::vector<BoundTrace> bound;
  for (std::size_t k = 0; k < traces.size(); ++k) bound.push_back({{values[k]}, &traces[k]});
  try {
    generalize_traces({{"B", 1, 32}}, {{0, -1}}, bound);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("symbolic: bindings vary one symbol at a time, then all at their maxima") {
  CHECK(symbolic_bindings({{"B", 1, 32}}) == std::vector<std::vector<std::int64_t>>{{1}, {32}, {17}});
  CHECK(symbolic_bindings({{"B", 1, 2}}) == std::vector<std::vector<std::int64_t>>{{1}, {2}});
  CHECK(symbolic_bindings({{"B", 1, 4}, {"T", 2, 6}}) ==
        std::vector<std::vector<std::int64_t>>{{1, 2}, {4, 2}, {3, 2}, {1, 6}, {1, 4}, {4, 6}});
}

TEST_CASE("symbolic: affine expressions") {
  Affine f{3, {2, 0}};
  CHECK(f.eval({5, 7}) == 13);
  CHECK(f.c_expr({"s_B", "s_T"}) == "(3LL + 2LL * s_B)");
  CHECK(Affine{64, {0}}.c_expr({"s_B"}) == "64LL");
}

TEST_CASE("symbolic: dimensions and integer attributes are solved as c + a*B") {
  std::vector<Trace> traces{program(1), program(32), program(17)};
  std::vector<BoundTrace> bound{{{1}, &traces[0]}, {{32}, &traces[1]}, {{17}, &traces[2]}};
  SymbolicTrace st = generalize_traces({{"B", 1, 32}}, {{0, -1}}, bound);
  CHECK(st.max_trace == 1);
  REQUIRE(st.source.size() == 1);
  CHECK(st.source[0] == std::make_pair<std::size_t, std::size_t>(0, 0));
  const Trace& t = traces[1];
  ValueId out = t.outputs()[0];
  CHECK(st.dim(t, out, 0).c == 0);
  CHECK(st.dim(t, out, 0).a == std::vector<std::int64_t>{2});
  CHECK(st.dim(t, out, 1).is_const());
  CHECK(st.dim(t, out, 1).c == 4);
  REQUIRE(st.attr_ints.count(1) == 1);  // the reshape's shape [2*B, 4]
  CHECK(st.attr_ints.count(0) == 0);
  CHECK(st.attr_ints.at(1)[2].a == std::vector<std::int64_t>{2});
}

TEST_CASE("symbolic: what varies otherwise is named") {
  // A number computed from a size.
  CHECK(contains(generalize_error({program(1, 8, 1.0), program(32, 8, 2.0), program(17)}, {1, 32, 17}),
                 "the operands of operation 3 (add"));
  // A size that is not affine: B*B.
  auto square = [](std::int64_t b) {
    Trace t;
    ValueId x = t.add_input("x", f32({b * b, 8}));
    t.set_outputs({t.emit1(op("relu"), {Operand::tensor(x)}, {})});
    return t;
  };
  std::string msg = generalize_error({square(1), square(32), square(17)}, {1, 32, 17});
  CHECK(contains(msg, "dimension 0 of input 'x' is 1 at B=1, 1024 at B=32, 289 at B=17"));
  CHECK(contains(msg, "not of the form c + a*B"));
  // Different programs.
  Trace shorter;
  ValueId x = shorter.add_input("x", f32({32, 8}));
  shorter.set_outputs({shorter.emit1(op("relu"), {Operand::tensor(x)}, {})});
  CHECK(contains(generalize_error({program(1), shorter, program(17)}, {1, 32, 17}), "3 vs 1 operations"));
}
