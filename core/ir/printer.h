// Renders a trace as a readable program (Thunder style). The output is stable: golden tests compare it.
#pragma once

#include <string>

#include "core/ir/trace.h"

namespace thunderc {

struct PrintOptions {
  bool show_source = false;     // a "# from: <location>" line before each symbol that has one
  bool show_constants = true;   // the header listing every constant's type and source name
};

std::string print_trace(const Trace& trace, const PrintOptions& options = {});

// "t0", "2.0", "None": how one operand appears in a printed call.
std::string operand_str(const Trace& trace, const Operand& operand);

// "t3 = torch.linear(x, w, b)" without the type comment.
std::string symbol_str(const Trace& trace, const BoundSymbol& sym);

// "68.0 KiB", "1.5 MiB".
std::string format_bytes(std::size_t bytes);

}  // namespace thunderc
