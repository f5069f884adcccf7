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

namespace thunderc {

void emit_cpp_grid_sampler_2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string A = loops::atype(a.dtype);
  const bool align = sym.attrs.get_bool("align_corners"), nearest = sym.attrs.get_int("interpolation_mode") == 1;
  const std::int64_t padding = sym.attrs.get_int("padding_mode");
  const std::int64_t N = a.shape[0], C = a.shape[1], H = a.shape[2], W = a.shape[3], OH = o.shape[2], OW = o.shape[3];
  out.line("{");
  out.indent();
  out.comment(std::string("grid_sampler_2d (") + (nearest ? "nearest" : "bilinear") + ", " +
              (padding == 0 ? "zeros" : padding == 1 ? "border" : "reflection") + (align ? ", align_corners" : "") +
              "): " + std::to_string(N * C) + " planes " + std::to_string(H) + "x" + std::to_string(W) + " at " +
              std::to_string(OH) + "x" + std::to_string(OW) + " positions");
  pointer(ctx, out, "x", sym.inputs[0].value, true);
  pointer(ctx, out, "g", sym.inputs[1].value, true);
  pointer(ctx, out, "o", sym.outputs[0], false);
  // The source position of a grid coordinate along an axis of `size` pixels (grid_sampler_compute_source_index).
  out.line("auto source = [](" + A + " c, int64_t size) -> " + A + " {");
  out.line(align ? "  c = (c + 1) / 2 * (" + A + ")(size - 1);" : "  c = ((c + 1) * (" + A + ")size - 1) / 2;");
  if (padding == 2) {  // reflect about the borders (pixel centres with align_corners, pixel edges without)
    out.line("  const " + A + " lo = " + (align ? "0" : "(" + A + ")-0.5") + ", span = " +
             (align ? "(" + A + ")(size - 1)" : "(" + A + ")size") + ";");
    out.line("  if (span > 0) {");
    out.line("    const " + A + " in = std::fabs(c - lo), extra = std::fmod(in, span);");
    out.line("    const int64_t flips = (int64_t)std::floor(in / span);");
    out.line("    c = flips % 2 == 0 ? extra + lo : span - extra + lo;");
    out.line("  } else {");
    out.line("    c = 0;");
    out.line("  }");
  }
  if (padding != 0) out.line("  c = std::min((" + A + ")(size - 1), std::max(c, (" + A + ")0));");
  out.line("  if (!std::isfinite(c) || c > (" + A + ")(INT32_MAX - 1) || c < (" + A + ")INT32_MIN) c = -100;  // never in range");
  out.line("  return c;");
  out.line("};");
  out.line(parallel_for_if(N * C * OH * OW));
  out.line("for (int64_t p = 0; p < " + S(N * OH * OW) + "; ++p) {");
  out.line("  const int64_t n = p / " + S(OH * OW) + ", at = p % " + S(OH * OW) + ";");
  out.line("  const " + A + " ix = source(g[2 * p], " + S(W) + "), iy = source(g[2 * p + 1], " + S(H) + ");");
  out.line("  auto inside = [](int64_t xx, int64_t yy) { return xx >= 0 && xx < " + S(W) + " && yy >= 0 && yy < " + S(H) + "; };");
  if (nearest) {
    out.line("  const int64_t xn = (int64_t)std::nearbyint(ix), yn = (int64_t)std::nearbyint(iy);");
    out.line("  const bool in = inside(xn, yn);");
    out.line("  for (int64_t c = 0; c < " + S(C) + "; ++c)");
    out.line("    o[(n * " + S(C) + " + c) * " + S(OH * OW) + " + at] = in ? (" + A + ")x[((n * " + S(C) + " + c) * " + S(H) +
             " + yn) * " + S(W) + " + xn] : (" + A + ")0;");
  } else {
    out.line("  const " + A + " xw = std::floor(ix), yn = std::floor(iy);");
    out.line("  const int64_t x0 = (int64_t)xw, y0 = (int64_t)yn;");
    out.line("  const " + A + " e = ix - xw, w1 = 1 - e, s = iy - yn, n1 = 1 - s;");
    out.line("  const " + A + " wnw = n1 * w1, wne = n1 * e, wsw = s * w1, wse = s * e;");
    out.line("  const bool inw = inside(x0, y0), ine = inside(x0 + 1, y0), isw = inside(x0, y0 + 1), ise = inside(x0 + 1, y0 + 1);");
    out.line("  for (int64_t c = 0; c < " + S(C) + "; ++c) {");
    out.line("    const " + std::string(loops::ctype(a.dtype)) + "* plane = x + (n * " + S(C) + " + c) * " + S(H * W) + ";");
    out.line("    " + A + " v = 0;");
    out.line("    if (inw) v += plane[y0 * " + S(W) + " + x0] * wnw;");
    out.line("    if (ine) v += plane[y0 * " + S(W) + " + x0 + 1] * wne;");
    out.line("    if (isw) v += plane[(y0 + 1) * " + S(W) + " + x0] * wsw;");
    out.line("    if (ise) v += plane[(y0 + 1) * " + S(W) + " + x0 + 1] * wse;");
    out.line("    o[(n * " + S(C) + " + c) * " + S(OH * OW) + " + at] = v;");
    out.line("  }");
  }
  out.line("}");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
