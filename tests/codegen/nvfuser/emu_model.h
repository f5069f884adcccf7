// Runs a CUDA model compiled by thunderc on the CPU, end to end: the real compile (NVRTC cubins embedded
// in the .so), the real runtime (module load, weights upload, workspace, launches through device_api), and
// the generated kernels.cu compiled as host C++ with the CUDA emulator (tests/cuda_emu) behind the fake
// driver (tests/runtime/fake_cuda: LD_LIBRARY_PATH names it, set by ctest's ENVIRONMENT).
//
// What this cannot catch is listed in tests/cuda_emu/README.md (timing, races hidden by serialized fibers,
// coalescing, occupancy); the device code is the same text NVRTC compiled, not the cubin itself.
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "common/run_process.h"
#include "thunderc/runtime.hpp"

namespace nvfuser_emu {

namespace fs = std::filesystem;

// Compiles <dir>/kernels.cu (kept by --keep-sources) into <dir>_kernels_emu.so for the emulator: next to the
// directory, not in it (a --keep-sources directory holding files thunderc did not write is refused on the
// next compile).
inline std::string build_emulated_kernels(const fs::path& dir) {
  fs::path src = dir / "kernels.cu", so = dir.parent_path() / (dir.filename().string() + "_kernels_emu.so");
  if (!fs::exists(src)) throw std::runtime_error(src.string() + " was not generated");
  auto r = thunderc_test::run_program(THUNDERC_TEST_CXX, {"-std=c++17", "-O1", "-shared", "-fPIC", "-DTHUNDERC_CUDA_EMULATION",
                                                          "-I" THUNDERC_CUDA_EMU_INCLUDE_DIR, "-x", "c++", src.string(), "-o",
                                                          so.string()});
  if (r.code != 0) throw std::runtime_error("kernels.cu does not build in emulation mode:\n" + r.out.substr(0, 4000));
  return so.string();
}

// The fake driver's registration hook (the same libcuda.so.1 the runtime opens).
inline void register_kernels(const std::string& so) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) throw std::runtime_error("the fake CUDA driver is not on LD_LIBRARY_PATH");
  using Register = int (*)(const char*);
  auto reg = reinterpret_cast<Register>(dlsym(cuda, "thunderc_fake_cuda_register_kernels"));
  if (!reg) throw std::runtime_error("libcuda.so.1 is not the fake driver (no thunderc_fake_cuda_register_kernels)");
  if (reg(so.c_str()) != 0) throw std::runtime_error("the fake driver cannot load " + so);
}

inline constexpr DLDevice kCuda0{kDLCUDA, 0};

// A compiled CUDA model whose kernels run emulated: host tensors in, host tensors out.
class EmulatedModel {
 public:
  // `so`: a model compiled with keep_sources = `sources` (which holds kernels.cu).
  EmulatedModel(const std::string& so, const fs::path& sources) : kernels_(build_emulated_kernels(sources)) {
    register_kernels(kernels_);
    model_ = std::make_unique<thunderc::Model>(so);
  }

  std::vector<thunderc::HostTensor> run(const std::vector<thunderc::HostTensor>& inputs) {
    register_kernels(kernels_);  // the module binds to the latest registration when it is first loaded
    std::vector<thunderc::DeviceTensor> dev;
    std::vector<DLTensor> dl;
    for (const auto& h : inputs) dev.push_back(thunderc::DeviceTensor::from_host(h, kCuda0));
    for (const auto& d : dev) dl.push_back(d.dl());
    std::vector<thunderc::ManagedTensor> outs = model_->run_alloc(dl);
    std::vector<thunderc::HostTensor> host;
    for (const auto& o : outs) host.push_back(o.to_host());
    return host;
  }

  thunderc::Model& model() { return *model_; }

 private:
  std::string kernels_;
  std::unique_ptr<thunderc::Model> model_;
};

}  // namespace nvfuser_emu
