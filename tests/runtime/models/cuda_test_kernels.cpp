// The kernels of cuda_model.cpp, written for the fake CUDA driver (tests/runtime/fake_cuda): each
// thunderc_emu_launch_<name> runs the whole grid on the host, thread by thread, so a launch that covers too
// few elements gives wrong results. args[i] points at the i-th kernel parameter, as cuLaunchKernel takes them.
//   affine(const float* x, float* out, const float* w, long long n): out[i] = x[i] * w[0] + w[1]
//   rowsum(const float* x, float* s, long long rows, long long cols): s[r] = sum_c x[r, c], one thread per row
// TEST_KERNELS_PARTIAL leaves rowsum out (a library that lacks a kernel). TEST_KERNELS_CAPTURABLE also
// publishes the parameter sizes (thunderc_emu_param_sizes_<name>, as generated kernels.cu does), without
// which the fake driver refuses to capture a launch into a CUDA graph.

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {
template <class T>
T arg(void** args, int i) {
  return *static_cast<T*>(args[i]);
}
}  // namespace

EXPORT void thunderc_emu_launch_affine(const unsigned* grid, const unsigned* block, unsigned, void** args) {
  const float* x = arg<const float*>(args, 0);
  float* out = arg<float*>(args, 1);
  const float* w = arg<const float*>(args, 2);
  const long long n = arg<long long>(args, 3);
  for (unsigned b = 0; b < grid[0]; ++b)
    for (unsigned t = 0; t < block[0]; ++t) {
      const long long i = static_cast<long long>(b) * block[0] + t;
      if (i < n) out[i] = x[i] * w[0] + w[1];
    }
}

#ifndef TEST_KERNELS_PARTIAL
EXPORT void thunderc_emu_launch_rowsum(const unsigned* grid, const unsigned* block, unsigned, void** args) {
  const float* x = arg<const float*>(args, 0);
  float* s = arg<float*>(args, 1);
  const long long rows = arg<long long>(args, 2), cols = arg<long long>(args, 3);
  for (unsigned b = 0; b < grid[0]; ++b)
    for (unsigned t = 0; t < block[0]; ++t) {
      const long long r = static_cast<long long>(b) * block[0] + t;
      if (r >= rows) continue;
      float acc = 0;
      for (long long c = 0; c < cols; ++c) acc += x[r * cols + c];
      s[r] = acc;
    }
}
#endif

#ifdef TEST_KERNELS_CAPTURABLE
EXPORT const unsigned long thunderc_emu_param_sizes_affine[] = {4ul, sizeof(const float*), sizeof(float*),
                                                                sizeof(const float*), sizeof(long long)};
EXPORT const unsigned long thunderc_emu_param_sizes_rowsum[] = {4ul, sizeof(const float*), sizeof(float*),
                                                                sizeof(long long), sizeof(long long)};
#endif
