// Native code for symbolic variants (--cache "symbolic values" on the cpp and blas executors).
//
// The loop and BLAS generators compute every size, stride and offset at compile time and print them as
// integer literals. Rather than teaching each of them to print expressions, a symbolic variant emits each
// symbol once per sample binding of the symbols (core/ir/symbolic.h: codegen_bindings; the traces are the
// same program, value for value) and generalize_code merges the texts, the way generalize_traces merges
// the traces: every token must be the same in every sample, except integer literals, which must be
// polynomials in the symbols with integer coefficients, of degree 2 or less in each (B*T*8 as a loop
// bound, T*T*64 as a stride; solved on a sub-grid and checked on every sample), and become that expression
// over the variables the variant function reads from its inputs. So the code is exactly what the generator prints for fixed
// shapes, with sizes read at run time, and it is valid for every binding in the range.
//
// Rules, so that the merged text stays valid C++ and means the same thing at every size:
//  * Comments may differ; the sample at the maxima gives them.
//  * A literal right after the marker comment kAtMax ("/*at-max*/") is an upper bound, not a size (e.g. an
//    offset into scratch space planned at the maxima): the sample at the maxima gives it.
//  * A line that starts with `static` and gets an expression loses `static` (a static local would keep
//    the first call's sizes).
//  * In a preprocessor line (#pragma) a varying literal is allowed only inside an OpenMP `if(...)` clause.
//  * Anything else that differs (an identifier, an operator, a string, a floating-point literal such as
//    1/N, the number of lines) is a UserError naming the operation, the line and the values.
// Generated sources are compiled with -Werror=vla, so a size that reaches an array bound fails loudly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/symbolic.h"

namespace thunderc {

inline constexpr const char* kAtMax = "/*at-max*/";

struct CodeSample {
  std::vector<std::int64_t> values;  // one per symbol
  std::string text;
};

// Merges `samples` (bindings as codegen_bindings gives them: a grid) into one text. `vars`: the C++ variable of each symbol; `max_sample`:
// the sample with every symbol at its maximum; `what`: the operation, for messages ("operation 3 (linear)").
std::string generalize_code(const std::vector<SymbolRange>& symbols, const std::vector<std::string>& vars,
                            const std::vector<CodeSample>& samples, std::size_t max_sample, const std::string& what);

}  // namespace thunderc
