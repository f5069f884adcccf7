// torch.fft's functions and the parts of complex tensors, as both frontends import them (TorchScript's
// aten::fft_rfft, torch.export's torch.ops.aten.fft_rfft.default, ...): rewritten into ATen's three FFT
// primitives fft_r2c / fft_c2r / fft_c2c the way ATen computes them (the signal sizes n / s zero-pad or trim
// the input first; the norm string picks the scaling), and real / imag / conj through view_as_real pairs.
// Complex arithmetic around them is lowered by the importers' emit (core/frontend/complex_ops.h).
// M is the frontend's importer: emit(op, inputs, attrs), type(v), device(), constant(...) (as complex_ops.h). `fail(message)` does not return.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/frontend/complex_ops.h"
#include "core/ir/attrs.h"
#include "core/ir/error.h"
#include "core/ir/trace.h"

namespace thunderc::fft_ops {

enum class Kind { R2C, C2R, C2C };

struct Function {
  const char* name;     // ATen's name, without namespace or overload: "fft_rfft"
  Kind kind;            // C2C: of a real input, ATen's two-sided R2C (forward) or the complex input (inverse)
  bool forward;         // the direction that decides the norm's scaling
  bool many_dims;       // takes `s` and `dim` lists (fft2, fftn) rather than `n` and one `dim`
  IntList default_dims; // when `dim` is None: {-1} (one dim), {-2, -1} (2-D), {} (n-D: the last len(s), or all)
  bool hermitian;       // hfft (c2r of the conjugate) and ihfft (the conjugate of a onesided r2c)
};

inline const std::vector<Function>& functions() {
  static const std::vector<Function> table = {
      {"fft_fft", Kind::C2C, true, false, {-1}, false},       {"fft_ifft", Kind::C2C, false, false, {-1}, false},
      {"fft_fft2", Kind::C2C, true, true, {-2, -1}, false},   {"fft_ifft2", Kind::C2C, false, true, {-2, -1}, false},
      {"fft_fftn", Kind::C2C, true, true, {}, false},         {"fft_ifftn", Kind::C2C, false, true, {}, false},
      {"fft_rfft", Kind::R2C, true, false, {-1}, false},      {"fft_irfft", Kind::C2R, false, false, {-1}, false},
      {"fft_rfft2", Kind::R2C, true, true, {-2, -1}, false},  {"fft_irfft2", Kind::C2R, false, true, {-2, -1}, false},
      {"fft_rfftn", Kind::R2C, true, true, {}, false},        {"fft_irfftn", Kind::C2R, false, true, {}, false},
      {"fft_hfft", Kind::C2R, true, false, {-1}, true},       {"fft_ihfft", Kind::R2C, false, false, {-1}, true},
  };
  return table;
}

// A call's optional arguments as the frontend read them.
struct Args {
  std::optional<IntList> sizes;  // n (one entry) or s
  std::optional<IntList> dims;   // dim (one entry) or dim
  std::string norm = "backward"; // None reads as "backward"
};

// ATen's fft_norm_mode: 0 none, 1 1/sqrt(n), 2 1/n, for `norm` in a forward or inverse transform.
template <class Fail>
std::int64_t norm_mode(const std::string& norm, bool forward, Fail fail) {
  if (norm == "ortho") return 1;
  if (norm == "backward") return forward ? 0 : 2;
  if (norm == "forward") return forward ? 2 : 0;
  fail("norm must be None, \"backward\", \"ortho\" or \"forward\", got " + quote_string(norm));
  internal_error("fft_ops: the failure callback returned");
}

// x with dim of size `size`: trimmed from the end, or padded there with zeros.
template <class M>
ValueId resized(M& m, ValueId x, std::int64_t dim, std::int64_t size) {
  const std::int64_t have = m.type(x).shape[static_cast<std::size_t>(dim)];
  if (have > size)
    return m.emit("slice", {Operand::tensor(x)}, {{"dim", dim}, {"start", std::int64_t{0}}, {"end", size}, {"step", std::int64_t{1}}});
  if (have == size) return x;
  const auto rank = static_cast<std::int64_t>(m.type(x).rank());
  IntList pad(static_cast<std::size_t>(2 * (rank - dim)), 0);  // constant_pad_nd lists the last dim first
  pad[pad.size() - 1] = size - have;
  return m.emit("constant_pad_nd", {Operand::tensor(x)}, {{"pad", pad}, {"value", 0.0}});
}

// One call of `f` on x: the dims (from `dim`, or the defaults as torch.fft), the signal sizes (for c2r the last
// one is the output length), ATen's conversions first (integers to float32, a real input of a complex
// transform to complex), then the primitive.
template <class M, class Fail>
ValueId transform(M& m, const Function& f, ValueId x, const Args& a, Fail fail) {
  DType dt = m.type(x).dtype;
  Kind kind = f.kind;
  if (kind == Kind::R2C && is_complex(dt)) fail("needs a real input, got " + std::string(dtype_name(dt)));
  if (!is_floating(dt) && !is_complex(dt)) x = m.emit("to_dtype", {Operand::tensor(x)}, {{"dtype", DType::Float32}});
  dt = m.type(x).dtype;
  if (dt != DType::Float32 && dt != DType::Float64 && !is_complex(dt))  // ATen's CPU FFTs refuse half types too
    fail("needs a float32, float64 or complex input, got " + std::string(dtype_name(dt)));
  if (kind == Kind::C2C && f.forward && !is_complex(dt)) kind = Kind::R2C;  // fft of a real tensor: two-sided r2c
  if (!is_complex(dt) && kind != Kind::R2C)  // (x, 0): ifft of a real tensor, irfft's Hermitian input
    x = m.emit("to_dtype", {Operand::tensor(x)}, {{"dtype", real_to_complex(dt)}});
  const std::size_t rank = m.type(x).rank();
  IntList dims;
  if (a.dims) {
    dims = *a.dims;
  } else if (!f.default_dims.empty()) {
    dims = f.default_dims;
  } else {  // fftn with dim None: the last len(s) dims, or every dim
    const std::size_t count = a.sizes ? a.sizes->size() : rank;
    if (count > rank) fail("s names more dimensions than the input has");
    for (std::size_t d = rank - count; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
  }
  if (dims.empty()) fail("transforms no dimension");
  if (a.sizes && a.sizes->size() != dims.size()) fail("s and dim must have the same length");
  const auto r = static_cast<std::int64_t>(rank);
  for (std::int64_t& d : dims) {
    if (d < -r || d >= r) fail("dimension " + std::to_string(d) + " is out of range for a tensor of rank " + std::to_string(rank));
    if (d < 0) d += r;
  }
  // The last transformed dim of c2r: the output length (default 2 * (bins - 1)); the input holds n/2 + 1 bins.
  const std::int64_t last = dims.back();
  std::int64_t out_last = 0;
  if (kind == Kind::C2R) {
    out_last = a.sizes ? a.sizes->back() : 2 * (m.type(x).shape[static_cast<std::size_t>(last)] - 1);
    if (out_last < 1) fail("the output would have " + std::to_string(out_last) + " points along dimension " + std::to_string(last));
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::int64_t size = a.sizes ? (*a.sizes)[i] : m.type(x).shape[static_cast<std::size_t>(dims[i])];
    if (a.sizes && size == -1) size = m.type(x).shape[static_cast<std::size_t>(dims[i])];
    if (kind == Kind::C2R && i + 1 == dims.size()) size = out_last / 2 + 1;
    if (size < 1) fail("signal size " + std::to_string(size) + " is not positive");
    x = resized(m, x, dims[i], size);
  }
  const std::int64_t norm = norm_mode(a.norm, f.forward, fail);
  if (kind == Kind::R2C) {
    const bool onesided = f.kind == Kind::R2C;  // rfft and ihfft; fft of a real tensor is two-sided
    const ValueId X = m.emit("fft_r2c", {Operand::tensor(x)}, {{"dim", dims}, {"normalization", norm}, {"onesided", onesided}});
    return f.hermitian ? complex_ops::conjugated(m, X) : X;
  }
  if (kind == Kind::C2R) {
    if (f.hermitian) x = complex_ops::conjugated(m, x);
    return m.emit("fft_c2r", {Operand::tensor(x)}, {{"dim", dims}, {"normalization", norm}, {"last_dim_size", out_last}});
  }
  return m.emit("fft_c2c", {Operand::tensor(x)}, {{"dim", dims}, {"normalization", norm}, {"forward", f.forward}});
}

// real / imag / angle / conj of x as PyTorch defines them on real tensors too: real and conj are x itself,
// imag refuses, angle is 0 or pi (not supported here).
template <class M, class Fail>
ValueId part(M& m, ValueId x, std::int64_t index, Fail fail) {
  if (is_complex(m.type(x).dtype)) return complex_ops::part(m, x, index);
  if (index == 1) fail("imag of a real tensor: PyTorch refuses it too");
  return x;
}
template <class M, class Fail>
ValueId angle(M& m, ValueId x, Fail fail) {
  if (!is_complex(m.type(x).dtype)) fail("angle of a real tensor is not supported (only of complex ones)");
  return m.emit("atan2", {Operand::tensor(complex_ops::part(m, x, 1)), Operand::tensor(complex_ops::part(m, x, 0))});
}
template <class M>
ValueId conj(M& m, ValueId x) {
  return is_complex(m.type(x).dtype) ? complex_ops::conjugated(m, x) : x;
}

}  // namespace thunderc::fft_ops
