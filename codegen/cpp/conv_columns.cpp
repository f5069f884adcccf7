#include "codegen/cpp/conv_columns.h"

#include "codegen/cpp/own_code.h"
#include "codegen/loops/conv_columns_plan.h"

namespace thunderc {

namespace {

using namespace own_code;

}  // namespace

bool is_cpp_conv_columns_op(const std::string& name) { return name == "im2col" || name == "col2im"; }

void emit_cpp_conv_columns(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  // The image side: im2col's input, col2im's output; both [N, C, H, W].
  const loops::ConvColumnsPlan g = loops::plan_conv_columns(t, sym);
  const bool to_columns = g.to_columns;
  const std::int64_t n = g.n, c = g.c, h = g.h, w = g.w, oh = g.oh, ow = g.ow, l = g.l, kk = g.kk;
  const IntList &k = g.k, &d = g.d, &p = g.p, &s = g.s;
  const std::string C = loops::ctype(g.dtype);
  out.comment(sym.op->name + ": " + shape_str(g.image) + (to_columns ? " -> " : " <- ") +
              shape_str(Shape{n, c * kk, l}));
  pointer(ctx, out, "src", sym.inputs[0].value, true);
  pointer(ctx, out, "dst", sym.outputs[0], false);
  out.line(parallel_for_if(n * c * kk * l));
  out.line("for (int64_t q = 0; q < " + S(n * c) + "; ++q) {");
  out.line("  " + std::string(to_columns ? "const " : "") + C + "* plane = " + (to_columns ? "src" : "dst") + " + q * " +
           S(h * w) + ";");
  out.line("  " + std::string(to_columns ? "" : "const ") + C + "* cols = " + (to_columns ? "dst" : "src") + " + q * " +
           S(kk * l) + ";  // rows c*kh*kw .. of image q / C: the same offset");
  if (!to_columns) out.line("  for (int64_t i = 0; i < " + S(h * w) + "; ++i) plane[i] = 0;");
  out.line("  for (int64_t i = 0; i < " + S(k[0]) + "; ++i)");
  out.line("    for (int64_t j = 0; j < " + S(k[1]) + "; ++j) {");
  out.line("      " + std::string(to_columns ? "" : "const ") + C + "* row = cols + (i * " + S(k[1]) + " + j) * " + S(l) + ";");
  out.line("      for (int64_t y = 0; y < " + S(oh) + "; ++y) {");
  out.line("        const int64_t ih = y * " + S(s[0]) + " - " + S(p[0]) + " + i * " + S(d[0]) + ";");
  out.line("        if (ih < 0 || ih >= " + S(h) + ") {");
  if (to_columns) out.line("          for (int64_t x = 0; x < " + S(ow) + "; ++x) row[y * " + S(ow) + " + x] = 0;");
  out.line("          continue;");
  out.line("        }");
  out.line("        for (int64_t x = 0; x < " + S(ow) + "; ++x) {");
  out.line("          const int64_t iw = x * " + S(s[1]) + " - " + S(p[1]) + " + j * " + S(d[1]) + ";");
  if (to_columns)
    out.line("          row[y * " + S(ow) + " + x] = iw >= 0 && iw < " + S(w) + " ? plane[ih * " + S(w) + " + iw] : " + C + "(0);");
  else
    out.line("          if (iw >= 0 && iw < " + S(w) + ") plane[ih * " + S(w) + " + iw] += row[y * " + S(ow) + " + x];");
  out.line("        }");
  out.line("      }");
  out.line("    }");
  out.line("}");
}

}  // namespace thunderc
