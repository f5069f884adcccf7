#include "core/transforms/fold_batchnorm.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "core/transforms/trace_util.h"

namespace thunderc {

namespace {

// The values of a float32/float64 constant of `dtype` (nullopt for anything else).
std::optional<std::vector<double>> constant_values(const Trace& t, const Operand& o, DType dtype) {
  if (!o.is_tensor()) return std::nullopt;
  const Value& v = t.value(o.value);
  if (v.origin != ValueOrigin::Constant || !v.data || v.type.dtype != dtype) return std::nullopt;
  std::size_t n = static_cast<std::size_t>(v.type.numel());
  std::vector<double> out(n);
  const unsigned char* p = v.data->bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    if (dtype == DType::Float32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out[i] = f;
    } else {
      std::memcpy(&out[i], p + 8 * i, 8);
    }
  }
  return out;
}

std::shared_ptr<const ConstantData> to_bytes(const std::vector<double>& values, DType dtype) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.resize(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::Float32) {
      float f = static_cast<float>(values[i]);
      std::memcpy(d->bytes.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(d->bytes.data() + 8 * i, &values[i], 8);
    }
  }
  return d;
}

// Folded weight and bias of conv `c` followed by batch_norm `bn`, or nullopt when a parameter is not a
// constant of the conv's dtype.
struct Folded {
  std::vector<double> weight, bias;
};
std::optional<Folded> fold(const Trace& t, const BoundSymbol& c, const BoundSymbol& bn) {
  DType dt = t.type(c.outputs[0]).dtype;
  if (dt != DType::Float32 && dt != DType::Float64) return std::nullopt;
  auto w = constant_values(t, c.inputs[1], dt);
  auto mean = constant_values(t, bn.inputs[3], dt), var = constant_values(t, bn.inputs[4], dt);
  if (!w || !mean || !var) return std::nullopt;
  std::size_t oc = static_cast<std::size_t>(t.type(c.inputs[1].value).shape[0]);
  if (mean->size() != oc || var->size() != oc) return std::nullopt;
  auto optional_param = [&](const Operand& o, double fill) -> std::optional<std::vector<double>> {
    if (o.kind == OperandKind::None) return std::vector<double>(oc, fill);
    auto v = constant_values(t, o, dt);
    if (v && v->size() != oc) return std::nullopt;
    return v;
  };
  auto bias = optional_param(c.inputs[2], 0.0), gamma = optional_param(bn.inputs[1], 1.0),
       beta = optional_param(bn.inputs[2], 0.0);
  if (!bias || !gamma || !beta) return std::nullopt;
  double eps = bn.attrs.get_float("eps");
  Folded f{std::move(*w), std::vector<double>(oc)};
  std::size_t per = f.weight.size() / oc;
  for (std::size_t o = 0; o < oc; ++o) {
    double s = (*gamma)[o] / std::sqrt((*var)[o] + eps);
    for (std::size_t i = 0; i < per; ++i) f.weight[o * per + i] *= s;
    f.bias[o] = ((*bias)[o] - (*mean)[o]) * s + (*beta)[o];
  }
  return f;
}

}  // namespace

Trace fold_batchnorm(const Trace& trace) {
  const auto& syms = trace.symbols();
  std::optional<UseDef> uses = use_def(trace);
  if (!uses) return trace;
  auto& [readers, producer] = *uses;

  std::map<std::size_t, std::size_t> conv_to_bn;  // conv symbol index -> its batch_norm's index
  for (std::size_t i = 0; i < syms.size(); ++i) {
    const BoundSymbol& bn = syms[i];
    if (bn.op->name != "batch_norm" || !bn.inputs[0].is_tensor()) continue;
    ValueId a = bn.inputs[0].value;
    auto p = producer.find(a);
    if (p == producer.end() || syms[p->second].op->name != "conv2d" || readers[a] != 1) continue;
    conv_to_bn[p->second] = i;
  }

  Trace out = trace.clone_without_symbols();
  out.constructed_by = "fold-batchnorm";
  std::vector<bool> skip(syms.size(), false);
  for (std::size_t i = 0; i < syms.size(); ++i) {
    if (skip[i]) continue;
    auto f = conv_to_bn.find(i);
    std::optional<Folded> folded;
    if (f != conv_to_bn.end()) folded = fold(trace, syms[i], syms[f->second]);
    if (!folded) {
      out.append(syms[i]);
      continue;
    }
    const BoundSymbol &conv = syms[i], &bn = syms[f->second];
    DType dt = trace.type(conv.outputs[0]).dtype;
    const Value& w = trace.value(conv.inputs[1].value);
    ValueId nw = out.add_constant(w.name + "_bnfold", w.type, to_bytes(folded->weight, dt));
    TensorType bias_type{dt, {w.type.shape[0]}, w.type.device};
    std::string bias_name = conv.inputs[2].is_tensor() ? trace.value(conv.inputs[2].value).name + "_bnfold"
                                                        : w.name + "_bnfold_bias";
    ValueId nb = out.add_constant(bias_name, bias_type, to_bytes(folded->bias, dt));
    BoundSymbol s = conv;
    s.inputs[1] = Operand::tensor(nw);
    s.inputs[2] = Operand::tensor(nb);
    s.outputs = {bn.outputs[0]};
    out.append(std::move(s));
    skip[f->second] = true;
  }
  return out;
}

const Transform& fold_batchnorm_transform() {
  static const Transform t{"fold-batchnorm",
                           "batch_norms after a single-use conv2d with constant parameters are folded into its weight and bias",
                           [](const Trace& t, const TransformContext&) { return fold_batchnorm(t); }};
  return t;
}

}  // namespace thunderc
