// thunderc run: see run.h.
#include "cli/commands/run.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "cli/messages.h"
#include "core/ir/error.h"
#include "core/util/diagnostics.h"
#include "thunderc/npy.hpp"

namespace thunderc {
namespace commands {

int parse_error_exit(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help and the like
  std::string what = e.what();
  // CLI11 writes a range check's bounds in full (hundreds of digits); thunderc checks its numbers itself.
  if (diagnostic_format() == DiagnosticFormat::Json) {
    std::cerr << diagnostic_json({"error", "usage", escape_text(what, 300) + " (run '" + app.get_name() +
                                                        " --help' for the options)", ""})
              << "\n";
    return 1;
  }
  std::cerr << "thunderc: error: " << escape_text(what, 300) << "\n"
            << "(run '" << app.get_name() << " --help' for the options)\n";
  return 1;
}

void check_tolerance(const char* flag, double value) {
  if (!std::isfinite(value) || value < 0) user_error(flag, " must be a finite number >= 0, got ", value);
}

std::string runtime_message(const Error& e, const std::string& context, const std::string& path) {
  std::string msg = e.what();
  if (!path.empty()) {
    const std::string file = std::filesystem::path(path).filename().string();
    if (msg.find(path) != std::string::npos || (!file.empty() && msg.find(file) != std::string::npos)) return msg;
  }
  return context + ": " + msg;
}

void add_model_argument(CLI::App& cmd, std::string& model) {
  cmd.add_option("MODEL", model, "the compiled model (OUT.json beside it is used when present)")
      ->type_name("OUT.so")
      ->required();
}

Model open_model(const std::string& so_path, int threads) {
  if (threads < 0) user_error("--threads must be >= 0 (0: the default), got ", threads);
  OpenOptions options;
  options.num_threads = threads;
  try {
    return Model(so_path, options);
  } catch (const Error& e) {
    throw UserError(runtime_message(e, "cannot open model '" + so_path + "'", so_path));
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensor_text(DLDataType dtype, const std::vector<int64_t>& shape) {
  return dtype_string(dtype) + shape_text(shape);
}

std::string device_text(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(device.device_id);
    default: return "device(" + std::to_string(device.device_type) + ":" + std::to_string(device.device_id) + ")";
  }
}

std::string inputs_text(const Model& model) {
  std::string s;
  for (size_t i = 0; i < model.num_inputs(); ++i) {
    if (i) s += ", ";
    s += std::string(thunderc_model_input_name(model.get(), i)) + ": " +
         dtype_string(thunderc_model_input_dtype(model.get(), i));
  }
  return s.empty() ? "(none)" : s;
}

std::string unavailable_reason(DLDevice device) {
  thunderc_status st = thunderc_device_available(device);
  if (!st) return "no " + device_text(device) + " here";
  std::string why = thunderc_status_message(st);
  thunderc_status_free(st);
  return why;
}

std::string variants_text(const Model& model) {
  std::string s;
  for (const VariantInfo& v : model.variants()) {
    if (!s.empty()) s += "; ";
    s += "#" + std::to_string(v.id) + " " + v.signature;
    if (!v.available) s += " (unavailable: " + unavailable_reason(v.device) + ")";
  }
  return s;
}

std::optional<DLDevice> cuda_device_for(const Model& model, const std::vector<HostTensor>& inputs) {
  std::vector<DLTensor> dl;
  for (const HostTensor& t : inputs) dl.push_back(t.dl());
  size_t v = 0;
  thunderc_status host = thunderc_model_select_variant(model.get(), dl.data(), dl.size(), &v);
  if (!host) return std::nullopt;  // a CPU variant takes the host tensors
  // Would a CUDA variant take the same tensors on cuda:0? (Selection reads only shapes, dtypes and devices.)
  const DLDevice gpu{kDLCUDA, 0};
  for (DLTensor& t : dl) t.device = gpu;
  thunderc_status cuda = thunderc_model_select_variant(model.get(), dl.data(), dl.size(), &v);
  if (!cuda) {
    thunderc_status_free(host);
    return gpu;
  }
  // Report the CUDA variant's trouble when one matched but cannot run here, else why nothing matched.
  const bool device_missing = thunderc_status_code(cuda) == THUNDERC_STATUS_DEVICE_UNAVAILABLE;
  thunderc_status_free(device_missing ? host : cuda);
  check(device_missing ? cuda : host);
  return std::nullopt;
}

namespace {
std::string takes_text(const Model& model, const std::string& so_path) {
  return so_path + " takes " + std::to_string(model.num_inputs()) + " input" + (model.num_inputs() == 1 ? "" : "s") +
         ": " + commands::inputs_text(model);
}

HostTensor load_input(const std::string& name, const std::string& file) {
  try {
    return npy::load(file);
  } catch (const npy::Error& e) {
    user_error("input '", name, "': ", e.what());
  }
}

std::vector<std::optional<std::string>> input_files(const Model& model, const std::string& so_path,
                                                    const std::vector<std::string>& named,
                                                    const std::vector<std::string>& positional) {
  const std::vector<std::string> names = model.input_names();
  const size_t n = names.size();

  // Which file feeds which input: named ones first, then the positional files fill the rest in order.
  std::vector<std::optional<std::string>> files(n);
  for (const std::string& arg : named) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      user_error("--input expects NAME=FILE.npy, got '", arg, "'; ", takes_text(model, so_path));
    const std::string name = arg.substr(0, eq);
    size_t index = n;
    for (size_t i = 0; i < n; ++i)
      if (names[i] == name) index = i;
    if (index == n) user_error("unknown input '", name, "' in --input ", arg, "; ", takes_text(model, so_path));
    if (files[index])
      user_error("input '", name, "' given twice (", *files[index], " and ", arg.substr(eq + 1), ")");
    files[index] = arg.substr(eq + 1);
  }
  size_t next = 0;
  for (const std::string& file : positional) {
    while (next < n && files[next]) ++next;
    if (next == n) {
      user_error("too many input files: ", file, " has no input left to feed; ", takes_text(model, so_path),
                 " (", named.size(), " given with --input, ", positional.size(), " positionally)");
    }
    files[next++] = file;
  }
  return files;
}

}  // namespace

std::vector<std::optional<HostTensor>> read_named_inputs(const Model& model, const std::string& so_path,
                                                         const std::vector<std::string>& named) {
  const std::vector<std::optional<std::string>> files = input_files(model, so_path, named, {});
  const std::vector<std::string> names = model.input_names();
  std::vector<std::optional<HostTensor>> inputs(files.size());
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i]) inputs[i] = load_input(names[i], *files[i]);
  return inputs;
}

std::vector<HostTensor> read_inputs(const Model& model, const std::string& so_path,
                                    const std::vector<std::string>& named, const std::vector<std::string>& positional) {
  const std::vector<std::optional<std::string>> files = input_files(model, so_path, named, positional);
  const std::vector<std::string> names = model.input_names();
  const size_t n = names.size();
  std::string missing;
  for (size_t i = 0; i < n; ++i)
    if (!files[i]) missing += (missing.empty() ? "'" : ", '") + names[i] + "'";
  if (!missing.empty()) {
    user_error("missing input", (missing.find(',') == std::string::npos ? " " : "s "), missing, "; ",
               takes_text(model, so_path),
               " (give each as --input NAME=FILE.npy, or as FILE.npy arguments in this order)");
  }

  std::vector<HostTensor> inputs;
  inputs.reserve(n);
  for (size_t i = 0; i < n; ++i) inputs.push_back(load_input(names[i], *files[i]));

  return inputs;
}

void write_npy(const std::string& path, const HostTensor& t, const std::string& label) {
  try {
    npy::save(path, t);
  } catch (const npy::Error& e) {
    user_error("cannot write ", label, ": ", e.what());
  }
}

HostTensor ones_like(const HostTensor& t, const std::string& what) {
  const DLDataType d = t.dtype();
  const bool f32 = d.code == kDLFloat && d.bits == 32, f64 = d.code == kDLFloat && d.bits == 64;
  if ((!f32 && !f64) || d.lanes != 1) user_error(what, ": it is ", dtype_string(d), ", and only float32/float64 default to ones");
  HostTensor g(d, t.shape());
  for (size_t i = 0; i < g.numel(); ++i) {
    if (f32) static_cast<float*>(g.raw())[i] = 1.0f;
    else static_cast<double*>(g.raw())[i] = 1.0;
  }
  return g;
}

}  // namespace commands

namespace {

using commands::shape_text;

struct RunFlags {
  std::string model;
  std::vector<std::string> named;       // --input NAME=FILE.npy
  std::vector<std::string> positional;  // FILE.npy ...
  std::string output_dir;
  int threads = 0;
  std::vector<std::string> expect;  // --expect FILE.npy, one per output in order
  double rtol = 1e-4, atol = 1e-5;
  bool equal_nan = false;
};


// Compares each output with its expected .npy: same dtype and shape, then numpy.isclose's rule per element
// (|got - want| <= atol + rtol * |want| for finite values; infinities match only themselves; NaN matches NaN
// only with --equal-nan).
void check_expected(const RunFlags& f, const std::vector<HostTensor>& outputs) {
  if (f.expect.size() > outputs.size())
    user_error(f.expect.size(), " --expect files for ", outputs.size(), " output", outputs.size() == 1 ? "" : "s");
  for (size_t o = 0; o < f.expect.size(); ++o) {
    HostTensor want;
    try {
      want = npy::load(f.expect[o]);
    } catch (const npy::Error& e) {
      user_error("--expect for output", o, ": ", e.what());
    } catch (const std::bad_alloc&) {
      user_error("--expect for output", o, ": ", f.expect[o], ": out of memory reading it");
    }
    const HostTensor& got = outputs[o];
    const std::string label = "output" + std::to_string(o);
    if (dtype_string(want.dtype()) != dtype_string(got.dtype()) || want.shape() != got.shape())
      user_error(label, " is ", commands::tensor_text(got.dtype(), got.shape()), " but ", f.expect[o], " holds ",
                 commands::tensor_text(want.dtype(), want.shape()));
    const ValueComparison c = compare_values(got, want, f.rtol, f.atol, f.equal_nan);
    const std::string nan_note = f.equal_nan ? "" : " (NaN matches NaN only with --equal-nan)";
    if (c.mismatched > 0) {
      const double a = element_as_double(got, c.worst), b = element_as_double(want, c.worst);
      user_error(label, " differs from ", f.expect[o], " in ", c.mismatched, " of ", c.numel, " elements (rtol ",
                 f.rtol, ", atol ", f.atol, "); largest difference ", value_difference(a, b, f.equal_nan),
                 " at element ", c.worst, ": got ", a, ", expected ", b,
                 std::isnan(a) || std::isnan(b) ? nan_note : std::string());
    }
    std::cout << label << ": matches " << f.expect[o] << " (max abs diff " << c.max_abs_diff << ", rtol " << f.rtol
              << ", atol " << f.atol << (f.equal_nan ? ", NaN equal to NaN" : "") << ")\n";
  }
}

void run_command(const RunFlags& f) {
  commands::check_tolerance("--rtol", f.rtol);
  commands::check_tolerance("--atol", f.atol);
  Model model = commands::open_model(f.model, f.threads);
  const std::vector<HostTensor> inputs = commands::read_inputs(model, f.model, f.named, f.positional);

  std::vector<HostTensor> outputs;
  try {
    const std::optional<DLDevice> gpu = commands::cuda_device_for(model, inputs);
    if (!gpu) {
      outputs = model.run(inputs);
    } else {
      // A CUDA variant: inputs to the device, run, outputs back.
      const std::string image = model.prepare_device(*gpu);
      std::vector<DeviceTensor> on_device;
      std::vector<DLTensor> in_dl;
      for (const HostTensor& t : inputs) on_device.push_back(DeviceTensor::from_host(t, *gpu));
      for (const DeviceTensor& t : on_device) in_dl.push_back(t.dl());
      std::vector<ManagedTensor> outs = model.run_alloc(in_dl);
      for (const ManagedTensor& t : outs) outputs.push_back(t.to_host());  // waits for the run
      std::cout << "device: " << commands::device_text(*gpu) << " (" << image << ")\n";
    }
  } catch (const Error& e) {
    throw UserError(commands::runtime_message(e, "running '" + f.model + "' failed", f.model));
  }

  const std::filesystem::path dir = f.output_dir;
  if (!f.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) user_error("cannot create output directory '", f.output_dir, "': ", ec.message());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string label = "output" + std::to_string(i);
    const std::string path = (dir / (label + ".npy")).string();
    commands::write_npy(path, outputs[i], label);
    std::cout << label << ": " << commands::tensor_text(outputs[i].dtype(), outputs[i].shape()) << " -> " << path
              << "\n";
  }
  check_expected(f, outputs);
  std::cout.flush();
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "run a compiled model (OUT.so) on inputs read from .npy files");
  commands::add_model_argument(*cmd, flags->model);
  cmd->add_option("FILES", flags->positional, "input .npy files, in the model's input order (after any --input)")
      ->type_name("FILE.npy");
  cmd->add_option("-i,--input", flags->named, "an input by name; repeat for more inputs")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  cmd->add_option("--output-dir", flags->output_dir,
                  "directory for output0.npy, output1.npy, ... (created if missing; default: current directory)")
      ->type_name("DIR");
  cmd->add_option("--threads", flags->threads,
                  "threads the model may use (default 0: $THUNDERC_NUM_THREADS, else all cores)")
      ->type_name("N");
  cmd->add_option("--expect", flags->expect,
                  "expected output .npy files, in output order: fail unless each output matches within the tolerances")
      ->type_name("FILE.npy")
      ->allow_extra_args(false);
  cmd->add_option("--rtol", flags->rtol, "relative tolerance for --expect, finite and >= 0 (default 1e-4)");
  cmd->add_option("--atol", flags->atol, "absolute tolerance for --expect, finite and >= 0 (default 1e-5)");
  cmd->add_flag("--equal-nan", flags->equal_nan,
                "with --expect, a NaN output matches a NaN expected value (as numpy.isclose(equal_nan=True)); "
                "without it NaN matches nothing. Infinities match only an equal infinity");
  cmd->footer(
      "Example:\n"
      "  thunderc run mlp.so --input x=x.npy --output-dir out     writes out/output0.npy\n"
      "  thunderc run mlp.so x.npy                                 inputs positionally, in input order\n"
      "  thunderc run mlp.so x.npy --expect want.npy               check the output against a reference\n");
  cmd->callback([flags]() { run_command(*flags); });
}

}  // namespace thunderc
