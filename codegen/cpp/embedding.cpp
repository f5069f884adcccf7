#include "codegen/cpp/embedding.h"

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
