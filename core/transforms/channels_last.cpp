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
    for (ValueId v : in_.outputs()) outputs.push_back(nchw(v));
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
    conv = conv || (s.op->name == "conv2d" && is_onednn(first_claimer(ctx, t, s)));
  }
  return conv;
}

}  // namespace

Trace channels_last(const Trace& trace, const TransformContext& ctx) {
  if (!claims_a_conv(trace, ctx)) return trace;
  return ChannelsLast(trace, ctx).run();
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
