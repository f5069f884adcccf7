// The generated-file contract end to end: tests/cuda_emu/contract/kernels.cu is compiled as host C++ into a
// shared library (g++ -x c++ -DTHUNDERC_CUDA_EMULATION), opened with dlopen and run through its
// thunderc_emu_launch_<kernel> entry points, as the runtime's emulated CUDA path would.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/run_process.h"

namespace {

using Launcher = void (*)(const unsigned*, const unsigned*, unsigned, void**);

struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

}  // namespace

TEST_CASE("contract kernels.cu builds as host C++ and runs through its launchers") {
  const std::string dir = THUNDERC_TEST_TMP;
  REQUIRE(thunderc_test::run_shell("mkdir -p " + thunderc_test::shell_quote(dir)).code == 0);
  const std::string so = dir + "/contract_kernels.so";
  const thunderc_test::ProcessResult build = thunderc_test::run_program(
      THUNDERC_CXX_COMPILER, {"-std=c++17", "-O1", "-g0", "-x", "c++", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
                              "-DTHUNDERC_CUDA_EMULATION", "-I", THUNDERC_CUDA_EMU_INCLUDE_DIR,
                              THUNDERC_CUDA_EMU_CONTRACT_DIR "/kernels.cu", "-o", so});
  INFO(build.cmd, "\n", build.out);
  REQUIRE(build.code == 0);
  Library lib;
  lib.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = lib.handle ? "" : dlerror();
  INFO(why);
  REQUIRE(lib.handle != nullptr);
  auto k3 = reinterpret_cast<Launcher>(dlsym(lib.handle, "thunderc_emu_launch_tc_v0_k3"));
  auto k4 = reinterpret_cast<Launcher>(dlsym(lib.handle, "thunderc_emu_launch_tc_v0_k4"));
  auto k5 = reinterpret_cast<Launcher>(dlsym(lib.handle, "thunderc_emu_launch_tc_v0_k5"));
  REQUIRE((k3 != nullptr));
  REQUIRE((k4 != nullptr));
  REQUIRE((k5 != nullptr));

  SUBCASE("elementwise, partial last block") {
    const long long n = 1000;
    std::vector<float> in(n), out(n, -1.0f);
    for (long long i = 0; i < n; ++i) in[i] = 0.01f * static_cast<float>(i) - 4.0f;
    float* p0 = out.data();
    const float* p1 = in.data();
    const long long* p2 = &n;
    void* args[] = {&p0, &p1, &p2};
    const unsigned grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
    k3(grid, block, 0, args);
    for (long long i = 0; i < n; ++i) {
      const float x = in[i];
      REQUIRE(out[i] == doctest::Approx(x / (1.0f + std::exp(-x)) * static_cast<float>(i % 3 + 1)).epsilon(1e-6));
    }
  }
  SUBCASE("row sums: warp shuffles and a block barrier") {
    const long long rows = 5, cols = 301;
    std::vector<float> in(rows * cols), out(rows, -1.0f);
    for (long long i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i % 13) - 6.0f;
    float* p0 = out.data();
    const float* p1 = in.data();
    const long long* p2 = &cols;
    void* args[] = {&p0, &p1, &p2};
    const unsigned grid[3] = {static_cast<unsigned>(rows), 1, 1}, block[3] = {256, 1, 1};
    k4(grid, block, 0, args);
    for (long long r = 0; r < rows; ++r) {
      float ref = 0;
      for (long long c = 0; c < cols; ++c) ref += in[r * cols + c];
      CHECK(out[r] == doctest::Approx(ref));
    }
  }
  SUBCASE("dynamic shared memory") {
    std::vector<float> in(384), out(384);
    for (int i = 0; i < 384; ++i) in[i] = static_cast<float>(i);
    float* p0 = out.data();
    const float* p1 = in.data();
    void* args[] = {&p0, &p1};
    const unsigned grid[3] = {3, 1, 1}, block[3] = {128, 1, 1};
    k5(grid, block, 128 * sizeof(float), args);
    for (int b = 0; b < 3; ++b)
      for (int t = 0; t < 128; ++t) CHECK(out[b * 128 + t] == in[b * 128 + 127 - t]);
  }
}
