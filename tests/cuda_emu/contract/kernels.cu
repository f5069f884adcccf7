// A kernel file in the exact shape the code generator writes (the contract of tests/cuda_emu/README.md).
// Compiled three ways by the tests: as host C++ into a shared library (g++ -x c++ -DTHUNDERC_CUDA_EMULATION),
// and by NVRTC for sm_80/sm_90 (no #include there: the emulation block is skipped).
#ifdef THUNDERC_CUDA_EMULATION
#include "thunderc/cuda_emu.h"
#endif
#ifndef THUNDERC_CUDA_EMULATION
#define THUNDERC_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

static __device__ __forceinline__ float tc_silu(float x) { return x / (1.0f + expf(-x)); }

static __device__ __forceinline__ float tc_warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// p0[i] = silu(p1[i]) * p2[i % p2_len]   (elementwise, grid-stride)
extern "C" __global__ void __launch_bounds__(256) tc_v0_k3(float* __restrict__ p0, const float* __restrict__ p1,
                                                           const long long* __restrict__ p2) {
  const long long n = p2[0];
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
    p0[i] = tc_silu(p1[i]) * (float)(i % 3 + 1);
  }
}

// p0[row] = sum(p1[row, :]) over `cols` columns; one block of 256 threads per row.
extern "C" __global__ void __launch_bounds__(256) tc_v0_k4(float* __restrict__ p0, const float* __restrict__ p1,
                                                           const long long* __restrict__ p2) {
  __shared__ float warp_sums[8];
  const long long cols = p2[0];
  const long long row = blockIdx.x;
  float acc = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) acc += p1[row * cols + c];
  acc = tc_warp_sum(acc);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
    v = tc_warp_sum(v);
    if (threadIdx.x == 0) p0[row] = v;
  }
}

// p0 = reverse of p1 within each block, through dynamic shared memory.
extern "C" __global__ void __launch_bounds__(128) tc_v0_k5(float* __restrict__ p0, const float* __restrict__ p1) {
  THUNDERC_DYNAMIC_SHARED(float, smem);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  smem[threadIdx.x] = p1[i];
  __syncthreads();
  p0[i] = smem[blockDim.x - 1 - threadIdx.x];
}

#ifdef THUNDERC_CUDA_EMULATION
extern "C" void thunderc_emu_launch_tc_v0_k3(const unsigned* grid, const unsigned* block, unsigned shared_bytes, void** args) {
  thunderc_emu::launch(grid, block, shared_bytes, [&] { tc_v0_k3(*(float**)args[0], *(const float**)args[1], *(const long long**)args[2]); });
}
extern "C" void thunderc_emu_launch_tc_v0_k4(const unsigned* grid, const unsigned* block, unsigned shared_bytes, void** args) {
  thunderc_emu::launch(grid, block, shared_bytes, [&] { tc_v0_k4(*(float**)args[0], *(const float**)args[1], *(const long long**)args[2]); });
}
extern "C" void thunderc_emu_launch_tc_v0_k5(const unsigned* grid, const unsigned* block, unsigned shared_bytes, void** args) {
  thunderc_emu::launch(grid, block, shared_bytes, [&] { tc_v0_k5(*(float**)args[0], *(const float**)args[1]); });
}
#endif
