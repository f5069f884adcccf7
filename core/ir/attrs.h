// Non-tensor arguments of an operation (dims, eps, strides, ...), fixed at compile time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/ir/dtype.h"

namespace thunderc {

struct None {
  bool operator==(const None&) const { return true; }
};

using IntList = std::vector<std::int64_t>;
using AttrValue = std::variant<None, bool, std::int64_t, double, std::string, IntList, DType>;

enum class AttrType { Bool, Int, Float, String, IntList, DType };
const char* attr_type_name(AttrType t);
bool attr_matches(const AttrValue& v, AttrType t, bool nullable);

// Printed form: "True", "3", "1e-05", "'tanh'" (escaped), "[1, 2]", "float32", "None".
std::string attr_str(const AttrValue& v);

// Named attributes in the order the operator declares them (so traces print stably).
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items);

  void set(const std::string& name, AttrValue v);
  bool has(const std::string& name) const;
  const AttrValue& get(const std::string& name) const;  // InternalError if absent
  bool is_none(const std::string& name) const { return std::holds_alternative<None>(get(name)); }

  std::int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;  // accepts ints too
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const IntList& get_ints(const std::string& name) const;
  DType get_dtype(const std::string& name) const;
  std::optional<std::int64_t> get_optional_int(const std::string& name) const;
  std::optional<DType> get_optional_dtype(const std::string& name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs& o) const { return items_ == o.items_; }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

// Quotes and escapes text for printing in traces and generated source: 'a\'b\n' style, ASCII only.
std::string quote_string(const std::string& s);

}  // namespace thunderc
