// A small reference interpreter for constant folding: evaluates one bound symbol whose tensor operands are
// all constants, on the host, without LibTorch.
//
// Supported: every elementwise operator of the catalog (unary math and activations, binary arithmetic,
// comparisons, logical ops, where, masked_fill, to_dtype), the data-movement operators (reshape, permute,
// expand, slice, select, cat) and the reductions sum, mean, amax. Arithmetic is done in double (floating
// results) or wrapping int64 (integer results) with operands first rounded to the computation's dtype,
// then rounded to the result dtype, so + - * / sqrt agree with PyTorch bit for bit and transcendental
// functions within an ulp. Data movement works for every dtype; arithmetic is not done for float16 and
// bfloat16 (evaluate_symbol returns nothing), nor where PyTorch would raise (integer division by zero,
// negative integer powers, amax of nothing) or the result is undefined (NaN to integer).
#pragma once

#include <memory>
#include <optional>

#include "core/ir/trace.h"

namespace thunderc {

// True when evaluate_symbol knows the symbol's operator (it may still decline for the dtypes involved).
bool can_evaluate(const BoundSymbol& sym);

// The bytes of the single output of `sym`, computed from the constant data of its tensor operands
// (which must all be constants of `trace`); nothing when it cannot be evaluated.
std::optional<std::shared_ptr<const ConstantData>> evaluate_symbol(const Trace& trace, const BoundSymbol& sym);

}  // namespace thunderc
