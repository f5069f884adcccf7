// Quoting user- and model-provided text in messages: control characters are escaped (a name holding a newline
// cannot break a message into lines) and long text is cut to its first kQuoteLimit characters with a note
// of its length. Header-only: used by the thunderc binary, the run/inspect/bench commands and their test driver.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace thunderc {

inline constexpr std::size_t kQuoteLimit = 200;

// `text` with control characters escaped (\n, \t, \r, \xNN) and, beyond `limit` characters, cut with
// "... (N characters)".
inline std::string escape_text(std::string_view text, std::size_t limit = kQuoteLimit) {
  std::string out;
  const std::size_t n = text.size() > limit ? limit : text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

// 'text', escaped and cut as escape_text does.
inline std::string quote_text(std::string_view text, std::size_t limit = kQuoteLimit) {
  return "'" + escape_text(text, limit) + "'";
}

// A whole message about to be printed: lines are kept (messages may have several), but control characters
// other than newlines are escaped and a line longer than `line_limit` is cut with a note of its length.
inline std::string printable_message(std::string_view message, std::size_t line_limit = 1000) {
  std::string out;
  std::size_t start = 0;
  while (start <= message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    std::string_view line = message.substr(start, end - start);
    if (!out.empty() || start > 0) out += '\n';
    out += escape_text(line, line_limit);
    if (end == message.size()) break;
    start = end + 1;
  }
  return out;
}

}  // namespace thunderc
