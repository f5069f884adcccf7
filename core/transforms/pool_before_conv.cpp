#include "core/transforms/pool_before_conv.h"

#include <map>
#include <set>

#include "core/transforms/trace_util.h"

namespace thunderc {

// Why NaN and inf land where they did: with x's channel c at pixel p written x[c, p], the original output is
// out[o] = sum_p (sum_c W[o, c] x[c, p] + b[o]) / d and the rewritten one sum_c W[o, c] (sum_p x[c, p] / d) + b[o].
// A NaN anywhere in the window makes every output channel NaN in both. Otherwise, for each channel c holding
// an inf in the window: if its infs all have one sign, both forms add the infinite terms W[o, c] * (+-inf)
// (NaN where W[o, c] = 0); if they have both signs, the rewritten form's average is NaN and the original
// adds W[o, c] * inf and W[o, c] * -inf, NaN too. The same infinite terms meet, so the same outputs are NaN,
// +inf or -inf.

namespace {

// Whether every entry is v (the importers give a pair, or one value for both dims).
bool all_are(const IntList& l, std::int64_t v) {
  for (std::int64_t x : l)
    if (x != v) return false;
  return true;
}

// Whether avg_pool2d(conv2d(x, W, b)) may become conv2d(avg_pool2d(x), W, b) for these two symbols.
bool swappable(const Trace& trace, const BoundSymbol& conv, const BoundSymbol& pool) {
  if (conv.op->name != "conv2d" || !conv.inputs[0].is_tensor() || !conv.inputs[1].is_tensor()) return false;
  const Shape& w = trace.type(conv.inputs[1].value).shape;
  if (w.size() != 4 || w[2] != 1 || w[3] != 1) return false;
  if (!all_are(conv.attrs.get_ints("stride"), 1) || !all_are(conv.attrs.get_ints("padding"), 0)) return false;
  // The bias comes out of the pooling unchanged only where each window's divisor counts exactly the elements
  // it sums: no override, and no padding zeros counted in it (ceil_mode's partial windows count what they sum).
  const bool has_padding = !all_are(pool.attrs.get_ints("padding"), 0);
  const bool exact_divisor =
      pool.attrs.is_none("divisor_override") && (!has_padding || !pool.attrs.get_bool("count_include_pad"));
  if (conv.inputs.size() > 2 && conv.inputs[2].is_tensor() && !exact_divisor) return false;
  // Only where the pooling shrinks the image: there the convolution gets cheaper by more than the pooling of
  // its (maybe wider) input costs.
  const Shape& in = trace.type(conv.outputs[0]).shape;
  const Shape& out = trace.type(pool.outputs[0]).shape;
  const std::size_t r = in.size();
  return r >= 3 && out.size() == r && out[r - 2] * out[r - 1] < in[r - 2] * in[r - 1];
}

}  // namespace

Trace pool_before_conv(const Trace& trace, const TransformContext&) {
  const auto& syms = trace.symbols();
  std::optional<UseDef> uses = use_def(trace);
  if (!uses) return trace;
  auto& [readers, producer] = *uses;
  std::map<std::size_t, std::size_t> conv_of;  // avg_pool2d symbol -> the conv2d whose output it pools
  for (std::size_t i = 0; i < syms.size(); ++i) {
    const BoundSymbol& pool = syms[i];
    if (pool.op->name != "avg_pool2d" || !pool.inputs[0].is_tensor()) continue;
    const ValueId y = pool.inputs[0].value;
    auto p = producer.find(y);
    if (p == producer.end() || readers[y] != 1) continue;  // (a returned value counts as a reader)
    if (swappable(trace, syms[p->second], pool)) conv_of[i] = p->second;
  }
  if (conv_of.empty()) return trace;

  std::set<std::size_t> moved;  // conv2d symbols emitted at their pooling's place instead
  for (const auto& [pool, conv] : conv_of) moved.insert(conv);
  Trace out = trace.clone_without_symbols();
  out.constructed_by = "pool-before-conv";
  ValueMap renamed;  // each pooling's output -> the convolution that now computes it
  for (std::size_t i = 0; i < syms.size(); ++i) {
    if (moved.count(i)) continue;  // its output is read only by the pooling below
    auto c = conv_of.find(i);
    if (c == conv_of.end()) {
      BoundSymbol kept = syms[i];
      substitute_operands(kept, renamed);
      out.append(std::move(kept));
      continue;
    }
    const BoundSymbol& pool = syms[i];
    const BoundSymbol& conv = syms[c->second];
    std::vector<Operand> conv_inputs = conv.inputs;  // defined before the convolution, so before the pooling
    const ValueId pooled = out.emit1(*pool.op, {conv_inputs[0]}, pool.attrs, pool.source);
    conv_inputs[0] = Operand::tensor(pooled);
    renamed[pool.outputs[0]] = out.emit1(*conv.op, std::move(conv_inputs), conv.attrs, conv.source);
  }
  std::vector<ValueId> outputs;
  for (ValueId v : trace.outputs()) outputs.push_back(resolve_value(renamed, v));
  out.set_outputs(std::move(outputs));
  return out;
}

const Transform& pool_before_conv_transform() {
  static const Transform t{"pool-before-conv",
                           "an avg_pool2d of a 1x1 conv2d's output (read by nothing else) pools the conv2d's input "
                           "instead, so the convolution runs on the smaller image",
                           [](const Trace& t, const TransformContext& ctx) { return pool_before_conv(t, ctx); }};
  return t;
}

}  // namespace thunderc
