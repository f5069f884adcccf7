#include "core/ir/symbolic.h"

#include <algorithm>

#include "core/ir/attr_codec.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"

namespace thunderc {

bool Affine::is_const() const {
  return std::all_of(a.begin(), a.end(), [](std::int64_t x) { return x == 0; });
}

std::int64_t Affine::eval(const std::vector<std::int64_t>& values) const {
  std::int64_t v = c;
  for (std::size_t s = 0; s < a.size(); ++s) v += a[s] * values.at(s);
  return v;
}

std::string Affine::c_expr(const std::vector<std::string>& vars) const {
  if (is_const()) return std::to_string(c) + "LL";
  std::string e = "(" + std::to_string(c) + "LL";
  for (std::size_t s = 0; s < a.size(); ++s)
    if (a[s] != 0) e += " + " + std::to_string(a[s]) + "LL * " + vars.at(s);
  return e + ")";
}

Affine SymbolicTrace::dim(const Trace& trace, ValueId v, std::size_t d) const {
  auto it = shapes.find(v);
  if (it != shapes.end()) return it->second.at(d);
  Affine f;
  f.c = trace.type(v).shape.at(d);
  return f;
}

std::vector<std::vector<std::int64_t>> symbolic_bindings(const std::vector<SymbolRange>& symbols) {
  std::vector<std::vector<std::int64_t>> out;
  auto add = [&](std::vector<std::int64_t> b) {
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(std::move(b));
  };
  std::vector<std::int64_t> base;
  for (const SymbolRange& s : symbols) base.push_back(s.lo);
  add(base);
  for (std::size_t s = 0; s < symbols.size(); ++s) {
    std::vector<std::int64_t> b = base;
    b[s] = symbols[s].hi;
    add(b);
    b[s] = symbols[s].lo + (symbols[s].hi - symbols[s].lo + 1) / 2;
    add(b);
  }
  std::vector<std::int64_t> top;
  for (const SymbolRange& s : symbols) top.push_back(s.hi);
  add(top);
  return out;
}

std::vector<std::vector<std::int64_t>> codegen_bindings(const std::vector<SymbolRange>& symbols,
                                                        const std::vector<Affine>& dims) {
  std::vector<std::int64_t> lo;
  for (const SymbolRange& r : symbols) lo.push_back(r.lo);
  // Raising a symbol only grows the dimensions (coefficients are >= 0), so one pass per dimension, repeated
  // until nothing changes, ends; a symbol stops one below its maximum, so two values remain to solve from.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Affine& f : dims)
      while (f.eval(lo) < 2) {
        std::size_t s = 0;
        while (s < lo.size() && !(s < f.a.size() && f.a[s] > 0 && lo[s] < symbols[s].hi - 1)) ++s;
        if (s == lo.size()) break;  // cannot raise further: the code at this size decides
        ++lo[s];
        changed = true;
      }
  }
  const std::size_t per_symbol = symbols.size() <= 2 ? 4 : 3;
  std::vector<std::vector<std::int64_t>> values;
  for (std::size_t s = 0; s < symbols.size(); ++s) {
    std::vector<std::int64_t> v;
    const std::int64_t a = lo[s], b = symbols[s].hi;
    for (std::size_t i = 0; i < per_symbol; ++i) {
      std::int64_t x = a + (b - a) * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(per_symbol - 1);
      if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    }
    values.push_back(v);
  }
  std::vector<std::vector<std::int64_t>> grid = {{}};
  for (const auto& v : values) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& g : grid)
      for (std::int64_t x : v) {
        next.push_back(g);
        next.back().push_back(x);
      }
    grid = std::move(next);
  }
  return grid;
}

std::vector<Affine> symbolic_dims(const SymbolicTrace& st) {
  std::vector<Affine> out;
  for (const auto& [v, dims] : st.shapes)
    for (const Affine& f : dims)
      if (!f.is_const()) out.push_back(f);
  return out;
}

std::string affine_form(const std::vector<SymbolRange>& symbols) {
  std::string f = "c";
  for (std::size_t s = 0; s < symbols.size(); ++s)
    f += " + a" + (symbols.size() > 1 ? std::to_string(s + 1) : std::string()) + "*" + symbols[s].name;
  return f;
}

bool solve_affine(const std::vector<SymbolRange>& symbols, const std::vector<std::vector<std::int64_t>>& bindings,
                  const std::vector<std::int64_t>& vals, Affine& out, std::string& why) {
  THUNDERC_CHECK(!bindings.empty() && vals.size() == bindings.size(), "solve_affine: one value per binding");
  const auto& b0 = bindings[0];
  out.c = vals[0];
  out.a.assign(symbols.size(), 0);
  for (std::size_t s = 0; s < symbols.size(); ++s) {
    for (std::size_t k = 1; k < bindings.size(); ++k) {
      const auto& bk = bindings[k];
      bool only_s = true;
      for (std::size_t r = 0; r < bk.size(); ++r) only_s = only_s && (r == s ? bk[r] != b0[r] : bk[r] == b0[r]);
      if (!only_s) continue;
      std::int64_t dv = vals[k] - vals[0], db = bk[s] - b0[s];
      if (dv % db != 0) {
        why = "not an integer multiple of " + symbols[s].name;
        return false;
      }
      out.a[s] = dv / db;
      break;
    }
    out.c -= out.a[s] * b0[s];
  }
  for (std::size_t k = 0; k < bindings.size(); ++k)
    if (out.eval(bindings[k]) != vals[k]) {
      why = "not of the form " + affine_form(symbols);
      return false;
    }
  return true;
}

namespace {

class Generalizer {
 public:
  Generalizer(const std::vector<SymbolRange>& symbols, const std::vector<BoundTrace>& traces)
      : symbols_(symbols), traces_(traces) {
    const Trace& t = *traces_[0].trace;
    for (std::size_t i = 0; i < t.symbols().size(); ++i)
      for (ValueId o : t.symbols()[i].outputs) producer_[o] = i;
  }

  std::string binding(std::size_t k) const {
    std::string s;
    for (std::size_t i = 0; i < symbols_.size(); ++i)
      s += (i ? "," : "") + symbols_[i].name + "=" + std::to_string(traces_[k].values[i]);
    return s;
  }
  std::string names() const {
    std::string s;
    for (std::size_t i = 0; i < symbols_.size(); ++i) s += (i ? ", " : "") + symbols_[i].name;
    return s;
  }

  std::string op_label(std::size_t i) const {
    const BoundSymbol& sym = traces_[0].trace->symbols()[i];
    return "operation " + std::to_string(i + 1) + " (" + sym.op->name +
           (sym.source.empty() ? std::string() : " at " + sym.source) + ")";
  }
  std::string value_label(ValueId v) const {
    const Trace& t = *traces_[0].trace;
    const Value& val = t.value(v);
    std::string s = "'" + val.name + "'";
    if (!val.source_name.empty() && val.source_name != val.name) s += " ('" + val.source_name + "' in the model)";
    if (val.origin == ValueOrigin::Input) return "input " + s;
    if (val.origin == ValueOrigin::Constant) {
      for (std::size_t i = 0; i < t.symbols().size(); ++i)
        for (const Operand& in : t.symbols()[i].inputs)
          if (in.is_tensor() && in.value == v) return "constant " + s + " (used by " + op_label(i) + ")";
      return "constant " + s;
    }
    auto p = producer_.find(v);
    return "the result " + s + (p == producer_.end() ? std::string() : " of " + op_label(p->second));
  }

  [[noreturn]] void differs(std::size_t k, const std::string& what) const {
    user_error("--cache \"symbolic values\": the program traced at ", binding(0), " and at ", binding(k),
               " differ: ", what, ". One variant cannot serve every ", names(),
               "; compile with --cache \"constant values\" and one --shapes per size instead");
  }

  bool solve(const std::vector<std::int64_t>& vals, Affine& out, std::string& why) const {
    std::vector<std::vector<std::int64_t>> bindings;
    for (const BoundTrace& t : traces_) bindings.push_back(t.values);
    return solve_affine(symbols_, bindings, vals, out, why);
  }

  // "c + a*B" or "c + a1*B + a2*T".
  std::string form() const { return affine_form(symbols_); }

  std::string values_str(const std::vector<std::int64_t>& vals) const {
    std::string s;
    for (std::size_t k = 0; k < vals.size(); ++k) s += (k ? ", " : "") + std::to_string(vals[k]) + " at " + binding(k);
    return s;
  }

  const std::vector<SymbolRange>& symbols_;
  const std::vector<BoundTrace>& traces_;
  std::map<ValueId, std::size_t> producer_;
};

// The encoded int streams (core/ir/attr_codec.h) hold the same attributes: same tags, bools, string
// indices, dtypes and list lengths; only int values (which may be sizes) may differ.
bool same_attr_structure(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  if (a.size() != b.size()) return false;
  std::size_t i = 0;
  while (i < a.size()) {
    if (a[i] != b[i]) return false;  // tag
    switch (a[i++]) {
      case 0: case 3: break;                                            // None, float (payload in floats)
      case 1: case 4: case 6: if (i >= a.size() || a[i] != b[i]) return false; ++i; break;  // bool, str, dtype
      case 2: ++i; break;                                               // int: may vary
      case 5:                                                           // int[]: same length
        if (i >= a.size() || a[i] != b[i] || a[i] < 0) return false;
        i += 1 + static_cast<std::size_t>(a[i]);
        break;
      default: return false;
    }
  }
  return i == a.size();
}

bool same_operand(const Operand& a, const Operand& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == OperandKind::Tensor) return a.value == b.value;
  if (a.kind == OperandKind::Scalar) return a.scalar == b.scalar;
  return true;
}

// The same operation at two bindings: op, executor, operands, outputs, the attributes' structure and
// non-integer values, and for a fused region the same members, recursively. Integer attributes may vary.
// Empty when equal, else what differs: "the operands", "the attributes", "the executor", "the fused members".
std::string symbol_difference(const BoundSymbol& a, const BoundSymbol& b) {
  if (a.op != b.op || a.subsymbols.size() != b.subsymbols.size()) return "the fused members";
  if (a.executor != b.executor) return "the executor (" + a.executor + " vs " + b.executor + ")";
  bool same = a.outputs == b.outputs && a.inputs.size() == b.inputs.size();
  for (std::size_t j = 0; same && j < a.inputs.size(); ++j) same = same_operand(a.inputs[j], b.inputs[j]);
  if (!same) return "the operands";
  EncodedAttrs ea = encode_attrs(*a.op, a.attrs), eb = encode_attrs(*b.op, b.attrs);
  if (ea.floats != eb.floats || ea.strings != eb.strings || !same_attr_structure(ea.ints, eb.ints))
    return "the attributes";
  for (std::size_t j = 0; j < a.subsymbols.size(); ++j) {
    std::string d = symbol_difference(a.subsymbols[j], b.subsymbols[j]);
    if (!d.empty()) return a.is_region() ? "the fused members" : d;
  }
  return {};
}

}  // namespace

SymbolicTrace generalize_traces(const std::vector<SymbolRange>& symbols,
                                const std::vector<std::vector<int>>& input_symbols,
                                const std::vector<BoundTrace>& traces) {
  THUNDERC_CHECK(!traces.empty() && !symbols.empty(), "generalize_traces needs traces and symbols");
  Generalizer g(symbols, traces);
  SymbolicTrace st;
  st.symbols = symbols;
  st.input_symbols = input_symbols;
  st.source.assign(symbols.size(), {0, 0});
  std::vector<bool> found(symbols.size(), false);
  for (std::size_t i = 0; i < input_symbols.size(); ++i)
    for (std::size_t d = 0; d < input_symbols[i].size(); ++d) {
      int s = input_symbols[i][d];
      if (s >= 0 && !found[s]) found[s] = true, st.source[s] = {i, d};
    }
  for (std::size_t s = 0; s < symbols.size(); ++s)
    THUNDERC_CHECK(found[s], "symbol ", symbols[s].name, " appears in no input");

  const Trace& t0 = *traces[0].trace;
  for (std::size_t k = 0; k < traces.size(); ++k) {
    const std::vector<std::int64_t>& values = traces[k].values;
    bool top = true;
    for (std::size_t s = 0; s < symbols.size(); ++s) top = top && values[s] == symbols[s].hi;
    if (top) st.max_trace = k;
    if (k == 0) continue;
    const Trace& tk = *traces[k].trace;
    if (tk.symbols().size() != t0.symbols().size())
      g.differs(k, std::to_string(t0.symbols().size()) + " vs " + std::to_string(tk.symbols().size()) +
                       " operations (a branch, a loop or a rewrite depends on the sizes)");
    if (tk.num_values() != t0.num_values())
      g.differs(k, std::to_string(t0.num_values()) + " vs " + std::to_string(tk.num_values()) +
                       " values (e.g. a constant folded at one size only)");
    if (tk.inputs() != t0.inputs() || tk.outputs() != t0.outputs())
      g.differs(k, "the inputs or outputs of the program (an output may alias an input at one size only)");
    if (tk.constants() != t0.constants())
      g.differs(k, "the constants of the program (a constant is folded at one size only)");
    for (std::size_t i = 0; i < t0.symbols().size(); ++i) {
      const BoundSymbol& a = t0.symbols()[i];
      const BoundSymbol& b = tk.symbols()[i];
      if (a.op != b.op)
        g.differs(k, g.op_label(i) + " is " + b.op->name + " at the other size");
      std::string what = symbol_difference(a, b);
      if (what == "the operands")
        g.differs(k, "the operands of " + g.op_label(i) + " (e.g. a number computed from a size: " + symbol_str(t0, a) +
                         "  vs  " + symbol_str(tk, b) + ")");
      else if (!what.empty())
        g.differs(k, what + " of " + g.op_label(i) + " (" + symbol_str(t0, a) + "  vs  " + symbol_str(tk, b) + ")");
    }
    for (ValueId v = 0; v < t0.num_values(); ++v) {
      const Value& a = t0.value(v);
      const Value& b = tk.value(v);
      if (a.origin != b.origin || a.type.dtype != b.type.dtype || a.type.rank() != b.type.rank() ||
          !(a.type.device == b.type.device))
        g.differs(k, "the dtype or rank of " + g.value_label(v));
    }
    for (ValueId c : t0.constants()) {
      const Value& a = t0.value(c);
      const Value& b = tk.value(c);
      if (a.type.shape != b.type.shape || !a.data || !b.data || a.data->bytes != b.data->bytes)
        user_error("--cache \"symbolic values\": ", g.value_label(c), " of shape ", shape_str(a.type.shape), " at ",
                   g.binding(0), " is ", a.type.shape == b.type.shape ? "different" : shape_str(b.type.shape), " at ",
                   g.binding(k), ": a value computed while compiling (e.g. a mask or table sliced to a size) depends on ",
                   g.names(), ", and one variant can embed only one. Compile with --cache \"constant values\" and one "
                   "--shapes per size, or make the model compute it from its inputs");
    }
  }

  // Every dimension of every value.
  for (ValueId v = 0; v < t0.num_values(); ++v) {
    const Value& val = t0.value(v);
    if (val.origin == ValueOrigin::Constant) continue;  // identical bytes and shape, checked above
    std::vector<Affine> dims;
    bool symbolic = false;
    for (std::size_t d = 0; d < val.type.rank(); ++d) {
      std::vector<std::int64_t> vals;
      for (const BoundTrace& bt : traces) vals.push_back(bt.trace->type(v).shape[d]);
      Affine f;
      std::string why;
      if (!g.solve(vals, f, why))
        user_error("--cache \"symbolic values\": dimension ", d, " of ", g.value_label(v), " is ", g.values_str(vals),
                   ": ", why, "; a symbolic variant needs every size to be ", g.form(), " with integer coefficients");
      for (std::size_t s = 0; s < f.a.size(); ++s)
        if (f.a[s] < 0)
          user_error("--cache \"symbolic values\": dimension ", d, " of ", g.value_label(v), " shrinks as ",
                     symbols[s].name, " grows (", g.values_str(vals), "); not supported");
      symbolic = symbolic || !f.is_const();
      dims.push_back(f);
    }
    if (symbolic) st.shapes[v] = std::move(dims);
  }
  // Every integer attribute element.
  for (std::size_t i = 0; i < t0.symbols().size(); ++i) {
    std::vector<EncodedAttrs> enc;
    for (const BoundTrace& bt : traces) enc.push_back(encode_attrs(*bt.trace->symbols()[i].op, bt.trace->symbols()[i].attrs));
    std::vector<Affine> ints;
    bool symbolic = false;
    for (std::size_t e = 0; e < enc[0].ints.size(); ++e) {
      std::vector<std::int64_t> vals;
      for (const EncodedAttrs& x : enc) vals.push_back(x.ints[e]);
      Affine f;
      std::string why;
      if (!g.solve(vals, f, why))
        user_error("--cache \"symbolic values\": an integer attribute of ", g.op_label(i), " is ", g.values_str(vals),
                   ": ", why, " (", symbol_str(t0, t0.symbols()[i]), ")");
      symbolic = symbolic || !f.is_const();
      ints.push_back(f);
    }
    if (symbolic) st.attr_ints[i] = std::move(ints);
  }
  return st;
}

}  // namespace thunderc
