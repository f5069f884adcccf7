#include "core/ir/dtype.h"

#include <cstring>
#include <limits>

#include "core/ir/half.h"

#include "core/ir/error.h"

namespace thunderc {

namespace {
struct DTypeInfo {
  const char* name;
  const char* short_name;
  std::size_t size;
};
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"bool", "b8", 1},     {"uint8", "u8", 1},      {"int8", "i8", 1},      {"int16", "i16", 2},
    {"int32", "i32", 4},   {"int64", "i64", 8},     {"float16", "f16", 2},  {"bfloat16", "bf16", 2},
    {"float32", "f32", 4}, {"float64", "f64", 8},     {"complex64", "c64", 8}, {"complex128", "c128", 16},
};
const DTypeInfo& info(DType dt) {
  auto i = static_cast<int>(dt);
  THUNDERC_CHECK(i >= 0 && i < kNumDTypes, "dtype out of range: ", i);
  return kInfo[i];
}
}  // namespace

const char* dtype_name(DType dt) { return info(dt).name; }
const char* dtype_short_name(DType dt) { return info(dt).short_name; }
std::size_t dtype_size(DType dt) { return info(dt).size; }

bool is_floating(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32 || dt == DType::Float64;
}
bool is_integral(DType dt) {
  return dt == DType::UInt8 || dt == DType::Int8 || dt == DType::Int16 || dt == DType::Int32 ||
         dt == DType::Int64;
}
bool is_bool(DType dt) { return dt == DType::Bool; }
bool is_complex(DType dt) { return dt == DType::Complex64 || dt == DType::Complex128; }

DType complex_to_real(DType dt) {
  if (dt == DType::Complex64) return DType::Float32;
  if (dt == DType::Complex128) return DType::Float64;
  internal_error("complex_to_real of ", dtype_name(dt));
}
DType real_to_complex(DType dt) {
  if (dt == DType::Float32) return DType::Complex64;
  if (dt == DType::Float64) return DType::Complex128;
  internal_error("real_to_complex of ", dtype_name(dt));
}

double machine_epsilon(DType dt) {
  switch (dt) {
    case DType::Float16: return 0x1p-10;
    case DType::BFloat16: return 0x1p-7;
    case DType::Float32: return 0x1p-23;
    case DType::Float64: return 0x1p-52;
    default: internal_error("machine_epsilon of a non-floating dtype ", dtype_name(dt));
  }
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kInfo[i].name || name == kInfo[i].short_name) return static_cast<DType>(i);
  }
  if (name == "float") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "long") return DType::Int64;
  if (name == "int") return DType::Int32;
  if (name == "short") return DType::Int16;
  if (name == "cfloat") return DType::Complex64;
  if (name == "cdouble") return DType::Complex128;
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Mirrors c10::promoteTypes for the types thunderc knows.
  constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i1 = DType::Int8, i2 = DType::Int16,
                  i4 = DType::Int32, i8 = DType::Int64, f2 = DType::Float16, bf = DType::BFloat16,
                  f4 = DType::Float32, f8 = DType::Float64, c4 = DType::Complex64, c8 = DType::Complex128;
  static constexpr DType table[kNumDTypes][kNumDTypes] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c64 c128 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, c4, c8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, c4, c8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, c4, c8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, c4, c8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c4, c4, c8, c4, c8},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}


bool scalar_to_bytes(double v, DType d, unsigned char* dst) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof x); };
  auto integer = [&](auto zero) {
    using I = decltype(zero);
    const double lo = static_cast<double>(std::numeric_limits<I>::min()), hi = static_cast<double>(std::numeric_limits<I>::max());
    // [lo, hi + 1): hi + 1 is a power of two, exact in a double (hi itself may not be)
    if (!(v >= lo && v < hi + 1.0)) return false;
    put(static_cast<I>(v));
    return true;
  };
  switch (d) {
    case DType::Bool: put(static_cast<bool>(v != 0)); return true;
    case DType::UInt8: return integer(std::uint8_t{});
    case DType::Int8: return integer(std::int8_t{});
    case DType::Int16: return integer(std::int16_t{});
    case DType::Int32: return integer(std::int32_t{});
    case DType::Int64: return integer(std::int64_t{});
    case DType::Float16: put(float_to_f16(static_cast<float>(v))); return true;
    case DType::BFloat16: put(float_to_bf16(static_cast<float>(v))); return true;
    case DType::Float32: put(static_cast<float>(v)); return true;
    case DType::Float64: put(v); return true;
    case DType::Complex64: { const float c[2] = {static_cast<float>(v), 0.0f}; std::memcpy(dst, c, sizeof c); return true; }
    case DType::Complex128: { const double c[2] = {v, 0.0}; std::memcpy(dst, c, sizeof c); return true; }
  }
  return false;
}

}  // namespace thunderc
