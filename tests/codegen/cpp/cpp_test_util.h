// Helpers for the loop executors' conformance suite: hand-built traces, compiled once with the torch
// executor (the reference: ATen through the shim) and once with the executor under test, both with
// compile_model, run through libthunderc_runtime on the same seeded inputs and compared.
//
// One suite, every backend (conformance_test.cpp): built as test_codegen_cpp it checks `cpp` (+ torch for
// anything cpp rejects); built with THUNDERC_CONFORMANCE_NVFUSER (tests/codegen/nvfuser) the same traces are
// moved to CUDA, claimed by `nvfuser` alone and run end to end through the CUDA emulator (emu_model.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/compile.h"
#include "common/compile_trace.h"
#include "core/executors/executor.h"
#include "core/ir/half.h"
#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core/transforms/fusion.h"
#include "thunderc/runtime.hpp"
#ifdef THUNDERC_CONFORMANCE_NVFUSER
#include "codegen/nvfuser/emu_model.h"
#endif

namespace cpptest {

using namespace thunderc;
namespace fs = std::filesystem;

inline TensorType f32(Shape s) { return {DType::Float32, std::move(s), Device::cpu()}; }
inline TensorType f64(Shape s) { return {DType::Float64, std::move(s), Device::cpu()}; }
inline TensorType b8(Shape s) { return {DType::Bool, std::move(s), Device::cpu()}; }
inline TensorType f16(Shape s) { return {DType::Float16, std::move(s), Device::cpu()}; }
inline TensorType bf16(Shape s) { return {DType::BFloat16, std::move(s), Device::cpu()}; }
inline bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
inline Operand T(ValueId v) { return Operand::tensor(v); }
inline Operand N(double d) { return Operand::number(Scalar(d)); }

// Claims with `executors` in order; with cpp among them, runs the fusion pass as the compiler does.
inline Trace claimed(Trace trace, const std::vector<std::string>& executors) {
  std::vector<const Executor*> exs;
  for (const auto& e : executors) exs.push_back(find_executor(e));
  auto unclaimed = claim_executors(trace, exs);
  if (!unclaimed.empty()) throw std::runtime_error("unclaimed symbol: " + unclaimed[0].op);
  trace = fuse_library_epilogues(trace);  // cublas/cudnn calls absorb their epilogues (nothing without them)
  if (std::find(executors.begin(), executors.end(), "cpp") != executors.end()) trace = fuse_cpp_regions(trace);
  if (std::find(executors.begin(), executors.end(), "nvfuser") != executors.end()) trace = fuse_regions(trace, "nvfuser");
  verify_trace(trace, "test");
  return trace;
}

inline std::string compile(const Trace& trace, const std::vector<std::string>& executors, const std::string& name,
                           const std::optional<std::string>& keep = std::nullopt) {
  return thunderc_test::compile_trace(trace, executors, name, THUNDERC_TEST_TMP, keep);
}

// An emit context for reading a backend's generated source in tests: buffers are named v_<value name>.
class SourceCtx : public EmitContext {
 public:
  explicit SourceCtx(const Trace& t) : t_(t) {}
  const Trace& trace() const override { return t_; }
  std::string buffer(ValueId v) const override { return "v_" + t_.value(v).name; }
  std::string on_failure() const override { return "return 1;"; }
  std::string scratch() const override { return "ws + 0"; }

 private:
  const Trace& t_;
};

inline DLDataType dl(DType d) {
  if (d == DType::Bool) return dtype_of<bool>();
  if (is_integral(d)) return {d == DType::UInt8 ? kDLUInt : kDLInt, static_cast<std::uint8_t>(8 * dtype_size(d)), 1};
  if (d == DType::BFloat16) return {kDLBfloat, 16, 1};
  if (is_complex(d)) return {kDLComplex, static_cast<std::uint8_t>(8 * dtype_size(d)), 1};
  return {kDLFloat, static_cast<std::uint8_t>(8 * dtype_size(d)), 1};
}

// Element i of a float16/bfloat16 tensor: its value, and set to x rounded to nearest even.
inline float half_element(const HostTensor& h, std::size_t i) {
  const std::uint16_t bits = static_cast<const std::uint16_t*>(h.raw())[i];
  return h.dtype().code == kDLBfloat ? bf16_to_float(bits) : f16_to_float(bits);
}
inline void set_half(HostTensor& h, std::size_t i, double x) {
  const float f = static_cast<float>(x);
  static_cast<std::uint16_t*>(h.raw())[i] = h.dtype().code == kDLBfloat ? float_to_bf16(f) : float_to_f16(f);
}

// Element i of an integer tensor set to v (its dtype's width).
inline void set_integer(HostTensor& h, std::size_t i, std::int64_t v) {
  switch (h.dtype().bits) {
    case 8:
      if (h.dtype().code == kDLUInt) static_cast<std::uint8_t*>(h.raw())[i] = static_cast<std::uint8_t>(v);
      else static_cast<std::int8_t*>(h.raw())[i] = static_cast<std::int8_t>(v);
      break;
    case 16: static_cast<std::int16_t*>(h.raw())[i] = static_cast<std::int16_t>(v); break;
    case 32: static_cast<std::int32_t*>(h.raw())[i] = static_cast<std::int32_t>(v); break;
    default: static_cast<std::int64_t*>(h.raw())[i] = v;
  }
}

// Seeded inputs: normal floats (|x| + 0.1 when `positive`), bools with p = 0.5, integers in [0, 10) (valid
// indices into any table of 10 rows or more). With `nan_p` > 0, each float
// element is NaN with that probability, and the first element of every float input is NaN (a NaN that is
// not first in its row must propagate as well as one that is).
inline std::vector<HostTensor> random_inputs(const Trace& trace, unsigned seed, bool positive, double nan_p = 0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  std::vector<HostTensor> in;
  for (ValueId v : trace.inputs()) {
    const TensorType& t = trace.type(v);
    HostTensor h(dl(t.dtype), t.shape);
    if (is_complex(t.dtype)) {  // both parts normal
      for (std::int64_t i = 0; i < 2 * t.numel(); ++i) {
        const double x = nan_p > 0 && uniform(gen) < nan_p ? NAN : normal(gen);
        if (t.dtype == DType::Complex64) static_cast<float*>(h.raw())[i] = static_cast<float>(x);
        else static_cast<double*>(h.raw())[i] = x;
      }
      in.push_back(std::move(h));
      continue;
    }
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      double x = normal(gen);
      if (positive) x = std::abs(x) + 0.1;
      if (nan_p > 0 && t.dtype != DType::Bool && ((i == 0 && seed % 2 == 1) || uniform(gen) < nan_p)) x = NAN;
      if (t.dtype == DType::Float32) static_cast<float*>(h.raw())[i] = static_cast<float>(x);
      else if (t.dtype == DType::Float64) static_cast<double*>(h.raw())[i] = x;
      else if (is_half(t.dtype)) set_half(h, i, x);
      else if (is_integral(t.dtype)) set_integer(h, i, static_cast<std::int64_t>(uniform(gen) * 10));
      else static_cast<bool*>(h.raw())[i] = x > 0;
    }
    in.push_back(std::move(h));
  }
  return in;
}

// Element i (component i of a complex tensor: real and imaginary parts interleaved).
inline double element(const HostTensor& h, std::size_t i) {
  if (h.dtype().code == kDLComplex) return element_as_double(h, i);
  if (h.dtype().code == kDLInt || h.dtype().code == kDLUInt) {
    switch (h.dtype().bits) {
      case 8: return h.dtype().code == kDLUInt ? static_cast<const std::uint8_t*>(h.raw())[i] : static_cast<const std::int8_t*>(h.raw())[i];
      case 16: return static_cast<const std::int16_t*>(h.raw())[i];
      case 32: return static_cast<const std::int32_t*>(h.raw())[i];
      default: return static_cast<double>(static_cast<const std::int64_t*>(h.raw())[i]);
    }
  }
  if (h.dtype().code == kDLBfloat || (h.dtype().code == kDLFloat && h.dtype().bits == 16)) return half_element(h, i);
  if (h.dtype().code == kDLFloat) return h.dtype().bits == 64 ? static_cast<const double*>(h.raw())[i]
                                                             : static_cast<const float*>(h.raw())[i];
  return static_cast<const bool*>(h.raw())[i] ? 1 : 0;
}

struct Mismatch {
  std::size_t output = 0, index = 0;
  double got = 0, want = 0;
  bool any = false;
};

// First element where |got - want| > atol + rtol * |want| (NaN must match NaN, inf must match exactly).
inline Mismatch compare(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want, double rtol, double atol) {
  Mismatch m;
  for (std::size_t o = 0; o < want.size() && !m.any; ++o) {
    if (got[o].shape() != want[o].shape() || !dtype_equal(got[o].dtype(), want[o].dtype())) {
      m = {o, 0, 0, 0, true};
      break;
    }
    for (std::size_t i = 0; i < component_count(want[o]); ++i) {
      double g = element(got[o], i), w = element(want[o], i);
      bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= atol + rtol * std::abs(w);
      if (!ok) {
        m = {o, i, g, w, true};
        break;
      }
    }
  }
  return m;
}

// Tolerances: float32 results agree to rtol 1e-5 / atol 1e-5 (reductions sum in another order than ATen,
// transcendental functions come from glibc instead of SLEEF); float64 to 1e-10. The emulated CUDA kernels
// run the same arithmetic on the host (glibc's math), reducing in warp/block order.
struct Tol {
  double rtol = 1e-5, atol = 1e-5;
};

// Input options of check_against_torch beyond `positive`.
struct InputOpts {
  double nan_p = 0;  // probability of a NaN in each float element (see random_inputs)
};

// One unit in the last place of a value of the half types, relative (just above a power of two): the tolerance
// of a single operator computed in float and rounded once, where the reference's float result may round the
// other way (another order of a sum, glibc's transcendental functions instead of SLEEF's).
inline const Tol kF16Op{1e-3, 1e-6};
inline const Tol kBF16Op{8e-3, 1e-6};

// The float32 program that eager PyTorch runs for a trace with float16/bfloat16 tensors: each half tensor a
// float32 one holding the same values, and each value an operator produces in a half type rounded to it (a
// to_dtype there and back) as eager PyTorch stores every result, ATen's CPU kernels computing half ops in float
// and rounding once. LibTorch 1.13's CPU kernels lack most float16 ops, so this is the reference the half-type
// samples compare with: a fused loop that keeps intermediates in float agrees with it to a few units in the last
// place (the tolerances the samples state).
inline Trace half_rounded_reference(const Trace& t) {
  if (!t.constants().empty()) throw std::runtime_error("half_rounded_reference: traces with constants are not supported");
  Trace r;
  std::map<ValueId, ValueId> map;
  for (ValueId v : t.inputs()) {
    TensorType ty = t.type(v);
    if (is_half(ty.dtype)) ty.dtype = DType::Float32;
    map[v] = r.add_input(t.value(v).source_name, ty);
  }
  for (const BoundSymbol& s : t.symbols()) {
    std::vector<Operand> ins = s.inputs;
    for (Operand& in : ins)
      if (in.is_tensor()) in.value = map.at(in.value);
    Attrs attrs = s.attrs;  // a half dtype asked of an operator (sum(dtype=float16)) becomes float32, rounded below
    for (const auto& [name, value] : s.attrs.items())
      if (const DType* d = std::get_if<DType>(&value); d && is_half(*d)) attrs.set(name, DType::Float32);
    std::vector<ValueId> outs = r.emit(*s.op, ins, attrs);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const DType want = t.type(s.outputs[i]).dtype;
      ValueId o = outs[i];
      if (is_half(want)) {
        if (r.type(o).dtype != want) o = r.emit1(op("to_dtype"), {T(o)}, {{"dtype", want}});
        o = r.emit1(op("to_dtype"), {T(o)}, {{"dtype", DType::Float32}});
      }
      map[s.outputs[i]] = o;
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId v : t.outputs()) outputs.push_back(map.at(v));
  r.set_outputs(outputs);
  return r;
}

// `in` (inputs of `reference`) as inputs of `trace`: where trace takes a half type and the reference float32,
// the value is rounded to the half type, in `in` too, so that both programs see the same numbers.
inline std::vector<HostTensor> inputs_for(const Trace& trace, std::vector<HostTensor>& in) {
  std::vector<HostTensor> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const DType d = trace.type(trace.inputs()[i]).dtype;
    if (!is_half(d) || !dtype_equal(in[i].dtype(), dtype_of<float>())) {
      out.push_back(in[i]);
      continue;
    }
    HostTensor h(dl(d), in[i].shape());
    float* f = static_cast<float*>(in[i].raw());
    for (std::size_t e = 0; e < h.numel(); ++e) {
      set_half(h, e, f[e]);
      f[e] = half_element(h, e);
    }
    out.push_back(std::move(h));
  }
  return out;
}

// A float16/bfloat16 output as the float32 tensor of its values (to compare with the float32 reference).
inline HostTensor widened(const HostTensor& h) {
  if (h.dtype().code != kDLBfloat && !(h.dtype().code == kDLFloat && h.dtype().bits == 16)) return h;
  HostTensor f(dtype_of<float>(), h.shape());
  for (std::size_t e = 0; e < h.numel(); ++e) static_cast<float*>(f.raw())[e] = half_element(h, e);
  return f;
}

#ifdef THUNDERC_CONFORMANCE_NVFUSER
// The CUDA executors check_against_torch compiles with: nvfuser alone unless a test widens it (to the library
// executors, which carry nvfuser's kernels as their fallback) with a CudaExecutorsScope.
inline std::vector<std::string>& conformance_cuda_executors() {
  static std::vector<std::string> list = {"nvfuser"};
  return list;
}
struct CudaExecutorsScope {
  explicit CudaExecutorsScope(std::vector<std::string> list) : saved(conformance_cuda_executors()) {
    conformance_cuda_executors() = std::move(list);
  }
  ~CudaExecutorsScope() { conformance_cuda_executors() = saved; }
  std::vector<std::string> saved;
};
#endif

// Compiles `reference` with torch and `trace` (the same function, e.g. its autocast form, with the same inputs
// and output types) with the executor under test, checks that executor claimed at least `min_cpp` top-level
// symbols, runs both on the same inputs and compares every output.
inline void check_variant_against_torch(const Trace& reference, const Trace& trace, const std::string& name,
                                        bool positive = false, Tol tol = {}, std::size_t min_cpp = 1,
                                        InputOpts opts = {}) {
  verify_trace(trace, "test");
  verify_trace(reference, "test reference");
  Trace ref = claimed(reference, {"torch"});
#ifdef THUNDERC_CONFORMANCE_NVFUSER
  const std::vector<std::string> executors = conformance_cuda_executors();
  const std::string executor = executors.size() == 1 ? executors[0] : "cuda executors";
  Trace on_cuda = trace;
  on_cuda.set_device(Device::cuda(0));
  Trace fast = claimed(on_cuda, executors);  // no torch on CUDA here: the CUDA executors must claim everything
#else
  const std::vector<std::string> executors = {"cpp"};
  const std::string executor = "cpp";
  Trace fast = claimed(trace, {"cpp", "torch"});
#endif
  std::size_t claimed_by_executor = 0;
  for (const BoundSymbol& s : fast.symbols())
    claimed_by_executor += std::find(executors.begin(), executors.end(), s.executor) != executors.end();
  INFO(print_trace(fast));
  CHECK(claimed_by_executor >= min_cpp);
  thunderc::Model mref(compile(ref, {"torch"}, name + "_torch"));
#ifdef THUNDERC_CONFORMANCE_NVFUSER
  std::string sources = std::string(THUNDERC_TEST_TMP) + "/" + name + "_nvfuser_src";
  nvfuser_emu::EmulatedModel mfast(compile(fast, executors, name + "_nvfuser", sources), sources);
#else
  thunderc::Model mfast(compile(fast, {"cpp", "torch"}, name + "_cpp"));
#endif
  for (unsigned seed : {1u, 2u}) {
    auto in = random_inputs(reference, seed, positive, opts.nan_p);
    auto fast_in = inputs_for(trace, in);
    auto want = mref.run(in);
    auto got = mfast.run(fast_in);
    for (std::size_t o = 0; o < got.size() && o < want.size(); ++o) {
      if (dtype_equal(want[o].dtype(), got[o].dtype())) continue;
      CHECK(dtype_equal(got[o].dtype(), dl(trace.type(trace.outputs()[o]).dtype)));
      got[o] = widened(got[o]);
    }
    Mismatch m = compare(got, want, tol.rtol, tol.atol);
    INFO(name << ": output " << m.output << " element " << m.index << ": " << executor << " " << m.got << ", torch "
              << m.want);
    CHECK_FALSE(m.any);
  }
}

// Compiles `trace` with torch and with the executor under test (cpp; or the CUDA executors), checks it claimed
// at least `min_cpp` top-level symbols, runs both on the same inputs and compares every output.
inline void check_against_torch(const Trace& trace, const std::string& name, bool positive = false, Tol tol = {},
                                std::size_t min_cpp = 1, InputOpts opts = {}) {
  check_variant_against_torch(trace, trace, name, positive, tol, min_cpp, opts);
}

// check_against_torch for a trace with float16/bfloat16 tensors: against half_rounded_reference(trace), run by
// the torch executor in float32.
inline void check_half_against_torch(const Trace& trace, const std::string& name, bool positive, Tol tol,
                                     std::size_t min_cpp = 1, InputOpts opts = {}) {
  check_variant_against_torch(half_rounded_reference(trace), trace, name, positive, tol, min_cpp, opts);
}

}  // namespace cpptest
