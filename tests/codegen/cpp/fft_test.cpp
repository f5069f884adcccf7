// The cpp executor's FFT kernels (codegen/cpp/include/thunderc/fft.h) against LibTorch's _fft_r2c, _fft_c2r
// and _fft_c2c (pocketfft in Debian's 1.13): 1-D lengths that are powers of two, primes and composites up to
// 4096, batches, 2-D and 3-D tensors with sorted and unsorted dims, all three normalizations, onesided and
// full r2c, forward and inverse c2c, c2r with even and odd last_dim_size, the r2c/c2r round trip, NaN and inf
// (see relative_error), size-1 dims, empty batches, and 2 threads against 1.
// Tolerance: max |ours - aten| <= tol * max(1, max |aten|), tol = 1e-5 for float32, 1e-12 for float64 (both
// compute in double; float differs from pocketfft, which computes in float, by its rounding).
#include "doctest_with_torch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "thunderc/fft.h"

namespace {

using Dims = std::vector<int64_t>;

template <class T>
constexpr double tolerance() {
  return std::is_same<T, float>::value ? 1e-5 : 1e-12;
}
template <class T>
at::ScalarType real_type() {
  return std::is_same<T, float>::value ? at::kFloat : at::kDouble;
}
template <class T>
at::ScalarType complex_type() {
  return std::is_same<T, float>::value ? at::kComplexFloat : at::kComplexDouble;
}
template <class T>
T* data(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

// max |ours - aten| / max(1, max |aten|) over real views, where both are finite. Where the inputs are finite,
// so must ours be wherever ATen's is. With a NaN or inf input, ours must be non-finite wherever ATen's is; it
// may be non-finite in more places: which bins of an affected line stay finite (pocketfft skips products
// with exactly-zero twiddle parts, so 0 * inf never happens there) differs between FFT algorithms, as it does
// between PyTorch's own backends (pocketfft, MKL, cuFFT). Ours makes every output of an affected line non-finite.
double relative_error(const at::Tensor& ours, const at::Tensor& aten, bool finite_inputs) {
  REQUIRE(ours.sizes() == aten.sizes());
  if (aten.numel() == 0) return 0;
  at::Tensor a = ours.is_complex() ? at::view_as_real(ours) : ours, b = aten.is_complex() ? at::view_as_real(aten) : aten;
  a = a.to(at::kDouble), b = b.to(at::kDouble);
  if (finite_inputs) {
    CHECK(at::isfinite(a).all().item<bool>());
    CHECK(at::isfinite(b).all().item<bool>());
  } else {
    CHECK_FALSE((at::isfinite(a) & ~at::isfinite(b)).any().item<bool>());  // ATen non-finite -> ours too
  }
  const at::Tensor finite = at::isfinite(a) & at::isfinite(b);
  if (!finite.any().item<bool>()) return 0;
  const double scale = std::max(1.0, b.masked_select(finite).abs().max().item<double>());
  return (a - b).masked_select(finite).abs().max().item<double>() / scale;
}
bool all_finite(const at::Tensor& t) {
  return at::isfinite(t.is_complex() ? at::view_as_real(t) : t).all().item<bool>();
}

// Largest error seen per dtype, reported at the end of each test case.
double g_max_error[2] = {0, 0};
template <class T>
void record(double err, const std::string& what) {
  INFO(what);
  CHECK(err <= tolerance<T>());
  double& m = g_max_error[std::is_same<T, float>::value ? 0 : 1];
  m = std::max(m, err);
}
void report() {
  MESSAGE("max relative error so far: float32 " << g_max_error[0] << ", float64 " << g_max_error[1]);
}

std::string describe(const char* op, at::IntArrayRef sizes, const Dims& dims, int norm, bool flag) {
  std::string s = std::string(op) + " sizes [";
  for (int64_t v : sizes) s += std::to_string(v) + ",";
  s += "] dims [";
  for (int64_t v : dims) s += std::to_string(v) + ",";
  return s + "] norm " + std::to_string(norm) + " flag " + std::to_string(flag);
}

template <class T>
at::Tensor ours_r2c(const at::Tensor& x, const Dims& dims, int norm, bool onesided, int threads = 1) {
  std::vector<int64_t> out_sizes = x.sizes().vec();
  if (onesided) out_sizes[dims.back()] = out_sizes[dims.back()] / 2 + 1;
  at::Tensor out = at::empty(out_sizes, at::TensorOptions().dtype(complex_type<T>()));
  thunderc_fft::r2c<T>(data<T>(x), data<T>(out), static_cast<int>(x.dim()), x.sizes().data(),
                       static_cast<int>(dims.size()), dims.data(), norm, onesided, threads);
  return out;
}
template <class T>
at::Tensor ours_c2c(const at::Tensor& z, const Dims& dims, int norm, bool forward, int threads = 1) {
  at::Tensor out = at::empty_like(z);
  thunderc_fft::c2c<T>(data<T>(z), data<T>(out), static_cast<int>(z.dim()), z.sizes().data(),
                       static_cast<int>(dims.size()), dims.data(), norm, forward, threads);
  return out;
}
template <class T>
at::Tensor ours_c2r(const at::Tensor& z, const Dims& dims, int norm, int64_t last_dim_size, int threads = 1) {
  std::vector<int64_t> out_sizes = z.sizes().vec();
  out_sizes[dims.back()] = last_dim_size;
  at::Tensor out = at::empty(out_sizes, at::TensorOptions().dtype(real_type<T>()));
  thunderc_fft::c2r<T>(data<T>(z), data<T>(out), static_cast<int>(out.dim()), out.sizes().data(),
                       static_cast<int>(dims.size()), dims.data(), norm, threads);
  return out;
}

template <class T>
void check_r2c(const at::Tensor& x, const Dims& dims, int norm, bool onesided) {
  record<T>(relative_error(ours_r2c<T>(x, dims, norm, onesided), at::_fft_r2c(x, dims, norm, onesided), all_finite(x)),
            describe("r2c", x.sizes(), dims, norm, onesided));
}
template <class T>
void check_c2c(const at::Tensor& z, const Dims& dims, int norm, bool forward) {
  record<T>(relative_error(ours_c2c<T>(z, dims, norm, forward), at::_fft_c2c(z, dims, norm, forward), all_finite(z)),
            describe("c2c", z.sizes(), dims, norm, forward));
}
// z holds the onesided half along dims.back(): last_dim_size/2+1 entries.
template <class T>
void check_c2r(const at::Tensor& z, const Dims& dims, int norm, int64_t last_dim_size) {
  const at::Tensor before = z.clone();
  const at::Tensor ours = ours_c2r<T>(z, dims, norm, last_dim_size);
  // ours leaves its input alone (compared bitwise: NaN == NaN)
  CHECK(std::memcmp(z.data_ptr(), before.data_ptr(), static_cast<std::size_t>(z.nbytes())) == 0);
  record<T>(relative_error(ours, at::_fft_c2r(z.clone(), dims, norm, last_dim_size), all_finite(z)),  // ATen may clobber
            describe("c2r", z.sizes(), dims, norm, last_dim_size));
}

template <class T>
at::Tensor real_input(at::IntArrayRef sizes) {
  return at::randn(sizes, at::TensorOptions().dtype(real_type<T>()));
}
template <class T>
at::Tensor complex_input(at::IntArrayRef sizes) {
  return at::randn(sizes, at::TensorOptions().dtype(complex_type<T>()));
}
// The onesided half of sizes along `last`, for c2r.
std::vector<int64_t> halved(std::vector<int64_t> sizes, int64_t last) {
  sizes[last] = sizes[last] / 2 + 1;
  return sizes;
}

const std::vector<int64_t> kLengths = {1, 2, 3, 5, 7, 8, 12, 16, 17, 31, 64, 100, 128, 257, 1000, 1024, 4096};

template <class T>
void one_d_lengths() {
  for (int64_t n : kLengths)
    for (int norm = 0; norm < 3; ++norm) {
      const at::Tensor x = real_input<T>({n}), xb = real_input<T>({3, n});
      for (bool onesided : {true, false}) {
        check_r2c<T>(x, {0}, norm, onesided);
        check_r2c<T>(xb, {1}, norm, onesided);
      }
      const at::Tensor z = complex_input<T>({n}), zb = complex_input<T>({n, 2});  // batch on the inner dim
      for (bool forward : {true, false}) {
        check_c2c<T>(z, {0}, norm, forward);
        check_c2c<T>(zb, {0}, norm, forward);
      }
      check_c2r<T>(complex_input<T>({n / 2 + 1}), {0}, norm, n);
      check_c2r<T>(complex_input<T>({2, n / 2 + 1}), {1}, norm, n);
    }
}

struct MultiCase {
  std::vector<int64_t> sizes;
  Dims dims;
};
const std::vector<MultiCase> kMulti = {
    {{4, 6}, {1}},          {{4, 6}, {0}},       {{4, 6}, {0, 1}},        {{6, 5}, {1, 0}},
    {{3, 5, 4}, {2, 0}},    {{3, 5, 4}, {0, 2}}, {{3, 5, 4}, {0, 1, 2}},  {{3, 5, 4}, {1}},
    {{4, 3, 5}, {2, 1, 0}}, {{5, 7, 9}, {1, 2}}, {{1, 1, 5}, {0, 2}},     {{2, 1, 6}, {1}},
    {{8, 12, 10}, {0, 1, 2}}, {{17, 4, 3}, {0}}, {{64, 1024}, {0, 1}},    {{40, 1000}, {1, 0}},
};

template <class T>
void multi_dim() {
  for (const MultiCase& c : kMulti)
    for (int norm = 0; norm < 3; ++norm) {
      const at::Tensor x = real_input<T>(c.sizes), z = complex_input<T>(c.sizes);
      for (bool onesided : {true, false}) check_r2c<T>(x, c.dims, norm, onesided);
      for (bool forward : {true, false}) check_c2c<T>(z, c.dims, norm, forward);
      const int64_t last = c.dims.back();
      for (int64_t n : {c.sizes[last], c.sizes[last] + 1}) {  // even and odd last_dim_size
        std::vector<int64_t> out_sizes = c.sizes;
        out_sizes[last] = n;
        check_c2r<T>(complex_input<T>(halved(out_sizes, last)), c.dims, norm, n);
      }
    }
}

template <class T>
void round_trip() {
  for (const MultiCase& c : std::vector<MultiCase>{{{7}, {0}}, {{12}, {0}}, {{3, 5, 4}, {2, 0}}, {{4, 9}, {0, 1}}}) {
    const at::Tensor x = real_input<T>(c.sizes);
    double n = 1;
    for (int64_t d : c.dims) n *= static_cast<double>(c.sizes[d]);
    const at::Tensor back = ours_c2r<T>(ours_r2c<T>(x, c.dims, 0, true), c.dims, 0, c.sizes[c.dims.back()]);
    record<T>(relative_error(back, x * n, true), describe("round trip", x.sizes(), c.dims, 0, true));
  }
}

template <class T>
void non_finite() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  for (T bad : {nan, inf, -inf}) {
    at::Tensor x = real_input<T>({4, 6, 5});
    x[1][2][3] = bad;  // one batch line only along dim 0 ...
    check_r2c<T>(x, {2}, 0, true);
    check_r2c<T>(x, {2}, 1, false);
    check_r2c<T>(x, {2, 1}, 0, true);  // ... then a whole slice
    // and nowhere else: only the line (1, 2, :) of the 1-D transform, only the slice (1, :, :) of the 2-D one
    const at::Tensor line_bad = (~at::isfinite(at::view_as_real(ours_r2c<T>(x, {2}, 0, true)))).any(3).any(2);
    CHECK(line_bad.sum().item<int64_t>() == 1);
    CHECK(line_bad[1][2].item<bool>());
    const at::Tensor slice_bad = (~at::isfinite(at::view_as_real(ours_r2c<T>(x, {2, 1}, 0, true)))).flatten(1).any(1);
    CHECK(slice_bad.sum().item<int64_t>() == 1);
    CHECK(slice_bad[1].item<bool>());
    for (int64_t n : {16, 17, 12}) {
      at::Tensor line = real_input<T>({2, n});
      line[0][n / 3] = bad;
      check_r2c<T>(line, {1}, 0, true);
    }
    at::Tensor z = complex_input<T>({3, 16});
    data<T>(z)[2 * 5 + 1] = bad;  // imaginary part of z[0][5]
    data<T>(z)[2 * (16 + 3)] = bad;  // real part of z[1][3]
    check_c2c<T>(z, {1}, 0, true);
    check_c2c<T>(z, {0, 1}, 2, false);
    for (int64_t n : {8, 9}) {
      at::Tensor h = complex_input<T>({3, n / 2 + 1});
      data<T>(h)[1] = bad;                             // imag of row 0's DC: ignored
      data<T>(h)[2 * (n / 2 + 1) + 2 * (n / 2) + 1] = bad;  // imag of row 1's last bin: Nyquist (ignored) when n even
      data<T>(h)[2 * 2 * (n / 2 + 1) + 2] = bad;       // real of row 2's bin 1
      check_c2r<T>(h, {1}, 0, n);
      check_c2r<T>(h, {0, 1}, 0, n);  // the c2c over dim 0 first spreads the DC imaginary part
    }
  }
}

}  // namespace

TEST_CASE("fft kernel: 1-D lengths, batches, norms (float32)") {
  at::manual_seed(1);
  one_d_lengths<float>();
  report();
}
TEST_CASE("fft kernel: 1-D lengths, batches, norms (float64)") {
  at::manual_seed(2);
  one_d_lengths<double>();
  report();
}
TEST_CASE("fft kernel: 2-D and 3-D tensors, unsorted dims (float32)") {
  at::manual_seed(3);
  multi_dim<float>();
  report();
}
TEST_CASE("fft kernel: 2-D and 3-D tensors, unsorted dims (float64)") {
  at::manual_seed(4);
  multi_dim<double>();
  report();
}
TEST_CASE("fft kernel: c2r(r2c(x)) is x * N without normalization") {
  at::manual_seed(5);
  round_trip<float>();
  round_trip<double>();
}
TEST_CASE("fft kernel: NaN and inf: non-finite wherever ATen's output is, the rest as ATen") {
  at::manual_seed(6);
  non_finite<float>();
  non_finite<double>();
}
TEST_CASE("fft kernel: c2r ignores the imaginary parts of the DC and Nyquist bins") {
  for (int64_t n : {6, 7}) {
    at::Tensor h = complex_input<double>({n / 2 + 1});
    const at::Tensor base = ours_c2r<double>(h, {0}, 2, n);
    data<double>(h)[1] = 123;                  // DC
    data<double>(h)[2 * (n / 2) + 1] = 45;     // Nyquist when n is even, an ordinary bin when odd
    const at::Tensor changed = ours_c2r<double>(h, {0}, 2, n);
    CHECK(at::equal(base, changed) == (n % 2 == 0));
    check_c2r<double>(h, {0}, 2, n);
  }
}
TEST_CASE("fft kernel: empty batches give empty outputs of ATen's sizes") {
  // Only batch dims are empty here: an empty transformed dim is refused by the operators' metas (as by ATen).
  for (const MultiCase& c : std::vector<MultiCase>{{{0, 8}, {1}}, {{4, 0, 6}, {2, 0}}, {{0, 3, 5}, {1, 2}}, {{3, 0}, {0}}}) {
    const at::Tensor x = real_input<double>(c.sizes), z = complex_input<double>(c.sizes);
    const at::Tensor r = ours_r2c<double>(x, c.dims, 1, true), f = ours_c2c<double>(z, c.dims, 2, true);
    const at::Tensor b = ours_c2r<double>(complex_input<double>(halved(c.sizes, c.dims.back())), c.dims, 0,
                                          c.sizes[c.dims.back()]);
    CHECK(r.numel() == 0);
    CHECK(f.numel() == 0);
    CHECK(b.numel() == 0);
    CHECK(r.sizes() == at::_fft_r2c(x, c.dims, 1, true).sizes());
    CHECK(f.sizes() == at::_fft_c2c(z, c.dims, 2, true).sizes());
  }
}
TEST_CASE("fft kernel: two threads give the same bits as one") {
  // Above the parallel threshold (32768 points per pass) lines are split across threads; each line's
  // arithmetic is unchanged, so the results must match exactly.
  at::manual_seed(7);
  const at::Tensor x = at::randn({64, 1000}, at::kFloat), z = at::randn({48, 1024}, at::kComplexDouble);
  CHECK(at::equal(ours_r2c<float>(x, {0, 1}, 1, true, 2), ours_r2c<float>(x, {0, 1}, 1, true, 1)));
  CHECK(at::equal(ours_r2c<float>(x, {1}, 0, false, 2), ours_r2c<float>(x, {1}, 0, false, 1)));
  CHECK(at::equal(ours_c2c<double>(z, {1, 0}, 2, false, 2), ours_c2c<double>(z, {1, 0}, 2, false, 1)));
  const at::Tensor h = at::randn({64, 1000}, at::kComplexFloat);
  CHECK(at::equal(ours_c2r<float>(h, {0, 1}, 0, 1998, 2), ours_c2r<float>(h, {0, 1}, 0, 1998, 1)));
}
