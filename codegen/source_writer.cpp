#include "codegen/source_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/ir/types.h"

namespace thunderc {

std::string c_string_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);  // octal escapes never swallow following digits past 3
      out += buf;
    }
  }
  return out + "\"";
}

void SourceWriter::line(const std::string& text) {
  if (!text.empty()) out_.append(static_cast<std::size_t>(depth_), ' ');
  out_ += text;
  out_ += '\n';
}

void SourceWriter::lines(const std::string& text) {
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    line(text.substr(start, end - start));
    start = end + 1;
  }
}

namespace {

// One comment line's text: bytes outside printable ASCII become '?', trailing blanks are dropped, and a text
// ending in a backslash (or the trigraph "??/") gets a closing mark so that it cannot continue the comment.
std::string comment_body(std::string part) {
  for (char& c : part)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  while (!part.empty() && part.back() == ' ') part.pop_back();
  if (!part.empty() && (part.back() == '\\' || (part.size() >= 3 && part.compare(part.size() - 3, 3, "?\?/") == 0)))
    part += " (end)";
  return part;
}

}  // namespace

std::string c_number_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (single ? "__builtin_inff()" : "__builtin_inf()");
  std::string s = format_double(v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string c_comment(const std::string& text) {
  std::string one = text;
  for (char& c : one)
    if (c == '\n' || c == '\r') c = ' ';
  std::string body = comment_body(one);
  return body.empty() ? "//" : "// " + body;
}

void SourceWriter::comment(const std::string& text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    std::string part = comment_body(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    line(part.empty() ? "//" : "// " + part);
    if (end == std::string::npos || end + 1 == text.size()) break;
    start = end + 1;
  }
}

}  // namespace thunderc
