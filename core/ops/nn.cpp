// Matrix products, convolution, pooling, embedding and attention.
#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"
#include "core/ops/vjp.h"

namespace thunderc {

namespace {

void same_dtype(const MetaArgs& m) {
  const TensorType* first = nullptr;
  for (const OperandInfo& o : m.inputs) {
    if (o.kind != OperandKind::Tensor) continue;
    if (!first) first = o.tensor;
    else if (o.tensor->dtype != first->dtype)
      user_error(m.op.name, ": expected all inputs to have dtype ", dtype_name(first->dtype), ", got ",
                 dtype_name(o.tensor->dtype));
  }
}

TensorType matmul_type(const TensorType& a, const TensorType& b, const std::string& op) {
  if (a.rank() == 0 || b.rank() == 0) user_error(op, ": both arguments must be at least 1-D, got ", shape_str(a.shape), " and ", shape_str(b.shape));
  // 1-D operands are treated as a row / column vector whose extra dim is removed afterwards.
  Shape sa = a.rank() == 1 ? Shape{1, a.shape[0]} : a.shape;
  Shape sb = b.rank() == 1 ? Shape{b.shape[0], 1} : b.shape;
  std::int64_t k1 = sa[sa.size() - 1], k2 = sb[sb.size() - 2];
  if (k1 != k2)
    user_error(op, ": shapes ", shape_str(a.shape), " and ", shape_str(b.shape), " cannot be multiplied (", k1,
               " != ", k2, ")");
  Shape batch = broadcast_shapes({Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2)}, op);
  Shape out = batch;
  if (a.rank() > 1) out.push_back(sa[sa.size() - 2]);
  if (b.rank() > 1) out.push_back(sb.back());
  return {a.dtype, out, a.device};
}

IntList pair(const Attrs& attrs, const std::string& name, const std::string& op) {
  const IntList& v = attrs.get_ints(name);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) user_error(op, ": ", name, " must have 1 or 2 values, got ", shape_str(v));
  return v;
}

// [N, C, H, W] or unbatched [C, H, W].
void check_image(const TensorType& a, const std::string& op) {
  if (a.rank() != 3 && a.rank() != 4)
    user_error(op, ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ", shape_str(a.shape));
}

Shape with_spatial(const TensorType& a, std::int64_t c, std::int64_t h, std::int64_t w) {
  Shape s = a.shape;
  std::size_t k = s.size();
  s[k - 3] = c, s[k - 2] = h, s[k - 1] = w;
  return s;
}

std::vector<TensorType> pool_meta(const MetaArgs& m, bool has_dilation) {
  const TensorType& a = m.tensor(0);
  const std::string& op = m.op.name;
  check_image(a, op);
  IntList k = pair(m.attrs, "kernel_size", op);
  IntList s = m.attrs.get_ints("stride").empty() ? k : pair(m.attrs, "stride", op);
  IntList p = pair(m.attrs, "padding", op);
  IntList d = has_dilation ? pair(m.attrs, "dilation", op) : IntList{1, 1};
  bool ceil = m.attrs.get_bool("ceil_mode");
  std::int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0) user_error(op, ": kernel_size, stride and dilation must be positive");
    if (p[i] < 0 || p[i] > k[i] / 2)
      user_error(op, ": padding ", p[i], " must be between 0 and half the kernel size ", k[i]);
    std::int64_t in = a.shape[a.rank() - 2 + i];
    out[i] = pooled_size(in, k[i], p[i], s[i], d[i], ceil);
    if (out[i] <= 0)
      user_error(op, ": input ", shape_str(a.shape), " is too small for kernel ", shape_str(k), " (output size ",
                 out[i], ")");
  }
  TensorType t = a;
  t.shape = with_spatial(a, a.shape[a.rank() - 3], out[0], out[1]);
  return {t};
}

// The meta function of the channels-last form of `nchw_op`: input 0 is [N, H, W, C]; the output is the NCHW
// operator's, permuted the same way.
MetaFn channels_last_meta(std::string nchw_op) {
  return [nchw_op](const MetaArgs& m) {
    const TensorType& a = m.tensor(0);
    if (a.rank() != 4) user_error(m.op.name, ": expected a 4-D [N, H, W, C] input, got ", shape_str(a.shape));
    TensorType nchw = a;
    nchw.shape = {a.shape[0], a.shape[3], a.shape[1], a.shape[2]};
    std::vector<OperandInfo> inputs = m.inputs;
    inputs[0].tensor = &nchw;
    const OpDef& def = op(nchw_op);
    std::vector<TensorType> out = def.meta(MetaArgs{def, inputs, m.attrs});
    Shape& s = out[0].shape;
    s = {s[0], s[2], s[3], s[1]};
    return out;
  };
}

}  // namespace

namespace {
Operand T(ValueId v) { return Operand::tensor(v); }

// Gradients of torch.matmul(a, b) = out, for any ranks: 1-D operands become matrices ([k] -> [1, k] on the
// left, [k, 1] on the right), then ga = g @ b^T and gb = a^T @ g, summed over broadcast batch dims by give().
void matmul_vjp(VjpBuilder& b, ValueId a, ValueId w, std::size_t ia, std::size_t iw) {
  const Shape as = b.shape(a), ws = b.shape(w);
  ValueId a2 = as.size() == 1 ? b.reshape(a, {1, as[0]}) : a;
  ValueId w2 = ws.size() == 1 ? b.reshape(w, {ws[0], 1}) : w;
  // The product of the matrix forms, before 1-D dims are dropped.
  Shape full = b.shape(b.out());
  if (as.size() == 1) full.insert(full.end() - (ws.size() == 1 ? 0 : 1), 1);
  if (ws.size() == 1) full.push_back(1);
  ValueId g = b.reshape(b.g(), full);
  if (b.wants(ia)) {
    ValueId ga = b.emit("matmul", {T(g), T(b.transpose_last2(w2))});
    b.give(ia, b.reshape(b.sum_to(ga, b.shape(a2)), as));
  }
  if (b.wants(iw)) {
    ValueId gw = b.emit("matmul", {T(b.transpose_last2(a2)), T(g)});
    b.give(iw, b.reshape(b.sum_to(gw, b.shape(w2)), ws));
  }
}

void register_nn_vjps(OpRegistry& r) {
  using V = VjpBuilder;
  // out = a @ W^T + bias: ga = g @ W, gW = g^T @ a over the flattened leading dims, gbias = sum(g).
  set_vjp(r, "linear", [](V& b) {
    const ValueId a = b.in(0), w = b.in(1), g = b.g();
    if (b.shape(w).size() != 2) {
      matmul_vjp(b, a, w, 0, 1);  // a 1-D weight: a @ w
    } else {
      if (b.wants(0)) b.give(0, b.emit("matmul", {T(g), T(w)}));
      if (b.wants(1)) {
        const std::int64_t n = b.shape(w)[0], k = b.shape(w)[1];
        std::int64_t rows = 1;
        for (std::size_t d = 0; d + 1 < b.shape(a).size(); ++d) rows *= b.shape(a)[d];
        ValueId gm = b.reshape(g, {rows, n}), am = b.reshape(a, {rows, k});
        b.give(1, b.emit("matmul", {T(b.transpose_last2(gm)), T(am)}));
      }
    }
    if (b.wants(2)) b.give(2, g);
  });
  set_vjp(r, "matmul", [](V& b) { matmul_vjp(b, b.in(0), b.in(1), 0, 1); });
  set_vjp(r, "bmm", [](V& b) {
    if (b.wants(0)) b.give(0, b.emit("bmm", {T(b.g()), T(b.transpose_last2(b.in(1)))}));
    if (b.wants(1)) b.give(1, b.emit("bmm", {T(b.transpose_last2(b.in(0))), T(b.g())}));
  });
  // beta * bias + alpha * (a @ m)
  set_vjp(r, "addmm", [](V& b) {
    const double alpha = b.attrs().get_float("alpha"), beta = b.attrs().get_float("beta");
    ValueId g = b.g();
    if (b.wants(0)) b.give(0, beta == 1 ? g : b.mul(T(g), Operand::number(beta)));
    ValueId ga = alpha == 1 ? g : b.mul(T(g), Operand::number(alpha));
    if (b.wants(1)) b.give(1, b.emit("matmul", {T(ga), T(b.transpose_last2(b.in(2)))}));
    if (b.wants(2)) b.give(2, b.emit("matmul", {T(b.transpose_last2(b.in(1))), T(ga)}));
  });
  // Rows of the weight's gradient accumulate the gradients of every position that selected them.
  set_vjp(r, "embedding", [](V& b) {
    if (!b.wants(0)) return;
    const ValueId w = b.in(0), idx = b.in(1);
    const std::int64_t d = b.shape(w)[1];
    std::int64_t n = 1;
    for (std::int64_t s : b.shape(idx)) n *= s;
    ValueId index = b.expand(b.reshape(b.cast(idx, DType::Int64), {n, 1}), {n, d});
    ValueId src = b.reshape(b.g(), {n, d});
    b.give(0, b.emit("scatter_reduce", {T(b.zeros(b.type(w))), T(index), T(src)},
                     {{"dim", std::int64_t{0}}, {"reduce", std::string("sum")}, {"include_self", true}}));
  });
}
}  // namespace

void register_nn_ops(OpRegistry& r) {
  r.add({"linear", OpCategory::Matmul, {{"a"}, {"weight"}, {"bias", true}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &w = m.tensor(1);
           same_dtype(m);
           if (w.rank() != 2 && w.rank() != 1) user_error("linear: weight must be 1-D or 2-D, got ", shape_str(w.shape));
           if (a.rank() == 0 || a.shape.back() != w.shape.back())
             user_error("linear: input ", shape_str(a.shape), " and weight ", shape_str(w.shape),
                        " do not match (the last dims must be equal)");
           TensorType out = a;
           out.shape.pop_back();
           if (w.rank() == 2) out.shape.push_back(w.shape[0]);
           // As ATen: with a bias, a 1-D weight works only for a 1-D input (otherwise addmm/matmul+add refuse it).
           if (!m.is_none(2) && w.rank() == 1 && a.rank() != 1)
             user_error("linear: a 1-D weight ", shape_str(w.shape), " with a bias needs a 1-D input, got ",
                        shape_str(a.shape), " (PyTorch: mat2 must be a matrix)");
           if (!m.is_none(2)) broadcast_shapes({m.tensor(2).shape, out.shape}, "linear (bias)");
           out.device = common_device(m);
           return {out};
         },
         "a @ weight.T + bias"});
  r.add({"matmul", OpCategory::Matmul, {{"a"}, {"b"}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           same_dtype(m);
           TensorType out = matmul_type(m.tensor(0), m.tensor(1), "matmul");
           out.device = common_device(m);
           return {out};
         },
         "torch.matmul: 1-D, 2-D and broadcast batched products"});
  r.add({"bmm", OpCategory::Matmul, {{"a"}, {"b"}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &b = m.tensor(1);
           same_dtype(m);
           if (a.rank() != 3 || b.rank() != 3 || a.shape[0] != b.shape[0] || a.shape[2] != b.shape[1])
             user_error("bmm: expected [b, n, k] and [b, k, m], got ", shape_str(a.shape), " and ", shape_str(b.shape));
           return {TensorType{a.dtype, {a.shape[0], a.shape[1], b.shape[2]}, common_device(m)}};
         },
         "batched matrix product without broadcasting"});
  r.add({"addmm", OpCategory::Matmul, {{"bias"}, {"a"}, {"b"}},
         {{"beta", AttrType::Float, false, 1.0}, {"alpha", AttrType::Float, false, 1.0}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(1), &b = m.tensor(2);
           same_dtype(m);
           if (a.rank() != 2 || b.rank() != 2 || a.shape[1] != b.shape[0])
             user_error("addmm: expected [n, k] and [k, m], got ", shape_str(a.shape), " and ", shape_str(b.shape));
           Shape out = {a.shape[0], b.shape[1]};
           if (broadcast_shapes({m.tensor(0).shape, out}, "addmm") != out)
             user_error("addmm: bias ", shape_str(m.tensor(0).shape), " does not broadcast to ", shape_str(out));
           return {TensorType{a.dtype, out, common_device(m)}};
         },
         "beta * bias + alpha * (a @ b)"});
  r.add({"conv2d", OpCategory::Convolution, {{"a"}, {"weight"}, {"bias", true}},
         {{"stride", AttrType::IntList, false, IntList{1, 1}},
          {"padding", AttrType::IntList, false, IntList{0, 0}},
          {"dilation", AttrType::IntList, false, IntList{1, 1}},
          {"groups", AttrType::Int, false, std::int64_t{1}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &a = m.tensor(0), &w = m.tensor(1);
           same_dtype(m);
           check_image(a, "conv2d");
           require_floating(a, "conv2d", "the input");
           auto groups = m.attrs.get_int("groups");
           std::int64_t c = a.shape[a.rank() - 3];
           if (w.rank() != 4) user_error("conv2d: weight must be 4-D [out, in/groups, kh, kw], got ", shape_str(w.shape));
           if (groups < 1 || c % groups != 0 || w.shape[0] % groups != 0)
             user_error("conv2d: groups=", groups, " must divide both the input channels ", c,
                        " and the output channels ", w.shape[0]);
           if (w.shape[1] != c / groups)  // not w.shape[1] * groups: that may overflow
             user_error("conv2d: weight ", shape_str(w.shape), " expects ", w.shape[1], " x ", groups,
                        " (groups) input channels, the input ", shape_str(a.shape), " has ", c);
           if (!m.is_none(2) && m.tensor(2).shape != Shape{w.shape[0]})
             user_error("conv2d: bias must have shape [", w.shape[0], "], got ", shape_str(m.tensor(2).shape));
           IntList s = pair(m.attrs, "stride", "conv2d"), p = pair(m.attrs, "padding", "conv2d"),
                   d = pair(m.attrs, "dilation", "conv2d");
           std::int64_t out[2];
           for (int i = 0; i < 2; ++i) {
             if (s[i] <= 0 || d[i] <= 0 || p[i] < 0) user_error("conv2d: stride and dilation must be positive, padding >= 0");
             out[i] = pooled_size(a.shape[a.rank() - 2 + i], w.shape[2 + i], p[i], s[i], d[i], false);
             if (out[i] <= 0)
               user_error("conv2d: input ", shape_str(a.shape), " (padded) is smaller than the dilated kernel ",
                          shape_str(w.shape), ": output size ", out[i]);
           }
           TensorType t = a;
           t.shape = with_spatial(a, w.shape[0], out[0], out[1]);
           t.device = common_device(m);
           return {t};
         },
         "2-D convolution (cross-correlation) with stride, padding, dilation, groups"});
  r.add({"max_pool2d", OpCategory::Pooling, {{"a"}},
         {{"kernel_size", AttrType::IntList}, {"stride", AttrType::IntList, false, IntList{}},
          {"padding", AttrType::IntList, false, IntList{0, 0}}, {"dilation", AttrType::IntList, false, IntList{1, 1}},
          {"ceil_mode", AttrType::Bool, false, false}},
         [](const MetaArgs& m) { return pool_meta(m, true); }, "2-D max pooling (stride [] = kernel_size)"});
  r.add({"avg_pool2d", OpCategory::Pooling, {{"a"}},
         {{"kernel_size", AttrType::IntList}, {"stride", AttrType::IntList, false, IntList{}},
          {"padding", AttrType::IntList, false, IntList{0, 0}}, {"ceil_mode", AttrType::Bool, false, false},
          {"count_include_pad", AttrType::Bool, false, true}, {"divisor_override", AttrType::Int, true, None{}}},
         [](const MetaArgs& m) {
           require_floating(m.tensor(0), "avg_pool2d", "the input");
           return pool_meta(m, false);
         },
         "2-D average pooling (stride [] = kernel_size)"});
  r.add({"adaptive_avg_pool2d", OpCategory::Pooling, {{"a"}}, {{"output_size", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           check_image(a, "adaptive_avg_pool2d");
           require_floating(a, "adaptive_avg_pool2d", "the input");
           IntList o = pair(m.attrs, "output_size", "adaptive_avg_pool2d");
           if (o[0] <= 0 || o[1] <= 0) user_error("adaptive_avg_pool2d: output_size must be positive, got ", shape_str(o));
           TensorType t = a;
           t.shape = with_spatial(a, a.shape[a.rank() - 3], o[0], o[1]);
           return {t};
         },
         "average pooling to a fixed output size"});
  // Channels-last forms, emitted only by the channels-last pass (core/transforms/channels_last.cpp): a 4-D
  // [N, H, W, C] tensor holds what the NCHW operator's [N, C, H, W] holds, in that order in memory. Same
  // operands and attributes as the NCHW operator; its meta function, through the permutation.
  for (const char* name : {"conv2d", "max_pool2d", "avg_pool2d"}) {
    const OpDef* nchw = r.find(name);
    r.add({std::string(name) + "_nhwc", nchw->category, nchw->inputs, nchw->attrs, channels_last_meta(name),
           std::string(name) + " on channels-last tensors: [N, H, W, C] in, [N, H', W', C'] out"});
  }
  r.add({"embedding", OpCategory::Indexing, {{"weight"}, {"indices"}}, {},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &w = m.tensor(0), &idx = m.tensor(1);
           if (w.rank() != 2) user_error("embedding: weight must be 2-D, got ", shape_str(w.shape));
           if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
             user_error("embedding: indices must be int32 or int64, got ", dtype_name(idx.dtype));
           TensorType out = w;
           out.shape = idx.shape;
           out.shape.push_back(w.shape[1]);
           out.device = common_device(m);
           return {out};
         },
         "rows of weight selected by indices"});
  r.add({"group_norm", OpCategory::Normalization, {{"a"}, {"weight", true}, {"bias", true}},
         {{"num_groups", AttrType::Int}, {"eps", AttrType::Float, false, 1e-5}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           require_floating(a, "group_norm", "the input");
           if (a.rank() < 2) user_error("group_norm: expected an input of rank >= 2, got ", shape_str(a.shape));
           const std::int64_t groups = m.attrs.get_int("num_groups"), c = a.shape[1];
           if (groups <= 0 || c % groups != 0)
             user_error("group_norm: ", c, " channels do not split into ", groups, " groups");
           for (std::size_t i = 1; i < 3; ++i)
             if (!m.is_none(i) && m.tensor(i).shape != Shape{c})
               user_error("group_norm: ", i == 1 ? "weight" : "bias", " has shape ", shape_str(m.tensor(i).shape),
                          ", expected [", c, "]");
           return {a};
         },
         "normalizes each group of num_groups channel groups over its channels and positions, then * weight + bias"});
  r.add({"upsample_nearest2d", OpCategory::Pooling, {{"a"}},
         {{"output_size", AttrType::IntList},
          {"scale_h", AttrType::Float, true, None{}},
          {"scale_w", AttrType::Float, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& size = m.attrs.get_ints("output_size");
           if (a.rank() != 4) user_error("upsample_nearest2d: expected a 4-D input, got ", shape_str(a.shape));
           if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
             user_error("upsample_nearest2d: output_size must be two positive sizes, got ", shape_str(size));
           TensorType out = a;
           out.shape[2] = size[0], out.shape[3] = size[1];
           return {out};
         },
         "nearest-neighbour resize of the last two dims to output_size (source index floor(i * scale), scale "
         "1 / scale_h (scale_w) when given, else in / out)"});
  r.add({"upsample_bilinear2d", OpCategory::Pooling, {{"a"}},
         {{"output_size", AttrType::IntList},
          {"align_corners", AttrType::Bool},
          {"scale_h", AttrType::Float, true, None{}},
          {"scale_w", AttrType::Float, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& size = m.attrs.get_ints("output_size");
           if (a.rank() != 4) user_error("upsample_bilinear2d: expected a 4-D input, got ", shape_str(a.shape));
           require_floating(a, "upsample_bilinear2d", "input");
           if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
             user_error("upsample_bilinear2d: output_size must be two positive sizes, got ", shape_str(size));
           if (a.shape[2] <= 0 || a.shape[3] <= 0)
             user_error("upsample_bilinear2d: the input ", shape_str(a.shape), " has an empty spatial dim");
           TensorType out = a;
           out.shape[2] = size[0], out.shape[3] = size[1];
           return {out};
         },
         "bilinear resize of the last two dims to output_size (PyTorch's source index: (i + 0.5) * scale - 0.5 "
         "clamped at 0, or i * (in - 1) / (out - 1) with align_corners; scale 1 / scale_h (scale_w) when given, "
         "else in / out)"});
  r.add({"scaled_dot_product_attention", OpCategory::Attention,
         {{"query"}, {"key"}, {"value"}, {"attn_mask", true}},
         {{"is_causal", AttrType::Bool, false, false}, {"scale", AttrType::Float, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &q = m.tensor(0), &k = m.tensor(1), &v = m.tensor(2);
           same_dtype(m.is_none(3) || is_bool(m.tensor(3).dtype)
                          ? MetaArgs{m.op, {m.inputs[0], m.inputs[1], m.inputs[2]}, m.attrs}
                          : m);
           require_floating(q, "scaled_dot_product_attention", "query");
           if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
             user_error("scaled_dot_product_attention: query, key and value must have the same rank >= 2, got ",
                        shape_str(q.shape), ", ", shape_str(k.shape), ", ", shape_str(v.shape));
           std::size_t n = q.rank();
           if (q.shape[n - 1] != k.shape[n - 1] || k.shape[n - 2] != v.shape[n - 2])
             user_error("scaled_dot_product_attention: query ", shape_str(q.shape), ", key ", shape_str(k.shape),
                        " and value ", shape_str(v.shape), " do not fit ([..., L, E], [..., S, E], [..., S, Ev])");
           Shape batch = broadcast_shapes({Shape(q.shape.begin(), q.shape.end() - 2), Shape(k.shape.begin(), k.shape.end() - 2),
                                           Shape(v.shape.begin(), v.shape.end() - 2)},
                                          "scaled_dot_product_attention");
           Shape out = batch;
           out.push_back(q.shape[n - 2]);
           out.push_back(v.shape[n - 1]);
           if (!m.is_none(3)) {  // the mask broadcasts to the attention weights [..., L, S]
             Shape weights = batch;
             weights.push_back(q.shape[n - 2]);
             weights.push_back(k.shape[n - 2]);
             broadcast_shapes({m.tensor(3).shape, weights}, "scaled_dot_product_attention (mask)");
           }
           return {TensorType{q.dtype, out, common_device(m)}};
         },
         "softmax(q @ k^T * scale + mask) @ v (inference: no dropout)"});
  register_nn_vjps(r);
}

}  // namespace thunderc
