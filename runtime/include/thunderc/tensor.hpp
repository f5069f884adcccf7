// thunderc::HostTensor: a tiny owning host tensor (DLPack dtype, shape, 64-byte aligned bytes) that
// can hand out a DLTensor view. Header-only, C++17, depends only on dlpack.h. Used by the .npy
// reader/writer (npy.hpp) and the C++ runtime wrapper (runtime.hpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#ifndef THUNDERC_DL_BOOL
#define THUNDERC_DL_BOOL 6 /* kDLBool of DLPack >= 0.8; see runtime.h */
#endif

namespace thunderc {

// PyTorch-style dtype names, as in the manifest.
inline const char* dtype_name(DLDataType t) {
  if (t.lanes != 1) return nullptr;
  switch (t.code) {
    case THUNDERC_DL_BOOL: return t.bits == 8 ? "bool" : nullptr;
    case kDLUInt: return t.bits == 8 ? "uint8" : nullptr;
    case kDLInt:
      switch (t.bits) {
        case 8: return "int8";
        case 16: return "int16";
        case 32: return "int32";
        case 64: return "int64";
      }
      return nullptr;
    case kDLFloat:
      switch (t.bits) {
        case 16: return "float16";
        case 32: return "float32";
        case 64: return "float64";
      }
      return nullptr;
    case kDLBfloat: return t.bits == 16 ? "bfloat16" : nullptr;
    case kDLComplex: return t.bits == 64 ? "complex64" : t.bits == 128 ? "complex128" : nullptr;
  }
  return nullptr;
}

inline std::string dtype_string(DLDataType t) {
  if (const char* n = dtype_name(t)) return n;
  return "dtype(code=" + std::to_string(t.code) + ", bits=" + std::to_string(t.bits) +
         ", lanes=" + std::to_string(t.lanes) + ")";
}

inline bool dtype_equal(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

template <class T> struct DtypeOf;
template <> struct DtypeOf<bool> { static constexpr DLDataType value{THUNDERC_DL_BOOL, 8, 1}; };
template <> struct DtypeOf<uint8_t> { static constexpr DLDataType value{kDLUInt, 8, 1}; };
template <> struct DtypeOf<int8_t> { static constexpr DLDataType value{kDLInt, 8, 1}; };
template <> struct DtypeOf<int16_t> { static constexpr DLDataType value{kDLInt, 16, 1}; };
template <> struct DtypeOf<int32_t> { static constexpr DLDataType value{kDLInt, 32, 1}; };
template <> struct DtypeOf<int64_t> { static constexpr DLDataType value{kDLInt, 64, 1}; };
template <> struct DtypeOf<float> { static constexpr DLDataType value{kDLFloat, 32, 1}; };
template <> struct DtypeOf<double> { static constexpr DLDataType value{kDLFloat, 64, 1}; };

template <class T>
constexpr DLDataType dtype_of() { return DtypeOf<T>::value; }

// std::allocator with 64-byte alignment (what the runtime promises for its own buffers).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;
  AlignedAllocator() = default;
  template <class U> AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  // The nothrow form, then bad_alloc: the same for callers, and under AddressSanitizer (whose throwing
  // operator new aborts instead of throwing) an allocation that fails is still a bad_alloc to report.
  T* allocate(std::size_t n) {
    void* p = n > SIZE_MAX / sizeof(T) ? nullptr : ::operator new(n * sizeof(T), std::align_val_t{kAlignment}, std::nothrow);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kAlignment}); }
  template <class U> bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
  template <class U> bool operator!=(const AlignedAllocator<U>&) const noexcept { return false; }
};

class HostTensor {
 public:
  HostTensor() = default;

  // Zero-filled tensor. Throws std::invalid_argument for negative extents or sub-byte dtypes,
  // std::length_error when the byte size overflows, std::bad_alloc when the memory is not there.
  HostTensor(DLDataType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    if (dtype.bits == 0 || dtype.bits % 8 != 0 || dtype.lanes == 0)
      throw std::invalid_argument("HostTensor: unsupported dtype " + dtype_string(dtype));
    size_t n = itemsize();
    for (int64_t d : shape_) {
      if (d < 0) throw std::invalid_argument("HostTensor: negative extent");
      if (__builtin_mul_overflow(n, static_cast<size_t>(d), &n))
        throw std::length_error("HostTensor: the size of a " + dtype_string(dtype) + " tensor of this shape overflows");
    }
    bytes_.assign(n, 0);  // std::bad_alloc when the memory is not there
  }

  // From values in row-major order; values.size() must equal the product of shape.
  template <class T>
  static HostTensor from_vector(std::vector<int64_t> shape, const std::vector<T>& values) {
    HostTensor t(dtype_of<T>(), std::move(shape));
    if (values.size() != t.numel())
      throw std::invalid_argument("HostTensor::from_vector: " + std::to_string(values.size()) +
                                  " values for " + std::to_string(t.numel()) + " elements");
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
    return t;
  }

  DLDataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  size_t itemsize() const { return (static_cast<size_t>(dtype_.bits) * dtype_.lanes + 7) / 8; }
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape_) n *= static_cast<size_t>(d);
    return n;
  }
  size_t nbytes() const { return bytes_.size(); }
  void* raw() { return bytes_.data(); }
  const void* raw() const { return bytes_.data(); }

  // Typed access; throws std::invalid_argument if T does not match the dtype.
  template <class T>
  T* data() {
    check<T>();
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <class T>
  const T* data() const {
    check<T>();
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <class T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + numel());
  }

  // A view for the runtime; valid while this HostTensor lives and its shape is not changed.
  DLTensor dl() {
    DLTensor t{};
    t.data = bytes_.empty() ? nullptr : bytes_.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = ndim();
    t.dtype = dtype_;
    t.shape = shape_.empty() ? nullptr : shape_.data();
    t.strides = nullptr;
    t.byte_offset = 0;
    return t;
  }
  // Read-only view (for inputs: the runtime never writes to inputs).
  DLTensor dl() const { return const_cast<HostTensor*>(this)->dl(); }

 private:
  template <class T>
  void check() const {
    if (!dtype_equal(dtype_of<T>(), dtype_))
      throw std::invalid_argument("HostTensor: tensor holds " + dtype_string(dtype_) + ", accessed as " +
                                  dtype_string(dtype_of<T>()));
  }

  DLDataType dtype_{kDLFloat, 32, 1};
  std::vector<int64_t> shape_;
  std::vector<uint8_t, AlignedAllocator<uint8_t>> bytes_;
};

// The real numbers a tensor holds: its elements, or for a complex tensor each element's real and imaginary
// parts (interleaved, as stored). compare_values and element_as_double count in these.
inline size_t component_count(const HostTensor& t) { return t.numel() * (t.dtype().code == kDLComplex ? 2 : 1); }

// Component i of a host tensor as a double (floating and integer dtypes; float16/bfloat16 decoded; complex
// ones part by part): for comparing outputs whatever their dtype.
inline double element_as_double(const HostTensor& t, size_t i) {
  const DLDataType d = t.dtype();
  const size_t step = d.code == kDLComplex ? t.itemsize() / 2 : t.itemsize();
  const unsigned char* p = static_cast<const unsigned char*>(t.raw()) + i * step;
  auto load = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  };
  if (d.code == kDLComplex) return d.bits == 64 ? load(float{}) : load(double{});
  if (d.code == kDLFloat && d.bits == 32) return load(float{});
  if (d.code == kDLFloat && d.bits == 64) return load(double{});
  if (d.code == kDLInt && d.bits == 64) return load(int64_t{});
  if (d.code == kDLInt && d.bits == 32) return load(int32_t{});
  if (d.code == kDLInt && d.bits == 16) return load(int16_t{});
  if (d.code == kDLInt && d.bits == 8) return load(int8_t{});
  if (d.bits == 8) return load(uint8_t{});  // uint8 and bool
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (d.code == kDLBfloat) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // IEEE half.
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY) : std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// ---- comparing outputs with expected values (numpy.isclose / torch.allclose rules) ---------------------------
//
// got and want are close when both are finite and |got - want| <= atol + rtol * |want|; when either is an
// infinity, only when they are equal (same sign); when either is NaN, only when both are and equal_nan is set.
// rtol and atol must be finite and >= 0 (callers check; tolerances_valid says whether they are).
inline bool tolerances_valid(double rtol, double atol) {
  return std::isfinite(rtol) && std::isfinite(atol) && rtol >= 0 && atol >= 0;
}

inline bool values_close(double got, double want, double rtol, double atol, bool equal_nan) {
  if (std::isnan(got) || std::isnan(want)) return equal_nan && std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// |got - want| as the comparison sees it: 0 for equal values (equal infinities included, and NaN against NaN
// with equal_nan), +inf for an infinity against a different value, NaN when a NaN is not matched.
inline double value_difference(double got, double want, bool equal_nan) {
  if (std::isnan(got) || std::isnan(want)) return equal_nan && std::isnan(got) && std::isnan(want) ? 0.0 : NAN;
  if (got == want) return 0.0;
  return std::fabs(got - want);  // +inf when either is an infinity
}

// Orders differences for "the largest": NaN above +inf above every finite value.
inline bool difference_greater(double a, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a > b;
}

struct ValueComparison {
  std::size_t numel = 0;       // components compared (component_count: 2 per complex element)
  std::size_t mismatched = 0;  // elements that are not close
  double max_abs_diff = 0;     // the largest value_difference over all elements (NaN ranks highest)
  std::size_t worst = 0;       // the mismatched element with the largest difference (when mismatched > 0)
};

// Compares two tensors of the same shape element by element (any dtypes element_as_double reads).
inline ValueComparison compare_values(const HostTensor& got, const HostTensor& want, double rtol, double atol,
                                      bool equal_nan) {
  ValueComparison c;
  c.numel = component_count(got) < component_count(want) ? component_count(got) : component_count(want);
  bool have_worst = false;
  double worst_diff = 0;
  for (std::size_t i = 0; i < c.numel; ++i) {
    const double a = element_as_double(got, i), b = element_as_double(want, i);
    const double d = value_difference(a, b, equal_nan);
    if (difference_greater(d, c.max_abs_diff)) c.max_abs_diff = d;
    if (!values_close(a, b, rtol, atol, equal_nan)) {
      ++c.mismatched;
      if (!have_worst || difference_greater(d, worst_diff)) worst_diff = d, c.worst = i, have_worst = true;
    }
  }
  return c;
}

}  // namespace thunderc
