// Helpers shared by the core/ unit tests: building operands, running one operator's meta function through
// Trace::emit, and recording which operators have a test case (checked against the catalog).
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "core/ir/op.h"
#include "core/ir/trace.h"
#include "core/ir/types.h"

namespace coretest {

using namespace thunderc;

inline TensorType tt(DType dt, Shape shape, Device dev = Device::cpu()) { return TensorType{dt, std::move(shape), dev}; }
inline TensorType f32(Shape s) { return tt(DType::Float32, std::move(s)); }

// One operand of a meta-function call: a tensor of some type, a Python number, or None.
struct Arg {
  OperandKind kind = OperandKind::None;
  TensorType type;
  Scalar scalar;
};
inline Arg T(TensorType t) { return {OperandKind::Tensor, std::move(t), {}}; }
inline Arg T(DType dt, Shape s) { return T(tt(dt, std::move(s))); }
inline Arg S(Scalar s) { return {OperandKind::Scalar, {}, s}; }
inline Arg N() { return {}; }

// The set of operator names that some test case below declares it covers (filled during static init).
inline std::set<std::string>& tested_ops() {
  static std::set<std::string> ops;
  return ops;
}
inline bool register_tested_ops(std::initializer_list<const char*> names) {
  for (const char* n : names) tested_ops().insert(n);
  return true;
}

// Emits `op_name` on a fresh trace whose inputs are the tensor operands and returns the output types.
inline std::vector<TensorType> meta(const std::string& op_name, const std::vector<Arg>& args, Attrs attrs = {}) {
  Trace t;
  std::vector<Operand> ops;
  int n = 0;
  for (const Arg& a : args) {
    switch (a.kind) {
      case OperandKind::Tensor: ops.push_back(Operand::tensor(t.add_input("in" + std::to_string(n++), a.type))); break;
      case OperandKind::Scalar: ops.push_back(Operand::number(a.scalar)); break;
      case OperandKind::None: ops.push_back(Operand::none()); break;
    }
  }
  std::vector<TensorType> types;
  for (ValueId v : t.emit(op(op_name), ops, std::move(attrs))) types.push_back(t.type(v));
  return types;
}

inline TensorType meta1(const std::string& op_name, const std::vector<Arg>& args, Attrs attrs = {}) {
  auto outs = meta(op_name, args, std::move(attrs));
  REQUIRE(outs.size() == 1);
  return outs[0];
}

inline DType meta_dtype(const std::string& op_name, const std::vector<Arg>& args, Attrs attrs = {}) {
  return meta1(op_name, args, std::move(attrs)).dtype;
}

inline Shape meta_shape(const std::string& op_name, const std::vector<Arg>& args, Attrs attrs = {}) {
  return meta1(op_name, args, std::move(attrs)).shape;
}

// The UserError message meta gives, or "<no error>" / "<other exception: ...>".
inline std::string meta_error(const std::string& op_name, const std::vector<Arg>& args, Attrs attrs = {}) {
  try {
    meta(op_name, args, std::move(attrs));
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception: ") + e.what() + ">";
  }
  return "<no error>";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

inline std::int64_t I(std::int64_t v) { return v; }

// Groups t's first `count` symbols into one region of `executor` named "<executor>_fusion0" (as the fusion pass
// would), reading `inputs` and giving `outputs`; the other symbols follow it unchanged.
inline void group_first_symbols(Trace& t, std::size_t count, const std::string& executor, std::vector<Operand> inputs,
                                std::vector<ValueId> outputs) {
  BoundSymbol region;
  region.op = &op("fusion");
  region.executor = executor;
  region.inputs = std::move(inputs);
  region.attrs = {{"name", executor + "_fusion0"}};
  region.outputs = std::move(outputs);
  region.subsymbols.assign(t.symbols().begin(), t.symbols().begin() + static_cast<std::ptrdiff_t>(count));
  std::vector<BoundSymbol> symbols = {region};
  symbols.insert(symbols.end(), t.symbols().begin() + static_cast<std::ptrdiff_t>(count), t.symbols().end());
  t.mutable_symbols() = std::move(symbols);
}

}  // namespace coretest

#define CORETEST_CAT2(a, b) a##b
#define CORETEST_CAT(a, b) CORETEST_CAT2(a, b)
// TEST_CASE that also records the operators it covers, e.g. OPS_TEST_CASE("binary promotion", "add", "sub").
#define OPS_TEST_CASE(title, ...)                                                                  \
  [[maybe_unused]] static const bool CORETEST_CAT(coretest_registered_ops_, __LINE__) =            \
      ::coretest::register_tested_ops({__VA_ARGS__});                                              \
  TEST_CASE(title)

// CHECK that `expr` throws UserError whose message contains every given substring.
#define CHECK_USER_ERROR(call, ...)                                                               \
  do {                                                                                            \
    std::string coretest_msg_ = (call);                                                           \
    CHECK_MESSAGE(!::coretest::contains(coretest_msg_, "<no error>"), "expected a UserError");   \
    CHECK_MESSAGE(!::coretest::contains(coretest_msg_, "<other exception"), coretest_msg_);      \
    for (const char* coretest_part_ : {__VA_ARGS__})                                              \
      CHECK_MESSAGE(::coretest::contains(coretest_msg_, coretest_part_),                          \
                    "message '" << coretest_msg_ << "' lacks '" << std::string(coretest_part_) << "'");        \
  } while (0)
