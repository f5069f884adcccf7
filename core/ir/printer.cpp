#include "core/ir/printer.h"

#include <cstdio>
#include <functional>

namespace thunderc {

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string operand_str(const Trace& trace, const Operand& operand) {
  switch (operand.kind) {
    case OperandKind::Tensor: return trace.value(operand.value).name;
    case OperandKind::Scalar: return operand.scalar.str();
    case OperandKind::None: return "None";
  }
  return "?";
}

std::string symbol_str(const Trace& trace, const BoundSymbol& sym) {
  std::string s;
  for (std::size_t i = 0; i < sym.outputs.size(); ++i) s += (i ? ", " : "") + trace.value(sym.outputs[i]).name;
  s += sym.outputs.empty() ? "" : " = ";
  if (!sym.executor.empty()) s += sym.executor + ".";
  s += sym.op->name + "(";
  bool first = true;
  for (const Operand& in : sym.inputs) {
    s += (first ? "" : ", ") + operand_str(trace, in);
    first = false;
  }
  for (const auto& [name, v] : sym.attrs.items()) {
    s += (first ? "" : ", ") + name + "=" + attr_str(v);
    first = false;
  }
  return s + ")";
}

namespace {
std::string quoted_type(const TensorType& t) { return "\"" + t.str() + "\""; }

// The source name, when the printed name does not already say it.
std::string source_note(const Value& v) {
  if (v.source_name.empty() || v.source_name == v.name) return "";
  return "  from " + quote_string(v.source_name);
}
}  // namespace

std::string print_trace(const Trace& trace, const PrintOptions& options) {
  std::string out;
  if (!trace.constructed_by.empty()) out += "# Constructed by " + trace.constructed_by + "\n";
  if (options.show_constants && !trace.constants().empty()) {
    std::size_t bytes = 0;
    for (ValueId c : trace.constants()) bytes += trace.type(c).nbytes();
    out += "# Constants: " + std::to_string(trace.constants().size()) + " tensors, " + format_bytes(bytes) + "\n";
    for (ValueId c : trace.constants()) {
      const Value& v = trace.value(c);
      out += "#   " + v.name + ": " + quoted_type(v.type) + source_note(v) + "\n";
    }
  }
  out += "def " + sanitize_identifier(trace.name) + "(";
  for (std::size_t i = 0; i < trace.inputs().size(); ++i) {
    const Value& v = trace.value(trace.inputs()[i]);
    out += (i ? ", " : "") + v.name + ": " + quoted_type(v.type);
  }
  out += "):\n";
  for (ValueId in : trace.inputs()) {
    std::string note = source_note(trace.value(in));
    if (!note.empty()) out += "  # " + trace.value(in).name + note + "\n";
  }
  // A region prints its subsymbols as indented comments below its own line (as Thunder prints fusions).
  std::function<void(const BoundSymbol&, const std::string&)> print_symbol = [&](const BoundSymbol& sym,
                                                                                 const std::string& indent) {
    if (options.show_source && !sym.source.empty()) out += indent + "# from: " + quote_string(sym.source) + "\n";
    out += indent + symbol_str(trace, sym);
    if (!sym.outputs.empty()) {
      out += "  # ";
      for (std::size_t i = 0; i < sym.outputs.size(); ++i) {
        const Value& v = trace.value(sym.outputs[i]);
        out += (i ? ", " : "") + v.name + ": " + quoted_type(v.type);
      }
    }
    out += "\n";
    for (const BoundSymbol& sub : sym.subsymbols) print_symbol(sub, indent == "  " ? "    # " : indent + "  ");
  };
  for (const BoundSymbol& sym : trace.symbols()) print_symbol(sym, "  ");
  const auto& outs = trace.outputs();
  std::string names;
  for (std::size_t i = 0; i < outs.size(); ++i) names += (i ? ", " : "") + trace.value(outs[i]).name;
  out += "  return " + (outs.size() == 1 ? names : "(" + names + ")") + "\n";
  return out;
}

}  // namespace thunderc
