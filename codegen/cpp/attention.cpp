#include "codegen/cpp/attention.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "codegen/loops/attention_plan.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

using loops::contiguous;
using loops::ctype;
using loops::lit;

// Per-thread budget for the key tile and for the accumulators: E, Ev <= 128 get 64-key tiles and 64-row
// blocks (each block transposes every key tile once: ViT-B/16's attention took 2.3 ms with 16-row blocks,
// 1.9 with 64). Tiles and blocks never go below one key group / one row group, so very large head sizes take
// more (E = 4096: 256 KiB of key tile); past kMaxStackBytes they live on the heap.
constexpr std::int64_t kLocalBytes = 32768;
constexpr std::int64_t kMaxTile = 64, kMaxBlockRows = 64;
// The micro-kernels work on 32-byte vectors (GCC's vector extension: one AVX register, or two SSE ones on
// older targets), 4 query rows x 2 vectors at a time: 8 accumulators in registers, one broadcast per row and
// two vector loads per step, so the FMAs are not starved by loads and stores of the scores or accumulators.
constexpr std::int64_t kVectorBytes = 32, kRowGroup = 4;
constexpr std::int64_t kMaxStackBytes = 262144;
// As the loop nests (cpp_backend.cpp): a team of threads costs microseconds, worth it from this much work.
constexpr double kParallelFlops = 262144;

std::string S(std::int64_t v) { return std::to_string(v); }

}  // namespace

void emit_cpp_attention(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  // Storage type ST; arithmetic in T (float for the half types, whose q, k and v tiles are widened as they are
  // read and whose output is rounded once, as ATen's CPU attention computes them).
  const DType sd = t.type(sym.outputs[0]).dtype, d = loops::opmath(sd);
  const bool half = sd != d;
  const std::string T = ctype(d), ST = ctype(sd);
  const loops::AttentionPlan p = loops::plan_attention(t, sym);
  const std::int64_t L = p.L, E = p.E, Sk = p.S, Ev = p.Ev, nb = p.batches;
  const bool causal = p.causal, has_mask = p.has_mask;
  const double scale = p.scale;
  const DType mask_dtype = has_mask ? p.mask_dtype : sd;
  const std::int64_t mask_row = p.mask_row, mask_col = p.mask_col;
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(d));
  const std::int64_t LN = kVectorBytes / es, KG = 2 * LN;  // lanes; keys (and value columns) per micro-kernel step

  // A symbolic variant prints the same code at every L (codegen/symbolic_code.h): its row group and block size
  // do not shrink to L, and the block count is computed in the generated code.
  const bool symbolic = ctx.symbolic_sizes();
  const std::int64_t R = symbolic ? kRowGroup : std::min(kRowGroup, std::max<std::int64_t>(L, 1));
  // Key tile: a multiple of the key group; row block: a multiple of the row group (rows past L are padding).
  const std::int64_t TS = std::clamp<std::int64_t>(kLocalBytes / std::max<std::int64_t>(E * es, 1) / KG * KG, KG, kMaxTile);
  std::int64_t BR = std::clamp<std::int64_t>(
      std::min(kLocalBytes / std::max<std::int64_t>(Ev * es, 1), symbolic ? kMaxBlockRows : L), 1, kMaxBlockRows);
  BR = (BR + R - 1) / R * R;
  const std::int64_t blocks = (L + BR - 1) / BR;
  const std::string BLOCKS = symbolic ? "((" + S(L) + " + " + S(BR - 1) + ") / " + S(BR) + ")" : S(blocks);
  const std::string exp_fn = d == DType::Float32 ? "thunderc_expf" : "std::exp";
  const std::string NEG_INF = lit(-INFINITY, d);
  const std::int64_t VB = LN * es;  // bytes per vector
  // The accumulators, scores and key tile: on the stack up to kMaxStackBytes (head sizes up to 2048), else on
  // the heap (an OpenMP thread's stack may be as small as 2 MiB).
  // (half types: a float copy of the value tile too, vt[jj][e] = v[j0 + jj][e])
  const std::int64_t local_elems = BR * Ev + BR * TS + E * TS + (half ? TS * Ev : 0);
  const bool on_stack = local_elems * es <= kMaxStackBytes;

  out.line("{");
  out.indent();
  out.comment("scaled_dot_product_attention: flash-style, online softmax over key tiles (L x S never stored)");
  out.comment("L=" + S(L) + " S=" + S(Sk) + " E=" + S(E) + " Ev=" + S(Ev) + " batch=" + S(nb) + " rows/block=" + S(BR) +
              " keys/tile=" + S(TS) + " rows/group=" + S(R) + (causal ? " causal" : "") +
              (has_mask ? (mask_dtype == DType::Bool ? " bool mask" : " additive mask") : ""));
  out.line("typedef " + T + " tc_vec __attribute__((vector_size(" + S(kVectorBytes) + ")));  // " + S(LN) + " lanes");
  auto ptr = [&](std::size_t i, const std::string& name, const std::string& type) {
    out.line("const " + type + "* __restrict " + name + " = static_cast<const " + type + "*>(" +
             ctx.buffer(sym.inputs[i].value) + ".data);");
  };
  ptr(0, "aq", ST);
  ptr(1, "ak", ST);
  ptr(2, "av", ST);
  if (has_mask) ptr(3, "am", mask_dtype == DType::Bool ? "bool" : ST);
  out.line(ST + "* __restrict ao = static_cast<" + ST + "*>(" + ctx.buffer(sym.outputs[0]) + ".data);");
  double flops = static_cast<double>(nb) * static_cast<double>(L) * static_cast<double>(Sk) * static_cast<double>(E + Ev);
  const std::string schedule = std::string("#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(") +
                               (causal ? "dynamic, 1" : "static") + ")";
  // Statements for rows r0 + 0 .. r0 + R - 1 of a group: `line(r)` for each.
  auto each_row = [&](SourceWriter& out, const std::function<std::string(std::int64_t)>& line) {
    for (std::int64_t r = 0; r < R; ++r) out.line(line(r));
  };
  auto load = [&](const std::string& v, const std::string& from) {
    return "__builtin_memcpy(&" + v + ", " + from + ", " + S(VB) + ");";
  };
  auto store = [&](const std::string& to, const std::string& v) {
    return "__builtin_memcpy(" + to + ", &" + v + ", " + S(VB) + ");";
  };
  // "tc_vec <p>0a<init>, <p>0b<init>, ..., <p>{R-1}b<init>;": each row's two vector registers.
  auto registers = [&](const std::string& p, const std::string& init) {
    std::string d = "tc_vec";
    for (std::int64_t r = 0; r < R; ++r) d += std::string(r ? "," : "") + " " + p + S(r) + "a" + init + ", " + p + S(r) + "b" + init;
    return d + ";";
  };
  // The loop over (batch, block of rows); printed once or, for a symbolic variant, twice (below).
  auto emit_loop = [&](SourceWriter& out) {
    out.line("for (int64_t w = 0; w < " + (symbolic ? S(nb) + " * " + BLOCKS : S(nb * blocks)) + "; ++w) {");
    out.indent();
    out.line("const int64_t i0 = (w % " + BLOCKS + ") * " + S(BR) + ";");
    out.line("const int64_t i1 = i0 + " + S(BR) + " < " + S(L) + " ? i0 + " + S(BR) + " : " + S(L) + ";");
    out.line("const int64_t nr = i1 - i0;  // rows of this block; the row groups pad it to a multiple of " + S(R));
    out.line("int64_t oq = 0, ok = 0, ov = 0, om = 0, rest = w / " + BLOCKS + ";");
    out.line("(void)om; (void)rest;");
    for (const std::string& l : loops::batch_offset_statements(p, "int64_t", "rest", "x", "oq", "ok", "ov", "om", S))
      out.line(l);
    out.line(T + " m_run[" + S(BR) + "], l_run[" + S(BR) + "], corr[" + S(BR) + "];");
    if (on_stack) {
      out.line(T + " acc[" + S(BR) + "][" + S(Ev) + "], s[" + S(BR) + "][" + S(TS) + "], kt[" + S(E) + "][" + S(TS) + "];");
      if (half) out.line(T + " vt[" + S(TS) + "][" + S(Ev) + "];");
    } else {  // huge head sizes: the tiles on the heap, once per work item
      out.line("std::vector<" + T + "> tiles(" + S(local_elems) + ");");
      out.line(T + " (*acc)[" + S(Ev) + "] = reinterpret_cast<" + T + " (*)[" + S(Ev) + "]>(tiles.data());");
      out.line(T + " (*s)[" + S(TS) + "] = reinterpret_cast<" + T + " (*)[" + S(TS) + "]>(tiles.data() + " + S(BR * Ev) + ");");
      out.line(T + " (*kt)[" + S(TS) + "] = reinterpret_cast<" + T + " (*)[" + S(TS) + "]>(tiles.data() + " +
               S(BR * Ev + BR * TS) + ");");
      if (half)
        out.line(T + " (*vt)[" + S(Ev) + "] = reinterpret_cast<" + T + " (*)[" + S(Ev) + "]>(tiles.data() + " +
                 S(BR * Ev + BR * TS + E * TS) + ");");
    }
    out.line("bool skip[" + S(BR) + "];  // the row takes nothing from this tile: its state stays as it is");
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
    out.line("const int64_t njp = (nj + " + S(KG - 1) + ") / " + S(KG) + " * " + S(KG) + ";  // whole key groups");
    out.comment("the key tile, transposed and zero-padded to njp: kt[e][jj] = k[j0 + jj][e]");
    out.line("for (int64_t jj = 0; jj < nj; ++jj)");
    out.line("  for (int64_t e = 0; e < " + S(E) + "; ++e) kt[e][jj] = ak[ok + (j0 + jj) * " + S(E) + " + e];");
    out.line("for (int64_t jj = nj; jj < njp; ++jj)");
    out.line("  for (int64_t e = 0; e < " + S(E) + "; ++e) kt[e][jj] = 0;");
    if (half) {
      out.comment("the value tile in float: vt[jj][e] = v[j0 + jj][e]");
      out.line("for (int64_t jj = 0; jj < nj; ++jj)");
      out.line("  for (int64_t e = 0; e < " + S(Ev) + "; ++e) vt[jj][e] = av[ov + (j0 + jj) * " + S(Ev) + " + e];");
    }
    // Scores of R rows x KG keys per step, over e; padding rows read the block's last row.
    out.comment("scores s[r][jj] = q[i0 + r] . k[j0 + jj], " + S(R) + " rows x " + S(KG) + " keys in registers");
    out.line("for (int64_t r0 = 0; r0 < nr; r0 += " + S(R) + ") {");
    out.indent();
    each_row(out, [&](std::int64_t r) {
      return "const " + ST + "* __restrict q" + S(r) + " = aq + oq + (i0 + (r0 + " + S(r) + " < nr ? r0 + " + S(r) +
             " : nr - 1)) * " + S(E) + ";";
    });
    out.line("for (int64_t jv = 0; jv < njp; jv += " + S(KG) + ") {");
    out.indent();
    out.line(registers("c", " = {}"));
    out.line("for (int64_t e = 0; e < " + S(E) + "; ++e) {");
    out.line("  tc_vec ka, kb;");
    out.line("  " + load("ka", "&kt[e][jv]"));
    out.line("  " + load("kb", "&kt[e][jv + " + S(LN) + "]"));
    for (std::int64_t r = 0; r < R; ++r)
      out.line("  { const " + T + " x = q" + S(r) + "[e]; c" + S(r) + "a += x * ka; c" + S(r) + "b += x * kb; }");
    out.line("}");
    each_row(out, [&](std::int64_t r) {
      return store("&s[r0 + " + S(r) + "][jv]", "c" + S(r) + "a") + " " +
             store("&s[r0 + " + S(r) + "][jv + " + S(LN) + "]", "c" + S(r) + "b");
    });
    out.dedent();
    out.line("}");
    out.dedent();
    out.line("}");
    // Online softmax, row by row, as before: scale, mask, the tile's max (NaN-propagating, as amax in the loop
    // nests), the rescale of the running state.
    out.line("for (int64_t r = 0; r < " + S(BR) + "; ++r) skip[r] = true, corr[r] = 1;");
    out.line("for (int64_t r = 0; r < nr; ++r) {");
    out.indent();
    out.line("const int64_t i = i0 + r;");
    if (causal) out.line("if (j0 > i) continue;  // the whole tile is above this row's diagonal");
    out.line(T + "* __restrict sr = s[r];");
    out.line(T + " tmax = " + NEG_INF + ";");
    out.line("int tnan = 0;");
    out.line("#pragma omp simd reduction(max:tmax) reduction(|:tnan)");
    out.line("for (int64_t jj = 0; jj < nj; ++jj) {");
    out.indent();
    out.line(T + " x = sr[jj] * " + lit(scale, d) + ";");
    if (causal) out.line("x = j0 + jj > i ? " + NEG_INF + " : x;");
    if (has_mask) {
      std::string at = "am[om + i * " + S(mask_row) + " + (j0 + jj) * " + S(mask_col) + "]";
      if (mask_dtype == DType::Bool) out.line("x = " + at + " ? x : " + NEG_INF + ";");
      else out.line("x += " + at + ";");
    }
    out.line("sr[jj] = x;");
    out.line("tnan |= x != x;");
    out.line("tmax = tmax > x ? tmax : x;");
    out.dedent();
    out.line("}");
    out.line("if (tnan) tmax = " + lit(NAN, d) + ";");
    out.line("const " + T + " m_new = (m_run[r] > tmax || m_run[r] != m_run[r]) ? m_run[r] : tmax;");
    out.line("if (m_new == " + NEG_INF + ") continue;  // every key so far masked: nothing to add yet");
    out.line("corr[r] = " + exp_fn + "(m_run[r] - m_new);  // 0 for the first unmasked tile");
    out.line(T + " psum = 0;");
    out.line("#pragma omp simd reduction(+:psum)");
    out.line("for (int64_t jj = 0; jj < nj; ++jj) {");
    out.line("  const " + T + " p = " + exp_fn + "(sr[jj] - m_new);");
    out.line("  sr[jj] = p;");
    out.line("  psum += p;");
    out.line("}");
    out.line("l_run[r] = l_run[r] * corr[r] + psum;");
    out.line("m_run[r] = m_new;");
    out.line("skip[r] = false;");
    out.dedent();
    out.line("}");
    // acc = acc * corr + p . V, R rows x KG value columns per step, over the tile's keys; a skipped row's
    // registers are computed with the others and not stored.
    const std::int64_t EvG = Ev - Ev % KG;
    out.comment("acc[r] = acc[r] * corr[r] + sum_jj s[r][jj] * v[j0 + jj], " + S(R) + " rows x " + S(KG) +
                " columns in registers");
    out.line("for (int64_t r0 = 0; r0 < nr; r0 += " + S(R) + ") {");
    out.indent();
    {
      std::string all = "if (skip[r0]";
      for (std::int64_t r = 1; r < R; ++r) all += " && skip[r0 + " + S(r) + "]";
      out.line(all + ") continue;");
    }
    if (EvG > 0) {
      out.line("for (int64_t e0 = 0; e0 < " + S(EvG) + "; e0 += " + S(KG) + ") {");
      out.indent();
      out.line(registers("a", ""));
      each_row(out, [&](std::int64_t r) {
        const std::string row = "acc[r0 + " + S(r) + "]";
        return load("a" + S(r) + "a", "&" + row + "[e0]") + " " + load("a" + S(r) + "b", "&" + row + "[e0 + " + S(LN) + "]") +
               " a" + S(r) + "a *= corr[r0 + " + S(r) + "]; a" + S(r) + "b *= corr[r0 + " + S(r) + "];";
      });
      out.line("for (int64_t jj = 0; jj < nj; ++jj) {");
      out.line("  const " + T + "* __restrict vj = " + (half ? "vt[jj] + e0;" : "av + ov + (j0 + jj) * " + S(Ev) + " + e0;"));
      out.line("  tc_vec va, vb;");
      out.line("  " + load("va", "vj"));
      out.line("  " + load("vb", "vj + " + S(LN)));
      for (std::int64_t r = 0; r < R; ++r)
        out.line("  { const " + T + " x = s[r0 + " + S(r) + "][jj]; a" + S(r) + "a += x * va; a" + S(r) + "b += x * vb; }");
      out.line("}");
      each_row(out, [&](std::int64_t r) {
        const std::string row = "acc[r0 + " + S(r) + "]";
        return "if (!skip[r0 + " + S(r) + "]) { " + store("&" + row + "[e0]", "a" + S(r) + "a") + " " +
               store("&" + row + "[e0 + " + S(LN) + "]", "a" + S(r) + "b") + " }";
      });
      out.dedent();
      out.line("}");
    }
    if (EvG < Ev) {
      out.line("for (int64_t r = r0; r < r0 + " + S(R) + " && r < nr; ++r) {");
      out.line("  if (skip[r]) continue;");
      out.line("  for (int64_t e = " + S(EvG) + "; e < " + S(Ev) + "; ++e) {");
      out.line("    " + T + " a = acc[r][e] * corr[r];");
      out.line("    for (int64_t jj = 0; jj < nj; ++jj) a += s[r][jj] * " +
               (half ? std::string("vt[jj][e];") : "av[ov + (j0 + jj) * " + S(Ev) + " + e];"));
      out.line("    acc[r][e] = a;");
      out.line("  }");
      out.line("}");
    }
    out.dedent();
    out.line("}");
    out.dedent();
    out.line("}");
    out.comment("normalize; l = 0 (every key masked) gives 0 / 0 = NaN, as softmax of a row of -inf");
    out.line("for (int64_t i = i0; i < i1; ++i) {");
    out.line("  " + ST + "* __restrict oi = ao + (w / " + BLOCKS + ") * " + S(L * Ev) + " + i * " + S(Ev) + ";");
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
