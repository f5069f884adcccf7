// SourceWriter: comments that no text can continue or break out of, and number literals for any double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/source_writer.h"

using namespace thunderc;

namespace {

// Compiles `source` with the host C++ compiler (syntax only); true when it compiles without errors.
bool compiles(const std::string& source, const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(THUNDERC_TEST_TMP) / "source_writer";
  std::filesystem::create_directories(dir);
  std::filesystem::path file = dir / (name + ".cpp");
  std::ofstream(file) << source;
  std::string cmd = "c++ -std=c++17 -fsyntax-only -Werror=comment '" + file.string() + "' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

TEST_CASE("comments: a trailing backslash, even followed by spaces, does not continue the comment") {
  for (std::string text : {"ends in a backslash \\", "backslash then spaces \\   ", "backslash then tab \\\t",
                           "two lines\\  \nsecond \\ ", "trigraph ?\?/", "cr\\\r", "line\\\n"}) {
    CAPTURE(text);
    SourceWriter out;
    out.line("int f() {");
    out.line("  int x = 1;");
    out.comment(text);
    out.line("  x += 1;");
    out.line("  " + c_comment(text));
    out.line("  return x;");
    out.line("}");
    for (std::size_t p = 0; (p = out.str().find("\\\n", p)) != std::string::npos; ++p) FAIL("a line ends in a backslash");
    CHECK(c_comment(text).find('\n') == std::string::npos);
    CHECK(compiles(out.str(), "comment"));
  }
}

TEST_CASE("c_number_literal: inf and NaN are valid expressions, finite values round-trip") {
  std::string src = "#include <cmath>\nstatic_assert(true, \"\");\n";
  int i = 0;
  for (double v : {0.0, -0.0, 1.0, -2.5, 1e300, -1e-300, 0.1, double(INFINITY), -double(INFINITY), double(NAN)}) {
    std::string d = c_number_literal(v), f = c_number_literal(v, true);
    bool inf_ok = d.find("inf") == std::string::npos || d.find("__builtin_inf") != std::string::npos;
    CHECK(inf_ok);
    CHECK(d != "nan");
    src += "double d" + std::to_string(i) + " = " + d + ";\nfloat f" + std::to_string(i) + " = static_cast<float>(" + f + ");\n";
    if (std::isfinite(v)) CHECK(std::strtod(d.c_str(), nullptr) == v);
    ++i;
  }
  CHECK(compiles(src, "literals"));
}
