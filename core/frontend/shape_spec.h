// Example input shapes from the command line, trtexec style. Each --shapes flag is one specialization:
//   --shapes x=1x3x224x224,mask=1x64     named inputs
//   --shapes 1x3x224x224                 the single input of a one-input model
//   --shapes ids=1x16:int64              an optional dtype after ':' (default: the recorded one, else float32)
// A scalar (0-dim) input is written "x=scalar" (or "x=scalar:int64"); an empty shape ("x=") is refused
// as a likely mistake.
// Sizes are checked with overflow-checked arithmetic: a tensor may hold at most kMaxTensorBytes bytes.
//   --shapes x=Bx64 --dim B=1:32         a dimension may be a symbol (an identifier), whose inclusive range
//                                        --dim gives; symbolic shapes need --cache "symbolic values"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/types.h"

namespace thunderc {

// The largest tensor (and, in codegen/memory_plan, workspace) thunderc compiles: 2^40 bytes (1 TiB). Larger
// sizes are refused at compile time with a message naming the tensor, never wrapped around or allocated.
inline constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 40;

// The bytes of a tensor with `shape` and `element_size`-byte elements, or nullopt when a dimension is
// negative or the product overflows 64 bits.
std::optional<std::uint64_t> checked_tensor_bytes(const Shape& shape, std::size_t element_size);
// "1 TiB (2^40 bytes)": the limit, for messages.
std::string max_tensor_bytes_text();
// "6.4e+12 bytes" style text for a size (or "more than 2^64 bytes" for nullopt).
std::string bytes_text(std::optional<std::uint64_t> bytes);

struct InputShape {
  std::string name;  // empty: positional (only valid when the model has one input)
  Shape shape;
  std::optional<DType> dtype;
  // Parallel to `shape` when any dimension is a symbol ("B"): the symbol's name, or empty for a number
  // (whose value is in `shape`; a symbol's entry in `shape` is 0 until bind_symbols()). Empty: all numbers.
  std::vector<std::string> symbols;
};
using Specialization = std::vector<InputShape>;

// One --dim NAME=LO:HI: the inclusive range of a symbolic dimension.
struct DimRange {
  std::string name;
  std::int64_t lo = 0, hi = 0;
};

// Parses one --shapes value; UserError quoting the text on malformed input.
Specialization parse_shapes_flag(const std::string& text);
std::string specialization_str(const Specialization& spec);  // "x=1x64:float32,mask=1x64:bool"

// Parses one --dim value ("B=1:32"); UserError on malformed input, LO < 1 or HI <= LO.
DimRange parse_dim_flag(const std::string& text);

// The shape --shapes gives each of a model's inputs (in `names` order): one unnamed shape for a one-input model,
// else each by name. UserError (prefixed with `path`) for an unnamed shape of a multi-input model, a name no
// input has (`takes`: who takes the inputs, e.g. "forward()"), or an input without a shape.
std::vector<InputShape> match_input_shapes(const std::string& path, const std::vector<std::string>& names,
                                           const Specialization& spec, const std::string& takes);
// The symbols of a specialization, in order of first appearance.
std::vector<std::string> spec_symbols(const Specialization& spec);
// A copy with every symbol replaced by its value (`values` parallel to `names`) and `symbols` cleared.
Specialization bind_symbols(const Specialization& spec, const std::vector<std::string>& names,
                            const std::vector<std::int64_t>& values);

}  // namespace thunderc
