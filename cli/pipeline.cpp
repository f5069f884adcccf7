#include "cli/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "cli/messages.h"
#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core/transforms/autocast.h"
#include "core/transforms/autodiff.h"
#include "core/transforms/channels_last.h"
#include "core/transforms/decompose.h"
#include "core/transforms/value_bounds.h"
#include "core/util/diagnostics.h"

namespace thunderc {

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

// "x=1x64" for every input, as an example --shapes value.
std::string example_shapes(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const std::string& n : names) parts.push_back(n + "=1x64");
  return join(parts, ",");
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void add_timing(std::vector<PassTiming>& timings, const std::string& pass, double ms, std::size_t symbols) {
  for (PassTiming& t : timings)
    if (t.pass == pass) {
      t.ms += ms, t.runs += 1, t.symbols_after = symbols;
      return;
    }
  timings.push_back({pass, ms, 1, symbols});
}

// Writes <dir>/NN-<pass>.txt for one specialization; numbering starts at 00 (the imported trace).
class TraceDumper {
 public:
  TraceDumper(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec || !std::filesystem::is_directory(dir_))
      user_error("--dump-traces: cannot create the directory ", dir_, ec ? ": " + ec.message() : "");
    // Stale dumps of an earlier run (with other passes) would mix with these ones.
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name.size() > 7 && std::isdigit(static_cast<unsigned char>(name[0])) &&
          std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-' &&
          name.compare(name.size() - 4, 4, ".txt") == 0)
        std::filesystem::remove(entry.path(), ec);
    }
  }
  void dump(const std::string& pass, const Trace& trace) {
    char num[16];
    std::snprintf(num, sizeof num, "%02zu", next_++);
    std::filesystem::path path = std::filesystem::path(dir_) / (std::string(num) + "-" + pass + ".txt");
    std::ofstream out(path);
    PrintOptions po;
    po.show_source = true;
    out << print_trace(trace, po);
    if (!out) user_error("--dump-traces: cannot write ", path.string());
  }

 private:
  std::string dir_;
  std::size_t next_ = 0;
};

// Connects the pass pipeline to the progress line, the dumps, --verbose and the timing table.
class CliObserver : public PassObserver {
 public:
  CliObserver(ProgressLine& progress, TraceDumper* dumper, bool verbose, std::string where,
              std::vector<PassTiming>& timings, std::size_t symbols_before)
      : progress_(progress), dumper_(dumper), verbose_(verbose), where_(std::move(where)), timings_(timings),
        symbols_(symbols_before) {}
  void pass_started(const std::string& pass) override { progress_.show("thunderc: " + where_ + pass + " ..."); }
  void pass_finished(const std::string& pass, const Trace& after, double ms) override {
    add_timing(timings_, pass, ms, after.symbols().size());
    if (dumper_) dumper_->dump(pass, after);
    if (verbose_) {
      progress_.clear();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f ms", ms);
      std::cerr << "thunderc: " << where_ << pass << ": " << symbols_ << " -> " << after.symbols().size()
                << " symbols, " << after.constants().size() << " constants (" << buf << ")\n";
    }
    symbols_ = after.symbols().size();
  }

 private:
  ProgressLine& progress_;
  TraceDumper* dumper_;
  bool verbose_;
  std::string where_;
  std::vector<PassTiming>& timings_;
  std::size_t symbols_;
};

// UserError naming the first tensor of `trace` (an input, constant or intermediate) above kMaxTensorBytes, or
// whose size overflows: such a model cannot be compiled, and its sizes would wrap around in generated code.
void check_tensor_sizes(const Trace& trace, const std::string& prefix) {
  for (ValueId id = 0; id < trace.num_values(); ++id) {
    const Value& v = trace.value(id);
    std::optional<std::uint64_t> bytes = checked_tensor_bytes(v.type.shape, dtype_size(v.type.dtype));
    if (!bytes || *bytes > kMaxTensorBytes)
      user_error(prefix, "tensor ", v.name, v.source_name.empty() || v.source_name == v.name ? "" : " (" + quote_text(v.source_name) + " in the model)",
                 " of type ", v.type.str(), " would take ", bytes_text(bytes), "; thunderc refuses tensors above ",
                 max_tensor_bytes_text());
  }
}

}  // namespace

void check_model_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    user_error("the model ", quote_text(path), " is a directory; give a TorchScript file (.pt)");
}

// Never with --diagnostics json: stderr then carries JSON lines only.
ProgressLine::ProgressLine(bool enabled)
    : active_(enabled && isatty(STDERR_FILENO) && diagnostic_format() == DiagnosticFormat::Text) {}
ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::show(const std::string& text) {
  if (!active_) return;
  std::string line = text.size() > 78 ? text.substr(0, 75) + "..." : text;
  std::string pad = shown_ > line.size() ? std::string(shown_ - line.size(), ' ') : "";
  std::cerr << "\r" << line << pad << "\r" << line << std::flush;
  shown_ = line.size();
}

void ProgressLine::clear() {
  if (!active_ || shown_ == 0) return;
  std::cerr << "\r" << std::string(shown_, ' ') << "\r" << std::flush;
  shown_ = 0;
}

std::string specialization_label(const SpecializedTrace& s) {
  std::string label = s.spec.empty() ? std::string("(no inputs)") : specialization_str(s.spec);
  if (s.input_bound > 0) {
    int e = 0;
    std::frexp(s.input_bound, &e);
    label += ", bounded: finite inputs with |x| <= 2^" + std::to_string(e - 1);
  }
  return label;
}

std::string pass_timing_table(const std::vector<PassTiming>& timings, const std::vector<PassTiming>& extra) {
  std::vector<PassTiming> rows = timings;
  rows.insert(rows.end(), extra.begin(), extra.end());
  double total = 0;
  std::size_t width = 5;
  for (const PassTiming& t : rows) total += t.ms, width = std::max(width, t.pass.size());
  std::string out = "thunderc: time per step (summed over specializations):\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-*s  %10s  %6s  %5s  %s\n", static_cast<int>(width), "STEP", "TIME (ms)", "%",
                "RUNS", "SYMBOLS AFTER (LAST RUN)");
  out += buf;
  for (const PassTiming& t : rows) {
    std::string symbols = t.symbols_after == PassTiming::kNoSymbols ? "-" : std::to_string(t.symbols_after);
    std::snprintf(buf, sizeof buf, "  %-*s  %10.2f  %5.1f%%  %5zu  %s\n", static_cast<int>(width), t.pass.c_str(), t.ms,
                  total > 0 ? 100.0 * t.ms / total : 0.0, t.runs, symbols.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  %-*s  %10.2f\n", static_cast<int>(width), "total", total);
  return out + buf;
}

PipelineResult run_pipeline(const PipelineOptions& options) {
  PipelineResult result;

  // Flags first, so a typo fails before a large model is loaded.
  std::vector<Specialization> specs;
  for (const std::string& text : options.shapes) specs.push_back(parse_shapes_flag(text));
  std::vector<DimRange> dims;
  for (const std::string& text : options.dims) {
    DimRange d = parse_dim_flag(text);
    for (const DimRange& other : dims)
      if (other.name == d.name) user_error("--dim ", d.name, " is given twice");
    dims.push_back(d);
  }
  std::vector<std::string> executors = options.executors;
  bool standalone = options.standalone;
  if (standalone)
    for (const Executor* always : always_executors())
      if (std::find(executors.begin(), executors.end(), always->name()) != executors.end())
        user_error("--standalone excludes the ", always->name(), " executor (a standalone .so needs no LibTorch), but "
                   "--executors lists ", always->name(), "; leave ", always->name(),
                   " out of --executors, or drop --standalone");
  bool symbolic_variant = options.symbolic;
  // --dim without --shapes bounds the model's own dynamic dimensions (a .pt2's Dims): one symbolic variant.
  const bool bound_declared = specs.empty() && !dims.empty();
  if (bound_declared) symbolic_variant = true;
  if (symbolic_variant && specs.empty()) {
    // The model's own dynamic dimensions give the symbols, within `dims` if given; checked once it is loaded.
  } else if (symbolic_variant) {
    if (specs.size() != 1)
      user_error("--cache \"symbolic values\" needs exactly one --shapes with symbolic dimensions, e.g. --shapes x=Bx64 "
                 "--dim B=1:32");
    std::vector<std::string> names = spec_symbols(specs[0]);
    if (names.empty())
      user_error("--cache \"symbolic values\": --shapes ", specialization_str(specs[0]),
                 " has no symbolic dimension; name one, e.g. --shapes x=Bx64 --dim B=1:32");
    for (const std::string& n : names)
      if (std::none_of(dims.begin(), dims.end(), [&](const DimRange& d) { return d.name == n; }))
        user_error("symbol ", n, " in --shapes needs its range: --dim ", n, "=LO:HI");
    for (const DimRange& d : dims)
      if (std::find(names.begin(), names.end(), d.name) == names.end())
        user_error("--dim ", d.name, ": no dimension in --shapes is named ", d.name);
  } else {
    for (const Specialization& spec : specs)
      if (!spec_symbols(spec).empty())
        user_error("--shapes ", specialization_str(spec), " has symbolic dimensions (", join(spec_symbols(spec), ", "),
                   "); they need --cache \"symbolic values\" and --dim NAME=LO:HI");
    if (!dims.empty())
      user_error("--dim with --shapes needs --cache \"symbolic values\" and a --shapes naming ", dims[0].name);
  }
  if (options.autograd) {
    if (symbolic_variant)
      user_error("--autograd compiles fixed shapes only for now; drop --cache \"symbolic values\" and --dim, and give "
                 "one --shapes per specialization");
  } else if (!options.requires_grad.empty()) {
    user_error("--requires-grad needs --autograd (gradients exist only in a training build)");
  }
  if (!options.optimizer.empty()) {
    if (!options.autograd)
      user_error("--optimizer needs --autograd (it updates the parameters of a training build)");
    const auto& kinds = optimizer_kinds();
    if (std::find(kinds.begin(), kinds.end(), options.optimizer) == kinds.end())
      user_error("--optimizer must be sgd or adamw, got '", options.optimizer, "'");
  }
  result.executors = resolve_executors(executors, options.device.kind, standalone);
  if (result.executors.executors.empty()) {
    std::string why;
    for (const std::string& n : result.executors.notes) why += "\n  note: " + n;
    user_error("no executor can run on ", options.device.str(),
               standalone ? " (--standalone leaves no executor)" : "", why);
  }
  PassPlan plan = plan_passes(options.transforms ? *options.transforms : default_transforms());
  result.transforms = plan.names();
  TransformContext context{options.device, result.executors.executors, options.decompose_ops, options.precision};
  if (autocast_dtype(options.precision)) {
    bool runs = false;
    for (const std::string& n : result.transforms) runs = runs || n == "autocast";
    if (!runs) user_error("--precision ", options.precision, " needs the autocast transform, which --transforms leaves out");
  }
  if (!options.decompose_ops.empty()) {
    bool runs = false;
    for (const std::string& n : result.transforms) runs = runs || n == "decompose";
    if (!runs) user_error("--decompose needs the decompose transform, which --transforms leaves out");
    std::vector<std::string> known = decomposable_ops();
    for (const std::string& op : options.decompose_ops)
      if (std::find(known.begin(), known.end(), op) == known.end())
        user_error("--decompose: no rule for '", op, "'; decompose has rules for ", join(known, ", "));
  }

  check_model_path(options.model_path);
  ProgressLine progress(options.progress);
  progress.show("thunderc: loading " + options.model_path + " ...");
  auto start = std::chrono::steady_clock::now();
  result.model = load_model(options.model_path);
  add_timing(result.timings, "load", ms_since(start), PassTiming::kNoSymbols);
  if (options.autograd) result.model->set_trace_parameters(true);
  if (options.train_mode) result.model->set_training_mode(true);
  const ModelFrontend& model = *result.model;

  if (specs.empty() && !options.autograd && (symbolic_variant || options.symbolic_if_declared)) {
    std::string why_not;
    if (auto declared = model.declared_dims(&why_not, dims)) {
      specs.push_back(declared->spec);
      dims = declared->dims;
      symbolic_variant = true;
      result.shapes_recorded = true;
    } else if (bound_declared) {
      user_error("--dim ", dims[0].name, ": ", options.model_path,
                 why_not.empty() ? std::string(" declares no dynamic dimension") : " cannot be one symbolic variant: " + why_not,
                 "; name symbols in --shapes instead, e.g. --shapes ", example_shapes(model.input_names()),
                 " --dim B=1:32 --cache \"symbolic values\"");
    } else if (symbolic_variant) {
      user_error("--cache \"symbolic values\" needs exactly one --shapes with symbolic dimensions, e.g. --shapes ",
                 example_shapes(model.input_names()), " with B for a size, and --dim B=LO:HI",
                 why_not.empty() ? std::string(" (the model declares no dynamic dimension)")
                                 : " (the model's dynamic dimensions cannot serve: " + why_not + ")");
    }
  }
  result.symbolic = symbolic_variant;
  if (specs.empty()) {
    if (auto recorded = model.recorded_shapes()) {
      specs.push_back(*recorded);
      result.shapes_recorded = true;
    } else {
      const auto& names = model.input_names();
      if (names.empty())
        specs.push_back({});  // nothing to specialize
      else
        user_error(options.model_path, " does not record its input shapes; pass --shapes for its input",
                   names.size() == 1 ? "" : "s", " ", join(names, ", "), " (e.g. --shapes ",
                   example_shapes(names), ")");
    }
  }

  // One specialization (concrete shapes) through import. `prefix` starts messages, `where` the progress
  // lines.
  auto import_one = [&](const Specialization& spec, const std::string& prefix, const std::string& where,
                        bool several) {
    SpecializedTrace s{spec, {}, Trace{}};
    try {
      s.input_types = model.resolve_shapes(s.spec, options.device);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    for (std::size_t k = 0; k < s.input_types.size(); ++k) {
      const TensorType& t = s.input_types[k];
      std::optional<std::uint64_t> bytes = checked_tensor_bytes(t.shape, dtype_size(t.dtype));
      if (!bytes || *bytes > kMaxTensorBytes)
        user_error(prefix, "input ", k < model.input_names().size() ? quote_text(model.input_names()[k]) : std::to_string(k),
                   " of type ", t.str(), " would take ", bytes_text(bytes), "; thunderc refuses tensors above ",
                   max_tensor_bytes_text());
    }
    progress.show("thunderc: " + where + "importing ...");
    start = std::chrono::steady_clock::now();
    try {
      s.trace = model.import(s.input_types, &s.sharp_edges, options.inplace_alias_updates);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what() + "\nexecutors asked: " + result.executors.names_str());
    }
    progress.clear();
    if (symbolic_variant && result.shapes_recorded)  // the model's dynamic dimensions are symbols here, not specialized
      s.sharp_edges.erase(std::remove_if(s.sharp_edges.begin(), s.sharp_edges.end(),
                                         [](const SharpEdge& e) { return e.kind == "specialized-dynamic-dim"; }),
                          s.sharp_edges.end());
    apply_sharp_edge_mode(s.sharp_edges, options.sharp_edges,
                          options.model_path + (several ? " (" + specialization_label(s) + ")" : ""), std::cerr);
    double import_ms = ms_since(start);
    const std::string importer = s.trace.constructed_by.empty() ? model.format() + "-import" : s.trace.constructed_by;
    verify_trace(s.trace, importer);
    add_timing(result.timings, importer, import_ms, s.trace.symbols().size());
    char took[32];
    std::snprintf(took, sizeof took, "%.0f", import_ms);
    s.trace.constructed_by = importer + " (took " + took + " ms)";
    if (options.verbose) {
      progress.clear();
      std::cerr << "thunderc: " << where << importer << ": " << s.trace.symbols().size() << " symbols, "
                << s.trace.constants().size() << " constants (" << took << " ms)\n";
    }
    return s;
  };
  // The passes on an imported specialization; `bounded` builds the bounded variant (its dumps go to a
  // "bounded" folder inside dump_dir).
  auto passes_one = [&](SpecializedTrace s, const std::string& prefix, const std::string& where, std::string dump_dir,
                        bool bounded, std::vector<bool> nhwc_outputs = {}) {
    std::unique_ptr<TraceDumper> dumper;
    if (!dump_dir.empty()) {  // 00-<importer>.txt, then one file per pass
      if (bounded) dump_dir = (std::filesystem::path(dump_dir) / "bounded").string();
      dumper = std::make_unique<TraceDumper>(dump_dir);
      dumper->dump(s.trace.constructed_by.substr(0, s.trace.constructed_by.find(" (took")), s.trace);
    }
    TransformContext ctx = context;
    ctx.bounded_inputs = bounded;
    ctx.nhwc_outputs = std::move(nhwc_outputs);
    CliObserver observer(progress, dumper.get(), options.verbose, bounded ? where + "[bounded] " : where, result.timings,
                         s.trace.symbols().size());
    try {
      s.trace = run_passes(std::move(s.trace), plan, ctx, result.executors, &observer);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    check_tensor_sizes(s.trace, prefix);
    return s;
  };
  // --autograd: the training forward and backward of one imported specialization, each through the passes.
  auto training_one = [&](SpecializedTrace s, const std::string& prefix, const std::string& where,
                          const std::string& dump_dir) {
    start = std::chrono::steady_clock::now();
    auto tt = std::make_shared<TrainingTraces>();
    try {
      *tt = build_training_traces(s.trace, model.parameter_names(), model.input_names(), options.requires_grad,
                                  options.train_mode ? model.buffer_names() : std::vector<std::string>{});
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    if (tt->gradients.empty())
      user_error(prefix, "--autograd: ", options.model_path, " has no trainable parameter that its forward uses, and "
                 "no --requires-grad input: there is nothing to differentiate");
    verify_trace(tt->forward, "autodiff");
    verify_trace(tt->backward, "autodiff");
    add_timing(result.timings, "autodiff", ms_since(start), tt->forward.symbols().size() + tt->backward.symbols().size());
    for (const BoundSymbol& sym : tt->forward.symbols())
      if (sym.op->name == "batch_norm") {
        progress.clear();
        std::cerr << "thunderc: note: --autograd: batch_norm normalizes with its running statistics (eval mode, "
                     "the default); --module-mode train uses the batch's and updates them (docs/training.md)\n";
        break;
      }
    auto sub = [&](const char* part) {
      return dump_dir.empty() ? std::string() : (std::filesystem::path(dump_dir) / part).string();
    };
    // The saved tensors may stay channels-last where the forward's channels-last pass computes them so (its
    // onednn convolutions and the ops between them); the backward then takes those in NHWC, and its own pass
    // runs the convolution gradients and the ops between them on them as they are (no layout change at the
    // boundary). Which ones: those whose type the forward's passes changed.
    std::vector<bool> nhwc_saved(tt->forward.outputs().size(), false);
    std::vector<TensorType> before;
    for (ValueId v : tt->forward.outputs()) before.push_back(tt->forward.type(v));
    for (std::size_t j = 0; j < tt->saved.size(); ++j) nhwc_saved.at(tt->num_outputs + j) = true;
    SpecializedTrace fwd = s;
    fwd.trace = std::move(tt->forward);
    fwd = passes_one(std::move(fwd), prefix, where + "[forward] ", sub("forward"), false, nhwc_saved);
    const std::size_t first_saved_input = tt->parameters.size();  // backward(parameters..., saved..., grads...)
    THUNDERC_CHECK(tt->backward.inputs().size() >= first_saved_input + tt->saved.size(),
                   "--autograd: the backward has ", tt->backward.inputs().size(), " inputs for ",
                   tt->parameters.size(), " parameters and ", tt->saved.size(), " saved tensors");
    std::vector<bool> nhwc_inputs(tt->backward.inputs().size(), false);
    bool any_nhwc = false;
    for (std::size_t j = 0; j < tt->saved.size(); ++j) {
      const std::size_t k = tt->num_outputs + j;
      const TensorType& now = fwd.trace.type(fwd.trace.outputs().at(k));
      if (now.shape == before[k].shape) continue;
      const Shape& b = before[k].shape;
      THUNDERC_CHECK(tt->backward.type(tt->backward.inputs().at(first_saved_input + j)) == before[k],
                     "--autograd: the backward's input for saved tensor ", j, " is not ", before[k].str());
      THUNDERC_CHECK(b.size() == 4 && (now.shape == Shape{b[0], b[2], b[3], b[1]}), "--autograd: saved tensor ", j,
                     " changed from ", before[k].str(), " to ", now.str(), " in the forward's passes");
      tt->saved[j] = now;
      nhwc_inputs.at(first_saved_input + j) = true;
      any_nhwc = true;
    }
    if (any_nhwc) tt->backward = with_nhwc_inputs(tt->backward, nhwc_inputs);
    SpecializedTrace bwd = std::move(s);
    bwd.trace = std::move(tt->backward);
    bwd = passes_one(std::move(bwd), prefix + "backward: ", where + "[backward] ", sub("backward"), false);
    tt->forward = Trace{};
    tt->backward = std::move(bwd.trace);
    fwd.training = std::move(tt);
    return fwd;
  };
  // Bounded variants only where a library could hide a NaN: oneDNN's activation post-ops, on the CPU.
  const bool try_bounded =
      !options.autograd && options.bounded_variants && options.device.kind == DeviceKind::CPU &&
      std::any_of(result.executors.executors.begin(), result.executors.executors.end(),
                  [](const Executor* e) { return e->name() == "onednn"; });

  if (symbolic_variant) {
    // Trace at several bindings of the symbols, then check they are one program with affine sizes.
    const Specialization& spec = specs[0];
    std::vector<std::string> names = spec_symbols(spec);
    std::vector<SymbolRange> ranges;
    for (const std::string& n : names)
      for (const DimRange& d : dims)
        if (d.name == n) ranges.push_back({d.name, d.lo, d.hi});
    std::vector<std::vector<int>> input_symbols;
    {
      // Input positions follow the model's inputs; resolve_shapes checks the names, so bind once first.
      std::vector<std::int64_t> lo;
      for (const SymbolRange& r : ranges) lo.push_back(r.lo);
      (void)model.resolve_shapes(bind_symbols(spec, names, lo), options.device);
      const auto& inputs = model.input_names();
      input_symbols.resize(inputs.size());
      for (std::size_t k = 0; k < spec.size(); ++k) {
        std::size_t pos = 0;
        if (!spec[k].name.empty()) {
          auto it = std::find(inputs.begin(), inputs.end(), spec[k].name);
          THUNDERC_CHECK(it != inputs.end(), "input ", spec[k].name, " resolved but not found");
          pos = static_cast<std::size_t>(it - inputs.begin());
        }
        for (std::size_t d = 0; d < spec[k].shape.size(); ++d) {
          int sym = -1;
          if (d < spec[k].symbols.size() && !spec[k].symbols[d].empty())
            sym = static_cast<int>(std::find(names.begin(), names.end(), spec[k].symbols[d]) - names.begin());
          input_symbols[pos].push_back(sym);
        }
      }
    }
    const std::vector<std::vector<std::int64_t>> first_bindings = symbolic_bindings(ranges);
    // Imports by binding, shared by the exact and the bounded variant.
    std::vector<std::pair<std::vector<std::int64_t>, SpecializedTrace>> imported;
    auto label_of = [&](const std::vector<std::int64_t>& values) {
      std::string label;
      for (std::size_t k = 0; k < names.size(); ++k) label += (k ? "," : "") + names[k] + "=" + std::to_string(values[k]);
      return label;
    };
    auto imported_at = [&](const std::vector<std::int64_t>& values) -> const SpecializedTrace& {
      for (const auto& [b, s] : imported)
        if (b == values) return s;
      const std::string label = label_of(values);
      imported.emplace_back(values, import_one(bind_symbols(spec, names, values), "at " + label + ": ",
                                               "[" + label + "] ", true));
      return imported.back().second;
    };
    // Traces at every binding, generalized into one symbolic variant.
    auto build_symbolic = [&](bool bounded) {
      std::vector<std::vector<std::int64_t>> bindings = first_bindings;
      std::vector<SpecializedTrace> traced;
      auto trace_at = [&](const std::vector<std::int64_t>& values) {
        const std::string label = label_of(values);
        std::string dump_dir;
        if (!options.dump_traces_dir.empty())
          dump_dir = (std::filesystem::path(options.dump_traces_dir) / ("symbolic-" + label)).string();
        traced.push_back(passes_one(imported_at(values), "at " + label + ": ", "[" + label + "] ", dump_dir, bounded));
      };
      auto generalize = [&] {
        std::vector<BoundTrace> bound;
        for (std::size_t k = 0; k < traced.size(); ++k) bound.push_back({bindings[k], &traced[k].trace});
        return std::make_shared<SymbolicTrace>(generalize_traces(ranges, input_symbols, bound));
      };
      for (const auto& values : bindings) trace_at(values);
      auto symbolic = generalize();
      // Native code is generalized from bindings where no symbolic size is 1 (codegen_bindings): trace
      // those not traced yet, and check them against the others too.
      const std::vector<std::vector<std::int64_t>> samples = codegen_bindings(ranges, symbolic_dims(*symbolic));
      bool added = false;
      for (const auto& b : samples)
        if (std::find(bindings.begin(), bindings.end(), b) == bindings.end()) {
          bindings.push_back(b);
          trace_at(b);
          added = true;
        }
      if (added) symbolic = generalize();
      for (const auto& b : samples) {
        std::size_t k = static_cast<std::size_t>(std::find(bindings.begin(), bindings.end(), b) - bindings.begin());
        symbolic->sample_values.push_back(b);
        symbolic->sample_traces.push_back(std::make_shared<const Trace>(traced[k].trace));
      }
      double bound = 0;
      if (bounded) {  // the bound that holds at every binding (sizes enter the bounds: sums, matmuls)
        bound = std::numeric_limits<double>::infinity();
        for (const SpecializedTrace& t : traced) bound = std::min(bound, bounded_input_limit(t.trace));
      }
      SpecializedTrace s = std::move(traced[symbolic->max_trace]);
      s.spec = spec;
      s.symbolic = std::move(symbolic);
      s.input_bound = bound;
      return s;
    };
    if (try_bounded) {
      // The bounded traces can differ between bindings (a bound that holds at the smallest sizes only): then
      // they are not one program, and the model gets the exact variant alone.
      try {
        SpecializedTrace b = build_symbolic(true);
        if (b.input_bound >= 1) result.specializations.push_back(std::move(b));
      } catch (const UserError& e) {
        if (options.verbose) std::cerr << "thunderc: no bounded variant: " << e.what() << "\n";
      }
    }
    result.specializations.push_back(build_symbolic(false));
    return result;
  }

  // A --shapes repeated (the same input types, however written) would add a variant no call can reach.
  {
    std::vector<std::vector<TensorType>> resolved;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      std::vector<TensorType> types;
      try {
        types = model.resolve_shapes(specs[i], options.device);
      } catch (const UserError& e) {
        if (specs.size() > 1) {
          SpecializedTrace label{specs[i], {}, Trace{}};
          throw UserError("specialization " + std::to_string(i + 1) + " (" + specialization_label(label) + "): " +
                          e.what());
        }
        throw;
      }
      for (std::size_t j = 0; j < resolved.size(); ++j)
        if (resolved[j] == types)
          user_error("--shapes ", quote_text(specialization_str(specs[i])), " (specialization ", i + 1,
                     ") gives the same input shapes and dtypes as specialization ", j + 1, " (",
                     quote_text(specialization_str(specs[j])), "); each --shapes makes one variant, so give each once");
      resolved.push_back(std::move(types));
    }
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    // With several specializations, messages say which one failed.
    SpecializedTrace label{specs[i], {}, Trace{}};
    const std::string prefix = specs.size() > 1 ? "specialization " + std::to_string(i + 1) + " (" +
                                                      specialization_label(label) + "): "
                                                : "";
    const std::string where = specs.size() > 1 ? "[" + std::to_string(i + 1) + "/" + std::to_string(specs.size()) +
                                                     " " + specialization_label(label) + "] "
                                               : "";
    std::string dump_dir;
    if (!options.dump_traces_dir.empty()) {
      std::filesystem::path dir(options.dump_traces_dir);
      if (specs.size() > 1) dir /= "specialization-" + std::to_string(i + 1);
      dump_dir = dir.string();
    }
    SpecializedTrace imported = import_one(specs[i], prefix, where, specs.size() > 1);
    if (options.autograd) {
      result.specializations.push_back(training_one(std::move(imported), prefix, where, dump_dir));
      continue;
    }
    if (try_bounded) {
      SpecializedTrace b = passes_one(imported, prefix, where, dump_dir, true);
      b.input_bound = bounded_input_limit(b.trace);
      if (b.input_bound >= 1) result.specializations.push_back(std::move(b));
    }
    result.specializations.push_back(passes_one(std::move(imported), prefix, where, dump_dir, false));
  }
  if (!options.optimizer.empty()) {
    // One update for the model (its parameters are the same in every specialization), through the passes.
    std::vector<TensorType> params;
    for (const TrainingTraces::Parameter& p : result.specializations.at(0).training->parameters)
      if (p.trainable) params.push_back(p.type);
    auto prog = std::make_shared<OptimizerProgram>(build_optimizer_program(options.optimizer, params));
    SpecializedTrace s;
    s.trace = std::move(prog->trace);
    s = passes_one(std::move(s), "--optimizer " + options.optimizer + ": ", "[optimizer] ",
                   options.dump_traces_dir.empty() ? std::string()
                                                   : (std::filesystem::path(options.dump_traces_dir) / "optimizer").string(),
                   false);
    check_in_place_update(s.trace);
    prog->trace = std::move(s.trace);
    result.optimizer = std::move(prog);
  }
  return result;
}

}  // namespace thunderc
