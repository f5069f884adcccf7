#include "core/frontend/shape_spec.h"

#include <algorithm>
#include <cctype>

#include "core/ir/error.h"

namespace thunderc {

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

bool is_identifier(const std::string& d) {
  if (d.empty() || !(std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_')) return false;
  for (char c : d)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool is_number(const std::string& d) {
  bool digits = !d.empty() && d.size() <= 12;
  for (char c : d) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  return digits;
}

// Dimensions separated by 'x'; a dimension is a number or a symbol. A symbol may not contain 'x' (it
// separates dimensions), so "Bx64" is B by 64.
void parse_dims(const std::string& text, const std::string& flag, InputShape& in) {
  if (text.empty()) return;
  std::vector<std::string> symbols;
  bool any_symbol = false;
  for (const std::string& d : split(text, 'x')) {
    if (is_number(d)) {
      in.shape.push_back(std::stoll(d));
      symbols.emplace_back();
    } else if (is_identifier(d)) {
      in.shape.push_back(0);
      symbols.push_back(d);
      any_symbol = true;
    } else {
      user_error("--shapes '", flag, "': '", text,
                 "' is not a shape like 1x3x224x224 (each dimension a number, or a symbol such as B with --dim)");
    }
  }
  if (any_symbol) in.symbols = std::move(symbols);
}
}  // namespace

Specialization parse_shapes_flag(const std::string& text) {
  if (text.empty()) user_error("--shapes needs a value such as x=1x3x224x224 or 1x3x224x224");
  Specialization spec;
  for (const std::string& item : split(text, ',')) {
    InputShape in;
    std::string rest = item;
    auto eq = item.find('=');
    if (eq != std::string::npos) {
      in.name = item.substr(0, eq);
      rest = item.substr(eq + 1);
      if (in.name.empty()) user_error("--shapes '", text, "': an input name is missing before '='");
    }
    auto colon = rest.find(':');
    if (colon != std::string::npos) {
      std::string dt = rest.substr(colon + 1);
      in.dtype = parse_dtype(dt);
      if (!in.dtype) user_error("--shapes '", text, "': unknown dtype '", dt, "' (try float32, float16, int64, bool)");
      rest = rest.substr(0, colon);
    }
    if (in.name.empty() && rest.empty()) user_error("--shapes '", text, "': empty item");
    parse_dims(rest, text, in);
    for (const InputShape& other : spec)
      if (other.name == in.name)
        user_error("--shapes '", text, "': ", in.name.empty() ? "more than one unnamed shape (name the inputs: x=...)"
                                                              : "input '" + in.name + "' is given twice");
    spec.push_back(std::move(in));
  }
  return spec;
}

std::string specialization_str(const Specialization& spec) {
  std::string s;
  for (const InputShape& in : spec) {
    if (!s.empty()) s += ",";
    if (!in.name.empty()) s += in.name + "=";
    for (std::size_t i = 0; i < in.shape.size(); ++i)
      s += (i ? "x" : "") + (i < in.symbols.size() && !in.symbols[i].empty() ? in.symbols[i] : std::to_string(in.shape[i]));
    if (in.dtype) s += std::string(":") + dtype_name(*in.dtype);
  }
  return s;
}

DimRange parse_dim_flag(const std::string& text) {
  DimRange r;
  auto eq = text.find('=');
  auto colon = text.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || colon == std::string::npos)
    user_error("--dim '", text, "': expected NAME=LO:HI, e.g. --dim B=1:32");
  r.name = text.substr(0, eq);
  std::string lo = text.substr(eq + 1, colon - eq - 1), hi = text.substr(colon + 1);
  if (!is_identifier(r.name) || r.name.find('x') != std::string::npos)
    user_error("--dim '", text, "': '", r.name, "' is not a symbol name (letters, digits, _; no 'x', which separates "
               "dimensions in --shapes)");
  if (!is_number(lo) || !is_number(hi))
    user_error("--dim '", text, "': LO and HI must be numbers, e.g. --dim ", r.name, "=1:32");
  r.lo = std::stoll(lo);
  r.hi = std::stoll(hi);
  if (r.lo < 1 || r.hi <= r.lo)
    user_error("--dim '", text, "': the range must satisfy 1 <= LO < HI, got ", r.lo, ":", r.hi);
  return r;
}

std::vector<std::string> spec_symbols(const Specialization& spec) {
  std::vector<std::string> names;
  for (const InputShape& in : spec)
    for (const std::string& s : in.symbols)
      if (!s.empty() && std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
  return names;
}

Specialization bind_symbols(const Specialization& spec, const std::vector<std::string>& names,
                            const std::vector<std::int64_t>& values) {
  Specialization out = spec;
  for (InputShape& in : out) {
    for (std::size_t d = 0; d < in.symbols.size(); ++d) {
      if (in.symbols[d].empty()) continue;
      auto it = std::find(names.begin(), names.end(), in.symbols[d]);
      THUNDERC_CHECK(it != names.end(), "symbol ", in.symbols[d], " has no value");
      in.shape[d] = values[static_cast<std::size_t>(it - names.begin())];
    }
    in.symbols.clear();
  }
  return out;
}

}  // namespace thunderc
