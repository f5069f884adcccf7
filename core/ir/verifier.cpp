#include "core/ir/verifier.h"

#include <cmath>

#include <algorithm>
#include <functional>
#include <set>

#include "core/ir/error.h"
#include "core/ir/printer.h"

namespace thunderc {

namespace {

// Attrs equality where a NaN float attribute equals NaN (leaky_relu(negative_slope=nan) is a valid symbol).
bool same_attrs(const Attrs& a, const Attrs& b) {
  if (a.items().size() != b.items().size()) return false;
  for (std::size_t i = 0; i < a.items().size(); ++i) {
    const auto &x = a.items()[i], &y = b.items()[i];
    if (x.first != y.first) return false;
    const double *u = std::get_if<double>(&x.second), *v = std::get_if<double>(&y.second);
    if (u && v && std::isnan(*u) && std::isnan(*v)) continue;
    if (!(x.second == y.second)) return false;
  }
  return true;
}

}  // namespace


void verify_trace(const Trace& trace, const std::string& after) {
  auto fail = [&](const std::string& what) {
    internal_error("trace after '", after, "' is invalid: ", what);
  };
  std::vector<bool> defined(trace.num_values(), false);
  auto define = [&](ValueId id, const std::string& by) {
    if (id >= trace.num_values()) fail(by + " defines unknown value id " + std::to_string(id));
    if (defined[id]) fail("value '" + trace.value(id).name + "' is defined twice (again by " + by + ")");
    defined[id] = true;
  };
  for (ValueId in : trace.inputs()) {
    if (trace.value(in).origin != ValueOrigin::Input) fail("input '" + trace.value(in).name + "' is not an input");
    define(in, "the inputs");
  }
  for (ValueId c : trace.constants()) {
    const Value& v = trace.value(c);
    if (v.origin != ValueOrigin::Constant) fail("constant '" + v.name + "' is not a constant");
    if (!v.data || v.data->bytes.size() != v.type.nbytes())
      fail("constant '" + v.name + "' does not hold " + std::to_string(v.type.nbytes()) + " bytes");
    define(c, "the constants");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < trace.num_values(); ++i)
    if (!names.insert(trace.value(static_cast<ValueId>(i)).name).second)
      fail("name '" + trace.value(static_cast<ValueId>(i)).name + "' is used twice");

  // `visible`: values this scope may read (a region sees only its inputs and its own earlier results).
  std::function<void(const BoundSymbol&, std::vector<bool>&)> check = [&](const BoundSymbol& sym,
                                                                          std::vector<bool>& visible) {
    if (!sym.op) fail("a bound symbol has no operator");
    bool ids_ok = true;  // symbol_str would throw on an unknown value id
    for (const Operand& in : sym.inputs) ids_ok = ids_ok && (!in.is_tensor() || in.value < trace.num_values());
    for (ValueId out : sym.outputs) ids_ok = ids_ok && out < trace.num_values();
    std::string where = ids_ok ? "'" + symbol_str(trace, sym) + "'" : "a '" + sym.op->name + "' symbol";
    for (const Operand& in : sym.inputs) {
      if (in.kind != OperandKind::Tensor) continue;
      if (in.value >= trace.num_values() || !visible[in.value]) fail(where + " uses a value before it is defined");
    }
    auto define_here = [&](ValueId out) {
      define(out, where);
      visible[out] = true;
      if (trace.value(out).origin != ValueOrigin::Intermediate)
        fail(where + " defines non-intermediate '" + trace.value(out).name + "'");
    };
    if (sym.is_region()) {
      if (sym.op->category != OpCategory::Fusion) fail(where + " has subsymbols but is not a fusion");
      std::vector<bool> inner(trace.num_values(), false);
      for (const Operand& in : sym.inputs) {
        if (!in.is_tensor()) fail(where + ": a region's inputs must be tensors");
        inner[in.value] = true;
      }
      for (const BoundSymbol& sub : sym.subsymbols) check(sub, inner);
      for (ValueId out : sym.outputs) {
        if (out >= trace.num_values() || !inner[out] || std::any_of(sym.inputs.begin(), sym.inputs.end(), [&](const Operand& in) { return in.value == out; }))
          fail(where + " returns a value none of its subsymbols computes");
        visible[out] = true;
      }
      return;
    }
    Attrs attrs = sym.attrs;
    std::vector<TensorType> expected;
    try {
      expected = Trace::infer(trace, *sym.op, sym.inputs, attrs);
    } catch (const std::exception& e) {
      fail(where + " does not type-check: " + e.what());
    }
    if (!same_attrs(attrs, sym.attrs)) fail(where + " has attributes that differ from its declaration's order or defaults");
    if (expected.size() != sym.outputs.size())
      fail(where + " has " + std::to_string(sym.outputs.size()) + " outputs, its meta function gives " +
           std::to_string(expected.size()));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      define_here(sym.outputs[i]);
      const Value& v = trace.value(sym.outputs[i]);
      if (v.type != expected[i])
        fail(where + " output '" + v.name + "' has type " + v.type.str() + ", meta gives " + expected[i].str());
    }
  };
  std::vector<bool> visible = defined;
  for (const BoundSymbol& sym : trace.symbols()) check(sym, visible);
  defined = visible;
  for (ValueId out : trace.outputs())
    if (out >= trace.num_values() || !defined[out]) fail("an output is not defined");
}

}  // namespace thunderc
