// a[indices] and a[indices] = values, as both frontends import them (TorchScript's aten::index /
// aten::index_put_, torch.export's index.Tensor / index_put.default): PyTorch's list of optional index tensors
// becomes the index tensors and the dims they index. A boolean mask as the only index is a number of
// elements that depends on its values: as a read that is an error; as a write of one value,
// `x[mask] = v`, it is masked_fill. M is the frontend's importer (emit, type).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

struct AdvancedIndex {
  std::vector<Operand> tensors;
  IntList dims;
  bool has_mask = false;  // a bool or uint8 index among them
};

inline AdvancedIndex advanced_index(const Trace& t, const std::vector<std::optional<ValueId>>& indices) {
  AdvancedIndex ix;
  for (std::size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d]) continue;
    const DType dt = t.type(*indices[d]).dtype;
    ix.has_mask = ix.has_mask || dt == DType::Bool || dt == DType::UInt8;
    ix.tensors.push_back(Operand::tensor(*indices[d]));
    ix.dims.push_back(static_cast<std::int64_t>(d));
  }
  return ix;
}

constexpr const char* kMaskIndexMessage =
    "indexing with a boolean mask selects a number of elements that depends on the mask's values, and thunderc "
    "compiles shapes ahead of time; use torch.where, masked_fill or `x[mask] = value` (one value) instead";

// a[indices]; `fail(message)` does not return.
template <class M, class Fail>
ValueId emit_index(M& m, ValueId a, const std::vector<std::optional<ValueId>>& indices, Fail fail) {
  AdvancedIndex ix = advanced_index(m.trace(), indices);
  if (ix.tensors.empty()) return a;
  if (ix.has_mask) fail(kMaskIndexMessage);
  std::vector<Operand> ins{Operand::tensor(a)};
  ins.insert(ins.end(), ix.tensors.begin(), ix.tensors.end());
  return m.emit("index", ins, {{"dims", ix.dims}});
}

// a with a[indices] = values (+= when accumulate); values in another dtype are converted to a's first, as
// PyTorch's setitem does.
template <class M, class Fail>
ValueId emit_index_put(M& m, ValueId a, ValueId values, const std::vector<std::optional<ValueId>>& indices,
                       bool accumulate, Fail fail) {
  AdvancedIndex ix = advanced_index(m.trace(), indices);
  if (ix.tensors.empty()) fail("index_put without an index tensor is not supported");
  const TensorType& at = m.type(a);
  if (m.type(values).dtype != at.dtype)
    values = m.emit("to_dtype", {Operand::tensor(values)}, {{"dtype", at.dtype}});
  if (ix.has_mask) {
    // x[mask] = v: mask covers dims d.. of x; one value written wherever the mask holds.
    const ValueId mask = ix.tensors[0].value;
    const Shape& ms = m.type(mask).shape;
    const auto d = static_cast<std::size_t>(ix.dims[0]);
    bool fits = ix.tensors.size() == 1 && !accumulate && m.type(values).numel() == 1 && m.type(mask).dtype == DType::Bool &&
                d + ms.size() <= at.rank();
    for (std::size_t i = 0; fits && i < ms.size(); ++i) fits = ms[i] == at.shape[d + i];
    if (!fits)
      fail(std::string("index_put with a boolean mask is supported as `x[mask] = value` with one value (a bool mask "
                       "of x's shape at its dims, no accumulate); otherwise ") + kMaskIndexMessage);
    Shape broadcast(d, 1);
    broadcast.insert(broadcast.end(), ms.begin(), ms.end());
    broadcast.resize(at.rank(), 1);
    ValueId b = mask;
    if (broadcast != ms) b = m.emit("reshape", {Operand::tensor(mask)}, {{"shape", broadcast}});
    ValueId v = values;
    if (!m.type(v).shape.empty()) v = m.emit("reshape", {Operand::tensor(values)}, {{"shape", Shape{}}});
    return m.emit("masked_fill", {Operand::tensor(a), Operand::tensor(b), Operand::tensor(v)});
  }
  std::vector<Operand> ins{Operand::tensor(a), Operand::tensor(values)};
  ins.insert(ins.end(), ix.tensors.begin(), ix.tensors.end());
  return m.emit("index_put", ins, {{"dims", ix.dims}, {"accumulate", accumulate}});
}

}  // namespace thunderc
