// The `blas` executor's code generation. Each claimed symbol becomes a few lines calling
// thunderc_blas:: kernels (include/thunderc/blas_kernels.h) with every shape, stride and offset
// computed here, at compile time, as integer literals. See docs/blas.md for the choices and numbers.
#include "codegen/blas/blas_backend.h"
#include "codegen/resources.h"

#include <algorithm>
#include <filesystem>

#include "core/ir/error.h"
#include "core/ir/types.h"

namespace thunderc {

namespace {

std::string lit(std::int64_t v) { return std::to_string(v) + "LL"; }

std::string array(const std::vector<std::int64_t>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + lit(v[i]);
  return s + "}";
}

std::int64_t product(const Shape& s, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Element strides of `src` (a contiguous tensor of shape `src`) along each dim of `dst`, which `src`
// broadcasts to (right-aligned); 0 where src is broadcast or absent.
std::vector<std::int64_t> broadcast_strides(const Shape& src, const Shape& dst) {
  std::vector<std::int64_t> out(dst.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t k = 0; k < src.size(); ++k) {
    std::size_t j = src.size() - 1 - k, i = dst.size() - 1 - k;
    out[i] = src[j] == 1 ? 0 : stride;
    stride *= src[j];
  }
  return out;
}

class Emitter {
 public:
  Emitter(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out)
      : ctx_(ctx), t_(ctx.trace()), sym_(sym), out_(out) {
    dtype_ = t_.type(sym.outputs[0]).dtype;
    half_ = is_half(dtype_);
    ctype_ = dtype_ == DType::Float64 ? "double" : "float";
  }

  const TensorType& in_type(std::size_t i) const { return t_.type(sym_.inputs[i].value); }
  const TensorType& out_type() const { return t_.type(sym_.outputs[0]); }
  bool has(std::size_t i) const { return i < sym_.inputs.size() && sym_.inputs[i].is_tensor(); }
  // Operands as float pointers: the buffers themselves, or (half types) their float copies in the scratch.
  std::string in(std::size_t i) const {
    if (half_) return "wide" + std::to_string(i);
    return "static_cast<const " + ctype_ + "*>(" + ctx_.buffer(sym_.inputs[i].value) + ".data)";
  }
  std::string out() const {
    if (half_) return "wide_out";
    return "static_cast<" + ctype_ + "*>(" + ctx_.buffer(sym_.outputs[0]) + ".data)";
  }

  // float16/bfloat16 run the float kernels, as ATen's CPU GEMMs accumulate half operands in float: each tensor
  // operand is widened into the scratch first and the float result rounded into the output once, after. The
  // caller runs the op between widen() and narrow().
  void widen() {
    if (!half_) return;
    const std::string T = dtype_ == DType::Float16 ? "thunderc_f16" : "thunderc_bf16";
    out_.line("unsigned char* wide_at = reinterpret_cast<unsigned char*>(" + ctx_.scratch() + ") + " +
              std::to_string(col_bytes(t_, sym_)) + ";");
    auto copy = [&](const std::string& name, std::int64_t n) {
      out_.line("float* " + name + " = reinterpret_cast<float*>(wide_at);");
      out_.line("wide_at += " + std::to_string(padded(n * 4)) + ";");
    };
    for (std::size_t i = 0; i < sym_.inputs.size(); ++i) {
      if (!has(i)) continue;
      const std::int64_t n = in_type(i).numel();
      copy("wide" + std::to_string(i), n);
      out_.line("{");
      out_.line("  const " + T + "* src = static_cast<const " + T + "*>(" + ctx_.buffer(sym_.inputs[i].value) + ".data);");
      out_.line("  #pragma omp simd");
      out_.line("  for (int64_t i = 0; i < " + lit(n) + "; ++i) wide" + std::to_string(i) + "[i] = src[i];");
      out_.line("}");
    }
    copy("wide_out", out_type().numel());
  }
  void narrow() {
    if (!half_) return;
    const std::string T = dtype_ == DType::Float16 ? "thunderc_f16" : "thunderc_bf16";
    out_.line("{");
    out_.line("  " + T + "* dst = static_cast<" + T + "*>(" + ctx_.buffer(sym_.outputs[0]) + ".data);");
    out_.line("  #pragma omp simd");
    out_.line("  for (int64_t i = 0; i < " + lit(out_type().numel()) + "; ++i) dst[i] = wide_out[i];");
    out_.line("}");
  }
  std::string num(double v) const { return "static_cast<" + ctype_ + ">(" + c_number_literal(v) + ")"; }

  // out = scale * broadcast(bias), as the GEMM's starting C (then beta = 1).
  void fill_bias(std::size_t bias_input, double scale) {
    const Shape& dst = out_type().shape;
    auto strides = broadcast_strides(in_type(bias_input).shape, dst);
    if (dst.empty()) {
      out_.line("thunderc_blas::fill_broadcast<" + ctype_ + ">(" + out() + ", nullptr, 0, " + in(bias_input) +
                ", nullptr, " + num(scale) + ");");
      return;
    }
    out_.line("static const int64_t bias_shape[] = " + array(dst) + ";");
    out_.line("static const int64_t bias_strides[] = " + array(strides) + ";");
    out_.line("thunderc_blas::fill_broadcast<" + ctype_ + ">(" + out() + ", bias_shape, " +
              std::to_string(dst.size()) + ", " + in(bias_input) + ", bias_strides, " + num(scale) + ");");
  }

  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const std::string& a,
            std::int64_t lda, const std::string& b, std::int64_t ldb, double beta, const std::string& c, std::int64_t ldc) {
    out_.line("thunderc_blas::gemm<" + ctype_ + ">(thunderc_blas_nt, " + (ta ? "true" : "false") + ", " + (tb ? "true" : "false") + ", " +
              lit(m) + ", " + lit(n) + ", " + lit(k) + ", " + num(alpha) + ", " + a + ", " + lit(std::max<std::int64_t>(lda, 1)) +
              ", " + b + ", " + lit(std::max<std::int64_t>(ldb, 1)) + ", " + num(beta) + ", " + c + ", " +
              lit(std::max<std::int64_t>(ldc, 1)) + ");");
  }

  // linear(a [..., K], weight [N, K] or [K], bias?) = a @ weight^T + bias: one GEMM with M = numel(a) / K,
  // reading the weight transposed in place (CblasTrans; measured as fast as a pre-transposed copy).
  void linear() {
    const TensorType &a = in_type(0), &w = in_type(1);
    std::int64_t k = a.shape.back(), m = product(a.shape, 0, a.rank() - 1), n = w.rank() == 2 ? w.shape[0] : 1;
    bool bias = has(2);
    if (bias) fill_bias(2, 1.0);
    gemm(false, true, m, n, k, 1.0, in(0), k, in(1), k, bias ? 1.0 : 0.0, out(), n);
  }

  // addmm(bias, a [n, k], b [k, m]) = beta * bias + alpha * a @ b.
  void addmm() {
    const TensorType &a = in_type(1), &b = in_type(2);
    double alpha = sym_.attrs.get_float("alpha"), beta = sym_.attrs.get_float("beta");
    if (beta != 0.0) fill_bias(0, beta);
    gemm(false, false, a.shape[0], b.shape[1], a.shape[1], alpha, in(1), a.shape[1], in(2), b.shape[1],
         beta != 0.0 ? 1.0 : 0.0, out(), b.shape[1]);
  }

  // matmul / bmm: 1-D operands as [1, K] / [K, 1] (their removed dims do not change the output's bytes),
  // batch dims broadcast. One GEMM when there is one batch, or when b is shared by all batches and a is
  // not broadcast (the batches stack into M); otherwise a loop of GEMMs over the batch.
  void matmul() {
    const TensorType &ta = in_type(0), &tb = in_type(1);
    Shape sa = ta.rank() == 1 ? Shape{1, ta.shape[0]} : ta.shape;
    Shape sb = tb.rank() == 1 ? Shape{tb.shape[0], 1} : tb.shape;
    std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
    Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    std::size_t rank = std::max(ba.size(), bb.size());
    Shape batch(rank, 1);
    for (std::size_t i = 0; i < rank; ++i) {
      std::int64_t da = i + ba.size() >= rank ? ba[i + ba.size() - rank] : 1;
      std::int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
      batch[i] = da == 1 ? db : da;
    }
    auto stra = broadcast_strides(ba, batch), strb = broadcast_strides(bb, batch);
    for (auto& s : stra) s *= m * k;
    for (auto& s : strb) s *= k * n;
    std::int64_t count = product(batch, 0, batch.size());
    bool b_shared = std::all_of(strb.begin(), strb.end(), [](std::int64_t s) { return s == 0; });
    bool a_full = ba == batch;
    if (count == 1 || (b_shared && a_full)) {
      gemm(false, false, m * (b_shared && a_full ? count : 1), n, k, 1.0, in(0), k, in(1), n, 0.0, out(), n);
      return;
    }
    out_.line("static const int64_t batch_shape[] = " + array(batch) + ";");
    out_.line("static const int64_t a_strides[] = " + array(stra) + ";");
    out_.line("static const int64_t b_strides[] = " + array(strb) + ";");
    out_.line("thunderc_blas::batched_gemm<" + ctype_ + ">(thunderc_blas_nt, " + std::to_string(rank) + ", batch_shape, a_strides, b_strides, " +
              lit(m) + ", " + lit(n) + ", " + lit(k) + ", " + in(0) + ", " + lit(std::max<std::int64_t>(k, 1)) + ", " + in(1) +
              ", " + lit(std::max<std::int64_t>(n, 1)) + ", " + out() + ");");
  }

  void conv2d() {
    out_.line("static const thunderc_blas::Conv2d g = {" + conv_geometry(t_, sym_) + "};");
    std::string bias = has(2) ? in(2) : "nullptr";
    if (conv_is_depthwise(t_, sym_)) {
      out_.line("thunderc_blas::conv2d_depthwise<" + ctype_ + ">(thunderc_blas_nt, g, " + in(0) + ", " + in(1) + ", " + bias + ", " + out() + ");");
    } else {
      std::string col = col_bytes(t_, sym_) ? "reinterpret_cast<" + ctype_ + "*>(" + ctx_.scratch() + ")" : "nullptr";
      out_.line("thunderc_blas::conv2d_gemm<" + ctype_ + ">(thunderc_blas_nt, g, " + in(0) + ", " + in(1) + ", " + bias + ", " + out() + ", " + col + ");");
    }
  }

  struct Geometry {
    std::int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
  };
  static Geometry geometry(const Trace& t, const BoundSymbol& s) {
    const TensorType &x = t.type(s.inputs[0].value), &w = t.type(s.inputs[1].value), &y = t.type(s.outputs[0]);
    auto pair = [&](const char* name) {
      const IntList& v = s.attrs.get_ints(name);
      return v.size() == 1 ? IntList{v[0], v[0]} : v;
    };
    IntList st = pair("stride"), pd = pair("padding"), dl = pair("dilation");
    std::size_t r = x.rank();
    return {r == 4 ? x.shape[0] : 1, x.shape[r - 3], x.shape[r - 2], x.shape[r - 1], w.shape[0], w.shape[2], w.shape[3],
            st[0], st[1], pd[0], pd[1], dl[0], dl[1], s.attrs.get_int("groups"), y.shape[r - 2], y.shape[r - 1]};
  }
  static std::string conv_geometry(const Trace& t, const BoundSymbol& s) {
    Geometry g = geometry(t, s);
    std::string a = array({g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups, g.oh, g.ow});
    return a.substr(1, a.size() - 2);  // without the braces
  }
  // groups == channels (> 1): direct loops (see docs/blas.md for why not im2col + GEMM).
  static bool conv_is_depthwise(const Trace& t, const BoundSymbol& s) {
    Geometry g = geometry(t, s);
    return g.groups == g.c && g.c > 1;
  }
  static bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
  static std::size_t padded(std::int64_t bytes) { return (static_cast<std::size_t>(bytes) + 63) / 64 * 64; }
  // The im2col buffer of a convolution (in the compute type: float for the half types).
  static std::size_t col_bytes(const Trace& t, const BoundSymbol& s) {
    if (s.op->name != "conv2d" || conv_is_depthwise(t, s)) return 0;
    Geometry g = geometry(t, s);
    if (g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0) return 0;
    const DType d = t.type(s.outputs[0]).dtype;
    return padded(g.c / g.groups * g.kh * g.kw * g.oh * g.ow * static_cast<std::int64_t>(is_half(d) ? 4 : dtype_size(d)));
  }
  // The im2col buffer, then (half types) the float copies of the operands and of the result.
  static std::size_t scratch_bytes_of(const Trace& t, const BoundSymbol& s) {
    std::size_t bytes = col_bytes(t, s);
    if (!is_half(t.type(s.outputs[0]).dtype)) return bytes;
    for (const Operand& in : s.inputs)
      if (in.is_tensor()) bytes += padded(t.type(in.value).numel() * 4);
    return bytes + padded(t.type(s.outputs[0]).numel() * 4);
  }

 private:
  const EmitContext& ctx_;
  const Trace& t_;
  const BoundSymbol& sym_;
  SourceWriter& out_;
  DType dtype_;
  bool half_ = false;
  std::string ctype_;
};

}  // namespace

BlasLocation BlasLocation::from_build() {
  BlasLocation l;
  l.kernels_include_dir = resource_paths().blas_include;
  l.library = THUNDERC_OPENBLAS_LIBRARY;
  if (!l.library.empty()) {
    std::string dir = std::filesystem::path(l.library).parent_path().string();
    bool system = dir.rfind("/usr/lib", 0) == 0 || dir.rfind("/lib", 0) == 0;
    if (!system) l.library_dir = dir;
  }
  return l;
}

BlasBackend::BlasBackend(BlasLocation location) : location_(std::move(location)) {}

LinkInputs BlasBackend::link_inputs() const {
  LinkInputs in;
  in.includes = {"thunderc/blas_kernels.h", "thunderc/cpp_math.h"};  // cpp_math.h: the half storage types
  in.include_dirs = {location_.kernels_include_dir, resource_paths().cpp_include};
  // -fopenmp: thunderc's own threads run the GEMM blocks (blas_kernels.h says why OpenBLAS's are not used).
  in.link_flags = {"-fopenmp"};
  if (location_.library.empty()) in.link_flags.push_back("-lopenblas");
  else in.libraries = {location_.library};
  if (!location_.library_dir.empty()) in.rpaths = {location_.library_dir};
  // -O3: the im2col / depthwise / bias loops vectorize fully (GCC 12's -O2 uses the "very cheap" cost model).
  in.compile_flags = {"-O3", "-fopenmp", "-Werror=vla"};
  return in;
}

void BlasBackend::emit_variant_prologue(SourceWriter& out) const {
  out.line("[[maybe_unused]] const int thunderc_blas_nt = thunderc_blas::begin_call(call->num_threads);");
}

std::size_t BlasBackend::scratch_bytes(const Trace& trace, const BoundSymbol& sym) const {
  return Emitter::scratch_bytes_of(trace, sym);
}

void BlasBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  out.line("{");
  out.indent();
  Emitter e(ctx, sym, out);
  const std::string& op = sym.op->name;
  e.widen();
  if (op == "linear") e.linear();
  else if (op == "addmm") e.addmm();
  else if (op == "matmul" || op == "bmm") e.matmul();
  else if (op == "conv2d") e.conv2d();
  else internal_error("blas: no code generation for '", op, "'");
  e.narrow();
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
