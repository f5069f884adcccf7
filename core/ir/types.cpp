#include "core/ir/types.h"

#include <charconv>
#include <cmath>

#include "core/ir/error.h"

namespace thunderc {

std::int64_t TensorType::numel() const {
  std::int64_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n)) user_error("tensor of shape ", shape_str(shape), " has more than 2^63 elements");
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string TensorType::str() const {
  return device.str() + " " + dtype_short_name(dtype) + shape_str(shape);
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  THUNDERC_CHECK(res.ec == std::errc(), "to_chars failed");
  std::string s(buf, res.ptr);
  // Keep floats recognizable as floats: "3" -> "3.0".
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

double Scalar::to_double() const {
  if (auto b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  if (auto i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  return std::get<double>(value);
}

std::int64_t Scalar::to_int() const {
  if (auto b = std::get_if<bool>(&value)) return *b ? 1 : 0;
  if (auto i = std::get_if<std::int64_t>(&value)) return *i;
  return static_cast<std::int64_t>(std::get<double>(value));
}

DType Scalar::dtype() const {
  if (is_bool()) return DType::Bool;
  if (is_int()) return DType::Int64;
  return DType::Float32;
}

std::string Scalar::str() const {
  if (auto b = std::get_if<bool>(&value)) return *b ? "True" : "False";
  if (auto i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  return format_double(std::get<double>(value));
}

}  // namespace thunderc
