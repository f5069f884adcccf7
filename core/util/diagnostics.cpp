#include "core/util/diagnostics.h"

#include <atomic>
#include <cstdio>

namespace thunderc {

namespace {

std::atomic<DiagnosticFormat> g_format{DiagnosticFormat::Text};

// Length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n", ++i;
    } else if (c == '\t') {
      out += "\\t", ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf, ++i;
    } else if (std::size_t n = utf8_length(s, i)) {
      out.append(s, i, n), i += n;
    } else {
      out += "\\ufffd", ++i;
    }
  }
  return out + "\"";
}

}  // namespace

DiagnosticFormat diagnostic_format() { return g_format.load(); }
void set_diagnostic_format(DiagnosticFormat format) { g_format.store(format); }

std::string diagnostic_json(const Diagnostic& d) {
  std::string out = "{\"severity\":" + json_string(d.severity) + ",\"code\":" + json_string(d.code) +
                    ",\"message\":" + json_string(d.message);
  if (!d.location.empty()) {
    out += ",\"location\":" + json_string(d.location);
    // "file:line" (or "file:line:col"): split out for annotation tools.
    const std::size_t colon = d.location.find(':');
    if (colon != std::string::npos && colon > 0) {
      std::size_t end = colon + 1;
      while (end < d.location.size() && d.location[end] >= '0' && d.location[end] <= '9') ++end;
      if (end > colon + 1 && end - colon - 1 <= 9 && (end == d.location.size() || d.location[end] == ':'))
        out += ",\"file\":" + json_string(d.location.substr(0, colon)) + ",\"line\":" +
               d.location.substr(colon + 1, end - colon - 1);
    }
  }
  return out + "}";
}

void emit_diagnostic(const Diagnostic& d, std::ostream& to) {
  if (diagnostic_format() == DiagnosticFormat::Json)
    to << diagnostic_json(d) << "\n";
  else
    to << "thunderc: " << d.severity << ": " << d.message << "\n";
  to.flush();
}

}  // namespace thunderc
