/* Buffers as generated code passes them to kernels and to the ATen shim: a dense row-major tensor.
 * `dtype` is thunderc's DType code (core/ir/dtype.h order: bool, uint8, int8, int16, int32, int64,
 * float16, bfloat16, float32, float64, complex64, complex128). */
#ifndef THUNDERC_BUFFER_H_
#define THUNDERC_BUFFER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct thunderc_buffer {
  void* data;
  const int64_t* shape;
  int32_t rank;
  int32_t dtype;
} thunderc_buffer;

#ifdef __cplusplus
}
#endif

#endif /* THUNDERC_BUFFER_H_ */
