/* thunderc generated-code ABI: the boundary between a compiled model .so and libthunderc_runtime.
 *
 * Every model .so produced by thunderc exports exactly these C symbols:
 *   uint32_t    thunderc_abi_version(void);             returns THUNDERC_ABI_VERSION it was built against
 *   const char* thunderc_embedded_manifest(size_t* len); the manifest JSON (byte-identical to OUT.json)
 *   int32_t     <entry>(const thunderc_call* call);     one per variant; names listed in the manifest
 *
 * The runtime checks the version before calling anything else. No C++ exception crosses this line:
 * an entry returns 0 on success, or non-zero after writing a NUL-terminated message into call->error.
 * This header is C (no C++ features) and changes only together with THUNDERC_ABI_VERSION. */
#ifndef THUNDERC_ABI_H_
#define THUNDERC_ABI_H_

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define THUNDERC_ABI_VERSION 1u

/* Arguments of one variant call. The runtime has already checked every guard in the manifest: inputs
 * have the variant's dtypes, shapes and device and are dense row-major (contiguous), and outputs are
 * allocated with the variant's output shapes and dtypes, contiguous. */
typedef struct thunderc_call {
  const DLTensor* const* inputs; /* num_inputs entries, manifest order */
  size_t num_inputs;
  DLTensor* const* outputs;      /* num_outputs entries, manifest order */
  size_t num_outputs;
  void* workspace;               /* workspace_bytes of scratch, 64-byte aligned; NULL when 0 */
  size_t workspace_bytes;
  int32_t num_threads;           /* threads the kernels may use; <= 0 means "decide yourself" */
  char* error;                   /* buffer for a message on failure */
  size_t error_capacity;
} thunderc_call;

typedef uint32_t (*thunderc_abi_version_fn)(void);
typedef const char* (*thunderc_embedded_manifest_fn)(size_t* len);
typedef int32_t (*thunderc_entry_fn)(const thunderc_call* call);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* THUNDERC_ABI_H_ */
