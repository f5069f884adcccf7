#include "core/frontend/shape_spec.h"

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

Shape parse_dims(const std::string& text, const std::string& flag) {
  Shape shape;
  if (text.empty()) return shape;
  for (const std::string& d : split(text, 'x')) {
    bool digits = !d.empty() && d.size() <= 12;
    for (char c : d) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits)
      user_error("--shapes '", flag, "': '", text, "' is not a shape like 1x3x224x224 (each dimension a number)");
    shape.push_back(std::stoll(d));
  }
  return shape;
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
    in.shape = parse_dims(rest, text);
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
    for (std::size_t i = 0; i < in.shape.size(); ++i) s += (i ? "x" : "") + std::to_string(in.shape[i]);
    if (in.dtype) s += std::string(":") + dtype_name(*in.dtype);
  }
  return s;
}

}  // namespace thunderc
