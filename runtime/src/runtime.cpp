// libthunderc_runtime: the C API (runtime.h) on top of the loader, manifest checks and dispatcher.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <fstream>
#include <functional>
#include <atomic>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>

#include "cuda_exec.hpp"
#include "cpu_isa.hpp"
#include "internal.hpp"

#ifndef THUNDERC_RUNTIME_VERSION_STRING
#define THUNDERC_RUNTIME_VERSION_STRING "0.1.0"
#endif

using namespace thunderc::rt;

// ---- status ---------------------------------------------------------------------------------------

struct thunderc_status_s {
  thunderc_status_code_t code;
  std::string message;
  bool is_static;
};

namespace {

// Returned when even the status itself cannot be allocated; freeing it is a no-op.
thunderc_status_s g_oom_status{THUNDERC_STATUS_OUT_OF_MEMORY, "out of memory", true};

thunderc_status make_status(thunderc_status_code_t code, const std::string& message) noexcept {
  try {
    return new thunderc_status_s{code, message, false};
  } catch (...) {
    return &g_oom_status;
  }
}

std::string basename_of(const std::string& path) {
  const auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

// A few elements on the stack, more on the heap: per-call bookkeeping without allocation in the common case.
template <class T, size_t N = 8>
class SmallVec {
 public:
  explicit SmallVec(size_t n) : n_(n) {
    if (n > N) heap_.resize(n);
  }
  T* data() { return n_ > N ? heap_.data() : stack_.data(); }
  T& operator[](size_t i) { return data()[i]; }

 private:
  size_t n_;
  std::array<T, N> stack_{};
  std::vector<T> heap_;
};

constexpr size_t kAlign = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// NULL when the memory is not there or the size, rounded up, would not fit a size_t.
void* host_alloc(size_t bytes) {
  if (bytes > std::numeric_limits<size_t>::max() - kAlign) return nullptr;
  return std::aligned_alloc(kAlign, round_up(bytes == 0 ? 1 : bytes));
}

}  // namespace

thunderc_status thunderc::rt::make_api_status(thunderc_status_code_t code, const char* message) noexcept {
  try {
    return make_status(code, message);
  } catch (...) {
    return &g_oom_status;
  }
}

// ---- model ----------------------------------------------------------------------------------------

struct thunderc_model {
  std::string path;
  std::string name;  // basename of path, for messages
  std::string manifest_text;
  void* handle = nullptr;
  Manifest manifest;
  int32_t num_threads = 1;
  // The level of the host code that runs (options.cpu_targets, THUNDERC_MAX_CPU_TARGET); "" when none can.
  std::string cpu_target;
  // Cache modes: the variant the last call used (constant values: tried first; same input: reused
  // without checks once set). -1: none yet.
  mutable std::atomic<long> memo{-1};

  // --profile: per variant, its operations' labels and counters as the .so's thunderc_profile gave them at
  // open (empty for a model compiled without --profile).
  struct ProfiledVariant {
    const char* const* labels = nullptr;
    uint64_t* counters = nullptr;
    size_t operations = 0;
  };
  std::vector<ProfiledVariant> profile;

  // Workspace pool of the CPU variants: free buffers per entry, reused across calls (thread-safe). Slot v is
  // variant v's (forward) entry; in a training model, slot num_variants + v is its backward entry.
  std::mutex pool_mutex;
  std::vector<std::vector<void*>> free_workspaces;
  // The CUDA side (module, per-device state, workspace pools per stream); NULL without CUDA variants.
  std::unique_ptr<CudaModel> cuda;
  // Training models: the live parameters, one buffer per training.parameters entry on parameter_device
  // (initialised from thunderc_parameters' blob at open), and DLTensor views of them (shape: the manifest's).
  // A CUDA training model's parameters start as host buffers holding the initial values and move to the
  // device of its first training call or thunderc_model_prepare_device (place_parameters); they stay there.
  // `placed` is false until then (thunderc_model_parameter refuses), and is set, with the views rewritten,
  // under placement_mutex.
  std::vector<void*> parameters;
  std::vector<DLTensor> parameter_tensors;
  DLDevice parameter_device{kDLCPU, 0};
  std::atomic<bool> placed{true};
  std::mutex placement_mutex;
  // --optimizer: the state (slot-major: every trainable parameter's slot 0, then slot 1), zero-filled where the
  // parameters are once they are there; the trainable parameters' indices; steps taken; and the
  // hyperparameters of one step (host floats, and on CUDA a device copy the update reads).
  std::vector<void*> optimizer_state;
  std::vector<DLTensor> optimizer_state_tensors;
  std::vector<size_t> trainable;
  std::vector<size_t> trainable_gradient;  // training.gradients index of each trainable parameter's gradient
  uint64_t optimizer_steps = 0;
  std::vector<float> optimizer_scalars;
  void* optimizer_scalars_device = nullptr;
  std::vector<int64_t> scalar_shape;  // 0-d: no extents (a shape pointer for the scalars' views)
  // Dropout's generator (thunderc_model_set_rng_state): the seed, and the next call's first counter block.
  // A training forward without explicit (seed, offset) takes its blocks with one fetch_add, so concurrent
  // calls draw disjoint numbers.
  std::atomic<uint64_t> rng_seed{0};
  std::atomic<uint64_t> rng_offset{0};

  ~thunderc_model() {
    for (size_t slot = 0; slot < free_workspaces.size(); ++slot) {
      const DLDevice device = manifest.variants[slot % manifest.variants.size()].device;
      for (void* p : free_workspaces[slot]) release_buffer(device, p);
    }
    for (void* p : parameters) release_buffer(parameter_device, p);
    for (void* p : optimizer_state) release_buffer(parameter_device, p);
    if (optimizer_scalars_device) release_buffer(parameter_device, optimizer_scalars_device);
    cuda.reset();  // before dlclose: its images live in the .so
    if (handle) dlclose(handle);
  }

  static void release_buffer(DLDevice device, void* p) {
    if (device.device_type == kDLCUDA)
      cuda_free(device.device_id, p);
    else
      std::free(p);
  }

  static void* acquire_buffer(DLDevice device, size_t bytes, const char* what) {
    void* p = nullptr;
    if (device.device_type == kDLCUDA) {
      std::string err;
      p = cuda_alloc(device.device_id, bytes, &err);
      if (!p) fail(THUNDERC_STATUS_OUT_OF_MEMORY, std::string("cannot allocate ") + std::to_string(bytes) +
                                                        " bytes of " + what + " on " + device_to_string(device) +
                                                        ": " + err);
    } else {
      p = host_alloc(bytes);
      if (!p) fail(THUNDERC_STATUS_OUT_OF_MEMORY, std::string("cannot allocate ") + std::to_string(bytes) +
                                                        " bytes of " + what);
    }
    return p;
  }
};

namespace {

// A model's OpenMP loops start libgomp's thread pool (OpenBLAS's OpenMP build shares it). When the host
// program does not link libgomp itself, the model brought it in, and closing the model would unload it under
// its parked threads, which then crash (SIGSEGV at exit). Pin it: once loaded, it stays for the process.
void pin_thread_runtimes() {
  if (void* h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);  // drops only this reference
}

// A workspace buffer of `bytes` bytes on `device` borrowed from the model's pool slot `slot` for one call
// (every buffer of a slot has the same size).
class WorkspaceLease {
 public:
  WorkspaceLease(thunderc_model* m, size_t slot, size_t bytes, DLDevice device) : m_(m), slot_(slot), device_(device) {
    if (bytes == 0 || device.device_type == kDLCUDA) return;  // CUDA: CudaModel's pools
    {
      std::lock_guard<std::mutex> lock(m->pool_mutex);
      auto& list = m->free_workspaces[slot];
      if (!list.empty()) {
        ptr_ = list.back();
        list.pop_back();
        return;
      }
    }
    ptr_ = thunderc_model::acquire_buffer(device, bytes, "workspace");
  }
  ~WorkspaceLease() {
    if (!ptr_) return;
    try {
      std::lock_guard<std::mutex> lock(m_->pool_mutex);
      m_->free_workspaces[slot_].push_back(ptr_);
    } catch (...) {
      thunderc_model::release_buffer(device_, ptr_);
    }
  }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  void* get() const { return ptr_; }

 private:
  thunderc_model* m_;
  size_t slot_;
  DLDevice device_;
  void* ptr_ = nullptr;
};

// Buffers on one device (host: 64-byte aligned) freed together when the object goes: a training forward's
// scratch (saved tensors nobody keeps, buffers' new values). On CUDA the owner synchronizes the stream that
// used them before they go.
class ScratchBuffers {
 public:
  explicit ScratchBuffers(DLDevice device) : device_(device) {}
  ~ScratchBuffers() {
    for (void* p : ptrs_) thunderc_model::release_buffer(device_, p);
  }
  ScratchBuffers(const ScratchBuffers&) = delete;
  ScratchBuffers& operator=(const ScratchBuffers&) = delete;
  void* alloc(size_t bytes, const char* what) {
    ptrs_.reserve(ptrs_.size() + 1);  // so that push_back cannot throw and leak the buffer
    void* p = thunderc_model::acquire_buffer(device_, bytes, what);
    ptrs_.push_back(p);
    return p;
  }

 private:
  DLDevice device_;
  std::vector<void*> ptrs_;
};

// A dense host tensor view of `data` (shape owned by the caller, e.g. the manifest).
DLTensor host_view(void* data, DLDataType dtype, const std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = const_cast<int64_t*>(shape.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    fail(err == ENOENT ? THUNDERC_STATUS_NOT_FOUND : THUNDERC_STATUS_IO,
         "cannot read manifest '" + path + "': " + std::strerror(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(THUNDERC_STATUS_IO, "cannot read manifest '" + path + "'");
  return ss.str();
}

bool file_exists(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return static_cast<bool>(in);
}

int32_t resolve_num_threads(int32_t requested) {
  if (requested < 0)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, "num_threads must be >= 0, got " + std::to_string(requested));
  if (requested > 0) return requested;
  if (const char* env = std::getenv("THUNDERC_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(env, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0 || v > 65536)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT,
           std::string("THUNDERC_NUM_THREADS='") + env + "' is not a positive integer");
    return static_cast<int32_t>(v);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int32_t>(hw);
}

// The model's export `name` as an F; where it is missing, fails with `code` and "'PATH' <what> (<dlerror>)".
template <typename F>
F required_symbol(const thunderc_model& m, const std::string& name, thunderc_status_code_t code,
                  const std::string& what) {
  dlerror();
  const auto f = reinterpret_cast<F>(dlsym(m.handle, name.c_str()));
  if (!f) {
    const char* e = dlerror();
    fail(code, "'" + m.path + "' " + what + " (" + (e ? e : "symbol not found") + ")");
  }
  return f;
}

// A training model's parameters: thunderc_parameters' blob must hold every one; each gets a buffer of its own.
void load_parameters(thunderc_model* m) {
  const auto params_fn = required_symbol<thunderc_parameters_fn>(
      *m, "thunderc_parameters", THUNDERC_STATUS_MANIFEST,
      "has a training manifest (thunderc --autograd) but does not export thunderc_parameters, which holds the "
      "parameters' initial values");
  size_t len = 0;
  const unsigned char* blob = params_fn(&len);
  if (!blob && len > 0)
    fail(THUNDERC_STATUS_MANIFEST, "'" + m->path + "': thunderc_parameters returned NULL with length " +
                                       std::to_string(len));
  const std::vector<ParameterDesc>& params = m->manifest.training.parameters;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParameterDesc& p = params[i];
    if (p.offset > len || p.bytes > len - p.offset)
      fail(THUNDERC_STATUS_MANIFEST, "manifest of '" + m->path + "': training.parameters[" + std::to_string(i) +
                                         "] ('" + p.name + "'): bytes [" + std::to_string(p.offset) + ", " +
                                         std::to_string(p.offset + p.bytes) + ") lie outside the parameter blob, "
                                         "which thunderc_parameters says is " + std::to_string(len) + " bytes long");
  }
  m->parameters.reserve(params.size());
  m->parameter_tensors.reserve(params.size());
  for (const ParameterDesc& p : params) {
    void* data = thunderc_model::acquire_buffer(DLDevice{kDLCPU, 0}, p.bytes, "parameter");
    m->parameters.push_back(data);  // reserved: cannot throw
    if (p.bytes) std::memcpy(data, blob + p.offset, p.bytes);
    m->parameter_tensors.push_back(host_view(data, p.dtype, p.shape));
  }
  // A CUDA training model (every variant of a training model is on one device kind): the parameters move to
  // a device later (place_parameters).
  if (!m->manifest.variants.empty() && m->manifest.variants[0].device.device_type == kDLCUDA) m->placed = false;
}

// --optimizer's state on the parameters' device, zero-filled (at open on the CPU; at placement on CUDA).
void allocate_optimizer_state(thunderc_model* m, DLDevice device) {
  const std::optional<OptimizerDesc>& o = m->manifest.training.optimizer;
  if (!o) return;
  const std::vector<ParameterDesc>& params = m->manifest.training.parameters;
  m->trainable.clear();
  m->trainable_gradient.clear();
  const std::vector<GradientDesc>& grads = m->manifest.training.gradients;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].trainable) continue;
    size_t gi = 0;  // the manifest's validation gives every trainable parameter exactly one gradient
    while (gi < grads.size() && !(grads[gi].is_parameter && grads[gi].index == i)) ++gi;
    if (gi == grads.size()) fail(THUNDERC_STATUS_INTERNAL, "bug: trainable parameter '" + params[i].name + "' has no gradient");
    m->trainable.push_back(i);
    m->trainable_gradient.push_back(gi);
  }
  std::vector<void*> state;
  void* scalars = nullptr;
  try {
    for (size_t s = 0; s < o->state.size(); ++s)
      for (size_t i : m->trainable) {
        const ParameterDesc& p = params[i];
        state.push_back(thunderc_model::acquire_buffer(device, p.bytes, "optimizer state"));
        if (device.device_type == kDLCUDA) {
          const std::vector<unsigned char> zeros(p.bytes, 0);
          cuda_copy_to_device(device.device_id, state.back(), zeros.data(), p.bytes, "zeroing the optimizer state",
                              m->name);
        } else if (p.bytes) {
          std::memset(state.back(), 0, p.bytes);
        }
      }
    if (device.device_type == kDLCUDA)
      scalars = thunderc_model::acquire_buffer(device, o->scalars.size() * sizeof(float), "optimizer hyperparameters");
  } catch (...) {
    for (void* p : state) thunderc_model::release_buffer(device, p);
    throw;
  }
  m->optimizer_state = std::move(state);
  m->optimizer_scalars_device = scalars;
  m->optimizer_scalars.assign(o->scalars.size(), 0.0f);
  m->optimizer_state_tensors.clear();
  for (size_t s = 0; s < o->state.size(); ++s)
    for (size_t k = 0; k < m->trainable.size(); ++k) {
      const ParameterDesc& p = params[m->trainable[k]];
      DLTensor t = host_view(m->optimizer_state[s * m->trainable.size() + k], p.dtype, p.shape);
      t.device = device;
      m->optimizer_state_tensors.push_back(t);
    }
}

// A CUDA training model's parameters go to `device` the first time it is prepared or runs there (the host
// copies, initial values, are freed), and stay on it: a call on another CUDA device is INVALID_ARGUMENT. A
// no-op for a CPU training model.
void place_parameters(thunderc_model* m, DLDevice device) {
  if (!m->manifest.is_training() || device.device_type != kDLCUDA) return;
  auto elsewhere = [&] {
    if (m->parameter_device.device_id != device.device_id)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT,
           m->name + " is a training model whose parameters live on " + device_to_string(m->parameter_device) +
               " (where it was first prepared or run); this call's tensors are on " + device_to_string(device) +
               ". A training model keeps its parameters on one device: open the model once per device");
  };
  if (m->placed.load(std::memory_order_acquire)) return elsewhere();
  std::lock_guard<std::mutex> lock(m->placement_mutex);
  if (m->placed.load(std::memory_order_acquire)) return elsewhere();
  const std::vector<ParameterDesc>& params = m->manifest.training.parameters;
  std::vector<void*> on_device;
  on_device.reserve(params.size());
  try {
    for (size_t i = 0; i < params.size(); ++i) {
      on_device.push_back(thunderc_model::acquire_buffer(device, params[i].bytes, "parameter"));
      cuda_copy_to_device(device.device_id, on_device.back(), m->parameters[i], params[i].bytes,
                          "uploading the parameters", m->name);
    }
    allocate_optimizer_state(m, device);  // last: nothing after it can fail
  } catch (...) {
    for (void* p : on_device) thunderc_model::release_buffer(device, p);
    throw;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    std::free(m->parameters[i]);
    m->parameters[i] = on_device[i];
    m->parameter_tensors[i].data = on_device[i];
    m->parameter_tensors[i].device = device;
  }
  m->parameter_device = device;
  m->placed.store(true, std::memory_order_release);
}

// thunderc_model_parameter and friends: a CUDA training model's parameters exist only once placed.
void require_placed(const thunderc_model* m, const char* fn) {
  if (!m->placed.load(std::memory_order_acquire))
    fail(THUNDERC_STATUS_INVALID_ARGUMENT,
         std::string(fn) + ": " + m->name + " is a CUDA training model whose parameters are not on a device yet; "
                           "call thunderc_model_prepare_device(model, {kDLCUDA, ordinal}, NULL) first (or run it "
                           "once): they move there and stay");
}

void open_impl(const char* so_path, const thunderc_open_options* options, thunderc_model** out_model) {
  if (!out_model) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_open: out_model is NULL");
  *out_model = nullptr;
  if (!so_path || !*so_path) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_open: so_path is NULL or empty");

  thunderc_open_options opts;
  thunderc_open_options_init(&opts);
  if (options) {
    const size_t min_size = offsetof(thunderc_open_options, manifest_path) + sizeof(opts.manifest_path);
    if (options->struct_size < min_size || options->struct_size > sizeof(thunderc_open_options))
      fail(THUNDERC_STATUS_INVALID_ARGUMENT,
           "thunderc_open_options.struct_size is " + std::to_string(options->struct_size) +
               "; call thunderc_open_options_init() (this runtime expects " +
               std::to_string(sizeof(thunderc_open_options)) + ")");
    std::memcpy(&opts, options, options->struct_size);
    opts.struct_size = sizeof(thunderc_open_options);
  }

  auto model = std::make_unique<thunderc_model>();
  model->path = so_path;
  model->name = basename_of(model->path);
  model->num_threads = resolve_num_threads(opts.num_threads);

  // 1. The file must be a complete ELF shared object before the dynamic loader touches it.
  check_elf_file(model->path);
  dlerror();
  // A name without '/' would make dlopen search the library path instead of opening this file.
  const std::string load_path = model->path.find('/') == std::string::npos ? "./" + model->path : model->path;
  model->handle = dlopen(load_path.c_str(), RTLD_LOCAL | RTLD_NOW);
  if (!model->handle) {
    const char* e = dlerror();
    fail(THUNDERC_STATUS_IO, "cannot load model '" + model->path + "': " + (e ? e : "dlopen failed"));
  }
  pin_thread_runtimes();

  // 2. ABI version, before calling anything else.
  const auto abi_fn = required_symbol<thunderc_abi_version_fn>(
      *model, "thunderc_abi_version", THUNDERC_STATUS_ABI_MISMATCH,
      "is not a thunderc model: it does not export thunderc_abi_version");
  const uint32_t abi = abi_fn();
  if (abi != THUNDERC_ABI_VERSION)
    fail(THUNDERC_STATUS_ABI_MISMATCH, "'" + model->path + "' was built for thunderc ABI version " +
                                           std::to_string(abi) + ", but this runtime supports ABI version " +
                                           std::to_string(THUNDERC_ABI_VERSION) + "; recompile the model");

  // 3. Embedded manifest, and the on-disk copy when there is one.
  auto manifest_fn =
      reinterpret_cast<thunderc_embedded_manifest_fn>(dlsym(model->handle, "thunderc_embedded_manifest"));
  if (!manifest_fn)
    fail(THUNDERC_STATUS_MANIFEST, "'" + model->path + "' does not export thunderc_embedded_manifest");
  size_t len = 0;
  const char* text = manifest_fn(&len);
  if (!text || len == 0) fail(THUNDERC_STATUS_MANIFEST, "'" + model->path + "' embeds an empty manifest");
  model->manifest_text.assign(text, len);

  std::string manifest_path;
  if (opts.manifest_path) {
    manifest_path = opts.manifest_path;
  } else {
    std::string base = model->path;
    if (base.size() > 3 && base.compare(base.size() - 3, 3, ".so") == 0) base.resize(base.size() - 3);
    if (file_exists(base + ".json")) manifest_path = base + ".json";
  }
  if (!manifest_path.empty()) {
    const std::string on_disk = read_file(manifest_path);
    if (on_disk != model->manifest_text)
      fail(THUNDERC_STATUS_MANIFEST, "manifest '" + manifest_path + "' does not belong to '" + model->path +
                                         "' (it differs from the manifest embedded in the .so)");
  }

  // 4. Parse and validate.
  model->manifest = parse_manifest(model->manifest_text, "manifest of '" + model->path + "'");
  if (model->manifest.abi_version != abi)
    fail(THUNDERC_STATUS_ABI_MISMATCH, "manifest of '" + model->path + "': abi_version " +
                                           std::to_string(model->manifest.abi_version) +
                                           " differs from the ABI version the .so reports (" +
                                           std::to_string(abi) + ")");

  // The host code's instruction set: a CPU that lacks it runs no variant (each says why), rather than dying
  // with SIGILL in a call. The model still opens, to be inspected, as one whose device is missing does.
  // A model built for several levels runs the best one this CPU has (THUNDERC_MAX_CPU_TARGET caps it).
  std::string isa_missing;
  std::string entry_suffix;
  if (!model->manifest.cpu_targets.empty()) {
    std::string cap;
    if (const char* env = std::getenv("THUNDERC_MAX_CPU_TARGET"); env && *env) {
      cap = env;
      if (!is_cpu_isa_level(cap))
        fail(THUNDERC_STATUS_INVALID_ARGUMENT, "THUNDERC_MAX_CPU_TARGET='" + cap + "' is not a CPU target (x86-64, "
                                               "x86-64-v2, x86-64-v3, x86-64-v4)");
    }
    model->cpu_target = choose_cpu_target(model->manifest.cpu_targets, host_cpu_supports, cap);
    const std::string& lowest = model->manifest.cpu_targets.front();
    if (model->cpu_target.empty()) {
      const std::string missing = missing_cpu_features(lowest, host_cpu_supports);
      if (!missing.empty())
        isa_missing = "compiled for " + lowest + " (--cpu-target), but this CPU lacks " + missing +
                      "; recompile with a lower --cpu-target (x86-64-v2 runs on every x86-64 CPU since 2009, x86-64 "
                      "on all)";
      else
        isa_missing = "THUNDERC_MAX_CPU_TARGET=" + cap + " is below " + lowest + ", the lowest level the model was "
                      "compiled for (--cpu-target)";
    } else if (model->cpu_target != lowest) {
      entry_suffix = cpu_target_symbol_suffix(model->cpu_target);
    }
  }

  // 5. Entries and devices.
  size_t cuda_workspace = 0;
  std::string cuda_variants;
  for (Variant& v : model->manifest.variants) {
    // Every entry is host code (a CUDA variant's launches too): each level has its own copy.
    v.entry += entry_suffix;
    if (model->manifest.is_training()) v.training.backward_entry += entry_suffix;
    v.fn = required_symbol<thunderc_entry_fn>(
        *model, v.entry, THUNDERC_STATUS_MANIFEST,
        "does not export '" + v.entry + "', the entry of variant #" + std::to_string(v.id));
    if (model->manifest.is_training()) {
      const std::string& entry = v.training.backward_entry;
      v.training.backward_fn = required_symbol<thunderc_entry_fn>(
          *model, entry, THUNDERC_STATUS_MANIFEST,
          "does not export '" + entry + "', the backward entry of variant #" + std::to_string(v.id));
    }
    if (!isa_missing.empty()) {
      v.available = false;
      v.unavailable_reason = isa_missing;
    } else if (v.device.device_type == kDLCPU && model->manifest.precision == "bf16" &&
               !missing_bf16_features(host_cpu_supports).empty()) {
      v.available = false;
      v.unavailable_reason = missing_bf16_features(host_cpu_supports);
    } else if (v.device.device_type == kDLCUDA) {
      // "cuda:N" means any CUDA device: the variant can run when the driver reports at least one.
      const CudaDriver& driver = cuda_driver();
      if (driver.device_count == 0) {
        v.available = false;
        v.unavailable_reason = driver.error;
      }
      cuda_workspace = std::max(cuda_workspace, v.workspace_bytes);
      // The pool's blocks serve a training variant's backward entry too.
      if (model->manifest.is_training()) cuda_workspace = std::max(cuda_workspace, v.training.backward_workspace_bytes);
      if (cuda_variants.size() < 64) cuda_variants += (cuda_variants.empty() ? "#" : ", #") + std::to_string(v.id);
    } else if (v.device.device_type != kDLCPU) {
      v.available = false;
      v.unavailable_reason = "this runtime runs only cpu and cuda variants";
    }
  }
  if (model->manifest.profile) {
    const auto profile_fn = required_symbol<thunderc_profile_fn>(
        *model, "thunderc_profile", THUNDERC_STATUS_MANIFEST,
        "has options.profile in its manifest but does not export 'thunderc_profile'");
    for (size_t v = 0; v < model->manifest.variants.size(); ++v) {
      thunderc_model::ProfiledVariant p;
      p.operations = profile_fn(static_cast<uint32_t>(v), &p.labels, &p.counters);
      if (p.operations > 0 && (!p.labels || !p.counters))
        fail(THUNDERC_STATUS_MANIFEST, "'" + model->path + "': thunderc_profile(" + std::to_string(v) +
                                           ") gave operations without labels or counters");
      model->profile.push_back(p);
    }
  }
  // --optimizer: the update's entry (host code: each CPU level has its own copy), its workspace in the CUDA pool.
  if (auto& o = model->manifest.training.optimizer) {
    o->entry += entry_suffix;
    o->fn = required_symbol<thunderc_entry_fn>(*model, o->entry, THUNDERC_STATUS_MANIFEST,
                                               "does not export '" + o->entry + "', the optimizer's entry");
    if (!cuda_variants.empty()) cuda_workspace = std::max(cuda_workspace, o->workspace_bytes);
  }
  if (!cuda_variants.empty()) {
    dlerror();
    auto cuda_fn = reinterpret_cast<thunderc_cuda_module_fn>(dlsym(model->handle, "thunderc_cuda_module"));
    if (!cuda_fn)
      fail(THUNDERC_STATUS_MANIFEST, "'" + model->path + "' has CUDA variants (" + cuda_variants +
                                         ") but does not export thunderc_cuda_module, which holds their kernels");
    model->cuda = std::make_unique<CudaModel>(cuda_fn(), model->path, cuda_workspace, model->manifest.cuda_graphs);
  }
  // A model whose variants all need a device this machine lacks still opens (to be inspected); running it
  // fails with DEVICE_UNAVAILABLE.

  // 6. Training models: the live parameters, copied from the blob of initial values.
  if (model->manifest.is_training()) {
    load_parameters(model.get());
    if (model->placed) allocate_optimizer_state(model.get(), DLDevice{kDLCPU, 0});  // CUDA: at placement
  }

  // Slots: the variants' entries, their backward entries, the optimizer's (see call_entry).
  model->free_workspaces.resize(model->manifest.variants.size() * (model->manifest.is_training() ? 2 : 1) + 1);
  *out_model = model.release();
}

// ---- dispatch -------------------------------------------------------------------------------------

std::string describe(const DLTensor& t) {
  std::string s = dtype_to_string(t.dtype) + shape_to_string(t.shape, t.ndim) + " " + device_to_string(t.device);
  if (!is_contiguous(t)) s += " (non-contiguous, strides " + shape_to_string(t.strides, t.ndim) + ")";
  return s;
}

void check_tensor_struct(const DLTensor& t, const std::string& what) {
  if (t.dtype.bits == 0 || t.dtype.lanes == 0)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has a dtype of zero size (bits " + std::to_string(t.dtype.bits) +
                                               ", lanes " + std::to_string(t.dtype.lanes) + ")");
  if (t.ndim < 0 || t.ndim > 64)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has invalid ndim " + std::to_string(t.ndim));
  if (t.ndim > 0 && !t.shape) fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has ndim > 0 but shape is NULL");
  for (int i = 0; i < t.ndim; ++i)
    if (t.shape[i] < 0)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has a negative extent " + shape_to_string(t.shape, t.ndim));
  size_t bytes = 0;
  if (!dense_nbytes(t.shape, t.ndim, t.dtype, &bytes))
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " is too large");
  if (bytes != 0 && t.data == nullptr) fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has a NULL data pointer");
  // data + byte_offset + bytes must be a real address range: no wrap-around.
  uintptr_t end = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data), static_cast<uintptr_t>(t.byte_offset), &end) ||
      __builtin_add_overflow(end, static_cast<uintptr_t>(bytes), &end))
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " has byte_offset " + std::to_string(t.byte_offset) +
                                               ", which overflows the address space");
}

// [begin, end) of a tensor's bytes (after check_tensor_struct).
std::pair<uintptr_t, uintptr_t> byte_range(const DLTensor& t) {
  size_t bytes = 0;
  dense_nbytes(t.shape, t.ndim, t.dtype, &bytes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(t.byte_offset);
  return {begin, begin + bytes};
}

bool same_memory_space(const DLDevice& a, const DLDevice& b) {
  const bool a_host = a.device_type == kDLCPU || a.device_type == kDLCUDAHost;
  const bool b_host = b.device_type == kDLCPU || b.device_type == kDLCUDAHost;
  if (a_host || b_host) return a_host == b_host;
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

bool overlap(const DLTensor& a, const DLTensor& b) {
  if (!same_memory_space(a.device, b.device)) return false;
  const auto [a0, a1] = byte_range(a);
  const auto [b0, b1] = byte_range(b);
  return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

// "output 'y' (#0)"
std::function<std::string(size_t)> output_name(const thunderc_model* m) {
  return [m](size_t i) { return "output '" + m->manifest.outputs[i].name + "' (#" + std::to_string(i) + ")"; };
}

// Caller-provided outputs are written while the inputs are read: an output may share no byte with an input or
// another output.
void check_no_overlap(const thunderc_model* m, const DLTensor* inputs, size_t n, const DLTensor* outputs, size_t k) {
  const Manifest& mf = m->manifest;
  const auto out_name = output_name(m);
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < n; ++j)
      if (overlap(outputs[i], inputs[j]))
        fail(THUNDERC_STATUS_INVALID_ARGUMENT, out_name(i) + " overlaps input '" + mf.inputs[j].name + "' (#" +
                                                   std::to_string(j) + ") in memory; outputs must not share memory "
                                                   "with inputs (pass a separate buffer)");
    for (size_t j = 0; j < i; ++j)
      if (overlap(outputs[i], outputs[j]))
        fail(THUNDERC_STATUS_INVALID_ARGUMENT, out_name(i) + " overlaps " + out_name(j) +
                                                   " in memory; each output needs a buffer of its own");
  }
}

// Why `g` rejects `t`, or empty when it accepts it.
std::string guard_mismatch(const Guard& g, const DLTensor& t) {
  if (!dtype_equal(g.dtype, t.dtype)) return "expected dtype " + g.dtype_name + ", got " + dtype_to_string(t.dtype);
  if (static_cast<size_t>(t.ndim) != g.shape.size())
    return "expected rank " + std::to_string(g.shape.size()) + " " + g.shape_text + ", got rank " +
           std::to_string(t.ndim) + " " + shape_to_string(t.shape, t.ndim);
  for (size_t i = 0; i < g.shape.size(); ++i)
    if (g.sym[i] < 0 && g.shape[i] != t.shape[i])
      return "expected shape " + g.shape_text + ", got " + shape_to_string(t.shape, t.ndim);
  if (g.device.device_type == kDLCUDA) {
    // A CUDA guard accepts any CUDA device (all inputs on the same one: call_mismatch).
    if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost)
      return "expected a CUDA tensor (on the GPU), got a host (" + device_to_string(t.device) +
             ") tensor; copy it to the GPU first (e.g. thunderc_device_copy_to_device)";
    if (t.device.device_type != kDLCUDA) return "expected a CUDA tensor, got " + device_to_string(t.device);
  } else if (g.device.device_type != t.device.device_type || g.device.device_id != t.device.device_id) {
    return "expected device " + device_to_string(g.device) + ", got " + device_to_string(t.device);
  }
  if (!is_contiguous(t)) return "expected a contiguous tensor, got strides " + shape_to_string(t.strides, t.ndim);
  return {};
}

// CUDA kernels load and store 16 bytes at a time where sizes allow, so CUDA tensors must start on a 16-byte
// boundary (every CUDA allocation does; a view with an odd offset may not).
std::string cuda_alignment_problem(const DLTensor& t) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(t.byte_offset);
  if (at % 16 == 0) return {};
  return "a CUDA tensor must start on a 16-byte boundary, this one starts at byte " + std::to_string(at % 16) +
         " of one (a view with an offset? pass a copy, e.g. tensor.clone())";
}

// Why v rejects the call as a whole once every guard accepts its input (empty when it accepts it): CUDA
// inputs must all be on one device and 16-byte aligned.
std::string call_mismatch(const Variant& v, const std::vector<TensorDesc>& names, const DLTensor* inputs, size_t n) {
  if (v.device.device_type != kDLCUDA) return {};
  for (size_t i = 0; i < n; ++i)
    if (std::string why = cuda_alignment_problem(inputs[i]); !why.empty()) return "input '" + names[i].name + "': " + why;
  for (size_t i = 1; i < n; ++i)
    if (inputs[i].device.device_id != inputs[0].device.device_id)
      return "input '" + names[i].name + "' is on " + device_to_string(inputs[i].device) + " but input '" +
             names[0].name + "' is on " + device_to_string(inputs[0].device) +
             " (all inputs and outputs must be on one CUDA device)";
  return {};
}

// Why a bounded variant's value guards (finite_max_abs) reject these inputs, or empty. Reads the inputs' data,
// so it runs after every other check has passed.
std::string value_mismatch(const thunderc_model* m, const Variant& v, const DLTensor* inputs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Guard& g = v.guards[i];
    if (g.finite_max_abs > 0 && !finite_within(inputs[i], g.finite_max_abs))
      return "input '" + m->manifest.inputs[i].name + "' holds a NaN, an infinity or a value above " +
             format_bound(g.finite_max_abs) + " in magnitude (this variant is for finite inputs within that bound)";
  }
  return {};
}

// Why v does not accept these inputs, or empty (availability aside).
std::string variant_mismatch(const thunderc_model* m, const Variant& v, const DLTensor* inputs, size_t n) {
  const Manifest& mf = m->manifest;
  for (size_t i = 0; i < n; ++i) {
    std::string why = guard_mismatch(v.guards[i], inputs[i]);
    if (!why.empty()) return "input '" + mf.inputs[i].name + "': " + why;
  }
  std::string why = call_mismatch(v, mf.inputs, inputs, n);
  if (!why.empty()) return why;
  if (v.symbolic()) {
    SmallVec<int64_t> values(v.dims.size());
    why = bind_dims(v, mf.inputs, inputs, n, values.data());
    if (!why.empty()) return why;
  }
  return value_mismatch(m, v, inputs, n);
}

size_t select_variant(const thunderc_model* m, const DLTensor* inputs, size_t n) {
  const Manifest& mf = m->manifest;
  if (n > 0 && !inputs) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "inputs is NULL");
  if (n != mf.inputs.size()) {
    std::string names;
    for (const auto& in : mf.inputs) names += (names.empty() ? "" : ", ") + in.name;
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, m->name + " takes " + std::to_string(mf.inputs.size()) + " input(s) (" +
                                               names + "), got " + std::to_string(n));
  }
  for (size_t i = 0; i < n; ++i) check_tensor_struct(inputs[i], "input '" + mf.inputs[i].name + "'");

  // Shapes, dtypes, devices and symbols; the value guards of bounded variants are checked apart.
  auto matches_types = [&](const Variant& v) {
    if (!v.available) return false;
    for (size_t i = 0; i < n; ++i)
      if (!guard_mismatch(v.guards[i], inputs[i]).empty()) return false;
    if (!call_mismatch(v, mf.inputs, inputs, n).empty()) return false;
    if (v.symbolic()) {
      SmallVec<int64_t> values(v.dims.size());
      if (!bind_dims(v, mf.inputs, inputs, n, values.data()).empty()) return false;
    }
    return true;
  };
  auto values_hold = [&](const Variant& v) { return !v.bounded || value_mismatch(m, v, inputs, n).empty(); };
  // "same input" skips the type checks of the remembered variant, never its value guards: a NaN must not
  // reach a bounded variant.
  const long memo = m->memo.load(std::memory_order_relaxed);
  if (memo >= 0 && mf.cache == CacheMode::SameInput && values_hold(mf.variants[memo])) return static_cast<size_t>(memo);
  if (memo >= 0 && (mf.cache == CacheMode::ConstantValues || mf.cache == CacheMode::SymbolicValues) &&
      matches_types(mf.variants[memo]) && values_hold(mf.variants[memo]))
    return static_cast<size_t>(memo);
  bool value_rejected = false;
  for (const Variant& v : mf.variants) {
    if (!matches_types(v)) continue;
    if (!values_hold(v)) {
      value_rejected = true;
      continue;
    }
    // A call that a bounded variant turned away for its values (a NaN) is not remembered: the next call is
    // most likely finite again.
    if (mf.cache != CacheMode::NoCaching && !value_rejected)
      m->memo.store(static_cast<long>(v.id), std::memory_order_relaxed);
    return v.id;
  }

  // No variant can run here at all (e.g. a CUDA model without a CUDA driver).
  bool any_available = false;
  std::string unavailable;
  for (const Variant& v : mf.variants) {
    if (v.available) {
      any_available = true;
    } else if (unavailable.find(v.device_name + ": ") == std::string::npos) {
      unavailable += (unavailable.empty() ? "" : ", ") + v.device_name + ": " + v.unavailable_reason;
    }
  }
  if (!any_available)
    fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, "no variant of " + m->name + " can run on this machine (" + unavailable + ")");
  // A variant for these inputs exists but its device is missing.
  for (const Variant& v : mf.variants)
    if (!v.available && variant_mismatch(m, v, inputs, n).empty())
      fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, "variant #" + std::to_string(v.id) + " of " + m->name + " (" +
                                                   v.signature + ") accepts these inputs but cannot run here: " +
                                                   v.unavailable_reason);

  std::string msg = "no variant of " + m->name + " accepts these inputs: ";
  for (size_t i = 0; i < n; ++i) {
    if (i) msg += ", ";
    msg += "input '" + mf.inputs[i].name + "' has shape " + shape_to_string(inputs[i].shape, inputs[i].ndim) + " " +
           dtype_to_string(inputs[i].dtype) + " " + device_to_string(inputs[i].device);
    if (!is_contiguous(inputs[i])) msg += " (non-contiguous, strides " + shape_to_string(inputs[i].strides, inputs[i].ndim) + ")";
  }
  msg += "; variants:";
  for (const Variant& v : mf.variants) {
    msg += " #" + std::to_string(v.id) + " " + v.signature;
    if (!v.available) {
      msg += " (unavailable: " + v.unavailable_reason + ")";
    } else {
      const std::string why = variant_mismatch(m, v, inputs, n);
      if (!why.empty()) msg += " (" + why + ")";
    }
    msg += ";";
  }
  msg.pop_back();
  fail(THUNDERC_STATUS_NO_MATCHING_VARIANT, msg);
}

DLTensor normalized(const DLTensor& t) {
  DLTensor c = t;
  if (c.data) c.data = static_cast<char*>(c.data) + c.byte_offset;
  c.byte_offset = 0;
  return c;
}

// The device a call of v with these inputs runs on: a CUDA variant runs on its inputs' CUDA device (any
// ordinal; the manifest's when it has no inputs), a CPU variant on the CPU.
DLDevice call_device(const Variant& v, const DLTensor* inputs, size_t n) {
  if (v.device.device_type == kDLCUDA && n > 0) return DLDevice{kDLCUDA, inputs[0].device.device_id};
  return v.device;
}

// Which entry of a variant a call runs: the variant's own (the forward of a training model) or, in a training
// model, its backward entry.
// (--optimizer: the model's update entry, one for all variants.)
enum class Entry { Forward, Backward, Optimizer };

// "variant #0 (thunderc_variant_0) of m.so", "the backward entry (thunderc_variant_1) of variant #0 of m.so"
std::string entry_label(const thunderc_model* m, const Variant& v, Entry which) {
  if (which == Entry::Optimizer)
    return "the optimizer's entry (" + m->manifest.training.optimizer->entry + ") of " + m->name;
  if (which == Entry::Backward)
    return "the backward entry (" + v.training.backward_entry + ") of variant #" + std::to_string(v.id) + " of " + m->name;
  return "variant #" + std::to_string(v.id) + " (" + v.entry + ") of " + m->name;
}

// Calls one entry of variant vi: the tensors as the ABI orders them (for a training model's forward: inputs
// then parameters, outputs then saved tensors; see run_forward), already checked.
void call_entry(thunderc_model* m, size_t vi, Entry which, const DLTensor* inputs, size_t n, DLTensor* outs, size_t k,
                DLDevice device, void* stream) {
  const Variant& v = m->manifest.variants[vi];
  thunderc_entry_fn fn = v.fn;
  size_t workspace_bytes = v.workspace_bytes, slot = vi;
  if (which == Entry::Backward) {
    fn = v.training.backward_fn;
    workspace_bytes = v.training.backward_workspace_bytes;
    slot = m->manifest.variants.size() + vi;
  } else if (which == Entry::Optimizer) {
    fn = m->manifest.training.optimizer->fn;
    workspace_bytes = m->manifest.training.optimizer->workspace_bytes;
    slot = m->free_workspaces.size() - 1;
  }
  if (!fn) fail(THUNDERC_STATUS_INTERNAL, "internal error: " + entry_label(m, v, which) + " was not resolved");
  SmallVec<DLTensor> in_copy(n);
  SmallVec<const DLTensor*> in_ptrs(n);
  for (size_t i = 0; i < n; ++i) {
    in_copy[i] = normalized(inputs[i]);
    in_ptrs[i] = &in_copy[i];
  }
  SmallVec<DLTensor*> out_ptrs(k);
  for (size_t i = 0; i < k; ++i) out_ptrs[i] = &outs[i];

  char error[2048];
  error[0] = '\0';
  thunderc_call call{};
  call.inputs = in_ptrs.data();
  call.num_inputs = n;
  call.outputs = out_ptrs.data();
  call.num_outputs = k;
  call.num_threads = m->num_threads;
  call.error = error;
  call.error_capacity = sizeof error;
  call.device = DLDevice{kDLCPU, 0};
  int32_t rc = 0;
  if (v.device.device_type == kDLCUDA) {
    if (!m->cuda) fail(THUNDERC_STATUS_INTERNAL, "internal error: CUDA variant without CUDA state");
    call.workspace_bytes = workspace_bytes;
    try {
      rc = m->cuda->call(device.device_id, fn, &call, stream);
    } catch (const RtError&) {
      throw;
    } catch (...) {
      fail(THUNDERC_STATUS_KERNEL_FAILED, entry_label(m, v, which) + " threw a C++ exception across the ABI");
    }
  } else {
    WorkspaceLease ws(m, slot, workspace_bytes, v.device);
    call.workspace = ws.get();
    call.workspace_bytes = ws.get() ? workspace_bytes : 0;
    try {
      rc = fn(&call);
    } catch (...) {
      fail(THUNDERC_STATUS_KERNEL_FAILED, entry_label(m, v, which) + " threw a C++ exception across the ABI");
    }
  }
  if (rc != 0) {
    error[sizeof error - 1] = '\0';
    fail(THUNDERC_STATUS_KERNEL_FAILED, entry_label(m, v, which) + " failed (code " + std::to_string(rc) +
                                            "): " + (error[0] ? error : "no message"));
  }
}

// Runs variant vi's forward entry. In a training model the entry also takes every parameter (after the inputs)
// and writes every saved tensor (after the outputs), then the buffers' updated values (training.updates),
// which are copied into the parameters' state when the entry succeeds: into `saved` (v.training.saved.size() host tensors the
// caller allocated, a train context's), or, when `saved` is NULL (thunderc_model_run/run_alloc), into scratch
// buffers discarded on return.
// Dropout's RNG state for one training forward: explicit (thunderc_model_forward_train_seeded), or the
// model's generator's seed and its next blocks.
struct RngState {
  uint64_t seed = 0, offset = 0;
};

void run_forward(thunderc_model* m, size_t vi, const DLTensor* inputs, size_t n, DLTensor* outs, size_t k,
                 DLDevice device, void* stream, const DLTensor* saved = nullptr, const RngState* rng = nullptr) {
  if (!m->manifest.is_training()) return call_entry(m, vi, Entry::Forward, inputs, n, outs, k, device, stream);
  const Variant& v = m->manifest.variants[vi];
  const bool cuda = device.device_type == kDLCUDA;
  place_parameters(m, device);
  const size_t np = m->parameter_tensors.size();
  const size_t ns = v.training.saved.size();
  const size_t nr = v.training.rng_blocks > 0 ? 1 : 0;
  SmallVec<DLTensor> in(n + np + nr);
  for (size_t i = 0; i < n; ++i) in[i] = inputs[i];
  for (size_t i = 0; i < np; ++i) in[n + i] = m->parameter_tensors[i];
  ScratchBuffers scratch(device);
  // The RNG state (seed, offset) is an input on the call's device: on CUDA copied there first, so that the
  // dropout kernels read it at run time (a CUDA graph replays with each call's state).
  int64_t rng_values[2] = {0, 0};
  int64_t rng_shape[1] = {2};
  if (nr) {
    const RngState state = rng ? *rng : RngState{m->rng_seed.load(), m->rng_offset.fetch_add(v.training.rng_blocks)};
    rng_values[0] = static_cast<int64_t>(state.seed);
    rng_values[1] = static_cast<int64_t>(state.offset);
    DLTensor& t = in[n + np];
    t = DLTensor{};
    t.data = rng_values;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = DLDataType{kDLInt, 64, 1};
    t.shape = rng_shape;
    if (cuda) {
      t.data = scratch.alloc(sizeof rng_values, "RNG state");
      t.device = device;
      cuda_copy_to_device(device.device_id, t.data, rng_values, sizeof rng_values, "copying the RNG state", m->name);
    }
  }
  const std::vector<size_t>& updates = m->manifest.training.updates;
  const size_t nu = updates.size();
  SmallVec<DLTensor> out(k + ns + nu);
  for (size_t i = 0; i < k; ++i) out[i] = outs[i];
  auto view = [&](void* data, DLDataType dtype, const std::vector<int64_t>& shape) {
    DLTensor t = host_view(data, dtype, shape);
    t.device = device;
    return t;
  };
  for (size_t i = 0; i < ns; ++i) {
    const SavedSpec& sp = v.training.saved[i];
    out[k + i] = saved ? saved[i] : view(scratch.alloc(sp.bytes, "saved tensor"), sp.dtype, sp.shape);
  }
  // Buffers' new values go to scratch first: the entry reads the old ones while it writes these.
  for (size_t u = 0; u < nu; ++u) {
    const ParameterDesc& p = m->manifest.training.parameters[updates[u]];
    out[k + ns + u] = view(scratch.alloc(p.bytes, "updated buffer"), p.dtype, p.shape);
  }
  call_entry(m, vi, Entry::Forward, in.data(), n + np + nr, out.data(), k + ns + nu, device, stream);
  for (size_t u = 0; u < nu; ++u) {
    const ParameterDesc& p = m->manifest.training.parameters[updates[u]];
    if (cuda)
      cuda_copy_on_device(device.device_id, m->parameter_tensors[updates[u]].data, out[k + ns + u].data, p.bytes,
                          stream, "updating the buffers", m->name);
    else
      std::memcpy(m->parameter_tensors[updates[u]].data, out[k + ns + u].data, p.bytes);
  }
  // A CUDA training forward returns once the device is done: its scratch is freed below, and the buffers'
  // new values are in place for the next call on any stream.
  if (cuda) cuda_synchronize(device.device_id, stream, "the training forward", m->name);
}

// A training model's outputs are written while the parameters are read: no output may share a byte with one.
void check_no_parameter_overlap(const thunderc_model* m, const DLTensor* outputs, size_t k,
                                const std::function<std::string(size_t)>& out_name, const char* what) {
  const std::vector<DLTensor>& params = m->parameter_tensors;
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < params.size(); ++j)
      if (overlap(outputs[i], params[j]))
        fail(THUNDERC_STATUS_INVALID_ARGUMENT, out_name(i) + " overlaps parameter '" +
                                                   m->manifest.training.parameters[j].name + "' (#" + std::to_string(j) +
                                                   ") in memory; " + what + " must not share memory with the model's "
                                                   "parameters (pass a separate buffer)");
}

// `shape`: the output's shape for this call (output_shape()), output_shapes[i].size() entries; `device`: the
// call's device (call_device()).
void check_output(const thunderc_model* m, const Variant& v, size_t i, const DLTensor& t, const int64_t* shape,
                  DLDevice device) {
  const TensorDesc& d = m->manifest.outputs[i];
  const std::string what = "output '" + d.name + "' (#" + std::to_string(i) + ")";
  check_tensor_struct(t, what);
  const int ndim = static_cast<int>(v.output_shapes[i].size());
  bool same = dtype_equal(t.dtype, d.dtype) && t.ndim == ndim && t.device.device_type == device.device_type &&
              t.device.device_id == device.device_id && is_contiguous(t);
  for (int k = 0; same && k < ndim; ++k) same = shape[k] == t.shape[k];
  if (same && device.device_type == kDLCUDA)
    if (std::string why = cuda_alignment_problem(t); !why.empty())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " for variant #" + std::to_string(v.id) + " of " + m->name + ": " + why);
  if (!same)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " for variant #" + std::to_string(v.id) + " of " + m->name +
                                               ": expected a contiguous " + d.dtype_name + shape_to_string(shape, ndim) +
                                               " " + device_to_string(device) + " tensor, got " + describe(t));
}

// The symbols' values for a call that selected v (empty for fixed variants).
void bound_values(const thunderc_model* m, const Variant& v, const DLTensor* inputs, size_t n, int64_t* values) {
  if (!v.symbolic()) return;
  const std::string why = bind_dims(v, m->manifest.inputs, inputs, n, values);
  if (!why.empty()) fail(THUNDERC_STATUS_NO_MATCHING_VARIANT, "variant #" + std::to_string(v.id) + " of " + m->name + ": " + why);
}

// Output i's shape for this call into `shape`, and its size in bytes. The manifest's sizes are validated when
// the model is opened; this checks the computation for the call's values too, so a size that overflows or is
// negative is an error, never a wrapped-around allocation.
size_t checked_output_shape(const thunderc_model* m, const Variant& v, size_t i, const int64_t* values, int64_t* shape) {
  const int ndim = static_cast<int>(v.output_shapes[i].size());
  size_t bytes = 0;
  if (!output_shape(v, i, values, shape) || !dense_nbytes(shape, ndim, m->manifest.outputs[i].dtype, &bytes))
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, "variant #" + std::to_string(v.id) + " of " + m->name + ": the size of output '" +
                                               m->manifest.outputs[i].name + "' overflows or is negative for these inputs");
  return bytes;
}

// One runtime-allocated output: DLManagedTensor, shape and data in one block (data 64-byte aligned).
struct OwnedOutput {
  DLManagedTensor managed;
  int64_t shape[64];
  void* data;
  DLDevice device;
};

void owned_output_deleter(DLManagedTensor* self) {
  if (!self) return;
  auto* o = static_cast<OwnedOutput*>(self->manager_ctx);
  thunderc_model::release_buffer(o->device, o->data);
  delete o;
}

thunderc_run_options read_run_options(const thunderc_run_options* options) {
  thunderc_run_options opts;
  thunderc_run_options_init(&opts);
  if (options) {
    if (options->struct_size < offsetof(thunderc_run_options, cuda_stream) + sizeof(void*) ||
        options->struct_size > sizeof(thunderc_run_options))
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_run_options.struct_size is " +
                                                 std::to_string(options->struct_size) +
                                                 "; call thunderc_run_options_init() (this runtime expects " +
                                                 std::to_string(sizeof(thunderc_run_options)) + ")");
    std::memcpy(&opts, options, options->struct_size);
    opts.struct_size = sizeof opts;
  }
  return opts;
}

thunderc_status check_model(const thunderc_model* m) {
  return m ? nullptr : make_status(THUNDERC_STATUS_INVALID_ARGUMENT, "model is NULL");
}

const Variant* variant_at(const thunderc_model* m, size_t v) {
  if (!m) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "model is NULL");
  if (v >= m->manifest.variants.size())
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, "variant " + std::to_string(v) + " out of range (" + m->name + " has " +
                                               std::to_string(m->manifest.variants.size()) + ")");
  return &m->manifest.variants[v];
}

}  // namespace

// ---- training (thunderc --autograd) ----------------------------------------------------------------

// What one training forward saved for its backward: the saved tensors, in 64-byte aligned host buffers it owns.
struct thunderc_train_context_s {
  const thunderc_model* model = nullptr;  // the model whose forward_train made it
  std::string model_name;                 // for the message when it is passed to another model
  size_t variant = 0;
  DLDevice device{kDLCPU, 0};   // where the saved tensors are: the device the forward ran on
  std::vector<void*> buffers;   // one per saved tensor
  std::vector<DLTensor> saved;  // views of buffers (shapes: the model's manifest)
  ~thunderc_train_context_s() {
    for (void* p : buffers) thunderc_model::release_buffer(device, p);
  }
};

namespace {

void require_training(const thunderc_model* m, const char* fn) {
  if (!m->manifest.is_training())
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + m->name + " was compiled without --autograd, so it "
                                           "has no parameters, gradients or backward entries (recompile it with "
                                           "thunderc --autograd to train it)");
}

// The variant of a context that must have been made by m.
const Variant& context_variant(const thunderc_model* m, thunderc_train_context ctx, const char* fn) {
  if (!ctx) fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": context is NULL");
  if (ctx->model != m)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": the training context belongs to another model (it was "
                                           "made by thunderc_model_forward_train on a model of " + ctx->model_name +
                                           "), not to this model of " + m->name);
  return m->manifest.variants[ctx->variant];
}

// "gradient of input 'x' (#0)", "gradient of parameter 'fc.weight' (#1)"
std::string gradient_label(const Manifest& mf, size_t i) {
  const GradientDesc& g = mf.training.gradients[i];
  return std::string("gradient of ") + (g.is_parameter ? "parameter '" : "input '") + g.name + "' (#" +
         std::to_string(i) + ")";
}

DLDataType gradient_dtype(const Manifest& mf, const GradientDesc& g) {
  return g.is_parameter ? mf.training.parameters[g.index].dtype : mf.inputs[g.index].dtype;
}

// A caller's tensor for a backward call: dtype, shape, on `device` (the forward's), contiguous (on CUDA
// 16-byte aligned), or INVALID_ARGUMENT naming it.
void check_backward_tensor(const thunderc_model* m, const Variant& v, const DLTensor& t, const std::string& what,
                           DLDataType dtype, const std::string& dtype_name, const std::vector<int64_t>& shape,
                           const std::string& note, DLDevice device) {
  check_tensor_struct(t, what);
  bool same = dtype_equal(t.dtype, dtype) && t.ndim == static_cast<int>(shape.size()) &&
              t.device.device_type == device.device_type && t.device.device_id == device.device_id &&
              is_contiguous(t);
  for (size_t k = 0; same && k < shape.size(); ++k) same = shape[k] == t.shape[k];
  if (!same)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " for variant #" + std::to_string(v.id) + " of " + m->name +
                                               ": expected a contiguous " + dtype_name + shape_to_string(shape) + " " +
                                               device_to_string(device) + " tensor" + note + ", got " + describe(t));
  if (device.device_type == kDLCUDA)
    if (std::string why = cuda_alignment_problem(t); !why.empty())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, what + " for variant #" + std::to_string(v.id) + " of " + m->name + ": " + why);
}

const OptimizerDesc& require_optimizer(const thunderc_model* m, const char* fn) {
  require_training(m, fn);
  if (!m->manifest.training.optimizer)
    fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + m->name + " was compiled without --optimizer, so "
                                           "it has no update entry (recompile it with thunderc --autograd "
                                           "--optimizer sgd|adamw, or update the parameters through "
                                           "thunderc_model_parameter)");
  return *m->manifest.training.optimizer;
}

}  // namespace

// ---- C API ----------------------------------------------------------------------------------------

extern "C" {

THUNDERC_API thunderc_status_code_t thunderc_status_code(thunderc_status status) {
  return status ? status->code : THUNDERC_STATUS_OK;
}

THUNDERC_API const char* thunderc_status_message(thunderc_status status) {
  return status ? status->message.c_str() : "OK";
}

THUNDERC_API const char* thunderc_status_code_name(thunderc_status_code_t code) {
  switch (code) {
    case THUNDERC_STATUS_OK: return "OK";
    case THUNDERC_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case THUNDERC_STATUS_NOT_FOUND: return "NOT_FOUND";
    case THUNDERC_STATUS_IO: return "IO";
    case THUNDERC_STATUS_MANIFEST: return "MANIFEST";
    case THUNDERC_STATUS_ABI_MISMATCH: return "ABI_MISMATCH";
    case THUNDERC_STATUS_NO_MATCHING_VARIANT: return "NO_MATCHING_VARIANT";
    case THUNDERC_STATUS_DEVICE_UNAVAILABLE: return "DEVICE_UNAVAILABLE";
    case THUNDERC_STATUS_KERNEL_FAILED: return "KERNEL_FAILED";
    case THUNDERC_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case THUNDERC_STATUS_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

THUNDERC_API void thunderc_status_free(thunderc_status status) {
  if (status && !status->is_static) delete status;
}

THUNDERC_API uint32_t thunderc_runtime_api_version(void) { return THUNDERC_RUNTIME_API_VERSION; }
THUNDERC_API uint32_t thunderc_runtime_abi_version(void) { return THUNDERC_ABI_VERSION; }
THUNDERC_API const char* thunderc_runtime_version(void) { return THUNDERC_RUNTIME_VERSION_STRING; }

THUNDERC_API void thunderc_open_options_init(thunderc_open_options* options) {
  if (!options) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

THUNDERC_API thunderc_status thunderc_model_open(const char* so_path, const thunderc_open_options* options,
                                                 thunderc_model** out_model) {
  return guarded([&] { open_impl(so_path, options, out_model); });
}

THUNDERC_API void thunderc_model_close(thunderc_model* model) { delete model; }

THUNDERC_API const char* thunderc_model_path(const thunderc_model* model) {
  return model ? model->path.c_str() : nullptr;
}

THUNDERC_API const char* thunderc_model_manifest(const thunderc_model* model, size_t* out_len) {
  if (!model) {
    if (out_len) *out_len = 0;
    return nullptr;
  }
  if (out_len) *out_len = model->manifest_text.size();
  return model->manifest_text.c_str();
}

THUNDERC_API int32_t thunderc_model_num_threads(const thunderc_model* model) {
  return model ? model->num_threads : 0;
}

THUNDERC_API const char* thunderc_model_cpu_target(const thunderc_model* model) {
  return model ? model->cpu_target.c_str() : nullptr;
}

THUNDERC_API size_t thunderc_model_num_inputs(const thunderc_model* model) {
  return model ? model->manifest.inputs.size() : 0;
}
THUNDERC_API size_t thunderc_model_num_outputs(const thunderc_model* model) {
  return model ? model->manifest.outputs.size() : 0;
}
THUNDERC_API const char* thunderc_model_input_name(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.inputs.size() ? model->manifest.inputs[index].name.c_str() : nullptr;
}
THUNDERC_API const char* thunderc_model_output_name(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.outputs.size() ? model->manifest.outputs[index].name.c_str() : nullptr;
}
THUNDERC_API DLDataType thunderc_model_input_dtype(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.inputs.size() ? model->manifest.inputs[index].dtype : DLDataType{0, 0, 0};
}
THUNDERC_API DLDataType thunderc_model_output_dtype(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.outputs.size() ? model->manifest.outputs[index].dtype : DLDataType{0, 0, 0};
}
THUNDERC_API size_t thunderc_model_num_variants(const thunderc_model* model) {
  return model ? model->manifest.variants.size() : 0;
}

THUNDERC_API thunderc_status thunderc_model_variant_info(const thunderc_model* model, size_t variant,
                                                         thunderc_variant_info* out_info) {
  return guarded([&] {
    const Variant* v = variant_at(model, variant);
    if (!out_info) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_info is NULL");
    out_info->id = v->id;
    out_info->entry = v->entry.c_str();
    out_info->signature = v->signature.c_str();
    out_info->device = v->device;
    out_info->available = v->available ? 1 : 0;
    out_info->workspace_bytes = v->workspace_bytes;
    out_info->num_inputs = v->guards.size();
    out_info->num_outputs = v->output_shapes.size();
  });
}

THUNDERC_API size_t thunderc_model_num_profiled_operations(const thunderc_model* model, size_t variant) {
  if (!model || variant >= model->profile.size()) return 0;
  return model->profile[variant].operations;
}

THUNDERC_API thunderc_status thunderc_model_operation_profile(const thunderc_model* model, size_t variant, size_t index,
                                                              thunderc_operation_profile* out) {
  return guarded([&] {
    variant_at(model, variant);
    if (!out) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out is NULL");
    if (!model->manifest.profile)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " was compiled without --profile, so it times no operations "
                                                 "(recompile it with thunderc --profile)");
    const thunderc_model::ProfiledVariant& p = model->profile.at(variant);
    if (index >= p.operations)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "operation " + std::to_string(index) + " out of range (variant " +
                                                 std::to_string(variant) + " of " + model->name + " times " +
                                                 std::to_string(p.operations) + ")");
    out->label = p.labels[index];
    out->total_ns = __atomic_load_n(&p.counters[2 * index], __ATOMIC_RELAXED);
    out->calls = __atomic_load_n(&p.counters[2 * index + 1], __ATOMIC_RELAXED);
  });
}

THUNDERC_API thunderc_status thunderc_model_variant_input(const thunderc_model* model, size_t variant, size_t input,
                                                          thunderc_tensor_spec* out_spec) {
  return guarded([&] {
    const Variant* v = variant_at(model, variant);
    if (!out_spec) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_spec is NULL");
    if (input >= v->guards.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "input " + std::to_string(input) + " out of range (" + model->name +
                                                 " has " + std::to_string(v->guards.size()) + ")");
    const Guard& g = v->guards[input];
    out_spec->name = model->manifest.inputs[input].name.c_str();
    out_spec->dtype = g.dtype;
    out_spec->device = g.device;
    out_spec->ndim = static_cast<int32_t>(g.shape.size());
    out_spec->shape = g.shape.data();
  });
}

THUNDERC_API thunderc_status thunderc_model_variant_output(const thunderc_model* model, size_t variant,
                                                           size_t output, thunderc_tensor_spec* out_spec) {
  return guarded([&] {
    const Variant* v = variant_at(model, variant);
    if (!out_spec) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_spec is NULL");
    if (output >= v->output_shapes.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "output " + std::to_string(output) + " out of range (" + model->name +
                                                 " has " + std::to_string(v->output_shapes.size()) + ")");
    out_spec->name = model->manifest.outputs[output].name.c_str();
    out_spec->dtype = model->manifest.outputs[output].dtype;
    out_spec->device = v->device;
    out_spec->ndim = static_cast<int32_t>(v->output_shapes[output].size());
    out_spec->shape = v->output_shapes[output].data();
  });
}

THUNDERC_API thunderc_status thunderc_model_select_variant(const thunderc_model* model, const DLTensor* inputs,
                                                           size_t num_inputs, size_t* out_variant) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    if (!out_variant) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_variant is NULL");
    *out_variant = select_variant(model, inputs, num_inputs);
  });
}

THUNDERC_API thunderc_status thunderc_model_output_shape(const thunderc_model* model, const DLTensor* inputs,
                                                          size_t num_inputs, size_t output, int64_t* shape,
                                                          int32_t capacity, int32_t* out_ndim) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    if (!out_ndim) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_ndim is NULL");
    const size_t vi = select_variant(model, inputs, num_inputs);
    const Variant& v = model->manifest.variants[vi];
    if (output >= v.output_shapes.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "output " + std::to_string(output) + " out of range (" + model->name +
                                                 " has " + std::to_string(v.output_shapes.size()) + ")");
    const int32_t ndim = static_cast<int32_t>(v.output_shapes[output].size());
    *out_ndim = ndim;
    if (ndim > capacity || (ndim > 0 && !shape))
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "output " + std::to_string(output) + " has " + std::to_string(ndim) +
                                                 " dimensions; shape has room for " + std::to_string(capacity));
    SmallVec<int64_t> values(v.dims.size());
    bound_values(model, v, inputs, num_inputs, values.data());
    int64_t tmp[64];
    checked_output_shape(model, v, output, values.data(), tmp);
    std::copy(tmp, tmp + ndim, shape);
  });
}

THUNDERC_API void thunderc_run_options_init(thunderc_run_options* options) {
  if (!options) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

THUNDERC_API thunderc_status thunderc_model_run_with_options(thunderc_model* model, const DLTensor* inputs,
                                                             size_t num_inputs, DLTensor* outputs, size_t num_outputs,
                                                             const thunderc_run_options* options) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    const thunderc_run_options opts = read_run_options(options);
    const size_t vi = select_variant(model, inputs, num_inputs);
    const Variant& v = model->manifest.variants[vi];
    if (num_outputs != model->manifest.outputs.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " has " + std::to_string(model->manifest.outputs.size()) +
                                                 " output(s), got " + std::to_string(num_outputs) + " output buffers");
    if (num_outputs > 0 && !outputs) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "outputs is NULL");
    const DLDevice device = call_device(v, inputs, num_inputs);
    SmallVec<DLTensor> outs(num_outputs);
    SmallVec<int64_t> values(v.dims.size());
    bound_values(model, v, inputs, num_inputs, values.data());
    for (size_t i = 0; i < num_outputs; ++i) {
      if (v.symbolic()) {
        int64_t shape[64];
        checked_output_shape(model, v, i, values.data(), shape);
        check_output(model, v, i, outputs[i], shape, device);
      } else {
        check_output(model, v, i, outputs[i], v.output_shapes[i].data(), device);
      }
      outs[i] = normalized(outputs[i]);
    }
    check_no_overlap(model, inputs, num_inputs, outputs, num_outputs);
    if (model->manifest.is_training()) {
      place_parameters(model, device);
      check_no_parameter_overlap(model, outputs, num_outputs, output_name(model), "outputs");
    }
    run_forward(model, vi, inputs, num_inputs, outs.data(), num_outputs, device, opts.cuda_stream);
  });
}

THUNDERC_API thunderc_status thunderc_model_run(thunderc_model* model, const DLTensor* inputs, size_t num_inputs,
                                                DLTensor* outputs, size_t num_outputs) {
  return thunderc_model_run_with_options(model, inputs, num_inputs, outputs, num_outputs, nullptr);
}

THUNDERC_API thunderc_status thunderc_model_run_alloc_with_options(thunderc_model* model, const DLTensor* inputs,
                                                                   size_t num_inputs, DLManagedTensor** outputs,
                                                                   size_t num_outputs,
                                                                   const thunderc_run_options* options) {
  if (outputs)
    for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
  if (thunderc_status st = check_model(model)) return st;
  std::vector<OwnedOutput*> owned;
  thunderc_status st = guarded([&] {
    const thunderc_run_options opts = read_run_options(options);
    const size_t vi = select_variant(model, inputs, num_inputs);
    const Variant& v = model->manifest.variants[vi];
    if (num_outputs != model->manifest.outputs.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " has " + std::to_string(model->manifest.outputs.size()) +
                                                 " output(s), got room for " + std::to_string(num_outputs));
    if (num_outputs > 0 && !outputs) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "outputs is NULL");
    const DLDevice device = call_device(v, inputs, num_inputs);
    if (device.device_type == kDLCUDA && model->cuda) model->cuda->prepare(device.device_id);  // its errors first
    owned.reserve(num_outputs);
    SmallVec<DLTensor> outs(num_outputs);
    SmallVec<int64_t> values(v.dims.size());
    bound_values(model, v, inputs, num_inputs, values.data());
    for (size_t i = 0; i < num_outputs; ++i) {
      const int ndim = static_cast<int>(v.output_shapes[i].size());
      const DLDataType dtype = model->manifest.outputs[i].dtype;
      auto* o = new OwnedOutput{};
      o->device = device;
      o->managed.manager_ctx = o;  // before anything can throw: the cleanup below calls the deleter
      o->managed.deleter = owned_output_deleter;
      owned.push_back(o);
      const size_t bytes = checked_output_shape(model, v, i, values.data(), o->shape);
      o->data = thunderc_model::acquire_buffer(device, bytes, "output");
      DLTensor& t = o->managed.dl_tensor;
      t.data = o->data;
      t.device = device;
      t.ndim = ndim;
      t.dtype = dtype;
      t.shape = o->shape;
      t.strides = nullptr;
      t.byte_offset = 0;
      outs[i] = t;
    }
    run_forward(model, vi, inputs, num_inputs, outs.data(), num_outputs, device, opts.cuda_stream);
  });
  if (st) {
    for (OwnedOutput* o : owned) owned_output_deleter(&o->managed);
    return st;
  }
  for (size_t i = 0; i < num_outputs; ++i) outputs[i] = &owned[i]->managed;
  return nullptr;
}

THUNDERC_API thunderc_status thunderc_model_run_alloc(thunderc_model* model, const DLTensor* inputs,
                                                      size_t num_inputs, DLManagedTensor** outputs,
                                                      size_t num_outputs) {
  return thunderc_model_run_alloc_with_options(model, inputs, num_inputs, outputs, num_outputs, nullptr);
}

// ---- training ----

THUNDERC_API int32_t thunderc_model_is_training(const thunderc_model* model) {
  return model && model->manifest.is_training() ? 1 : 0;
}

THUNDERC_API size_t thunderc_model_num_parameters(const thunderc_model* model) {
  return model ? model->manifest.training.parameters.size() : 0;
}

THUNDERC_API const char* thunderc_model_parameter_name(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.training.parameters.size()
             ? model->manifest.training.parameters[index].name.c_str()
             : nullptr;
}

THUNDERC_API int32_t thunderc_model_parameter_is_trainable(const thunderc_model* model, size_t index) {
  if (!model || index >= model->manifest.training.parameters.size()) return -1;
  return model->manifest.training.parameters[index].trainable ? 1 : 0;
}

THUNDERC_API thunderc_status thunderc_model_parameter(thunderc_model* model, size_t index, DLTensor* out) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, "thunderc_model_parameter");
    require_placed(model, "thunderc_model_parameter");
    if (!out) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_parameter: out is NULL");
    if (index >= model->parameter_tensors.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "parameter " + std::to_string(index) + " out of range (" + model->name +
                                                 " has " + std::to_string(model->parameter_tensors.size()) + ")");
    *out = model->parameter_tensors[index];
  });
}

THUNDERC_API size_t thunderc_model_num_gradients(const thunderc_model* model) {
  return model ? model->manifest.training.gradients.size() : 0;
}

THUNDERC_API const char* thunderc_model_gradient_name(const thunderc_model* model, size_t index) {
  return model && index < model->manifest.training.gradients.size()
             ? model->manifest.training.gradients[index].name.c_str()
             : nullptr;
}

THUNDERC_API int32_t thunderc_model_gradient_is_parameter(const thunderc_model* model, size_t index) {
  if (!model || index >= model->manifest.training.gradients.size()) return -1;
  return model->manifest.training.gradients[index].is_parameter ? 1 : 0;
}

THUNDERC_API DLDataType thunderc_model_gradient_dtype(const thunderc_model* model, size_t index) {
  if (!model || index >= model->manifest.training.gradients.size()) return DLDataType{0, 0, 0};
  return gradient_dtype(model->manifest, model->manifest.training.gradients[index]);
}

namespace {

// thunderc_model_forward_train(_seeded): `rng` NULL draws dropout's numbers from the model's generator.
thunderc_status forward_train(thunderc_model* model, const DLTensor* inputs, size_t num_inputs, DLTensor* outputs,
                              size_t num_outputs, thunderc_train_context* out_context, const RngState* rng,
                              const char* fn) {
  if (out_context) *out_context = nullptr;
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, fn);
    if (!out_context) fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": out_context is NULL");
    const size_t vi = select_variant(model, inputs, num_inputs);
    const Variant& v = model->manifest.variants[vi];
    if (num_outputs != model->manifest.outputs.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " has " + std::to_string(model->manifest.outputs.size()) +
                                                 " output(s), got " + std::to_string(num_outputs) + " output buffers");
    if (num_outputs > 0 && !outputs) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "outputs is NULL");
    const DLDevice device = call_device(v, inputs, num_inputs);
    place_parameters(model, device);
    SmallVec<DLTensor> outs(num_outputs);
    for (size_t i = 0; i < num_outputs; ++i) {
      check_output(model, v, i, outputs[i], v.output_shapes[i].data(), device);
      outs[i] = normalized(outputs[i]);
    }
    check_no_overlap(model, inputs, num_inputs, outputs, num_outputs);
    check_no_parameter_overlap(model, outputs, num_outputs, output_name(model), "outputs");

    auto ctx = std::make_unique<thunderc_train_context_s>();
    ctx->model = model;
    ctx->model_name = model->name;
    ctx->variant = vi;
    ctx->device = device;
    const std::vector<SavedSpec>& saved = v.training.saved;
    ctx->buffers.reserve(saved.size());
    ctx->saved.reserve(saved.size());
    for (const SavedSpec& sp : saved) {
      ctx->buffers.push_back(thunderc_model::acquire_buffer(device, sp.bytes, "saved tensor"));
      ctx->saved.push_back(host_view(ctx->buffers.back(), sp.dtype, sp.shape));
      ctx->saved.back().device = device;
    }
    run_forward(model, vi, inputs, num_inputs, outs.data(), num_outputs, device, nullptr, ctx->saved.data(), rng);
    *out_context = ctx.release();
  });
}

}  // namespace

THUNDERC_API thunderc_status thunderc_model_forward_train(thunderc_model* model, const DLTensor* inputs,
                                                          size_t num_inputs, DLTensor* outputs, size_t num_outputs,
                                                          thunderc_train_context* out_context) {
  return forward_train(model, inputs, num_inputs, outputs, num_outputs, out_context, nullptr,
                       "thunderc_model_forward_train");
}

THUNDERC_API thunderc_status thunderc_model_forward_train_seeded(thunderc_model* model, const DLTensor* inputs,
                                                                 size_t num_inputs, DLTensor* outputs,
                                                                 size_t num_outputs, uint64_t seed, uint64_t offset,
                                                                 thunderc_train_context* out_context) {
  const RngState rng{seed, offset};
  return forward_train(model, inputs, num_inputs, outputs, num_outputs, out_context, &rng,
                       "thunderc_model_forward_train_seeded");
}

THUNDERC_API uint64_t thunderc_model_rng_blocks(const thunderc_model* model, size_t variant) {
  if (!model || !model->manifest.is_training() || variant >= model->manifest.variants.size()) return 0;
  return model->manifest.variants[variant].training.rng_blocks;
}

THUNDERC_API thunderc_status thunderc_model_set_rng_state(thunderc_model* model, uint64_t seed, uint64_t offset) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, "thunderc_model_set_rng_state");
    model->rng_seed.store(seed);
    model->rng_offset.store(offset);
  });
}

THUNDERC_API thunderc_status thunderc_model_rng_state(const thunderc_model* model, uint64_t* seed, uint64_t* offset) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, "thunderc_model_rng_state");
    if (!seed || !offset) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_rng_state: seed or offset is NULL");
    *seed = model->rng_seed.load();
    *offset = model->rng_offset.load();
  });
}

THUNDERC_API thunderc_status thunderc_model_gradient_shape(const thunderc_model* model, thunderc_train_context context,
                                                           size_t gradient, int64_t* shape, int32_t capacity,
                                                           int32_t* out_ndim) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, "thunderc_model_gradient_shape");
    const Variant& v = context_variant(model, context, "thunderc_model_gradient_shape");
    if (!out_ndim) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "out_ndim is NULL");
    const auto& shapes = v.training.gradient_shapes;
    if (gradient >= shapes.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "gradient " + std::to_string(gradient) + " out of range (" + model->name +
                                                 " has " + std::to_string(shapes.size()) + ")");
    const int32_t ndim = static_cast<int32_t>(shapes[gradient].size());
    *out_ndim = ndim;
    if (ndim > capacity || (ndim > 0 && !shape))
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "gradient " + std::to_string(gradient) + " has " + std::to_string(ndim) +
                                                 " dimensions; shape has room for " + std::to_string(capacity));
    std::copy(shapes[gradient].begin(), shapes[gradient].end(), shape);
  });
}

THUNDERC_API thunderc_status thunderc_model_backward(thunderc_model* model, thunderc_train_context context,
                                                     const DLTensor* grad_outputs, size_t num_grad_outputs,
                                                     DLTensor* gradients, size_t num_gradients) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_training(model, "thunderc_model_backward");
    const Variant& v = context_variant(model, context, "thunderc_model_backward");
    const Manifest& mf = model->manifest;
    const size_t no = mf.outputs.size(), ng = mf.training.gradients.size();
    if (num_grad_outputs != no)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " has " + std::to_string(no) + " output(s), got " +
                                                 std::to_string(num_grad_outputs) +
                                                 " grad_outputs (one per output, with its shape and dtype)");
    if (no > 0 && !grad_outputs) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "grad_outputs is NULL");
    if (num_gradients != ng)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, model->name + " has " + std::to_string(ng) + " gradient(s), got " +
                                                 std::to_string(num_gradients) + " gradient buffers");
    if (ng > 0 && !gradients) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "gradients is NULL");
    for (size_t i = 0; i < no; ++i) {
      const TensorDesc& d = mf.outputs[i];
      check_backward_tensor(model, v, grad_outputs[i], "grad_output for output '" + d.name + "' (#" + std::to_string(i) + ")",
                            d.dtype, d.dtype_name, v.output_shapes[i], " (the shape and dtype of output '" + d.name + "')",
                            context->device);
    }
    for (size_t i = 0; i < ng; ++i) {
      const GradientDesc& g = mf.training.gradients[i];
      const std::string& dtype_name =
          g.is_parameter ? mf.training.parameters[g.index].dtype_name : mf.inputs[g.index].dtype_name;
      check_backward_tensor(model, v, gradients[i], gradient_label(mf, i), gradient_dtype(mf, g), dtype_name,
                            v.training.gradient_shapes[i], "", context->device);
    }
    // The gradients are written while the parameters, the saved tensors and grad_outputs are read.
    for (size_t i = 0; i < ng; ++i) {
      for (size_t j = 0; j < no; ++j)
        if (overlap(gradients[i], grad_outputs[j]))
          fail(THUNDERC_STATUS_INVALID_ARGUMENT, gradient_label(mf, i) + " overlaps the grad_output for output '" +
                                                     mf.outputs[j].name + "' (#" + std::to_string(j) +
                                                     ") in memory; gradients must not share memory with grad_outputs "
                                                     "(pass a separate buffer)");
      for (size_t j = 0; j < i; ++j)
        if (overlap(gradients[i], gradients[j]))
          fail(THUNDERC_STATUS_INVALID_ARGUMENT, gradient_label(mf, i) + " overlaps " + gradient_label(mf, j) +
                                                     " in memory; each gradient needs a buffer of its own");
    }
    check_no_parameter_overlap(model, gradients, ng, [&](size_t i) { return gradient_label(mf, i); }, "gradients");

    const size_t np = model->parameter_tensors.size(), ns = context->saved.size();
    SmallVec<DLTensor> in(np + ns + no);
    for (size_t i = 0; i < np; ++i) in[i] = model->parameter_tensors[i];
    for (size_t i = 0; i < ns; ++i) in[np + i] = context->saved[i];
    for (size_t i = 0; i < no; ++i) in[np + ns + i] = grad_outputs[i];
    SmallVec<DLTensor> outs(ng);
    for (size_t i = 0; i < ng; ++i) outs[i] = normalized(gradients[i]);
    call_entry(model, context->variant, Entry::Backward, in.data(), np + ns + no, outs.data(), ng, context->device,
               nullptr);
    // As the forward: a CUDA backward returns with the gradients written.
    if (context->device.device_type == kDLCUDA)
      cuda_synchronize(context->device.device_id, nullptr, "the backward", model->name);
  });
}

THUNDERC_API void thunderc_train_context_free(thunderc_train_context context) { delete context; }

// ---- optimizer (thunderc --optimizer) ----


THUNDERC_API const char* thunderc_model_optimizer(const thunderc_model* model) {
  return model && model->manifest.training.optimizer ? model->manifest.training.optimizer->kind.c_str() : nullptr;
}

THUNDERC_API thunderc_status thunderc_model_optimizer_options_init(const thunderc_model* model,
                                                                   thunderc_optimizer_options* options) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    const OptimizerDesc& o = require_optimizer(model, "thunderc_model_optimizer_options_init");
    if (!options) fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_optimizer_options_init: options is NULL");
    optimizer_defaults(o.kind, options);
  });
}

THUNDERC_API thunderc_status thunderc_model_optimizer_step(thunderc_model* model, const DLTensor* gradients,
                                                           size_t num_gradients, const thunderc_optimizer_options* options) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    const char* fn = "thunderc_model_optimizer_step";
    const OptimizerDesc& o = require_optimizer(model, fn);
    require_placed(model, fn);
    if (!options) fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options is NULL");
    if (options->struct_size != sizeof(thunderc_optimizer_options))
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->struct_size is " +
                                                 std::to_string(options->struct_size) + "; call "
                                                 "thunderc_model_optimizer_options_init() (this runtime expects " +
                                                 std::to_string(sizeof(thunderc_optimizer_options)) + ")");
    check_optimizer_options(o.kind, *options);
    const Manifest& mf = model->manifest;
    const size_t ng = mf.training.gradients.size();
    if (num_gradients != ng)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + model->name + " has " + std::to_string(ng) +
                                                 " gradient(s), got " + std::to_string(num_gradients) +
                                                 " (pass every gradient thunderc_model_backward wrote)");
    if (ng > 0 && !gradients) fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": gradients is NULL");
    // Each trainable parameter's gradient, checked as backward checks it.
    const Variant& v0 = mf.variants[0];
    const size_t nt = model->trainable.size();
    SmallVec<DLTensor> grads(nt);
    for (size_t k = 0; k < nt; ++k) {
      const size_t gi = model->trainable_gradient[k];
      const ParameterDesc& pd = mf.training.parameters[model->trainable[k]];
      check_backward_tensor(model, v0, gradients[gi], gradient_label(mf, gi), pd.dtype, pd.dtype_name, pd.shape, "",
                            model->parameter_device);
      grads[k] = normalized(gradients[gi]);
    }
    check_no_parameter_overlap(model, grads.data(), nt, [&](size_t k) { return "the gradient of parameter '" +
                                                                        mf.training.parameters[model->trainable[k]].name + "'"; },
                               "gradients");
    // The hyperparameters of this step, as 0-d float32 tensors (on CUDA uploaded to the model's device copy).
    const uint64_t step = model->optimizer_steps + 1;
    for (size_t i = 0; i < o.scalars.size(); ++i)
      model->optimizer_scalars[i] = static_cast<float>(optimizer_scalar(o.scalars[i], *options, step));
    const DLDevice device = model->parameter_device;
    const bool cuda = device.device_type == kDLCUDA;
    if (cuda)
      cuda_copy_to_device(device.device_id, model->optimizer_scalars_device, model->optimizer_scalars.data(),
                          model->optimizer_scalars.size() * sizeof(float), "uploading the optimizer's hyperparameters",
                          model->name);
    // Inputs: parameters, gradients, state, hyperparameters; outputs: parameters, state (the same buffers).
    const size_t ns = model->optimizer_state_tensors.size();
    const size_t num_in = 2 * nt + ns + o.scalars.size(), num_out = nt + ns;
    SmallVec<DLTensor> in(num_in), out(num_out);
    for (size_t k = 0; k < nt; ++k) in[k] = out[k] = model->parameter_tensors[model->trainable[k]];
    for (size_t k = 0; k < nt; ++k) in[nt + k] = grads[k];
    for (size_t s = 0; s < ns; ++s) in[2 * nt + s] = out[nt + s] = model->optimizer_state_tensors[s];
    for (size_t i = 0; i < o.scalars.size(); ++i) {
      void* at = cuda ? static_cast<void*>(static_cast<float*>(model->optimizer_scalars_device) + i)
                      : static_cast<void*>(&model->optimizer_scalars[i]);
      DLTensor t = host_view(at, DLDataType{kDLFloat, 32, 1}, model->scalar_shape);
      t.device = device;
      in[2 * nt + ns + i] = t;
    }
    call_entry(model, 0, Entry::Optimizer, in.data(), num_in, out.data(), num_out, device, nullptr);
    if (cuda) cuda_synchronize(device.device_id, nullptr, "the optimizer step", model->name);
    model->optimizer_steps = step;
  });
}

THUNDERC_API uint64_t thunderc_model_optimizer_steps(const thunderc_model* model) {
  return model && model->manifest.training.optimizer ? model->optimizer_steps : 0;
}

THUNDERC_API thunderc_status thunderc_model_set_optimizer_steps(thunderc_model* model, uint64_t steps) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    require_optimizer(model, "thunderc_model_set_optimizer_steps");
    model->optimizer_steps = steps;
  });
}

THUNDERC_API thunderc_status thunderc_model_optimizer_state(thunderc_model* model, size_t parameter, size_t slot,
                                                            DLTensor* out) {
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    const char* fn = "thunderc_model_optimizer_state";
    const OptimizerDesc& o = require_optimizer(model, fn);
    require_placed(model, fn);
    if (!out) fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": out is NULL");
    const auto& params = model->manifest.training.parameters;
    if (parameter >= params.size() || !params[parameter].trainable)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": parameter " + std::to_string(parameter) +
                                                 (parameter < params.size() ? " ('" + params[parameter].name + "') is a buffer, which has no optimizer state"
                                                                            : " out of range (" + model->name + " has " +
                                                                                  std::to_string(params.size()) + ")"));
    if (slot >= o.state.size())
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, std::string(fn) + ": slot " + std::to_string(slot) + " out of range (" +
                                                 o.kind + " keeps " + std::to_string(o.state.size()) + " per parameter)");
    const size_t k = static_cast<size_t>(std::find(model->trainable.begin(), model->trainable.end(), parameter) -
                                         model->trainable.begin());
    *out = model->optimizer_state_tensors[slot * model->trainable.size() + k];
  });
}

THUNDERC_API thunderc_status thunderc_model_prepare_device(thunderc_model* model, DLDevice device,
                                                           const char** out_image) {
  if (out_image) *out_image = nullptr;
  if (thunderc_status st = check_model(model)) return st;
  return guarded([&] {
    if (device.device_type != kDLCUDA)
      fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_prepare_device: " + device_to_string(device) +
                                                 " is not a CUDA device (only CUDA devices have state to prepare)");
    if (!model->cuda)
      fail(THUNDERC_STATUS_DEVICE_UNAVAILABLE, model->name + " has no CUDA variant");
    const std::string& image = model->cuda->prepare(device.device_id);
    place_parameters(model, device);
    if (out_image) *out_image = image.c_str();
  });
}

}  // extern "C"
