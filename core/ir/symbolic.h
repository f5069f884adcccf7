// Symbolic dimensions (--cache "symbolic values"): one variant whose sizes are affine in a few symbols
// (c + sum a_s * S, integer coefficients), known only at run time. The frontend traces the model at several
// bindings of the symbols; generalize_traces() checks the traces are the same program and solves, for every
// tensor dimension and every integer attribute element, its affine expression. Codegen then emits one
// function that reads the symbols from the inputs (docs/manifest.md: "dims").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

struct SymbolRange {
  std::string name;
  std::int64_t lo = 0, hi = 0;  // inclusive
};

// c + sum_s a[s] * symbol_s (a parallel to the symbols; empty means all zero).
struct Affine {
  std::int64_t c = 0;
  std::vector<std::int64_t> a;
  bool is_const() const;
  std::int64_t eval(const std::vector<std::int64_t>& values) const;
  // C++ expression over variables `vars` (e.g. "s_B"): "64LL" or "(0LL + 16LL * s_B)".
  std::string c_expr(const std::vector<std::string>& vars) const;
};

// One traced binding: the symbols' values and the trace the pipeline produced for them.
struct BoundTrace {
  std::vector<std::int64_t> values;
  const Trace* trace = nullptr;
};

struct SymbolicTrace {
  std::vector<SymbolRange> symbols;
  // Where each symbol is read at run time: (input position, dimension), its first occurrence.
  std::vector<std::pair<std::size_t, std::size_t>> source;
  // Per input, per dimension: the symbol's index, or -1 for a fixed size.
  std::vector<std::vector<int>> input_symbols;
  // Every value with a symbolic dimension: its dimensions (values absent here have the static shape).
  std::map<ValueId, std::vector<Affine>> shapes;
  // Per top-level symbol index whose encoded integer attributes (core/ir/attr_codec.h) depend on a symbol:
  // one expression per element of the int stream.
  std::map<std::size_t, std::vector<Affine>> attr_ints;
  // Index into the traced bindings of the one where every symbol is at its maximum (the trace codegen
  // uses; its sizes are the largest, so its memory plan holds every binding).
  std::size_t max_trace = 0;
  // The traces native code generation generalizes from (codegen/symbolic_code.h): the bindings of
  // codegen_bindings, each with its trace (the same program as the max trace, value for value).
  // Empty when every symbol runs on the torch executor, which reads sizes through attr_ints instead.
  std::vector<std::vector<std::int64_t>> sample_values;
  std::vector<std::shared_ptr<const Trace>> sample_traces;

  // Dimension `d` of value `v` in `trace` (the max trace) as an affine expression.
  Affine dim(const Trace& trace, ValueId v, std::size_t d) const;
};

// Bindings to trace: all symbols at lo; then per symbol (others at lo) hi and a value in between; then,
// with several symbols, all at hi. Distinct, in this order.
std::vector<std::vector<std::int64_t>> symbolic_bindings(const std::vector<SymbolRange>& symbols);

// The bindings native code is generalized from (codegen/symbolic_code.h): a grid, per symbol its (raised)
// minimum, its maximum and up to two values in between (4 values with one or two symbols, 3 with more),
// so that sizes of the code that are polynomials of degree 2 in each symbol (a stride T*T, a loop bound
// B*T*8) can be solved and checked. Lower bounds are raised until every symbolic dimension in `dims` (the
// solved shapes, e.g. B and T - 1) is at least 2, while each range keeps two values: a size of 1 lets code
// generators merge or drop a loop, which would make the code at 1 a different program; code generalized
// from sizes >= 2 is valid at 1.
std::vector<std::vector<std::int64_t>> codegen_bindings(const std::vector<SymbolRange>& symbols,
                                                        const std::vector<Affine>& dims);
// Every symbolic dimension of `st` (shapes that are not constant), for codegen_bindings.
std::vector<Affine> symbolic_dims(const SymbolicTrace& st);

// Solves vals[k] = c + sum_s a_s * bindings[k][s] with integer coefficients from the bindings that differ
// from bindings[0] in one symbol only, then verifies it on every binding. False (and why) otherwise.
bool solve_affine(const std::vector<SymbolRange>& symbols, const std::vector<std::vector<std::int64_t>>& bindings,
                  const std::vector<std::int64_t>& vals, Affine& out, std::string& why);

// Checks the traces are structurally identical (ops, operand kinds and values, scalars, non-integer
// attributes, constants' bytes, fused regions and their members) and that every tensor dimension and integer attribute element is affine
// in the symbols, with non-negative coefficients for dimensions. UserError naming the operation and what
// varies otherwise. `input_symbols` as in SymbolicTrace.
SymbolicTrace generalize_traces(const std::vector<SymbolRange>& symbols,
                                const std::vector<std::vector<int>>& input_symbols,
                                const std::vector<BoundTrace>& traces);

}  // namespace thunderc
