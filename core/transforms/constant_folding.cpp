#include "core/transforms/constant_folding.h"

#include <set>

#include "core/transforms/reference_eval.h"
#include "core/transforms/trace_util.h"

namespace thunderc {

namespace {

bool worth_folding(const Trace& trace, const BoundSymbol& sym) {
  std::size_t out_bytes = trace.type(sym.outputs[0]).nbytes();
  std::size_t in_bytes = 0;
  for (ValueId v : tensor_operands(sym)) in_bytes += trace.type(v).nbytes();
  // An expand is a free view for the executors; folded, it would embed the copies (and make the program
  // differ between batch sizes, which a symbolic variant cannot serve).
  if (sym.op->name == "expand") return false;
  if (out_bytes <= kFoldLimitBytes) return true;
  if (sym.op->category != OpCategory::Shape) return false;
  return out_bytes <= in_bytes;
}

}  // namespace

Trace constant_folding(const Trace& trace) {
  Trace result = trace.clone_without_symbols();
  ValueMap replaced;
  std::set<ValueId> created;
  for (const BoundSymbol& original : trace.symbols()) {
    BoundSymbol sym = original;
    substitute_operands(sym, replaced);
    bool foldable = can_evaluate(sym) && sym.outputs.size() == 1 && !is_trace_output(trace, sym.outputs[0]);
    for (const Operand& in : sym.inputs)
      foldable = foldable && (!in.is_tensor() || result.value(in.value).origin == ValueOrigin::Constant);
    if (foldable && worth_folding(result, sym)) {
      if (auto data = evaluate_symbol(result, sym)) {
        ValueId out = sym.outputs[0];
        std::string name = "folded_" + result.value(out).name;
        ValueId c = result.add_constant(name, result.type(out), *data);
        replaced[out] = c;
        created.insert(c);
        continue;
      }
    }
    result.append(std::move(sym));
  }
  // Drop intermediate folded constants that only fed other folds.
  std::set<ValueId> used;
  for (const BoundSymbol& sym : result.symbols())
    for (ValueId v : tensor_operands(sym)) used.insert(v);
  for (ValueId c : created)
    if (!used.count(c) && !is_trace_output(result, c)) result.remove_constant(c);
  result.constructed_by = "constant-folding";
  return result;
}

const Transform& constant_folding_transform() {
  static const Transform t{
      "constant-folding",
      "symbols computing only from constants (small results, or data movement) become constants",
      [](const Trace& trace, const TransformContext&) { return constant_folding(trace); }};
  return t;
}

}  // namespace thunderc
