#include "codegen/nvfuser/nvfuser_backend.h"

#include "codegen/loops/region_lowering.h"
#include "codegen/nvfuser/attention.h"
#include "codegen/nvfuser/cnn_gradients.h"
#include "codegen/nvfuser/dropout.h"
#include "codegen/nvfuser/indexing.h"
#include "codegen/nvfuser/sampling.h"
#include "codegen/nvfuser/gemm.h"
#include "codegen/nvfuser/gemm_plan.h"

#include <optional>

namespace thunderc {

namespace {

using namespace loops;

constexpr unsigned kBlock = 256;          // threads per block of the elementwise and reduction kernels
constexpr std::int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest (about 60 blocks per SM)
constexpr std::int64_t kWarpRowsMax = 1024;  // reductions up to this extent use one warp per output element

std::string u(std::int64_t v) { return std::to_string(v) + "u"; }

// The host statements launching kernel `index` (already registered) with the given argument variables.
void emit_launch(Lines& lines, const std::string& indent, std::size_t index, const CudaKernel& k,
                 const std::vector<std::string>& arg_vars, const std::string& on_failure) {
  std::string args;
  for (const std::string& a : arg_vars) args += (args.empty() ? "" : ", ") + std::string("(void*)&") + a;
  lines.push_back(indent + "{  " + c_comment(k.name + ": " + k.what));
  lines.push_back(indent + "  void* args[] = {" + (args.empty() ? "nullptr" : args) + "};");
  lines.push_back(indent + "  static const uint32_t grid[3] = {" + u(k.grid[0]) + ", " + u(k.grid[1]) + ", " + u(k.grid[2]) +
                  "}, block[3] = {" + u(k.block[0]) + ", " + u(k.block[1]) + ", " + u(k.block[2]) + "};");
  lines.push_back(indent + "  if (call->device_api->launch(call->device_api->context, " + u(static_cast<std::int64_t>(index)) +
                  ", grid, block, " + u(k.shared_bytes) + ", args, call->error, call->error_capacity) != 0) " + on_failure);
  lines.push_back(indent + "}");
}

// ---- GEMM-backed symbols ------------------------------------------------------------------------------

// A float expression with the value v converted to float (as ATen converts alpha/beta); inf and NaN too.
std::string float_lit(double v) { return "(" + lit(v, DType::Float32) + ")"; }

bool gemm_backed(const BoundSymbol& s) {
  const std::string& op = s.op->name;
  return op == "linear" || op == "matmul" || op == "bmm" || op == "addmm" || op == "conv2d";
}

}  // namespace

GemmPlan plan_gemm(const Trace& t, const BoundSymbol& s) {
  GemmPlan p;
  const std::string& op = s.op->name;
  auto in_type = [&](std::size_t i) -> const TensorType& { return t.type(s.inputs[i].value); };
  auto has = [&](std::size_t i) { return i < s.inputs.size() && s.inputs[i].is_tensor(); };
  const TensorType& ot = t.type(s.outputs[0]);
  p.empty = ot.numel() == 0;
  const std::string elem = ctype(ot.dtype);  // the checker (cuda_gemm) admits one dtype for all operands
  const std::string bias_param = "const " + elem + "* __restrict__ bias";
  if (op == "conv2d") {
    const TensorType &x = in_type(0), &w = in_type(1);
    auto pair = [&](const char* name) {
      const IntList& v = s.attrs.get_ints(name);
      return v.size() == 1 ? IntList{v[0], v[0]} : v;
    };
    IntList st = pair("stride"), pd = pair("padding"), dl = pair("dilation");
    cuda::Conv2dSpec& c = p.c;
    c.N = x.shape[0], c.C = x.shape[1], c.H = x.shape[2], c.W = x.shape[3];
    c.K = w.shape[0], c.R = w.shape[2], c.S = w.shape[3], c.OH = ot.shape[2], c.OW = ot.shape[3];
    c.stride_h = st[0], c.stride_w = st[1], c.pad_h = pd[0], c.pad_w = pd[1], c.dil_h = dl[0], c.dil_w = dl[1];
    c.groups = s.attrs.get_int("groups");
    p.conv = true;
    c.elem = elem;
    p.operands = {0, 1};
    if (has(2)) {
      c.extra_params = {bias_param};
      c.epilogue = "out = acc + bias[k];";
      p.extras = {2};
    }
    p.flat = "((n * " + std::to_string(c.K) + "LL + k) * " + std::to_string(c.OH) + "LL + oh) * " + std::to_string(c.OW) +
             "LL + ow";
    p.what = "conv2d " + std::to_string(c.N) + "x" + std::to_string(c.C) + "x" + std::to_string(c.H) + "x" +
             std::to_string(c.W) + " -> " + std::to_string(c.K);
    return p;
  }
  cuda::GemmSpec& g = p.g;
  g.elem = elem;
  if (op == "linear") {
    const TensorType &a = in_type(0), &w = in_type(1);
    g.K = a.shape.back();
    g.N = w.shape[0];
    g.M = g.K == 0 ? ot.numel() / std::max<std::int64_t>(g.N, 1) : a.numel() / g.K;
    g.a_row = g.K, g.a_col = 1;
    g.b_row = 1, g.b_col = g.K;  // B[k][n] = weight[n][k]
    p.operands = {0, 1};
    if (has(2)) {
      auto st = broadcast_strides(in_type(2).shape, {g.M, g.N});
      g.extra_params = {bias_param};
      g.epilogue = "out = acc + bias[m * " + std::to_string(st[0]) + "LL + n * " + std::to_string(st[1]) + "LL];";
      p.extras = {2};
    }
  } else if (op == "addmm") {
    const TensorType &a = in_type(1), &b = in_type(2);
    g.M = a.shape[0], g.K = a.shape[1], g.N = b.shape[1];
    g.a_row = g.K, g.a_col = 1, g.b_row = g.N, g.b_col = 1;
    p.operands = {1, 2};
    const double alpha = s.attrs.get_float("alpha"), beta = s.attrs.get_float("beta");
    if (beta == 0) {  // as ATen: the bias is not read (NaN in it does not propagate)
      g.epilogue = "out = " + float_lit(alpha) + " * acc;";
    } else {
      auto st = broadcast_strides(in_type(0).shape, {g.M, g.N});
      g.extra_params = {bias_param};
      g.epilogue = "out = " + float_lit(alpha) + " * acc + " + float_lit(beta) + " * bias[m * " + std::to_string(st[0]) +
                   "LL + n * " + std::to_string(st[1]) + "LL];";
      p.extras = {0};
    }
  } else {  // matmul, bmm: 2-D or batched; batch dims equal, or absent on one side (the checker's rule)
    const TensorType &a = in_type(0), &b = in_type(1);
    std::size_t ra = a.rank(), rb = b.rank();
    g.M = a.shape[ra - 2], g.K = a.shape[ra - 1], g.N = b.shape[rb - 1];
    std::int64_t ba = numel(Shape(a.shape.begin(), a.shape.end() - 2)), bb = numel(Shape(b.shape.begin(), b.shape.end() - 2));
    g.a_row = g.K, g.a_col = 1, g.b_row = g.N, g.b_col = 1;
    p.operands = {0, 1};
    if (bb == 1) {  // b shared: a's batches stack into M
      g.M *= ba;
    } else {
      g.batch = std::max(ba, bb);
      g.a_batch = ba == 1 ? 0 : g.M * g.K;
      g.b_batch = bb == 1 ? 0 : g.K * g.N;
    }
  }
  g.c_row = g.N, g.c_col = 1, g.c_batch = g.M * g.N;
  p.flat = "b * " + std::to_string(g.M * g.N) + "LL + m * " + std::to_string(g.N) + "LL + n";
  p.what = op + " " + std::to_string(g.batch) + "x" + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
  return p;
}

namespace {

// The kernel of a plan whose epilogue and extra parameters may have been extended.
cuda::KernelLaunch gemm_launch(const std::string& name, const GemmPlan& p) {
  return p.conv ? cuda::conv2d_kernel(name, p.c) : cuda::gemm_kernel(name, p.g);
}

// "const float* __restrict__ bias" -> ("const float*", "bias")
std::pair<std::string, std::string> split_param(const std::string& decl) {
  std::size_t end = decl.find_last_not_of(' ');
  std::size_t start = decl.find_last_of(" *&", end);
  std::string name = decl.substr(start + 1, end - start);
  std::string type = decl.substr(0, start + 1);
  for (const char* q : {"__restrict__", "__restrict"}) {
    std::size_t at = type.find(q);
    if (at != std::string::npos) type.erase(at, std::string(q).size());
  }
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return {type, name};
}

}  // namespace

// Registers a generated GEMM/conv kernel and appends its launch (argument variables in parameter order).
void add_gemm_kernel(const EmitContext& ctx, const cuda::KernelLaunch& l, const std::vector<std::string>& vars,
                     const std::string& what, Lines& lines, const std::string& indent) {
  CudaKernel k;
  k.name = l.name;
  k.source = l.source;
  k.what = what + " (" + l.path + ")";
  for (int i = 0; i < 3; ++i) k.grid[i] = l.grid[i], k.block[i] = l.block[i];
  k.shared_bytes = l.shared_bytes;
  for (const std::string& prm : l.params) k.params.push_back(split_param(prm));
  THUNDERC_CHECK(k.params.size() == vars.size(), "nvfuser: kernel ", l.name, " takes ", k.params.size(),
                 " parameters, ", vars.size(), " given");
  std::size_t index = ctx.add_kernel(k);
  emit_launch(lines, indent, index, k, vars, ctx.on_failure());
}

void emit_kernel_block(const EmitContext& ctx, const cuda::KernelLaunch& l, ValueId output,
                       const std::vector<ValueId>& inputs, const std::string& what, SourceWriter& out) {
  emit_kernel_block(ctx, l, std::vector<ValueId>{output}, inputs, what, out);
}

void emit_kernel_block(const EmitContext& ctx, const cuda::KernelLaunch& l, const std::vector<ValueId>& outputs,
                       const std::vector<ValueId>& inputs, const std::string& what, SourceWriter& out) {
  Lines decls, lines;
  std::vector<std::string> vars;
  auto ptr = [&](const std::string& type, ValueId v) {
    std::string name = "p" + std::to_string(vars.size());
    decls.push_back(type + " " + name + " = " + ctx.buffer(v) + ".data;");
    vars.push_back(name);
  };
  for (ValueId o : outputs) ptr("void*", o);
  for (ValueId v : inputs) ptr("const void*", v);
  add_gemm_kernel(ctx, l, vars, what, lines, "  ");
  out.line("{");
  for (const std::string& d : decls) out.line("  " + d);
  for (const std::string& ln : lines) out.line(ln);
  out.line("}");
}

cuda::KernelLaunch grid_stride_kernel(const std::string& name, std::int64_t total, std::vector<std::string> params,
                                      const std::vector<std::string>& body) {
  cuda::KernelLaunch l;
  l.name = name;
  l.params = std::move(params);
  l.block[0] = static_cast<unsigned>(std::min<std::int64_t>(kBlock, std::max<std::int64_t>(32, (total + 31) / 32 * 32)));
  l.grid[0] = static_cast<unsigned>(std::max<long long>(1, std::min<long long>((total + l.block[0] - 1) / l.block[0], kMaxBlocks)));
  std::string decl;
  for (const std::string& p : l.params) decl += (decl.empty() ? "" : ", ") + p;
  l.source = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(l.block[0]) + ") " + name + "(" + decl +
             ") {\n"
             "  for (long long e_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; e_ < " + std::to_string(total) + "LL"
             "; e_ += (long long)gridDim.x * blockDim.x) {\n";
  for (const std::string& ln : body) l.source += "    " + ln + "\n";
  l.source += "  }\n}\n";
  return l;
}

void emit_symbol_kernel(const EmitContext& ctx, const BoundSymbol& sym,
                        const std::function<cuda::KernelLaunch(const std::string& name)>& make, SourceWriter& out) {
  const Trace& t = ctx.trace();
  if (t.type(sym.outputs[0]).numel() == 0) return;
  std::vector<ValueId> inputs;
  for (const Operand& in : sym.inputs)
    if (in.is_tensor()) inputs.push_back(in.value);
  emit_kernel_block(ctx, make(ctx.kernel_name(sym.op->name)), sym.outputs[0], inputs,
                    sym.op->name + " " + t.type(sym.outputs[0]).str(), out);
}

// A GEMM-backed symbol outside any region: its kernel, bias in the epilogue.
void emit_lone_gemm(const EmitContext& ctx, const BoundSymbol& s, SourceWriter& out) {
  GemmPlan p = plan_gemm(ctx.trace(), s);
  if (p.empty) return;
  std::vector<ValueId> inputs;
  for (std::size_t i : p.operands) inputs.push_back(s.inputs[i].value);
  for (std::size_t i : p.extras) inputs.push_back(s.inputs[i].value);
  emit_kernel_block(ctx, gemm_launch(ctx.kernel_name(s.op->name), p), s.outputs[0], inputs, p.what, out);
}

namespace {

// The CUDA target of the shared region lowering: every loop nest becomes a kernel.
class CudaRegion : public RegionLowering {
 public:
  using RegionLowering::RegionLowering;

 private:
  // Index type for a kernel whose indices stay below `extent`.
  static std::string index_type(std::int64_t extent) { return extent < (std::int64_t{1} << 31) - kBlock * kMaxBlocks ? "int" : "long long"; }

  // Largest element offset any buffer of the region can be indexed at (conservative: its whole extent).
  std::int64_t max_extent() const {
    std::int64_t m = 0;
    for (const auto& [v, b] : out_bufs_) m = std::max(m, t_.type(v).numel());
    for (const Operand& in : region_.inputs)
      if (in.is_tensor()) m = std::max(m, t_.type(in.value).numel());
    return std::max(m, static_cast<std::int64_t>(scratch_));
  }

  // Registers a kernel whose body (statements, indented by 2) uses the buffers b0 .. b<n-1> existing now,
  // and emits its launch.
  void kernel(const std::string& what, const std::string& base, const Lines& body, std::int64_t blocks, unsigned threads) {
    CudaKernel k;
    k.name = ctx_ ? ctx_->kernel_name(base + "_k" + std::to_string(kernels_++)) : base;
    k.what = what;
    k.grid[0] = static_cast<unsigned>(std::max<std::int64_t>(blocks, 1));
    k.block[0] = threads;
    std::vector<std::string> vars;
    std::string params;
    for (std::size_t b = 0; b < buf_types_.size(); ++b) {
      std::string type = std::string(buf_writable_[b] ? "" : "const ") + ctype(buf_types_[b]) + "*";
      std::string name = "b" + std::to_string(b);
      k.params.push_back({type, name});
      vars.push_back(name);
      params += (params.empty() ? "" : ", ") + type + " __restrict__ " + name;
    }
    std::string src = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ") " + k.name + "(" +
                      params + ") {\n";
    for (const std::string& l : body) src += "  " + l + "\n";
    src += "}\n";
    k.source = std::move(src);
    if (!ctx_) return;
    std::size_t index = ctx_->add_kernel(k);
    emit_launch(lines_, std::string(indent_, ' '), index, k, vars, ctx_->on_failure());
  }

  std::string base() const {
    std::string b = region_.subsymbols.size() == 1 ? region_.subsymbols[0].op->name : "fusion";
    return b;
  }

  using Dim = LoopDim;

  // Statements decomposing the flat index `flat` over `dims` (innermost last) into the accesses' offsets
  // `prefix<a>`; returns the offset expressions.
  static std::vector<std::string> decompose(Lines& body, const std::string& I, const std::string& flat,
                                            const std::vector<Dim>& dims, const std::vector<Access>& acc,
                                            const std::vector<std::string>& base, const std::string& tag) {
    std::vector<std::string> idx = base;
    if (dims.empty()) return idx;
    std::vector<std::string> var(dims.size());
    if (dims.size() == 1) {
      var[0] = flat;
    } else {
      body.push_back(I + " r" + tag + " = " + flat + ";");
      for (std::size_t l = dims.size(); l-- > 0;) {
        var[l] = tag + "i" + std::to_string(l);
        if (l == 0) body.push_back("const " + I + " " + var[l] + " = r" + tag + ";");
        else {
          body.push_back("const " + I + " " + var[l] + " = r" + tag + " % " + std::to_string(dims[l].n) + ";");
          body.push_back("r" + tag + " /= " + std::to_string(dims[l].n) + ";");
        }
      }
    }
    for (std::size_t a = 0; a < acc.size(); ++a)
      for (std::size_t l = 0; l < dims.size(); ++l) idx[a] = term(idx[a], var[l], dims[l].s[a]);
    return idx;
  }

  // One part of an elementwise kernel: n items; `item` appends the statements for item `i` (an I).
  using Item = std::function<void(Lines&, const std::string& I)>;
  struct Segment {
    std::int64_t n;
    Item item;
  };

  // A grid-stride loop over the items of every segment, one after the other (a thread finds its segment by
  // comparing its index with the segments' bounds).
  void elementwise(const std::string& what, const std::vector<Segment>& segments, std::int64_t extent) {
    std::int64_t total = 0;
    for (const Segment& s : segments) total += s.n;
    if (total == 0) return;
    std::string I = index_type(std::max(total, extent));
    // Small work gets a smaller block (whole warps), so no block is mostly idle.
    const unsigned threads = static_cast<unsigned>(std::min<std::int64_t>(kBlock, (total + 31) / 32 * 32));
    Lines body;
    body.push_back("for (" + I + " t = (" + I + ")blockIdx.x * " + std::to_string(threads) + " + threadIdx.x; t < " +
                   std::to_string(total) + "; t += (" + I + ")gridDim.x * " + std::to_string(threads) + ") {");
    std::int64_t start = 0;
    bool first = true;
    for (const Segment& s : segments) {
      if (s.n == 0) continue;
      const std::string end = std::to_string(start + s.n);
      if (segments.size() == 1) body.push_back("  {");
      else body.push_back(std::string(first ? "  if" : "  } else if") + " (t < " + end + ") {");
      body.push_back("    const " + I + " i = t - " + std::to_string(start) + ";");
      Lines inner;
      s.item(inner, I);
      for (const std::string& l : inner) body.push_back("    " + l);
      start += s.n;
      first = false;
    }
    body.push_back("  }");
    body.push_back("}");
    std::int64_t blocks = std::min<std::int64_t>((total + threads - 1) / threads, kMaxBlocks);
    kernel(what, base(), body, blocks, threads);
  }

  void elementwise(const std::string& what, std::int64_t n, std::int64_t extent, const Item& item) {
    elementwise(what, std::vector<Segment>{{n, item}}, extent);
  }

  // Stores waiting to become one kernel: consecutive stores that do not read what another of them writes, nor
  // write what another reads (the parts of a cat, a region's independent outputs).
  std::vector<Segment> stores_;
  std::string stores_what_;
  std::set<int> stores_read_, stores_written_;

  void flush_stores() {
    if (stores_.empty()) return;
    std::vector<Segment> segments = std::move(stores_);
    stores_.clear();
    stores_read_.clear(), stores_written_.clear();
    elementwise(stores_what_, segments, max_extent());
    stores_what_.clear();
  }

  void store_nest(int dest, std::int64_t offset, const std::vector<std::int64_t>& strides, const Val& v) override {
    flush_row();
    if (store_in_gemm_epilogue(dest, offset, strides, v)) return;
    flush_gemm();
    auto acc = std::make_shared<std::vector<Access>>(std::vector<Access>{{dest, offset, strides}});
    auto index = std::make_shared<std::map<Access, std::size_t>>();
    std::set<const Node*> seen;
    double cost = 1;
    collect(v.e, *acc, *index, seen, cost);
    std::set<int> reads;
    for (std::size_t a = 1; a < acc->size(); ++a) reads.insert((*acc)[a].buf);
    bool conflict = stores_read_.count(dest) > 0;
    for (int r : reads) conflict = conflict || stores_written_.count(r) > 0;
    if (conflict) flush_stores();
    const DType dd = buf_types_[dest];
    const std::vector<Dim> dims = merged_dims(v.shape, *acc);
    stores_.push_back({numel(v.shape), [this, acc, index, dims, v, dest, dd](Lines& body, const std::string& I) {
                         std::vector<std::string> base;
                         for (const Access& a : *acc) base.push_back(std::to_string(a.offset));
                         std::vector<std::string> idx = decompose(body, I, "i", dims, *acc, base, "");
                         Body b{*index, idx, {}, {}, 0};
                         std::string r = gen(b, v.e);
                         body.insert(body.end(), b.lines.begin(), b.lines.end());
                         body.push_back("b" + std::to_string(dest) + "[" + idx[0] + "] = " + cast(r, v.e->dtype, dd) + ";");
                       }});
    stores_what_ += (stores_what_.empty() ? "store b" : ", b") + std::to_string(dest);
    stores_read_.insert(reads.begin(), reads.end());
    stores_written_.insert(dest);
  }

  void update(int buf, std::int64_t n, const std::string& f_of_v) override {
    flush_stores();
    flush_gemm();
    std::string B = "b" + std::to_string(buf);
    if (row_ && row_->stats.count(buf) && n == row_->K) {  // a statistic of the pending row kernel
      row_->body.push_back("if (" + row_->writer + ") { const " + std::string(atype(buf_types_[buf])) + " v = " + B +
                           "[k]; " + B + "[k] = " + f_of_v + "; }");
      return;
    }
    flush_row();
    elementwise("update " + B, n, max_extent(), [&](Lines& body, const std::string&) {
      body.push_back("const " + std::string(atype(buf_types_[buf])) + " v = " + B + "[i];");
      body.push_back(B + "[i] = " + f_of_v + ";");
    });
  }

  // Reductions over the same rows (the same shape and reduced dims) that follow one another, with the updates
  // of their results, become passes of ONE kernel: one warp per row when the reduced extent is at most 1024
  // (8 rows per 256-thread block), else one block per row. Each pass leaves its result in every thread
  // (butterfly shuffles, then shared memory across warps), one thread stores it, and the next pass starts
  // after a barrier, so it may read the stored statistics (softmax: max, then sum of exp(x - max);
  // layer_norm: mean, then the sum of squared deviations). The final elementwise step (normalizing) stays
  // an expression, fused into whatever stores it.
  struct RowKernel {
    Shape shape;
    std::vector<bool> red;
    std::int64_t K = 0, R = 0;
    bool warp_rows = true;
    std::string I, writer, what;
    std::set<int> stats;  // buffers the passes wrote (element k of each)
    Lines body;
    int passes = 0;
  };

  // Loads of `e` from the pending kernel's statistics read element k of the row (stat_leaf's strides).
  bool reads_own_rows(const NodeP& e) const {
    Shape kept = row_->shape;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (row_->red[i]) kept[i] = 1;
    std::vector<std::int64_t> want = contiguous(kept);
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (row_->red[i]) want[i] = 0;
    bool ok = true;
    std::set<const Node*> seen;
    std::function<void(const NodeP&)> walk = [&](const NodeP& n) {
      if (!seen.insert(n.get()).second) return;
      if (n->kind == Node::Load && row_->stats.count(n->buf) && (n->offset != 0 || n->strides != want)) ok = false;
      for (const NodeP& a : n->args) walk(a);
    };
    walk(e);
    return ok;
  }

  void reduce(const Val& x, const std::vector<bool>& red, int dest, bool is_max) override {
    flush_stores();
    flush_gemm();
    if (row_ && !(row_->shape == x.shape && row_->red == red && reads_own_rows(x.e))) flush_row();
    DType d = buf_types_[dest];
    std::string T = atype(d), B = "b" + std::to_string(dest);
    Shape kept_shape, red_shape;
    for (std::size_t i = 0; i < x.shape.size(); ++i) (red[i] ? red_shape : kept_shape).push_back(x.shape[i]);
    std::int64_t K = numel(kept_shape), R = numel(red_shape);
    if (K == 0) return;
    if (!row_) {
      row_ = RowKernel{};
      row_->shape = x.shape, row_->red = red, row_->K = K, row_->R = R;
      row_->warp_rows = R <= kWarpRowsMax;
      row_->I = index_type(std::max({K * std::max<std::int64_t>(R, 1), max_extent()}));
      row_->writer = row_->warp_rows ? "lane == 0" : "threadIdx.x == 0";
    }
    RowKernel& rk = *row_;
    const std::string& I = rk.I;
    std::vector<Access> acc;
    std::map<Access, std::size_t> index;
    std::set<const Node*> seen;
    double cost = 1;
    collect(x.e, acc, index, seen, cost);
    // Per-dim strides of the accesses over the kept and the reduced dims.
    std::vector<Access> kacc, racc;
    for (const Access& a : acc) {
      Access k{a.buf, 0, {}}, r{a.buf, 0, {}};
      for (std::size_t i = 0; i < x.shape.size(); ++i) (red[i] ? r : k).strides.push_back(a.strides[i]);
      kacc.push_back(k), racc.push_back(r);
    }
    std::vector<Dim> kdims = merged_dims(kept_shape, kacc), rdims = merged_dims(red_shape, racc);
    std::string init = is_max ? lit(-INFINITY, d) : lit(0, d);
    // NaN-propagating max, as torch.amax.
    auto combine = [&](const std::string& a, const std::string& b) {
      return is_max ? a + " = (" + a + " != " + a + " || " + a + " > " + b + ") ? " + a + " : " + b + ";"
                    : a + " += " + b + ";";
    };
    const std::string P = std::to_string(rk.passes);
    Lines& body = rk.body;
    if (rk.passes > 0) body.push_back(rk.warp_rows ? "__syncwarp();" : "__syncthreads();");
    body.push_back("{  // pass " + P + ": " + (is_max ? "max" : "sum") + " into " + B);
    Lines p;
    std::vector<std::string> zero(acc.size());
    for (std::size_t a = 0; a < acc.size(); ++a) zero[a] = std::to_string(acc[a].offset);
    std::vector<std::string> kidx = decompose(p, I, "k", kdims, kacc, zero, "k");
    for (std::size_t a = 0; a < acc.size(); ++a) {
      p.push_back("const " + I + " base" + std::to_string(a) + " = " + kidx[a] + ";");
      kidx[a] = "base" + std::to_string(a);
    }
    p.push_back(T + " acc = " + init + ";");
    p.push_back("for (" + I + " j = " + (rk.warp_rows ? "lane" : "threadIdx.x") + "; j < " + std::to_string(R) +
                "; j += " + (rk.warp_rows ? "32" : std::to_string(kBlock)) + ") {");
    Lines inner;
    std::vector<std::string> idx = decompose(inner, I, "j", rdims, racc, kidx, "j");
    Body b{index, idx, {}, {}, 0};
    std::string e = cast(gen(b, x.e), x.e->dtype, d);
    inner.insert(inner.end(), b.lines.begin(), b.lines.end());
    inner.push_back(combine("acc", "(" + e + ")"));
    for (const std::string& l : inner) p.push_back("  " + l);
    p.push_back("}");
    p.push_back("for (int o = 16; o > 0; o >>= 1) {");
    p.push_back("  const " + T + " other = __shfl_xor_sync(0xffffffffu, acc, o);");
    p.push_back("  " + combine("acc", "other"));
    p.push_back("}");
    if (!rk.warp_rows) {  // every warp holds its part; combine the parts in the same order in every thread
      const std::string warps = std::to_string(kBlock / 32);
      p.push_back("__shared__ " + T + " partial" + P + "[" + warps + "];");
      p.push_back("if (lane == 0) partial" + P + "[threadIdx.x >> 5] = acc;");
      p.push_back("__syncthreads();");
      p.push_back("acc = partial" + P + "[0];");
      p.push_back("for (int w = 1; w < " + warps + "; ++w) { const " + T + " other = partial" + P + "[w]; " +
                  combine("acc", "other") + " }");
    }
    p.push_back("if (" + rk.writer + ") " + B + "[k] = acc;");
    for (const std::string& l : p) body.push_back("  " + l);
    body.push_back("}");
    rk.stats.insert(dest);
    rk.what += (rk.passes ? ", " : "") + std::string(is_max ? "max" : "sum");
    ++rk.passes;
  }

  void flush_row() {
    if (!row_) return;
    RowKernel rk = std::move(*row_);
    row_.reset();
    // A warp per row: up to 8 rows per block (fewer when there are fewer rows).
    const std::int64_t rows_per_block = rk.warp_rows ? std::min<std::int64_t>(kBlock / 32, rk.K) : 1;
    const unsigned threads = rk.warp_rows ? static_cast<unsigned>(rows_per_block * 32) : kBlock;
    Lines body;
    body.push_back("const int lane = threadIdx.x & 31;");
    body.push_back(rk.warp_rows ? "const " + rk.I + " k = (" + rk.I + ")blockIdx.x * " + std::to_string(rows_per_block) +
                                      " + (threadIdx.x >> 5);"
                                : "const " + rk.I + " k = blockIdx.x;");
    if (rk.warp_rows) body.push_back("if (k >= " + std::to_string(rk.K) + ") return;");
    body.insert(body.end(), rk.body.begin(), rk.body.end());
    std::int64_t blocks = (rk.K + rows_per_block - 1) / rows_per_block;
    THUNDERC_CHECK(blocks < (std::int64_t{1} << 31), "nvfuser: a reduction over ", rk.K, " rows needs too many blocks");
    kernel("rows: " + rk.what + " over " + std::to_string(rk.R) + " (" + std::to_string(rk.K) + " rows, " +
               (rk.warp_rows ? "a warp" : "a block") + " per row)",
           base(), body, blocks, threads);
  }

  void finish() override {
    flush_stores();
    flush_gemm();
    flush_row();
  }

  // ---- a GEMM inside a region: the first store that reads it element by element becomes its epilogue ----
  struct PendingGemm {
    GemmPlan plan;
    std::string base;
    int out = -1;                    // the GEMM's result buffer (written by its kernel in every case)
    Shape shape;
    std::vector<int> operands, extras;  // region buffers of the plan's operands and extras
  };
  std::optional<PendingGemm> gemm_;

  // A contiguous buffer holding v (a region input as it is, anything else materialized in scratch).
  int contiguous_buffer(const Val& v) {
    if (v.e->kind == Node::Load && v.e->offset == 0 && v.e->strides == contiguous(v.shape)) return v.e->buf;
    return materialize(0, v, false).e->buf;
  }

  Val lower_other(const BoundSymbol& s, const TensorType& ot, ValueId out) override {
    THUNDERC_CHECK(gemm_backed(s), "nvfuser codegen: cannot lower ", s.op->name, " inside a region");
    flush_stores();
    flush_gemm();
    flush_row();
    PendingGemm g;
    g.plan = plan_gemm(t_, s);
    g.base = s.op->name;
    g.shape = ot.shape;
    for (std::size_t i : g.plan.operands) g.operands.push_back(contiguous_buffer(vals_.at(s.inputs[i].value)));
    for (std::size_t i : g.plan.extras) g.extras.push_back(contiguous_buffer(vals_.at(s.inputs[i].value)));
    g.out = dest_for(out, ot.dtype, ot.numel(), true);
    Val result{ot.shape, make_load(g.out, ot.dtype, 0, contiguous(ot.shape))};
    if (!g.plan.empty) gemm_ = std::move(g);
    return result;
  }

  // The GEMM's kernel with its own epilogue, plus `fused` statements (which see its result as `gval`) and
  // the region buffers they read as extra parameters.
  void launch_gemm(PendingGemm& g, const Lines& fused) {
    flush_stores();  // they may write the GEMM's operands
    GemmPlan p = g.plan;
    std::vector<std::string> vars = {"b" + std::to_string(g.out)};
    for (int b : g.operands) vars.push_back("b" + std::to_string(b));
    for (int b : g.extras) vars.push_back("b" + std::to_string(b));
    std::string what = p.what;
    if (!fused.empty()) {
      std::vector<std::string>& extra = p.conv ? p.c.extra_params : p.g.extra_params;
      std::string& epilogue = p.conv ? p.c.epilogue : p.g.epilogue;
      for (std::size_t b = 0; b < buf_types_.size(); ++b) {
        if (static_cast<int>(b) == g.out) continue;  // the epilogue reads the result as gval, not from memory
        extra.push_back(std::string(buf_writable_[b] ? "" : "const ") + ctype(buf_types_[b]) + "* __restrict__ b" +
                        std::to_string(b));
        vars.push_back("b" + std::to_string(b));
      }
      // gval: the product as the GEMM's own output would hold it (rounded when that is half precision)
      epilogue += "\nconst float gval = " + cast("out", DType::Float32, buf_types_[g.out]) + ";";
      for (const std::string& l : fused) epilogue += "\n" + l;
      epilogue += "\nout = gval;";
      what += " + fused elementwise epilogue";
    }
    if (!ctx_) return;
    add_gemm_kernel(*ctx_, gemm_launch(ctx_->kernel_name(g.base + "_k" + std::to_string(kernels_++)), p), vars, what,
                    lines_, std::string(indent_, ' '));
  }

  void flush_gemm() {
    if (!gemm_) return;
    PendingGemm g = std::move(*gemm_);
    gemm_.reset();
    launch_gemm(g, {});
  }

  // Stores v as the GEMM's epilogue when v reads the GEMM's result only at the element being computed.
  bool store_in_gemm_epilogue(int dest, std::int64_t offset, const std::vector<std::int64_t>& strides, const Val& v) {
    if (!gemm_ || v.shape != gemm_->shape || atype(buf_types_[gemm_->out]) != std::string("float")) return false;
    const int G = gemm_->out;
    const std::vector<std::int64_t> same = contiguous(v.shape);
    bool ok = true;
    std::map<const Node*, NodeP> memo;
    NodeP e = map_loads(v.e, [&](Node& l) {
      if (l.buf != G) return;
      ok = ok && l.offset == 0 && l.strides == same;
      l.kind = Node::Op;  // the result itself: a variable of the epilogue
      l.op = "@gval";
      l.compute = l.dtype;
      l.args.clear();
    }, memo);
    if (!ok) return false;
    std::vector<Access> acc = {{dest, offset, strides}};
    std::map<Access, std::size_t> index;
    std::set<const Node*> seen;
    double cost = 1;
    collect(e, acc, index, seen, cost);
    std::vector<Dim> dims = merged_dims(v.shape, acc);
    std::vector<std::string> base;
    for (const Access& a : acc) base.push_back(std::to_string(a.offset));
    Lines body;
    body.push_back("const long long flat = " + gemm_->plan.flat + ";");
    std::vector<std::string> idx = decompose(body, "long long", "flat", dims, acc, base, "e");
    Body b{index, idx, {}, {}, 0};
    std::string r = gen(b, e);
    body.insert(body.end(), b.lines.begin(), b.lines.end());
    body.push_back("b" + std::to_string(dest) + "[" + idx[0] + "] = " + cast(r, e->dtype, buf_types_[dest]) + ";");
    PendingGemm g = std::move(*gemm_);
    gemm_.reset();
    launch_gemm(g, body);
    return true;
  }

  std::optional<RowKernel> row_;

  void pool_loops(const PoolLoops& p) override {
    flush_stores();
    flush_gemm();
    flush_row();
    std::int64_t n = p.planes * p.OH * p.OW;
    elementwise("pooling into " + p.D, n, std::max(max_extent(), p.planes * p.H * p.W), [&](Lines& body, const std::string& I) {
      body.push_back("const " + I + " ow = i % " + std::to_string(p.OW) + ";");
      body.push_back("const " + I + " oh = (i / " + std::to_string(p.OW) + ") % " + std::to_string(p.OH) + ";");
      body.push_back("const " + I + " p = i / " + std::to_string(p.OW * p.OH) + ";");
      body.push_back("const " + p.T + "* __restrict__ in = " + p.X + " + " + std::to_string(p.x_offset) + " + p * " +
                     std::to_string(p.H * p.W) + ";");
      body.push_back(p.T + "* __restrict__ o = " + p.D + " + p * " + std::to_string(p.OH * p.OW) + ";");
      body.insert(body.end(), p.body.begin(), p.body.end());
    });
  }

  int kernels_ = 0;
};

// Device versions of the names the shared lowering writes (std::exp, std::min<int64_t>, __builtin_inff(),
// thunderc_expf ...). NVRTC has no standard library; in emulation the host's own definitions are used.
const char* kPrelude = R"(// ---- prelude: what the shared loop lowering expects on the device ----
#ifdef THUNDERC_CUDA_EMULATION
#include "thunderc/cuda_emu.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#else
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned long long uint64_t;
#define __builtin_inff() __int_as_float(0x7f800000)
#define __builtin_inf() __longlong_as_double(0x7ff0000000000000LL)
#define __builtin_nanf(s) __int_as_float(0x7fffffff)
#define __builtin_nan(s) __longlong_as_double(0x7fffffffffffffffLL)
namespace std {
#define THUNDERC_UNARY(name, f, d) \
  __device__ __forceinline__ float name(float x) { return f(x); } \
  __device__ __forceinline__ double name(double x) { return d(x); }
THUNDERC_UNARY(exp, ::expf, ::exp)
THUNDERC_UNARY(log, ::logf, ::log)
THUNDERC_UNARY(sqrt, ::sqrtf, ::sqrt)
THUNDERC_UNARY(sin, ::sinf, ::sin)
THUNDERC_UNARY(cos, ::cosf, ::cos)
THUNDERC_UNARY(erf, ::erff, ::erf)
THUNDERC_UNARY(tanh, ::tanhf, ::tanh)
THUNDERC_UNARY(abs, ::fabsf, ::fabs)
THUNDERC_UNARY(tan, ::tanf, ::tan)
THUNDERC_UNARY(asin, ::asinf, ::asin)
THUNDERC_UNARY(acos, ::acosf, ::acos)
THUNDERC_UNARY(atan, ::atanf, ::atan)
THUNDERC_UNARY(sinh, ::sinhf, ::sinh)
THUNDERC_UNARY(cosh, ::coshf, ::cosh)
THUNDERC_UNARY(asinh, ::asinhf, ::asinh)
THUNDERC_UNARY(acosh, ::acoshf, ::acosh)
THUNDERC_UNARY(atanh, ::atanhf, ::atanh)
THUNDERC_UNARY(expm1, ::expm1f, ::expm1)
THUNDERC_UNARY(log1p, ::log1pf, ::log1p)
THUNDERC_UNARY(log2, ::log2f, ::log2)
THUNDERC_UNARY(log10, ::log10f, ::log10)
THUNDERC_UNARY(ceil, ::ceilf, ::ceil)
THUNDERC_UNARY(floor, ::floorf, ::floor)
THUNDERC_UNARY(trunc, ::truncf, ::trunc)
THUNDERC_UNARY(nearbyint, ::rintf, ::rint)
#undef THUNDERC_UNARY
#define THUNDERC_BINARY(name, f, d) \
  __device__ __forceinline__ float name(float a, float b) { return f(a, b); } \
  __device__ __forceinline__ double name(double a, double b) { return d(a, b); }
THUNDERC_BINARY(pow, ::powf, ::pow)
THUNDERC_BINARY(atan2, ::atan2f, ::atan2)
THUNDERC_BINARY(hypot, ::hypotf, ::hypot)
THUNDERC_BINARY(fmod, ::fmodf, ::fmod)
#undef THUNDERC_BINARY
__device__ __forceinline__ bool isnan(float x) { return x != x; }
__device__ __forceinline__ bool isnan(double x) { return x != x; }
__device__ __forceinline__ bool isinf(float x) { return ::fabsf(x) == __int_as_float(0x7f800000); }
__device__ __forceinline__ bool isinf(double x) { return ::fabs(x) == __longlong_as_double(0x7ff0000000000000LL); }
template <class T> __device__ __forceinline__ T min(T a, T b) { return b < a ? b : a; }
template <class T> __device__ __forceinline__ T max(T a, T b) { return a < b ? b : a; }
}  // namespace std
#endif
// Half precision: 16 bits in memory, float in arithmetic (PyTorch's opmath). Converting a float rounds to
// nearest even (PTX cvt.rn; the emulator implements the same instructions on the host).
#ifdef THUNDERC_CUDA_EMULATION
#define thunderc_cvt_rn_f16 thunderc_emu_cvt_rn_f16_f32
#define thunderc_cvt_f32_f16 thunderc_emu_cvt_f32_f16
#define thunderc_cvt_rn_bf16 thunderc_emu_cvt_rn_bf16_f32
#else
static __device__ __forceinline__ unsigned short thunderc_cvt_rn_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ float thunderc_cvt_f32_f16(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ unsigned short thunderc_cvt_rn_bf16(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
struct thunderc_f16 {
  unsigned short bits;
  thunderc_f16() = default;
  __device__ __forceinline__ thunderc_f16(float f) : bits(thunderc_cvt_rn_f16(f)) {}
  __device__ __forceinline__ operator float() const { return thunderc_cvt_f32_f16(bits); }
};
struct thunderc_bf16 {
  unsigned short bits;
  thunderc_bf16() = default;
  __device__ __forceinline__ thunderc_bf16(float f) : bits(thunderc_cvt_rn_bf16(f)) {}
  __device__ __forceinline__ operator float() const { return __uint_as_float(static_cast<unsigned>(bits) << 16); }
};
static __device__ __forceinline__ float thunderc_round_f16(float x) { return thunderc_f16(x); }
static __device__ __forceinline__ float thunderc_round_bf16(float x) { return thunderc_bf16(x); }
static __device__ __forceinline__ float thunderc_expf(float x) { return expf(x); }
static __device__ __forceinline__ float thunderc_tanhf(float x) { return tanhf(x); }
static __device__ __forceinline__ float thunderc_erff(float x) { return erff(x); }
// ---- kernels ----
)";

}  // namespace

void NvfuserBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  if (sym.op->category == OpCategory::Attention) {  // a kernel of its own, never in a region
    emit_cuda_attention(ctx, sym, out);
    return;
  }
  if (is_cuda_cnn_gradient_op(sym.op->name)) {  // likewise (run_alone)
    emit_cuda_cnn_gradient(ctx, sym, out);
    return;
  }
  if (is_cuda_indexing_op(sym.op->name)) {  // likewise
    emit_cuda_indexing(ctx, sym, out);
    return;
  }
  if (is_cuda_sampling_op(sym.op->name)) {  // likewise (run_alone)
    emit_cuda_sampling(ctx, sym, out);
    return;
  }
  if (sym.op->name == "dropout_mask") {  // likewise (an Indexing operator)
    emit_cuda_dropout_mask(ctx, sym, out);
    return;
  }
  if (!sym.is_region() && gemm_backed(sym)) {
    emit_lone_gemm(ctx, sym, out);
    return;
  }
  BoundSymbol region = as_region(sym);
  CudaRegion e(ctx.trace(), region, &ctx);
  e.run();
  e.write(out);
}

void NvfuserBackend::emit_module_prelude(SourceWriter& out) const {
  out.line("#ifndef THUNDERC_HALF_TYPES");
  out.line("#define THUNDERC_HALF_TYPES");
  out.line("// 16-bit element types of the CUDA kernels (defined with their conversions in kernels.cu); host code");
  out.line("// only passes pointers to them.");
  out.line("struct thunderc_f16 { unsigned short bits; };");
  out.line("struct thunderc_bf16 { unsigned short bits; };");
  out.line("#endif");
}

std::size_t NvfuserBackend::scratch_bytes(const Trace& trace, const BoundSymbol& sym) const {
  if (sym.op->category == OpCategory::Attention || is_cuda_cnn_gradient_op(sym.op->name) ||
      is_cuda_indexing_op(sym.op->name) || is_cuda_sampling_op(sym.op->name) || sym.op->name == "dropout_mask")
    return 0;
  if (!sym.is_region() && gemm_backed(sym)) return 0;
  BoundSymbol region = as_region(sym);
  CudaRegion e(trace, region, nullptr);
  e.run();
  return e.scratch_bytes();
}

std::string cuda_module_source(const std::vector<CudaKernel>& kernels) {
  std::string src = "// Generated by thunderc " THUNDERC_VERSION ": the model's CUDA kernels (NVRTC, no #include). Do not edit.\n";
  src += kPrelude;
  for (const CudaKernel& k : kernels) src += "\n" + c_comment(k.what) + "\n" + k.source;
  src += "\n#ifdef THUNDERC_CUDA_EMULATION\n// Host launchers for the emulated mode (tests/cuda_emu/).\n";
  for (const CudaKernel& k : kernels) {
    std::string call;
    for (std::size_t i = 0; i < k.params.size(); ++i)
      call += (i ? ", " : "") + std::string("*(") + k.params[i].first + "*)args[" + std::to_string(i) + "]";
    src += "extern \"C\" void thunderc_emu_launch_" + k.name +
           "(const unsigned* grid, const unsigned* block, unsigned shared_bytes, void** args) {\n"
           "  thunderc_emu::launch(grid, block, shared_bytes, [&] { " + k.name + "(" + call + "); });\n}\n";
    // Parameter sizes, so that the fake driver can copy the arguments of a launch it captures into a graph.
    std::string sizes = std::to_string(k.params.size()) + "ul";
    for (const auto& prm : k.params) sizes += ", sizeof(" + prm.first + ")";
    src += "extern \"C\" const unsigned long thunderc_emu_param_sizes_" + k.name + "[] = {" + sizes + "};\n";
  }
  src += "#endif\n";
  return src;
}

}  // namespace thunderc
