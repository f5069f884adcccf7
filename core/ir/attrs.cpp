#include "core/ir/attrs.h"

#include <cstdio>

#include "core/ir/error.h"
#include "core/ir/types.h"

namespace thunderc {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Bool: return "bool";
    case AttrType::Int: return "int";
    case AttrType::Float: return "float";
    case AttrType::String: return "str";
    case AttrType::IntList: return "int[]";
    case AttrType::DType: return "dtype";
  }
  return "?";
}

bool attr_matches(const AttrValue& v, AttrType t, bool nullable) {
  if (std::holds_alternative<None>(v)) return nullable;
  switch (t) {
    case AttrType::Bool: return std::holds_alternative<bool>(v);
    case AttrType::Int: return std::holds_alternative<std::int64_t>(v);
    case AttrType::Float: return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
    case AttrType::String: return std::holds_alternative<std::string>(v);
    case AttrType::IntList: return std::holds_alternative<IntList>(v);
    case AttrType::DType: return std::holds_alternative<DType>(v);
  }
  return false;
}

std::string quote_string(const std::string& s) {
  std::string out = "'";
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "'";
}

std::string attr_str(const AttrValue& v) {
  struct Visitor {
    std::string operator()(None) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const std::string& s) const { return quote_string(s); }
    std::string operator()(const IntList& l) const { return shape_str(l); }
    std::string operator()(DType d) const { return dtype_name(d); }
  };
  return std::visit(Visitor{}, v);
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  for (auto& [k, v] : items) set(k, v);
}

void Attrs::set(const std::string& name, AttrValue v) {
  for (auto& item : items_) {
    if (item.first == name) {
      item.second = std::move(v);
      return;
    }
  }
  items_.emplace_back(name, std::move(v));
}

bool Attrs::has(const std::string& name) const {
  for (auto& item : items_)
    if (item.first == name) return true;
  return false;
}

const AttrValue& Attrs::get(const std::string& name) const {
  for (auto& item : items_)
    if (item.first == name) return item.second;
  internal_error("attribute '", name, "' is missing");
}

namespace {
template <typename T>
const T& get_as(const Attrs& a, const std::string& name, const char* what) {
  const AttrValue& v = a.get(name);
  if (auto p = std::get_if<T>(&v)) return *p;
  internal_error("attribute '", name, "' is ", attr_str(v), ", expected ", what);
}
}  // namespace

std::int64_t Attrs::get_int(const std::string& name) const { return get_as<std::int64_t>(*this, name, "int"); }
double Attrs::get_float(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return get_as<double>(*this, name, "float");
}
bool Attrs::get_bool(const std::string& name) const { return get_as<bool>(*this, name, "bool"); }
const std::string& Attrs::get_string(const std::string& name) const {
  return get_as<std::string>(*this, name, "str");
}
const IntList& Attrs::get_ints(const std::string& name) const { return get_as<IntList>(*this, name, "int[]"); }
DType Attrs::get_dtype(const std::string& name) const { return get_as<DType>(*this, name, "dtype"); }
std::optional<std::int64_t> Attrs::get_optional_int(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return get_int(name);
}
std::optional<DType> Attrs::get_optional_dtype(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return get_dtype(name);
}

}  // namespace thunderc
