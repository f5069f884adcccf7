#include "codegen/nvfuser/indexing.h"

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

// scatter_reduce(a, dim, index, src): out (already a copy of a) at index's coordinates with index[e] along dim
// reduces src at the same coordinates. A thread per index element; the leader of each group (see indexing.h)
// reduces the group in order along dim, as the cpp kernel's loop over the index in row-major order does.
cuda::KernelLaunch scatter_reduce_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType &a = t.type(sym.inputs[0].value), &index = t.type(sym.inputs[1].value),
                   &src = t.type(sym.inputs[2].value);
  const std::size_t r = index.rank(), dim = static_cast<std::size_t>(wrap_dim(sym.attrs.get_int("dim"), a.rank(), "scatter_reduce"));
  const std::string& reduce = sym.attrs.get_string("reduce");
  const bool include_self = sym.attrs.get_bool("include_self");
  const std::string C = loops::ctype(a.dtype);
  const Shape ai = loops::contiguous(index.shape), aa = loops::contiguous(a.shape), as = loops::contiguous(src.shape);
  // The element's coordinates, its place in out along every dim but `dim`, and in src along every dim.
  std::vector<std::string> body;
  std::string rest = "0", from = "0";
  for (std::size_t k = 0; k < r; ++k) {
    const std::string c = "c" + std::to_string(k) + "_";
    body.push_back("const long long " + c + " = (e_ / " + S(ai[k]) + ") % " + S(index.shape[k]) + ";");
    if (k != dim) rest += " + " + c + " * " + S(aa[k]);
    from += " + " + c + " * " + S(as[k]);
  }
  const std::string cd = "c" + std::to_string(dim) + "_";
  const std::int64_t n_dim = index.shape[dim], step = ai[dim];
  body.push_back("const long long first_ = e_ - " + cd + " * " + S(step) + ";  // this group's element at 0 along dim");
  body.push_back("const long long to_ = (long long)idx[e_];");
  body.push_back("if (to_ < 0 || to_ >= " + S(a.shape[dim]) + ") __trap();  // out of range: PyTorch's device-side assert");
  body.push_back("bool leader_ = true;");
  body.push_back("for (long long j_ = 0; j_ < " + cd + " && leader_; ++j_) leader_ = (long long)idx[first_ + j_ * " + S(step) + "] != to_;");
  body.push_back("if (!leader_) continue;");
  body.push_back("const long long at_ = " + rest + " + to_ * " + S(aa[dim]) + ";");
  body.push_back("const long long from_ = " + from + " - " + cd + " * " + S(as[dim]) + ";  // src at 0 along dim");
  std::string start = "out[at_]";
  if (!include_self) {
    if (reduce == "sum" || reduce == "mean") start = C + "(0)";
    else if (reduce == "prod") start = C + "(1)";
    else if (reduce == "amax") start = "-" + C + "(__builtin_inff())";
    else start = C + "(__builtin_inff())";
  }
  body.push_back(C + " acc_ = " + start + ";");
  if (reduce == "mean") body.push_back("long long count_ = " + std::string(include_self ? "1" : "0") + ";");
  body.push_back("for (long long j_ = " + cd + "; j_ < " + S(n_dim) + "; ++j_) {");
  body.push_back("  if ((long long)idx[first_ + j_ * " + S(step) + "] != to_) continue;");
  body.push_back("  const " + C + " v_ = src[from_ + j_ * " + S(as[dim]) + "];");
  if (reduce == "sum" || reduce == "mean") body.push_back("  acc_ = acc_ + v_;");
  else if (reduce == "prod") body.push_back("  acc_ = acc_ * v_;");
  else body.push_back(std::string("  if (v_ != v_ || v_ ") + (reduce == "amax" ? ">" : "<") + " acc_) acc_ = v_;  // NaN wins, as ATen");
  if (reduce == "mean") body.push_back("  ++count_;");
  body.push_back("}");
  body.push_back(reduce == "mean" ? "out[at_] = acc_ / " + C + "(count_);" : "out[at_] = acc_;");
  return grid_stride_kernel(name, index.numel(),
                            {C + "* __restrict__ out", "const int64_t* __restrict__ idx", "const " + C + "* __restrict__ src"},
                            body);
}

}  // namespace

bool is_cuda_indexing_op(const std::string& name) { return name == "embedding" || name == "scatter_reduce"; }

std::vector<cuda::KernelLaunch> cuda_indexing_kernels(const std::function<std::string(const std::string&)>& name_of,
                                                      const Trace& t, const BoundSymbol& sym,
                                                      std::vector<std::vector<ValueId>>* inputs) {
  std::vector<cuda::KernelLaunch> out;
  std::vector<std::vector<ValueId>> in;
  if (sym.op->name == "embedding") {
    out.push_back(embedding_kernel(name_of("embedding"), t, sym));
    in.push_back({sym.inputs[0].value, sym.inputs[1].value});
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
    emit_kernel_block(ctx, kernels[k], sym.outputs[0], inputs[k],
                      sym.op->name + (k + 1 < kernels.size() ? " (input copied)" : "") + " " +
                          shape_str(t.type(sym.outputs[0]).shape),
                      out);
}

}  // namespace thunderc
