#include "codegen/module_codegen.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <variant>

#include "codegen/nvfuser/nvfuser_backend.h"
#include "codegen/symbolic_code.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"

namespace thunderc {

std::string variant_entry(std::size_t i) { return "thunderc_variant_" + std::to_string(i); }

bool is_cuda_variant(const Trace& trace) {
  if (!trace.inputs().empty()) return trace.type(trace.inputs()[0]).device.kind == DeviceKind::CUDA;
  for (ValueId o : trace.outputs())
    if (trace.type(o).device.kind == DeviceKind::CUDA) return true;
  return false;
}

ModulePlan plan_module(const std::vector<ModuleVariant>& variants, const BackendSet& backends) {
  ModulePlan plan;
  struct Stored {
    TensorType type;
    const ConstantData* data;
    std::size_t offset;
  };
  std::vector<Stored> stored;
  for (const ModuleVariant& v : variants) {
    std::map<ValueId, std::size_t> offsets;
    for (ValueId c : v.trace->constants()) {
      const Value& value = v.trace->value(c);
      auto same = std::find_if(stored.begin(), stored.end(), [&](const Stored& s) {
        return s.type.dtype == value.type.dtype && s.type.shape == value.type.shape &&
               (s.data == value.data.get() || s.data->bytes == value.data->bytes);
      });
      if (same == stored.end()) {
        auto& blob = plan.weights.bytes;
        blob.resize((blob.size() + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment, 0);
        stored.push_back({value.type, value.data.get(), blob.size()});
        blob.insert(blob.end(), value.data->bytes.begin(), value.data->bytes.end());
        same = stored.end() - 1;
      }
      offsets[c] = same->offset;
    }
    plan.weights.offsets.push_back(offsets);
    auto backend_of = [&](const BoundSymbol& s) -> const Backend* {
      auto b = backends.find(s.executor);
      return b == backends.end() ? nullptr : b->second.get();
    };
    plan.memory.push_back(plan_memory(
        *v.trace, offsets,
        [&](const Trace& t, const BoundSymbol& s) -> std::size_t {
          const Backend* b = backend_of(s);
          return b ? b->scratch_bytes(t, s) : 0;
        },
        [&](const Trace& t, const BoundSymbol& s) -> std::optional<ValueId> {
          const Backend* b = backend_of(s);
          return b ? b->output_over_input(t, s) : std::nullopt;
        }));
  }
  plan.weights.count = stored.size();
  return plan;
}

namespace {

// Generated identifiers are collision-free by construction: each kind has its own first letter (v: a value's
// buffer, z: its shape array, s: a symbolic size), followed by the value's id (or the symbol's index) and an
// underscore, so two different values can never get the same name (values "x" and "x_shape" give
// "v3_x", "z3_x" and "v4_x_shape"); the name is only for the reader. Locals of the variant function
// (call, ws, weights, thunderc_*) and of the backends' blocks start with none of v<digit>, z<digit>, s<digit>.
// A part of a split variant: its function's text and the executors it calls.
struct PartSource {
  std::string text;
  std::set<std::string> executors;
};

std::string var(const Trace& t, ValueId v) { return "v" + std::to_string(v) + "_" + sanitize_identifier(t.value(v).name); }
std::string shape_var(const Trace& t, ValueId v) {
  return "z" + std::to_string(v) + "_" + sanitize_identifier(t.value(v).name);
}

// Where a module's CUDA kernels are collected while its variants are emitted.
struct KernelSink {
  std::vector<CudaKernel> kernels;
  std::vector<std::size_t> variant;
  std::vector<LibraryCall> library_calls;  // ids 0, 1, ...
  std::vector<std::size_t> library_call_variant;
};

class VariantContext : public EmitContext {
 public:
  VariantContext(const Trace& t, std::string scratch, const std::vector<std::string>* int_exprs, KernelSink* sink,
                 std::size_t variant, std::size_t symbol, const Trace* names = nullptr, bool symbolic_sizes = false)
      : trace_(t), names_(names ? *names : t), scratch_(std::move(scratch)), int_exprs_(int_exprs), sink_(sink),
        variant_(variant), symbol_(symbol), symbolic_sizes_(symbolic_sizes) {}
  const Trace& trace() const override { return trace_; }
  std::string buffer(ValueId v) const override { return var(names_, v); }
  bool symbolic_sizes() const override { return symbolic_sizes_; }
  std::string on_failure() const override { return "return 1;"; }
  std::string scratch() const override { return scratch_; }
  const std::vector<std::string>* int_attr_exprs() const override { return int_exprs_; }
  std::string kernel_name(const std::string& base) const override {
    return "tc_v" + std::to_string(variant_) + "_s" + std::to_string(symbol_) + "_" + sanitize_identifier(base);
  }
  std::size_t add_kernel(CudaKernel kernel) const override {
    for (const CudaKernel& k : sink_->kernels)
      THUNDERC_CHECK(k.name != kernel.name, "two CUDA kernels are named ", kernel.name);
    sink_->kernels.push_back(std::move(kernel));
    sink_->variant.push_back(variant_);
    return sink_->kernels.size() - 1;
  }
  std::uint32_t add_library_call(LibraryCall call) const override {
    call.id = static_cast<std::uint32_t>(sink_->library_calls.size());
    sink_->library_calls.push_back(call);
    sink_->library_call_variant.push_back(variant_);
    return call.id;
  }

 private:
  const Trace& trace_;
  const Trace& names_;  // whose value names the buffer variables take (a symbolic variant's max trace)
  std::string scratch_;
  const std::vector<std::string>* int_exprs_;
  KernelSink* sink_;
  std::size_t variant_, symbol_;
  bool symbolic_sizes_;
};

// The C++ variable holding symbol s of a symbolic variant.
std::vector<std::string> symbol_vars(const SymbolicTrace& st) {
  std::vector<std::string> vars;
  for (const SymbolRange& r : st.symbols) vars.push_back("s" + std::to_string(vars.size()) + "_" + sanitize_identifier(r.name));
  return vars;
}

std::string shape_array(const Shape& s) {
  std::string out = "{";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]) + "LL";
  return out + "}";
}

// What every function of a variant starts with: the prologues of the backends of `executors` (thread counts),
// the workspace, symbolic sizes read from the inputs, and one buffer variable per value (in id order: stable;
// an alias after what it aliases).
// It only names memory, so repeating it in each part of a split variant changes nothing.
void emit_prologue(const ModuleVariant& variant, const VariantMemoryPlan& mem, const BackendSet& backends,
                   const std::set<std::string>& executors, const std::vector<std::string>& vars, SourceWriter& out) {
  const Trace& t = *variant.trace;
  const bool cuda = is_cuda_variant(t);
  const SymbolicTrace* sym = variant.symbolic;
  for (const std::string& e : executors) backends.at(e)->emit_variant_prologue(out);
  out.line("unsigned char* const ws = static_cast<unsigned char*>(call->workspace);");
  out.line("(void)ws;");
  if (cuda) {
    out.comment("A CUDA variant: buffers hold device pointers; kernels run on call->stream through call->device_api.");
    out.line("const unsigned char* const weights = static_cast<const unsigned char*>(call->weights);");
    out.line("(void)weights;");
  }
  if (sym) {
    for (std::size_t k = 0; k < sym->symbols.size(); ++k)
      out.line("const int64_t " + vars[k] + " = call->inputs[" + std::to_string(sym->source[k].first) + "]->shape[" +
               std::to_string(sym->source[k].second) + "];  " +
               c_comment(sym->symbols[k].name + " in [" + std::to_string(sym->symbols[k].lo) + ", " +
                         std::to_string(sym->symbols[k].hi) + "], checked by the runtime"));
  }
  // In id order, except that an alias comes after the buffer it aliases (a decomposition can give its final
  // view the replaced symbol's older id); the aliased buffer is never an alias itself.
  std::set<ValueId> declared;
  auto declare = [&](ValueId v) {
    if (!declared.insert(v).second) return;
    const auto& where = mem.buffers.at(v);
    const TensorType& type = t.type(v);
    std::string data;
    switch (where.storage) {
      case Storage::Input: data = "tensor_data(call->inputs[" + std::to_string(where.index) + "])"; break;
      case Storage::Output: data = "tensor_data(call->outputs[" + std::to_string(where.index) + "])"; break;
      case Storage::Constant:
        data = "const_cast<unsigned char*>(" + std::string(cuda ? "weights" : "thunderc_weights") + " + " +
               std::to_string(where.offset) + ")";
        break;
      case Storage::Workspace: data = "ws + " + std::to_string(where.offset); break;
      case Storage::Alias: data = var(t, where.alias_of) + ".data"; break;
    }
    std::string shape = "nullptr";
    if (type.rank() > 0 && sym && sym->shapes.count(v)) {
      std::string dims = "{";
      for (std::size_t d = 0; d < type.rank(); ++d) dims += (d ? ", " : "") + sym->dim(t, v, d).c_expr(vars);
      out.line("const int64_t " + shape_var(t, v) + "[] = " + dims + "};");
      shape = shape_var(t, v);
    } else if (type.rank() > 0) {
      out.line("static const int64_t " + shape_var(t, v) + "[] = " + shape_array(type.shape) + ";");
      shape = shape_var(t, v);
    }
    out.line("const thunderc_buffer " + var(t, v) + " = {" + data + ", " + shape + ", " + std::to_string(type.rank()) +
             ", " + std::to_string(static_cast<int>(type.dtype)) + "};");
  };
  for (const auto& [v, where] : mem.buffers) {
    if (where.storage == Storage::Alias) declare(where.alias_of);
    declare(v);
  }
}

// The code of operation `i` (its trace line as a comment, then its executor's code).
void emit_operation(std::size_t index, std::size_t i, const ModuleVariant& variant, const VariantMemoryPlan& mem,
                    const BackendSet& backends, const std::vector<std::string>& vars, KernelSink& sink,
                    SourceWriter& out) {
  const Trace& t = *variant.trace;
  const bool cuda = is_cuda_variant(t);
  const SymbolicTrace* sym = variant.symbolic;
  const BoundSymbol& s = t.symbols()[i];
  out.line();
  out.comment(symbol_str(t, s));
  if (shares_input_buffer(s) && mem.buffers.at(s.outputs[0]).storage == Storage::Alias) {
    out.comment("(shares its input's buffer)");
    return;
  }
  THUNDERC_CHECK(!s.executor.empty(), "symbol '", symbol_str(t, s), "' reached codegen unclaimed");
  auto b = backends.find(s.executor);
  THUNDERC_CHECK(b != backends.end(), "executor '", s.executor, "' has no code generation");
  auto scratch = mem.scratch.find(i);
  const std::string scratch_expr = scratch == mem.scratch.end() ? "nullptr" : "ws + " + std::to_string(scratch->second);
  std::vector<std::string> int_exprs;
  bool symbolic_ints = false;
  if (sym && s.executor != "torch") {
    // Native code: printed at each sample binding, merged into one text with sizes read at run time.
    THUNDERC_CHECK(!cuda, "symbolic CUDA variants are refused before codegen");
    THUNDERC_CHECK(!sym->sample_traces.empty(), "symbolic variant without code samples for ", s.executor);
    std::vector<CodeSample> samples;
    std::size_t max_sample = 0;
    for (std::size_t k = 0; k < sym->sample_traces.size(); ++k) {
      const Trace& tk = *sym->sample_traces[k];
      THUNDERC_CHECK(tk.symbols().size() == t.symbols().size(), "a code sample is not the variant's program");
      SourceWriter text;
      b->second->emit_symbol(VariantContext(tk, scratch_expr, nullptr, &sink, index, i, &t, true), tk.symbols()[i], text);
      samples.push_back({sym->sample_values[k], text.str()});
      bool top = true;
      for (std::size_t v = 0; v < sym->symbols.size(); ++v) top = top && sym->sample_values[k][v] == sym->symbols[v].hi;
      if (top) max_sample = k;
    }
    std::string ops = s.op->name;
    if (s.is_region()) {
      ops += " of";
      for (std::size_t m = 0; m < std::min<std::size_t>(s.subsymbols.size(), 4); ++m)
        ops += (m ? ", " : " ") + s.subsymbols[m].op->name;
      if (s.subsymbols.size() > 4) ops += ", ...";
    }
    std::string what = "operation " + std::to_string(i + 1) + " (" + ops + " on " + s.executor +
                       (s.source.empty() ? std::string() : " at " + s.source) + ")";
    out.lines(generalize_code(sym->symbols, vars, samples, max_sample, what));
    return;
  }
  if (sym) {
    if (auto a = sym->attr_ints.find(i); a != sym->attr_ints.end()) {
      for (const Affine& f : a->second) int_exprs.push_back(f.c_expr(vars));
      symbolic_ints = true;
    }
  }
  b->second->emit_symbol(VariantContext(t, scratch_expr, symbolic_ints ? &int_exprs : nullptr, &sink, index, i), s, out);
}

// --profile's name for an operation: "t26 = onednn.fusion(t24, w, b) [onednn_fusion0: conv2d_nhwc, relu]  # where
// the model wrote it" (at most three operands, a region's first four operators). Model text: it reaches the
// source only through c_string_literal.
std::string operation_label(const Trace& t, const BoundSymbol& s) {
  std::string label;
  for (std::size_t k = 0; k < s.outputs.size(); ++k) label += (k ? ", " : "") + t.value(s.outputs[k]).name;
  label += (label.empty() ? "" : " = ") + s.executor + "." + s.op->name + "(";
  std::size_t shown = 0;
  for (const Operand& o : s.inputs) {
    if (!o.is_tensor()) continue;
    if (shown == 3) {
      label += ", ...";
      break;
    }
    label += (shown++ ? ", " : "") + t.value(o.value).name;
  }
  label += ")";
  if (s.is_region()) {
    label += " [";
    if (s.attrs.has("name") && std::holds_alternative<std::string>(s.attrs.get("name")))
      label += s.attrs.get_string("name") + ": ";
    for (std::size_t m = 0; m < std::min<std::size_t>(s.subsymbols.size(), 4); ++m)
      label += (m ? ", " : "") + s.subsymbols[m].op->name;
    label += s.subsymbols.size() > 4 ? ", ...]" : "]";
  }
  if (!s.source.empty()) label += "  # " + s.source;
  return label;
}

// Outputs whose values live elsewhere (an input, a weight, another output) are copied last.
void emit_output_copies(const ModuleVariant& variant, const VariantMemoryPlan& mem, const std::vector<std::string>& vars,
                        SourceWriter& out) {
  const Trace& t = *variant.trace;
  const bool cuda = is_cuda_variant(t);
  const SymbolicTrace* sym = variant.symbolic;
  for (const auto& copy : mem.output_copies) {
    std::string bytes = std::to_string(t.type(copy.value).nbytes());
    if (sym && sym->shapes.count(copy.value)) {
      bytes = "(size_t)" + std::to_string(dtype_size(t.type(copy.value).dtype));
      for (std::size_t d = 0; d < t.type(copy.value).rank(); ++d)
        bytes += " * (size_t)" + sym->dim(t, copy.value, d).c_expr(vars);
    }
    if (cuda)
      out.line("if (call->device_api->copy(call->device_api->context, tensor_data(call->outputs[" +
               std::to_string(copy.output) + "]), " + var(t, copy.value) + ".data, " + bytes +
               ", call->error, call->error_capacity) != 0) return 1;");
    else
      out.line("std::memcpy(tensor_data(call->outputs[" + std::to_string(copy.output) + "]), " + var(t, copy.value) +
               ".data, " + bytes + ");");
  }
}

// Emits variant `index`: its trace as a comment and its exported entry into `out`. A CPU variant whose
// operations take more than `split_lines` lines is split: its operations go, in order, into part functions
// (one source file each, appended to `parts`) that the entry calls one after the other, each starting with
// the prologue. The split depends on the code alone, never on the machine, so the output stays deterministic.
// `profile_base`: with --profile, the index of this variant's first operation in thunderc_profile_counters
// (each operation's code is then timed into its pair of counters); nullopt without.
void emit_variant(std::size_t index, const ModuleVariant& variant, const VariantMemoryPlan& mem,
                  const BackendSet& backends, KernelSink& sink, std::size_t split_lines,
                  std::optional<std::size_t> profile_base, SourceWriter& out, std::vector<PartSource>& parts) {
  const Trace& t = *variant.trace;
  const bool cuda = is_cuda_variant(t);
  out.comment(std::string(100, '-'));
  out.comment("Variant " + std::to_string(index) + ": " + variant.label + "  (workspace " +
              std::to_string(mem.workspace_bytes) + " bytes)");
  if (variant.symbolic) {
    std::string ranges;
    for (const SymbolRange& r : variant.symbolic->symbols)
      ranges += (ranges.empty() ? "" : ", ") + r.name + " in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]";
    out.comment("Symbolic sizes: " + ranges + "; the trace below is shown at the maxima (the workspace holds them)");
  }
  out.comment(print_trace(t, {false, false}));
  const std::vector<std::string> vars = variant.symbolic ? symbol_vars(*variant.symbolic) : std::vector<std::string>{};
  std::set<std::string> used;
  for (const BoundSymbol& s : t.symbols()) used.insert(s.executor);
  SourceWriter tail;
  std::vector<std::string> blocks;  // one per operation
  for (std::size_t i = 0; i < t.symbols().size(); ++i) {
    SourceWriter block;
    const std::string started = "thunderc_profile_t" + std::to_string(i);
    if (profile_base) block.line("const uint64_t " + started + " = thunderc_profile_now();");
    emit_operation(index, i, variant, mem, backends, vars, sink, block);
    if (profile_base) block.line("thunderc_profile_add(" + std::to_string(*profile_base + i) + ", " + started + ");");
    blocks.push_back(block.str());
  }
  emit_output_copies(variant, mem, vars, tail);

  // Parts: consecutive operations up to split_lines lines each (one operation longer than that is a part).
  std::vector<std::pair<std::size_t, std::size_t>> ranges;  // [first, last) per part
  auto count_lines = [](const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); };
  std::size_t total = 0;
  for (const std::string& b : blocks) total += count_lines(b);
  if (!cuda && total > split_lines) {
    std::size_t first = 0, lines = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const std::size_t n = count_lines(blocks[i]);
      if (i > first && lines + n > split_lines) {
        ranges.push_back({first, i});
        first = i, lines = 0;
      }
      lines += n;
    }
    ranges.push_back({first, blocks.size()});
  }

  const std::string entry = "extern \"C\" THUNDERC_EXPORT int32_t " + variant_entry(index) + "(const thunderc_call* call) {";
  if (ranges.size() <= 1) {
    SourceWriter prologue;
    emit_prologue(variant, mem, backends, used, vars, prologue);
    out.line(entry);
    out.indent();
    out.lines(prologue.str());
    for (const std::string& b : blocks) out.lines(b);
    out.lines(tail.str());
    out.line("return 0;");
    out.dedent();
    out.line("}");
    out.line();
    return;
  }
  std::vector<std::string> names;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    const std::string name = variant_entry(index) + "_part" + std::to_string(k);
    names.push_back(name);
    SourceWriter part;
    part.comment("Variant " + std::to_string(index) + ", part " + std::to_string(k + 1) + " of " +
                 std::to_string(ranges.size()) + ": operations " + std::to_string(ranges[k].first + 1) + " to " +
                 std::to_string(ranges[k].second) + " of " + std::to_string(blocks.size()));
    part.line("extern \"C\" __attribute__((visibility(\"hidden\"))) int32_t " + name + "(const thunderc_call* call) {");
    part.indent();
    // Only this part's executors: their prologues, and (begin_source) their headers.
    std::set<std::string> executors;
    for (std::size_t i = ranges[k].first; i < ranges[k].second; ++i) executors.insert(t.symbols()[i].executor);
    SourceWriter prologue;
    emit_prologue(variant, mem, backends, executors, vars, prologue);
    part.lines(prologue.str());
    for (std::size_t i = ranges[k].first; i < ranges[k].second; ++i) part.lines(blocks[i]);
    if (k + 1 == ranges.size()) part.lines(tail.str());
    part.line("return 0;");
    part.dedent();
    part.line("}");
    parts.push_back({part.str(), executors});
  }
  out.comment("Split into " + std::to_string(names.size()) + " parts, one source file each (compiled in parallel).");
  for (const std::string& n : names) out.line("extern \"C\" int32_t " + n + "(const thunderc_call* call);");
  out.line(entry);
  out.indent();
  for (const std::string& n : names) out.line("if (const int32_t rc = " + n + "(call)) return rc;");
  out.line("return 0;");
  out.dedent();
  out.line("}");
  out.line();
}

}  // namespace

std::string part_source_name(std::size_t k) { return "model_part" + std::to_string(k) + ".cpp"; }

GeneratedModule generate_module(const std::vector<ModuleVariant>& variants, const ModulePlan& plan,
                                const BackendSet& backends, const std::string& header,
                                const std::vector<std::string>& cuda_archs, std::size_t split_lines, bool profile) {
  GeneratedModule m;
  for (const ModuleVariant& v : variants)
    THUNDERC_CHECK(!profile || (!v.is_program && !is_cuda_variant(*v.trace)),
                   "--profile reached codegen with a CUDA variant or a training program (the command line refuses both)");
  m.weights = plan.weights.bytes;
  std::set<std::string> used;
  for (const ModuleVariant& v : variants)
    for (const BoundSymbol& s : v.trace->symbols())
      if (!s.executor.empty()) used.insert(s.executor);
  for (const std::string& e : used) {
    auto b = backends.find(e);
    THUNDERC_CHECK(b != backends.end(), "executor '", e, "' has no code generation");
    LinkInputs in = b->second->link_inputs();
    auto append = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
      for (const auto& x : from)
        if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
    };
    append(m.link.includes, in.includes);
    append(m.link.include_dirs, in.include_dirs);
    append(m.link.libraries, in.libraries);
    append(m.link.rpaths, in.rpaths);
    append(m.link.compile_flags, in.compile_flags);
    append(m.link.link_flags, in.link_flags);
  }

  // What every source file starts with: includes, the embedded data's symbols, helpers, backend preludes.
  auto begin_source = [&](SourceWriter& out, const std::string& what, const std::set<std::string>& executors) {
    out.comment("Generated by thunderc " THUNDERC_VERSION ". Do not edit.");
    out.comment(header);
    if (!what.empty()) out.comment(what);
    out.line("#include <stdint.h>");
    out.line("#include <string.h>");
    out.line("#include <cstring>");
    out.line();
    out.line("#include \"thunderc/abi.h\"");
    out.line("#include \"thunderc/buffer.h\"");
    // The executors' headers in the order of m.link.includes (stable), only those of `executors`: a part
    // without onednn symbols does not parse oneDNN's C++ header.
    std::vector<std::string> includes;
    for (const std::string& e : executors) {
      auto b = backends.find(e);
      if (b == backends.end()) continue;
      for (const std::string& inc : b->second->link_inputs().includes) includes.push_back(inc);
    }
    for (const std::string& inc : m.link.includes)
      if (std::find(includes.begin(), includes.end(), inc) != includes.end()) out.line("#include " + c_string_literal(inc));
    out.line();
    out.line("#define THUNDERC_EXPORT __attribute__((visibility(\"default\")))");
    out.line("extern \"C\" const unsigned char thunderc_weights[];        // model_data.S: weights.bin");
    out.line("extern \"C\" const unsigned char thunderc_manifest_json[];  // model_data.S: manifest.json");
    out.line("extern \"C\" const unsigned char thunderc_manifest_json_end[];");
    out.line();
    out.line("static inline void* tensor_data(const DLTensor* t) {");
    out.line("  return static_cast<char*>(t->data) + t->byte_offset;");
    out.line("}");
    out.line();
    if (profile) {
      out.comment("--profile: each operation's nanoseconds and calls (a pair per operation, model.cpp holds them),");
      out.comment("added atomically so that concurrent calls count too; thunderc_profile exports them.");
      out.line("#include <time.h>");
      out.line("extern \"C\" __attribute__((visibility(\"hidden\"))) uint64_t thunderc_profile_counters[];");
      out.line("static inline uint64_t thunderc_profile_now(void) {");
      out.line("  struct timespec ts;");
      out.line("  clock_gettime(CLOCK_MONOTONIC, &ts);");
      out.line("  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);");
      out.line("}");
      out.line("static inline void thunderc_profile_add(size_t op, uint64_t started) {");
      out.line("  __atomic_fetch_add(&thunderc_profile_counters[2 * op], thunderc_profile_now() - started, __ATOMIC_RELAXED);");
      out.line("  __atomic_fetch_add(&thunderc_profile_counters[2 * op + 1], 1, __ATOMIC_RELAXED);");
      out.line("}");
      out.line();
    }
    for (const std::string& e : executors) backends.at(e)->emit_module_prelude(out);
  };

  SourceWriter out;
  begin_source(out, "", used);
  out.line("extern \"C\" THUNDERC_EXPORT uint32_t thunderc_abi_version(void) { return THUNDERC_ABI_VERSION; }");
  out.line();
  out.line("extern \"C\" THUNDERC_EXPORT const char* thunderc_embedded_manifest(size_t* len) {");
  out.line("  *len = static_cast<size_t>(thunderc_manifest_json_end - thunderc_manifest_json);");
  out.line("  return reinterpret_cast<const char*>(thunderc_manifest_json);");
  out.line("}");
  out.line();
  KernelSink sink;
  std::vector<PartSource> parts;
  std::vector<std::size_t> profile_base;  // per variant, with --profile
  std::size_t profiled = 0;
  for (const ModuleVariant& v : variants) {
    profile_base.push_back(profiled);
    profiled += v.trace->symbols().size();
  }
  for (std::size_t i = 0; i < variants.size(); ++i) {
    emit_variant(i, variants[i], plan.memory[i], backends, sink, split_lines,
                 profile ? std::optional<std::size_t>(profile_base[i]) : std::nullopt, out, parts);
    m.entries.push_back(variant_entry(i));
  }
  if (profile) {
    out.comment("--profile: the operations' labels and counters (abi.h, thunderc_profile).");
    out.line("uint64_t thunderc_profile_counters[" + std::to_string(2 * std::max<std::size_t>(profiled, 1)) + "] = {};");
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const Trace& t = *variants[i].trace;
      out.line("static const char* const thunderc_profile_labels_" + std::to_string(i) + "[] = {");
      for (const BoundSymbol& s : t.symbols()) out.line("  " + c_string_literal(operation_label(t, s)) + ",");
      if (t.symbols().empty()) out.line("  nullptr,");
      out.line("};");
    }
    out.line("extern \"C\" THUNDERC_EXPORT uint32_t thunderc_profile(uint32_t variant, const char* const** labels,");
    out.line("                                                       uint64_t** counters) {");
    out.line("  switch (variant) {");
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const std::string n = std::to_string(i);
      out.line("    case " + n + ": *labels = thunderc_profile_labels_" + n + "; *counters = thunderc_profile_counters + " +
               std::to_string(2 * profile_base[i]) + "; return " + std::to_string(variants[i].trace->symbols().size()) + ";");
    }
    out.line("  }");
    out.line("  return 0;");
    out.line("}");
    out.line();
  }
  for (std::size_t k = 0; k < parts.size(); ++k) {
    SourceWriter part;
    begin_source(part, part_source_name(k) + ": a part of model.cpp's variant code (--split-lines)", parts[k].executors);
    part.lines(parts[k].text);
    m.part_sources.push_back(part.str());
  }
  std::string images_asm;
  // Every model with a CUDA variant exports its CUDA module, even one without kernels (only views).
  bool any_cuda = std::any_of(variants.begin(), variants.end(), [](const ModuleVariant& v) { return is_cuda_variant(*v.trace); });
  if (any_cuda) {
    THUNDERC_CHECK(!cuda_archs.empty(), "CUDA kernels but no CUDA architecture to compile them for");
    m.kernels = std::move(sink.kernels);
    m.kernel_variant = std::move(sink.variant);
    m.library_calls = std::move(sink.library_calls);
    m.library_call_variant = std::move(sink.library_call_variant);
    m.cuda_source = cuda_module_source(m.kernels);
    for (const std::string& a : cuda_archs) m.cuda_images.push_back({a, false, "cuda_" + a + ".cubin", {}});
    std::string newest = "compute_" + cuda_archs.back().substr(3);
    m.cuda_images.push_back({newest, true, "cuda_" + newest + ".ptx", {}});
    out.comment("The CUDA module: its images (model_data.S) and kernel names, for the runtime to load.");
    for (std::size_t i = 0; i < m.cuda_images.size(); ++i) {
      std::string l = "thunderc_cuda_image_" + std::to_string(i);
      out.line("extern \"C\" const unsigned char " + l + "[];");
      out.line("extern \"C\" const unsigned char " + l + "_end[];");
      images_asm += "  .balign 64\n  .globl " + l + "\n  .hidden " + l + "\n" + l + ":\n  .incbin \"" +
                    m.cuda_images[i].file + "\"\n  .globl " + l + "_end\n  .hidden " + l + "_end\n" + l +
                    "_end:\n  .byte 0\n";
    }
    out.line("static const char* const thunderc_cuda_kernel_names[] = {");
    for (const CudaKernel& k : m.kernels) out.line("  " + c_string_literal(k.name) + ",");
    out.line("};");
    // The exported symbol is "thunderc_cuda_module" (abi.h); in C++ that name is taken by the struct type.
    out.line("extern \"C\" THUNDERC_EXPORT const thunderc_cuda_module* thunderc_get_cuda_module(void) __asm__(\"thunderc_cuda_module\");");
    out.line("extern \"C\" THUNDERC_EXPORT const thunderc_cuda_module* thunderc_get_cuda_module(void) {");
    out.line("  static const thunderc_cuda_image images[] = {");
    for (std::size_t i = 0; i < m.cuda_images.size(); ++i) {
      std::string l = "thunderc_cuda_image_" + std::to_string(i);
      out.line("    {" + c_string_literal(m.cuda_images[i].arch) + ", " +
               (m.cuda_images[i].ptx ? "THUNDERC_CUDA_PTX" : "THUNDERC_CUDA_CUBIN") + ", " + l + ", static_cast<size_t>(" +
               l + "_end - " + l + ")},");
    }
    out.line("  };");
    out.line("  static const thunderc_cuda_module module = {sizeof(thunderc_cuda_module), " +
             std::to_string(m.cuda_images.size()) + ", images, " + std::to_string(m.kernels.size()) +
             ", thunderc_cuda_kernel_names, thunderc_weights, " + std::to_string(plan.weights.bytes.size()) + "};");
    out.line("  return &module;");
    out.line("}");
  }
  m.cpp = out.str();

  m.assembly =
      "/* Generated by thunderc: the model's read-only data, embedded with .incbin. */\n"
      "  .section .rodata.thunderc,\"a\",@progbits\n"
      "  .balign 64\n"
      "  .globl thunderc_weights\n"
      "  .hidden thunderc_weights\n"
      "thunderc_weights:\n"
      "  .incbin \"weights.bin\"\n"
      "  .byte 0\n"
      "  .balign 64\n"
      "  .globl thunderc_manifest_json\n"
      "  .hidden thunderc_manifest_json\n"
      "thunderc_manifest_json:\n"
      "  .incbin \"manifest.json\"\n"
      "  .globl thunderc_manifest_json_end\n"
      "  .hidden thunderc_manifest_json_end\n"
      "thunderc_manifest_json_end:\n"
      "  .byte 0\n" +
      images_asm +
      "  .section .note.GNU-stack,\"\",@progbits\n";
  return m;
}

}  // namespace thunderc
