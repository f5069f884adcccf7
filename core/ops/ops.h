// The operator catalog. Each file registers one family; op_registry() (registry.cpp) calls them all.
#pragma once

#include "core/ir/op.h"

namespace thunderc {

void register_elementwise_ops(OpRegistry& r);    // elementwise.cpp
void register_reduction_norm_ops(OpRegistry& r);  // reduction_norm.cpp
void register_shape_ops(OpRegistry& r);          // shape.cpp
void register_nn_ops(OpRegistry& r);             // nn.cpp: matmul, conv, pooling, embedding, attention
void register_sampling_ops(OpRegistry& r);       // sampling.cpp: 3-D pooling, grid_sampler_2d, embedding_bag
void register_spectral_ops(OpRegistry& r);       // spectral.cpp: FFTs, view_as_real/view_as_complex
void register_indexing_ops(OpRegistry& r);       // indexing.cpp: index_select, gather, argmax/argmin, cumsum
void register_fusion_op(OpRegistry& r);          // fusion.cpp: the region symbol that fusion passes create

}  // namespace thunderc
