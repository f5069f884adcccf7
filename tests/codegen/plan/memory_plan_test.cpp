// plan_memory: the properties its header promises, checked against lifetimes computed here independently.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <random>

#include "codegen/memory_plan.h"
#include "core/ir/error.h"
#include "core/ir/verifier.h"

using namespace thunderc;

namespace {

TensorType f32(Shape s) { return TensorType{DType::Float32, std::move(s), Device::cpu()}; }

// Symbol index that defines each intermediate, and the last symbol index that reads it (or past the end
// for values returned), following aliases to the value that holds the bytes.
struct Lifetimes {
  std::map<ValueId, std::size_t> def, last;
};

Lifetimes lifetimes(const Trace& t, const VariantMemoryPlan& plan) {
  auto holder = [&](ValueId v) {
    const BufferPlan& b = plan.buffers.at(v);
    return b.storage == Storage::Alias ? b.alias_of : v;
  };
  Lifetimes l;
  for (std::size_t i = 0; i < t.symbols().size(); ++i) {
    for (ValueId o : t.symbols()[i].outputs) l.def.emplace(o, i), l.last[holder(o)] = std::max(l.last[holder(o)], i);
    for (const Operand& in : t.symbols()[i].inputs)
      if (in.is_tensor()) l.last[holder(in.value)] = std::max(l.last[holder(in.value)], i);
  }
  for (ValueId o : t.outputs()) l.last[holder(o)] = t.symbols().size();
  return l;
}

// Every pair of workspace buffers whose lifetimes overlap occupies disjoint bytes, except an output that took
// over its symbol's dying input (`shared`: output -> input).
void check_no_overlap(const Trace& t, const VariantMemoryPlan& plan, const std::map<ValueId, ValueId>& shared = {}) {
  Lifetimes l = lifetimes(t, plan);
  std::vector<ValueId> ws;
  for (const auto& [v, b] : plan.buffers)
    if (b.storage == Storage::Workspace) ws.push_back(v);
  for (std::size_t i = 0; i < ws.size(); ++i)
    for (std::size_t j = i + 1; j < ws.size(); ++j) {
      ValueId a = ws[i], b = ws[j];
      auto pair = [&](ValueId out, ValueId in) { auto it = shared.find(out); return it != shared.end() && it->second == in; };
      if (pair(a, b) || pair(b, a)) continue;
      bool live_together = l.def.at(a) <= l.last.at(b) && l.def.at(b) <= l.last.at(a);
      if (!live_together) continue;
      std::size_t a0 = plan.buffers.at(a).offset, a1 = a0 + t.type(a).nbytes();
      std::size_t b0 = plan.buffers.at(b).offset, b1 = b0 + t.type(b).nbytes();
      INFO(t.value(a).name << " [" << a0 << ", " << a1 << ") and " << t.value(b).name << " [" << b0 << ", " << b1 << ")");
      CHECK((a1 <= b0 || b1 <= a0));
    }
  for (const auto& [v, b] : plan.buffers) {
    if (b.storage != Storage::Workspace) continue;
    CHECK(b.offset % kBufferAlignment == 0);
    CHECK(b.offset + t.type(v).nbytes() <= plan.workspace_bytes);
  }
}

}  // namespace

TEST_CASE("a chain reuses buffers, aliases share, outputs are written in place") {
  Trace t;
  ValueId x = t.add_input("x", f32({64, 64}));
  ValueId a = t.emit1(op("relu"), {Operand::tensor(x)}, {});
  ValueId b = t.emit1(op("exp"), {Operand::tensor(a)}, {});
  ValueId c = t.emit1(op("neg"), {Operand::tensor(b)}, {});
  ValueId r = t.emit1(op("reshape"), {Operand::tensor(c)}, {{"shape", IntList{4096}}});
  ValueId d = t.emit1(op("sigmoid"), {Operand::tensor(r)}, {});
  ValueId e = t.emit1(op("add"), {Operand::tensor(d), Operand::number(1.0)}, {});
  t.set_outputs({e, x});
  verify_trace(t, "test");
  VariantMemoryPlan plan = plan_memory(t, {});
  check_no_overlap(t, plan);
  // Four 16 KiB intermediates, at most two alive at once.
  CHECK(plan.workspace_bytes == 2 * 64 * 64 * 4);
  CHECK(plan.buffers.at(r).storage == Storage::Alias);
  CHECK(plan.buffers.at(r).alias_of == c);
  CHECK(plan.buffers.at(e).storage == Storage::Output);
  CHECK(plan.buffers.at(e).index == 0);
  CHECK(plan.buffers.at(x).storage == Storage::Input);
  REQUIRE(plan.output_copies.size() == 1);  // returning the input itself is a copy
  CHECK(plan.output_copies[0].output == 1);
  CHECK(plan.output_copies[0].value == x);
}

TEST_CASE("random DAGs: no two live buffers overlap, and reuse happens") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 50; ++round) {
    Trace t;
    std::vector<ValueId> pool = {t.add_input("x", f32({8, 16}))};
    std::size_t total = 0;
    const int n = 5 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      ValueId a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
      ValueId v = rng() % 2 ? t.emit1(op("add"), {Operand::tensor(a), Operand::tensor(b)}, {})
                            : t.emit1(op("tanh"), {Operand::tensor(a)}, {});
      pool.push_back(v);
      total += 512;
      if (pool.size() > 6) pool.erase(pool.begin() + 1 + static_cast<long>(rng() % (pool.size() - 1)));  // drop one: it dies
    }
    t.set_outputs({pool.back()});
    verify_trace(t, "test");
    // Scratch for every other symbol, which must not overlap anything live during that symbol either.
    VariantMemoryPlan plan = plan_memory(t, {}, [](const Trace&, const BoundSymbol& s) -> std::size_t {
      return s.op->name == "tanh" ? 100 : 0;
    });
    CAPTURE(round);
    check_no_overlap(t, plan);
    CHECK(plan.workspace_bytes < total + 64 * t.symbols().size());
    Lifetimes l = lifetimes(t, plan);
    for (const auto& [index, offset] : plan.scratch) {
      for (const auto& [v, b] : plan.buffers) {
        if (b.storage != Storage::Workspace || l.def.at(v) > index || l.last.at(v) < index) continue;
        bool apart = offset + 100 <= b.offset || b.offset + t.type(v).nbytes() <= offset;
        CHECK(apart);
      }
    }
  }
}

TEST_CASE("an output takes over the input its backend names, only where that input dies and is a workspace buffer") {
  // Each symbol's hook names one input: c names a (but c is returned), d names b (read again later), e names
  // the model input x, f names e (which dies there): only f takes its input's buffer.
  Trace t;
  ValueId x = t.add_input("x", f32({32, 32}));
  ValueId a = t.emit1(op("relu"), {Operand::tensor(x)}, {});
  ValueId b = t.emit1(op("exp"), {Operand::tensor(x)}, {});
  ValueId c = t.emit1(op("add"), {Operand::tensor(a), Operand::tensor(b)}, {});  // a dies here, c is returned
  ValueId d = t.emit1(op("sub"), {Operand::tensor(b), Operand::tensor(c)}, {});  // names b, read again below
  ValueId e = t.emit1(op("mul"), {Operand::tensor(d), Operand::tensor(b)}, {});  // names x: an input
  ValueId f = t.emit1(op("neg"), {Operand::tensor(e)}, {});                      // names e: dies here
  ValueId g = t.emit1(op("tanh"), {Operand::tensor(f)}, {});
  t.set_outputs({g, c});
  verify_trace(t, "test");
  std::map<ValueId, ValueId> named = {{c, a}, {d, b}, {e, x}, {f, e}};
  VariantMemoryPlan plan = plan_memory(t, {}, nullptr, [&](const Trace&, const BoundSymbol& s) -> std::optional<ValueId> {
    auto it = named.find(s.outputs[0]);
    return it == named.end() ? std::nullopt : std::optional<ValueId>(it->second);
  });
  // c is returned: written into the caller's buffer, never over a.
  CHECK(plan.buffers.at(c).storage == Storage::Output);
  CHECK(plan.buffers.at(d).offset != plan.buffers.at(b).offset);  // b is read by e after d
  CHECK(plan.buffers.at(f).offset == plan.buffers.at(e).offset);  // e dies at f: taken over
  CHECK(plan.buffers.at(f).storage == Storage::Workspace);
  check_no_overlap(t, plan, {{f, e}});
  // f lives on past e's last use: g reads it, so nothing else may have been placed there in between.
  Lifetimes l = lifetimes(t, plan);
  CHECK(l.last.at(f) > l.last.at(e));

  // Without the hook every output has a buffer of its own.
  VariantMemoryPlan plain = plan_memory(t, {});
  CHECK(plain.buffers.at(f).offset != plain.buffers.at(e).offset);
  check_no_overlap(t, plain);
}

// Issue #12, item 3: sizes are overflow-checked and limited to 2^40 bytes (kMaxTensorBytes): an absurd
// intermediate or workspace is a UserError, never a wrapped-around or 100-TB plan.
TEST_CASE("absurd sizes are refused, not planned") {
  auto plan_error = [](const Trace& t, const ScratchFn& scratch = nullptr) {
    try {
      plan_memory(t, {}, scratch);
    } catch (const UserError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("<other exception: ") + e.what() + ">";
    }
    return std::string("<no error>");
  };
  {  // 2^38 x 8 floats: 2^43 bytes
    Trace t;
    ValueId x = t.add_input("x", f32({std::int64_t{1} << 38, 8}));
    ValueId a = t.emit1(op("relu"), {Operand::tensor(x)}, {});
    ValueId b = t.emit1(op("exp"), {Operand::tensor(a)}, {});
    t.set_outputs({b});
    const std::string msg = plan_error(t);
    CAPTURE(msg);
    CHECK(msg.find("refuses tensors above") != std::string::npos);
  }
  {  // two live buffers of 2^39 bytes each plus a third: a workspace above 2^40
    Trace t;
    ValueId x = t.add_input("x", f32({std::int64_t{1} << 37}));
    ValueId a = t.emit1(op("relu"), {Operand::tensor(x)}, {});
    ValueId b = t.emit1(op("exp"), {Operand::tensor(x)}, {});
    ValueId c = t.emit1(op("neg"), {Operand::tensor(x)}, {});
    ValueId d = t.emit1(op("add"), {Operand::tensor(a), Operand::tensor(b)}, {});
    ValueId e = t.emit1(op("add"), {Operand::tensor(d), Operand::tensor(c)}, {});
    t.set_outputs({e});
    const std::string msg = plan_error(t);
    CAPTURE(msg);
    CHECK(msg.find("refuses workspaces above") != std::string::npos);
  }
  {  // a scratch size near SIZE_MAX must not wrap around when aligned
    Trace t;
    ValueId x = t.add_input("x", f32({4}));
    ValueId a = t.emit1(op("relu"), {Operand::tensor(x)}, {});
    ValueId b = t.emit1(op("exp"), {Operand::tensor(a)}, {});
    t.set_outputs({b});
    const std::string msg = plan_error(t, [](const Trace&, const BoundSymbol&) { return ~std::size_t{0} - 3; });
    CAPTURE(msg);
    CHECK(msg.find("scratch space") != std::string::npos);
  }
}
