// thunderc bench: see bench.h. The TorchScript side of --compare lives in bench_torchscript.cpp.
#include "cli/commands/bench.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "cli/commands/bench_torchscript.h"
#include "cli/commands/run.h"
#include "core/frontend/shape_spec.h"
#include "core/ir/error.h"

namespace thunderc {
namespace {

constexpr uint64_t kSeed = 0x7468756e64657263ull;  // "thunderc"

struct BenchFlags {
  std::string model;
  std::string shapes;
  int warmup = 10;
  int iterations = 100;
  int threads = 0;
  bool json = false;
  std::string compare;
  std::vector<std::string> named;  // --input NAME=FILE.npy: that input's contents instead of random ones
};

struct Stats {
  double min = 0, median = 0, p90 = 0;
};

Stats stats_of(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  Stats s;
  const size_t n = t.size();
  s.min = t.front();
  s.median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));  // nearest rank
  s.p90 = t[std::max<size_t>(rank, 1) - 1];
  return s;
}

// The variant whose shapes --shapes names (every input it names must match; others may be anything), or the
// first available variant when --shapes is absent.
size_t choose_variant(const Model& model, const std::vector<VariantInfo>& variants, const BenchFlags& f,
                      const Specialization& from_files) {
  if (variants.empty()) user_error(f.model, " has no variants");
  if (f.shapes.empty() && from_files.empty()) {
    for (const VariantInfo& v : variants) {
      if (!v.available) continue;
      for (const TensorSpec& in : v.inputs)
        for (int64_t d : in.shape)
          if (d < 0)
            user_error("variant #", v.id, " of ", f.model, " has symbolic dimensions (", v.signature,
                       "); pass --shapes with the sizes to time, e.g. --shapes ", in.name, "=...");
      return v.id;
    }
    user_error("no variant of ", f.model, " can run here: ", commands::variants_text(model));
  }
  Specialization spec = f.shapes.empty() ? Specialization{} : parse_shapes_flag(f.shapes);
  spec.insert(spec.end(), from_files.begin(), from_files.end());
  const std::vector<std::string> names = model.input_names();
  std::vector<size_t> index(spec.size());
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k].name.empty()) {
      if (names.size() != 1)
        user_error("--shapes ", f.shapes, ": an unnamed shape needs a one-input model, but ", f.model, " takes ",
                   names.size(), " inputs (", commands::inputs_text(model), "); write NAME=SHAPE");
      index[k] = 0;
      continue;
    }
    auto it = std::find(names.begin(), names.end(), spec[k].name);
    if (it == names.end())
      user_error("--shapes ", f.shapes, ": unknown input '", spec[k].name, "'; ", f.model, " takes ",
                 commands::inputs_text(model));
    index[k] = static_cast<size_t>(it - names.begin());
  }
  for (const VariantInfo& v : variants) {
    bool ok = v.available;
    for (size_t k = 0; ok && k < spec.size(); ++k) {
      const TensorSpec& g = v.inputs[index[k]];
      // A symbolic dimension (-1) accepts any size; the runtime checks its range when it runs.
      if (g.shape.size() != spec[k].shape.size()) ok = false;
      for (size_t d = 0; ok && d < g.shape.size(); ++d)
        if (g.shape[d] >= 0 && g.shape[d] != spec[k].shape[d]) ok = false;
      if (!spec[k].symbols.empty()) ok = false;
      if (spec[k].dtype && dtype_string(g.dtype) != dtype_name(*spec[k].dtype)) ok = false;
    }
    if (ok) return v.id;
  }
  user_error(f.shapes.empty() ? "the --input files' shapes" : "--shapes " + f.shapes,
             ": no available variant of ", f.model, " has these shapes; variants: ", commands::variants_text(model));
}

// Deterministic pseudo-random contents: floats uniform in [-1, 1) (float16/bfloat16: multiples of 1/64, which
// both hold exactly), integers in [0, 10), bools 0/1.
void fill_random(HostTensor& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string dt = dtype_string(t.dtype());
  const size_t n = t.numel();
  auto unit = [&rng]() { return static_cast<float>(static_cast<double>(rng() >> 40) / 8388608.0 - 1.0); };
  auto small = [&rng]() { return static_cast<int64_t>(rng() % 10); };
  auto sixty_fourths = [&rng]() { return static_cast<float>(static_cast<int>(rng() % 129) - 64) / 64.0f; };
  if (dt == "float32") {
    float* p = t.data<float>();
    for (size_t i = 0; i < n; ++i) p[i] = unit();
  } else if (dt == "float64") {
    double* p = t.data<double>();
    for (size_t i = 0; i < n; ++i) p[i] = unit();
  } else if (dt == "float16" || dt == "bfloat16") {
    uint16_t* p = static_cast<uint16_t*>(t.raw());
    for (size_t i = 0; i < n; ++i) {
      const float v = sixty_fourths();
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      if (dt == "bfloat16") {
        p[i] = static_cast<uint16_t>(bits >> 16);  // exact: at most 7 significant bits
      } else if (v == 0.0f) {
        p[i] = static_cast<uint16_t>((bits >> 16) & 0x8000);
      } else {  // normal in half precision (|v| >= 2^-6), exact: truncating the mantissa drops only zeros
        const uint32_t sign = (bits >> 16) & 0x8000;
        const int32_t exp = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
        p[i] = static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((bits & 0x7fffff) >> 13));
      }
    }
  } else if (dt == "bool") {
    uint8_t* p = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng() & 1);
  } else if (dt == "uint8") {
    uint8_t* p = t.data<uint8_t>();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(small());
  } else if (dt == "int8") {
    int8_t* p = t.data<int8_t>();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int8_t>(small());
  } else if (dt == "int16") {
    int16_t* p = t.data<int16_t>();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int16_t>(small());
  } else if (dt == "int32") {
    int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(small());
  } else if (dt == "int64") {
    int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < n; ++i) p[i] = small();
  } else {
    user_error("bench cannot make random inputs of dtype ", dt);
  }
}

std::string ms(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(v >= 1 ? 3 : v >= 0.01 ? 4 : 6) << v << " ms";
  return os.str();
}

std::string threads_source(const BenchFlags& f) {
  if (f.threads > 0) return "--threads";
  if (const char* env = std::getenv("THUNDERC_NUM_THREADS"); env && *env) return "$THUNDERC_NUM_THREADS";
  return "default: all hardware cores";
}

// A zero-filled host tensor; a size that overflows or memory that is not there is a UserError, not a crash.
HostTensor allocate(DLDataType dtype, const std::vector<int64_t>& shape, const std::string& what) {
  try {
    return HostTensor(dtype, shape);
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating ", what, " (", commands::tensor_text(dtype, shape), ")");
  } catch (const std::length_error&) {
    user_error(what, " (", commands::tensor_text(dtype, shape), ") is too large: its size in bytes overflows");
  } catch (const std::invalid_argument& e) {
    user_error(what, " (", commands::tensor_text(dtype, shape), "): ", e.what());
  }
}

// "inf", "nan" or the number, for the text report.
std::string diff_text(double d) {
  if (std::isnan(d)) return "nan (a NaN in one output where the other has a number)";
  if (std::isinf(d)) return "inf (an infinity in one output where the other has a different value)";
  std::ostringstream os;
  os << std::setprecision(6) << d;
  return os.str();
}

// The timed calls' share of each operation's counters: `after` minus `before` (read after the warm-up).
std::vector<OperationProfile> profile_of_timed_calls(std::vector<OperationProfile> after,
                                                     const std::vector<OperationProfile>& before) {
  for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
    after[i].calls -= before[i].calls;
    after[i].total_ns -= before[i].total_ns;
  }
  return after;
}

// --profile's table: the operations that took the most time per call, at most kProfileRows of them, then what
// the others and the rest of the call (the runtime's dispatch and guards) took.
constexpr size_t kProfileRows = 20;
void print_profile(const std::vector<OperationProfile>& ops, double wall_ms, int iterations) {
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ops[a].total_ns > ops[b].total_ns; });
  const double per_call_us = wall_ms * 1e3 / iterations;
  auto row = [&](double us, const std::string& what) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(us >= 100 ? 1 : 2) << std::setw(11) << us << " us " << std::setprecision(1)
       << std::setw(5) << (per_call_us > 0 ? 100 * us / per_call_us : 0.0) << "%  " << what << "\n";
    std::cout << os.str();
  };
  std::cout << "profile:     per call, mean over the timed calls (--profile; " << ops.size() << " operations):\n";
  double shown = 0, others = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const double us = static_cast<double>(ops[order[k]].total_ns) / 1e3 / iterations;
    if (k < kProfileRows) {
      row(us, "#" + std::to_string(order[k] + 1) + " " + ops[order[k]].label);
      shown += us;
    } else {
      others += us;
    }
  }
  if (order.size() > kProfileRows)
    row(others, "the other " + std::to_string(order.size() - kProfileRows) + " operations (--json lists every one)");
  row(std::max(0.0, per_call_us - shown - others), "outside the operations (dispatch, guards, workspace)");
}

void bench_command(const BenchFlags& f) {
#if !THUNDERC_WITH_LIBTORCH
  if (!f.compare.empty())
    user_error("--compare runs the TorchScript model with LibTorch, and this thunderc was built without LibTorch "
               "(-DTHUNDERC_WITH_LIBTORCH=OFF); run bench without --compare, or use a thunderc built with LibTorch");
#endif
  if (f.warmup < 0) user_error("--warmup must be >= 0, got ", f.warmup);
  if (f.iterations < 1) user_error("--iterations must be >= 1, got ", f.iterations);
  Model model = commands::open_model(f.model, f.threads);
  const int threads = model.num_threads();
  const std::vector<VariantInfo> variants = model.variants();
  std::vector<std::optional<HostTensor>> from_files = commands::read_named_inputs(model, f.model, f.named);
  Specialization file_shapes;
  for (size_t i = 0; i < from_files.size(); ++i)
    if (from_files[i]) {
      InputShape s;
      s.name = model.input_names()[i];
      s.shape = Shape(from_files[i]->shape().begin(), from_files[i]->shape().end());
      file_shapes.push_back(s);
    }
  const VariantInfo& v = variants.at(choose_variant(model, variants, f, file_shapes));
  // A CUDA variant is timed on cuda:0 (any CUDA device serves it; the first one here).
  const bool on_gpu = v.device.device_type == kDLCUDA;
  const DLDevice device = on_gpu ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
  if (v.device.device_type != kDLCPU && !on_gpu)
    user_error("variant #", v.id, " of ", f.model, " runs on ", commands::device_text(v.device),
               "; bench times cpu and cuda variants only");
  std::string image;
  if (on_gpu) {
    if (!f.compare.empty()) {
      std::string why;
      if (!commands::torchscript_cuda_available(&why))
        user_error("--compare: variant #", v.id, " of ", f.model, " runs on CUDA, but ", why,
                   ", so TorchScript cannot run on the same device; run without --compare");
    }
    try {
      image = model.prepare_device(device);
    } catch (const Error& e) {
      throw UserError(commands::runtime_message(e, "variant #" + std::to_string(v.id) + " of '" + f.model +
                                                       "' cannot run on " + commands::device_text(device),
                                                f.model));
    }
  }

  std::vector<HostTensor> inputs;
  std::vector<DLTensor> in_dl;
  // Symbolic dimensions take their sizes from --shapes (choose_variant checked that it names them).
  const Specialization given = f.shapes.empty() ? Specialization{} : parse_shapes_flag(f.shapes);
  const std::vector<std::string> names = model.input_names();
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    std::vector<int64_t> shape = v.inputs[i].shape;
    for (const InputShape& in : given)
      if ((in.name.empty() && names.size() == 1) || in.name == names[i]) shape = in.shape;
    for (int64_t d : shape)
      if (d < 0)
        user_error("--shapes ", f.shapes, " leaves input '", names[i], "' with a symbolic dimension (", v.signature,
                   "); give its sizes");
    if (from_files[i]) {
      if (dtype_string(from_files[i]->dtype()) != dtype_string(v.inputs[i].dtype))
        user_error("--input ", names[i], ": the file holds ", dtype_string(from_files[i]->dtype()), ", but variant #",
                   v.id, " takes ", dtype_string(v.inputs[i].dtype));
      if (from_files[i]->shape() != shape)
        user_error("--input ", names[i], ": the file's shape ", commands::shape_text(from_files[i]->shape()),
                   " differs from --shapes' ", commands::shape_text(shape));
      inputs.push_back(std::move(*from_files[i]));
      continue;
    }
    inputs.push_back(allocate(v.inputs[i].dtype, shape, "input '" + names[i] + "'"));
    fill_random(inputs.back(), kSeed + i);
  }
  for (const HostTensor& t : inputs) in_dl.push_back(t.dl());
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    const TensorSpec& s = v.outputs[i];
    bool symbolic = false;
    for (int64_t d : s.shape) symbolic = symbolic || d < 0;
    std::vector<int64_t> shape = s.shape;
    if (symbolic) try {
        shape = model.output_shape(in_dl, i);  // also checks the symbols' ranges
      } catch (const Error& e) {
        throw UserError(commands::runtime_message(e, "--shapes " + f.shapes, f.model));
      }
    outputs.push_back(allocate(s.dtype, shape, "output " + std::to_string(i)));
  }
  std::vector<DLTensor> out_dl;
  for (HostTensor& t : outputs) out_dl.push_back(t.dl());

  // A training model (--autograd) is timed a training step at a time: forward_train, then backward with output
  // gradients of ones, into gradients allocated once.
  const bool training = model.is_training();
  if (training && on_gpu && !f.compare.empty())
    user_error("--compare times LibTorch's training step on the CPU only; a CUDA training model (", f.model,
               ") is timed without it (thunderc grad and the tests check its gradients)");
  std::vector<HostTensor> grad_outputs, grads;
  std::vector<DLTensor> grad_out_dl, grad_dl;
  if (training)
    for (size_t i = 0; i < outputs.size(); ++i) {
      grad_outputs.push_back(commands::ones_like(outputs[i], "bench cannot seed the gradient of output " + std::to_string(i)));
      grad_out_dl.push_back(grad_outputs.back().dl());
    }
  // On CUDA every tensor is a device copy (filled in below; the views then point at them). A training step is
  // timed by the host clock as on the CPU (forward_train and backward each return once the device is done), an
  // inference call by CUDA events on a stream of its own.
  std::vector<DeviceTensor> d_in, d_out, d_gy, d_grads;
  const bool device_step = training && on_gpu;
  auto step = [&] {
    if (!training) return model.run(in_dl, out_dl);
    TrainContext ctx = model.forward_train(in_dl, out_dl);
    if (grad_dl.empty())
      for (size_t i = 0; i < model.num_gradients(); ++i) {
        if (device_step) {
          d_grads.emplace_back(model.gradient_dtype(i), model.gradient_shape(ctx, i), device);
          grad_dl.push_back(d_grads.back().dl());
        } else {
          grads.push_back(allocate(model.gradient_dtype(i), model.gradient_shape(ctx, i), "a gradient"));
          grad_dl.push_back(grads.back().dl());
        }
      }
    model.backward(ctx, grad_out_dl, grad_dl);
  };

  std::vector<double> times;
  times.reserve(static_cast<size_t>(f.iterations));
  std::vector<OperationProfile> profile_before;
  try {
    if (on_gpu) {
      for (const HostTensor& t : inputs) d_in.push_back(DeviceTensor::from_host(t, device));
      for (const HostTensor& t : outputs) d_out.emplace_back(t.dtype(), t.shape(), device);
      for (const HostTensor& t : grad_outputs) d_gy.push_back(DeviceTensor::from_host(t, device));
      for (size_t i = 0; i < inputs.size(); ++i) in_dl[i] = d_in[i].dl();
      for (size_t i = 0; i < outputs.size(); ++i) out_dl[i] = d_out[i].dl();
      for (size_t i = 0; i < grad_outputs.size(); ++i) grad_out_dl[i] = d_gy[i].dl();
    }
    if (!on_gpu || device_step) {
      for (int i = 0; i < f.warmup; ++i) step();
      profile_before = model.profile(v.id);  // --profile: the timed calls' share is the difference
      for (int i = 0; i < f.iterations; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        step();
        const auto t1 = std::chrono::steady_clock::now();
        times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      for (size_t i = 0; i < d_out.size(); ++i) outputs[i] = d_out[i].to_host();
      for (const DeviceTensor& t : d_grads) grads.push_back(t.to_host());
    } else {
      struct Stream {
        DLDevice device;
        void* s = nullptr;
        ~Stream() { thunderc_status_free(thunderc_device_stream_destroy(device, s)); }
      } stream{device};
      check(thunderc_device_stream_create(device, &stream.s));
      struct Event {
        thunderc_device_event e = nullptr;
        ~Event() { thunderc_device_event_destroy(e); }
      } start, stop;
      check(thunderc_device_event_create(device, &start.e));
      check(thunderc_device_event_create(device, &stop.e));
      RunOptions options;
      options.cuda_stream = stream.s;
      for (int i = 0; i < f.warmup; ++i) model.run(in_dl, out_dl, options);
      for (int i = 0; i < f.iterations; ++i) {
        check(thunderc_device_event_record(start.e, stream.s));
        model.run(in_dl, out_dl, options);
        check(thunderc_device_event_record(stop.e, stream.s));
        float ms = 0;
        check(thunderc_device_event_elapsed_ms(start.e, stop.e, &ms));  // waits for the call
        times.push_back(ms);
      }
      for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = d_out[i].to_host(stream.s);
    }
  } catch (const Error& e) {
    throw UserError(commands::runtime_message(e, "running '" + f.model + "' failed", f.model));
  }
  const Stats ours = stats_of(times);
  const std::vector<OperationProfile> profile = profile_of_timed_calls(model.profile(v.id), profile_before);
  double wall_ms = 0;
  for (double t : times) wall_ms += t;

  std::optional<commands::TorchScriptTiming> ref;
  std::optional<commands::TorchScriptTrainingTiming> train_ref;
  Stats theirs;
  if (!f.compare.empty() && !training) {
    ref = commands::bench_torchscript(f.compare, inputs, outputs, threads, f.warmup, f.iterations, on_gpu);
    theirs = stats_of(ref->times_ms);
  } else if (!f.compare.empty()) {
    std::vector<commands::GradientRef> expected;
    const std::vector<std::string> grad_names = model.gradient_names();
    for (size_t i = 0; i < grads.size(); ++i) expected.push_back({grad_names[i], model.gradient_is_parameter(i), &grads[i]});
    train_ref = commands::bench_torchscript_training(f.compare, inputs, names, grad_outputs, outputs, expected, threads,
                                                     f.warmup, f.iterations);
    theirs = stats_of(train_ref->times_ms);
    ref = commands::TorchScriptTiming{train_ref->times_ms, train_ref->max_abs_diff, train_ref->num_outputs};
  }

  if (f.json) {
    nlohmann::ordered_json j;
    j["model"] = f.model;
    j["variant"] = v.id;
    j["signature"] = v.signature;
    j["device"] = commands::device_text(device);
    if (on_gpu) j["image"] = image;
    j["median_ms"] = ours.median;
    j["min_ms"] = ours.min;
    j["p90_ms"] = ours.p90;
    if (training && model.rng_blocks(v.id) > 0) j["rng_blocks"] = model.rng_blocks(v.id);
    if (!profile.empty()) {
      // Per operation, over the timed calls (--profile); total_ms is their wall time, which the operations'
      // times sum to less than (the rest: the runtime's dispatch, guards and workspace).
      j["profile"]["total_ms"] = wall_ms;
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (const OperationProfile& p : profile)
        ops.push_back({{"operation", p.label}, {"calls", p.calls}, {"total_ms", static_cast<double>(p.total_ns) / 1e6}});
      j["profile"]["operations"] = ops;
    }
    j["iterations"] = f.iterations;
    j["warmup"] = f.warmup;
    j["threads"] = threads;
    j["mode"] = training ? "training step" : "inference";
    if (ref) {
      j["torchscript"] = f.compare;
      j["torchscript_median_ms"] = theirs.median;
      j["torchscript_min_ms"] = theirs.min;
      j["torchscript_p90_ms"] = theirs.p90;
      j["speedup"] = ours.median > 0 ? theirs.median / ours.median : 0.0;
      // JSON has no NaN or infinity: max_abs_diff is then null and max_abs_diff_nonfinite says which.
      if (std::isfinite(ref->max_abs_diff)) {
        j["max_abs_diff"] = ref->max_abs_diff;
      } else {
        j["max_abs_diff"] = nullptr;
        j["max_abs_diff_nonfinite"] = std::isnan(ref->max_abs_diff) ? "nan" : "inf";
      }
      if (train_ref) {
        j["gradients"] = train_ref->num_gradients;
        if (std::isfinite(train_ref->max_rel_grad_diff)) j["max_rel_grad_diff"] = train_ref->max_rel_grad_diff;
        else j["max_rel_grad_diff"] = nullptr;
        j["worst_gradient"] = train_ref->worst_gradient;
      }
    }
    std::cout << j.dump(2) << std::endl;
    return;
  }

  std::cout << "model:       " << f.model << ", variant #" << v.id << " (" << v.signature << ")\n";
  if (f.named.empty())
    std::cout << "inputs:      random, seed " << kSeed << " (floats in [-1, 1), integers in [0, 10))\n";
  else
    std::cout << "inputs:      " << f.named.size() << " from --input, the others random, seed " << kSeed << "\n";
  if (on_gpu)
    std::cout << "device:      " << commands::device_text(device) << " (" << image
              << "); timed with CUDA events on a stream of its own\n";
  else
    std::cout << "threads:     " << threads << " (" << threads_source(f) << ")\n";
  if (training)
    std::cout << "mode:        training step (forward_train + backward, output gradients of ones, "
              << model.num_gradients() << " gradients)\n";
  if (training && model.rng_blocks(v.id) > 0)
    std::cout << "dropout:     each step draws new masks (" << model.rng_blocks(v.id) << " Philox counter blocks)"
              << (ref ? "; LibTorch's module runs in eval mode, without dropout, so the differences below are not "
                        "a parity check"
                      : "")
              << "\n";
  std::cout << "iterations:  " << f.iterations << " timed, after " << f.warmup << " warmup\n";
  std::cout << "thunderc:    min " << ms(ours.min) << ", median " << ms(ours.median) << ", p90 " << ms(ours.p90)
            << "\n";
  if (ref) {
    std::cout << "torchscript: min " << ms(theirs.min) << ", median " << ms(theirs.median) << ", p90 "
              << ms(theirs.p90) << "  (" << f.compare
              << (training ? ", eval mode, LibTorch autograd: forward + backward" : ", frozen")
              << ", at::set_num_threads(" << threads << "))\n";
    std::ostringstream speed;
    speed << std::fixed << std::setprecision(2) << (ours.median > 0 ? theirs.median / ours.median : 0.0);
    std::cout << "speedup:     " << speed.str() << "x (torchscript median / thunderc median)\n";
    std::cout << "max |diff|:  " << diff_text(ref->max_abs_diff) << " (largest absolute difference over "
              << ref->num_outputs << " output" << (ref->num_outputs == 1 ? "" : "s") << ")\n";
    if (train_ref)
      std::cout << "gradients:   max |diff| / max(1, max |torch|) = " << diff_text(train_ref->max_rel_grad_diff)
                << " (worst: " << train_ref->worst_gradient << ", over " << train_ref->num_gradients << ")\n";
  }
  if (!profile.empty()) print_profile(profile, wall_ms, f.iterations);
  std::cout.flush();
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "time a compiled model (OUT.so) on random inputs; --compare with TorchScript; a model "
                                               "compiled with --profile: also each operation's time");
  commands::add_model_argument(*cmd, flags->model);
  cmd->add_option("--shapes", flags->shapes,
                  "input shapes selecting the variant to time, as for compiling (x=1x64 or 1x64; default: the "
                  "first variant)")
      ->type_name("SHAPES");
  cmd->add_option("-i,--input", flags->named,
                  "time on this input's contents instead of random ones (repeat for more inputs; its shape also "
                  "selects the variant)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  cmd->add_option("--warmup", flags->warmup, "untimed calls first (default: 10)")->type_name("N");
  cmd->add_option("--iterations", flags->iterations, "timed calls (default: 100)")->type_name("N");
  cmd->add_option("--threads", flags->threads,
                  "threads for the model and for LibTorch (default 0: $THUNDERC_NUM_THREADS, else all cores)")
      ->type_name("N");
  cmd->add_flag("--json", flags->json,
                "print one JSON object (median_ms, min_ms, p90_ms, iterations, threads; with --compare also "
                "torchscript_median_ms, speedup, max_abs_diff; null with max_abs_diff_nonfinite \"inf\" or \"nan\" when the "
                "difference is not a finite number)");
  cmd->add_option("--compare", flags->compare,
                  THUNDERC_WITH_LIBTORCH
                      ? "also time this TorchScript model with LibTorch on the same inputs and compare the outputs (a model "
                        "compiled with --autograd: a LibTorch autograd training step, and the gradients too)"
                      : "also time this TorchScript model with LibTorch (not in this thunderc, built without LibTorch)")
      ->type_name("MODEL.pt");
  cmd->callback([flags]() { bench_command(*flags); });
}

}  // namespace thunderc
