// Errors, warnings and sharp edges as thunderc reports them: a line of text ("thunderc: warning: ..."), or,
// with --diagnostics json (or THUNDERC_DIAGNOSTICS=json), one JSON object per line for CI annotations:
//
//   {"severity":"warning","code":"sharp-edge/random","message":"...","location":"model.py:12","file":"model.py","line":12}
//
// severity: "error" | "warning"; code: a stable identifier (docs/diagnostics.md lists them); location: where
// in the model, when known ("file" and "line" are split out of it when it reads FILE:LINE). Everything goes to
// stderr; stdout keeps the command's own output.
#pragma once

#include <ostream>
#include <string>

namespace thunderc {

enum class DiagnosticFormat { Text, Json };

struct Diagnostic {
  std::string severity;  // "error", "warning"
  std::string code;      // "user-error", "sharp-edge/random", ...
  std::string message;   // the text the Text format prints after "thunderc: <severity>: "
  std::string location;  // may be empty
};

DiagnosticFormat diagnostic_format();
void set_diagnostic_format(DiagnosticFormat format);

// The JSON line of `d` (no trailing newline). Any bytes are safe: invalid UTF-8 becomes U+FFFD.
std::string diagnostic_json(const Diagnostic& d);

// Prints `d` on `to` in the current format, with a newline.
void emit_diagnostic(const Diagnostic& d, std::ostream& to);

}  // namespace thunderc
