// libFuzzer target: the runtime's input validation. Opens fuzz/models/fuzz_model.so (a symbolic and a
// fixed variant, see fuzz/models/fuzz_model.cpp) once, then calls thunderc_model_run / _run_alloc /
// _select_variant / _output_shape with DLTensor descriptors built from the input: dtype (code, bits,
// lanes), ndim, shape values, strides, byte_offset, device, data pointer, and the number of tensors.
// The runtime must answer with a status; a crash, a sanitizer report, an out-of-bounds access to a buffer
// (each is allocated to exactly the size its descriptor describes), or a call that reaches the model with
// tensors breaking the manifest's guards (the model aborts) is a finding.
//
// Each descriptor starts from one the model accepts (so most inputs get deep into dispatch) and the input
// then decides which fields to replace with arbitrary values.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "thunderc/runtime.h"

#ifndef THUNDERC_FUZZ_MODEL
#error "THUNDERC_FUZZ_MODEL (path of fuzz_model.so) must be defined"
#endif

namespace {

thunderc_model* g_model = nullptr;
// The harness steers around known findings (fuzz/findings/README.md) so that fuzzing goes on; these
// variables turn that off, to replay them.
const bool g_any_device_type = std::getenv("THUNDERC_FUZZ_ANY_DEVICE_TYPE") != nullptr;
const bool g_huge_zero_size = std::getenv("THUNDERC_FUZZ_HUGE_ZERO_SIZE") != nullptr;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_run: %s\n", what.c_str());
  std::abort();
}

// One descriptor with the storage it points to. shape/strides have 64 entries whatever ndim says (the
// runtime accepts ndim <= 64), so the harness itself never reads past them; ndim outside 0..64 must be
// rejected before they are read. The data buffer is exactly as large as the descriptor says.
struct Tensor {
  DLTensor t{};
  int64_t shape[64] = {};
  int64_t strides[64] = {};
  std::unique_ptr<char[]> data;
};

int64_t pick_extent(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return in.ConsumeIntegral<int64_t>();
    case 1: return -in.ConsumeIntegralInRange<int64_t>(0, 3);
    case 2: return in.ConsumeBool() ? INT64_MAX : (int64_t{1} << in.ConsumeIntegralInRange<int>(31, 62));
    default: return in.ConsumeIntegralInRange<int64_t>(0, 9);
  }
}

// bytes = byte_offset + dense size when that is small enough to allocate, else 0 (the runtime must refuse
// such a tensor before anything reads it: no guard admits more than 8 x 5 elements).
size_t buffer_bytes(const DLTensor& t) {
  if (t.ndim < 0 || t.ndim > 64) return 0;
  unsigned __int128 n = (static_cast<unsigned>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) return 0;  // (ndim > 0 here, so shape is not NULL: the caller checks)
    n *= static_cast<uint64_t>(t.shape[d]);
    if (n > (1u << 20)) return 0;
  }
  return static_cast<size_t>(n) + static_cast<size_t>(t.byte_offset);
}

// A descriptor for an input or output shaped `base` (dtype code/bits) that the input may then corrupt.
void make(FuzzedDataProvider& in, Tensor& x, uint8_t code, uint8_t bits, const std::vector<int64_t>& base) {
  x.t.dtype = DLDataType{code, bits, 1};
  x.t.ndim = static_cast<int32_t>(base.size());
  for (size_t d = 0; d < base.size(); ++d) x.shape[d] = base[d];
  x.t.device = DLDevice{kDLCPU, 0};
  x.t.byte_offset = 0;
  x.t.shape = x.shape;
  x.t.strides = nullptr;
  bool with_data = true;
  // Which fields to corrupt.
  const uint16_t what = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint16_t>();
  if (what & 1) x.t.dtype.code = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint8_t>(0, 6) : in.ConsumeIntegral<uint8_t>();
  if (what & 2) {
    static const uint8_t kBits[] = {0, 1, 8, 16, 32, 64, 128};
    x.t.dtype.bits = in.ConsumeBool() ? kBits[in.ConsumeIntegralInRange<int>(0, 6)] : in.ConsumeIntegral<uint8_t>();
  }
  if (what & 4) x.t.dtype.lanes = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint16_t>();
  if (what & 8) {
    x.t.ndim = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 4)
                                : (in.ConsumeBool() ? in.ConsumeIntegral<int32_t>() : in.ConsumeIntegralInRange<int32_t>(60, 70));
  }
  if (what & 16) {
    const int n = in.ConsumeIntegralInRange<int>(1, 4);
    for (int i = 0; i < n; ++i) x.shape[in.ConsumeIntegralInRange<int>(0, 63)] = pick_extent(in);
  }
  if (what & 32) {
    x.t.strides = x.strides;
    int64_t s = 1;
    const int nd = x.t.ndim < 0 || x.t.ndim > 64 ? 64 : x.t.ndim;
    for (int d = nd - 1; d >= 0; --d) {
      x.strides[d] = s;
      s *= x.shape[d] > 0 && x.shape[d] < (1 << 20) ? x.shape[d] : 1;
    }
    if (in.ConsumeBool()) x.strides[in.ConsumeIntegralInRange<int>(0, 63)] = pick_extent(in);
  }
  if (what & 64) x.t.byte_offset = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 64) : in.ConsumeIntegral<uint64_t>();
  if (what & 128) {
    static const int32_t kTypes[] = {kDLCPU, kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLVulkan, kDLMetal, kDLROCM};
    // Any value of the enum's range (0..15). Values outside it are a known finding (docs/security.md,
    // fuzz/findings/run-device-type-out-of-enum-range): the runtime loads device_type as the C++ enum,
    // which UBSan reports as an invalid enum load in device_to_string; excluded so fuzzing goes on, unless
    // THUNDERC_FUZZ_ANY_DEVICE_TYPE is set (to replay that finding).
    x.t.device.device_type = static_cast<DLDeviceType>(
        in.ConsumeBool() ? kTypes[in.ConsumeIntegralInRange<int>(0, 6)]
                         : (g_any_device_type ? in.ConsumeIntegral<int32_t>() : in.ConsumeIntegralInRange<int32_t>(0, 15)));
    x.t.device.device_id = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-1, 2) : in.ConsumeIntegral<int32_t>();
  }
  // Known finding (fuzz/findings/run-is-contiguous-signed-overflow): with a zero-size dtype (bits or lanes
  // 0) huge extents pass the size check and overflow int64 in is_contiguous (runtime/src/util.cpp). Keep
  // the extents of such tensors small, unless THUNDERC_FUZZ_HUGE_ZERO_SIZE is set.
  if (!g_huge_zero_size && (static_cast<unsigned>(x.t.dtype.bits) * x.t.dtype.lanes + 7) / 8 == 0)
    for (int64_t& e : x.shape)
      if (e > (1 << 20)) e &= 0xffff;
  if (what & 256) x.t.shape = nullptr;
  if (what & 512) with_data = false;
  // A huge byte_offset with a real buffer would make the caller, not the runtime, wrong: keep the buffer
  // consistent with the descriptor whenever it is allocatable at all.
  if (x.t.byte_offset > 4096) with_data = false;
  // A scalar (ndim 0) may have shape NULL; it still holds one element.
  const size_t bytes = x.t.shape || x.t.ndim == 0 ? buffer_bytes(x.t) : 0;
  // The values: 0x3f bytes (0.75 as float32), or any byte repeated (NaN, infinities, large values), and
  // maybe one byte changed, for the bounded variant's value guard (finite_max_abs).
  const uint8_t fill = in.ConsumeBool() ? 0x3f : in.ConsumeIntegral<uint8_t>();
  const bool poke = in.ConsumeBool();
  const size_t poke_at = poke ? in.ConsumeIntegral<size_t>() : 0;
  const uint8_t poke_byte = poke ? in.ConsumeIntegral<uint8_t>() : 0;
  if (with_data && (bytes > 0 || x.t.byte_offset == 0)) {
    x.data.reset(new char[bytes ? bytes : 1]);
    std::memset(x.data.get(), fill, bytes ? bytes : 1);
    if (poke && bytes) x.data[poke_at % bytes] = static_cast<char>(poke_byte);
    x.t.data = x.data.get();
  } else {
    x.t.data = nullptr;
  }
}

// THUNDERC_FUZZ_DEBUG=1: print each call's descriptors (to read a reproducer).
void dump(const char* what, const std::vector<DLTensor>& ts) {
  if (!std::getenv("THUNDERC_FUZZ_DEBUG")) return;
  for (size_t i = 0; i < ts.size(); ++i) {
    const DLTensor& t = ts[i];
    std::fprintf(stderr, "%s[%zu]: dtype {%u,%u,%u} ndim %d device {%d,%d} byte_offset %llu data %p shape", what, i,
                 t.dtype.code, t.dtype.bits, t.dtype.lanes, t.ndim, static_cast<int>(t.device.device_type),
                 t.device.device_id, static_cast<unsigned long long>(t.byte_offset), t.data);
    for (int d = 0; t.shape && d < t.ndim && d < 64; ++d) std::fprintf(stderr, " %lld", static_cast<long long>(t.shape[d]));
    if (t.strides) {
      std::fprintf(stderr, " strides");
      for (int d = 0; d < t.ndim && d < 64; ++d) std::fprintf(stderr, " %lld", static_cast<long long>(t.strides[d]));
    }
    std::fprintf(stderr, "\n");
  }
}

void free_status(thunderc_status st) {
  const thunderc_status_code_t code = thunderc_status_code(st);
  if (st && (code <= THUNDERC_STATUS_OK || code > THUNDERC_STATUS_INTERNAL)) finding("status with an invalid code");
  if (st && std::strlen(thunderc_status_message(st)) == 0) finding("status without a message");
  if (code == THUNDERC_STATUS_INTERNAL || code == THUNDERC_STATUS_KERNEL_FAILED)
    finding(std::string("unexpected status ") + thunderc_status_code_name(code) + ": " + thunderc_status_message(st));
  thunderc_status_free(st);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  thunderc_open_options opts;
  thunderc_open_options_init(&opts);
  opts.num_threads = 1;
  thunderc_status st = thunderc_model_open(THUNDERC_FUZZ_MODEL, &opts, &g_model);
  if (st) {
    std::fprintf(stderr, "fuzz_run: cannot open %s: %s\n", THUNDERC_FUZZ_MODEL, thunderc_status_message(st));
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int api = in.ConsumeIntegralInRange<int>(0, 3);
  // Start from a call of variant 0 (x [2, 3], k []) or variant 1 (x [B, C], k [B]).
  const bool symbolic = in.ConsumeBool();
  const int64_t B = symbolic ? in.ConsumeIntegralInRange<int64_t>(0, 9) : 2;
  const int64_t C = symbolic ? in.ConsumeIntegralInRange<int64_t>(1, 6) : 3;
  size_t n_in = 2, n_out = 2;
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) n_in = in.ConsumeIntegralInRange<size_t>(0, 3);
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) n_out = in.ConsumeIntegralInRange<size_t>(0, 3);
  std::vector<Tensor> inputs(n_in), outputs(n_out);
  for (size_t i = 0; i < n_in; ++i) {
    if (i == 1) make(in, inputs[i], kDLInt, 64, symbolic ? std::vector<int64_t>{B} : std::vector<int64_t>{});
    else make(in, inputs[i], kDLFloat, 32, {B, C});
  }
  for (size_t i = 0; i < n_out; ++i) {
    if (i == 1) make(in, outputs[i], kDLInt, 64, {});
    else make(in, outputs[i], kDLFloat, 32, {B, symbolic ? 2 * C + 1 : C});
  }
  std::vector<DLTensor> in_t, out_t;
  for (auto& x : inputs) in_t.push_back(x.t);
  for (auto& x : outputs) out_t.push_back(x.t);
  if (std::getenv("THUNDERC_FUZZ_DEBUG")) std::fprintf(stderr, "api %d\n", api);
  dump("input", in_t);
  dump("output", out_t);
  const DLTensor* in_p = in.ConsumeIntegralInRange<int>(0, 31) == 0 ? nullptr : in_t.data();
  if (n_in == 0 && in.ConsumeBool()) in_p = nullptr;

  switch (api) {
    case 0: {
      DLTensor* out_p = in.ConsumeIntegralInRange<int>(0, 31) == 0 ? nullptr : out_t.data();
      free_status(thunderc_model_run(g_model, in_p, n_in, out_p, n_out));
      break;
    }
    case 1: {
      std::vector<DLManagedTensor*> outs(n_out + 1, reinterpret_cast<DLManagedTensor*>(uintptr_t{1}));
      thunderc_status st = thunderc_model_run_alloc(g_model, in_p, n_in, outs.data(), n_out);
      for (size_t i = 0; i < n_out; ++i) {
        if (st && outs[i]) finding("run_alloc failed but left an output set");
        if (!st) {
          if (!outs[i] || !outs[i]->deleter) finding("run_alloc succeeded without an output");
          const DLTensor& t = outs[i]->dl_tensor;
          for (int d = 0; d < t.ndim; ++d)
            if (t.shape[d] < 0) finding("run_alloc produced a negative extent");
          outs[i]->deleter(outs[i]);
        }
      }
      if (outs[n_out] != reinterpret_cast<DLManagedTensor*>(uintptr_t{1})) finding("run_alloc wrote past num_outputs");
      free_status(st);
      break;
    }
    case 2: {
      size_t variant = 12345;
      thunderc_status st = thunderc_model_select_variant(g_model, in_p, n_in, &variant);
      if (!st && variant >= thunderc_model_num_variants(g_model)) finding("select_variant gave an invalid variant");
      free_status(st);
      break;
    }
    case 3: {
      const int32_t capacity = in.ConsumeIntegralInRange<int32_t>(-1, 4);
      const size_t output = in.ConsumeIntegralInRange<size_t>(0, 3);
      // Exactly `capacity` entries (none: NULL), so writing more is a heap overflow.
      std::unique_ptr<int64_t[]> shape(capacity > 0 ? new int64_t[capacity] : nullptr);
      int32_t ndim = -5;
      thunderc_status st = thunderc_model_output_shape(g_model, in_p, n_in, output, shape.get(), capacity, &ndim);
      if (!st)
        for (int32_t d = 0; d < ndim; ++d)
          if (shape[d] < 0) finding("output_shape gave a negative extent");
      free_status(st);
      break;
    }
  }
  return 0;
}
