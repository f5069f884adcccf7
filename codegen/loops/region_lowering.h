// Region lowering shared by the loop executors: `cpp` (codegen/cpp/, OpenMP loops) and `nvfuser`
// (codegen/nvfuser/, CUDA kernels) lower a region (op "fusion", core/transforms/fusion.h) or a lone symbol
// with the same rules, and differ only in how a loop nest becomes code.
//
// How a region is lowered (shapes are static, so every stride and bound is a literal):
//  * Each value is an expression tree over the index space of its shape. Leaves are strided loads from
//    a buffer (a region input, a region output already written, or scratch); permute, expand, slice,
//    select and view-compatible reshape only rewrite the leaves' offsets and strides, so data movement
//    feeding elementwise ops costs nothing. Elementwise ops (with broadcasting) add nodes; batch_norm,
//    and the final step of softmax, log_softmax and layer_norm, are elementwise nodes too.
//  * A value is materialized (one loop nest storing the tree) only when it is a region output, is read
//    more than once inside the region, feeds a reduction statistic, pooling, or a reshape that is not a
//    view. Materialized intermediates live in the symbol's scratch space (scratch_bytes()). For a reshape
//    the store follows the memory order of the value's own leaves, with the dims the reshape merges kept
//    together (materialize_for_reshape), so the reshape is a view of it and an NHWC tensor seen as NCHW is
//    not transposed.
//  * cat is lazy: a "cat" node whose arguments are the pieces' trees, each over its own piece. Elementwise
//    ops of the same shape (and batch_norm's input) build on it, a permute renumbers it, channels-last
//    pooling of a cat of channels pools each piece into its channels; anything else (another view, a
//    reduction, a second use) materializes it first (settle_inputs). A store of a tree holding a cat is
//    split along the cat's dim into one nest per piece (store), so DenseNet's cat -> batch_norm -> relu
//    reads each piece once and writes the result once, instead of copying the concatenation and reading
//    it back.
//  * A target (a subclass) turns the four kinds of loop nest into code: store (dest = tree over a shape),
//    reduce (sum or max over some dims into a contiguous buffer), update (b[i] = f(b[i])) and pooling.
//    Expressions are C++ text that both targets compile: std:: math on the CPU; on CUDA the kernels'
//    prelude (codegen/nvfuser/) provides the same names on the device.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/backend.h"
#include "codegen/source_writer.h"
#include "codegen/symbolic_code.h"
#include "core/ir/error.h"
#include "core/ir/types.h"

namespace thunderc::loops {

using Lines = std::vector<std::string>;

// The element type in memory. float16/bfloat16 are the CUDA prelude's 16-bit storage types
// (codegen/nvfuser/): they convert to float when read and round to nearest even when assigned a float.
inline const char* ctype(DType d) {
  switch (d) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::Float16: return "thunderc_f16";
    case DType::BFloat16: return "thunderc_bf16";
    default: internal_error("cpp codegen: unsupported dtype ", dtype_name(d));
  }
}

// The type arithmetic on d happens in (PyTorch's opmath type): float for the half types, else ctype(d).
// Every local variable of the generated code has this type; only buffers hold ctype.
inline DType opmath(DType d) { return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d; }
inline const char* atype(DType d) { return ctype(opmath(d)); }

// A literal of dtype d with exactly the value a PyTorch scalar converted to d has (for the half types: the
// float value arithmetic on them starts from).
inline std::string lit(double v, DType d) {
  if (d == DType::Bool) return v != 0 ? "true" : "false";
  if (is_integral(d)) {  // (INT64_MIN has no literal: its digits overflow before the minus applies)
    const long long i = v <= -9223372036854775808.0 ? INT64_MIN : v >= 9223372036854775807.0 ? INT64_MAX : static_cast<long long>(v);
    const std::string digits = i == INT64_MIN ? "(-9223372036854775807LL - 1)" : "(" + std::to_string(i) + "LL)";
    return "static_cast<" + std::string(ctype(d)) + ">" + digits;
  }
  bool f = opmath(d) == DType::Float32;
  if (!std::isfinite(v)) return c_number_literal(v, f);
  std::string s = c_number_literal(v);
  if (v < 0) s = "(" + s + ")";
  return f ? "static_cast<float>(" + s + ")" : s;
}

inline Shape contiguous(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Element strides of a contiguous tensor of shape `src` along each dim of `dst` (src broadcasting to dst,
// right-aligned): 0 where src has size 1 (or no dim) and dst does not.
inline std::vector<std::int64_t> broadcast_strides(const Shape& src, const Shape& dst) {
  Shape st = contiguous(src);
  std::vector<std::int64_t> out(dst.size(), 0);
  for (std::size_t k = 0; k < src.size(); ++k) {
    std::size_t j = src.size() - 1 - k, i = dst.size() - 1 - k;
    out[i] = src[j] == 1 && dst[i] != 1 ? 0 : st[j];
  }
  return out;
}

inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

struct Node;
using NodeP = std::shared_ptr<const Node>;
struct Node {
  enum Kind { Load, Const, Op } kind = Op;
  DType dtype = DType::Float32;
  // Load: element (offset + sum(index[i] * strides[i])) of buffer `buf`, over the root value's shape.
  int buf = -1;
  std::int64_t offset = 0;
  std::vector<std::int64_t> strides;
  double value = 0;  // Const
  // Op: computed in `compute`, arguments converted to it (conditions and masks to bool).
  std::string op;
  std::vector<NodeP> args;
  std::vector<double> params;
  DType compute = DType::Float32;
};

struct Val {
  Shape shape;
  NodeP e;
};

inline NodeP make_const(double v, DType d) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Const;
  n->dtype = d;
  n->value = v;
  return n;
}

inline NodeP make_load(int buf, DType d, std::int64_t offset, std::vector<std::int64_t> strides) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Load;
  n->dtype = d;
  n->buf = buf;
  n->offset = offset;
  n->strides = std::move(strides);
  return n;
}

inline NodeP make_op(const std::string& op, DType out, DType compute, std::vector<NodeP> args, std::vector<double> params = {}) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->dtype = out;
  n->compute = compute;
  n->args = std::move(args);
  n->params = std::move(params);
  return n;
}

// A lazy cat (see the top of this file): op "cat", params {dim, size of piece 0 along dim, ...}, one argument
// per piece, each a tree over its piece's index space.
inline bool is_cat(const Node& n) { return n.kind == Node::Op && n.op == "cat"; }

// The first lazy cat in the tree (depth first), or null.
inline const Node* find_cat(const NodeP& n, std::set<const Node*>& seen) {
  if (n->kind != Node::Op || !seen.insert(n.get()).second) return nullptr;
  if (is_cat(*n)) return n.get();
  for (const auto& a : n->args)
    if (const Node* c = find_cat(a, seen)) return c;
  return nullptr;
}
inline const Node* find_cat(const NodeP& n) {
  std::set<const Node*> seen;
  return find_cat(n, seen);
}

// The tree over the sub-box of its index space where dim `d` runs over [a, a + len) (renumbered from 0):
// loads move by `a` strides along d; a cat along d keeps only (the overlapping parts of) the pieces that
// overlap the range, and is dropped when one piece is left.
inline NodeP slice_tree(const NodeP& n, std::size_t d, std::int64_t a, std::int64_t len, std::map<const Node*, NodeP>& memo) {
  if (n->kind == Node::Const) return n;
  auto it = memo.find(n.get());
  if (it != memo.end()) return it->second;
  NodeP r;
  auto c = std::make_shared<Node>(*n);
  if (n->kind == Node::Load) {
    c->offset += a * c->strides[d];
    r = c;
  } else if (is_cat(*n) && static_cast<std::size_t>(n->params[0]) == d) {
    c->args.clear();
    c->params = {n->params[0]};
    std::int64_t at = 0;
    for (std::size_t k = 0; k < n->args.size(); ++k) {
      const auto m = static_cast<std::int64_t>(n->params[k + 1]);
      const std::int64_t lo = std::max(a, at), hi = std::min(a + len, at + m);
      if (lo < hi) {
        std::map<const Node*, NodeP> piece_memo;  // each piece has an index space of its own
        c->args.push_back(slice_tree(n->args[k], d, lo - at, hi - lo, piece_memo));
        c->params.push_back(static_cast<double>(hi - lo));
      }
      at += m;
    }
    r = c->args.size() == 1 ? c->args[0] : c;
  } else if (is_cat(*n)) {  // a cat along another dim: every piece spans all of d
    for (auto& p : c->args) {
      std::map<const Node*, NodeP> piece_memo;
      p = slice_tree(p, d, a, len, piece_memo);
    }
    r = c;
  } else {
    for (auto& p : c->args) p = slice_tree(p, d, a, len, memo);
    r = c;
  }
  memo[n.get()] = r;
  return r;
}

// Rewrites every load of the tree (shared subtrees stay shared), and every op node with `on_op` if given.
inline NodeP map_loads(const NodeP& n, const std::function<void(Node&)>& f, std::map<const Node*, NodeP>& memo,
                       const std::function<void(Node&)>& on_op = nullptr) {
  if (n->kind == Node::Const) return n;
  auto it = memo.find(n.get());
  if (it != memo.end()) return it->second;
  auto c = std::make_shared<Node>(*n);
  if (c->kind == Node::Load) {
    f(*c);
  } else {
    for (auto& a : c->args) a = map_loads(a, f, memo, on_op);
    if (on_op) on_op(*c);
  }
  memo[n.get()] = c;
  return c;
}

// New index space: old index i = sum_j A[i][j] * new_j + c[i].
// A lazy cat in the tree goes through a permutation only (RegionLowering::settle_inputs): its pieces' loads
// map as any load (strides do not depend on extents), and its dim is renumbered.
inline Val affine(const Val& v, const Shape& shape, const std::vector<std::vector<std::int64_t>>& A,
           const std::vector<std::int64_t>& c) {
  std::map<const Node*, NodeP> memo;
  NodeP e = map_loads(v.e, [&](Node& l) {
    std::vector<std::int64_t> s(shape.size(), 0);
    for (std::size_t i = 0; i < l.strides.size(); ++i) {
      l.offset += l.strides[i] * c[i];
      for (std::size_t j = 0; j < shape.size(); ++j) s[j] += l.strides[i] * A[i][j];
    }
    l.strides = std::move(s);
  }, memo, [&](Node& n) {
    if (!is_cat(n)) return;
    const auto d = static_cast<std::size_t>(n.params[0]);
    std::size_t to = shape.size(), uses = 0;
    for (std::size_t j = 0; j < shape.size(); ++j)
      if (A[d][j] != 0) to = j, ++uses;
    bool only_d = to < shape.size() && A[d][to] == 1 && c[d] == 0 && uses == 1;
    for (std::size_t i = 0; only_d && i < A.size(); ++i) only_d = i == d || A[i][to] == 0;
    THUNDERC_CHECK(only_d, "loop codegen bug: a lazy cat through a view that is not a permutation");
    n.params[0] = static_cast<double>(to);
  });
  return {shape, e};
}

inline std::vector<std::vector<std::int64_t>> zeros(std::size_t r, std::size_t c) {
  return std::vector<std::vector<std::int64_t>>(r, std::vector<std::int64_t>(c, 0));
}

// Old dim i becomes new dim dims[i] (broadcast along the others).
inline Val place(const Val& v, const Shape& shape, const std::vector<std::size_t>& dims) {
  auto A = zeros(v.shape.size(), shape.size());
  for (std::size_t i = 0; i < dims.size(); ++i) A[i][dims[i]] = v.shape[i] == shape[dims[i]] ? 1 : 0;
  return affine(v, shape, A, std::vector<std::int64_t>(v.shape.size(), 0));
}

inline Val broadcast_to(const Val& v, const Shape& shape) {
  if (v.shape == shape) return v;
  std::vector<std::size_t> dims;
  for (std::size_t i = 0; i < v.shape.size(); ++i) dims.push_back(i + shape.size() - v.shape.size());
  return place(v, shape, dims);
}

// Strides of a view of (shape, strides) as new_shape, ATen's computeStride; false when not a view.
inline bool view_strides(const Shape& shape, const std::vector<std::int64_t>& strides, const Shape& new_shape,
                  std::vector<std::int64_t>& out) {
  out.assign(new_shape.size(), 0);
  if (numel(shape) == 0 || shape.empty()) {
    if (numel(shape) == 0) out = contiguous(new_shape);
    return true;
  }
  std::int64_t view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk = strides.back(), tensor_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

struct Access {
  int buf;
  std::int64_t offset;
  std::vector<std::int64_t> strides;
  bool operator<(const Access& o) const {
    return std::tie(buf, offset, strides) < std::tie(o.buf, o.offset, o.strides);
  }
};

// One loop dimension over `n` indices and each access's stride along it.
struct LoopDim {
  std::int64_t n;
  std::vector<std::int64_t> s;
};

// The loop dimensions over `shape` (row-major) for the accesses: size-1 dims dropped, and a dim merged into
// the next inner one when every access walks them as one (so contiguous chains become one flat loop).
inline std::vector<LoopDim> merged_dims(const Shape& shape, const std::vector<Access>& acc) {
  std::vector<LoopDim> dims;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    LoopDim dim{shape[d], {}};
    for (const Access& a : acc) dim.s.push_back(a.strides[d]);
    dims.push_back(dim);
  }
  for (std::size_t j = dims.size(); j-- > 1;) {
    bool ok = true;
    for (std::size_t a = 0; a < acc.size(); ++a) ok = ok && dims[j - 1].s[a] == dims[j].s[a] * dims[j].n;
    if (ok) {
      dims[j].n *= dims[j - 1].n;
      dims.erase(dims.begin() + (j - 1));
    }
  }
  return dims;
}

inline std::string term(const std::string& base, const std::string& var, std::int64_t s) {
  if (s == 0) return base;
  std::string t = s == 1 ? var : var + " * " + std::to_string(s);
  return base == "0" ? t : base + " + " + t;
}

// Lowers one region; a subclass emits the loop nests.
class RegionLowering {
 public:
  RegionLowering(const Trace& t, const BoundSymbol& region, const EmitContext* ctx) : t_(t), region_(region), ctx_(ctx) {}
  virtual ~RegionLowering() = default;
  RegionLowering(const RegionLowering&) = delete;
  RegionLowering& operator=(const RegionLowering&) = delete;

  void run() {
    for (const Operand& in : region_.inputs) {
      if (!in.is_tensor() || vals_.count(in.value)) continue;
      const TensorType& ty = t_.type(in.value);
      int b = add_buf(ty.dtype, "static_cast<const " + std::string(ctype(ty.dtype)) + "*>(" + name(in.value) + ".data)", false);
      vals_[in.value] = {ty.shape, make_load(b, ty.dtype, 0, contiguous(ty.shape))};
    }
    for (ValueId o : region_.outputs) outputs_.insert(o);
    for (const BoundSymbol& s : region_.subsymbols)
      for (const Operand& in : s.inputs)
        if (in.is_tensor()) ++uses_[in.value];
    for (const BoundSymbol& s : region_.subsymbols) {
      lines_.push_back("  " + c_comment(s.op->name));
      Val v = lower(s);
      ValueId out = s.outputs[0];
      bool lazy = v.e->kind == Node::Op;
      if (outputs_.count(out) && !written_.count(out)) v = materialize(out, v);
      else if (lazy && uses_[out] > 1) v = materialize(out, v);
      vals_[out] = v;
    }
    for (ValueId o : region_.outputs)
      THUNDERC_CHECK(written_.count(o), "loop codegen: region output ", t_.value(o).name, " was not written");
    finish();
  }

  std::size_t scratch_bytes() const { return scratch_; }

  // The code of the region (the statements inside the variant function): its buffers, then what the target
  // emitted (loops on the CPU, kernel launches on CUDA).
  void write(SourceWriter& out) const {
    out.line("{");
    for (const auto& b : bufs_) out.line("  " + b);
    for (const auto& l : lines_) out.line(l);
    out.line("}");
  }

 protected:
  std::string name(ValueId v) const { return ctx_ ? ctx_->buffer(v) : "v_" + t_.value(v).name; }

  int add_buf(DType d, const std::string& init, bool writable) {
    int id = static_cast<int>(buf_types_.size());
    buf_types_.push_back(d);
    buf_writable_.push_back(writable);
    bufs_.push_back(std::string(writable ? "" : "const ") + ctype(d) + "* __restrict b" + std::to_string(id) + " = " + init + ";");
    return id;
  }

  int out_buf(ValueId v) {
    auto it = out_bufs_.find(v);
    if (it != out_bufs_.end()) return it->second;
    DType d = t_.type(v).dtype;
    int b = add_buf(d, "static_cast<" + std::string(ctype(d)) + "*>(" + name(v) + ".data)", true);
    out_bufs_[v] = b;
    return b;
  }

  // An element count as a number of d's arithmetic type (a mean's divisor). Symbolic variants print it as
  // an integer, which codegen/symbolic_code.h can turn into an expression; the value is the same.
  std::string count_lit(std::int64_t n, DType d) const {
    if (ctx_ && ctx_->symbolic_sizes()) return "static_cast<" + std::string(atype(d)) + ">(" + std::to_string(n) + "LL)";
    return lit(static_cast<double>(n), d);
  }

  int scratch_buf(DType d, std::int64_t n) {
    std::size_t off = scratch_;
    scratch_ += (static_cast<std::size_t>(std::max<std::int64_t>(n, 1)) * dtype_size(d) + 63) / 64 * 64;
    // Symbolic variants plan scratch at the maxima: the offset is an upper bound, not a size.
    const char* bound = ctx_ && ctx_->symbolic_sizes() ? kAtMax : "";
    return add_buf(d, "reinterpret_cast<" + std::string(ctype(d)) + "*>(" + (ctx_ ? ctx_->scratch() : std::string("ws")) +
                          " + " + bound + std::to_string(off) + ")", true);
  }

  // Where the value `v` (or an internal temporary when v is not an output) gets stored.
  int dest_for(ValueId v, DType d, std::int64_t n, bool is_value) {
    if (is_value && outputs_.count(v)) {
      written_.insert(v);
      return out_buf(v);
    }
    return scratch_buf(d, n);
  }

  void L(const std::string& s) { lines_.push_back(std::string(indent_, ' ') + s); }

  // Distinct loads of a tree, in first-visit order.
  void collect(const NodeP& n, std::vector<Access>& acc, std::map<Access, std::size_t>& index, std::set<const Node*>& seen,
               double& cost) {
    if (!seen.insert(n.get()).second) return;
    if (n->kind == Node::Load) {
      Access a{n->buf, n->offset, n->strides};
      if (!index.count(a)) {
        index[a] = acc.size();
        acc.push_back(a);
      }
      return;
    }
    if (n->kind == Node::Op) {
      static const std::set<std::string> expensive = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "erf", "sigmoid",
                                                      "tanh", "gelu", "gelu_tanh", "silu", "pow", "div", "reciprocal"};
      cost += expensive.count(n->op) ? 8 : 1;
    }
    for (const auto& a : n->args) collect(a, acc, index, seen, cost);
  }

  // Generates statements computing the tree; returns the expression of its value (in its dtype).
  struct Body {
    const std::map<Access, std::size_t>& index;
    const std::vector<std::string>& idx;
    std::map<const Node*, std::string> names;
    Lines lines;
    int counter = 0;
  };

  // x (an expression of atype(from)) as a value of dtype `to`, in atype(to): converting to a half type
  // rounds (thunderc_round_f16/bf16, from the CUDA prelude) and stays float.
  static std::string cast(const std::string& x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::Bool) return "(" + x + " != 0)";
    if (to == DType::Float16) return "thunderc_round_f16(" + x + ")";
    if (to == DType::BFloat16) return "thunderc_round_bf16(" + x + ")";
    if (opmath(from) == to) return x;
    return "static_cast<" + std::string(ctype(to)) + ">(" + x + ")";
  }

  static std::string gen(Body& b, const NodeP& n) {
    if (n->kind == Node::Const) return lit(n->value, n->dtype);
    auto it = b.names.find(n.get());
    if (it != b.names.end()) return it->second;
    std::string v = "x" + std::to_string(b.counter++);
    std::string T = atype(n->dtype);
    if (n->kind == Node::Load) {
      std::size_t a = b.index.at(Access{n->buf, n->offset, n->strides});
      b.lines.push_back("const " + T + " " + v + " = b" + std::to_string(n->buf) + "[" + b.idx[a] + "];");
    } else {
      DType C = n->compute;
      std::vector<std::string> a;
      for (std::size_t i = 0; i < n->args.size(); ++i) {
        DType to = C;
        if ((n->op == "where" && i == 0) || (n->op == "masked_fill" && i == 1)) to = DType::Bool;
        a.push_back(cast(gen(b, n->args[i]), n->args[i]->dtype, to));
      }
      b.lines.push_back("const " + T + " " + v + " = " + cast(expr(n->op, C, a, n->params), C, n->dtype) + ";");
    }
    b.names[n.get()] = v;
    return v;
  }

  static std::string expr(const std::string& op, DType C, const std::vector<std::string>& a, const std::vector<double>& p) {
    auto k = [&](double v) { return lit(v, C); };
    if (!op.empty() && op[0] == '@') return op.substr(1);  // a variable the target declares (e.g. "@acc")
    const std::string& x = a[0];
    const bool integer = !is_floating(C);  // an integer or bool compute type
    const std::string T = ctype(C);
    // Integer add, sub, mul and neg wrap around as ATen's do: computed in uint64 (signed overflow is undefined in
    // C++), converted back (modular).
    auto wrapped = [&](const std::string& l, const std::string& o, const std::string& r) {
      return "static_cast<" + T + ">(static_cast<uint64_t>(" + l + ") " + o + " static_cast<uint64_t>(" + r + "))";
    };
    if (op == "relu") return "(" + x + " < " + k(0) + " ? " + k(0) + " : " + x + ")";
    if (op == "neg") return integer ? wrapped(k(0), "-", x) : "-" + x;
    if (op == "abs") return integer ? "(" + x + " < " + k(0) + " ? " + wrapped(k(0), "-", x) + " : " + x + ")" : "std::abs(" + x + ")";
    // float32 exp/tanh/erf use the inline, vectorizable versions in thunderc/cpp_math.h.
    auto fn = [&](const std::string& name) {
      return C == DType::Float32 && (name == "exp" || name == "tanh" || name == "erf") ? "thunderc_" + name + "f"
                                                                                       : "std::" + name;
    };
    if (op == "exp" || op == "log" || op == "sqrt" || op == "sin" || op == "cos" || op == "erf" || op == "tanh")
      return fn(op) + "(" + x + ")";
    static const std::set<std::string> math = {"tan",   "asin",  "acos",  "atan",  "sinh", "cosh", "asinh",
                                               "acosh", "atanh", "expm1", "log1p", "log2", "log10"};
    if (math.count(op)) return "std::" + op + "(" + x + ")";
    if (op == "ceil" || op == "floor" || op == "trunc") return integer ? x : "std::" + op + "(" + x + ")";
    if (op == "round") return integer ? x : "std::nearbyint(" + x + ")";  // the default rounding: halves to even
    if (op == "sign")  // (0 < x) - (x < 0), as ATen: 0 for NaN and for -0.0; a bool is its own sign
      return C == DType::Bool ? x : "static_cast<" + T + ">((" + k(0) + " < " + x + ") - (" + x + " < " + k(0) + "))";
    if (op == "isnan") return integer ? "false" : "std::isnan(" + x + ")";
    if (op == "isinf") return integer ? "false" : "std::isinf(" + x + ")";
    if (op == "bitwise_not") return C == DType::Bool ? "!" + x : "static_cast<" + T + ">(~" + x + ")";
    if (op == "elu")  // params: alpha, scale, input_scale
      return "(" + x + " > " + k(0) + " ? " + x + " * " + k(p[1]) + " : std::expm1(" + x + " * " + k(p[2]) + ") * " +
             k(p[0] * p[1]) + ")";
    if (op == "rsqrt") return k(1) + " / std::sqrt(" + x + ")";
    if (op == "reciprocal") return k(1) + " / " + x;
    if (op == "sigmoid") return k(1) + " / (" + k(1) + " + " + fn("exp") + "(-" + x + "))";
    if (op == "silu") return x + " / (" + k(1) + " + " + fn("exp") + "(-" + x + "))";
    if (op == "gelu") return x + " * " + k(0.5) + " * (" + k(1) + " + " + fn("erf") + "(" + x + " * " + k(M_SQRT1_2) + "))";
    if (op == "gelu_tanh")
      return k(0.5) + " * " + x + " * (" + k(1) + " + " + fn("tanh") + "(" + k(M_SQRT2 * M_2_SQRTPI * 0.5) + " * (" + x + " + " +
             k(0.044715) + " * (" + x + " * " + x + " * " + x + "))))";
    if (op == "hardswish") return x + " * std::min(std::max(" + x + " + " + k(3) + ", " + k(0) + "), " + k(6) + ") / " + k(6);
    if (op == "hardsigmoid") return "std::min(std::max(" + x + " + " + k(3) + ", " + k(0) + "), " + k(6) + ") / " + k(6);
    // hardtanh is ATen's clamp(x, min_val, max_val): below.
    if (op == "leaky_relu") return "(" + x + " > " + k(0) + " ? " + x + " : " + x + " * " + k(p[0]) + ")";
    if (op == "clamp" || op == "hardtanh") {  // params: min, max, has min, has max
      // As ATen's clamp: NaN in x propagates; with both bounds, a NaN bound makes every element NaN; with
      // one bound, a NaN bound leaves x, as ATen's clamp_min / clamp_max. x stays the first argument:
      // std::max(a, b) is (a < b) ? b : a, and std::min(a, b) is (b < a) ? b : a, so a NaN `a` comes out
      // unchanged, without a test of its own that would keep the loop from vectorizing (a branch per element:
      // MobileNetV2's relu6 loops ran 4x slower with an isnan() guard).
      bool lo = p[2] != 0, hi = p[3] != 0;
      if (lo && hi && (std::isnan(p[0]) || std::isnan(p[1]))) return k(NAN);
      std::string r = x;
      if (lo && !std::isnan(p[0])) r = "std::max(" + r + ", " + k(p[0]) + ")";
      if (hi && !std::isnan(p[1])) r = "std::min(" + r + ", " + k(p[1]) + ")";
      return r;
    }
    if (op == "logical_not") return "!" + x;
    if (op == "cast") return x;
    if (op == "add") return integer ? wrapped(x, "+", a[1]) : x + " + " + a[1];
    if (op == "sub") return integer ? wrapped(x, "-", a[1]) : x + " - " + a[1];
    if (op == "mul") return integer ? wrapped(x, "*", a[1]) : x + " * " + a[1];
    if (op == "div") return x + " / " + a[1];
    if (op == "square") return x + " * " + x;
    if (op == "pow") return "std::pow(" + x + ", " + a[1] + ")";
    if (op == "maximum" || op == "minimum") {
      std::string f = op == "maximum" ? "std::max" : "std::min";
      if (integer) return f + "(" + x + ", " + a[1] + ")";
      return "(std::isnan(" + x + ") ? " + x + " : (std::isnan(" + a[1] + ") ? " + a[1] + " : " + f + "(" + x + ", " +
             a[1] + ")))";
    }
    static const std::map<std::string, std::string> cmp = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                                           {"le", "<="}, {"gt", ">"},  {"ge", ">="}};
    if (cmp.count(op)) return "(" + x + " " + cmp.at(op) + " " + a[1] + ")";
    if (op == "logical_and") return "(" + x + " && " + a[1] + ")";
    if (op == "logical_or") return "(" + x + " || " + a[1] + ")";
    if (op == "logical_xor") return "(" + x + " != " + a[1] + ")";
    if (op == "bitwise_and") return "static_cast<" + T + ">(" + x + " & " + a[1] + ")";
    if (op == "bitwise_or") return "static_cast<" + T + ">(" + x + " | " + a[1] + ")";
    if (op == "bitwise_xor") return "static_cast<" + T + ">(" + x + " ^ " + a[1] + ")";
    if (integer && (op == "fmod" || op == "remainder" || op == "div_trunc" || op == "div_floor")) {
      // Integers by a nonzero number (the checker's rule): C++'s / and % truncate; remainder takes the
      // divisor's sign and floor division rounds down, as ATen.
      const std::string q = "(" + x + " / " + a[1] + ")", r = "(" + x + " % " + a[1] + ")";
      const std::string inexact_negative = "(" + r + " != 0 && ((" + r + " < 0) != (" + a[1] + " < 0)))";
      if (op == "fmod") return "static_cast<" + T + ">" + r;
      if (op == "div_trunc") return "static_cast<" + T + ">" + q;
      if (op == "remainder") return "static_cast<" + T + ">(" + inexact_negative + " ? " + r + " + " + a[1] + " : " + r + ")";
      return "static_cast<" + T + ">(" + q + " - (" + inexact_negative + " ? 1 : 0))";
    }
    if (op == "atan2") return "std::atan2(" + x + ", " + a[1] + ")";
    if (op == "hypot") return "std::hypot(" + x + ", " + a[1] + ")";
    if (op == "fmod") return "std::fmod(" + x + ", " + a[1] + ")";
    if (op == "remainder") {  // fmod, moved into the sign of the divisor, as ATen
      const std::string m = "std::fmod(" + x + ", " + a[1] + ")";
      return "(" + m + " != " + k(0) + " && ((" + a[1] + " < " + k(0) + ") != (" + m + " < " + k(0) + ")) ? " + m +
             " + " + a[1] + " : " + m + ")";
    }
    if (op == "where") return "(" + x + " ? " + a[1] + " : " + a[2] + ")";
    if (op == "masked_fill") return "(" + a[1] + " ? " + a[2] + " : " + x + ")";
    internal_error("cpp codegen: no formula for ", op);
  }

  // dest[offset + index . strides] = tree, over v.shape: one nest, or one per piece of a lazy cat in the tree.
  void store(int dest, std::int64_t offset, const std::vector<std::int64_t>& strides, const Val& v) {
    const Node* c = find_cat(v.e);
    if (!c) return store_nest(dest, offset, strides, v);
    const auto d = static_cast<std::size_t>(c->params[0]);
    std::int64_t at = 0;
    for (std::size_t k = 1; k < c->params.size(); ++k) {
      const auto n = static_cast<std::int64_t>(c->params[k]);
      if (n > 0) {
        Shape shape = v.shape;
        shape[d] = n;
        std::map<const Node*, NodeP> memo;
        store(dest, offset + at * strides[d], strides, {shape, slice_tree(v.e, d, at, n, memo)});
      }
      at += n;
    }
  }

  // ---- what a target implements ----
  // dest[offset + index . strides] = tree (which holds no lazy cat), over v.shape.
  virtual void store_nest(int dest, std::int64_t offset, const std::vector<std::int64_t>& strides, const Val& v) = 0;
  // dest (contiguous, `x` with the reduced dims removed or kept as 1) = sum (or max) of x over the dims `red`.
  virtual void reduce(const Val& x, const std::vector<bool>& red, int dest, bool is_max) = 0;
  // One-dimensional in-place update of a buffer: b[i] = f(b[i]), `f_of_v` reading `v`.
  virtual void update(int buf, std::int64_t n, const std::string& f_of_v) = 0;
  // Pooling: for each plane p < planes (H x W elements at X + x_offset + p * H * W) and each output element
  // (oh, ow) of the plane's OH x OW outputs (at D + p * OH * OW), `body` computes o[oh * OW + ow] reading `in`
  // (the plane's input) and writing `o` (the plane's output); it declares what else it needs.
  struct PoolLoops {
    std::int64_t planes, H, W, OH, OW, x_numel;
    std::string T, X, D;
    std::int64_t x_offset;
    Lines body;
  };
  virtual void pool_loops(const PoolLoops& p) = 0;
  // Channels-last pooling (max_pool2d_nhwc, avg_pool2d_nhwc; CPU only): for each image n < images (H x W x C
  // elements at X + x_offset + n * H * W * C) and each output pixel (oh, ow), `body` writes the pixel's C
  // outputs `o` (at D + ((n * OH + oh) * OW + ow) * OC: OC is C, or the channels of the whole output when the
  // input is one piece of a concatenation and D points at the piece's first channel) reading the image `in`;
  // C is the innermost, unit-stride loop of its statements, so they vectorize across channels.
  struct PoolLoopsNhwc {
    std::int64_t images, H, W, C, OH, OW, x_numel;
    std::string T, X, D;
    std::int64_t x_offset;
    Lines body;
    std::int64_t OC;
  };
  virtual void pool_loops_nhwc(const PoolLoopsNhwc&) { internal_error("loop codegen: no channels-last pooling here"); }
  // Called once after the last loop nest (a target that defers work emits it here).
  virtual void finish() {}
  // Operators the shared rules do not lower (nvfuser's GEMMs inside a region).
  virtual Val lower_other(const BoundSymbol& s, const TensorType& ot, ValueId out) {
    internal_error("loop codegen: cannot lower ", s.op->name);
  }

  Val materialize(ValueId v, const Val& x, bool is_value = true) {
    DType d = x.e->dtype;
    int b = dest_for(v, d, numel(x.shape), is_value);
    store(b, 0, contiguous(x.shape), x);
    return {x.shape, make_load(b, d, 0, contiguous(x.shape))};
  }

  Val loaded(const Val& x) { return x.e->kind == Node::Op ? materialize(0, x, false) : x; }

  // Stores x for a reshape to new_shape that is not a view of it, in a memory order that makes the reshape a
  // view: the dims the reshape merges or splits stay together, in their order, and the groups keep the order
  // of x's own memory (the strides of its first load). ShuffleNet's channel shuffle on NHWC tensors
  // (permute to NCHW, split the channels, swap, merge, slice, permute back) so copies each pixel's channels
  // within the pixel, where a row-major store of the NCHW-ordered value transposed the whole map, twice.
  Val materialize_for_reshape(const Val& x, const Shape& new_shape) {
    const std::vector<std::pair<std::size_t, std::size_t>> groups = reshape_groups(x.shape, new_shape);
    const Node* leaf = first_load(x.e.get());
    if (leaf == nullptr || leaf->strides.size() != x.shape.size() || groups.size() < 2) return materialize(0, x, false);
    // A group's place in memory: its innermost stride over dims of more than one index.
    std::vector<std::int64_t> key(groups.size(), std::numeric_limits<std::int64_t>::max());
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t d = groups[g].first; d < groups[g].second; ++d)
        if (x.shape[d] > 1) key[g] = std::min(key[g], std::abs(leaf->strides[d]));
    std::vector<std::size_t> order(groups.size());
    for (std::size_t g = 0; g < order.size(); ++g) order[g] = g;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] > key[b]; });
    std::vector<std::size_t> perm;  // dim j of the stored value is x's dim perm[j]
    for (std::size_t g : order)
      for (std::size_t d = groups[g].first; d < groups[g].second; ++d) perm.push_back(d);
    bool identity = true;
    for (std::size_t j = 0; j < perm.size(); ++j) identity = identity && perm[j] == j;
    if (identity) return materialize(0, x, false);
    const std::size_t r = x.shape.size();
    Shape stored_shape(r);
    auto to_stored = zeros(r, r), back = zeros(r, r);
    for (std::size_t j = 0; j < r; ++j) {
      stored_shape[j] = x.shape[perm[j]];
      to_stored[perm[j]][j] = 1;  // x's index perm[j] is the stored value's index j
      back[j][perm[j]] = 1;
    }
    const Val stored = materialize(0, affine(x, stored_shape, to_stored, std::vector<std::int64_t>(r, 0)), false);
    return affine(stored, x.shape, back, std::vector<std::int64_t>(r, 0));
  }

  static const Node* first_load(const Node* n) {
    if (n->kind == Node::Load) return n;
    for (const NodeP& a : n->args)
      if (const Node* l = first_load(a.get())) return l;
    return nullptr;
  }

  // The runs of dims [first, second) of `shape` that a reshape to new_shape merges or splits as one: each run's
  // product is the product of a run of new_shape's dims.
  static std::vector<std::pair<std::size_t, std::size_t>> reshape_groups(const Shape& shape, const Shape& new_shape) {
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    std::size_t i = 0, j = 0;
    while (i < shape.size()) {
      const std::size_t begin = i;
      std::int64_t p = shape[i++], q = j < new_shape.size() ? new_shape[j++] : 1;
      while (p != q) {
        if (p < q && i < shape.size()) p *= shape[i++];
        else if (q < p && j < new_shape.size()) q *= new_shape[j++];
        else break;
      }
      groups.emplace_back(begin, i);
    }
    return groups;
  }

  NodeP stat_leaf(int buf, DType d, const Shape& shape, const std::vector<bool>& red) {
    Shape kept_shape = shape;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (red[i]) kept_shape[i] = 1;
    std::vector<std::int64_t> s = contiguous(kept_shape);
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (red[i]) s[i] = 0;
    return make_load(buf, d, 0, s);
  }

  Val operand(const Operand& o, const Shape& shape, DType scalar_dtype) {
    if (o.is_tensor()) return broadcast_to(vals_.at(o.value), shape);
    return {shape, make_const(o.scalar.is_bool() ? (o.scalar.to_int() ? 1.0 : 0.0) : o.scalar.to_double(), scalar_dtype)};
  }

  // Materializes each input holding a lazy cat that `s` cannot build on. An elementwise op of the input's
  // own shape and batch_norm's input keep the cat's index space; a permute renumbers it (affine), as the
  // channels-last pass's NHWC -> NCHW permute around a pre-activation batch norm needs.
  void settle_inputs(const BoundSymbol& s, const TensorType& ot) {
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      if (!s.inputs[i].is_tensor()) continue;
      Val& v = vals_.at(s.inputs[i].value);
      if (!find_cat(v.e)) continue;
      const bool same_space = v.shape == ot.shape && (s.op->category == OpCategory::Elementwise ||
                                                      (s.op->name == "batch_norm" && i == 0));
      // Channels-last pooling works per channel: it pools a cat of channels piece by piece (lower_pool_nhwc).
      const bool channel_pool = (s.op->name == "max_pool2d_nhwc" || s.op->name == "avg_pool2d_nhwc") && is_cat(*v.e) &&
                                static_cast<std::size_t>(v.e->params[0]) == 3;
      if (same_space || channel_pool || s.op->name == "permute") continue;
      v = s.op->name == "reshape" ? materialize_for_reshape(v, ot.shape) : materialize(0, v, false);
    }
  }

  Val lower(const BoundSymbol& s) {
    const std::string& op = s.op->name;
    const TensorType& ot = t_.type(s.outputs[0]);
    ValueId out = s.outputs[0];
    settle_inputs(s, ot);
    auto in = [&](std::size_t i) { return vals_.at(s.inputs[i].value); };
    switch (s.op->category) {
      case OpCategory::Elementwise: {
        DType C = opmath(ot.dtype);
        static const std::set<std::string> cmp = {"eq", "ne", "lt", "le", "gt", "ge"};
        if (cmp.count(op)) {
          C = DType::Bool;
          for (const Operand& o : s.inputs)
            if (o.is_tensor()) C = C == DType::Bool ? t_.type(o.value).dtype : promote_types(C, t_.type(o.value).dtype);
          // A float number against integer tensors compares in the default float dtype (PyTorch's wrapped
          // numbers promote across categories): int64 `x < 2.5` is not `x < 2`.
          for (const Operand& o : s.inputs)
            if (!o.is_tensor() && o.scalar.is_float() && !is_floating(C)) C = DType::Float32;
          C = opmath(C);
        }
        // isnan / isinf test the input's own value.
        if (op == "isnan" || op == "isinf") C = opmath(t_.type(s.inputs[0].value).dtype);
        std::vector<NodeP> args;
        for (std::size_t i = 0; i < s.inputs.size(); ++i) args.push_back(operand(s.inputs[i], ot.shape, C).e);
        std::string name = op;
        std::vector<double> params;
        if (op == "gelu" && s.attrs.get_string("approximate") == "tanh") name = "gelu_tanh";
        if (op == "hardtanh") params = {s.attrs.get_float("min_val"), s.attrs.get_float("max_val"), 1, 1};
        if (op == "leaky_relu") params = {s.attrs.get_float("negative_slope")};
        if (op == "elu") params = {s.attrs.get_float("alpha"), s.attrs.get_float("scale"), s.attrs.get_float("input_scale")};
        if (op == "clamp")
          params = {s.attrs.is_none("min") ? 0.0 : s.attrs.get_float("min"), s.attrs.is_none("max") ? 0.0 : s.attrs.get_float("max"),
                    s.attrs.is_none("min") ? 0.0 : 1.0, s.attrs.is_none("max") ? 0.0 : 1.0};
        if (op == "to_dtype") name = "cast";
        if (op == "div" && !s.attrs.is_none("rounding_mode")) name = "div_" + s.attrs.get_string("rounding_mode");
        if (op == "pow" && !s.inputs[1].is_tensor()) {  // as ATen: small exponents without pow()
          double e = s.inputs[1].scalar.to_double();
          if (e == 1) return {ot.shape, make_op("cast", ot.dtype, C, {args[0]})};
          if (e == 2) return {ot.shape, make_op("square", ot.dtype, C, {args[0]})};
          if (e == 0.5) return {ot.shape, make_op("sqrt", ot.dtype, C, {args[0]})};
          if (e == -1) return {ot.shape, make_op("reciprocal", ot.dtype, C, {args[0]})};
        }
        return {ot.shape, make_op(name, ot.dtype, C, args, params)};
      }
      case OpCategory::Shape: return lower_shape(s, ot, out);
      case OpCategory::Reduction: {
        Val x = in(0);
        const IntList& dims = s.attrs.get_ints("dims");
        std::vector<bool> red(x.shape.size(), dims.empty());
        for (auto d : dims) red[static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(x.shape.size()) : d)] = true;
        // A half result accumulates in a float buffer (ATen's opmath) and is rounded once, where it is stored.
        const DType acc_type = opmath(ot.dtype);
        int dest = acc_type == ot.dtype ? dest_for(out, ot.dtype, ot.numel(), true) : scratch_buf(acc_type, ot.numel());
        reduce(x, red, dest, op == "amax");
        if (op == "mean") {
          std::int64_t n = 1;
          for (std::size_t i = 0; i < x.shape.size(); ++i)
            if (red[i]) n *= x.shape[i];
          update(dest, ot.numel(), "v / " + count_lit(n, acc_type));
        }
        NodeP acc = make_load(dest, acc_type, 0, contiguous(ot.shape));
        return {ot.shape, acc_type == ot.dtype ? acc : make_op("cast", ot.dtype, acc_type, {acc})};
      }
      case OpCategory::Normalization: return lower_norm(s, ot);
      case OpCategory::Pooling: return lower_pool(s, ot, out);
      default: return lower_other(s, ot, out);
    }
  }

  Val lower_shape(const BoundSymbol& s, const TensorType& ot, ValueId out) {
    const std::string& op = s.op->name;
    Val x = s.inputs[0].is_tensor() ? vals_.at(s.inputs[0].value) : Val{};
    std::size_t r = x.shape.size();
    auto identity = [&]() {
      auto A = zeros(r, ot.rank());
      return A;
    };
    if (op == "permute") {
      auto A = identity();
      const IntList& dims = s.attrs.get_ints("dims");
      for (std::size_t j = 0; j < dims.size(); ++j) A[dims[j]][j] = 1;
      return affine(x, ot.shape, A, std::vector<std::int64_t>(r, 0));
    }
    if (op == "expand") return broadcast_to(x, ot.shape);
    if (op == "flip") {  // index i of a flipped dim reads n - 1 - i: a negative stride
      auto A = identity();
      std::vector<std::int64_t> c(r, 0);
      for (std::size_t i = 0; i < r; ++i) A[i][i] = 1;
      for (std::int64_t d : s.attrs.get_ints("dims")) {
        const auto k = static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(r) : d);
        if (x.shape[k] <= 1) continue;
        A[k][k] = -1;
        c[k] = x.shape[k] - 1;
      }
      return affine(x, ot.shape, A, c);
    }
    if (op == "slice") {
      auto A = identity();
      std::vector<std::int64_t> c(r, 0);
      auto d = s.attrs.get_int("dim");
      for (std::size_t i = 0; i < r; ++i) A[i][i] = 1;
      A[d][d] = s.attrs.get_int("step");
      c[d] = s.attrs.get_int("start");
      return affine(x, ot.shape, A, c);
    }
    if (op == "select") {
      auto A = identity();
      std::vector<std::int64_t> c(r, 0);
      auto d = static_cast<std::size_t>(s.attrs.get_int("dim"));
      for (std::size_t i = 0; i < r; ++i)
        if (i != d) A[i][i < d ? i : i - 1] = 1;
      c[d] = s.attrs.get_int("index");
      return affine(x, ot.shape, A, c);
    }
    if (op == "reshape") {
      for (int attempt = 0; attempt < 2; ++attempt) {
        bool ok = true;
        std::map<const Node*, NodeP> memo;
        NodeP e = map_loads(x.e, [&](Node& l) {
          std::vector<std::int64_t> ns;
          ok = ok && view_strides(x.shape, l.strides, ot.shape, ns);
          l.strides = ns;
        }, memo);
        if (ok) return {ot.shape, e};
        x = materialize_for_reshape(x, ot.shape);
      }
      internal_error("cpp codegen: reshape of a contiguous value failed");
    }
    if (op == "cat") {  // lazy: split into its pieces where it (or what is built on it) is stored
      auto dim = static_cast<std::size_t>(s.attrs.get_int("dim") < 0 ? s.attrs.get_int("dim") + static_cast<std::int64_t>(ot.rank())
                                                                     : s.attrs.get_int("dim"));
      std::vector<NodeP> pieces;
      std::vector<double> params = {static_cast<double>(dim)};
      for (const Operand& o : s.inputs) {
        const Val& v = vals_.at(o.value);
        // A piece of another dtype converts to the result's, as ATen's cat does.
        pieces.push_back(v.e->dtype == ot.dtype ? v.e : make_op("cast", ot.dtype, opmath(ot.dtype), {v.e}));
        params.push_back(static_cast<double>(v.shape[dim]));
      }
      if (pieces.size() == 1) return {ot.shape, pieces[0]};
      return {ot.shape, make_op("cat", ot.dtype, opmath(ot.dtype), pieces, params)};
    }
    internal_error("cpp codegen: cannot lower ", op);
  }

  Val lower_norm(const BoundSymbol& s, const TensorType& ot) {
    const std::string& op = s.op->name;
    const DType d = opmath(ot.dtype);  // statistics and arithmetic; a half result is rounded once, at the end
    auto result = [&](const Shape& shape, NodeP y) { return Val{shape, ot.dtype == d ? y : make_op("cast", ot.dtype, d, {y})}; };
    Val x = vals_.at(s.inputs[0].value);
    if (opmath(x.e->dtype) != d) x = {x.shape, make_op("cast", d, d, {x.e})};
    std::size_t r = x.shape.size();
    auto param = [&](std::size_t i, const std::vector<std::size_t>& dims) {
      return place(vals_.at(s.inputs[i].value), x.shape, dims).e;
    };
    if (op == "batch_norm") {
      // As ATen's inference kernel: alpha = weight / sqrt(var + eps), beta = bias - mean * alpha; y = x * alpha + beta.
      std::int64_t c = x.shape[1];
      Shape cs = {c};
      auto vec = [&](std::size_t i) { return s.inputs[i].is_tensor() ? vals_.at(s.inputs[i].value).e : NodeP(); };
      NodeP invstd = make_op("div", d, d, {make_const(1, d), make_op("sqrt", d, d, {make_op("add", d, d, {vec(4), make_const(s.attrs.get_float("eps"), d)})})});
      NodeP alpha = vec(1) ? make_op("mul", d, d, {invstd, vec(1)}) : invstd;
      NodeP mean_alpha = make_op("mul", d, d, {vec(3), alpha});
      NodeP beta = vec(2) ? make_op("sub", d, d, {vec(2), mean_alpha}) : make_op("neg", d, d, {mean_alpha});
      Val a = materialize(0, {cs, alpha}, false), b = materialize(0, {cs, beta}, false);
      NodeP al = place(a, x.shape, {1}).e, be = place(b, x.shape, {1}).e;
      return result(x.shape, make_op("add", d, d, {make_op("mul", d, d, {x.e, al}), be}));
    }
    x = loaded(x);
    std::vector<bool> red(r, false);
    Shape stat_shape = x.shape;
    if (op == "layer_norm") {
      std::size_t m = s.attrs.get_ints("normalized_shape").size();
      std::int64_t count = 1;
      for (std::size_t i = r - m; i < r; ++i) red[i] = true, count *= x.shape[i], stat_shape[i] = 1;
      int mean = scratch_buf(d, numel(stat_shape)), rstd = scratch_buf(d, numel(stat_shape));
      reduce(x, red, mean, false);
      update(mean, numel(stat_shape), "v / " + count_lit(count, d));
      NodeP ml = stat_leaf(mean, d, x.shape, red);
      NodeP centered = make_op("sub", d, d, {x.e, ml});
      reduce({x.shape, make_op("square", d, d, {centered})}, red, rstd, false);
      update(rstd, numel(stat_shape), lit(1, d) + " / std::sqrt(v / " + count_lit(count, d) + " + " +
                                          lit(s.attrs.get_float("eps"), d) + ")");
      NodeP y = make_op("mul", d, d, {centered, stat_leaf(rstd, d, x.shape, red)});
      std::vector<std::size_t> dims;
      for (std::size_t i = r - m; i < r; ++i) dims.push_back(i);
      if (s.inputs[1].is_tensor()) y = make_op("mul", d, d, {y, param(1, dims)});
      if (s.inputs[2].is_tensor()) y = make_op("add", d, d, {y, param(2, dims)});
      return result(x.shape, y);
    }
    // softmax / log_softmax: max and sum(exp(x - max)) per row, then an elementwise tree.
    auto dim = static_cast<std::size_t>(s.attrs.get_int("dim") < 0 ? s.attrs.get_int("dim") + static_cast<std::int64_t>(r)
                                                                  : s.attrs.get_int("dim"));
    if (r == 0) {
      NodeP y = op == "softmax" ? make_op("div", d, d, {make_op("exp", d, d, {make_op("sub", d, d, {x.e, x.e})}), make_const(1, d)})
                                : make_op("sub", d, d, {x.e, x.e});
      return result(x.shape, y);
    }
    red[dim] = true;
    stat_shape[dim] = 1;
    int mx = scratch_buf(d, numel(stat_shape)), sum = scratch_buf(d, numel(stat_shape));
    reduce(x, red, mx, true);
    NodeP shifted = make_op("sub", d, d, {x.e, stat_leaf(mx, d, x.shape, red)});
    NodeP ex = make_op("exp", d, d, {shifted});
    reduce({x.shape, ex}, red, sum, false);
    NodeP sl = stat_leaf(sum, d, x.shape, red);
    if (op == "softmax") {
      update(sum, numel(stat_shape), lit(1, d) + " / v");
      return result(x.shape, make_op("mul", d, d, {ex, sl}));
    }
    update(sum, numel(stat_shape), "std::log(v)");
    return result(x.shape, make_op("sub", d, d, {shifted, sl}));
  }

  // A pooling attribute as two values (one value applies to both dims; absent or empty: `dflt`).
  static IntList pool_pair(const BoundSymbol& s, const char* name, const IntList& dflt) {
    IntList v = s.attrs.has(name) ? s.attrs.get_ints(name) : dflt;
    if (v.empty()) v = dflt;
    if (v.size() == 1) v.push_back(v[0]);
    return v;
  }

  // Window code shared by the NCHW and NHWC pooling bodies (output pixel (oh, ow) of an H x W plane).
  // hs, ws_: the window's top-left corner, padding included.
  static void window_start(const IntList& st, const IntList& pd, Lines& body) {
    body.push_back("const int64_t hs = oh * " + std::to_string(st[0]) + " - " + std::to_string(pd[0]) + ";");
    body.push_back("const int64_t ws_ = ow * " + std::to_string(st[1]) + " - " + std::to_string(pd[1]) + ";");
  }
  // Max pooling: opens the loops over the window's (dilated) positions inside the plane, leaving (h, w) in
  // scope; the caller adds the combining statement and two closing braces.
  static void max_window_open(const IntList& k, const IntList& dl, std::int64_t H, std::int64_t W, Lines& body) {
    body.push_back("for (int64_t kh = 0; kh < " + std::to_string(k[0]) + "; ++kh) {");
    body.push_back("  const int64_t h = hs + kh * " + std::to_string(dl[0]) + ";");
    body.push_back("  if (h < 0 || h >= " + std::to_string(H) + ") continue;");
    body.push_back("  for (int64_t kw = 0; kw < " + std::to_string(k[1]) + "; ++kw) {");
    body.push_back("    const int64_t w = ws_ + kw * " + std::to_string(dl[1]) + ";");
    body.push_back("    if (w < 0 || w >= " + std::to_string(W) + ") continue;");
  }
  // Average pooling: clips the window to [h0, he) x [w0, we) inside the plane; returns ATen's divisor
  // (divisor_override, else the padded window size with count_include_pad, else the clipped one).
  static std::string avg_window(const BoundSymbol& s, const IntList& k, const IntList& pd, std::int64_t H,
                                std::int64_t W, Lines& body) {
    body.push_back("int64_t he = std::min<int64_t>(hs + " + std::to_string(k[0]) + ", " + std::to_string(H + pd[0]) +
                   "), we = std::min<int64_t>(ws_ + " + std::to_string(k[1]) + ", " + std::to_string(W + pd[1]) + ");");
    body.push_back("const int64_t pool = (he - hs) * (we - ws_);");
    body.push_back("const int64_t h0 = std::max<int64_t>(hs, 0), w0 = std::max<int64_t>(ws_, 0);");
    body.push_back("he = std::min<int64_t>(he, " + std::to_string(H) + "); we = std::min<int64_t>(we, " + std::to_string(W) + ");");
    if (!s.attrs.is_none("divisor_override")) return std::to_string(s.attrs.get_int("divisor_override"));
    return s.attrs.get_bool("count_include_pad") ? "pool" : "(he - h0) * (we - w0)";
  }

  Val lower_pool_nhwc(const BoundSymbol& s, const TensorType& ot, ValueId out) {
    const DType d = ot.dtype;
    const Val x = vals_.at(s.inputs[0].value);
    const int dest = dest_for(out, d, ot.numel(), true);
    if (ot.numel() == 0) return {ot.shape, make_load(dest, d, 0, contiguous(ot.shape))};
    if (!is_cat(*x.e)) {
      pool_nhwc(s, x, dest, 0, ot);
    } else {  // a cat of channels (settle_inputs): each piece pooled into its channels of the output
      THUNDERC_CHECK(static_cast<std::size_t>(x.e->params[0]) == 3, "loop codegen bug: pooling a cat along dim ",
                     x.e->params[0]);
      std::int64_t at = 0;
      for (std::size_t k = 0; k < x.e->args.size(); ++k) {
        Shape piece = x.shape;
        piece[3] = static_cast<std::int64_t>(x.e->params[k + 1]);
        if (piece[3] > 0) pool_nhwc(s, {piece, x.e->args[k]}, dest, at, ot);
        at += piece[3];
      }
    }
    return {ot.shape, make_load(dest, d, 0, contiguous(ot.shape))};
  }

  // The pooling `s` of x (NHWC, no lazy cat) into channels [c0, c0 + C) of dest, which holds `ot`.
  void pool_nhwc(const BoundSymbol& s, Val x, int dest, std::int64_t c0, const TensorType& ot) {
    const std::string& op = s.op->name;
    const DType d = ot.dtype;
    if (!(x.e->kind == Node::Load && x.e->strides == contiguous(x.shape))) x = materialize(0, x, false);
    const std::int64_t H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = ot.shape[1], OW = ot.shape[2];
    auto pair = [&](const char* n, const IntList& dflt) { return pool_pair(s, n, dflt); };
    const std::string T = ctype(d), Cs = std::to_string(C), Ws = std::to_string(W);
    PoolLoopsNhwc loops{x.shape[0], H, W, C, OH, OW, numel(x.shape), T, "b" + std::to_string(x.e->buf),
                        "b" + std::to_string(dest) + (c0 ? " + " + std::to_string(c0) : ""), x.e->offset, {}, ot.shape[3]};
    Lines& body = loops.body;
    const IntList k = pair("kernel_size", {}), st = pair("stride", k), pd = pair("padding", {0, 0});
    const std::string lanes = "for (int64_t c = 0; c < " + Cs + "; ++c) ";
    window_start(st, pd, body);
    if (op == "max_pool2d_nhwc") {
      body.push_back(lanes + "o[c] = " + lit(-INFINITY, d) + ";");
      max_window_open(k, pair("dilation", {1, 1}), H, W, body);
      body.push_back("    const " + T + "* __restrict v = in + (h * " + Ws + " + w) * " + Cs + ";");
      body.push_back("#pragma omp simd");
      // NaN wins, as in the NCHW loop: once o[c] is NaN nothing replaces it.
      body.push_back("    " + lanes + "o[c] = (v[c] > o[c] || v[c] != v[c]) ? v[c] : o[c];");
      body.push_back("  }");
      body.push_back("}");
    } else {
      THUNDERC_CHECK(op == "avg_pool2d_nhwc", "loop codegen: no channels-last lowering for ", op);
      const std::string div = avg_window(s, k, pd, H, W, body);
      body.push_back(lanes + "o[c] = " + lit(0, d) + ";");
      body.push_back("for (int64_t h = h0; h < he; ++h)");
      body.push_back("  for (int64_t w = w0; w < we; ++w) {");
      body.push_back("    const " + T + "* __restrict v = in + (h * " + Ws + " + w) * " + Cs + ";");
      body.push_back("#pragma omp simd");
      body.push_back("    " + lanes + "o[c] += v[c];");
      body.push_back("  }");
      body.push_back("const " + T + " divisor = static_cast<" + T + ">(" + div + ");");
      body.push_back("#pragma omp simd");
      body.push_back(lanes + "o[c] /= divisor;");
    }
    pool_loops_nhwc(loops);
  }

  Val lower_pool(const BoundSymbol& s, const TensorType& ot, ValueId out) {
    const std::string& op = s.op->name;
    if (op == "max_pool2d_nhwc" || op == "avg_pool2d_nhwc") return lower_pool_nhwc(s, ot, out);
    DType d = ot.dtype;
    Val x = vals_.at(s.inputs[0].value);
    if (!(x.e->kind == Node::Load && x.e->strides == contiguous(x.shape))) x = materialize(0, x, false);
    std::size_t r = x.shape.size();
    std::int64_t H = x.shape[r - 2], W = x.shape[r - 1], OH = ot.shape[r - 2], OW = ot.shape[r - 1];
    std::int64_t planes = numel(x.shape) / std::max<std::int64_t>(H * W, 1);
    if (H * W == 0) planes = numel(Shape(x.shape.begin(), x.shape.end() - 2));
    int dest = dest_for(out, d, ot.numel(), true);
    auto pair = [&](const char* n, const IntList& dflt) { return pool_pair(s, n, dflt); };
    // T: the element type in memory (the loops' pointers); A: the type sums and maxima are computed in.
    std::string T = ctype(d), A = atype(d), X = "b" + std::to_string(x.e->buf), D = "b" + std::to_string(dest);
    if (ot.numel() == 0) return {ot.shape, make_load(dest, d, 0, contiguous(ot.shape))};
    PoolLoops loops{planes, H, W, OH, OW, numel(x.shape), T, X, D, x.e->offset, {}};
    Lines& body = loops.body;
    std::string Hs = std::to_string(H), Ws = std::to_string(W);
    if (op == "adaptive_avg_pool2d") {
      body.push_back("const int64_t h0 = (oh * " + Hs + ") / " + std::to_string(OH) + ", h1 = ((oh + 1) * " + Hs + " + " + std::to_string(OH - 1) + ") / " + std::to_string(OH) + ";");
      body.push_back("const int64_t w0 = (ow * " + Ws + ") / " + std::to_string(OW) + ", w1 = ((ow + 1) * " + Ws + " + " + std::to_string(OW - 1) + ") / " + std::to_string(OW) + ";");
      body.push_back(A + " acc = " + lit(0, d) + ";");
      body.push_back("for (int64_t h = h0; h < h1; ++h)");
      body.push_back("  for (int64_t w = w0; w < w1; ++w) acc += in[h * " + Ws + " + w];");
      body.push_back("o[oh * " + std::to_string(OW) + " + ow] = acc / static_cast<" + A + ">((h1 - h0) * (w1 - w0));");
    } else {
      IntList k = pair("kernel_size", {}), st = pair("stride", k), pd = pair("padding", {0, 0});
      window_start(st, pd, body);
      if (op == "max_pool2d") {
        body.push_back(A + " m = " + lit(-INFINITY, d) + ";");
        max_window_open(k, pair("dilation", {1, 1}), H, W, body);
        body.push_back("    const " + A + " v = in[h * " + Ws + " + w];");
        body.push_back("    if (v > m || std::isnan(v)) m = v;");
        body.push_back("  }");
        body.push_back("}");
        body.push_back("o[oh * " + std::to_string(OW) + " + ow] = m;");
      } else {
        const std::string div = avg_window(s, k, pd, H, W, body);
        body.push_back(A + " acc = " + lit(0, d) + ";");
        body.push_back("for (int64_t h = h0; h < he; ++h)");
        body.push_back("  for (int64_t w = w0; w < we; ++w) acc += in[h * " + Ws + " + w];");
        body.push_back("o[oh * " + std::to_string(OW) + " + ow] = acc / static_cast<" + A + ">(" + div + ");");
      }
    }
    pool_loops(loops);
    return {ot.shape, make_load(dest, d, 0, contiguous(ot.shape))};
  }

  const Trace& t_;
  const BoundSymbol& region_;
  const EmitContext* ctx_;
  std::map<ValueId, Val> vals_;
  std::map<ValueId, int> uses_;
  std::set<ValueId> outputs_, written_;
  std::map<ValueId, int> out_bufs_;
  std::vector<DType> buf_types_;
  std::vector<bool> buf_writable_;
  Lines bufs_, lines_;
  std::size_t scratch_ = 0;
  int indent_ = 2;
};

// A lone symbol is lowered as a region of one.
inline BoundSymbol as_region(const BoundSymbol& sym) {
  if (sym.is_region()) return sym;
  BoundSymbol r;
  r.op = sym.op;
  r.executor = sym.executor;
  std::set<ValueId> seen;
  for (const Operand& in : sym.inputs)
    if (in.is_tensor() && seen.insert(in.value).second) r.inputs.push_back(in);
  r.outputs = sym.outputs;
  r.subsymbols = {sym};
  return r;
}

}  // namespace thunderc::loops
