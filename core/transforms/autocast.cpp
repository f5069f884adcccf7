#include "core/transforms/autocast.h"

#include <cstring>
#include <map>
#include <set>

#include "core/ir/error.h"
#include "core/ir/half.h"

namespace thunderc {

namespace {

const std::set<std::string>& low_precision_ops() {
  static const std::set<std::string> s = {"linear", "matmul", "bmm", "addmm", "conv2d", "scaled_dot_product_attention"};
  return s;
}

const std::set<std::string>& float32_ops() {
  static const std::set<std::string> s = {"softmax", "log_softmax", "layer_norm", "rms_norm", "batch_norm", "sum",
                                          "exp",     "log",         "rsqrt",      "reciprocal", "pow"};
  return s;
}

bool is_low(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

class Autocaster {
 public:
  Autocaster(const Trace& in, DType low) : in_(in), out_(in.clone_without_symbols()), low_(low) {}

  Trace run() {
    for (const BoundSymbol& s : in_.symbols()) rewrite(s);
    std::vector<ValueId> outputs;
    for (ValueId v : in_.outputs()) outputs.push_back(cast(current(v), in_.type(v).dtype, ""));
    out_.set_outputs(outputs);
    return std::move(out_);
  }

 private:
  ValueId current(ValueId v) const {
    auto it = map_.find(v);
    return it == map_.end() ? v : it->second;
  }

  // `v` as dtype `to`: itself, a converted constant (made once per constant and dtype), or a to_dtype symbol.
  ValueId cast(ValueId v, DType to, const std::string& source) {
    const Value& val = out_.value(v);
    if (val.type.dtype == to) return v;
    auto key = std::make_pair(v, to);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    ValueId r;
    if (val.origin == ValueOrigin::Constant && val.data && val.type.dtype == DType::Float32 && is_low(to))
      r = converted_constant(val, to);
    else
      r = out_.emit1(op("to_dtype"), {Operand::tensor(v)}, {{"dtype", to}}, source);
    casts_[key] = r;
    return r;
  }

  ValueId converted_constant(const Value& val, DType to) {
    auto data = std::make_shared<ConstantData>();
    const std::size_t n = static_cast<std::size_t>(val.type.numel());
    data->bytes.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, val.data->bytes.data() + 4 * i, 4);
      std::uint16_t h = to == DType::BFloat16 ? float_to_bf16(f) : float_to_f16(f);
      std::memcpy(data->bytes.data() + 2 * i, &h, 2);
    }
    TensorType type = val.type;
    type.dtype = to;
    return out_.add_constant(val.name + (to == DType::BFloat16 ? "_bf16" : "_f16"), type, std::move(data));
  }

  // The inputs of `s` remapped, with the floating ones matching `pred` cast to `to`.
  template <class Pred>
  std::vector<Operand> cast_inputs(const BoundSymbol& s, std::vector<Operand> inputs, Pred pred, DType to) {
    for (Operand& o : inputs)
      if (o.is_tensor() && pred(out_.type(o.value).dtype)) o.value = cast(o.value, to, s.source);
    return inputs;
  }

  void rewrite(const BoundSymbol& s) {
    THUNDERC_CHECK(!s.is_region(), "autocast runs before fusion, found a region");
    std::vector<Operand> inputs = s.inputs;
    for (Operand& o : inputs)
      if (o.is_tensor()) o.value = current(o.value);
    const std::string& name = s.op->name;
    auto floating_not = [](DType want) { return [want](DType d) { return is_floating(d) && d != want; }; };
    if (low_precision_ops().count(name))
      inputs = cast_inputs(s, inputs, floating_not(low_), low_);
    else if (float32_ops().count(name))
      inputs = cast_inputs(s, inputs, [](DType d) { return is_low(d); }, DType::Float32);

    Attrs attrs = s.attrs;
    const std::vector<TensorType> types = Trace::infer(out_, *s.op, inputs, attrs);
    BoundSymbol r = s;
    r.inputs = inputs;
    r.attrs = attrs;
    for (std::size_t i = 0; i < s.outputs.size(); ++i) {
      if (types[i] == in_.type(s.outputs[i])) continue;  // same type: the value stays as it is
      r.outputs[i] = out_.new_intermediate(types[i]);
      map_[s.outputs[i]] = r.outputs[i];
    }
    out_.append(std::move(r));
  }

  const Trace& in_;
  Trace out_;
  DType low_;
  std::map<ValueId, ValueId> map_;                       // old value -> its autocast replacement
  std::map<std::pair<ValueId, DType>, ValueId> casts_;  // (value, dtype) -> the cast made for it
};

}  // namespace

std::optional<DType> autocast_dtype(const std::string& precision) {
  if (precision == "bf16") return DType::BFloat16;
  if (precision == "fp16") return DType::Float16;
  return std::nullopt;
}

Trace autocast(const Trace& trace, DType low) {
  THUNDERC_CHECK(is_low(low), "autocast to ", dtype_name(low), ": expected float16 or bfloat16");
  for (const BoundSymbol& s : trace.symbols())
    if (s.is_region()) return trace;
  return Autocaster(trace, low).run();
}

const Transform& autocast_transform() {
  static const Transform t{
      "autocast",
      "with --precision bf16/fp16: matmuls, convolutions and attention in that dtype, softmax/norms/sums in "
      "float32, weights stored converted, outputs cast back (PyTorch autocast's lists)",
      [](const Trace& t, const TransformContext& ctx) {
        std::optional<DType> low = autocast_dtype(ctx.precision);
        return low ? autocast(t, *low) : t;
      }};
  return t;
}

}  // namespace thunderc
