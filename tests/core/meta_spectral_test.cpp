// Meta functions of the FFT primitives, the complex views and hypot: output shapes and dtypes as ATen gives
// them (torch 1.13's _fft_r2c/_fft_c2r/_fft_c2c), a UserError naming the operator for what ATen rejects, and
// the gate that keeps complex tensors away from every other operator.
#include <doctest/doctest.h>

#include "core_test_util.h"

using namespace coretest;

namespace {
constexpr DType i8 = DType::Int64, f2 = DType::Float16, f4 = DType::Float32, f8 = DType::Float64,
                c4 = DType::Complex64, c8 = DType::Complex128;

Attrs r2c(IntList dim, std::int64_t norm, bool onesided) {
  return {{"dim", std::move(dim)}, {"normalization", norm}, {"onesided", onesided}};
}
Attrs c2r(IntList dim, std::int64_t norm, std::int64_t n) {
  return {{"dim", std::move(dim)}, {"normalization", norm}, {"last_dim_size", n}};
}
Attrs c2c(IntList dim, std::int64_t norm, bool forward) {
  return {{"dim", std::move(dim)}, {"normalization", norm}, {"forward", forward}};
}
}  // namespace

OPS_TEST_CASE("meta fft_r2c: the last dim halved when onesided, complex of the input's precision", "fft_r2c") {
  CHECK(meta1("fft_r2c", {T(f4, {3, 8})}, r2c({1}, 0, true)) == tt(c4, {3, 5}));
  CHECK(meta1("fft_r2c", {T(f4, {3, 7})}, r2c({-1}, 2, true)) == tt(c4, {3, 4}));
  CHECK(meta1("fft_r2c", {T(f8, {3, 7})}, r2c({1}, 1, false)) == tt(c8, {3, 7}));
  CHECK(meta1("fft_r2c", {T(f4, {4, 6, 5})}, r2c({2, 0}, 0, true)) == tt(c4, {3, 6, 5}));  // the last *listed* dim
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(c4, {4})}, r2c({0}, 0, true)), "fft_r2c", "float32 or float64", "complex64");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f2, {4})}, r2c({0}, 0, true)), "fft_r2c", "float16");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f4, {4})}, r2c({}, 0, true)), "fft_r2c", "at least one dimension");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f4, {4, 4})}, r2c({0, -2}, 0, true)), "fft_r2c", "twice");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f4, {4})}, r2c({1}, 0, true)), "fft_r2c", "out of range");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f4, {0, 4})}, r2c({0}, 0, true)), "fft_r2c", "empty");
  CHECK_USER_ERROR(meta_error("fft_r2c", {T(f4, {4})}, r2c({0}, 3, true)), "fft_r2c", "normalization must be 0");
}

OPS_TEST_CASE("meta fft_c2r: last_dim_size entries along the last dim, real of the input's precision", "fft_c2r") {
  CHECK(meta1("fft_c2r", {T(c4, {3, 5})}, c2r({1}, 2, 8)) == tt(f4, {3, 8}));
  CHECK(meta1("fft_c2r", {T(c4, {3, 5})}, c2r({1}, 2, 9)) == tt(f4, {3, 9}));
  CHECK(meta1("fft_c2r", {T(c8, {4, 3})}, c2r({1, 0}, 0, 7)) == tt(f8, {7, 3}));
  CHECK_USER_ERROR(meta_error("fft_c2r", {T(c4, {3, 5})}, c2r({1}, 2, 10)), "fft_c2r", "must hold 6 bins");
  CHECK_USER_ERROR(meta_error("fft_c2r", {T(c4, {3, 1})}, c2r({1}, 2, 0)), "fft_c2r", "last_dim_size must be positive");
  CHECK_USER_ERROR(meta_error("fft_c2r", {T(f4, {3, 5})}, c2r({1}, 2, 8)), "fft_c2r", "complex64 or complex128", "float32");
}

OPS_TEST_CASE("meta fft_c2c: the input's type, any dims", "fft_c2c") {
  CHECK(meta1("fft_c2c", {T(c4, {3, 5})}, c2c({0, 1}, 0, true)) == tt(c4, {3, 5}));
  CHECK(meta1("fft_c2c", {T(c8, {2, 3, 5})}, c2c({-1}, 2, false)) == tt(c8, {2, 3, 5}));
  CHECK_USER_ERROR(meta_error("fft_c2c", {T(f8, {3})}, c2c({0}, 0, true)), "fft_c2c", "complex64 or complex128");
  CHECK_USER_ERROR(meta_error("fft_c2c", {T(c4, {3})}, c2c({0}, -1, true)), "fft_c2c", "normalization");
}

OPS_TEST_CASE("meta view_as_real and view_as_complex: a last dimension of 2", "view_as_real", "view_as_complex") {
  CHECK(meta1("view_as_real", {T(c4, {3, 5})}) == tt(f4, {3, 5, 2}));
  CHECK(meta1("view_as_real", {T(c8, {})}) == tt(f8, {2}));
  CHECK(meta1("view_as_complex", {T(f4, {3, 2})}) == tt(c4, {3}));
  CHECK(meta1("view_as_complex", {T(f8, {2})}) == tt(c8, {}));
  CHECK_USER_ERROR(meta_error("view_as_real", {T(f4, {3})}), "view_as_real", "complex64 or complex128");
  CHECK_USER_ERROR(meta_error("view_as_complex", {T(f4, {3, 3})}), "view_as_complex", "last dimension must be 2");
  CHECK_USER_ERROR(meta_error("view_as_complex", {T(f4, {})}), "view_as_complex", "last dimension must be 2");
  CHECK_USER_ERROR(meta_error("view_as_complex", {T(i8, {2})}), "view_as_complex", "float32 or float64");
}

OPS_TEST_CASE("meta hypot: floating operands, broadcast and promoted", "hypot") {
  CHECK(meta1("hypot", {T(f4, {3, 1}), T(f4, {4})}) == tt(f4, {3, 4}));
  CHECK(meta1("hypot", {T(f4, {3}), T(f8, {3})}) == tt(f8, {3}));
  CHECK(meta1("hypot", {T(f2, {3}), S(Scalar(2.0))}) == tt(f2, {3}));
  CHECK_USER_ERROR(meta_error("hypot", {T(i8, {3}), T(i8, {3})}), "hypot", "floating point", "int64");
}

TEST_CASE("complex tensors reach only the operators declared complex_ok") {
  CHECK_USER_ERROR(meta_error("exp", {T(c4, {3})}), "exp of a complex64 tensor is not supported", "docs/ops.md");
  CHECK_USER_ERROR(meta_error("add", {T(c8, {3}), T(f4, {3})}), "add of a complex128 tensor is not supported");
  CHECK_USER_ERROR(meta_error("to_dtype", {T(f4, {3})}, {{"dtype", c4}}), "to_dtype making a complex64 tensor");
  CHECK(meta1("reshape", {T(f4, {3, 2})}, {{"shape", IntList{6}}}) == tt(f4, {6}));  // real ones unaffected
}
