#include "core/transforms/channels_last.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/ir/error.h"

namespace thunderc {

namespace {

const IntList kToNhwc = {0, 2, 3, 1}, kToNchw = {0, 3, 1, 2};

// Where NCHW dim d lives in NHWC.
constexpr std::int64_t kNhwcPosition[4] = {0, 3, 1, 2};

bool is_onednn(const Executor* e) { return e && e->name() == "onednn"; }
bool is_native(const Executor* e) { return e && !e->is_always(); }

class ChannelsLast {
 public:
  ChannelsLast(const Trace& in, const TransformContext& ctx) : in_(in), ctx_(ctx), out_(in.clone_without_symbols()) {
    out_.constructed_by = "channels-last";
  }

  Trace run() {
    for (const BoundSymbol& s : in_.symbols()) {
      if (!rewrite(s)) keep(s);
    }
    std::vector<ValueId> outputs;
    const std::vector<bool>& may = ctx_.nhwc_outputs;
    for (std::size_t k = 0; k < in_.outputs().size(); ++k) {
      const ValueId v = in_.outputs()[k];
      outputs.push_back(k < may.size() && may[k] && is_nhwc(v) && nhwc_differs(in_.type(v).shape) ? nhwc_.at(v)
                                                                                                   : nchw(v));
    }
    out_.set_outputs(std::move(outputs));
    return std::move(out_);
  }

 private:
  // Emits op(inputs, attrs) into out_ when `accept` takes its first claimer; otherwise emits nothing.
  std::optional<ValueId> try_emit(const std::string& name, std::vector<Operand> inputs, const Attrs& attrs,
                                  const std::string& source, bool (*accept)(const Executor*)) {
    ValueId v = out_.emit1(op(name), std::move(inputs), attrs, source);
    if (accept(first_claimer(ctx_, out_, out_.symbols().back()))) return v;
    out_.mutable_symbols().pop_back();  // the value it made stays unused
    return std::nullopt;
  }

  bool is_nhwc(ValueId v) const { return nhwc_.count(v) != 0; }

  // An output is left NHWC only where that changes its shape, so that the caller tells the two apart by it.
  static bool nhwc_differs(const Shape& s) {
    return s.size() == 4 && Shape{s[0], s[2], s[3], s[1]} != s;
  }

  // The out_ value holding v in NCHW: v itself unless it was rewritten, or computed only in NHWC.
  ValueId nchw(ValueId v) {
    auto renamed = renamed_.find(v);
    if (renamed != renamed_.end()) return renamed->second;
    auto it = nhwc_.find(v);
    if (it == nhwc_.end()) return v;
    auto back = nchw_.find(v);
    if (back != nchw_.end()) return back->second;
    ValueId r = out_.emit1(op("permute"), {Operand::tensor(it->second)}, Attrs{{"dims", kToNchw}});
    nchw_[v] = r;
    return r;
  }

  // The NHWC form of a 4-D value (permuted once and remembered).
  ValueId nhwc(ValueId v) {
    auto it = nhwc_.find(v);
    if (it != nhwc_.end()) return it->second;
    const ValueId held = nchw(v);
    ValueId r = out_.emit1(op("permute"), {Operand::tensor(held)}, Attrs{{"dims", kToNhwc}});
    nhwc_[v] = r;
    nchw_[v] = held;
    return r;
  }

  // An operand of an elementwise op whose result is NHWC: broadcasting against [N, C, H, W] aligns trailing
  // dims, so a lower-rank tensor is first given leading 1s, then permuted like the rest.
  Operand broadcast_operand(const Operand& o) {
    if (!o.is_tensor()) return o;
    const TensorType& t = in_.type(o.value);
    if (t.rank() == 0) return o;
    if (t.rank() == 4) return Operand::tensor(nhwc(o.value));
    IntList shape(4 - t.rank(), 1);
    shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    ValueId r = out_.emit1(op("reshape"), {Operand::tensor(nchw(o.value))}, Attrs{{"shape", shape}});
    return Operand::tensor(out_.emit1(op("permute"), {Operand::tensor(r)}, Attrs{{"dims", kToNhwc}}));
  }

  bool any_nhwc_input(const BoundSymbol& s) const {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [&](const Operand& o) { return o.is_tensor() && is_nhwc(o.value); });
  }

  void produced_nhwc(const BoundSymbol& s, ValueId v) { nhwc_[s.outputs[0]] = v; }

  bool rewrite(const BoundSymbol& s) {
    if (s.outputs.size() != 1) return false;
    const std::string& name = s.op->name;
    const TensorType& y = in_.type(s.outputs[0]);

    // permute(v, [0, 3, 1, 2]) of a 4-D v that is no NHWC form itself: v is that value's NHWC form (a training
    // backward's input saved in NHWC by its forward: with_nhwc_inputs), so readers that can take NHWC read v.
    if (name == "permute" && s.attrs.get_ints("dims") == kToNchw && in_.type(s.inputs[0].value).rank() == 4 &&
        !is_nhwc(s.inputs[0].value)) {
      produced_nhwc(s, nchw(s.inputs[0].value));
      return true;
    }
    if ((name == "conv2d_backward_input" || name == "conv2d_backward_weight") &&
        is_onednn(first_claimer(ctx_, in_, s))) {
      // The gradient (and, for the weight's, the forward's input) NHWC; the input's gradient comes out NHWC.
      const bool input = name == "conv2d_backward_input";
      std::vector<Operand> ins = {Operand::tensor(nhwc(s.inputs[0].value)),
                                  input ? resolved(s.inputs[1]) : Operand::tensor(nhwc(s.inputs[1].value))};
      auto v = try_emit(name + "_nhwc", ins, s.attrs, s.source, is_onednn);
      if (v && input) produced_nhwc(s, *v);
      if (v && !input) renamed_[s.outputs[0]] = *v;
      return v.has_value();
    }
    if (name == "conv2d" && in_.type(s.inputs[0].value).rank() == 4 && is_onednn(first_claimer(ctx_, in_, s))) {
      std::vector<Operand> ins = {Operand::tensor(nhwc(s.inputs[0].value))};
      for (std::size_t i = 1; i < s.inputs.size(); ++i) ins.push_back(resolved(s.inputs[i]));
      auto v = try_emit("conv2d_nhwc", ins, s.attrs, s.source, is_onednn);
      if (v) produced_nhwc(s, *v);
      return v.has_value();
    }
    if (!any_nhwc_input(s)) return false;
    const ValueId x = s.inputs[0].is_tensor() ? s.inputs[0].value : ValueId{};

    if (s.op->category == OpCategory::Elementwise && y.rank() == 4) {
      std::vector<Operand> ins;
      for (const Operand& o : s.inputs) ins.push_back(broadcast_operand(o));
      produced_nhwc(s, out_.emit1(*s.op, std::move(ins), s.attrs, s.source));
      return true;
    }
    if (name == "batch_norm" && is_nhwc(x) && y.rank() == 4) return batch_norm(s, x);
    if (name == "max_pool2d_backward" && y.rank() == 4) {  // either operand NHWC: both are read so
      auto v = try_emit("max_pool2d_backward_nhwc", {Operand::tensor(nhwc(x)), Operand::tensor(nhwc(s.inputs[1].value))},
                        s.attrs, s.source, is_native);
      if (v) produced_nhwc(s, *v);
      return v.has_value();
    }
    if ((name == "max_pool2d" || name == "avg_pool2d") && is_nhwc(x)) {
      auto v = try_emit(name + "_nhwc", {Operand::tensor(nhwc_.at(x))}, s.attrs, s.source, is_native);
      if (v) produced_nhwc(s, *v);
      return v.has_value();
    }
    if (name == "adaptive_avg_pool2d" && is_nhwc(x) && y.shape[2] == 1 && y.shape[3] == 1) {
      produced_nhwc(s, out_.emit1(op("mean"), {Operand::tensor(nhwc_.at(x))},
                                  Attrs{{"dims", IntList{1, 2}}, {"keepdim", true}}, s.source));
      return true;
    }
    if (name == "cat" && y.rank() == 4) {
      std::int64_t dim = s.attrs.get_int("dim");
      if (dim < 0) dim += 4;
      std::vector<Operand> ins;
      for (const Operand& o : s.inputs) ins.push_back(Operand::tensor(nhwc(o.value)));
      Attrs a = s.attrs;
      a.set("dim", kNhwcPosition[dim]);
      produced_nhwc(s, out_.emit1(*s.op, std::move(ins), a, s.source));
      return true;
    }
    if ((name == "sum" || name == "mean" || name == "amax" || name == "amin") && is_nhwc(x)) return reduce(s, x);
    return false;
  }

  // batch_norm with running statistics (a training forward's, whose weights are parameters fold-batchnorm cannot
  // fold into the convolution) of an NHWC value, as the cpp executor computes it (ATen's inference kernel):
  // alpha = weight / sqrt(var + eps), beta = bias - mean * alpha, y = x * alpha + beta, with [C] statistics that
  // broadcast along NHWC's last dim.
  bool batch_norm(const BoundSymbol& s, ValueId x) {
    for (std::size_t i : {3, 4})
      if (s.inputs.size() <= i || !s.inputs[i].is_tensor() || in_.type(s.inputs[i].value).rank() != 1) return false;
    for (std::size_t i : {1, 2})
      if (s.inputs.size() > i && s.inputs[i].is_tensor() && in_.type(s.inputs[i].value).rank() != 1) return false;
    auto vec = [&](std::size_t i) { return resolved(s.inputs[i]); };
    auto has = [&](std::size_t i) { return s.inputs.size() > i && s.inputs[i].is_tensor(); };
    const ValueId var_eps = out_.emit1(op("add"), {vec(4), Operand::number(s.attrs.get_float("eps"))}, {}, s.source);
    const ValueId invstd = out_.emit1(op("reciprocal"), {Operand::tensor(out_.emit1(op("sqrt"), {Operand::tensor(var_eps)},
                                                                                    {}, s.source))},
                                      {}, s.source);
    const ValueId alpha = has(1) ? out_.emit1(op("mul"), {Operand::tensor(invstd), vec(1)}, {}, s.source) : invstd;
    const ValueId mean_alpha = out_.emit1(op("mul"), {vec(3), Operand::tensor(alpha)}, {}, s.source);
    const ValueId beta = has(2) ? out_.emit1(op("sub"), {vec(2), Operand::tensor(mean_alpha)}, {}, s.source)
                                : out_.emit1(op("neg"), {Operand::tensor(mean_alpha)}, {}, s.source);
    const ValueId scaled = out_.emit1(op("mul"), {Operand::tensor(nhwc_.at(x)), Operand::tensor(alpha)}, {}, s.source);
    produced_nhwc(s, out_.emit1(op("add"), {Operand::tensor(scaled), Operand::tensor(beta)}, {}, s.source));
    return true;
  }

  // A reduction of an NHWC value: the same dims, renumbered. With keepdim the result is NHWC; without, it is the
  // NCHW result itself when the dims left keep their order (reducing H and W leaves [N, C] either way).
  bool reduce(const BoundSymbol& s, ValueId x) {
    IntList dims = s.attrs.get_ints("dims");
    if (dims.empty()) dims = {0, 1, 2, 3};
    std::set<std::int64_t> reduced;
    for (std::int64_t d : dims) reduced.insert(kNhwcPosition[d < 0 ? d + 4 : d]);
    const bool keepdim = s.attrs.get_bool("keepdim");
    if (!keepdim) {
      std::vector<std::int64_t> left;  // the NHWC positions of the NCHW dims that remain, in NCHW order
      for (std::int64_t d = 0; d < 4; ++d)
        if (!reduced.count(kNhwcPosition[d])) left.push_back(kNhwcPosition[d]);
      if (!std::is_sorted(left.begin(), left.end())) return false;
    }
    Attrs a = s.attrs;
    a.set("dims", IntList(reduced.begin(), reduced.end()));
    ValueId v = out_.emit1(*s.op, {Operand::tensor(nhwc_.at(x))}, a, s.source);
    if (keepdim) produced_nhwc(s, v);
    else renamed_[s.outputs[0]] = v;
    return true;
  }

  void keep(const BoundSymbol& s) {
    BoundSymbol k = s;
    for (Operand& o : k.inputs) o = resolved(o);
    out_.append(std::move(k));
  }

  // The operand as an NCHW reader sees it in out_.
  Operand resolved(const Operand& o) { return o.is_tensor() ? Operand::tensor(nchw(o.value)) : o; }

  const Trace& in_;
  const TransformContext& ctx_;
  Trace out_;
  std::map<ValueId, ValueId> nhwc_;     // value of in_ (NCHW) -> the out_ value holding it in NHWC
  std::map<ValueId, ValueId> nchw_;     // value of in_ -> the out_ value holding it in NCHW, once made
  std::map<ValueId, ValueId> renamed_;  // value of in_ -> the out_ value that replaces it (same layout)
};

// Whether the pass has anything to do: a conv2d that onednn would claim, and no regions yet.
bool claims_a_conv(const Trace& t, const TransformContext& ctx) {
  bool conv = false;
  for (const BoundSymbol& s : t.symbols()) {
    if (s.is_region()) return false;
    const std::string& name = s.op->name;
    conv = conv || ((name == "conv2d" || name == "conv2d_backward_input" || name == "conv2d_backward_weight") &&
                    is_onednn(first_claimer(ctx, t, s)));
  }
  return conv;
}

}  // namespace

Trace channels_last(const Trace& trace, const TransformContext& ctx) {
  if (!claims_a_conv(trace, ctx)) return trace;
  return ChannelsLast(trace, ctx).run();
}

Trace with_nhwc_inputs(const Trace& trace, const std::vector<bool>& nhwc_inputs) {
  Trace out;
  out.name = trace.name;
  out.constructed_by = trace.constructed_by;
  std::map<ValueId, ValueId> m;
  std::vector<std::pair<ValueId, ValueId>> permuted;  // (input of `trace`, its NHWC input in `out`)
  for (std::size_t k = 0; k < trace.inputs().size(); ++k) {
    const ValueId v = trace.inputs()[k];
    TensorType type = trace.type(v);
    const bool nhwc = k < nhwc_inputs.size() && nhwc_inputs[k];
    if (nhwc) {
      THUNDERC_CHECK(type.rank() == 4, "with_nhwc_inputs: input ", k, " is ", type.str(), ", not 4-D");
      type.shape = {type.shape[0], type.shape[2], type.shape[3], type.shape[1]};
    }
    m[v] = out.add_input(trace.value(v).source_name, type);
    if (nhwc) permuted.emplace_back(v, m[v]);
  }
  for (ValueId c : trace.constants()) m[c] = out.add_constant(trace.value(c).source_name, trace.type(c), trace.value(c).data);
  for (const auto& [v, held] : permuted)
    m[v] = out.emit1(op("permute"), {Operand::tensor(held)}, Attrs{{"dims", kToNchw}});
  for (const BoundSymbol& s : trace.symbols()) {
    THUNDERC_CHECK(!s.is_region() && s.executor.empty(), "with_nhwc_inputs: a claimed or fused trace");
    std::vector<Operand> ins = s.inputs;
    for (Operand& o : ins)
      if (o.is_tensor()) o.value = m.at(o.value);
    const std::vector<ValueId> outs = out.emit(*s.op, std::move(ins), s.attrs, s.source);
    for (std::size_t i = 0; i < outs.size(); ++i) m[s.outputs[i]] = outs[i];
  }
  std::vector<ValueId> outputs;
  for (ValueId v : trace.outputs()) outputs.push_back(m.at(v));
  out.set_outputs(std::move(outputs));
  return out;
}

const Transform& channels_last_transform() {
  static const Transform t{"channels-last",
                           "conv2ds that onednn claims, and the elementwise, pooling, cat and reduction ops between "
                           "them, run on channels-last [N, H, W, C] tensors (conv2d_nhwc, max_pool2d_nhwc, ...); "
                           "permutes convert where that region begins and ends",
                           [](const Trace& t, const TransformContext& ctx) { return channels_last(t, ctx); }};
  return t;
}

}  // namespace thunderc
