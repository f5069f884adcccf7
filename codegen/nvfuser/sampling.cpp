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

}  // namespace

bool is_cuda_sampling_op(const std::string& name) { return name == "upsample_bilinear2d"; }

cuda::KernelLaunch cuda_sampling_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  THUNDERC_CHECK(sym.op->name == "upsample_bilinear2d", "nvfuser: no sampling kernel for ", sym.op->name);
  return upsample_bilinear2d_kernel(name, t, sym);
}

void emit_cuda_sampling(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  if (t.type(sym.outputs[0]).numel() == 0) return;
  emit_kernel_block(ctx, cuda_sampling_kernel(ctx.kernel_name(sym.op->name), t, sym), sym.outputs[0],
                    {sym.inputs[0].value}, sym.op->name + " " + shape_str(t.type(sym.outputs[0]).shape), out);
}

}  // namespace thunderc
