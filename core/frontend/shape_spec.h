// Example input shapes from the command line, trtexec style. Each --shapes flag is one specialization:
//   --shapes x=1x3x224x224,mask=1x64     named inputs
//   --shapes 1x3x224x224                 the single input of a one-input model
//   --shapes ids=1x16:int64              an optional dtype after ':' (default: the recorded one, else float32)
// A scalar (0-dim) input is written as an empty shape: "x=".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir/types.h"

namespace thunderc {

struct InputShape {
  std::string name;  // empty: positional (only valid when the model has one input)
  Shape shape;
  std::optional<DType> dtype;
};
using Specialization = std::vector<InputShape>;

// Parses one --shapes value; UserError quoting the text on malformed input.
Specialization parse_shapes_flag(const std::string& text);
std::string specialization_str(const Specialization& spec);  // "x=1x64:float32,mask=1x64:bool"

}  // namespace thunderc
