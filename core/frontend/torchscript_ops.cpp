// aten -> IR: one small handler per TorchScript operator (or family). Handlers see nodes with at least one
// computed tensor input; nodes whose inputs are all known were already evaluated at compile time.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/frontend/advanced_indexing.h"
#include "core/frontend/composite_ops.h"
#include "core/frontend/fft_ops.h"
#include "core/frontend/same_name_ops.h"
#include "core/frontend/torchscript_importer.h"
#include "core/ir/error.h"

namespace thunderc::ts {

using torch::jit::Node;

namespace {

// Index of the schema argument called `name`, or -1 (argument names are stable across LibTorch versions,
// positions of optional arguments are not).
int arg_index(const Node* n, const std::string& name) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return -1;
  const auto& args = schema->arguments();
  for (std::size_t i = 0; i < args.size() && i < n->inputs().size(); ++i)
    if (args[i].name() == name) return static_cast<int>(i);
  return -1;
}

bool has_arg(Importer& m, const Node* n, const std::string& name) {
  int i = arg_index(n, name);
  return i >= 0 && !m.is_none(n, i);
}

std::size_t need_arg(const Node* n, const std::string& name) {
  int i = arg_index(n, name);
  if (i < 0) internal_error(n->kind().toQualString(), " has no argument '", name, "' in this LibTorch");
  return static_cast<std::size_t>(i);
}

std::int64_t wrap(Importer& m, const Node* n, std::int64_t dim, std::size_t rank) {
  auto r = static_cast<std::int64_t>(std::max<std::size_t>(rank, 1));
  if (dim < -r || dim >= r)
    m.fail(n, "dimension " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

ValueId reshape(Importer& m, ValueId v, Shape shape) {
  if (m.type(v).shape == shape) return v;
  return m.emit("reshape", {Operand::tensor(v)}, {{"shape", shape}});
}

ValueId permute(Importer& m, ValueId v, IntList dims) {
  bool identity = true;
  for (std::size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<std::int64_t>(i);
  if (identity) return v;
  return m.emit("permute", {Operand::tensor(v)}, {{"dims", dims}});
}

// PyTorch slice semantics: negative bounds wrap, then clamp into [0, size].
ValueId slice(Importer& m, ValueId v, std::int64_t dim, std::optional<std::int64_t> start,
              std::optional<std::int64_t> end, std::int64_t step) {
  std::int64_t size = m.type(v).shape[dim];
  auto norm = [&](std::optional<std::int64_t> x, std::int64_t dflt) {
    std::int64_t b = x.value_or(dflt);
    if (b < 0) b += size;
    return std::clamp<std::int64_t>(b, 0, size);
  };
  std::int64_t s = norm(start, 0), e = std::max(norm(end, size), s);
  if (s == 0 && e == size && step == 1) return v;
  return m.emit("slice", {Operand::tensor(v)}, {{"dim", dim}, {"start", s}, {"end", e}, {"step", step}});
}

// Splits along dim into pieces of the given sizes; binds the node's single list output.
void bind_pieces(Importer& m, const Node* n, ValueId v, std::int64_t dim, const IntList& sizes) {
  std::vector<JVal> pieces;
  std::int64_t offset = 0;
  for (std::int64_t len : sizes) {
    pieces.push_back(JVal::of_tensor(slice(m, v, dim, offset, offset + len, 1)));
    offset += len;
  }
  if (offset != m.type(v).shape[dim])
    m.fail(n, "split sizes " + shape_str(sizes) + " do not add up to dimension " + std::to_string(dim) + " of size " +
                  std::to_string(m.type(v).shape[dim]));
  m.bind(n->output(0), JVal::of_seq(std::move(pieces)));
}

Attrs sum_like_attrs(Importer& m, const Node* n, bool with_dtype) {
  Attrs a;
  a.set("dims", has_arg(m, n, "dim") ? m.ints_arg(n, need_arg(n, "dim")) : IntList{});
  a.set("keepdim", has_arg(m, n, "keepdim") ? m.bool_arg(n, need_arg(n, "keepdim")) : false);
  if (with_dtype) {
    auto dt = has_arg(m, n, "dtype") ? m.opt_dtype_arg(n, need_arg(n, "dtype")) : std::nullopt;
    a.set("dtype", dt ? AttrValue(*dt) : AttrValue(None{}));
  }
  return a;
}

// 2-D convolution; 1-D convolutions run as 2-D ones over a height of 1.
ValueId convolution(Importer& m, const Node* n, ValueId x, ValueId w, Operand bias, IntList stride, IntList padding,
                    IntList dilation, std::int64_t groups) {
  std::size_t rank = m.type(w).rank();
  if (rank == 4) {
    return m.emit("conv2d", {Operand::tensor(x), Operand::tensor(w), bias},
                  {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}});
  }
  if (rank != 3) m.fail(n, "only 1-D and 2-D convolutions are supported, the weight has shape " + shape_str(m.type(w).shape));
  Shape xs = m.type(x).shape, ws = m.type(w).shape;
  Shape x2 = xs;
  x2.insert(x2.end() - 1, 1);
  ValueId y = m.emit("conv2d", {Operand::tensor(reshape(m, x, x2)), Operand::tensor(reshape(m, w, {ws[0], ws[1], 1, ws[2]})), bias},
                     {{"stride", IntList{1, stride.at(0)}}, {"padding", IntList{0, padding.at(0)}},
                      {"dilation", IntList{1, dilation.at(0)}}, {"groups", groups}});
  Shape ys = m.type(y).shape;
  ys.erase(ys.end() - 2);
  return reshape(m, y, ys);
}

// conv2d(padding='same'|'valid'): PyTorch pads 'same' symmetrically when the total padding is even.
IntList string_padding(Importer& m, const Node* n, const std::string& mode, ValueId w, const IntList& dilation) {
  std::size_t spatial = m.type(w).rank() - 2;
  if (mode == "valid") return IntList(spatial, 0);
  if (mode != "same") m.fail(n, "padding must be 'same' or 'valid', got '" + mode + "'");
  IntList pad;
  for (std::size_t i = 0; i < spatial; ++i) {
    std::int64_t total = dilation[dilation.size() == 1 ? 0 : i] * (m.type(w).shape[2 + i] - 1);
    if (total % 2) m.fail(n, "padding='same' with an even kernel needs asymmetric padding, which is not supported yet");
    pad.push_back(total / 2);
  }
  return pad;
}

using Fn = std::function<ValueId(Importer&, const Node*)>;

// In-place updates store the result in self's dtype and shape, as PyTorch does.
ValueId cast_for_inplace(Importer& m, const Node* n, ValueId result) {
  const TensorType& self = m.type(m.in(n, 0).tensor);
  const TensorType& r = m.type(result);
  if (r.shape != self.shape)
    m.fail(n, "in-place result of shape " + shape_str(r.shape) + " does not fit the tensor of shape " + shape_str(self.shape));
  if (r.dtype == self.dtype) return result;
  if ((is_floating(r.dtype) && !is_floating(self.dtype)) || (!is_bool(r.dtype) && is_bool(self.dtype)))
    m.fail(n, std::string("result type ") + dtype_name(r.dtype) + " cannot be stored in place into a " +
                  dtype_name(self.dtype) + " tensor");
  return m.emit("to_dtype", {Operand::tensor(result)}, {{"dtype", self.dtype}});
}

struct Table {
  std::map<std::string, Handler> handlers;

  // Registers aten::<name> and, when inplace, aten::<name>_ (the same result, written back into self).
  void def(const std::string& name, Fn fn, bool inplace = true) {
    handlers["aten::" + name] = [fn](Importer& m, const Node* n) { m.bind_tensor(n, 0, fn(m, n)); };
    if (inplace)
      handlers["aten::" + name + "_"] = [fn](Importer& m, const Node* n) {
        m.bind_inplace_result(n, cast_for_inplace(m, n, fn(m, n)));
      };
  }
  void raw(const std::string& kind, Handler h) { handlers[kind] = std::move(h); }
};

void unary_ops(Table& t) {
  for (const char* name : kSameNameUnaryOps) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) { return m.emit(op_name, {m.operand(n, 0)}); });
  }
  for (const char* name : {"isnan", "isinf"}) {  // no in-place forms: the result is bool
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) { return m.emit(op_name, {m.operand(n, 0)}); }, false);
  }
  t.def("round", [](Importer& m, const Node* n) {
    if (has_arg(m, n, "decimals") && m.int_arg(n, need_arg(n, "decimals")) != 0)
      m.fail(n, "round with decimals is not supported; only round(x) (decimals=0)");
    return m.emit("round", {m.operand(n, 0)});
  });
  t.def("elu", [](Importer& m, const Node* n) {
    return m.emit("elu", {m.operand(n, 0)},
                  {{"alpha", m.float_arg(n, 1)}, {"scale", m.float_arg(n, 2)}, {"input_scale", m.float_arg(n, 3)}});
  });
  t.def("gelu", [](Importer& m, const Node* n) {
    std::string approx = has_arg(m, n, "approximate") ? m.string_arg(n, need_arg(n, "approximate")) : "none";
    if (approx != "none" && approx != "tanh") m.fail(n, "approximate must be 'none' or 'tanh', got '" + approx + "'");
    return m.emit("gelu", {m.operand(n, 0)}, {{"approximate", approx}});
  });
  t.def("relu6", [](Importer& m, const Node* n) {
    return m.emit("hardtanh", {m.operand(n, 0)}, {{"min_val", 0.0}, {"max_val", 6.0}});
  });
  t.def("hardtanh", [](Importer& m, const Node* n) {
    return m.emit("hardtanh", {m.operand(n, 0)}, {{"min_val", m.float_arg(n, 1)}, {"max_val", m.float_arg(n, 2)}});
  });
  t.def("leaky_relu", [](Importer& m, const Node* n) {
    return m.emit("leaky_relu", {m.operand(n, 0)}, {{"negative_slope", m.float_arg(n, 1)}});
  });
  auto clamp = [](bool use_min, bool use_max) {
    return [use_min, use_max](Importer& m, const Node* n) {
      auto bound = [&](bool use, const char* arg) -> AttrValue {
        int i = arg_index(n, arg);
        if (!use || i < 0 || m.is_none(n, i)) return None{};
        if (m.in(n, i).kind != JVal::Kind::Known) m.fail(n, std::string(arg) + " must be a number known at compile time");
        return m.float_arg(n, i);
      };
      return m.emit("clamp", {m.operand(n, 0)}, {{"min", bound(use_min, "min")}, {"max", bound(use_max, "max")}});
    };
  };
  t.def("clamp", clamp(true, true));
  t.def("clip", clamp(true, true));
  t.def("clamp_min", clamp(true, false));
  t.def("clamp_max", clamp(false, true));
}

void binary_ops(Table& t) {
  // add/sub take alpha: a + alpha * b.
  for (const char* name : {"add", "sub"}) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) {
      Operand b = m.operand(n, 1);
      if (has_arg(m, n, "alpha")) {
        double alpha = m.float_arg(n, need_arg(n, "alpha"));
        if (alpha != 1.0) {
          const c10::IValue& a = m.in(n, need_arg(n, "alpha")).known;
          Operand alpha_op = Operand::number(a.isInt() ? Scalar(a.toInt()) : Scalar(alpha));
          b = b.is_tensor() ? Operand::tensor(m.emit("mul", {b, alpha_op})) : Operand::number(Scalar(b.scalar.to_double() * alpha));
        }
      }
      return m.emit(op_name, {m.operand(n, 0), b});
    });
  }
  t.def("rsub", [](Importer& m, const Node* n) {
    Operand self = m.operand(n, 0);
    if (has_arg(m, n, "alpha") && m.float_arg(n, need_arg(n, "alpha")) != 1.0)
      self = Operand::tensor(m.emit("mul", {self, Operand::number(Scalar(m.float_arg(n, need_arg(n, "alpha"))))}));
    return m.emit("sub", {m.operand(n, 1), self});
  }, false);
  auto binary = [](const std::string& op_name) {
    return [op_name](Importer& m, const Node* n) { return m.emit(op_name, {m.operand(n, 0), m.operand(n, 1)}); };
  };
  for (const char* name : kSameNameBinaryOps) t.def(name, binary(name));
  t.def("pow", binary("pow"));
  t.def("div", [](Importer& m, const Node* n) {
    AttrValue mode = None{};
    if (has_arg(m, n, "rounding_mode")) mode = m.string_arg(n, need_arg(n, "rounding_mode"));
    return m.emit("div", {m.operand(n, 0), m.operand(n, 1)}, {{"rounding_mode", mode}});
  });
  t.def("true_divide", [](Importer& m, const Node* n) { return m.emit("div", {m.operand(n, 0), m.operand(n, 1)}); });
  t.def("floor_divide", [](Importer& m, const Node* n) {
    return m.emit("div", {m.operand(n, 0), m.operand(n, 1)}, {{"rounding_mode", std::string("floor")}});
  });
  // &, | and ^: the bitwise ops; on bools only (masks), the logical ones, which mean the same there.
  for (auto [name, bitwise, logical] :
       {std::tuple{"__and__", "bitwise_and", "logical_and"}, {"bitwise_and", "bitwise_and", "logical_and"},
        {"__or__", "bitwise_or", "logical_or"}, {"bitwise_or", "bitwise_or", "logical_or"},
        {"__xor__", "bitwise_xor", "logical_xor"}, {"bitwise_xor", "bitwise_xor", "logical_xor"}}) {
    std::string bitwise_op = bitwise, logical_op = logical;
    t.def(name, [bitwise_op, logical_op](Importer& m, const Node* n) {
      bool all_bool = true;
      for (int i = 0; i < 2; ++i) {
        Operand o = m.operand(n, i);
        all_bool = all_bool && (o.is_tensor() ? is_bool(m.type(o.value).dtype) : o.scalar.is_bool());
      }
      return m.emit(all_bool ? logical_op : bitwise_op, {m.operand(n, 0), m.operand(n, 1)});
    });
  }
  // max / min: of two tensors (max.other) maximum / minimum; of one (max()) amax / amin over every dim; along
  // a dim (max.dim: values and indices) amax / amin and argmax / argmin.
  for (auto [name, pairwise, extreme, arg] : {std::tuple{"max", "maximum", "amax", "argmax"}, {"min", "minimum", "amin", "argmin"}}) {
    std::string pairwise_op = pairwise, extreme_op = extreme, arg_op = arg;
    t.raw(std::string("aten::") + name, [pairwise_op, extreme_op, arg_op](Importer& m, const Node* n) {
      if (n->outputs().size() == 2) {
        const std::int64_t dim = m.int_arg(n, 1);
        const bool keepdim = n->inputs().size() > 2 && m.bool_arg(n, 2);
        const Operand x = Operand::tensor(m.tensor(n, 0));
        m.bind_tensor(n, 0, m.emit(extreme_op, {x}, {{"dims", IntList{dim}}, {"keepdim", keepdim}}));
        m.bind_tensor(n, 1, m.emit(arg_op, {x}, {{"dim", dim}, {"keepdim", keepdim}}));
      } else if (n->inputs().size() == 1) {
        m.bind_tensor(n, 0, m.emit(extreme_op, {Operand::tensor(m.tensor(n, 0))}, {{"dims", IntList{}}, {"keepdim", false}}));
      } else if (n->inputs().size() == 2 && m.in(n, 1).kind == JVal::Kind::Tensor) {
        m.bind_tensor(n, 0, m.emit(pairwise_op, {m.operand(n, 0), m.operand(n, 1)}));
      } else {
        m.fail(n, "this overload is not supported; max(a), max(a, b) of two tensors and max(a, dim) are");
      }
    });
  }
  for (const char* name : {"argmax", "argmin"}) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) {
      auto dim = has_arg(m, n, "dim") ? m.opt_int_arg(n, need_arg(n, "dim")) : std::nullopt;
      return m.emit(op_name, {Operand::tensor(m.tensor(n, 0))},
                    {{"dim", dim ? AttrValue(*dim) : AttrValue(None{})},
                     {"keepdim", has_arg(m, n, "keepdim") && m.bool_arg(n, need_arg(n, "keepdim"))}});
    }, false);
  }
  t.def("cumsum", [](Importer& m, const Node* n) {
    auto dt = has_arg(m, n, "dtype") ? m.opt_dtype_arg(n, need_arg(n, "dtype")) : std::nullopt;
    return m.emit("cumsum", {Operand::tensor(m.tensor(n, 0))},
                  {{"dim", m.int_arg(n, 1)}, {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
  });
  t.def("index_select", [](Importer& m, const Node* n) {
    return m.emit("index_select", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 2))}, {{"dim", m.int_arg(n, 1)}});
  }, false);
  t.def("gather", [](Importer& m, const Node* n) {
    return m.emit("gather", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 2))}, {{"dim", m.int_arg(n, 1)}});
  }, false);
  // prod(self, *, dtype=None) and prod.dim_int(self, dim, keepdim=False, *, dtype=None).
  t.def("prod", [](Importer& m, const Node* n) {
    auto dt = has_arg(m, n, "dtype") ? m.opt_dtype_arg(n, need_arg(n, "dtype")) : std::nullopt;
    const bool by_dim = arg_index(n, "dim") >= 0;
    return m.emit("prod", {Operand::tensor(m.tensor(n, 0))},
                  {{"dim", by_dim ? AttrValue(m.int_arg(n, need_arg(n, "dim"))) : AttrValue(None{})},
                   {"keepdim", by_dim && has_arg(m, n, "keepdim") && m.bool_arg(n, need_arg(n, "keepdim"))},
                   {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
  }, false);
  // sort(self, dim=-1, descending=False), sort.stable(self, *, stable, dim=-1, descending=False): (values, indices).
  t.raw("aten::sort", [](Importer& m, const Node* n) {
    const bool stable = has_arg(m, n, "stable") && m.bool_arg(n, need_arg(n, "stable"));
    auto out = m.emit_all("sort", {Operand::tensor(m.tensor(n, 0))},
                          {{"dim", has_arg(m, n, "dim") ? m.int_arg(n, need_arg(n, "dim")) : std::int64_t{-1}},
                           {"descending", has_arg(m, n, "descending") && m.bool_arg(n, need_arg(n, "descending"))},
                           {"stable", stable}});
    m.bind_tensor(n, 0, out[0]);
    m.bind_tensor(n, 1, out[1]);
  });
  // topk(self, k, dim=-1, largest=True, sorted=True): (values, indices).
  t.raw("aten::topk", [](Importer& m, const Node* n) {
    auto out = m.emit_all("topk", {Operand::tensor(m.tensor(n, 0))},
                          {{"k", m.int_arg(n, 1)}, {"dim", m.int_arg(n, 2)}, {"largest", m.bool_arg(n, 3)},
                           {"sorted", m.bool_arg(n, 4)}});
    m.bind_tensor(n, 0, out[0]);
    m.bind_tensor(n, 1, out[1]);
  });
  t.def("diagonal", [](Importer& m, const Node* n) {
    return m.emit("diagonal", {Operand::tensor(m.tensor(n, 0))},
                  {{"offset", m.int_arg(n, 1)}, {"dim1", m.int_arg(n, 2)}, {"dim2", m.int_arg(n, 3)}});
  }, false);
  // scatter.src / scatter.value (self, dim, index, src|value) and their reduce="add"/"multiply" forms, which
  // are scatter_reduce's sum / prod including self.
  t.def("scatter", [](Importer& m, const Node* n) {
    const Operand a = Operand::tensor(m.tensor(n, 0)), index = Operand::tensor(m.tensor(n, 2));
    const std::int64_t dim = m.int_arg(n, 1);
    const Operand src = m.operand(n, 3);
    if (!has_arg(m, n, "reduce")) return m.emit("scatter", {a, index, src}, {{"dim", dim}});
    const std::string reduce = m.string_arg(n, need_arg(n, "reduce"));
    if (reduce != "add" && reduce != "multiply") m.fail(n, "reduce must be 'add' or 'multiply', got '" + reduce + "'");
    if (!src.is_tensor()) m.fail(n, "scatter with reduce= and a number as value is not supported; use a tensor src");
    return m.emit("scatter_reduce", {a, index, src}, {{"dim", dim}, {"reduce", std::string(reduce == "add" ? "sum" : "prod")}, {"include_self", true}});
  });
  t.def("scatter_add", [](Importer& m, const Node* n) {
    return m.emit("scatter_reduce", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 2)), Operand::tensor(m.tensor(n, 3))},
                  {{"dim", m.int_arg(n, 1)}, {"reduce", std::string("sum")}, {"include_self", true}});
  });
  t.def("scatter_reduce", [](Importer& m, const Node* n) {
    return m.emit("scatter_reduce", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 2)), Operand::tensor(m.tensor(n, 3))},
                  {{"dim", m.int_arg(n, 1)}, {"reduce", m.string_arg(n, 4)},
                   {"include_self", !has_arg(m, n, "include_self") || m.bool_arg(n, need_arg(n, "include_self"))}});
  });
  // index.Tensor(self, Tensor?[] indices); index_put(self, Tensor?[] indices, values, accumulate=False).
  t.def("index", [](Importer& m, const Node* n) {
    return emit_index(m, m.tensor(n, 0), m.optional_tensors_arg(n, 1), [&](const std::string& why) { m.fail(n, why); });
  }, false);
  t.def("index_put", [](Importer& m, const Node* n) {
    return emit_index_put(m, m.tensor(n, 0), m.tensor(n, 2), m.optional_tensors_arg(n, 1), m.bool_arg(n, 3),
                          [&](const std::string& why) { m.fail(n, why); });
  });
  // index_fill(self, dim, index, value): index_put with the index at dim, the value (a number or a 0-dim
  // tensor) broadcast.
  t.def("index_fill", [](Importer& m, const Node* n) {
    const ValueId self = m.tensor(n, 0);
    const DType dt = m.type(self).dtype;
    const std::int64_t dim = wrap(m, n, m.int_arg(n, 1), m.type(self).rank());
    const Operand v = m.operand(n, 3);
    const ValueId value = v.is_tensor() ? v.value
                                        : m.constant(at::scalar_tensor(v.scalar.is_float() ? at::Scalar(v.scalar.to_double())
                                                                                            : at::Scalar(v.scalar.to_int()),
                                                                       at::TensorOptions().dtype(dtype_to_torch(dt))));
    std::vector<std::optional<ValueId>> indices(static_cast<std::size_t>(dim), std::nullopt);
    indices.push_back(m.tensor(n, 2));
    return emit_index_put(m, self, value, indices, false, [&](const std::string& why) { m.fail(n, why); });
  });
  t.def("where", [](Importer& m, const Node* n) {
    if (n->inputs().size() != 3) m.fail(n, "only where(condition, a, b) is supported");
    return m.emit("where", {Operand::tensor(m.tensor(n, 0)), m.operand(n, 1), m.operand(n, 2)});
  }, false);
  t.def("masked_scatter", [](Importer& m, const Node* n) {
    return m.emit("masked_scatter", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)), Operand::tensor(m.tensor(n, 2))});
  });
  t.def("masked_fill", [](Importer& m, const Node* n) {
    return m.emit("masked_fill", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)), m.operand(n, 2)});
  });
}

// Ops whose result is their input: at inference they copy nothing or are no-ops.
void identity_ops(Table& t) {
  for (const char* name : {"aten::contiguous", "aten::detach", "aten::lift_fresh", "aten::alias"})
    t.raw(name, [](Importer& m, const Node* n) { m.bind_tensor(n, 0, m.tensor(n, 0)); });
  // A copy is its input's value too, unless the model then updates the copy in place: the update must not reach
  // the original (in-place results replace every holder of the value they update), so the copy is a value of its
  // own, an identity reshape.
  for (const char* name : {"aten::clone", "aten::lift_fresh_copy"})
    t.raw(name, [](Importer& m, const Node* n) {
      ValueId x = m.tensor(n, 0);
      if (m.mutated_later(n->output(0))) x = m.emit("reshape", {Operand::tensor(x)}, {{"shape", m.type(x).shape}});
      m.bind_tensor(n, 0, x);
    });
  for (const char* name : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout",
                           "aten::dropout_", "aten::feature_dropout_", "aten::alpha_dropout_", "aten::feature_alpha_dropout_"})
    t.raw(name, [name](Importer& m, const Node* n) {
      if (has_arg(m, n, "train") && m.bool_arg(n, need_arg(n, "train")) && !m.training_mode())
        m.fail(n, "is dropout in training mode (random); call model.eval() before saving, or compile a training "
                  "variant with --autograd --module-mode train");
      const double p = m.float_arg(n, 1);
      if (!m.training_mode() || p == 0.0) return m.bind_tensor(n, 0, m.tensor(n, 0));  // eval mode: an identity
      const std::string kind(name);
      const ValueId y = composite::dropout_in_training_mode(m, m.tensor(n, 0), p, kind.find("feature") != std::string::npos,
                                                            kind.find("alpha") != std::string::npos,
                                                            [&](const std::string& why) { m.fail(n, why); });
      if (kind.back() == '_') m.bind_inplace_result(n, y);
      else m.bind_tensor(n, 0, y);
    });
  auto to_dtype = [](Importer& m, const Node* n, std::optional<DType> dt) {
    ValueId x = m.tensor(n, 0);
    if (!dt || *dt == m.type(x).dtype) return x;
    return m.emit("to_dtype", {Operand::tensor(x)}, {{"dtype", *dt}});
  };
  t.raw("aten::to", [to_dtype](Importer& m, const Node* n) {
    std::optional<DType> dt;
    if (has_arg(m, n, "dtype")) dt = m.opt_dtype_arg(n, need_arg(n, "dtype"));
    if (has_arg(m, n, "other")) dt = m.type(m.tensor(n, need_arg(n, "other"))).dtype;
    if (has_arg(m, n, "device")) {
      const JVal& d = m.in(n, need_arg(n, "device"));
      if (d.kind == JVal::Kind::Known && d.known.isDevice()) {
        c10::Device dev = d.known.toDevice();
        bool same = (dev.is_cpu() && m.device().kind == DeviceKind::CPU) || (dev.is_cuda() && m.device().kind == DeviceKind::CUDA);
        if (!same) m.fail(n, "moves a tensor to " + dev.str() + " while compiling for " + m.device().str() + "; thunderc compiles for one device");
      }
    }
    m.bind_tensor(n, 0, to_dtype(m, n, dt));
  });
  t.raw("aten::type_as", [to_dtype](Importer& m, const Node* n) {
    m.bind_tensor(n, 0, to_dtype(m, n, m.type(m.tensor(n, 1)).dtype));
  });
  for (auto [name, dt] : {std::pair{"aten::float", DType::Float32}, {"aten::half", DType::Float16},
                          {"aten::double", DType::Float64}, {"aten::long", DType::Int64}, {"aten::int", DType::Int32},
                          {"aten::bool", DType::Bool}}) {
    DType d = dt;
    t.raw(name, [to_dtype, d](Importer& m, const Node* n) { m.bind_tensor(n, 0, to_dtype(m, n, d)); });
  }
}

// copy_/fill_/zero_ overwrite a tensor: the new value is the source (or the number) cast and broadcast to it.
void overwrite_ops(Table& t) {
  auto fill = [](Importer& m, const Node* n, ValueId src) {
    const TensorType& self = m.type(m.tensor(n, 0));
    if (m.type(src).dtype != self.dtype) src = m.emit("to_dtype", {Operand::tensor(src)}, {{"dtype", self.dtype}});
    if (m.type(src).shape != self.shape) src = m.emit("expand", {Operand::tensor(src)}, {{"shape", self.shape}});
    m.bind_inplace_result(n, src);
  };
  t.raw("aten::copy_", [fill](Importer& m, const Node* n) { fill(m, n, m.tensor(n, 1)); });
  // fill_(value) / zero_(): a 0-dim constant of self's dtype, broadcast.
  auto fill_value = [fill](Importer& m, const Node* n, const at::Scalar& value) {
    const TensorType& self = m.type(m.tensor(n, 0));
    fill(m, n, m.constant(at::scalar_tensor(value, at::TensorOptions().dtype(dtype_to_torch(self.dtype)))));
  };
  t.raw("aten::fill_", [fill, fill_value](Importer& m, const Node* n) {
    if (m.in(n, 1).kind == JVal::Kind::Tensor) return fill(m, n, m.tensor(n, 1));
    const c10::IValue& v = m.in(n, 1).known;
    fill_value(m, n, v.isTensor() ? v.toTensor().item() : v.toScalar());
  });
  t.raw("aten::zero_", [fill_value](Importer& m, const Node* n) { fill_value(m, n, at::Scalar(0)); });
}

void reduction_norm_ops(Table& t) {
  t.def("sum", [](Importer& m, const Node* n) { return m.emit("sum", {m.operand(n, 0)}, sum_like_attrs(m, n, true)); }, false);
  t.def("mean", [](Importer& m, const Node* n) { return m.emit("mean", {m.operand(n, 0)}, sum_like_attrs(m, n, true)); }, false);
  t.def("amax", [](Importer& m, const Node* n) { return m.emit("amax", {m.operand(n, 0)}, sum_like_attrs(m, n, false)); }, false);
  for (const char* name : {"amin", "any", "all"}) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) { return m.emit(op_name, {m.operand(n, 0)}, sum_like_attrs(m, n, false)); }, false);
  }
  // var / std: var(self, unbiased), var.dim(self, dim, unbiased, keepdim), var.correction(self, dim, *, correction,
  // keepdim); std is sqrt(var).
  for (const char* name : {"var", "std"}) {
    const bool is_std = std::string(name) == "std";
    t.def(name, [is_std](Importer& m, const Node* n) {
      Attrs a = sum_like_attrs(m, n, false);
      double correction = 1.0;
      if (has_arg(m, n, "unbiased")) correction = m.bool_arg(n, need_arg(n, "unbiased")) ? 1.0 : 0.0;
      if (has_arg(m, n, "correction")) correction = m.float_arg(n, need_arg(n, "correction"));
      a.set("correction", correction);
      ValueId v = m.emit("var", {m.operand(n, 0)}, a);
      return is_std ? m.emit("sqrt", {Operand::tensor(v)}) : v;
    }, false);
  }
  for (const char* name : {"softmax", "log_softmax"}) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) {
      auto dt = has_arg(m, n, "dtype") ? m.opt_dtype_arg(n, need_arg(n, "dtype")) : std::nullopt;
      return m.emit(op_name, {m.operand(n, 0)}, {{"dim", m.int_arg(n, 1)}, {"dtype", dt ? AttrValue(*dt) : AttrValue(None{})}});
    }, false);
    t.def(std::string("_") + name, [op_name](Importer& m, const Node* n) {
      ValueId x = m.tensor(n, 0);
      AttrValue dt = None{};
      if (m.bool_arg(n, 2) && m.type(x).dtype == DType::Float16) dt = DType::Float32;  // half_to_float
      return m.emit(op_name, {Operand::tensor(x)}, {{"dim", m.int_arg(n, 1)}, {"dtype", dt}});
    }, false);
  }
  t.def("layer_norm", [](Importer& m, const Node* n) {
    return m.emit("layer_norm", {m.operand(n, 0), m.operand(n, 2), m.operand(n, 3)},
                  {{"normalized_shape", m.ints_arg(n, 1)}, {"eps", m.float_arg(n, 4)}});
  }, false);
  // aten::rms_norm(input, normalized_shape, weight=None, eps=None): in TorchScript saved by torch >= 2.4.
  t.def("rms_norm", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    double eps = m.is_none(n, 3) ? machine_epsilon(m.type(x).dtype) : m.float_arg(n, 3);  // PyTorch's eps=None
    return m.emit("rms_norm", {Operand::tensor(x), m.operand(n, 2)},
                  {{"normalized_shape", m.ints_arg(n, 1)}, {"eps", eps}});
  }, false);
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled). PyTorch
  // normalizes with the batch's statistics in training mode (nn.BatchNorm without running statistics passes
  // training=True); in training mode with running statistics it also updates them in place, which thunderc does
  // not (the weights are fixed).
  t.def("batch_norm", [](Importer& m, const Node* n) {
    const bool stats = !m.is_none(n, 3) && !m.is_none(n, 4);
    if (!stats && !m.bool_arg(n, 5)) m.fail(n, "needs running statistics in eval mode (training=False), as PyTorch does");
    if (stats && m.bool_arg(n, 5))
      m.fail(n, "is batch_norm in training mode, which updates the running statistics in place; call model.eval() "
                "before saving (or build the batch norm with track_running_stats=False)");
    if (stats) {
      Attrs a{{"eps", m.float_arg(n, 7)}};
      // Training mode (autodiff's batch-statistics form) updates the running statistics with the momentum.
      if (m.training_mode()) {
        const double momentum = m.float_arg(n, 6);
        if (momentum <= 0.0)
          m.fail(n, "has momentum " + std::to_string(momentum) + " (momentum=None, a cumulative average over "
                    "num_batches_tracked, is not supported in --module-mode train; give BatchNorm a momentum)");
        if (momentum != 0.1) a.set("momentum", momentum);
      }
      return m.emit("batch_norm", {m.operand(n, 0), m.operand(n, 1), m.operand(n, 2), m.operand(n, 3), m.operand(n, 4)}, a);
    }
    return composite::batch_norm_batch_stats(m, m.tensor(n, 0), m.operand(n, 1), m.operand(n, 2), m.float_arg(n, 7),
                                             [&](const std::string& why) { m.fail(n, why); })
        .out;
  }, false);
}

void shape_ops(Table& t) {
  auto view = [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    return m.emit("reshape", {Operand::tensor(x)}, {{"shape", m.ints_arg(n, 1)}});
  };
  t.def("view", view, false);
  t.def("reshape", view, false);
  t.def("_unsafe_view", view, false);
  for (const char* name : {"view_as", "reshape_as"})
    t.def(name, [](Importer& m, const Node* n) { return reshape(m, m.tensor(n, 0), m.type(m.tensor(n, 1)).shape); }, false);
  t.def("flatten", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    Shape s = m.type(x).shape;
    if (s.empty()) return reshape(m, x, {1});
    std::int64_t a = wrap(m, n, m.int_arg(n, 1), s.size()), b = wrap(m, n, m.int_arg(n, 2), s.size());
    if (a > b) m.fail(n, "start_dim must not come after end_dim");
    Shape out(s.begin(), s.begin() + a);
    std::int64_t prod = 1;
    for (std::int64_t i = a; i <= b; ++i) prod *= s[i];
    out.push_back(prod);
    out.insert(out.end(), s.begin() + b + 1, s.end());
    return reshape(m, x, out);
  }, false);
  t.def("unflatten", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    Shape s = m.type(x).shape;
    std::int64_t d = wrap(m, n, m.int_arg(n, 1), s.size());
    IntList sizes = m.ints_arg(n, 2);
    Shape out(s.begin(), s.begin() + d);
    out.insert(out.end(), sizes.begin(), sizes.end());
    out.insert(out.end(), s.begin() + d + 1, s.end());
    return m.emit("reshape", {Operand::tensor(x)}, {{"shape", out}});
  }, false);
  t.def("unsqueeze", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    Shape s = m.type(x).shape;
    std::int64_t d = m.int_arg(n, 1);
    auto r = static_cast<std::int64_t>(s.size()) + 1;
    if (d < -r || d >= r) m.fail(n, "dimension " + std::to_string(d) + " is out of range for unsqueeze of rank " + std::to_string(s.size()));
    s.insert(s.begin() + (d < 0 ? d + r : d), 1);
    return reshape(m, x, s);
  }, false);
  t.def("squeeze", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    Shape s = m.type(x).shape;
    std::vector<bool> drop(s.size(), n->inputs().size() == 1);
    if (n->inputs().size() > 1)
      for (std::int64_t d : m.ints_arg(n, 1)) drop[wrap(m, n, d, s.size())] = true;
    Shape out;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!(drop[i] && s[i] == 1)) out.push_back(s[i]);
    return reshape(m, x, out);
  }, false);
  for (const char* name : {"permute", "flip"}) {  // (self, dims)
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) {
      ValueId x = m.tensor(n, 0);
      IntList dims = m.ints_arg(n, 1);
      for (auto& d : dims) d = wrap(m, n, d, m.type(x).rank());
      return m.emit(op_name, {Operand::tensor(x)}, {{"dims", dims}});
    }, false);
  }
  t.def("transpose", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::size_t r = m.type(x).rank();
    IntList dims(r);
    for (std::size_t i = 0; i < r; ++i) dims[i] = static_cast<std::int64_t>(i);
    if (r == 0) return x;
    std::swap(dims[wrap(m, n, m.int_arg(n, 1), r)], dims[wrap(m, n, m.int_arg(n, 2), r)]);
    return permute(m, x, dims);
  }, false);
  t.def("t", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    if (m.type(x).rank() > 2) m.fail(n, "t() expects a tensor of rank <= 2");
    return m.type(x).rank() == 2 ? permute(m, x, {1, 0}) : x;
  }, false);
  t.def("expand", [](Importer& m, const Node* n) {
    return m.emit("expand", {Operand::tensor(m.tensor(n, 0))}, {{"shape", m.ints_arg(n, 1)}});
  }, false);
  t.def("expand_as", [](Importer& m, const Node* n) {
    return m.emit("expand", {Operand::tensor(m.tensor(n, 0))}, {{"shape", m.type(m.tensor(n, 1)).shape}});
  }, false);
  t.def("slice", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 1), m.type(x).rank());
    std::int64_t step = m.int_arg(n, 4);
    if (step < 1) m.fail(n, "slice step must be positive, got " + std::to_string(step));
    return slice(m, x, dim, m.opt_int_arg(n, 2), m.opt_int_arg(n, 3), step);
  }, false);
  t.def("narrow", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 1), m.type(x).rank());
    std::int64_t start = m.int_arg(n, 2), len = m.int_arg(n, 3), size = m.type(x).shape[dim];
    if (start < 0) start += size;
    if (start < 0 || len < 0 || start + len > size) m.fail(n, "narrow range is out of bounds");
    return slice(m, x, dim, start, start + len, 1);
  }, false);
  t.def("select", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 1), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim], index = m.int_arg(n, 2);
    if (index < -size || index >= size)
      m.fail(n, "index " + std::to_string(index) + " is out of range for dimension " + std::to_string(dim) + " of size " + std::to_string(size));
    return m.emit("select", {Operand::tensor(x)}, {{"dim", dim}, {"index", index < 0 ? index + size : index}});
  }, false);
  auto split = [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 2), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim];
    const c10::IValue& arg = m.in(n, 1).known;
    IntList sizes;
    if (arg.isInt()) {
      std::int64_t piece = arg.toInt();
      if (piece <= 0) m.fail(n, "split size must be positive");
      for (std::int64_t off = 0; off < size; off += piece) sizes.push_back(std::min(piece, size - off));
      if (sizes.empty()) sizes.push_back(0);
    } else {
      sizes = m.ints_arg(n, 1);
    }
    bind_pieces(m, n, x, dim, sizes);
  };
  t.raw("aten::split", split);
  t.raw("aten::split_with_sizes", split);
  t.raw("aten::chunk", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t chunks = m.int_arg(n, 1);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 2), m.type(x).rank());
    std::int64_t size = m.type(x).shape[dim];
    if (chunks <= 0) m.fail(n, "chunks must be positive");
    std::int64_t piece = std::max<std::int64_t>((size + chunks - 1) / chunks, 1);
    IntList sizes;
    for (std::int64_t off = 0; off < size; off += piece) sizes.push_back(std::min(piece, size - off));
    bind_pieces(m, n, x, dim, sizes);
  });
  t.raw("aten::unbind", [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0);
    std::int64_t dim = wrap(m, n, m.int_arg(n, 1), m.type(x).rank());
    std::vector<JVal> items;
    for (std::int64_t i = 0; i < m.type(x).shape[dim]; ++i)
      items.push_back(JVal::of_tensor(m.emit("select", {Operand::tensor(x)}, {{"dim", dim}, {"index", i}})));
    m.bind(n->output(0), JVal::of_seq(std::move(items)));
  });
  auto cat = [](Importer& m, const Node* n) {
    std::vector<ValueId> xs = m.tensors_arg(n, 0);
    if (xs.empty()) m.fail(n, "needs at least one tensor");
    std::vector<Operand> ins;
    for (ValueId x : xs)  // PyTorch skips legacy empty 1-D tensors in cat
      if (!(m.type(x).rank() == 1 && m.type(x).shape[0] == 0 && xs.size() > 1)) ins.push_back(Operand::tensor(x));
    if (ins.size() == 1) return ins[0].value;
    return m.emit("cat", ins, {{"dim", wrap(m, n, m.int_arg(n, 1), m.type(ins[0].value).rank())}});
  };
  t.def("cat", cat, false);
  t.def("concat", cat, false);
  t.def("concatenate", cat, false);
  t.def("repeat", [](Importer& m, const Node* n) {
    return m.emit("repeat", {Operand::tensor(m.tensor(n, 0))}, {{"repeats", m.ints_arg(n, 1)}});
  }, false);
  auto constant_pad = [](Importer& m, const Node* n) {
    return m.emit("constant_pad_nd", {Operand::tensor(m.tensor(n, 0))},
                  {{"pad", m.ints_arg(n, 1)}, {"value", has_arg(m, n, "value") ? m.float_arg(n, need_arg(n, "value")) : 0.0}});
  };
  t.def("constant_pad_nd", constant_pad, false);
  // F.pad (aten::pad in TorchScript saved by newer torch): constant, reflect and replicate modes.
  t.def("pad", [constant_pad](Importer& m, const Node* n) {
    const std::string mode = has_arg(m, n, "mode") ? m.string_arg(n, need_arg(n, "mode")) : "constant";
    if (mode == "reflect" || mode == "replicate")
      return m.emit("pad", {Operand::tensor(m.tensor(n, 0))}, {{"pad", m.ints_arg(n, 1)}, {"mode", mode}});
    if (mode != "constant") m.fail(n, "pad mode '" + mode + "' is not supported yet; constant, reflect and replicate are");
    return constant_pad(m, n);
  }, false);
  for (const char* kind : {"reflection", "replication"}) {
    const std::string mode = std::string(kind) == "reflection" ? "reflect" : "replicate";
    for (const char* d : {"1d", "2d", "3d"})
      t.def(std::string(kind) + "_pad" + d, [mode](Importer& m, const Node* n) {
        return m.emit("pad", {Operand::tensor(m.tensor(n, 0))}, {{"pad", m.ints_arg(n, 1)}, {"mode", mode}});
      }, false);
  }
  // upsample_nearest2d(input, output_size, scales_h=None, scales_w=None), .vec(input, output_size?,
  // scale_factors?), and upsample_bilinear2d with align_corners after output_size: the output size (given, or
  // the input's times the scale factors, rounded down) and the scales (which ATen's source index uses).
  for (const char* name : {"upsample_nearest2d", "upsample_bilinear2d"}) {
    const std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) {
      ValueId x = m.tensor(n, 0);
      const Shape& s = m.type(x).shape;
      if (s.size() != 4) m.fail(n, "expects a 4-D input, got " + shape_str(s));
      AttrValue sh = None{}, sw = None{};
      IntList size;
      if (has_arg(m, n, "scale_factors")) {
        const c10::IValue& f = m.in(n, need_arg(n, "scale_factors")).known;
        if (!f.isDoubleList() || f.toDoubleVector().size() != 2) m.fail(n, "needs two scale factors");
        const std::vector<double> v = f.toDoubleVector();
        sh = v[0], sw = v[1];
        size = {static_cast<std::int64_t>(std::floor(static_cast<double>(s[2]) * v[0])),
                static_cast<std::int64_t>(std::floor(static_cast<double>(s[3]) * v[1]))};
      }
      if (has_arg(m, n, "scales_h")) sh = m.float_arg(n, need_arg(n, "scales_h"));
      if (has_arg(m, n, "scales_w")) sw = m.float_arg(n, need_arg(n, "scales_w"));
      if (has_arg(m, n, "output_size")) size = m.ints_arg(n, need_arg(n, "output_size"));
      if (size.size() != 2) m.fail(n, "needs an output size or scale factors");
      Attrs attrs = {{"output_size", size}, {"scale_h", sh}, {"scale_w", sw}};
      if (op_name == "upsample_bilinear2d") attrs.set("align_corners", m.bool_arg(n, need_arg(n, "align_corners")));
      return m.emit(op_name, {Operand::tensor(x)}, attrs);
    }, false);
  }
  // group_norm(input, num_groups, weight, bias, eps, cudnn_enabled).
  t.def("group_norm", [](Importer& m, const Node* n) {
    return m.emit("group_norm", {Operand::tensor(m.tensor(n, 0)), m.operand(n, 2), m.operand(n, 3)},
                  {{"num_groups", m.int_arg(n, 1)}, {"eps", m.float_arg(n, 4)}});
  }, false);
  t.def("stack", [](Importer& m, const Node* n) {
    std::vector<ValueId> xs = m.tensors_arg(n, 0);
    if (xs.empty()) m.fail(n, "needs at least one tensor");
    std::size_t r = m.type(xs[0]).rank() + 1;
    std::int64_t dim = wrap(m, n, m.int_arg(n, 1), r);
    std::vector<Operand> ins;
    for (ValueId x : xs) {
      Shape s = m.type(x).shape;
      if (s != m.type(xs[0]).shape) m.fail(n, "stack expects tensors of equal shape");
      s.insert(s.begin() + dim, 1);
      ins.push_back(Operand::tensor(reshape(m, x, s)));
    }
    if (ins.size() == 1) return ins[0].value;
    return m.emit("cat", ins, {{"dim", dim}});
  }, false);
  // Tensors that depend only on another tensor's shape and dtype are constants for fixed shapes.
  for (const char* name : {"aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_zeros", "aten::new_ones",
                           "aten::new_full", "aten::rand_like", "aten::randn_like"}) {
    t.raw(name, [](Importer& m, const Node* n) {
      if (n->isNondeterministic())
        m.sharp_edge(n, "random",
                     "is a random operator; it is sampled once at compile time and every call of the compiled model "
                     "sees the same values");
      const TensorType& like = m.type(m.in(n, 0).tensor);
      torch::jit::Stack stack;
      stack.push_back(at::zeros(like.shape, at::TensorOptions().dtype(dtype_to_torch(like.dtype))));
      for (std::size_t i = 1; i < n->inputs().size(); ++i) {
        if (m.in(n, i).kind != JVal::Kind::Known) m.fail(n, "argument " + std::to_string(i) + " depends on tensor data");
        stack.push_back(m.in(n, i).known);
      }
      n->getOperation()(stack);
      m.bind(n->output(0), JVal::of_known(stack.back()));
    });
  }
}

void nn_ops(Table& t) {
  t.def("linear", [](Importer& m, const Node* n) {
    return m.emit("linear", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)), m.operand(n, 2)});
  }, false);
  t.def("matmul", [](Importer& m, const Node* n) {
    return m.emit("matmul", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1))});
  }, false);
  t.def("mm", [](Importer& m, const Node* n) {
    if (m.type(m.tensor(n, 0)).rank() != 2 || m.type(m.tensor(n, 1)).rank() != 2) m.fail(n, "mm expects 2-D tensors");
    return m.emit("matmul", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1))});
  }, false);
  t.def("bmm", [](Importer& m, const Node* n) {
    return m.emit("bmm", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1))});
  }, false);
  t.def("addmm", [](Importer& m, const Node* n) {
    return m.emit("addmm", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)), Operand::tensor(m.tensor(n, 2))},
                  {{"beta", m.float_arg(n, 3)}, {"alpha", m.float_arg(n, 4)}});
  }, false);
  t.def("baddbmm", [](Importer& m, const Node* n) {  // beta * self + alpha * bmm(b1, b2)
    double beta = m.float_arg(n, 3), alpha = m.float_arg(n, 4);
    ValueId prod = m.emit("bmm", {Operand::tensor(m.tensor(n, 1)), Operand::tensor(m.tensor(n, 2))});
    if (alpha != 1.0) prod = m.emit("mul", {Operand::tensor(prod), Operand::number(alpha)});
    if (beta == 0.0) return prod;
    Operand self = m.operand(n, 0);
    if (beta != 1.0) self = Operand::tensor(m.emit("mul", {self, Operand::number(beta)}));
    return m.emit("add", {self, Operand::tensor(prod)});
  }, false);
  auto conv = [](Importer& m, const Node* n) {
    ValueId x = m.tensor(n, 0), w = m.tensor(n, 1);
    IntList dilation = m.ints_arg(n, 5);
    const c10::IValue& pad = m.in(n, 4).known;
    IntList padding = pad.isString() ? string_padding(m, n, pad.toStringRef(), w, dilation) : m.ints_arg(n, 4);
    return convolution(m, n, x, w, m.operand(n, 2), m.ints_arg(n, 3), padding, dilation, m.int_arg(n, 6));
  };
  t.def("conv2d", conv, false);
  t.def("conv1d", conv, false);
  t.def("_convolution", [](Importer& m, const Node* n) {
    if (m.bool_arg(n, 6)) m.fail(n, "transposed convolution is not supported yet");
    return convolution(m, n, m.tensor(n, 0), m.tensor(n, 1), m.operand(n, 2), m.ints_arg(n, 3), m.ints_arg(n, 4),
                       m.ints_arg(n, 5), m.int_arg(n, 8));
  }, false);
  // max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode), avg_poolNd(self, kernel_size, stride,
  // padding, ceil_mode, count_include_pad, divisor_override), adaptive_avg_poolNd(self, output_size); N = 2, 3.
  for (const char* nd : {"2d", "3d"}) {
    const std::string max = std::string("max_pool") + nd, avg = std::string("avg_pool") + nd,
                      adaptive = std::string("adaptive_avg_pool") + nd;
    t.def(max, [max](Importer& m, const Node* n) {
      return m.emit(max, {Operand::tensor(m.tensor(n, 0))},
                    {{"kernel_size", m.ints_arg(n, 1)}, {"stride", m.ints_arg(n, 2)}, {"padding", m.ints_arg(n, 3)},
                     {"dilation", m.ints_arg(n, 4)}, {"ceil_mode", m.bool_arg(n, 5)}});
    }, false);
    t.def(avg, [avg](Importer& m, const Node* n) {
      auto div = m.opt_int_arg(n, 6);
      return m.emit(avg, {Operand::tensor(m.tensor(n, 0))},
                    {{"kernel_size", m.ints_arg(n, 1)}, {"stride", m.ints_arg(n, 2)}, {"padding", m.ints_arg(n, 3)},
                     {"ceil_mode", m.bool_arg(n, 4)}, {"count_include_pad", m.bool_arg(n, 5)},
                     {"divisor_override", div ? AttrValue(*div) : AttrValue(None{})}});
    }, false);
    t.def(adaptive, [adaptive](Importer& m, const Node* n) {
      return m.emit(adaptive, {Operand::tensor(m.tensor(n, 0))}, {{"output_size", m.ints_arg(n, 1)}});
    }, false);
  }
  // grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) (F.grid_sample) and grid_sampler_2d.
  for (const char* name : {"grid_sampler", "grid_sampler_2d"}) {
    t.def(name, [](Importer& m, const Node* n) {
      if (m.type(m.tensor(n, 0)).rank() != 4) m.fail(n, "only 4-D inputs (grid_sampler_2d) are supported");
      return m.emit("grid_sampler_2d", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1))},
                    {{"interpolation_mode", m.int_arg(n, 2)}, {"padding_mode", m.int_arg(n, 3)}, {"align_corners", m.bool_arg(n, 4)}});
    }, false);
  }
  // embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  // include_last_offset[, padding_idx]) -> (output, offset2bag, bag_size, max_indices): the output.
  for (const char* kind : {"aten::embedding_bag", "aten::_embedding_bag"}) {
    t.raw(kind, [](Importer& m, const Node* n) {
      std::optional<std::int64_t> padding;
      if (has_arg(m, n, "padding_idx")) padding = m.int_arg(n, need_arg(n, "padding_idx"));
      if (padding && *padding < 0) padding.reset();  // -1: none
      m.bind_tensor(n, 0, m.emit("embedding_bag", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)),
                                                   m.operand(n, 2), m.operand(n, need_arg(n, "per_sample_weights"))},
                                 {{"mode", m.int_arg(n, need_arg(n, "mode"))},
                                  {"include_last_offset", m.bool_arg(n, need_arg(n, "include_last_offset"))},
                                  {"padding_idx", padding ? AttrValue(*padding) : AttrValue(None{})}}));
    });
  }
  t.def("embedding", [](Importer& m, const Node* n) {
    Attrs a;  // aten::embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False)
    if (n->inputs().size() > 2) {
      const std::int64_t pad = m.int_arg(n, 2);
      if (pad >= 0) a.set("padding_idx", pad);
    }
    if (n->inputs().size() > 3 && m.bool_arg(n, 3)) a.set("scale_grad_by_freq", true);
    return m.emit("embedding", {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1))}, a);
  }, false);
  t.def("scaled_dot_product_attention", [](Importer& m, const Node* n) {
    if (has_arg(m, n, "dropout_p") && m.float_arg(n, need_arg(n, "dropout_p")) != 0.0)
      m.fail(n, "has dropout_p > 0 (random); pass dropout_p=0.0 at inference");
    AttrValue scale = None{};
    if (has_arg(m, n, "scale")) scale = m.float_arg(n, need_arg(n, "scale"));
    bool causal = has_arg(m, n, "is_causal") && m.bool_arg(n, need_arg(n, "is_causal"));
    return m.emit("scaled_dot_product_attention",
                  {Operand::tensor(m.tensor(n, 0)), Operand::tensor(m.tensor(n, 1)), Operand::tensor(m.tensor(n, 2)),
                   has_arg(m, n, "attn_mask") ? Operand::tensor(m.tensor(n, need_arg(n, "attn_mask"))) : Operand::none()},
                  {{"is_causal", causal}, {"scale", scale}});
  }, false);
}


// Multi-head self- or cross-attention as PyTorch's fused kernels compute it (batch-first [B, L, E]):
// in-projection with one packed [3E, E] weight, heads of size E/H, softmax(q k^T / sqrt(E/H)) v, output
// projection. Returns the output and, when `weights` is set, the attention weights averaged over heads.
ValueId multi_head_attention(Importer& m, const Node* n, ValueId query, ValueId key, ValueId value, std::int64_t embed,
                             std::int64_t heads, ValueId qkv_w, Operand qkv_b, ValueId proj_w, Operand proj_b,
                             ValueId* weights = nullptr) {
  const Shape qs = m.type(query).shape, ks = m.type(key).shape;
  if (qs.size() != 3 || ks.size() != 3 || qs[2] != embed || heads <= 0 || embed % heads != 0)
    m.fail(n, "fused attention is supported for batch-first [B, L, E] inputs with E divisible by the head count");
  const std::int64_t b = qs[0], l = qs[1], s_len = ks[1], d = embed / heads;
  auto part = [&](ValueId w, std::int64_t i) { return slice(m, w, 0, i * embed, (i + 1) * embed, 1); };
  auto part_bias = [&](std::int64_t i) {
    return qkv_b.is_tensor() ? Operand::tensor(slice(m, qkv_b.value, 0, i * embed, (i + 1) * embed, 1)) : Operand::none();
  };
  ValueId q, k, v;
  if (query == key && key == value) {
    ValueId qkv = m.emit("linear", {Operand::tensor(query), Operand::tensor(qkv_w), qkv_b});
    q = slice(m, qkv, 2, 0, embed, 1), k = slice(m, qkv, 2, embed, 2 * embed, 1), v = slice(m, qkv, 2, 2 * embed, 3 * embed, 1);
  } else {
    q = m.emit("linear", {Operand::tensor(query), Operand::tensor(part(qkv_w, 0)), part_bias(0)});
    k = m.emit("linear", {Operand::tensor(key), Operand::tensor(part(qkv_w, 1)), part_bias(1)});
    v = m.emit("linear", {Operand::tensor(value), Operand::tensor(part(qkv_w, 2)), part_bias(2)});
  }
  auto split_heads = [&](ValueId x, std::int64_t len) { return permute(m, reshape(m, x, {b, len, heads, d}), {0, 2, 1, 3}); };
  q = split_heads(q, l), k = split_heads(k, s_len), v = split_heads(v, s_len);
  ValueId scores = m.emit("matmul", {Operand::tensor(q), Operand::tensor(permute(m, k, {0, 1, 3, 2}))});
  scores = m.emit("mul", {Operand::tensor(scores), Operand::number(1.0 / std::sqrt(static_cast<double>(d)))});
  ValueId attn = m.emit("softmax", {Operand::tensor(scores)}, {{"dim", std::int64_t{-1}}, {"dtype", None{}}});
  if (weights)
    *weights = m.emit("mean", {Operand::tensor(attn)}, {{"dims", IntList{1}}, {"keepdim", false}, {"dtype", None{}}});
  ValueId ctx = m.emit("matmul", {Operand::tensor(attn), Operand::tensor(v)});
  ctx = reshape(m, permute(m, ctx, {0, 2, 1, 3}), {b, l, embed});
  return m.emit("linear", {Operand::tensor(ctx), Operand::tensor(proj_w), proj_b});
}

// PyTorch's fused attention and encoder-layer kernels (traced under no_grad), decomposed into catalog ops.
void fused_transformer_ops(Table& t) {
  t.raw("aten::_native_multi_head_attention", [](Importer& m, const Node* n) {
    if (!m.is_none(n, 9)) m.fail(n, "fused attention with a mask is not supported yet (trace with autograd enabled)");
    bool need_weights = m.bool_arg(n, 10), average = m.bool_arg(n, 11);
    if (need_weights && !average) m.fail(n, "per-head attention weights (average_attn_weights=False) are not supported");
    ValueId weights = 0;
    ValueId out = multi_head_attention(m, n, m.tensor(n, 0), m.tensor(n, 1), m.tensor(n, 2), m.int_arg(n, 3),
                                       m.int_arg(n, 4), m.tensor(n, 5), m.operand(n, 6), m.tensor(n, 7), m.operand(n, 8),
                                       need_weights ? &weights : nullptr);
    m.bind_tensor(n, 0, out);
    // Without need_weights PyTorch returns an empty tensor in its place.
    if (need_weights) m.bind_tensor(n, 1, weights);
    else m.bind(n->output(1), JVal::of_known(at::empty({0})));
  });
  t.raw("aten::_transformer_encoder_layer_fwd", [](Importer& m, const Node* n) {
    if (n->inputs().size() > 18 && !m.is_none(n, 18))
      m.fail(n, "the fused encoder layer with a mask is not supported yet (trace with autograd enabled)");
    ValueId x = m.tensor(n, 0);
    const std::int64_t embed = m.int_arg(n, 1), heads = m.int_arg(n, 2);
    const bool use_gelu = m.bool_arg(n, 7), norm_first = m.bool_arg(n, 8);
    const double eps = m.float_arg(n, 9);
    auto norm = [&](ValueId y, std::size_t w) {
      return m.emit("layer_norm", {Operand::tensor(y), m.operand(n, w), m.operand(n, w + 1)},
                    {{"normalized_shape", IntList{embed}}, {"eps", eps}});
    };
    auto attention = [&](ValueId y) {
      return multi_head_attention(m, n, y, y, y, embed, heads, m.tensor(n, 3), m.operand(n, 4), m.tensor(n, 5),
                                  m.operand(n, 6));
    };
    auto feed_forward = [&](ValueId y) {
      ValueId h = m.emit("linear", {Operand::tensor(y), Operand::tensor(m.tensor(n, 14)), m.operand(n, 15)});
      h = use_gelu ? m.emit("gelu", {Operand::tensor(h)}, {{"approximate", std::string("none")}})
                   : m.emit("relu", {Operand::tensor(h)});
      return m.emit("linear", {Operand::tensor(h), Operand::tensor(m.tensor(n, 16)), m.operand(n, 17)});
    };
    auto add = [&](ValueId a, ValueId c) { return m.emit("add", {Operand::tensor(a), Operand::tensor(c)}); };
    if (norm_first) {
      x = add(x, attention(norm(x, 10)));
      x = add(x, feed_forward(norm(x, 12)));
    } else {
      x = norm(add(x, attention(x)), 10);
      x = norm(add(x, feed_forward(x)), 12);
    }
    m.bind_tensor(n, 0, x);
  });
}

// ATen operators rewritten into catalog ones at import (composite_ops.h, shared with the .pt2 frontend).
void composite_ops(Table& t) {
  auto failing = [](Importer& m, const Node* n) { return [&m, n](const std::string& why) { m.fail(n, why); }; };
  // cdist(x1, x2, p=2, compute_mode=None), _cdist_forward(x1, x2, p, compute_mode).
  for (const char* name : {"cdist", "_cdist_forward"})
    t.def(name, [failing](Importer& m, const Node* n) {
      return composite::cdist(m, m.tensor(n, 0), m.tensor(n, 1), m.float_arg(n, 2), failing(m, n));
    }, false);
  // pdist(input, p=2), _pdist_forward(self, p).
  for (const char* name : {"pdist", "_pdist_forward"})
    t.def(name, [failing](Importer& m, const Node* n) {
      return composite::pdist(m, m.tensor(n, 0), m.float_arg(n, 1), failing(m, n));
    }, false);
  // col2im(self, output_size, kernel_size, dilation, padding, stride): F.fold.
  t.def("col2im", [failing](Importer& m, const Node* n) {
    return composite::col2im(m, m.tensor(n, 0), m.ints_arg(n, 1), m.ints_arg(n, 2), m.ints_arg(n, 3), m.ints_arg(n, 4),
                             m.ints_arg(n, 5), failing(m, n));
  }, false);
  // as_strided(self, size, stride, storage_offset=None) reads self's storage, which is thunderc's contiguous tensor
  // only where PyTorch's self is contiguous and starts at its storage's first element: a model input, a weight
  // so stored, or the result of a computing op, possibly through views that keep the layout (view, reshape,
  // unsqueeze, ...; `to` and `clone` may return their input or keep its strides). Through any other view (permute,
  // slice, select, expand, ...) it is refused.
  t.def("as_strided", [failing](Importer& m, const Node* n) {
    static const std::set<std::string> keep_layout = {"aten::view", "aten::reshape", "aten::flatten", "aten::unflatten",
                                                      "aten::unsqueeze", "aten::squeeze", "aten::detach", "aten::alias",
                                                      "aten::contiguous", "aten::view_as", "aten::reshape_as",
                                                      "aten::dropout", "aten::clone", "aten::to", "aten::type_as"};
    static const std::set<std::string> views = {
        "aten::permute", "aten::transpose", "aten::t", "aten::expand", "aten::expand_as", "aten::slice", "aten::select",
        "aten::narrow", "aten::diagonal", "aten::as_strided", "aten::unfold", "aten::split", "aten::split_with_sizes",
        "aten::chunk", "aten::unbind", "aten::movedim", "aten::swapaxes", "aten::numpy_T", "aten::mT", "aten::T",
        "prim::ListUnpack", "prim::TupleUnpack", "prim::ConstantChunk"};
    const JVal& self = m.in(n, 0);
    bool own_layout = true;
    if (self.kind == JVal::Kind::Known && self.known.isTensor()) {
      const at::Tensor& w = self.known.toTensor();
      own_layout = w.is_contiguous() && w.storage_offset() == 0;
    } else {
      for (const Node* p = n->input(0)->node(); own_layout && p->kind() != c10::prim::Param; p = p->input(0)->node()) {
        const std::string kind = p->kind().toQualString();
        own_layout = !views.count(kind);
        if (!keep_layout.count(kind) || p->inputs().empty()) break;  // a computing op: a fresh contiguous tensor
      }
    }
    if (!own_layout)
      m.fail(n, "reads the storage of a tensor that is not contiguous or starts at an offset (a view); thunderc "
                "supports as_strided on contiguous tensors only");
    return composite::as_strided(m, m.tensor(n, 0), m.ints_arg(n, 1), m.ints_arg(n, 2),
                                 m.is_none(n, 3) ? 0 : m.int_arg(n, 3), failing(m, n));
  }, false);
}

// torch.fft's functions as ATen's three primitives, and the parts of complex tensors (core/frontend/fft_ops.h).
// Complex arithmetic around them is lowered by the importer (core/frontend/complex_ops.h).
void spectral_ops(Table& t) {
  auto failing = [](Importer& m, const Node* n) { return [&m, n](const std::string& why) { m.fail(n, why); }; };
  for (const fft_ops::Function& f : fft_ops::functions()) {
    t.def(f.name, [f, failing](Importer& m, const Node* n) {
      fft_ops::Args a;
      const char* size_arg = f.many_dims ? "s" : "n";
      if (has_arg(m, n, size_arg))
        a.sizes = f.many_dims ? m.ints_arg(n, need_arg(n, "s")) : IntList{m.int_arg(n, need_arg(n, "n"))};
      if (has_arg(m, n, "dim"))
        a.dims = f.many_dims ? m.ints_arg(n, need_arg(n, "dim")) : IntList{m.int_arg(n, need_arg(n, "dim"))};
      if (has_arg(m, n, "norm")) a.norm = m.string_arg(n, need_arg(n, "norm"));
      return fft_ops::transform(m, f, m.tensor(n, 0), a, failing(m, n));
    }, false);
  }
  for (const char* name : {"_fft_r2c", "_fft_c2r", "_fft_c2c"}) {
    std::string op_name = std::string("fft_") + (name + 5);
    t.def(name, [op_name](Importer& m, const Node* n) {
      Attrs a = {{"dim", m.ints_arg(n, 1)}, {"normalization", m.int_arg(n, 2)}};
      if (op_name == "fft_r2c") a.set("onesided", m.bool_arg(n, 3));
      if (op_name == "fft_c2r") a.set("last_dim_size", m.int_arg(n, 3));
      if (op_name == "fft_c2c") a.set("forward", m.bool_arg(n, 3));
      return m.emit(op_name, {Operand::tensor(m.tensor(n, 0))}, a);
    }, false);
  }
  for (const char* name : {"view_as_real", "view_as_complex"}) {
    std::string op_name = name;
    t.def(name, [op_name](Importer& m, const Node* n) { return m.emit(op_name, {Operand::tensor(m.tensor(n, 0))}); }, false);
  }
  t.def("real", [failing](Importer& m, const Node* n) { return fft_ops::part(m, m.tensor(n, 0), 0, failing(m, n)); }, false);
  t.def("imag", [failing](Importer& m, const Node* n) { return fft_ops::part(m, m.tensor(n, 0), 1, failing(m, n)); }, false);
  t.def("angle", [failing](Importer& m, const Node* n) { return fft_ops::angle(m, m.tensor(n, 0), failing(m, n)); }, false);
  for (const char* name : {"conj", "conj_physical", "_conj", "_conj_physical"})
    t.def(name, [](Importer& m, const Node* n) { return fft_ops::conj(m, m.tensor(n, 0)); }, false);
  for (const char* name : {"resolve_conj", "resolve_neg"})
    t.def(name, [](Importer& m, const Node* n) { return m.tensor(n, 0); }, false);
}

}  // namespace

const std::map<std::string, Handler>& op_handlers() {
  static const std::map<std::string, Handler> handlers = [] {
    Table t;
    unary_ops(t);
    binary_ops(t);
    identity_ops(t);
    reduction_norm_ops(t);
    shape_ops(t);
    nn_ops(t);
    fused_transformer_ops(t);
    composite_ops(t);
    overwrite_ops(t);
    spectral_ops(t);
    return t.handlers;
  }();
  return handlers;
}

}  // namespace thunderc::ts
