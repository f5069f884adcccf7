/* The ATen shim: how code generated for the `torch` executor calls LibTorch without including it.
 * libthunderc_aten_shim.so (prebuilt with thunderc, links LibTorch) runs one catalog operator on
 * contiguous buffers. Generated sources include only this small C header, so they compile fast.
 *
 * Tensors are thunderc_buffers (thunderc/buffer.h). Attributes are encoded in
 * the operator's declared order (core/ir/attr_codec.h). Returns 0, or non-zero with a message in `error`. */
#ifndef THUNDERC_ATEN_SHIM_H_
#define THUNDERC_ATEN_SHIM_H_

#include <stddef.h>
#include <stdint.h>

#include "thunderc/buffer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define THUNDERC_ATEN_SHIM_VERSION 1
#define THUNDERC_ATEN_SHIM_API __attribute__((visibility("default")))

enum { THUNDERC_OPERAND_NONE = 0, THUNDERC_OPERAND_TENSOR = 1, THUNDERC_OPERAND_INT = 2,
       THUNDERC_OPERAND_FLOAT = 3, THUNDERC_OPERAND_BOOL = 4 };

typedef struct thunderc_operand {
  int32_t kind;
  const thunderc_buffer* tensor; /* kind == TENSOR */
  int64_t i;                     /* INT, BOOL */
  double f;                      /* FLOAT */
} thunderc_operand;

THUNDERC_ATEN_SHIM_API uint32_t thunderc_aten_shim_version(void);

THUNDERC_ATEN_SHIM_API int32_t thunderc_aten_call(const char* op, const thunderc_operand* inputs, int32_t num_inputs,
                           const int64_t* attr_ints, int32_t num_attr_ints, const double* attr_floats,
                           int32_t num_attr_floats, const char* const* attr_strings, int32_t num_attr_strings,
                           const thunderc_buffer* outputs, int32_t num_outputs, char* error, size_t error_capacity);

/* Sets LibTorch's intra-op thread count when it differs (n <= 0: leave it). */
THUNDERC_ATEN_SHIM_API void thunderc_aten_set_num_threads(int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* THUNDERC_ATEN_SHIM_H_ */
