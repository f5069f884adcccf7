// .npy reader/writer (NumPy format versions 1.0, 2.0 and 3.0 read; 1.0 written, 2.0 only when the
// header would not fit). dtypes: b1 u1 i1 i2 i4 i8 f2 f4 f8, little-endian ('<', '|' or '='), C order.
// Errors throw thunderc::npy::Error whose message names the file. Library target: thunderc_npy.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "thunderc/tensor.hpp"

namespace thunderc::npy {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a .npy file.
HostTensor load(const std::string& path);
// Writes a .npy file (format 1.0). Throws Error for dtypes .npy cannot hold (e.g. bfloat16).
void save(const std::string& path, const HostTensor& tensor);

// The same on memory; `name` is used in error messages.
HostTensor parse(const void* data, size_t size, const std::string& name = "<memory>");
std::string serialize(const HostTensor& tensor);

// The .npy descr ("<f4", "|b1", ...) of a dtype, or empty if .npy cannot hold it.
std::string descr_of(DLDataType dtype);

}  // namespace thunderc::npy
