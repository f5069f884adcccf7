/* The test-only extensions of the fake CUDA driver (fake_libcuda.cpp, built as <dir>/libcuda.so.1).
 *
 * A test reaches them with dlopen("libcuda.so.1", RTLD_NOW) + dlsym: with LD_LIBRARY_PATH naming the fake's
 * directory (set by ctest's ENVIRONMENT property) that is the same library the runtime opened.
 *
 * Environment, read by cuInit:
 *   THUNDERC_FAKE_CUDA_DEVICES  number of devices (default 1)
 *   THUNDERC_FAKE_CUDA_KERNELS  colon-separated kernel libraries to register, in order
 * and on every cuDeviceGetAttribute (so a test may change it between models):
 *   THUNDERC_FAKE_CUDA_CC       compute capability "9.0" (default) for every device, or "8.6,9.0" per device
 *
 * Kernels run on the host: cuModuleGetFunction(name) resolves
 *   extern "C" void thunderc_emu_launch_<name>(const unsigned* grid, const unsigned* block,
 *                                               unsigned shared_bytes, void** args);
 * in the kernel library most recently registered when the module was loaded, and cuLaunchKernel calls it
 * synchronously after validating the launch like the driver does. "Device" memory is host memory.
 * Stream capture (cuStreamBeginCapture_v2 .. cuStreamEndCapture) records kernel launches (with copies of
 * their arguments, sized by thunderc_emu_param_sizes_<name> in the kernel library), device-to-device copies
 * and thunderc_fake_cuda_enqueue work as host closures; cuGraphLaunch replays them in order. */
#ifndef THUNDERC_FAKE_CUDA_H_
#define THUNDERC_FAKE_CUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct thunderc_fake_cuda_stats_t {
  uint64_t launches;          /* cuLaunchKernel calls that ran */
  uint64_t failed_launches;   /* cuLaunchKernel calls refused */
  uint64_t live_allocations;  /* cuMemAlloc blocks not yet freed */
  uint64_t live_bytes;        /* their bytes */
  uint64_t total_allocations; /* cuMemAlloc calls that succeeded */
  uint64_t htod_copies, htod_bytes;
  uint64_t dtoh_copies, dtoh_bytes;
  uint64_t dtod_copies;
  uint64_t module_loads;      /* cuModuleLoadData(Ex) that succeeded */
  uint64_t live_modules;
  uint64_t live_streams;
  uint64_t live_events;
  int32_t last_image_kind;    /* 0: none yet, 1: cubin (ELF), 2: PTX (as THUNDERC_CUDA_CUBIN / _PTX) */
  char last_image_arch[32];   /* "sm_90" for a cubin with a fake arch marker, the PTX .target ("sm_80"), or "" */
  char last_kernel[128];      /* name of the kernel last launched (or refused) */
  uint64_t graph_launches;    /* cuGraphLaunch calls (their kernels count in launches when they run) */
} thunderc_fake_cuda_stats_t;

/* A snapshot of the counters. */
void thunderc_fake_cuda_stats(thunderc_fake_cuda_stats_t* out);
/* Zeroes the cumulative counters (launches, copies, loads, total_allocations); live counts stay. */
void thunderc_fake_cuda_reset_counters(void);
/* Registers a kernel library (dlopen RTLD_NOW|RTLD_LOCAL). Modules loaded from now on bind to it.
 * 0 on success, else a CUresult (and the dlerror text on stderr). */
int thunderc_fake_cuda_register_kernels(const char* so_path);

/* The fake cuBLASLt (fake_libcublaslt.cpp, <dir>/libcublasLt.so.13): reached with dlopen("libcublasLt.so.13"). */
typedef struct thunderc_fake_cublaslt_stats_t {
  uint64_t heuristics;   /* cublasLtMatmulAlgoGetHeuristic calls */
  uint64_t matmuls;      /* cublasLtMatmul calls that ran */
  int64_t live_handles;  /* cublasLtCreate minus cublasLtDestroy */
} thunderc_fake_cublaslt_stats_t;
void thunderc_fake_cublaslt_stats(thunderc_fake_cublaslt_stats_t* out);
typedef void (*thunderc_fake_cublaslt_stats_fn)(thunderc_fake_cublaslt_stats_t*);

/* Runs fn(context) now, or, when `stream` is capturing, records it as a node of the graph being captured
 * (release(context) when the graph is gone). For the fake libraries: their work then replays with the
 * graph, as a real library's kernels captured on the stream would. 0, or a CUresult. */
int thunderc_fake_cuda_enqueue(void* stream, void (*fn)(void*), void* context, void (*release)(void*));
typedef int (*thunderc_fake_cuda_enqueue_fn)(void*, void (*)(void*), void*, void (*)(void*));

typedef void (*thunderc_fake_cuda_stats_fn)(thunderc_fake_cuda_stats_t*);
typedef void (*thunderc_fake_cuda_reset_counters_fn)(void);
typedef int (*thunderc_fake_cuda_register_kernels_fn)(const char*);

#ifdef __cplusplus
}
#endif

#endif /* THUNDERC_FAKE_CUDA_H_ */
