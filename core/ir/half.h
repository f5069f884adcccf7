// float <-> float16 / bfloat16 bit conversions on the host, rounding to nearest even as PyTorch (and the
// GPU's cvt.rn) does: the autocast transform stores weights with them, tests compare with them. The
// generated kernels carry their own device (PTX cvt) and host (emulation) versions in their prelude.
#pragma once

#include <cstdint>
#include <cstring>

namespace thunderc {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN stays quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t float_to_f16(float f) {
  std::uint32_t u = float_bits(f);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal (or zero) in half
    // Value in units of 2^-24, rounded to nearest even.
    std::uint32_t exp = a >> 23;
    if (exp < 102) return static_cast<std::uint16_t>(sign);  // < 2^-25: rounds to zero
    std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126 - exp;  // mant * 2^(exp-150) / 2^-24 = mant >> (126 - exp)
    std::uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  std::uint32_t r = a - 0x38000000u;  // rebias 127 -> 15 (exponent field moves by 112 << 23)
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

inline float f16_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace thunderc
