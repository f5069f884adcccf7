// Reductions (sum, mean, amax, amin, any, all, var) and normalizations (softmax, log_softmax, layer_norm, rms_norm, batch_norm).
#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"
#include "core/ops/vjp.h"

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

namespace {
Operand T(ValueId v) { return Operand::tensor(v); }
Operand N(double x) { return Operand::number(x); }

// The reduced dims of a sum/mean/amax symbol over an input of `rank` (every dim when the list is empty).
std::vector<std::int64_t> reduced_dims(const Attrs& a, std::size_t rank, const std::string& op) {
  std::vector<std::int64_t> dims;
  for (std::int64_t d : a.get_ints("dims")) dims.push_back(wrap_dim(d, rank, op));
  if (dims.empty())
    for (std::size_t d = 0; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// `g` (the gradient of a reduction's result) with the reduced dims back as size 1, then expanded to `shape`.
ValueId unreduce(VjpBuilder& b, ValueId g, const Shape& shape, const std::vector<std::int64_t>& dims) {
  Shape kept = shape;
  for (std::int64_t d : dims) kept[static_cast<std::size_t>(d)] = 1;
  return b.expand(b.reshape(g, kept), shape);
}

std::int64_t count_of(const Shape& shape, const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= shape[static_cast<std::size_t>(d)];
  return n;
}

// The trailing dims layer_norm normalizes.
std::vector<std::int64_t> trailing_dims(std::size_t rank, std::size_t count) {
  std::vector<std::int64_t> dims;
  for (std::size_t d = rank - count; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
  return dims;
}

void register_reduction_norm_vjps(OpRegistry& r) {
  using V = VjpBuilder;
  set_vjp(r, "sum", [](V& b) {
    const Shape& x = b.shape(b.in(0));
    b.give(0, unreduce(b, b.g(), x, reduced_dims(b.attrs(), x.size(), "sum")));
  });
  set_vjp(r, "mean", [](V& b) {
    const Shape& x = b.shape(b.in(0));
    const auto dims = reduced_dims(b.attrs(), x.size(), "mean");
    b.give(0, b.div(T(unreduce(b, b.g(), x, dims)), N(static_cast<double>(count_of(x, dims)))));
  });
  // ATen's evenly-distributed rule: every element equal to the extremum shares the gradient.
  for (const char* name : {"amax", "amin"}) {
    set_vjp(r, name, [](V& b) {
      const ValueId x = b.in(0);
      const auto dims = reduced_dims(b.attrs(), b.shape(x).size(), b.sym().op->name);
      ValueId hit = b.cmp("eq", T(x), T(unreduce(b, b.out(), b.shape(x), dims)));
      ValueId count = b.sum(b.cast(hit, b.type(b.out()).dtype), dims, true);
      ValueId share = b.div(T(unreduce(b, b.g(), b.shape(x), dims)), T(b.expand(count, b.shape(x))));
      b.give(0, b.where(hit, T(share), N(0)));
    });
  }
  // softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g), along dim.
  set_vjp(r, "softmax", [](V& b) {
    const ValueId y = b.out(), g = b.g();
    const std::int64_t dim = wrap_dim(b.attrs().get_int("dim"), b.shape(y).size(), "softmax");
    ValueId dot = b.sum(b.mul(T(g), T(y)), {dim}, true);
    b.give(0, b.mul(T(y), T(b.sub(T(g), T(dot)))));
  });
  set_vjp(r, "log_softmax", [](V& b) {
    const ValueId y = b.out(), g = b.g();
    const std::int64_t dim = wrap_dim(b.attrs().get_int("dim"), b.shape(y).size(), "log_softmax");
    ValueId total = b.sum(g, {dim}, true);
    b.give(0, b.sub(T(g), T(b.mul(T(b.emit("exp", {T(y)})), T(total)))));
  });
  // With xhat = (x - mean) * rstd over the normalized dims and gh = g * weight:
  //   dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)), dweight = sum(g * xhat), dbias = sum(g)
  // (mean and rstd are recomputed from x: cheaper to redo than to save).
  set_vjp(r, "layer_norm", [](V& b) {
    const ValueId x = b.in(0), g = b.g();
    const auto dims = trailing_dims(b.shape(x).size(), b.attrs().get_ints("normalized_shape").size());
    ValueId centered = b.sub(T(x), T(b.emit("mean", {T(x)}, {{"dims", IntList(dims)}, {"keepdim", true}})));
    ValueId var = b.emit("mean", {T(b.mul(T(centered), T(centered)))}, {{"dims", IntList(dims)}, {"keepdim", true}});
    ValueId rstd = b.emit("rsqrt", {T(b.add(T(var), N(b.attrs().get_float("eps"))))});
    ValueId xhat = b.mul(T(centered), T(rstd));
    if (b.wants(0)) {
      ValueId gh = b.is_tensor(1) ? b.mul(T(g), T(b.in(1))) : g;
      ValueId m1 = b.emit("mean", {T(gh)}, {{"dims", IntList(dims)}, {"keepdim", true}});
      ValueId m2 = b.emit("mean", {T(b.mul(T(gh), T(xhat)))}, {{"dims", IntList(dims)}, {"keepdim", true}});
      b.give(0, b.mul(T(rstd), T(b.sub(T(b.sub(T(gh), T(m1))), T(b.mul(T(xhat), T(m2)))))));
    }
    if (b.wants(1)) b.give(1, b.mul(T(g), T(xhat)));
    if (b.wants(2)) b.give(2, g);
  });
  // Inference batch norm, y = (x - running_mean) * rsqrt(running_var + eps) * weight + bias over dim 1:
  // dx = g * weight * rstd, dweight = sum(g * xhat), dbias = sum(g) over every dim but 1 (ATen's
  // batch_norm_backward with train=False); the running statistics get none.
  set_vjp(r, "batch_norm", [](V& b) {
    const ValueId x = b.in(0), g = b.g();
    const Shape xs = b.shape(x);
    Shape per_channel(xs.size(), 1);
    per_channel[1] = xs[1];
    std::vector<std::int64_t> dims;
    for (std::size_t d = 0; d < xs.size(); ++d)
      if (d != 1) dims.push_back(static_cast<std::int64_t>(d));
    auto channel = [&](std::size_t i) { return b.reshape(b.in(i), per_channel); };
    ValueId rstd = b.emit("rsqrt", {T(b.add(T(channel(4)), N(b.attrs().get_float("eps"))))});
    if (b.wants(0)) b.give(0, b.mul(T(g), T(b.is_tensor(1) ? b.mul(T(channel(1)), T(rstd)) : rstd)));
    if (b.wants(1)) {
      ValueId xhat = b.mul(T(b.sub(T(x), T(channel(3)))), T(rstd));
      b.give(1, b.sum(b.mul(T(g), T(xhat)), dims, false));
    }
    if (b.wants(2)) b.give(2, b.sum(g, dims, false));
  });
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
         // momentum: only training mode (--module-mode train, autodiff's batch-statistics form) reads it.
         {{"eps", AttrType::Float, false, 1e-5}, {"momentum", AttrType::Float, false, 0.1}},
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
  register_reduction_norm_vjps(r);
}

}  // namespace thunderc
