// The vectorizable float32 exp/tanh/erf that generated cpp code calls (codegen/cpp/include/thunderc/cpp_math.h),
// against glibc over a dense sweep of [-105, 90] and at the special values.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

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
