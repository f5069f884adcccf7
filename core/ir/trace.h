// The trace: thunderc's IR. An ordered list of bound symbols in SSA form over typed values, like a
// Thunder trace. Values are tensors (inputs, constants such as weights, or results of bound symbols);
// Python numbers appear inline as scalar operands; non-tensor arguments are attributes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/attrs.h"
#include "core/ir/op.h"
#include "core/ir/types.h"

namespace thunderc {

using ValueId = std::uint32_t;

enum class ValueOrigin { Input, Constant, Intermediate };

// Bytes of a constant tensor (contiguous, row-major), shared between traces instead of copied.
struct ConstantData {
  std::vector<unsigned char> bytes;
};

struct Value {
  std::string name;         // printed identifier: unique in the trace, [A-Za-z_][A-Za-z0-9_]*
  std::string source_name;  // as the model named it (may be any text; escape before printing)
  ValueOrigin origin = ValueOrigin::Intermediate;
  TensorType type;
  std::shared_ptr<const ConstantData> data;  // constants only; never printed in full
};

struct Operand {
  OperandKind kind = OperandKind::None;
  ValueId value = 0;  // kind == Tensor
  Scalar scalar;      // kind == Scalar

  static Operand tensor(ValueId v) { return {OperandKind::Tensor, v, {}}; }
  static Operand number(Scalar s) { return {OperandKind::Scalar, 0, s}; }
  static Operand none() { return {}; }
  bool is_tensor() const { return kind == OperandKind::Tensor; }
};

struct BoundSymbol {
  const OpDef* op = nullptr;
  std::vector<Operand> inputs;
  Attrs attrs;
  std::vector<ValueId> outputs;
  std::string executor;  // empty until an executor claims it
  std::string source;    // where it came from in the model ("model.py:12"), may be empty
  // A region (op "fusion"): the symbols it runs, in order. Their tensor operands are the region's inputs
  // or earlier subsymbols' outputs; the region's outputs are outputs of its subsymbols. Empty otherwise.
  std::vector<BoundSymbol> subsymbols;
  bool is_region() const { return !subsymbols.empty(); }
};

class Trace {
 public:
  std::string name = "forward";
  std::string constructed_by;  // the pass that produced this trace: "# Constructed by <pass>"

  ValueId add_input(const std::string& source_name, TensorType type);
  ValueId add_constant(const std::string& source_name, TensorType type,
                       std::shared_ptr<const ConstantData> data);
  // Checks operands and attributes against the operator's declaration (filling attribute defaults),
  // runs its meta function, creates the outputs and appends the bound symbol. Throws UserError when
  // the meta function rejects the inputs.
  std::vector<ValueId> emit(const OpDef& op, std::vector<Operand> inputs, Attrs attrs,
                            std::string source = {});
  ValueId emit1(const OpDef& op, std::vector<Operand> inputs, Attrs attrs, std::string source = {});
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  const Value& value(ValueId id) const;
  const TensorType& type(ValueId id) const { return value(id).type; }
  // Moves every tensor of the trace (inputs, constants, intermediates, outputs) to `device`: the same program
  // for another device (tests run one trace on the CPU and on CUDA). Claims and regions are kept.
  void set_device(Device device);
  std::size_t num_values() const { return values_.size(); }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<ValueId>& constants() const { return constants_; }
  const std::vector<BoundSymbol>& symbols() const { return symbols_; }
  std::vector<BoundSymbol>& mutable_symbols() { return symbols_; }

  // A copy with every value (same ValueIds, so existing symbols stay valid) but no symbols: a pass
  // builds its result by append()ing kept symbols and emit()ting new ones in order.
  Trace clone_without_symbols() const;
  void append(BoundSymbol sym) { symbols_.push_back(std::move(sym)); }
  // Removes a constant from constants() and releases its bytes (for dead-code elimination). Its ValueId and
  // name stay reserved; no symbol or output may use it afterwards (verify_trace checks).
  void remove_constant(ValueId id);

  // A value for a pass to use as a region's output or a new result: same type, fresh "t" name.
  ValueId new_intermediate(TensorType type);
  // Shared by emit and the verifier: operand/attribute checks and output types for one symbol.
  static std::vector<TensorType> infer(const Trace& t, const OpDef& op, const std::vector<Operand>& inputs,
                                       Attrs& attrs);

 private:
  std::string unique_name(const std::string& wanted);
  ValueId new_value(Value v);

  std::vector<Value> values_;
  std::vector<ValueId> inputs_, outputs_, constants_;
  std::vector<BoundSymbol> symbols_;
  std::vector<std::string> names_;  // sorted, for uniqueness
  std::uint32_t next_temp_ = 0;
};

// Maps arbitrary text to a valid identifier ("input.1" -> "input_1", "1x" -> "_1x", "" -> "_").
std::string sanitize_identifier(const std::string& text);

}  // namespace thunderc
