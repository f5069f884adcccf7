// core/ir/half.h: float <-> float16 / bfloat16 with round-to-nearest-even, against values worked out by hand
// from the formats (float16: 1 sign, 5 exponent, 10 mantissa bits; bfloat16: float32's top 16 bits).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/ir/half.h"

using namespace thunderc;

TEST_CASE("float16: exact values, rounding to nearest even, overflow, subnormals, NaN") {
  CHECK(float_to_f16(1.0f) == 0x3c00);
  CHECK(float_to_f16(-2.0f) == 0xc000);
  CHECK(float_to_f16(0.0f) == 0x0000);
  CHECK(float_to_f16(-0.0f) == 0x8000);
  CHECK(float_to_f16(65504.0f) == 0x7bff);                 // the largest float16
  CHECK(float_to_f16(65519.99f) == 0x7bff);                // below the midpoint to 2^16: rounds down
  CHECK(float_to_f16(65520.0f) == 0x7c00);                 // the midpoint rounds to even: infinity
  CHECK(float_to_f16(INFINITY) == 0x7c00);
  CHECK(float_to_f16(-INFINITY) == 0xfc00);
  CHECK(float_to_f16(1.0f / 3.0f) == 0x3555);              // 0.333251953125 (mantissa 0x155, rounded down)
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even (1) wins; 1 + 3 * 2^-11 rounds up to 1 + 2^-9.
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(float_to_f16(std::ldexp(1.0f, -14)) == 0x0400);    // the smallest normal
  CHECK(float_to_f16(std::ldexp(1.0f, -24)) == 0x0001);    // the smallest subnormal
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000);    // halfway to it: even (zero)
  CHECK(float_to_f16(std::ldexp(1.5f, -25)) == 0x0001);    // above halfway
  CHECK(float_to_f16(std::ldexp(3.0f, -25)) == 0x0002);    // 1.5 * 2^-24: halfway between 1 and 2: even
  CHECK(float_to_f16(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(std::isnan(f16_to_float(float_to_f16(NAN))));
  CHECK(f16_to_float(0x3555) == 0.333251953125f);
  CHECK(f16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_float(0x8001) == -std::ldexp(1.0f, -24));
  CHECK(f16_to_float(0x7c00) == INFINITY);
  // Every float16 survives the round trip.
  for (unsigned h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) continue;  // NaN payloads
    CHECK(float_to_f16(f16_to_float(static_cast<std::uint16_t>(h))) == h);
  }
}

TEST_CASE("bfloat16: the top 16 bits of float32, rounded to nearest even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.0f / 3.0f) == 0x3eab);   // 0x3eaaaaab: the dropped half 0xaaab is above 0x8000
  CHECK(float_to_bf16(bits_float(0x3f808000u)) == 0x3f80);  // exactly halfway, even stays
  CHECK(float_to_bf16(bits_float(0x3f818000u)) == 0x3f82);  // exactly halfway, odd rounds up
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(float_to_bf16(-INFINITY) == 0xff80);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  CHECK(std::isnan(bf16_to_float(float_to_bf16(bits_float(0x7f800001u)))));  // a NaN whose payload is in the low bits
  CHECK(bf16_to_float(0x3eab) == bits_float(0x3eab0000u));
}
