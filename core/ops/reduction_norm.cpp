// Reductions (sum, mean, amax, amin, any, all, var) and normalizations (softmax, log_softmax, layer_norm, rms_norm, batch_norm).
#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc {

namespace {

// Reduced shape; an empty dims list reduces every dimension (as ATen's dim=[] does).
Shape reduce_shape(const TensorType& t, const IntList& dims, bool keepdim, const std::string& op) {
  std::vector<bool> reduced(t.rank(), dims.empty());
  for (auto d : dims) {
    auto w = static_cast<std::size_t>(wrap_dim(d, t.rank(), op));
    if (t.rank() == 0) continue;
    if (reduced[w] && !dims.empty()) user_error(op, ": dimension ", d, " appears more than once in ", shape_str(dims));
    reduced[w] = true;
  }
  Shape out;
  for (std::size_t i = 0; i < t.rank(); ++i) {
    if (!reduced[i]) out.push_back(t.shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

std::vector<AttrSpec> reduction_attrs(bool with_dtype) {
  std::vector<AttrSpec> a = {{"dims", AttrType::IntList, false, IntList{}}, {"keepdim", AttrType::Bool, false, false}};
  if (with_dtype) a.push_back({"dtype", AttrType::DType, true, None{}});
  return a;
}

void check_param(const MetaArgs& m, std::size_t i, const Shape& expected, const std::string& what) {
  if (m.is_none(i)) return;
  const TensorType& p = m.tensor(i);
  if (p.shape != expected)
    user_error(m.op.name, ": ", what, " has shape ", shape_str(p.shape), ", expected ", shape_str(expected));
}

}  // namespace

void register_reduction_norm_ops(OpRegistry& r) {
  r.add({"sum", OpCategory::Reduction, {{"a"}}, reduction_attrs(true),
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType t = m.tensor(0);
           auto dt = m.attrs.get_optional_dtype("dtype");
           TensorType out = t;
           out.shape = reduce_shape(t, m.attrs.get_ints("dims"), m.attrs.get_bool("keepdim"), "sum");
           out.dtype = dt ? *dt : (is_floating(t.dtype) ? t.dtype : DType::Int64);
           return {out};
         },
         "sum over dims (all when empty); integers accumulate in int64"});
  r.add({"mean", OpCategory::Reduction, {{"a"}}, reduction_attrs(true),
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           auto dt = m.attrs.get_optional_dtype("dtype");
           if (dt) out.dtype = *dt;
           if (!is_floating(out.dtype))
             user_error("mean: input dtype ", dtype_name(out.dtype), " is not floating point; pass dtype=");
           out.shape = reduce_shape(m.tensor(0), m.attrs.get_ints("dims"), m.attrs.get_bool("keepdim"), "mean");
           return {out};
         },
         "mean over dims (all when empty)"});
  for (const char* name : {"amax", "amin"}) {
    r.add({name, OpCategory::Reduction, {{"a"}}, reduction_attrs(false),
           [](const MetaArgs& m) -> std::vector<TensorType> {
             TensorType out = m.tensor(0);
             out.shape = reduce_shape(m.tensor(0), m.attrs.get_ints("dims"), m.attrs.get_bool("keepdim"), m.op.name);
             return {out};
           },
           std::string(std::string(name) == "amax" ? "maximum" : "minimum") + " over dims (all when empty)"});
  }
  for (const char* name : {"any", "all"}) {
    r.add({name, OpCategory::Reduction, {{"a"}}, reduction_attrs(false),
           [](const MetaArgs& m) -> std::vector<TensorType> {
             TensorType out = m.tensor(0);
             out.shape = reduce_shape(m.tensor(0), m.attrs.get_ints("dims"), m.attrs.get_bool("keepdim"), m.op.name);
             if (out.dtype != DType::UInt8) out.dtype = DType::Bool;  // as ATen: uint8 stays uint8
             return {out};
           },
           std::string("whether ") + (std::string(name) == "any" ? "any" : "every") +
               " element over dims (all when empty) is non-zero"});
  }
  r.add({"var", OpCategory::Reduction, {{"a"}},
         {{"dims", AttrType::IntList, false, IntList{}},
          {"keepdim", AttrType::Bool, false, false},
          {"correction", AttrType::Float, false, 1.0}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           require_floating(out, "var", "the input");
           out.shape = reduce_shape(m.tensor(0), m.attrs.get_ints("dims"), m.attrs.get_bool("keepdim"), "var");
           return {out};
         },
         "sum((a - mean(a))^2) / max(0, N - correction) over dims (all when empty)"});

  for (const char* name : {"softmax", "log_softmax"}) {
    r.add({name, OpCategory::Normalization, {{"a"}},
           {{"dim", AttrType::Int}, {"dtype", AttrType::DType, true, None{}}},
           [](const MetaArgs& m) -> std::vector<TensorType> {
             TensorType out = m.tensor(0);
             wrap_dim(m.attrs.get_int("dim"), out.rank(), m.op.name);
             if (auto dt = m.attrs.get_optional_dtype("dtype")) out.dtype = *dt;
             require_floating(out, m.op.name, "the input");
             return {out};
           },
           std::string(name) + " along dim, computed in dtype when given"});
  }
  // layer_norm and rms_norm: the input's trailing dims must be normalized_shape, and so must weight (and bias).
  auto trailing_norm_meta = [](const MetaArgs& m) -> std::vector<TensorType> {
    const TensorType& a = m.tensor(0);
    const IntList& ns = m.attrs.get_ints("normalized_shape");
    require_floating(a, m.op.name, "the input");
    bool trailing = ns.size() <= a.rank() && std::equal(ns.begin(), ns.end(), a.shape.end() - ns.size());
    if (ns.empty() || !trailing)
      user_error(m.op.name, ": normalized_shape ", shape_str(ns), " does not match the trailing dimensions of ",
                 "the input ", shape_str(a.shape));
    check_param(m, 1, ns, "weight");
    if (m.op.inputs.size() > 2) check_param(m, 2, ns, "bias");
    return {a};
  };
  r.add({"layer_norm", OpCategory::Normalization, {{"a"}, {"weight", true}, {"bias", true}},
         {{"normalized_shape", AttrType::IntList}, {"eps", AttrType::Float, false, 1e-5}}, trailing_norm_meta,
         "normalizes over the trailing normalized_shape dims, then * weight + bias"});
  // eps is always explicit here: importers turn PyTorch's eps=None into the input dtype's machine epsilon.
  r.add({"rms_norm", OpCategory::Normalization, {{"a"}, {"weight", true}},
         {{"normalized_shape", AttrType::IntList}, {"eps", AttrType::Float}}, trailing_norm_meta,
         "a * rsqrt(mean(a^2) + eps) over the trailing normalized_shape dims, then * weight"});
  r.add({"batch_norm", OpCategory::Normalization,
         {{"a"}, {"weight", true}, {"bias", true}, {"running_mean"}, {"running_var"}},
         {{"eps", AttrType::Float, false, 1e-5}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           require_floating(a, "batch_norm", "the input");
           if (a.rank() < 2) user_error("batch_norm: expected an input of rank >= 2, got ", shape_str(a.shape));
           Shape c = {a.shape[1]};
           for (std::size_t i = 1; i < 5; ++i)
             check_param(m, i, c, i == 1 ? "weight" : i == 2 ? "bias" : i == 3 ? "running_mean" : "running_var");
           return {a};
         },
         "inference batch norm over dim 1 with running statistics"});
}

}  // namespace thunderc
