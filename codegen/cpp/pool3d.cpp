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

IntList pair(const Attrs& attrs, const std::string& name, const IntList& fallback = {}) {
  const IntList& v = attrs.get_ints(name);
  if (v.empty()) return fallback;
  return v.size() == 1 ? IntList{v[0], v[0]} : v;
}

// Opens the loops over the output positions (oh, ow) of a 2-D max pooling and declares each window's rows
// [hs, he) and columns [ws, we), clipped to the h x w input, the starts moved in by dilation steps; the caller
// closes two braces.
void open_windows(SourceWriter& out, const IntList& k, const IntList& s, const IntList& p, const IntList& d,
                  std::int64_t h, std::int64_t w, std::int64_t oh, std::int64_t ow) {
  out.line("  for (int64_t oh = 0; oh < " + S(oh) + "; ++oh) {");
  out.line("    int64_t hs = oh * " + S(s[0]) + " - " + S(p[0]) + ";");
  out.line("    const int64_t he = std::min<int64_t>(hs + " + S((k[0] - 1) * d[0] + 1) + ", " + S(h) + ");");
  out.line("    while (hs < 0) hs += " + S(d[0]) + ";");
  out.line("    for (int64_t ow = 0; ow < " + S(ow) + "; ++ow) {");
  out.line("      int64_t ws = ow * " + S(s[1]) + " - " + S(p[1]) + ";");
  out.line("      const int64_t we = std::min<int64_t>(ws + " + S((k[1] - 1) * d[1] + 1) + ", " + S(w) + ");");
  out.line("      while (ws < 0) ws += " + S(d[1]) + ";");
}

// max_pool2d_backward(grad, a): per plane (in parallel), the input gradient starts at zero and each output
// position adds its gradient where max_pool2d_with_indices's CPU kernel puts its index: the window is
// [oh * s - p, + (k - 1) * d + 1) clipped to the input, its start moved in by dilation steps; the first
// element greater than every one before it, or any NaN (so the last NaN), starting from the window's first
// element at -inf. Sequential within a plane, so overlapping windows add up in output order, as ATen.
void emit_max_pool2d_backward(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType& a = t.type(sym.inputs[1].value);
  const TensorType& g = t.type(sym.inputs[0].value);
  const std::size_t r = a.rank();
  const std::int64_t planes = product(a.shape, 0, r - 2), h = a.shape[r - 2], w = a.shape[r - 1];
  const std::int64_t oh = g.shape[r - 2], ow = g.shape[r - 1];
  const IntList k = pair(sym.attrs, "kernel_size"), s = pair(sym.attrs, "stride", k), p = pair(sym.attrs, "padding"),
                d = pair(sym.attrs, "dilation", {1, 1});
  const std::string A = loops::atype(a.dtype), C = loops::ctype(a.dtype);
  out.line("{");
  out.indent();
  out.comment("max_pool2d_backward: " + std::to_string(planes) + " planes " + shape_str(Shape{oh, ow}) + " -> " +
              shape_str(Shape{h, w}));
  pointer(ctx, out, "gy", sym.inputs[0].value, true);
  pointer(ctx, out, "x", sym.inputs[1].value, true);
  pointer(ctx, out, "gx", sym.outputs[0], false);
  out.line(parallel_for_if(planes * (h * w + oh * ow * k[0] * k[1])));
  out.line("for (int64_t q = 0; q < " + S(planes) + "; ++q) {");
  out.line("  const " + C + "* in = x + q * " + S(h * w) + ";");
  out.line("  const " + C + "* go = gy + q * " + S(oh * ow) + ";");
  out.line("  " + C + "* gi = gx + q * " + S(h * w) + ";");
  out.line("  for (int64_t i = 0; i < " + S(h * w) + "; ++i) gi[i] = 0;");
  open_windows(out, k, s, p, d, h, w, oh, ow);
  out.line("      int64_t at = hs * " + S(w) + " + ws;");
  out.line("      " + A + " best = -std::numeric_limits<" + A + ">::infinity();");
  out.line("      for (int64_t h = hs; h < he; h += " + S(d[0]) + ")");
  out.line("        for (int64_t w = ws; w < we; w += " + S(d[1]) + ") {");
  out.line("          const " + A + " v = in[h * " + S(w) + " + w];");
  out.line("          if (v > best || v != v) { best = v; at = h * " + S(w) + " + w; }  // NaN wins, as ATen");
  out.line("        }");
  out.line("      gi[at] += go[oh * " + S(ow) + " + ow];");
  out.line("    }");
  out.line("  }");
  out.line("}");
  out.dedent();
  out.line("}");
}

// max_pool2d_backward_nhwc(grad, a) on [N, H, W, C] tensors (a training backward's channels-last pass): the same
// windows, picks and sums as above, per channel, vectorized along the channels. One task per image and block of
// 16 channels (in parallel); within a task the output positions go in order, each finding its window's pick
// for every channel of the block, then adding its gradient where the pick is (0 elsewhere, which leaves the sum
// as it is), so every input position sums its windows' gradients in output order, as ATen.
void emit_max_pool2d_backward_nhwc(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType& a = t.type(sym.inputs[1].value);
  const TensorType& g = t.type(sym.inputs[0].value);
  const std::int64_t n = a.shape[0], h = a.shape[1], w = a.shape[2], c = a.shape[3], oh = g.shape[1], ow = g.shape[2];
  const IntList k = pair(sym.attrs, "kernel_size"), s = pair(sym.attrs, "stride", k), p = pair(sym.attrs, "padding"),
                d = pair(sym.attrs, "dilation", {1, 1});
  const std::string A = loops::atype(a.dtype), C = loops::ctype(a.dtype);
  const std::int64_t block = 16, blocks = (c + block - 1) / block;
  out.line("{");
  out.indent();
  out.comment("max_pool2d_backward (NHWC): " + std::to_string(n) + " images " + shape_str(Shape{oh, ow}) + " -> " +
              shape_str(Shape{h, w}) + ", " + std::to_string(c) + " channels");
  pointer(ctx, out, "gy", sym.inputs[0].value, true);
  pointer(ctx, out, "x", sym.inputs[1].value, true);
  pointer(ctx, out, "gx", sym.outputs[0], false);
  // A whole number of blocks: every inner loop runs 16 lanes (one AVX-512 vector of floats), known at compile
  // time; the picks as 32-bit positions where they fit, so they pack as densely as the values.
  const std::string nc = c % block == 0 ? S(block) : std::string("nc");
  const std::string I = h * w < (std::int64_t{1} << 31) ? "int32_t" : "int64_t";
  out.line(parallel_for_if(n * c * (h * w + oh * ow * k[0] * k[1] * 2)));
  out.line("for (int64_t task = 0; task < " + S(n * blocks) + "; ++task) {");
  out.line("  const int64_t c0 = (task % " + S(blocks) + ") * " + S(block) + ";");
  if (c % block != 0) out.line("  const int64_t nc = std::min<int64_t>(" + S(block) + ", " + S(c) + " - c0);");
  out.line("  const " + C + "* in = x + (task / " + S(blocks) + ") * " + S(h * w * c) + " + c0;");
  out.line("  const " + C + "* go = gy + (task / " + S(blocks) + ") * " + S(oh * ow * c) + " + c0;");
  out.line("  " + C + "* gi = gx + (task / " + S(blocks) + ") * " + S(h * w * c) + " + c0;");
  out.line("  for (int64_t i = 0; i < " + S(h * w) + "; ++i)");
  out.line("    for (int64_t ch = 0; ch < " + nc + "; ++ch) gi[i * " + S(c) + " + ch] = 0;");
  open_windows(out, k, s, p, d, h, w, oh, ow);
  out.line("      " + A + " best[" + S(block) + "];");
  out.line("      " + I + " at[" + S(block) + "];");
  out.line("      for (int64_t ch = 0; ch < " + S(block) + "; ++ch) {");
  out.line("        best[ch] = -std::numeric_limits<" + A + ">::infinity();");
  out.line("        at[ch] = static_cast<" + I + ">(hs * " + S(w) + " + ws);");
  out.line("      }");
  out.line("      for (int64_t h = hs; h < he; h += " + S(d[0]) + ")");
  out.line("        for (int64_t w = ws; w < we; w += " + S(d[1]) + ") {");
  out.line("          const " + C + "* px = in + (h * " + S(w) + " + w) * " + S(c) + ";");
  out.line("          const " + I + " idx = static_cast<" + I + ">(h * " + S(w) + " + w);");
  out.line("          #pragma omp simd");
  out.line("          for (int64_t ch = 0; ch < " + nc + "; ++ch) {");
  out.line("            const " + A + " v = px[ch];");
  out.line("            const bool take = v > best[ch] || v != v;  // NaN wins, as ATen");
  out.line("            best[ch] = take ? v : best[ch];");
  out.line("            at[ch] = take ? idx : at[ch];");
  out.line("          }");
  out.line("        }");
  out.line("      const " + C + "* pg = go + (oh * " + S(ow) + " + ow) * " + S(c) + ";");
  out.line("      for (int64_t h = hs; h < he; h += " + S(d[0]) + ")");
  out.line("        for (int64_t w = ws; w < we; w += " + S(d[1]) + ") {");
  out.line("          " + C + "* pi = gi + (h * " + S(w) + " + w) * " + S(c) + ";");
  out.line("          const " + I + " idx = static_cast<" + I + ">(h * " + S(w) + " + w);");
  out.line("          #pragma omp simd");
  out.line("          for (int64_t ch = 0; ch < " + nc + "; ++ch) pi[ch] += at[ch] == idx ? pg[ch] : " + C + "(0);");
  out.line("        }");
  out.line("    }");
  out.line("  }");
  out.line("}");
  out.dedent();
  out.line("}");
}

}  // namespace

bool is_cpp_pool3d_op(const std::string& name) {
  return name == "max_pool3d" || name == "avg_pool3d" || name == "adaptive_avg_pool3d" ||
         name == "max_pool2d_backward" || name == "max_pool2d_backward_nhwc";
}

void emit_cpp_pool3d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  if (sym.op->name == "max_pool2d_backward") return emit_max_pool2d_backward(ctx, sym, out);
  if (sym.op->name == "max_pool2d_backward_nhwc") return emit_max_pool2d_backward_nhwc(ctx, sym, out);
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
