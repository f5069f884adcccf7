// CUDA C++ text generators for float32 GEMM and 2-D convolution kernels on CUDA cores (the FP32 path of the
// `nvfuser` executor; tensor cores come later). Each generator returns one self-contained kernel: the text
// needs no #include (NVRTC compiles it as is), bakes every size and stride in as a literal, and prefixes
// every helper it defines with the kernel's name, so kernels of many generators can share one translation
// unit. The launch configuration comes with the text.
//
// GEMM paths (chosen by gemm_kernel from the shape and strides; see the header comment of each kernel):
//   * "tiled": shared-memory tiled SGEMM with a register micro-tile per thread and register-staged double
//     buffering (one __syncthreads per k-tile). Three tilings: the largest that still gives at least one
//     block per SM (132 on an H200) with at least 75% of its outputs inside the problem, else the smallest:
//         128x128 tile, BK 8,  256 threads, 8x8 micro-tile (GEMM: __launch_bounds__(256, 2), <= 128 registers)
//          64x64  tile, BK 16, 256 threads, 4x4 micro-tile
//          32x32  tile, BK 16,  64 threads, 4x4 micro-tile
//     float4 global loads where the contiguous extent and every other stride are multiples of 4 (base
//     pointers are only assumed 16-byte aligned); otherwise scalar loads, always coalesced along whichever
//     dimension of the operand has stride 1.
//   * "small": min(M, N) <= 8 (GEMV and small-batch linear). The small dimension S is kept whole in
//     registers (acc[S]) and every element of the large operand is loaded once:
//       - "warp-dot" when the large operand is contiguous along K: one warp per output column (all S
//         rows), lanes stride over K (float4 when aligned), warp-shuffle reduction;
//       - "slice" when it is contiguous along the output dimension: 32 outputs x 8 K-slices per block,
//         each thread sums its slice, the 8 partial sums are combined through shared memory.
// Convolution paths (conv2d_kernel):
//   * 1x1, stride 1, padding 0, groups 1: a GEMM per image (weight [K][C] x input [C][H*W]).
//   * depthwise (C / groups == 1, e.g. groups == C == K): direct, one thread per output element.
//   * otherwise: implicit GEMM per group (M = N*OH*OW, N = K/groups, K = C/groups*R*S) on the tiled kernel,
//     the input tile gathered (with zero padding) while loading.
//
// Extra parameters and epilogues must not use names ending in '_' (the kernels' own locals end in '_').
//
// Accuracy: every output is accumulated in float with fmaf. The tiled and direct kernels sum k in its natural
// order (0, 1, ..., K-1), like a naive loop. The small path sums 32 (warp-dot) or 8 (slice) interleaved
// partial sums and then adds those, which has the same or a smaller error bound. Expect agreement with a
// double-precision reference to about 1e-6 * sqrt(K) relative to the sum of |a*b| terms; the tests use rtol
// 1e-4 and atol 1e-4 * sqrt(K) on inputs in [-1, 1].
#pragma once

#include <string>
#include <vector>

namespace thunderc::cuda {

struct KernelLaunch {
  std::string name;                 // the extern "C" kernel name (given by the caller)
  std::string source;               // CUDA C++ text: the kernel and any helpers it needs
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;        // dynamic shared memory (0: the kernels use static __shared__ arrays)
  std::vector<std::string> params;  // parameter declarations in order, e.g. "float* __restrict__ c"
  std::string path;                 // which generator path was chosen, for tests and logs ("tiled128", ...)
};

// C[b][m][n] = epilogue(sum_k A[b][m][k] * B[b][k][n]) for b < batch, m < M, n < N, with element strides (any
// layout: transposed operands, batch stride 0 for a shared operand). A[b][m][k] is read at
// a_batch*b + a_row*m + a_col*k (likewise B with b_*), C is written at c_batch*b + c_row*m + c_col*n.
struct GemmSpec {
  long long batch = 1, M = 0, N = 0, K = 0;
  long long a_batch = 0, a_row = 0, a_col = 0;
  long long b_batch = 0, b_row = 0, b_col = 0;
  long long c_batch = 0, c_row = 0, c_col = 0;
  // Statements (CUDA C++) that set `float out` from `float acc` and the indices `long long b, m, n`; they may
  // read the kernel's extra parameters. Example for linear's bias: "out = acc + bias[n];".
  std::string epilogue = "out = acc;";
  std::vector<std::string> extra_params;  // appended after (c, a, b), e.g. "const float* __restrict__ bias"
  // 0: choose the path by the shape. 32, 64 or 128 forces the tiled kernel with that block tile (tests).
  int tile = 0;
  // Element type of A, B and C in memory: "float", or the prelude's half types "thunderc_f16" /
  // "thunderc_bf16" (converted to float on load, rounded on store; products and sums stay float).
  std::string elem = "float";
};
// Parameters: (E* c, const E* a, const E* b, extra_params...) with E = elem.
KernelLaunch gemm_kernel(const std::string& name, const GemmSpec& spec);

// Convolution NCHW, input [N][C][H][W] and weight [K][C/groups][R][S] contiguous, output [N][K][OH][OW]
// contiguous; the epilogue sees `float acc` and `long long n, k, oh, ow` and sets `float out`
// (e.g. "out = acc + bias[k];").
struct Conv2dSpec {
  long long N = 0, C = 0, H = 0, W = 0, K = 0, R = 0, S = 0, OH = 0, OW = 0;
  long long stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;
  std::string epilogue = "out = acc;";
  std::vector<std::string> extra_params;  // appended after (out, in, weight)
  // 0: choose the path by the shape. 32, 64 or 128 forces the tiled (implicit GEMM, or for 1x1 the GEMM)
  // kernel with that block tile, also for depthwise convolutions (tests).
  int tile = 0;
  std::string elem = "float";  // as GemmSpec::elem
};
// Parameters: (E* out, const E* in, const E* weight, extra_params...) with E = elem.
KernelLaunch conv2d_kernel(const std::string& name, const Conv2dSpec& spec);

}  // namespace thunderc::cuda
