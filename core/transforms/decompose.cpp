#include "core/transforms/decompose.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/ir/error.h"
#include "core/transforms/trace_util.h"

namespace thunderc {

namespace {

Operand T(ValueId v) { return Operand::tensor(v); }
Operand N(double x) { return Operand::number(x); }

// A 1-D int64 constant holding `values` (positions for index_select).
ValueId index_constant(Trace& t, const std::vector<std::int64_t>& values, const Device& device) {
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(values.size() * sizeof(std::int64_t));
  if (!values.empty()) std::memcpy(data->bytes.data(), values.data(), data->bytes.size());
  return t.add_constant("positions", TensorType{DType::Int64, {static_cast<std::int64_t>(values.size())}, device},
                        std::move(data));
}

class Decomposer {
 public:
  explicit Decomposer(const TransformContext& ctx) {
    for (const Executor* e : ctx.executors)
      if (!e->is_always()) natives_.push_back(e);
    forced_.insert(ctx.decompose_ops.begin(), ctx.decompose_ops.end());
  }

  bool forced(const BoundSymbol& s) const { return forced_.count(s.op->name) != 0; }

  bool native_can(const Trace& t, const BoundSymbol& s) const {
    return std::any_of(natives_.begin(), natives_.end(), [&](const Executor* e) { return e->can_execute(t, s); });
  }

  bool wants(const Trace& t, const BoundSymbol& s) const {
    if (s.is_region() || s.outputs.size() != 1 || !has_rule(s.op->name) || !dtypes_ok(t, s)) return false;
    return forced(s) || (!natives_.empty() && !native_can(t, s));
  }

  // Emits op(inputs, attrs) into t, rewriting it in turn when it wants to be; returns its (single) result.
  ValueId emit(Trace& t, const std::string& name, std::vector<Operand> inputs, Attrs attrs = {}) {
    ValueId out = t.emit1(op(name), std::move(inputs), std::move(attrs), source_);
    BoundSymbol s = t.symbols().back();
    if (!wants(t, s)) return out;
    t.mutable_symbols().pop_back();
    return rewrite(t, s);
  }

  // Appends symbols computing `s` (which is not in t) to t; returns the value holding the result.
  ValueId rewrite(Trace& t, const BoundSymbol& s);

  static bool has_rule(const std::string& name) { return rules().count(name) != 0; }
  static const std::set<std::string>& rules() {
    static const std::set<std::string> r = {"linear",    "addmm", "softmax", "log_softmax", "layer_norm",
                                            "rms_norm",  "batch_norm", "gelu",  "silu",    "hardswish",   "hardsigmoid",
                                            "scaled_dot_product_attention", "amin", "any", "all", "var",
                                            "repeat", "constant_pad_nd", "pad", "upsample_nearest2d", "group_norm",
                                            "slice_scatter", "select_scatter", "conv2d_backward_input",
                                            "conv2d_backward_weight"};
    return r;
  }

 private:
  static bool dtypes_ok(const Trace& t, const BoundSymbol& s) {
    auto ok = [&](ValueId v) {
      DType d = t.type(v).dtype;
      return !is_floating(d) || d == DType::Float32 || d == DType::Float64;
    };
    for (const Operand& in : s.inputs)
      if (in.is_tensor() && !ok(in.value)) return false;
    return std::all_of(s.outputs.begin(), s.outputs.end(), ok);
  }

  std::vector<const Executor*> natives_;
  std::set<std::string> forced_;
  std::string source_;  // of the symbol being rewritten, given to the new ones
};

ValueId Decomposer::rewrite(Trace& t, const BoundSymbol& s) {
  const std::string saved_source = source_;
  source_ = s.source;
  const std::string& name = s.op->name;
  const Attrs& at = s.attrs;
  auto in = [&](std::size_t i) { return s.inputs.at(i); };
  auto has = [&](std::size_t i) { return s.inputs.at(i).kind != OperandKind::None; };
  auto type = [&](std::size_t i) -> TensorType { return t.type(s.inputs.at(i).value); };  // a copy: emit grows t
  ValueId r = 0;

  if (name == "linear") {
    ValueId w = in(1).value;
    ValueId mm = type(1).rank() == 2 ? emit(t, "matmul", {in(0), T(emit(t, "permute", {in(1)}, {{"dims", IntList{1, 0}}}))})
                                     : emit(t, "matmul", {in(0), T(w)});
    r = has(2) ? emit(t, "add", {T(mm), in(2)}) : mm;
  } else if (name == "addmm") {
    double beta = at.get_float("beta"), alpha = at.get_float("alpha");
    ValueId mm = emit(t, "matmul", {in(1), in(2)});
    if (alpha != 1.0) mm = emit(t, "mul", {T(mm), N(alpha)});
    if (beta == 0.0) {  // ATen ignores the bias entirely (NaN and inf included) when beta is 0
      r = mm;
    } else {
      Operand c = beta == 1.0 ? in(0) : T(emit(t, "mul", {in(0), N(beta)}));
      r = emit(t, "add", {c, T(mm)});
    }
  } else if (name == "softmax" || name == "log_softmax") {
    Operand x = in(0);
    if (!at.is_none("dtype")) x = T(emit(t, "to_dtype", {x}, {{"dtype", at.get_dtype("dtype")}}));
    Attrs red = {{"dims", IntList{at.get_int("dim")}}, {"keepdim", true}};
    ValueId m = emit(t, "amax", {x}, red);
    ValueId d = emit(t, "sub", {x, T(m)});
    ValueId e = emit(t, "exp", {T(d)});
    ValueId sum = emit(t, "sum", {T(e)}, red);
    r = name == "softmax" ? emit(t, "div", {T(e), T(sum)}) : emit(t, "sub", {T(d), T(emit(t, "log", {T(sum)}))});
  } else if (name == "layer_norm") {
    std::int64_t rank = static_cast<std::int64_t>(type(0).rank());
    std::int64_t k = static_cast<std::int64_t>(at.get_ints("normalized_shape").size());
    IntList dims;
    for (std::int64_t d = rank - k; d < rank; ++d) dims.push_back(d);
    Attrs red = {{"dims", dims}, {"keepdim", true}};
    ValueId mu = emit(t, "mean", {in(0)}, red);
    ValueId d = emit(t, "sub", {in(0), T(mu)});
    ValueId var = emit(t, "mean", {T(emit(t, "mul", {T(d), T(d)}))}, red);
    ValueId inv = emit(t, "rsqrt", {T(emit(t, "add", {T(var), N(at.get_float("eps"))}))});
    r = emit(t, "mul", {T(d), T(inv)});
    if (has(1)) r = emit(t, "mul", {T(r), in(1)});
    if (has(2)) r = emit(t, "add", {T(r), in(2)});
  } else if (name == "rms_norm") {
    std::int64_t rank = static_cast<std::int64_t>(type(0).rank());
    std::int64_t k = static_cast<std::int64_t>(at.get_ints("normalized_shape").size());
    IntList dims;
    for (std::int64_t d = rank - k; d < rank; ++d) dims.push_back(d);
    ValueId ms = emit(t, "mean", {T(emit(t, "mul", {in(0), in(0)}))}, {{"dims", dims}, {"keepdim", true}});
    ValueId inv = emit(t, "rsqrt", {T(emit(t, "add", {T(ms), N(at.get_float("eps"))}))});
    r = emit(t, "mul", {in(0), T(inv)});
    if (has(1)) r = emit(t, "mul", {T(r), in(1)});
  } else if (name == "batch_norm") {
    const TensorType a = type(0);
    IntList pshape(a.rank() - 1, 1);
    pshape[0] = a.shape[1];
    auto param = [&](Operand p) { return T(emit(t, "reshape", {p}, {{"shape", pshape}})); };
    ValueId scale = emit(t, "rsqrt", {T(emit(t, "add", {in(4), N(at.get_float("eps"))}))});
    if (has(1)) scale = emit(t, "mul", {T(scale), in(1)});
    r = emit(t, "mul", {T(emit(t, "sub", {in(0), param(in(3))})), param(T(scale))});
    if (has(2)) r = emit(t, "add", {T(r), param(in(2))});
  } else if (name == "gelu") {
    Operand x = in(0);
    ValueId inner;
    if (at.get_string("approximate") == "tanh") {
      ValueId cube = emit(t, "mul", {T(emit(t, "mul", {x, x})), x});
      ValueId sum = emit(t, "add", {x, T(emit(t, "mul", {T(cube), N(0.044715)}))});
      inner = emit(t, "tanh", {T(emit(t, "mul", {T(sum), N(std::sqrt(2.0 / M_PI))}))});
    } else {
      inner = emit(t, "erf", {T(emit(t, "mul", {x, N(M_SQRT1_2)}))});
    }
    r = emit(t, "mul", {T(emit(t, "mul", {x, N(0.5)})), T(emit(t, "add", {T(inner), N(1.0)}))});
  } else if (name == "silu") {
    r = emit(t, "mul", {in(0), T(emit(t, "sigmoid", {in(0)}))});
  } else if (name == "hardswish" || name == "hardsigmoid") {
    ValueId relu6 = emit(t, "hardtanh", {T(emit(t, "add", {in(0), N(3.0)}))}, {{"min_val", 0.0}, {"max_val", 6.0}});
    r = name == "hardsigmoid" ? emit(t, "div", {T(relu6), N(6.0)})
                              : emit(t, "div", {T(emit(t, "mul", {in(0), T(relu6)})), N(6.0)});
  } else if (name == "scaled_dot_product_attention") {
    const TensorType q = type(0), k = type(1);
    std::size_t n = q.rank();
    double scale = at.is_none("scale") ? 1.0 / std::sqrt(static_cast<double>(q.shape[n - 1])) : at.get_float("scale");
    IntList perm;
    for (std::size_t i = 0; i + 2 < n; ++i) perm.push_back(static_cast<std::int64_t>(i));
    perm.push_back(static_cast<std::int64_t>(n - 1));
    perm.push_back(static_cast<std::int64_t>(n - 2));
    ValueId kt = emit(t, "permute", {in(1)}, {{"dims", perm}});
    ValueId sc = emit(t, "mul", {T(emit(t, "matmul", {in(0), T(kt)})), N(scale)});
    const double neg_inf = -INFINITY;
    if (at.get_bool("is_causal")) {
      std::int64_t L = q.shape[n - 2], S = k.shape[n - 2];
      auto data = std::make_shared<ConstantData>();
      data->bytes.resize(static_cast<std::size_t>(L * S));
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j) data->bytes[static_cast<std::size_t>(i * S + j)] = j > i;
      ValueId mask = t.add_constant("causal_mask", TensorType{DType::Bool, {L, S}, q.device}, std::move(data));
      sc = emit(t, "masked_fill", {T(sc), T(mask), N(neg_inf)});
    }
    if (has(3)) {
      if (is_bool(type(3).dtype))
        sc = emit(t, "masked_fill", {T(sc), T(emit(t, "logical_not", {in(3)})), N(neg_inf)});
      else
        sc = emit(t, "add", {T(sc), in(3)});
    }
    ValueId p = emit(t, "softmax", {T(sc)}, {{"dim", std::int64_t{-1}}});
    r = emit(t, "matmul", {T(p), in(2)});
  } else if (name == "amin") {
    r = emit(t, "neg", {T(emit(t, "amax", {T(emit(t, "neg", {in(0)}))}, at))});
  } else if (name == "any" || name == "all") {
    // Non-zero elements as 0/1 floats, then their max: any is max > 0 (an empty reduction gives -inf: false);
    // all(a) is not any(not a).
    const TensorType a = type(0);
    const DType out_dtype = t.type(s.outputs[0]).dtype;
    ValueId flags;
    if (name == "all") flags = emit(t, "logical_not", {in(0)});
    else flags = is_bool(a.dtype) ? in(0).value : emit(t, "ne", {in(0), N(0.0)});
    ValueId m = emit(t, "amax", {T(emit(t, "to_dtype", {T(flags)}, {{"dtype", DType::Float32}}))}, at);
    r = emit(t, "gt", {T(m), N(0.0)});
    if (name == "all") r = emit(t, "logical_not", {T(r)});
    if (out_dtype != DType::Bool) r = emit(t, "to_dtype", {T(r)}, {{"dtype", out_dtype}});
  } else if (name == "var") {
    // Two passes, as ATen's result: sum((a - mean)^2) / max(0, N - correction) (0 / 0 is NaN, x / 0 inf); with
    // correction 0 (batch statistics) mean((a - mean)^2).
    const TensorType a = type(0);
    const IntList& dims = at.get_ints("dims");
    double count = 1;
    std::vector<bool> reduced(a.rank(), dims.empty());
    for (std::int64_t d : dims) reduced[static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(a.rank()) : d)] = true;
    for (std::size_t i = 0; i < a.rank(); ++i)
      if (reduced[i]) count *= static_cast<double>(a.shape[i]);
    ValueId mu = emit(t, "mean", {in(0)}, {{"dims", dims}, {"keepdim", true}});
    ValueId d = emit(t, "sub", {in(0), T(mu)});
    ValueId sq = emit(t, "mul", {T(d), T(d)});
    const Attrs reduce = {{"dims", dims}, {"keepdim", at.get_bool("keepdim")}};
    if (at.get_float("correction") == 0 && count > 0)  // the mean: its divisor follows a symbolic size at run time
      r = emit(t, "mean", {T(sq)}, reduce);
    else
      r = emit(t, "div", {T(emit(t, "sum", {T(sq)}, reduce)), N(std::max(0.0, count - at.get_float("correction")))});
  } else if (name == "repeat") {
    // [s0, s1] repeated [r0, r1]: viewed as [1, s0, 1, s1], expanded to [r0, s0, r1, s1], viewed as [r0*s0, r1*s1].
    const TensorType a = type(0);
    const IntList& rep = at.get_ints("repeats");
    const std::size_t lead = rep.size() - a.rank();
    IntList inter, expanded, out;
    for (std::size_t i = 0; i < rep.size(); ++i) {
      const std::int64_t size = i < lead ? 1 : a.shape[i - lead];
      inter.insert(inter.end(), {1, size});
      expanded.insert(expanded.end(), {rep[i], size});
      out.push_back(rep[i] * size);
    }
    ValueId v = emit(t, "reshape", {in(0)}, {{"shape", inter}});
    r = emit(t, "reshape", {T(emit(t, "expand", {T(v)}, {{"shape", expanded}}))}, {{"shape", out}});
  } else if (name == "constant_pad_nd") {
    // Crops (negative amounts) as slices, then pads as a cat with the value broadcast from a 0-dim constant.
    const IntList& pad = at.get_ints("pad");
    const TensorType a = type(0);
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(dtype_size(a.dtype));
    if (!scalar_to_bytes(at.get_float("value"), a.dtype, data->bytes.data()))
      user_error("constant_pad_nd: cannot pad a ", dtype_name(a.dtype), " tensor");  // declines the rule
    ValueId fill = t.add_constant("pad_value", TensorType{a.dtype, {}, a.device}, std::move(data));
    ValueId x = in(0).value;
    for (std::size_t k = 0; k < pad.size() / 2; ++k) {
      const auto dim = static_cast<std::int64_t>(a.rank() - 1 - k);
      const std::int64_t before = pad[2 * k], after = pad[2 * k + 1];
      const std::int64_t size = t.type(x).shape[static_cast<std::size_t>(dim)];
      const std::int64_t start = std::max<std::int64_t>(0, -before), end = size - std::max<std::int64_t>(0, -after);
      if (start != 0 || end != size)
        x = emit(t, "slice", {T(x)}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}});
      std::vector<Operand> parts;
      auto block = [&](std::int64_t n) {
        Shape shape = t.type(x).shape;
        shape[static_cast<std::size_t>(dim)] = n;
        ValueId one = emit(t, "reshape", {T(fill)}, {{"shape", IntList(shape.size(), 1)}});
        return T(emit(t, "expand", {T(one)}, {{"shape", shape}}));
      };
      if (before > 0) parts.push_back(block(before));
      parts.push_back(T(x));
      if (after > 0) parts.push_back(block(after));
      if (parts.size() > 1) x = emit(t, "cat", parts, {{"dim", dim}});
    }
    r = x == in(0).value ? emit(t, "reshape", {in(0)}, {{"shape", a.shape}}) : x;
  } else if (name == "pad") {
    // Each padded dim is an index_select with the source position of every output position (a constant).
    const IntList& pad = at.get_ints("pad");
    const bool reflect = at.get_string("mode") == "reflect";
    const TensorType a = type(0);
    ValueId x = in(0).value;
    for (std::size_t k = 0; k < pad.size() / 2; ++k) {
      const auto dim = static_cast<std::int64_t>(a.rank() - 1 - k);
      const std::int64_t n = a.shape[static_cast<std::size_t>(dim)], before = pad[2 * k], after = pad[2 * k + 1];
      std::vector<std::int64_t> src;
      for (std::int64_t i = -before; i < n + after; ++i) {
        std::int64_t j = i;
        if (reflect) j = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
        else j = std::min(std::max<std::int64_t>(i, 0), n - 1);
        src.push_back(j);
      }
      x = emit(t, "index_select", {T(x), T(index_constant(t, src, a.device))}, {{"dim", dim}});
    }
    r = x;
  } else if (name == "upsample_nearest2d") {
    // As ATen's nearest_idx: the same index when the size is kept, i / 2 when it doubles, else
    // min(floor(i * scale), in - 1) in float arithmetic (scale = 1 / scale_factor when given, else in / out).
    const TensorType a = type(0);
    const IntList& size = at.get_ints("output_size");
    ValueId x = in(0).value;
    for (std::size_t k = 0; k < 2; ++k) {
      const std::int64_t n = a.shape[2 + k], out = size[k];
      const char* scale_attr = k == 0 ? "scale_h" : "scale_w";
      const float scale = !at.is_none(scale_attr) && at.get_float(scale_attr) > 0
                              ? static_cast<float>(1.0 / at.get_float(scale_attr))
                              : static_cast<float>(n) / static_cast<float>(out);
      std::vector<std::int64_t> src;
      for (std::int64_t i = 0; i < out; ++i) {
        if (out == n) src.push_back(i);
        else if (out == 2 * n) src.push_back(i >> 1);
        else src.push_back(std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(i) * scale)), n - 1));
      }
      if (out != n)
        x = emit(t, "index_select", {T(x), T(index_constant(t, src, a.device))}, {{"dim", static_cast<std::int64_t>(2 + k)}});
    }
    r = x == in(0).value ? emit(t, "reshape", {in(0)}, {{"shape", a.shape}}) : x;
  } else if (name == "group_norm") {
    // [N, C, ...] viewed as [N, G, rest]: statistics over rest, as layer_norm's rule; then per-channel affine.
    const TensorType a = type(0);
    const std::int64_t groups = at.get_int("num_groups"), c = a.shape[1];
    ValueId g = emit(t, "reshape", {in(0)}, {{"shape", IntList{a.shape[0], groups, -1}}});
    Attrs red = {{"dims", IntList{2}}, {"keepdim", true}};
    ValueId mu = emit(t, "mean", {T(g)}, red);
    ValueId d = emit(t, "sub", {T(g), T(mu)});
    ValueId var = emit(t, "mean", {T(emit(t, "mul", {T(d), T(d)}))}, red);
    ValueId y = emit(t, "mul", {T(d), T(emit(t, "rsqrt", {T(emit(t, "add", {T(var), N(at.get_float("eps"))}))}))});
    r = emit(t, "reshape", {T(y)}, {{"shape", a.shape}});
    IntList pshape(a.rank() - 1, 1);
    pshape[0] = c;
    if (has(1)) r = emit(t, "mul", {T(r), T(emit(t, "reshape", {in(1)}, {{"shape", pshape}}))});
    if (has(2)) r = emit(t, "add", {T(r), T(emit(t, "reshape", {in(2)}, {{"shape", pshape}}))});
  } else if (name == "slice_scatter" || name == "select_scatter") {
    // a[..., :start] ++ src ++ a[..., end:] along dim (src converted to a's dtype; a select's src gets its dim
    // back). Only unit steps: a strided slice interleaves.
    const TensorType a = type(0);
    const std::int64_t dim = at.get_int("dim"), size = a.shape[static_cast<std::size_t>(dim)];
    const bool select = name == "select_scatter";
    const std::int64_t start = select ? at.get_int("index") : at.get_int("start");
    const std::int64_t end = select ? start + 1 : at.get_int("end");
    if (!select && at.get_int("step") != 1) user_error("decompose: slice_scatter with a step");  // declines the rule
    Operand src = in(1);
    if (type(1).dtype != a.dtype) src = T(emit(t, "to_dtype", {src}, {{"dtype", a.dtype}}));
    if (select) {
      Shape s = type(1).shape;
      s.insert(s.begin() + dim, 1);
      src = T(emit(t, "reshape", {src}, {{"shape", IntList(s.begin(), s.end())}}));
    }
    auto part = [&](std::int64_t b, std::int64_t e) {
      return T(emit(t, "slice", {in(0)}, {{"dim", dim}, {"start", b}, {"end", e}, {"step", std::int64_t{1}}}));
    };
    std::vector<Operand> parts;
    if (start > 0) parts.push_back(part(0, start));
    parts.push_back(src);
    if (end < size) parts.push_back(part(end, size));
    r = parts.size() == 1 ? emit(t, "reshape", {src}, {{"shape", a.shape}}) : emit(t, "cat", parts, {{"dim", dim}});
  } else if (name == "conv2d_backward_input" || name == "conv2d_backward_weight") {
    // GEMMs around im2col / col2im, as ATen's slow path (no zero-dilated gradient at stride > 1). With
    // L = OH*OW output positions, g groups of K/g filters over C/g channels, the output gradient per group
    // gm = [N, g, K/g, L] (N = 1: [g, K/g, L]):
    //  - input: columns = W^T [g, C/g*R*S, K/g] @ gm, added back into the image by col2im;
    //  - weight: gm [g, K/g, N*L] @ im2col(x)^T [g, N*L, C/g*R*S] -> [K, C/g, R, S].
    auto reshape = [&](ValueId v, const Shape& shape) {
      return emit(t, "reshape", {T(v)}, {{"shape", IntList(shape.begin(), shape.end())}});
    };
    auto permute = [&](ValueId v, const IntList& dims) { return emit(t, "permute", {T(v)}, {{"dims", dims}}); };
    auto transpose_last2 = [&](ValueId v) {
      IntList dims;
      for (std::size_t d = 0; d < t.type(v).rank(); ++d) dims.push_back(static_cast<std::int64_t>(d));
      std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
      return permute(v, dims);
    };
    auto two = [&](const char* attr) {
      const IntList& v = at.get_ints(attr);
      return v.size() == 1 ? IntList{v[0], v[0]} : v;
    };
    const bool input = name == "conv2d_backward_input";
    const Shape gs = type(0).shape, other = type(1).shape;  // the weight's or the input's
    const IntList xs = input ? at.get_ints("input_size") : IntList(other.begin(), other.end());
    const IntList ws = input ? IntList(other.begin(), other.end()) : at.get_ints("weight_size");
    const std::int64_t groups = at.get_int("groups"), n = xs[0], c = xs[1], k = ws[0], kg = k / groups,
                       l = gs[2] * gs[3], patch = ws[1] * ws[2] * ws[3];
    const Attrs window{{"kernel_size", IntList{ws[2], ws[3]}}, {"dilation", two("dilation")},
                       {"padding", two("padding")}, {"stride", two("stride")}};
    const ValueId g = in(0).value;
    const ValueId gm = n == 1 ? reshape(g, {groups, kg, l}) : reshape(g, {n, groups, kg, l});
    if (input) {
      const ValueId wt = transpose_last2(reshape(in(1).value, {groups, kg, patch}));  // [g, C/g*R*S, K/g]
      const ValueId cols = reshape(emit(t, "matmul", {T(wt), T(gm)}), {n, c * ws[2] * ws[3], l});
      Attrs fold = window;
      fold.set("output_size", IntList{xs[2], xs[3]});
      r = emit(t, "col2im", {T(cols)}, fold);
    } else {
      const ValueId cols = emit(t, "im2col", {in(1)}, window);  // [N, C*R*S, L]
      ValueId lhs = gm, rhs;
      if (n == 1) {
        rhs = transpose_last2(reshape(cols, {groups, patch, l}));  // [g, L, C/g*R*S]
      } else {  // the batch joins the contraction: [g, K/g, N*L] @ [g, N*L, C/g*R*S]
        lhs = reshape(permute(gm, {1, 2, 0, 3}), {groups, kg, n * l});
        rhs = reshape(permute(reshape(cols, {n, groups, patch, l}), {1, 0, 3, 2}), {groups, n * l, patch});
      }
      r = reshape(emit(t, "matmul", {T(lhs), T(rhs)}), Shape(ws.begin(), ws.end()));
    }
  } else {
    internal_error("decompose: no rule for ", name);
  }
  source_ = saved_source;
  return r;
}

}  // namespace

std::vector<std::string> decomposable_ops() {
  const auto& r = Decomposer::rules();
  return {r.begin(), r.end()};
}

Trace decompose(const Trace& trace, const TransformContext& context) {
  for (const std::string& name : context.decompose_ops)
    if (!Decomposer::has_rule(name)) {
      std::string known;
      for (const std::string& k : decomposable_ops()) known += (known.empty() ? "" : ", ") + k;
      user_error("cannot decompose '", name, "': decompose has rules for ", known);
    }
  Decomposer dec(context);
  Trace result = trace.clone_without_symbols();
  ValueMap replaced;  // only when a rewrite's result could not take over the original output value
  for (const BoundSymbol& original : trace.symbols()) {
    BoundSymbol sym = original;
    substitute_operands(sym, replaced);
    if (dec.wants(result, sym)) {
      Trace scratch = result;
      std::size_t first = scratch.symbols().size();
      ValueId final_value = 0;
      bool ok = true;
      try {
        final_value = dec.rewrite(scratch, sym);
      } catch (const UserError&) {
        ok = false;  // a rule that does not fit this use (e.g. a mask broadcasting beyond the scores)
      }
      auto& added = scratch.mutable_symbols();
      ok = ok && scratch.type(final_value) == result.type(sym.outputs[0]);
      if (ok && !dec.forced(sym))
        for (std::size_t i = first; ok && i < added.size(); ++i) ok = dec.native_can(scratch, added[i]);
      if (ok) {
        // Let the symbol computing the result define the original output value, so readers stay as they are.
        BoundSymbol* def = nullptr;
        bool read_again = false;
        for (std::size_t i = first; i < added.size(); ++i) {
          for (ValueId v : tensor_operands(added[i])) read_again = read_again || v == final_value;
          if (added[i].outputs.size() == 1 && added[i].outputs[0] == final_value) def = &added[i];
        }
        if (def && !read_again)
          def->outputs[0] = sym.outputs[0];
        else
          replaced[sym.outputs[0]] = final_value;
        result = std::move(scratch);
        continue;
      }
    }
    result.append(std::move(sym));
  }
  if (!replaced.empty()) {
    std::vector<ValueId> outs;
    for (ValueId v : trace.outputs()) outs.push_back(resolve_value(replaced, v));
    result.set_outputs(outs);
  }
  result.constructed_by = "decompose";
  return result;
}

const Transform& decompose_transform() {
  static const Transform t{
      "decompose",
      "composite operators (linear, softmax, layer_norm, gelu, sdpa, ...) that no executor but torch runs "
      "become simpler ones",
      [](const Trace& trace, const TransformContext& ctx) { return decompose(trace, ctx); }};
  return t;
}

}  // namespace thunderc
