#include "core/transforms/value_bounds.h"

#include "core/transforms/fusion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <functional>
#include <memory>

#include "core/ir/half.h"

namespace thunderc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The input bound at which fusion decides (see nan_free_values in the header).
constexpr double kFusionInputBound = 256;

// Largest finite value of a floating dtype, divided by 256 (the margin for rounding; see the header).
double float_limit(DType d) {
  switch (d) {
    case DType::Float16: return 65504.0 / 256;
    case DType::BFloat16: return 3.3895313892515355e38 / 256;
    case DType::Float32: return static_cast<double>(std::numeric_limits<float>::max()) / 256;
    case DType::Float64: return std::numeric_limits<double>::max() / 256;
    default: return kInf;
  }
}

// Element i of a constant as a double.
double element(const Value& v, std::size_t i) {
  if (v.type.dtype == DType::Float32) {  // nearly every weight: no size lookup
    float f;
    std::memcpy(&f, v.data->bytes.data() + 4 * i, 4);
    return f;
  }
  const unsigned char* p = v.data->bytes.data() + i * dtype_size(v.type.dtype);
  switch (v.type.dtype) {
    case DType::Float32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::Float64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::Float16: { std::uint16_t h; std::memcpy(&h, p, 2); return f16_to_float(h); }
    case DType::BFloat16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16_to_float(h); }
    case DType::Bool: return *p ? 1 : 0;
    case DType::UInt8: return *p;
    case DType::Int8: { std::int8_t x; std::memcpy(&x, p, 1); return x; }
    case DType::Int16: { std::int16_t x; std::memcpy(&x, p, 2); return x; }
    case DType::Int32: { std::int32_t x; std::memcpy(&x, p, 4); return x; }
    default: { std::int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
  }
}

using R = ValueRange;

constexpr R kUnknown{-kInf, kInf};

R hull(R a, R b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }
R with_zero(R a) { return hull(a, {0, 0}); }
double magnitude(R a) { return std::max(std::fabs(a.lo), std::fabs(a.hi)); }
R symmetric(double m) { return std::isfinite(m) ? R{-m, m} : kUnknown; }
R mul(R a, R b) {
  const double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}
// f monotone non-decreasing.
template <typename F>
R monotone(R a, F f) {
  return {f(a.lo), f(a.hi)};
}
// silu, hardswish, gelu: f(x) between x and 0 for x < 0 (and >= floor), between 0 and x for x >= 0.
R below_identity(R a, double floor) { return {a.lo < 0 ? std::max(a.lo, floor) : 0.0, std::max(a.hi, 0.0)}; }

// Per output channel (row of a constant weight [oc, ...]): the sums of its positive and of its negative
// entries.
struct RowSums {
  std::vector<double> pos, neg;
  bool finite = true;
};

class Analysis {
 public:
  explicit Analysis(const Trace& t) : t_(t) {}

  std::vector<R> run(double input_bound) const {
    State st;
    st.r.assign(t_.num_values(), kUnknown);
    st.ch.resize(t_.num_values());
    for (ValueId v : t_.inputs()) {
      DType d = t_.type(v).dtype;
      st.r[v] = is_floating(d) ? R{-input_bound, input_bound} : integer_range(d);
    }
    for (ValueId v : t_.constants()) st.r[v] = constant_range(v);
    for (const BoundSymbol& s : t_.symbols()) visit(s, st);
    return st.r;
  }

 private:
  // Every value's range, and where known a range per index of its last dimension (the channel of an NHWC
  // activation, the feature of a linear layer's output): a convolution's next layer then sums each input
  // channel's own range instead of the widest one's, which keeps deep networks' bounds much tighter.
  struct State {
    std::vector<R> r;
    std::vector<std::vector<R>> ch;  // empty: no per-channel ranges
  };

  static R integer_range(DType d) {
    switch (d) {
      case DType::Bool: return {0, 1};
      case DType::UInt8: return {0, 255};
      case DType::Int8: return {-128, 127};
      case DType::Int16: return {-32768, 32767};
      case DType::Int32: return {-2147483648.0, 2147483647.0};
      default: return {-9223372036854775808.0, 9223372036854775808.0};  // int64
    }
  }

  R checked(R v, DType d) const { return v.finite() && magnitude(v) <= float_limit(d) && v.lo <= v.hi ? v : kUnknown; }

  void visit(const BoundSymbol& s, State& st) const {
    if (s.is_region()) {
      for (const BoundSymbol& sub : s.subsymbols) visit(sub, st);
      return;
    }
    for (ValueId o : s.outputs) {
      DType d = t_.type(o).dtype;
      if (!is_floating(d)) {
        st.r[o] = integer_range(d);  // comparisons, argmax, integer arithmetic: never NaN
        continue;
      }
      R v = checked(rule(s, [&](std::size_t i) { return in(s, i, st.r); }), d);
      if (v.finite() && s.outputs.size() == 1) {
        std::vector<R> ch = channel_rule(s, st);
        bool ok = !ch.empty();
        R h{kInf, -kInf};
        for (R& c : ch) {
          c = checked(c, d);
          ok = ok && c.finite();
          h = hull(h, c);
        }
        if (ok) {  // both bound the value: keep the tighter ends
          v = {std::max(v.lo, h.lo), std::min(v.hi, h.hi)};
          st.ch[o] = std::move(ch);
        }
      }
      st.r[o] = v;
    }
  }

  // Operand i: a tensor's range, a number as [v, v], an absent optional operand as [0, 0].
  R in(const BoundSymbol& s, std::size_t i, const std::vector<R>& r) const {
    if (i >= s.inputs.size()) return {0, 0};
    const Operand& o = s.inputs[i];
    if (o.is_tensor()) return r[o.value];
    if (o.kind == OperandKind::Scalar) {
      const double v = o.scalar.to_double();
      return std::isfinite(v) ? R{v, v} : kUnknown;
    }
    return {0, 0};
  }

  static std::int64_t last_dim(const TensorType& t) { return t.rank() == 0 ? 1 : t.shape.back(); }

  // Operand i's ranges per index of a last dimension of size c: its own, or its one range repeated when it
  // broadcasts along that dimension (a number, size 1) or has no per-channel ranges; empty when its last
  // dimension is another size.
  std::vector<R> channels_of(const BoundSymbol& s, std::size_t i, const State& st, std::int64_t c) const {
    const R whole = in(s, i, st.r);
    if (i >= s.inputs.size() || !s.inputs[i].is_tensor()) return std::vector<R>(static_cast<std::size_t>(c), whole);
    const ValueId v = s.inputs[i].value;
    const std::int64_t last = last_dim(t_.type(v));
    if (last == c && st.ch[v].size() == static_cast<std::size_t>(c)) return st.ch[v];
    if (last == c && t_.value(v).origin == ValueOrigin::Constant && t_.value(v).data) return constant_channels(v);
    if (last == c || last == 1) return std::vector<R>(static_cast<std::size_t>(c), whole);
    return {};
  }

  // Per-channel ranges of a single-output symbol, or empty (then only the one range is known).
  std::vector<R> channel_rule(const BoundSymbol& s, const State& st) const {
    const TensorType& out = t_.type(s.outputs[0]);
    const std::int64_t c = last_dim(out);
    if (out.rank() == 0 || c > (1 << 16)) return {};
    const std::string& op = s.op->name;
    auto keeps_last = [&](ValueId in) {  // the operand's last dimension is the output's, element for element
      const TensorType& t = t_.type(in);
      return t.rank() > 0 && t.shape.back() == c;
    };
    if (s.op->category == OpCategory::Elementwise) {
      std::vector<std::vector<R>> operands;
      for (std::size_t i = 0; i < s.inputs.size(); ++i) {
        operands.push_back(channels_of(s, i, st, c));
        if (operands.back().empty()) return {};
      }
      std::vector<R> res(static_cast<std::size_t>(c));
      for (std::size_t k = 0; k < res.size(); ++k)
        res[k] = rule(s, [&](std::size_t i) { return i < operands.size() ? operands[i][k] : R{0, 0}; });
      return res;
    }
    if (op == "conv2d_nhwc" || op == "linear") return channel_weighted_sum(s, st, op == "conv2d_nhwc");
    if (s.inputs.empty() || !s.inputs[0].is_tensor()) return {};
    const ValueId a = s.inputs[0].value;
    const std::int64_t rank = static_cast<std::int64_t>(t_.type(a).rank());
    auto dims_exclude_last = [&](const IntList& dims) {
      for (std::int64_t d : dims)
        if (d == rank - 1 || d == -1) return false;
      return !dims.empty();
    };
    std::vector<R> x = channels_of(s, 0, st, c);
    if (x.empty() || !keeps_last(a)) return {};
    if (op == "max_pool2d_nhwc" || op == "amax" || op == "amin" || op == "expand" || op == "reshape" ||
        op == "slice" || op == "select" || op == "flip" || op == "repeat") {
      if ((op == "slice" || op == "select" || op == "flip") && !s.attrs.has("dim") && !s.attrs.has("dims")) return {};
      if ((op == "slice" || op == "select") && (s.attrs.get_int("dim") == rank - 1 || s.attrs.get_int("dim") == -1))
        return {};
      if (op == "flip" && !dims_exclude_last(s.attrs.get_ints("dims"))) return {};
      if ((op == "amax" || op == "amin") && !dims_exclude_last(s.attrs.get_ints("dims"))) return {};
      if (op == "repeat" && s.attrs.get_ints("repeats").back() != 1) return {};
      return x;
    }
    if (op == "avg_pool2d_nhwc") {
      if (s.attrs.has("divisor_override") && !s.attrs.is_none("divisor_override")) return {};
      for (R& k : x) k = with_zero(k);
      return x;
    }
    if (op == "mean" || op == "sum") {
      if (!dims_exclude_last(s.attrs.get_ints("dims"))) return {};
      if (op == "sum") {
        const double n = reduced_count(s);
        for (R& k : x) k = {n * k.lo, n * k.hi};
      }
      return x;
    }
    if (op == "permute") {
      const IntList& p = s.attrs.get_ints("dims");
      return !p.empty() && (p.back() == rank - 1 || p.back() == -1) ? x : std::vector<R>{};
    }
    if (op == "cat") {
      std::int64_t dim = s.attrs.get_int("dim");
      if (dim < 0) dim += rank;
      std::vector<R> res;
      if (dim == rank - 1) {  // channels side by side
        for (std::size_t i = 0; i < s.inputs.size(); ++i) {
          const std::int64_t ci = last_dim(t_.type(s.inputs[i].value));
          std::vector<R> part = channels_of(s, i, st, ci);
          if (part.empty()) return {};
          res.insert(res.end(), part.begin(), part.end());
        }
        return res.size() == static_cast<std::size_t>(c) ? res : std::vector<R>{};
      }
      res = x;
      for (std::size_t i = 1; i < s.inputs.size(); ++i) {
        std::vector<R> part = channels_of(s, i, st, c);
        if (part.empty()) return {};
        for (std::size_t k = 0; k < res.size(); ++k) res[k] = hull(res[k], part[k]);
      }
      return res;
    }
    return {};
  }

  // conv2d_nhwc (input [n, h, w, C], weight [oc, C/groups, kh, kw]) and linear (weight [oc, C]) with constant
  // weights: output channel oc in [sum over its input channels k of (P_k lo_k + N_k hi_k), ... (P_k hi_k + N_k lo_k)]
  // + bias, P_k and N_k the sums of the positive and negative weights joining k to oc. Zero padding widens each
  // input channel's range to 0.
  std::vector<R> channel_weighted_sum(const BoundSymbol& s, const State& st, bool conv) const {
    const ValueId w = s.inputs[1].value;
    const Value& wv = t_.value(w);
    if (wv.origin != ValueOrigin::Constant || !wv.data || wv.type.rank() < 2) return {};
    const std::int64_t cin = last_dim(t_.type(s.inputs[0].value));
    std::vector<R> x = channels_of(s, 0, st, cin);
    if (x.empty()) return {};
    if (conv && zero_padded(s))
      for (R& k : x) k = with_zero(k);
    const std::int64_t oc = wv.type.shape[0], per_group = wv.type.shape[1];
    const std::int64_t groups = conv ? s.attrs.get_int("groups") : 1;
    if (per_group * groups != cin || oc % groups != 0 || oc != last_dim(t_.type(s.outputs[0]))) return {};
    const std::vector<float>& sums = pair_sums(w, oc * per_group);
    if (sums.empty()) return {};
    const R bias = in(s, 2, st.r);
    const bool bias_constant = s.inputs.size() > 2 && s.inputs[2].is_tensor() &&
                               t_.value(s.inputs[2].value).origin == ValueOrigin::Constant &&
                               t_.value(s.inputs[2].value).data && t_.type(s.inputs[2].value).numel() == oc;
    std::vector<R> out(static_cast<std::size_t>(oc));
    for (std::int64_t o = 0; o < oc; ++o) {
      const std::int64_t first = (o / (oc / groups)) * per_group;  // the group's first input channel
      double lo = 0, hi = 0;
      for (std::int64_t k = 0; k < per_group; ++k) {
        const std::size_t pair = static_cast<std::size_t>(o * per_group + k);
        const double pos = sums[2 * pair], neg = sums[2 * pair + 1];
        const R& xi = x[static_cast<std::size_t>(first + k)];
        lo += pos * xi.lo + neg * xi.hi;
        hi += pos * xi.hi + neg * xi.lo;
      }
      const double b = bias_constant ? element(t_.value(s.inputs[2].value), static_cast<std::size_t>(o)) : 0;
      out[static_cast<std::size_t>(o)] = bias_constant ? R{lo + b, hi + b} : R{lo + bias.lo, hi + bias.hi};
    }
    return out;
  }

  double attr(const BoundSymbol& s, const char* name, double if_none) const {
    if (!s.attrs.has(name) || s.attrs.is_none(name)) return if_none;
    return s.attrs.get_float(name);
  }

  // Elements of operand 0 reduced into one output element.
  double reduced_count(const BoundSymbol& s) const {
    const std::int64_t in_n = t_.type(s.inputs[0].value).numel(), out_n = t_.type(s.outputs[0]).numel();
    return out_n > 0 ? static_cast<double>(in_n) / static_cast<double>(out_n) : 0;
  }

  // The range of operand i (a tensor's, a number's, or [0, 0] for an absent optional operand).
  using Operands = std::function<R(std::size_t)>;

  R rule(const BoundSymbol& s, const Operands& x) const {
    const std::string& op = s.op->name;
    // The result's elements are some of the operand's (or averages, maxima of them).
    if (op == "to_dtype" || op == "permute" || op == "reshape" || op == "expand" || op == "flip" || op == "repeat" ||
        op == "select" || op == "slice" || op == "gather" || op == "index_select" || op == "max_pool2d" ||
        op == "max_pool2d_nhwc" || op == "adaptive_avg_pool2d" || op == "upsample_nearest2d" || op == "mean" ||
        op == "amax" || op == "amin" || op == "pad" || op == "embedding")
      return x(0);
    if (op == "avg_pool2d" || op == "avg_pool2d_nhwc") {  // zero padding averages in zeros
      if (s.attrs.has("divisor_override") && !s.attrs.is_none("divisor_override")) return kUnknown;
      return with_zero(x(0));
    }
    if (op == "relu") return monotone(x(0), [](double v) { return std::max(v, 0.0); });
    if (op == "neg") return {-x(0).hi, -x(0).lo};
    if (op == "abs") {
      const R a = x(0);
      return {a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0.0, magnitude(a)};
    }
    if (op == "silu") return below_identity(x(0), -0.28);       // min of x * sigmoid(x): -0.2785
    if (op == "hardswish") return below_identity(x(0), -0.375);  // min at x = -1.5
    if (op == "gelu") return below_identity(x(0), -0.18);       // min of x * Phi(x): -0.170 (tanh form: -0.170)
    if (op == "ceil" || op == "floor" || op == "round" || op == "trunc") return {x(0).lo - 1, x(0).hi + 1};
    if (op == "sigmoid" || op == "hardsigmoid" || op == "softmax") return {0, 1};
    if (op == "tanh" || op == "erf" || op == "sin" || op == "cos" || op == "sign") return {-1, 1};
    if (op == "atan") return {-2, 2};
    if (op == "asinh") return monotone(x(0), [](double v) { return std::asinh(v); });
    if (op == "leaky_relu") {
      const R a = x(0);
      const double ns = attr(s, "negative_slope", 0.01);
      const double c[5] = {a.lo, a.hi, ns * a.lo, ns * a.hi, 0};
      return {*std::min_element(c, c + 5), *std::max_element(c, c + 5)};
    }
    if (op == "elu") {
      const double scale = std::fabs(attr(s, "scale", 1)), alpha = std::fabs(attr(s, "alpha", 1));
      return symmetric(std::max(scale * magnitude(x(0)), scale * alpha));
    }
    if (op == "hardtanh" || op == "clamp") {  // min(max(x, lo), hi), monotone
      const bool h = op == "hardtanh";
      const double lo = attr(s, h ? "min_val" : "min", -kInf), hi = attr(s, h ? "max_val" : "max", kInf);
      if (std::isnan(lo) || std::isnan(hi)) return kUnknown;
      return monotone(x(0), [&](double v) { return std::min(std::max(v, lo), hi); });
    }
    if (op == "exp" || op == "expm1" || op == "sinh") {
      if (magnitude(x(0)) >= 80) return kUnknown;
      if (op == "exp") return monotone(x(0), [](double v) { return std::exp(v); });
      if (op == "expm1") return monotone(x(0), [](double v) { return std::expm1(v); });
      return monotone(x(0), [](double v) { return std::sinh(v); });
    }
    if (op == "cosh") return magnitude(x(0)) < 80 ? R{1, std::cosh(magnitude(x(0)))} : kUnknown;
    if (op == "add") return {x(0).lo + x(1).lo, x(0).hi + x(1).hi};
    if (op == "sub") return {x(0).lo - x(1).hi, x(0).hi - x(1).lo};
    if (op == "mul") return mul(x(0), x(1));
    if (op == "div") {
      // By a number or a constant (never by a computed tensor), none of them zero: [1/hi, 1/lo] of one sign.
      R d = x(1);
      if (s.inputs[1].is_tensor() && t_.value(s.inputs[1].value).origin != ValueOrigin::Constant) return kUnknown;
      if (!d.finite() || (d.lo <= 0 && d.hi >= 0)) return kUnknown;
      if (s.inputs[1].is_tensor() && constant_has_zero(s.inputs[1].value)) return kUnknown;
      R q = mul(x(0), {1 / d.hi, 1 / d.lo});
      if (s.attrs.has("rounding_mode") && !s.attrs.is_none("rounding_mode")) q = {q.lo - 1, q.hi + 1};
      return q;
    }
    if (op == "maximum") return {std::max(x(0).lo, x(1).lo), std::max(x(0).hi, x(1).hi)};
    if (op == "minimum") return {std::min(x(0).lo, x(1).lo), std::min(x(0).hi, x(1).hi)};
    if (op == "cat" || op == "select_scatter" || op == "slice_scatter") {
      R u = x(0);
      for (std::size_t i = 1; i < s.inputs.size(); ++i) u = hull(u, x(i));
      return u;
    }
    if (op == "where") return hull(x(1), x(2));
    if (op == "masked_fill") return hull(x(0), x(2));
    if (op == "constant_pad_nd") {
      const double v = attr(s, "value", 0);
      return std::isfinite(v) ? hull(x(0), {v, v}) : kUnknown;
    }
    if (op == "sum") {
      const double n = reduced_count(s);
      return {n * x(0).lo, n * x(0).hi};
    }
    if (op == "cumsum") {  // partial sums of 1..n terms
      const TensorType& a = t_.type(s.inputs[0].value);
      std::int64_t dim = s.attrs.get_int("dim");
      if (dim < 0) dim += static_cast<std::int64_t>(a.rank());
      const double n = a.rank() == 0 ? 1 : static_cast<double>(a.shape[static_cast<std::size_t>(dim)]);
      return hull(x(0), {n * x(0).lo, n * x(0).hi});
    }
    if (op == "conv2d" || op == "conv2d_nhwc" || op == "linear") return weighted_sum(s, x, zero_padded(s));
    if (op == "matmul" || op == "bmm")
      return symmetric(magnitude(x(0)) * magnitude(x(1)) * inner_size(s.inputs[0].value));
    if (op == "addmm")
      return symmetric(std::fabs(attr(s, "beta", 1)) * magnitude(x(0)) +
                       std::fabs(attr(s, "alpha", 1)) * magnitude(x(1)) * magnitude(x(2)) * inner_size(s.inputs[1].value));
    if (op == "layer_norm" || op == "rms_norm" || op == "group_norm") return normalized(s, x);
    if (op == "scaled_dot_product_attention") {
      // A convex combination of value's rows, when the scores are finite: no mask (an all -inf row of a float
      // mask gives NaN), and q.k^T * scale bounded.
      if (s.inputs.size() > 3 && s.inputs[3].is_tensor()) return kUnknown;
      const double d = inner_size(s.inputs[0].value);
      const double scale = s.attrs.is_none("scale") ? 1 / std::sqrt(d) : std::fabs(attr(s, "scale", 1));
      const double scores = magnitude(x(0)) * magnitude(x(1)) * d * scale;
      return std::isfinite(scores) && scores < 1e30 ? x(2) : kUnknown;
    }
    return kUnknown;  // no rule: nothing is known
  }

  // A convolution that reads zeros past the input's edges.
  static bool zero_padded(const BoundSymbol& s) {
    if (!s.attrs.has("padding")) return false;
    for (std::int64_t p : s.attrs.get_ints("padding"))
      if (p != 0) return true;
    return false;
  }

  // The last dimension of a matmul operand (the reduction length).
  double inner_size(ValueId v) const {
    const TensorType& t = t_.type(v);
    return t.rank() == 0 ? 1 : static_cast<double>(t.shape.back());
  }

  // conv2d (with zero padding, the input's range widened to 0) and linear: per output channel
  // [P lo + N hi, P hi + N lo] + bias with a constant weight; with a computed one, |x| |w| * the row length.
  R weighted_sum(const BoundSymbol& s, const Operands& x, bool padded) const {
    R a = x(0);
    if (padded) a = with_zero(a);
    const ValueId w = s.inputs[1].value;
    const R bias = x(2);
    const Value& wv = t_.value(w);
    if (wv.origin != ValueOrigin::Constant || !wv.data) {
      const double k = wv.type.shape.empty() ? 1
                                             : static_cast<double>(wv.type.numel() /
                                                                   std::max<std::int64_t>(1, wv.type.shape[0]));
      const R m = symmetric(magnitude(a) * magnitude(x(1)) * k);
      return {m.lo + bias.lo, m.hi + bias.hi};
    }
    const RowSums& rs = row_sums(w);
    if (!rs.finite) return kUnknown;
    const bool bias_constant = s.inputs.size() > 2 && s.inputs[2].is_tensor() &&
                               t_.value(s.inputs[2].value).origin == ValueOrigin::Constant &&
                               t_.value(s.inputs[2].value).data &&
                               static_cast<std::size_t>(t_.type(s.inputs[2].value).numel()) == rs.pos.size();
    R out{kInf, -kInf};
    for (std::size_t oc = 0; oc < rs.pos.size(); ++oc) {
      const double b = bias_constant ? element(t_.value(s.inputs[2].value), oc) : 0;
      out.lo = std::min(out.lo, rs.pos[oc] * a.lo + rs.neg[oc] * a.hi + b);
      out.hi = std::max(out.hi, rs.pos[oc] * a.hi + rs.neg[oc] * a.lo + b);
    }
    if (rs.pos.empty()) out = {0, 0};
    if (!bias_constant) out = {out.lo + bias.lo, out.hi + bias.hi};
    return out;
  }

  // Normalized by its own statistics: |(a - mean) / sqrt(var + eps)| <= sqrt(n) for n normalized elements
  // (and |a / rms| likewise), then * weight + bias. Needs a * a * n finite (the variance).
  R normalized(const BoundSymbol& s, const Operands& x) const {
    const double a = magnitude(x(0));
    double n = 1;
    if (s.op->name == "group_norm") {
      const TensorType& t = t_.type(s.inputs[0].value);
      n = static_cast<double>(t.numel()) /
          static_cast<double>(std::max<std::int64_t>(1, t.shape[0] * s.attrs.get_int("num_groups")));
    } else {
      for (std::int64_t d : s.attrs.get_ints("normalized_shape")) n *= static_cast<double>(d);
    }
    if (!(a * a * n < 1e30)) return kUnknown;
    const double weight = s.inputs.size() > 1 && s.inputs[1].is_tensor() ? magnitude(x(1)) : 1;
    const double bias = s.inputs.size() > 2 ? magnitude(x(2)) : 0;
    return symmetric(std::sqrt(n) * weight + bias);
  }

  R constant_range(ValueId v) const {
    auto it = range_cache_.find(v);
    if (it != range_cache_.end()) return it->second;
    return range_cache_[v] = scan_constant(v);
  }

  R scan_constant(ValueId v) const {
    const Value& val = t_.value(v);
    if (!val.data || is_complex(val.type.dtype)) return kUnknown;  // a complex constant has no real range
    const std::size_t n = static_cast<std::size_t>(val.type.numel());
    if (n == 0) return {0, 0};
    R out{kInf, -kInf};
    for (std::size_t i = 0; i < n; ++i) {
      const double e = element(val, i);
      if (!std::isfinite(e)) return kUnknown;
      out.lo = std::min(out.lo, e);
      out.hi = std::max(out.hi, e);
    }
    return out;
  }

  // For a constant weight [rows, ...] read as `pairs` rows of equal length (conv2d: [oc * C/groups] of kh * kw
  // taps): each row's sum of positive and of negative entries, interleaved (rounded up to float, which only
  // widens the ranges by an ulp: the factor 256 covers it). Empty when it holds NaN or infinity.
  const std::vector<float>& pair_sums(ValueId w, std::int64_t pairs) const {
    auto it = pair_cache_.find(w);
    if (it != pair_cache_.end()) return it->second;
    const Value& val = t_.value(w);
    const std::size_t n = static_cast<std::size_t>(val.type.numel()), rows = static_cast<std::size_t>(pairs);
    const std::size_t taps = rows ? n / rows : 0;
    std::vector<float> out(2 * rows);
    const bool f32 = val.type.dtype == DType::Float32;
    const float* wf = reinterpret_cast<const float*>(val.data->bytes.data());
    for (std::size_t row = 0; row < rows; ++row) {
      double pos = 0, neg = 0;  // branch-free: weights' signs are random
      for (std::size_t k = 0; k < taps; ++k) {
        const double e = f32 ? static_cast<double>(wf[row * taps + k]) : element(val, row * taps + k);
        pos += std::max(e, 0.0);
        neg += std::min(e, 0.0);
      }
      if (!std::isfinite(pos) || !std::isfinite(neg)) return pair_cache_[w] = {};  // NaN or infinity in the row
      // Rounded away from zero, so the float sums still bound the exact ones.
      out[2 * row] = std::nextafter(static_cast<float>(pos), std::numeric_limits<float>::infinity());
      out[2 * row + 1] = std::nextafter(static_cast<float>(neg), -std::numeric_limits<float>::infinity());
      if (pos == 0) out[2 * row] = 0;
      if (neg == 0) out[2 * row + 1] = 0;
    }
    return pair_cache_[w] = std::move(out);
  }

  // A constant's range per index of its last dimension (unknown ends where it holds NaN or infinity).
  const std::vector<R>& constant_channels(ValueId v) const {
    auto it = channel_cache_.find(v);
    if (it != channel_cache_.end()) return it->second;
    const Value& val = t_.value(v);
    const std::size_t c = static_cast<std::size_t>(last_dim(val.type)), n = static_cast<std::size_t>(val.type.numel());
    std::vector<R> out(c, R{kInf, -kInf});
    for (std::size_t i = 0; i < n; ++i) {
      const double e = element(val, i);
      R& k = out[i % c];
      k = std::isfinite(e) ? hull(k, {e, e}) : kUnknown;
    }
    for (R& k : out)
      if (k.lo > k.hi) k = {0, 0};  // an empty tensor
    return channel_cache_[v] = std::move(out);
  }

  bool constant_has_zero(ValueId v) const {
    const Value& val = t_.value(v);
    const std::size_t n = static_cast<std::size_t>(val.type.numel());
    for (std::size_t i = 0; i < n; ++i)
      if (element(val, i) == 0) return true;
    return false;
  }

  const RowSums& row_sums(ValueId v) const {
    auto it = row_cache_.find(v);
    if (it != row_cache_.end()) return it->second;
    const Value& val = t_.value(v);
    const std::size_t n = static_cast<std::size_t>(val.type.numel());
    const std::size_t rows =
        val.type.shape.empty() ? 1 : static_cast<std::size_t>(std::max<std::int64_t>(1, val.type.shape[0]));
    const std::size_t per_row = n / rows;
    RowSums rs;
    rs.pos.assign(rows, 0);
    rs.neg.assign(rows, 0);
    for (std::size_t row = 0; row < rows && rs.finite; ++row) {
      double pos = 0, neg = 0;  // branch-free: weights' signs are random
      for (std::size_t k = 0; k < per_row; ++k) {
        const double e = element(val, row * per_row + k);
        pos += std::max(e, 0.0);
        neg += std::min(e, 0.0);
      }
      rs.finite = std::isfinite(pos) && std::isfinite(neg);  // NaN or infinity anywhere in the row
      rs.pos[row] = pos;
      rs.neg[row] = neg;
    }
    return row_cache_[v] = std::move(rs);
  }

  const Trace& t_;
  mutable std::map<ValueId, RowSums> row_cache_;
  mutable std::map<ValueId, std::vector<R>> channel_cache_;
  mutable std::map<ValueId, R> range_cache_;
  mutable std::map<ValueId, std::vector<float>> pair_cache_;
};

}  // namespace

bool ValueRange::finite() const { return std::isfinite(lo) && std::isfinite(hi); }

std::vector<ValueRange> value_ranges(const Trace& trace, double input_bound) {
  return Analysis(trace).run(input_bound);
}

std::function<bool(ValueId)> nan_free_values(const Trace& trace) {
  auto ranges = std::make_shared<std::vector<ValueRange>>(value_ranges(trace, kFusionInputBound));
  return [ranges](ValueId v) { return v < ranges->size() && (*ranges)[v].finite(); };
}

std::vector<ValueId> bounded_values(const BoundSymbol& sym) {
  std::vector<ValueId> values;
  if (sym.executor != "onednn" || !sym.is_region()) return values;
  if (winograd_marked(sym)) values.push_back(sym.subsymbols[0].outputs[0]);
  for (std::size_t k = 1; k < sym.subsymbols.size(); ++k)
    if (sym.subsymbols[k].op->name != "add") values.push_back(sym.subsymbols[k].inputs[0].value);
  return values;
}

std::string bounded_variant_summary(const Trace& trace) {
  std::size_t activations = 0, winograd = 0;
  for (const BoundSymbol& s : trace.symbols()) {
    if (s.executor != "onednn" || !s.is_region()) continue;
    if (winograd_marked(s)) ++winograd;
    for (std::size_t k = 1; k < s.subsymbols.size(); ++k)
      if (s.subsymbols[k].op->name != "add") ++activations;
  }
  auto count = [](std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  std::string parts;
  if (activations) parts = count(activations, "fused activation");
  if (winograd) parts += (parts.empty() ? "" : ", ") + count(winograd, "convolution") + " that may use Winograd";
  return "oneDNN: " + (parts.empty() ? std::string("nothing") : parts);
}

double bounded_input_limit(const Trace& trace) {
  std::vector<ValueId> hidden;
  for (const BoundSymbol& s : trace.symbols())
    for (ValueId v : bounded_values(s)) hidden.push_back(v);
  if (hidden.empty()) return 0;
  Analysis analysis(trace);
  auto holds = [&](int exponent) {
    const std::vector<ValueRange> r = analysis.run(std::ldexp(1.0, exponent));
    return std::all_of(hidden.begin(), hidden.end(), [&](ValueId v) { return r[v].finite(); });
  };
  if (holds(64)) return std::ldexp(1.0, 64);
  int lo = -1, hi = 64;  // holds(hi) is false; holds(lo) true, -1 standing for "none"
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (holds(mid) ? lo : hi) = mid;
  }
  return lo < 0 ? 0 : std::ldexp(1.0, lo);
}

}  // namespace thunderc
