// dtype / device / shape helpers.
#include <cstdlib>
#include <cstring>
#include <limits>

#include "internal.hpp"

namespace {

struct DtypeName {
  const char* name;
  DLDataType dtype;
};

constexpr DtypeName kDtypes[] = {
    {"bool", {THUNDERC_DL_BOOL, 8, 1}}, {"uint8", {kDLUInt, 8, 1}},     {"int8", {kDLInt, 8, 1}},
    {"int16", {kDLInt, 16, 1}},         {"int32", {kDLInt, 32, 1}},     {"int64", {kDLInt, 64, 1}},
    {"float16", {kDLFloat, 16, 1}},     {"bfloat16", {kDLBfloat, 16, 1}},
    {"float32", {kDLFloat, 32, 1}},     {"float64", {kDLFloat, 64, 1}},
};

}  // namespace

extern "C" {

THUNDERC_API const char* thunderc_dtype_name(DLDataType dtype) {
  for (const auto& d : kDtypes)
    if (thunderc::rt::dtype_equal(d.dtype, dtype)) return d.name;
  return nullptr;
}

THUNDERC_API int thunderc_dtype_from_name(const char* name, DLDataType* out) {
  if (!name || !out) return 0;
  for (const auto& d : kDtypes) {
    if (std::strcmp(d.name, name) == 0) {
      *out = d.dtype;
      return 1;
    }
  }
  return 0;
}

}  // extern "C"

namespace thunderc::rt {

bool dtype_equal(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string dtype_to_string(DLDataType dtype) {
  if (const char* n = thunderc_dtype_name(dtype)) return n;
  return "dtype(code=" + std::to_string(dtype.code) + ", bits=" + std::to_string(dtype.bits) +
         ", lanes=" + std::to_string(dtype.lanes) + ")";
}

std::string device_to_string(DLDevice device) {
  // A C caller may pass any int as the enum: read it as an integer (loading an out-of-range C++ enum is UB).
  int32_t type = 0;
  std::memcpy(&type, &device.device_type, sizeof type);
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda:" + std::to_string(device.device_id);
    case kDLCUDAHost:
      return "cuda_host";
    case kDLCUDAManaged:
      return "cuda_managed:" + std::to_string(device.device_id);
    default:
      return "device(type=" + std::to_string(type) +
             ", id=" + std::to_string(device.device_id) + ")";
  }
}

bool parse_device(const std::string& text, DLDevice* out) {
  if (text == "cpu") {
    *out = DLDevice{kDLCPU, 0};
    return true;
  }
  if (text == "cuda") {
    *out = DLDevice{kDLCUDA, 0};
    return true;
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 9) {
    int id = 0;
    for (size_t i = 5; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      id = id * 10 + (text[i] - '0');
    }
    *out = DLDevice{kDLCUDA, id};
    return true;
  }
  return false;
}

std::string shape_to_string(const int64_t* shape, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool dense_nbytes(const int64_t* shape, int ndim, DLDataType dtype, size_t* out) {
  size_t n = (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return false;
    const auto d = static_cast<uint64_t>(shape[i]);
    if (d != 0 && n > std::numeric_limits<size_t>::max() / d) return false;
    n *= static_cast<size_t>(d);
  }
  *out = n;
  return true;
}

bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr || t.ndim <= 0) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] == 0) return true;  // empty tensors are trivially dense
  }
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

}  // namespace thunderc::rt
