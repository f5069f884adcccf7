#include "core/transforms/remat.h"

#include <algorithm>
#include <map>

#include "core/transforms/trace_util.h"

namespace thunderc {

Trace remat(const Trace& trace) {
  const auto& symbols = trace.symbols();
  const std::size_t n = symbols.size();
  // Readers of every value, by symbol index (sorted, unique).
  std::vector<std::vector<std::size_t>> readers(trace.num_values());
  for (std::size_t i = 0; i < n; ++i)
    for (ValueId v : tensor_operands(symbols[i]))
      if (readers[v].empty() || readers[v].back() != i) readers[v].push_back(i);
  auto read_at_or_after = [&](ValueId v, std::size_t pos) {
    const auto& r = readers[v];
    return std::lower_bound(r.begin(), r.end(), pos) != r.end();
  };

  // copies_before[r] = symbols (by index) to copy right before symbol r, in trace order.
  std::map<std::size_t, std::vector<std::size_t>> copies_before;
  for (std::size_t i = 0; i < n; ++i) {
    const BoundSymbol& s = symbols[i];
    if (s.is_region() || s.op->category != OpCategory::Elementwise || s.outputs.size() != 1) continue;
    ValueId out = s.outputs[0];
    if (is_trace_output(trace, out)) continue;
    std::size_t last = i;
    for (std::size_t r : readers[out]) {
      if (r - last > kRematDistance) {
        bool free = true;
        for (ValueId v : tensor_operands(s)) {
          ValueOrigin o = trace.value(v).origin;
          free = free && (o != ValueOrigin::Intermediate || read_at_or_after(v, r));
        }
        if (free) copies_before[r].push_back(i);
      }
      last = r;
    }
  }

  Trace result = trace.clone_without_symbols();
  ValueMap current;  // original value -> the copy readers from here on read
  for (std::size_t i = 0; i < n; ++i) {
    auto it = copies_before.find(i);
    if (it != copies_before.end()) {
      for (std::size_t j : it->second) {
        BoundSymbol copy = symbols[j];
        substitute_operands(copy, current);
        ValueId fresh = result.new_intermediate(trace.type(copy.outputs[0]));
        current[copy.outputs[0]] = fresh;
        copy.outputs[0] = fresh;
        result.append(std::move(copy));
      }
    }
    BoundSymbol sym = symbols[i];
    substitute_operands(sym, current);
    result.append(std::move(sym));
  }
  result.constructed_by = "remat";
  return result;
}

const Transform& remat_transform() {
  static const Transform t{
      "remat",
      "cheap elementwise values are recomputed next to far readers when that keeps nothing else alive longer",
      [](const Trace& trace, const TransformContext&) { return remat(trace); }};
  return t;
}

}  // namespace thunderc
