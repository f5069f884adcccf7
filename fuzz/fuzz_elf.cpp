// libFuzzer target: the ELF sanity check that thunderc_model_open runs before dlopen
// (runtime/src/elf_check.cpp, check_elf_file): a truncated or corrupt .so must be refused with
// RtError, never read out of bounds. The input is written to a file (in /dev/shm when it exists), which
// check_elf_file maps or reads; nothing is ever dlopen'ed.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "internal.hpp"

using namespace thunderc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/thunderc_fuzz_elf_" + std::to_string(getpid()) + ".so";
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    check_elf_file(path);
  } catch (const RtError& e) {
    // Expected for nearly every input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_elf: check_elf_file threw something other than RtError: %s\n", e.what());
    std::abort();
  }
  unlink(path.c_str());
  return 0;
}
