#include "core/ops/meta_util.h"

#include <optional>

#include "core/ir/error.h"

namespace thunderc {

Shape broadcast_shapes(const std::vector<Shape>& shapes, const std::string& op) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::size_t o = rank - s.size() + i;
      std::int64_t d = s[i];
      if (d == out[o] || d == 1) continue;
      if (out[o] == 1) {
        out[o] = d;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
      user_error(op, ": shapes ", all, " cannot be broadcast together (dimension ", o, " is ", out[o],
                 " in one and ", d, " in another)");
    }
  }
  return out;
}

namespace {
using Maybe = std::optional<DType>;
Maybe promote_skip_undefined(Maybe a, Maybe b) {
  if (!a) return b;
  if (!b) return a;
  return promote_types(*a, *b);
}
// c10's combine_categories: a higher-priority operand class wins unless a lower one is of a higher
// category (bool < integer < floating < complex); a floating one meeting a lower complex one keeps its
// precision (float64 tensor * complex64 number-like 0-dim tensor: complex128).
Maybe combine_categories(Maybe higher, Maybe lower) {
  if (higher && is_complex(*higher)) return higher;
  if (lower && is_complex(*lower)) {
    if (!higher || !is_floating(*higher)) return lower;
    if (*higher == DType::Float16 || *higher == DType::BFloat16)
      user_error("a ", dtype_name(*higher), " tensor with a 0-dim ", dtype_name(*lower),
                 " tensor makes a 16-bit complex tensor, which thunderc does not support");
    return real_to_complex(*higher);
  }
  if (higher && is_floating(*higher)) return higher;
  if ((higher && is_bool(*higher)) || (lower && is_floating(*lower))) return promote_skip_undefined(higher, lower);
  if (higher) return higher;
  return lower;
}
}  // namespace

DType result_type(const std::vector<OperandInfo>& operands) {
  Maybe dim_result, zero_result, wrapped_result;
  for (const OperandInfo& o : operands) {
    if (o.kind == OperandKind::Tensor) {
      Maybe& slot = o.tensor->rank() > 0 ? dim_result : zero_result;
      slot = promote_skip_undefined(slot, o.tensor->dtype);
    } else if (o.kind == OperandKind::Scalar) {
      wrapped_result = promote_skip_undefined(wrapped_result, o.scalar.dtype());
    }
  }
  Maybe r = combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
  THUNDERC_CHECK(r.has_value(), "result_type of no operands");
  return *r;
}

std::int64_t wrap_dim(std::int64_t dim, std::size_t rank, const std::string& op) {
  auto r = static_cast<std::int64_t>(rank == 0 ? 1 : rank);  // PyTorch lets 0-dim tensors use dim 0 / -1
  if (dim < -r || dim >= r)
    user_error(op, ": dimension ", dim, " is out of range for a tensor of rank ", rank, " (expected [", -r, ", ",
               r - 1, "])");
  return dim < 0 ? dim + r : dim;
}

std::int64_t pooled_size(std::int64_t size, std::int64_t kernel, std::int64_t pad, std::int64_t stride,
                         std::int64_t dilation, bool ceil_mode) {
  // Attributes come from the model file: any int64 arrives here, so every step is checked (no UB).
  std::int64_t two_pad = 0, dilated = 0, span = 0, out = 0, last = 0, limit = 0;
  bool overflow = __builtin_mul_overflow(pad, std::int64_t{2}, &two_pad) ||
                  __builtin_mul_overflow(dilation, kernel - 1, &dilated) ||
                  __builtin_add_overflow(size, two_pad, &span) || __builtin_sub_overflow(span, dilated, &span) ||
                  __builtin_sub_overflow(span, std::int64_t{1}, &span) ||
                  (ceil_mode && __builtin_add_overflow(span, stride - 1, &span));
  if (!overflow) {
    out = (span >= 0 ? span / stride : -((-(span + 1)) / stride) - 1) + 1;  // floor division; -span may overflow
    if (ceil_mode)
      overflow = __builtin_mul_overflow(out - 1, stride, &last) || __builtin_add_overflow(size, pad, &limit);
    if (!overflow && ceil_mode && last >= limit) --out;
  }
  if (overflow)
    user_error("the output size of a window of ", kernel, " (dilation ", dilation, ", stride ", stride, ", padding ",
               pad, ") over ", size, " elements overflows int64");
  return out;
}

Shape operand_shape(const OperandInfo& operand) {
  return operand.kind == OperandKind::Tensor ? operand.tensor->shape : Shape{};
}

}  // namespace thunderc

namespace thunderc {
Device common_device(const MetaArgs& args) {
  std::optional<Device> dev;
  for (const OperandInfo& o : args.inputs) {
    if (o.kind != OperandKind::Tensor) continue;
    if (o.tensor->rank() == 0 && o.tensor->device.kind == DeviceKind::CPU) continue;
    if (!dev) dev = o.tensor->device;
    else if (*dev != o.tensor->device)
      user_error(args.op.name, ": inputs are on different devices (", dev->str(), " and ", o.tensor->device.str(),
                 ")");
  }
  if (dev) return *dev;
  for (const OperandInfo& o : args.inputs)
    if (o.kind == OperandKind::Tensor) return o.tensor->device;
  return Device::cpu();
}

void require_floating(const TensorType& t, const std::string& op, const std::string& what) {
  if (!is_floating(t.dtype))
    user_error(op, ": ", what, " must be a floating point tensor, got ", dtype_name(t.dtype));
}
}  // namespace thunderc
