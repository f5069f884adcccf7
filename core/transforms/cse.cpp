#include "core/transforms/cse.h"

#include <map>

#include "core/transforms/trace_util.h"

namespace thunderc {

namespace {

// Identifies what a symbol computes: operator, executor, operands, attributes.
std::string symbol_key(const BoundSymbol& sym) {
  std::string key = sym.op->name + "|" + sym.executor + "|";
  for (const Operand& in : sym.inputs) {
    switch (in.kind) {
      case OperandKind::Tensor: key += "%" + std::to_string(in.value); break;
      // The type is part of the key: 2 (int) and 2.0 (float) promote differently.
      case OperandKind::Scalar:
        key += (in.scalar.is_bool() ? "b:" : in.scalar.is_int() ? "i:" : "f:") + in.scalar.str();
        break;
      case OperandKind::None: key += "None"; break;
    }
    key += ",";
  }
  for (const auto& [name, v] : sym.attrs.items()) key += "|" + name + "=" + attr_str(v);
  return key;
}

}  // namespace

Trace cse(const Trace& trace) {
  Trace result = trace.clone_without_symbols();
  ValueMap replaced;
  std::map<std::string, const BoundSymbol*> seen;  // key -> first symbol (in `trace`) computing it
  for (const BoundSymbol& original : trace.symbols()) {
    BoundSymbol sym = original;
    substitute_operands(sym, replaced);
    if (!sym.is_region() && !sym.outputs.empty()) {
      std::string key = symbol_key(sym);
      auto it = seen.find(key);
      bool returned = false;
      for (ValueId out : sym.outputs) returned = returned || is_trace_output(trace, out);
      if (it != seen.end() && !returned) {
        for (std::size_t i = 0; i < sym.outputs.size(); ++i) replaced[sym.outputs[i]] = it->second->outputs[i];
        continue;
      }
      if (it == seen.end()) seen.emplace(key, &original);
    }
    result.append(std::move(sym));
  }
  result.constructed_by = "cse";
  return result;
}

const Transform& cse_transform() {
  static const Transform t{"cse", "identical symbols (same op, operands, attributes) are computed once",
                           [](const Trace& trace, const TransformContext&) { return cse(trace); }};
  return t;
}

}  // namespace thunderc
