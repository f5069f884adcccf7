// thunderc_gpu_check: run a CUDA-compiled thunderc model on cuda:0 through libthunderc_runtime, check its
// outputs against expected .npy files and time it with CUDA events. Needs only the runtime (which reaches the
// CUDA driver through dlopen("libcuda.so.1")): no LibTorch, no CUDA toolkit library.
//
//   thunderc_gpu_check MODEL.so --input x.npy [--input NAME=FILE.npy ...] [--expect y.npy ...]
//                      [--rtol R] [--atol A] [--iters N] [--warmup W] [--device N] [--output-dir DIR] [--json]
//
// Exit status: 0 everything ran and matched, 1 error (bad arguments, no GPU, the model cannot run here, a run
// failed), 2 ran but an output differs from --expect beyond the tolerances.
#include <thunderc/npy.hpp>
#include <thunderc/runtime.h>
#include <thunderc/runtime.hpp>
#include <thunderc/tensor.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* const kUsage =
    "usage: thunderc_gpu_check MODEL.so --input FILE.npy [--input NAME=FILE.npy ...] [--expect FILE.npy ...]\n"
    "                          [--rtol R] [--atol A] [--equal-nan] [--iters N] [--warmup W] [--device N]\n"
    "                          [--output-dir DIR] [--json]\n"
    "       thunderc_gpu_check --probe [--device N] [--json]\n"
    "\n"
    "--probe says what the runtime finds (CUDA devices, whether cuda:N can be used and why not, its compute\n"
    "capability) and exits 0 when cuda:N is usable, else 1.\n"
    "\n"
    "Runs the model's CUDA variant on cuda:N (default 0): copies the inputs to the GPU with the runtime's device\n"
    "helpers, runs once, copies the outputs back and compares each with its --expect file (numpy.isclose: |got - want|\n"
    "<= atol + rtol * |want| for finite values, an infinity matches only itself, NaN matches NaN only with\n"
    "--equal-nan; rtol/atol finite and >= 0, defaults 1e-4 and 1e-5), then times --iters runs (default 100, after --warmup 10) with\n"
    "CUDA events on a stream of its own: min / median / p90 ms per call (each call synchronized), and the mean\n"
    "of back-to-back calls (pipelined). --output-dir writes output0.npy, ... of the first run. --json prints one\n"
    "JSON object (also on errors, with \"error\").\n"
    "Exit status: 0 ok, 1 error (no GPU, no CUDA variant, bad arguments, a failed run), 2 an output differs.\n";

struct Flags {
  std::string model;
  std::vector<std::string> inputs;  // FILE.npy or NAME=FILE.npy
  std::vector<std::string> expect;
  double rtol = 1e-4, atol = 1e-5;
  bool equal_nan = false;
  int iters = 100, warmup = 10, device = 0;
  std::string output_dir;
  bool json = false;
  bool probe = false;
};

// ---- a small JSON writer (the runner links nothing but the runtime and npy) -------------------------------

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN/Inf
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& raw_value) {
    fields_.emplace_back(key, raw_value);
    return *this;
  }
  JsonObject& str(const std::string& key, const std::string& v) { return add(key, quote(v)); }
  JsonObject& number(const std::string& key, double v) { return add(key, num(v)); }
  JsonObject& integer(const std::string& key, long long v) { return add(key, std::to_string(v)); }
  JsonObject& boolean(const std::string& key, bool v) { return add(key, v ? "true" : "false"); }
  std::string dump() const {
    std::string o = "{";
    for (size_t i = 0; i < fields_.size(); ++i)
      o += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
    return o + "}";
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// Short numbers for the text report.
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string shape_json(const std::vector<int64_t>& shape) { return shape_text(shape); }

// ---- errors ------------------------------------------------------------------------------------------------

struct Failure {
  std::string message;
};

[[noreturn]] void fail(const std::string& message) { throw Failure{message}; }

// ---- comparison --------------------------------------------------------------------------------------------


struct Comparison {
  bool ok = true;
  std::string problem;  // dtype/shape mismatch or the worst element
  double max_abs_diff = 0;
  size_t bad = 0, numel = 0;
};

// numpy.isclose's rule per element (thunderc/tensor.hpp: compare_values): equal infinities match, an infinity
// matches nothing else, NaN matches NaN only with --equal-nan.
Comparison compare(const thunderc::HostTensor& got, const thunderc::HostTensor& want, double rtol, double atol,
                   bool equal_nan) {
  Comparison c;
  c.numel = got.numel();
  if (thunderc::dtype_string(got.dtype()) != thunderc::dtype_string(want.dtype()) || got.shape() != want.shape()) {
    c.ok = false;
    c.max_abs_diff = NAN;
    c.problem = "got " + thunderc::dtype_string(got.dtype()) + shape_text(got.shape()) + ", expected " +
                thunderc::dtype_string(want.dtype()) + shape_text(want.shape());
    return c;
  }
  const thunderc::ValueComparison v = thunderc::compare_values(got, want, rtol, atol, equal_nan);
  c.bad = v.mismatched;
  c.max_abs_diff = v.max_abs_diff;
  if (c.bad) {
    c.ok = false;
    const double a = element_as_double(got, v.worst), b = element_as_double(want, v.worst);
    std::ostringstream os;
    os << c.bad << " of " << c.numel << " elements differ (rtol " << rtol << ", atol " << atol
       << "); largest difference " << thunderc::value_difference(a, b, equal_nan) << " at element " << v.worst
       << ": got " << a << ", expected " << b;
    if (!equal_nan && (std::isnan(a) || std::isnan(b))) os << " (NaN matches NaN only with --equal-nan)";
    c.problem = os.str();
  }
  return c;
}

bool bitwise_equal(const thunderc::HostTensor& a, const thunderc::HostTensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

struct Stats {
  double min = 0, median = 0, p90 = 0, mean = 0;
};

Stats stats_of(std::vector<double> t) {
  Stats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  s.min = t.front();
  s.median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));  // nearest rank
  s.p90 = t[std::max<size_t>(rank, 1) - 1];
  double sum = 0;
  for (double v : t) sum += v;
  s.mean = sum / static_cast<double>(n);
  return s;
}

std::string device_text(DLDevice d) {
  if (d.device_type == kDLCPU) return "cpu";
  if (d.device_type == kDLCUDA) return "cuda:" + std::to_string(d.device_id);
  return "device(" + std::to_string(d.device_type) + ":" + std::to_string(d.device_id) + ")";
}

// RAII for the runtime's stream and events.
struct Stream {
  DLDevice device{};
  void* s = nullptr;
  ~Stream() {
    if (s) thunderc_status_free(thunderc_device_stream_destroy(device, s));
  }
};
struct Event {
  thunderc_device_event e = nullptr;
  ~Event() { thunderc_device_event_destroy(e); }
};

// ---- argument parsing --------------------------------------------------------------------------------------

int parse_int(const std::string& flag, const std::string& v, int min) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < min || x > 1000000000) fail(flag + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'");
  return static_cast<int>(x);
}

double parse_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x) || x < 0) fail(flag + " expects a finite number >= 0, got '" + v + "'");
  return x;
}

Flags parse(int argc, char** argv) {
  Flags f;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= args.size()) fail(flag + " needs a value");
      return args[++i];
    };
    // --flag=value as well as --flag value
    std::string flag = a, inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      flag = a.substr(0, a.find('='));
      inline_value = a.substr(a.find('=') + 1);
      has_inline = true;
    }
    auto get = [&](const std::string& name) { return has_inline ? inline_value : value(name); };
    if (flag == "--input" || flag == "-i") f.inputs.push_back(get(flag));
    else if (flag == "--expect") f.expect.push_back(get(flag));
    else if (flag == "--rtol") f.rtol = parse_double(flag, get(flag));
    else if (flag == "--atol") f.atol = parse_double(flag, get(flag));
    else if (flag == "--iters" || flag == "--iterations") f.iters = parse_int(flag, get(flag), 1);
    else if (flag == "--warmup") f.warmup = parse_int(flag, get(flag), 0);
    else if (flag == "--device") f.device = parse_int(flag, get(flag), 0);
    else if (flag == "--output-dir") f.output_dir = get(flag);
    else if (a == "--json") f.json = true;
    else if (a == "--equal-nan") f.equal_nan = true;
    else if (a == "--probe") f.probe = true;
    else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) fail("unknown option '" + a + "'");
    else if (f.model.empty()) f.model = a;
    else f.inputs.push_back(a);  // further positional arguments are inputs, in order
  }
  if (f.probe) {
    if (!f.model.empty() || !f.inputs.empty()) fail("--probe takes no model or inputs");
    return f;
  }
  if (f.model.empty()) fail("missing MODEL.so");
  if (f.inputs.empty()) fail("no --input given (one .npy per model input)");
  return f;
}

// ---- the check ---------------------------------------------------------------------------------------------

struct Result {
  JsonObject json;
  std::vector<std::string> lines;  // human-readable report
  int exit_code = 0;
};

void check_run(const Flags& f, Result& r) {
  r.json.str("model", f.model);
  r.json.str("runtime_version", thunderc_runtime_version());
  const DLDevice gpu{kDLCUDA, f.device};

  std::optional<thunderc::Model> model;
  try {
    model.emplace(f.model);
  } catch (const thunderc::Error& e) {
    fail(std::string("cannot open ") + f.model + ": " + e.code_name() + ": " + e.what());
  }

  // Inputs: NAME=FILE.npy by name, FILE.npy in input order.
  const std::vector<std::string> names = model->input_names();
  std::vector<std::string> files(names.size());
  size_t next = 0;
  for (const std::string& arg : f.inputs) {
    const size_t eq = arg.find('=');
    size_t index = names.size();
    std::string file = arg;
    if (eq != std::string::npos && eq > 0) {
      const std::string name = arg.substr(0, eq);
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) index = i;
      if (index == names.size()) {
        std::string known;
        for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
        fail("unknown input '" + name + "' in --input " + arg + "; " + f.model + " takes: " + known);
      }
      file = arg.substr(eq + 1);
    } else {
      while (next < names.size() && !files[next].empty()) ++next;
      if (next == names.size()) fail("too many inputs: " + f.model + " takes " + std::to_string(names.size()));
      index = next;
    }
    if (!files[index].empty()) fail("input '" + names[index] + "' given twice");
    files[index] = file;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (files[i].empty()) fail("missing --input for '" + names[i] + "'");
  std::vector<thunderc::HostTensor> inputs;
  std::string shapes;
  for (size_t i = 0; i < names.size(); ++i) {
    try {
      inputs.push_back(thunderc::npy::load(files[i]));
    } catch (const std::exception& e) {
      fail("input '" + names[i] + "': " + e.what());
    }
    shapes += (i ? "," : "") + names[i] + "=";
    for (size_t d = 0; d < inputs.back().shape().size(); ++d)
      shapes += (d ? "x" : "") + std::to_string(inputs.back().shape()[d]);
  }
  r.json.str("shapes", shapes);

  // The CUDA variant that takes these inputs once they are on the GPU (selection reads shapes, dtypes, devices).
  std::vector<DLTensor> probe;
  for (const thunderc::HostTensor& t : inputs) probe.push_back(t.dl());
  for (DLTensor& t : probe) t.device = gpu;
  std::string variants;
  bool any_cuda = false;
  for (const thunderc::VariantInfo& v : model->variants()) {
    variants += (variants.empty() ? "" : "; ") + ("#" + std::to_string(v.id) + " " + v.signature);
    any_cuda = any_cuda || v.device.device_type == kDLCUDA;
  }
  if (!any_cuda) fail(f.model + " has no CUDA variant (compile it with --device cuda); variants: " + variants);

  // No GPU (or no driver): say what the runtime found and stop.
  int32_t count = 0;
  thunderc_status_free(thunderc_device_count(kDLCUDA, &count));
  r.json.integer("cuda_devices", count);
  if (thunderc_status st = thunderc_device_available(gpu)) {
    const std::string why = thunderc_status_message(st);
    thunderc_status_free(st);
    fail("no usable GPU: " + why + " (the runtime found " + std::to_string(count) + " CUDA device(s))");
  }

  size_t variant_id = 0;
  {
    thunderc_status st = thunderc_model_select_variant(model->get(), probe.data(), probe.size(), &variant_id);
    if (st) {
      const std::string why = thunderc_status_message(st);
      thunderc_status_free(st);
      fail("no CUDA variant of " + f.model + " takes these inputs on " + device_text(gpu) + ": " + why);
    }
  }
  const thunderc::VariantInfo variant = model->variant(variant_id);
  r.json.integer("variant", static_cast<long long>(variant.id)).str("signature", variant.signature);
  r.json.str("device", device_text(gpu));
  int32_t major = 0, minor = 0;
  thunderc::check(thunderc_device_compute_capability(gpu, &major, &minor));
  r.json.str("compute_capability", std::to_string(major) + "." + std::to_string(minor));

  try {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string image = model->prepare_device(gpu);
    const double prepare_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.json.str("image", image).number("prepare_ms", prepare_ms);
    r.lines.push_back("model:      " + f.model + ", variant #" + std::to_string(variant.id) + " (" +
                      variant.signature + ")");
    r.lines.push_back("device:     " + device_text(gpu) + " (sm_" + std::to_string(major) + std::to_string(minor) +
                      "), loaded " + image + " in " + fmt(prepare_ms) + " ms");

    Stream stream{gpu};
    thunderc::check(thunderc_device_stream_create(gpu, &stream.s));
    thunderc::RunOptions options;
    options.cuda_stream = stream.s;

    // Inputs to the device, one run with runtime-allocated outputs, outputs back to the host.
    std::vector<thunderc::DeviceTensor> d_in;
    std::vector<DLTensor> d_in_dl;
    for (const thunderc::HostTensor& t : inputs) d_in.push_back(thunderc::DeviceTensor::from_host(t, gpu, stream.s));
    for (const thunderc::DeviceTensor& t : d_in) d_in_dl.push_back(t.dl());
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<thunderc::ManagedTensor> first = model->run_alloc(d_in_dl, options);
    std::vector<thunderc::HostTensor> outputs;
    for (const thunderc::ManagedTensor& t : first) outputs.push_back(t.to_host(stream.s));
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    r.json.number("first_run_ms", first_ms);
    std::string out_shapes = "[";
    for (size_t i = 0; i < outputs.size(); ++i) out_shapes += (i ? ", " : "") + shape_json(outputs[i].shape());
    r.json.add("output_shapes", out_shapes + "]");

    if (!f.output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(f.output_dir, ec);
      if (ec) fail("cannot create --output-dir " + f.output_dir + ": " + ec.message());
      for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string path = f.output_dir + "/output" + std::to_string(i) + ".npy";
        try {
          thunderc::npy::save(path, outputs[i]);
        } catch (const std::exception& e) {
          fail("cannot write " + path + ": " + e.what());
        }
      }
      r.json.str("output_dir", f.output_dir);
    }

    // Parity.
    if (f.expect.size() > outputs.size())
      fail(std::to_string(f.expect.size()) + " --expect files for " + std::to_string(outputs.size()) + " output(s)");
    bool parity_ok = true;
    double parity_max = 0;
    std::string parity_items = "[";
    for (size_t o = 0; o < f.expect.size(); ++o) {
      thunderc::HostTensor want;
      try {
        want = thunderc::npy::load(f.expect[o]);
      } catch (const std::exception& e) {
        fail("--expect for output" + std::to_string(o) + ": " + e.what());
      }
      const Comparison c = compare(outputs[o], want, f.rtol, f.atol, f.equal_nan);
      parity_ok = parity_ok && c.ok;
      if (std::isnan(c.max_abs_diff) || std::isnan(parity_max)) parity_max = NAN;
      else parity_max = std::max(parity_max, c.max_abs_diff);
      JsonObject item;
      item.str("expect", f.expect[o]).boolean("ok", c.ok).number("max_abs_diff", c.max_abs_diff);
      item.integer("mismatched", static_cast<long long>(c.bad)).integer("numel", static_cast<long long>(c.numel));
      if (!c.problem.empty()) item.str("problem", c.problem);
      parity_items += (o ? ", " : "") + item.dump();
      r.lines.push_back("output" + std::to_string(o) + ":    " + (c.ok ? "matches " : "DIFFERS from ") + f.expect[o] +
                        " (max abs diff " + fmt(c.max_abs_diff) + ", rtol " + fmt(f.rtol) + ", atol " + fmt(f.atol) +
                        ")" + (c.problem.empty() ? "" : ": " + c.problem));
    }
    r.json.add("parity", parity_items + "]");
    if (!f.expect.empty()) {
      r.json.boolean("parity_ok", parity_ok).number("max_abs_diff", parity_max);
      r.json.number("rtol", f.rtol).number("atol", f.atol);
    }
    if (!parity_ok) r.exit_code = 2;

    // Timing: caller-provided device outputs, each call between two events on the stream.
    std::vector<thunderc::DeviceTensor> d_out;
    std::vector<DLTensor> d_out_dl;
    for (const thunderc::HostTensor& t : outputs) d_out.emplace_back(t.dtype(), t.shape(), gpu);
    for (const thunderc::DeviceTensor& t : d_out) d_out_dl.push_back(t.dl());
    Event start, stop;
    thunderc::check(thunderc_device_event_create(gpu, &start.e));
    thunderc::check(thunderc_device_event_create(gpu, &stop.e));
    for (int i = 0; i < f.warmup; ++i) model->run(d_in_dl, d_out_dl, options);
    thunderc::check(thunderc_device_synchronize(gpu, stream.s));
    std::vector<double> times;
    times.reserve(static_cast<size_t>(f.iters));
    for (int i = 0; i < f.iters; ++i) {
      thunderc::check(thunderc_device_event_record(start.e, stream.s));
      model->run(d_in_dl, d_out_dl, options);
      thunderc::check(thunderc_device_event_record(stop.e, stream.s));
      float ms = 0;
      thunderc::check(thunderc_device_event_elapsed_ms(start.e, stop.e, &ms));  // waits for the call
      times.push_back(ms);
    }
    // Back to back: the same number of calls enqueued without waiting in between (launch overhead overlaps).
    thunderc::check(thunderc_device_event_record(start.e, stream.s));
    for (int i = 0; i < f.iters; ++i) model->run(d_in_dl, d_out_dl, options);
    thunderc::check(thunderc_device_event_record(stop.e, stream.s));
    float total_ms = 0;
    thunderc::check(thunderc_device_event_elapsed_ms(start.e, stop.e, &total_ms));
    const double pipelined = total_ms / f.iters;

    // The timed runs wrote the same outputs again: they must equal the first run's.
    bool stable = true;
    for (size_t i = 0; i < d_out.size(); ++i) stable = stable && bitwise_equal(d_out[i].to_host(stream.s), outputs[i]);

    const Stats s = stats_of(times);
    r.json.integer("iters", f.iters).integer("warmup", f.warmup);
    r.json.number("min_ms", s.min).number("median_ms", s.median).number("p90_ms", s.p90).number("mean_ms", s.mean);
    r.json.number("pipelined_ms", pipelined).boolean("repeatable", stable);
    r.lines.push_back("timing:     " + std::to_string(f.iters) + " calls after " + std::to_string(f.warmup) +
                      " warmup, CUDA events on a stream of its own");
    r.lines.push_back("thunderc:   min " + fmt(s.min) + " ms, median " + fmt(s.median) + " ms, p90 " + fmt(s.p90) +
                      " ms; back to back " + fmt(pipelined) + " ms/call");
    r.lines.push_back(std::string("repeat:     ") +
                      (stable ? "timed runs reproduce the first run's outputs bit for bit"
                              : "WARNING: timed runs gave outputs that differ from the first run"));
  } catch (const thunderc::Error& e) {
    fail(std::string("running ") + f.model + " on " + device_text(gpu) + " failed: " + e.code_name() + ": " +
         e.what());
  }
}

// --probe: what the runtime sees of the GPUs.
int probe(const Flags& f) {
  const DLDevice gpu{kDLCUDA, f.device};
  JsonObject j;
  j.str("runtime_version", thunderc_runtime_version());
  int32_t count = 0;
  thunderc_status_free(thunderc_device_count(kDLCUDA, &count));
  j.integer("cuda_devices", count).str("device", device_text(gpu));
  std::string why;
  if (thunderc_status st = thunderc_device_available(gpu)) {
    why = thunderc_status_message(st);
    thunderc_status_free(st);
  }
  int32_t major = 0, minor = 0;
  if (why.empty()) {
    if (thunderc_status st = thunderc_device_compute_capability(gpu, &major, &minor)) {
      why = thunderc_status_message(st);
      thunderc_status_free(st);
    }
  }
  j.boolean("available", why.empty());
  if (why.empty()) j.str("compute_capability", std::to_string(major) + "." + std::to_string(minor));
  else j.str("error", why);
  if (f.json) {
    std::cout << j.dump() << std::endl;
  } else {
    std::cout << "runtime " << thunderc_runtime_version() << ": " << count << " CUDA device(s); " << device_text(gpu)
              << (why.empty() ? " usable, compute capability " + std::to_string(major) + "." + std::to_string(minor)
                              : " not usable: " + why)
              << std::endl;
  }
  if (!why.empty()) std::cerr << "thunderc_gpu_check: error: no usable GPU: " << why << "\n";
  return why.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 1;
  }
  Flags f;
  Result r;
  try {
    f = parse(argc, argv);
  } catch (const Failure& e) {
    std::cerr << "thunderc_gpu_check: error: " << e.message << "\n\n" << kUsage;
    return 1;
  }
  if (f.probe) return probe(f);
  try {
    check_run(f, r);
  } catch (const Failure& e) {
    std::cerr << "thunderc_gpu_check: error: " << e.message << "\n";
    if (f.json) {
      r.json.boolean("ok", false).str("error", e.message);
      std::cout << r.json.dump() << std::endl;
    }
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "thunderc_gpu_check: error: " << e.what() << "\n";
    if (f.json) {
      r.json.boolean("ok", false).str("error", e.what());
      std::cout << r.json.dump() << std::endl;
    }
    return 1;
  }
  if (f.json) {
    r.json.boolean("ok", r.exit_code == 0);
    std::cout << r.json.dump() << std::endl;
  } else {
    for (const std::string& line : r.lines) std::cout << line << "\n";
    std::cout.flush();
  }
  return r.exit_code;
}
