#include "codegen/source_writer.h"

#include <cstdio>

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

void SourceWriter::comment(const std::string& text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    for (char& c : part)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    if (!part.empty() && part.back() == '\\') part += ' ';  // a trailing backslash would continue the comment
    line(part.empty() ? "//" : "// " + part);
    if (end == std::string::npos || end + 1 == text.size()) break;
    start = end + 1;
  }
}

}  // namespace thunderc
