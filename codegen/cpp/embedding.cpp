#include "codegen/cpp/embedding.h"

#include <algorithm>

#include "codegen/loops/region_lowering.h"

namespace thunderc {

namespace {

// Bytes copied from which a team of threads pays for itself (as the loop nests' threshold, in elements x 4).
constexpr std::int64_t kParallelBytes = 262144;

std::string S(std::int64_t v) { return std::to_string(v); }

}  // namespace

void emit_cpp_embedding(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &w = t.type(sym.inputs[0].value), &idx = t.type(sym.inputs[1].value);
  const std::string T = loops::ctype(w.dtype), I = loops::ctype(idx.dtype);
  const std::int64_t rows = w.shape[0], width = w.shape[1], n = idx.numel();
  const std::int64_t row_bytes = width * static_cast<std::int64_t>(dtype_size(w.dtype));
  out.line("{");
  out.indent();
  out.comment("embedding: " + S(n) + " rows of " + S(width) + " from a table of " + S(rows));
  out.line("const " + T + "* __restrict w = static_cast<const " + T + "*>(" + ctx.buffer(sym.inputs[0].value) + ".data);");
  out.line("const " + I + "* __restrict idx = static_cast<const " + I + "*>(" + ctx.buffer(sym.inputs[1].value) + ".data);");
  out.line(T + "* __restrict o = static_cast<" + T + "*>(" + ctx.buffer(sym.outputs[0]) + ".data);");
  out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) {");
  out.line("  if (idx[i] < 0 || idx[i] >= " + S(rows) + ") {");
  out.line("    std::snprintf(call->error, call->error_capacity, \"embedding: index %lld is out of range for a table of " +
           S(rows) + " rows\", (long long)idx[i]);");
  out.line("    " + ctx.on_failure());
  out.line("  }");
  out.line("}");
  out.line("#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(static) if (" + S(n) + " * " + S(row_bytes) +
           " >= " + S(kParallelBytes) + ")");
  out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) std::memcpy(o + i * " + S(width) + ", w + (int64_t)idx[i] * " +
           S(width) + ", " + S(row_bytes) + ");");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc

namespace thunderc {

void emit_cpp_embedding_bag(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const TensorType &w = t.type(sym.inputs[0].value), &idx = t.type(sym.inputs[1].value), &o = t.type(sym.outputs[0]);
  const std::string T = loops::ctype(w.dtype), I = loops::ctype(idx.dtype);
  const std::int64_t rows = w.shape[0], width = w.shape[1], n = idx.numel(), bags = o.shape[0];
  const std::int64_t mode = sym.attrs.get_int("mode");
  const bool has_offsets = sym.inputs[2].is_tensor(), has_weights = sym.inputs.size() > 3 && sym.inputs[3].is_tensor();
  const auto padding = sym.attrs.get_optional_int("padding_idx");
  const std::int64_t n_offsets = has_offsets ? t.type(sym.inputs[2].value).numel() : 0;
  out.line("{");
  out.indent();
  out.comment(std::string("embedding_bag (") + (mode == 0 ? "sum" : mode == 1 ? "mean" : "max") + "): " + S(bags) +
              " bags of rows of " + S(width) + " from a table of " + S(rows) + ", " + S(n) + " indices");
  out.line("const " + T + "* __restrict w = static_cast<const " + T + "*>(" + ctx.buffer(sym.inputs[0].value) + ".data);");
  out.line("const " + I + "* __restrict idx = static_cast<const " + I + "*>(" + ctx.buffer(sym.inputs[1].value) + ".data);");
  if (has_offsets)
    out.line("const " + I + "* __restrict off = static_cast<const " + I + "*>(" + ctx.buffer(sym.inputs[2].value) + ".data);");
  if (has_weights)
    out.line("const " + T + "* __restrict psw = static_cast<const " + T + "*>(" + ctx.buffer(sym.inputs[3].value) + ".data);");
  out.line(T + "* __restrict o = static_cast<" + T + "*>(" + ctx.buffer(sym.outputs[0]) + ".data);");
  // Indices and offsets are data: checked before anything is written, as ATen raises.
  out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) {");
  out.line("  if (idx[i] < 0 || idx[i] >= " + S(rows) + ") {");
  out.line("    std::snprintf(call->error, call->error_capacity, \"embedding_bag: index %lld is out of range for a table of %lld rows\", "
           "(long long)idx[i], (long long)" + S(rows) + ");");
  out.line("    " + ctx.on_failure());
  out.line("  }");
  out.line("}");
  if (has_offsets) {
    out.line("for (int64_t b = 0; b < " + S(n_offsets) + "; ++b) {");
    out.line("  if ((b == 0 && off[0] != 0) || (b > 0 && off[b] < off[b - 1]) || off[b] > " + S(n) + ") {");
    out.line("    std::snprintf(call->error, call->error_capacity, \"embedding_bag: offsets must start at 0, never decrease and "
             "stay within the %lld indices; offsets[%lld] is %lld\", (long long)" + S(n) + ", (long long)b, (long long)off[b]);");
    out.line("    " + ctx.on_failure());
    out.line("  }");
    out.line("}");
  }
  // Each bag accumulates in the opmath type (float for the half types, rounded once where the row is stored, as
  // ATen's float accumulation), in a buffer per thread.
  const std::string A = loops::atype(w.dtype);
  out.line("#pragma omp parallel num_threads(thunderc_cpp_nt) if (" + S(n * width * static_cast<std::int64_t>(dtype_size(w.dtype))) +
           " >= " + S(kParallelBytes) + ")");
  out.line("{");
  out.line("std::vector<" + A + "> acc(" + S(std::max<std::int64_t>(width, 1)) + ");");
  out.line("#pragma omp for schedule(static)");
  out.line("for (int64_t b = 0; b < " + S(bags) + "; ++b) {");
  if (has_offsets) {
    out.line("  const int64_t start = off[b], end = b + 1 < " + S(n_offsets) + " ? (int64_t)off[b + 1] : " + S(n) + ";");
  } else {
    const std::int64_t per_bag = idx.rank() == 2 ? idx.shape[1] : 0;
    out.line("  const int64_t start = b * " + S(per_bag) + ", end = start + " + S(per_bag) + ";");
  }
  out.line("  for (int64_t d = 0; d < " + S(width) + "; ++d) acc[d] = 0;");
  out.line("  int64_t count = 0;");
  out.line("  for (int64_t i = start; i < end; ++i) {");
  if (padding) out.line("    if (idx[i] == " + S(*padding) + ") continue;  // padding_idx: left out");
  out.line("    const " + T + "* src = w + (int64_t)idx[i] * " + S(width) + ";");
  if (mode == 2) {
    out.line("    for (int64_t d = 0; d < " + S(width) + "; ++d) {");
    out.line("      const " + A + " v = src[d];");
    out.line("      if (count == 0 || v > acc[d]) acc[d] = v;");
    out.line("    }");
  } else {
    out.line("    for (int64_t d = 0; d < " + S(width) + "; ++d) acc[d] += (" + A + ")src[d]" +
             (has_weights ? " * (" + A + ")psw[i]" : "") + ";");
  }
  out.line("    ++count;");
  out.line("  }");
  if (mode == 1) out.line("  if (count > 0) for (int64_t d = 0; d < " + S(width) + "; ++d) acc[d] /= (" + A + ")count;");
  out.line("  " + T + "* row = o + b * " + S(width) + ";");
  out.line("  for (int64_t d = 0; d < " + S(width) + "; ++d) row[d] = acc[d];");
  out.line("}");
  out.line("}");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
