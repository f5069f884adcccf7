#include "codegen/cpp/cpp_backend.h"

#include "codegen/cpp/attention.h"
#include "codegen/cpp/embedding.h"
#include "codegen/cpp/indexing.h"
#include "codegen/cpp/spectral.h"
#include "codegen/loops/region_lowering.h"
#include "codegen/resources.h"

namespace thunderc {

namespace {

using namespace loops;

// A loop nest runs in parallel only with at least this much work (elements x per-element cost, where
// cheap ops cost 1 and transcendental ones 8) and kParallelMinElements elements: waking a thread team
// costs microseconds, more than small loops take (ATen's grain size is 32768 elements). A copy of 65536
// floats takes tens of microseconds: the concatenations and layout permutes of CNNs between oneDNN's
// convolutions are that size, and left serial they kept 2 threads from scaling (docs/onednn.md).
constexpr double kParallelWork = 65536;
constexpr std::int64_t kParallelMinElements = 16384;

// `#pragma omp simd` makes GCC vectorize an innermost loop whatever its own cost model says. That lost where
// the loop is short or a cheap body gathers or scatters (a layout permute): GCC's own choice, without the
// pragma, was faster. Measured (x86-64-v3 and -v4 builds, AMD EPYC with AVX-512) on the permute of a 3-channel
// image to channels-last: 2.1 -> 0.2 us for 32x32, 28 -> 13 us for 224x224; on a 16-channel one 66 -> 19 us;
// a cheap elementwise loop with a strided operand over 64 channels 183 -> 94-106 us; and for contiguous
// loops of 2-7 elements 1.4-4.7 -> 0.6-2.0 us (with thunderc_expf, 2 and 4 per row: 5.9-9.0 -> 0.9-4.4 us).
// From 8 contiguous elements, or with transcendental work (cost >= 8), the pragma stays: there it measured
// the same or better.
constexpr std::int64_t kSimdMinTrip = 8;
bool force_simd(const LoopDim& inner, double cost) {
  if (inner.n < kSimdMinTrip) return false;
  if (cost >= 8) return true;
  for (std::int64_t s : inner.s)
    if (s != 0 && s != 1 && s != -1) return false;
  return true;
}

// The CPU target: OpenMP loop nests inside the variant function.
class CppRegion : public RegionLowering {
 public:
  using RegionLowering::RegionLowering;

 private:
  bool symbolic() const { return ctx_ && ctx_->symbolic_sizes(); }

  // The parallel threshold as a test on a run-time element count `numel` (printed as a literal, which
  // a symbolic variant turns into an expression): numel * cost >= kParallelWork and numel >= kParallelMinElements.
  static std::string parallel_test(std::int64_t numel, double cost) {
    auto need = static_cast<std::int64_t>(std::ceil(kParallelWork / cost));
    return std::to_string(numel) + " >= " + std::to_string(std::max(need, kParallelMinElements));
  }

  // ---- loop nests ----
  using Gen = std::function<void(const std::vector<std::string>& idx, const std::vector<std::int64_t>& inner_strides,
                                 Lines& pre, std::string& pragma, Lines& body, Lines& post)>;

  // Loops over `shape` (row-major) for the accesses; `serial_if_zero`: an access whose stride 0 at the
  // outermost loop forbids running it in parallel (several iterations update the same element).
  void loops(const Shape& shape, const std::vector<Access>& acc, double cost, int serial_if_zero, const Gen& gen) {
    if (numel(shape) == 0) return;
    std::vector<LoopDim> dims = merged_dims(shape, acc);
    std::vector<std::string> idx;
    for (const Access& a : acc) idx.push_back(std::to_string(a.offset));
    std::vector<std::int64_t> inner(acc.size(), 0);
    if (!dims.empty()) inner = dims.back().s;
    // Symbolic variants decide at run time: the nest is printed with its parallel pragma and again without,
    // behind the same test (an OpenMP if() clause would still start a team of one: microseconds per nest).
    const std::size_t start = lines_.size();
    std::size_t par_line = 0;
    std::string serial_line;  // what replaces the parallel pragma in the serial copy (empty: nothing)
    bool run_time_par = false;
    L("{");
    indent_ += 2;
    std::size_t opened = 0;
    for (std::size_t l = 0; l < dims.size(); ++l) {
      std::string var = "i" + std::to_string(l);
      bool last = l + 1 == dims.size();
      bool par = l == 0 && dims[0].n > 1 && static_cast<double>(numel(shape)) * cost >= kParallelWork &&
                 numel(shape) >= kParallelMinElements &&
                 (serial_if_zero < 0 || dims[0].s[serial_if_zero] != 0);
      const std::string clause = "num_threads(thunderc_cpp_nt) schedule(static)";
      if (symbolic() && l == 0 && (serial_if_zero < 0 || dims[0].s[serial_if_zero] != 0))
        par = run_time_par = true;
      const std::string par_pragma = "#pragma omp parallel for " + clause;
      if (par && !last) {
        par_line = lines_.size();
        L(par_pragma);
      }
      if (last) {
        std::vector<std::string> body_idx;
        for (std::size_t a = 0; a < acc.size(); ++a) body_idx.push_back(term(idx[a], var, dims[l].s[a]));
        Lines pre, body, post;
        std::string pragma = "#pragma omp simd";
        // pre/post see the indices without the innermost term (valid where that access's inner stride is 0)
        gen(body_idx, inner, pre, pragma, body, post);
        // (A reduction's pragma stays; so does a symbolic variant's, whose code must not depend on the sizes.)
        if (pragma == "#pragma omp simd" && !symbolic() && !force_simd(dims[l], cost)) pragma.clear();
        for (auto& p : pre) L(p);
        if (par) {
          par_line = lines_.size();
          serial_line = pragma;
          L(pragma == "#pragma omp simd" ? "#pragma omp parallel for simd " + clause : par_pragma);
        } else if (!pragma.empty()) {
          L(pragma);
        }
        L("for (int64_t " + var + " = 0; " + var + " < " + std::to_string(dims[l].n) + "; ++" + var + ") {");
        for (auto& b : body) L("  " + b);
        L("}");
        for (auto& p : post) L(p);
      } else {
        L("for (int64_t " + var + " = 0; " + var + " < " + std::to_string(dims[l].n) + "; ++" + var + ") {");
        indent_ += 2;
        ++opened;
        for (std::size_t a = 0; a < acc.size(); ++a) {
          if (dims[l].s[a] == 0) continue;
          std::string o = "o" + std::to_string(a) + "_" + std::to_string(l);
          L("const int64_t " + o + " = " + term(idx[a], var, dims[l].s[a]) + ";");
          idx[a] = o;
        }
      }
    }
    if (dims.empty()) {
      Lines pre, body, post;
      std::string pragma;
      gen(idx, inner, pre, pragma, body, post);
      for (auto& p : pre) L(p);
      for (auto& b : body) L(b);
      for (auto& p : post) L(p);
    }
    for (; opened > 0; --opened) {
      indent_ -= 2;
      L("}");
    }
    indent_ -= 2;
    L("}");
    if (run_time_par && !dims.empty())
      guard_parallel(start, par_line, serial_line,
                     parallel_test(numel(shape), cost) + " && " + std::to_string(dims[0].n) + " > 1");
  }

  // Lines [start, end) hold a loop nest whose line `par_line` is its parallel pragma: they become
  // `if (test) { nest } else { nest with serial_line instead of the pragma }`.
  void guard_parallel(std::size_t start, std::size_t par_line, const std::string& serial_line, const std::string& test) {
    Lines nest(lines_.begin() + static_cast<std::ptrdiff_t>(start), lines_.end());
    lines_.resize(start);
    L("if (" + test + ") {");
    for (const std::string& l : nest) lines_.push_back("  " + l);
    L("} else {");
    for (std::size_t i = 0; i < nest.size(); ++i) {
      if (start + i == par_line) {
        if (!serial_line.empty()) lines_.push_back("  " + nest[i].substr(0, nest[i].find('#')) + serial_line);
        continue;
      }
      lines_.push_back("  " + nest[i]);
    }
    L("}");
  }

  // dest[offset + index . strides] = tree, over `shape`.
  void store_nest(int dest, std::int64_t offset, const std::vector<std::int64_t>& strides, const Val& v) override {
    std::vector<Access> acc = {{dest, offset, strides}};
    std::map<Access, std::size_t> index;
    std::set<const Node*> seen;
    double cost = 1;
    collect(v.e, acc, index, seen, cost);
    DType dd = buf_types_[dest];
    loops(v.shape, acc, cost, -1, [&](const std::vector<std::string>& idx, const std::vector<std::int64_t>&, Lines&,
                                      std::string&, Lines& body, Lines&) {
      Body b{index, idx, {}, {}, 0};
      std::string r = gen(b, v.e);
      body = b.lines;
      body.push_back("b" + std::to_string(dest) + "[" + idx[0] + "] = " + cast(r, v.e->dtype, dd) + ";");
    });
  }

  // dest (contiguous, `x` with the reduced dims removed or kept as 1) = reduction of x.
  void reduce(const Val& x, const std::vector<bool>& red, int dest, bool is_max) override {
    DType d = buf_types_[dest];
    Shape kept;
    for (std::size_t i = 0; i < x.shape.size(); ++i)
      if (!red[i]) kept.push_back(x.shape[i]);
    std::int64_t n = numel(kept);
    std::string init = is_max ? lit(-INFINITY, d) : lit(0, d);
    std::string B = "b" + std::to_string(dest);
    L("#pragma omp simd");
    L("for (int64_t i = 0; i < " + std::to_string(n) + "; ++i) " + B + "[i] = " + init + ";");
    Shape ks = contiguous(kept);
    std::vector<std::int64_t> ds;
    for (std::size_t i = 0, k = 0; i < x.shape.size(); ++i) ds.push_back(red[i] ? 0 : ks[k++]);
    std::vector<Access> acc = {{dest, 0, ds}};
    std::map<Access, std::size_t> index;
    std::set<const Node*> seen;
    double cost = 1;
    collect(x.e, acc, index, seen, cost);
    loops(x.shape, acc, cost, 0, [&](const std::vector<std::string>& idx, const std::vector<std::int64_t>& inner, Lines& pre,
                                     std::string& pragma, Lines& body, Lines& post) {
      Body b{index, idx, {}, {}, 0};
      std::string e = cast(gen(b, x.e), x.e->dtype, d);
      body = b.lines;
      // max propagates NaN, as torch.amax: `(t > e || t != t) ? t : e` keeps a NaN already in t and takes a
      // NaN e. In a vectorized reduction (OpenMP's max combines lanes without regard to NaN) a NaN flag,
      // or-reduced alongside, replaces the maximum at the end.
      if (inner[0] == 0 && !pragma.empty()) {  // the innermost loop reduces into one element
        pre.push_back(std::string(atype(d)) + " acc = " + B + "[" + idx[0] + "];");
        if (is_max) {
          pre.push_back("int acc_nan = acc != acc;");
          pragma = "#pragma omp simd reduction(max:acc) reduction(|:acc_nan)";
          body.push_back("const " + std::string(atype(d)) + " e = " + e + ";");
          body.push_back("acc_nan |= e != e;");
          body.push_back("acc = acc > e ? acc : e;");
          post.push_back(B + "[" + idx[0] + "] = acc_nan ? " + lit(NAN, d) + " : acc;");
        } else {
          pragma = "#pragma omp simd reduction(+:acc)";
          body.push_back("acc += " + e + ";");
          post.push_back(B + "[" + idx[0] + "] = acc;");
        }
      } else {
        std::string t = B + "[" + idx[0] + "]";
        body.push_back(is_max ? t + " = (" + t + " > " + e + " || " + t + " != " + t + ") ? " + t + " : " + e + ";"
                              : t + " += " + e + ";");
      }
    });
  }

  // One-dimensional in-place update of a buffer: b[i] = f(b[i]).
  void update(int buf, std::int64_t n, const std::string& f_of_v) override {
    std::string B = "b" + std::to_string(buf);
    L("#pragma omp simd");
    L("for (int64_t i = 0; i < " + std::to_string(n) + "; ++i) { const " + atype(buf_types_[buf]) + " v = " + B +
      "[i]; " + B + "[i] = " + f_of_v + "; }");
  }

  void pool_loops(const PoolLoops& p) override {
    const std::size_t start = lines_.size();
    L("{");
    indent_ += 2;
    const std::size_t par_line = lines_.size();
    if (symbolic() || (static_cast<double>(p.x_numel) * 2 >= kParallelWork && p.x_numel >= kParallelMinElements && p.planes > 1))
      L("#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(static)");
    L("for (int64_t p = 0; p < " + std::to_string(p.planes) + "; ++p) {");
    L("  const " + p.T + "* __restrict in = " + p.X + " + " + std::to_string(p.x_offset) + " + p * " + std::to_string(p.H * p.W) + ";");
    L("  " + p.T + "* __restrict o = " + p.D + " + p * " + std::to_string(p.OH * p.OW) + ";");
    L("  for (int64_t oh = 0; oh < " + std::to_string(p.OH) + "; ++oh) {");
    L("    for (int64_t ow = 0; ow < " + std::to_string(p.OW) + "; ++ow) {");
    indent_ += 6;
    for (const std::string& b : p.body) L(b);
    indent_ -= 6;
    L("    }");
    L("  }");
    L("}");
    indent_ -= 2;
    L("}");
    if (symbolic())
      guard_parallel(start, par_line, "", parallel_test(p.x_numel, 2) + " && " + std::to_string(p.planes) + " > 1");
  }

  // Rows of output pixels (image n, row oh) are the parallel unit: at batch 1 there is one image.
  void pool_loops_nhwc(const PoolLoopsNhwc& p) override {
    const std::size_t start = lines_.size();
    const std::string rows = std::to_string(p.images * p.OH);
    L("{");
    indent_ += 2;
    const std::size_t par_line = lines_.size();
    if (symbolic() || (static_cast<double>(p.x_numel) * 2 >= kParallelWork && p.x_numel >= kParallelMinElements &&
                       p.images * p.OH > 1))
      L("#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(static)");
    L("for (int64_t r = 0; r < " + rows + "; ++r) {");
    L("  const int64_t n = r / " + std::to_string(p.OH) + ", oh = r % " + std::to_string(p.OH) + ";");
    L("  const " + p.T + "* __restrict in = " + p.X + " + " + std::to_string(p.x_offset) + " + n * " +
      std::to_string(p.H * p.W * p.C) + ";");
    L("  for (int64_t ow = 0; ow < " + std::to_string(p.OW) + "; ++ow) {");
    L("    " + p.T + "* __restrict o = " + p.D + " + (r * " + std::to_string(p.OW) + " + ow) * " + std::to_string(p.OC) + ";");
    indent_ += 4;
    for (const std::string& b : p.body) L(b);
    indent_ -= 4;
    L("  }");
    L("}");
    indent_ -= 2;
    L("}");
    if (symbolic())
      guard_parallel(start, par_line, "", parallel_test(p.x_numel, 2) + " && " + rows + " > 1");
  }
};

}  // namespace

LinkInputs CppBackend::link_inputs() const {
  LinkInputs in;
  in.includes = {"algorithm", "cmath", "cstdio", "cstring", "limits", "vector", "omp.h", "thunderc/cpp_math.h", "thunderc/fft.h", "thunderc/philox.h"};
  in.include_dirs = {resource_paths().cpp_include};
  // -fno-trapping-math lets GCC if-convert comparisons (relu, clamp, the math helpers) so loops vectorize;
  // it changes no result, it only assumes no floating-point trap handler is watching.
  // The instruction set comes from --cpu-target (-march=x86-64-v3 by default, for the whole model.cpp; the
  // runtime runs no variant on a CPU without it), never from the machine that compiles.
  // -Werror=vla: no size may reach an array bound (a symbolic variant would make it a run-time one).
  in.compile_flags = {"-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-Werror=vla"};
  in.link_flags = {"-fopenmp"};
  return in;
}

void CppBackend::emit_variant_prologue(SourceWriter& out) const {
  out.line("const int thunderc_cpp_nt = call->num_threads > 0 ? call->num_threads : omp_get_max_threads();");
  out.line("(void)thunderc_cpp_nt;");
}

void CppBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  if (sym.op->category == OpCategory::Attention) return emit_cpp_attention(ctx, sym, out);  // never in a region
  if (is_cpp_indexing_op(sym.op->name)) return emit_cpp_indexing(ctx, sym, out);          // never in a region
  if (sym.op->category == OpCategory::Spectral) return emit_cpp_spectral(ctx, sym, out);   // never in a region
  BoundSymbol region = as_region(sym);
  CppRegion e(ctx.trace(), region, &ctx);
  e.run();
  e.write(out);
}

std::size_t CppBackend::scratch_bytes(const Trace& trace, const BoundSymbol& sym) const {
  if (sym.op->category == OpCategory::Attention || sym.op->category == OpCategory::Spectral ||
      is_cpp_indexing_op(sym.op->name))
    return 0;  // no scratch
  BoundSymbol region = as_region(sym);
  CppRegion e(trace, region, nullptr);
  e.run();
  return e.scratch_bytes();
}

}  // namespace thunderc

