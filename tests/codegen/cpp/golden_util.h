// Golden files: the expected text lives in tests/codegen/cpp/golden/. THUNDERC_UPDATE_GOLDEN=1 rewrites
// them from the current output (review the diff before committing).
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

inline std::string golden_path(const std::string& name) { return std::string(THUNDERC_CPP_GOLDEN_DIR) + "/" + name; }

inline std::string read_golden(const std::string& name) {
  const char* update = std::getenv("THUNDERC_UPDATE_GOLDEN");
  (void)update;
  std::ifstream in(golden_path(name), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void maybe_update_golden(const std::string& name, const std::string& text) {
  const char* update = std::getenv("THUNDERC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") std::ofstream(golden_path(name), std::ios::binary) << text;
}
