#include "codegen/cpp/indexing.h"

#include "codegen/cpp/embedding.h"
#include "codegen/cpp/own_code.h"
#include "codegen/cpp/conv_columns.h"
#include "codegen/cpp/dropout.h"
#include "codegen/cpp/pool3d.h"
#include "codegen/cpp/resample.h"
#include "codegen/cpp/scatter.h"

namespace thunderc {

namespace {

using namespace own_code;

struct Emitter {
  const EmitContext& ctx;
  const BoundSymbol& sym;
  SourceWriter& out;
  const Trace& t = ctx.trace();

  const TensorType& in_type(std::size_t i) const { return t.type(sym.inputs[i].value); }
  const TensorType& out_type() const { return t.type(sym.outputs[0]); }
  void pointer(const std::string& name, ValueId v, bool is_const) { own_code::pointer(ctx, out, name, v, is_const); }
  void check_indices(const std::string& op, std::int64_t n, std::int64_t size, std::size_t dim) {
    own_code::check_indices(ctx, out, "idx", op, n, size, dim);
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
    out.line(parallel_for_if(outer * n * inner));
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
    out.line(parallel_for_if(n));
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
    out.line(parallel_for_if(rows.outer * rows.n * rows.inner));
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

  // Products along dim (of every element when dim is None), each element converted to the result's dtype
  // first; floating results multiply in double, integer ones in int64 wrapping around (computed in uint64).
  void prod() {
    const TensorType &a = in_type(0), &o = out_type();
    const Rows rows = rows_along(a, sym.attrs.get("dim"));
    const bool floating = is_floating(o.dtype);
    const std::string O = loops::ctype(o.dtype);
    out.comment("prod over " + std::to_string(rows.n) + " elements, " + std::to_string(rows.outer * rows.inner) + " rows");
    pointer("x", sym.inputs[0].value, true);
    pointer("o", sym.outputs[0], false);
    open_rows(rows);
    out.line(std::string("  ") + (floating ? "double acc = 1;" : "uint64_t acc = 1;"));
    out.line("  for (int64_t k = 0; k < " + S(rows.n) + "; ++k)");
    if (floating) out.line("    acc *= static_cast<" + O + ">(x[base + k * " + S(rows.inner) + "]);");
    else out.line("    acc *= static_cast<uint64_t>(static_cast<int64_t>(static_cast<" + O + ">(x[base + k * " + S(rows.inner) + "])));");
    out.line("  o[r] = static_cast<" + O + ">(acc);");
    out.line("}");
  }

  // Whether u comes first in ascending (descending) order, NaN above every number.
  static std::string before(DType d, bool descending, const std::string& u, const std::string& v) {
    if (!is_floating(d)) return descending ? u + " > " + v : u + " < " + v;
    return descending ? "(" + u + " != " + u + ") ? (" + v + " == " + v + ") : (" + u + " > " + v + ")"
                      : "(" + v + " != " + v + ") ? (" + u + " == " + u + ") : (" + u + " < " + v + ")";
  }

  // Opens a parallel region over the rows with a permutation of one row per thread (the caller closes two
  // braces): perm holds 0..n-1 at the top of each row, and `cmp(p, q)` compares the row's elements p and q.
  void open_permuted_rows(const Rows& rows, DType d, bool descending, bool index_ties) {
    const std::string A = loops::atype(d);
    out.line("#pragma omp parallel num_threads(thunderc_cpp_nt) if (" + S(rows.outer * rows.n * rows.inner) + " >= " +
             S(kParallelElements) + ")");
    out.line("{");
    out.line("  std::vector<int64_t> perm(" + S(rows.n) + ");");
    out.line("  #pragma omp for schedule(static)");
    out.line("  for (int64_t r = 0; r < " + S(rows.outer * rows.inner) + "; ++r) {");
    out.line("    const int64_t base = (r / " + S(rows.inner) + ") * " + S(rows.n * rows.inner) + " + r % " + S(rows.inner) + ";");
    out.line("    for (int64_t k = 0; k < " + S(rows.n) + "; ++k) perm[k] = k;");
    out.line("    auto cmp = [&](int64_t p, int64_t q) {");
    out.line("      const " + A + " u = x[base + p * " + S(rows.inner) + "], v = x[base + q * " + S(rows.inner) + "];");
    if (index_ties) {
      out.line("      if (" + before(d, descending, "u", "v") + ") return true;");
      out.line("      if (" + before(d, descending, "v", "u") + ") return false;");
      out.line("      return p < q;");
    } else {
      out.line("      return " + before(d, descending, "u", "v") + ";");
    }
    out.line("    };");
  }

  // Writes the row's first `count` elements in perm's order (values at ov, positions at oi, from `obase` with
  // the row's stride) and closes what open_permuted_rows opened.
  void write_permuted_row(const Rows& rows, std::int64_t count, const std::string& obase) {
    out.line("    for (int64_t j = 0; j < " + S(count) + "; ++j) {");
    out.line("      ov[" + obase + " + j * " + S(rows.inner) + "] = x[base + perm[j] * " + S(rows.inner) + "];");
    out.line("      oi[" + obase + " + j * " + S(rows.inner) + "] = perm[j];");
    out.line("    }");
    out.line("  }");
    out.line("}");
  }

  // Each row in order (a stable sort: equal elements keep their order), values and positions.
  void sort() {
    const TensorType& a = in_type(0);
    const Rows rows = rows_along(a, sym.attrs.get("dim"));
    const bool descending = sym.attrs.get_bool("descending");
    out.comment(std::string("sort ") + (descending ? "descending" : "ascending") + ": " + std::to_string(rows.outer * rows.inner) +
                " rows of " + std::to_string(rows.n));
    pointer("x", sym.inputs[0].value, true);
    pointer("ov", sym.outputs[0], false);
    pointer("oi", sym.outputs[1], false);
    open_permuted_rows(rows, a.dtype, descending, false);
    out.line("    std::stable_sort(perm.begin(), perm.end(), cmp);");
    write_permuted_row(rows, rows.n, "base");
  }

  // The k first elements of each row in descending (largest) or ascending order, ties by position.
  void topk() {
    const TensorType& a = in_type(0);
    const Rows rows = rows_along(a, sym.attrs.get("dim"));
    const std::int64_t k = sym.attrs.get_int("k");
    const bool largest = sym.attrs.get_bool("largest");
    out.comment(std::string("topk ") + (largest ? "largest " : "smallest ") + std::to_string(k) + " of " +
                std::to_string(rows.n) + ", " + std::to_string(rows.outer * rows.inner) + " rows");
    pointer("x", sym.inputs[0].value, true);
    pointer("ov", sym.outputs[0], false);
    pointer("oi", sym.outputs[1], false);
    open_permuted_rows(rows, a.dtype, largest, true);
    out.line("    std::partial_sort(perm.begin(), perm.begin() + " + S(k) + ", perm.end(), cmp);");
    out.line("    const int64_t obase = (r / " + S(rows.inner) + ") * " + S(k * rows.inner) + " + r % " + S(rows.inner) + ";");
    write_permuted_row(rows, k, "obase");
  }

  // out[p, i] = a[.., i + max(0, -offset) at dim1, .., i + max(0, offset) at dim2, ..] where p runs over the
  // other dims in order.
  void diagonal() {
    const TensorType& a = in_type(0);
    const std::size_t rank = a.rank();
    const std::size_t d1 = wrapped(sym.attrs.get_int("dim1"), rank), d2 = wrapped(sym.attrs.get_int("dim2"), rank);
    const std::int64_t offset = sym.attrs.get_int("offset"), len = out_type().shape.back();
    const Shape strides = loops::contiguous(a.shape);
    Shape rest, rest_strides;
    for (std::size_t d = 0; d < rank; ++d)
      if (d != d1 && d != d2) rest.push_back(a.shape[d]), rest_strides.push_back(strides[d]);
    const std::int64_t outer = product(rest, 0, rest.size());
    const std::int64_t start = std::max<std::int64_t>(0, -offset) * strides[d1] + std::max<std::int64_t>(0, offset) * strides[d2];
    out.comment("diagonal of dims " + std::to_string(d1) + ", " + std::to_string(d2) + ": " + std::to_string(len) + " elements, " +
                std::to_string(outer) + " times");
    pointer("x", sym.inputs[0].value, true);
    pointer("o", sym.outputs[0], false);
    out.line(parallel_for_if(outer * len));
    out.line("for (int64_t p = 0; p < " + S(outer) + "; ++p) {");
    out.line("  const int64_t at = " + S(start) + " + " + offset_of("p", rest, rest_strides) + ";");
    out.line("  for (int64_t i = 0; i < " + S(len) + "; ++i) o[p * " + S(len) + " + i] = x[at + i * " +
             S(strides[d1] + strides[d2]) + "];");
    out.line("}");
  }
};

}  // namespace

bool is_cpp_indexing_op(const std::string& name) {
  return name == "index_select" || name == "gather" || name == "argmax" || name == "argmin" || name == "cumsum" ||
         name == "prod" || name == "sort" || name == "topk" || name == "diagonal" || is_cpp_scatter_op(name) ||
         name == "embedding" || name == "embedding_bag" || name == "upsample_bilinear2d" || name == "grid_sampler_2d" ||
         is_cpp_pool3d_op(name) || is_cpp_conv_columns_op(name) || is_cpp_dropout_op(name);
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
  else if (name == "prod") e.prod();
  else if (name == "sort") e.sort();
  else if (name == "topk") e.topk();
  else if (name == "diagonal") e.diagonal();
  else if (is_cpp_scatter_op(name)) emit_cpp_scatter(ctx, sym, out);
  else if (name == "upsample_bilinear2d") emit_cpp_upsample_bilinear2d(ctx, sym, out);
  else if (name == "grid_sampler_2d") emit_cpp_grid_sampler_2d(ctx, sym, out);
  else if (is_cpp_pool3d_op(name)) emit_cpp_pool3d(ctx, sym, out);
  else if (is_cpp_conv_columns_op(name)) emit_cpp_conv_columns(ctx, sym, out);
  else if (is_cpp_dropout_op(name)) emit_cpp_dropout_mask(ctx, sym, out);
  else if (name == "embedding") emit_cpp_embedding(ctx, sym, out);
  else if (name == "embedding_bag") emit_cpp_embedding_bag(ctx, sym, out);
  else internal_error("cpp codegen: ", name, " is not an indexing operator");
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
