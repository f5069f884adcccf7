#include "codegen/cpp/resample.h"

#include "codegen/cpp/own_code.h"

namespace thunderc {

using namespace own_code;

void emit_cpp_upsample_bilinear2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string A = loops::atype(a.dtype);
  const bool align = sym.attrs.get_bool("align_corners");
  const std::int64_t planes = a.shape[0] * a.shape[1], IH = a.shape[2], IW = a.shape[3], OH = o.shape[2], OW = o.shape[3];
  // The step between source positions, as area_pixel_compute_scale: (in - 1) / (out - 1) with align_corners,
  // else 1 / scale when a scale factor was given, else in / out.
  auto step = [&](const char* scale_attr, std::int64_t in, std::int64_t outn) {
    if (align) return "(" + S(outn) + " > 1 ? (" + A + ")(" + S(in) + " - 1) / (" + A + ")(" + S(outn) + " - 1) : (" + A + ")0)";
    const double scale = sym.attrs.is_none(scale_attr) ? 0.0 : sym.attrs.get_float(scale_attr);
    if (scale > 0) return "(" + A + ")(1.0 / " + c_number_literal(scale) + ")";
    return "(" + A + ")" + S(in) + " / (" + A + ")" + S(outn);
  };
  // Declares <p>0, <p>1 (source indices) and <p>l0, <p>l1 (their weights) for destination index `i`.
  auto source = [&](const std::string& p, const std::string& i, std::int64_t in, const std::string& indent) {
    const std::string real = align ? "s" + p + " * (" + A + ")" + i
                                   : "s" + p + " * ((" + A + ")" + i + " + (" + A + ")0.5) - (" + A + ")0.5";
    out.line(indent + A + " r" + p + " = " + real + ";");
    if (!align) out.line(indent + "if (r" + p + " < (" + A + ")0) r" + p + " = 0;");
    out.line(indent + "const int64_t " + p + "0 = std::min<int64_t>((int64_t)std::floor(r" + p + "), " + S(in) + " - 1);");
    out.line(indent + "const int64_t " + p + "1 = " + p + "0 + (" + p + "0 < " + S(in) + " - 1 ? 1 : 0);");
    out.line(indent + "const " + A + " " + p + "l1 = std::min(std::max(r" + p + " - (" + A + ")" + p + "0, (" + A + ")0), (" + A + ")1);");
    out.line(indent + "const " + A + " " + p + "l0 = (" + A + ")1 - " + p + "l1;");
  };
  out.line("{");
  out.indent();
  out.comment("upsample_bilinear2d" + std::string(align ? " (align_corners)" : "") + ": " + std::to_string(planes) + " planes " +
              std::to_string(IH) + "x" + std::to_string(IW) + " -> " + std::to_string(OH) + "x" + std::to_string(OW));
  pointer(ctx, out, "x", sym.inputs[0].value, true);
  pointer(ctx, out, "o", sym.outputs[0], false);
  out.line("const " + A + " sh = " + step("scale_h", IH, OH) + ", sw = " + step("scale_w", IW, OW) + ";");
  out.line(parallel_for_if(planes * OH * OW));
  out.line("for (int64_t p = 0; p < " + S(planes * OH) + "; ++p) {");
  out.line("  const int64_t plane = p / " + S(OH) + ", oh = p % " + S(OH) + ";");
  source("h", "oh", IH, "  ");
  const std::string T = loops::ctype(a.dtype);
  out.line("  const " + T + "* r0 = x + (plane * " + S(IH) + " + h0) * " + S(IW) + ";");
  out.line("  const " + T + "* r1 = x + (plane * " + S(IH) + " + h1) * " + S(IW) + ";");
  out.line("  for (int64_t ow = 0; ow < " + S(OW) + "; ++ow) {");
  source("w", "ow", IW, "    ");
  out.line("    o[p * " + S(OW) + " + ow] = (r0[w0] * wl0 + r0[w1] * wl1) * hl0 + (r1[w0] * wl0 + r1[w1] * wl1) * hl1;");
  out.line("  }");
  out.line("}");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
