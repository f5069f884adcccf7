// autocast (--precision bf16 | fp16): PyTorch's autocast, applied ahead of time. Thunder's
// thunder.transforms.autocast and torch.autocast("cuda") sort operators into the same three groups:
//   low precision:  linear, matmul, bmm, addmm, conv2d, scaled_dot_product_attention
//                   -> every floating input is cast to the low dtype, the result is low precision
//   float32:        softmax, log_softmax, layer_norm, batch_norm, sum, exp, log, rsqrt, reciprocal, pow
//                   -> every low-precision input is cast to float32 (autocast's fp32 list; batch_norm is
//                      there because the catalog's batch_norm wants one dtype for input and statistics)
//   everything else runs in whatever types reach it (type promotion: half + float is float, as in eager
//   autocast). Only the matmul/convolution/attention operators want one dtype for all their inputs, and
//   those are on the first list.
// Casts of constants (weights) happen here, at compile time: a new constant "<name>_bf16" (or "_f16") holds
// the rounded values (to nearest even), so the model carries its weights in the low precision and the fp32
// originals are left to dce. A trace output whose dtype changed is cast back: the compiled model keeps the
// interface (input and output dtypes) of the original, as TensorRT's fp16 mode does.
//
// Without --precision bf16/fp16 (context.precision "fp32" or "tf32") the trace is returned unchanged.
// After autocast: every low-precision-list symbol has floating inputs of the low dtype only, every
// float32-list symbol none; symbols whose input and output types did not change keep their values (ids and
// names); the others get new "t" values. Traces with regions are returned unchanged (it runs before fusion).
#pragma once

#include <optional>
#include <string>

#include "core/transforms/transform.h"

namespace thunderc {

// The low dtype of a --precision value: bfloat16 for "bf16", float16 for "fp16", nullopt otherwise.
std::optional<DType> autocast_dtype(const std::string& precision);

Trace autocast(const Trace& trace, DType low);
const Transform& autocast_transform();  // name "autocast"; uses context.precision

}  // namespace thunderc
