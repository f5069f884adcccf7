// Complex tensors and the FFTs: ATen's _fft_r2c, _fft_c2r and _fft_c2c (what torch.fft's functions and stft
// come down to), with their attributes as ATen takes them, and view_as_real / view_as_complex between a
// complex tensor [..., ] and its interleaved float pairs [..., 2]. These are the only operators that take or
// make complex tensors (OpDef::complex_ok); the frontends lower complex arithmetic and data movement to real
// operators between view_as_real and view_as_complex (core/frontend/complex_ops.h).
#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc {

namespace {

// The transformed dims, wrapped, checked distinct and non-empty (ATen's own checks).
std::vector<std::size_t> fft_dims(const MetaArgs& m, const TensorType& t) {
  const IntList& dims = m.attrs.get_ints("dim");
  if (dims.empty()) user_error(m.op.name, ": dim must name at least one dimension");
  std::vector<std::size_t> out;
  for (std::int64_t d : dims) {
    const auto w = static_cast<std::size_t>(wrap_dim(d, t.rank(), m.op.name));
    if (std::find(out.begin(), out.end(), w) != out.end())
      user_error(m.op.name, ": dim ", shape_str(dims), " names dimension ", w, " twice");
    if (t.shape[w] < 1) user_error(m.op.name, ": dimension ", w, " of ", shape_str(t.shape), " is empty: nothing to transform");
    out.push_back(w);
  }
  return out;
}

void check_normalization(const MetaArgs& m) {
  const std::int64_t norm = m.attrs.get_int("normalization");
  if (norm < 0 || norm > 2)
    user_error(m.op.name, ": normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got ", norm);
}

void require_real(const TensorType& t, const std::string& op) {
  if (t.dtype != DType::Float32 && t.dtype != DType::Float64)
    user_error(op, ": the input must be float32 or float64, got ", dtype_name(t.dtype));
}

void require_complex(const TensorType& t, const std::string& op) {
  if (!is_complex(t.dtype)) user_error(op, ": the input must be complex64 or complex128, got ", dtype_name(t.dtype));
}

OpDef spectral(OpDef def) {
  def.complex_ok = true;
  return def;
}

}  // namespace

void register_spectral_ops(OpRegistry& r) {
  r.add(spectral({"fft_r2c", OpCategory::Spectral, {{"a"}},
                  {{"dim", AttrType::IntList}, {"normalization", AttrType::Int}, {"onesided", AttrType::Bool}},
                  [](const MetaArgs& m) -> std::vector<TensorType> {
                    TensorType out = m.tensor(0);
                    require_real(out, "fft_r2c");
                    check_normalization(m);
                    const std::vector<std::size_t> dims = fft_dims(m, out);
                    if (m.attrs.get_bool("onesided")) out.shape[dims.back()] = out.shape[dims.back()] / 2 + 1;
                    out.dtype = real_to_complex(out.dtype);
                    return {out};
                  },
                  "the discrete Fourier transform of a real tensor over dim (ATen's _fft_r2c): the last of dim "
                  "keeps n/2+1 bins when onesided; normalization 0 none, 1 1/sqrt(n), 2 1/n"}));
  r.add(spectral({"fft_c2r", OpCategory::Spectral, {{"a"}},
                  {{"dim", AttrType::IntList}, {"normalization", AttrType::Int}, {"last_dim_size", AttrType::Int}},
                  [](const MetaArgs& m) -> std::vector<TensorType> {
                    TensorType out = m.tensor(0);
                    require_complex(out, "fft_c2r");
                    check_normalization(m);
                    const std::vector<std::size_t> dims = fft_dims(m, out);
                    const std::int64_t n = m.attrs.get_int("last_dim_size");
                    if (n < 1) user_error("fft_c2r: last_dim_size must be positive, got ", n);
                    if (out.shape[dims.back()] != n / 2 + 1)
                      user_error("fft_c2r: dimension ", dims.back(), " of ", shape_str(out.shape), " must hold ",
                                 n / 2 + 1, " bins for last_dim_size ", n, " (thunderc does not pad or trim here)");
                    out.shape[dims.back()] = n;
                    out.dtype = complex_to_real(out.dtype);
                    return {out};
                  },
                  "the inverse of fft_r2c (ATen's _fft_c2r): a onesided Hermitian spectrum to a real tensor with "
                  "last_dim_size entries along the last of dim"}));
  r.add(spectral({"fft_c2c", OpCategory::Spectral, {{"a"}},
                  {{"dim", AttrType::IntList}, {"normalization", AttrType::Int}, {"forward", AttrType::Bool}},
                  [](const MetaArgs& m) -> std::vector<TensorType> {
                    TensorType out = m.tensor(0);
                    require_complex(out, "fft_c2c");
                    check_normalization(m);
                    fft_dims(m, out);
                    return {out};
                  },
                  "the discrete Fourier transform of a complex tensor over dim, forward (e^-i) or inverse (e^+i, "
                  "unscaled unless normalization says so) (ATen's _fft_c2c)"}));
  r.add(spectral({"view_as_real", OpCategory::Spectral, {{"a"}}, {},
                  [](const MetaArgs& m) -> std::vector<TensorType> {
                    TensorType out = m.tensor(0);
                    require_complex(out, "view_as_real");
                    out.shape.push_back(2);
                    out.dtype = complex_to_real(out.dtype);
                    return {out};
                  },
                  "a complex tensor's (real, imaginary) pairs as a real tensor with a last dimension of 2"}));
  r.add(spectral({"view_as_complex", OpCategory::Spectral, {{"a"}}, {},
                  [](const MetaArgs& m) -> std::vector<TensorType> {
                    TensorType out = m.tensor(0);
                    require_real(out, "view_as_complex");
                    if (out.shape.empty() || out.shape.back() != 2)
                      user_error("view_as_complex: the last dimension must be 2, got ", shape_str(out.shape));
                    out.shape.pop_back();
                    out.dtype = real_to_complex(out.dtype);
                    return {out};
                  },
                  "the inverse of view_as_real: pairs along a last dimension of 2 as one complex tensor"}));
}

}  // namespace thunderc
