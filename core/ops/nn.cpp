// Matrix products, convolution, pooling, embedding and attention.
#include <algorithm>
#include <optional>

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
// `nhwc_inputs`: how many leading operands are [N, H, W, C] (the others as the NCHW operator takes them);
// `nhwc_output`: whether the result is too (conv2d_backward_weight_nhwc's is a weight, OIHW).
MetaFn channels_last_meta(std::string nchw_op, std::size_t nhwc_inputs = 1, bool nhwc_output = true) {
  return [nchw_op, nhwc_inputs, nhwc_output](const MetaArgs& m) {
    std::vector<OperandInfo> inputs = m.inputs;
    std::vector<TensorType> nchw(nhwc_inputs);
    for (std::size_t i = 0; i < nhwc_inputs; ++i) {
      const TensorType& a = m.tensor(i);
      if (a.rank() != 4) user_error(m.op.name, ": expected a 4-D [N, H, W, C] input, got ", shape_str(a.shape));
      nchw[i] = a;
      nchw[i].shape = {a.shape[0], a.shape[3], a.shape[1], a.shape[2]};
      inputs[i].tensor = &nchw[i];
    }
    const OpDef& def = op(nchw_op);
    std::vector<TensorType> out = def.meta(MetaArgs{def, inputs, m.attrs});
    Shape& s = out[0].shape;
    if (nhwc_output) s = {s[0], s[2], s[3], s[1]};
    return out;
  };
}

}  // namespace

namespace {
Operand T(ValueId v) { return Operand::tensor(v); }
Operand N(double x) { return Operand::number(x); }

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

// A constant of `like`'s dtype and device with the given shape and values (row-major).
ValueId constant_of(VjpBuilder& b, const TensorType& like, const Shape& shape, const std::vector<double>& values) {
  auto data = std::make_shared<ConstantData>();
  const std::size_t size = dtype_size(like.dtype);
  data->bytes.assign(values.size() * size, 0);
  for (std::size_t i = 0; i < values.size(); ++i)
    THUNDERC_CHECK(scalar_to_bytes(values[i], like.dtype, data->bytes.data() + i * size), "vjp: no ",
                   dtype_name(like.dtype), " constant");
  return b.trace().add_constant("vjp_constant", TensorType{like.dtype, shape, like.device}, std::move(data));
}

// One pooling window along an axis: the input positions [start, end) it covers (clipped to the input) and
// its size before clipping to the input (with the padding it overlaps).
struct Window {
  std::int64_t start, end, padded;
};

// The gradient of an average over windows of the last two dims, given `g` already divided by each window's
// divisor: every input position gets the sum of g over the windows (win[0] along H, win[1] along W) that
// contain it. Windows that tile the input exactly are an expand; others, two products with 0/1 matrices
// (the windows of a pooling are rectangles: rows x columns).
ValueId spread_windows(VjpBuilder& b, ValueId g, const Shape& x, const std::vector<Window> (&win)[2]) {
  const std::size_t rank = x.size();
  const Shape gs = b.shape(g);
  bool tiles = true;
  std::int64_t k[2];
  for (int i = 0; i < 2; ++i) {
    const std::int64_t in = x[rank - 2 + i], out = static_cast<std::int64_t>(win[i].size());
    k[i] = in / out;
    tiles = tiles && in % out == 0;
    for (std::int64_t o = 0; tiles && o < out; ++o)
      tiles = win[i][static_cast<std::size_t>(o)].start == o * k[i] && win[i][static_cast<std::size_t>(o)].end == (o + 1) * k[i];
  }
  if (tiles) {
    Shape split(gs.begin(), gs.end() - 2), wide;
    split.insert(split.end(), {gs[rank - 2], 1, gs[rank - 1], 1});
    wide = split;
    wide[rank - 1] = k[0], wide[rank + 1] = k[1];
    return b.reshape(b.expand(b.reshape(g, split), wide), x);
  }
  const TensorType gt = b.type(g);
  auto indicator = [&](const std::vector<Window>& w, std::int64_t in, bool transposed) {
    const std::int64_t out = static_cast<std::int64_t>(w.size());
    std::vector<double> m(static_cast<std::size_t>(out * in), 0.0);
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t i = w[static_cast<std::size_t>(o)].start; i < w[static_cast<std::size_t>(o)].end; ++i)
        m[static_cast<std::size_t>(transposed ? i * out + o : o * in + i)] = 1.0;
    return constant_of(b, gt, transposed ? Shape{in, out} : Shape{out, in}, m);
  };
  // [..., OH, OW] @ [OW, W] -> [..., OH, W]; [H, OH] @ that -> [..., H, W].
  ValueId rows = b.emit("matmul", {T(g), T(indicator(win[1], x[rank - 1], false))});
  return b.emit("matmul", {T(indicator(win[0], x[rank - 2], true)), T(rows)});
}

// conv2d's gradients (ATen's convolution_backward) for any stride, padding, dilation and groups: the input's and
// the weight's are operators of their own (conv2d_backward_input / _weight, on batched images; decompose gives
// their GEMM forms), the bias's the output gradient summed over N, OH, OW.
void conv2d_vjp(VjpBuilder& b) {
  const Attrs& a = b.attrs();
  const Shape x_shape = b.shape(b.in(0));
  ValueId x = b.in(0), w = b.in(1), g = b.g();
  if (x_shape.size() == 3) {  // unbatched: a batch of one
    x = b.reshape(x, {1, x_shape[0], x_shape[1], x_shape[2]});
    const Shape gs = b.shape(g);
    g = b.reshape(g, {1, gs[0], gs[1], gs[2]});
  }
  Attrs window;
  for (const char* name : {"stride", "padding", "dilation", "groups"}) window.set(name, a.get(name));
  if (b.wants(0)) {
    Attrs at = window;
    const Shape xs = b.shape(x);
    at.set("input_size", IntList(xs.begin(), xs.end()));
    const ValueId gx = b.emit("conv2d_backward_input", {T(g), T(w)}, at);
    b.give(0, x_shape.size() == 3 ? b.reshape(gx, x_shape) : gx);
  }
  if (b.wants(1)) {
    Attrs at = window;
    const Shape ws = b.shape(w);
    at.set("weight_size", IntList(ws.begin(), ws.end()));
    b.give(1, b.emit("conv2d_backward_weight", {T(g), T(x)}, at));
  }
  if (b.wants(2)) b.give(2, b.sum(g, {0, 2, 3}, false));
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
  set_vjp(r, "conv2d", conv2d_vjp);
  // im2col and col2im are each other's adjoint.
  set_vjp(r, "im2col", [](V& b) {
    Attrs a = b.attrs();
    const Shape xs = b.shape(b.in(0));
    a.set("output_size", IntList{xs[2], xs[3]});
    b.give(0, b.emit("col2im", {T(b.g())}, a));
  });
  set_vjp(r, "col2im", [](V& b) {
    Attrs a;
    for (const char* name : {"kernel_size", "dilation", "padding", "stride"}) a.set(name, b.attrs().get_ints(name));
    b.give(0, b.emit("im2col", {T(b.g())}, a));
  });
  // The gradient goes to the position ATen's max_pool2d_with_indices picks in each window, accumulating where
  // windows overlap: a loop of its own (max_pool2d_backward).
  set_vjp(r, "max_pool2d", [](V& b) {
    b.give(0, b.emit("max_pool2d_backward", {T(b.g()), T(b.in(0))}, b.attrs()));
  });
  // ATen's avg_pool2d_backward: each output's gradient divided by its window's divisor (the padded window's
  // size with count_include_pad, the clipped one's without, or divisor_override) goes to every input position
  // of the clipped window.
  set_vjp(r, "avg_pool2d", [](V& b) {
    const Attrs& a = b.attrs();
    const Shape xs = b.shape(b.in(0)), gs = b.shape(b.g());
    const std::size_t rank = xs.size();
    const IntList k = pair(a, "kernel_size", "avg_pool2d");
    const IntList s = a.get_ints("stride").empty() ? k : pair(a, "stride", "avg_pool2d");
    const IntList p = pair(a, "padding", "avg_pool2d");
    const bool include_pad = a.get_bool("count_include_pad");
    const std::optional<std::int64_t> divisor = a.get_optional_int("divisor_override");
    std::vector<Window> win[2];
    for (int i = 0; i < 2; ++i) {
      const std::int64_t in = xs[rank - 2 + i];
      for (std::int64_t o = 0; o < gs[rank - 2 + i]; ++o) {
        const std::int64_t start = o * s[i] - p[i], end = std::min(start + k[i], in + p[i]);
        win[i].push_back({std::max<std::int64_t>(start, 0), std::min(end, in), end - start});
      }
    }
    const std::int64_t oh = gs[rank - 2], ow = gs[rank - 1];
    std::vector<double> div(static_cast<std::size_t>(oh * ow));
    bool uniform = true;
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const Window &h = win[0][static_cast<std::size_t>(i)], &w = win[1][static_cast<std::size_t>(j)];
        const std::int64_t clipped = (h.end - h.start) * (w.end - w.start);
        std::int64_t d = divisor ? *divisor : include_pad ? h.padded * w.padded : clipped;
        if (clipped <= 0) d = 1;  // an empty window reaches no input position
        div[static_cast<std::size_t>(i * ow + j)] = static_cast<double>(d);
        uniform = uniform && d == static_cast<std::int64_t>(div[0]);
      }
    ValueId g = b.g();
    const TensorType gt = b.type(g);
    g = uniform ? b.div(T(g), N(div[0])) : b.div(T(g), T(constant_of(b, gt, {oh, ow}, div)));
    b.give(0, spread_windows(b, g, xs, win));
  });
  // ATen's adaptive_avg_pool2d backward: grad / kh / kw to every position of the window
  // [floor(o * in / out), ceil((o + 1) * in / out)).
  set_vjp(r, "adaptive_avg_pool2d", [](V& b) {
    const Shape xs = b.shape(b.in(0)), gs = b.shape(b.g());
    const std::size_t rank = xs.size();
    std::vector<Window> win[2];
    ValueId g = b.g();
    for (int i = 0; i < 2; ++i) {
      const std::int64_t in = xs[rank - 2 + i], out = gs[rank - 2 + i];
      std::vector<double> sizes;
      for (std::int64_t o = 0; o < out; ++o) {
        const std::int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
        win[i].push_back({start, end, end - start});
        sizes.push_back(static_cast<double>(end - start));
      }
      const bool uniform = std::all_of(sizes.begin(), sizes.end(), [&](double v) { return v == sizes[0]; });
      const Shape shape = i == 0 ? Shape{out, 1} : Shape{out};
      g = uniform ? b.div(T(g), N(sizes[0])) : b.div(T(g), T(constant_of(b, b.type(g), shape, sizes)));
    }
    b.give(0, spread_windows(b, g, xs, win));
  });
  // Rows of the weight's gradient accumulate the gradients of every position that selected them (ATen's
  // embedding_dense_backward): positions holding padding_idx add nothing, and with scale_grad_by_freq each
  // position's gradient is divided by how often its index occurs in the batch.
  set_vjp(r, "embedding", [](V& b) {
    if (!b.wants(0)) return;
    const ValueId w = b.in(0), idx = b.in(1);
    const std::int64_t v = b.shape(w)[0], d = b.shape(w)[1];
    std::int64_t n = 1;
    for (std::int64_t s : b.shape(idx)) n *= s;
    const ValueId column = b.reshape(b.cast(idx, DType::Int64), {n, 1});
    ValueId index = b.expand(column, {n, d});
    ValueId src = b.reshape(b.g(), {n, d});
    const TensorType per_position{b.type(w).dtype, {n, 1}, b.type(w).device};
    if (b.attrs().get_bool("scale_grad_by_freq")) {
      const ValueId ones = b.add(T(b.zeros(per_position)), N(1.0));
      const ValueId counts = b.emit("scatter_reduce", {T(b.zeros(TensorType{per_position.dtype, {v, 1}, per_position.device})),
                                                       T(column), T(ones)},
                                    {{"dim", std::int64_t{0}}, {"reduce", std::string("sum")}, {"include_self", true}});
      src = b.div(T(src), T(b.reshape(b.emit("embedding", {T(counts), T(column)}), {n, 1})));
    }
    if (const std::int64_t pad = b.attrs().get_int("padding_idx"); pad >= 0)
      src = b.where(b.cmp("eq", T(column), N(static_cast<double>(pad))), N(0.0), T(src));
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
  // ATen's im2col / col2im (F.unfold / F.fold) on [N, C, H, W] images, 2-value attributes; conv2d's VJP builds
  // its gradients as GEMMs around them.
  const std::vector<AttrSpec> window = {{"kernel_size", AttrType::IntList}, {"dilation", AttrType::IntList},
                                       {"padding", AttrType::IntList}, {"stride", AttrType::IntList}};
  // The number of window positions along each spatial dim of an [.., H, W] image, or a UserError.
  auto positions = [](const Attrs& a, std::int64_t h, std::int64_t w, const char* op) {
    std::int64_t out[2];
    const std::int64_t in[2] = {h, w};
    for (const char* name : {"kernel_size", "dilation", "padding", "stride"})
      if (a.get_ints(name).size() != 2) user_error(op, ": ", name, " must have 2 values, got ", shape_str(a.get_ints(name)));
    for (int i = 0; i < 2; ++i) {
      const std::int64_t k = a.get_ints("kernel_size")[i], d = a.get_ints("dilation")[i], p = a.get_ints("padding")[i],
                         s = a.get_ints("stride")[i];
      if (k < 1 || d < 1 || s < 1 || p < 0)
        user_error(op, ": kernel_size, dilation and stride must be positive and padding non-negative");
      const std::int64_t span = in[i] + 2 * p - d * (k - 1) - 1;
      if (span < 0) user_error(op, ": the window (", k, " with dilation ", d, ") does not fit the padded size ", in[i] + 2 * p);
      out[i] = span / s + 1;
    }
    return std::make_pair(out[0], out[1]);
  };
  r.add({"im2col", OpCategory::Indexing, {{"a"}}, window,
         [positions](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           require_floating(a, "im2col", "the input");
           if (a.rank() != 4) user_error("im2col: expected an [N, C, H, W] input, got ", shape_str(a.shape));
           const auto [oh, ow] = positions(m.attrs, a.shape[2], a.shape[3], "im2col");
           const IntList& k = m.attrs.get_ints("kernel_size");
           TensorType t = a;
           t.shape = {a.shape[0], a.shape[1] * k[0] * k[1], oh * ow};
           return {t};
         },
         "the input's patches as columns: [N, C, H, W] -> [N, C*kh*kw, OH*OW] (zeros where a window leaves the "
         "image), as F.unfold"});
  std::vector<AttrSpec> fold = window;
  fold.insert(fold.begin(), AttrSpec{"output_size", AttrType::IntList});
  r.add({"col2im", OpCategory::Indexing, {{"a"}}, fold,
         [positions](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           require_floating(a, "col2im", "the input");
           const IntList &size = m.attrs.get_ints("output_size"), &k = m.attrs.get_ints("kernel_size");
           if (size.size() != 2) user_error("col2im: output_size must have 2 values, got ", shape_str(size));
           if (a.rank() != 3) user_error("col2im: expected [N, C*kh*kw, L] columns, got ", shape_str(a.shape));
           const auto [oh, ow] = positions(m.attrs, size[0], size[1], "col2im");
           if (k[0] * k[1] < 1 || a.shape[1] % (k[0] * k[1]) != 0 || a.shape[2] != oh * ow)
             user_error("col2im: columns ", shape_str(a.shape), " are not [N, C*", k[0] * k[1], ", ", oh * ow,
                        "] for a ", shape_str(size), " image with these windows");
           TensorType t = a;
           t.shape = {a.shape[0], a.shape[1] / (k[0] * k[1]), size[0], size[1]};
           return {t};
         },
         "the adjoint of im2col: columns [N, C*kh*kw, L] summed back into [N, C, H, W] images, as F.fold"});
  // --module-mode train's dropout (docs/training.md): the Bernoulli(1 - p) mask ATen's dropout draws with
  // bernoulli_, from the call's RNG state instead of a global generator. The importers emit it without `rng`;
  // autodiff gives every mask the training forward's rng input and its own counter blocks (`block`).
  // The mask lives on `device` ("cuda:0"; absent: the CPU), and so does its rng (the runtime fills it per call).
  r.add({"dropout_mask", OpCategory::Indexing, {{"rng", true}},
         {{"shape", AttrType::IntList}, {"dtype", AttrType::DType}, {"p", AttrType::Float},
          {"block", AttrType::Int, false, std::int64_t{0}}, {"device", AttrType::String, true, None{}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const double p = m.attrs.get_float("p");
           if (!(p >= 0.0 && p <= 1.0))
             user_error("dropout_mask: dropout probability has to be between 0 and 1, but got ", p);
           if (m.attrs.get_int("block") < 0) user_error("dropout_mask: block must be non-negative");
           TensorType t;
           t.dtype = m.attrs.get_dtype("dtype");
           t.shape = m.attrs.get_ints("shape");
           require_floating(t, "dropout_mask", "the mask");
           for (std::int64_t d : t.shape)
             if (d < 0) user_error("dropout_mask: negative size in ", shape_str(t.shape));
           if (!m.attrs.is_none("device")) t.device = Device::parse(m.attrs.get_string("device"));
           if (!m.is_none(0)) {
             const TensorType& rng = m.tensor(0);
             if (rng.dtype != DType::Int64 || rng.shape != Shape{2} || rng.device != t.device)
               user_error("dropout_mask: rng must be an int64 [2] tensor (seed, offset) on the mask's device (",
                          t.device.str(), "), got ", rng.str());
           }
           return {t};
         },
         "1 where an element is kept (probability 1 - p), else 0: Philox4x32-10 numbers of the call's RNG state "
         "rng = [seed, offset] from counter block offset + block (codegen/include/thunderc/philox.h)"});
  // conv2d's gradients (its VJP rule emits them for batched images; decompose rewrites them into GEMMs around
  // im2col / col2im where no executor runs them, and the onednn executor runs them as oneDNN's backward
  // primitives): conv2d's attributes plus the shape of what is differentiated.
  std::vector<AttrSpec> conv_grad = r.find("conv2d")->attrs;
  // The output gradient must be conv2d's output for an input `a` and weight `w` of the given types.
  auto check_conv_grad = [](const MetaArgs& m, const TensorType& g, const TensorType& a, const TensorType& w,
                            const char* name) {
    if (a.rank() != 4 || w.rank() != 4 || g.rank() != 4)
      user_error(name, ": expected a 4-D gradient, input and weight, got ", shape_str(g.shape), ", ",
                 shape_str(a.shape), " and ", shape_str(w.shape));
    const std::vector<OperandInfo> inputs = {{OperandKind::Tensor, &a, {}}, {OperandKind::Tensor, &w, {}}, {}};
    const OpDef& conv = op("conv2d");  // the finished catalog (meta functions run after it is built)
    const TensorType y = conv.meta(MetaArgs{conv, inputs, m.attrs})[0];
    if (g.shape != y.shape || g.dtype != y.dtype)
      user_error(name, ": the gradient is ", dtype_name(g.dtype), " ", shape_str(g.shape), ", conv2d of ",
                 shape_str(a.shape), " by ", shape_str(w.shape), " is ", dtype_name(y.dtype), " ", shape_str(y.shape));
  };
  auto size_attr = [](const MetaArgs& m, const char* name, const char* op) {
    const IntList& v = m.attrs.get_ints(name);
    if (v.size() != 4) user_error(op, ": ", name, " must have 4 values, got ", shape_str(v));
    for (std::int64_t d : v)
      if (d < 1) user_error(op, ": ", name, " ", shape_str(v), " has an extent below 1");
    return Shape(v.begin(), v.end());
  };
  std::vector<AttrSpec> input_grad = conv_grad, weight_grad = conv_grad;
  input_grad.push_back({"input_size", AttrType::IntList});
  weight_grad.push_back({"weight_size", AttrType::IntList});
  r.add({"conv2d_backward_input", OpCategory::Convolution, {{"grad"}, {"weight"}}, input_grad,
         [check_conv_grad, size_attr](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &g = m.tensor(0), &w = m.tensor(1);
           require_floating(w, "conv2d_backward_input", "the weight");
           TensorType a = w;
           a.shape = size_attr(m, "input_size", "conv2d_backward_input");
           a.device = common_device(m);
           check_conv_grad(m, g, a, w, "conv2d_backward_input");
           return {a};
         },
         "conv2d's input gradient [N, C, H, W] (H, W: input_size) from the output gradient and the weight"});
  r.add({"conv2d_backward_weight", OpCategory::Convolution, {{"grad"}, {"a"}}, weight_grad,
         [check_conv_grad, size_attr](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &g = m.tensor(0), &a = m.tensor(1);
           require_floating(a, "conv2d_backward_weight", "the input");
           TensorType w = a;
           w.shape = size_attr(m, "weight_size", "conv2d_backward_weight");
           w.device = common_device(m);
           check_conv_grad(m, g, a, w, "conv2d_backward_weight");
           return {w};
         },
         "conv2d's weight gradient [K, C/groups, R, S] from the output gradient and the input (the batch summed)"});
  // max_pool2d's gradient (its VJP rule emits it): max_pool2d's attributes, the output gradient and the input.
  r.add({"max_pool2d_backward", OpCategory::Pooling, {{"grad"}, {"a"}}, r.find("max_pool2d")->attrs,
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType &g = m.tensor(0), &a = m.tensor(1);
           require_floating(a, "max_pool2d_backward", "the input");
           const std::vector<OperandInfo> input = {m.inputs[1]};
           const TensorType pooled = pool_meta(MetaArgs{m.op, input, m.attrs}, true)[0];
           if (g.shape != pooled.shape || g.dtype != a.dtype)
             user_error("max_pool2d_backward: the gradient is ", dtype_name(g.dtype), " ", shape_str(g.shape),
                        ", max_pool2d of the input ", shape_str(a.shape), " is ", dtype_name(a.dtype), " ",
                        shape_str(pooled.shape));
           TensorType t = a;
           t.device = common_device(m);
           return {t};
         },
         "max_pool2d's input gradient: each window's gradient goes to the position ATen's max_pool2d_with_indices "
         "picks (the first maximum; a NaN, the last NaN), summed where windows overlap"});
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
  // conv2d's gradients on channels-last tensors (the channels-last pass, in a training backward that onednn runs):
  // the output gradient [N, OH, OW, K] and, for the weight's, the input [N, H, W, C]; the input's gradient is
  // [N, H, W, C], the weight's OIHW as before. Attributes as the NCHW operator's (input_size stays NCHW).
  // max_pool2d's gradient on channels-last tensors: the gradient [N, OH, OW, C] and the input [N, H, W, C] in, the
  // input's gradient [N, H, W, C] out (the same positions and sums as max_pool2d_backward, per channel).
  r.add({"max_pool2d_backward_nhwc", OpCategory::Pooling, r.find("max_pool2d_backward")->inputs,
         r.find("max_pool2d_backward")->attrs, channels_last_meta("max_pool2d_backward", 2, true),
         "max_pool2d_backward on channels-last tensors: the gradient [N, OH, OW, C] and the input [N, H, W, C] in, "
         "[N, H, W, C] out"});
  for (const char* name : {"conv2d_backward_input", "conv2d_backward_weight"}) {
    const OpDef* nchw = r.find(name);
    const bool input = std::string(name) == "conv2d_backward_input";
    r.add({std::string(name) + "_nhwc", nchw->category, nchw->inputs, nchw->attrs,
           channels_last_meta(name, input ? 1 : 2, input),
           input ? std::string("conv2d_backward_input on channels-last tensors: the gradient [N, OH, OW, K] in, "
                               "[N, H, W, C] out")
                 : std::string("conv2d_backward_weight on channels-last tensors: the gradient [N, OH, OW, K] and "
                               "the input [N, H, W, C] in, the weight's gradient [K, C/groups, R, S] out")});
  }
  // padding_idx and scale_grad_by_freq change only the gradient (set by the importers when not -1 / false).
  r.add({"embedding", OpCategory::Indexing, {{"weight"}, {"indices"}},
         {{"padding_idx", AttrType::Int, false, std::int64_t{-1}}, {"scale_grad_by_freq", AttrType::Bool, false, false}},
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
