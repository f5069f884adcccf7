// `remat`: rematerialization. Recomputes cheap elementwise values next to readers far from them instead of
// keeping them alive (in a buffer) across the symbols in between.
//
// A top-level, non-region, single-output elementwise symbol S that the trace does not return is copied
// (same operator, operands, attributes and executor; fresh output name) right before a reader R when
//  * R comes more than kRematDistance symbols after the previous reader of S's value (or after S), and
//  * every tensor S reads is an input, a constant, or a value read again by R or a later symbol, so the
//    copy keeps nothing alive longer than it already lives (conservative: memory never grows).
// R and every later reader then read the copy. Nothing else changes; S itself stays (dce drops it when no
// reader is left). Runs after claiming (the copy keeps S's executor). Regions are neither copied nor split
// (their readers are handled like any other reader).
//
// After remat(t): no value computed by such an S is read after a gap of more than kRematDistance symbols
// when a copy was allowed; the trace computes the same function.
#pragma once

#include <cstddef>

#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

inline constexpr std::size_t kRematDistance = 8;

Trace remat(const Trace& trace);

// name "remat"; runs remat (needs no context).
const Transform& remat_transform();

}  // namespace thunderc
