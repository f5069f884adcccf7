// Volumetric pooling (max_pool3d, avg_pool3d, adaptive_avg_pool3d), sampling at positions given as data
// (grid_sampler_2d) and bags of embedding rows (embedding_bag). 2-D pooling, upsampling and embedding are with
// the nn operators (nn.cpp).
#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc {

namespace {

// A 3-D pooling parameter: 1 value (every dim) or 3; `fallback` when empty (stride: the kernel size).
IntList triple(const Attrs& attrs, const std::string& name, const std::string& op, const IntList& fallback = {}) {
  const IntList& v = attrs.get_ints(name);
  if (v.empty() && !fallback.empty()) return fallback;
  if (v.size() == 1) return {v[0], v[0], v[0]};
  if (v.size() != 3) user_error(op, ": ", name, " must have 1 or 3 values, got ", shape_str(v));
  return v;
}

// [N, C, D, H, W] or unbatched [C, D, H, W].
void check_volume(const TensorType& a, const std::string& op) {
  if (a.rank() != 4 && a.rank() != 5)
    user_error(op, ": expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got shape ", shape_str(a.shape));
  for (std::size_t d = a.rank() - 3; d < a.rank(); ++d)
    if (a.shape[d] <= 0) user_error(op, ": the input ", shape_str(a.shape), " has an empty spatial dim");
}

TensorType with_volume(TensorType a, const IntList& out) {
  for (std::size_t i = 0; i < 3; ++i) a.shape[a.rank() - 3 + i] = out[i];
  return a;
}

std::vector<TensorType> pool3d_meta(const MetaArgs& m, bool has_dilation) {
  const TensorType& a = m.tensor(0);
  const std::string& op = m.op.name;
  check_volume(a, op);
  const IntList k = triple(m.attrs, "kernel_size", op);
  const IntList s = triple(m.attrs, "stride", op, k);
  const IntList p = triple(m.attrs, "padding", op);
  const IntList d = has_dilation ? triple(m.attrs, "dilation", op) : IntList{1, 1, 1};
  IntList out(3);
  for (std::size_t i = 0; i < 3; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0) user_error(op, ": kernel_size, stride and dilation must be positive");
    if (p[i] < 0 || p[i] > k[i] / 2) user_error(op, ": padding ", p[i], " must be between 0 and half the kernel size ", k[i]);
    out[i] = pooled_size(a.shape[a.rank() - 3 + i], k[i], p[i], s[i], d[i], m.attrs.get_bool("ceil_mode"));
    if (out[i] <= 0)
      user_error(op, ": input ", shape_str(a.shape), " is too small for kernel ", shape_str(k), " (output size ", out[i], ")");
  }
  return {with_volume(a, out)};
}

}  // namespace

void register_sampling_ops(OpRegistry& r) {
  r.add({"max_pool3d", OpCategory::Pooling, {{"a"}},
         {{"kernel_size", AttrType::IntList}, {"stride", AttrType::IntList, false, IntList{}},
          {"padding", AttrType::IntList, false, IntList{0}}, {"dilation", AttrType::IntList, false, IntList{1}},
          {"ceil_mode", AttrType::Bool, false, false}},
         [](const MetaArgs& m) {
           if (is_bool(m.tensor(0).dtype)) user_error("max_pool3d: bool inputs are not supported (as in PyTorch)");
           return pool3d_meta(m, true);
         },
         "3-D max pooling (stride [] = kernel_size; NaN propagates)"});
  r.add({"avg_pool3d", OpCategory::Pooling, {{"a"}},
         {{"kernel_size", AttrType::IntList}, {"stride", AttrType::IntList, false, IntList{}},
          {"padding", AttrType::IntList, false, IntList{0}}, {"ceil_mode", AttrType::Bool, false, false},
          {"count_include_pad", AttrType::Bool, false, true}, {"divisor_override", AttrType::Int, true, None{}}},
         [](const MetaArgs& m) {
           require_floating(m.tensor(0), "avg_pool3d", "the input");
           if (auto d = m.attrs.get_optional_int("divisor_override"); d && *d == 0)
             user_error("avg_pool3d: divisor_override must be non-zero");
           return pool3d_meta(m, false);
         },
         "3-D average pooling (stride [] = kernel_size)"});
  r.add({"adaptive_avg_pool3d", OpCategory::Pooling, {{"a"}}, {{"output_size", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           check_volume(a, "adaptive_avg_pool3d");
           require_floating(a, "adaptive_avg_pool3d", "the input");
           const IntList o = triple(m.attrs, "output_size", "adaptive_avg_pool3d");
           for (std::int64_t v : o)
             if (v <= 0) user_error("adaptive_avg_pool3d: output_size must be positive, got ", shape_str(o));
           return {with_volume(a, o)};
         },
         "average pooling of the last three dims to a fixed output size"});
  r.add({"grid_sampler_2d", OpCategory::Pooling, {{"a"}, {"grid"}},
         {{"interpolation_mode", AttrType::Int, false, std::int64_t{0}}, {"padding_mode", AttrType::Int, false, std::int64_t{0}},
          {"align_corners", AttrType::Bool, false, false}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &grid = m.tensor(1);
           require_floating(a, "grid_sampler_2d", "the input");
           if (a.rank() != 4 || grid.rank() != 4 || grid.shape[3] != 2 || grid.shape[0] != a.shape[0])
             user_error("grid_sampler_2d: expected an input [N, C, H, W] and a grid [N, H', W', 2], got ", shape_str(a.shape),
                        " and ", shape_str(grid.shape));
           if (grid.dtype != a.dtype)
             user_error("grid_sampler_2d: the grid (", dtype_name(grid.dtype), ") must have the input's dtype (", dtype_name(a.dtype), ")");
           const std::int64_t mode = m.attrs.get_int("interpolation_mode"), pad = m.attrs.get_int("padding_mode");
           if (mode < 0 || mode > 2) user_error("grid_sampler_2d: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ", mode);
           if (pad < 0 || pad > 2) user_error("grid_sampler_2d: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", pad);
           TensorType out = a;
           out.shape = {a.shape[0], a.shape[1], grid.shape[1], grid.shape[2]};
           out.device = common_device(m);
           return {out};
         },
         "samples a at the grid's (x, y) positions in [-1, 1] (interpolation_mode 0 bilinear, 1 nearest, 2 bicubic; "
         "padding_mode 0 zeros, 1 border, 2 reflection), as torch.nn.functional.grid_sample"});
  r.add({"embedding_bag", OpCategory::Indexing, {{"weight"}, {"indices"}, {"offsets", true}, {"per_sample_weights", true}},
         {{"mode", AttrType::Int, false, std::int64_t{0}}, {"include_last_offset", AttrType::Bool, false, false},
          {"padding_idx", AttrType::Int, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &w = m.tensor(0), &idx = m.tensor(1);
           if (w.rank() != 2) user_error("embedding_bag: weight must be 2-D, got ", shape_str(w.shape));
           require_floating(w, "embedding_bag", "weight");
           if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
             user_error("embedding_bag: indices must be int32 or int64, got ", dtype_name(idx.dtype));
           const std::int64_t mode = m.attrs.get_int("mode");
           if (mode < 0 || mode > 2) user_error("embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
           std::int64_t bags = 0;
           if (idx.rank() == 2) {
             if (!m.is_none(2)) user_error("embedding_bag: offsets must be None when indices are 2-D (each row is a bag)");
             bags = idx.shape[0];
           } else if (idx.rank() == 1) {
             if (m.is_none(2)) user_error("embedding_bag: 1-D indices need offsets (where each bag starts)");
             const TensorType& off = m.tensor(2);
             if (off.rank() != 1 || off.dtype != idx.dtype)
               user_error("embedding_bag: offsets must be 1-D with the indices' dtype, got ", dtype_name(off.dtype), shape_str(off.shape));
             bags = off.shape[0] - (m.attrs.get_bool("include_last_offset") ? 1 : 0);
             if (bags < 0) user_error("embedding_bag: include_last_offset needs at least one offset");
           } else {
             user_error("embedding_bag: indices must be 1-D or 2-D, got ", shape_str(idx.shape));
           }
           if (!m.is_none(3)) {
             const TensorType& psw = m.tensor(3);
             if (mode != 0) user_error("embedding_bag: per_sample_weights only go with mode 0 (sum)");
             if (psw.shape != idx.shape || psw.dtype != w.dtype)
               user_error("embedding_bag: per_sample_weights must have the indices' shape and the weight's dtype");
           }
           TensorType out = w;
           out.shape = {bags, w.shape[1]};
           out.device = common_device(m);
           return {out};
         },
         "per bag (indices[offsets[b]:offsets[b+1]], or each row of 2-D indices) the sum, mean or max of the "
         "weight rows; padding_idx rows left out; an empty bag is zeros"});
}

}  // namespace thunderc
