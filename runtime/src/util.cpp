// dtype / device / shape helpers.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "internal.hpp"

namespace {

struct DtypeName {
  const char* name;
  DLDataType dtype;
};

constexpr DtypeName kDtypes[] = {
    {"bool", {THUNDERC_DL_BOOL, 8, 1}}, {"uint8", {kDLUInt, 8, 1}},     {"int8", {kDLInt, 8, 1}},
    {"int16", {kDLInt, 16, 1}},         {"int32", {kDLInt, 32, 1}},     {"int64", {kDLInt, 64, 1}},
    {"float16", {kDLFloat, 16, 1}},     {"bfloat16", {kDLBfloat, 16, 1}},
    {"float32", {kDLFloat, 32, 1}},     {"float64", {kDLFloat, 64, 1}},
    {"complex64", {kDLComplex, 64, 1}}, {"complex128", {kDLComplex, 128, 1}},
};

}  // namespace

extern "C" {

THUNDERC_API const char* thunderc_dtype_name(DLDataType dtype) {
  for (const auto& d : kDtypes)
    if (thunderc::rt::dtype_equal(d.dtype, dtype)) return d.name;
  return nullptr;
}

THUNDERC_API int thunderc_dtype_from_name(const char* name, DLDataType* out) {
  if (!name || !out) return 0;
  for (const auto& d : kDtypes) {
    if (std::strcmp(d.name, name) == 0) {
      *out = d.dtype;
      return 1;
    }
  }
  return 0;
}

}  // extern "C"

namespace thunderc::rt {

bool dtype_equal(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string dtype_to_string(DLDataType dtype) {
  if (const char* n = thunderc_dtype_name(dtype)) return n;
  return "dtype(code=" + std::to_string(dtype.code) + ", bits=" + std::to_string(dtype.bits) +
         ", lanes=" + std::to_string(dtype.lanes) + ")";
}

std::string device_to_string(DLDevice device) {
  // A C caller may pass any int as the enum: read it as an integer (loading an out-of-range C++ enum is UB).
  int32_t type = 0;
  std::memcpy(&type, &device.device_type, sizeof type);
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda:" + std::to_string(device.device_id);
    case kDLCUDAHost:
      return "cuda_host";
    case kDLCUDAManaged:
      return "cuda_managed:" + std::to_string(device.device_id);
    default:
      return "device(type=" + std::to_string(type) +
             ", id=" + std::to_string(device.device_id) + ")";
  }
}

bool parse_device(const std::string& text, DLDevice* out) {
  if (text == "cpu") {
    *out = DLDevice{kDLCPU, 0};
    return true;
  }
  if (text == "cuda") {
    *out = DLDevice{kDLCUDA, 0};
    return true;
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 9) {
    int id = 0;
    for (size_t i = 5; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      id = id * 10 + (text[i] - '0');
    }
    *out = DLDevice{kDLCUDA, id};
    return true;
  }
  return false;
}

std::string shape_to_string(const int64_t* shape, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool dense_nbytes(const int64_t* shape, int ndim, DLDataType dtype, size_t* out) {
  size_t n = (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return false;
    const auto d = static_cast<uint64_t>(shape[i]);
    if (d != 0 && n > std::numeric_limits<size_t>::max() / d) return false;
    n *= static_cast<size_t>(d);
  }
  // No address space holds more than PTRDIFF_MAX bytes; capping here also keeps every element count and
  // dense stride of an accepted tensor within int64_t.
  if (n > static_cast<size_t>(std::numeric_limits<int64_t>::max())) return false;
  *out = n;
  return true;
}

bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr || t.ndim <= 0) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] == 0) return true;  // empty tensors are trivially dense
  }
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    // A shape whose element count overflows int64 cannot be dense; callers
    // reject it by size, this check just must not overflow first.
    if (__builtin_mul_overflow(expected, t.shape[i], &expected)) return false;
  }
  return true;
}

namespace {

// max over |x|'s bits (sign cleared): for IEEE formats that order is the order of magnitudes, with infinity
// and NaN above every finite value. Blocks of a fixed size so that the compiler vectorizes the inner loop.
template <typename Bits>
Bits max_magnitude_bits(const unsigned char* data, size_t n, Bits sign) {
  constexpr size_t kBlock = 64;
  Bits block[kBlock];
  Bits m = 0;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    std::memcpy(block, data + i * sizeof(Bits), sizeof block);
    Bits bm = 0;
    for (size_t k = 0; k < kBlock; ++k) {
      const Bits a = static_cast<Bits>(block[k] & static_cast<Bits>(~sign));
      bm = a > bm ? a : bm;
    }
    m = bm > m ? bm : m;
  }
  for (; i < n; ++i) {
    Bits b;
    std::memcpy(&b, data + i * sizeof(Bits), sizeof b);
    const Bits a = static_cast<Bits>(b & static_cast<Bits>(~sign));
    m = a > m ? a : m;
  }
  return m;
}

}  // namespace

std::string format_bound(double bound) {
  int e = 0;
  if (std::frexp(bound, &e) == 0.5) return "2^" + std::to_string(e - 1);
  char text[32];
  std::snprintf(text, sizeof text, "%g", bound);
  return text;
}

bool finite_within(const DLTensor& t, double bound) {
  if (t.dtype.code != kDLFloat && t.dtype.code != kDLBfloat) return false;
  if (t.dtype.lanes != 1) return false;
  size_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= static_cast<size_t>(t.shape[i]);
  if (n == 0) return true;
  const unsigned char* p = static_cast<const unsigned char*>(t.data) + t.byte_offset;
  if (t.dtype.code == kDLFloat && t.dtype.bits == 32) {
    const float b = bound < 3.0e38 ? static_cast<float>(bound) : std::numeric_limits<float>::max();
    uint32_t limit;
    std::memcpy(&limit, &b, 4);
    return max_magnitude_bits<uint32_t>(p, n, 0x80000000u) <= limit;
  }
  if (t.dtype.code == kDLFloat && t.dtype.bits == 64) {
    uint64_t limit;
    std::memcpy(&limit, &bound, 8);
    return max_magnitude_bits<uint64_t>(p, n, uint64_t{1} << 63) <= limit;
  }
  if (t.dtype.bits != 16) return false;
  // float16: exponent 5 bits (bias 15), max finite 0x7bff; bfloat16: float32's upper half.
  uint16_t limit;
  if (t.dtype.code == kDLFloat) {
    int e = 0;
    std::frexp(bound, &e);  // bound = 0.5 * 2^e, a power of two
    limit = e - 1 > 15 ? uint16_t{0x7bff} : static_cast<uint16_t>((e - 1 + 15) << 10);
  } else {
    const float b = bound < 3.0e38 ? static_cast<float>(bound) : std::numeric_limits<float>::max();
    uint32_t bits;
    std::memcpy(&bits, &b, 4);
    limit = static_cast<uint16_t>(bits >> 16);
  }
  return max_magnitude_bits<uint16_t>(p, n, uint16_t{0x8000}) <= limit;
}

}  // namespace thunderc::rt
