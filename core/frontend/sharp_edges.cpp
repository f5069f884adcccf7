#include "core/frontend/sharp_edges.h"

#include "core/ir/error.h"

namespace thunderc {

std::optional<SharpEdgeMode> parse_sharp_edge_mode(const std::string& text) {
  if (text == "allow") return SharpEdgeMode::Allow;
  if (text == "warn") return SharpEdgeMode::Warn;
  if (text == "error") return SharpEdgeMode::Error;
  return std::nullopt;
}

const char* sharp_edge_mode_name(SharpEdgeMode mode) {
  switch (mode) {
    case SharpEdgeMode::Allow: return "allow";
    case SharpEdgeMode::Warn: return "warn";
    case SharpEdgeMode::Error: return "error";
  }
  return "?";
}

namespace {
std::string describe(const SharpEdge& e) {
  return "[" + e.kind + "] " + (e.location.empty() ? "" : e.location + ": ") + e.message;
}
}  // namespace

void apply_sharp_edge_mode(const std::vector<SharpEdge>& edges, SharpEdgeMode mode, const std::string& context,
                           std::ostream& warn_to) {
  if (edges.empty() || mode == SharpEdgeMode::Allow) return;
  if (mode == SharpEdgeMode::Warn) {
    for (const SharpEdge& e : edges) warn_to << "thunderc: warning: sharp edge in " << context << ": " << describe(e) << "\n";
    return;
  }
  std::string msg = context + " has " + std::to_string(edges.size()) + " sharp edge" + (edges.size() == 1 ? "" : "s") +
                    " (--sharp-edges error):";
  for (const SharpEdge& e : edges) msg += "\n  " + describe(e);
  msg += "\n(--sharp-edges warn compiles anyway and prints these; allow compiles silently)";
  throw UserError(msg);
}

}  // namespace thunderc
