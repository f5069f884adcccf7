// Value ranges: what a trace's values can hold when its floating-point inputs are finite and small.
//
// value_ranges(trace, T) assumes every floating-point model input is finite with |x| <= T and gives, per
// value, an interval [lo, hi]: finite ends mean every element is finite and within them (so no NaN and no
// infinity can appear there); infinite ends mean nothing is known. The rules (value_bounds.cpp) follow each
// operator's mathematics conservatively: relu maps [lo, hi] to [max(lo, 0), max(hi, 0)], sigmoid to [0, 1],
// a sum of n terms to [n lo, n hi], a convolution with constant weights to, per output channel,
// [P lo + N hi + b, P hi + N lo + b] (P and N the sums of its positive and negative weights), ... A float
// value whose range comes within a factor 256 of its dtype's largest finite number is unknown (it could
// overflow), and so is the result of any operator without a rule (division by a tensor, log, sqrt, ...).
// The factor also covers rounding, which can carry a computed value slightly past its exact range.
//
// What it is for: oneDNN's activation post-ops (relu, clip, logistic, swish, hardswish) compute with
// max/min instructions and a clamped exp, so a NaN reaching one comes out as a number, where PyTorch keeps
// NaN (and its Winograd convolutions turn an inf input into NaN). A *bounded variant* fuses them anyway,
// where the value they read is NaN-free under bounded inputs (nan_free_values, at T = 1, which the fusion
// pass asks), and the runtime sends a call to it only when the inputs are finite and within
// bounded_input_limit (the manifest's `finite_max_abs` guard); every other call goes to the exact variant
// compiled beside it. See docs/transforms.md ("Bounded variants").
#pragma once

#include <functional>
#include <optional>
#include <vector>
#include <string>

#include "core/ir/trace.h"

namespace thunderc {

struct ValueRange {
  double lo, hi;
  bool finite() const;
};

// Per ValueId (indexed by it, trace.num_values() entries); regions are walked through their subsymbols,
// so values inside a region have ranges too.
std::vector<ValueRange> value_ranges(const Trace& trace, double input_bound);

// Whether a value is NaN-free (finite) when the inputs are finite with |x| <= 1. Holds its own copy of
// the bounds; valid for `trace` and for traces with the same values (fusion's result).
std::function<bool(ValueId)> nan_free_values(const Trace& trace);

// The values a bounded variant needs finite in an `onednn` region: the input of the activation it applies
// after its convolution (and residual add), whose post-op would hide a NaN, and the convolution's output when
// the region is marked winograd (Winograd's transforms turn inf into NaN); empty for any other symbol.
std::vector<ValueId> bounded_values(const BoundSymbol& sym);

// The largest power of two T in [1, 2^64] such that every such value (bounded_values) is finite when the
// inputs are finite with |x| <= T; 0 when the trace has none or even T = 1 does not do.
double bounded_input_limit(const Trace& trace);

// What a bounded variant's trace runs that its exact variant cannot, for messages: "oneDNN: 17 fused activations,
// 4 convolutions that may use Winograd" (each part only when non-zero; winograd_pays decides at run time).
std::string bounded_variant_summary(const Trace& trace);

}  // namespace thunderc
