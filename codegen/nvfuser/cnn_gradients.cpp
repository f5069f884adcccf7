#include "codegen/nvfuser/cnn_gradients.h"

#include <algorithm>

#include "codegen/loops/conv_columns_plan.h"
#include "codegen/loops/region_lowering.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

// An attribute of one or two values as two (empty: `fallback`).
IntList pair_attr(const Attrs& attrs, const std::string& name, const IntList& fallback = {}) {
  const IntList& v = attrs.get_ints(name);
  if (v.empty()) return fallback;
  return v.size() == 1 ? IntList{v[0], v[0]} : v;
}

// im2col / col2im: [N, C, H, W] <-> [N, C*kh*kw, OH*OW] (the cpp kernel's layout: codegen/cpp/conv_columns.cpp).
cuda::KernelLaunch conv_columns_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const loops::ConvColumnsPlan g = loops::plan_conv_columns(t, sym);
  const bool to_columns = g.to_columns;
  const std::int64_t n = g.n, c = g.c, h = g.h, w = g.w, oh = g.oh, ow = g.ow, l = g.l, kk = g.kk;
  const IntList &k = g.k, &d = g.d, &p = g.p, &s = g.s;
  const std::string C = loops::ctype(g.dtype);
  const std::vector<std::string> params = {C + "* __restrict__ dst", "const " + C + "* __restrict__ src"};
  if (to_columns) {
    // Element e_ of the columns: image plane q_, kernel position (i_, j_), output position (y_, x_).
    return grid_stride_kernel(name, n * c * kk * l, params,
                       {"const long long x_ = e_ % " + S(ow) + ", y_ = (e_ / " + S(ow) + ") % " + S(oh) + ";",
                        "const long long r_ = (e_ / " + S(l) + ") % " + S(kk) + ", q_ = e_ / " + S(kk * l) + ";",
                        "const long long ih_ = y_ * " + S(s[0]) + " - " + S(p[0]) + " + (r_ / " + S(k[1]) + ") * " + S(d[0]) + ";",
                        "const long long iw_ = x_ * " + S(s[1]) + " - " + S(p[1]) + " + (r_ % " + S(k[1]) + ") * " + S(d[1]) + ";",
                        "dst[e_] = ih_ >= 0 && ih_ < " + S(h) + " && iw_ >= 0 && iw_ < " + S(w) + " ? src[q_ * " + S(h * w) +
                            " + ih_ * " + S(w) + " + iw_] : " + C + "(0);"});
  }
  // Element e_ of the image: plane q_, pixel (ih_, iw_); kernel position (i_, j_) reads output position
  // (y_, x_) when ih_ + p - i_ * d is a multiple of the stride inside the output.
  return grid_stride_kernel(
      name, n * c * h * w, params,
      {"const long long iw_ = e_ % " + S(w) + ", ih_ = (e_ / " + S(w) + ") % " + S(h) + ", q_ = e_ / " + S(h * w) + ";",
       "const " + C + "* cols_ = src + q_ * " + S(kk * l) + ";",
       C + " acc_ = 0;",
       "for (long long i_ = 0; i_ < " + S(k[0]) + "; ++i_) {",
       "  const long long ty_ = ih_ + " + S(p[0]) + " - i_ * " + S(d[0]) + ";",
       "  if (ty_ < 0 || ty_ % " + S(s[0]) + " != 0 || ty_ / " + S(s[0]) + " >= " + S(oh) + ") continue;",
       "  for (long long j_ = 0; j_ < " + S(k[1]) + "; ++j_) {",
       "    const long long tx_ = iw_ + " + S(p[1]) + " - j_ * " + S(d[1]) + ";",
       "    if (tx_ < 0 || tx_ % " + S(s[1]) + " != 0 || tx_ / " + S(s[1]) + " >= " + S(ow) + ") continue;",
       "    acc_ += cols_[(i_ * " + S(k[1]) + " + j_) * " + S(l) + " + (ty_ / " + S(s[0]) + ") * " + S(ow) + " + tx_ / " +
           S(s[1]) + "];",
       "  }",
       "}",
       "dst[e_] = acc_;"});
}

// max_pool2d_backward(grad [.., OH, OW], x [.., H, W]) -> [.., H, W] (the cpp kernel: codegen/cpp/pool3d.cpp).
cuda::KernelLaunch max_pool_backward_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[1].value);
  const TensorType& g = t.type(sym.inputs[0].value);
  const std::size_t r = a.rank();
  std::int64_t planes = 1;
  for (std::size_t i = 0; i + 2 < r; ++i) planes *= a.shape[i];
  const std::int64_t h = a.shape[r - 2], w = a.shape[r - 1], oh = g.shape[r - 2], ow = g.shape[r - 1];
  const IntList k = pair_attr(sym.attrs, "kernel_size"), s = pair_attr(sym.attrs, "stride", k),
                p = pair_attr(sym.attrs, "padding"), d = pair_attr(sym.attrs, "dilation", {1, 1});
  const std::string C = loops::ctype(a.dtype);
  // Output rows whose window [oh * s - p, oh * s - p + (k - 1) * d] spans row ih_: lo_ .. hi_ (likewise columns).
  auto range = [&](const std::string& axis, const std::string& at, std::int64_t kk, std::int64_t ss, std::int64_t pp,
                   std::int64_t dd, std::int64_t on) {
    const std::string lo = at + " + " + S(pp - (kk - 1) * dd);
    return std::vector<std::string>{
        "const long long " + axis + "lo_ = " + lo + " <= 0 ? 0 : (" + lo + " + " + S(ss - 1) + ") / " + S(ss) + ";",
        "const long long " + axis + "top_ = (" + at + " + " + S(pp) + ") / " + S(ss) + ";",
        "const long long " + axis + "hi_ = " + axis + "top_ < " + S(on - 1) + " ? " + axis + "top_ : " + S(on - 1) + ";"};
  };
  std::vector<std::string> body = {
      "const long long iw_ = e_ % " + S(w) + ", ih_ = (e_ / " + S(w) + ") % " + S(h) + ", q_ = e_ / " + S(h * w) + ";",
      "const " + C + "* in_ = x + q_ * " + S(h * w) + ";",
      "const " + C + "* go_ = gy + q_ * " + S(oh * ow) + ";",
      "const long long me_ = ih_ * " + S(w) + " + iw_;"};
  for (const std::string& ln : range("y", "ih_", k[0], s[0], p[0], d[0], oh)) body.push_back(ln);
  for (const std::string& ln : range("x", "iw_", k[1], s[1], p[1], d[1], ow)) body.push_back(ln);
  const std::vector<std::string> window = {
      C + " acc_ = 0;",
      "for (long long oy_ = ylo_; oy_ <= yhi_; ++oy_) {",
      "  long long hs_ = oy_ * " + S(s[0]) + " - " + S(p[0]) + ";",
      "  const long long he_ = hs_ + " + S((k[0] - 1) * d[0] + 1) + " < " + S(h) + " ? hs_ + " + S((k[0] - 1) * d[0] + 1) + " : " + S(h) + ";",
      "  while (hs_ < 0) hs_ += " + S(d[0]) + ";",
      "  for (long long ox_ = xlo_; ox_ <= xhi_; ++ox_) {",
      "    long long ws_ = ox_ * " + S(s[1]) + " - " + S(p[1]) + ";",
      "    const long long we_ = ws_ + " + S((k[1] - 1) * d[1] + 1) + " < " + S(w) + " ? ws_ + " + S((k[1] - 1) * d[1] + 1) + " : " + S(w) + ";",
      "    while (ws_ < 0) ws_ += " + S(d[1]) + ";",
      "    long long at_ = hs_ * " + S(w) + " + ws_;",
      "    " + C + " best_ = -" + C + "(__builtin_inff());",
      "    for (long long hh_ = hs_; hh_ < he_; hh_ += " + S(d[0]) + ")",
      "      for (long long ww_ = ws_; ww_ < we_; ww_ += " + S(d[1]) + ") {",
      "        const " + C + " v_ = in_[hh_ * " + S(w) + " + ww_];",
      "        if (v_ > best_ || v_ != v_) { best_ = v_; at_ = hh_ * " + S(w) + " + ww_; }  // NaN wins, as ATen",
      "      }",
      "    if (at_ == me_) acc_ += go_[oy_ * " + S(ow) + " + ox_];",
      "  }",
      "}",
      "gx[e_] = acc_;"};
  body.insert(body.end(), window.begin(), window.end());
  return grid_stride_kernel(name, planes * h * w, {C + "* __restrict__ gx", "const " + C + "* __restrict__ gy",
                                            "const " + C + "* __restrict__ x"}, body);
}

}  // namespace

bool is_cuda_cnn_gradient_op(const std::string& name) {
  return name == "im2col" || name == "col2im" || name == "max_pool2d_backward";
}

cuda::KernelLaunch cuda_cnn_gradient_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const DType dt = t.type(sym.outputs[0]).dtype;
  THUNDERC_CHECK(dt == DType::Float32 || dt == DType::Float64, "nvfuser ", sym.op->name, ": float32 or float64 expected, got ",
                 dtype_name(dt));
  if (sym.op->name == "max_pool2d_backward") return max_pool_backward_kernel(name, t, sym);
  THUNDERC_CHECK(sym.op->name == "im2col" || sym.op->name == "col2im", "nvfuser: no CNN gradient kernel for ", sym.op->name);
  return conv_columns_kernel(name, t, sym);
}

void emit_cuda_cnn_gradient(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  emit_symbol_kernel(ctx, sym, [&](const std::string& name) { return cuda_cnn_gradient_kernel(name, ctx.trace(), sym); },
                     out);
}

}  // namespace thunderc
