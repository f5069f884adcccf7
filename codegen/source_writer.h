// Helpers for writing generated C++: indentation, comments that cannot break out of themselves, and
// string literals for any text (names from a model file never reach generated source unescaped).
#pragma once

#include <string>

namespace thunderc {

// "..." with every byte outside printable ASCII, quotes, backslashes and '?' (trigraphs) escaped.
std::string c_string_literal(const std::string& text);

// A C++ expression of type double with exactly the value v, for any v: finite values in shortest round-trip
// form ("0.5", "1e+300", "-2.0"), infinities and NaN as GCC/NVRTC builtins ("inf"/"nan" are not literals).
// With `single`, the builtins are float-typed; a finite value is still a double literal (cast it to float:
// that rounds once, as PyTorch converts a Scalar).
std::string c_number_literal(double v, bool single = false);

// "// text" on one line, safe for any text: control bytes and newlines become '?'/' ', and the line
// cannot continue onto the next (a trailing backslash, even followed by spaces, continues a // comment).
std::string c_comment(const std::string& text);

class SourceWriter {
 public:
  void line(const std::string& text = "");
  // Each line of already generated text (one per '\n'), at the current indentation.
  void lines(const std::string& text);
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
