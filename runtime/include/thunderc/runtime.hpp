// Header-only C++17 wrapper over the C API in runtime.h: RAII model and tensors, errors as
// thunderc::Error exceptions (on the C++ side only; the library itself never throws across its API).
//
//   thunderc::Model model("out.so");
//   auto x = thunderc::HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
//   std::vector<thunderc::HostTensor> outs = model.run({x});
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "thunderc/runtime.h"
#include "thunderc/tensor.hpp"

namespace thunderc {

class Error : public std::runtime_error {
 public:
  Error(thunderc_status_code_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  thunderc_status_code_t code() const noexcept { return code_; }
  const char* code_name() const noexcept { return thunderc_status_code_name(code_); }

 private:
  thunderc_status_code_t code_;
};

// Throws Error for a non-OK status and frees it.
inline void check(thunderc_status status) {
  if (!status) return;
  Error e(thunderc_status_code(status), thunderc_status_message(status));
  thunderc_status_free(status);
  throw e;
}

// An output allocated by the runtime (owns a DLManagedTensor; calls its deleter).
class ManagedTensor {
 public:
  ManagedTensor() = default;
  explicit ManagedTensor(DLManagedTensor* t) noexcept : t_(t) {}
  ManagedTensor(ManagedTensor&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  ManagedTensor& operator=(ManagedTensor&& o) noexcept {
    if (this != &o) {
      reset();
      t_ = std::exchange(o.t_, nullptr);
    }
    return *this;
  }
  ManagedTensor(const ManagedTensor&) = delete;
  ManagedTensor& operator=(const ManagedTensor&) = delete;
  ~ManagedTensor() { reset(); }

  void reset() noexcept {
    if (t_ && t_->deleter) t_->deleter(t_);
    t_ = nullptr;
  }
  DLManagedTensor* release() noexcept { return std::exchange(t_, nullptr); }
  explicit operator bool() const noexcept { return t_ != nullptr; }
  const DLTensor& dl() const { return t_->dl_tensor; }
  std::vector<int64_t> shape() const { return std::vector<int64_t>(dl().shape, dl().shape + dl().ndim); }
  template <class T>
  const T* data() const {
    if (!dtype_equal(dtype_of<T>(), dl().dtype))
      throw std::invalid_argument("ManagedTensor holds " + dtype_string(dl().dtype) + ", accessed as " +
                                  dtype_string(dtype_of<T>()));
    return reinterpret_cast<const T*>(static_cast<const char*>(dl().data) + dl().byte_offset);
  }
  // Copies a CPU tensor into a HostTensor.
  HostTensor to_host() const {
    if (dl().device.device_type != kDLCPU) throw std::invalid_argument("ManagedTensor::to_host: not a CPU tensor");
    HostTensor h(dl().dtype, shape());
    if (h.nbytes()) std::memcpy(h.raw(), static_cast<const char*>(dl().data) + dl().byte_offset, h.nbytes());
    return h;
  }

 private:
  DLManagedTensor* t_ = nullptr;
};

struct TensorSpec {
  std::string name;
  DLDataType dtype{};
  DLDevice device{};
  std::vector<int64_t> shape;
};

struct VariantInfo {
  size_t id = 0;
  std::string entry;
  std::string signature;
  DLDevice device{};
  bool available = true;
  size_t workspace_bytes = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

struct OpenOptions {
  std::string manifest_path;  // empty: "<so without .so>.json" if present, else the embedded copy
  int32_t num_threads = 0;    // 0: $THUNDERC_NUM_THREADS, else all cores
};

class Model {
 public:
  explicit Model(const std::string& so_path, const OpenOptions& options = {}) {
    thunderc_open_options o;
    thunderc_open_options_init(&o);
    o.manifest_path = options.manifest_path.empty() ? nullptr : options.manifest_path.c_str();
    o.num_threads = options.num_threads;
    check(thunderc_model_open(so_path.c_str(), &o, &m_));
  }
  Model(Model&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Model& operator=(Model&& o) noexcept {
    if (this != &o) {
      thunderc_model_close(m_);
      m_ = std::exchange(o.m_, nullptr);
    }
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model() { thunderc_model_close(m_); }

  thunderc_model* get() const noexcept { return m_; }

  std::string path() const { return thunderc_model_path(m_); }
  std::string manifest() const {
    size_t n = 0;
    const char* p = thunderc_model_manifest(m_, &n);
    return std::string(p, n);
  }
  int32_t num_threads() const { return thunderc_model_num_threads(m_); }
  size_t num_inputs() const { return thunderc_model_num_inputs(m_); }
  size_t num_outputs() const { return thunderc_model_num_outputs(m_); }
  std::vector<std::string> input_names() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < num_inputs(); ++i) v.emplace_back(thunderc_model_input_name(m_, i));
    return v;
  }
  std::vector<std::string> output_names() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < num_outputs(); ++i) v.emplace_back(thunderc_model_output_name(m_, i));
    return v;
  }
  size_t num_variants() const { return thunderc_model_num_variants(m_); }

  VariantInfo variant(size_t index) const {
    thunderc_variant_info info{};
    check(thunderc_model_variant_info(m_, index, &info));
    VariantInfo v;
    v.id = info.id;
    v.entry = info.entry;
    v.signature = info.signature;
    v.device = info.device;
    v.available = info.available != 0;
    v.workspace_bytes = info.workspace_bytes;
    for (size_t i = 0; i < info.num_inputs; ++i) {
      thunderc_tensor_spec s{};
      check(thunderc_model_variant_input(m_, index, i, &s));
      v.inputs.push_back(spec(s));
    }
    for (size_t i = 0; i < info.num_outputs; ++i) {
      thunderc_tensor_spec s{};
      check(thunderc_model_variant_output(m_, index, i, &s));
      v.outputs.push_back(spec(s));
    }
    return v;
  }
  std::vector<VariantInfo> variants() const {
    std::vector<VariantInfo> v;
    for (size_t i = 0; i < num_variants(); ++i) v.push_back(variant(i));
    return v;
  }

  size_t select_variant(const std::vector<DLTensor>& inputs) const {
    size_t v = 0;
    check(thunderc_model_select_variant(m_, inputs.data(), inputs.size(), &v));
    return v;
  }

  // Shape of output `i` for these inputs (thunderc_model_output_shape; symbolic variants depend on them).
  std::vector<int64_t> output_shape(const std::vector<DLTensor>& inputs, size_t i) const {
    int64_t shape[64];
    int32_t ndim = 0;
    check(thunderc_model_output_shape(m_, inputs.data(), inputs.size(), i, shape, 64, &ndim));
    return std::vector<int64_t>(shape, shape + ndim);
  }

  // Caller-provided outputs (see thunderc_model_run).
  void run(const std::vector<DLTensor>& inputs, std::vector<DLTensor>& outputs) {
    check(thunderc_model_run(m_, inputs.data(), inputs.size(), outputs.data(), outputs.size()));
  }

  // Runtime-allocated outputs.
  std::vector<ManagedTensor> run_alloc(const std::vector<DLTensor>& inputs) {
    std::vector<DLManagedTensor*> raw(num_outputs(), nullptr);
    check(thunderc_model_run_alloc(m_, inputs.data(), inputs.size(), raw.data(), raw.size()));
    std::vector<ManagedTensor> out;
    out.reserve(raw.size());
    for (DLManagedTensor* t : raw) out.emplace_back(t);
    return out;
  }

  // CPU convenience: host tensors in, freshly allocated host tensors out (no copy of the outputs).
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs) {
    std::vector<DLTensor> in;
    in.reserve(inputs.size());
    for (const HostTensor& t : inputs) in.push_back(t.dl());
    const VariantInfo v = variant(select_variant(in));
    std::vector<HostTensor> outs;
    std::vector<DLTensor> out_dl;
    outs.reserve(v.outputs.size());
    for (size_t i = 0; i < v.outputs.size(); ++i) {
      const TensorSpec& s = v.outputs[i];
      bool symbolic = false;
      for (int64_t d : s.shape) symbolic = symbolic || d < 0;
      outs.emplace_back(s.dtype, symbolic ? output_shape(in, i) : s.shape);
    }
    for (HostTensor& t : outs) out_dl.push_back(t.dl());
    run(in, out_dl);
    return outs;
  }

 private:
  static TensorSpec spec(const thunderc_tensor_spec& s) {
    return TensorSpec{s.name, s.dtype, s.device, std::vector<int64_t>(s.shape, s.shape + s.ndim)};
  }

  thunderc_model* m_ = nullptr;
};

}  // namespace thunderc
