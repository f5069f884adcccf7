#include "core/ir/trace.h"

#include <algorithm>
#include <cctype>

#include "core/ir/error.h"

namespace thunderc {

std::string sanitize_identifier(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += (std::isalnum(c) && c < 0x80) || c == '_' ? static_cast<char>(c) : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

std::string Trace::unique_name(const std::string& wanted) {
  std::string base = sanitize_identifier(wanted);
  std::string name = base;
  for (int suffix = 1; std::binary_search(names_.begin(), names_.end(), name); ++suffix)
    name = base + "_" + std::to_string(suffix);
  names_.insert(std::upper_bound(names_.begin(), names_.end(), name), name);
  return name;
}

ValueId Trace::new_value(Value v) {
  values_.push_back(std::move(v));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Trace::add_input(const std::string& source_name, TensorType type) {
  Value v;
  v.name = unique_name(source_name);
  v.source_name = source_name;
  v.origin = ValueOrigin::Input;
  v.type = std::move(type);
  ValueId id = new_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

ValueId Trace::add_constant(const std::string& source_name, TensorType type,
                            std::shared_ptr<const ConstantData> data) {
  THUNDERC_CHECK(data && data->bytes.size() == type.nbytes(), "constant '", source_name, "' has ",
                 data ? data->bytes.size() : 0, " bytes for type ", type.str());
  Value v;
  v.name = unique_name(source_name.empty() ? "c" + std::to_string(constants_.size()) : source_name);
  v.source_name = source_name;
  v.origin = ValueOrigin::Constant;
  v.type = std::move(type);
  v.data = std::move(data);
  ValueId id = new_value(std::move(v));
  constants_.push_back(id);
  return id;
}

const Value& Trace::value(ValueId id) const {
  THUNDERC_CHECK(id < values_.size(), "value id ", id, " out of range (", values_.size(), " values)");
  return values_[id];
}

const TensorType& MetaArgs::tensor(std::size_t i) const {
  THUNDERC_CHECK(i < inputs.size() && inputs[i].kind == OperandKind::Tensor, op.name, ": input ", i,
                 " is not a tensor");
  return *inputs[i].tensor;
}

std::vector<TensorType> Trace::infer(const Trace& t, const OpDef& op, const std::vector<Operand>& inputs,
                                     Attrs& attrs) {
  // Operands against the declaration.
  const auto& specs = op.inputs;
  bool variadic = !specs.empty() && specs.back().variadic;
  std::size_t fixed = variadic ? specs.size() - 1 : specs.size();
  if (variadic ? inputs.size() < specs.size() : inputs.size() != specs.size())
    internal_error(op.name, " takes ", variadic ? "at least " : "", specs.size(), " inputs, got ",
                   inputs.size());
  std::vector<OperandInfo> infos(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = specs[std::min(i, fixed)];
    const Operand& in = inputs[i];
    infos[i].kind = in.kind;
    switch (in.kind) {
      case OperandKind::Tensor: infos[i].tensor = &t.type(in.value); break;
      case OperandKind::Scalar:
        THUNDERC_CHECK(spec.scalar_ok, op.name, ": input '", spec.name, "' cannot be a number");
        infos[i].scalar = in.scalar;
        break;
      case OperandKind::None:
        THUNDERC_CHECK(spec.optional, op.name, ": input '", spec.name, "' is required");
        break;
    }
  }
  // Attributes against the declaration, in declared order, defaults filled in.
  Attrs full;
  for (const AttrSpec& spec : op.attrs) {
    if (attrs.has(spec.name)) {
      const AttrValue& v = attrs.get(spec.name);
      THUNDERC_CHECK(attr_matches(v, spec.type, spec.nullable), op.name, ": attribute '", spec.name, "' = ",
                     attr_str(v), " is not of type ", attr_type_name(spec.type));
      // Normalize ints given for float attributes so printing and comparison are stable.
      if (spec.type == AttrType::Float && std::holds_alternative<std::int64_t>(v))
        full.set(spec.name, static_cast<double>(std::get<std::int64_t>(v)));
      else
        full.set(spec.name, v);
    } else {
      THUNDERC_CHECK(spec.default_value.has_value(), op.name, ": attribute '", spec.name, "' is required");
      full.set(spec.name, *spec.default_value);
    }
  }
  for (const auto& [name, v] : attrs.items()) {
    bool known = std::any_of(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& s) { return s.name == name; });
    THUNDERC_CHECK(known, op.name, " has no attribute '", name, "'");
  }
  attrs = std::move(full);
  if (!op.complex_ok)
    for (const OperandInfo& in : infos)
      if (in.kind == OperandKind::Tensor && is_complex(in.tensor->dtype))
        user_error(op.name, " of a ", dtype_name(in.tensor->dtype), " tensor is not supported: complex tensors reach "
                   "only the FFTs, view_as_real/view_as_complex and what the frontends lower to real operators (see "
                   "docs/ops.md, complex tensors)");
  std::vector<TensorType> out = op.meta(MetaArgs{op, infos, attrs});
  if (!op.complex_ok)
    for (const TensorType& o : out)
      if (is_complex(o.dtype))
        user_error(op.name, " making a ", dtype_name(o.dtype), " tensor is not supported (see docs/ops.md, complex tensors)");
  return out;
}

std::vector<ValueId> Trace::emit(const OpDef& op, std::vector<Operand> inputs, Attrs attrs, std::string source) {
  std::vector<TensorType> out_types = infer(*this, op, inputs, attrs);
  BoundSymbol sym;
  sym.op = &op;
  sym.inputs = std::move(inputs);
  sym.attrs = std::move(attrs);
  sym.source = std::move(source);
  for (auto& type : out_types) {
    Value v;
    v.name = unique_name("t" + std::to_string(next_temp_++));
    v.origin = ValueOrigin::Intermediate;
    v.type = std::move(type);
    sym.outputs.push_back(new_value(std::move(v)));
  }
  symbols_.push_back(std::move(sym));
  return symbols_.back().outputs;
}

ValueId Trace::emit1(const OpDef& op, std::vector<Operand> inputs, Attrs attrs, std::string source) {
  auto outs = emit(op, std::move(inputs), std::move(attrs), std::move(source));
  THUNDERC_CHECK(outs.size() == 1, op.name, " has ", outs.size(), " outputs, expected 1");
  return outs[0];
}

ValueId Trace::new_intermediate(TensorType type) {
  Value v;
  v.name = unique_name("t" + std::to_string(next_temp_++));
  v.origin = ValueOrigin::Intermediate;
  v.type = std::move(type);
  return new_value(std::move(v));
}

void Trace::remove_constant(ValueId id) {
  auto it = std::find(constants_.begin(), constants_.end(), id);
  THUNDERC_CHECK(it != constants_.end(), "value id ", id, " is not a constant");
  constants_.erase(it);
  values_[id].data.reset();
}

Trace Trace::clone_without_symbols() const {
  Trace t = *this;
  t.symbols_.clear();
  return t;
}

void Trace::set_device(Device device) {
  for (Value& v : values_) v.type.device = device;
}

}  // namespace thunderc
