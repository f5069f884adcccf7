// Small helpers shared by the transforms in this folder (not a transform itself).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

// Old value -> the value that replaces it.
using ValueMap = std::unordered_map<ValueId, ValueId>;

// Follows `map` from `v` until a value that is not replaced.
ValueId resolve_value(const ValueMap& map, ValueId v);

// Replaces every tensor operand of `sym` (and of its subsymbols, for a region) found in `map`.
void substitute_operands(BoundSymbol& sym, const ValueMap& map);

// The tensor values `sym` reads from its scope (a region's inputs cover what its subsymbols read).
std::vector<ValueId> tensor_operands(const BoundSymbol& sym);

// True when `v` is one of the trace's outputs.
bool is_trace_output(const Trace& trace, ValueId v);

// For a trace without regions: how many times each value is read (each operand that names it, and each place
// among the trace's outputs) and the index of the symbol that produces it. nullopt when the trace has regions.
struct UseDef {
  std::map<ValueId, std::size_t> readers, producer;
};
std::optional<UseDef> use_def(const Trace& trace);

}  // namespace thunderc
