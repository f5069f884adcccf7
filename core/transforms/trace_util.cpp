#include "core/transforms/trace_util.h"

#include <algorithm>

namespace thunderc {

ValueId resolve_value(const ValueMap& map, ValueId v) {
  for (auto it = map.find(v); it != map.end(); it = map.find(v)) v = it->second;
  return v;
}

void substitute_operands(BoundSymbol& sym, const ValueMap& map) {
  if (map.empty()) return;
  for (Operand& in : sym.inputs)
    if (in.is_tensor()) in.value = resolve_value(map, in.value);
  for (BoundSymbol& sub : sym.subsymbols) substitute_operands(sub, map);
}

std::vector<ValueId> tensor_operands(const BoundSymbol& sym) {
  std::vector<ValueId> out;
  for (const Operand& in : sym.inputs)
    if (in.is_tensor()) out.push_back(in.value);
  return out;
}

bool is_trace_output(const Trace& trace, ValueId v) {
  return std::find(trace.outputs().begin(), trace.outputs().end(), v) != trace.outputs().end();
}

std::optional<UseDef> use_def(const Trace& trace) {
  UseDef u;
  const auto& syms = trace.symbols();
  for (std::size_t i = 0; i < syms.size(); ++i) {
    if (syms[i].is_region()) return std::nullopt;
    for (const Operand& in : syms[i].inputs)
      if (in.is_tensor()) ++u.readers[in.value];
    for (ValueId v : syms[i].outputs) u.producer[v] = i;
  }
  for (ValueId v : trace.outputs()) ++u.readers[v];
  return u;
}

}  // namespace thunderc
