// Internal declarations of libthunderc_runtime (not installed, not part of the API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "thunderc/abi.h"
#include "thunderc/runtime.h"

namespace thunderc::rt {

// Errors inside the library are exceptions; the C API boundary turns them into thunderc_status.
class RtError : public std::exception {
 public:
  RtError(thunderc_status_code_t code, std::string message) : code_(code), message_(std::move(message)) {}
  thunderc_status_code_t code() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  thunderc_status_code_t code_;
  std::string message_;
};

// A status for the C API (defined in runtime.cpp, where thunderc_status_s is).
thunderc_status make_api_status(thunderc_status_code_t code, const char* message) noexcept;

// Runs fn, converting every exception into a status: nothing throws across the C API.
template <class F>
thunderc_status guarded(F&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const RtError& e) {
    return make_api_status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_api_status(THUNDERC_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return make_api_status(THUNDERC_STATUS_INTERNAL, (std::string("internal error: ") + e.what()).c_str());
  } catch (...) {
    return make_api_status(THUNDERC_STATUS_INTERNAL, "internal error: unknown exception");
  }
}

[[noreturn]] inline void fail(thunderc_status_code_t code, std::string message) {
  throw RtError(code, std::move(message));
}

// ---- dtypes / devices / shapes -------------------------------------------------------------------
bool dtype_equal(DLDataType a, DLDataType b);
std::string dtype_to_string(DLDataType dtype);         // "float32" or "dtype(code=.., bits=.., lanes=..)"
std::string device_to_string(DLDevice device);         // "cpu", "cuda:0", ...
bool parse_device(const std::string& text, DLDevice* out);  // "cpu", "cuda", "cuda:N"
std::string shape_to_string(const int64_t* shape, int ndim);
inline std::string shape_to_string(const std::vector<int64_t>& s) {
  return shape_to_string(s.data(), static_cast<int>(s.size()));
}
// Bytes of a dense tensor; false on overflow or negative extents.
bool dense_nbytes(const int64_t* shape, int ndim, DLDataType dtype, size_t* out);
// Compact row-major (PyTorch is_contiguous semantics: size-1 dims may have any stride).
bool is_contiguous(const DLTensor& t);
// Every element of a dense host tensor (float16/bfloat16/float32/float64) is finite with |x| <= bound (a
// power of two; any bound above the dtype's range means just "finite"). False for other dtypes.
bool finite_within(const DLTensor& t, double bound);
std::string format_bound(double bound);  // "2^16" for a power of two, else %g

// ---- manifest ------------------------------------------------------------------------------------
struct TensorDesc {
  std::string name;
  std::string dtype_name;
  DLDataType dtype{};
};

struct Guard {
  std::string input;
  std::string dtype_name;
  DLDataType dtype{};
  std::vector<int64_t> shape;  // -1 where the dimension is a symbol
  std::vector<int> sym;        // parallel to shape: index into Variant::dims, or -1 for a fixed size
  std::string shape_text;      // "[B, 64]"
  std::string device_name;
  DLDevice device{};
  bool contiguous = true;
  // "finite_max_abs" (a bounded variant, docs/manifest.md): the input's values must be finite with
  // |x| <= this; 0 when the guard has none.
  double finite_max_abs = 0;
};

// A symbolic dimension of a variant (manifest "dims"): bound from the inputs on every call.
struct SymDim {
  std::string name;
  int64_t min = 0, max = 0;  // inclusive
};

// One output dimension of a symbolic variant: c + sum coeff * dims[index].
struct AffineDim {
  int64_t c = 0;
  std::vector<std::pair<int, int64_t>> terms;
};

// ---- training models (thunderc --autograd, ABI 5, dropout's RNG state ABI 6; docs/manifest.md "Training models") -----------------
// One parameter: its initial value lies at [offset, offset + bytes) of the blob thunderc_parameters returns.
struct ParameterDesc {
  std::string name;
  std::string dtype_name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  size_t offset = 0;  // a multiple of 64
  size_t bytes = 0;   // dtype size * element count
  bool trainable = true;  // false: a buffer (batch norm's running statistics) without a gradient
};

// One gradient the backward entry writes: of a model input or of a parameter.
struct GradientDesc {
  std::string name;
  bool is_parameter = false;
  size_t index = 0;  // into Manifest::inputs, or Training::parameters when is_parameter
};

// The top-level "training" object.
// The "training.optimizer" object (thunderc --optimizer): the update program's entry and what it takes.
struct OptimizerDesc {
  std::string kind;                  // "sgd" or "adamw"
  std::string entry;
  size_t workspace_bytes = 0;
  std::vector<std::string> state;    // slots per trainable parameter (the kind's, in order)
  std::vector<std::string> scalars;  // hyperparameter inputs, in order (optimizer_scalar_names() lists them)
  thunderc_entry_fn fn = nullptr;    // resolved by the loader
};

// The hyperparameters an optimizer's update may take, by kind (runtime.cpp computes each per step).
const std::vector<std::string>& optimizer_scalar_names(const std::string& kind);
// Its state slots per parameter, in order.
const std::vector<std::string>& optimizer_state_names(const std::string& kind);
// torch.optim's defaults for `kind`; INVALID_ARGUMENT for options it refuses; the value of hyperparameter `name`
// for step `step` (from 1) (optimizer.cpp).
void optimizer_defaults(const std::string& kind, thunderc_optimizer_options* options);
void check_optimizer_options(const std::string& kind, const thunderc_optimizer_options& options);
double optimizer_scalar(const std::string& name, const thunderc_optimizer_options& options, uint64_t step);

struct Training {
  std::vector<ParameterDesc> parameters;
  std::vector<GradientDesc> gradients;  // the order in which the backward entry writes them
  // Buffers (parameter indices) whose new values a training forward writes after its saved tensors, in this
  // order; the runtime copies them into the parameters' state once the forward has returned.
  std::vector<size_t> updates;
  std::optional<OptimizerDesc> optimizer;
};

// A tensor a training forward saves for the backward (the runtime allocates it).
struct SavedSpec {
  std::string dtype_name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

// A variant's "training" object.
struct VariantTraining {
  std::vector<SavedSpec> saved;
  std::string backward_entry;
  size_t backward_workspace_bytes = 0;
  std::vector<std::vector<int64_t>> gradient_shapes;  // one per Training::gradients entry
  // Dropout: Philox counter blocks one forward draws; > 0: the forward's last input is the RNG state, an
  // int64 [2] (seed, offset) after the parameters (ABI 6).
  uint64_t rng_blocks = 0;
  // Filled in by the loader.
  thunderc_entry_fn backward_fn = nullptr;
};

struct Variant {
  size_t id = 0;
  std::string entry;
  bool bounded = false;  // a guard has finite_max_abs: the variant reads its inputs' values to accept them
  std::vector<SymDim> dims;  // empty: every size fixed
  std::vector<Guard> guards;
  std::vector<std::vector<int64_t>> output_shapes;  // -1 where the size depends on a symbol
  std::vector<std::vector<AffineDim>> output_dims;  // symbolic variants: every output dimension
  bool symbolic() const { return !dims.empty(); }
  size_t workspace_bytes = 0;
  DLDevice device{kDLCPU, 0};
  std::string device_name = "cpu";
  std::string signature;
  VariantTraining training;  // training models only (Manifest::is_training())
  // Filled in by the loader.
  thunderc_entry_fn fn = nullptr;
  bool available = true;
  std::string unavailable_reason;
};

// thunder.jit's cache option, as the runtime honours it (docs/runtime.md).
enum class CacheMode {
  ConstantValues,  // check every guard on every call (the last matching variant is tried first)
  SameInput,       // check guards on the first call only, then reuse that variant (unsafe by design)
  NoCaching,       // select afresh on every call, remember nothing
  SymbolicValues,  // like ConstantValues; variants may have symbolic dimensions bound from the inputs
};

// Binds v's symbols from the inputs (values: v.dims.size() entries). Empty when every symbol is bound
// consistently and within its range, else why not (names the input, the dimension, the value and the
// range or the conflicting binding). Fixed sizes, dtypes and devices are checked elsewhere.
std::string bind_dims(const Variant& v, const std::vector<TensorDesc>& inputs, const DLTensor* tensors, size_t n,
                      int64_t* values);
// Output `i`'s shape of v under `values` (from bind_dims; ignored for fixed variants). False when a symbolic
// size overflows or is negative under these values (shape is then unspecified).
bool output_shape(const Variant& v, size_t i, const int64_t* values, int64_t* shape);

struct Manifest {
  uint32_t abi_version = 0;
  CacheMode cache = CacheMode::ConstantValues;
  bool cuda_graphs = false;  // options.cuda_graphs (--cuda-graphs): CUDA variants replay a captured graph
  bool profile = false;      // options.profile (--profile): the .so exports thunderc_profile (abi.h)
  std::string cpu_target;    // options.cpu_target (--cpu-target): "x86-64-v3", ...; empty in older manifests
  // options.cpu_targets: every level the host code was built for, ascending, cpu_target first (a one-level
  // model: just cpu_target; empty in older manifests). Entries of the levels above the first carry
  // cpu_target_symbol_suffix(level).
  std::vector<std::string> cpu_targets;
  std::string precision = "fp32";  // options.precision (--precision): CPU variants in bf16 need BF16 instructions
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<Variant> variants;
  // A training model (thunderc --autograd): the manifest has a top-level "training" object, and every variant
  // is a training forward with a backward entry.
  bool training_model = false;
  Training training;
  bool is_training() const { return training_model; }
};

// Parses and validates; throws RtError(MANIFEST) naming `origin` and the offending field.
Manifest parse_manifest(const std::string& text, const std::string& origin);

// ---- ELF sanity check before dlopen (a truncated file must not SIGBUS inside the loader) ---------
// Throws RtError(IO) with a clear message.
void check_elf_file(const std::string& path);

// ---- CUDA driver, reached at run time through dlopen("libcuda.so.1") (cuda_driver.cpp) ----------------
namespace cu {
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
using CUdeviceptr = unsigned long long;
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kInvalidHandle = 400;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;

inline void* to_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
inline CUdeviceptr to_dev(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
}  // namespace cu

struct CudaDriver {
  void* lib = nullptr;
  cu::CUresult (*cuInit)(unsigned) = nullptr;
  cu::CUresult (*cuDeviceGetCount)(int*) = nullptr;
  cu::CUresult (*cuDeviceGet)(cu::CUdevice*, int) = nullptr;
  cu::CUresult (*cuDeviceGetAttribute)(int*, int, cu::CUdevice) = nullptr;
  cu::CUresult (*cuDevicePrimaryCtxRetain)(cu::CUcontext*, cu::CUdevice) = nullptr;
  cu::CUresult (*cuCtxPushCurrent)(cu::CUcontext) = nullptr;
  cu::CUresult (*cuCtxPopCurrent)(cu::CUcontext*) = nullptr;
  cu::CUresult (*cuCtxSynchronize)() = nullptr;
  cu::CUresult (*cuMemAlloc)(cu::CUdeviceptr*, size_t) = nullptr;
  cu::CUresult (*cuMemFree)(cu::CUdeviceptr) = nullptr;
  cu::CUresult (*cuMemcpyHtoD)(cu::CUdeviceptr, const void*, size_t) = nullptr;
  cu::CUresult (*cuMemcpyHtoDAsync)(cu::CUdeviceptr, const void*, size_t, cu::CUstream) = nullptr;
  cu::CUresult (*cuMemcpyDtoHAsync)(void*, cu::CUdeviceptr, size_t, cu::CUstream) = nullptr;
  cu::CUresult (*cuMemcpyDtoDAsync)(cu::CUdeviceptr, cu::CUdeviceptr, size_t, cu::CUstream) = nullptr;
  cu::CUresult (*cuStreamCreate)(cu::CUstream*, unsigned) = nullptr;
  cu::CUresult (*cuStreamDestroy)(cu::CUstream) = nullptr;
  cu::CUresult (*cuStreamSynchronize)(cu::CUstream) = nullptr;
  cu::CUresult (*cuEventCreate)(cu::CUevent*, unsigned) = nullptr;
  cu::CUresult (*cuEventDestroy)(cu::CUevent) = nullptr;
  cu::CUresult (*cuEventRecord)(cu::CUevent, cu::CUstream) = nullptr;
  cu::CUresult (*cuEventSynchronize)(cu::CUevent) = nullptr;
  cu::CUresult (*cuEventElapsedTime)(float*, cu::CUevent, cu::CUevent) = nullptr;
  cu::CUresult (*cuModuleLoadDataEx)(cu::CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  cu::CUresult (*cuModuleUnload)(cu::CUmodule) = nullptr;
  cu::CUresult (*cuModuleGetFunction)(cu::CUfunction*, cu::CUmodule, const char*) = nullptr;
  cu::CUresult (*cuLaunchKernel)(cu::CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 cu::CUstream, void**, void**) = nullptr;
  // Optional (NULL when the driver lacks them).
  cu::CUresult (*cuFuncSetAttribute)(cu::CUfunction, int, int) = nullptr;
  // CUDA graphs (optional: a driver without them runs --cuda-graphs models without graphs).
  cu::CUresult (*cuStreamBeginCapture)(cu::CUstream, int) = nullptr;
  cu::CUresult (*cuStreamEndCapture)(cu::CUstream, void**) = nullptr;
  cu::CUresult (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long) = nullptr;
  cu::CUresult (*cuGraphLaunch)(void*, cu::CUstream) = nullptr;
  cu::CUresult (*cuGraphExecDestroy)(void*) = nullptr;
  cu::CUresult (*cuGraphDestroy)(void*) = nullptr;
  bool has_graphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags && cuGraphLaunch &&
           cuGraphExecDestroy && cuGraphDestroy;
  }
  cu::CUresult (*cuGetErrorName)(cu::CUresult, const char**) = nullptr;
  cu::CUresult (*cuGetErrorString)(cu::CUresult, const char**) = nullptr;

  bool loaded = false;   // libcuda.so.1 opened, every required symbol found, cuInit succeeded
  int device_count = 0;
  std::string error;     // why no CUDA device is usable, when device_count == 0

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)", or "CUDA error 1" when the driver cannot name it.
  std::string error_text(cu::CUresult r) const;
  // "<what> failed: CUDA_ERROR_... (...)"
  std::string failed(const std::string& what, cu::CUresult r) const { return what + " failed: " + error_text(r); }
};

// The process-wide driver (dlopen'ed and cuInit'ed once, on first use). Never throws.
const CudaDriver& cuda_driver();

// Status code for a failed driver call (OUT_OF_MEMORY, INVALID_ARGUMENT for INVALID_VALUE/HANDLE, else
// `otherwise`).
thunderc_status_code_t cuda_status_code(cu::CUresult r, thunderc_status_code_t otherwise);

// Throws DEVICE_UNAVAILABLE unless `device` is a CUDA device present here ("cuda:3 is not available: ...").
void require_cuda_device(DLDevice device);

// The primary context of CUDA device `ordinal`, retained once for the process lifetime. Throws RtError.
cu::CUcontext cuda_primary_context(int ordinal);

// Makes `ctx` current on this thread for the scope (cuCtxPushCurrent / cuCtxPopCurrent). Throws RtError.
class CudaContextScope {
 public:
  explicit CudaContextScope(cu::CUcontext ctx);
  ~CudaContextScope();
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;
};

// Device memory on `ordinal` (the primary context is made current for the call). NULL + *error on failure.
void* cuda_alloc(int ordinal, size_t bytes, std::string* error);
void cuda_free(int ordinal, void* ptr);

// Copies on `ordinal` with its primary context current, for the training state (runtime.cpp). Throw RtError
// "<what> of <of> on cuda:N: ..." (OUT_OF_MEMORY, INVALID_ARGUMENT or KERNEL_FAILED as cuda_status_code maps
// the driver's error); the message is built only then, so a training step's calls allocate nothing for it.
void cuda_copy_to_device(int ordinal, void* dst, const void* host_src, size_t bytes, const char* what,
                         const std::string& of);  // waits
void cuda_copy_on_device(int ordinal, void* dst, const void* src, size_t bytes, void* stream, const char* what,
                         const std::string& of);  // enqueued on `stream`
// Waits for the work enqueued on `stream` (NULL: the default stream) of device `ordinal`.
void cuda_synchronize(int ordinal, void* stream, const char* what, const std::string& of);

}  // namespace thunderc::rt
