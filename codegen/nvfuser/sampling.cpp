#include "codegen/nvfuser/sampling.h"

#include "codegen/loops/region_lowering.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

// upsample_bilinear2d([N, C, IH, IW]) -> [N, C, OH, OW]: element e_ is plane e_ / (OH * OW), row oh_, column ow_.
cuda::KernelLaunch upsample_bilinear2d_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string A = loops::atype(a.dtype), C = loops::ctype(a.dtype);
  const bool align = sym.attrs.get_bool("align_corners");
  const std::int64_t IH = a.shape[2], IW = a.shape[3], OH = o.shape[2], OW = o.shape[3];
  // The step between source positions, as area_pixel_compute_scale: (in - 1) / (out - 1) with align_corners,
  // else 1 / scale when a scale factor was given, else in / out.
  auto step = [&](const char* scale_attr, std::int64_t in, std::int64_t outn) {
    if (align) return "(" + S(outn) + " > 1 ? (" + A + ")(" + S(in) + " - 1) / (" + A + ")(" + S(outn) + " - 1) : (" + A + ")0)";
    const double scale = sym.attrs.is_none(scale_attr) ? 0.0 : sym.attrs.get_float(scale_attr);
    if (scale > 0) return "(" + A + ")(1.0 / " + c_number_literal(scale) + ")";
    return "(" + A + ")" + S(in) + " / (" + A + ")" + S(outn);
  };
  // <p>0, <p>1 (source indices) and <p>l0, <p>l1 (their weights) for destination index `i`.
  auto source = [&](const std::string& p, const std::string& i, std::int64_t in, std::vector<std::string>& body) {
    const std::string real = align ? "s" + p + "_ * (" + A + ")" + i
                                   : "s" + p + "_ * ((" + A + ")" + i + " + (" + A + ")0.5) - (" + A + ")0.5";
    body.push_back(A + " r" + p + "_ = " + real + ";");
    if (!align) body.push_back("if (r" + p + "_ < (" + A + ")0) r" + p + "_ = 0;");
    body.push_back("const long long " + p + "0_ = std::min<long long>((long long)std::floor(r" + p + "_), " + S(in) + " - 1);");
    body.push_back("const long long " + p + "1_ = " + p + "0_ + (" + p + "0_ < " + S(in) + " - 1 ? 1 : 0);");
    body.push_back("const " + A + " " + p + "l1_ = std::min(std::max(r" + p + "_ - (" + A + ")" + p + "0_, (" + A + ")0), (" + A + ")1);");
    body.push_back("const " + A + " " + p + "l0_ = (" + A + ")1 - " + p + "l1_;");
  };
  std::vector<std::string> body = {
      "const long long ow_ = e_ % " + S(OW) + ", oh_ = (e_ / " + S(OW) + ") % " + S(OH) + ", plane_ = e_ / " + S(OH * OW) + ";",
      "const " + A + " sh_ = " + step("scale_h", IH, OH) + ", sw_ = " + step("scale_w", IW, OW) + ";"};
  source("h", "oh_", IH, body);
  source("w", "ow_", IW, body);
  body.push_back("const " + C + "* r0_ = x + (plane_ * " + S(IH) + " + h0_) * " + S(IW) + ";");
  body.push_back("const " + C + "* r1_ = x + (plane_ * " + S(IH) + " + h1_) * " + S(IW) + ";");
  body.push_back("o[e_] = ((" + A + ")r0_[w0_] * wl0_ + (" + A + ")r0_[w1_] * wl1_) * hl0_ + ((" + A + ")r1_[w0_] * wl0_ + (" +
                 A + ")r1_[w1_] * wl1_) * hl1_;");
  return grid_stride_kernel(name, o.numel(), {C + "* __restrict__ o", "const " + C + "* __restrict__ x"}, body);
}

// grid_sampler_2d(x [N, C, H, W], grid [N, OH, OW, 2]) -> [N, C, OH, OW], bilinear or nearest, zeros, border or
// reflection padding: a thread per output element, with the cpp kernel's arithmetic (codegen/cpp/resample.cpp,
// ATen's grid_sampler_compute_source_index).
cuda::KernelLaunch grid_sampler_2d_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string A = loops::atype(a.dtype), C = loops::ctype(a.dtype);
  const bool align = sym.attrs.get_bool("align_corners"), nearest = sym.attrs.get_int("interpolation_mode") == 1;
  const std::int64_t padding = sym.attrs.get_int("padding_mode");
  const std::int64_t CH = a.shape[1], H = a.shape[2], W = a.shape[3], OH = o.shape[2], OW = o.shape[3];
  std::vector<std::string> body = {
      "const long long at_ = e_ % " + S(OH * OW) + ", c_ = (e_ / " + S(OH * OW) + ") % " + S(CH) + ", n_ = e_ / " + S(CH * OH * OW) + ";",
      "const long long p_ = n_ * " + S(OH * OW) + " + at_;  // the grid position"};
  // The source position of grid coordinate `g` along an axis of `size` pixels into `c` (declared here).
  auto source = [&](const std::string& c, const std::string& g, std::int64_t size) {
    body.push_back(A + " " + c + " = (" + A + ")grid[" + g + "];");
    body.push_back(align ? c + " = (" + c + " + 1) / 2 * (" + A + ")" + S(size - 1) + ";"
                         : c + " = ((" + c + " + 1) * (" + A + ")" + S(size) + " - 1) / 2;");
    if (padding == 2) {  // reflect about the borders (pixel centres with align_corners, pixel edges without)
      const std::string lo = align ? "(" + A + ")0" : "(" + A + ")-0.5", span = "(" + A + ")" + S(align ? size - 1 : size);
      body.push_back("if (" + span + " > 0) {");
      body.push_back("  const " + A + " in_ = std::abs(" + c + " - " + lo + "), extra_ = std::fmod(in_, " + span + ");");
      body.push_back("  const long long flips_ = (long long)std::floor(in_ / " + span + ");");
      body.push_back("  " + c + " = flips_ % 2 == 0 ? extra_ + " + lo + " : " + span + " - extra_ + " + lo + ";");
      body.push_back("} else {");
      body.push_back("  " + c + " = 0;");
      body.push_back("}");
    }
    if (padding != 0) body.push_back(c + " = std::min((" + A + ")" + S(size - 1) + ", std::max(" + c + ", (" + A + ")0));");
    body.push_back("if (std::isnan(" + c + ") || std::isinf(" + c + ") || " + c + " > (" + A + ")2147483646 || " + c + " < (" + A +
                   ")-2147483648.0) " + c + " = -100;  // never in range");
  };
  source("ix_", "2 * p_", W);
  source("iy_", "2 * p_ + 1", H);
  const std::string plane = "x + (n_ * " + S(CH) + " + c_) * " + S(H * W);
  auto inside = [&](const std::string& xx, const std::string& yy) {
    return "(" + xx + " >= 0 && " + xx + " < " + S(W) + " && " + yy + " >= 0 && " + yy + " < " + S(H) + ")";
  };
  body.push_back("const " + C + "* plane_ = " + plane + ";");
  if (nearest) {
    body.push_back("const long long xn_ = (long long)std::nearbyint(ix_), yn_ = (long long)std::nearbyint(iy_);");
    body.push_back("o[e_] = " + inside("xn_", "yn_") + " ? (" + A + ")plane_[yn_ * " + S(W) + " + xn_] : (" + A + ")0;");
  } else {
    body.push_back("const " + A + " xw_ = std::floor(ix_), yw_ = std::floor(iy_);");
    body.push_back("const long long x0_ = (long long)xw_, y0_ = (long long)yw_;");
    body.push_back("const " + A + " ex_ = ix_ - xw_, w1_ = 1 - ex_, sy_ = iy_ - yw_, n1_ = 1 - sy_;");
    body.push_back(A + " v_ = 0;");
    body.push_back("if " + inside("x0_", "y0_") + " v_ += plane_[y0_ * " + S(W) + " + x0_] * (n1_ * w1_);");
    body.push_back("if " + inside("x0_ + 1", "y0_") + " v_ += plane_[y0_ * " + S(W) + " + x0_ + 1] * (n1_ * ex_);");
    body.push_back("if " + inside("x0_", "y0_ + 1") + " v_ += plane_[(y0_ + 1) * " + S(W) + " + x0_] * (sy_ * w1_);");
    body.push_back("if " + inside("x0_ + 1", "y0_ + 1") + " v_ += plane_[(y0_ + 1) * " + S(W) + " + x0_ + 1] * (sy_ * ex_);");
    body.push_back("o[e_] = v_;");
  }
  return grid_stride_kernel(name, o.numel(),
                            {C + "* __restrict__ o", "const " + C + "* __restrict__ x", "const " + C + "* __restrict__ grid"}, body);
}

}  // namespace

bool is_cuda_sampling_op(const std::string& name) { return name == "upsample_bilinear2d" || name == "grid_sampler_2d"; }

cuda::KernelLaunch cuda_sampling_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  if (sym.op->name == "grid_sampler_2d") return grid_sampler_2d_kernel(name, t, sym);
  THUNDERC_CHECK(sym.op->name == "upsample_bilinear2d", "nvfuser: no sampling kernel for ", sym.op->name);
  return upsample_bilinear2d_kernel(name, t, sym);
}

void emit_cuda_sampling(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  emit_symbol_kernel(ctx, sym, [&](const std::string& name) { return cuda_sampling_kernel(name, ctx.trace(), sym); }, out);
}

}  // namespace thunderc
