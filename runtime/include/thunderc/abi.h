/* thunderc generated-code ABI: the boundary between a compiled model .so and libthunderc_runtime.
 *
 * Every model .so produced by thunderc exports exactly these C symbols:
 *   uint32_t    thunderc_abi_version(void);             returns THUNDERC_ABI_VERSION it was built against
 *   const char* thunderc_embedded_manifest(size_t* len); the manifest JSON (byte-identical to OUT.json)
 *   int32_t     <entry>(const thunderc_call* call);     one per variant; names listed in the manifest
 * and, when any variant runs on CUDA:
 *   const thunderc_cuda_module* thunderc_cuda_module(void);  its kernels (cubins + PTX) and weights
 *     (the symbol's name equals the struct's, so C/C++ code defines it under another name with an asm label)
 * and, in a training model (thunderc --autograd; the manifest has a top-level "training" object):
 *   const unsigned char* thunderc_parameters(size_t* len);  the parameters' initial values (one blob)
 *   int32_t <backward entry>(const thunderc_call* call);     one per variant; names listed in the manifest
 *
 * The runtime checks the version before calling anything else. No C++ exception crosses this line:
 * an entry returns 0 on success, or non-zero after writing a NUL-terminated message into call->error.
 * This header is C (no C++ features) and changes only together with THUNDERC_ABI_VERSION.
 *
 * Version 2 added the device fields of thunderc_call (device, stream, weights, device_api) and
 * thunderc_cuda_module. A model .so links no CUDA library: it launches its kernels through the
 * thunderc_device_api the runtime passes in, and the runtime reaches the driver through dlopen.
 *
 * Version 3 added the library calls of thunderc_device_api (gemm: cuBLASLt; conv2d: cuDNN's graph API), so
 * that a model .so links neither library either: the runtime dlopens them, builds and caches their plans,
 * and answers THUNDERC_DEVICE_API_FALLBACK where it cannot (library missing, no engine for the problem on
 * this GPU); the generated code then runs the kernel it carries for that operation instead.
 *
 * Version 4 added thunderc_device_api.sdpa (thunderc_sdpa: scaled-dot-product attention through cuDNN's fused
 * flash-attention engines), appended at the end of the table; it falls back as gemm and conv2d do.
 *
 * Version 5 added training models (thunderc --autograd). Such a .so also exports thunderc_parameters
 * (thunderc_parameters_fn): one blob holding every parameter's initial value, dense row-major, parameter i
 * at manifest training.parameters[i].offset (a multiple of 64), training.parameters[i].bytes long. The
 * runtime copies each into a buffer of its own at open; those buffers are the live parameters, which every
 * training call passes in and the application updates in place (an optimizer step). Each variant is then a
 * training forward, and carries a backward entry (variants[v].training.backward.entry, a symbol of the .so
 * that is no variant of its own). Both take a thunderc_call as every entry does:
 *   forward:  inputs  = the model's inputs (guard order), then every parameter (training.parameters order);
 *             outputs = the model's outputs, then every saved tensor (variants[v].training.saved order);
 *   backward: inputs  = every parameter, then the saved tensors of one forward call, then one gradient per
 *             model output (that output's shape and dtype);
 *             outputs = the gradients in training.gradients order (shapes
 *             variants[v].training.backward.gradient_shapes; dtype of the input or parameter each belongs
 *             to); workspace: training.backward.workspace_bytes.
 * A model's training variants all run on the CPU or all on CUDA, where its parameters live (CUDA ones without
 * dropout); every tensor is dense row-major, a host one in a 64-byte aligned buffer. With --optimizer the .so
 * also exports the update, training.optimizer.entry: inputs = the trainable parameters, their gradients, the
 * state (slot-major), then one 0-d float32 tensor per training.optimizer.scalars entry; outputs = the
 * parameters, then the state, each the same buffer as its input (the update is elementwise, in place).
 *
 * Version 6 added dropout to training forwards (thunderc --autograd --module-mode train). A variant whose
 * manifest has training.rng_blocks = B > 0 takes one more forward input after the parameters: the RNG state,
 * an int64 [2] tensor (seed, offset). Its masks draw Philox4x32-10 counter blocks offset .. offset + B - 1
 * under key seed (codegen/include/thunderc/philox.h); the runtime passes offset + B to the next call. */
#ifndef THUNDERC_ABI_H_
#define THUNDERC_ABI_H_

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define THUNDERC_ABI_VERSION 6u

/* Returned by thunderc_device_api.gemm/conv2d/sdpa when the library cannot run this operation here (not
 * installed, too old, no engine for the problem on this GPU): nothing was enqueued and the caller runs its
 * own kernel for it. Every other non-zero status is an error. Negative, so never a CUresult. */
#define THUNDERC_DEVICE_API_FALLBACK (-1)

/* Element types of library-call operands (thunderc_gemm.dtype, thunderc_conv2d.dtype, thunderc_sdpa.dtype). */
#define THUNDERC_LIB_FLOAT32 0u
#define THUNDERC_LIB_FLOAT16 1u
#define THUNDERC_LIB_BFLOAT16 2u

/* How products are computed (.math): IEEE float32 on CUDA cores, or tensor cores with TF32 inputs and
 * float32 accumulation (--precision tf32). */
#define THUNDERC_LIB_MATH_FP32 0u
#define THUNDERC_LIB_MATH_TF32 1u

/* Activations a library call applies last (.activation). GELU_TANH is PyTorch's gelu(approximate='tanh'):
 * cuBLASLt's GELU epilogue is that approximation, so an erf gelu is never handed to it. */
#define THUNDERC_LIB_ACT_NONE 0u
#define THUNDERC_LIB_ACT_RELU 1u
#define THUNDERC_LIB_ACT_GELU_TANH 2u
#define THUNDERC_LIB_ACT_SIGMOID 3u
#define THUNDERC_LIB_ACT_SILU 4u

/* D[b][m][n] = act(sum_k A[b][m][k] * B[b][k][n] + bias[n]) for b < batch, m < M, n < N (a row-major view;
 * the runtime maps it onto cuBLASLt's column-major one). Element strides: A[b][m][k] is at
 * a_batch*b + a_row*m + a_col*k, with a_row == 1 or a_col == 1 (likewise B); D is dense along n
 * (D[b][m][n] at d_batch*b + d_row*m + n). A batch stride of 0 shares the operand across the batch. */
typedef struct thunderc_gemm {
  uint32_t struct_size; /* sizeof(thunderc_gemm) */
  uint32_t id;          /* unique among the model's library calls: the runtime caches its plan per (device, id) */
  uint32_t dtype;       /* THUNDERC_LIB_FLOAT32, ...: A, B, D and bias */
  uint32_t math;        /* THUNDERC_LIB_MATH_* */
  uint32_t activation;  /* THUNDERC_LIB_ACT_NONE, _RELU or _GELU_TANH */
  uint32_t has_bias;    /* 1: add bias[n] (N elements) before the activation */
  int64_t batch, m, n, k;
  int64_t a_batch, a_row, a_col;
  int64_t b_batch, b_row, b_col;
  int64_t d_batch, d_row;
} thunderc_gemm;

/* y = act(conv2d(x, w) + bias[k] + residual): x [N][C][H][W], w [K][C/groups][R][S], y and residual
 * [N][K][OH][OW], all dense row-major (NCHW); PyTorch's cross-correlation, zero padding. */
typedef struct thunderc_conv2d {
  uint32_t struct_size; /* sizeof(thunderc_conv2d) */
  uint32_t id;          /* as thunderc_gemm.id (one numbering for all library calls of a model) */
  uint32_t dtype;
  uint32_t math;
  uint32_t activation;  /* THUNDERC_LIB_ACT_NONE, _RELU, _SIGMOID or _SILU */
  uint32_t has_bias;
  uint32_t has_residual;
  uint32_t reserved;    /* 0 */
  int64_t n, c, h, w, k, r, s, oh, ow;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
} thunderc_conv2d;

/* O[b][h][i][:] = softmax_j(scale * Q[b][h][i][:] . K[b][h][j][:] + mask[b][h][i][j]) . V[b][h][j][:],
 * PyTorch's scaled_dot_product_attention. Q [batch][heads][sq][d], K [batch][heads][skv][d],
 * V [batch][heads][skv][dv], O [batch][heads][sq][dv]: dense row-major. causal: query i sees keys j <= i only
 * (PyTorch's is_causal: top-left aligned). mask (has_mask): additive, of type dtype, element [b][h][i][j] at
 * mask_batch*b + mask_head*h + mask_row*i + j (a stride of 0 broadcasts that dimension). */
typedef struct thunderc_sdpa {
  uint32_t struct_size; /* sizeof(thunderc_sdpa) */
  uint32_t id;          /* as thunderc_gemm.id */
  uint32_t dtype;       /* THUNDERC_LIB_FLOAT16 or THUNDERC_LIB_BFLOAT16 (cuDNN's fused attention); others: FALLBACK */
  uint32_t causal;
  uint32_t has_mask;
  uint32_t reserved;    /* 0 */
  int64_t batch, heads, sq, skv, d, dv;
  int64_t mask_batch, mask_head, mask_row;
  double scale;
} thunderc_sdpa;

/* What the runtime does for a CUDA variant's entry. Every function returns 0 on success, or non-zero
 * after writing a NUL-terminated message (naming the kernel or the call) into error[0 .. error_capacity). */
typedef struct thunderc_device_api {
  uint32_t struct_size; /* sizeof(thunderc_device_api) */
  void* context;        /* opaque; passed back as the first argument of every function below */
  /* Launches kernel number `kernel` (an index into thunderc_cuda_module.kernel_names) on the call's
   * stream. args[i] points at the i-th kernel parameter, as cuLaunchKernel takes them. */
  int32_t (*launch)(void* context, uint32_t kernel, const uint32_t grid[3], const uint32_t block[3],
                    uint32_t shared_bytes, void** args, char* error, size_t error_capacity);
  /* Device-to-device copy of `bytes` bytes, ordered on the call's stream. */
  int32_t (*copy)(void* context, void* dst, const void* src, size_t bytes, char* error, size_t error_capacity);
  /* ---- since ABI 3 ---- */
  /* One GEMM through cuBLASLt on the call's stream (bias: NULL unless has_bias). 0, THUNDERC_DEVICE_API_FALLBACK
   * or an error. */
  int32_t (*gemm)(void* context, const thunderc_gemm* op, void* d, const void* a, const void* b, const void* bias,
                  char* error, size_t error_capacity);
  /* One convolution through cuDNN on the call's stream (bias, residual: NULL unless has_bias/has_residual). */
  int32_t (*conv2d)(void* context, const thunderc_conv2d* op, void* y, const void* x, const void* w,
                    const void* bias, const void* residual, char* error, size_t error_capacity);
  /* ---- since ABI 4 ---- */
  /* Fused attention through cuDNN on the call's stream (mask: NULL unless has_mask). */
  int32_t (*sdpa)(void* context, const thunderc_sdpa* op, void* o, const void* q, const void* k, const void* v,
                  const void* mask, char* error, size_t error_capacity);
} thunderc_device_api;

/* Arguments of one variant call. The runtime has already checked every guard in the manifest: inputs
 * have the variant's dtypes, shapes and device and are dense row-major (contiguous), and outputs are
 * allocated with the variant's output shapes and dtypes, contiguous, on the variant's device. */
typedef struct thunderc_call {
  const DLTensor* const* inputs; /* num_inputs entries, manifest order */
  size_t num_inputs;
  DLTensor* const* outputs;      /* num_outputs entries, manifest order */
  size_t num_outputs;
  void* workspace;               /* workspace_bytes of scratch on `device`, 64-byte aligned; NULL when 0 */
  size_t workspace_bytes;
  int32_t num_threads;           /* CPU threads the kernels may use; <= 0 means "decide yourself" */
  char* error;                   /* buffer for a message on failure */
  size_t error_capacity;
  /* ---- since ABI 2 ---- */
  DLDevice device;               /* where inputs, outputs, workspace and weights live */
  void* stream;                  /* CUDA variants: the CUstream to order work on (NULL: the default stream) */
  const void* weights;           /* CUDA variants: the weights blob on `device` (thunderc_cuda_module.weights
                                    uploaded once); CPU variants: NULL (they read the embedded blob) */
  const thunderc_device_api* device_api; /* CUDA variants: how to launch; CPU variants: NULL */
} thunderc_call;

/* One compiled form of a model's CUDA kernels. */
#define THUNDERC_CUDA_CUBIN 1u /* SASS for exactly one architecture, e.g. "sm_90" */
#define THUNDERC_CUDA_PTX 2u   /* PTX for "compute_XY": the driver JIT-compiles it for XY and newer */

typedef struct thunderc_cuda_image {
  const char* arch;           /* "sm_80", "sm_90", "compute_90" */
  uint32_t kind;              /* THUNDERC_CUDA_CUBIN or THUNDERC_CUDA_PTX */
  const unsigned char* data;  /* cubin bytes, or NUL-terminated PTX text (size excludes the NUL) */
  size_t size;
} thunderc_cuda_image;

/* Every CUDA kernel of the model, in one module compiled for several architectures. The runtime loads
 * the cubin whose architecture equals the device's compute capability, else the newest PTX not newer
 * than the device (JIT), else fails naming both. */
typedef struct thunderc_cuda_module {
  uint32_t struct_size;            /* sizeof(thunderc_cuda_module) */
  size_t num_images;
  const thunderc_cuda_image* images;
  size_t num_kernels;
  const char* const* kernel_names; /* extern "C" names; launch()'s `kernel` indexes this */
  const unsigned char* weights;    /* the model's weights blob (host), uploaded to each device once */
  size_t weights_size;
} thunderc_cuda_module;

typedef uint32_t (*thunderc_abi_version_fn)(void);
typedef const char* (*thunderc_embedded_manifest_fn)(size_t* len);
typedef int32_t (*thunderc_entry_fn)(const thunderc_call* call);
typedef const thunderc_cuda_module* (*thunderc_cuda_module_fn)(void);
/* Since ABI 5, training models only: the parameters' initial values; *len receives the blob's size. */
typedef const unsigned char* (*thunderc_parameters_fn)(size_t* len);
/* Models compiled with thunderc --profile (the manifest's options.profile is true) also export
 *   uint32_t thunderc_profile(uint32_t variant, const char* const** labels, uint64_t** counters);
 * which returns how many operations variant `variant` times (0 for no such variant) and points *labels at
 * their labels and *counters at their counters: operation i has counters[2 i] nanoseconds and counters[2 i + 1]
 * calls, which the model's code adds to atomically (read them with atomic loads). An optional export that
 * older runtimes ignore, so THUNDERC_ABI_VERSION did not change for it. */
typedef uint32_t (*thunderc_profile_fn)(uint32_t variant, const char* const** labels, uint64_t** counters);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* THUNDERC_ABI_H_ */
