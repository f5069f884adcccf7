// What both fused attention kernels (codegen/cpp/attention.h, codegen/nvfuser/attention.h) read off one
// scaled_dot_product_attention symbol: sizes, the scale, and each operand's element strides along the output's
// batch dims (0 where it broadcasts), plus the statements that turn a flat batch index into those offsets.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "codegen/loops/region_lowering.h"

namespace thunderc::loops {

struct AttentionPlan {
  std::int64_t L = 0, E = 0, S = 0, Ev = 0;  // query rows, head size, keys, value size
  Shape batch;                               // the output's batch dims
  std::int64_t batches = 1;                  // their product
  bool causal = false;
  double scale = 1.0;
  std::vector<std::int64_t> q_strides, k_strides, v_strides;  // along `batch` (then L/S and E, unused)
  bool has_mask = false;
  DType mask_dtype = DType::Bool;
  std::vector<std::int64_t> mask_strides;  // along [batch..., L, S]
  std::int64_t mask_row = 0, mask_col = 0;  // along L and S
};

inline AttentionPlan plan_attention(const Trace& t, const BoundSymbol& sym) {
  const TensorType &q = t.type(sym.inputs[0].value), &k = t.type(sym.inputs[1].value),
                   &v = t.type(sym.inputs[2].value), &o = t.type(sym.outputs[0]);
  const std::size_t n = q.rank();
  THUNDERC_CHECK(n >= 2 && k.rank() == n && v.rank() == n && o.rank() == n, "attention: unexpected ranks");
  AttentionPlan p;
  p.L = q.shape[n - 2], p.E = q.shape[n - 1], p.S = k.shape[n - 2], p.Ev = v.shape[n - 1];
  p.causal = sym.attrs.get_bool("is_causal");
  p.scale = sym.attrs.is_none("scale") ? 1.0 / std::sqrt(static_cast<double>(p.E)) : sym.attrs.get_float("scale");
  p.batch = Shape(o.shape.begin(), o.shape.end() - 2);
  for (std::int64_t b : p.batch) p.batches *= b;
  p.q_strides = broadcast_strides(q.shape, o.shape);
  p.k_strides = broadcast_strides(k.shape, o.shape);
  p.v_strides = broadcast_strides(v.shape, o.shape);
  p.has_mask = sym.inputs.size() > 3 && sym.inputs[3].is_tensor();
  if (p.has_mask) {
    const TensorType& m = t.type(sym.inputs[3].value);
    Shape weights = p.batch;
    weights.push_back(p.L);
    weights.push_back(p.S);
    THUNDERC_CHECK(m.rank() <= weights.size(), "attention: the mask has more dims than the weights");
    p.mask_dtype = m.dtype;
    p.mask_strides = broadcast_strides(m.shape, weights);
    p.mask_row = p.mask_strides[n - 2];
    p.mask_col = p.mask_strides[n - 1];
  }
  return p;
}

// Statements (one per batch dim larger than 1, the last dim first) that decompose the flat batch index in
// `rest` (consumed) into the offsets `q`, `k`, `v` and, with a mask, `m` (each += index * stride), with
// integer type `int_type`, temporary `x` and literals written by `num`.
template <class Num>
Lines batch_offset_statements(const AttentionPlan& p, const std::string& int_type, const std::string& rest,
                              const std::string& x, const std::string& q, const std::string& k,
                              const std::string& v, const std::string& m, Num num) {
  Lines lines;
  for (std::size_t b = p.batch.size(); b-- > 0;) {
    if (p.batch[b] == 1) continue;
    std::string s = "{ const " + int_type + " " + x + " = " + rest + " % " + num(p.batch[b]) + "; " + rest +
                    " /= " + num(p.batch[b]) + ";";
    auto add = [&](const std::string& var, std::int64_t stride) {
      if (stride != 0) s += " " + var + " += " + x + " * " + num(stride) + ";";
    };
    add(q, p.q_strides[b]);
    add(k, p.k_strides[b]);
    add(v, p.v_strides[b]);
    if (p.has_mask) add(m, p.mask_strides[b]);
    lines.push_back(s + " }");
  }
  return lines;
}

}  // namespace thunderc::loops
