#include "core/transforms/split_cat_conv.h"

#include <cstring>
#include <map>
#include <set>

#include "core/ir/error.h"
#include "core/transforms/trace_util.h"

namespace thunderc {

namespace {

// Channels [c0, c0 + n) of a constant [OC, C, KH, KW] weight, as a new constant.
ValueId weight_slice(const Trace& in, Trace& out, ValueId w, std::int64_t c0, std::int64_t n) {
  const Value& v = in.value(w);
  const Shape& s = v.type.shape;
  const std::int64_t oc = s[0], c = s[1], k = s[2] * s[3], es = static_cast<std::int64_t>(dtype_size(v.type.dtype));
  auto d = std::make_shared<ConstantData>();
  d->bytes.resize(static_cast<std::size_t>(oc * n * k * es));
  for (std::int64_t o = 0; o < oc; ++o)
    std::memcpy(d->bytes.data() + o * n * k * es, v.data->bytes.data() + (o * c + c0) * k * es,
                static_cast<std::size_t>(n * k * es));
  TensorType type = v.type;
  type.shape[1] = n;
  return out.add_constant(v.name + "_c" + std::to_string(c0) + "_" + std::to_string(c0 + n), type, d);
}

}  // namespace

Trace split_cat_conv(const Trace& trace, const TransformContext& ctx) {
  const auto& syms = trace.symbols();
  std::optional<UseDef> uses = use_def(trace);
  if (!uses) return trace;
  auto& [readers, producer] = *uses;
  // conv2d symbol -> the cat it reads, for the convolutions to split.
  std::map<std::size_t, std::size_t> split;
  for (std::size_t i = 0; i < syms.size(); ++i) {
    const BoundSymbol& conv = syms[i];
    if (conv.op->name != "conv2d" || !conv.inputs[0].is_tensor() || !conv.inputs[1].is_tensor()) continue;
    const ValueId x = conv.inputs[0].value;
    auto p = producer.find(x);
    if (p == producer.end() || readers[x] != 1) continue;  // (a returned value counts as a reader)
    const BoundSymbol& cat = syms[p->second];
    if (cat.op->name != "cat" || trace.type(x).rank() != 4 || cat.inputs.size() < 2) continue;
    std::int64_t dim = cat.attrs.get_int("dim");
    if (dim != 1 && dim != -3) continue;
    const Value& w = trace.value(conv.inputs[1].value);
    if (w.origin != ValueOrigin::Constant || !w.data || w.type.dtype != DType::Float32 || w.type.rank() != 4) continue;
    const Executor* claimer = first_claimer(ctx, trace, conv);
    if (conv.attrs.get_int("groups") != 1 || !claimer || claimer->name() != "onednn") continue;
    bool pieces_ok = true;
    for (const Operand& o : cat.inputs) pieces_ok = pieces_ok && o.is_tensor() && trace.type(o.value).dtype == DType::Float32;
    if (pieces_ok) split[i] = p->second;
  }
  if (split.empty()) return trace;

  std::set<std::size_t> dropped_cats;
  for (const auto& [conv, cat] : split) dropped_cats.insert(cat);
  Trace out = trace.clone_without_symbols();
  out.constructed_by = "split-cat-conv";
  ValueMap renamed;  // each split convolution's output -> the sum that replaces it
  for (std::size_t i = 0; i < syms.size(); ++i) {
    if (dropped_cats.count(i)) continue;  // read only by the convolution below, which no longer reads it
    auto s = split.find(i);
    if (s == split.end()) {
      BoundSymbol kept = syms[i];
      substitute_operands(kept, renamed);
      out.append(std::move(kept));
      continue;
    }
    const BoundSymbol& conv = syms[i];
    const BoundSymbol& cat = syms[s->second];
    std::optional<ValueId> sum;
    std::int64_t c0 = 0;
    for (std::size_t k = 0; k < cat.inputs.size(); ++k) {
      const std::int64_t n = trace.type(cat.inputs[k].value).shape[1];
      if (n == 0) continue;
      std::vector<Operand> ins = conv.inputs;
      ins[0] = cat.inputs[k];
      ins[1] = Operand::tensor(weight_slice(trace, out, conv.inputs[1].value, c0, n));
      if (sum) ins[2] = Operand::none();  // the bias once, with the first piece
      ValueId y = out.emit1(*conv.op, std::move(ins), conv.attrs, conv.source);
      // The new convolution is the one that adds: fusion makes `add(conv, residual)` oneDNN's sum post-op.
      sum = sum ? out.emit1(op("add"), {Operand::tensor(y), Operand::tensor(*sum)}, Attrs{}, conv.source) : y;
      c0 += n;
    }
    THUNDERC_CHECK(sum.has_value(), "split-cat-conv: a concatenation of empty pieces (bug)");
    renamed[conv.outputs[0]] = *sum;
  }
  std::vector<ValueId> outputs;
  for (ValueId v : trace.outputs()) outputs.push_back(resolve_value(renamed, v));
  out.set_outputs(std::move(outputs));
  return out;
}

const Transform& split_cat_conv_transform() {
  static const Transform t{"split-cat-conv",
                           "a conv2d that onednn claims, reading a concatenation of channels that nothing else reads, "
                           "becomes a sum of conv2ds of the pieces (no copy of the concatenation)",
                           [](const Trace& t, const TransformContext& ctx) { return split_cat_conv(t, ctx); }};
  return t;
}

}  // namespace thunderc
