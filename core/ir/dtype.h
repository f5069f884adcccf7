// Element types, their names, and PyTorch's type-promotion lattice.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace thunderc {

enum class DType : unsigned char {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  // Complex tensors are interleaved (re, im) pairs, as PyTorch stores them. Only the FFT operators and
  // view_as_real / view_as_complex take them; the frontends lower complex arithmetic to real operators on
  // view_as_real (core/frontend/complex_ops.h), and any other operator on one is refused (core/ops/registry.cpp).
  Complex64,
  Complex128,
};
inline constexpr int kNumDTypes = 12;

// PyTorch's name: "float32", "int64", "bool", ...
const char* dtype_name(DType dt);
// Short name used in printed traces (as in Thunder): "f32", "i64", "b8", ...
const char* dtype_short_name(DType dt);
std::size_t dtype_size(DType dt);
bool is_floating(DType dt);
bool is_integral(DType dt);  // integer types, not bool
bool is_bool(DType dt);
bool is_complex(DType dt);
// complex64 <-> float32, complex128 <-> float64 (the element type of each half, and back); bugs for other dtypes.
DType complex_to_real(DType dt);
DType real_to_complex(DType dt);
// torch.finfo(dt).eps: the gap between 1 and the next representable value (floating dtypes only).
double machine_epsilon(DType dt);
// Accepts PyTorch names ("float32", "float", "long", ...) and short names ("f32").
std::optional<DType> parse_dtype(std::string_view name);

// v as one element of dtype d, written to dst (dtype_size(d) bytes) as a PyTorch number fills a tensor of that
// dtype (floating types round to nearest; integers truncate toward zero). False, writing nothing, when an
// integer dtype cannot hold v (NaN, infinities, out of range: C++'s conversion would be undefined).
bool scalar_to_bytes(double v, DType d, unsigned char* dst);

// torch.promote_types: the smallest type both promote to (bool < integers < floating < complex).
DType promote_types(DType a, DType b);

}  // namespace thunderc
