/* libthunderc_runtime: load and run a model compiled by thunderc (OUT.so + OUT.json).
 *
 * Pure C. No C++ exception ever crosses this API: every fallible call returns a thunderc_status,
 * where NULL means success and anything else is an error the caller owns and frees with
 * thunderc_status_free(). Strings and arrays returned by the getters are owned by the model and
 * stay valid until thunderc_model_close().
 *
 * Thread safety: after thunderc_model_open() returns, every function taking a model may be called
 * from any number of threads at once, including thunderc_model_run and
 * thunderc_model_run_alloc; only thunderc_model_close()
 * must not race with anything else on the same model (and, in a training model, a write to a parameter
 * must not race with a call that runs the model).
 *
 * Versioning: THUNDERC_RUNTIME_API_VERSION changes when this header changes incompatibly; option
 * structs carry their own size so that fields can be appended without breaking callers. (The training
 * section, for models compiled with thunderc --autograd, was an addition: the version stayed 1.) */
#ifndef THUNDERC_RUNTIME_H_
#define THUNDERC_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#if defined(THUNDERC_RUNTIME_BUILDING)
#define THUNDERC_API __attribute__((visibility("default")))
#else
#define THUNDERC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define THUNDERC_RUNTIME_API_VERSION 1u

/* DLPack 0.6 has no boolean type code; thunderc uses the code DLPack >= 0.8 assigned (kDLBool), so a
 * "bool" tensor is {THUNDERC_DL_BOOL, 8, 1} and stays distinct from uint8 {kDLUInt, 8, 1}. */
#define THUNDERC_DL_BOOL 6

/* ---- status ------------------------------------------------------------------------------------ */

typedef enum thunderc_status_code_t {
  THUNDERC_STATUS_OK = 0,
  THUNDERC_STATUS_INVALID_ARGUMENT = 1,    /* bad pointer/count/option, bad output buffer */
  THUNDERC_STATUS_NOT_FOUND = 2,           /* a file that does not exist */
  THUNDERC_STATUS_IO = 3,                  /* unreadable file, not an ELF shared object, dlopen failed */
  THUNDERC_STATUS_MANIFEST = 4,            /* manifest corrupt, invalid, or not belonging to the .so */
  THUNDERC_STATUS_ABI_MISMATCH = 5,        /* .so built for another ABI, or not a thunderc model */
  THUNDERC_STATUS_NO_MATCHING_VARIANT = 6, /* no variant's guards accept the inputs */
  THUNDERC_STATUS_DEVICE_UNAVAILABLE = 7,  /* the device a variant needs is not present */
  THUNDERC_STATUS_KERNEL_FAILED = 8,       /* the generated entry returned an error */
  THUNDERC_STATUS_OUT_OF_MEMORY = 9,
  THUNDERC_STATUS_INTERNAL = 10
} thunderc_status_code_t;

typedef struct thunderc_status_s* thunderc_status; /* NULL == OK */

/* THUNDERC_STATUS_OK for NULL. */
THUNDERC_API thunderc_status_code_t thunderc_status_code(thunderc_status status);
/* The message, "OK" for NULL. Owned by the status. */
THUNDERC_API const char* thunderc_status_message(thunderc_status status);
/* "OK", "INVALID_ARGUMENT", ... (static strings). */
THUNDERC_API const char* thunderc_status_code_name(thunderc_status_code_t code);
/* Accepts NULL. */
THUNDERC_API void thunderc_status_free(thunderc_status status);

/* ---- versions ---------------------------------------------------------------------------------- */

THUNDERC_API uint32_t thunderc_runtime_api_version(void); /* THUNDERC_RUNTIME_API_VERSION */
THUNDERC_API uint32_t thunderc_runtime_abi_version(void); /* THUNDERC_ABI_VERSION it loads */
THUNDERC_API const char* thunderc_runtime_version(void);  /* e.g. "0.1.0" */

/* ---- opening a model --------------------------------------------------------------------------- */

typedef struct thunderc_open_options {
  size_t struct_size;        /* sizeof(thunderc_open_options); set by thunderc_open_options_init */
  const char* manifest_path; /* NULL: "<so_path without .so>.json" if that file exists, else only the
                                copy embedded in the .so. A manifest that is used must be
                                byte-identical to the embedded one. */
  int32_t num_threads;       /* threads kernels may use; 0: $THUNDERC_NUM_THREADS, else all cores */
} thunderc_open_options;

THUNDERC_API void thunderc_open_options_init(thunderc_open_options* options);

typedef struct thunderc_model thunderc_model;

/* Loads so_path (dlopen RTLD_LOCAL|RTLD_NOW), checks ABI version and manifest, resolves every
 * variant's entry. options may be NULL (defaults). On error *out_model is set to NULL. */
THUNDERC_API thunderc_status thunderc_model_open(const char* so_path,
                                                 const thunderc_open_options* options,
                                                 thunderc_model** out_model);
/* Accepts NULL. Tensors returned by thunderc_model_run_alloc stay valid after close. */
THUNDERC_API void thunderc_model_close(thunderc_model* model);

/* ---- introspection ----------------------------------------------------------------------------- */

THUNDERC_API const char* thunderc_model_path(const thunderc_model* model);
/* The manifest JSON exactly as embedded (not NUL-terminated in the file, but NUL-terminated here). */
THUNDERC_API const char* thunderc_model_manifest(const thunderc_model* model, size_t* out_len);
THUNDERC_API int32_t thunderc_model_num_threads(const thunderc_model* model);
/* The instruction-set level whose host code this model runs, e.g. "x86-64-v4": the best of the levels it was
 * compiled for (--cpu-target, a list builds several) that this CPU has, at most $THUNDERC_MAX_CPU_TARGET when
 * set; "" when none fits (its variants are then unavailable) or the manifest predates --cpu-target. */
THUNDERC_API const char* thunderc_model_cpu_target(const thunderc_model* model);

THUNDERC_API size_t thunderc_model_num_inputs(const thunderc_model* model);
THUNDERC_API size_t thunderc_model_num_outputs(const thunderc_model* model);
/* NULL when the index is out of range. */
THUNDERC_API const char* thunderc_model_input_name(const thunderc_model* model, size_t index);
THUNDERC_API const char* thunderc_model_output_name(const thunderc_model* model, size_t index);
/* {0, 0, 0} when the index is out of range. */
THUNDERC_API DLDataType thunderc_model_input_dtype(const thunderc_model* model, size_t index);
THUNDERC_API DLDataType thunderc_model_output_dtype(const thunderc_model* model, size_t index);

THUNDERC_API size_t thunderc_model_num_variants(const thunderc_model* model);

/* What one variant takes or gives for one input/output. Pointers are owned by the model. */
typedef struct thunderc_tensor_spec {
  const char* name;
  DLDataType dtype;
  DLDevice device;
  int32_t ndim;
  const int64_t* shape; /* ndim entries */
} thunderc_tensor_spec;

typedef struct thunderc_variant_info {
  size_t id;
  const char* entry;      /* exported symbol */
  const char* signature;  /* e.g. "x: float32[1, 64] cpu" */
  DLDevice device;
  int32_t available;      /* 0 when its device is not present on this machine */
  size_t workspace_bytes;
  size_t num_inputs;
  size_t num_outputs;
} thunderc_variant_info;

THUNDERC_API thunderc_status thunderc_model_variant_info(const thunderc_model* model, size_t variant,
                                                         thunderc_variant_info* out_info);
/* Models compiled with thunderc --profile time every operation of their variants: what each took in all, over
   every call since the model was opened (concurrent calls included; thunderc bench prints it). */
typedef struct thunderc_operation_profile {
  const char* label;  /* "t26 = onednn.fusion(t24, w, b) [onednn_fusion0: conv2d_nhwc, relu]  # where the model
                         wrote it" */
  uint64_t calls;     /* how many times it ran */
  uint64_t total_ns;  /* nanoseconds it took in all (CLOCK_MONOTONIC) */
} thunderc_operation_profile;

/* How many operations variant `variant` times: 0 for a model compiled without --profile. */
THUNDERC_API size_t thunderc_model_num_profiled_operations(const thunderc_model* model, size_t variant);
/* Operation `index` (trace order) of variant `variant`; INVALID_ARGUMENT without --profile or out of range. */
THUNDERC_API thunderc_status thunderc_model_operation_profile(const thunderc_model* model, size_t variant,
                                                              size_t index, thunderc_operation_profile* out);

/* Guard of input `input` (manifest order) in variant `variant`; a symbolic dimension reads -1. */
THUNDERC_API thunderc_status thunderc_model_variant_input(const thunderc_model* model, size_t variant,
                                                          size_t input, thunderc_tensor_spec* out_spec);
/* Shape/dtype/device of output `output` produced by variant `variant`; a dimension that depends on a
 * symbol reads -1 (see thunderc_model_output_shape). */
THUNDERC_API thunderc_status thunderc_model_variant_output(const thunderc_model* model, size_t variant,
                                                           size_t output,
                                                           thunderc_tensor_spec* out_spec);

/* ---- running ----------------------------------------------------------------------------------- */

/* The variant run() would use for these inputs, or NO_MATCHING_VARIANT / INVALID_ARGUMENT. */
THUNDERC_API thunderc_status thunderc_model_select_variant(const thunderc_model* model,
                                                           const DLTensor* inputs, size_t num_inputs,
                                                           size_t* out_variant);

/* Shape of output `output` when run() is given these inputs (for symbolic variants it depends on the
 * inputs' sizes; thunderc_model_variant_output reports -1 for such dimensions). Writes *out_ndim, and
 * the extents into shape[0 .. *out_ndim) when capacity suffices (else INVALID_ARGUMENT). */
THUNDERC_API thunderc_status thunderc_model_output_shape(const thunderc_model* model, const DLTensor* inputs,
                                                         size_t num_inputs, size_t output, int64_t* shape,
                                                         int32_t capacity, int32_t* out_ndim);

/* Runs the first variant (id order) whose guards accept `inputs`. `outputs` are caller-provided
 * buffers whose dtype, shape, device and contiguity must equal the chosen variant's outputs (see
 * thunderc_model_variant_output); byte_offset is honoured; strides NULL or compact row-major. */
THUNDERC_API thunderc_status thunderc_model_run(thunderc_model* model, const DLTensor* inputs,
                                                size_t num_inputs, DLTensor* outputs,
                                                size_t num_outputs);

/* Same, but the runtime allocates each output (64-byte aligned, on the variant's device) and stores
 * it in outputs[i]; the caller owns each and releases it with outputs[i]->deleter(outputs[i]). On
 * error every outputs[i] is NULL and nothing needs releasing. */
THUNDERC_API thunderc_status thunderc_model_run_alloc(thunderc_model* model, const DLTensor* inputs,
                                                      size_t num_inputs, DLManagedTensor** outputs,
                                                      size_t num_outputs);

/* ---- running with options (CUDA streams) ------------------------------------------------------- */

/* Per-call options. Initialise with thunderc_run_options_init (sets struct_size), then set fields. */
typedef struct thunderc_run_options {
  size_t struct_size; /* sizeof(thunderc_run_options); set by thunderc_run_options_init */
  void* cuda_stream;  /* CUDA variants: the CUstream to enqueue the work on; NULL: the default (legacy)
                         stream of the inputs' device. Ignored by CPU variants. */
} thunderc_run_options;

THUNDERC_API void thunderc_run_options_init(thunderc_run_options* options);

/* thunderc_model_run / thunderc_model_run_alloc with options (NULL options = defaults, the same as the
 * plain functions).
 *
 * CUDA variants: the manifest's "cuda:N" means "any CUDA device": inputs and outputs must all be CUDA
 * tensors (kDLCUDA) on one ordinal, which is the device the call runs on. A host tensor is refused with a
 * message naming the input (copy it first, e.g. thunderc_device_copy_to_device). The call is asynchronous
 * like a CUDA kernel launch: it returns once the kernels are enqueued on the stream; synchronize the stream
 * (thunderc_device_synchronize, or a copy to the host on the same stream) before reading the outputs on the
 * host. run_alloc outputs are device memory (cuMemAlloc) that the deleter frees. */
THUNDERC_API thunderc_status thunderc_model_run_with_options(thunderc_model* model, const DLTensor* inputs,
                                                             size_t num_inputs, DLTensor* outputs,
                                                             size_t num_outputs,
                                                             const thunderc_run_options* options);
THUNDERC_API thunderc_status thunderc_model_run_alloc_with_options(thunderc_model* model, const DLTensor* inputs,
                                                                   size_t num_inputs, DLManagedTensor** outputs,
                                                                   size_t num_outputs,
                                                                   const thunderc_run_options* options);

/* Sets up, as the first CUDA call on that device would, the model's state on CUDA device `device`
 * (primary context, module image, kernels, weights upload). Optional: moves the one-time cost out of the
 * first run. *out_image (may be NULL) receives what was loaded, e.g. "sm_90 cubin" or "compute_80 PTX
 * (JIT-compiled for sm_86)"; owned by the model. DEVICE_UNAVAILABLE when the model has no CUDA variant,
 * there is no driver/device, or no image fits the device (the message names its sm_XY and the model's
 * architectures); KERNEL_FAILED/OUT_OF_MEMORY when loading or uploading fails. */
THUNDERC_API thunderc_status thunderc_model_prepare_device(thunderc_model* model, DLDevice device,
                                                           const char** out_image);

/* ---- training (models compiled with thunderc --autograd) ----------------------------------------- *
 * A training model (ABI 5; dropout ABI 6) has parameters, the trainable tensors it was compiled with, and every variant is
 * a training forward with a backward entry. At open the runtime copies each parameter's initial value into a
 * 64-byte aligned host buffer the model owns (CUDA: see Devices below): these are the live parameters, which every call of the model
 * reads (thunderc_model_run too) and which the application updates in place between calls (an optimizer
 * step through thunderc_model_parameter). A training step:
 *
 *   thunderc_model_forward_train(m, inputs, n, outputs, k, &ctx);   outputs, and ctx holds what was saved
 *   thunderc_model_backward(m, ctx, grad_outputs, k, gradients, g); d(loss)/d(each gradient's tensor)
 *   thunderc_train_context_free(ctx);
 *   ... update the parameters through thunderc_model_parameter ...
 *
 * Devices: a CPU training model's tensors are dense host (kDLCPU) tensors. A CUDA training model (thunderc
 * --autograd --device cuda) keeps its parameters in device memory of one CUDA device: host copies of the
 * initial values at open, uploaded by its first training call (forward_train, run) or thunderc_model_prepare_device
 * on cuda:N; thunderc_model_parameter refuses until then and gives {kDLCUDA, N} views after. Every tensor of a
 * call is then a dense CUDA tensor on that device (another device is INVALID_ARGUMENT: open the .so once per
 * device). forward_train and backward enqueue on the default stream and return once the device is done. The
 * functions below
 * that take a model not compiled with --autograd return INVALID_ARGUMENT saying so (the getters: 0 or
 * NULL). thunderc_model_run / run_alloc work on a training model too: they run the training forward with
 * the live parameters and discard what it saved (a training-mode forward, without a context).
 *
 * Buffers: a model compiled with --module-mode train also holds state without gradients (batch norm's
 * running statistics, parameter_is_trainable 0), which every training forward (forward_train, run) updates
 * once it has computed its outputs, as PyTorch's train() mode does.
 *
 * Dropout: in a model compiled with --module-mode train whose forward has dropout (p > 0), each training
 * forward draws its masks from a counter-based generator (Philox4x32-10) at an RNG state (seed, offset): the
 * same state gives the same masks, and backward uses the masks of the forward that made its context. A call
 * takes thunderc_model_rng_blocks(m, variant) counter blocks from offset. thunderc_model_forward_train and
 * run draw from the model's generator (seed 0, offset 0 at open; each call advances the offset by its blocks,
 * atomically, so concurrent calls draw distinct masks); thunderc_model_forward_train_seeded takes the state
 * as arguments and leaves the generator alone.
 *
 * Thread safety: forward_train, backward and run may run concurrently on one model when it has no buffers
 * (they only read the parameters); with buffers, forward_train and run write them and must not overlap each
 * other. Writing a parameter must not race with any call, nor with another write to it. */

/* 1 for a model compiled with thunderc --autograd, else 0 (also for NULL). */
THUNDERC_API int32_t thunderc_model_is_training(const thunderc_model* model);

/* The parameters (manifest training.parameters order); 0 / NULL for an inference model or a bad index. */
THUNDERC_API size_t thunderc_model_num_parameters(const thunderc_model* model);
THUNDERC_API const char* thunderc_model_parameter_name(const thunderc_model* model, size_t index);
/* 1 for a trainable parameter (it has a gradient), 0 for a buffer (updated by the training forward), -1 for
 * a bad index or an inference model. */
THUNDERC_API int32_t thunderc_model_parameter_is_trainable(const thunderc_model* model, size_t index);
/* Fills *out with a view of parameter `index`'s live state: data points into the model's 64-byte aligned
 * buffer, shape is owned by the model, strides NULL, byte_offset 0, device {kDLCPU, 0} (a CUDA training
 * model: {kDLCUDA, N} once placed, INVALID_ARGUMENT before; see Devices above); valid until
 * thunderc_model_close. The caller reads and writes the values in place (no copies); a write must not race
 * with a call that runs the model (forward_train, backward, run). */
THUNDERC_API thunderc_status thunderc_model_parameter(thunderc_model* model, size_t index, DLTensor* out);

/* The gradients backward writes, in order (manifest training.gradients): every parameter's, and the inputs'
 * compiled with --requires-grad. gradient_is_parameter: 1 for a parameter's, 0 for an input's, -1 for a bad
 * index. gradient_dtype: the dtype of that parameter or input ({0, 0, 0} for a bad index). */
THUNDERC_API size_t thunderc_model_num_gradients(const thunderc_model* model);
THUNDERC_API const char* thunderc_model_gradient_name(const thunderc_model* model, size_t index);
THUNDERC_API int32_t thunderc_model_gradient_is_parameter(const thunderc_model* model, size_t index);
THUNDERC_API DLDataType thunderc_model_gradient_dtype(const thunderc_model* model, size_t index);

/* What one forward_train saved for its backward (the saved tensors, owned by the context). */
typedef struct thunderc_train_context_s* thunderc_train_context;

/* Runs the training forward of the variant run() would pick (its guards check the model's inputs only) with
 * the live parameters. `outputs` are caller-provided, checked as thunderc_model_run checks them. On success
 * *out_context holds the tensors the forward saved; free it with thunderc_train_context_free. On error
 * *out_context is NULL. */
THUNDERC_API thunderc_status thunderc_model_forward_train(thunderc_model* model, const DLTensor* inputs,
                                                          size_t num_inputs, DLTensor* outputs, size_t num_outputs,
                                                          thunderc_train_context* out_context);

/* thunderc_model_forward_train with dropout's RNG state given: the masks of counter blocks offset ..
 * offset + thunderc_model_rng_blocks(model, variant) - 1 under `seed` (the model's generator is not used or
 * advanced). For a model without dropout the state is ignored. */
THUNDERC_API thunderc_status thunderc_model_forward_train_seeded(thunderc_model* model, const DLTensor* inputs,
                                                                 size_t num_inputs, DLTensor* outputs,
                                                                 size_t num_outputs, uint64_t seed, uint64_t offset,
                                                                 thunderc_train_context* out_context);

/* Counter blocks one training forward of variant `variant` draws: the step between two calls' offsets. 0 for
 * a variant without dropout, an inference model or a bad index. */
THUNDERC_API uint64_t thunderc_model_rng_blocks(const thunderc_model* model, size_t variant);

/* The model's generator (torch.manual_seed's counterpart): the seed and the offset of the next call that draws
 * from it. Setting it must not race with a training call. INVALID_ARGUMENT for an inference model. */
THUNDERC_API thunderc_status thunderc_model_set_rng_state(thunderc_model* model, uint64_t seed, uint64_t offset);
THUNDERC_API thunderc_status thunderc_model_rng_state(const thunderc_model* model, uint64_t* seed, uint64_t* offset);

/* Shape of gradient `gradient` for the variant that made `context` (manifest gradient_shapes): writes
 * *out_ndim, and the extents into shape[0 .. *out_ndim) when capacity suffices (else INVALID_ARGUMENT). */
THUNDERC_API thunderc_status thunderc_model_gradient_shape(const thunderc_model* model, thunderc_train_context context,
                                                           size_t gradient, int64_t* shape, int32_t capacity,
                                                           int32_t* out_ndim);

/* Runs the backward of the forward that made `context`, with the live parameters: grad_outputs[i] is the
 * gradient of the loss with respect to output i (that output's dtype and shape), gradients[j] receives
 * gradient j (thunderc_model_gradient_shape, thunderc_model_gradient_dtype). Every tensor is a dense host
 * tensor; gradients must not overlap each other, a grad_output or a parameter. A mismatch is
 * INVALID_ARGUMENT naming the tensor. The context is not consumed: backward may run again from it (e.g. with
 * other grad_outputs). It must come from this model (else INVALID_ARGUMENT). Use a context before the
 * parameters change: its saved tensors belong to the values the forward saw. */
THUNDERC_API thunderc_status thunderc_model_backward(thunderc_model* model, thunderc_train_context context,
                                                     const DLTensor* grad_outputs, size_t num_grad_outputs,
                                                     DLTensor* gradients, size_t num_gradients);

/* Frees a context and its saved tensors. Accepts NULL; may be called after its model is closed. */
THUNDERC_API void thunderc_train_context_free(thunderc_train_context context);

/* ---- optimizer (models compiled with thunderc --autograd --optimizer sgd|adamw) ------------------------ *
 * The .so holds the parameters' update (one fused loop or kernel per parameter, docs/training.md), the
 * runtime its state: per trainable parameter a momentum buffer (sgd) or exp_avg and exp_avg_sq (adamw), on the
 * parameters' device, zero at open (CUDA: at placement), and the number of steps taken. A step:
 *
 *   thunderc_optimizer_options opts;
 *   thunderc_model_optimizer_options_init(m, &opts);   the optimizer's defaults; set lr etc.
 *   ... forward_train, backward into gradients[g] ...
 *   thunderc_model_optimizer_step(m, gradients, g, &opts);
 *
 * The arithmetic is torch.optim's (LibTorch's torch::optim::SGD / AdamW): sgd with momentum, dampening,
 * nesterov and weight_decay (the first step starts the buffer at the gradient); adamw with betas, eps,
 * weight_decay (decoupled) and bias correction by the step count. Hyperparameters may change between steps (a
 * learning-rate schedule). A step must not race with any other call on the model. */
typedef struct thunderc_optimizer_options {
  size_t struct_size; /* sizeof(thunderc_optimizer_options); set by thunderc_model_optimizer_options_init */
  double lr;
  double weight_decay;
  double momentum;  /* sgd */
  double dampening; /* sgd */
  int32_t nesterov; /* sgd: 0 or 1 (needs momentum > 0 and dampening 0) */
  double beta1;     /* adamw */
  double beta2;     /* adamw */
  double eps;       /* adamw */
} thunderc_optimizer_options;

/* "sgd" or "adamw", NULL for a model compiled without --optimizer (or NULL). */
THUNDERC_API const char* thunderc_model_optimizer(const thunderc_model* model);
/* torch.optim's defaults for the model's optimizer: sgd lr 1e-3, momentum 0, dampening 0, weight_decay 0,
 * nesterov 0; adamw lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2. INVALID_ARGUMENT without one. */
THUNDERC_API thunderc_status thunderc_model_optimizer_options_init(const thunderc_model* model,
                                                                   thunderc_optimizer_options* options);
/* One update of every trainable parameter in place, from `gradients` as thunderc_model_backward wrote them
 * (num_gradients == thunderc_model_num_gradients; the inputs' gradients among them are not read; each
 * parameter's is checked as backward checks it). INVALID_ARGUMENT for options torch.optim refuses (negative lr,
 * weight_decay, momentum or eps, betas outside [0, 1), nesterov without momentum or with dampening), or before
 * a CUDA training model's parameters are on a device. */
THUNDERC_API thunderc_status thunderc_model_optimizer_step(thunderc_model* model, const DLTensor* gradients,
                                                           size_t num_gradients, const thunderc_optimizer_options* options);
/* Steps taken (adamw's bias correction counts them); settable, with the state below, to resume a run. */
THUNDERC_API uint64_t thunderc_model_optimizer_steps(const thunderc_model* model);
THUNDERC_API thunderc_status thunderc_model_set_optimizer_steps(thunderc_model* model, uint64_t steps);
/* A view of state slot `slot` (0: momentum_buffer or exp_avg, 1: exp_avg_sq) of trainable parameter
 * `parameter` (thunderc_model_parameter's index), on the parameters' device, to read or write in place. */
THUNDERC_API thunderc_status thunderc_model_optimizer_state(thunderc_model* model, size_t parameter, size_t slot,
                                                            DLTensor* out);

/* ---- devices ----------------------------------------------------------------------------------- *
 * Small helpers so that tools need no CUDA library of their own; the runtime reaches the CUDA driver
 * through dlopen("libcuda.so.1"). `device` is {kDLCPU, 0} or {kDLCUDA, ordinal}; for kDLCPU the helpers
 * work on host memory (alloc is 64-byte aligned, copies are memcpy, streams and synchronize are no-ops,
 * events read a steady host clock). `stream` is a CUstream (NULL: the default stream). Copies are
 * synchronous for the host: they return when the bytes have arrived, after the work already enqueued on
 * `stream`. Statuses: DEVICE_UNAVAILABLE (no driver, no such device), INVALID_ARGUMENT (bad device type,
 * NULL pointer, a driver INVALID_VALUE/INVALID_HANDLE), OUT_OF_MEMORY, KERNEL_FAILED (any other driver
 * error, e.g. an earlier kernel's asynchronous fault reported by a copy or synchronize). */

/* CPU: 1. CUDA: the number of CUDA devices, 0 when there is no driver or device (not an error; see
 * thunderc_device_available for why). Other device types: INVALID_ARGUMENT. */
THUNDERC_API thunderc_status thunderc_device_count(DLDeviceType device_type, int32_t* out_count);
/* NULL (OK) when `device` can be used here, else DEVICE_UNAVAILABLE saying why, e.g.
 * "cuda:0 is not available: no CUDA driver (dlopen libcuda.so.1: ...)". */
THUNDERC_API thunderc_status thunderc_device_available(DLDevice device);
/* Compute capability of a CUDA device (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR). */
THUNDERC_API thunderc_status thunderc_device_compute_capability(DLDevice device, int32_t* out_major,
                                                                int32_t* out_minor);

THUNDERC_API thunderc_status thunderc_device_alloc(DLDevice device, size_t bytes, void** out_ptr);
/* Accepts NULL. */
THUNDERC_API thunderc_status thunderc_device_free(DLDevice device, void* ptr);
/* Host -> device `bytes` bytes (host_src is ordinary host memory). */
THUNDERC_API thunderc_status thunderc_device_copy_to_device(DLDevice device, void* device_dst, const void* host_src,
                                                            size_t bytes, void* stream);
/* Device -> host; waits for earlier work on `stream` (e.g. a run), so the bytes are the results. */
THUNDERC_API thunderc_status thunderc_device_copy_to_host(DLDevice device, void* host_dst, const void* device_src,
                                                          size_t bytes, void* stream);
/* Waits for `stream` (NULL: everything on the device, cuCtxSynchronize). */
THUNDERC_API thunderc_status thunderc_device_synchronize(DLDevice device, void* stream);
/* A new stream on `device` (CUDA: cuStreamCreate, default flags); CPU: a dummy non-NULL handle. */
THUNDERC_API thunderc_status thunderc_device_stream_create(DLDevice device, void** out_stream);
/* Synchronizes, then destroys. Accepts NULL. A model keeps a workspace pool per stream: destroy a stream
 * only when no run on it is in flight (this function waits for it). */
THUNDERC_API thunderc_status thunderc_device_stream_destroy(DLDevice device, void* stream);

/* Timing with events (CUDA events on CUDA devices; a steady host clock on the CPU):
 *   create two events, record one before and one after the work on the same stream, then
 *   thunderc_device_event_elapsed_ms waits for `end` and gives the milliseconds between them. */
typedef struct thunderc_device_event_s* thunderc_device_event;
THUNDERC_API thunderc_status thunderc_device_event_create(DLDevice device, thunderc_device_event* out_event);
THUNDERC_API thunderc_status thunderc_device_event_record(thunderc_device_event event, void* stream);
THUNDERC_API thunderc_status thunderc_device_event_elapsed_ms(thunderc_device_event start, thunderc_device_event end,
                                                              float* out_ms);
/* Accepts NULL. */
THUNDERC_API void thunderc_device_event_destroy(thunderc_device_event event);

/* ---- small helpers ----------------------------------------------------------------------------- */

/* PyTorch dtype name ("float32", "bool", ...) of a DLDataType, or NULL if thunderc has none. */
THUNDERC_API const char* thunderc_dtype_name(DLDataType dtype);
/* Inverse of thunderc_dtype_name; returns 0 and leaves *out alone for an unknown name. */
THUNDERC_API int thunderc_dtype_from_name(const char* name, DLDataType* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* THUNDERC_RUNTIME_H_ */
