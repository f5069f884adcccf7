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
 * must not race with anything else on the same model.
 *
 * Versioning: THUNDERC_RUNTIME_API_VERSION changes when this header changes incompatibly; option
 * structs carry their own size so that fields can be appended without breaking callers. */
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

/* ---- small helpers ----------------------------------------------------------------------------- */

/* PyTorch dtype name ("float32", "bool", ...) of a DLDataType, or NULL if thunderc has none. */
THUNDERC_API const char* thunderc_dtype_name(DLDataType dtype);
/* Inverse of thunderc_dtype_name; returns 0 and leaves *out alone for an unknown name. */
THUNDERC_API int thunderc_dtype_from_name(const char* name, DLDataType* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* THUNDERC_RUNTIME_H_ */
