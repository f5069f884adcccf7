// Operators over positions, each with code of its own rather than a place in a fused loop region: gathers by
// index tensors (index_select, gather, index, diagonal), writes at index tensors (scatter, scatter_reduce,
// index_put), positions of extremes (argmax, argmin), running sums and products along rows (cumsum, prod) and
// orderings (sort, topk). embedding, the first of them, is declared with the nn operators.
#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc {

namespace {

void require_index_dtype(const TensorType& index, const std::string& op, bool int32_too) {
  if (index.dtype == DType::Int64 || (int32_too && index.dtype == DType::Int32)) return;
  user_error(op, ": index must be ", int32_too ? "an int32 or int64" : "an int64", " tensor, got ", dtype_name(index.dtype));
}

// The shape a reduction over `dim` (None: every dim) leaves, as sum/amax do.
Shape reduced_shape(const Shape& s, const AttrValue& dim, bool keepdim, const std::string& op) {
  if (std::holds_alternative<None>(dim)) return keepdim ? Shape(s.size(), 1) : Shape{};
  const auto d = static_cast<std::size_t>(wrap_dim(std::get<std::int64_t>(dim), s.size(), op));
  if (s.empty()) return s;
  Shape out = s;
  if (keepdim) out[d] = 1;
  else out.erase(out.begin() + static_cast<std::ptrdiff_t>(d));
  return out;
}

// The extent of dim of a (1 for a 0-dim tensor, whose dim may be 0 or -1).
std::int64_t dim_size(const TensorType& a, std::int64_t dim, const std::string& op) {
  const std::int64_t d = wrap_dim(dim, a.rank(), op);
  return a.rank() == 0 ? 1 : a.shape[static_cast<std::size_t>(d)];
}

// scatter / scatter_reduce: index has a's rank, and in every dim it is no larger than src, nor than a
// outside `dim` (as ATen checks).
void check_scatter_shapes(const TensorType& a, const TensorType& index, const Shape* src, std::int64_t dim,
                          const std::string& op) {
  require_index_dtype(index, op, false);
  const std::size_t d = static_cast<std::size_t>(wrap_dim(dim, a.rank(), op));
  auto dims_of = [](std::size_t rank) { return std::max<std::size_t>(rank, 1); };  // ATen counts 0-dim as 1-D
  auto extent = [](const Shape& s, std::size_t i) { return s.empty() ? std::int64_t{1} : s[i]; };
  if (dims_of(index.rank()) != dims_of(a.rank()))
    user_error(op, ": index ", shape_str(index.shape), " must have as many dims as the input ", shape_str(a.shape));
  if (src && dims_of(src->size()) != dims_of(index.rank()))
    user_error(op, ": index ", shape_str(index.shape), " must have as many dims as src ", shape_str(*src));
  for (std::size_t i = 0; i < dims_of(index.rank()); ++i) {
    if (src && extent(index.shape, i) > extent(*src, i))
      user_error(op, ": index ", shape_str(index.shape), " is larger than src ", shape_str(*src), " in dimension ", i);
    if (i != d && extent(index.shape, i) > extent(a.shape, i))
      user_error(op, ": index ", shape_str(index.shape), " is larger than the input ", shape_str(a.shape), " in dimension ", i);
  }
}

// index / index_put: the index tensors (operands first_index..) applied to the dims listed in `dims` (strictly
// increasing; a None between them in PyTorch's list keeps its dim whole). Returns the result's shape of
// a[indices]: the broadcast index shape in place of the indexed dims when they are adjacent, else in front.
Shape advanced_index_shape(const MetaArgs& m, std::size_t first_index, const std::string& op) {
  const TensorType& a = m.tensor(0);
  const IntList& dims = m.attrs.get_ints("dims");
  const std::size_t n = m.inputs.size() - first_index;
  if (dims.size() != n)
    user_error(op, ": ", n, " index tensors for ", dims.size(), " indexed dims (bug in the importer)");
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < n; ++i) {
    const TensorType& index = m.tensor(first_index + i);
    if (is_bool(index.dtype) || index.dtype == DType::UInt8)
      user_error(op, ": a boolean mask as an index selects a number of elements that depends on the mask's values; "
                 "thunderc compiles shapes ahead of time (use torch.where or masked_fill instead)");
    require_index_dtype(index, op, true);
    if (dims[i] < 0 || dims[i] >= static_cast<std::int64_t>(a.rank()) || (i > 0 && dims[i] <= dims[i - 1]))
      user_error(op, ": ", a.rank(), "-D input indexed at dims ", shape_str(dims));
    shapes.push_back(index.shape);
  }
  const Shape b = broadcast_shapes(shapes, op);
  bool adjacent = true;
  for (std::size_t i = 1; i < n; ++i) adjacent = adjacent && dims[i] == dims[i - 1] + 1;
  Shape rest_before, rest_after;
  for (std::size_t d = 0; d < a.rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) != dims.end()) continue;
    (adjacent && static_cast<std::int64_t>(d) < dims[0] ? rest_before : rest_after).push_back(a.shape[d]);
  }
  Shape out = rest_before;
  out.insert(out.end(), b.begin(), b.end());
  out.insert(out.end(), rest_after.begin(), rest_after.end());
  return out;
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  r.add({"index_select", OpCategory::Indexing, {{"a"}, {"index"}}, {{"dim", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &index = m.tensor(1);
           require_index_dtype(index, "index_select", true);
           if (index.rank() > 1) user_error("index_select: index must be 0-D or 1-D, got ", shape_str(index.shape));
           TensorType out = a;
           out.device = common_device(m);
           if (a.rank() == 0) {
             wrap_dim(m.attrs.get_int("dim"), 0, "index_select");
             if (index.numel() != 1) user_error("index_select: a 0-dim input takes one index, got ", shape_str(index.shape));
             return {out};
           }
           out.shape[static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim"), a.rank(), "index_select"))] = index.numel();
           return {out};
         },
         "the slices of a along dim at the positions in index (each in [0, size))"});
  r.add({"gather", OpCategory::Indexing, {{"a"}, {"index"}}, {{"dim", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &index = m.tensor(1);
           require_index_dtype(index, "gather", false);
           const auto dim = static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim"), a.rank(), "gather"));
           if (index.rank() != a.rank() && !(a.rank() == 0 && index.rank() <= 1))
             user_error("gather: index ", shape_str(index.shape), " must have as many dims as the input ", shape_str(a.shape));
           for (std::size_t d = 0; d < index.rank() && index.rank() == a.rank(); ++d)
             if (d != dim && index.shape[d] > a.shape[d])
               user_error("gather: index ", shape_str(index.shape), " is larger than the input ", shape_str(a.shape),
                          " in dimension ", d);
           TensorType out = a;
           out.shape = index.shape;
           out.device = common_device(m);
           return {out};
         },
         "out[i][j] = a[index[i][j]][j] (for dim 0; likewise for others)"});
  for (const char* name : {"argmax", "argmin"}) {
    r.add({name, OpCategory::Indexing, {{"a"}},
           {{"dim", AttrType::Int, true, None{}}, {"keepdim", AttrType::Bool, false, false}},
           [](const MetaArgs& m) -> std::vector<TensorType> {
             const TensorType& a = m.tensor(0);
             if (is_bool(a.dtype)) user_error(m.op.name, ": bool inputs are not supported (as in PyTorch)");
             TensorType out = a;
             out.dtype = DType::Int64;
             const bool keepdim = m.attrs.get_bool("keepdim");
             if (m.attrs.is_none("dim")) {
               if (a.numel() == 0) user_error(m.op.name, ": the input ", shape_str(a.shape), " has no elements");
               out.shape = keepdim ? Shape(a.rank(), 1) : Shape{};
               return {out};
             }
             if (a.rank() == 0) {
               wrap_dim(m.attrs.get_int("dim"), 0, m.op.name);
               return {out};
             }
             const auto d = static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim"), a.rank(), m.op.name));
             if (a.shape[d] == 0)
               user_error(m.op.name, ": dimension ", d, " of the input ", shape_str(a.shape), " is empty");
             if (keepdim) out.shape[d] = 1;
             else out.shape.erase(out.shape.begin() + static_cast<std::ptrdiff_t>(d));
             return {out};
           },
           std::string("position (int64) of the first ") + (std::string(name) == "argmax" ? "largest" : "smallest") +
               " element along dim (of the flattened input when dim is None); NaN counts as the extreme"});
  }
  r.add({"cumsum", OpCategory::Indexing, {{"a"}}, {{"dim", AttrType::Int}, {"dtype", AttrType::DType, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           wrap_dim(m.attrs.get_int("dim"), out.rank(), "cumsum");
           if (auto dt = m.attrs.get_optional_dtype("dtype")) out.dtype = *dt;
           else if (!is_floating(out.dtype)) out.dtype = DType::Int64;  // as ATen: integers and bools sum in int64
           return {out};
         },
         "running sum along dim (integers and bools in int64 unless dtype is given)"});
  r.add({"prod", OpCategory::Indexing, {{"a"}},
         {{"dim", AttrType::Int, true, None{}}, {"keepdim", AttrType::Bool, false, false},
          {"dtype", AttrType::DType, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           out.shape = reduced_shape(out.shape, m.attrs.get("dim"), m.attrs.get_bool("keepdim"), "prod");
           if (auto dt = m.attrs.get_optional_dtype("dtype")) out.dtype = *dt;
           else if (!is_floating(out.dtype)) out.dtype = DType::Int64;  // as ATen: integers and bools in int64
           return {out};
         },
         "product along dim (of every element when dim is None; 1 when empty; integers and bools in int64 unless "
         "dtype is given)"});
  r.add({"sort", OpCategory::Indexing, {{"a"}},
         {{"dim", AttrType::Int, false, std::int64_t{-1}}, {"descending", AttrType::Bool, false, false},
          {"stable", AttrType::Bool, false, false}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           wrap_dim(m.attrs.get_int("dim"), a.rank(), "sort");
           TensorType indices = a;
           indices.dtype = DType::Int64;
           return {a, indices};
         },
         "values along dim in order and their positions (int64); NaN sorts above every number; equal elements "
         "keep their order"});
  r.add({"topk", OpCategory::Indexing, {{"a"}},
         {{"k", AttrType::Int}, {"dim", AttrType::Int, false, std::int64_t{-1}},
          {"largest", AttrType::Bool, false, true}, {"sorted", AttrType::Bool, false, true}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const std::int64_t k = m.attrs.get_int("k"), size = dim_size(a, m.attrs.get_int("dim"), "topk");
           if (k < 0 || k > size) user_error("topk: k (", k, ") is out of range for a dimension of size ", size);
           if (is_bool(a.dtype)) user_error("topk: bool inputs are not supported (as in PyTorch)");
           TensorType values = a;
           if (a.rank() > 0) values.shape[static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim"), a.rank(), "topk"))] = k;
           TensorType indices = values;
           indices.dtype = DType::Int64;
           return {values, indices};
         },
         "the k largest (smallest) values along dim, largest (smallest) first, and their positions (int64); NaN "
         "counts as the largest"});
  r.add({"diagonal", OpCategory::Indexing, {{"a"}},
         {{"offset", AttrType::Int, false, std::int64_t{0}}, {"dim1", AttrType::Int, false, std::int64_t{0}},
          {"dim2", AttrType::Int, false, std::int64_t{1}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           if (a.rank() < 2) user_error("diagonal: expected a tensor of at least 2 dims, got ", shape_str(a.shape));
           const auto d1 = static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim1"), a.rank(), "diagonal"));
           const auto d2 = static_cast<std::size_t>(wrap_dim(m.attrs.get_int("dim2"), a.rank(), "diagonal"));
           if (d1 == d2) user_error("diagonal: dim1 and dim2 are both dimension ", d1);
           const std::int64_t offset = m.attrs.get_int("offset");
           const std::int64_t len = std::max<std::int64_t>(
               0, offset >= 0 ? std::min(a.shape[d1], a.shape[d2] - offset) : std::min(a.shape[d1] + offset, a.shape[d2]));
           TensorType out = a;
           out.shape.clear();
           for (std::size_t d = 0; d < a.rank(); ++d)
             if (d != d1 && d != d2) out.shape.push_back(a.shape[d]);
           out.shape.push_back(len);
           return {out};
         },
         "out[..., i] = a[..., i, i + offset] over dims dim1, dim2 (the diagonal as a new last dim)"});
  r.add({"scatter", OpCategory::Indexing, {{"a"}, {"index"}, {"src", false, true}}, {{"dim", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &index = m.tensor(1);
           const bool tensor_src = m.inputs[2].kind == OperandKind::Tensor;
           check_scatter_shapes(a, index, tensor_src ? &m.tensor(2).shape : nullptr, m.attrs.get_int("dim"), "scatter");
           if (tensor_src && m.tensor(2).dtype != a.dtype)
             user_error("scatter: src (", dtype_name(m.tensor(2).dtype), ") must have the input's dtype (", dtype_name(a.dtype), ")");
           TensorType out = a;
           out.device = common_device(m);
           return {out};
         },
         "a with out[index[i][j]][j] = src[i][j] (for dim 0; likewise for others); src may be a number; of two "
         "writes to one place, the later in index order wins"});
  r.add({"scatter_reduce", OpCategory::Indexing, {{"a"}, {"index"}, {"src"}},
         {{"dim", AttrType::Int}, {"reduce", AttrType::String}, {"include_self", AttrType::Bool, false, true}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &index = m.tensor(1), &src = m.tensor(2);
           const std::string& reduce = m.attrs.get_string("reduce");
           if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
             user_error("scatter_reduce: reduce must be one of sum, prod, mean, amax, amin, got '", reduce, "'");
           check_scatter_shapes(a, index, &src.shape, m.attrs.get_int("dim"), "scatter_reduce");
           if (src.dtype != a.dtype)
             user_error("scatter_reduce: src (", dtype_name(src.dtype), ") must have the input's dtype (", dtype_name(a.dtype), ")");
           TensorType out = a;
           out.device = common_device(m);
           return {out};
         },
         "a with src[i][j] reduced (sum, prod, mean, amax, amin) into out[index[i][j]][j] (for dim 0); a's own "
         "value takes part when include_self; mean divides by the count (rounding down for integers)"});
  r.add({"masked_scatter", OpCategory::Indexing, {{"a"}, {"mask"}, {"source"}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &mask = m.tensor(1), &source = m.tensor(2);
           if (!is_bool(mask.dtype)) user_error("masked_scatter: mask must be a bool tensor, got ", dtype_name(mask.dtype));
           if (source.dtype != a.dtype)
             user_error("masked_scatter: source (", dtype_name(source.dtype), ") must have the input's dtype (", dtype_name(a.dtype), ")");
           TensorType out = a;
           out.shape = broadcast_shapes({a.shape, mask.shape}, "masked_scatter");
           out.device = common_device(m);
           return {out};
         },
         "a with the places where mask holds (broadcast, in row-major order) taking source's elements in order; "
         "source must have at least as many elements as mask holds"});
  r.add({"index", OpCategory::Indexing, {{"a"}, {"indices", false, false, true}}, {{"dims", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           out.shape = advanced_index_shape(m, 1, "index");
           out.device = common_device(m);
           return {out};
         },
         "a[..., indices[0], ..., indices[1], ...]: integer index tensors (broadcast together) at dims, each "
         "index in [-size, size)"});
  r.add({"index_put", OpCategory::Indexing, {{"a"}, {"values"}, {"indices", false, false, true}},
         {{"dims", AttrType::IntList}, {"accumulate", AttrType::Bool, false, false}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &values = m.tensor(1);
           const Shape indexed = advanced_index_shape(m, 2, "index_put");
           if (values.dtype != a.dtype)
             user_error("index_put: values (", dtype_name(values.dtype), ") must have the input's dtype (", dtype_name(a.dtype), ")");
           if (broadcast_shapes({values.shape, indexed}, "index_put") != indexed)
             user_error("index_put: values ", shape_str(values.shape), " do not broadcast to the indexed shape ", shape_str(indexed));
           TensorType out = a;
           out.device = common_device(m);
           return {out};
         },
         "a with a[..., indices[0], ..., indices[1], ...] = values (added when accumulate); of two writes to one "
         "place without accumulate, the later wins"});
}

}  // namespace thunderc
