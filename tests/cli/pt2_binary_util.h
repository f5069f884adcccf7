// Helpers of the tests that drive the thunderc binary on the .pt2 samples (cache_test.cpp, deployment_test.cpp):
// THUNDERC_BIN, THUNDERC_SAMPLES and THUNDERC_TEST_TMP come from tests/cli/CMakeLists.txt.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_process.h"

namespace pt2_binary {

namespace fs = std::filesystem;
using thunderc_test::ProcessResult;

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// samples/pt2/<name>
inline std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/pt2/" + name; }

// A fresh, empty THUNDERC_TEST_TMP/<suite>/<name>.
inline fs::path tmp_dir(const std::string& suite, const std::string& name) {
  fs::path dir = fs::path(THUNDERC_TEST_TMP) / suite / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs thunderc with `args` (stdout and stderr together), after `env` assignments ("A=1 B=2") when given.
inline ProcessResult thunderc(const std::vector<std::string>& args, const std::string& env = "") {
  return thunderc_test::run_shell(env + (env.empty() ? "" : " ") + thunderc_test::command_line(THUNDERC_BIN, args));
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace pt2_binary
