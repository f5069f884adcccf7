#include "core/ops/vjp.h"

#include <numeric>

#include "core/ir/error.h"

namespace thunderc {

VjpBuilder::VjpBuilder(Trace& trace, const BoundSymbol& sym, std::vector<std::optional<ValueId>> output_grads,
                       std::vector<bool> wants)
    : trace_(trace), sym_(sym), output_grads_(std::move(output_grads)), wants_(std::move(wants)) {}

ValueId VjpBuilder::in(std::size_t i) const {
  THUNDERC_CHECK(is_tensor(i), sym_.op->name, ": input ", i, " is not a tensor");
  return sym_.inputs[i].value;
}

ValueId VjpBuilder::g() const {
  THUNDERC_CHECK(!output_grads_.empty() && output_grads_[0], sym_.op->name, ": rule called without a gradient");
  return *output_grads_[0];
}

void VjpBuilder::give(std::size_t i, ValueId grad) {
  if (!wants(i)) return;
  const TensorType want = type(in(i));
  ValueId v = cast(sum_to(grad, want.shape), want.dtype);
  auto it = given_.find(i);
  if (it == given_.end())
    given_.emplace(i, v);
  else
    it->second = add(T(it->second), T(v));
}

ValueId VjpBuilder::emit(const std::string& name, std::vector<Operand> inputs, Attrs attrs) {
  return trace_.emit1(op(name), std::move(inputs), std::move(attrs), sym_.source);
}

ValueId VjpBuilder::sum(ValueId v, std::vector<std::int64_t> dims, bool keepdim) {
  THUNDERC_CHECK(!dims.empty() || shape(v).empty(), "VjpBuilder::sum over no dims (the op would sum all)");
  if (dims.empty()) return v;
  return emit("sum", {T(v)}, {{"dims", IntList(dims)}, {"keepdim", keepdim}});
}

ValueId VjpBuilder::reshape(ValueId v, const Shape& s) {
  if (shape(v) == s) return v;
  return emit("reshape", {T(v)}, {{"shape", IntList(s.begin(), s.end())}});
}

ValueId VjpBuilder::permute(ValueId v, std::vector<std::int64_t> dims) {
  bool identity = true;
  for (std::size_t k = 0; k < dims.size(); ++k) identity = identity && dims[k] == static_cast<std::int64_t>(k);
  if (identity) return v;
  return emit("permute", {T(v)}, {{"dims", IntList(dims)}});
}

ValueId VjpBuilder::transpose_last2(ValueId v) {
  const std::size_t r = shape(v).size();
  THUNDERC_CHECK(r >= 2, "transpose_last2 of rank ", r);
  std::vector<std::int64_t> dims(r);
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[r - 1], dims[r - 2]);
  return permute(v, dims);
}

ValueId VjpBuilder::expand(ValueId v, const Shape& s) {
  if (shape(v) == s) return v;
  return emit("expand", {T(v)}, {{"shape", IntList(s.begin(), s.end())}});
}

ValueId VjpBuilder::cast(ValueId v, DType dtype) {
  if (type(v).dtype == dtype) return v;
  return emit("to_dtype", {T(v)}, {{"dtype", dtype}});
}

ValueId VjpBuilder::zeros(const TensorType& t) {
  auto data = std::make_shared<ConstantData>();
  data->bytes.assign(dtype_size(t.dtype), 0);
  ValueId z = trace_.add_constant("zero", TensorType{t.dtype, {}, t.device}, std::move(data));
  return expand(z, t.shape);
}

ValueId VjpBuilder::sum_to(ValueId v, const Shape& target) {
  const Shape have = shape(v);
  if (have == target) return v;
  auto numel = [](const Shape& s) { return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>()); };
  if (have.size() < target.size()) {
    THUNDERC_CHECK(numel(have) == numel(target), "sum_to: ", shape_str(have), " cannot become ", shape_str(target));
    return reshape(v, target);
  }
  const std::size_t lead = have.size() - target.size();
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < have.size(); ++d)
    if (d < lead || (target[d - lead] == 1 && have[d] != 1)) dims.push_back(static_cast<std::int64_t>(d));
  ValueId s = dims.empty() ? v : sum(v, dims, true);
  THUNDERC_CHECK(numel(shape(s)) == numel(target), "sum_to: ", shape_str(have), " does not broadcast to ",
                 shape_str(target));
  return reshape(s, target);
}

void set_vjp(OpRegistry& r, const std::string& name, VjpFn rule) {
  OpDef& def = r.mutable_get(name);
  THUNDERC_CHECK(!def.vjp, "operator '", name, "' has two VJP rules");
  def.vjp = std::move(rule);
}

}  // namespace thunderc
