// diagnostic_json (core/util/diagnostics.h): the JSON line of an error or warning is valid JSON for any text,
// and a FILE:LINE location is split out for annotation tools.
#include "core/util/diagnostics.h"

#include <sstream>

#include "core_test_util.h"

using namespace coretest;

TEST_CASE("diagnostics: JSON lines escape any text and split FILE:LINE locations") {
  CHECK(diagnostic_json({"warning", "sharp-edge/random", "a \"quoted\"\\path\nnext\ttab\x01", "model.py:12"}) ==
        R"({"severity":"warning","code":"sharp-edge/random","message":"a \"quoted\"\\path\nnext\ttab\u0001",)"
        R"("location":"model.py:12","file":"model.py","line":12})");
  // Valid UTF-8 passes through; a stray byte becomes U+FFFD.
  CHECK(diagnostic_json({"error", "user-error", "caf\xc3\xa9 \xff", ""}) ==
        "{\"severity\":\"error\",\"code\":\"user-error\",\"message\":\"caf\xc3\xa9 \\ufffd\"}");
  // Locations that are not FILE:LINE stay whole.
  CHECK(diagnostic_json({"error", "c", "m", "forward"}) ==
        R"({"severity":"error","code":"c","message":"m","location":"forward"})");
  CHECK(diagnostic_json({"error", "c", "m", "f.py:12:5"}) ==
        R"({"severity":"error","code":"c","message":"m","location":"f.py:12:5","file":"f.py","line":12})");
  CHECK(diagnostic_json({"error", "c", "m", "C:x"}) == R"({"severity":"error","code":"c","message":"m","location":"C:x"})");

  std::ostringstream text, json;
  set_diagnostic_format(DiagnosticFormat::Text);
  emit_diagnostic({"warning", "c", "careful", ""}, text);
  CHECK(text.str() == "thunderc: warning: careful\n");
  set_diagnostic_format(DiagnosticFormat::Json);
  emit_diagnostic({"warning", "c", "careful", ""}, json);
  set_diagnostic_format(DiagnosticFormat::Text);
  CHECK(json.str() == "{\"severity\":\"warning\",\"code\":\"c\",\"message\":\"careful\"}\n");
}
