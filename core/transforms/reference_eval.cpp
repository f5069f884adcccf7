#include "core/transforms/reference_eval.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"

namespace thunderc {

namespace {

using Strides = std::vector<std::int64_t>;

bool arith_ok(DType d) { return d != DType::Float16 && d != DType::BFloat16; }

template <typename T>
T read_as(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void write_as(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

double load_f(const unsigned char* p, DType dt) {
  switch (dt) {
    case DType::Bool: return *p ? 1.0 : 0.0;
    case DType::UInt8: return read_as<std::uint8_t>(p);
    case DType::Int8: return read_as<std::int8_t>(p);
    case DType::Int16: return read_as<std::int16_t>(p);
    case DType::Int32: return read_as<std::int32_t>(p);
    case DType::Int64: return static_cast<double>(read_as<std::int64_t>(p));
    case DType::Float32: return read_as<float>(p);
    case DType::Float64: return read_as<double>(p);
    default: internal_error("reference_eval: no arithmetic on ", dtype_name(dt));
  }
}

std::int64_t load_i(const unsigned char* p, DType dt) {
  switch (dt) {
    case DType::Bool: return *p ? 1 : 0;
    case DType::UInt8: return read_as<std::uint8_t>(p);
    case DType::Int8: return read_as<std::int8_t>(p);
    case DType::Int16: return read_as<std::int16_t>(p);
    case DType::Int32: return read_as<std::int32_t>(p);
    case DType::Int64: return read_as<std::int64_t>(p);
    default: return static_cast<std::int64_t>(load_f(p, dt));  // callers check the range first
  }
}

// Stores an integer, wrapping like a C++ (and PyTorch) narrowing conversion.
void store_i(unsigned char* p, DType dt, std::int64_t v) {
  switch (dt) {
    case DType::Bool: *p = v != 0; break;
    case DType::UInt8: write_as(p, static_cast<std::uint8_t>(v)); break;
    case DType::Int8: write_as(p, static_cast<std::int8_t>(v)); break;
    case DType::Int16: write_as(p, static_cast<std::int16_t>(v)); break;
    case DType::Int32: write_as(p, static_cast<std::int32_t>(v)); break;
    case DType::Int64: write_as(p, v); break;
    case DType::Float32: write_as(p, static_cast<float>(v)); break;
    case DType::Float64: write_as(p, static_cast<double>(v)); break;
    default: internal_error("reference_eval: no arithmetic on ", dtype_name(dt));
  }
}

// Stores a floating value; false when the target is an integer type and the value has no defined
// conversion (NaN, infinite, out of int64's range).
bool store_f(unsigned char* p, DType dt, double v) {
  switch (dt) {
    case DType::Bool: *p = v != 0; return true;
    case DType::Float32: write_as(p, static_cast<float>(v)); return true;
    case DType::Float64: write_as(p, v); return true;
    default:
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return false;
      store_i(p, dt, static_cast<std::int64_t>(v));
      return true;
  }
}

double round_to(DType dt, double v) { return dt == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v; }

Strides contiguous(const Shape& shape) {
  Strides s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Element strides that read `in` broadcast to `out` (right-aligned, 0 along broadcast dims).
Strides broadcast_strides(const Shape& in, const Shape& out) {
  Strides c = contiguous(in), s(out.size(), 0);
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::size_t o = out.size() - in.size() + i;
    s[o] = in[i] == 1 && out[o] != 1 ? 0 : c[i];
  }
  return s;
}

// Calls fn(index) for every multi-index of `shape` in row-major order; stops when fn returns false.
bool for_each_index(const Shape& shape, const std::function<bool(const std::vector<std::int64_t>&)>& fn) {
  for (std::int64_t d : shape)
    if (d == 0) return true;
  std::vector<std::int64_t> idx(shape.size(), 0);
  while (true) {
    if (!fn(idx)) return false;
    std::size_t d = shape.size();
    while (d > 0) {
      if (++idx[d - 1] < shape[d - 1]) break;
      idx[d - 1] = 0;
      --d;
    }
    if (d == 0) return true;
  }
}

std::int64_t dot(const std::vector<std::int64_t>& idx, const Strides& s) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) off += idx[i] * s[i];
  return off;
}

using Bytes = std::vector<unsigned char>;

// Copies elements of `in` (element size `size`) to a contiguous `out_shape` reading in[base + idx . strides].
Bytes gather(const unsigned char* in, std::size_t size, const Shape& out_shape, std::int64_t base, const Strides& s) {
  std::int64_t n = 1;
  for (auto d : out_shape) n *= d;
  Bytes out(static_cast<std::size_t>(n) * size);
  std::size_t k = 0;
  for_each_index(out_shape, [&](const std::vector<std::int64_t>& idx) {
    std::memcpy(out.data() + k * size, in + (base + dot(idx, s)) * static_cast<std::int64_t>(size), size);
    ++k;
    return true;
  });
  return out;
}

// Converts one element between dtypes as torch's .to(dtype) does; false where that is undefined.
bool convert(const unsigned char* src, DType from, unsigned char* dst, DType to) {
  if (from == to) {
    std::memcpy(dst, src, dtype_size(from));
    return true;
  }
  if (!arith_ok(from) || !arith_ok(to)) return false;
  if (is_floating(from)) return store_f(dst, to, round_to(to, load_f(src, from)));
  store_i(dst, to, load_i(src, from));
  return true;
}

// One operand of an elementwise computation, with its broadcast strides.
struct EwOperand {
  const unsigned char* data = nullptr;  // null for a number
  DType dtype = DType::Float32;
  Strides strides;
  Scalar scalar;
};

using FnF = std::function<std::optional<double>(const double*)>;
using FnI = std::function<std::optional<std::int64_t>(const std::int64_t*)>;

class Evaluator {
 public:
  Evaluator(const Trace& t, const BoundSymbol& s) : trace(t), sym(s), out_type(t.type(s.outputs.at(0))) {}

  std::optional<Bytes> run();

 private:
  const Trace& trace;
  const BoundSymbol& sym;
  const TensorType& out_type;

  const TensorType& in_type(std::size_t i) const { return trace.type(sym.inputs[i].value); }
  const unsigned char* in_data(std::size_t i) const { return trace.value(sym.inputs[i].value).data->bytes.data(); }

  // Evaluates out[idx] = f(operands broadcast at idx) in `compute` (double path for floating, int64 otherwise).
  std::optional<Bytes> elementwise(DType compute, const FnF& f, const FnI& i) const;
  std::optional<Bytes> unary();
  std::optional<Bytes> binary();
  std::optional<Bytes> reduction();
  std::optional<Bytes> shape_op();
};

std::optional<Bytes> Evaluator::elementwise(DType compute, const FnF& f, const FnI& fi) const {
  if (!arith_ok(compute) || !arith_ok(out_type.dtype)) return std::nullopt;
  std::vector<EwOperand> ops;
  for (std::size_t k = 0; k < sym.inputs.size(); ++k) {
    const Operand& in = sym.inputs[k];
    EwOperand o;
    if (in.is_tensor()) {
      if (!arith_ok(in_type(k).dtype)) return std::nullopt;
      o.data = in_data(k);
      o.dtype = in_type(k).dtype;
      o.strides = broadcast_strides(in_type(k).shape, out_type.shape);
    } else if (in.kind == OperandKind::Scalar) {
      o.scalar = in.scalar;
    } else {
      return std::nullopt;
    }
    ops.push_back(o);
  }
  const bool fp = is_floating(compute);
  const std::size_t esize = dtype_size(out_type.dtype);
  Bytes out(out_type.nbytes());
  std::vector<double> vf(ops.size());
  std::vector<std::int64_t> vi(ops.size());
  std::size_t k = 0;
  bool ok = for_each_index(out_type.shape, [&](const std::vector<std::int64_t>& idx) {
    for (std::size_t j = 0; j < ops.size(); ++j) {
      const EwOperand& o = ops[j];
      const unsigned char* p = o.data ? o.data + dot(idx, o.strides) * static_cast<std::int64_t>(dtype_size(o.dtype)) : nullptr;
      if (fp) {
        vf[j] = round_to(compute, p ? load_f(p, o.dtype) : o.scalar.to_double());
      } else {
        if (p && is_floating(o.dtype)) return false;
        if (!p && o.scalar.is_float()) return false;
        vi[j] = p ? load_i(p, o.dtype) : o.scalar.to_int();
      }
    }
    unsigned char* dst = out.data() + k++ * esize;
    if (fp) {
      std::optional<double> r = f ? f(vf.data()) : std::nullopt;
      return r.has_value() && store_f(dst, out_type.dtype, *r);
    }
    std::optional<std::int64_t> r = fi ? fi(vi.data()) : std::nullopt;
    if (!r) return false;
    store_i(dst, out_type.dtype, *r);
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clamp_d(double x, double lo, double hi) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); }

std::optional<Bytes> Evaluator::unary() {
  const std::string& name = sym.op->name;
  const Attrs& at = sym.attrs;
  DType compute = out_type.dtype;
  if (name == "logical_not") {
    DType in = in_type(0).dtype;
    return elementwise(in, [](const double* v) -> std::optional<double> { return v[0] == 0 ? 1.0 : 0.0; },
                       [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[0] == 0; });
  }
  if (name == "to_dtype") {
    const TensorType& in = in_type(0);
    Bytes out(out_type.nbytes());
    std::size_t n = static_cast<std::size_t>(in.numel()), a = dtype_size(in.dtype), b = dtype_size(out_type.dtype);
    for (std::size_t k = 0; k < n; ++k)
      if (!convert(in_data(0) + k * a, in.dtype, out.data() + k * b, out_type.dtype)) return std::nullopt;
    return out;
  }
  FnF f;
  FnI fi;
  if (name == "relu") {
    f = [](const double* v) -> std::optional<double> { return v[0] < 0 ? 0.0 : v[0]; };
    fi = [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[0] < 0 ? 0 : v[0]; };
  } else if (name == "neg") {
    f = [](const double* v) -> std::optional<double> { return -v[0]; };
    fi = [](const std::int64_t* v) -> std::optional<std::int64_t> { return wrap_sub(0, v[0]); };
  } else if (name == "abs") {
    f = [](const double* v) -> std::optional<double> { return std::fabs(v[0]); };
    fi = [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[0] < 0 ? wrap_sub(0, v[0]) : v[0]; };
  } else if (name == "exp") {
    f = [](const double* v) -> std::optional<double> { return std::exp(v[0]); };
  } else if (name == "log") {
    f = [](const double* v) -> std::optional<double> { return std::log(v[0]); };
  } else if (name == "sqrt") {
    f = [](const double* v) -> std::optional<double> { return std::sqrt(v[0]); };
  } else if (name == "rsqrt") {
    f = [](const double* v) -> std::optional<double> { return 1.0 / std::sqrt(v[0]); };
  } else if (name == "reciprocal") {
    f = [](const double* v) -> std::optional<double> { return 1.0 / v[0]; };
  } else if (name == "sin") {
    f = [](const double* v) -> std::optional<double> { return std::sin(v[0]); };
  } else if (name == "cos") {
    f = [](const double* v) -> std::optional<double> { return std::cos(v[0]); };
  } else if (name == "erf") {
    f = [](const double* v) -> std::optional<double> { return std::erf(v[0]); };
  } else if (name == "sigmoid") {
    f = [](const double* v) -> std::optional<double> { return sigmoid(v[0]); };
  } else if (name == "tanh") {
    f = [](const double* v) -> std::optional<double> { return std::tanh(v[0]); };
  } else if (name == "gelu") {
    if (at.get_string("approximate") == "tanh")
      f = [](const double* v) -> std::optional<double> {
        double x = v[0];
        return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      };
    else
      f = [](const double* v) -> std::optional<double> { return 0.5 * v[0] * (1.0 + std::erf(v[0] * M_SQRT1_2)); };
  } else if (name == "silu") {
    f = [](const double* v) -> std::optional<double> { return v[0] * sigmoid(v[0]); };
  } else if (name == "hardswish") {
    f = [](const double* v) -> std::optional<double> { return v[0] * clamp_d(v[0] + 3, 0, 6) / 6; };
  } else if (name == "hardsigmoid") {
    f = [](const double* v) -> std::optional<double> { return clamp_d(v[0] + 3, 0, 6) / 6; };
  } else if (name == "hardtanh" || name == "clamp") {
    bool ht = name == "hardtanh";
    double lo = ht ? at.get_float("min_val") : at.is_none("min") ? -INFINITY : at.get_float("min");
    double hi = ht ? at.get_float("max_val") : at.is_none("max") ? INFINITY : at.get_float("max");
    // torch.clamp applies min first, then max (so min > max gives max everywhere).
    f = [lo, hi](const double* v) -> std::optional<double> {
      return std::isnan(v[0]) ? v[0] : std::min(std::max(v[0], lo), hi);
    };
    fi = [lo, hi](const std::int64_t* v) -> std::optional<std::int64_t> {
      double r = std::min(std::max(static_cast<double>(v[0]), lo), hi);
      return static_cast<std::int64_t>(r);
    };
  } else if (name == "tan" || name == "asin" || name == "acos" || name == "atan" || name == "sinh" || name == "cosh" ||
             name == "asinh" || name == "acosh" || name == "atanh" || name == "expm1" || name == "log1p" ||
             name == "log2" || name == "log10") {
    static const std::map<std::string, double (*)(double)> math = {
        {"tan", std::tan},     {"asin", std::asin},   {"acos", std::acos},   {"atan", std::atan},   {"sinh", std::sinh},
        {"cosh", std::cosh},   {"asinh", std::asinh}, {"acosh", std::acosh}, {"atanh", std::atanh}, {"expm1", std::expm1},
        {"log1p", std::log1p}, {"log2", std::log2},   {"log10", std::log10}};
    double (*g)(double) = math.at(name);
    f = [g](const double* v) -> std::optional<double> { return g(v[0]); };
  } else if (name == "ceil" || name == "floor" || name == "trunc" || name == "round") {
    double (*g)(double) = name == "ceil" ? static_cast<double (*)(double)>(std::ceil)
                          : name == "floor" ? static_cast<double (*)(double)>(std::floor)
                          : name == "trunc" ? static_cast<double (*)(double)>(std::trunc)
                                            : static_cast<double (*)(double)>(std::nearbyint);
    f = [g](const double* v) -> std::optional<double> { return g(v[0]); };
    fi = [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[0]; };
  } else if (name == "sign") {
    f = [](const double* v) -> std::optional<double> { return (0 < v[0]) - (v[0] < 0); };
    fi = [](const std::int64_t* v) -> std::optional<std::int64_t> { return (0 < v[0]) - (v[0] < 0); };
  } else if (name == "leaky_relu") {
    double slope = at.get_float("negative_slope");
    f = [slope](const double* v) -> std::optional<double> { return v[0] > 0 ? v[0] : v[0] * slope; };
  } else {
    return std::nullopt;
  }
  return elementwise(compute, f, fi);
}

std::optional<Bytes> Evaluator::binary() {
  const std::string& name = sym.op->name;
  std::vector<OperandInfo> infos;
  for (std::size_t k = 0; k < sym.inputs.size(); ++k) {
    OperandInfo o;
    o.kind = sym.inputs[k].kind;
    if (o.kind == OperandKind::Tensor) o.tensor = &in_type(k);
    o.scalar = sym.inputs[k].scalar;
    infos.push_back(o);
  }
  if (name == "where") {
    DType compute = out_type.dtype;
    return elementwise(compute, [](const double* v) -> std::optional<double> { return v[0] != 0 ? v[1] : v[2]; },
                       [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (name == "masked_fill") {
    return elementwise(out_type.dtype,
                       [](const double* v) -> std::optional<double> { return v[1] != 0 ? v[2] : v[0]; },
                       [](const std::int64_t* v) -> std::optional<std::int64_t> { return v[1] != 0 ? v[2] : v[0]; });
  }
  DType promoted = result_type(infos);
  using F = std::optional<double>;
  using I = std::optional<std::int64_t>;
  auto cmp = [&](auto pred) {
    return elementwise(promoted, [pred](const double* v) -> F { return pred(v[0], v[1]) ? 1.0 : 0.0; },
                       [pred](const std::int64_t* v) -> I { return pred(v[0], v[1]) ? 1 : 0; });
  };
  if (name == "eq") return cmp([](auto a, auto b) { return a == b; });
  if (name == "ne") return cmp([](auto a, auto b) { return a != b; });
  if (name == "lt") return cmp([](auto a, auto b) { return a < b; });
  if (name == "le") return cmp([](auto a, auto b) { return a <= b; });
  if (name == "gt") return cmp([](auto a, auto b) { return a > b; });
  if (name == "ge") return cmp([](auto a, auto b) { return a >= b; });
  if (name == "logical_and") return cmp([](auto a, auto b) { return a != 0 && b != 0; });
  if (name == "logical_or") return cmp([](auto a, auto b) { return a != 0 || b != 0; });

  DType compute = out_type.dtype;
  if (name == "add")
    return elementwise(compute, [](const double* v) -> F { return v[0] + v[1]; },
                       [](const std::int64_t* v) -> I { return wrap_add(v[0], v[1]); });
  if (name == "sub")
    return elementwise(compute, [](const double* v) -> F { return v[0] - v[1]; },
                       [](const std::int64_t* v) -> I { return wrap_sub(v[0], v[1]); });
  if (name == "mul")
    return elementwise(compute, [](const double* v) -> F { return v[0] * v[1]; },
                       [](const std::int64_t* v) -> I { return wrap_mul(v[0], v[1]); });
  if (name == "maximum")
    return elementwise(compute,
                       [](const double* v) -> F { return std::isnan(v[0]) || std::isnan(v[1]) ? NAN : std::max(v[0], v[1]); },
                       [](const std::int64_t* v) -> I { return std::max(v[0], v[1]); });
  if (name == "minimum")
    return elementwise(compute,
                       [](const double* v) -> F { return std::isnan(v[0]) || std::isnan(v[1]) ? NAN : std::min(v[0], v[1]); },
                       [](const std::int64_t* v) -> I { return std::min(v[0], v[1]); });
  if (name == "pow")
    return elementwise(compute, [](const double* v) -> F { return std::pow(v[0], v[1]); },
                       [](const std::int64_t* v) -> I {
                         if (v[1] < 0) return std::nullopt;  // PyTorch raises for negative integer powers
                         std::int64_t r = 1, base = v[0];
                         for (std::int64_t e = v[1]; e > 0; e >>= 1, base = wrap_mul(base, base))
                           if (e & 1) r = wrap_mul(r, base);
                         return r;
                       });
  if (name == "div") {
    std::string mode = sym.attrs.is_none("rounding_mode") ? "" : sym.attrs.get_string("rounding_mode");
    DType c = mode.empty() ? compute : promoted;
    return elementwise(
        c,
        [mode, c](const double* v) -> F {
          double q = round_to(c, v[0] / v[1]);
          if (mode == "trunc") return std::trunc(q);
          if (mode == "floor") {
            // Python's floor division on floats (as ATen computes it), not floor(a / b).
            if (v[1] == 0) return q;
            double m = std::fmod(v[0], v[1]);
            double d = (v[0] - m) / v[1];
            if (m != 0 && ((v[1] < 0) != (m < 0))) d -= 1;
            double fd = std::floor(d);
            if (d - fd > 0.5) fd += 1;
            return d == 0 ? std::copysign(0.0, v[0] / v[1]) : fd;
          }
          return q;
        },
        [mode](const std::int64_t* v) -> I {
          if (v[1] == 0) return std::nullopt;  // PyTorch raises "ZeroDivisionError"
          if (v[0] == std::numeric_limits<std::int64_t>::min() && v[1] == -1) return v[0];
          std::int64_t q = v[0] / v[1];
          if (mode == "floor" && (v[0] % v[1] != 0) && ((v[0] < 0) != (v[1] < 0))) --q;
          return q;
        });
  }
  return std::nullopt;
}

std::optional<Bytes> Evaluator::reduction() {
  const TensorType& in = in_type(0);
  const std::string& name = sym.op->name;
  if (!arith_ok(in.dtype) || !arith_ok(out_type.dtype) || out_type.dtype == DType::Bool) return std::nullopt;
  const IntList& dims = sym.attrs.get_ints("dims");
  std::vector<bool> reduced(in.rank(), dims.empty());
  for (auto d : dims)
    if (in.rank() > 0) reduced[static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(in.rank()) : d)] = true;
  Shape kept = in.shape;  // the keepdim shape: reduced dims have size 1
  std::int64_t count = 1;
  for (std::size_t i = 0; i < in.rank(); ++i)
    if (reduced[i]) count *= in.shape[i], kept[i] = 1;
  Strides ks = contiguous(kept);
  for (std::size_t i = 0; i < in.rank(); ++i)
    if (reduced[i]) ks[i] = 0;
  std::size_t n_out = static_cast<std::size_t>(out_type.numel());
  DType odt = out_type.dtype;
  bool fp = is_floating(odt);
  std::vector<double> acc_f(n_out, name == "amax" ? -INFINITY : 0.0);
  std::vector<std::int64_t> acc_i(n_out, name == "amax" ? std::numeric_limits<std::int64_t>::min() : 0);
  if (name == "amax" && count == 0) return std::nullopt;
  const unsigned char* data = in_data(0);
  std::size_t esize = dtype_size(in.dtype), k = 0;
  bool ok = for_each_index(in.shape, [&](const std::vector<std::int64_t>& idx) {
    std::size_t o = static_cast<std::size_t>(dot(idx, ks));
    const unsigned char* p = data + k++ * esize;
    if (fp) {
      double v = round_to(odt, load_f(p, in.dtype));
      if (name == "amax")
        acc_f[o] = std::isnan(v) || std::isnan(acc_f[o]) ? NAN : std::max(acc_f[o], v);
      else
        acc_f[o] += v;
    } else {
      if (is_floating(in.dtype)) {
        double v = load_f(p, in.dtype);
        if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return false;
      }
      std::int64_t v = load_i(p, in.dtype);
      acc_i[o] = name == "amax" ? std::max(acc_i[o], v) : wrap_add(acc_i[o], v);
    }
    return true;
  });
  if (!ok) return std::nullopt;
  Bytes out(out_type.nbytes());
  for (std::size_t o = 0; o < n_out; ++o) {
    unsigned char* dst = out.data() + o * dtype_size(odt);
    if (fp) {
      double v = name == "mean" ? (count == 0 ? NAN : acc_f[o] / static_cast<double>(count)) : acc_f[o];
      store_f(dst, odt, v);
    } else {
      store_i(dst, odt, acc_i[o]);
    }
  }
  return out;
}

std::optional<Bytes> Evaluator::shape_op() {
  const std::string& name = sym.op->name;
  const Attrs& at = sym.attrs;
  const TensorType& in = in_type(0);
  std::size_t esize = dtype_size(in.dtype);
  Strides s = contiguous(in.shape);
  if (name == "reshape") return Bytes(in_data(0), in_data(0) + in.nbytes());
  if (name == "permute") {
    const IntList& dims = at.get_ints("dims");
    Strides ps(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) ps[i] = s[static_cast<std::size_t>(dims[i])];
    return gather(in_data(0), esize, out_type.shape, 0, ps);
  }
  if (name == "expand") return gather(in_data(0), esize, out_type.shape, 0, broadcast_strides(in.shape, out_type.shape));
  if (name == "slice") {
    auto dim = static_cast<std::size_t>(at.get_int("dim"));
    std::int64_t base = at.get_int("start") * s[dim];
    Strides ss = s;
    ss[dim] *= at.get_int("step");
    return gather(in_data(0), esize, out_type.shape, base, ss);
  }
  if (name == "select") {
    auto dim = static_cast<std::size_t>(at.get_int("dim"));
    std::int64_t base = at.get_int("index") * s[dim];
    Strides ss = s;
    ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(dim));
    return gather(in_data(0), esize, out_type.shape, base, ss);
  }
  if (name == "cat") {
    std::int64_t rank = static_cast<std::int64_t>(out_type.rank());
    std::int64_t dim = at.get_int("dim");
    if (dim < 0) dim += rank;
    Bytes out(out_type.nbytes());
    Strides os = contiguous(out_type.shape);
    std::size_t osize = dtype_size(out_type.dtype);
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < sym.inputs.size(); ++k) {
      const TensorType& t = in_type(k);
      const unsigned char* data = in_data(k);
      std::size_t isize = dtype_size(t.dtype), j = 0;
      bool ok = for_each_index(t.shape, [&](const std::vector<std::int64_t>& idx) {
        std::int64_t o = dot(idx, os) + offset * os[static_cast<std::size_t>(dim)];
        return convert(data + j++ * isize, t.dtype, out.data() + o * static_cast<std::int64_t>(osize), out_type.dtype);
      });
      if (!ok) return std::nullopt;
      offset += t.shape[static_cast<std::size_t>(dim)];
    }
    return out;
  }
  return std::nullopt;
}

std::optional<Bytes> Evaluator::run() {
  if (sym.is_region() || sym.outputs.size() != 1) return std::nullopt;
  for (const Operand& in : sym.inputs) {
    if (!in.is_tensor()) continue;
    const Value& v = trace.value(in.value);
    if (v.origin != ValueOrigin::Constant || !v.data) return std::nullopt;
  }
  switch (sym.op->category) {
    case OpCategory::Shape: return shape_op();
    case OpCategory::Reduction: return reduction();
    case OpCategory::Elementwise: {
      const auto& specs = sym.op->inputs;
      if (specs.size() == 1) return unary();
      return binary();
    }
    default: return std::nullopt;
  }
}

const std::set<std::string>& evaluable_ops() {
  static const std::set<std::string> ops = {
      "relu", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "sigmoid", "tanh",
      "gelu", "silu", "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "clamp", "logical_not", "to_dtype",
      "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
      "logical_or", "where", "masked_fill", "reshape", "permute", "expand", "slice", "select", "cat", "sum",
      "mean", "amax", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p", "log2",
      "log10", "ceil", "floor", "trunc", "round", "sign"};
  return ops;
}

}  // namespace

bool can_evaluate(const BoundSymbol& sym) {
  return sym.op && !sym.is_region() && evaluable_ops().count(sym.op->name) != 0;
}

std::optional<std::shared_ptr<const ConstantData>> evaluate_symbol(const Trace& trace, const BoundSymbol& sym) {
  if (!can_evaluate(sym)) return std::nullopt;
  std::optional<Bytes> bytes = Evaluator(trace, sym).run();
  if (!bytes) return std::nullopt;
  THUNDERC_CHECK(bytes->size() == trace.type(sym.outputs[0]).nbytes(), "reference_eval: ", sym.op->name,
                 " produced ", bytes->size(), " bytes");
  auto data = std::make_shared<ConstantData>();
  data->bytes = std::move(*bytes);
  return std::shared_ptr<const ConstantData>(std::move(data));
}

}  // namespace thunderc
