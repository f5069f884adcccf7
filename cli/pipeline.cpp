#include "cli/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core/transforms/decompose.h"

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

}  // namespace

ProgressLine::ProgressLine(bool enabled) : active_(enabled && isatty(STDERR_FILENO)) {}
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
  return s.spec.empty() ? std::string("(no inputs)") : specialization_str(s.spec);
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
  result.executors = resolve_executors(options.executors, options.device.kind, options.standalone);
  if (result.executors.executors.empty()) {
    std::string why;
    for (const std::string& n : result.executors.notes) why += "\n  note: " + n;
    user_error("no executor can run on ", options.device.str(),
               options.standalone ? " (--standalone leaves no executor)" : "", why);
  }
  PassPlan plan = plan_passes(options.transforms ? *options.transforms : default_transforms());
  result.transforms = plan.names();
  TransformContext context{options.device, result.executors.executors, options.decompose_ops};
  if (!options.decompose_ops.empty()) {
    bool runs = false;
    for (const std::string& n : result.transforms) runs = runs || n == "decompose";
    if (!runs) user_error("--decompose needs the decompose transform, which --transforms leaves out");
    std::vector<std::string> known = decomposable_ops();
    for (const std::string& op : options.decompose_ops)
      if (std::find(known.begin(), known.end(), op) == known.end())
        user_error("--decompose: no rule for '", op, "'; decompose has rules for ", join(known, ", "));
  }

  ProgressLine progress(options.progress);
  progress.show("thunderc: loading " + options.model_path + " ...");
  auto start = std::chrono::steady_clock::now();
  result.model = std::make_unique<TorchScriptModel>(TorchScriptModel::load(options.model_path));
  add_timing(result.timings, "load", ms_since(start), PassTiming::kNoSymbols);
  const TorchScriptModel& model = *result.model;

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

  for (std::size_t i = 0; i < specs.size(); ++i) {
    SpecializedTrace s{specs[i], {}, Trace{}};
    // With several specializations, messages say which one failed.
    const std::string prefix = specs.size() > 1 ? "specialization " + std::to_string(i + 1) + " (" +
                                                      specialization_label(s) + "): "
                                                : "";
    const std::string where = specs.size() > 1 ? "[" + std::to_string(i + 1) + "/" + std::to_string(specs.size()) +
                                                     " " + specialization_label(s) + "] "
                                               : "";
    try {
      s.input_types = model.resolve_shapes(s.spec, options.device);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    progress.show("thunderc: " + where + "importing ...");
    start = std::chrono::steady_clock::now();
    try {
      s.trace = model.import(s.input_types, &s.sharp_edges, options.inplace_alias_updates);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what() + "\nexecutors asked: " + result.executors.names_str());
    }
    progress.clear();
    apply_sharp_edge_mode(s.sharp_edges, options.sharp_edges,
                          options.model_path + (specs.size() > 1 ? " (" + specialization_label(s) + ")" : ""), std::cerr);
    double import_ms = ms_since(start);
    const std::string importer = s.trace.constructed_by.empty() ? "torchscript-import" : s.trace.constructed_by;
    verify_trace(s.trace, importer);
    add_timing(result.timings, importer, import_ms, s.trace.symbols().size());
    char took[32];
    std::snprintf(took, sizeof took, "%.0f", import_ms);
    s.trace.constructed_by = importer + " (took " + took + " ms)";

    std::unique_ptr<TraceDumper> dumper;
    if (!options.dump_traces_dir.empty()) {
      std::filesystem::path dir(options.dump_traces_dir);
      if (specs.size() > 1) dir /= "specialization-" + std::to_string(i + 1);
      dumper = std::make_unique<TraceDumper>(dir.string());
      dumper->dump(importer, s.trace);
    }
    if (options.verbose) {
      progress.clear();
      std::cerr << "thunderc: " << where << importer << ": " << s.trace.symbols().size() << " symbols, "
                << s.trace.constants().size() << " constants (" << took << " ms)\n";
    }
    CliObserver observer(progress, dumper.get(), options.verbose, where, result.timings, s.trace.symbols().size());
    try {
      s.trace = run_passes(std::move(s.trace), plan, context, result.executors, &observer);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    result.specializations.push_back(std::move(s));
  }
  return result;
}

}  // namespace thunderc
