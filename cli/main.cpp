// thunderc: the command-line tool.
//
//   thunderc MODEL [-o OUT.so] [...]  compile to OUT.so + OUT.json
//   thunderc examine MODEL [...]      show what the frontend traced and which executor runs each operation
//   thunderc --list-executors         every executor, whether it is usable here and why not
//   thunderc --list-ops [--json]      the operator catalog: executors and ATen names of each operator
//
// Exit codes: 0 success; 1 a problem with the user's input (UserError, printed as "thunderc: error: ...");
// 3 a bug in thunderc (InternalError or any other exception). Command-line mistakes found by CLI11 (an unknown
// flag, a missing or malformed value) are user errors too: a short message and exit 1 (commands::parse_error_exit).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands/bench.h"
#include "cli/commands/cache.h"
#include "cli/commands/inspect.h"
#include "cli/commands/list_ops.h"
#include "cli/commands/pack.h"
#include "cli/commands/grad.h"
#include "cli/commands/run.h"
#include "cli/messages.h"
#include "cli/pipeline.h"
#include "codegen/build.h"
#include "codegen/compile.h"
#include "codegen/compile_cache.h"
#include "codegen/resources.h"
#include "core/transforms/value_bounds.h"
#include "core/util/diagnostics.h"
#include "core/util/sha256.h"
#include "cli/torch_support.h"
#include "core/executors/executor.h"
#if THUNDERC_WITH_LIBTORCH
#include "core/frontend/torchscript.h"
#endif
#include "core/ir/error.h"
#include "codegen/nvfuser/nvrtc.h"
#include "core/ir/dot.h"
#include "core/ir/printer.h"

namespace thunderc {
namespace {

constexpr int kExitUserError = 1;
constexpr int kExitInternalError = 3;

// Flags shared by compile and examine.
struct ModelFlags {
  std::string model;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::string device = "cpu";
  CLI::Option* device_option = nullptr;  // count() > 0: --device was given
  std::vector<std::string> executors;
  bool standalone = false;
  std::vector<std::string> transforms;
  CLI::Option* transforms_option = nullptr;  // count() > 0: --transforms was given (maybe empty)
  std::vector<std::string> decompose;
  std::string dump_traces;
  bool time_passes = false;
  bool verbose = false;
  std::string sharp_edges = "allow";
  bool autograd = false;
  std::vector<std::string> requires_grad;
  std::string module_mode;
  std::string optimizer;
  std::string precision = "fp32";
  bool skip_inplace_alias_updates = false;
  std::string bounded_variants = "auto";

  void add_to(CLI::App& app, bool model_required) {
    auto* m = app.add_option("MODEL", model, "TorchScript (.pt) or torch.export (.pt2) model file")->type_name("MODEL.pt");
    if (model_required) m->required();
    app.add_option("--shapes", shapes,
                   "input shapes of one specialization, e.g. x=1x64 or 1x3x32x32 or ids=1x16:int64 (or x=Bx64 with --dim; "
                   "x=scalar for a 0-dim input); repeat for more specializations, each different (default: the "
                   "shapes recorded in the model); a tensor may take at most 1 TiB (2^40 bytes)")
        ->type_name("SHAPES")
        ->take_all()
        ->allow_extra_args(false);
    app.add_option("--dim", dims,
                   "range of a symbolic dimension named in --shapes, NAME=LO:HI inclusive (e.g. --shapes x=Bx64 "
                   "--dim B=1:32 with --cache \"symbolic values\"); repeat per symbol. Without --shapes it bounds the "
                   "model's own dynamic dimension of that name (a .pt2's Dim, e.g. --dim s77=1:64), which then "
                   "compiles to one symbolic variant")
        ->type_name("NAME=LO:HI")
        ->take_all()
        ->allow_extra_args(false);
    device_option = app.add_option("--device", device,
                                   "device to compile for: cpu or cuda (default: cuda when --executors names only "
                                   "CUDA executors, else cpu)")
                        ->type_name("cpu|cuda");
    app.add_option("--executors", executors,
                   "executors in order of preference, comma-separated (default: the device's defaults; "
                   "see --list-executors)")
        ->type_name("NAME,...")
        ->delimiter(',')
        ->allow_extra_args(false);
    app.add_flag("--standalone", standalone,
                 "do not fall back on the torch executor (no LibTorch needed); refused with an --executors list "
                 "that names torch");
    transforms_option = app.add_option("--transforms", transforms,
                                       "optional trace transforms to run, in order, comma-separated; replaces the "
                                       "default list (\"none\": none; executors are always claimed; see "
                                       "--list-transforms)")
                            ->type_name("NAME,...")
                            ->delimiter(',')
                            ->allow_extra_args(false);
    app.add_option("--decompose", decompose,
                   "operators the decompose transform rewrites whatever the executors, comma-separated "
                   "(e.g. softmax,gelu)")
        ->type_name("OP,...")
        ->delimiter(',')
        ->allow_extra_args(false);
    app.add_option("--dump-traces", dump_traces,
                   "write the trace after every pass to DIR/NN-<pass>.txt (DIR/specialization-K/ with several "
                   "specializations)")
        ->type_name("DIR");
    app.add_flag("--time-passes", time_passes, "print the time each pass took (a table on stderr)");
    app.add_option("--sharp-edges", sharp_edges,
                   "what to do with constructs that are likely wrong or surprising once compiled ahead of time "
                   "(shape-dependent branches, random ops, in-place updates of inputs or weights, outputs that "
                   "alias inputs, global state, frozen attributes): allow (default), warn, or error")
        ->type_name("allow|warn|error");
    app.add_option("--precision", precision,
                   "how matrix products and convolutions compute: fp32 (default: IEEE float32), tf32 (CUDA: "
                   "cuBLASLt/cuDNN may use tensor cores with TF32 inputs and float32 accumulation; nvfuser's own "
                   "kernels stay float32); bf16 and fp16 (PyTorch's autocast ahead of time: matmuls, convolutions "
                   "and attention in that dtype with float32 accumulation, softmax/norms/sums in float32, weights "
                   "stored converted, inputs and outputs keep their dtypes; fp16 on CUDA only, bf16 on the CPU runs "
                   "only on CPUs with AVX512_BF16 or AMX)")
        ->type_name("fp32|tf32|bf16|fp16");
    app.add_option("--bounded-variants", bounded_variants,
                   "auto (default): where oneDNN could fuse an activation into a convolution but its post-op would "
                   "turn NaN into a number, also compile a bounded variant that fuses it; the runtime runs it for "
                   "calls whose floating-point inputs are all finite and within a bound the compiler proves safe "
                   "(else the exact variant: NaN and inf as PyTorch gives them). off: exact variants only (half "
                   "the C++ to compile, slower convolutions)")
        ->type_name("auto|off");
    app.add_flag("--skip-inplace-alias-updates", skip_inplace_alias_updates,
                 "after an in-place update through a view, do not update the base and its other views (fewer "
                 "operations; wrong results if the model reads them afterwards, as PyTorch would show the update)");
    app.add_flag("--autograd", autograd,
                 "compile a training variant: forward and backward in the .so, parameters as runtime state readable "
                 "and writable through the C ABI, gradients of every parameter (and of --requires-grad inputs); run it "
                 "with `thunderc grad` or thunderc_model_forward_train/backward (docs/training.md). CPU and CUDA "
                 "executors, fixed shapes");
    app.add_option("--requires-grad", requires_grad,
                   "with --autograd: inputs that get gradients too, comma-separated (names as the model's inputs)")
        ->type_name("NAME,...")
        ->delimiter(',')
        ->allow_extra_args(false);
    app.add_option("--optimizer", optimizer,
                   "with --autograd: compile the parameters' update too, sgd or adamw (torch.optim's arithmetic; "
                   "hyperparameters are call arguments of thunderc_model_optimizer_step; state kept by the runtime)")
        ->type_name("sgd|adamw");
    app.add_option("--module-mode", module_mode,
                   "with --autograd: eval (default: batch norm with its running statistics, dropout an identity, as "
                   "the module was saved) or train (batch norm with the batch's statistics, updating its running "
                   "statistics as state; dropout draws its masks from a counter-based RNG whose seed and offset are call "
                   "arguments, `thunderc grad --seed/--offset`)")
        ->type_name("eval|train");
  }

  PipelineOptions pipeline_options() const {
    PipelineOptions o;
    o.model_path = model;
    o.shapes = shapes;
    o.dims = dims;
    for (const std::string& e : executors)
      if (!e.empty()) o.executors.push_back(e);
    std::optional<Device> requested;
    if (device_option && device_option->count() > 0) requested = Device::parse(device);
    o.device = select_device(requested, o.executors);
    o.standalone = standalone;
    if (transforms_option && transforms_option->count() > 0) o.transforms = transforms;
    for (const std::string& d : decompose)
      if (!d.empty()) o.decompose_ops.push_back(d);
    o.dump_traces_dir = dump_traces;
    o.verbose = verbose;
    auto mode = parse_sharp_edge_mode(sharp_edges);
    if (!mode) user_error("--sharp-edges must be allow, warn or error, got '", sharp_edges, "'");
    o.sharp_edges = *mode;
    o.inplace_alias_updates = !skip_inplace_alias_updates;
    o.autograd = autograd;
    for (const std::string& n : requires_grad)
      if (!n.empty()) o.requires_grad.push_back(n);
    if (!module_mode.empty() && module_mode != "eval" && module_mode != "train")
      user_error("--module-mode must be eval or train, got '", module_mode, "'");
    if (!module_mode.empty() && !autograd)
      user_error("--module-mode ", module_mode, " needs --autograd (an inference build runs the module as saved, in "
                 "eval mode)");
    o.train_mode = module_mode == "train";
    o.optimizer = optimizer;
    if (precision != "fp32" && precision != "tf32" && precision != "bf16" && precision != "fp16")
      user_error("--precision must be fp32, tf32, bf16 or fp16, got '", precision, "'");
    if (precision == "fp16" && o.device.kind != DeviceKind::CUDA)
      user_error("--precision fp16 is for --device cuda: CPUs have no float16 matrix instructions worth using (use "
                 "bf16 on CPUs with AVX512_BF16 or AMX, else fp32)");
    if (precision == "tf32" && o.device.kind != DeviceKind::CUDA)
      user_error("--precision tf32 is a tensor-core mode of NVIDIA GPUs: it needs --device cuda (on the CPU, use fp32)");
    o.precision = precision;
    if (bounded_variants != "auto" && bounded_variants != "off")
      user_error("--bounded-variants must be auto or off, got ", quote_text(bounded_variants));
    o.bounded_variants = bounded_variants == "auto";
    return o;
  }
};

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string rpad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string plural(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// ---- --version, --list-executors ---------------------------------------------------------------------

void print_version() {
#if THUNDERC_WITH_LIBTORCH
  std::cout << "thunderc " << THUNDERC_VERSION << "\n" << "LibTorch " << libtorch_version() << "\n";
#else
  std::cout << "thunderc " << THUNDERC_VERSION << "\n"
            << "LibTorch: none (built with -DTHUNDERC_WITH_LIBTORCH=OFF: torch.export .pt2 programs only)\n";
#endif
  // Where generated code's headers come from: an installed prefix, or the tree this binary was built in.
  const ResourcePaths& r = resource_paths();
  if (r.installed)
    std::cout << "kernel headers: " << r.codegen_include << " (installed under " << r.prefix << ")\n";
  else
    std::cout << "kernel headers: the build tree (" << r.codegen_include << ", ...)\n";
}

std::string status_str(const Executor& e) {
  std::vector<std::string> parts;
  for (DeviceKind k : e.devices()) {
    Availability a = e.availability(k);
    std::string where = e.devices().size() > 1 ? std::string(device_kind_name(k)) + ": " : "";
    parts.push_back(where + (a.available ? std::string("available") : "unavailable: " + a.reason));
  }
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  // Unavailable everywhere for one reason (torch in a build without LibTorch): say it once.
  if (e.devices().size() > 1) {
    std::vector<Availability> all;
    for (DeviceKind k : e.devices()) all.push_back(e.availability(k));
    if (std::all_of(all.begin(), all.end(), [&](const Availability& a) { return !a.available && a.reason == all[0].reason; }))
      s = "unavailable: " + all[0].reason;
  }
  if (!e.implemented()) s = "not implemented yet; " + s;
  return s;
}

int list_executors() {
  report_torch_cuda_support();
  std::size_t name_w = 4, dev_w = 6;
  for (const Executor* e : all_executors()) {
    name_w = std::max(name_w, e->name().size());
    dev_w = std::max(dev_w, e->devices_str().size());
  }
  std::cout << "Executors:\n";
  std::cout << "  " << pad("NAME", name_w) << "  " << pad("DEVICE", dev_w) << "  STATUS\n";
  const std::string indent(6 + name_w + dev_w, ' ');
  for (const Executor* e : all_executors()) {
    std::cout << "  " << pad(e->name(), name_w) << "  " << pad(e->devices_str(), dev_w) << "  " << status_str(*e)
              << "\n";
    std::cout << indent << e->description() << "\n";
    if (e->implemented()) {
      std::cout << indent << "claims " << e->num_impls() << " operator" << (e->num_impls() == 1 ? "" : "s") << " ("
                << e->categories_str() << ")" << (e->is_always() ? "; always-executor" : "") << "\n";
      std::string fallback;
      for (const std::string& op : e->fallback_ops()) fallback += (fallback.empty() ? "" : ", ") + op;
      if (!fallback.empty())
        std::cout << indent << "as a fallback only (where no other listed executor claims them): " << fallback << "\n";
    }
    else
      std::cout << indent << "will serve: " << e->categories_str() << "\n";
  }
  std::cout << "\nDefault executors (when --executors is not given):\n";
  for (DeviceKind k : {DeviceKind::CPU, DeviceKind::CUDA}) {
    std::vector<std::string> names = default_executor_names(k);
    ExecutorSelection sel = default_executors(k);
    std::string listed;
    for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
    std::cout << "  " << pad(std::string(device_kind_name(k)) + ":", 6) << listed << "  -> usable now: "
              << (sel.executors.empty() ? std::string("none") : sel.names_str()) << "\n";
    for (const std::string& n : sel.notes) std::cout << "        note: " << n << "\n";
  }
  std::string always;
  for (const Executor* e : always_executors()) always += (always.empty() ? "" : ", ") + e->name();
  std::cout << "\nAlways-executors (appended to every list unless --standalone): "
            << (always.empty() ? std::string(THUNDERC_WITH_LIBTORCH ? "none" : "none (built without LibTorch)") : always)
            << "\n";
  return 0;
}

// ---- examine -----------------------------------------------------------------------------------------

std::string value_line(const Trace& t, ValueId id) {
  const Value& v = t.value(id);
  std::string s = v.name + ": " + v.type.str();
  if (!v.source_name.empty() && v.source_name != v.name) s += "  (" + quote_string(v.source_name) + " in the model)";
  return s;
}

void print_operator_table(const Trace& t) {
  struct Row {
    std::string op, category, executor;
    std::size_t count = 0, first = 0;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < t.symbols().size(); ++i) {
    const BoundSymbol& sym = t.symbols()[i];
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const Row& r) { return r.op == sym.op->name && r.executor == sym.executor; });
    if (it == rows.end())
      rows.push_back({sym.op->name, op_category_name(sym.op->category), sym.executor, 1, i});
    else
      ++it->count;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.count > b.count; });
  std::size_t op_w = 8, cat_w = 8;
  for (const Row& r : rows) op_w = std::max(op_w, r.op.size()), cat_w = std::max(cat_w, r.category.size());
  std::cout << "  " << pad("OPERATOR", op_w) << "  " << pad("CATEGORY", cat_w) << "  " << rpad("COUNT", 5)
            << "  EXECUTOR\n";
  for (const Row& r : rows)
    std::cout << "  " << pad(r.op, op_w) << "  " << pad(r.category, cat_w) << "  " << rpad(std::to_string(r.count), 5)
              << "  " << (r.executor.empty() ? "(none)" : r.executor) << "\n";
}

// Writes `text` to `path` the way compile outputs are written (install_file: an exclusive temporary file beside
// it, renamed into place), staged in a private temporary file first.
void write_text_output(const std::string& path, const std::string& text, const std::string& what) {
  std::string staged = (std::filesystem::temp_directory_path() / "thunderc-out-XXXXXX").string();
  const int fd = mkstemp(staged.data());
  if (fd < 0) user_error(what, ": cannot create a temporary file (", std::strerror(errno), ")");
  ::close(fd);
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove{staged};
  {
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) user_error(what, " ", quote_text(path), ": write failed (", std::strerror(errno), ")");
  }
  install_file(staged, path);
}

int examine(const ModelFlags& flags, bool verbose, const std::string& dot_path) {
  PipelineOptions options = flags.pipeline_options();
  report_torch_cuda_support();
  PipelineResult r = run_pipeline(options);
  const ModelFrontend& model = *r.model;
  auto dot = [&] {
    std::vector<DotGraph> graphs;
    for (const SpecializedTrace& s : r.specializations) graphs.push_back({specialization_label(s), &s.trace});
    return traces_to_dot(graphs);
  };
  if (dot_path == "-") {  // the picture alone, for a pipe into `dot`
    std::cout << dot();
    return 0;
  }

  std::string inputs;
  // Names come from the model file: a plain identifier prints as is, anything else quoted and escaped.
  for (const std::string& n : model.input_names())
    inputs += (inputs.empty() ? "" : ", ") + (sanitize_identifier(n) == n ? n : quote_text(n));
  std::cout << "Model: " << options.model_path << " (" << model.description() << ")\n";
  std::cout << "Inputs: " << (inputs.empty() ? "(none)" : inputs) << "\n";
  std::cout << "Device: " << options.device.str() << "\n";
  std::cout << "Executors: " << r.executors.names_str() << (options.standalone ? " (standalone)" : "") << "\n";
  std::string transforms;
  for (const std::string& n : r.transforms) transforms += (transforms.empty() ? "" : ", ") + n;
  std::cout << "Transforms: " << (transforms.empty() ? std::string("(none)") : transforms)
            << (options.transforms ? " (from --transforms)" : " (default)") << "; executors claimed after "
            << kClaimPassName << "\n";
  for (const std::string& n : r.executors.notes) std::cout << "  note: " << n << "\n";
  const std::size_t bounded = static_cast<std::size_t>(std::count_if(
      r.specializations.begin(), r.specializations.end(), [](const SpecializedTrace& s) { return s.input_bound > 0; }));
  std::cout << "Specializations: " << r.specializations.size() - bounded
            << (r.shapes_recorded ? " (shapes recorded in the model)" : " (from --shapes)");
  if (bounded) std::cout << "; " << plural(bounded, "bounded variant") << " ahead of the exact ones (--bounded-variants)";
  std::cout << "\n";
  if (verbose)
    std::cout << (model.format() == "pt2" ? "\nExported graph (torch.export):\n" : "\nTorchScript graph (frozen, inlined):\n")
              << model.graph_str() << "\n";

  std::size_t total_ops = 0;
  for (std::size_t i = 0; i < r.specializations.size(); ++i) {
    const SpecializedTrace& s = r.specializations[i];
    const Trace& t = s.trace;
    std::cout << "\n== Specialization " << i + 1 << " of " << r.specializations.size() << ": "
              << specialization_label(s) << " ==\n";
    std::cout << "Inputs:\n";
    for (ValueId id : t.inputs()) std::cout << "  " << value_line(t, id) << "\n";
    std::cout << "Outputs:\n";
    for (ValueId id : t.outputs()) std::cout << "  " << value_line(t, id) << "\n";

    PrintOptions po;
    po.show_source = verbose;
    std::cout << "\nTrace (after every pass):\n" << print_trace(t, po);

    std::cout << "\nOperators:\n";
    print_operator_table(t);

    std::size_t bytes = 0;
    for (ValueId c : t.constants()) bytes += t.type(c).nbytes();
    std::string claimed;
    for (const auto& [exec, n] : executor_counts(t))
      claimed += (claimed.empty() ? "" : ", ") + (exec.empty() ? std::string("(none)") : exec) + " " + std::to_string(n);
    std::size_t distinct = 0;
    {
      std::vector<std::string> seen;
      for (const BoundSymbol& sym : t.symbols())
        if (std::find(seen.begin(), seen.end(), sym.op->name) == seen.end()) seen.push_back(sym.op->name);
      distinct = seen.size();
    }
    std::cout << "\nSummary: " << plural(t.symbols().size(), "operation") << " (" << plural(distinct, "operator")
              << "), claimed by " << (claimed.empty() ? std::string("nobody") : claimed) << "; "
              << plural(t.inputs().size(), "input") << ", " << plural(t.outputs().size(), "output") << ", "
              << plural(t.constants().size(), "constant") << " (" << format_bytes(bytes) << ")\n";
    total_ops += t.symbols().size();
  }
  std::cout << "\nOK: every operation is supported and claimed (" << plural(r.specializations.size(), "specialization")
            << ", " << plural(total_ops, "operation") << ").\n";
  if (!dot_path.empty()) {
    write_text_output(dot_path, dot(), "--dot");
    std::cout << "Wrote the final trace" << (r.specializations.size() == 1 ? "" : "s") << " as Graphviz DOT to "
              << dot_path << " (render: dot -Tsvg " << dot_path << " -o graph.svg)\n";
  }
  if (flags.time_passes) std::cerr << pass_timing_table(r.timings);
  return 0;
}

// ---- compile -----------------------------------------------------------------------------------------

struct CompileFlags {
  std::string output;
  std::string cuda_arch = "sm_80,sm_90";
  CLI::Option* cuda_arch_option = nullptr;
  std::string keep_sources;
  bool disable_torch_autograd = false;
  bool cuda_graphs = false;
  bool profile = false;
  std::string cpu_target = "x86-64-v3";
  std::string conv_algorithm = "auto";
  std::string cache;  // empty: not given ("constant values", or "symbolic values" for a model's declared Dims)
  std::string emit_build;  // --emit-build DIR
  int jobs = 0;            // -j: 0 = the machine's cores
  std::size_t split_lines = kDefaultSplitLines;
  std::string cache_dir;  // the compile cache: resolve_cache_dir(cache_dir, given)
  CLI::Option* cache_dir_option = nullptr;
  // What the compile cache's key covers of the command line: every option given, by name, with its values as
  // given (new options are covered without being listed here); see cache_key_options.
  std::vector<std::string> key_options;
};

// Options that do not change the outputs' bytes: where they go, the cache itself, what is printed.
std::vector<std::string> cache_key_options(const CLI::App& app) {
  std::vector<std::string> parts;
  for (const CLI::Option* o : app.get_options()) {
    std::string name = o->get_name(true);  // MODEL for the positional
    if (name.empty()) name = o->get_name();  // the long name: --shapes
    if (o->count() == 0 || name == "--output" || name == "--cache-dir" || name == "--verbose" ||
        name == "--time-passes" || name == "--jobs")
      continue;
    std::string part = "option " + name + "=";
    for (const std::string& v : o->results()) part += std::to_string(v.size()) + ":" + v;
    parts.push_back(part);
  }
  return parts;
}

// thunder.jit's cache values ("constant values", ...); hyphens are accepted for spaces.
std::string cache_mode(std::string text) {
  std::replace(text.begin(), text.end(), '-', ' ');
  if (text == "constant values" || text == "same input" || text == "no caching" || text == "symbolic values")
    return text;
  user_error("--cache must be \"constant values\", \"same input\", \"no caching\" or \"symbolic values\", got '",
             text, "'");
}

// OUT.so -> OUT.json; any other name gets ".json" appended.
std::string manifest_path_for(const std::string& so) {
  std::filesystem::path p(so);
  if (p.extension() == ".so") return p.replace_extension(".json").string();
  return so + ".json";
}

// Whether `a` and `b` name the same file (or would, once created).
bool same_path(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ea, eb;
  if (std::filesystem::exists(a, ea) && std::filesystem::exists(b, eb)) return std::filesystem::equivalent(a, b, ea);
  return std::filesystem::weakly_canonical(a, ea) == std::filesystem::weakly_canonical(b, eb) && !ea && !eb;
}

// Refuses outputs that would destroy an input or be mistaken for another file, before anything is loaded.
void check_output_paths(const std::string& model, const std::string& out_so, const std::string& out_json,
                        const std::string& keep_sources) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string ext = fs::path(out_so).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".json")
    user_error("-o ", quote_text(out_so), " ends in .json: -o names the shared library (e.g. ",
               quote_text(fs::path(out_so).replace_extension(".so").string()),
               "); the manifest is written beside it with the extension .json");
  if (!out_so.empty() && out_so.back() == '/')
    user_error("-o ", quote_text(out_so), " names a directory; give a file name such as ",
               quote_text((fs::path(out_so) / (fs::path(model).stem().string() + ".so")).string()));
  for (const std::string& path : {out_so, out_json}) {
    if (fs::is_directory(path, ec))
      user_error(path == out_so ? "-o " : "the manifest path ", quote_text(path),
                 " is a directory; give a file name such as ",
                 quote_text((fs::path(out_so) / (fs::path(model).stem().string() + ".so")).string()));
    if (same_path(path, model))
      user_error(path == out_so ? "-o " + quote_text(out_so) + " is the input model itself"
                                : "-o " + quote_text(out_so) + " would write its manifest " + quote_text(out_json) +
                                      " over the input model",
                 "; choose another output name (the model would be overwritten)");
  }
  if (!keep_sources.empty()) {
    if (same_path(keep_sources, model)) user_error("--keep-sources ", quote_text(keep_sources), " is the input model");
    check_keep_sources_dir(keep_sources);
  }
}

// Compiles the traces to OUT.so + OUT.json (-o defaults to the model's stem in the current directory).
int compile(const ModelFlags& flags, const CompileFlags& out) {
  // Checked before the model is loaded.
  const std::string cache = out.cache.empty() ? std::string("constant values") : cache_mode(out.cache);
  const std::string out_so =
      out.output.empty() ? std::filesystem::path(flags.model).stem().string() + ".so" : out.output;
  check_model_path(flags.model);
  const bool emit = !out.emit_build.empty();
  if (emit && !out.output.empty())
    user_error("--emit-build ", quote_text(out.emit_build), " writes the sources and a build.ninja that builds model.so "
               "and model.json in that folder; -o does not apply (copy them where they belong after `ninja -C ",
               quote_text(out.emit_build), "`)");
  if (emit && !out.keep_sources.empty()) user_error("--emit-build and --keep-sources both write the sources; give one");
  if (out.jobs < 0) user_error("-j/--jobs must be 1 or more (0: one per core), got ", out.jobs);
  if (out.split_lines == 0) user_error("--split-lines must be 1 or more");
  if (emit) {
    if (same_path(out.emit_build, flags.model)) user_error("--emit-build ", quote_text(out.emit_build), " is the input model");
    check_keep_sources_dir(out.emit_build, "--emit-build");
  } else {
    check_output_paths(flags.model, out_so, manifest_path_for(out_so), out.keep_sources);
  }
  PipelineOptions options = flags.pipeline_options();
  // --dim without --shapes: one symbolic variant over the model's own dynamic dimensions.
  const bool declared_symbolic = !options.dims.empty() && options.shapes.empty();
  if (declared_symbolic && !out.cache.empty() && cache != "symbolic values")
    user_error("--dim without --shapes compiles one symbolic variant of the model's dynamic dimensions, which "
               "--cache \"", cache, "\" contradicts; leave --cache out");
  if (options.device.kind == DeviceKind::CUDA) {
    (void)parse_cuda_archs(out.cuda_arch);  // a bad --cuda-arch fails before the model is loaded
    if (cache == "symbolic values" || declared_symbolic)
      user_error("--cache \"symbolic values\" is not supported for CUDA yet (the CUDA kernels and library calls are "
                 "generated for fixed sizes); compile one variant per --shapes instead");
  } else if (out.cuda_arch_option && out.cuda_arch_option->count() > 0) {
    user_error("--cuda-arch applies to CUDA variants only; add --device cuda (or --executors nvfuser)");
  }
  const std::vector<std::string> cpu_targets = parse_cpu_targets(out.cpu_target);
  if (out.conv_algorithm != "auto" && out.conv_algorithm != "direct")
    user_error("--conv-algorithm must be auto or direct, got ", quote_text(out.conv_algorithm));
  if (out.profile && options.device.kind == DeviceKind::CUDA)
    user_error("--profile times the operations of CPU variants; CUDA kernels run asynchronously to the host, so "
               "time a CUDA model with thunderc bench, or with Nsight Systems");
  if (out.profile && options.autograd)
    user_error("--profile times inference variants; compile without --autograd to profile the forward");
  if (out.profile && cpu_targets.size() > 1)
    user_error("--profile times one build of the host code; give one --cpu-target level, not ", out.cpu_target);
  if (options.device.kind != DeviceKind::CUDA && out.cuda_graphs)
    user_error("--cuda-graphs applies to CUDA variants only; add --device cuda (or --executors nvfuser)");
  if (options.autograd && out.disable_torch_autograd)
    user_error("--autograd and --disable-torch-autograd contradict each other: --autograd compiles a training "
               "variant (forward and backward), --disable-torch-autograd forward-only code; give one");
  options.symbolic = cache == "symbolic values";
  options.symbolic_if_declared = out.cache.empty() && options.device.kind != DeviceKind::CUDA && !options.autograd;
  report_torch_cuda_support();  // before the cache key, which covers the executors' availability
  auto started = std::chrono::steady_clock::now();
  Toolchain toolchain = Toolchain::from_build();
  if (out.jobs > 0) toolchain.jobs = out.jobs;

  // The compile cache: after every check of the options (a bad command never hits), before any work.
  std::optional<CompileCache> compile_cache;
  std::vector<std::string> key_parts;
  std::string key;
  const std::string cache_dir = resolve_cache_dir(out.cache_dir, out.cache_dir_option && out.cache_dir_option->count() > 0);
  const std::string out_json = manifest_path_for(out_so);
  if (!cache_dir.empty()) {
    if (!out.keep_sources.empty() || !options.dump_traces_dir.empty() || emit) {
      std::printf("thunderc: the compile cache is not used with --keep-sources, --dump-traces or --emit-build (they "
                  "need a compile)\n");
    } else {
      compile_cache.emplace(cache_dir);
      key_parts = toolchain_key_parts(toolchain);
      key_parts.push_back("model-sha256=" + sha256_file(flags.model));
      key_parts.insert(key_parts.end(), out.key_options.begin(), out.key_options.end());
      for (const std::string& level : cpu_targets) key_parts.push_back("cpu-target=" + level);  // native, resolved
      key = cache_key(key_parts);
      if (compile_cache->fetch(key, out_so, out_json)) {
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::printf("thunderc: compiled %s -> %s + %s\n", flags.model.c_str(), out_so.c_str(), out_json.c_str());
        std::printf("  compile cache hit: copied entry %s from %s (the bytes a compile writes); %.2f s\n",
                    key.substr(0, 16).c_str(), cache_dir.c_str(), seconds);
        return 0;
      }
    }
  }

  PipelineResult r = run_pipeline(options);

  CompileRequest request;
  request.out_so = out_so;
  request.out_json = out_json;
  if (!out.keep_sources.empty()) request.keep_sources = out.keep_sources;
  if (emit) request.emit_build = out.emit_build;
  request.split_lines = out.split_lines;
  if (options.device.kind == DeviceKind::CUDA) request.cuda_archs = parse_cuda_archs(out.cuda_arch);
  request.source = {flags.model, sha256_file(flags.model), r.model->format()};
  request.options.executors = r.executors.names();
  request.options.device = options.device.str();
  request.options.standalone = options.standalone;
  request.options.transforms = r.transforms;
  request.options.disable_torch_autograd = out.disable_torch_autograd;
  request.options.cuda_graphs = out.cuda_graphs;
  request.options.profile = out.profile;
  request.options.cpu_target = cpu_targets.front();
  request.options.cpu_targets = cpu_targets;
  request.options.conv_algorithm = out.conv_algorithm;
  request.options.cache = r.symbolic ? std::string("symbolic values") : cache;
  request.options.sharp_edges = sharp_edge_mode_name(options.sharp_edges);
  request.options.skip_inplace_alias_updates = !options.inplace_alias_updates;
  request.options.precision = options.precision;
  request.input_names = r.model->input_names();
  std::size_t ops = 0;
  for (const SpecializedTrace& s : r.specializations) {
    request.variants.push_back({&s.trace, specialization_label(s), s.symbolic.get(), s.input_bound});
    ops += s.trace.symbols().size();
  }
  if (options.autograd) {
    // Backward programs follow every variant (their entries are named under their forward's in the manifest).
    const std::size_t n = r.specializations.size();
    TrainingModule training;
    for (std::size_t i = 0; i < n; ++i) {
      const TrainingTraces& tt = *r.specializations[i].training;
      ModuleVariant b{&tt.backward, specialization_label(r.specializations[i]) + " (backward)"};
      b.is_program = true;
      request.variants[i].backward = n + i;
      request.variants[i].model_outputs = tt.num_outputs;
      request.variants[i].rng_blocks = tt.rng_blocks;
      request.variants.push_back(b);
      ops += tt.backward.symbols().size();
      if (i == 0) {
        for (const TrainingTraces::Parameter& p : tt.parameters)
          training.parameters.push_back({p.name, p.type, p.initial, 0, p.trainable});
        training.updates = tt.updates;
        for (const TrainingTraces::Gradient& g : tt.gradients) training.gradients.push_back({g.name, g.parameter});
      } else if (tt.parameters.size() != training.parameters.size() || tt.gradients.size() != training.gradients.size() ||
                 tt.updates != training.updates) {
        user_error("--autograd: specialization ", i + 1, " uses other parameters than specialization 1; compile them "
                   "into separate .so files");
      }
    }
    if (r.optimizer) {
      training.optimizer = TrainingModule::Optimizer{r.optimizer->kind, request.variants.size(),
                                                     r.optimizer->state_slots, r.optimizer->scalars};
      ModuleVariant u{&r.optimizer->trace, "optimizer " + r.optimizer->kind};
      u.is_program = true;
      request.variants.push_back(u);
      ops += r.optimizer->trace.symbols().size();
    }
    request.training = std::move(training);
  }
  auto codegen_started = std::chrono::steady_clock::now();
  CompileSummary summary;
  {
    ProgressLine progress(true);
    progress.show("thunderc: generating " + std::string(emit ? "" : "and compiling ") + "C++ for " +
                  plural(r.specializations.size(), "variant") + " ...");
    summary = compile_model(request, toolchain);
  }
  double codegen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - codegen_started).count();
  if (flags.time_passes) std::cerr << pass_timing_table(r.timings, {{"codegen + C++ build", codegen_ms, 1, PassTiming::kNoSymbols}});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (emit)
    std::printf("thunderc: wrote %s's sources and build.ninja (%zu steps) to %s; build with: ninja -C %s\n",
                flags.model.c_str(), summary.build_steps, out.emit_build.c_str(), out.emit_build.c_str());
  else
    std::printf("thunderc: compiled %s -> %s + %s\n", flags.model.c_str(), request.out_so.c_str(), request.out_json.c_str());
  std::printf("  %s, %s, executors %s\n", plural(r.specializations.size(), "variant").c_str(),
              plural(ops, "operation").c_str(), r.executors.names_str().c_str());
  for (const std::string& note : r.executors.notes) std::printf("  note: %s\n", note.c_str());
  for (std::size_t i = 0; i < r.specializations.size(); ++i)
    if (r.specializations[i].input_bound > 0) {
      int e = 0;
      std::frexp(r.specializations[i].input_bound, &e);
      std::printf("  variant %zu is bounded (%s), for calls whose floating-point inputs are all finite with "
                  "|x| <= 2^%d (others run variant %zu; --bounded-variants off leaves it out)\n",
                  i, bounded_variant_summary(r.specializations[i].trace).c_str(), e - 1, i + 1);
    }
  if (r.symbolic && !r.specializations.empty() && r.specializations[0].symbolic) {
    std::string ranges;
    for (const SymbolRange& d : r.specializations[0].symbolic->symbols)
      ranges += (ranges.empty() ? "" : ", ") + d.name + " in " + std::to_string(d.lo) + ".." + std::to_string(d.hi);
    std::printf("  symbolic sizes: %s (read from the inputs at run time%s)\n", ranges.c_str(),
                r.shapes_recorded ? "; the model's dynamic dimensions" : "");
  }
  std::string sources_note = summary.cpp_sources == 1 ? std::string("1 C++ source")
                                                      : std::to_string(summary.cpp_sources) + " C++ sources (--split-lines " +
                                                            std::to_string(out.split_lines) + ")";
  if (!emit && summary.cpp_sources > 1) sources_note += ", compiled " + std::to_string(toolchain.jobs) + " at a time";
  std::printf("  weights: %zu tensors, %s embedded; %s; %.1f s\n", summary.weight_count,
              format_bytes(summary.weight_bytes).c_str(),
              sources_note.c_str(),
              seconds);
  if (cpu_targets.size() > 1) {
    std::string levels;
    for (const std::string& l : cpu_targets) levels += (levels.empty() ? "" : ", ") + l;
    std::printf("  host code for %s (one copy each; the runtime runs the best level the CPU has)\n", levels.c_str());
  }
  if (options.device.kind == DeviceKind::CUDA) {
    std::string archs;
    for (const std::string& a : request.cuda_archs) archs += (archs.empty() ? "" : ", ") + a;
    std::printf("  CUDA: %zu kernels, %zu library calls (cuBLASLt/cuDNN, loaded at run time), cubins for %s + PTX for the newest\n",
                summary.cuda_kernels, summary.library_calls, archs.c_str());
  }
  if (compile_cache) {
    // The outputs are written; a cache that cannot take them (read-only, full) costs the next compile only.
    try {
      compile_cache->store(key, out_so, out_json, key_parts);
      std::printf("  compile cache miss: stored as entry %s in %s\n", key.substr(0, 16).c_str(), cache_dir.c_str());
    } catch (const UserError& e) {
      emit_diagnostic({"warning", "compile-cache",
                       "compile cache: " + printable_message(e.what()) + " (the outputs are written; the cache is not)", ""},
                      std::cerr);
    }
  }
  return 0;
}

// ---- main --------------------------------------------------------------------------------------------

int run(int argc, char** argv) {
  CLI::App app{
      "thunderc: an ahead-of-time compiler for TorchScript and torch.export models\n"
      "  thunderc MODEL.pt -o OUT.so [options]     compile\n"
      "  thunderc examine MODEL.pt [options]       show the traced program and its executors\n"
      "  thunderc --list-executors                 list the executors\n"
      "  thunderc --list-ops [--json|--markdown]   list the operators, their executors and ATen names\n"
      "  thunderc --list-transforms                list the trace transforms and their order\n"
      "  thunderc run|inspect|bench|pack OUT.so    run, summarize, time or bundle a compiled model\n"
      "  thunderc cache [--clear]                  the compile cache (--cache-dir)",
      "thunderc"};
  app.footer(
      "Examples:\n"
      "  thunderc samples/mlp.pt -o out/mlp.so                         compile (shapes recorded in the model)\n"
      "  thunderc samples/mlp_scripted.pt -o out/mlp.so --shapes x=1x64  compile with explicit input shapes\n"
      "  thunderc examine samples/cnn.pt                                show the traced program and its executors\n"
      "  thunderc examine samples/gpt_block_scripted.pt --shapes 1x16x64 --verbose\n"
      "  thunderc --list-executors                                      list executors and whether they are usable\n"
      "  thunderc --list-ops --json                                     the operators, as JSON\n"
      "  thunderc --list-transforms                                     list the trace transforms and their order\n"
      "  thunderc samples/cnn.pt -o out/cnn.so --dump-traces out/traces --time-passes\n"
      "                                                                 keep the trace after every pass, time them\n"
      "  thunderc samples/cnn.pt -o out/cnn.so --cache-dir ~/.cache/thunderc   reuse an identical earlier compile\n"
      "\n"
      "Exit codes: 0 ok, 1 user error, 3 internal error (a bug).");

  bool version = false, list = false;
  // Set while parsing (each), so that errors met in the subcommands' callbacks already use the format.
  if (const char* env = std::getenv("THUNDERC_DIAGNOSTICS"); env && std::string(env) == "json")
    set_diagnostic_format(DiagnosticFormat::Json);
  app.add_option("--diagnostics", "errors, warnings and sharp edges on stderr as text (default) or json: one object "
                                  "per line with severity, code, message, location (for CI annotations; "
                                  "$THUNDERC_DIAGNOSTICS=json sets it too); give it before a subcommand")
      ->type_name("text|json")
      ->check(CLI::IsMember({"text", "json"}))
      ->each([](const std::string& v) {
        set_diagnostic_format(v == "json" ? DiagnosticFormat::Json : DiagnosticFormat::Text);
      });
  app.add_flag("--version", version, "print the thunderc and LibTorch versions");
  app.add_flag("--list-executors", list, "list every executor, whether it is available here, and the defaults");

  ModelFlags compile_flags;
  CompileFlags out;
  compile_flags.add_to(app, false);
  app.add_option("-o,--output", out.output,
                 "the shared library to write (OUT.json is written beside it); never the model itself or a .json "
                 "name; written to a temporary file beside it and renamed into place")
      ->type_name("OUT.so");
  app.add_option("--keep-sources", out.keep_sources,
                 "keep the generated sources in this directory (new, empty, or holding only an earlier "
                 "--keep-sources set, which is replaced)")
      ->type_name("DIR");
  out.cuda_arch_option =
      app.add_option("--cuda-arch", out.cuda_arch,
                     "CUDA architectures to compile kernels for, comma-separated (default sm_80,sm_90; PTX of the "
                     "newest is embedded too, for newer GPUs)")
          ->type_name("sm_XY,...");
  app.add_flag("--verbose", compile_flags.verbose, "print one line per pass (symbols, constants, time) on stderr");
  app.add_option("--cache", out.cache,
                 "how the runtime picks a variant: \"constant values\" (default: guards checked on every call), "
                 "\"same input\" (checked on the first call only, then reused: unsafe if shapes change), "
                 "\"no caching\" (selected afresh on every call, nothing remembered), \"symbolic values\" (one variant whose "
                 "kernels take the sizes named in --shapes at run time, within --dim's ranges; cpp, blas and torch executors)")
      ->type_name("MODE");
  app.add_option("-j,--jobs", out.jobs,
                 "C++ compiles to run at once (default 0: one per core); large models are split into several "
                 "sources (--split-lines)")
      ->type_name("N");
  app.add_option("--split-lines", out.split_lines,
                 "split a variant whose generated code exceeds N lines into sources of about N lines, compiled in "
                 "parallel (default " + std::to_string(kDefaultSplitLines) + "; the split depends on the code only, "
                 "so the output is the same on every machine)")
      ->type_name("N");
  app.add_option("--emit-build", out.emit_build,
                 "write the generated sources and a build.ninja into DIR instead of compiling (`ninja -C DIR` builds "
                 "DIR/model.so and DIR/model.json, byte-identical to thunderc's own build), e.g. for distributed "
                 "builds; $THUNDERC_CXX_LAUNCHER (ccache, sccache, distcc) prefixes the compile commands")
      ->type_name("DIR");
  out.cache_dir_option =
      app.add_option("--cache-dir", out.cache_dir,
                     "compile cache: reuse an earlier compile of the same model, options, thunderc and C++ "
                     "compiler from DIR (a hit writes the same bytes and says so), else compile and store there; "
                     "safe for concurrent jobs (default: $THUNDERC_CACHE_DIR; an empty value turns it off; "
                     "`thunderc cache --clear` empties it)")
          ->type_name("DIR");
  app.add_option("--cpu-target", out.cpu_target,
                 "instruction set of the model's host code (its CPU kernels): x86-64-v3 (default: AVX2, FMA; every "
                 "x86-64 server CPU since 2013-2015), x86-64-v4 (AVX-512), x86-64-v2 (SSE4.2), x86-64 (any) or "
                 "native (the highest of these this machine has); a comma-separated list (x86-64-v3,x86-64-v4) "
                 "builds the code once per level into the one .so and the runtime runs the best level the CPU "
                 "has; it runs none of the variants on a CPU below every level, naming what is missing")
      ->type_name("LEVEL[,LEVEL...]");
  app.add_option("--conv-algorithm", out.conv_algorithm,
                 "how the onednn executor computes convolutions: auto (default: in bounded variants, Winograd "
                 "F(2x2,3x3) for dense 3x3 stride-1 convolutions of 32+ channels whose output map is large next to "
                 "their weights (oh*ow >= 4 sqrt(c*oc)) and proven finite, where oneDNN has the kernel for the CPU that runs the model (AVX-512): "
                 "1.2-1.5x faster there, rounding differs from the direct kernel's by about 1e-6 relative; Winograd "
                 "would turn inf inputs into NaN, so such calls run the exact variant) or direct (oneDNN's direct "
                 "kernels only)")
      ->type_name("auto|direct");
  app.add_flag("--cuda-graphs", out.cuda_graphs,
               "CUDA variants replay a CUDA graph (Thunder's \"reduce-overhead\"): the runtime captures a variant's "
               "launches on its second call on a stream (the first sets up the library plans) and replays them from "
               "then on, copying inputs and outputs through static device buffers; recorded in the manifest");
  app.add_flag("--profile", out.profile,
               "time every operation of each CPU variant (two clock reads and two atomic adds per operation, "
               "70-85 ns on a 2-core AMD EPYC VM): thunderc bench then prints where the time goes, and the "
               "runtime's thunderc_model_operation_profile reads the counters; recorded in the manifest");
  app.add_flag("--disable-torch-autograd", out.disable_torch_autograd,
               "forward-only (inference) code, the default; recorded in the manifest (thunder.jit's option; "
               "--autograd compiles a training variant instead)");
  bool list_transforms = false;
  app.add_flag("--list-transforms", list_transforms, "list the trace transforms in pipeline order, and the default list");
  bool list_ops = false, ops_json = false, ops_markdown = false;
  app.add_flag("--list-ops", list_ops,
               "list the operator catalog: each operator's executors and the ATen operators imported as it (docs/ops.md)");
  app.add_flag("--json", ops_json, "with --list-ops: a JSON array, one object per operator (name, category, aten, "
                                   "torchscript, pt2, executors)");
  app.add_flag("--markdown", ops_markdown, "with --list-ops: the Markdown of docs/ops.md");

  CLI::App* examine_cmd = app.add_subcommand("examine", "show a model's traced program, operators and executors");
  ModelFlags examine_flags;
  bool verbose = false;
  examine_flags.add_to(*examine_cmd, true);
  examine_cmd->add_flag("-v,--verbose", verbose,
                        "also print the TorchScript graph and source locations, and one line per pass on stderr");
  std::string dot_path;
  examine_cmd->add_option("--dot", dot_path,
                          "also write the final trace as a Graphviz DOT picture (operations coloured by executor, "
                          "fusion regions as clusters, edges labelled with shapes) to FILE (\"-\": print only the "
                          "picture, on stdout)")
      ->type_name("FILE");

  add_run_command(app);
  add_grad_command(app);
  add_inspect_command(app);
  add_bench_command(app);
  add_cache_command(app);
  add_pack_command(app);
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return commands::parse_error_exit(app, e);
  }

  if (version) {
    print_version();
    return 0;
  }
  if (list) return list_executors();
  if ((ops_json || ops_markdown) && !list_ops) user_error("--json and --markdown go with --list-ops (inspect has its own --json)");
  if (list_ops) {
    if (ops_json && ops_markdown) user_error("--list-ops takes one of --json and --markdown");
    std::cout << list_ops_text(ops_json ? ListOpsFormat::Json : ops_markdown ? ListOpsFormat::Markdown : ListOpsFormat::Text);
    return 0;
  }
  if (list_transforms) {
    std::cout << list_transforms_text();
    return 0;
  }
  // run, inspect and bench do their work in their callbacks, during parse().
  if (app.got_subcommand("run") || app.got_subcommand("grad") || app.got_subcommand("inspect") || app.got_subcommand("bench") ||
      app.got_subcommand("cache") || app.got_subcommand("pack"))
    return 0;
  if (examine_cmd->parsed()) {
    examine_flags.verbose = verbose;
    return examine(examine_flags, verbose, dot_path);
  }
  if (compile_flags.model.empty()) {
    std::cout << app.help();
    return kExitUserError;
  }
  out.key_options = cache_key_options(app);
  return compile(compile_flags, out);
}

}  // namespace
}  // namespace thunderc

namespace {

// The last words of a failed run: text as always, or one JSON diagnostic (--diagnostics json).
int fail(const char* code, const std::string& text_line, const std::string& message, int exit_code) {
  if (thunderc::diagnostic_format() == thunderc::DiagnosticFormat::Json)
    std::cerr << thunderc::diagnostic_json({"error", code, message, ""}) << "\n";
  else
    std::cerr << text_line << "\n";
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using thunderc::printable_message;
  try {
    return thunderc::run(argc, argv);
  } catch (const thunderc::UserError& e) {
    const std::string m = printable_message(e.what());
    return fail("user-error", "thunderc: error: " + m, m, thunderc::kExitUserError);
  } catch (const thunderc::InternalError& e) {
    const std::string m = printable_message(e.what(), 8000);
    return fail("internal-error", "thunderc: " + m, m, thunderc::kExitInternalError);
  } catch (const std::bad_alloc&) {
    const std::string m = "out of memory (the model or its shapes need more memory than this machine can give)";
    return fail("out-of-memory", "thunderc: error: " + m, m, thunderc::kExitUserError);
  } catch (const std::exception& e) {
    const std::string m = std::string("internal error (this is a bug in thunderc, please report it): ") + e.what();
    return fail("internal-error", "thunderc: " + m, m, thunderc::kExitInternalError);
  } catch (...) {
    const std::string m = "internal error (this is a bug in thunderc, please report it): unknown exception";
    return fail("internal-error", "thunderc: " + m, m, thunderc::kExitInternalError);
  }
}
