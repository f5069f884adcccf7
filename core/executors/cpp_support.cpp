#include "core/executors/cpp_support.h"

#include <set>

namespace thunderc {

namespace {

// The dtypes the generated loops handle on device kind K: float32, float64 and bool; float16 and bfloat16 as
// 16-bit storage with float arithmetic (PyTorch's opmath: thunderc/cpp_math.h on the CPU, the kernels' prelude
// on CUDA), rounded where a value is stored.
template <DeviceKind K>
bool ok_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Bool || d == DType::BFloat16 || d == DType::Float16;
}

// Integer dtypes (is_integral): the loops, on the CPU and on CUDA, move them (reshape, permute, slice, cat, ...),
// convert them to floating types, compare them and read them as indices (embedding, scatter_reduce).
template <DeviceKind K>
bool movable_dtype(DType d) {
  return ok_dtype<K>(d) || is_integral(d);
}

bool gemm_dtype(DType d) { return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16; }

// Every tensor the symbol touches is on device kind K and has a dtype the generated loops handle.
template <DeviceKind K>
bool on_device(const Trace& t, const BoundSymbol& s) {
  for (const Operand& in : s.inputs) {
    if (!in.is_tensor()) continue;
    const TensorType& ty = t.type(in.value);
    if (ty.device.kind != K || !ok_dtype<K>(ty.dtype)) return false;
  }
  for (ValueId o : s.outputs) {
    const TensorType& ty = t.type(o);
    if (ty.device.kind != K || !ok_dtype<K>(ty.dtype)) return false;
  }
  return true;
}

// Data movement: every tensor on device kind K in a dtype the loops can copy (integers on the CPU too).
template <DeviceKind K>
bool moves(const Trace& t, const BoundSymbol& s) {
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && (t.type(in.value).device.kind != K || !movable_dtype<K>(t.type(in.value).dtype))) return false;
  for (ValueId o : s.outputs)
    if (t.type(o).device.kind != K || !movable_dtype<K>(t.type(o).dtype)) return false;
  return true;
}

// to_dtype among the loops' dtypes, and (CPU) from an integer dtype to any of them. Floating to integer
// stays with torch: C++'s conversion of NaN or an out-of-range value is undefined behaviour.
template <DeviceKind K>
bool cast(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType from = t.type(s.inputs[0].value).dtype, to = t.type(s.outputs[0]).dtype;
  return !is_integral(to) || !is_floating(from);
}

// embedding on device kind K (never in a region): rows of a floating table by int32 or int64 indices. On the
// CPU (codegen/cpp/embedding.cpp) an index out of range fails the call with a message, as ATen raises; on CUDA
// (codegen/nvfuser/indexing.h) it traps, as PyTorch's device-side assert.
template <DeviceKind K>
bool loop_embedding(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType w = t.type(s.inputs[0].value).dtype, idx = t.type(s.inputs[1].value).dtype;
  return is_floating(w) && (idx == DType::Int64 || idx == DType::Int32);
}

// index_select and gather (never in a region; codegen/cpp/indexing.cpp, codegen/nvfuser/indexing.h): any dtype
// the loops move, int32/int64 indices (gather: int64, as ATen).
template <DeviceKind K>
bool loop_gather(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType idx = t.type(s.inputs[1].value).dtype;
  return idx == DType::Int64 || (idx == DType::Int32 && s.op->name == "index_select");
}

// argmax / argmin of floating (the half types compared as floats) or integer tensors.
template <DeviceKind K>
bool loop_arg_extreme(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType d = t.type(s.inputs[0].value).dtype;
  return is_floating(d) || is_integral(d);
}

// cumsum and prod into a floating dtype (accumulated in double; on the CPU a half result is rounded where each
// element is stored, on CUDA half results are left to others) or int64 (from any dtype the loops move but
// floating into int64: C++'s conversion of NaN or an out-of-range value is undefined behaviour).
template <DeviceKind K>
bool loop_cumsum(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType in = t.type(s.inputs[0].value).dtype, out = t.type(s.outputs[0]).dtype;
  if (is_floating(out)) return K == DeviceKind::CPU || (out != DType::Float16 && out != DType::BFloat16);
  return out == DType::Int64 && !is_floating(in);
}

// sort / topk of floating (the half types compared as floats), integer (and, for sort, bool) tensors
// (codegen/cpp/indexing.cpp, codegen/nvfuser/indexing.h).
template <DeviceKind K>
bool loop_sort(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType d = t.type(s.inputs[0].value).dtype;
  return is_floating(d) || is_integral(d) || (d == DType::Bool && s.op->name == "sort");
}

bool exact_integer_number(const Operand& in);

// diagonal, index: data movement in any dtype the loops move; index tensors int32 or int64 (the meta function's
// rule). scatter: the same, with a number as src only where a literal holds it exactly. On CUDA, inputs of at
// least one dim.
template <DeviceKind K>
bool loop_index_move(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  if (K == DeviceKind::CUDA && t.type(s.inputs[0].value).rank() == 0) return false;
  if (s.op->name == "scatter" && !s.inputs[2].is_tensor())
    return !is_integral(t.type(s.inputs[0].value).dtype) || exact_integer_number(s.inputs[2]);
  return true;
}

// scatter_reduce, and index_put when it accumulates: arithmetic in the dtype itself, so float32, float64 and
// integers (not the half types, whose sums ATen forms in float; not bool).
template <DeviceKind K>
bool loop_index_reduce(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  if (K == DeviceKind::CUDA && t.type(s.inputs[0].value).rank() == 0) return false;
  if (s.op->name == "index_put" && !s.attrs.get_bool("accumulate")) return true;
  const DType d = t.type(s.inputs[0].value).dtype;
  return d == DType::Float32 || d == DType::Float64 || is_integral(d);
}

// Resampling, 3-D pooling and embedding bags of floating tensors on the CPU (codegen/cpp/resample.cpp,
// pool3d.cpp, embedding.cpp; the half types computed in float, rounded where stored); grid_sampler_2d's bicubic
// mode stays with torch.
bool cpu_sampling(const Trace& t, const BoundSymbol& s) {
  if (!moves<DeviceKind::CPU>(t, s)) return false;
  const DType d = t.type(s.inputs[0].value).dtype;
  if (s.op->name == "grid_sampler_2d" && s.attrs.get_int("interpolation_mode") == 2) return false;
  return is_floating(d);
}

// max_pool2d_backward on the CPU (codegen/cpp/pool3d.cpp): float32 or float64, [N, C, H, W] or [C, H, W]; its
// channels-last form [N, H, W, C] only.
bool cpu_max_pool_backward(const Trace& t, const BoundSymbol& s) {
  if (!moves<DeviceKind::CPU>(t, s)) return false;
  const TensorType& x = t.type(s.outputs[0]);
  return (x.dtype == DType::Float32 || x.dtype == DType::Float64) && (x.rank() == 3 || x.rank() == 4);
}

// FFTs and the complex views on the CPU (codegen/cpp/spectral.cpp): the meta functions already hold them to
// float32/float64 and complex64/complex128, so only the device is left to check.
bool cpu_spectral(const Trace& t, const BoundSymbol& s) {
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && t.type(in.value).device.kind != DeviceKind::CPU) return false;
  return t.type(s.outputs[0]).device.kind == DeviceKind::CPU;
}

template <DeviceKind K>
bool all_floating(const Trace& t, const BoundSymbol& s) {
  if (!on_device<K>(t, s)) return false;
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && !is_floating(t.type(in.value).dtype)) return false;
  for (ValueId o : s.outputs)
    if (!is_floating(t.type(o).dtype)) return false;
  return true;
}

// Integer tensors the loops compute with (the shared lowering, codegen/loops/region_lowering.h, writes the same
// integer arithmetic for the CPU and for CUDA).
template <DeviceKind K>
bool loop_integer(DType d) {
  return is_integral(d);
}

// The values an integer dtype holds.
std::pair<std::int64_t, std::int64_t> integer_range(DType d) {
  switch (d) {
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::Int16: return {-32768, 32767};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

// A number the generated code can hold as a literal of an integer type: literals are made from a double, so
// integers beyond 2^53 (which a double does not hold exactly) are left to torch.
bool exact_integer_number(const Operand& in) {
  if (in.scalar.is_bool()) return true;
  if (in.scalar.is_float()) return false;
  const std::int64_t v = in.scalar.to_int();
  return v <= (std::int64_t{1} << 53) && v >= -(std::int64_t{1} << 53);
}

// Every tensor operand has a dtype the loops compute with, or (CPU) an integer one: what a floating result is
// computed from, each converted to it first.
template <DeviceKind K>
bool convertible_operands(const Trace& t, const BoundSymbol& s) {
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && !ok_dtype<K>(t.type(in.value).dtype) && !loop_integer<K>(t.type(in.value).dtype)) return false;
  return true;
}

// Every tensor operand is bool or (CPU) an integer, and every number one a literal holds exactly.
template <DeviceKind K>
bool integer_operands(const Trace& t, const BoundSymbol& s) {
  for (const Operand& in : s.inputs) {
    if (in.is_tensor() ? !is_bool(t.type(in.value).dtype) && !loop_integer<K>(t.type(in.value).dtype)
                       : !exact_integer_number(in))
      return false;
  }
  return true;
}

// Arithmetic. A floating result: from floating operands, and from integer (CPU) and bool ones, converted to
// it first as ATen does (1.0 - mask, mask * -1e4). An integer result (CPU): add, sub, mul, neg, abs, relu,
// maximum and minimum of integer (and bool) tensors and numbers, wrapping around on overflow as ATen. Integer
// division (floor or trunc), remainder and fmod by a number: only a nonzero divisor the result's dtype holds,
// and not -1 (ATen raises on a zero divisor, which a fused loop cannot; INT_MIN / -1 traps in C++). Division by
// an integer tensor and powers stay with torch: ATen raises on a zero divisor or a negative power.
template <DeviceKind K>
bool arithmetic(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const std::string& name = s.op->name;
  const DType out = t.type(s.outputs[0]).dtype;
  const bool rounded_div = name == "div" && !s.attrs.is_none("rounding_mode");
  if (is_floating(out)) return !rounded_div && convertible_operands<K>(t, s);
  if (!loop_integer<K>(out) || !integer_operands<K>(t, s)) return false;
  if (rounded_div || name == "remainder" || name == "fmod") {
    if (!s.inputs[0].is_tensor() || s.inputs[1].is_tensor() || s.inputs[1].scalar.is_bool()) return false;
    const std::int64_t d = s.inputs[1].scalar.to_int();
    const auto [lo, hi] = integer_range(out);
    return d != 0 && d != -1 && d >= lo && d <= hi;
  }
  static const std::set<std::string> integer_ops = {"add", "sub", "mul", "neg", "abs", "relu", "maximum", "minimum"};
  return integer_ops.count(name) > 0;
}

// Math with a floating result (exp, atan, log1p, ...): floating operands, and on the CPU integer or bool ones
// too, converted to the result's dtype first as ATen's int-to-float ops do.
template <DeviceKind K>
bool to_float(const Trace& t, const BoundSymbol& s) {
  return moves<K>(t, s) && is_floating(t.type(s.outputs[0]).dtype) && convertible_operands<K>(t, s);
}

// Rounding and sign (ceil, floor, round, trunc, sign): floating tensors, and on the CPU integer ones (which
// they leave unchanged, sign aside); sign of a bool tensor is itself.
template <DeviceKind K>
bool rounding(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType d = t.type(s.outputs[0]).dtype;
  return is_floating(d) || loop_integer<K>(d) || (s.op->name == "sign" && is_bool(d));
}

// isnan / isinf: a floating tensor (or, on the CPU, an integer one: never NaN) to bool.
template <DeviceKind K>
bool predicate(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  const DType d = t.type(s.inputs[0].value).dtype;
  return is_floating(d) || loop_integer<K>(d);
}

// Bitwise ops: bool tensors, and integer ones on the CPU, with numbers a literal holds exactly.
template <DeviceKind K>
bool bitwise(const Trace& t, const BoundSymbol& s) {
  return moves<K>(t, s) && integer_operands<K>(t, s);
}

// Comparisons of floating and integer tensors: `attention_mask == 0` builds masks.
template <DeviceKind K>
bool compare(const Trace& t, const BoundSymbol& s) {
  if (!moves<K>(t, s)) return false;
  for (const Operand& in : s.inputs) {
    if (!in.is_tensor()) continue;
    const DType d = t.type(in.value).dtype;
    if (!is_floating(d) && !loop_integer<K>(d)) return false;
  }
  return true;
}

template <DeviceKind K>
bool where_like(const Trace& t, const BoundSymbol& s) {
  // where(cond, a, b) / masked_fill(a, mask, value): the bool operand is the condition, the rest floating.
  if (!on_device<K>(t, s) || !is_floating(t.type(s.outputs[0]).dtype)) return false;
  std::size_t cond = s.op->name == "where" ? 0 : 1;
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    if (!s.inputs[i].is_tensor()) continue;
    bool b = is_bool(t.type(s.inputs[i].value).dtype);
    if ((i == cond) != b) return false;
  }
  return true;
}

template <DeviceKind K>
bool pooling(const Trace& t, const BoundSymbol& s) {
  return all_floating<K>(t, s) && (t.type(s.inputs[0].value).rank() == 3 || t.type(s.inputs[0].value).rank() == 4);
}

// float32/float64 only: the channels-last loops sum in the element type (the NCHW ones widen bfloat16).
bool pooling_nhwc(const Trace& t, const BoundSymbol& s) {
  const TensorType& x = t.type(s.inputs[0].value);
  return all_floating<DeviceKind::CPU>(t, s) && x.rank() == 4 && (x.dtype == DType::Float32 || x.dtype == DType::Float64);
}

template <DeviceKind K>
bool same_dtype_norm(const Trace& t, const BoundSymbol& s) {
  if (!all_floating<K>(t, s)) return false;
  DType d = t.type(s.outputs[0]).dtype;
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && t.type(in.value).dtype != d) return false;
  return true;
}

template <DeviceKind K>
void register_loop_impls(Executor& cpp) {
  for (const char* name : {"relu", "neg", "abs", "gelu", "silu", "hardswish", "hardsigmoid", "hardtanh", "leaky_relu",
                           "elu", "clamp", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "fmod",
                           "remainder", "hypot"})
    cpp.register_impl(name, arithmetic<K>);
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "sigmoid", "tanh", "tan",
                           "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p", "log2",
                           "log10"})
    cpp.register_impl(name, to_float<K>);
  for (const char* name : {"ceil", "floor", "trunc", "round", "sign"}) cpp.register_impl(name, rounding<K>);
  for (const char* name : {"isnan", "isinf"}) cpp.register_impl(name, predicate<K>);
  for (const char* name : {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor"}) cpp.register_impl(name, bitwise<K>);
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge"}) cpp.register_impl(name, compare<K>);
  for (const char* name : {"logical_not", "logical_and", "logical_or", "logical_xor"}) cpp.register_impl(name, on_device<K>);
  cpp.register_impl("to_dtype", cast<K>);
  cpp.register_impl("where", where_like<K>);
  cpp.register_impl("masked_fill", where_like<K>);
  for (const char* name : {"sum", "mean", "amax", "softmax", "log_softmax"}) cpp.register_impl(name, all_floating<K>);
  cpp.register_impl("layer_norm", same_dtype_norm<K>);
  cpp.register_impl("batch_norm", same_dtype_norm<K>);
  for (const char* name : {"reshape", "permute", "expand", "slice", "select", "cat", "flip"}) cpp.register_impl(name, moves<K>);
  for (const char* name : {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"}) cpp.register_impl(name, pooling<K>);
  // Channels-last pooling (the channels-last pass) has a CPU loop nest only: that pass serves onednn.
  if constexpr (K == DeviceKind::CPU)
    for (const char* name : {"max_pool2d_nhwc", "avg_pool2d_nhwc"}) cpp.register_impl(name, pooling_nhwc);
}

// Matrix products and convolutions the nvfuser GEMM kernels run: CUDA tensors of one dtype, float32, float16
// or bfloat16 (accumulated in float either way).
bool cuda_gemm(const Trace& t, const BoundSymbol& s) {
  if (!on_device<DeviceKind::CUDA>(t, s)) return false;
  const DType d = t.type(s.outputs[0]).dtype;
  if (!gemm_dtype(d)) return false;
  for (const Operand& in : s.inputs)
    if (in.is_tensor() && t.type(in.value).dtype != d) return false;
  for (ValueId o : s.outputs)
    if (t.type(o).dtype != d) return false;
  if (s.op->name == "matmul") {
    // 2-D and batched products whose batch dims are equal, or absent (all 1) on one side: one batch stride
    // per operand. 1-D operands (vectors) and batch dims broadcast against each other are left to others.
    const TensorType &a = t.type(s.inputs[0].value), &b = t.type(s.inputs[1].value);
    if (a.rank() < 2 || b.rank() < 2) return false;
    Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
    auto count = [](const Shape& s) {
      std::int64_t n = 1;
      for (auto d : s) n *= d;
      return n;
    };
    auto strip = [](Shape s) {
      while (!s.empty() && s.front() == 1) s.erase(s.begin());
      return s;
    };
    if (count(ba) != 1 && count(bb) != 1 && strip(ba) != strip(bb)) return false;
  }
  if (s.op->name == "linear") {  // weight [N, K]; bias [N] (or one element)
    if (t.type(s.inputs[1].value).rank() != 2) return false;
    if (s.inputs.size() > 2 && s.inputs[2].is_tensor()) {
      const TensorType& bias = t.type(s.inputs[2].value);
      if (bias.rank() > 1) return false;
    }
  }
  if (s.op->name == "conv2d") return t.type(s.inputs[0].value).rank() == 4;
  return true;
}

// What a cuBLASLt call expresses (runtime/src/cublaslt.cpp): one (strided-batched) GEMM of at least one
// term, a bias of N elements added per output column, alpha 1. Anything else stays with nvfuser's kernels.
bool cublas_gemm(const Trace& t, const BoundSymbol& s) {
  if (!cuda_gemm(t, s)) return false;
  const std::string& op = s.op->name;
  auto n_of = [&](ValueId v) { return t.type(v).shape.back(); };
  auto has = [&](std::size_t i) { return i < s.inputs.size() && s.inputs[i].is_tensor(); };
  const TensorType& out = t.type(s.outputs[0]);
  if (op == "linear") {
    const TensorType& w = t.type(s.inputs[1].value);
    if (w.shape[1] == 0) return false;  // K = 0: nothing to multiply
    return !has(2) || t.type(s.inputs[2].value).shape == Shape{w.shape[0]};
  }
  if (op == "addmm") {
    const TensorType& a = t.type(s.inputs[1].value);
    if (a.shape[1] == 0 || s.attrs.get_float("alpha") != 1.0) return false;
    const double beta = s.attrs.get_float("beta");
    if (beta == 0) return true;
    const Shape& bias = t.type(s.inputs[0].value).shape;
    return beta == 1.0 && (bias == Shape{n_of(s.outputs[0])} || bias == Shape{1, n_of(s.outputs[0])});
  }
  const TensorType& a = t.type(s.inputs[0].value);  // matmul, bmm
  return a.shape.back() != 0 && out.numel() > 0;
}

// What a cuDNN convolution graph expresses (runtime/src/cudnn.cpp): 2-D NCHW, at least one term.
bool cudnn_conv(const Trace& t, const BoundSymbol& s) {
  if (!cuda_gemm(t, s)) return false;
  const TensorType& w = t.type(s.inputs[1].value);
  return w.rank() == 4 && w.numel() > 0 && t.type(s.outputs[0]).numel() > 0;
}

// scaled_dot_product_attention as a fused kernel of its own (never in a region): q, k, v and the output of one
// rank >= 2 and dtype, and no mask or a bool mask or one of that dtype which broadcasts to the weights
// [batch..., L, S] without growing them (no extra dims: ATen's math formulation would give the result those
// dims, which the meta function does not).
bool attention_shapes(const Trace& t, const BoundSymbol& s) {
  const TensorType &q = t.type(s.inputs[0].value), &k = t.type(s.inputs[1].value), &v = t.type(s.inputs[2].value);
  const TensorType& o = t.type(s.outputs[0]);
  for (const TensorType* x : {&q, &k, &v})
    if (x->dtype != o.dtype || x->rank() != o.rank()) return false;
  if (s.inputs.size() > 3 && s.inputs[3].is_tensor()) {
    const TensorType& m = t.type(s.inputs[3].value);
    if (m.dtype != DType::Bool && m.dtype != o.dtype) return false;
    Shape weights = o.shape;
    weights.back() = k.shape[k.rank() - 2];
    if (m.rank() > weights.size()) return false;
    for (std::size_t i = 0; i < m.rank(); ++i) {
      std::int64_t md = m.shape[m.rank() - 1 - i], wd = weights[weights.size() - 1 - i];
      if (md != 1 && md != wd) return false;
    }
  }
  return true;
}

// The cpp kernel (codegen/cpp/attention.h): floating tensors on the CPU (the half types computed in float).
bool cpu_attention(const Trace& t, const BoundSymbol& s) {
  return on_device<DeviceKind::CPU>(t, s) && is_floating(t.type(s.outputs[0]).dtype) && attention_shapes(t, s);
}

// nvfuser's flash kernel (codegen/nvfuser/attention.h): float32, float16 or bfloat16 (computed in float), head
// sizes up to 128 (static shared memory), at least one key, at most 65535 batch entries (the grid's y dimension).
bool cuda_attention(const Trace& t, const BoundSymbol& s) {
  if (!on_device<DeviceKind::CUDA>(t, s) || !gemm_dtype(t.type(s.outputs[0]).dtype) || !attention_shapes(t, s))
    return false;
  const TensorType &q = t.type(s.inputs[0].value), &k = t.type(s.inputs[1].value), &v = t.type(s.inputs[2].value);
  const TensorType& o = t.type(s.outputs[0]);
  const std::size_t n = o.rank();
  const std::int64_t E = q.shape[n - 1], Ev = v.shape[n - 1], Sk = k.shape[n - 2];
  std::int64_t batch = 1;
  for (std::size_t i = 0; i + 2 < n; ++i) batch *= o.shape[i];
  return E >= 1 && E <= 128 && Ev >= 1 && Ev <= 128 && Sk >= 1 && batch <= 65535;
}

// cuDNN's fused flash attention (thunderc_sdpa, runtime/src/cudnn.cpp): float16/bfloat16 only, q, k, v of the
// output's batch dims (dense, no broadcasting), head sizes multiples of 8 up to 128; no mask or an additive one
// of that dtype, dense along the keys, with at most two batch dims (batch, heads) to broadcast over. What the
// runtime cannot run here falls back to nvfuser's kernel, so that kernel must accept the symbol too.
bool cudnn_attention(const Trace& t, const BoundSymbol& s) {
  if (!cuda_attention(t, s)) return false;
  const TensorType& o = t.type(s.outputs[0]);
  if (o.dtype != DType::Float16 && o.dtype != DType::BFloat16) return false;
  const std::size_t n = o.rank();
  const Shape batch(o.shape.begin(), o.shape.end() - 2);
  for (std::size_t i = 0; i < 3; ++i) {
    const Shape& x = t.type(s.inputs[i].value).shape;
    if (Shape(x.begin(), x.end() - 2) != batch) return false;
  }
  const std::int64_t E = t.type(s.inputs[0].value).shape[n - 1], Ev = o.shape[n - 1];
  if (E % 8 != 0 || Ev % 8 != 0) return false;
  if (s.inputs.size() > 3 && s.inputs[3].is_tensor()) {
    const TensorType& m = t.type(s.inputs[3].value);
    if (m.dtype != o.dtype || batch.size() > 2) return false;
    const std::int64_t S = t.type(s.inputs[1].value).shape[n - 2];
    if (m.shape.back() != S) return false;  // the keys' stride must be 1
  }
  return true;
}

}  // namespace

void register_cpp_impls(Executor& cpp) {
  register_loop_impls<DeviceKind::CPU>(cpp);
  cpp.register_impl("scaled_dot_product_attention", cpu_attention);
  cpp.register_impl("embedding", loop_embedding<DeviceKind::CPU>);
  for (const char* name : {"index_select", "gather"}) cpp.register_impl(name, loop_gather<DeviceKind::CPU>);
  for (const char* name : {"argmax", "argmin"}) cpp.register_impl(name, loop_arg_extreme<DeviceKind::CPU>);
  for (const char* name : {"cumsum", "prod"}) cpp.register_impl(name, loop_cumsum<DeviceKind::CPU>);
  for (const char* name : {"sort", "topk"}) cpp.register_impl(name, loop_sort<DeviceKind::CPU>);
  for (const char* name : {"diagonal", "index", "scatter", "masked_scatter"})
    cpp.register_impl(name, loop_index_move<DeviceKind::CPU>);
  for (const char* name : {"scatter_reduce", "index_put"}) cpp.register_impl(name, loop_index_reduce<DeviceKind::CPU>);
  for (const char* name : {"upsample_bilinear2d", "grid_sampler_2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d"}) {
    cpp.register_impl(name, cpu_sampling);
    cpp.run_alone(name);
  }
  cpp.register_impl("embedding_bag", cpu_sampling);
  cpp.register_impl("max_pool2d_backward", cpu_max_pool_backward);
  cpp.register_impl("max_pool2d_backward_nhwc", [](const Trace& t, const BoundSymbol& s) {
    return cpu_max_pool_backward(t, s) && t.type(s.outputs[0]).rank() == 4;
  });
  cpp.run_alone("max_pool2d_backward_nhwc");
  for (const char* name : {"im2col", "col2im"}) {  // codegen/cpp/conv_columns.cpp: float32/float64 (the meta's floats)
    cpp.register_impl(name, [](const Trace& t, const BoundSymbol& s) {
      const DType d = t.type(s.outputs[0]).dtype;
      return moves<DeviceKind::CPU>(t, s) && (d == DType::Float32 || d == DType::Float64);
    });
    cpp.run_alone(name);
  }
  cpp.run_alone("max_pool2d_backward");
  // codegen/cpp/dropout.cpp: float32/float64 masks drawn from an rng (autodiff gives every mask one).
  cpp.register_impl("dropout_mask", [](const Trace& t, const BoundSymbol& s) {
    const DType d = t.type(s.outputs[0]).dtype;
    return s.inputs[0].is_tensor() && moves<DeviceKind::CPU>(t, s) && (d == DType::Float32 || d == DType::Float64);
  });
  cpp.run_alone("dropout_mask");
  for (const char* name : {"fft_r2c", "fft_c2r", "fft_c2c", "view_as_real", "view_as_complex"})
    cpp.register_impl(name, cpu_spectral);
}

void register_nvfuser_impls(Executor& nvfuser) {
  register_loop_impls<DeviceKind::CUDA>(nvfuser);
  for (const char* name : {"linear", "matmul", "bmm", "addmm", "conv2d"})
    nvfuser.register_impl(name, cuda_gemm, Executor::Claim::Fallback);
  // A fallback claim, as for GEMMs: where cuDNN is listed it takes the half-precision attention it supports.
  nvfuser.register_impl("scaled_dot_product_attention", cuda_attention, Executor::Claim::Fallback);
  // A CNN's gradient operators (--autograd; codegen/nvfuser/cnn_gradients.h): float32/float64, a kernel each.
  for (const char* name : {"im2col", "col2im", "max_pool2d_backward"}) {
    nvfuser.register_impl(name, [](const Trace& t, const BoundSymbol& s) {
      const TensorType& o = t.type(s.outputs[0]);
      return on_device<DeviceKind::CUDA>(t, s) && (o.dtype == DType::Float32 || o.dtype == DType::Float64) &&
             (s.op->name != "max_pool2d_backward" || o.rank() == 3 || o.rank() == 4);
    });
    nvfuser.run_alone(name);
  }
  // Indexing (codegen/nvfuser/indexing.h): kernels of their own, as every Indexing operator; scatter_reduce of
  // float32/float64 (embedding's VJP).
  nvfuser.register_impl("embedding", loop_embedding<DeviceKind::CUDA>);
  for (const char* name : {"index_select", "gather"}) nvfuser.register_impl(name, loop_gather<DeviceKind::CUDA>);
  for (const char* name : {"argmax", "argmin"}) nvfuser.register_impl(name, loop_arg_extreme<DeviceKind::CUDA>);
  for (const char* name : {"cumsum", "prod"}) nvfuser.register_impl(name, loop_cumsum<DeviceKind::CUDA>);
  for (const char* name : {"diagonal", "index", "scatter"}) nvfuser.register_impl(name, loop_index_move<DeviceKind::CUDA>);
  nvfuser.register_impl("index_put", loop_index_reduce<DeviceKind::CUDA>);
  nvfuser.register_impl("embedding_bag", [](const Trace& t, const BoundSymbol& s) {
    return moves<DeviceKind::CUDA>(t, s) && is_floating(t.type(s.inputs[0].value).dtype);
  });
  for (const char* name : {"sort", "topk"}) nvfuser.register_impl(name, loop_sort<DeviceKind::CUDA>);
  // codegen/nvfuser/sampling.h: bilinear upsampling and grid sampling (bicubic stays with others) of floating
  // tensors, as cpu_sampling.
  for (const char* name : {"upsample_bilinear2d", "grid_sampler_2d"}) {
    nvfuser.register_impl(name, [](const Trace& t, const BoundSymbol& s) {
      if (s.op->name == "grid_sampler_2d" && s.attrs.get_int("interpolation_mode") == 2) return false;
      return moves<DeviceKind::CUDA>(t, s) && is_floating(t.type(s.inputs[0].value).dtype);
    });
    nvfuser.run_alone(name);
  }
  nvfuser.register_impl("scatter_reduce", [](const Trace& t, const BoundSymbol& s) {
    const TensorType& a = t.type(s.inputs[0].value);
    return moves<DeviceKind::CUDA>(t, s) && s.inputs[2].is_tensor() && a.rank() > 0 &&
           (a.dtype == DType::Float32 || a.dtype == DType::Float64);
  });
  // codegen/nvfuser/dropout.h: float32/float64 masks drawn from the RNG state autodiff gives them.
  nvfuser.register_impl("dropout_mask", [](const Trace& t, const BoundSymbol& s) {
    const DType d = t.type(s.outputs[0]).dtype;
    return s.inputs[0].is_tensor() && moves<DeviceKind::CUDA>(t, s) && (d == DType::Float32 || d == DType::Float64);
  });
}

void register_cublas_impls(Executor& cublas) {
  for (const char* name : {"linear", "matmul", "bmm", "addmm"}) cublas.register_impl(name, cublas_gemm);
}

void register_cudnn_impls(Executor& cudnn) {
  cudnn.register_impl("conv2d", cudnn_conv);
  cudnn.register_impl("scaled_dot_product_attention", cudnn_attention);
}

}  // namespace thunderc
