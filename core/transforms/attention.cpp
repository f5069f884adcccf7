#include "core/transforms/attention.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "core/ir/error.h"

namespace thunderc {

namespace {

// Producers and reader counts of one trace (a trace output counts as a reader).
class Graph {
 public:
  explicit Graph(const Trace& t) : t_(t) {
    const auto& syms = t.symbols();
    for (std::size_t i = 0; i < syms.size(); ++i) {
      for (const Operand& in : syms[i].inputs)
        if (in.is_tensor()) ++readers_[in.value];
      for (ValueId o : syms[i].outputs) producer_[o] = i;
    }
    for (ValueId v : t.outputs()) ++readers_[v];
  }

  // The index of the symbol producing `v` when the caller is its only reader (so it may be removed).
  std::optional<std::size_t> take(ValueId v) const {
    auto p = producer_.find(v);
    auto r = readers_.find(v);
    if (p == producer_.end() || r == readers_.end() || r->second != 1) return std::nullopt;
    if (t_.symbols()[p->second].outputs.size() != 1) return std::nullopt;
    return p->second;
  }
  const BoundSymbol& sym(std::size_t i) const { return t_.symbols()[i]; }

 private:
  const Trace& t_;
  std::map<ValueId, std::size_t> producer_;
  std::map<ValueId, int> readers_;
};

// The value of a scaling factor: a Python number (not bool) or a one-element float32/float64 constant.
std::optional<double> factor_value(const Trace& t, const Operand& c) {
  if (c.kind == OperandKind::Scalar) {
    if (c.scalar.is_bool()) return std::nullopt;
    return c.scalar.to_double();
  }
  if (!c.is_tensor()) return std::nullopt;
  const Value& v = t.value(c.value);
  if (v.origin != ValueOrigin::Constant || !v.data || v.type.numel() != 1) return std::nullopt;
  if (v.type.dtype == DType::Float32) {
    float f;
    std::memcpy(&f, v.data->bytes.data(), 4);
    return f;
  }
  if (v.type.dtype == DType::Float64) {
    double d;
    std::memcpy(&d, v.data->bytes.data(), 8);
    return d;
  }
  return std::nullopt;
}

// mul(x, c), mul(c, x) or div(x, c) that keeps x's type: (x, the factor it multiplies x by).
std::optional<std::pair<ValueId, double>> scaling(const Trace& t, const BoundSymbol& s) {
  bool is_div = s.op->name == "div";
  if (s.op->name != "mul" && !is_div) return std::nullopt;
  if (is_div && !s.attrs.is_none("rounding_mode")) return std::nullopt;
  for (std::size_t xi : {0u, 1u}) {
    if (is_div && xi == 1) break;  // c / x is not a scaling of x
    const Operand &x = s.inputs[xi], &c = s.inputs[1 - xi];
    if (!x.is_tensor()) continue;
    std::optional<double> f = factor_value(t, c);
    if (!f || t.type(s.outputs[0]) != t.type(x.value)) continue;
    double by = is_div ? 1.0 / *f : *f;
    if (!std::isfinite(by)) continue;
    return std::make_pair(x.value, by);
  }
  return std::nullopt;
}

bool is_neg_inf(const Operand& o) {
  return o.kind == OperandKind::Scalar && !o.scalar.is_bool() && o.scalar.to_double() == -INFINITY;
}

enum class MaskKind { None, Drop, Keep, Additive };  // Drop: masked_fill's mask; Keep: sdpa's bool mask

struct Match {
  std::vector<std::size_t> removed;  // symbols replaced by the attention (the final matmul last)
  ValueId q = 0, k = 0, v = 0;
  double scale = 1.0;
  MaskKind mask_kind = MaskKind::None;
  ValueId mask = 0;
  bool causal = false;
};

class Matcher {
 public:
  explicit Matcher(const Trace& t) : t_(t), g_(t) {}

  // The attention whose final matmul is symbol `i`, if the symbols before it compute one.
  std::optional<Match> match(std::size_t i) const {
    const BoundSymbol& mm = g_.sym(i);
    if (mm.op->name != "matmul" || !mm.inputs[0].is_tensor() || !mm.inputs[1].is_tensor()) return std::nullopt;
    Match m;
    m.v = mm.inputs[1].value;
    auto sm = g_.take(mm.inputs[0].value);
    if (!sm || !is_last_dim_softmax(g_.sym(*sm))) return std::nullopt;
    m.removed.push_back(*sm);
    ValueId x = g_.sym(*sm).inputs[0].value;
    if (!mask_stage(x, m) && !scores(x, m)) return std::nullopt;
    const TensorType &q = t_.type(m.q), &k = t_.type(m.k), &v = t_.type(m.v);
    if (!is_floating(q.dtype) || q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) return std::nullopt;
    detect_causal(m);
    // The attention must compute exactly the matmul's type (a mask broadcasting the batch, say, would not).
    Attrs attrs{{"is_causal", m.causal}, {"scale", m.scale}};
    std::vector<Operand> inputs = {Operand::tensor(m.q), Operand::tensor(m.k), Operand::tensor(m.v),
                                   m.mask_kind == MaskKind::None || m.causal ? Operand::none() : Operand::tensor(m.mask)};
    try {
      std::vector<TensorType> out = Trace::infer(t_, op("scaled_dot_product_attention"), inputs, attrs);
      if (out.size() != 1 || out[0] != t_.type(mm.outputs[0])) return std::nullopt;
    } catch (const UserError&) {
      return std::nullopt;
    }
    m.removed.push_back(i);
    return m;
  }

 private:
  bool is_last_dim_softmax(const BoundSymbol& s) const {
    if (s.op->name != "softmax" || !s.inputs[0].is_tensor()) return false;
    const TensorType& in = t_.type(s.inputs[0].value);
    std::int64_t dim = s.attrs.get_int("dim"), rank = static_cast<std::int64_t>(in.rank());
    if (dim != -1 && dim != rank - 1) return false;
    return s.attrs.is_none("dtype") || s.attrs.get_dtype("dtype") == in.dtype;
  }

  // x = masked_fill(s, M, -inf) | where(K, s, -inf) | add(s, F) | add(F, s), each keeping s's type.
  bool mask_stage(ValueId x, Match& m) const {
    auto p = g_.take(x);
    if (!p) return false;
    const BoundSymbol& s = g_.sym(*p);
    const TensorType& out = t_.type(x);
    auto is_bool_tensor = [&](const Operand& o) { return o.is_tensor() && t_.type(o.value).dtype == DType::Bool; };
    auto with = [&](ValueId scores_value, MaskKind kind, ValueId mask) {
      if (t_.type(scores_value) != out) return false;
      Match trial = m;
      trial.removed.push_back(*p);
      trial.mask_kind = kind;
      trial.mask = mask;
      if (!scores(scores_value, trial)) return false;
      m = std::move(trial);
      return true;
    };
    const std::string& name = s.op->name;
    if (name == "masked_fill" && s.inputs[0].is_tensor() && is_bool_tensor(s.inputs[1]) && is_neg_inf(s.inputs[2]))
      return with(s.inputs[0].value, MaskKind::Drop, s.inputs[1].value);
    if (name == "where" && is_bool_tensor(s.inputs[0]) && s.inputs[1].is_tensor() && is_neg_inf(s.inputs[2]))
      return with(s.inputs[1].value, MaskKind::Keep, s.inputs[0].value);
    if (name == "add" && s.inputs[0].is_tensor() && s.inputs[1].is_tensor()) {
      for (std::size_t si : {0u, 1u}) {
        ValueId sv = s.inputs[si].value, fv = s.inputs[1 - si].value;
        if (t_.type(fv).dtype == out.dtype && with(sv, MaskKind::Additive, fv)) return true;
      }
    }
    return false;
  }

  // Follows scalings up from `v` (each removed); returns the value they scale.
  ValueId peel(ValueId v, Match& m) const {
    while (auto p = g_.take(v)) {
      auto sc = scaling(t_, g_.sym(*p));
      if (!sc) break;
      m.removed.push_back(*p);
      m.scale *= sc->second;
      v = sc->first;
    }
    return v;
  }

  // s = scalings of matmul(scalings of q, permute(scalings of k) or scalings of permute(k)).
  bool scores(ValueId s, Match& m) const {
    Match trial = m;
    ValueId raw = peel(s, trial);
    auto mm = g_.take(raw);
    if (!mm || g_.sym(*mm).op->name != "matmul") return false;
    const BoundSymbol& prod = g_.sym(*mm);
    if (!prod.inputs[0].is_tensor() || !prod.inputs[1].is_tensor()) return false;
    trial.removed.push_back(*mm);
    trial.q = peel(prod.inputs[0].value, trial);
    ValueId kt = peel(prod.inputs[1].value, trial);
    auto pm = g_.take(kt);
    if (!pm || !swaps_last_two(g_.sym(*pm))) return false;
    trial.removed.push_back(*pm);
    trial.k = peel(g_.sym(*pm).inputs[0].value, trial);
    m = std::move(trial);
    return true;
  }

  bool swaps_last_two(const BoundSymbol& s) const {
    if (s.op->name != "permute" || !s.inputs[0].is_tensor()) return false;
    const IntList& dims = s.attrs.get_ints("dims");
    std::int64_t n = static_cast<std::int64_t>(dims.size());
    if (n < 2) return false;
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t want = i == n - 1 ? n - 2 : i == n - 2 ? n - 1 : i;
      if (dims[static_cast<std::size_t>(i)] != want && dims[static_cast<std::size_t>(i)] != want - n) return false;
    }
    return true;
  }

  // A constant bool mask that keeps exactly j <= i of a square [L, L] (leading dims 1) is is_causal.
  void detect_causal(Match& m) const {
    if (m.mask_kind != MaskKind::Drop && m.mask_kind != MaskKind::Keep) return;
    const Value& mv = t_.value(m.mask);
    if (mv.origin != ValueOrigin::Constant || !mv.data || mv.type.rank() < 2) return;
    const TensorType& q = t_.type(m.q);
    const TensorType& k = t_.type(m.k);
    std::int64_t L = q.shape[q.rank() - 2], S = k.shape[k.rank() - 2];
    const Shape& ms = mv.type.shape;
    if (L != S || ms[ms.size() - 2] != L || ms[ms.size() - 1] != S) return;
    for (std::size_t d = 0; d + 2 < ms.size(); ++d)
      if (ms[d] != 1) return;
    const auto& bytes = mv.data->bytes;
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t j = 0; j < S; ++j) {
        bool keep = (bytes[static_cast<std::size_t>(i * S + j)] != 0) == (m.mask_kind == MaskKind::Keep);
        if (keep != (j <= i)) return;
      }
    m.causal = true;
  }

  const Trace& t_;
  Graph g_;
};

// The bytes of a bool constant, negated.
std::shared_ptr<const ConstantData> negated(const ConstantData& d) {
  auto out = std::make_shared<ConstantData>();
  out->bytes.reserve(d.bytes.size());
  for (unsigned char b : d.bytes) out->bytes.push_back(b ? 0 : 1);
  return out;
}

}  // namespace

Trace fuse_attention(const Trace& trace) {
  const auto& syms = trace.symbols();
  for (const BoundSymbol& s : syms)
    if (s.is_region()) return trace;
  Matcher matcher(trace);
  std::map<std::size_t, Match> at_final;  // final matmul index -> its match
  std::set<std::size_t> used;             // symbols some match removes (patterns never share one)
  for (std::size_t i = 0; i < syms.size(); ++i) {
    std::optional<Match> m = matcher.match(i);
    if (!m) continue;
    bool overlaps = false;
    for (std::size_t r : m->removed) overlaps = overlaps || used.count(r);
    if (overlaps) continue;
    used.insert(m->removed.begin(), m->removed.end());
    at_final.emplace(i, std::move(*m));
  }

  Trace out = trace.clone_without_symbols();
  out.constructed_by = "attention";
  for (std::size_t i = 0; i < syms.size(); ++i) {
    auto f = at_final.find(i);
    if (f == at_final.end()) {
      if (!used.count(i)) out.append(syms[i]);
      continue;
    }
    const Match& m = f->second;
    const BoundSymbol& final_mm = syms[i];
    Operand mask = Operand::none();
    if (!m.causal) {
      switch (m.mask_kind) {
        case MaskKind::None: break;
        case MaskKind::Keep:
        case MaskKind::Additive: mask = Operand::tensor(m.mask); break;
        case MaskKind::Drop: {
          const Value& mv = trace.value(m.mask);
          if (mv.origin == ValueOrigin::Constant && mv.data)
            mask = Operand::tensor(out.add_constant(mv.name + "_keep", mv.type, negated(*mv.data)));
          else
            mask = Operand::tensor(out.emit1(op("logical_not"), {Operand::tensor(m.mask)}, {}, final_mm.source));
          break;
        }
      }
    }
    BoundSymbol s;
    s.op = &op("scaled_dot_product_attention");
    s.inputs = {Operand::tensor(m.q), Operand::tensor(m.k), Operand::tensor(m.v), mask};
    s.attrs = Attrs{{"is_causal", m.causal}, {"scale", m.scale}};
    std::vector<TensorType> types = Trace::infer(out, *s.op, s.inputs, s.attrs);
    THUNDERC_CHECK(types.size() == 1 && types[0] == trace.type(final_mm.outputs[0]),
                   "attention: the rewrite changed the result type");
    s.outputs = final_mm.outputs;  // the attention defines the matmul's value: readers stay as they are
    s.source = final_mm.source;
    out.append(std::move(s));
  }
  return out;
}

const Transform& attention_transform() {
  static const Transform t{
      "attention",
      "softmax(q @ k^T * scale (masked_fill -inf | + mask)) @ v with single-use intermediates is one "
      "scaled_dot_product_attention (a causal constant mask becomes is_causal)",
      [](const Trace& t, const TransformContext&) { return fuse_attention(t); }};
  return t;
}

}  // namespace thunderc
