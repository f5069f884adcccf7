#include "codegen/cpp/attention.h"

#include <algorithm>
#include <cmath>

#include "codegen/loops/attention_plan.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

using loops::contiguous;
using loops::ctype;
using loops::lit;

// Per-thread stack budget for each of the kernel's local arrays (the K tile, the accumulators): small
// enough for any OpenMP thread's stack, large enough that E, Ev <= 128 get full tiles and blocks.
constexpr std::int64_t kLocalBytes = 32768;
constexpr std::int64_t kMaxTile = 64, kMaxBlockRows = 16;
// As the loop nests (cpp_backend.cpp): a team of threads costs microseconds, worth it from this much work.
constexpr double kParallelFlops = 262144;

std::string S(std::int64_t v) { return std::to_string(v); }

}  // namespace

void emit_cpp_attention(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const DType d = t.type(sym.outputs[0]).dtype;
  const std::string T = ctype(d);
  const loops::AttentionPlan p = loops::plan_attention(t, sym);
  const std::int64_t L = p.L, E = p.E, Sk = p.S, Ev = p.Ev, nb = p.batches;
  const bool causal = p.causal, has_mask = p.has_mask;
  const double scale = p.scale;
  const DType mask_dtype = has_mask ? p.mask_dtype : d;
  const std::int64_t mask_row = p.mask_row, mask_col = p.mask_col;
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(d));

  // Tile and block sizes within the stack budget (at least 1 each).
  const std::int64_t TS = std::clamp<std::int64_t>(kLocalBytes / std::max<std::int64_t>(E * es, 1), 1, kMaxTile);
  // A symbolic variant prints the same code at every L (codegen/symbolic_code.h): its block size does not
  // shrink to L, and the block count is computed in the generated code.
  const bool symbolic = ctx.symbolic_sizes();
  const std::int64_t BR = std::clamp<std::int64_t>(
      std::min(kLocalBytes / std::max<std::int64_t>(Ev * es, 1), symbolic ? kMaxBlockRows : L), 1, kMaxBlockRows);
  const std::int64_t blocks = (L + BR - 1) / BR;
  const std::string BLOCKS = symbolic ? "((" + S(L) + " + " + S(BR - 1) + ") / " + S(BR) + ")" : S(blocks);
  const std::string exp_fn = d == DType::Float32 ? "thunderc_expf" : "std::exp";
  const std::string NEG_INF = lit(-INFINITY, d);

  out.line("{");
  out.indent();
  out.comment("scaled_dot_product_attention: flash-style, online softmax over key tiles (L x S never stored)");
  out.comment("L=" + S(L) + " S=" + S(Sk) + " E=" + S(E) + " Ev=" + S(Ev) + " batch=" + S(nb) + " rows/block=" + S(BR) +
              " keys/tile=" + S(TS) + (causal ? " causal" : "") +
              (has_mask ? (mask_dtype == DType::Bool ? " bool mask" : " additive mask") : ""));
  auto ptr = [&](std::size_t i, const std::string& name, const std::string& type) {
    out.line("const " + type + "* __restrict " + name + " = static_cast<const " + type + "*>(" +
             ctx.buffer(sym.inputs[i].value) + ".data);");
  };
  ptr(0, "aq", T);
  ptr(1, "ak", T);
  ptr(2, "av", T);
  if (has_mask) ptr(3, "am", mask_dtype == DType::Bool ? "bool" : T);
  out.line(T + "* __restrict ao = static_cast<" + T + "*>(" + ctx.buffer(sym.outputs[0]) + ".data);");
  double flops = static_cast<double>(nb) * static_cast<double>(L) * static_cast<double>(Sk) * static_cast<double>(E + Ev);
  const std::string schedule = std::string("#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(") +
                               (causal ? "dynamic, 1" : "static") + ")";
  // The loop over (batch, block of rows); printed once or, for a symbolic variant, twice (below).
  auto emit_loop = [&](SourceWriter& out) {
    out.line("for (int64_t w = 0; w < " + (symbolic ? S(nb) + " * " + BLOCKS : S(nb * blocks)) + "; ++w) {");
    out.indent();
    out.line("const int64_t i0 = (w % " + BLOCKS + ") * " + S(BR) + ";");
    out.line("const int64_t i1 = i0 + " + S(BR) + " < " + S(L) + " ? i0 + " + S(BR) + " : " + S(L) + ";");
    out.line("int64_t oq = 0, ok = 0, ov = 0, om = 0, rest = w / " + BLOCKS + ";");
    out.line("(void)om; (void)rest;");
    for (const std::string& l : loops::batch_offset_statements(p, "int64_t", "rest", "x", "oq", "ok", "ov", "om", S))
      out.line(l);
    out.line(T + " m_run[" + S(BR) + "], l_run[" + S(BR) + "], acc[" + S(BR) + "][" + S(Ev) + "], s[" + S(TS) + "], kt[" +
             S(E) + "][" + S(TS) + "];");
    out.line("for (int64_t r = 0; r < " + S(BR) + "; ++r) {");
    out.line("  m_run[r] = " + NEG_INF + ";");
    out.line("  l_run[r] = 0;");
    out.line("  for (int64_t e = 0; e < " + S(Ev) + "; ++e) acc[r][e] = 0;");
    out.line("}");
    out.line(causal ? "const int64_t j_end = i1 < " + S(Sk) + " ? i1 : " + S(Sk) + ";  // causal: keys j <= i only"
                    : "const int64_t j_end = " + S(Sk) + ";");
    out.line("for (int64_t j0 = 0; j0 < j_end; j0 += " + S(TS) + ") {");
    out.indent();
    out.line("const int64_t nj = j0 + " + S(TS) + " < j_end ? " + S(TS) + " : j_end - j0;");
    out.comment("the key tile, transposed: kt[e][jj] = k[j0 + jj][e] (contiguous along the tile for the score loop)");
    out.line("for (int64_t jj = 0; jj < nj; ++jj)");
    out.line("  for (int64_t e = 0; e < " + S(E) + "; ++e) kt[e][jj] = ak[ok + (j0 + jj) * " + S(E) + " + e];");
    out.line("for (int64_t i = i0; i < i1; ++i) {");
    out.indent();
    out.line("const int64_t r = i - i0;");
    if (causal) out.line("if (j0 > i) continue;  // the whole tile is above this row's diagonal");
    out.line("const " + T + "* __restrict qi = aq + oq + i * " + S(E) + ";");
    out.line("#pragma omp simd");
    out.line("for (int64_t jj = 0; jj < nj; ++jj) s[jj] = 0;");
    // Four dims of E per pass over the row's scores: a quarter of the loads and stores of s.
    const std::int64_t E4 = E - E % 4;
    if (E4 > 0) {
      out.line("for (int64_t e = 0; e < " + S(E4) + "; e += 4) {");
      out.line("  const " + T + " q0 = qi[e], q1 = qi[e + 1], q2 = qi[e + 2], q3 = qi[e + 3];");
      out.line("  #pragma omp simd");
      out.line("  for (int64_t jj = 0; jj < nj; ++jj)");
      out.line("    s[jj] += q0 * kt[e][jj] + q1 * kt[e + 1][jj] + q2 * kt[e + 2][jj] + q3 * kt[e + 3][jj];");
      out.line("}");
    }
    if (E4 < E) {
      out.line("for (int64_t e = " + S(E4) + "; e < " + S(E) + "; ++e) {");
      out.line("  const " + T + " qe = qi[e];");
      out.line("  #pragma omp simd");
      out.line("  for (int64_t jj = 0; jj < nj; ++jj) s[jj] += qe * kt[e][jj];");
      out.line("}");
    }
    // Scale, mask and the tile's max (NaN-propagating, as amax in the loop nests).
    out.line(T + " tmax = " + NEG_INF + ";");
    out.line("int tnan = 0;");
    out.line("#pragma omp simd reduction(max:tmax) reduction(|:tnan)");
    out.line("for (int64_t jj = 0; jj < nj; ++jj) {");
    out.indent();
    out.line(T + " x = s[jj] * " + lit(scale, d) + ";");
    if (causal) out.line("x = j0 + jj > i ? " + NEG_INF + " : x;");
    if (has_mask) {
      std::string at = "am[om + i * " + S(mask_row) + " + (j0 + jj) * " + S(mask_col) + "]";
      if (mask_dtype == DType::Bool) out.line("x = " + at + " ? x : " + NEG_INF + ";");
      else out.line("x += " + at + ";");
    }
    out.line("s[jj] = x;");
    out.line("tnan |= x != x;");
    out.line("tmax = tmax > x ? tmax : x;");
    out.dedent();
    out.line("}");
    out.line("if (tnan) tmax = " + lit(NAN, d) + ";");
    out.line("const " + T + " m_new = (m_run[r] > tmax || m_run[r] != m_run[r]) ? m_run[r] : tmax;");
    out.line("if (m_new == " + NEG_INF + ") continue;  // every key so far masked: nothing to add yet");
    out.line("const " + T + " corr = " + exp_fn + "(m_run[r] - m_new);  // 0 for the first unmasked tile");
    out.line(T + " psum = 0;");
    out.line("#pragma omp simd reduction(+:psum)");
    out.line("for (int64_t jj = 0; jj < nj; ++jj) {");
    out.line("  const " + T + " p = " + exp_fn + "(s[jj] - m_new);");
    out.line("  s[jj] = p;");
    out.line("  psum += p;");
    out.line("}");
    out.line("l_run[r] = l_run[r] * corr + psum;");
    out.line("m_run[r] = m_new;");
    out.line(T + "* __restrict a = acc[r];");
    out.line("#pragma omp simd");
    out.line("for (int64_t e = 0; e < " + S(Ev) + "; ++e) a[e] *= corr;");
    // Four keys per pass over the row's accumulator, then the rest one by one.
    out.line("int64_t jj = 0;");
    out.line("for (; jj + 4 <= nj; jj += 4) {");
    out.line("  const " + T + " p0 = s[jj], p1 = s[jj + 1], p2 = s[jj + 2], p3 = s[jj + 3];");
    out.line("  const " + T + "* __restrict v0 = av + ov + (j0 + jj) * " + S(Ev) + ";");
    out.line("  #pragma omp simd");
    out.line("  for (int64_t e = 0; e < " + S(Ev) + "; ++e)");
    out.line("    a[e] += p0 * v0[e] + p1 * v0[e + " + S(Ev) + "] + p2 * v0[e + " + S(2 * Ev) + "] + p3 * v0[e + " +
             S(3 * Ev) + "];");
    out.line("}");
    out.line("for (; jj < nj; ++jj) {");
    out.line("  const " + T + " p = s[jj];");
    out.line("  const " + T + "* __restrict vj = av + ov + (j0 + jj) * " + S(Ev) + ";");
    out.line("  #pragma omp simd");
    out.line("  for (int64_t e = 0; e < " + S(Ev) + "; ++e) a[e] += p * vj[e];");
    out.line("}");
    out.dedent();
    out.line("}");
    out.dedent();
    out.line("}");
    out.comment("normalize; l = 0 (every key masked) gives 0 / 0 = NaN, as softmax of a row of -inf");
    out.line("for (int64_t i = i0; i < i1; ++i) {");
    out.line("  " + T + "* __restrict oi = ao + (w / " + BLOCKS + ") * " + S(L * Ev) + " + i * " + S(Ev) + ";");
    out.line("  const " + T + " l = l_run[i - i0];");
    out.line("  #pragma omp simd");
    out.line("  for (int64_t e = 0; e < " + S(Ev) + "; ++e) oi[e] = acc[i - i0][e] / l;");
    out.line("}");
    out.dedent();
    out.line("}");
  };
  if (symbolic) {
    // flops >= kParallelFlops with the L- and S-dependent factors at run time, as a branch: an OpenMP if()
    // clause would still start a team of one.
    SourceWriter loop;
    emit_loop(loop);
    out.line("if (" + S(nb) + " * " + S(L) + " * " + S(Sk) + " >= " +
             S(static_cast<std::int64_t>(std::ceil(kParallelFlops / static_cast<double>(std::max<std::int64_t>(E + Ev, 1))))) +
             " && " + S(nb) + " * " + BLOCKS + " > 1) {");
    out.indent();
    out.line(schedule);
    out.lines(loop.str());
    out.dedent();
    out.line("} else {");
    out.indent();
    out.lines(loop.str());
    out.dedent();
    out.line("}");
  } else {
    if (flops >= kParallelFlops && nb * blocks > 1) out.line(schedule);
    emit_loop(out);
  }
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
