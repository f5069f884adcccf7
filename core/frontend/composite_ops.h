// ATen operators without a catalog operator of their own, as both frontends import them: rewritten into
// catalog operators at import (TorchScript's aten::cdist, torch.export's _cdist_forward.default, ...).
//   cdist, pdist        differences, then a p-norm over the last dim (pdist's row pairs gathered by index_select)
//   as_strided          a gather (index_select) by an index map computed here
//   col2im (F.fold)     a scatter-add (scatter_reduce "sum") by an index map; padding goes to a spare slot
//   batch norm with     mean, biased var, rsqrt, then the affine map (training mode, or no running statistics)
//   batch statistics
//   dropout in          dropout_mask (Bernoulli(1 - p), drawn from the call's RNG state: docs/training.md), then
//   training mode       ATen's arithmetic on it (plain, feature and alpha dropout)
// M is the frontend's importer: emit(op, inputs, attrs), type(v), device(), constant(name, type, data).
// `fail(message)` does not return; the arguments' own checks (PyTorch's errors) are made here, the frontend's
// (argument parsing, what it knows of layouts) by its handler.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc::composite {

// Index maps are embedded in the .so: at most this many elements.
inline constexpr std::int64_t kMaxIndexElements = std::int64_t{1} << 24;

template <class M>
ValueId int64_constant(M& m, const char* name, const std::vector<std::int64_t>& values, Shape shape) {
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(values.size() * sizeof(std::int64_t));
  if (!values.empty()) std::memcpy(data->bytes.data(), values.data(), data->bytes.size());
  return m.constant(name, TensorType{DType::Int64, std::move(shape), m.device()}, std::move(data));
}

template <class M>
ValueId reshaped(M& m, ValueId v, const Shape& shape) {
  if (m.type(v).shape == shape) return v;
  return m.emit("reshape", {Operand::tensor(v)}, {{"shape", IntList(shape.begin(), shape.end())}});
}

// The p-norm over the last dimension of d: p = 0 counts the non-zero entries, p = inf takes the largest
// magnitude, p = 1 and 2 avoid pow. NaN as PyTorch's kernels treat it: it propagates, except into cdist's
// largest magnitude, which passes over it (nan_skipping_max; pdist's propagates).
template <class M, class Fail>
ValueId p_norm_last(M& m, ValueId d, double p, Fail fail, bool nan_skipping_max = false) {
  const std::int64_t last = static_cast<std::int64_t>(m.type(d).rank()) - 1;
  const Attrs over_last = {{"dims", IntList{last}}, {"keepdim", false}};
  auto T = [](ValueId v) { return Operand::tensor(v); };
  if (std::isnan(p) || p < 0) fail("p must be a non-negative number, got " + std::to_string(p));
  ValueId a = m.emit("abs", {T(d)});
  if (p == 0) {  // min(ceil(|d|), 1): 1 where d != 0, NaN where d is
    ValueId nonzero = m.emit("clamp", {T(m.emit("ceil", {T(a)}))}, {{"max", 1.0}});
    return m.emit("sum", {T(nonzero)}, over_last);
  }
  if (std::isinf(p)) {
    if (nan_skipping_max) a = m.emit("masked_fill", {T(a), T(m.emit("isnan", {T(a)})), Operand::number(Scalar(0.0))});
    return m.emit("amax", {T(a)}, over_last);
  }
  if (p == 1) return m.emit("sum", {T(a)}, over_last);
  if (p == 2) return m.emit("sqrt", {T(m.emit("sum", {T(m.emit("mul", {T(d), T(d)}))}, over_last))});
  ValueId sum = m.emit("sum", {T(m.emit("pow", {T(a), Operand::number(Scalar(p))}))}, over_last);
  return m.emit("pow", {T(sum), Operand::number(Scalar(1.0 / p))});
}

// cdist(x1 [..., P, M], x2 [..., R, M], p) -> [..., P, R], from the differences (PyTorch may use a matmul for
// p = 2 on large inputs, which agrees to rounding). The batch dims broadcast.
template <class M, class Fail>
ValueId cdist(M& m, ValueId a, ValueId b, double p, Fail fail) {
  const TensorType at = m.type(a), bt = m.type(b);
  if (at.rank() < 2 || bt.rank() < 2) fail("needs inputs of rank >= 2, got " + shape_str(at.shape) + " and " + shape_str(bt.shape));
  if (!is_floating(at.dtype) || at.dtype != bt.dtype) fail("needs two floating-point inputs of one dtype");
  if (at.shape.back() != bt.shape.back())
    fail("needs inputs with the same last dimension, got " + shape_str(at.shape) + " and " + shape_str(bt.shape));
  Shape as = at.shape, bs = bt.shape;
  as.insert(as.end() - 1, 1);  // [..., P, 1, M]
  bs.insert(bs.end() - 2, 1);  // [..., 1, R, M]
  ValueId d = m.emit("sub", {Operand::tensor(reshaped(m, a, as)), Operand::tensor(reshaped(m, b, bs))});
  return p_norm_last(m, d, p, fail, /*nan_skipping_max=*/true);
}

// pdist(x [N, M], p) -> [N (N - 1) / 2]: the distances of rows i < j, in row-major order of (i, j).
template <class M, class Fail>
ValueId pdist(M& m, ValueId x, double p, Fail fail) {
  const TensorType xt = m.type(x);
  if (xt.rank() != 2 || !is_floating(xt.dtype)) fail("needs a 2-D floating-point input, got " + xt.str());
  const std::int64_t rows = xt.shape[0];
  if (rows * (rows - 1) / 2 > kMaxIndexElements) fail("would make more than 2^24 pairs");
  std::vector<std::int64_t> first, second;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = i + 1; j < rows; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  const Shape pairs = {static_cast<std::int64_t>(first.size())};
  auto rows_at = [&](const std::vector<std::int64_t>& index) {
    return m.emit("index_select", {Operand::tensor(x), Operand::tensor(int64_constant(m, "pdist_rows", index, pairs))},
                  {{"dim", std::int64_t{0}}});
  };
  ValueId xi = rows_at(first), xj = rows_at(second);
  return p_norm_last(m, m.emit("sub", {Operand::tensor(xi), Operand::tensor(xj)}), p, fail);
}

// as_strided(x, size, stride, offset) on a contiguous x that owns its elements (the frontend checks that):
// element k of the result is x's element offset + sum_d idx_d(k) * stride_d, each within x.
template <class M, class Fail>
ValueId as_strided(M& m, ValueId x, const IntList& size, const IntList& stride, std::int64_t offset, Fail fail) {
  const std::int64_t numel = m.type(x).numel();
  if (size.size() != stride.size()) fail("needs as many strides as sizes");
  std::int64_t count = 1, last = offset;
  for (std::size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) fail("needs non-negative sizes and strides");
    count *= size[d];
    if (size[d] > 0) last += (size[d] - 1) * stride[d];
  }
  if (count > kMaxIndexElements) fail("would gather more than 2^24 elements");
  if (offset < 0 || (count > 0 && last >= numel))
    fail("reads element " + std::to_string(last) + " of a tensor of " + std::to_string(numel) +
         " elements; thunderc supports reads within the tensor only");
  std::vector<std::int64_t> index(static_cast<std::size_t>(count), offset);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t rest = i;
    for (std::size_t d = size.size(); d-- > 0;) {
      index[static_cast<std::size_t>(i)] += (rest % size[d]) * stride[d];
      rest /= size[d];
    }
  }
  ValueId picked = m.emit("index_select", {Operand::tensor(reshaped(m, x, {numel})),
                                           Operand::tensor(int64_constant(m, "as_strided_index", index, {count}))},
                          {{"dim", std::int64_t{0}}});
  return reshaped(m, picked, Shape(size.begin(), size.end()));
}

// col2im(x [N, C kh kw, L] or [C kh kw, L], output_size, kernel_size, dilation, padding, stride) -> [N, C, H, W]
// (or [C, H, W]); each argument a pair (one element: both).
template <class M, class Fail>
ValueId col2im(M& m, ValueId x, IntList out, IntList k, IntList dil, IntList pad, IntList st, Fail fail) {
  const TensorType xt = m.type(x);
  const bool batched = xt.rank() == 3;
  if (xt.rank() != 2 && xt.rank() != 3) fail("needs a 2-D or 3-D input, got " + shape_str(xt.shape));
  for (IntList* v : {&out, &k, &dil, &pad, &st}) {
    if (v->size() == 1) v->push_back((*v)[0]);
    if (v->size() != 2) fail("output_size, kernel_size, dilation, padding and stride must have 2 elements each");
  }
  for (int i = 0; i < 2; ++i)
    if (out[i] <= 0 || k[i] <= 0 || dil[i] <= 0 || st[i] <= 0 || pad[i] < 0)
      fail("needs positive output_size, kernel_size, dilation and stride and a non-negative padding");
  const std::int64_t batch = batched ? xt.shape[0] : 1, rows = xt.shape[batched ? 1 : 0], cols = xt.shape.back();
  if (rows % (k[0] * k[1]) != 0)
    fail("expects dimension " + std::to_string(batched ? 1 : 0) + " (" + std::to_string(rows) +
         ") divisible by the kernel's size " + std::to_string(k[0] * k[1]));
  std::int64_t blocks[2];
  for (int i = 0; i < 2; ++i) blocks[i] = (out[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) / st[i] + 1;
  if (blocks[0] <= 0 || blocks[1] <= 0 || blocks[0] * blocks[1] != cols)
    fail("expects " + std::to_string(std::max<std::int64_t>(blocks[0], 0) * std::max<std::int64_t>(blocks[1], 0)) +
         " blocks (the last dimension) for these sizes, got " + std::to_string(cols));
  if (rows * cols > kMaxIndexElements) fail("would scatter more than 2^24 elements");
  const std::int64_t channels = rows / (k[0] * k[1]), pixels = channels * out[0] * out[1];
  std::vector<std::int64_t> index(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t c = r / (k[0] * k[1]), ki = r / k[1] % k[0], kj = r % k[1];
    for (std::int64_t l = 0; l < cols; ++l) {
      const std::int64_t h = l / blocks[1] * st[0] - pad[0] + ki * dil[0], w = l % blocks[1] * st[1] - pad[1] + kj * dil[1];
      const bool inside = h >= 0 && h < out[0] && w >= 0 && w < out[1];
      index[static_cast<std::size_t>(r * cols + l)] = inside ? (c * out[0] + h) * out[1] + w : pixels;
    }
  }
  auto T = [](ValueId v) { return Operand::tensor(v); };
  ValueId src = reshaped(m, x, {batch, rows * cols});
  ValueId idx = m.emit("expand", {T(int64_constant(m, "col2im_index", index, {1, rows * cols}))},
                       {{"shape", IntList{batch, rows * cols}}});
  auto zero = std::make_shared<ConstantData>();
  zero->bytes.assign(dtype_size(xt.dtype), 0);
  ValueId zeros = m.emit("expand", {T(reshaped(m, m.constant("zero", TensorType{xt.dtype, {}, m.device()}, zero), {1, 1}))},
                         {{"shape", IntList{batch, pixels + 1}}});
  ValueId sums = m.emit("scatter_reduce", {T(zeros), T(idx), T(src)},
                        {{"dim", std::int64_t{1}}, {"reduce", std::string("sum")}, {"include_self", true}});
  ValueId image = m.emit("slice", {T(sums)}, {{"dim", std::int64_t{1}}, {"start", std::int64_t{0}}, {"end", pixels},
                                              {"step", std::int64_t{1}}});
  Shape shape = {channels, out[0], out[1]};
  if (batched) shape.insert(shape.begin(), batch);
  return reshaped(m, image, shape);
}

// Batch norm with the batch's own statistics: (out, mean [C], 1 / sqrt(var + eps) [C]), the statistics over every
// dim but 1 with the biased variance, as PyTorch's _native_batch_norm_legit computes them. weight, bias: tensors
// of [C] or none.
struct BatchStatsNorm {
  ValueId out, mean, invstd;
};

template <class M, class Fail>
BatchStatsNorm batch_norm_batch_stats(M& m, ValueId x, Operand weight, Operand bias, double eps, Fail fail) {
  const TensorType xt = m.type(x);
  if (!is_floating(xt.dtype)) fail(std::string("needs a floating-point input, got ") + dtype_name(xt.dtype));
  if (xt.rank() < 2) fail("needs an input of rank >= 2, got " + shape_str(xt.shape));
  const std::int64_t channels = xt.shape[1];
  if (xt.numel() / std::max<std::int64_t>(channels, 1) <= 1)
    fail("expects more than 1 value per channel in training mode, got input of shape " + shape_str(xt.shape));
  IntList dims = {0}, param_shape(xt.rank(), 1);
  for (std::int64_t d = 2; d < static_cast<std::int64_t>(xt.rank()); ++d) dims.push_back(d);
  param_shape[1] = channels;
  auto T = [](ValueId v) { return Operand::tensor(v); };
  ValueId mean = m.emit("mean", {T(x)}, {{"dims", dims}, {"keepdim", true}});
  ValueId var = m.emit("var", {T(x)}, {{"dims", dims}, {"keepdim", true}, {"correction", 0.0}});
  ValueId invstd = m.emit("rsqrt", {T(m.emit("add", {T(var), Operand::number(Scalar(eps))}))});
  ValueId y = m.emit("mul", {T(m.emit("sub", {T(x), T(mean)})), T(invstd)});
  if (weight.is_tensor()) y = m.emit("mul", {T(y), T(m.emit("reshape", {weight}, {{"shape", param_shape}}))});
  if (bias.is_tensor()) y = m.emit("add", {T(y), T(m.emit("reshape", {bias}, {{"shape", param_shape}}))});
  return {y, reshaped(m, mean, {channels}), reshaped(m, invstd, {channels})};
}

// Dropout in training mode (--module-mode train), with ATen's _dropout_impl arithmetic on the Bernoulli(1 - p)
// noise: x * (noise / (1 - p)); alpha dropout x * (noise * a) + (noise - 1) * alpha * a + alpha * a * p; p = 1
// gives x * 0 (NaN stays NaN). Feature dropout draws one value per [N, C] plane. The mask has no rng yet:
// autodiff gives it the training forward's.
template <class M, class Fail>
ValueId dropout_in_training_mode(M& m, ValueId x, double p, bool feature, bool alpha_dropout, Fail fail) {
  const TensorType xt = m.type(x);
  if (!(p >= 0.0 && p <= 1.0)) fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!is_floating(xt.dtype)) fail(std::string("needs a floating-point input, got ") + dtype_name(xt.dtype));
  auto T = [](ValueId v) { return Operand::tensor(v); };
  auto N = [](double v) { return Operand::number(Scalar(v)); };
  if (p == 0.0 || xt.numel() == 0) return x;
  if (p == 1.0) return m.emit("mul", {T(x), N(0.0)});
  IntList noise(xt.shape.begin(), xt.shape.end());
  if (feature) {
    if (xt.rank() < 2) fail("is feature dropout, which requires at least 2 dimensions in the input");
    for (std::size_t d = 2; d < noise.size(); ++d) noise[d] = 1;
  }
  Attrs attrs{{"shape", noise}, {"dtype", xt.dtype}, {"p", p}};
  if (xt.device.kind != DeviceKind::CPU) attrs.set("device", xt.device.str());  // on x's device (nvfuser's kernel)
  const ValueId mask = m.emit("dropout_mask", {Operand::none()}, std::move(attrs));
  if (!alpha_dropout) return m.emit("mul", {T(x), T(m.emit("div", {T(mask), N(1.0 - p)}))});
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  const ValueId b = m.emit("add", {T(m.emit("mul", {T(m.emit("add", {T(mask), N(-1.0)})), N(alpha * a)})), N(alpha * a * p)});
  return m.emit("add", {T(m.emit("mul", {T(x), T(m.emit("mul", {T(mask), N(a)}))})), T(b)});
}

}  // namespace thunderc::composite
