// Internal declarations of libthunderc_runtime (not installed, not part of the API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
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

struct Variant {
  size_t id = 0;
  std::string entry;
  std::vector<SymDim> dims;  // empty: every size fixed
  std::vector<Guard> guards;
  std::vector<std::vector<int64_t>> output_shapes;  // -1 where the size depends on a symbol
  std::vector<std::vector<AffineDim>> output_dims;  // symbolic variants: every output dimension
  bool symbolic() const { return !dims.empty(); }
  size_t workspace_bytes = 0;
  DLDevice device{kDLCPU, 0};
  std::string device_name = "cpu";
  std::string signature;
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
// Output `i`'s shape of v under `values` (from bind_dims; ignored for fixed variants).
void output_shape(const Variant& v, size_t i, const int64_t* values, int64_t* shape);

struct Manifest {
  uint32_t abi_version = 0;
  CacheMode cache = CacheMode::ConstantValues;
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<Variant> variants;
};

// Parses and validates; throws RtError(MANIFEST) naming `origin` and the offending field.
Manifest parse_manifest(const std::string& text, const std::string& origin);

// ---- ELF sanity check before dlopen (a truncated file must not SIGBUS inside the loader) ---------
// Throws RtError(IO) with a clear message.
void check_elf_file(const std::string& path);

// ---- CUDA driver, probed at run time through dlopen("libcuda.so.1") -------------------------------
struct CudaProbe {
  bool driver_loaded = false;
  int device_count = 0;
  std::string error;  // why no device is usable, when device_count == 0
};
const CudaProbe& cuda_probe();
void* cuda_alloc(int device, size_t bytes, std::string* error);  // NULL on failure
void cuda_free(int device, void* ptr);

}  // namespace thunderc::rt
