// Optional header-only adapter for applications that already use LibTorch: at::Tensor <-> DLTensor views
// and thunderc::aten::run(model, tensors). libthunderc_runtime itself never includes or links LibTorch;
// only code that includes this header needs it.
//
//   thunderc::Model model("out.so");
//   std::vector<at::Tensor> outs = thunderc::aten::run(model, {torch::randn({1, 64})});
//
// Inputs are made contiguous first (a copy only when they are not). Outputs are allocated with at::empty
// on the variant's device, so they are ordinary at::Tensors owned by LibTorch. For CUDA variants the
// generated code runs on the stream it chooses; synchronise as the model's documentation says.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "thunderc/runtime.hpp"

namespace thunderc::aten {

inline DLDataType to_dl_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool: return DLDataType{THUNDERC_DL_BOOL, 8, 1};
    case at::kByte: return DLDataType{kDLUInt, 8, 1};
    case at::kChar: return DLDataType{kDLInt, 8, 1};
    case at::kShort: return DLDataType{kDLInt, 16, 1};
    case at::kInt: return DLDataType{kDLInt, 32, 1};
    case at::kLong: return DLDataType{kDLInt, 64, 1};
    case at::kHalf: return DLDataType{kDLFloat, 16, 1};
    case at::kBFloat16: return DLDataType{kDLBfloat, 16, 1};
    case at::kFloat: return DLDataType{kDLFloat, 32, 1};
    case at::kDouble: return DLDataType{kDLFloat, 64, 1};
    case at::kComplexFloat: return DLDataType{kDLComplex, 64, 1};
    case at::kComplexDouble: return DLDataType{kDLComplex, 128, 1};
    default:
      throw Error(THUNDERC_STATUS_INVALID_ARGUMENT, std::string("thunderc has no dtype for ") + at::toString(t));
  }
}

inline at::ScalarType to_scalar_type(DLDataType d) {
  const std::string n = dtype_string(d);
  if (n == "bool") return at::kBool;
  if (n == "uint8") return at::kByte;
  if (n == "int8") return at::kChar;
  if (n == "int16") return at::kShort;
  if (n == "int32") return at::kInt;
  if (n == "int64") return at::kLong;
  if (n == "float16") return at::kHalf;
  if (n == "bfloat16") return at::kBFloat16;
  if (n == "float32") return at::kFloat;
  if (n == "float64") return at::kDouble;
  if (n == "complex64") return at::kComplexFloat;
  if (n == "complex128") return at::kComplexDouble;
  throw Error(THUNDERC_STATUS_INVALID_ARGUMENT, "LibTorch has no dtype for " + n);
}

inline DLDevice to_dl_device(const at::Device& d) {
  if (d.is_cpu()) return DLDevice{kDLCPU, 0};
  if (d.is_cuda()) return DLDevice{kDLCUDA, d.has_index() ? d.index() : 0};
  throw Error(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc has no device for " + d.str());
}

inline at::Device to_device(DLDevice d) {
  if (d.device_type == kDLCPU) return at::Device(at::kCPU);
  if (d.device_type == kDLCUDA) return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d.device_id));
  throw Error(THUNDERC_STATUS_INVALID_ARGUMENT, "LibTorch has no device for DLPack device type " +
                                                   std::to_string(static_cast<int>(d.device_type)));
}

// A DLTensor viewing `t` (no copy). Valid while `t` is alive and unchanged.
inline DLTensor view(const at::Tensor& t) {
  if (!t.defined()) throw Error(THUNDERC_STATUS_INVALID_ARGUMENT, "undefined at::Tensor");
  DLTensor d{};
  d.data = t.data_ptr();
  d.device = to_dl_device(t.device());
  d.ndim = static_cast<int>(t.dim());
  d.dtype = to_dl_dtype(t.scalar_type());
  d.shape = const_cast<int64_t*>(t.sizes().data());
  d.strides = const_cast<int64_t*>(t.strides().data());
  d.byte_offset = 0;
  return d;
}

// Runs the model on at::Tensors; returns freshly allocated outputs.
inline std::vector<at::Tensor> run(Model& model, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> dense;
  dense.reserve(inputs.size());
  for (const at::Tensor& t : inputs) dense.push_back(t.defined() ? t.contiguous() : t);
  std::vector<DLTensor> in;
  in.reserve(dense.size());
  for (const at::Tensor& t : dense) in.push_back(view(t));
  const VariantInfo v = model.variant(model.select_variant(in));
  std::vector<at::Tensor> outs;
  std::vector<DLTensor> out_dl;
  outs.reserve(v.outputs.size());
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    const TensorSpec& s = v.outputs[i];
    bool symbolic = false;  // a size that depends on the inputs (--cache "symbolic values")
    for (int64_t d : s.shape) symbolic = symbolic || d < 0;
    outs.push_back(at::empty(symbolic ? model.output_shape(in, i) : s.shape,
                             at::TensorOptions().dtype(to_scalar_type(s.dtype)).device(to_device(s.device))));
  }
  for (const at::Tensor& t : outs) out_dl.push_back(view(t));
  model.run(in, out_dl);
  return outs;
}

}  // namespace thunderc::aten
