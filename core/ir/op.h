// Operators are declared once: name, inputs, attributes and a meta function that gives the output
// types (shape and dtype, with PyTorch's broadcasting and type promotion). The catalog is in core/ops/.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/attrs.h"
#include "core/ir/types.h"

namespace thunderc {

// What kind of computation an operator is; executors and passes use it to decide what they can take.
enum class OpCategory {
  Elementwise,  // pointwise with broadcasting (unary, binary, where, masked_fill, casts)
  Reduction,    // sum, mean, amax, amin, any, all, var over dims
  Normalization,  // softmax, log_softmax, layer_norm, batch_norm
  Shape,        // reshape, permute, expand, slice, select, cat, flip, repeat, constant_pad_nd: data movement only
  Matmul,       // linear, matmul, bmm, addmm
  Convolution,  // conv2d
  Pooling,      // max/avg/adaptive pooling
  Indexing,     // embedding, index_select, gather, argmax/argmin, cumsum: code of their own, never in a region
  Attention,    // scaled_dot_product_attention
  Spectral,     // fft_r2c/c2r/c2c, view_as_real/view_as_complex: complex tensors, code of their own, never in a region
  Fusion,       // a region of other symbols that one executor runs as a unit (see BoundSymbol::subsymbols)
};
const char* op_category_name(OpCategory c);

// The kind of one operand of a bound symbol.
enum class OperandKind { Tensor, Scalar, None };

struct InputSpec {
  std::string name;
  bool optional = false;   // may be None (e.g. linear's bias)
  bool scalar_ok = false;  // may be a Python number (e.g. add's other)
  bool variadic = false;   // last input only: any number >= 1 of tensors (cat)
};

struct AttrSpec {
  std::string name;
  AttrType type;
  bool nullable = false;
  std::optional<AttrValue> default_value;  // absent: required
};

// What a meta function sees of one operand.
struct OperandInfo {
  OperandKind kind = OperandKind::None;
  const TensorType* tensor = nullptr;  // when kind == Tensor
  Scalar scalar;                       // when kind == Scalar
};

struct OpDef;
class VjpBuilder;  // core/ops/vjp.h
// A reverse-mode rule (core/ops/vjp.h): emits the backward of one symbol into the joint trace.
using VjpFn = std::function<void(VjpBuilder&)>;
struct MetaArgs {
  const OpDef& op;
  const std::vector<OperandInfo>& inputs;
  const Attrs& attrs;

  const TensorType& tensor(std::size_t i) const;  // UserError-free: InternalError if not a tensor
  bool is_none(std::size_t i) const { return inputs.at(i).kind == OperandKind::None; }
};

// Computes output types, or throws UserError explaining why the inputs are invalid.
using MetaFn = std::function<std::vector<TensorType>(const MetaArgs&)>;

struct OpDef {
  std::string name;
  OpCategory category;
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;
  MetaFn meta;
  std::string doc;  // one line
  // Takes or makes complex tensors. Every other operator refuses them (Trace::emit), so executors and passes
  // never meet a complex tensor outside these.
  bool complex_ok = false;
  // How autodiff differentiates it (set_vjp in the file declaring it); empty: not differentiable yet.
  VjpFn vjp;
};

class OpRegistry {
 public:
  void add(OpDef def);
  const OpDef* find(const std::string& name) const;
  const OpDef& get(const std::string& name) const;  // InternalError if unknown
  OpDef& mutable_get(const std::string& name);        // for set_vjp while registering
  std::vector<const OpDef*> all() const;             // sorted by name

 private:
  std::map<std::string, OpDef> ops_;
};

// The catalog of every operator thunderc knows (built on first use; see core/ops/ops.h).
const OpRegistry& op_registry();
inline const OpDef& op(const std::string& name) { return op_registry().get(name); }

}  // namespace thunderc
