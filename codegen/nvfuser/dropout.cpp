#include "codegen/nvfuser/dropout.h"

#include "codegen/loops/region_lowering.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "core/ir/error.h"

namespace thunderc {

cuda::KernelLaunch cuda_dropout_mask_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym) {
  const TensorType& mask = t.type(sym.outputs[0]);
  THUNDERC_CHECK(mask.dtype == DType::Float32 || mask.dtype == DType::Float64,
                 "nvfuser dropout_mask: float32 or float64 expected, got ", dtype_name(mask.dtype));
  const std::string C = loops::ctype(mask.dtype);
  const std::int64_t n = mask.numel();
  // Kept when the draw r satisfies r < keep * 2^32, compared in double as philox.h does.
  const std::string limit = loops::lit((1.0 - sym.attrs.get_float("p")) * 4294967296.0, DType::Float64);
  // Element e_ * 4 + l takes lane l of counter block `block + e_`: counter (block + e_) in words 0..1, key the
  // seed's words; ten rounds with the Weyl key schedule between them (philox.h, thunderc_philox4x32_10).
  return grid_stride_kernel(
      name, (n + 3) / 4, {C + "* __restrict__ dst", "const int64_t* __restrict__ rng"},
      {"const unsigned long long seed = (unsigned long long)rng[0];",
       "const unsigned long long at_ = (unsigned long long)rng[1] + " + std::to_string(sym.attrs.get_int("block")) +
           "ULL + (unsigned long long)e_;",
       "unsigned int c0_ = (unsigned int)at_, c1_ = (unsigned int)(at_ >> 32), c2_ = 0u, c3_ = 0u;",
       "unsigned int k0_ = (unsigned int)seed, k1_ = (unsigned int)(seed >> 32);",
       "for (int round_ = 0; round_ < 10; ++round_) {",
       "  if (round_ > 0) { k0_ += 0x9E3779B9u; k1_ += 0xBB67AE85u; }",
       "  const unsigned long long p0_ = 0xD2511F53ull * c0_, p1_ = 0xCD9E8D57ull * c2_;",
       "  const unsigned int hi0_ = (unsigned int)(p0_ >> 32), lo0_ = (unsigned int)p0_;",
       "  const unsigned int hi1_ = (unsigned int)(p1_ >> 32), lo1_ = (unsigned int)p1_;",
       "  c0_ = hi1_ ^ c1_ ^ k0_; c1_ = lo1_; c2_ = hi0_ ^ c3_ ^ k1_; c3_ = lo0_;",
       "}",
       "const unsigned int r_[4] = {c0_, c1_, c2_, c3_};",
       "for (int l_ = 0; l_ < 4; ++l_) {",
       "  const long long i_ = e_ * 4 + l_;",
       "  if (i_ < " + std::to_string(n) + "LL) dst[i_] = (double)r_[l_] < " + limit + " ? " + C + "(1) : " + C + "(0);",
       "}"});
}

void emit_cuda_dropout_mask(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  THUNDERC_CHECK(sym.inputs[0].is_tensor(), "nvfuser: dropout_mask without an rng (autodiff gives every mask one)");
  emit_symbol_kernel(ctx, sym, [&](const std::string& name) { return cuda_dropout_mask_kernel(name, ctx.trace(), sym); },
                     out);
}

}  // namespace thunderc
