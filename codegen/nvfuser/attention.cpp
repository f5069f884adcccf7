#include "codegen/nvfuser/attention.h"

#include <cmath>

#include "codegen/loops/attention_plan.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "core/ir/error.h"

namespace thunderc {

namespace {

constexpr int kWarps = 4;  // query rows per block
constexpr int kTile = 32;  // keys per tile: one per lane

std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

}  // namespace

cuda::KernelLaunch cuda_attention_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  // q, k, v, out (and a non-bool mask) share one dtype (the checker's rule); half types are read into float
  // shared-memory tiles and rounded once, when the output is stored.
  const DType dt = t.type(sym.outputs[0]).dtype;
  THUNDERC_CHECK(dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16,
                 "nvfuser attention: float32, float16 or bfloat16 expected, got ", dtype_name(dt));
  const std::string T = loops::ctype(dt);
  const loops::AttentionPlan p = loops::plan_attention(t, sym);
  const std::int64_t L = p.L, E = p.E, Sk = p.S, Ev = p.Ev;
  THUNDERC_CHECK(E <= 128 && Ev <= 128, "nvfuser attention: head sizes above 128");
  const bool causal = p.causal, has_mask = p.has_mask, bool_mask = has_mask && p.mask_dtype == DType::Bool;
  const std::int64_t CE = (Ev + 31) / 32;  // outputs per lane

  cuda::KernelLaunch l;
  l.name = name;
  l.params = {T + "* __restrict__ out", "const " + T + "* __restrict__ q", "const " + T + "* __restrict__ k",
              "const " + T + "* __restrict__ v"};
  if (has_mask) l.params.push_back(bool_mask ? "const bool* __restrict__ mask" : "const " + T + "* __restrict__ mask");
  std::string params;
  for (const std::string& p : l.params) params += (params.empty() ? "" : ", ") + p;
  l.grid[0] = static_cast<unsigned>((L + kWarps - 1) / kWarps);
  l.grid[1] = static_cast<unsigned>(p.batches);  // the checker keeps it within the grid's y limit
  l.block[0] = 32 * kWarps;
  l.path = "flash_w" + std::to_string(kWarps) + "_t" + std::to_string(kTile);

  std::string src;
  auto line = [&](const std::string& s) { src += s + "\n"; };
  line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(32 * kWarps) + ") " + name + "(" + params + ") {");
  line("  __shared__ float qs_[" + std::to_string(kWarps) + "][" + std::to_string(std::max<std::int64_t>(E, 1)) + "];");
  line("  __shared__ float ks_[" + std::to_string(kTile) + "][" + std::to_string(E + 1) + "];  // +1: no bank conflicts");
  line("  __shared__ float vs_[" + std::to_string(kTile) + "][" + std::to_string(std::max<std::int64_t>(Ev, 1)) + "];");
  line("  const float NINF_ = -__builtin_inff();  // the prelude defines it for NVRTC");
  line("  const int lane_ = threadIdx.x & 31, warp_ = threadIdx.x >> 5;");
  line("  const long long row_ = (long long)blockIdx.x * " + std::to_string(kWarps) + " + warp_;");
  line("  const bool live_ = row_ < " + S(L) + ";");
  // Batch index -> per-operand offsets (last batch dim fastest).
  line("  long long oq_ = 0, ok_ = 0, ov_ = 0, om_ = 0, rest_ = blockIdx.y;");
  line("  (void)om_; (void)rest_;");
  for (const std::string& ln : loops::batch_offset_statements(p, "long long", "rest_", "x_", "oq_", "ok_", "ov_", "om_", S))
    line("  " + ln);
  line("  const long long ob_ = (long long)blockIdx.y * " + S(L * Ev) + ";");
  line("  if (live_)");
  line("    for (int e_ = lane_; e_ < " + std::to_string(E) + "; e_ += 32) qs_[warp_][e_] = q[oq_ + row_ * " + S(E) + " + e_];");
  line("  float m_ = NINF_, l_ = 0.0f, acc_[" + std::to_string(CE) + "];");
  line("  for (int c_ = 0; c_ < " + std::to_string(CE) + "; ++c_) acc_[c_] = 0.0f;");
  // Causal: keys past the block's last row are all masked.
  std::string end = S(Sk);
  if (causal) {
    line("  long long last_ = (long long)blockIdx.x * " + std::to_string(kWarps) + " + " + std::to_string(kWarps - 1) + ";");
    line("  if (last_ > " + S(L - 1) + ") last_ = " + S(L - 1) + ";");
    line("  const long long end_ = last_ + 1 < " + S(Sk) + " ? last_ + 1 : " + S(Sk) + ";");
    end = "end_";
  }
  line("  for (long long j0_ = 0; j0_ < " + end + "; j0_ += " + std::to_string(kTile) + ") {");
  line("    __syncthreads();  // the previous tile is no longer read");
  line("    for (int x_ = threadIdx.x; x_ < " + std::to_string(kTile * E) + "; x_ += " + std::to_string(32 * kWarps) + ") {");
  line("      const int r_ = x_ / " + std::to_string(std::max<std::int64_t>(E, 1)) + ", e_ = x_ % " +
       std::to_string(std::max<std::int64_t>(E, 1)) + ";");
  line("      ks_[r_][e_] = j0_ + r_ < " + S(Sk) + " ? static_cast<float>(k[ok_ + (j0_ + r_) * " + S(E) + " + e_]) : 0.0f;");
  line("    }");
  line("    for (int x_ = threadIdx.x; x_ < " + std::to_string(kTile * Ev) + "; x_ += " + std::to_string(32 * kWarps) + ") {");
  line("      const int r_ = x_ / " + std::to_string(std::max<std::int64_t>(Ev, 1)) + ", d_ = x_ % " +
       std::to_string(std::max<std::int64_t>(Ev, 1)) + ";");
  line("      vs_[r_][d_] = j0_ + r_ < " + S(Sk) + " ? static_cast<float>(v[ov_ + (j0_ + r_) * " + S(Ev) + " + d_]) : 0.0f;");
  line("    }");
  line("    __syncthreads();");
  line("    const long long j_ = j0_ + lane_;");
  line("    float s_ = NINF_;");
  line("    if (live_ && j_ < " + S(Sk) + ") {");
  line("      float dot_ = 0.0f;");
  line("      for (int e_ = 0; e_ < " + std::to_string(E) + "; ++e_) dot_ = fmaf(qs_[warp_][e_], ks_[lane_][e_], dot_);");
  line("      s_ = dot_ * " + loops::lit(p.scale, DType::Float32) + ";");
  if (causal) line("      if (j_ > row_) s_ = NINF_;");
  if (has_mask) {
    const std::string at = "mask[om_ + row_ * " + S(p.mask_row) + " + j_ * " + S(p.mask_col) + "]";
    if (bool_mask) line("      if (!" + at + ") s_ = NINF_;");
    else line("      s_ += static_cast<float>(" + at + ");");
  }
  line("    }");
  line("    float tm_ = s_;  // the tile's max (NaN loses, as in fmaxf; a NaN score still reaches its p below)");
  line("    for (int o_ = 16; o_ > 0; o_ >>= 1) tm_ = fmaxf(tm_, __shfl_xor_sync(0xffffffffu, tm_, o_));");
  line("    const float mn_ = fmaxf(m_, tm_);");
  line("    const float p_ = mn_ == NINF_ ? 0.0f : expf(s_ - mn_);");
  line("    const float c_ = m_ == NINF_ ? 0.0f : expf(m_ - mn_);");
  line("    float ts_ = p_;");
  line("    for (int o_ = 16; o_ > 0; o_ >>= 1) ts_ += __shfl_xor_sync(0xffffffffu, ts_, o_);");
  line("    l_ = l_ * c_ + ts_;");
  line("    m_ = mn_;");
  line("    for (int c2_ = 0; c2_ < " + std::to_string(CE) + "; ++c2_) acc_[c2_] *= c_;");
  line("    for (int jj_ = 0; jj_ < " + std::to_string(kTile) + "; ++jj_) {");
  line("      const float pj_ = __shfl_sync(0xffffffffu, p_, jj_);");
  line("      for (int c2_ = 0; c2_ < " + std::to_string(CE) + "; ++c2_) {");
  line("        const int d_ = lane_ + 32 * c2_;");
  line("        if (d_ < " + std::to_string(Ev) + ") acc_[c2_] = fmaf(pj_, vs_[jj_][d_], acc_[c2_]);");
  line("      }");
  line("    }");
  line("  }");
  line("  if (!live_) return;");
  line("  for (int c2_ = 0; c2_ < " + std::to_string(CE) + "; ++c2_) {");
  line("    const int d_ = lane_ + 32 * c2_;");
  line("    if (d_ < " + std::to_string(Ev) + ") out[ob_ + row_ * " + S(Ev) + " + d_] = acc_[c2_] / l_;");
  line("  }");
  line("}");
  l.source = src;
  return l;
}

void emit_cuda_attention(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  if (t.type(sym.outputs[0]).numel() == 0) return;
  std::vector<ValueId> inputs;  // q, k, v and the mask, as the kernel's parameters
  for (const Operand& in : sym.inputs)
    if (in.is_tensor()) inputs.push_back(in.value);
  const loops::AttentionPlan p = loops::plan_attention(t, sym);
  emit_kernel_block(ctx, cuda_attention_kernel(ctx.kernel_name("sdpa"), t, sym), sym.outputs[0], inputs,
                    "scaled_dot_product_attention L=" + std::to_string(p.L) + " E=" + std::to_string(p.E) +
                        (p.causal ? " causal" : ""),
                    out);
}

}  // namespace thunderc
