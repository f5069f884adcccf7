// The kernel a linear plan gets on this CPU, through the header the generated code includes: oneDNN's brgemm
// matmul ("brg") on AVX-512, with the weights reordered out of PyTorch's [n, k] layout into its packed one
// (the point of the executor's claim, docs/onednn.md "Linear"); elsewhere a JIT kernel, never the reference
// one. Numerical parity of linears: onednn_test.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "thunderc/onednn_kernels.h"

TEST_CASE("a linear plan packs the weights for the running CPU's JIT GEMM kernel") {
  // ConvNeXt-T's first MLP layer: 56x56 positions, 96 -> 384 features.
  const thunderc_onednn::LinearSpec s = {3136, 96, 384, 1, 0, thunderc_onednn::kNoActivation, 0.0f, 0.0f};
  std::vector<float> w(static_cast<size_t>(s.n * s.k), 0.25f);
  thunderc_onednn::ThreadScope scope(1);
  const auto plan = thunderc_onednn::make_linear_plan(s, 1, w.data());
  INFO("kernel: " << plan->impl);
  CHECK(plan->impl.find("ref") == std::string::npos);
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512_core) {
    CHECK(plan->impl.find("brg") != std::string::npos);
    const dnnl::memory::desc user({s.k, s.n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ba);
    CHECK(plan->weights.get_desc() != user);  // packed, not PyTorch's layout
  } else {
    CHECK(plan->impl.find("jit") != std::string::npos);
  }
}
