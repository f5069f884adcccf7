#include "core/frontend/sharp_edges.h"

#include "core/ir/error.h"
#include "core/util/diagnostics.h"

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
  const std::string severity = mode == SharpEdgeMode::Warn ? "warning" : "error";
  // As errors, each edge is its own diagnostic in JSON only; the text lists them in the one error below.
  if (mode == SharpEdgeMode::Warn || diagnostic_format() == DiagnosticFormat::Json)
    for (const SharpEdge& e : edges)
      emit_diagnostic({severity, "sharp-edge/" + e.kind, "sharp edge in " + context + ": " + describe(e), e.location},
                      warn_to);
  if (mode == SharpEdgeMode::Warn) return;
  std::string msg = context + " has " + std::to_string(edges.size()) + " sharp edge" + (edges.size() == 1 ? "" : "s") +
                    " (--sharp-edges error):";
  for (const SharpEdge& e : edges) msg += "\n  " + describe(e);
  msg += "\n(--sharp-edges warn compiles anyway and prints these; allow compiles silently)";
  throw UserError(msg);
}

}  // namespace thunderc
