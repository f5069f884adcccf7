#include "codegen/cpp/pool3d.h"

#include "codegen/cpp/own_code.h"

namespace thunderc {

namespace {

using namespace own_code;

IntList triple(const Attrs& attrs, const std::string& name, const IntList& fallback = {}) {
  const IntList& v = attrs.get_ints(name);
  if (v.empty()) return fallback;
  return v.size() == 1 ? IntList{v[0], v[0], v[0]} : v;
}

}  // namespace

bool is_cpp_pool3d_op(const std::string& name) {
  return name == "max_pool3d" || name == "avg_pool3d" || name == "adaptive_avg_pool3d";
}

void emit_cpp_pool3d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string& name = sym.op->name;
  const std::string A = loops::atype(a.dtype);
  const std::size_t r = a.rank();
  const std::int64_t planes = product(a.shape, 0, r - 3);
  const IntList in = {a.shape[r - 3], a.shape[r - 2], a.shape[r - 1]}, on = {o.shape[r - 3], o.shape[r - 2], o.shape[r - 1]};
  const std::int64_t per_plane = on[0] * on[1] * on[2];
  const char* axis[3] = {"t", "h", "w"};
  out.line("{");
  out.indent();
  out.comment(name + ": " + std::to_string(planes) + " planes " + shape_str(in) + " -> " + shape_str(on));
  pointer(ctx, out, "x", sym.inputs[0].value, true);
  pointer(ctx, out, "o", sym.outputs[0], false);
  out.line(parallel_for_if(planes * per_plane));
  out.line("for (int64_t q = 0; q < " + S(planes * per_plane) + "; ++q) {");
  out.line("  const int64_t p = q / " + S(per_plane) + ", r = q % " + S(per_plane) + ";");
  out.line("  const int64_t ot = r / " + S(on[1] * on[2]) + ", oh = (r / " + S(on[2]) + ") % " + S(on[1]) + ", ow = r % " +
           S(on[2]) + ";");
  out.line("  const " + std::string(loops::ctype(a.dtype)) + "* in = x + p * " + S(in[0] * in[1] * in[2]) + ";");
  // The window of each axis: [<axis>s, <axis>e) stepping by <axis>d.
  auto loops_over_window = [&](const std::string& body, const IntList& dilation) {
    out.line("  for (int64_t t = ts; t < te; t += " + S(dilation[0]) + ")");
    out.line("    for (int64_t h = hs; h < he; h += " + S(dilation[1]) + ")");
    out.line("      for (int64_t w = ws; w < we; w += " + S(dilation[2]) + ") {");
    out.line("        const " + A + " v = in[(t * " + S(in[1]) + " + h) * " + S(in[2]) + " + w];");
    out.line("        " + body);
    out.line("      }");
  };
  const std::string o_of[3] = {"ot", "oh", "ow"};
  if (name == "adaptive_avg_pool3d") {
    for (int i = 0; i < 3; ++i)
      out.line("  const int64_t " + std::string(axis[i]) + "s = (" + o_of[i] + " * " + S(in[i]) + ") / " + S(on[i]) + ", " +
               axis[i] + "e = ((" + o_of[i] + " + 1) * " + S(in[i]) + " + " + S(on[i]) + " - 1) / " + S(on[i]) + ";");
    out.line("  " + A + " sum = 0;");
    loops_over_window("sum += v;", {1, 1, 1});
    out.line("  o[q] = sum / (" + A + ")(te - ts) / (" + A + ")(he - hs) / (" + A + ")(we - ws);");
  } else {
    const IntList k = triple(sym.attrs, "kernel_size"), s = triple(sym.attrs, "stride", k), pad = triple(sym.attrs, "padding");
    if (name == "max_pool3d") {
      const IntList d = triple(sym.attrs, "dilation", {1, 1, 1});
      for (int i = 0; i < 3; ++i) {
        const std::string x = axis[i];
        out.line("  int64_t " + x + "s = " + o_of[i] + " * " + S(s[i]) + " - " + S(pad[i]) + ";");
        out.line("  const int64_t " + x + "e = std::min<int64_t>(" + x + "s + " + S((k[i] - 1) * d[i] + 1) + ", " + S(in[i]) + ");");
        out.line("  while (" + x + "s < 0) " + x + "s += " + S(d[i]) + ";");
      }
      out.line("  " + A + " best = -std::numeric_limits<" + A + ">::infinity();");
      loops_over_window("if (v > best || v != v) best = v;  // NaN propagates", d);
      out.line("  o[q] = best;");
    } else {  // avg_pool3d
      for (int i = 0; i < 3; ++i) {
        const std::string x = axis[i];
        out.line("  int64_t " + x + "s = " + o_of[i] + " * " + S(s[i]) + " - " + S(pad[i]) + ";");
        out.line("  int64_t " + x + "e = std::min<int64_t>(" + x + "s + " + S(k[i]) + ", " + S(in[i] + pad[i]) + ");");
      }
      out.line("  const int64_t padded = (te - ts) * (he - hs) * (we - ws);");
      for (int i = 0; i < 3; ++i) {
        const std::string x = axis[i];
        out.line("  " + x + "s = std::max<int64_t>(" + x + "s, 0); " + x + "e = std::min<int64_t>(" + x + "e, " + S(in[i]) + ");");
      }
      out.line("  if (ts >= te || hs >= he || ws >= we) { o[q] = 0; continue; }");
      std::string divide = sym.attrs.get_bool("count_include_pad") ? "padded" : "(te - ts) * (he - hs) * (we - ws)";
      if (auto d = sym.attrs.get_optional_int("divisor_override")) divide = S(*d);
      out.line("  " + A + " sum = 0;");
      loops_over_window("sum += v;", {1, 1, 1});
      out.line("  o[q] = sum / (" + A + ")(" + divide + ");");
    }
  }
  out.line("}");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
