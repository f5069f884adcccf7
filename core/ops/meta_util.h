// Shape and dtype rules shared by the meta functions: PyTorch's broadcasting, type promotion,
// dimension wrapping, and convolution/pooling output sizes.
#pragma once

#include <string>
#include <vector>

#include "core/ir/op.h"

namespace thunderc {

// Broadcast shapes as torch.broadcast_shapes does; UserError naming `op` when they do not broadcast.
Shape broadcast_shapes(const std::vector<Shape>& shapes, const std::string& op);

// torch.result_type over tensors (dimensioned and 0-dim) and Python numbers (wrapped, default float
// dtype float32). None operands are ignored.
DType result_type(const std::vector<OperandInfo>& operands);

// Wraps a possibly negative dim into [0, rank); UserError if out of range.
std::int64_t wrap_dim(std::int64_t dim, std::size_t rank, const std::string& op);

// (size + 2*pad - dilation*(kernel-1) - 1) / stride + 1, rounding up when ceil_mode (with PyTorch's rule
// that the last window must start inside the input or its left padding).
std::int64_t pooled_size(std::int64_t size, std::int64_t kernel, std::int64_t pad, std::int64_t stride,
                         std::int64_t dilation, bool ceil_mode);

// Shape of operand i: its tensor's shape, or [] for a number.
Shape operand_shape(const OperandInfo& operand);

}  // namespace thunderc

namespace thunderc {
// The device shared by the tensor operands (0-dim CPU tensors may join any device, as in PyTorch);
// UserError when they differ.
Device common_device(const MetaArgs& args);
// UserError unless t is floating point.
void require_floating(const TensorType& t, const std::string& op, const std::string& what);
}  // namespace thunderc
