// Operators over positions, each with code of its own rather than a place in a fused loop region: gathers by
// index tensors (index_select, gather), positions of extremes (argmax, argmin) and running sums (cumsum).
// embedding, the first of them, is declared with the nn operators.
#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc {

namespace {

void require_index_dtype(const TensorType& index, const std::string& op, bool int32_too) {
  if (index.dtype == DType::Int64 || (int32_too && index.dtype == DType::Int32)) return;
  user_error(op, ": index must be ", int32_too ? "an int32 or int64" : "an int64", " tensor, got ", dtype_name(index.dtype));
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
}

}  // namespace thunderc
