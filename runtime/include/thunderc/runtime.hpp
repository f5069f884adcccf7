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

// Options of one run (thunderc_run_options).
struct RunOptions {
  void* cuda_stream = nullptr;  // CUDA variants: the CUstream to enqueue on; nullptr: the default stream
};

// Copies `bytes` bytes of a tensor on `device` (CPU or CUDA) to host memory, after the work on `stream`.
inline void copy_to_host(DLDevice device, void* host_dst, const void* src, size_t bytes, void* stream = nullptr) {
  check(thunderc_device_copy_to_host(device, host_dst, src, bytes, stream));
}

// A dense tensor in memory of one device (CUDA device memory or host memory), from thunderc_device_alloc; move-only.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(DLDataType dtype, std::vector<int64_t> shape, DLDevice device)
      : dtype_(dtype), shape_(std::move(shape)), device_(device) {
    check(thunderc_device_alloc(device_, nbytes(), &data_));
  }
  // A copy of `h` on `device` (synchronous for the host; ordered on `stream`).
  static DeviceTensor from_host(const HostTensor& h, DLDevice device, void* stream = nullptr) {
    DeviceTensor t(h.dtype(), h.shape(), device);
    check(thunderc_device_copy_to_device(device, t.data_, h.raw(), h.nbytes(), stream));
    return t;
  }
  DeviceTensor(DeviceTensor&& o) noexcept
      : dtype_(o.dtype_), shape_(std::move(o.shape_)), device_(o.device_), data_(std::exchange(o.data_, nullptr)) {}
  DeviceTensor& operator=(DeviceTensor&& o) noexcept {
    if (this != &o) {
      reset();
      dtype_ = o.dtype_;
      shape_ = std::move(o.shape_);
      device_ = o.device_;
      data_ = std::exchange(o.data_, nullptr);
    }
    return *this;
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() { reset(); }

  // A DLTensor view (valid while this object lives).
  DLTensor dl() const {
    DLTensor t{};
    t.data = data_;
    t.device = device_;
    t.ndim = static_cast<int32_t>(shape_.size());
    t.dtype = dtype_;
    t.shape = const_cast<int64_t*>(shape_.data());
    return t;
  }
  // Waits for the work on `stream` and copies the tensor to a new host tensor.
  HostTensor to_host(void* stream = nullptr) const {
    HostTensor h(dtype_, shape_);
    if (h.nbytes()) copy_to_host(device_, h.raw(), data_, h.nbytes(), stream);
    return h;
  }
  size_t nbytes() const {
    size_t n = (static_cast<size_t>(dtype_.bits) * dtype_.lanes + 7) / 8;
    for (int64_t d : shape_) n *= static_cast<size_t>(d);
    return n;
  }
  DLDevice device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  DLDataType dtype() const { return dtype_; }
  void* data() const { return data_; }

 private:
  void reset() noexcept {
    if (data_) thunderc_status_free(thunderc_device_free(device_, data_));
    data_ = nullptr;
  }
  DLDataType dtype_{};
  std::vector<int64_t> shape_;
  DLDevice device_{kDLCPU, 0};
  void* data_ = nullptr;
};

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
  // Copies the tensor (CPU, or CUDA after the work on `stream`) into a HostTensor.
  HostTensor to_host(void* stream = nullptr) const {
    HostTensor h(dl().dtype, shape());
    const void* src = static_cast<const char*>(dl().data) + dl().byte_offset;
    if (h.nbytes() == 0) return h;
    if (dl().device.device_type == kDLCPU)
      std::memcpy(h.raw(), src, h.nbytes());
    else
      copy_to_host(dl().device, h.raw(), src, h.nbytes(), stream);
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

struct OperationProfile {
  std::string label;
  uint64_t calls = 0;
  uint64_t total_ns = 0;
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

// What one Model::forward_train saved for its backward (owns a thunderc_train_context); move-only. A context
// may be destroyed after its model.
class TrainContext {
 public:
  TrainContext() = default;
  explicit TrainContext(thunderc_train_context c) noexcept : c_(c) {}
  TrainContext(TrainContext&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  TrainContext& operator=(TrainContext&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = std::exchange(o.c_, nullptr);
    }
    return *this;
  }
  TrainContext(const TrainContext&) = delete;
  TrainContext& operator=(const TrainContext&) = delete;
  ~TrainContext() { reset(); }

  void reset() noexcept {
    thunderc_train_context_free(c_);
    c_ = nullptr;
  }
  thunderc_train_context get() const noexcept { return c_; }
  thunderc_train_context release() noexcept { return std::exchange(c_, nullptr); }
  explicit operator bool() const noexcept { return c_ != nullptr; }

 private:
  thunderc_train_context c_ = nullptr;
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
  // The level of host code that runs ("x86-64-v4"; "" when none fits): thunderc_model_cpu_target.
  std::string cpu_target() const { return thunderc_model_cpu_target(m_); }
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

  // --profile: each operation of variant `index` with its calls and nanoseconds so far (empty without).
  std::vector<OperationProfile> profile(size_t index) const {
    std::vector<OperationProfile> ops(thunderc_model_num_profiled_operations(m_, index));
    for (size_t i = 0; i < ops.size(); ++i) {
      thunderc_operation_profile p{};
      check(thunderc_model_operation_profile(m_, index, i, &p));
      ops[i] = {p.label, p.calls, p.total_ns};
    }
    return ops;
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

  // Caller-provided outputs (see thunderc_model_run). CUDA variants: device tensors in and out (DeviceTensor),
  // enqueued on options.cuda_stream.
  void run(const std::vector<DLTensor>& inputs, std::vector<DLTensor>& outputs, const RunOptions& options = {}) {
    thunderc_run_options o;
    thunderc_run_options_init(&o);
    o.cuda_stream = options.cuda_stream;
    check(thunderc_model_run_with_options(m_, inputs.data(), inputs.size(), outputs.data(), outputs.size(), &o));
  }

  // Runtime-allocated outputs (device memory for CUDA variants; ManagedTensor::to_host copies them back).
  std::vector<ManagedTensor> run_alloc(const std::vector<DLTensor>& inputs, const RunOptions& options = {}) {
    thunderc_run_options o;
    thunderc_run_options_init(&o);
    o.cuda_stream = options.cuda_stream;
    std::vector<DLManagedTensor*> raw(num_outputs(), nullptr);
    check(thunderc_model_run_alloc_with_options(m_, inputs.data(), inputs.size(), raw.data(), raw.size(), &o));
    std::vector<ManagedTensor> out;
    out.reserve(raw.size());
    for (DLManagedTensor* t : raw) out.emplace_back(t);
    return out;
  }

  // ---- training (models compiled with thunderc --autograd; see runtime.h) ----

  bool is_training() const { return thunderc_model_is_training(m_) != 0; }
  size_t num_parameters() const { return thunderc_model_num_parameters(m_); }
  std::vector<std::string> parameter_names() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < num_parameters(); ++i) v.emplace_back(thunderc_model_parameter_name(m_, i));
    return v;
  }
  // false for a buffer (batch norm's running statistics in --module-mode train): no gradient, updated by
  // every training forward.
  bool parameter_is_trainable(size_t i) const { return thunderc_model_parameter_is_trainable(m_, i) == 1; }
  // A view of parameter i's live state (valid until the model is closed): read and write it in place between
  // calls, e.g. an optimizer step (not while a call runs the model). A CUDA training model's parameters are
  // device memory, there once prepare_device or its first training call has placed them (Error before).
  DLTensor parameter(size_t i) {
    DLTensor t{};
    check(thunderc_model_parameter(m_, i, &t));
    return t;
  }
  size_t num_gradients() const { return thunderc_model_num_gradients(m_); }
  // In the order backward returns them: parameters' and --requires-grad inputs' names.
  std::vector<std::string> gradient_names() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < num_gradients(); ++i) v.emplace_back(thunderc_model_gradient_name(m_, i));
    return v;
  }
  bool gradient_is_parameter(size_t i) const { return thunderc_model_gradient_is_parameter(m_, i) == 1; }
  DLDataType gradient_dtype(size_t i) const { return thunderc_model_gradient_dtype(m_, i); }
  // Shape of gradient i for the variant that made ctx.
  std::vector<int64_t> gradient_shape(const TrainContext& ctx, size_t i) const {
    int64_t shape[64];
    int32_t ndim = 0;
    check(thunderc_model_gradient_shape(m_, ctx.get(), i, shape, 64, &ndim));
    return std::vector<int64_t>(shape, shape + ndim);
  }

  // Dropout's RNG state (see thunderc_model_forward_train_seeded): the seed and the first counter block.
  struct RngState {
    uint64_t seed = 0;
    uint64_t offset = 0;
  };
  // Caller-provided outputs (see thunderc_model_forward_train); with `rng`, dropout draws from that state
  // instead of the model's generator.
  TrainContext forward_train(const std::vector<DLTensor>& inputs, std::vector<DLTensor>& outputs,
                             const RngState* rng = nullptr) {
    thunderc_train_context c = nullptr;
    if (rng)
      check(thunderc_model_forward_train_seeded(m_, inputs.data(), inputs.size(), outputs.data(), outputs.size(),
                                                rng->seed, rng->offset, &c));
    else
      check(thunderc_model_forward_train(m_, inputs.data(), inputs.size(), outputs.data(), outputs.size(), &c));
    return TrainContext(c);
  }
  // Counter blocks one training forward of variant v draws (0: no dropout).
  uint64_t rng_blocks(size_t v) const { return thunderc_model_rng_blocks(m_, v); }
  void set_rng_state(RngState state) { check(thunderc_model_set_rng_state(m_, state.seed, state.offset)); }
  RngState rng_state() const {
    RngState r;
    check(thunderc_model_rng_state(m_, &r.seed, &r.offset));
    return r;
  }
  // Caller-provided gradients (see thunderc_model_backward).
  void backward(const TrainContext& ctx, const std::vector<DLTensor>& grad_outputs, std::vector<DLTensor>& gradients) {
    check(thunderc_model_backward(m_, ctx.get(), grad_outputs.data(), grad_outputs.size(), gradients.data(),
                                  gradients.size()));
  }

  struct ForwardTrainResult {
    std::vector<HostTensor> outputs;
    TrainContext context;
  };
  // Host tensors in, freshly allocated outputs and the context for backward out. A CUDA training model runs
  // on `device` ({kDLCUDA, n}): the inputs are copied there and the outputs back (the context's saved tensors
  // stay on the device).
  ForwardTrainResult forward_train(const std::vector<HostTensor>& inputs, const RngState* rng = nullptr,
                                   DLDevice device = DLDevice{kDLCPU, 0}) {
    ForwardTrainResult r;
    if (device.device_type == kDLCPU) {
      std::vector<DLTensor> in = dl_views(inputs);
      const VariantInfo v = variant(select_variant(in));
      r.outputs.reserve(v.outputs.size());
      for (size_t i = 0; i < v.outputs.size(); ++i)
        r.outputs.push_back(allocate(v.outputs[i].dtype, v.outputs[i].shape, "output", i, v.outputs[i].name));
      std::vector<DLTensor> out_dl;
      for (HostTensor& t : r.outputs) out_dl.push_back(t.dl());
      r.context = forward_train(in, out_dl, rng);
      return r;
    }
    std::vector<DeviceTensor> in_dev = to_device(inputs, device);
    std::vector<DLTensor> in;
    for (const DeviceTensor& t : in_dev) in.push_back(t.dl());
    const VariantInfo v = variant(select_variant(in));
    std::vector<DeviceTensor> out_dev;
    std::vector<DLTensor> out_dl;
    for (size_t i = 0; i < v.outputs.size(); ++i) out_dev.emplace_back(v.outputs[i].dtype, v.outputs[i].shape, device);
    for (const DeviceTensor& t : out_dev) out_dl.push_back(t.dl());
    r.context = forward_train(in, out_dl, rng);
    for (const DeviceTensor& t : out_dev) r.outputs.push_back(t.to_host());
    return r;
  }
  // One gradient per gradient_names() entry, allocated with the context's gradient shapes. ctx may be used again.
  // `device`: the one the context's forward ran on (the grad outputs go there, the gradients come back).
  std::vector<HostTensor> backward(const TrainContext& ctx, const std::vector<HostTensor>& grad_outputs,
                                   DLDevice device = DLDevice{kDLCPU, 0}) {
    if (device.device_type == kDLCPU) {
      std::vector<DLTensor> in = dl_views(grad_outputs);
      std::vector<HostTensor> grads;
      grads.reserve(num_gradients());
      for (size_t i = 0; i < num_gradients(); ++i)
        grads.push_back(allocate(gradient_dtype(i), gradient_shape(ctx, i), "gradient", i,
                                 thunderc_model_gradient_name(m_, i)));
      std::vector<DLTensor> out_dl;
      for (HostTensor& t : grads) out_dl.push_back(t.dl());
      backward(ctx, in, out_dl);
      return grads;
    }
    std::vector<DeviceTensor> in_dev = to_device(grad_outputs, device);
    std::vector<DLTensor> in;
    for (const DeviceTensor& t : in_dev) in.push_back(t.dl());
    std::vector<DeviceTensor> grads_dev;
    std::vector<DLTensor> out_dl;
    for (size_t i = 0; i < num_gradients(); ++i) grads_dev.emplace_back(gradient_dtype(i), gradient_shape(ctx, i), device);
    for (const DeviceTensor& t : grads_dev) out_dl.push_back(t.dl());
    backward(ctx, in, out_dl);
    std::vector<HostTensor> grads;
    for (const DeviceTensor& t : grads_dev) grads.push_back(t.to_host());
    return grads;
  }

  // ---- optimizer (thunderc --autograd --optimizer sgd|adamw; see runtime.h) ----
  // "sgd", "adamw", or "" for a model without one.
  std::string optimizer() const {
    const char* k = thunderc_model_optimizer(m_);
    return k ? k : "";
  }
  // torch.optim's defaults for the model's optimizer.
  thunderc_optimizer_options optimizer_options() const {
    thunderc_optimizer_options o{};
    check(thunderc_model_optimizer_options_init(m_, &o));
    return o;
  }
  // One update in place from every gradient backward wrote (caller's DLTensors, on the parameters' device).
  void optimizer_step(const std::vector<DLTensor>& gradients, const thunderc_optimizer_options& options) {
    check(thunderc_model_optimizer_step(m_, gradients.data(), gradients.size(), &options));
  }
  // Host gradients (as backward(ctx, grad_outputs, device) returns them), copied to `device` first for a CUDA model.
  void optimizer_step(const std::vector<HostTensor>& gradients, const thunderc_optimizer_options& options,
                      DLDevice device = DLDevice{kDLCPU, 0}) {
    if (device.device_type == kDLCPU) return optimizer_step(dl_views(gradients), options);
    std::vector<DeviceTensor> on_device = to_device(gradients, device);
    std::vector<DLTensor> dl;
    for (const DeviceTensor& t : on_device) dl.push_back(t.dl());
    optimizer_step(dl, options);
  }
  uint64_t optimizer_steps() const { return thunderc_model_optimizer_steps(m_); }
  void set_optimizer_steps(uint64_t steps) { check(thunderc_model_set_optimizer_steps(m_, steps)); }
  // State slot `slot` of trainable parameter `parameter` (a view, on the parameters' device).
  DLTensor optimizer_state(size_t parameter, size_t slot) {
    DLTensor t{};
    check(thunderc_model_optimizer_state(m_, parameter, slot, &t));
    return t;
  }

  // Sets up CUDA device `device` now (as the first run there would); returns the image loaded ("sm_90 cubin").
  std::string prepare_device(DLDevice device) {
    const char* image = nullptr;
    check(thunderc_model_prepare_device(m_, device, &image));
    return image ? image : "";
  }

  // CPU convenience: host tensors in, freshly allocated host tensors out (no copy of the outputs). For CUDA
  // variants use DeviceTensor::from_host and run_alloc. An output that cannot be allocated is an Error with
  // THUNDERC_STATUS_OUT_OF_MEMORY (never std::bad_alloc).
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
      outs.push_back(allocate(s.dtype, symbolic ? output_shape(in, i) : s.shape, "output", i, s.name));
    }
    for (HostTensor& t : outs) out_dl.push_back(t.dl());
    run(in, out_dl);
    return outs;
  }

 private:
  static std::vector<DeviceTensor> to_device(const std::vector<HostTensor>& tensors, DLDevice device) {
    std::vector<DeviceTensor> v;
    v.reserve(tensors.size());
    for (const HostTensor& t : tensors) v.push_back(DeviceTensor::from_host(t, device));
    return v;
  }
  static std::vector<DLTensor> dl_views(const std::vector<HostTensor>& tensors) {
    std::vector<DLTensor> v;
    v.reserve(tensors.size());
    for (const HostTensor& t : tensors) v.push_back(t.dl());
    return v;
  }
  // A host tensor for a result; an allocation failure is an Error with THUNDERC_STATUS_OUT_OF_MEMORY.
  static HostTensor allocate(DLDataType dtype, std::vector<int64_t> shape, const char* what, size_t i,
                             const std::string& name) {
    try {
      return HostTensor(dtype, std::move(shape));
    } catch (const std::bad_alloc&) {
      throw Error(THUNDERC_STATUS_OUT_OF_MEMORY, std::string("out of memory allocating ") + what + " " +
                                                      std::to_string(i) + " (" + name + ")");
    } catch (const std::length_error&) {
      throw Error(THUNDERC_STATUS_OUT_OF_MEMORY, std::string(what) + " " + std::to_string(i) + " (" + name +
                                                      ") is too large to allocate (its byte size overflows)");
    }
  }
  static TensorSpec spec(const thunderc_tensor_spec& s) {
    return TensorSpec{s.name, s.dtype, s.device, std::vector<int64_t>(s.shape, s.shape + s.ndim)};
  }

  thunderc_model* m_ = nullptr;
};

}  // namespace thunderc
