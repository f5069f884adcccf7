/* Kernels that code generated for the `onednn` executor calls (codegen/onednn/onednn_backend.cpp). Header-only,
 * compiled into each model .so that uses the executor; it links oneDNN (libdnnl, Debian's libdnnl-dev) and libgomp.
 *
 * One generated call site = one static thunderc_onednn::Conv2d, which plans on its first call and reuses the plan:
 *  - the convolution primitive is created with every layout left to oneDNN ("any"), so it picks its blocked
 *    layouts (nChw8c on AVX2, nChw16c on AVX-512) and its JIT kernels for the CPU it runs on, at run time: the
 *    instruction set is the running CPU's, not the compiling machine's;
 *  - the weights (constants embedded in the .so) are reordered into the primitive's layout once, at planning;
 *  - with `winograd` set (fusion marks the convolutions of a bounded variant whose output is proven finite, and
 *    --conv-algorithm auto, the default, lets it through), a 3x3 stride-1 convolution large enough for it to pay
 *    (winograd_pays) runs oneDNN's Winograd F(2x2, 3x3) kernel where oneDNN has one for the running CPU (AVX-512),
 *    else the direct one: about 1.2-1.6x faster on such layers, results within about 1e-6 relative of the direct
 *    kernel's (|diff| <= 1e-5 on outputs of magnitude 5-7). Its transforms turn an inf input into NaN (inf - inf),
 *    hence bounded variants only (docs/onednn.md);
 *  - the bias, a residual add and an activation run inside the convolution (oneDNN's bias, its sum and eltwise
 *    post-ops). The activations clamp with max/min instructions that turn NaN into a number, where PyTorch
 *    keeps NaN: code generation fuses them only in bounded variants (inputs checked finite and bounded). On
 *    AVX-512 a silu or gelu runs as a pass of its own right after the primitive instead (own_activation_pays:
 *    faster than oneDNN's swish and gelu post-ops there; the same for linears);
 *  - activations cross the call in PyTorch's NCHW, or NHWC for conv2d_nhwc (the channels-last pass): the input
 *    is reordered into the primitive's layout and the output back, skipped where they are the same (on AVX-512
 *    oneDNN's fastest kernels read and write NHWC, on AVX2 they use nChw8c); those buffers and oneDNN's
 *    scratchpad live in a per-thread arena, so concurrent calls share nothing mutable.
 * conv2d's gradients (--autograd) are Conv2dBackward<false> (input) and <true> (weights) call sites: oneDNN's
 * backward primitives, planned per spec like the forward, on NHWC activations as they are where the spec is
 * channels_last (conv2d_backward_*_nhwc); a training variant's forward convolution reorders its weights
 * (parameters, not constants) every call (Conv2dSpec::weights_vary). Where the output is small next to the
 * weights, the weight gradient and the training forward use oneDNN's GEMM kernel on the OIHW weights instead
 * (gemm_weight_grad_pays, gemm_forward_pays): no weight reorder in or out.
 * A linear call site is one static thunderc_onednn::Linear: oneDNN's matmul with the weights packed for its
 * kernel once (brgemm on AVX-512), bias, residual and activation as for convolutions; a plain M = 1 product
 * (a classifier head) is a matrix-vector product through dnnl_sgemm on the weights as they are.
 * Plans are keyed by the sizes (symbolic variants pass them at run time), the thread count and the weights;
 * a call site keeps at most PlanCache::kMaxPlans of them. Each plan pools its argument memory objects (ArgPool),
 * so a call allocates nothing where no reorder is needed.
 *
 * Threads: oneDNN here runs on OpenMP and uses omp_get_max_threads() of the calling thread. Each call sets the
 * calling thread's count for its duration and restores it (a per-thread OpenMP setting: two models running
 * in two threads with different counts do not interfere); calls below kConvParallelMinWork / kLinearParallelMinWork
 * multiply-adds run on one thread. A plan belongs to one thread count.
 *
 * Errors: no exception leaves run(); it returns non-zero after writing a message into `error`. */
#ifndef THUNDERC_ONEDNN_KERNELS_H_
#define THUNDERC_ONEDNN_KERNELS_H_

#include <immintrin.h>
#include <omp.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace thunderc_onednn {

// y = conv2d(x, w) + bias + residual, PyTorch's conv2d: x [n, c, h, w], w [oc, c/groups, kh, kw],
// y [n, oc, oh, ow]; stride, padding (both sides) and dilation as PyTorch gives them. With channels_last, x, y
// and the residual are stored [n, h, w, c] (conv2d_nhwc; the weights are OIHW either way).
// winograd: 1 lets the plan use oneDNN's Winograd kernel where winograd_pays (0: direct only); set only where
// the input is known finite (Winograd makes NaN of inf).
// activation: applied last (after bias and residual), one of Activation; alpha/beta are clip's bounds.
// weights_vary: 1 when the weights are not constants of the model (a training variant's parameters, read and
// written through the runtime between calls): reordered into the primitive's layout by every call instead of once.
struct Conv2dSpec {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
  int64_t has_bias, has_residual, channels_last, winograd;
  int64_t activation;
  float alpha, beta;
  int64_t weights_vary;
};

// The activations a convolution or linear can apply as oneDNN eltwise post-ops. They compute with max/min (and
// a clamped exp), so NaN comes out as a number: code generation uses them only in variants whose inputs the runtime
// has checked to be finite and small enough that no NaN can arise (see docs/onednn.md, "Fused activations").
// kGeluErf is PyTorch's gelu (approximate='none'), kGeluTanh its approximate='tanh'.
enum Activation : int64_t {
  kNoActivation = 0,
  kRelu = 1,
  kClip = 2,
  kSigmoid = 3,
  kSilu = 4,
  kHardswish = 5,
  kGeluErf = 6,
  kGeluTanh = 7
};

// The attributes of a primitive with a residual add (oneDNN's sum post-op: adds what dst holds) and then an
// activation (an eltwise post-op), and a user-managed scratchpad (the per-thread arena).
inline dnnl::primitive_attr epilogue_attr(int64_t has_residual, int64_t activation, float alpha, float beta) {
  dnnl::post_ops ops;
  if (has_residual) ops.append_sum(1.0f);
  switch (activation) {
    case kNoActivation: break;
    case kRelu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f); break;
    case kClip: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, alpha, beta); break;
    case kSigmoid: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f); break;
    case kSilu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f); break;
    case kHardswish: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f); break;
    case kGeluErf: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f); break;
    case kGeluTanh: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f); break;
    default: throw std::invalid_argument("unknown activation " + std::to_string(activation));
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The calling thread's OpenMP thread count for one call, restored afterwards.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) {
    if (threads != saved_) omp_set_num_threads(threads);
  }
  ~ThreadScope() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

// Per-thread scratch for blocked activations and oneDNN's scratchpad; grows, never shrinks.
inline unsigned char* thread_arena(size_t bytes) {
  struct Arena {
    unsigned char* data = nullptr;
    size_t size = 0;
    ~Arena() { std::free(data); }
  };
  static thread_local Arena arena;
  if (bytes > arena.size) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::free(arena.data);
    arena.data = static_cast<unsigned char*>(p);
    arena.size = rounded;
  }
  return arena.data;
}

inline size_t align64(size_t v) { return (v + 63) / 64 * 64; }

// The model's weights `w` (laid out as `user`) reordered into the primitive's layout `target`, once, at
// planning (the planning call's thread count is already in effect).
inline dnnl::memory packed_weights(const dnnl::memory::desc& user, const float* w, const dnnl::memory::desc& target) {
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory packed(target, eng), source(user, eng, const_cast<float*>(w));
  dnnl::stream stream(eng);
  dnnl::reorder(source, packed).execute(stream, source, packed);
  stream.wait();
  return packed;
}

// Whether oneDNN runs AVX-512 kernels here (the running CPU's, capped by DNNL_MAX_CPU_ISA).
inline bool cpu_has_avx512() {
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & need) == need;
  }();
  return avx512;
}

// Where Winograd F(2x2, 3x3) beats oneDNN's direct kernel inside a model: dense 3x3 stride-1 convolutions of
// at least 32 channels in and out whose output map is large next to the weights, oh * ow >= 4 sqrt(c * oc).
// Winograd's transformed weights are 16/9 the size of the direct kernel's and arrive cold from memory in a
// model, and each call reorders its input and output between NHWC and nChw16c. Measured in ResNet-18 on
// AVX-512 (docs/onednn.md): 64 channels at 56x56 1.5x faster, 128 at 28x28 1.2x, 256 at 14x14 0.8x.
inline bool winograd_pays(const Conv2dSpec& s) {
  if (!s.winograd || s.kh != 3 || s.kw != 3 || s.sh != 1 || s.sw != 1 || s.dh != 1 || s.dw != 1 || s.groups != 1 ||
      s.c < 32 || s.oc < 32)
    return false;
  const double map = static_cast<double>(s.oh) * static_cast<double>(s.ow);
  return map * map >= 16.0 * static_cast<double>(s.c) * static_cast<double>(s.oc);
}

// Where a grouped convolution (not depthwise) on channels-last tensors runs better on them as they are than in the
// layout oneDNN picks when left free: on AVX-512 it picks nChw8c for groups of 8 channels (RegNet's), and the
// reorders of the input and output around each call cost a third of the convolution (RegNetY-400MF's 16 grouped
// layers, one thread: 1.92 -> 1.56 ms per call; two threads 1.66 -> 0.93, the reorders ran near serial). The
// surrounding dense convolutions read and write NHWC there. On AVX2 dense convolutions reorder to nChw8c anyway
// and the direct NHWC kernel measured 3-7% slower at one thread (docs/onednn.md): left to oneDNN.
inline bool grouped_nhwc_pays(const Conv2dSpec& s) {
  if (!s.channels_last || s.groups == 1 || s.c / s.groups == 1) return false;
  return cpu_has_avx512();
}

// silu(x) = x / (1 + exp(-x)), exp as 2^n * p(f) with a degree-6 polynomial for 2^f on [-0.5, 0.5]: at most
// 3.6e-6 relative error against silu in double (the worst near x = -66, where x * log2(e) rounds; tests check 4e-6
// over [-90, 90]). NaN stays NaN. Not the cpp executor's thunderc_expf (cpp_math.h): its exact handling of the
// whole float range made this pass 1.7x slower (1043 against 616 us on 1.2M elements, 8-wide), where the
// clamped exponent here only ever feeds 1 + exp(-x).
__attribute__((always_inline)) inline float silu_lean(float x) {
  float t = -x * 1.44269504088896341f;
  t = t < -126.0f ? -126.0f : (t > 127.0f ? 127.0f : t);
  const float n = (t + 12582912.0f) - 12582912.0f;  // round to nearest (the float's mantissa drops the fraction)
  const float f = t - n;
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += static_cast<int32_t>(n) * (int32_t{1} << 23);  // n * 2^23, not n << 23: n < 0 would shift a negative
  std::memcpy(&p, &bits, sizeof p);
  const float y = x / (1.0f + p);
  return x != x ? x : y;
}

inline void silu_span_default(float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = silu_lean(y[i]);
}

// The portable loops of the gelus, on libm: x Phi(x) as x erfc(-x / sqrt 2) / 2, and the tanh form as
// x / (1 + exp(-2u)) (gelu_tanh16's), neither with 1 + erf's or 1 + tanh's cancellation below 0. Run only where
// a test forces the own pass on a CPU without AVX-512 (own_activation_override).
inline void gelu_erf_span_default(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * std::erfc(y[i] * -0.70710678118654752f);
}
inline void gelu_tanh_span_default(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = y[i];
    y[i] = x / (1.0f + std::exp(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
  }
}

// The activations over 16-wide registers, called only where the running CPU has AVX-512 (cpu_has_avx512),
// written with AVX-512's own instructions: the rounding is vrndscaleps, 2^n * p(f) is vscalefps (no integer
// detour, no blend: a NaN input stays NaN through each step), and a span's tail is a masked vector.

// 2^t for t <= 127 (-inf gives 0): p of degree 5 on [-0.5, 0.5], 7.5e-8 relative error.
__attribute__((target("avx512f"))) inline __m512 exp2_16(__m512 t) {
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.3276468962430954e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.675540961325169e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550713464617729e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022120237350464e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931469440460205e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000001192092896f));
  return _mm512_scalef_ps(p, n);
}

// x / (1 + exp(-a)), the exponent clamped at 2^127 as in silu_lean: silu (a = x) and gelu's tanh form.
__attribute__((target("avx512f"))) inline __m512 x_sigmoid16(__m512 x, __m512 a) {
  const __m512 t = _mm512_min_ps(_mm512_set1_ps(127.0f), _mm512_mul_ps(a, _mm512_set1_ps(-1.44269504088896341f)));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp2_16(t)));
}

// silu as silu_lean: at most 3.6e-6 relative error (rounding x * log2(e) near x = -66). 1.9x faster than the
// compiler's vectorization of silu_lean, 0.17 against 0.32 ns per element in L2 (AMD EPYC, Zen 4-class;
// `build/bin/onednn_conv_bench` prints both), where the float -> int conversions and selects cost more than
// the arithmetic.
__attribute__((target("avx512f"))) inline __m512 silu16(__m512 x) { return x_sigmoid16(x, x); }

// gelu, approximate='tanh': 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
__attribute__((target("avx512f"))) inline __m512 gelu_tanh16(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 u = _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x);
  return x_sigmoid16(x, _mm512_mul_ps(u, _mm512_set1_ps(1.5957691216057308f)));  // 2 sqrt(2/pi)
}

// gelu, approximate='none': x Phi(x), with erfc(z) = t P(t) exp(-z^2), t = 1 / (1 + 0.3275911 z), z = |x| / sqrt 2
// (Abramowitz and Stegun 7.1.26, the formula ATen's own vectorized erf uses): 1.5e-7 absolute error in erfc.
// Below 0, x Phi(x) = x erfc(z) / 2 is computed as that product, not as 1 + erf (no cancellation); above,
// x (1 - erfc(z) / 2). At most 3.3e-7 absolute error on [-12, 12] against erfc in double.
__attribute__((target("avx512f"))) inline __m512 gelu_erf16(__m512 x) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 q = _mm512_set1_ps(1.061405429f);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.453152027f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.421413741f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.284496736f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.254829592f));
  // erfc(z) / 2 = 0.5 t q exp2(-z^2 log2(e)); z = inf gives 0 (x = +inf then gives x * 1)
  const __m512 e = exp2_16(_mm512_mul_ps(_mm512_mul_ps(z, z), _mm512_set1_ps(-1.44269504088896341f)));
  const __m512 h = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(q, t), _mm512_set1_ps(0.5f)), e);
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mul_ps(x, _mm512_mask_blend_ps(negative, _mm512_sub_ps(_mm512_set1_ps(1.0f), h), h));
}

template <__m512 (*F)(__m512)>
__attribute__((target("avx512f"))) inline void span_avx512(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, tail, F(_mm512_maskz_loadu_ps(tail, y + i)));
  }
}

// The loop of `activation` for the running CPU (null: no own pass for it).
inline void (*activation_span(int64_t activation))(float*, int64_t) {
  const bool wide = cpu_has_avx512();
  switch (activation) {
    case kSilu: return wide ? span_avx512<silu16> : silu_span_default;
    case kGeluErf: return wide ? span_avx512<gelu_erf16> : gelu_erf_span_default;
    case kGeluTanh: return wide ? span_avx512<gelu_tanh16> : gelu_tanh_span_default;
    default: return nullptr;
  }
}

// Where a convolution's or linear's activation runs as a pass of its own over the output (activation_in_place)
// instead of as oneDNN's eltwise post-op: silu and both gelus, on AVX-512. Measured on AMD EPYC (Zen 4-class,
// AVX-512 on 256-bit units), one thread: oneDNN 2.6's swish post-op cost about 0.6 ns per output element, its
// gelu_erf 0.7-0.84 (ConvNeXt's and ViT's linears, docs/onednn.md), the passes here 0.17 (silu) and 0.36
// (gelu_erf). On AVX2 the passes' 8-wide versions were not written: left to oneDNN there. Per layer:
// build/bin/onednn_conv_bench's second table. Test hook: own_activation_override 0 or 1 forces the choice
// (-1: the measured rule).
inline int own_activation_override = -1;
inline bool own_activation_pays(int64_t activation) {
  if (activation != kSilu && activation != kGeluErf && activation != kGeluTanh) return false;
  return own_activation_override >= 0 ? own_activation_override == 1 : cpu_has_avx512();
}

// Below this many elements activation_in_place runs on one thread.
constexpr int64_t kActivationParallelMinElements = int64_t{1} << 14;

inline void activation_in_place(int64_t activation, float* y, int64_t n, int threads) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  void (*const span)(float*, int64_t) = activation_span(activation);
  if (!span) throw std::invalid_argument("no own pass for activation " + std::to_string(activation));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && n >= kActivationParallelMinElements)
  for (int64_t c = 0; c < chunks; ++c) span(y + c * kChunk, std::min(kChunk, n - c * kChunk));
}

// A plan's argument memory objects, reused from call to call with only their data pointers changed: creating
// the dnnl::memory objects and the argument map of the C++ API each call cost about 1.5-2 us, as much as a
// 16x64x256 GEMM or a squeeze-excitation block's 1x1 convolution (measured: a transformer block's linears ran
// slower than OpenBLAS's until this). One set per concurrent caller; a pool, so calls from several threads
// never share one.
class ArgPool {
 public:
  struct Args {
    dnnl::memory src, weights, bias, dst, scratchpad;
  };

  ArgPool() = default;
  ArgPool(const ArgPool&) = delete;
  ArgPool& operator=(const ArgPool&) = delete;

  // Runs `primitive` on these pointers (bias may be null: no bias argument). The weights are `packed` (owned by
  // the plan, shared by every caller), or, where that is null, `weights` of layout weights_md.
  void execute(const dnnl::primitive& primitive, dnnl::stream& stream, const dnnl::memory::desc& src_md,
               const void* src, const dnnl::memory* packed, const dnnl::memory::desc& weights_md, const void* weights,
               const dnnl::memory::desc& bias_md, const void* bias, const dnnl::memory::desc& dst_md, void* dst,
               const dnnl::memory::desc& scratchpad_md, void* scratchpad) {
    std::unique_ptr<Args> a = take();
    if (!a) {
      const dnnl::engine& eng = cpu_engine();
      a.reset(new Args{dnnl::memory(src_md, eng, DNNL_MEMORY_NONE),
                       packed ? *packed : dnnl::memory(weights_md, eng, DNNL_MEMORY_NONE),
                       dnnl::memory(bias_md, eng, DNNL_MEMORY_NONE), dnnl::memory(dst_md, eng, DNNL_MEMORY_NONE),
                       dnnl::memory(scratchpad_md, eng, DNNL_MEMORY_NONE)});
    }
    if (!packed) a->weights.set_data_handle(const_cast<void*>(weights));
    a->src.set_data_handle(const_cast<void*>(src));
    a->dst.set_data_handle(dst);
    a->scratchpad.set_data_handle(scratchpad);
    if (bias) a->bias.set_data_handle(const_cast<void*>(bias));
    const dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, a->src.get()},
                                     {DNNL_ARG_WEIGHTS, a->weights.get()},
                                     {DNNL_ARG_DST, a->dst.get()},
                                     {DNNL_ARG_SCRATCHPAD, a->scratchpad.get()},
                                     {DNNL_ARG_BIAS, a->bias.get()}};
    const dnnl_status_t status = dnnl_primitive_execute(primitive.get(), stream.get(), bias ? 5 : 4, args);
    give_back(std::move(a));
    if (status != dnnl_success) throw dnnl::error(status, "could not execute a primitive");
  }

 private:
  std::unique_ptr<Args> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return nullptr;
    std::unique_ptr<Args> a = std::move(free_.back());
    free_.pop_back();
    return a;
  }
  void give_back(std::unique_ptr<Args> a) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(a));
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Args>> free_;
};

struct Conv2dPlan {
  Conv2dSpec spec;
  int threads;
  const float* user_weights;
  dnnl::convolution_forward conv;
  dnnl::memory::desc user_src, user_dst, src, dst, bias, scratchpad;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_in, dst_out, residual_in;
  dnnl::memory weights;  // in the primitive's layout, owned (constant weights)
  // weights_vary: the primitive's weights layout, and the reorder into it where it is not PyTorch's (OIHW)
  dnnl::memory::desc user_weights_md, weights_md;
  bool reorder_weights = false;
  dnnl::reorder weights_in;
  std::string impl;  // oneDNN's name for the kernel it chose, e.g. "brgconv:avx512_core"
  bool own_activation = false;  // the activation runs after the primitive (own_activation_pays), not in it
  size_t src_offset = 0, dst_offset = 0, weights_offset = 0, scratch_offset = 0, arena_bytes = 0;
  mutable ArgPool args;
};

// Where a training forward's convolution (weights_vary: its OIHW weights reordered into the direct kernel's
// blocked layout by every call) is faster through oneDNN's GEMM-based kernel, which reads OIHW as it is: dense
// convolutions with a spatial kernel whose output is small next to their weights (n * oh * ow at most 64).
// Measured on AVX-512, one thread: 512x512x3x3 on 7x7 3.0 ms against 1.8 + 2.3 ms of reorder (in ResNet-18's
// step 2.5 against 1.9 + 1.7); 256->512 3x3 stride 2 to 7x7 1.5 against 1.2 + 0.7; at 14x14 the direct kernel
// wins (256x256x3x3: 2.9 against 2.0 + 0.3), and so does the 1x1 kernel on 7x7 (mobilenet_v2's 160->960:
// 0.13 + about 0.07 against 0.23).
constexpr int64_t kGemmForwardMaxOutput = 64;
inline bool gemm_forward_pays(const Conv2dSpec& s) {
  return s.weights_vary && s.groups == 1 && s.kh * s.kw > 1 && s.n * s.oh * s.ow <= kGemmForwardMaxOutput &&
         s.c * s.kh * s.kw * s.oc >= 64 * 1024;
}

inline std::shared_ptr<Conv2dPlan> make_conv2d_plan(const Conv2dSpec& s, int threads, const float* w) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  auto plan = std::make_shared<Conv2dPlan>();
  plan->spec = s;
  plan->threads = threads;
  plan->user_weights = w;  // null for varying weights (not read here)
  const dnnl::engine& eng = cpu_engine();
  const memory::dims src_dims = {s.n, s.c, s.h, s.w}, dst_dims = {s.n, s.oc, s.oh, s.ow};
  const memory::dims w_dims = s.groups == 1 ? memory::dims{s.oc, s.c, s.kh, s.kw}
                                            : memory::dims{s.groups, s.oc / s.groups, s.c / s.groups, s.kh, s.kw};
  const tag user_tag = s.channels_last ? tag::nhwc : tag::nchw;
  plan->user_src = memory::desc(src_dims, f32, user_tag);
  plan->user_dst = memory::desc(dst_dims, f32, user_tag);
  const memory::desc user_w(w_dims, f32, s.groups == 1 ? tag::oihw : tag::goihw);

  plan->own_activation = own_activation_pays(s.activation);
  const dnnl::primitive_attr attr =
      epilogue_attr(s.has_residual, plan->own_activation ? kNoActivation : s.activation, s.alpha, s.beta);

  // oneDNN's dilation counts the gaps (PyTorch's minus one); PyTorch pads both sides alike and floors the output
  // size, which is oneDNN's rule too.
  const memory::dims strides = {s.sh, s.sw}, dilates = {s.dh - 1, s.dw - 1}, pad = {s.ph, s.pw};
  const memory::desc any_src(src_dims, f32, tag::any), any_dst(dst_dims, f32, tag::any),
      any_w(w_dims, f32, tag::any), bias_md(memory::dims{s.oc}, f32, tag::x);
  auto descriptor = [&](dnnl::algorithm alg) {
    return s.has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, any_src, any_w,
                                                        bias_md, any_dst, strides, dilates, pad, pad)
                      : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, any_src, any_w,
                                                        any_dst, strides, dilates, pad, pad);
  };
  dnnl::convolution_forward::primitive_desc pd;
  if (winograd_pays(s)) {
    // oneDNN has Winograd kernels for some CPUs only (AVX-512) and some post-ops; creation throws elsewhere.
    try {
      pd = dnnl::convolution_forward::primitive_desc(descriptor(dnnl::algorithm::convolution_winograd), attr, eng);
    } catch (const dnnl::error&) {
      pd = dnnl::convolution_forward::primitive_desc();
    }
  }
  // A direct convolution on these exact layouts, or none where oneDNN has only its reference kernel for them.
  auto direct_on = [&](const memory::desc& src_md, const memory::desc& w_md, const memory::desc& dst_md) {
    try {
      const auto d = s.has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                  dnnl::algorithm::convolution_direct, src_md, w_md,
                                                                  bias_md, dst_md, strides, dilates, pad, pad)
                                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                  dnnl::algorithm::convolution_direct, src_md, w_md,
                                                                  dst_md, strides, dilates, pad, pad);
      dnnl::convolution_forward::primitive_desc found(d, attr, eng);
      if (std::string(found.impl_info_str()).rfind("ref", 0) != 0) return found;
    } catch (const dnnl::error&) {
    }
    return dnnl::convolution_forward::primitive_desc();
  };
  // PyTorch's OIHW weights as they are, through oneDNN's GEMM-based kernel on NCHW activations (small here).
  if (!pd && s.weights_vary && gemm_forward_pays(s))
    pd = direct_on(memory::desc(src_dims, f32, tag::nchw), user_w, memory::desc(dst_dims, f32, tag::nchw));
  // oneDNN's direct kernel on the NHWC tensors as they are, weights still in its blocked layout.
  if (!pd && grouped_nhwc_pays(s))
    pd = direct_on(memory::desc(src_dims, f32, tag::nhwc), any_w, memory::desc(dst_dims, f32, tag::nhwc));
  if (!pd) pd = dnnl::convolution_forward::primitive_desc(descriptor(dnnl::algorithm::convolution_direct), attr, eng);
  plan->conv = dnnl::convolution_forward(pd);
  plan->impl = pd.impl_info_str();
  plan->bias = bias_md;
  plan->scratchpad = pd.scratchpad_desc();
  plan->src = pd.src_desc();
  plan->dst = pd.dst_desc();
  plan->reorder_src = plan->src != plan->user_src;
  plan->reorder_dst = plan->dst != plan->user_dst;
  if (plan->reorder_src) plan->src_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->user_src, eng, plan->src));
  if (plan->reorder_dst) {
    plan->dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->dst, eng, plan->user_dst));
    if (s.has_residual)
      plan->residual_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->user_dst, eng, plan->dst));
  }

  plan->user_weights_md = user_w;
  plan->weights_md = pd.weights_desc();
  if (!s.weights_vary) {
    plan->weights = packed_weights(user_w, w, pd.weights_desc());
  } else {
    plan->reorder_weights = plan->weights_md != user_w;
    if (plan->reorder_weights)
      plan->weights_in = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_w, eng, plan->weights_md));
  }

  size_t offset = 0;
  if (plan->reorder_src) {
    plan->src_offset = offset;
    offset += align64(plan->src.get_size());
  }
  if (plan->reorder_weights) {
    plan->weights_offset = offset;
    offset += align64(plan->weights_md.get_size());
  }
  if (plan->reorder_dst) {
    plan->dst_offset = offset;
    offset += align64(plan->dst.get_size());
  }
  plan->scratch_offset = offset;
  offset += align64(plan->scratchpad.get_size());
  plan->arena_bytes = offset;
  return plan;
}

// A call site's plans: at most kMaxPlans, keyed by the spec's bytes, the thread count and the weights' address;
// make(spec, threads, weights) builds a missing one (Plan has members spec, threads, user_weights).
template <typename Spec, typename Plan>
class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 8;

  template <typename Make>
  std::shared_ptr<const Plan> get(const Spec& s, int threads, const float* w, Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : plans_)
      if (p->threads == threads && p->user_weights == w && std::memcmp(&p->spec, &s, sizeof s) == 0) return p;
    std::shared_ptr<const Plan> p = make(s, threads, w);
    if (plans_.size() == kMaxPlans) plans_.erase(plans_.begin());  // the oldest; running calls keep their copy
    plans_.push_back(p);
    return p;
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<const Plan>> plans_;
};

// Runs body() (which may throw) and turns what it throws into a message in error[0 .. capacity) and 1.
template <typename Body>
int report_errors(const char* what, char* error, size_t capacity, Body body) noexcept {
  try {
    body();
    return 0;
  } catch (const dnnl::error& e) {
    std::snprintf(error, capacity, "oneDNN %s failed: %s (status %d)", what, e.what(), static_cast<int>(e.status));
  } catch (const std::bad_alloc&) {
    std::snprintf(error, capacity, "oneDNN %s: out of memory", what);
  } catch (const std::exception& e) {
    std::snprintf(error, capacity, "oneDNN %s failed: %s", what, e.what());
  }
  return 1;
}

// Below this much work a convolution runs on one thread. Work is multiply-adds, times kDepthwiseWork for a
// depthwise convolution (one input channel per group: memory-bound, several times slower per multiply-add).
// Measured on AVX-512: a squeeze-excitation block's 1x1 convolution of 480 -> 20 channels (9600 multiply-adds)
// took 3.8 us on one thread and 8.9 on two; a depthwise 3x3 on 16x28x28 (112896) 15.0 and 14.3, one on
// 96x14x14 (169344) 20.3 and 15.9. Dense convolutions below 2^19 (the cnn sample's, 3x3 on 4x4 to 32x32
// images, 0.3-0.6 M multiply-adds) gained nothing from a second thread: that model took 53-58 us at two
// threads against 42 at one, 44-45 with these convolutions serial.
constexpr int64_t kConvParallelMinWork = int64_t{1} << 19;
constexpr int64_t kDepthwiseWork = 4;

// One convolution call site of a model.
class Conv2d {
 public:
  // 0 on success; non-zero after writing a message into error[0 .. capacity).
  int run(const Conv2dSpec& s, const float* x, const float* w, const float* bias, const float* residual, float* y,
          int32_t num_threads, char* error, size_t capacity) noexcept {
    return report_errors("convolution", error, capacity, [&] {
      const int requested = num_threads > 0 ? num_threads : omp_get_max_threads();
      const int64_t macs = s.n * s.oc * s.oh * s.ow * (s.c / s.groups) * s.kh * s.kw;
      const int64_t work = s.c / s.groups == 1 ? macs * kDepthwiseWork : macs;
      const int threads = work < kConvParallelMinWork ? 1 : requested;
      ThreadScope scope(threads);
      // Varying weights key no plan: their address may change from call to call, their values do.
      const std::shared_ptr<const Conv2dPlan> p = plans_.get(s, threads, s.weights_vary ? nullptr : w, make_conv2d_plan);
      const dnnl::engine& eng = cpu_engine();
      unsigned char* arena = thread_arena(p->arena_bytes);
      static thread_local dnnl::stream stream(eng);  // one per calling thread, not one per call
      using dnnl::memory;
      // Where oneDNN's layout is the tensors' own (NHWC on AVX-512), no memory object is made per call.
      const void* src = p->reorder_src ? static_cast<const void*>(arena + p->src_offset) : x;
      void* dst = p->reorder_dst ? static_cast<void*>(arena + p->dst_offset) : y;
      if (p->reorder_src) {
        memory user(p->user_src, eng, const_cast<float*>(x)), blocked(p->src, eng, const_cast<void*>(src));
        p->src_in.execute(stream, user, blocked);
      }
      if (s.has_residual) {  // the sum post-op adds what dst holds
        if (p->reorder_dst) {
          memory user_residual(p->user_dst, eng, const_cast<float*>(residual)), blocked(p->dst, eng, dst);
          p->residual_in.execute(stream, user_residual, blocked);
        } else if (residual != y) {
          std::memcpy(y, residual, p->user_dst.get_size());
        }
      }
      const void* weights = w;
      if (p->reorder_weights) {
        weights = arena + p->weights_offset;
        memory user(p->user_weights_md, eng, const_cast<float*>(w)), blocked(p->weights_md, eng, const_cast<void*>(weights));
        p->weights_in.execute(stream, user, blocked);
      }
      p->args.execute(p->conv, stream, p->src, src, s.weights_vary ? nullptr : &p->weights, p->weights_md, weights,
                      p->bias, s.has_bias ? bias : nullptr, p->dst, dst, p->scratchpad, arena + p->scratch_offset);
      if (p->reorder_dst) {
        memory blocked(p->dst, eng, dst), user(p->user_dst, eng, y);
        p->dst_out.execute(stream, blocked, user);
      }
      stream.wait();
      if (p->own_activation) activation_in_place(s.activation, y, s.n * s.oc * s.oh * s.ow, threads);
    });
  }

 private:
  PlanCache<Conv2dSpec, Conv2dPlan> plans_;
};

// conv2d's gradients (--autograd): oneDNN's backward-data and backward-weights primitives, the spec of the
// forward convolution they differentiate (no bias, residual or activation; the bias's gradient is a sum the
// cpp executor fuses). Every layout is oneDNN's choice: PyTorch's NCHW gradient, input and OIHW weights are
// reordered in and the result out where they differ, through the per-thread arena.
//  - data:    dx [n, c, h, w]   from dy [n, oc, oh, ow] and w [oc, c/groups, kh, kw]  (rows and columns no window
//             reads get 0, as ATen's);
//  - weights: dw [oc, c/groups, kh, kw] from dy and x, summed over the batch.
struct Conv2dBackwardPlan {
  Conv2dSpec spec;
  int threads;
  const float* user_weights;  // always null: a plan per spec and thread count
  dnnl::primitive primitive;
  // [0] dy, [1] w (data) or x (weights), [2] the result; the user's layouts and the primitive's.
  dnnl::memory::desc user[3], md[3], scratchpad;
  bool reorder[3] = {false, false, false};
  dnnl::reorder convert[3];  // into md for the operands, out of it for the result
  size_t offset[3] = {0, 0, 0}, scratch_offset = 0, arena_bytes = 0;
  int arg[3] = {0, 0, 0};
  std::string impl;
};

// Where the weight gradient is better computed straight into PyTorch's OIHW layout, by oneDNN's GEMM-based
// kernel (im2col + sgemm on NCHW activations), than by its direct kernel into a blocked layout and a reorder out:
// dense convolutions whose output is small next to their weights (n * oh * ow, the GEMM's depth, at most 128:
// ResNet-18's last stage at batch 1, mobilenet_v2's 1x1 convolutions on 7x7 maps). Each such call writes a
// weight-sized gradient once instead of twice; the activations, small there, are reordered to NCHW if need be.
// Measured on AVX-512, one thread: 512x512x3x3 on 7x7 2.9 ms + 2.1 ms reorder against 3.4 ms; 256->512 3x3
// stride 2 to 7x7 2.3 + 1.0 against 1.6; 320->1280 1x1 on 7x7 0.56 + 0.47 against 0.48; at 14x14 (196) the
// two are even (256x256x3x3: 2.2 + 0.5 against 3.5; 128->256 1x1 stride 2: 0.17 + 0.06 against 0.25).
constexpr int64_t kGemmWeightGradMaxDepth = 128;
inline bool gemm_weight_grad_pays(const Conv2dSpec& s) {
  return s.groups == 1 && s.n * s.oh * s.ow <= kGemmWeightGradMaxDepth;
}

inline std::shared_ptr<Conv2dBackwardPlan> make_conv2d_backward_plan(const Conv2dSpec& s, int threads,
                                                                     bool weights_grad) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  auto plan = std::make_shared<Conv2dBackwardPlan>();
  plan->spec = s;
  plan->threads = threads;
  plan->user_weights = nullptr;
  const dnnl::engine& eng = cpu_engine();
  const memory::dims src_dims = {s.n, s.c, s.h, s.w}, dst_dims = {s.n, s.oc, s.oh, s.ow};
  const memory::dims w_dims = s.groups == 1 ? memory::dims{s.oc, s.c, s.kh, s.kw}
                                            : memory::dims{s.groups, s.oc / s.groups, s.c / s.groups, s.kh, s.kw};
  const tag act = s.channels_last ? tag::nhwc : tag::nchw;
  const memory::desc user_src(src_dims, f32, act), user_dst(dst_dims, f32, act),
      user_w(w_dims, f32, s.groups == 1 ? tag::oihw : tag::goihw);
  const memory::desc any_src(src_dims, f32, tag::any), any_dst(dst_dims, f32, tag::any), any_w(w_dims, f32, tag::any);
  const memory::dims strides = {s.sh, s.sw}, dilates = {s.dh - 1, s.dw - 1}, pad = {s.ph, s.pw};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // Either primitive descriptor: the operand after dy (its user layout, oneDNN's, its argument) and the result.
  auto take = [&](const auto& pd, const dnnl::primitive& primitive, const memory::desc& user_b, const memory::desc& b,
                  int arg_b, const memory::desc& user_out, const memory::desc& out, int arg_out) {
    plan->primitive = primitive;
    plan->impl = pd.impl_info_str();
    plan->scratchpad = pd.scratchpad_desc();
    plan->user[0] = user_dst;
    plan->md[0] = pd.diff_dst_desc();
    plan->user[1] = user_b;
    plan->md[1] = b;
    plan->arg[1] = arg_b;
    plan->user[2] = user_out;
    plan->md[2] = out;
    plan->arg[2] = arg_out;
  };
  // The primitive on these layouts (tag::any: oneDNN's choice); false where oneDNN has only its reference kernel
  // for them (and `required` is false; the last try takes whatever oneDNN has).
  auto build = [&](const memory::desc& src, const memory::desc& w, const memory::desc& dst, bool required) {
    try {
      // The backward primitives take the forward's primitive descriptor as a hint of the layouts it would use.
      const dnnl::convolution_forward::primitive_desc hint(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                          w, dst, strides, dilates, pad, pad),
          eng);
      if (!weights_grad) {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, w, dst, strides, dilates,
                                                  pad, pad),
            attr, eng, hint);
        if (!required && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
        take(pd, dnnl::convolution_backward_data(pd), user_w, pd.weights_desc(), DNNL_ARG_WEIGHTS, user_src,
             pd.diff_src_desc(), DNNL_ARG_DIFF_SRC);
      } else {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, w, dst, strides,
                                                     dilates, pad, pad),
            attr, eng, hint);
        if (!required && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
        take(pd, dnnl::convolution_backward_weights(pd), user_src, pd.src_desc(), DNNL_ARG_SRC, user_w,
             pd.diff_weights_desc(), DNNL_ARG_DIFF_WEIGHTS);
      }
      return true;
    } catch (const dnnl::error&) {
      if (required) throw;
      return false;
    }
  };
  // NHWC activations (conv2d_backward_*_nhwc) stay NHWC: oneDNN's AVX-512 backward kernels read and write them
  // as fast as their blocked layout (measured on ResNet-18's layers), so no reorder of the gradient or the
  // activations per call. The weights' layout stays oneDNN's.
  bool built = false;
  if (weights_grad && gemm_weight_grad_pays(s)) {
    const memory::desc nchw_src(src_dims, f32, tag::nchw), nchw_dst(dst_dims, f32, tag::nchw);
    built = build(nchw_src, user_w, nchw_dst, false);
  }
  if (!built && s.channels_last) built = build(user_src, any_w, user_dst, false);
  if (!built) build(any_src, any_w, any_dst, true);
  plan->arg[0] = DNNL_ARG_DIFF_DST;
  size_t offset = 0;
  for (int i = 0; i < 3; ++i) {
    plan->reorder[i] = plan->md[i] != plan->user[i];
    if (!plan->reorder[i]) continue;
    plan->convert[i] = i < 2 ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->user[i], eng, plan->md[i]))
                             : dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->md[i], eng, plan->user[i]));
    plan->offset[i] = offset;
    offset += align64(plan->md[i].get_size());
  }
  plan->scratch_offset = offset;
  offset += align64(plan->scratchpad.get_size());
  plan->arena_bytes = offset;
  return plan;
}

// One gradient call site of a model: Conv2dBackward<false> the input's, Conv2dBackward<true> the weight's.
template <bool WeightsGrad>
class Conv2dBackward {
 public:
  // dy: the output gradient; b: the weights (input gradient) or the forward's input (weight gradient);
  // out: the gradient. 0 on success; non-zero after writing a message into error[0 .. capacity).
  int run(const Conv2dSpec& s, const float* dy, const float* b, float* out, int32_t num_threads, char* error,
          size_t capacity) noexcept {
    return report_errors(WeightsGrad ? "convolution weight gradient" : "convolution input gradient", error, capacity,
                         [&] {
      const int requested = num_threads > 0 ? num_threads : omp_get_max_threads();
      const int64_t macs = s.n * s.oc * s.oh * s.ow * (s.c / s.groups) * s.kh * s.kw;
      const int64_t work = s.c / s.groups == 1 ? macs * kDepthwiseWork : macs;
      const int threads = work < kConvParallelMinWork ? 1 : requested;
      ThreadScope scope(threads);
      const std::shared_ptr<const Conv2dBackwardPlan> p =
          plans_.get(s, threads, nullptr, [](const Conv2dSpec& spec, int t, const float*) {
            return make_conv2d_backward_plan(spec, t, WeightsGrad);
          });
      const dnnl::engine& eng = cpu_engine();
      unsigned char* arena = thread_arena(p->arena_bytes);
      static thread_local dnnl::stream stream(eng);
      using dnnl::memory;
      void* user[3] = {const_cast<float*>(dy), const_cast<float*>(b), out};
      memory mem[3];
      for (int i = 0; i < 3; ++i) {
        mem[i] = memory(p->md[i], eng, p->reorder[i] ? static_cast<void*>(arena + p->offset[i]) : user[i]);
        if (p->reorder[i] && i < 2) {
          memory from(p->user[i], eng, user[i]);
          p->convert[i].execute(stream, from, mem[i]);
        }
      }
      memory scratch(p->scratchpad, eng, arena + p->scratch_offset);
      p->primitive.execute(stream, {{p->arg[0], mem[0]}, {p->arg[1], mem[1]}, {p->arg[2], mem[2]},
                                    {DNNL_ARG_SCRATCHPAD, scratch}});
      if (p->reorder[2]) {
        memory to(p->user[2], eng, out);
        p->convert[2].execute(stream, mem[2], to);
      }
      stream.wait();
    });
  }

 private:
  PlanCache<Conv2dSpec, Conv2dBackwardPlan> plans_;
};

// y[m, n] = x[m, k] @ w[n, k]^T + bias[n] + residual[m, n], then the activation: PyTorch's linear with the
// leading dimensions of x flattened into m, all buffers dense row-major.
struct LinearSpec {
  int64_t m, k, n, has_bias, has_residual;
  int64_t activation;
  float alpha, beta;
};

struct LinearPlan {
  LinearSpec spec;
  int threads;
  const float* user_weights;
  dnnl::matmul matmul;
  dnnl::memory::desc src, dst, bias, scratchpad;
  dnnl::memory weights;  // [k, n] in the kernel's packed layout, owned
  std::string impl;      // e.g. "brg:avx512_core"
  bool own_activation = false;  // as Conv2dPlan's
  mutable ArgPool args;
};

// oneDNN's matmul with the weights' layout left to it ("any"): on AVX-512 its brgemm kernel, whose weights are
// packed into panels here, once, instead of by every GEMM call as OpenBLAS does (docs/onednn.md, "Linear").
inline std::shared_ptr<LinearPlan> make_linear_plan(const LinearSpec& s, int threads, const float* w) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  auto plan = std::make_shared<LinearPlan>();
  plan->spec = s;
  plan->threads = threads;
  plan->user_weights = w;
  const dnnl::engine& eng = cpu_engine();
  plan->src = memory::desc({s.m, s.k}, f32, tag::ab);
  plan->dst = memory::desc({s.m, s.n}, f32, tag::ab);
  plan->bias = memory::desc({1, s.n}, f32, tag::ab);
  const memory::desc any_w({s.k, s.n}, f32, tag::any), user_w({s.k, s.n}, f32, tag::ba);  // w[n, k] is w^T [k, n]
  plan->own_activation = own_activation_pays(s.activation);
  const dnnl::primitive_attr attr =
      epilogue_attr(s.has_residual, plan->own_activation ? kNoActivation : s.activation, s.alpha, s.beta);
  const dnnl::matmul::desc desc = s.has_bias ? dnnl::matmul::desc(plan->src, any_w, plan->bias, plan->dst)
                                             : dnnl::matmul::desc(plan->src, any_w, plan->dst);
  const dnnl::matmul::primitive_desc pd(desc, attr, eng);
  plan->matmul = dnnl::matmul(pd);
  plan->impl = pd.impl_info_str();
  plan->scratchpad = pd.scratchpad_desc();
  plan->weights = packed_weights(user_w, w, pd.weights_desc());
  return plan;
}

// Below this many multiply-adds a linear runs on one thread: measured on AVX-512, 16x64x256 (2^18) took 5.2 us
// on one thread and 7.7 on two, 8x128x512 (2^19) 9.3 and 7.3.
constexpr int64_t kLinearParallelMinWork = int64_t{1} << 19;
// ... except a matrix-vector product whose weights reach this many floats (1 MiB): it streams them from memory
// or L3, and two threads stream about twice as fast. RegNetY-400MF's 440x1000 head (2^18.7 multiply-adds) took
// 172-196 us on one thread and 108 on two, where serial it took 166-184 (AMD EPYC, AVX-512).
constexpr int64_t kMatVecParallelMinWeights = int64_t{1} << 18;

inline int linear_threads(const LinearSpec& s, int requested) {
  if (s.m * s.n * s.k >= kLinearParallelMinWork) return requested;
  const bool matvec = s.m == 1 && !s.has_residual && s.activation == kNoActivation;
  return matvec && s.n * s.k >= kMatVecParallelMinWeights ? requested : 1;
}

// One linear call site of a model.
class Linear {
 public:
  // 0 on success; non-zero after writing a message into error[0 .. capacity).
  int run(const LinearSpec& s, const float* x, const float* w, const float* bias, const float* residual, float* y,
          int32_t num_threads, char* error, size_t capacity) noexcept {
    return report_errors("linear", error, capacity, [&] {
      const int requested = num_threads > 0 ? num_threads : omp_get_max_threads();
      const int threads = linear_threads(s, requested);
      ThreadScope scope(threads);
      if (s.m == 1 && !s.has_residual && s.activation == kNoActivation) {
        // A matrix-vector product (a classifier head) is memory-bound: oneDNN's sgemm streams PyTorch's [n, k]
        // weights as they are, as fast as OpenBLAS's gemv (50 us for 512x1000), where the packed brgemm kernel
        // took 62.
        if (s.has_bias) std::memcpy(y, bias, static_cast<size_t>(s.n) * sizeof(float));
        const dnnl_status_t status = dnnl_sgemm('N', 'T', 1, s.n, s.k, 1.0f, x, s.k, w, s.k,
                                                s.has_bias ? 1.0f : 0.0f, y, s.n);
        if (status != dnnl_success) throw dnnl::error(status, "could not run the matrix-vector product");
        return;
      }
      const std::shared_ptr<const LinearPlan> p = plans_.get(s, threads, w, make_linear_plan);
      const dnnl::engine& eng = cpu_engine();
      static thread_local dnnl::stream stream(eng);
      if (s.has_residual && residual != y) std::memcpy(y, residual, p->dst.get_size());  // the sum post-op adds it
      p->args.execute(p->matmul, stream, p->src, x, &p->weights, p->weights.get_desc(), nullptr, p->bias,
                      s.has_bias ? bias : nullptr, p->dst, y, p->scratchpad, thread_arena(p->scratchpad.get_size()));
      stream.wait();
      if (p->own_activation) activation_in_place(s.activation, y, s.m * s.n, threads);
    });
  }

 private:
  PlanCache<LinearSpec, LinearPlan> plans_;
};

}  // namespace thunderc_onednn

#endif /* THUNDERC_ONEDNN_KERNELS_H_ */
