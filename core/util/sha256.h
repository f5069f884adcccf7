// SHA-256 (FIPS 180-4), for the manifest's record of the source model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace thunderc {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  std::string hex_digest();  // finishes; the object must not be updated afterwards

 private:
  void block(const unsigned char* p);
  std::uint32_t h_[8];
  unsigned char buf_[64];
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

// Hex digest of a file's contents; UserError if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace thunderc
