#include "core/transforms/dce.h"

#include "core/transforms/trace_util.h"

namespace thunderc {

Trace dce(const Trace& trace) {
  std::vector<bool> live(trace.num_values(), false);
  for (ValueId out : trace.outputs()) live[out] = true;
  const auto& symbols = trace.symbols();
  std::vector<bool> keep(symbols.size(), false);
  for (std::size_t i = symbols.size(); i-- > 0;) {
    const BoundSymbol& sym = symbols[i];
    for (ValueId out : sym.outputs) keep[i] = keep[i] || live[out];
    if (!keep[i]) continue;
    for (ValueId in : tensor_operands(sym)) live[in] = true;
  }
  Trace result = trace.clone_without_symbols();
  for (std::size_t i = 0; i < symbols.size(); ++i)
    if (keep[i]) result.append(symbols[i]);
  for (ValueId c : trace.constants())
    if (!live[c]) result.remove_constant(c);
  result.constructed_by = "dce";
  return result;
}

const Transform& dce_transform() {
  static const Transform t{"dce", "symbols whose outputs are unused are removed; unused constants dropped",
                           [](const Trace& trace, const TransformContext&) { return dce(trace); }};
  return t;
}

}  // namespace thunderc
