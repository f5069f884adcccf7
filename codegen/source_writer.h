// Helpers for writing generated C++: indentation, comments that cannot break out of themselves, and
// string literals for any text (names from a model file never reach generated source unescaped).
#pragma once

#include <string>

namespace thunderc {

// "..." with every byte outside printable ASCII, quotes, backslashes and '?' (trigraphs) escaped.
std::string c_string_literal(const std::string& text);

class SourceWriter {
 public:
  void line(const std::string& text = "");
  // One "// ..." line per line of text; safe for any text (no line continuation, no newline injection).
  void comment(const std::string& text);
  void indent() { depth_ += 2; }
  void dedent() { depth_ -= 2; }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int depth_ = 0;
};

}  // namespace thunderc
