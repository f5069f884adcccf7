// Golden files: the expected text lives in tests/codegen/cpp/golden/. THUNDERC_UPDATE_GOLDEN=1 rewrites
// them from the current output and fails the check (review the diff, then rerun without it): a run with
// the variable set never passes.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

inline std::string golden_path(const std::string& name) { return std::string(THUNDERC_CPP_GOLDEN_DIR) + "/" + name; }

inline std::string read_golden(const std::string& name) {
  std::ifstream in(golden_path(name), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Checks `got` against golden/<name>; with THUNDERC_UPDATE_GOLDEN set, writes it there and fails.
inline void check_golden(const std::string& name, const std::string& got) {
  if (std::getenv("THUNDERC_UPDATE_GOLDEN")) {
    std::ofstream(golden_path(name), std::ios::binary) << got;
    FAIL_CHECK("golden " << golden_path(name) << " updated, rerun without THUNDERC_UPDATE_GOLDEN");
    return;
  }
  std::string want = read_golden(name);
  CHECK_MESSAGE(!want.empty(), "missing golden file " << golden_path(name));
  CHECK(got == want);
}
