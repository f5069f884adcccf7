// Complex arithmetic and data movement, lowered at import to real operators. Only the FFTs and
// view_as_real / view_as_complex take complex tensors (OpDef::complex_ok); everything else a model does to a
// complex tensor z is rewritten here over view_as_real(z) (its [..., 2] float pairs), and the result packed
// back with view_as_complex where it is complex. The fusion pass then fuses the real operators as any others.
//
// Semantics are ATen's: a real operand is promoted to (x, 0) exactly and multiplied in full, so
// (inf + 0i) * 2 keeps NaN where ATen's complex product makes it; division follows c10::complex's scaled
// (Smith) formula; abs is hypot(re, im), angle atan2(im, re).
//
// M is the frontend's importer: emit(op, inputs, attrs), type(v), device(), constant(name, type, data).
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "core/ir/trace.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"

namespace thunderc::complex_ops {

// Whether the importer must lower op (rather than emit it): it is not one of the complex operators and a
// tensor operand is complex, or it is a conversion to a complex dtype.
template <class M>
bool needs_lowering(M& m, const OpDef& op, const std::vector<Operand>& inputs, const Attrs& attrs) {
  if (op.complex_ok) return false;
  for (const Operand& in : inputs)
    if (in.is_tensor() && is_complex(m.type(in.value).dtype)) return true;
  return op.name == "to_dtype" && attrs.has("dtype") && is_complex(attrs.get_dtype("dtype"));
}

namespace detail {

inline Operand T(ValueId v) { return Operand::tensor(v); }
inline Operand N(double x) { return Operand::number(Scalar(x)); }
inline bool is_number(const Operand& o) { return o.kind == OperandKind::Scalar; }
inline double number(const Operand& o) { return o.scalar.to_double(); }

// Real arithmetic on operands that may be numbers, folding number-with-number in C++ (emit refuses those).
template <class M>
Operand bin(M& m, const char* op, const Operand& a, const Operand& b) {
  if (is_number(a) && is_number(b)) {
    const double x = number(a), y = number(b);
    const std::string o = op;
    if (o == "add") return N(x + y);
    if (o == "sub") return N(x - y);
    if (o == "mul") return N(x * y);
    if (o == "div") return N(x / y);
    internal_error("complex_ops: no folding for ", op);
  }
  return T(m.emit(op, {a, b}));
}

template <class M>
Operand un(M& m, const char* op, const Operand& a) {
  if (is_number(a)) {
    const std::string o = op;
    if (o == "neg") return N(-number(a));
    if (o == "abs") return N(std::fabs(number(a)));
    internal_error("complex_ops: no folding for ", op);
  }
  return T(m.emit(op, {a}));
}

// Both parts of a complex value; a real tensor or number x is (x, 0).
struct Parts {
  Operand re, im;
};

template <class M>
Parts parts(M& m, const Operand& o) {
  if (!o.is_tensor() || !is_complex(m.type(o.value).dtype)) return {o, N(0.0)};
  const auto last = static_cast<std::int64_t>(m.type(o.value).rank());
  const ValueId pairs = m.emit("view_as_real", {o});
  auto part = [&](std::int64_t i) { return T(m.emit("select", {T(pairs)}, {{"dim", last}, {"index", i}})); };
  return {part(0), part(1)};
}

// `o` as a real tensor of `shape` and dtype `dt`: numbers become constants, other shapes are broadcast.
template <class M>
ValueId real_tensor(M& m, const Operand& o, const Shape& shape, DType dt) {
  ValueId v;
  if (is_number(o)) {
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(dtype_size(dt));
    scalar_to_bytes(number(o), dt, data->bytes.data());
    v = m.constant("complex_part", TensorType{dt, {}, m.device()}, std::move(data));
  } else {
    v = o.value;
  }
  if (m.type(v).dtype != dt) v = m.emit("to_dtype", {T(v)}, {{"dtype", dt}});
  if (m.type(v).shape != shape) v = m.emit("expand", {T(v)}, {{"shape", IntList(shape.begin(), shape.end())}});
  return v;
}

// The complex tensor of dtype `complex_dt` and `shape` whose parts are re and im.
template <class M>
ValueId pack(M& m, const Parts& p, const Shape& shape, DType complex_dt) {
  const DType rt = complex_to_real(complex_dt);
  Shape with_pair = shape;
  with_pair.push_back(1);
  auto column = [&](const Operand& part) {
    return T(m.emit("reshape", {T(real_tensor(m, part, shape, rt))}, {{"shape", IntList(with_pair.begin(), with_pair.end())}}));
  };
  const ValueId pairs = m.emit("cat", {column(p.re), column(p.im)}, {{"dim", static_cast<std::int64_t>(shape.size())}});
  return m.emit("view_as_complex", {T(pairs)});
}

inline Shape shape_of(const TensorType* t) { return t ? t->shape : Shape{}; }

}  // namespace detail

// Part `index` (0 real, 1 imaginary) of a complex tensor z.
template <class M>
ValueId part(M& m, ValueId z, std::int64_t index) {
  const ValueId pairs = m.emit("view_as_real", {Operand::tensor(z)});
  return m.emit("select", {Operand::tensor(pairs)},
                {{"dim", static_cast<std::int64_t>(m.type(z).rank())}, {"index", index}});
}

// conj(z) of a complex tensor as a new tensor (re, -im): PyTorch's lazy conjugate bit has no counterpart here.
template <class M>
ValueId conjugated(M& m, ValueId z) {
  using namespace detail;
  const Parts p = parts(m, T(z));
  return pack(m, {p.re, T(m.emit("neg", {p.im}))}, m.type(z).shape, m.type(z).dtype);
}

// The lowering of `op` on complex operands, or fail(why) when there is none.
template <class M, class Fail>
ValueId lower(M& m, const OpDef& op, std::vector<Operand> inputs, Attrs attrs, Fail fail) {
  using namespace detail;
  const std::string& name = op.name;
  // The complex tensor operand (the first one) and its rank.
  const TensorType* zt = nullptr;
  for (const Operand& in : inputs)
    if (in.is_tensor() && is_complex(m.type(in.value).dtype)) {
      zt = &m.type(in.value);
      break;
    }
  auto result_dtype = [&]() {  // torch.result_type, as the operator's meta function would give it
    std::vector<OperandInfo> infos(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      infos[i].kind = inputs[i].kind;
      if (inputs[i].is_tensor()) infos[i].tensor = &m.type(inputs[i].value);
      else infos[i].scalar = inputs[i].scalar;
    }
    return result_type(infos);
  };
  auto broadcast = [&]() {
    std::vector<Shape> shapes;
    for (const Operand& in : inputs)
      if (in.is_tensor()) shapes.push_back(m.type(in.value).shape);
    return broadcast_shapes(shapes, name);
  };

  if (name == "to_dtype") {
    const DType to = attrs.get_dtype("dtype");
    if (!zt) {  // real to complex: (x, 0)
      if (!is_complex(to)) internal_error("complex_ops: to_dtype needs no lowering");
      const Parts p{T(m.emit("to_dtype", {inputs[0]}, {{"dtype", complex_to_real(to)}})), N(0.0)};
      return pack(m, p, m.type(inputs[0].value).shape, to);
    }
    if (is_complex(to)) {
      const ValueId pairs = m.emit("view_as_real", {inputs[0]});
      return m.emit("view_as_complex", {T(m.emit("to_dtype", {T(pairs)}, {{"dtype", complex_to_real(to)}}))});
    }
    // complex to real keeps the real part, as PyTorch does (with a warning there).
    return m.emit("to_dtype", {parts(m, inputs[0]).re}, {{"dtype", to}});
  }

  const bool elementwise = name == "add" || name == "sub" || name == "mul" || name == "div";
  if (elementwise) {
    if (name == "div" && !attrs.is_none("rounding_mode"))
      fail("div with rounding_mode of a complex tensor: PyTorch has no rounding of complex numbers");
    const DType dt = result_dtype();
    const Shape shape = broadcast();
    const Parts a = parts(m, inputs[0]), b = parts(m, inputs[1]);
    Parts r;
    if (name == "add" || name == "sub") {
      r = {bin(m, name.c_str(), a.re, b.re), bin(m, name.c_str(), a.im, b.im)};
    } else if (name == "mul") {
      r = {bin(m, "sub", bin(m, "mul", a.re, b.re), bin(m, "mul", a.im, b.im)),
           bin(m, "add", bin(m, "mul", a.re, b.im), bin(m, "mul", a.im, b.re))};
    } else {
      // c10::complex's division, (a + bi) / (c + di): scaled by whichever of c, d is larger in magnitude.
      const Operand &c = b.re, &d = b.im;
      const Operand ac = un(m, "abs", c), ad = un(m, "abs", d);
      const Operand rat1 = bin(m, "div", d, c), scl1 = bin(m, "div", N(1.0), bin(m, "add", c, bin(m, "mul", d, rat1)));
      const Operand rat2 = bin(m, "div", c, d), scl2 = bin(m, "div", N(1.0), bin(m, "add", d, bin(m, "mul", c, rat2)));
      const Parts big_c{bin(m, "mul", bin(m, "add", a.re, bin(m, "mul", a.im, rat1)), scl1),
                        bin(m, "mul", bin(m, "sub", a.im, bin(m, "mul", a.re, rat1)), scl1)};
      const Parts big_d{bin(m, "mul", bin(m, "add", bin(m, "mul", a.re, rat2), a.im), scl2),
                        bin(m, "mul", bin(m, "sub", bin(m, "mul", a.im, rat2), a.re), scl2)};
      const Parts zero{bin(m, "div", a.re, ac), bin(m, "div", a.im, ad)};  // c = d = 0: inf or NaN, as c10
      auto choose = [&](const Operand& cond, const Operand& x, const Operand& y) {
        if (is_number(cond)) return number(cond) != 0 ? x : y;
        return T(m.emit("where", {cond, x, y}));
      };
      auto cmp = [&](const char* op, const Operand& x, const Operand& y) -> Operand {
        if (is_number(x) && is_number(y)) {
          const double u = number(x), v = number(y);
          return N(std::string(op) == "ge" ? (u >= v) : (u == v));
        }
        if (is_number(x)) return T(m.emit(std::string(op) == "ge" ? "le" : op, {y, x}));
        return T(m.emit(op, {x, y}));
      };
      auto both = [&](const Operand& x, const Operand& y) -> Operand {
        if (is_number(x) && is_number(y)) return N(number(x) != 0 && number(y) != 0);
        if (is_number(x)) return number(x) != 0 ? y : N(0.0);
        if (is_number(y)) return number(y) != 0 ? x : N(0.0);
        return T(m.emit("logical_and", {x, y}));
      };
      const Operand c_wins = cmp("ge", ac, ad), all_zero = both(cmp("eq", ac, N(0.0)), cmp("eq", ad, N(0.0)));
      r = {choose(c_wins, choose(all_zero, zero.re, big_c.re), big_d.re),
           choose(c_wins, choose(all_zero, zero.im, big_c.im), big_d.im)};
    }
    return pack(m, r, shape, dt);
  }

  if (name == "neg") {
    const ValueId pairs = m.emit("view_as_real", {inputs[0]});
    return m.emit("view_as_complex", {T(m.emit("neg", {T(pairs)}))});
  }
  if (name == "abs") {
    const Parts p = parts(m, inputs[0]);
    return m.emit("hypot", {p.re, p.im});
  }

  // Data movement of one complex tensor: the same operator on its pairs, the pair dimension kept last.
  if (!zt) internal_error("complex_ops: ", name, " has no complex operand");
  const auto rank = static_cast<std::int64_t>(zt->rank());
  auto wrap = [&](std::int64_t d) { return d < 0 ? d + rank : d; };
  auto movement = [&](const Attrs& pair_attrs) {
    if (!inputs[0].is_tensor() || !is_complex(m.type(inputs[0].value).dtype))
      fail("takes a complex tensor only as its first operand here");
    const ValueId pairs = m.emit("view_as_real", {inputs[0]});
    return m.emit("view_as_complex", {T(m.emit(name, {T(pairs)}, pair_attrs))});
  };
  auto appended = [](IntList l, std::int64_t v) {
    l.push_back(v);
    return l;
  };
  if (name == "reshape" || name == "expand") return movement({{"shape", appended(attrs.get_ints("shape"), 2)}});
  if (name == "repeat") return movement({{"repeats", appended(attrs.get_ints("repeats"), 1)}});
  if (name == "permute" || name == "flip") {
    IntList dims;
    for (std::int64_t d : attrs.get_ints("dims")) dims.push_back(wrap(d));
    if (name == "permute") dims.push_back(rank);
    return movement({{"dims", dims}});
  }
  if (name == "slice" || name == "select") {
    Attrs a = attrs;
    a.set("dim", wrap(attrs.get_int("dim")));
    return movement(a);
  }
  if (name == "constant_pad_nd") {
    if (attrs.get_float("value") != 0.0) fail("pads a complex tensor with a non-zero value");
    IntList pad = {0, 0};  // the pair dimension, last, is not padded
    for (std::int64_t p : attrs.get_ints("pad")) pad.push_back(p);
    return movement({{"pad", pad}, {"value", 0.0}});
  }
  if (name == "cat") {
    std::vector<Operand> pairs;
    DType dt = zt->dtype;
    for (const Operand& in : inputs) dt = promote_types(dt, m.type(in.value).dtype);
    for (const Operand& in : inputs) {
      const TensorType& t = m.type(in.value);
      ValueId z = in.value;
      if (t.dtype != dt) z = is_complex(t.dtype) ? lower(m, op_registry().get("to_dtype"), {in}, {{"dtype", dt}}, fail)
                                                 : pack(m, {in, N(0.0)}, t.shape, dt);
      pairs.push_back(T(m.emit("view_as_real", {T(z)})));
    }
    return m.emit("view_as_complex", {T(m.emit("cat", pairs, {{"dim", wrap(attrs.get_int("dim"))}}))});
  }
  fail(name + " of a " + std::string(dtype_name(zt->dtype)) +
       " tensor is not supported: thunderc lowers add, sub, mul, div, neg, abs, conversions and data movement "
       "(reshape, permute, expand, slice, select, cat, flip, repeat, zero padding) of complex tensors, and the "
       "FFTs take them directly");
  internal_error("complex_ops: the failure callback returned");
}

}  // namespace thunderc::complex_ops
