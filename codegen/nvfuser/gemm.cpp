// Text generators for float32 GEMM and conv2d CUDA kernels. Design notes: gemm.h.
//
// Naming inside the generated text: every local of a kernel ends in '_' (tid_, m0_, accum_, ...) and so do the
// pointer parameters (c_, a_, b_ / out_, in_, w_), so extra parameters and epilogue variables (acc, out, b, m,
// n, k, oh, ow, bias, ...) never collide with them. Constants are `constexpr` locals of the kernel and helpers
// are lambdas, so nothing is defined at namespace scope except the kernel itself.
#include "codegen/nvfuser/gemm.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace thunderc::cuda {
namespace {

constexpr long long kNumSMs = 132;  // H200 (sm_90); A100 has 108: the same choices are fine there
constexpr int kSmallMax = 8;        // min(M, N) up to this uses the small (GEMV-like) path

std::string L(long long v) { return std::to_string(v) + "LL"; }
std::string I(long long v) { return std::to_string(v); }
long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
unsigned clamp_grid(long long v, long long max) { return static_cast<unsigned>(std::max(1LL, std::min(v, max))); }

std::string param_list(const std::vector<std::string>& params) {
  std::string s;
  for (std::size_t i = 0; i < params.size(); ++i) s += (i ? ",\n    " : "") + params[i];
  return s;
}

// Indents every line of `text` by `indent` spaces (for user epilogues spliced into the kernel).
std::string indented(const std::string& text, int indent) {
  std::string out, pad(indent, ' ');
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += pad + line + "\n";
  return out;
}

void check_name(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    throw std::invalid_argument("cuda kernel name must be a C identifier: '" + name + "'");
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
      throw std::invalid_argument("cuda kernel name must be a C identifier: '" + name + "'");
}

// ---------------------------------------------------------------------------------------------------------
// The tiled kernel, shared by GEMM and implicit-GEMM convolution.

struct TileConfig {
  int bm, bn, bk, tm, tn;
  int threads() const { return (bm / tm) * (bn / tn); }
};
const TileConfig kTile128{128, 128, 8, 8, 8};  // 256 threads, 64 accumulators per thread
const TileConfig kTile64{64, 64, 16, 4, 4};    // 256 threads, 16 accumulators per thread
const TileConfig kTile32{32, 32, 16, 4, 4};    //  64 threads, 16 accumulators per thread

TileConfig pick_tile(long long batch, long long M, long long N, int forced) {
  if (forced == 128) return kTile128;
  if (forced == 64) return kTile64;
  if (forced == 32) return kTile32;
  if (forced != 0) throw std::invalid_argument("gemm tile must be 0 (by shape), 32, 64 or 128");
  // A larger tile needs enough blocks to fill every SM and little padding (>= 75% of the tile's outputs real);
  // otherwise the 32x32 tile (most blocks, least padding).
  auto blocks = [&](const TileConfig& t) { return ceil_div(M, t.bm) * ceil_div(N, t.bn) * batch; };
  auto used = [&](const TileConfig& t) {
    return static_cast<double>(M) * static_cast<double>(N) /
           (static_cast<double>(ceil_div(M, t.bm) * t.bm) * static_cast<double>(ceil_div(N, t.bn) * t.bn));
  };
  for (const TileConfig* t : {&kTile128, &kTile64})
    if (blocks(*t) >= kNumSMs && used(*t) >= 0.75) return *t;
  return kTile32;
}

struct ConvGeometry {
  long long C, H, W, K, R, S, OH, OW, sh, sw, ph, pw, dh, dw, groups;
};

struct TiledProblem {
  std::string name;
  std::vector<std::string> params;
  long long batch, M, N, K;
  // A[m][k]: strided (a_ptr + bz*a_batch + m*a_row + k*a_col), or gathered from an NCHW input (conv).
  std::string a_ptr;
  long long a_batch = 0, a_row = 0, a_col = 0;
  bool a_gather = false;
  ConvGeometry conv{};
  // B[k][n]: strided.
  std::string b_ptr;
  long long b_batch = 0, b_row = 0, b_col = 0;
  // Output: c_ptr[c_offset] with c_offset an expression in bz_, m_, n_; epilogue_decls declares the
  // epilogue's index variables from bz_, m_, n_.
  std::string c_ptr, c_offset, epilogue_decls, epilogue;
  bool m_fast = false;  // threads adjacent in m (output contiguous along m)
  TileConfig tile;
  std::string what;  // one line for the header comment
  std::string elem = "float";  // element type of A, B and C in memory (arithmetic is float)
};

// Emits the global->register loads (`load_`) and register->shared stores (`store_`) of one operand tile.
// `rows` is the tile extent of the operand's non-k dimension (BM for A, BN for B).
struct OperandLoad {
  std::string load, store, comment;
  int regs = 0;
};

OperandLoad strided_operand(const char* op, const std::string& ptr, int rows, int bk, int threads,
                            long long extent, long long K, long long batch_stride, long long row_stride,
                            long long k_stride, long long batch, const std::string& row0, bool float_elems) {
  // Which dimension threads run along: the one with stride 1 (k first; an operand with neither gets k).
  const bool k_fast = k_stride == 1 || row_stride != 1;
  const long long contiguous_extent = k_fast ? K : extent;
  const long long other_stride = k_fast ? row_stride : k_stride;
  const int cols = k_fast ? bk : rows;  // contiguous tile extent
  bool vec = float_elems && (k_fast ? k_stride : row_stride) == 1 && contiguous_extent % 4 == 0 &&
             (other_stride % 4 == 0 || (k_fast ? extent : K) <= 1) && (batch <= 1 || batch_stride % 4 == 0) &&
             cols % 4 == 0 && (rows * bk) % (4 * threads) == 0;
  const int V = vec ? 4 : 1;
  const int per_thread = rows * bk / (V * threads);
  if (per_thread * V * threads != rows * bk) throw std::logic_error("gemm: tile not divisible by threads");
  const std::string r = std::string(op) + "r_", s = std::string(op) + "s_";
  const std::string row_name = std::string(op) == "a" ? "m" : "n";
  std::ostringstream ld, st;
  // index decomposition: i_ = tid_ + j_*threads over (rows x bk) / V groups
  std::string decomp = "const int i_ = tid_ + j_ * " + I(threads) + ";\n";
  if (k_fast)
    decomp += "        const int kl_ = (i_ % " + I(bk / V) + ") * " + I(V) + ", rl_ = i_ / " + I(bk / V) + ";\n";
  else
    decomp += "        const int rl_ = (i_ % " + I(rows / V) + ") * " + I(V) + ", kl_ = i_ / " + I(rows / V) + ";\n";
  // 32-bit offsets when every element of the operand (in one batch) is within reach: fewer registers
  const bool narrow = (extent - 1) * std::llabs(row_stride) + (K - 1) * std::llabs(k_stride) < INT_MAX;
  const std::string idx = narrow ? "int" : "long long";
  auto lit = [&](long long v) { return narrow ? I(v) : L(v); };
  ld << "      #pragma unroll\n      for (int j_ = 0; j_ < " << per_thread << "; ++j_) {\n        " << decomp
     << "        const " << idx << " r_ = " << row0 << " + rl_, k_ = k0_ + kl_;\n"
     << "        const bool in_ = r_ < " << lit(extent) << " && k_ < " << lit(K) << ";\n";
  if (V == 4) {
    ld << "        float4 v_ = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
       << "        if (in_) v_ = *reinterpret_cast<const float4*>(" << ptr << " + r_ * " << lit(row_stride)
       << " + k_ * " << lit(k_stride) << ");\n"
       << "        " << r << "[4 * j_ + 0] = v_.x; " << r << "[4 * j_ + 1] = v_.y; " << r << "[4 * j_ + 2] = v_.z; "
       << r << "[4 * j_ + 3] = v_.w;\n";
  } else {
    ld << "        " << r << "[j_] = in_ ? static_cast<float>(" << ptr << "[r_ * " << lit(row_stride) << " + k_ * "
       << lit(k_stride) << "]) : 0.0f;\n";
  }
  ld << "      }\n";
  st << "      #pragma unroll\n      for (int j_ = 0; j_ < " << per_thread << "; ++j_) {\n        " << decomp;
  if (V == 4) {
    if (k_fast)
      st << "        #pragma unroll\n        for (int t_ = 0; t_ < 4; ++t_) " << s << "[buf_][kl_ + t_][rl_] = " << r
         << "[4 * j_ + t_];\n";
    else
      st << "        *reinterpret_cast<float4*>(&" << s << "[buf_][kl_][rl_]) = make_float4(" << r << "[4 * j_], "
         << r << "[4 * j_ + 1], " << r << "[4 * j_ + 2], " << r << "[4 * j_ + 3]);\n";
  } else {
    st << "        " << s << "[buf_][kl_][rl_] = " << r << "[j_];\n";
  }
  st << "      }\n";
  OperandLoad out;
  out.load = ld.str();
  out.store = st.str();
  out.regs = per_thread * V;
  out.comment = std::string(op) + ": " + (V == 4 ? "float4" : "scalar") + " loads, threads along " +
                (k_fast ? "k" : row_name) + (k_fast ? (k_stride == 1 ? " (stride 1)" : " (no unit stride)") : " (stride 1)");
  return out;
}

// The A operand of an implicit-GEMM convolution: A[m][q] = in[img][g*Cg + c][oh*sh - ph + r*dh][ow*sw - pw + s*dw]
// with m = (img, oh, ow) and q = (c, r, s); zero outside the image. Threads run along m (adjacent ow are
// adjacent in memory for stride 1); each thread keeps one m for the whole kernel, decomposed once.
OperandLoad gather_operand(const TiledProblem& p) {
  const ConvGeometry& g = p.conv;
  const int bm = p.tile.bm, bk = p.tile.bk, threads = p.tile.threads();
  if (threads % bm != 0) throw std::logic_error("conv: threads must be a multiple of BM");
  const int per_thread = bm * bk / threads, kstep = threads / bm;
  const long long rs = g.R * g.S, hw = g.H * g.W;
  std::ostringstream ld, st;
  ld << "      #pragma unroll\n      for (int j_ = 0; j_ < " << per_thread << "; ++j_) {\n"
     << "        const int q_ = k0_ + gk_ + j_ * " << kstep << ";\n"
     << "        float v_ = 0.0f;\n"
     << "        if (gvalid_ && q_ < " << I(p.K) << ") {\n"
     << "          const int c_ = q_ / " << I(rs) << ", rs_ = q_ % " << I(rs) << ";\n"
     << "          const int ih_ = gih0_ + (rs_ / " << I(g.S) << ") * " << I(g.dh) << ";\n"
     << "          const int iw_ = giw0_ + (rs_ % " << I(g.S) << ") * " << I(g.dw) << ";\n"
     << "          if (ih_ >= 0 && ih_ < " << I(g.H) << " && iw_ >= 0 && iw_ < " << I(g.W) << ")\n"
     << "            v_ = gin_[c_ * " << (g.C / g.groups * hw < INT_MAX ? I(hw) : L(hw)) << " + ih_ * " << I(g.W) << " + iw_];\n"
     << "        }\n"
     << "        ar_[j_] = v_;\n"
     << "      }\n";
  st << "      #pragma unroll\n      for (int j_ = 0; j_ < " << per_thread << "; ++j_) as_[buf_][gk_ + j_ * " << kstep
     << "][gm_l_] = ar_[j_];\n";
  OperandLoad out;
  out.load = ld.str();
  out.store = st.str();
  out.regs = per_thread;
  out.comment = "a: gathered from the input image (implicit im2col, zero padding), threads along m";
  // the per-thread prologue (gvalid_, gih0_, giw0_, gin_) is emitted by tiled_kernel: it needs bz_
  return out;
}

KernelLaunch tiled_kernel(const TiledProblem& p) {
  const TileConfig& t = p.tile;
  const int threads = t.threads();
  const int tm_groups = t.tm / 4, tn_groups = t.tn / 4;  // micro-tile = groups of 4 rows/cols, spread out
  const int m_span = t.bm / tm_groups, n_span = t.bn / tn_groups;
  const int m_threads = t.bm / t.tm, n_threads = t.bn / t.tn;
  const int pad = 4;  // keeps rows 16-byte aligned and spreads the transposed stores over banks

  OperandLoad a = p.a_gather ? gather_operand(p)
                             : strided_operand("a", "az_", t.bm, t.bk, threads, p.M, p.K, p.a_batch, p.a_row,
                                               p.a_col, p.batch, "m0_", p.elem == "float");
  OperandLoad b = strided_operand("b", "bz_ptr_", t.bn, t.bk, threads, p.N, p.K, p.b_batch, p.b_col, p.b_row,
                                  p.batch, "n0_", p.elem == "float");

  std::ostringstream o;
  o << "// ---- " << p.name << ": tiled SGEMM (FP32, CUDA cores) ----\n"
    << "// " << p.what << "\n"
    << "// batch " << p.batch << ", M " << p.M << ", N " << p.N << ", K " << p.K << ". Block tile " << t.bm << "x"
    << t.bn << ", BK " << t.bk << ", " << threads << " threads, " << t.tm << "x" << t.tn
    << " micro-tile per thread (the largest\n"
    << "// tile that still gives >= " << kNumSMs << " blocks, else the smallest). Register-staged double buffering:"
    << " the next k-tile is\n"
    << "// loaded into registers while the current one is multiplied out of shared memory; one __syncthreads per"
    << " k-tile.\n"
    << "// " << a.comment << "; " << b.comment << ".\n"
    << "// Each output sums k in natural order with fmaf; threads adjacent in " << (p.m_fast ? "m" : "n")
    << " (the output's contiguous dimension).\n"
    << "extern \"C\" __global__ void __launch_bounds__(" << threads << (t.bm == 128 && !p.a_gather ? ", 2" : "") << ") "
    << p.name << "(\n    " << param_list(p.params) << ") {\n"
    << "  constexpr int BM_ = " << t.bm << ", BN_ = " << t.bn << ", BK_ = " << t.bk << ", TM_ = " << t.tm
    << ", TN_ = " << t.tn << ";\n"
    << "  __shared__ __align__(16) float as_[2][BK_][BM_ + " << pad << "];  // A tile, k-major\n"
    << "  __shared__ __align__(16) float bs_[2][BK_][BN_ + " << pad << "];  // B tile, k-major\n"
    << "  const int tid_ = threadIdx.x;\n";
  if (p.m_fast)
    o << "  const int tm_ = tid_ % " << m_threads << ", tn_ = tid_ / " << m_threads << ";\n";
  else
    o << "  const int tn_ = tid_ % " << n_threads << ", tm_ = tid_ / " << n_threads << ";\n";
  o << "  const int m0_ = blockIdx.x * BM_, n0_ = blockIdx.y * BN_;\n"
    << "  for (long long bz_ = blockIdx.z; bz_ < " << L(p.batch) << "; bz_ += gridDim.z) {\n";
  if (p.a_gather) {
    const ConvGeometry& g = p.conv;
    const long long Cg = g.C / g.groups;
    o << "    // this thread's A row (output pixel) for the whole kernel\n"
      << "    const int gm_l_ = tid_ % BM_, gk_ = tid_ / BM_;\n"
      << "    const int gm_ = m0_ + gm_l_;\n"
      << "    const bool gvalid_ = gm_ < " << L(p.M) << ";\n"
      << "    const int gimg_ = gm_ / " << I(g.OH * g.OW) << ", gp_ = gm_ % " << I(g.OH * g.OW) << ";\n"
      << "    const int gih0_ = (gp_ / " << I(g.OW) << ") * " << I(g.sh) << " - " << I(g.ph) << ";\n"
      << "    const int giw0_ = (gp_ % " << I(g.OW) << ") * " << I(g.sw) << " - " << I(g.pw) << ";\n"
      << "    const " << p.elem << "* gin_ = " << p.a_ptr << " + (long long)gimg_ * " << L(g.C * g.H * g.W) << " + bz_ * "
      << L(Cg * g.H * g.W) << ";\n";
  } else {
    o << "    const " << p.elem << "* az_ = " << p.a_ptr << " + bz_ * " << L(p.a_batch) << ";\n";
  }
  o << "    const " << p.elem << "* bz_ptr_ = " << p.b_ptr << " + bz_ * " << L(p.b_batch) << ";\n"
    << "    float ar_[" << a.regs << "], br_[" << b.regs << "];  // the next k-tile, staged in registers\n"
    << "    auto load_ = [&](int k0_) {\n"
    << a.load << b.load << "    };\n"
    << "    auto store_ = [&](int buf_) {\n"
    << a.store << b.store << "    };\n"
    << "    float accum_[TM_][TN_];\n"
    << "    #pragma unroll\n    for (int i_ = 0; i_ < TM_; ++i_)\n"
    << "      #pragma unroll\n      for (int j_ = 0; j_ < TN_; ++j_) accum_[i_][j_] = 0.0f;\n"
    << "    load_(0);\n    store_(0);\n    __syncthreads();\n"
    << "    int buf_ = 0;\n"
    << "    for (int k0_ = 0; k0_ < " << I(p.K) << "; k0_ += BK_) {\n"
    << "      const bool more_ = k0_ + BK_ < " << I(p.K) << ";\n"
    << "      if (more_) load_(k0_ + BK_);\n"
    << "      #pragma unroll\n"
    << "      for (int kk_ = 0; kk_ < BK_; ++kk_) {\n"
    << "        float fa_[TM_], fb_[TN_];\n"
    << "        #pragma unroll\n"
    << "        for (int g_ = 0; g_ < " << tm_groups << "; ++g_) {\n"
    << "          const float4 v_ = *reinterpret_cast<const float4*>(&as_[buf_][kk_][g_ * " << m_span
    << " + tm_ * 4]);\n"
    << "          fa_[4 * g_] = v_.x; fa_[4 * g_ + 1] = v_.y; fa_[4 * g_ + 2] = v_.z; fa_[4 * g_ + 3] = v_.w;\n"
    << "        }\n"
    << "        #pragma unroll\n"
    << "        for (int g_ = 0; g_ < " << tn_groups << "; ++g_) {\n"
    << "          const float4 v_ = *reinterpret_cast<const float4*>(&bs_[buf_][kk_][g_ * " << n_span
    << " + tn_ * 4]);\n"
    << "          fb_[4 * g_] = v_.x; fb_[4 * g_ + 1] = v_.y; fb_[4 * g_ + 2] = v_.z; fb_[4 * g_ + 3] = v_.w;\n"
    << "        }\n"
    << "        #pragma unroll\n"
    << "        for (int i_ = 0; i_ < TM_; ++i_)\n"
    << "          #pragma unroll\n"
    << "          for (int j_ = 0; j_ < TN_; ++j_) accum_[i_][j_] = fmaf(fa_[i_], fb_[j_], accum_[i_][j_]);\n"
    << "      }\n"
    << "      if (more_) store_(buf_ ^ 1);\n"
    << "      __syncthreads();\n"
    << "      buf_ ^= 1;\n"
    << "    }\n"
    << "    // epilogue: each thread writes its micro-tile\n"
    << "    #pragma unroll\n"
    << "    for (int i_ = 0; i_ < TM_; ++i_) {\n"
    << "      const long long m_ = (long long)m0_ + (i_ / 4) * " << m_span << " + tm_ * 4 + i_ % 4;\n"
    << "      if (m_ >= " << L(p.M) << ") continue;\n"
    << "      #pragma unroll\n"
    << "      for (int j_ = 0; j_ < TN_; ++j_) {\n"
    << "        const long long n_ = (long long)n0_ + (j_ / 4) * " << n_span << " + tn_ * 4 + j_ % 4;\n"
    << "        if (n_ >= " << L(p.N) << ") continue;\n"
    << "        float out_v_;\n"
    << "        {\n"
    << "          const float acc = accum_[i_][j_];\n"
    << "          " << p.epilogue_decls << "\n"
    << "          float out;\n"
    << indented(p.epilogue, 10) << "          out_v_ = out;\n"
    << "        }\n"
    << "        " << p.c_ptr << "[" << p.c_offset << "] = out_v_;\n"
    << "      }\n"
    << "    }\n"
    << "  }\n"
    << "}\n";

  KernelLaunch k;
  k.name = p.name;
  k.source = o.str();
  k.params = p.params;
  k.grid[0] = clamp_grid(ceil_div(p.M, t.bm), INT_MAX);
  k.grid[1] = clamp_grid(ceil_div(p.N, t.bn), 65535);
  k.grid[2] = clamp_grid(p.batch, 65535);
  if (ceil_div(p.N, t.bn) > 65535) throw std::invalid_argument("gemm: N too large for one launch");
  k.block[0] = static_cast<unsigned>(threads);
  k.path = "tiled" + std::to_string(t.bm);
  return k;
}

// ---------------------------------------------------------------------------------------------------------
// The small path: one small dimension S (<= 8) kept whole per thread, the large dimension L spread over
// warps/threads. V[s][k] is the small operand, W[k][l] the large one.

struct SmallProblem {
  std::string name;
  std::vector<std::string> params;
  long long batch, S, L, K;
  std::string v_ptr, w_ptr, c_ptr;
  long long v_batch, v_s, v_k, w_batch, w_k, w_l;
  std::string elem = "float";  // element type in memory, as TiledProblem::elem
  std::string epilogue_decls;  // from bz_, s_, l_
  std::string c_offset;        // expression in bz_, s_, l_
  std::string epilogue;
  std::string what;
};

std::string small_epilogue(const SmallProblem& p, const std::string& acc_expr, int indent) {
  std::string pad(indent, ' ');
  std::ostringstream o;
  o << pad << "{\n"
    << pad << "  float out_v_;\n"
    << pad << "  {\n"
    << pad << "    const float acc = " << acc_expr << ";\n"
    << pad << "    " << p.epilogue_decls << "\n"
    << pad << "    float out;\n"
    << indented(p.epilogue, indent + 4) << pad << "    out_v_ = out;\n"
    << pad << "  }\n"
    << pad << "  " << p.c_ptr << "[" << p.c_offset << "] = out_v_;\n"
    << pad << "}\n";
  return o.str();
}

// One warp per (batch, l); lanes stride over k (W contiguous along k); shuffle reduction.
KernelLaunch small_warp_dot(const SmallProblem& p) {
  const bool vec = p.elem == "float" && p.w_k == 1 && p.v_k == 1 && p.K % 4 == 0 && (p.L <= 1 || p.w_l % 4 == 0) &&
                   (p.S <= 1 || p.v_s % 4 == 0) && (p.batch <= 1 || (p.w_batch % 4 == 0 && p.v_batch % 4 == 0));
  const int warps = 8;
  std::ostringstream o;
  o << "// ---- " << p.name << ": small GEMM, warp-dot (FP32, CUDA cores) ----\n"
    << "// " << p.what << "\n"
    << "// batch " << p.batch << ", small dimension " << p.S << ", large dimension " << p.L << ", K " << p.K
    << ". One warp per (batch, large index): the\n"
    << "// " << p.S << " small-dimension outputs stay in registers, lanes stride over k ("
    << (vec ? "float4 loads, 128 k per warp step" : "scalar loads, 32 k per warp step")
    << "), so every element of the large\n"
    << "// operand is read once, coalesced; a warp-shuffle reduction sums the 32 lane partials.\n"
    << "extern \"C\" __global__ void __launch_bounds__(" << warps * 32 << ") " << p.name << "(\n    "
    << param_list(p.params) << ") {\n"
    << "  const long long warp_ = (long long)blockIdx.x * " << warps << " + threadIdx.x / 32;\n"
    << "  const int lane_ = threadIdx.x % 32;\n"
    << "  if (warp_ >= " << L(p.batch * p.L) << ") return;  // whole warps only\n"
    << "  const long long bz_ = warp_ / " << L(p.L) << ", l_ = warp_ % " << L(p.L) << ";\n"
    << "  const " << p.elem << "* w_row_ = " << p.w_ptr << " + bz_ * " << L(p.w_batch) << " + l_ * " << L(p.w_l) << ";\n"
    << "  const " << p.elem << "* v_ptr_ = " << p.v_ptr << " + bz_ * " << L(p.v_batch) << ";\n"
    << "  float accum_[" << p.S << "];\n"
    << "  #pragma unroll\n  for (int s_ = 0; s_ < " << p.S << "; ++s_) accum_[s_] = 0.0f;\n";
  if (vec) {
    o << "  for (long long k4_ = lane_; k4_ < " << L(p.K / 4) << "; k4_ += 32) {\n"
      << "    const float4 w_ = *reinterpret_cast<const float4*>(w_row_ + 4 * k4_);\n"
      << "    #pragma unroll\n"
      << "    for (int s_ = 0; s_ < " << p.S << "; ++s_) {\n"
      << "      const float4 v_ = *reinterpret_cast<const float4*>(v_ptr_ + s_ * " << L(p.v_s) << " + 4 * k4_);\n"
      << "      accum_[s_] = fmaf(v_.x, w_.x, accum_[s_]);\n"
      << "      accum_[s_] = fmaf(v_.y, w_.y, accum_[s_]);\n"
      << "      accum_[s_] = fmaf(v_.z, w_.z, accum_[s_]);\n"
      << "      accum_[s_] = fmaf(v_.w, w_.w, accum_[s_]);\n"
      << "    }\n"
      << "  }\n";
  } else {
    o << "  for (long long k_ = lane_; k_ < " << L(p.K) << "; k_ += 32) {\n"
      << "    const float w_ = w_row_[k_ * " << L(p.w_k) << "];\n"
      << "    #pragma unroll\n"
      << "    for (int s_ = 0; s_ < " << p.S << "; ++s_) accum_[s_] = fmaf(v_ptr_[s_ * " << L(p.v_s) << " + k_ * "
      << L(p.v_k) << "], w_, accum_[s_]);\n"
      << "  }\n";
  }
  o << "  #pragma unroll\n"
    << "  for (int s_ = 0; s_ < " << p.S << "; ++s_)\n"
    << "    #pragma unroll\n"
    << "    for (int off_ = 16; off_ > 0; off_ >>= 1) accum_[s_] += __shfl_xor_sync(0xffffffffu, accum_[s_], off_);\n"
    << "  if (lane_ != 0) return;\n"
    << "  #pragma unroll\n"
    << "  for (int s_ = 0; s_ < " << p.S << "; ++s_)\n"
    << small_epilogue(p, "accum_[s_]", 4) << "}\n";
  KernelLaunch k;
  k.name = p.name;
  k.source = o.str();
  k.params = p.params;
  k.grid[0] = clamp_grid(ceil_div(p.batch * p.L, warps), INT_MAX);
  k.block[0] = warps * 32;
  k.path = vec ? "warp_dot4" : "warp_dot";
  return k;
}

// 32 large-dimension outputs x 8 k-slices per block (W contiguous along l): coalesced loads across the 32
// threads of a warp; the 8 slice partials are added through shared memory.
KernelLaunch small_slice(const SmallProblem& p) {
  const int lanes = 32, slices = 8;
  std::ostringstream o;
  o << "// ---- " << p.name << ": small GEMM, k-sliced (FP32, CUDA cores) ----\n"
    << "// " << p.what << "\n"
    << "// batch " << p.batch << ", small dimension " << p.S << ", large dimension " << p.L << ", K " << p.K
    << ". Block = " << lanes << " large-dimension outputs x " << slices << " k-slices:\n"
    << "// each thread keeps the " << p.S << " small-dimension outputs of its column in registers and sums k = slice,"
    << " slice + " << slices << ", ...;\n"
    << "// warps read " << lanes << " adjacent elements of the large operand per k (coalesced); the " << slices
    << " partials are added in shared memory.\n"
    << "extern \"C\" __global__ void __launch_bounds__(" << lanes * slices << ") " << p.name << "(\n    "
    << param_list(p.params) << ") {\n"
    << "  __shared__ float red_[" << slices << "][" << p.S << "][" << lanes << "];\n"
    << "  const int tid_ = threadIdx.x, lx_ = tid_ % " << lanes << ", ks_ = tid_ / " << lanes << ";\n"
    << "  for (long long bz_ = blockIdx.y; bz_ < " << L(p.batch) << "; bz_ += gridDim.y) {\n"
    << "    const long long l_ = (long long)blockIdx.x * " << lanes << " + lx_;\n"
    << "    float accum_[" << p.S << "];\n"
    << "    #pragma unroll\n    for (int s_ = 0; s_ < " << p.S << "; ++s_) accum_[s_] = 0.0f;\n"
    << "    if (l_ < " << L(p.L) << ") {\n"
    << "      const " << p.elem << "* w_col_ = " << p.w_ptr << " + bz_ * " << L(p.w_batch) << " + l_ * " << L(p.w_l) << ";\n"
    << "      const " << p.elem << "* v_ptr_ = " << p.v_ptr << " + bz_ * " << L(p.v_batch) << ";\n"
    << "      for (long long k_ = ks_; k_ < " << L(p.K) << "; k_ += " << slices << ") {\n"
    << "        const float w_ = w_col_[k_ * " << L(p.w_k) << "];\n"
    << "        #pragma unroll\n"
    << "        for (int s_ = 0; s_ < " << p.S << "; ++s_) accum_[s_] = fmaf(v_ptr_[s_ * " << L(p.v_s)
    << " + k_ * " << L(p.v_k) << "], w_, accum_[s_]);\n"
    << "      }\n"
    << "    }\n"
    << "    #pragma unroll\n    for (int s_ = 0; s_ < " << p.S << "; ++s_) red_[ks_][s_][lx_] = accum_[s_];\n"
    << "    __syncthreads();\n"
    << "    if (tid_ < " << p.S * lanes << ") {\n"
    << "      const int s_ = tid_ / " << lanes << ";\n"
    << "      const long long l_ = (long long)blockIdx.x * " << lanes << " + lx_;\n"
    << "      if (l_ < " << L(p.L) << ") {\n"
    << "        float sum_ = red_[0][s_][lx_];\n"
    << "        #pragma unroll\n"
    << "        for (int q_ = 1; q_ < " << slices << "; ++q_) sum_ += red_[q_][s_][lx_];\n"
    << small_epilogue(p, "sum_", 8) << "      }\n"
    << "    }\n"
    << "    __syncthreads();\n"
    << "  }\n"
    << "}\n";
  KernelLaunch k;
  k.name = p.name;
  k.source = o.str();
  k.params = p.params;
  k.grid[0] = clamp_grid(ceil_div(p.L, lanes), INT_MAX);
  k.grid[1] = clamp_grid(p.batch, 65535);
  k.block[0] = lanes * slices;
  k.path = "slice";
  return k;
}

KernelLaunch empty_kernel(const std::string& name, const std::vector<std::string>& params, const char* why) {
  KernelLaunch k;
  k.name = name;
  k.params = params;
  k.source = "// ---- " + name + ": " + why + " (nothing to compute) ----\nextern \"C\" __global__ void " + name +
             "(\n    " + param_list(params) + ") {}\n";
  k.block[0] = 32;
  k.path = "empty";
  return k;
}

void check_elem(const std::string& e) {
  if (e != "float" && e != "thunderc_f16" && e != "thunderc_bf16")
    throw std::invalid_argument("gemm: element type must be float, thunderc_f16 or thunderc_bf16, got " + e);
}

void check_gemm(const GemmSpec& s) {
  if (s.batch < 0 || s.M < 0 || s.N < 0 || s.K < 0) throw std::invalid_argument("gemm: negative size");
  if (s.K > INT_MAX - 256 || s.M > INT_MAX - 256 || s.N > INT_MAX - 256)
    throw std::invalid_argument("gemm: sizes too large for one kernel");
}

// GEMM with explicit pointer names (the conv 1x1 case reuses it with conv's parameter list).
KernelLaunch gemm_impl(const std::string& name, const GemmSpec& s, std::vector<std::string> params,
                       const std::string& c_ptr, const std::string& a_ptr, const std::string& b_ptr,
                       const std::string& epilogue_decls, const std::string& what, int forced_tile) {
  check_name(name);
  check_gemm(s);
  for (const auto& e : s.extra_params) params.push_back(e);
  if (s.batch == 0 || s.M == 0 || s.N == 0) return empty_kernel(name, params, "empty output");
  const long long small = std::min(s.M, s.N);
  if (forced_tile == 0 && small <= kSmallMax) {
    SmallProblem p;
    p.name = name;
    p.params = params;
    p.batch = s.batch;
    p.K = s.K;
    p.epilogue = s.epilogue;
    p.what = what;
    p.elem = s.elem;
    if (s.M <= s.N) {  // V = A (rows m), W = B (columns n)
      p.S = s.M, p.L = s.N;
      p.v_ptr = a_ptr, p.w_ptr = b_ptr;
      p.v_batch = s.a_batch, p.v_s = s.a_row, p.v_k = s.a_col;
      p.w_batch = s.b_batch, p.w_k = s.b_row, p.w_l = s.b_col;
      p.epilogue_decls = "const long long bz_e_ = bz_, m_ = s_, n_ = l_; " + epilogue_decls;
    } else {  // C^T = B^T A^T: V = B^T (rows n), W = A^T (columns m)
      p.S = s.N, p.L = s.M;
      p.v_ptr = b_ptr, p.w_ptr = a_ptr;
      p.v_batch = s.b_batch, p.v_s = s.b_col, p.v_k = s.b_row;
      p.w_batch = s.a_batch, p.w_k = s.a_col, p.w_l = s.a_row;
      p.epilogue_decls = "const long long bz_e_ = bz_, m_ = l_, n_ = s_; " + epilogue_decls;
    }
    p.c_offset = "bz_ * " + L(s.c_batch) + " + " + (s.M <= s.N ? "s_" : "l_") + " * " + L(s.c_row) + " + " +
                 (s.M <= s.N ? "l_" : "s_") + " * " + L(s.c_col);
    p.c_ptr = c_ptr;
    // warp-dot when W is contiguous along k (linear's weight with M small), or when nothing is contiguous
    if (p.w_k == 1 || p.w_l != 1) return small_warp_dot(p);
    return small_slice(p);
  }
  TiledProblem p;
  p.name = name;
  p.params = params;
  p.batch = s.batch, p.M = s.M, p.N = s.N, p.K = s.K;
  p.a_ptr = a_ptr, p.a_batch = s.a_batch, p.a_row = s.a_row, p.a_col = s.a_col;
  p.b_ptr = b_ptr, p.b_batch = s.b_batch, p.b_row = s.b_row, p.b_col = s.b_col;
  p.c_ptr = c_ptr;
  p.c_offset = "bz_ * " + L(s.c_batch) + " + m_ * " + L(s.c_row) + " + n_ * " + L(s.c_col);
  p.epilogue_decls = "const long long bz_e_ = bz_; " + epilogue_decls;
  p.epilogue = s.epilogue;
  p.m_fast = s.c_row == 1 && s.c_col != 1;
  p.tile = pick_tile(s.batch, s.M, s.N, forced_tile);
  p.what = what;
  p.elem = s.elem;
  return tiled_kernel(p);
}

}  // namespace

KernelLaunch gemm_kernel(const std::string& name, const GemmSpec& spec) {
  check_elem(spec.elem);
  const std::string& E = spec.elem;
  return gemm_impl(name, spec,
                   {E + "* __restrict__ c_", "const " + E + "* __restrict__ a_", "const " + E + "* __restrict__ b_"}, "c_",
                   "a_", "b_", "const long long b = bz_e_, m = m_, n = n_; (void)b; (void)m; (void)n;",
                   "C[b][m][n] = epilogue(sum_k A[b][m][k] * B[b][k][n]); strides A (" + std::to_string(spec.a_batch) +
                       ", " + std::to_string(spec.a_row) + ", " + std::to_string(spec.a_col) + "), B (" +
                       std::to_string(spec.b_batch) + ", " + std::to_string(spec.b_row) + ", " +
                       std::to_string(spec.b_col) + "), C (" + std::to_string(spec.c_batch) + ", " +
                       std::to_string(spec.c_row) + ", " + std::to_string(spec.c_col) + ").",
                   spec.tile);
}

namespace {

KernelLaunch depthwise_kernel(const std::string& name, const Conv2dSpec& s, const std::vector<std::string>& params) {
  const long long total = s.N * s.K * s.OH * s.OW, mult = s.K / s.groups;
  const int threads = 256;
  std::ostringstream o;
  o << "// ---- " << name << ": depthwise conv2d, direct (FP32, CUDA cores) ----\n"
    << "// input [" << s.N << "][" << s.C << "][" << s.H << "][" << s.W << "], weight [" << s.K << "][1][" << s.R
    << "][" << s.S << "], output [" << s.N << "][" << s.K << "][" << s.OH << "][" << s.OW << "]; stride ("
    << s.stride_h << ", " << s.stride_w << "), padding (" << s.pad_h << ", " << s.pad_w << "), dilation ("
    << s.dil_h << ", " << s.dil_w << "), groups " << s.groups << ".\n"
    << "// Each output channel reads one input channel (k / " << mult
    << "): one thread per output element, adjacent threads adjacent in ow\n"
    << "// (coalesced stores, and loads for stride 1); the R x S window is summed in (r, s) order.\n"
    << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << name << "(\n    " << param_list(params)
    << ") {\n"
    << "  const long long idx_ = (long long)blockIdx.x * " << threads << " + threadIdx.x;\n"
    << "  if (idx_ >= " << L(total) << ") return;\n"
    << "  const int ow_ = (int)(idx_ % " << L(s.OW) << ");\n"
    << "  const int oh_ = (int)((idx_ / " << L(s.OW) << ") % " << L(s.OH) << ");\n"
    << "  const long long nk_ = idx_ / " << L(s.OH * s.OW) << ";  // n * K + k\n"
    << "  const long long k_ = nk_ % " << L(s.K) << ", n_ = nk_ / " << L(s.K) << ";\n"
    << "  const " << s.elem << "* in_c_ = in_ + (n_ * " << L(s.C) << " + k_ / " << L(mult) << ") * " << L(s.H * s.W) << ";\n"
    << "  const " << s.elem << "* w_k_ = w_ + k_ * " << L(s.R * s.S) << ";\n"
    << "  const int ih0_ = oh_ * " << s.stride_h << " - " << s.pad_h << ", iw0_ = ow_ * " << s.stride_w << " - "
    << s.pad_w << ";\n"
    << "  float sum_ = 0.0f;\n"
    << "  #pragma unroll\n"
    << "  for (int r_ = 0; r_ < " << s.R << "; ++r_) {\n"
    << "    const int ih_ = ih0_ + r_ * " << s.dil_h << ";\n"
    << "    if (ih_ < 0 || ih_ >= " << s.H << ") continue;\n"
    << "    #pragma unroll\n"
    << "    for (int s_ = 0; s_ < " << s.S << "; ++s_) {\n"
    << "      const int iw_ = iw0_ + s_ * " << s.dil_w << ";\n"
    << "      if (iw_ < 0 || iw_ >= " << s.W << ") continue;\n"
    << "      sum_ = fmaf(in_c_[ih_ * " << s.W << " + iw_], w_k_[r_ * " << s.S << " + s_], sum_);\n"
    << "    }\n"
    << "  }\n"
    << "  float out_v_;\n"
    << "  {\n"
    << "    const float acc = sum_;\n"
    << "    const long long n = n_, k = k_, oh = oh_, ow = ow_;\n"
    << "    (void)n; (void)k; (void)oh; (void)ow;\n"
    << "    float out;\n"
    << indented(s.epilogue, 4) << "    out_v_ = out;\n"
    << "  }\n"
    << "  out_[idx_] = out_v_;\n"
    << "}\n";
  KernelLaunch k;
  k.name = name;
  k.source = o.str();
  k.params = params;
  k.grid[0] = clamp_grid(ceil_div(total, threads), INT_MAX);
  k.block[0] = threads;
  k.path = "depthwise";
  return k;
}

}  // namespace

KernelLaunch conv2d_kernel(const std::string& name, const Conv2dSpec& s) {
  check_name(name);
  if (s.N < 0 || s.C <= 0 || s.H <= 0 || s.W <= 0 || s.K <= 0 || s.R <= 0 || s.S <= 0 || s.OH < 0 || s.OW < 0 ||
      s.groups <= 0 || s.stride_h <= 0 || s.stride_w <= 0 || s.dil_h <= 0 || s.dil_w <= 0 || s.pad_h < 0 ||
      s.pad_w < 0)
    throw std::invalid_argument("conv2d: invalid sizes");
  if (s.C % s.groups != 0 || s.K % s.groups != 0)
    throw std::invalid_argument("conv2d: channels not divisible by groups");
  if (s.OH != (s.H + 2 * s.pad_h - s.dil_h * (s.R - 1) - 1) / s.stride_h + 1 ||
      s.OW != (s.W + 2 * s.pad_w - s.dil_w * (s.S - 1) - 1) / s.stride_w + 1)
    throw std::invalid_argument("conv2d: OH/OW do not match the input size, kernel, stride, padding and dilation");
  check_elem(s.elem);
  std::vector<std::string> params = {s.elem + "* __restrict__ out_", "const " + s.elem + "* __restrict__ in_",
                                     "const " + s.elem + "* __restrict__ w_"};
  const std::string user_decls =
      "const long long n = cn_, k = ck_, oh = coh_, ow = cow_; (void)n; (void)k; (void)oh; (void)ow;";
  if (s.N == 0 || s.OH == 0 || s.OW == 0) {
    for (const auto& e : s.extra_params) params.push_back(e);
    return empty_kernel(name, params, "empty output");
  }
  const long long Cg = s.C / s.groups, Kg = s.K / s.groups, ohw = s.OH * s.OW;
  if (Cg * s.R * s.S > INT_MAX - 256 || s.N * ohw > INT_MAX - 256 || s.H > INT_MAX / 4 || s.W > INT_MAX / 4)
    throw std::invalid_argument("conv2d: sizes too large for one kernel");

  if (s.tile == 0 && Cg == 1 && s.groups > 1) {
    for (const auto& e : s.extra_params) params.push_back(e);
    return depthwise_kernel(name, s, params);
  }
  if (s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0 && s.groups == 1) {
    // out[img][k][p] = sum_c in[img][c][p] * w[k][c]: per image a GEMM with M = p (contiguous in the input
    // and the output), N = k, K = c.
    GemmSpec g;
    g.batch = s.N, g.M = ohw, g.N = s.K, g.K = s.C;
    g.a_batch = s.C * ohw, g.a_row = 1, g.a_col = ohw;
    g.b_batch = 0, g.b_row = 1, g.b_col = s.C;
    g.c_batch = s.K * ohw, g.c_row = 1, g.c_col = ohw;
    g.epilogue = s.epilogue;
    g.extra_params = s.extra_params;
    g.elem = s.elem;
    const std::string decls = "const long long cn_ = bz_e_, ck_ = n_, coh_ = m_ / " + L(s.OW) + ", cow_ = m_ % " +
                              L(s.OW) + "; " + user_decls;
    KernelLaunch k = gemm_impl(name, g, params, "out_", "in_", "w_", decls,
                               "conv2d 1x1, stride 1, padding 0 as a GEMM per image: M = OH*OW (" +
                                   std::to_string(ohw) + "), N = K (" + std::to_string(s.K) + "), K = C (" +
                                   std::to_string(s.C) + ").",
                               s.tile);
    k.path = "conv1x1_" + k.path;
    return k;
  }
  for (const auto& e : s.extra_params) params.push_back(e);
  TiledProblem p;
  p.name = name;
  p.params = params;
  p.batch = s.groups, p.M = s.N * ohw, p.N = Kg, p.K = Cg * s.R * s.S;
  p.a_ptr = "in_";
  p.a_gather = true;
  p.conv = {s.C, s.H, s.W, s.K, s.R, s.S, s.OH, s.OW, s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dil_h, s.dil_w,
            s.groups};
  p.b_ptr = "w_", p.b_batch = Kg * Cg * s.R * s.S, p.b_row = 1, p.b_col = Cg * s.R * s.S;
  p.c_ptr = "out_";
  p.c_offset = "(m_ / " + L(ohw) + ") * " + L(s.K * ohw) + " + (bz_ * " + L(Kg) + " + n_) * " + L(ohw) + " + m_ % " +
               L(ohw);
  p.epilogue_decls = "const long long cn_ = m_ / " + L(ohw) + ", ck_ = bz_ * " + L(Kg) + " + n_, coh_ = (m_ % " +
                     L(ohw) + ") / " + L(s.OW) + ", cow_ = m_ % " + L(s.OW) + "; " + user_decls;
  p.epilogue = s.epilogue;
  p.m_fast = true;
  p.tile = pick_tile(p.batch, p.M, p.N, s.tile);
  p.elem = s.elem;
  std::ostringstream what;
  what << "conv2d as implicit GEMM per group: input [" << s.N << "][" << s.C << "][" << s.H << "][" << s.W
       << "], weight [" << s.K << "][" << Cg << "][" << s.R << "][" << s.S << "], output [" << s.N << "][" << s.K
       << "][" << s.OH << "][" << s.OW << "],\n// stride (" << s.stride_h << ", " << s.stride_w << "), padding ("
       << s.pad_h << ", " << s.pad_w << "), dilation (" << s.dil_h << ", " << s.dil_w << "), groups " << s.groups
       << "; M = N*OH*OW, N = K/groups, K = C/groups*R*S.";
  p.what = what.str();
  KernelLaunch k = tiled_kernel(p);
  k.path = "conv_" + k.path;
  return k;
}

}  // namespace thunderc::cuda
