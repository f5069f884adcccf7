// Sharp edges: things a model does that compile, but are likely to be wrong or surprising once the model
// runs ahead of time (thunder.jit's sharp_edges option). The frontend records them while importing;
// --sharp-edges decides what happens: allow (ignore), warn (print each), error (fail listing all).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace thunderc {

enum class SharpEdgeMode { Allow, Warn, Error };

// "allow", "warn", "error"; nullopt for anything else.
std::optional<SharpEdgeMode> parse_sharp_edge_mode(const std::string& text);
const char* sharp_edge_mode_name(SharpEdgeMode mode);

struct SharpEdge {
  std::string kind;      // "shape-dependent-control-flow", "random", "inplace-input", "inplace-weight",
                         // "output-aliases-input", "global-state", "frozen-attribute"
  std::string message;   // what happens and what the compiled model will do instead
  std::string location;  // source location in the model, may be empty
};

// Applies the mode: Warn prints one "thunderc: warning: ..." line per edge to `warn_to`; Error throws a
// UserError listing every edge; Allow does nothing. `context` names the model/specialization.
void apply_sharp_edge_mode(const std::vector<SharpEdge>& edges, SharpEdgeMode mode, const std::string& context,
                           std::ostream& warn_to);

}  // namespace thunderc
