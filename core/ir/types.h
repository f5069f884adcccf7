// Types of trace values: tensors (dtype, shape, device) and scalar literals.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/ir/device.h"
#include "core/ir/dtype.h"

namespace thunderc {

using Shape = std::vector<std::int64_t>;

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  Device device;

  std::size_t rank() const { return shape.size(); }
  std::int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
  // Printed form, as in Thunder: "cpu f32[1, 3, 224, 224]".
  std::string str() const;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && shape == o.shape && device == o.device;
  }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

std::string shape_str(const Shape& shape);  // "[1, 3, 224, 224]"

// A Python number as it appears in a model: bool, int or float. Its dtype for type promotion is
// Bool, Int64 or the default float dtype (Float32), as for PyTorch's wrapped numbers.
struct Scalar {
  std::variant<bool, std::int64_t, double> value;

  Scalar() : value(std::int64_t{0}) {}
  Scalar(bool b) : value(b) {}
  Scalar(std::int64_t i) : value(i) {}
  Scalar(int i) : value(std::int64_t{i}) {}
  Scalar(double d) : value(d) {}

  bool is_bool() const { return std::holds_alternative<bool>(value); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(value); }
  bool is_float() const { return std::holds_alternative<double>(value); }
  double to_double() const;
  std::int64_t to_int() const;  // truncates floats
  DType dtype() const;          // Bool, Int64 or Float32
  std::string str() const;      // "True", "2", "0.5", "inf", "-inf", "nan"
  bool operator==(const Scalar& o) const { return value == o.value; }
};

// Shortest round-trip decimal text of a double ("1e-05", "0.5", "3.0"); deterministic across runs.
std::string format_double(double v);

}  // namespace thunderc
