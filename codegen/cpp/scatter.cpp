#include "codegen/cpp/scatter.h"

#include <algorithm>

#include "codegen/cpp/own_code.h"
#include "codegen/loops/advanced_index_plan.h"
#include "core/ops/meta_util.h"

namespace thunderc {

namespace {

using namespace own_code;

struct ScatterEmitter {
  const EmitContext& ctx;
  const BoundSymbol& sym;
  SourceWriter& out;
  const Trace& t = ctx.trace();

  const TensorType& in_type(std::size_t i) const { return t.type(sym.inputs[i].value); }
  const TensorType& out_type() const { return t.type(sym.outputs[0]); }

  // The result starts as the input.
  void copy_input() {
    pointer(ctx, out, "x", sym.inputs[0].value, true);
    pointer(ctx, out, "o", sym.outputs[0], false);
    out.line("if (" + S(out_type().numel()) + " > 0) std::memcpy(o, x, " + S(out_type().numel()) + " * sizeof(*o));");
  }

  // --- scatter, scatter_reduce: element i of index goes to out at index's coordinates of i with index[i] at dim.

  // Strides of a's dims for every dim of index (zeros for a 0-dim a, whose one element index 0 reaches).
  Shape target_strides() const {
    const TensorType &a = in_type(0), &index = in_type(1);
    Shape st = loops::contiguous(a.shape);
    if (a.rank() == 0) st = Shape(std::max<std::size_t>(index.rank(), 1), 0);
    return st;
  }
  std::size_t scatter_dim() const { return in_type(0).rank() == 0 ? 0 : wrapped(sym.attrs.get_int("dim"), in_type(0).rank()); }
  std::string target(const std::string& i) const {
    const TensorType& index = in_type(1);
    const std::size_t dim = scatter_dim();
    const Shape st = target_strides();
    std::vector<bool> skip(index.rank(), false);
    if (dim < skip.size()) skip[dim] = true;
    return offset_of(i, index.shape, Shape(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(index.rank())), skip) +
           " + (int64_t)idx[" + i + "] * " + S(st[dim]);
  }
  // The offset in src of index's element i: the same coordinates (src may be larger than index).
  std::string source(const std::string& i) const {
    const TensorType &index = in_type(1), &src = in_type(2);
    if (src.rank() == 0) return "0";
    return offset_of(i, index.shape, loops::contiguous(src.shape));
  }
  void check_scatter_indices() {
    const TensorType& a = in_type(0);
    pointer(ctx, out, "idx", sym.inputs[1].value, true);
    check_indices(ctx, out, "idx", sym.op->name, in_type(1).numel(), a.rank() == 0 ? 1 : a.shape[scatter_dim()], scatter_dim());
  }

  void scatter() {
    const TensorType& a = in_type(0);
    const std::int64_t n = in_type(1).numel();
    const bool tensor_src = sym.inputs[2].is_tensor();
    out.comment("scatter along dim " + std::to_string(scatter_dim()) + ": " + std::to_string(n) + " elements");
    copy_input();
    check_scatter_indices();
    std::string value;
    if (tensor_src) {
      pointer(ctx, out, "s", sym.inputs[2].value, true);
      value = "s[" + source("i") + "]";
    } else {
      value = loops::lit(sym.inputs[2].scalar.to_double(), a.dtype);  // exact: the checker's rule for integers
    }
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) o[" + target("i") + "] = " + value + ";");
  }

  // sum, prod, mean (a sum divided by the count afterwards), amax, amin; NaN propagates through amax/amin as
  // in ATen's kernel. Integer sums and products wrap around (computed in uint64).
  void scatter_reduce() {
    const TensorType& a = in_type(0);
    const std::string& reduce = sym.attrs.get_string("reduce");
    const bool include_self = sym.attrs.get_bool("include_self");
    const std::int64_t n = in_type(1).numel(), total = a.numel();
    const bool floating = is_floating(a.dtype);
    const std::string T = loops::ctype(a.dtype);
    out.comment("scatter_reduce (" + reduce + (include_self ? "" : ", without self") + ") along dim " +
                std::to_string(scatter_dim()) + ": " + std::to_string(n) + " elements");
    copy_input();
    check_scatter_indices();
    pointer(ctx, out, "s", sym.inputs[2].value, true);
    if (!include_self) {  // the places written start from the reduction's identity
      std::string identity = reduce == "prod" ? "1" : reduce == "sum" || reduce == "mean" ? "0" : "";
      if (reduce == "amax") identity = floating ? "-std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::lowest()";
      if (reduce == "amin") identity = floating ? "std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::max()";
      out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) o[" + target("i") + "] = (" + T + ")" + identity + ";");
    }
    if (reduce == "mean") out.line("std::vector<int64_t> count(" + S(total) + ", " + (include_self ? "1" : "0") + ");");
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) {");
    out.line("  const int64_t at = " + target("i") + ";");
    out.line("  const " + T + " v = s[" + source("i") + "];");
    if (reduce == "sum" || reduce == "mean" || reduce == "prod") {
      const std::string opr = reduce == "prod" ? " * " : " + ";
      if (floating) out.line("  o[at] = o[at]" + opr + "v;");
      else out.line("  o[at] = (" + T + ")((uint64_t)(int64_t)o[at]" + opr + "(uint64_t)(int64_t)v);");
      if (reduce == "mean") out.line("  ++count[at];");
    } else {
      const std::string better = reduce == "amax" ? "v > o[at]" : "v < o[at]";
      out.line("  if (" + (floating ? "v != v || " : std::string()) + better + ") o[at] = v;");
    }
    out.line("}");
    if (reduce == "mean") {
      out.line("for (int64_t p = 0; p < " + S(total) + "; ++p) {");
      out.line("  const int64_t c = count[p] > 0 ? count[p] : 1;");
      if (floating) {
        out.line("  o[p] = o[p] / (" + T + ")c;");
      } else {  // floor division, as ATen's div(rounding_mode="floor")
        out.line("  const int64_t v = (int64_t)o[p], q = v / c;");
        out.line("  o[p] = (" + T + ")(q - ((v % c != 0 && v < 0) ? 1 : 0));");
      }
      out.line("}");
    }
  }

  // out[i] = mask[i] ? source[k++] : a[i] in row-major order (mask and a broadcast to out); a source with
  // fewer elements than the mask holds fails the call, as ATen raises.
  void masked_scatter() {
    const TensorType &o = out_type(), &source = in_type(2);
    const std::int64_t n = o.numel();
    out.comment("masked_scatter: " + std::to_string(n) + " elements from a source of " + std::to_string(source.numel()));
    pointer(ctx, out, "x", sym.inputs[0].value, true);
    pointer(ctx, out, "m", sym.inputs[1].value, true);
    pointer(ctx, out, "s", sym.inputs[2].value, true);
    pointer(ctx, out, "o", sym.outputs[0], false);
    const std::string xi = offset_of("i", o.shape, loops::broadcast_strides(in_type(0).shape, o.shape));
    const std::string mi = offset_of("i", o.shape, loops::broadcast_strides(in_type(1).shape, o.shape));
    out.line("int64_t k = 0;");
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) k += m[" + mi + "] ? 1 : 0;");
    out.line("if (k > " + S(source.numel()) + ") {");
    out.line("  std::snprintf(call->error, call->error_capacity, \"masked_scatter: the mask holds at %lld places, the source "
             "has only %lld elements\", (long long)k, (long long)" + S(source.numel()) + ");");
    out.line("  " + ctx.on_failure());
    out.line("}");
    out.line("k = 0;");
    out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) o[i] = m[" + mi + "] ? s[k++] : x[" + xi + "];");
  }

  // --- index, index_put: the indexed shape IS (the shape of a[indices]) and, for a position in it, where it
  // reads (writes) in a.

  // Declares the index tensors' pointers and checks every index (negative ones count from the end).
  void check_advanced_indices(std::size_t first_index) {
    const IntList& dims = sym.attrs.get_ints("dims");
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const std::string name = "idx" + std::to_string(k);
      pointer(ctx, out, name, sym.inputs[first_index + k].value, true);
      const auto d = static_cast<std::size_t>(dims[k]);
      check_indices(ctx, out, name, sym.op->name, in_type(first_index + k).numel(), in_type(0).shape[d], d, true);
    }
  }
  // Reads index k at position e into i<k>, wrapped into [0, size).
  void read_indices(const loops::AdvancedIndexPlan& ix, const std::string& indent) {
    for (std::size_t k = 0; k < ix.sizes.size(); ++k) {
      const std::string i = "i" + std::to_string(k);
      out.line(indent + "int64_t " + i + " = (int64_t)idx" + std::to_string(k) + "[" + ix.index_offset(k, "e") + "];");
      out.line(indent + "if (" + i + " < 0) " + i + " += " + S(ix.sizes[k]) + ";");
    }
  }

  void index() {
    const loops::AdvancedIndexPlan ix = loops::plan_advanced_index(t, sym, 1);
    const std::int64_t n = out_type().numel();
    out.comment("index at dims " + shape_str(sym.attrs.get_ints("dims")) + ": " + std::to_string(n) + " elements");
    pointer(ctx, out, "x", sym.inputs[0].value, true);
    pointer(ctx, out, "o", sym.outputs[0], false);
    check_advanced_indices(1);
    out.line(parallel_for_if(n));
    out.line("for (int64_t e = 0; e < " + S(n) + "; ++e) {");
    read_indices(ix, "  ");
    out.line("  o[e] = x[" + ix.a_offset("e", "i") + "];");
    out.line("}");
  }

  void index_put() {
    const loops::AdvancedIndexPlan ix = loops::plan_advanced_index(t, sym, 2);
    const TensorType& a = in_type(0);
    const std::int64_t n = loops::numel(ix.shape);
    const bool accumulate = sym.attrs.get_bool("accumulate");
    const std::string T = loops::ctype(a.dtype);
    out.comment(std::string("index_put") + (accumulate ? " (accumulate)" : "") + " at dims " +
                shape_str(sym.attrs.get_ints("dims")) + ": " + std::to_string(n) + " elements");
    copy_input();
    pointer(ctx, out, "v", sym.inputs[1].value, true);
    check_advanced_indices(2);
    const std::string value = "v[" + offset_of("e", ix.shape, loops::broadcast_strides(in_type(1).shape, ix.shape)) + "]";
    out.line("for (int64_t e = 0; e < " + S(n) + "; ++e) {");
    read_indices(ix, "  ");
    out.line("  const int64_t at = " + ix.a_offset("e", "i") + ";");
    if (!accumulate) out.line("  o[at] = " + value + ";");
    else if (is_floating(a.dtype)) out.line("  o[at] = o[at] + " + value + ";");
    else out.line("  o[at] = (" + T + ")((uint64_t)(int64_t)o[at] + (uint64_t)(int64_t)" + value + ");");
    out.line("}");
  }
};

}  // namespace

bool is_cpp_scatter_op(const std::string& name) {
  return name == "scatter" || name == "scatter_reduce" || name == "index" || name == "index_put" || name == "masked_scatter";
}

void emit_cpp_scatter(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  ScatterEmitter e{ctx, sym, out};
  const std::string& name = sym.op->name;
  if (name == "scatter") e.scatter();
  else if (name == "scatter_reduce") e.scatter_reduce();
  else if (name == "index") e.index();
  else if (name == "index_put") e.index_put();
  else if (name == "masked_scatter") e.masked_scatter();
  else internal_error("cpp codegen: ", name, " is not a scatter operator");
}

}  // namespace thunderc
