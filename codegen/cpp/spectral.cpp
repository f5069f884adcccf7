#include "codegen/cpp/spectral.h"

#include "codegen/cpp/own_code.h"

namespace thunderc {

namespace {

using namespace own_code;

std::string int_array(const std::string& name, const IntList& values) {
  std::string s = "const int64_t " + name + "[] = {";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + S(values[i]);
  return s + "};";
}

// The real element type of a real or complex buffer.
const char* real_ctype(DType d) { return d == DType::Float64 || d == DType::Complex128 ? "double" : "float"; }

}  // namespace

void emit_cpp_spectral(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::string& name = sym.op->name;
  const std::string T = real_ctype(a.dtype);
  out.line("{");
  out.indent();
  const std::string in = "static_cast<const " + T + "*>(" + ctx.buffer(sym.inputs[0].value) + ".data)";
  const std::string dst = "static_cast<" + T + "*>(" + ctx.buffer(sym.outputs[0]) + ".data)";
  if (name == "view_as_real" || name == "view_as_complex") {
    out.comment(name + ": the same interleaved pairs");
    const std::int64_t bytes = o.numel() * static_cast<std::int64_t>(dtype_size(o.dtype));
    out.line("if (" + S(bytes) + " > 0) std::memcpy(" + dst + ", " + in + ", " + S(bytes) + ");");
  } else {
    IntList dims;
    for (std::int64_t d : sym.attrs.get_ints("dim")) dims.push_back(static_cast<std::int64_t>(wrapped(d, a.rank())));
    const std::string norm = std::to_string(sym.attrs.get_int("normalization"));
    // r2c and c2c take the input's sizes, c2r the output's (its last_dim_size decides the halved length).
    const Shape& sizes = name == "fft_c2r" ? o.shape : a.shape;
    out.comment(name + " of " + shape_str(a.shape) + " over dims " + shape_str(dims) + " -> " + shape_str(o.shape));
    out.line(int_array("sizes", sizes.empty() ? IntList{1} : IntList(sizes.begin(), sizes.end())));
    out.line(int_array("dims", dims));
    const std::string common = std::to_string(a.rank()) + ", sizes, " + std::to_string(dims.size()) + ", dims, " + norm;
    if (name == "fft_r2c")
      out.line("thunderc_fft::r2c<" + T + ">(" + in + ", " + dst + ", " + common + ", " +
               (sym.attrs.get_bool("onesided") ? "true" : "false") + ", thunderc_cpp_nt);");
    else if (name == "fft_c2r")
      out.line("thunderc_fft::c2r<" + T + ">(" + in + ", " + dst + ", " + common + ", thunderc_cpp_nt);");
    else
      out.line("thunderc_fft::c2c<" + T + ">(" + in + ", " + dst + ", " + common + ", " +
               (sym.attrs.get_bool("forward") ? "true" : "false") + ", thunderc_cpp_nt);");
  }
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
