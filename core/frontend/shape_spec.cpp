#include "core/frontend/shape_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

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
  bool digits = !d.empty();
  for (char c : d) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  return digits;
}

// The value of a string of digits, or nullopt beyond int64.
std::optional<std::int64_t> to_int64(const std::string& d) {
  std::int64_t v = 0;
  for (char c : d)
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return std::nullopt;
  return v;
}

std::string quoted(const std::string& text) {
  // Control characters escaped, long text cut (a flag value is echoed in messages).
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 200; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > 200) out += "... (" + std::to_string(text.size()) + " characters)";
  return "'" + out + "'";
}

// Dimensions separated by 'x'; a dimension is a number or a symbol. A symbol may not contain 'x' (it
// separates dimensions), so "Bx64" is B by 64. "scalar" is the 0-dim shape.
void parse_dims(const std::string& text, const std::string& flag, InputShape& in) {
  if (text == "scalar") return;
  if (text.empty())
    user_error("--shapes ", quoted(flag), ": the shape of ", in.name.empty() ? "the input" : "input " + quoted(in.name),
               " is empty; write ", in.name.empty() ? "" : in.name + "=", "scalar for a 0-dim input, or its "
               "dimensions like 1x64");
  std::vector<std::string> symbols;
  bool any_symbol = false;
  for (const std::string& d : split(text, 'x')) {
    if (is_number(d)) {
      std::optional<std::int64_t> v = to_int64(d);
      if (!v || static_cast<std::uint64_t>(*v) > kMaxTensorBytes)
        user_error("--shapes ", quoted(flag), ": dimension ", quoted(d), " is too large (a tensor may hold at most ",
                   max_tensor_bytes_text(), ")");
      in.shape.push_back(*v);
      symbols.emplace_back();
    } else if (is_identifier(d)) {
      in.shape.push_back(0);
      symbols.push_back(d);
      any_symbol = true;
    } else {
      user_error("--shapes ", quoted(flag), ": ", quoted(text),
                 " is not a shape like 1x3x224x224 (each dimension a number, or a symbol such as B with --dim)");
    }
  }
  if (any_symbol) {
    in.symbols = std::move(symbols);
    return;
  }
  const std::size_t element = in.dtype ? dtype_size(*in.dtype) : 1;
  std::optional<std::uint64_t> bytes = checked_tensor_bytes(in.shape, element);
  if (!bytes || *bytes > kMaxTensorBytes)
    user_error("--shapes ", quoted(flag), ": ", in.name.empty() ? "the input" : "input " + quoted(in.name), " of shape ",
               text, " would take ", bytes_text(bytes), "; thunderc refuses tensors above ", max_tensor_bytes_text());
}
}  // namespace

std::optional<std::uint64_t> checked_tensor_bytes(const Shape& shape, std::size_t element_size) {
  std::uint64_t n = element_size;
  for (std::int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

std::string max_tensor_bytes_text() { return "1 TiB (2^40 bytes)"; }

std::string bytes_text(std::optional<std::uint64_t> bytes) {
  if (!bytes) return "more than 2^64 bytes";
  char buf[64];
  if (*bytes < 1000000) std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(*bytes));
  else std::snprintf(buf, sizeof buf, "%.3g bytes", static_cast<double>(*bytes));
  return buf;
}

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
      if (in.name.empty()) user_error("--shapes ", quoted(text), ": an input name is missing before '='");
    }
    auto colon = rest.find(':');
    if (colon != std::string::npos) {
      std::string dt = rest.substr(colon + 1);
      in.dtype = parse_dtype(dt);
      if (!in.dtype) user_error("--shapes ", quoted(text), ": unknown dtype ", quoted(dt), " (try float32, float16, int64, bool)");
      rest = rest.substr(0, colon);
    }
    if (in.name.empty() && rest.empty()) user_error("--shapes ", quoted(text), ": empty item");
    parse_dims(rest, text, in);
    for (const InputShape& other : spec)
      if (other.name == in.name)
        user_error("--shapes ", quoted(text), ": ", in.name.empty() ? "more than one unnamed shape (name the inputs: x=...)"
                                                                    : "input " + quoted(in.name) + " is given twice");
    spec.push_back(std::move(in));
  }
  return spec;
}

std::string specialization_str(const Specialization& spec) {
  std::string s;
  for (const InputShape& in : spec) {
    if (!s.empty()) s += ",";
    if (!in.name.empty()) s += in.name + "=";
    if (in.shape.empty()) s += "scalar";
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
    user_error("--dim ", quoted(text), ": expected NAME=LO:HI, e.g. --dim B=1:32");
  r.name = text.substr(0, eq);
  std::string lo = text.substr(eq + 1, colon - eq - 1), hi = text.substr(colon + 1);
  if (!is_identifier(r.name) || r.name.find('x') != std::string::npos)
    user_error("--dim ", quoted(text), ": ", quoted(r.name), " is not a symbol name (letters, digits, _; no 'x', which separates "
               "dimensions in --shapes)");
  if (!is_number(lo) || !is_number(hi))
    user_error("--dim ", quoted(text), ": LO and HI must be numbers, e.g. --dim ", r.name, "=1:32");
  std::optional<std::int64_t> l = to_int64(lo), h = to_int64(hi);
  if (!l || !h || static_cast<std::uint64_t>(*h) > kMaxTensorBytes)
    user_error("--dim ", quoted(text), ": ", quoted(!l ? lo : hi), " is too large (a tensor may hold at most ",
               max_tensor_bytes_text(), ")");
  r.lo = *l;
  r.hi = *h;
  if (r.lo < 1 || r.hi <= r.lo)
    user_error("--dim ", quoted(text), ": the range must satisfy 1 <= LO < HI, got ", r.lo, ":", r.hi);
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

std::vector<InputShape> match_input_shapes(const std::string& path, const std::vector<std::string>& names,
                                           const Specialization& spec, const std::string& takes) {
  std::string expected;
  for (const auto& n : names) expected += (expected.empty() ? "" : ", ") + n;
  std::vector<std::optional<InputShape>> given(names.size());
  for (const InputShape& s : spec) {
    std::size_t index = names.size();
    if (s.name.empty()) {
      if (names.size() != 1 || spec.size() != 1)
        user_error(path, ": the model has ", names.size(), " inputs (", expected,
                   "); name each in --shapes, e.g. --shapes ", names.empty() ? "x" : names[0], "=1x3x224x224");
      index = 0;
    } else {
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == s.name) index = i;
      if (index == names.size()) user_error(path, ": --shapes names input '", s.name, "', but ", takes, " takes: ", expected);
    }
    given[index] = s;
  }
  std::vector<InputShape> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!given[i]) user_error(path, ": --shapes does not give a shape for input '", names[i], "' (inputs: ", expected, ")");
    out.push_back(*given[i]);
  }
  return out;
}

}  // namespace thunderc
