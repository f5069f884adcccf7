/* The test-only extensions of the fake cuDNN (fake_libcudnn.cpp, built as <dir>/libcudnn.so.9 next to the fake
 * libcuda.so.1). A test reaches them with dlopen("libcudnn.so.9", RTLD_NOW) + dlsym, like fake_cuda.h.
 *
 * The fake implements, on the host, the subset of cuDNN 9's graph API that runtime/src/cudnn.cpp uses:
 * tensor (virtual INT32/BOOLEAN ones and by-value float scalars too), convolution, pointwise, matmul, reduction,
 * convolution-forward, pointwise, matmul and reduction operations, operation graphs, engine heuristics, engine
 * configs, engines, execution plans and variant packs. A graph is either one convolution with a pointwise
 * epilogue, or the fused-attention pattern (Q.K^T with K given transposed, pointwise/reduction ops on virtual
 * tensors, then P.V with P virtual of the I/O type; see attention_pattern in fake_libcudnn.cpp); anything else
 * is CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN. Attention graphs get no engine unless both head dims are
 * multiples of 8 up to 128 (cuDNN's fused attention). It is strict: an attribute set
 * with the wrong type or count, a descriptor of the wrong kind, a missing required attribute, inconsistent
 * dimensions or strides, a duplicated unique id or a wrong output size is CUDNN_STATUS_BAD_PARAM (with a
 * reason in cudnnGetLastErrorString). Execution computes the graph in double precision and stores float, or
 * half/bfloat16 rounded to nearest even (virtual half/bfloat16 tensors hold the rounded value too, as the
 * attention's P does on a GPU). By-value scalars are read when cudnnBackendExecute is called.
 *
 * Engines: #0 uses tensor cores (numerical note TENSOR_CORE; rounds x and w to TF32), no workspace;
 * #1 runs in full precision and needs $THUNDERC_FAKE_CUDNN_WORKSPACE bytes (default 4096) of workspace,
 * which it overwrites. Heuristics mode A (and B, INSTANT) give [#0, #1]; FALLBACK gives [#1].
 *
 * Environment, read when it matters (so a test may change it between plans):
 *   THUNDERC_FAKE_CUDNN_VERSION         what cudnnGetVersion returns (default 91900, i.e. 9.19.0)
 *   THUNDERC_FAKE_CUDNN_NO_ENGINE=1     heuristics give no engine config
 *   THUNDERC_FAKE_CUDNN_NO_GROUPED=1    ... none for a grouped convolution (W's C != X's C)
 *   THUNDERC_FAKE_CUDNN_NO_ATTENTION=1  ... none for an attention graph
 *   THUNDERC_FAKE_CUDNN_FAIL_ENGINE=i   an execution plan of engine #i fails to finalize (NOT_SUPPORTED)
 *   THUNDERC_FAKE_CUDNN_WORKSPACE=n     workspace bytes of engine #1
 *   THUNDERC_FAKE_CUDNN_EXECUTE_STATUS=s cudnnBackendExecute returns s (e.g. 5000) without computing
 *
 * When the process has libcuda.so.1 loaded (the fake driver), cudnnCreate records the current context and
 * cudnnBackendExecute requires that same context to be current (CUDNN_STATUS_BAD_PARAM otherwise). */
#ifndef THUNDERC_FAKE_CUDNN_H_
#define THUNDERC_FAKE_CUDNN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct thunderc_fake_cudnn_stats_t {
  uint64_t live_handles;
  uint64_t live_descriptors;
  uint64_t graphs_finalized;       /* operation graphs */
  uint64_t heuristics_finalized;
  uint64_t plans_finalized;        /* execution plans that finalized */
  uint64_t executes;               /* cudnnBackendExecute calls that computed */
  uint64_t failed_calls;           /* any call that returned an error */
  uint64_t interleaved;            /* executes whose stream was set by another thread, or that overlapped
                                      another call on the same handle (a missing lock in the caller) */
  int64_t last_engine;             /* engine index of the last execute, -1 before */
  int64_t last_workspace_size;     /* its plan's workspace */
  void* last_stream;               /* the handle's stream at the last execute */
} thunderc_fake_cudnn_stats_t;

void thunderc_fake_cudnn_stats(thunderc_fake_cudnn_stats_t* out);
/* Zeroes the cumulative counters (finalized, executes, failed_calls, interleaved); live counts stay. */
void thunderc_fake_cudnn_reset_counters(void);

typedef void (*thunderc_fake_cudnn_stats_fn)(thunderc_fake_cudnn_stats_t*);
typedef void (*thunderc_fake_cudnn_reset_counters_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* THUNDERC_FAKE_CUDNN_H_ */
