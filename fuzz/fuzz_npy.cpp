// libFuzzer target: the .npy reader (runtime/src/npy.cpp, thunderc::npy::parse), as `thunderc run` uses it
// on user files. A malformed file must throw thunderc::npy::Error; anything else (another exception, a
// crash, a sanitizer report) is a finding. What parses must serialize and parse back to the same tensor.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "thunderc/npy.hpp"

namespace {
[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_npy: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  thunderc::HostTensor t;
  try {
    t = thunderc::npy::parse(data, size, "fuzz.npy");
  } catch (const thunderc::npy::Error&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  // Accepted: the byte count must match the shape, and a round trip must be exact.
  if (t.nbytes() != t.numel() * t.itemsize()) finding("nbytes != numel * itemsize");
  std::string bytes;
  try {
    bytes = thunderc::npy::serialize(t);
  } catch (const thunderc::npy::Error&) {
    finding("a tensor parse() accepted cannot be serialized");
  }
  thunderc::HostTensor back = thunderc::npy::parse(bytes.data(), bytes.size(), "roundtrip.npy");
  if (back.shape() != t.shape() || back.dtype().code != t.dtype().code || back.dtype().bits != t.dtype().bits ||
      back.dtype().lanes != t.dtype().lanes || back.nbytes() != t.nbytes() ||
      (t.nbytes() && std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0))
    finding("serialize(parse(x)) does not parse back to the same tensor");
  return 0;
}
