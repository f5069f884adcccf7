#include "codegen/nvfuser/indexing.h"

#include "codegen/loops/advanced_index_plan.h"
#include "codegen/loops/region_lowering.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "core/ir/error.h"
#include "core/ops/meta_util.h"

namespace thunderc {

namespace {

std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

// embedding(weight [rows, width], indices [...]) -> [..., width]: element e_ is column e_ % width of the row
// that index e_ / width names.
cuda::KernelLaunch embedding_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &w = t.type(sym.inputs[0].value), &idx = t.type(sym.inputs[1].value);
  const std::string C = loops::ctype(w.dtype), I = loops::ctype(idx.dtype);
  const std::int64_t rows = w.shape[0], width = w.shape[1];
  return grid_stride_kernel(name, idx.numel() * width,
                            {C + "* __restrict__ out", "const " + C + "* __restrict__ w", "const " + I + "* __restrict__ idx"},
                            {"const long long row_ = (long long)idx[e_ / " + S(width) + "];",
                             "if (row_ < 0 || row_ >= " + S(rows) + ") __trap();  // out of range: PyTorch's device-side assert",
                             "out[e_] = w[row_ * " + S(width) + " + e_ % " + S(width) + "];"});
}

// A copy of `n` elements: scatter_reduce's result starts as its input.
cuda::KernelLaunch copy_kernel(const std::string& name, DType d, std::int64_t n) {
  const std::string C = loops::ctype(d);
  return grid_stride_kernel(name, n, {C + "* __restrict__ out", "const " + C + "* __restrict__ x"}, {"out[e_] = x[e_];"});
}

// What the scatter kernels share, for the thread of index element e_ (coordinates c0_, c1_, ...): `first_`,
// the element of its group (the index elements that differ from it only along dim) at 0 along dim; `to_`, its
// index (trapping when out of range); `at_`, the place in out it writes; `from_`, src's element at 0 along dim
// with its other coordinates (0 for a 0-dim src).
struct ScatterGroup {
  std::vector<std::string> lines;
  std::string cd;                     // this element's coordinate along dim
  std::int64_t n_dim = 0, step = 0;   // index's extent and stride along dim
  std::int64_t src_step = 0;          // src's stride along dim
};
ScatterGroup scatter_group(const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &index = t.type(sym.inputs[1].value);
  const std::size_t r = index.rank(), dim = static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim"), a.rank(), sym.op->name));
  const Shape ai = loops::contiguous(index.shape), aa = loops::contiguous(a.shape);
  const bool tensor_src = sym.inputs[2].is_tensor() && t.type(sym.inputs[2].value).rank() > 0;
  const Shape as = tensor_src ? loops::contiguous(t.type(sym.inputs[2].value).shape) : Shape(r, 0);
  ScatterGroup g;
  std::string rest = "0", from = "0";
  for (std::size_t k = 0; k < r; ++k) {
    const std::string c = "c" + std::to_string(k) + "_";
    g.lines.push_back("const long long " + c + " = (e_ / " + S(ai[k]) + ") % " + S(index.shape[k]) + ";");
    if (k != dim) rest += " + " + c + " * " + S(aa[k]);
    from += " + " + c + " * " + S(as[k]);
  }
  g.cd = "c" + std::to_string(dim) + "_";
  g.n_dim = index.shape[dim];
  g.step = ai[dim];
  g.src_step = as[dim];
  g.lines.push_back("const long long first_ = e_ - " + g.cd + " * " + S(g.step) + ";  // this group's element at 0 along dim");
  g.lines.push_back("const long long to_ = (long long)idx[e_];");
  g.lines.push_back("if (to_ < 0 || to_ >= " + S(a.shape[dim]) + ") __trap();  // out of range: PyTorch's device-side assert");
  g.lines.push_back("const long long at_ = " + rest + " + to_ * " + S(aa[dim]) + ";");
  g.lines.push_back("const long long from_ = " + from + " - " + g.cd + " * " + S(g.src_step) + ";  // src at 0 along dim");
  return g;
}

// scatter_reduce(a, dim, index, src): out (already a copy of a) at index's coordinates with index[e] along dim
// reduces src at the same coordinates. A thread per index element; the leader of each group (see indexing.h)
// reduces the group in order along dim, as the cpp kernel's loop over the index in row-major order does.
cuda::KernelLaunch scatter_reduce_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const std::string& reduce = sym.attrs.get_string("reduce");
  const bool include_self = sym.attrs.get_bool("include_self");
  const std::string C = loops::ctype(a.dtype);
  const ScatterGroup g = scatter_group(t, sym);
  std::vector<std::string> body = g.lines;
  body.push_back("bool leader_ = true;");
  body.push_back("for (long long j_ = 0; j_ < " + g.cd + " && leader_; ++j_) leader_ = (long long)idx[first_ + j_ * " + S(g.step) + "] != to_;");
  body.push_back("if (!leader_) continue;");
  std::string start = "out[at_]";
  if (!include_self) {
    if (reduce == "sum" || reduce == "mean") start = C + "(0)";
    else if (reduce == "prod") start = C + "(1)";
    else if (reduce == "amax") start = "-" + C + "(__builtin_inff())";
    else start = C + "(__builtin_inff())";
  }
  body.push_back(C + " acc_ = " + start + ";");
  if (reduce == "mean") body.push_back("long long count_ = " + std::string(include_self ? "1" : "0") + ";");
  body.push_back("for (long long j_ = " + g.cd + "; j_ < " + S(g.n_dim) + "; ++j_) {");
  body.push_back("  if ((long long)idx[first_ + j_ * " + S(g.step) + "] != to_) continue;");
  body.push_back("  const " + C + " v_ = src[from_ + j_ * " + S(g.src_step) + "];");
  if (reduce == "sum" || reduce == "mean") body.push_back("  acc_ = acc_ + v_;");
  else if (reduce == "prod") body.push_back("  acc_ = acc_ * v_;");
  else body.push_back(std::string("  if (v_ != v_ || v_ ") + (reduce == "amax" ? ">" : "<") + " acc_) acc_ = v_;  // NaN wins, as ATen");
  if (reduce == "mean") body.push_back("  ++count_;");
  body.push_back("}");
  body.push_back(reduce == "mean" ? "out[at_] = acc_ / " + C + "(count_);" : "out[at_] = acc_;");
  return grid_stride_kernel(name, t.type(sym.inputs[1].value).numel(),
                            {C + "* __restrict__ out", "const int64_t* __restrict__ idx", "const " + C + "* __restrict__ src"},
                            body);
}

// scatter(a, dim, index, src or a number): out (already a copy of a) at index's coordinates with index[e] along
// dim takes src at the same coordinates. Where several elements of a group hit one place the cpp kernel's
// loop leaves the last one along dim: here only that one writes.
cuda::KernelLaunch scatter_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const std::string C = loops::ctype(a.dtype);
  const ScatterGroup g = scatter_group(t, sym);
  std::vector<std::string> body = g.lines;
  body.push_back("bool last_ = true;");
  body.push_back("for (long long j_ = " + g.cd + " + 1; j_ < " + S(g.n_dim) + " && last_; ++j_) last_ = (long long)idx[first_ + j_ * " +
                 S(g.step) + "] != to_;");
  body.push_back("if (!last_) continue;");
  std::vector<std::string> params = {C + "* __restrict__ out", "const int64_t* __restrict__ idx"};
  if (sym.inputs[2].is_tensor()) {
    params.push_back("const " + C + "* __restrict__ src");
    body.push_back("out[at_] = src[from_ + " + g.cd + " * " + S(g.src_step) + "];");
  } else {  // exact: the checker's rule for integers
    body.push_back("out[at_] = " + loops::lit(sym.inputs[2].scalar.to_double(), a.dtype) + ";");
  }
  return grid_stride_kernel(name, t.type(sym.inputs[1].value).numel(), params, body);
}

// The input as rows along `dim` (the whole input when dim is None or the input is 0-dim), as the cpp kernels
// see it (codegen/cpp/indexing.cpp): element k of row r is x[base + k * inner], base = (r / inner) * n * inner +
// r % inner, for r < outer * inner.
struct Rows {
  std::int64_t outer = 1, n = 1, inner = 1;
};
Rows rows_along(const TensorType& a, const AttrValue& dim) {
  Rows rows{1, a.numel(), 1};
  if (!std::holds_alternative<None>(dim) && a.rank() > 0) {
    const std::size_t d = static_cast<std::size_t>(wrap_dim(std::get<std::int64_t>(dim), a.rank(), "rows"));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= a.shape[i];
    for (std::size_t i = d + 1; i < a.rank(); ++i) inner *= a.shape[i];
    rows = {outer, a.shape[d], inner};
  }
  return rows;
}
std::string row_base(const Rows& rows) {
  return "const long long base_ = (e_ / " + S(rows.inner) + ") * " + S(rows.n * rows.inner) + " + e_ % " + S(rows.inner) + ";";
}
std::vector<std::string> in_out_params(DType in, DType out) {
  return {loops::ctype(out) + std::string("* __restrict__ o"), "const " + std::string(loops::ctype(in)) + "* __restrict__ x"};
}

// index_select: out[o, j, i] = a[o, index[j], i], a thread per element written.
cuda::KernelLaunch index_select_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &idx = t.type(sym.inputs[1].value);
  const std::size_t dim = a.rank() == 0 ? 0 : static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim"), a.rank(), "index_select"));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < dim && i < a.rank(); ++i) outer *= a.shape[i];
  for (std::size_t i = dim + 1; i < a.rank(); ++i) inner *= a.shape[i];
  const std::int64_t size = a.rank() == 0 ? 1 : a.shape[dim], n = idx.numel();
  std::vector<std::string> params = in_out_params(a.dtype, a.dtype);
  params.push_back("const " + std::string(loops::ctype(idx.dtype)) + "* __restrict__ idx");
  return grid_stride_kernel(name, outer * n * inner, params,
                            {"const long long i_ = e_ % " + S(inner) + ", j_ = (e_ / " + S(inner) + ") % " + S(n) +
                                 ", p_ = e_ / " + S(n * inner) + ";",
                             "const long long at_ = (long long)idx[j_];",
                             "if (at_ < 0 || at_ >= " + S(size) + ") __trap();  // out of range: PyTorch's device-side assert",
                             "o[e_] = x[(p_ * " + S(size) + " + at_) * " + S(inner) + " + i_];"});
}

// gather: out[i0, .., ik] = a[i0, .., index[i0, .., ik] at dim, .., ik].
cuda::KernelLaunch gather_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &index = t.type(sym.inputs[1].value);
  const std::size_t rank = a.rank(), dim = rank == 0 ? 0 : static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim"), rank, "gather"));
  const std::int64_t size = rank == 0 ? 1 : a.shape[dim];
  const Shape st = loops::contiguous(a.shape);
  std::string offset = "at_ * " + S(rank == 0 ? 0 : st[dim]);
  std::int64_t step = 1;
  for (std::size_t d = index.rank(); d-- > 0;) {
    if (d != dim && index.shape[d] > 1) offset += " + ((e_ / " + S(step) + ") % " + S(index.shape[d]) + ") * " + S(st[d]);
    step *= index.shape[d];
  }
  std::vector<std::string> params = in_out_params(a.dtype, a.dtype);
  params.push_back("const int64_t* __restrict__ idx");
  return grid_stride_kernel(name, index.numel(), params,
                            {"const long long at_ = (long long)idx[e_];",
                             "if (at_ < 0 || at_ >= " + S(size) + ") __trap();  // out of range: PyTorch's device-side assert",
                             "o[e_] = x[" + offset + "];"});
}

// argmax / argmin: a thread per row; the first position of the largest (smallest) element, the first NaN winning.
cuda::KernelLaunch arg_extreme_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const Rows rows = rows_along(a, sym.attrs.get("dim"));
  const bool floating = is_floating(a.dtype), is_max = sym.op->name == "argmax";
  const std::string A = loops::atype(a.dtype);
  std::vector<std::string> body = {row_base(rows), A + " best_ = x[base_];", "long long at_ = 0;",
                                   "for (long long k_ = 1; k_ < " + S(rows.n) + "; ++k_) {"};
  if (floating) body.push_back("  if (best_ != best_) break;  // a NaN: the answer");
  body.push_back("  const " + A + " v_ = x[base_ + k_ * " + S(rows.inner) + "];");
  body.push_back("  if (" + std::string(floating ? "v_ != v_ || " : "") + (is_max ? "v_ > best_" : "v_ < best_") +
                 ") { best_ = v_; at_ = k_; }");
  body.push_back("}");
  body.push_back("o[e_] = at_;");
  return grid_stride_kernel(name, rows.outer * rows.inner, in_out_params(a.dtype, DType::Int64), body);
}

// cumsum / prod: a thread per row, in the cpp kernel's order and precision (floating results in double, integer
// ones in int64 wrapping around, computed in uint64), so the same results bit for bit.
cuda::KernelLaunch scan_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const Rows rows = rows_along(a, sym.attrs.get("dim"));
  const bool floating = is_floating(o.dtype), cumsum = sym.op->name == "cumsum";
  const std::string O = loops::ctype(o.dtype), acc = floating ? "double" : "unsigned long long";
  const std::string term = floating ? "(" + O + ")x[e2_]" : "(unsigned long long)(long long)(" + O + ")x[e2_]";
  std::vector<std::string> body = {row_base(rows), acc + " acc_ = " + (cumsum ? "0" : "1") + ";",
                                   "for (long long k_ = 0; k_ < " + S(rows.n) + "; ++k_) {",
                                   "  const long long e2_ = base_ + k_ * " + S(rows.inner) + ";"};
  if (cumsum) {
    body.push_back("  acc_ += " + term + ";");
    body.push_back("  o[e2_] = (" + O + ")acc_;");
    body.push_back("}");
  } else {
    body.push_back("  acc_ *= " + term + ";");
    body.push_back("}");
    body.push_back("o[e_] = (" + O + ")acc_;");
  }
  return grid_stride_kernel(name, rows.outer * rows.inner, in_out_params(a.dtype, o.dtype), body);
}

// diagonal: out[p, i] = a[.., i + max(0, -offset) at dim1, .., i + max(0, offset) at dim2, ..].
cuda::KernelLaunch diagonal_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &o = t.type(sym.outputs[0]);
  const std::size_t rank = a.rank();
  const auto d1 = static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim1"), rank, "diagonal"));
  const auto d2 = static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim2"), rank, "diagonal"));
  const std::int64_t offset = sym.attrs.get_int("offset"), len = o.shape.back();
  const Shape st = loops::contiguous(a.shape);
  std::string at = S(std::max<std::int64_t>(0, -offset) * st[d1] + std::max<std::int64_t>(0, offset) * st[d2]);
  std::int64_t step = len;  // p_ = e_ / len runs over the other dims in order
  for (std::size_t d = rank; d-- > 0;) {
    if (d == d1 || d == d2) continue;
    at += " + ((e_ / " + S(step) + ") % " + S(a.shape[d]) + ") * " + S(st[d]);
    step *= a.shape[d];
  }
  return grid_stride_kernel(name, o.numel(), in_out_params(a.dtype, a.dtype),
                            {"o[e_] = x[" + at + " + (e_ % " + S(len) + ") * " + S(st[d1] + st[d2]) + "];"});
}

// sort / topk: a thread per element, which finds its rank in its row (the elements that come before it, ties
// and NaNs by position: a stable order, as the cpp kernels' std::stable_sort and position-tied partial_sort) and
// writes itself there when the rank is below the count kept. O(n) per element, n^2 per row: fine for the rows
// of a batch's logits or scores, slow for rows of hundreds of thousands.
cuda::KernelLaunch sort_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const Rows rows = rows_along(a, sym.attrs.get("dim"));
  const bool topk = sym.op->name == "topk";
  const bool descending = topk ? sym.attrs.get_bool("largest") : sym.attrs.get_bool("descending");
  const std::int64_t count = topk ? sym.attrs.get_int("k") : rows.n;
  const std::string A = loops::atype(a.dtype), C = loops::ctype(a.dtype);
  // Whether u comes first in ascending (descending) order, NaN above every number (codegen/cpp/indexing.cpp).
  auto before = [&](const std::string& u, const std::string& v) {
    if (!is_floating(a.dtype)) return descending ? u + " > " + v : u + " < " + v;
    return descending ? "((" + u + " != " + u + ") ? (" + v + " == " + v + ") : (" + u + " > " + v + "))"
                      : "((" + v + " != " + v + ") ? (" + u + " == " + u + ") : (" + u + " < " + v + "))";
  };
  std::vector<std::string> body = {
      "const long long r_ = e_ / " + S(rows.n) + ", p_ = e_ % " + S(rows.n) + ";  // row, position",
      "const long long base_ = (r_ / " + S(rows.inner) + ") * " + S(rows.n * rows.inner) + " + r_ % " + S(rows.inner) + ";",
      "const " + A + " u_ = x[base_ + p_ * " + S(rows.inner) + "];",
      "long long rank_ = 0;",
      "for (long long q_ = 0; q_ < " + S(rows.n) + "; ++q_) {",
      "  if (q_ == p_) continue;",
      "  const " + A + " v_ = x[base_ + q_ * " + S(rows.inner) + "];",
      "  if (" + before("v_", "u_") + " || (q_ < p_ && !(" + before("u_", "v_") + "))) ++rank_;",
      "}",
      "if (rank_ >= " + S(count) + ") continue;",
      "const long long at_ = (r_ / " + S(rows.inner) + ") * " + S(count * rows.inner) + " + r_ % " + S(rows.inner) +
          " + rank_ * " + S(rows.inner) + ";",
      "ov[at_] = x[base_ + p_ * " + S(rows.inner) + "];",
      "oi[at_] = p_;"};
  return grid_stride_kernel(name, rows.outer * rows.inner * rows.n,
                            {C + "* __restrict__ ov", "int64_t* __restrict__ oi", "const " + C + "* __restrict__ x"}, body);
}

// The index tensors' values at flat position `flat` of the indexed shape, into <prefix>0, ... (wrapped into
// [0, size); out of range traps, as PyTorch's device-side assert).
std::vector<std::string> read_advanced_indices(const loops::AdvancedIndexPlan& ix, const std::string& flat,
                                               const std::string& prefix) {
  std::vector<std::string> lines;
  for (std::size_t k = 0; k < ix.sizes.size(); ++k) {
    const std::string i = prefix + std::to_string(k);
    lines.push_back("long long " + i + " = (long long)idx" + std::to_string(k) + "[" + ix.index_offset(k, flat) + "];");
    lines.push_back("if (" + i + " < -" + S(ix.sizes[k]) + " || " + i + " >= " + S(ix.sizes[k]) + ") __trap();");
    lines.push_back("if (" + i + " < 0) " + i + " += " + S(ix.sizes[k]) + ";");
  }
  return lines;
}
std::vector<std::string> index_params(const Trace& t, const BoundSymbol& sym, std::size_t first_index) {
  std::vector<std::string> params;
  for (std::size_t k = 0; k < sym.attrs.get_ints("dims").size(); ++k)
    params.push_back("const " + std::string(loops::ctype(t.type(sym.inputs[first_index + k].value).dtype)) + "* __restrict__ idx" +
                     std::to_string(k));
  return params;
}

// index: out[e] = a at the indexed position e (a thread per element written).
cuda::KernelLaunch index_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const loops::AdvancedIndexPlan ix = loops::plan_advanced_index(t, sym, 1);
  std::vector<std::string> params = in_out_params(a.dtype, a.dtype);
  for (const std::string& p : index_params(t, sym, 1)) params.push_back(p);
  std::vector<std::string> body = read_advanced_indices(ix, "e_", "i");
  body.push_back("o[e_] = x[" + ix.a_offset("e_", "i") + "];");
  return grid_stride_kernel(name, t.type(sym.outputs[0]).numel(), params, body);
}

// index_put: out (already a copy of a) at the place indexed position e_ names takes the values (accumulate:
// adds them). Where several positions name one place, the cpp kernel's loop in position order leaves the last
// one (adds them all in order): here the last position writes (the first adds the others in order). Each thread
// scans every position: n^2 for n indexed positions.
cuda::KernelLaunch index_put_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &v = t.type(sym.inputs[1].value);
  const loops::AdvancedIndexPlan ix = loops::plan_advanced_index(t, sym, 2);
  const std::int64_t n = loops::numel(ix.shape);
  const bool accumulate = sym.attrs.get_bool("accumulate");
  const std::string C = loops::ctype(a.dtype);
  const Shape vs = loops::broadcast_strides(v.shape, ix.shape);
  auto value_at = [&](const std::string& flat) {
    std::string e = "0";
    for (std::size_t q = 0; q < ix.shape.size(); ++q) e += " + " + ix.coordinate(flat, q) + " * " + S(vs[q]);
    return "v[" + e + "]";
  };
  std::vector<std::string> params = {C + "* __restrict__ out", "const " + C + "* __restrict__ v"};
  for (const std::string& p : index_params(t, sym, 2)) params.push_back(p);
  std::vector<std::string> body = read_advanced_indices(ix, "e_", "i");
  body.push_back("const long long at_ = " + ix.a_offset("e_", "i") + ";");
  // Another position f_ naming the same place: its indices into j<k>, then its offset.
  std::vector<std::string> other = read_advanced_indices(ix, "f_", "j");
  auto same_place = [&](const std::string& indent) {
    std::vector<std::string> l;
    for (const std::string& ln : other) l.push_back(indent + ln);
    l.push_back(indent + "const bool same_ = " + ix.a_offset("f_", "j") + " == at_;");
    return l;
  };
  if (!accumulate) {
    body.push_back("bool last_ = true;");
    body.push_back("for (long long f_ = e_ + 1; f_ < " + S(n) + " && last_; ++f_) {");
    for (const std::string& ln : same_place("  ")) body.push_back(ln);
    body.push_back("  last_ = !same_;");
    body.push_back("}");
    body.push_back("if (last_) out[at_] = " + value_at("e_") + ";");
  } else {
    body.push_back("bool first_ = true;");
    body.push_back("for (long long f_ = 0; f_ < e_ && first_; ++f_) {");
    for (const std::string& ln : same_place("  ")) body.push_back(ln);
    body.push_back("  first_ = !same_;");
    body.push_back("}");
    body.push_back("if (!first_) continue;");
    const std::string add = is_floating(a.dtype)
                                ? "acc_ = acc_ + " + value_at("f_") + ";"
                                : "acc_ = (" + C + ")((unsigned long long)(long long)acc_ + (unsigned long long)(long long)" + value_at("f_") + ");";
    body.push_back(C + " acc_ = out[at_];");
    body.push_back("for (long long f_ = e_; f_ < " + S(n) + "; ++f_) {");
    for (const std::string& ln : same_place("  ")) body.push_back(ln);
    body.push_back("  if (same_) " + add);
    body.push_back("}");
    body.push_back("out[at_] = acc_;");
  }
  return grid_stride_kernel(name, n, params, body);
}

// embedding_bag: a thread per (bag, column), reducing the bag's rows in order in the opmath type (the cpp
// kernel's arithmetic, codegen/cpp/embedding.cpp). Thread 0 also checks every index and offset first, as the cpp
// kernel does before it computes (out of range traps, as PyTorch's device-side assert).
cuda::KernelLaunch embedding_bag_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &w = t.type(sym.inputs[0].value), &idx = t.type(sym.inputs[1].value), &o = t.type(sym.outputs[0]);
  const std::string C = loops::ctype(w.dtype), I = loops::ctype(idx.dtype), A = loops::atype(w.dtype);
  const std::int64_t rows = w.shape[0], width = w.shape[1], n = idx.numel(), bags = o.shape[0];
  const std::int64_t mode = sym.attrs.get_int("mode");
  const bool has_offsets = sym.inputs[2].is_tensor(), has_weights = sym.inputs.size() > 3 && sym.inputs[3].is_tensor();
  const auto padding = sym.attrs.get_optional_int("padding_idx");
  const std::int64_t n_offsets = has_offsets ? t.type(sym.inputs[2].value).numel() : 0;
  std::vector<std::string> params = {C + "* __restrict__ o", "const " + C + "* __restrict__ w", "const " + I + "* __restrict__ idx"};
  if (has_offsets) params.push_back("const " + I + "* __restrict__ off");
  if (has_weights) params.push_back("const " + C + "* __restrict__ psw");
  std::vector<std::string> body = {
      "if (e_ == 0) {",
      "  for (long long i_ = 0; i_ < " + S(n) + "; ++i_)",
      "    if ((long long)idx[i_] < 0 || (long long)idx[i_] >= " + S(rows) + ") __trap();  // out of range"};
  if (has_offsets)
    body.push_back("  for (long long b_ = 0; b_ < " + S(n_offsets) + "; ++b_) if ((b_ == 0 && off[0] != 0) || (b_ > 0 && off[b_] < off[b_ - 1]) || (long long)off[b_] > " +
                   S(n) + ") __trap();");
  body.push_back("}");
  body.push_back("const long long b_ = e_ / " + S(width) + ", d_ = e_ % " + S(width) + ";");
  if (has_offsets) {
    body.push_back("const long long start_ = (long long)off[b_], end_ = b_ + 1 < " + S(n_offsets) + " ? (long long)off[b_ + 1] : " + S(n) + ";");
  } else {
    const std::int64_t per_bag = idx.rank() == 2 ? idx.shape[1] : 0;
    body.push_back("const long long start_ = b_ * " + S(per_bag) + ", end_ = start_ + " + S(per_bag) + ";");
  }
  body.push_back(A + " acc_ = 0;");
  body.push_back("long long count_ = 0;");
  body.push_back("for (long long i_ = start_; i_ < end_; ++i_) {");
  body.push_back("  const long long row_ = (long long)idx[i_];");
  body.push_back("  if (row_ < 0 || row_ >= " + S(rows) + ") __trap();");
  if (padding) body.push_back("  if (row_ == " + S(*padding) + ") continue;  // padding_idx: left out");
  body.push_back("  const " + A + " v_ = w[row_ * " + S(width) + " + d_];");
  if (mode == 2) body.push_back("  if (count_ == 0 || v_ > acc_) acc_ = v_;");
  else body.push_back("  acc_ += v_" + std::string(has_weights ? " * (" + A + ")psw[i_]" : "") + ";");
  body.push_back("  ++count_;");
  body.push_back("}");
  if (mode == 1) body.push_back("if (count_ > 0) acc_ /= (" + A + ")count_;");
  body.push_back("o[e_] = acc_;");
  return grid_stride_kernel(name, bags * width, params, body);
}

}  // namespace

bool is_cuda_indexing_op(const std::string& name) {
  return name == "embedding" || name == "scatter_reduce" || name == "scatter" || name == "index_select" ||
         name == "gather" || name == "argmax" || name == "argmin" || name == "cumsum" || name == "prod" ||
         name == "diagonal" || name == "sort" || name == "topk" || name == "index" || name == "index_put" || name == "embedding_bag";
}

std::vector<cuda::KernelLaunch> cuda_indexing_kernels(const std::function<std::string(const std::string&)>& name_of,
                                                      const Trace& t, const BoundSymbol& sym,
                                                      std::vector<std::vector<ValueId>>* inputs) {
  std::vector<cuda::KernelLaunch> out;
  std::vector<std::vector<ValueId>> in;
  const std::string& op = sym.op->name;
  if (op == "embedding") {
    out.push_back(embedding_kernel(name_of("embedding"), t, sym));
    in.push_back({sym.inputs[0].value, sym.inputs[1].value});
  } else if (op == "index_select" || op == "gather") {
    out.push_back(op == "gather" ? gather_kernel(name_of(op), t, sym) : index_select_kernel(name_of(op), t, sym));
    in.push_back({sym.inputs[0].value, sym.inputs[1].value});
  } else if (op == "argmax" || op == "argmin" || op == "cumsum" || op == "prod" || op == "diagonal") {
    out.push_back(op == "diagonal" ? diagonal_kernel(name_of(op), t, sym)
                  : op == "argmax" || op == "argmin" ? arg_extreme_kernel(name_of(op), t, sym)
                                                     : scan_kernel(name_of(op), t, sym));
    in.push_back({sym.inputs[0].value});
  } else if (op == "sort" || op == "topk") {
    out.push_back(sort_kernel(name_of(op), t, sym));
    in.push_back({sym.inputs[0].value});
  } else if (op == "embedding_bag") {
    out.push_back(embedding_bag_kernel(name_of(op), t, sym));
    in.push_back({});
    for (const Operand& o : sym.inputs)
      if (o.is_tensor()) in.back().push_back(o.value);
  } else if (op == "index") {
    out.push_back(index_kernel(name_of(op), t, sym));
    in.push_back({sym.inputs[0].value});
    for (std::size_t k = 1; k < sym.inputs.size(); ++k) in.back().push_back(sym.inputs[k].value);
  } else if (op == "index_put") {
    const DType d = t.type(sym.outputs[0]).dtype;
    out.push_back(copy_kernel(name_of("index_put_copy"), d, t.type(sym.outputs[0]).numel()));
    in.push_back({sym.inputs[0].value});
    if (loops::numel(loops::plan_advanced_index(t, sym, 2).shape) > 0) {
      out.push_back(index_put_kernel(name_of(op), t, sym));
      in.push_back({});
      for (std::size_t k = 1; k < sym.inputs.size(); ++k) in.back().push_back(sym.inputs[k].value);
    }
  } else if (op == "scatter") {
    const DType d = t.type(sym.outputs[0]).dtype;
    out.push_back(copy_kernel(name_of("scatter_copy"), d, t.type(sym.outputs[0]).numel()));
    in.push_back({sym.inputs[0].value});
    if (t.type(sym.inputs[1].value).numel() > 0) {
      out.push_back(scatter_kernel(name_of("scatter"), t, sym));
      in.push_back({sym.inputs[1].value});
      if (sym.inputs[2].is_tensor()) in.back().push_back(sym.inputs[2].value);
    }
  } else {
    THUNDERC_CHECK(sym.op->name == "scatter_reduce", "nvfuser: no indexing kernel for ", sym.op->name);
    const DType d = t.type(sym.outputs[0]).dtype;
    THUNDERC_CHECK(d == DType::Float32 || d == DType::Float64, "nvfuser scatter_reduce: float32 or float64 expected, got ",
                   dtype_name(d));
    THUNDERC_CHECK(sym.inputs[2].is_tensor() && t.type(sym.inputs[0].value).rank() > 0,
                   "nvfuser scatter_reduce: a tensor src and an input of at least one dim expected");
    out.push_back(copy_kernel(name_of("scatter_reduce_copy"), d, t.type(sym.outputs[0]).numel()));
    in.push_back({sym.inputs[0].value});
    if (t.type(sym.inputs[1].value).numel() > 0) {
      out.push_back(scatter_reduce_kernel(name_of("scatter_reduce"), t, sym));
      in.push_back({sym.inputs[1].value, sym.inputs[2].value});
    }
  }
  if (inputs) *inputs = std::move(in);
  return out;
}

void emit_cuda_indexing(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  if (t.type(sym.outputs[0]).numel() == 0) return;
  std::vector<std::vector<ValueId>> inputs;
  const std::vector<cuda::KernelLaunch> kernels = cuda_indexing_kernels([&](const std::string& base) { return ctx.kernel_name(base); }, t, sym, &inputs);
  for (std::size_t k = 0; k < kernels.size(); ++k)  // in order on the call's stream: the copy before the reduction
    emit_kernel_block(ctx, kernels[k], sym.outputs, inputs[k],
                      sym.op->name + (k + 1 < kernels.size() ? " (input copied)" : "") + " " +
                          shape_str(t.type(sym.outputs[0]).shape),
                      out);
}

}  // namespace thunderc
