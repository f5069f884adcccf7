// Helpers shared by the runtime tests.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "thunderc/runtime.h"

namespace thunderc_test {

// Owns a thunderc_status.
class Status {
 public:
  explicit Status(thunderc_status s) : s_(s) {}
  Status(Status&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  ~Status() { thunderc_status_free(s_); }
  bool ok() const { return s_ == nullptr; }
  thunderc_status_code_t code() const { return thunderc_status_code(s_); }
  std::string message() const { return thunderc_status_message(s_); }

 private:
  thunderc_status s_;
};

// The hand-written test models (models/test_model.cpp, models/cuda_model.cpp) compute, for x [rows, 3]:
// y = 2x + 1 and rowsum[r] = x[r][0] + x[r][1] + x[r][2].
inline std::vector<float> expected_y(const std::vector<float>& x) {
  std::vector<float> y;
  for (float v : x) y.push_back(2.0f * v + 1.0f);
  return y;
}
inline std::vector<float> expected_rowsum(const std::vector<float>& x) {
  std::vector<float> s(x.size() / 3, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) s[i / 3] += x[i];
  return s;
}
// start, start + 1, ...
inline std::vector<float> iota(size_t n, float start = 0.5f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

inline std::string model_path(const std::string& name, const std::string& ext = ".so") {
  return std::string(THUNDERC_TEST_MODEL_DIR) + "/" + name + ext;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A fresh directory under $TMPDIR (or /tmp), removed with its files (one level) at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/thunderc-rt-test-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    if (DIR* d = opendir(path.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") unlink((path + "/" + n).c_str());
      }
      closedir(d);
    }
    rmdir(path.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace thunderc_test
