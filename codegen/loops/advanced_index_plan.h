// What both backends' `index` / `index_put` code (codegen/cpp/scatter.cpp, codegen/nvfuser/indexing.cpp) reads
// off one symbol: the indexed shape IS (the shape of a[indices], PyTorch's advanced-indexing rule: the index
// tensors broadcast together, their dims in place of the indexed ones when those are adjacent, else in front)
// and, for a flat position of IS, the offsets it reads (writes) in `a` and in each index tensor.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/loops/region_lowering.h"
#include "core/ops/meta_util.h"

namespace thunderc::loops {

struct AdvancedIndexPlan {
  Shape shape;                     // IS
  std::vector<std::int64_t> sizes;  // a's extent along each indexed dim (where negative indices count from)
  struct Slot {
    bool from_b;        // a dim of the broadcast index shape, or a dim of a not indexed
    std::size_t which;  // that dim
  };
  std::vector<Slot> slots;                            // one per dim of IS
  Shape a_strides;                                    // a's (contiguous) strides
  std::vector<std::int64_t> indexed_strides;          // a's stride along indexed dim k
  std::vector<std::vector<std::int64_t>> index_strides;  // index tensor k's strides along the broadcast shape

  static std::string lit(std::int64_t v) { return std::to_string(v) + "LL"; }
  // The coordinate of flat position `flat` along dim q of IS.
  std::string coordinate(const std::string& flat, std::size_t q) const {
    std::int64_t step = 1;
    for (std::size_t p = q + 1; p < shape.size(); ++p) step *= shape[p];
    return "((" + flat + " / " + lit(step) + ") % " + lit(shape[q]) + ")";
  }
  // The offset in a of position `flat`, the index tensors' values (wrapped into [0, size)) in <prefix>0, ...
  std::string a_offset(const std::string& flat, const std::string& prefix) const {
    std::string e = "0";
    for (std::size_t q = 0; q < slots.size(); ++q)
      if (!slots[q].from_b) e += " + " + coordinate(flat, q) + " * " + lit(a_strides[slots[q].which]);
    for (std::size_t k = 0; k < indexed_strides.size(); ++k)
      e += " + " + prefix + std::to_string(k) + " * " + lit(indexed_strides[k]);
    return e;
  }
  // The offset in index tensor k of position `flat` (broadcast).
  std::string index_offset(std::size_t k, const std::string& flat) const {
    std::string e = "0";
    for (std::size_t q = 0; q < slots.size(); ++q)
      if (slots[q].from_b) e += " + " + coordinate(flat, q) + " * " + lit(index_strides[k][slots[q].which]);
    return e;
  }
};

// `first_index`: the operand of the first index tensor (index: 1; index_put: 2, after the values).
inline AdvancedIndexPlan plan_advanced_index(const Trace& t, const BoundSymbol& sym, std::size_t first_index) {
  const TensorType& a = t.type(sym.inputs[0].value);
  const IntList& dims = sym.attrs.get_ints("dims");
  const std::size_t m = dims.size();
  std::vector<Shape> index_shapes;
  for (std::size_t k = 0; k < m; ++k) index_shapes.push_back(t.type(sym.inputs[first_index + k].value).shape);
  const Shape b = broadcast_shapes(index_shapes, sym.op->name);
  bool adjacent = true;
  for (std::size_t k = 1; k < m; ++k) adjacent = adjacent && dims[k] == dims[k - 1] + 1;
  auto is_indexed = [&](std::size_t d) { return std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) != dims.end(); };
  const std::size_t b_at = adjacent ? static_cast<std::size_t>(dims[0]) : 0;
  AdvancedIndexPlan p;
  for (std::size_t d = 0; d < a.rank(); ++d)
    if (!is_indexed(d) && d < b_at) p.slots.push_back({false, d});
  for (std::size_t j = 0; j < b.size(); ++j) p.slots.push_back({true, j});
  for (std::size_t d = 0; d < a.rank(); ++d)
    if (!is_indexed(d) && d >= b_at) p.slots.push_back({false, d});
  for (const AdvancedIndexPlan::Slot& s : p.slots) p.shape.push_back(s.from_b ? b[s.which] : a.shape[s.which]);
  p.a_strides = contiguous(a.shape);
  for (std::size_t k = 0; k < m; ++k) {
    p.sizes.push_back(a.shape[static_cast<std::size_t>(dims[k])]);
    p.indexed_strides.push_back(p.a_strides[static_cast<std::size_t>(dims[k])]);
    p.index_strides.push_back(broadcast_strides(index_shapes[k], b));
  }
  return p;
}

}  // namespace thunderc::loops
