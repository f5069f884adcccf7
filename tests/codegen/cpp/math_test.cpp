// The vectorizable float32 exp/tanh/erf that generated cpp code calls (codegen/cpp/include/thunderc/cpp_math.h),
// against glibc over a dense sweep of [-105, 90] and at the special values; its float16 storage type against
// core/ir/half.h.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ios>
#include <limits>

#include "core/ir/half.h"
#include "thunderc/cpp_math.h"

TEST_CASE("cpp_math: exp within 2 ulp, tanh and erf within 3e-7 absolute, specials as glibc") {
  double exp_rel = 0, tanh_abs = 0, erf_abs = 0;
  for (double d = -105; d <= 90; d += 0.000731) {
    const float x = static_cast<float>(d);
    const float e = std::exp(x);
    if (std::isfinite(e) && e > 1e-37f) exp_rel = std::max(exp_rel, std::fabs(double(thunderc_expf(x)) - e) / e);
    tanh_abs = std::max(tanh_abs, double(std::fabs(thunderc_tanhf(x) - std::tanh(x))));
    erf_abs = std::max(erf_abs, double(std::fabs(thunderc_erff(x) - std::erf(x))));
  }
  CHECK(exp_rel < 2.4e-7);  // 2 ulp at float32
  CHECK(tanh_abs < 3e-7);
  CHECK(erf_abs < 3e-7);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(thunderc_expf(inf) == inf);
  CHECK(thunderc_expf(-inf) == 0.0f);
  CHECK(thunderc_expf(100.0f) == inf);
  CHECK(std::isnan(thunderc_expf(NAN)));
  CHECK(thunderc_tanhf(-inf) == -1.0f);
  CHECK(std::isnan(thunderc_tanhf(NAN)));
  CHECK(thunderc_erff(inf) == 1.0f);
  CHECK(thunderc_erff(-inf) == -1.0f);
  CHECK(std::isnan(thunderc_erff(NAN)));
  CHECK(thunderc_tanhf(0.0f) == 0.0f);
  CHECK(thunderc_erff(0.0f) == 0.0f);
}

// The generated loops' float16 storage type against the compile-time converter (core/ir/half.h), which
// tests/core/half_test.cpp checks against hand-worked values: every float16 to float, and floats from every
// region of the float16 range (a stride through all 2^32 patterns plus every pattern near the edges: the
// subnormal/normal boundary, the overflow threshold 65520, the smallest subnormal, zero, inf and NaN).
TEST_CASE("cpp_math: thunderc_f16 converts as half.h does, bit for bit") {
  for (unsigned h = 0; h < 0x10000u; ++h) {
    thunderc_f16 x;
    x.bits = static_cast<std::uint16_t>(h);
    const float want = thunderc::f16_to_float(static_cast<std::uint16_t>(h)), got = x;
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      continue;
    }
    REQUIRE(std::memcmp(&want, &got, sizeof want) == 0);
  }
  auto check = [](std::uint32_t u) {
    const float f = thunderc::bits_float(u);
    const std::uint16_t want = thunderc::float_to_f16(f), got = thunderc_f16(f).bits;
    if (want != got) FAIL_CHECK("float bits 0x" << std::hex << u << ": thunderc_f16 0x" << got << ", half.h 0x" << want);
    return want == got;
  };
  std::size_t bad = 0;
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 4099) bad += !check(static_cast<std::uint32_t>(u));
  for (std::uint32_t edge : {0x00000000u, 0x33000000u, 0x33800000u, 0x38800000u, 0x477fe000u, 0x477ff000u, 0x47800000u,
                             0x7f800000u, 0x7fc00000u}) {
    for (std::uint32_t d = 0; d < 4096 && bad < 20; ++d) {
      bad += !check(edge + d) + !check(edge - d);
      bad += !check((edge + d) | 0x80000000u) + !check((edge - d) | 0x80000000u);
    }
  }
  CHECK(bad == 0);
}
