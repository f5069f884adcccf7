#include "codegen/cpp/indexing.h"

#include "codegen/loops/region_lowering.h"

namespace thunderc {

namespace {

// Elements touched from which a team of threads pays for itself (as the loop nests' threshold).
constexpr std::int64_t kParallelElements = 65536;

std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

std::int64_t product(const Shape& s, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

std::size_t wrapped(std::int64_t dim, std::size_t rank) {
  return static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim);
}

std::string parallel_if(std::int64_t work) {
  return "#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(static) if (" + S(work) + " >= " +
         S(kParallelElements) + ")";
}

struct Emitter {
  const EmitContext& ctx;
  const BoundSymbol& sym;
  SourceWriter& out;
  const Trace& t = ctx.trace();

  const TensorType& in_type(std::size_t i) const { return t.type(sym.inputs[i].value); }
  const TensorType& out_type() const { return t.type(sym.outputs[0]); }
  void pointer(const std::string& name, ValueId v, bool is_const) {
    const std::string T = loops::ctype(t.type(v).dtype);
    const std::string c = is_const ? "const " : "";
    out.line(c + T + "* __restrict " + name + " = static_cast<" + c + T + "*>(" + ctx.buffer(v) + ".data);");
  }
  // Fails the call unless every one of the n indices at `idx` is in [0, size).
  void check_indices(const std::string& op, std::int64_t n, std::int64_t size, std::size_t dim) {
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) {");
    out.line("  if (idx[i] < 0 || idx[i] >= " + S(size) + ") {");
    out.line("    std::snprintf(call->error, call->error_capacity, \"" + op + ": index %lld is out of range for dimension " +
             std::to_string(dim) + " of size " + std::to_string(size) + "\", (long long)idx[i]);");
    out.line("    " + ctx.on_failure());
    out.line("  }");
    out.line("}");
  }

  // out[o, j, i] = a[o, index[j], i]: outer x index count x inner, rows of `inner` elements copied.
  void index_select() {
    const TensorType& a = in_type(0);
    const std::size_t dim = a.rank() == 0 ? 0 : wrapped(sym.attrs.get_int("dim"), a.rank());
    const std::int64_t outer = product(a.shape, 0, dim), size = a.rank() == 0 ? 1 : a.shape[dim];
    const std::int64_t inner = a.rank() == 0 ? 1 : product(a.shape, dim + 1, a.rank()), n = in_type(1).numel();
    out.comment("index_select: " + std::to_string(n) + " of " + std::to_string(size) + " slices along dim " + std::to_string(dim));
    pointer("x", sym.inputs[0].value, true);
    pointer("idx", sym.inputs[1].value, true);
    pointer("o", sym.outputs[0], false);
    check_indices("index_select", n, size, dim);
    const std::string bytes = S(inner) + " * sizeof(*o)";
    out.line(parallel_if(outer * n * inner));
    out.line("for (int64_t r = 0; r < " + S(outer * n) + "; ++r) {");
    out.line("  const int64_t p = r / " + S(n) + ", j = r % " + S(n) + ";");
    out.line("  std::memcpy(o + r * " + S(inner) + ", x + (p * " + S(size) + " + (int64_t)idx[j]) * " + S(inner) + ", " + bytes + ");");
    out.line("}");
  }

  // out[i0, .., ik] = a[i0, .., index[i0, .., ik], .., ik] (index at position dim): every element of index.
  void gather() {
    const TensorType &a = in_type(0), &index = in_type(1);
    const std::size_t rank = a.rank(), dim = rank == 0 ? 0 : wrapped(sym.attrs.get_int("dim"), rank);
    const std::int64_t n = index.numel(), size = rank == 0 ? 1 : a.shape[dim];
    out.comment("gather along dim " + std::to_string(dim) + ": " + std::to_string(n) + " elements");
    pointer("x", sym.inputs[0].value, true);
    pointer("idx", sym.inputs[1].value, true);
    pointer("o", sym.outputs[0], false);
    check_indices("gather", n, size, dim);
    // The offset into a of element i of index: its coordinates (from index's shape) times a's strides, with
    // the index's own value in place of coordinate `dim`.
    const Shape a_strides = loops::contiguous(a.shape);
    std::string offset = "(int64_t)idx[i] * " + S(rank == 0 ? 0 : a_strides[dim]);
    std::int64_t step = 1;
    for (std::size_t d = index.rank(); d-- > 0;) {
      if (d != dim && index.shape[d] > 1)
        offset += " + ((i / " + S(step) + ") % " + S(index.shape[d]) + ") * " + S(a_strides[d]);
      step *= index.shape[d];
    }
    out.line(parallel_if(n));
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) o[i] = x[" + offset + "];");
  }

  // The input as rows along `dim` (the whole input when dim is None or the input is 0-dim): element k of row r
  // is x[base + k * inner], base = (r / inner) * n * inner + r % inner, for r < outer * inner.
  struct Rows {
    std::int64_t outer = 1, n = 1, inner = 1;
  };
  Rows rows_along(const TensorType& a, const AttrValue& dim) const {
    Rows rows{1, a.numel(), 1};
    if (!std::holds_alternative<None>(dim) && a.rank() > 0) {
      const std::size_t d = wrapped(std::get<std::int64_t>(dim), a.rank());
      rows = {product(a.shape, 0, d), a.shape[d], product(a.shape, d + 1, a.rank())};
    }
    return rows;
  }
  // Opens the parallel loop over the rows and declares `base`; the caller closes it.
  void open_rows(const Rows& rows) {
    out.line(parallel_if(rows.outer * rows.n * rows.inner));
    out.line("for (int64_t r = 0; r < " + S(rows.outer * rows.inner) + "; ++r) {");
    out.line("  const int64_t base = (r / " + S(rows.inner) + ") * " + S(rows.n * rows.inner) + " + r % " + S(rows.inner) + ";");
  }

  // The first position of the largest (argmax) or smallest (argmin) element of each row; a NaN wins, the
  // first NaN of a row is its answer.
  void arg_extreme(bool is_max) {
    const TensorType& a = in_type(0);
    const Rows rows = rows_along(a, sym.attrs.get("dim"));
    const std::int64_t n = rows.n, inner = rows.inner;
    const bool floating = is_floating(a.dtype);
    const std::string A = loops::atype(a.dtype);
    out.comment(std::string(is_max ? "argmax" : "argmin") + " over " + std::to_string(n) + " elements, " +
                std::to_string(rows.outer * inner) + " rows");
    pointer("x", sym.inputs[0].value, true);
    pointer("o", sym.outputs[0], false);
    const std::string better = is_max ? "v > best" : "v < best";
    open_rows(rows);
    out.line("  " + A + " best = x[base];");
    out.line("  int64_t at = 0;");
    out.line("  for (int64_t k = 1; k < " + S(n) + "; ++k) {");
    if (floating) out.line("    if (best != best) break;  // a NaN: the answer");
    out.line("    const " + A + " v = x[base + k * " + S(inner) + "];");
    out.line("    if (" + (floating ? "v != v || " : std::string()) + better + ") { best = v; at = k; }");
    out.line("  }");
    out.line("  o[r] = at;");
    out.line("}");
  }

  // Running sums along dim, each element converted to the result's dtype first; floating results accumulate
  // in double, integer ones in int64 wrapping around (computed in uint64).
  void cumsum() {
    const TensorType &a = in_type(0), &o = out_type();
    const Rows rows = rows_along(a, sym.attrs.get("dim"));
    const std::int64_t n = rows.n, inner = rows.inner;
    const bool floating = is_floating(o.dtype);
    const std::string O = loops::ctype(o.dtype);
    out.comment("cumsum over " + std::to_string(n) + " elements, " + std::to_string(rows.outer * inner) + " rows");
    pointer("x", sym.inputs[0].value, true);
    pointer("o", sym.outputs[0], false);
    open_rows(rows);
    out.line(std::string("  ") + (floating ? "double" : "uint64_t") + " acc = 0;");
    out.line("  for (int64_t k = 0; k < " + S(n) + "; ++k) {");
    out.line("    const int64_t e = base + k * " + S(inner) + ";");
    if (floating) out.line("    acc += static_cast<" + O + ">(x[e]);");
    else out.line("    acc += static_cast<uint64_t>(static_cast<int64_t>(static_cast<" + O + ">(x[e])));");
    out.line("    o[e] = static_cast<" + O + ">(acc);");
    out.line("  }");
    out.line("}");
  }
};

}  // namespace

bool is_cpp_indexing_op(const std::string& name) {
  return name == "index_select" || name == "gather" || name == "argmax" || name == "argmin" || name == "cumsum";
}

void emit_cpp_indexing(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  Emitter e{ctx, sym, out};
  out.line("{");
  out.indent();
  const std::string& name = sym.op->name;
  if (name == "index_select") e.index_select();
  else if (name == "gather") e.gather();
  else if (name == "argmax" || name == "argmin") e.arg_extreme(name == "argmax");
  else if (name == "cumsum") e.cumsum();
  else internal_error("cpp codegen: ", name, " is not an indexing operator");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
