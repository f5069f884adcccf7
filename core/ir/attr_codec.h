// Flattens an operation's attributes into plain arrays (ints, floats, strings) for generated code, and
// back. The order is the operator's declared attribute order, so both sides need only the OpDef.
// Per attribute, the int stream holds a tag then its payload:
//   None [0] | bool [1, b] | int [2, v] | float [3] (+ one double) | str [4, index into strings]
//   | int[] [5, n, v0 .. vn-1] | dtype [6, DType code]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/attrs.h"
#include "core/ir/op.h"

namespace thunderc {

struct EncodedAttrs {
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
};

EncodedAttrs encode_attrs(const OpDef& op, const Attrs& attrs);
// Throws InternalError when the arrays do not hold op's attributes (generated code and shim disagree).
Attrs decode_attrs(const OpDef& op, const std::int64_t* ints, std::size_t num_ints, const double* floats,
                   std::size_t num_floats, const char* const* strings, std::size_t num_strings);

}  // namespace thunderc
