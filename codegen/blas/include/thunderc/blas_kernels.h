/* Kernels that code generated for the `blas` executor calls (codegen/blas/blas_backend.cpp). Header-only,
 * compiled into each model .so that uses the executor; it links CBLAS (OpenBLAS) and OpenMP.
 *
 * Every buffer is dense row-major. Templates take T = float or double (cblas_s* / cblas_d*).
 *
 * Threads: OpenBLAS's thread count is process-wide, and changing it while another thread is inside a
 * threaded OpenBLAS call is a race (the OpenMP build frees the per-thread buffers of the threads it drops).
 * So thunderc never asks OpenBLAS for threads. Each call's `nt` threads are thunderc's own OpenMP team:
 * a GEMM is split into row or column blocks, one single-threaded OpenBLAS call per thread (inside an active
 * OpenMP region OpenBLAS runs serially); batched GEMMs split the batch; im2col and depthwise loops split
 * channels. begin_call() sets OpenBLAS's process-wide count to 1 once, the first time a model calls it
 * (the pthread build has no other way to run serially); serial calls outside a region also hold the
 * calling thread's OpenMP count at 1, because the OpenMP build sizes a call by it. See docs/blas.md. */
#ifndef THUNDERC_BLAS_KERNELS_H_
#define THUNDERC_BLAS_KERNELS_H_

#include <cblas.h>
#include <omp.h>
#include <stdint.h>

#include <algorithm>
#include <cstring>
#include <mutex>

extern "C" {
/* OpenBLAS extensions (declared here too, so the generic cblas.h of another CBLAS is enough to compile). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace thunderc_blas {

// The variant prologue's call: OpenBLAS serial (once per process and .so), and this call's thread count
// (the runtime's num_threads, or the calling thread's OpenMP count when it is 0).
inline int begin_call(int32_t requested) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (openblas_get_num_threads() == 1) return;
    const int caller = omp_get_max_threads();  // the OpenMP build's setter also sets the caller's OpenMP count
    openblas_set_num_threads(1);
    omp_set_num_threads(caller);
  });
  return requested > 0 ? requested : omp_get_max_threads();
}

// Holds the calling thread's OpenMP count at 1 around a serial OpenBLAS call made outside a parallel
// region: OpenBLAS's OpenMP build otherwise threads the call by that count (and resets its process-wide
// count to it) whenever something else has changed the count begin_call() set.
class SerialCall {
 public:
  SerialCall() : saved_(omp_in_parallel() ? 1 : omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~SerialCall() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  SerialCall(const SerialCall&) = delete;
  SerialCall& operator=(const SerialCall&) = delete;

 private:
  int saved_;
};

// Below this many multiply-adds a GEMM runs on one thread (OpenBLAS's own threshold, 65536 x 4): waking
// a team costs more than it saves.
constexpr int64_t kParallelMinWork = 262144;

inline bool run_serial(int nt, int64_t work) { return nt <= 1 || work < kParallelMinWork || omp_in_parallel(); }

// [lo, hi) of `extent` for `part` of `parts`: equal blocks, rounded up to 8 (whole vectors of C) when
// that still gives every part some work.
inline void block_range(int64_t extent, int part, int parts, int64_t& lo, int64_t& hi) {
  int64_t chunk = (extent + parts - 1) / parts;
  if (extent >= 8 * (int64_t)parts) chunk = (chunk + 7) / 8 * 8;
  lo = std::min<int64_t>(extent, part * chunk);
  hi = std::min<int64_t>(extent, lo + chunk);
}

// C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, row-major; op(X) = X^T when trans_x; one thread.
// M == 1 or N == 1 go to GEMV (OpenBLAS's sgemm has a fixed packing cost that dominates there).
template <class T>
inline void gemm_serial(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                 const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // nothing to sum: C = beta * C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  SerialCall serial;
  if ((M == 1 || N == 1) && beta == T(0))  // GEMV scales y by beta: start from zeros, not stale workspace
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
  if (M == 1) {
    // C row = A row @ op(B): y[N] = op(B)^T x. op(B) = B^T (B stored [N,K]) -> y = B x; else y = B^T x.
    const int64_t incx = trans_a ? lda : 1;
    if (trans_b) {
      if constexpr (sizeof(T) == 4)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, alpha, (const float*)B, (int)ldb, (const float*)A, (int)incx, beta, (float*)C, 1);
      else
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, alpha, (const double*)B, (int)ldb, (const double*)A, (int)incx, beta, (double*)C, 1);
    } else {
      if constexpr (sizeof(T) == 4)
        cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, alpha, (const float*)B, (int)ldb, (const float*)A, (int)incx, beta, (float*)C, 1);
      else
        cblas_dgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, alpha, (const double*)B, (int)ldb, (const double*)A, (int)incx, beta, (double*)C, 1);
    }
    return;
  }
  if (N == 1) {
    // C column = op(A) @ b: b is column 0 of op(B): stride 1 if op(B) = B^T ([1,K] row), else ldb.
    const int64_t incx = trans_b ? 1 : ldb;
    if constexpr (sizeof(T) == 4)
      cblas_sgemv(CblasRowMajor, ta, trans_a ? (int)K : (int)M, trans_a ? (int)M : (int)K, alpha, (const float*)A, (int)lda, (const float*)B, (int)incx, beta, (float*)C, (int)ldc);
    else
      cblas_dgemv(CblasRowMajor, ta, trans_a ? (int)K : (int)M, trans_a ? (int)M : (int)K, alpha, (const double*)A, (int)lda, (const double*)B, (int)incx, beta, (double*)C, (int)ldc);
    return;
  }
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, alpha, (const float*)A, (int)lda, (const float*)B, (int)ldb, beta, (float*)C, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, alpha, (const double*)A, (int)lda, (const double*)B, (int)ldb, beta, (double*)C, (int)ldc);
}

// Part `part` of `parts` of gemm_serial's product: a block of C's rows (split_m) or of its columns.
template <class T>
inline void gemm_part(int part, int parts, bool split_m, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                      T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  int64_t lo, hi;
  block_range(split_m ? M : N, part, parts, lo, hi);
  if (lo >= hi) return;
  if (split_m)  // rows lo..hi of op(A): rows of A, or columns of A when it is read transposed
    gemm_serial<T>(trans_a, trans_b, hi - lo, N, K, alpha, trans_a ? A + lo : A + lo * lda, lda, B, ldb, beta,
                   C + lo * ldc, ldc);
  else  // columns lo..hi of op(B): columns of B, or rows of B when it is read transposed
    gemm_serial<T>(trans_a, trans_b, M, hi - lo, K, alpha, A, lda, trans_b ? B + lo * ldb : B + lo, ldb, beta,
                   C + lo, ldc);
}

// gemm_serial on `nt` threads: C split along its larger dimension, each block one serial OpenBLAS call.
template <class T>
inline void gemm(int nt, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                 const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (run_serial(nt, M * N * K)) {
    gemm_serial<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const bool split_m = M >= N;
#pragma omp parallel num_threads(nt)
  gemm_part<T>(omp_get_thread_num(), omp_get_num_threads(), split_m, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb,
               beta, C, ldc);
}

// dst[shape] = scale * src broadcast: src_strides[i] is src's element stride along dst dim i (0 where src
// is broadcast). The innermost dim is a memcpy (stride 1, scale 1) or a fill (stride 0).
template <class T>
inline void fill_broadcast(T* dst, const int64_t* shape, int rank, const T* src, const int64_t* src_strides, T scale) {
  if (rank == 0) {
    dst[0] = scale * src[0];
    return;
  }
  int64_t outer = 1;
  for (int i = 0; i < rank - 1; ++i) outer *= shape[i];
  const int64_t inner = shape[rank - 1], s_in = src_strides[rank - 1];
  if (inner == 0) return;
  int64_t idx[16] = {0};
  int64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    T* d = dst + o * inner;
    const T* s = src + off;
    if (s_in == 0) std::fill(d, d + inner, scale * s[0]);
    else if (s_in == 1 && scale == T(1)) std::memcpy(d, s, sizeof(T) * (size_t)inner);
    else
      for (int64_t j = 0; j < inner; ++j) d[j] = scale * s[j * s_in];
    for (int i = rank - 2; i >= 0; --i) {  // next outer index (odometer)
      off += src_strides[i];
      if (++idx[i] < shape[i]) break;
      off -= src_strides[i] * shape[i];
      idx[i] = 0;
    }
  }
}

// Batched C[b] = A[a_off(b)] @ B[b_off(b)] over an output batch of `batch_rank` dims (C's batches are
// contiguous, M*N apart); a_strides/b_strides are A's/B's element strides per batch dim (0: broadcast).
template <class T>
inline void batched_gemm(int nt, int batch_rank, const int64_t* batch_shape, const int64_t* a_strides,
                         const int64_t* b_strides, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                         const T* B, int64_t ldb, T* C) {
  int64_t count = 1;
  for (int i = 0; i < batch_rank; ++i) count *= batch_shape[i];
  // Batch c's offsets into A and B: c's index, digit by digit (last dim fastest), times the strides.
  auto offsets = [&](int64_t c, int64_t& a_off, int64_t& b_off) {
    a_off = b_off = 0;
    for (int i = batch_rank - 1; i >= 0; --i) {
      const int64_t d = c % batch_shape[i];
      c /= batch_shape[i];
      a_off += d * a_strides[i];
      b_off += d * b_strides[i];
    }
  };
  if (count >= nt && !run_serial(nt, count * M * N * K)) {  // whole GEMMs per thread
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < count; ++c) {
      int64_t a_off, b_off;
      offsets(c, a_off, b_off);
      gemm_serial<T>(false, false, M, N, K, T(1), A + a_off, lda, B + b_off, ldb, T(0), C + c * M * N, N);
    }
    return;
  }
  for (int64_t c = 0; c < count; ++c) {  // fewer batches than threads: each GEMM split
    int64_t a_off, b_off;
    offsets(c, a_off, b_off);
    gemm<T>(nt, false, false, M, N, K, T(1), A + a_off, lda, B + b_off, ldb, T(0), C + c * M * N, N);
  }
}

// Geometry of one conv2d (input [N, C, H, W], weight [OC, C/groups, KH, KW], output [N, OC, OH, OW]).
struct Conv2d {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
};

// Output columns [lo, hi) whose input column ow*s - p + k*d is inside [0, w).
inline void valid_range(int64_t ow, int64_t s, int64_t off, int64_t w, int64_t& lo, int64_t& hi) {
  // need 0 <= o*s + off < w
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = off >= w ? 0 : (w - off + s - 1) / s;
  lo = std::min(lo, ow);
  hi = std::max(std::min(hi, ow), lo);
}

// Channel c's KH*KW rows of im2col:
// col[(c*KH + kh)*KW + kw][oh*OW + ow] = x[c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw] (0 outside).
template <class T>
inline void im2col_channel(const T* x, int64_t c, const Conv2d& g, T* col) {
  const int64_t plane = g.oh * g.ow;
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      T* dst = col + ((c * g.kh + ki) * g.kw + kj) * plane;
      const int64_t off_w = kj * g.dw - g.pw;
      int64_t lo, hi;
      valid_range(g.ow, g.sw, off_w, g.w, lo, hi);
      for (int64_t o = 0; o < g.oh; ++o) {
        T* row = dst + o * g.ow;
        const int64_t ih = o * g.sh - g.ph + ki * g.dh;
        if (ih < 0 || ih >= g.h) {
          std::fill(row, row + g.ow, T(0));
          continue;
        }
        const T* src = x + (c * g.h + ih) * g.w + off_w;
        std::fill(row, row + lo, T(0));
        if (g.sw == 1) std::memcpy(row + lo, src + lo, sizeof(T) * (size_t)(hi - lo));
        else
          for (int64_t j = lo; j < hi; ++j) row[j] = src[j * g.sw];
        std::fill(row + hi, row + g.ow, T(0));
      }
    }
}

// Whether a convolution is a plain GEMM on its input (no im2col needed).
inline bool conv_is_pointwise(const Conv2d& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// Convolution as GEMMs: per image and group, out[OC/g, OH*OW] = W_g[OC/g, C/g*KH*KW] @ col[C/g*KH*KW, OH*OW].
// The output starts as the broadcast bias (beta = 1), so the bias costs no extra pass. 1x1 stride-1
// unpadded convolutions read the input directly (no im2col); `col` is scratch for the others.
// On `nt` threads: im2col split by channels, the bias rows and the GEMM by gemm_part, in one team per
// image and group.
template <class T>
inline void conv2d_gemm(int nt, const Conv2d& g, const T* x, const T* wt, const T* bias, T* y, T* col) {
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, plane = g.oh * g.ow, kdim = cg * g.kh * g.kw;
  const bool direct = conv_is_pointwise(g);
  const bool serial = run_serial(nt, ocg * plane * kdim), split_m = ocg >= plane;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const T* xin = x + (n * g.c + gi * cg) * g.h * g.w;
      const T* b = direct ? xin : col;
      const T* w = wt + gi * ocg * kdim;
      T* out = y + (n * g.oc + gi * ocg) * plane;
      const T beta = bias ? T(1) : T(0);
#pragma omp parallel num_threads(nt) if (!serial)
      {
        if (!direct) {
#pragma omp for schedule(static)
          for (int64_t c = 0; c < cg; ++c) im2col_channel<T>(xin, c, g, col);
        }
        if (bias) {
#pragma omp for schedule(static)
          for (int64_t o = 0; o < ocg; ++o) std::fill(out + o * plane, out + (o + 1) * plane, bias[gi * ocg + o]);
        }
        gemm_part<T>(omp_get_thread_num(), omp_get_num_threads(), split_m, false, false, ocg, plane, kdim, T(1), w, kdim,
                     b, plane, beta, out, plane);
      }
    }
}

// Depthwise (groups == C, one input channel per group, OC = C * multiplier) as direct loops: for every
// output row and kernel tap, a contiguous (stride 1: vectorized) multiply-add over the valid columns;
// output channels split over `nt` threads.
template <class T>
inline void conv2d_depthwise(int nt, const Conv2d& g, const T* x, const T* wt, const T* bias, T* y) {
  const int64_t mult = g.oc / g.c, plane = g.oh * g.ow;
#pragma omp parallel for collapse(2) num_threads(nt) schedule(static) if (nt > 1 && g.n * g.oc > 1)
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.oc; ++oc) {
      const T* xin = x + (n * g.c + oc / mult) * g.h * g.w;
      const T* k = wt + oc * g.kh * g.kw;
      T* out = y + (n * g.oc + oc) * plane;
      std::fill(out, out + plane, bias ? bias[oc] : T(0));
      if (g.kw == 3) {  // the common case: the three taps of a kernel row in one pass over the output row
        int64_t lo[3], hi[3];
        for (int64_t kj = 0; kj < 3; ++kj) valid_range(g.ow, g.sw, kj * g.dw - g.pw, g.w, lo[kj], hi[kj]);
        const int64_t lo3 = std::max(lo[0], std::max(lo[1], lo[2])), hi3 = std::max(lo3, std::min(hi[0], std::min(hi[1], hi[2])));
        for (int64_t o = 0; o < g.oh; ++o) {
          T* row = out + o * g.ow;
          for (int64_t ki = 0; ki < g.kh; ++ki) {
            const int64_t ih = o * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            const T* kr = k + ki * 3;
            const T k0 = kr[0], k1 = kr[1], k2 = kr[2];
            const T* s0 = xin + ih * g.w - g.pw;
            const T *s1 = s0 + g.dw, *s2 = s0 + 2 * g.dw;
            if (g.sw == 1)
              for (int64_t j = lo3; j < hi3; ++j) row[j] += k0 * s0[j] + k1 * s1[j] + k2 * s2[j];
            else
              for (int64_t j = lo3; j < hi3; ++j) row[j] += k0 * s0[j * g.sw] + k1 * s1[j * g.sw] + k2 * s2[j * g.sw];
            for (int64_t kj = 0; kj < 3; ++kj) {  // the border columns where some taps fall outside
              const T* src = s0 + kj * g.dw;
              for (int64_t j = lo[kj]; j < std::min(hi[kj], lo3); ++j) row[j] += kr[kj] * src[j * g.sw];
              for (int64_t j = std::max(lo[kj], hi3); j < hi[kj]; ++j) row[j] += kr[kj] * src[j * g.sw];
            }
          }
        }
        continue;
      }
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t off_w = kj * g.dw - g.pw;
        int64_t lo, hi;
        valid_range(g.ow, g.sw, off_w, g.w, lo, hi);
        for (int64_t o = 0; o < g.oh; ++o) {
          T* row = out + o * g.ow;
          for (int64_t ki = 0; ki < g.kh; ++ki) {
            const int64_t ih = o * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            const T kv = k[ki * g.kw + kj];
            const T* src = xin + ih * g.w + off_w;
            if (g.sw == 1)
              for (int64_t j = lo; j < hi; ++j) row[j] += kv * src[j];
            else
              for (int64_t j = lo; j < hi; ++j) row[j] += kv * src[j * g.sw];
          }
        }
      }
    }
}

}  // namespace thunderc_blas

#endif /* THUNDERC_BLAS_KERNELS_H_ */
