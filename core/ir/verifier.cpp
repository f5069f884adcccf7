#include "core/ir/verifier.h"

#include <set>

#include "core/ir/error.h"
#include "core/ir/printer.h"

namespace thunderc {

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

  for (const BoundSymbol& sym : trace.symbols()) {
    if (!sym.op) fail("a bound symbol has no operator");
    bool ids_ok = true;  // symbol_str would throw on an unknown value id
    for (const Operand& in : sym.inputs) ids_ok = ids_ok && (!in.is_tensor() || in.value < trace.num_values());
    for (ValueId out : sym.outputs) ids_ok = ids_ok && out < trace.num_values();
    std::string where = ids_ok ? "'" + symbol_str(trace, sym) + "'" : "a '" + sym.op->name + "' symbol";
    for (const Operand& in : sym.inputs) {
      if (in.kind != OperandKind::Tensor) continue;
      if (in.value >= trace.num_values() || !defined[in.value])
        fail(where + " uses a value before it is defined");
    }
    Attrs attrs = sym.attrs;
    std::vector<TensorType> expected;
    try {
      expected = Trace::infer(trace, *sym.op, sym.inputs, attrs);
    } catch (const std::exception& e) {
      fail(where + " does not type-check: " + e.what());
    }
    if (!(attrs == sym.attrs)) fail(where + " has attributes that differ from its declaration's order or defaults");
    if (expected.size() != sym.outputs.size())
      fail(where + " has " + std::to_string(sym.outputs.size()) + " outputs, its meta function gives " +
           std::to_string(expected.size()));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      define(sym.outputs[i], where);
      const Value& v = trace.value(sym.outputs[i]);
      if (v.origin != ValueOrigin::Intermediate) fail(where + " defines non-intermediate '" + v.name + "'");
      if (v.type != expected[i])
        fail(where + " output '" + v.name + "' has type " + v.type.str() + ", meta gives " + expected[i].str());
    }
  }
  for (ValueId out : trace.outputs())
    if (out >= trace.num_values() || !defined[out]) fail("an output is not defined");
}

}  // namespace thunderc
