// `thunderc run OUT.so [--input NAME=FILE.npy]... [FILE.npy ...] [--output-dir DIR] [--threads N]`: runs a
// compiled model through the deployment runtime on inputs read from .npy files and writes each output to
// DIR/output<i>.npy.
//
// Also declares the small helpers that `inspect` and `bench` share with `run` (opening a model with the
// runtime's errors turned into UserErrors, and printing shapes/variants).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "thunderc/runtime.hpp"

namespace CLI {
class App;
class ParseError;
}

namespace thunderc {

// Registers the `run` subcommand (options and callback) on `app`. Mistakes throw thunderc::UserError.
void add_run_command(CLI::App& app);

namespace commands {

// What a CLI11 parse error becomes, for the thunderc binary and its test driver alike: --help (and other
// requests CLI11 answers itself) print and return 0; every other parse error (unknown flag, missing or
// malformed value) prints "thunderc: error: <short message>" and a hint to stderr and returns 1.
int parse_error_exit(CLI::App& app, const CLI::ParseError& e);

// A tolerance given on the command line (--rtol, --atol): UserError unless it is finite and >= 0.
void check_tolerance(const char* flag, double value);

// Opens a model through the runtime. threads: 0 = the runtime's default ($THUNDERC_NUM_THREADS, else all
// cores). A runtime error (missing/corrupt .so, manifest mismatch, ...) becomes a UserError with its message.
Model open_model(const std::string& so_path, int threads);

// The required OUT.so argument that run, inspect and bench share.
void add_model_argument(CLI::App& cmd, std::string& model);

// The runtime's message for `e`, prefixed with `context` unless the message already names `path` (or its file name).
std::string runtime_message(const Error& e, const std::string& context, const std::string& path);

// "[2, 3]", "float32[2, 3]".
std::string shape_text(const std::vector<int64_t>& shape);
std::string tensor_text(DLDataType dtype, const std::vector<int64_t>& shape);
// "cpu", "cuda:0".
std::string device_text(DLDevice device);
// "x: float32, mask: bool" (the model's inputs, in call order).
std::string inputs_text(const Model& model);
// "#0 x: float32[2, 3] cpu; #1 x: float32[4, 3] cpu" (unavailable variants are marked, with the reason).
std::string variants_text(const Model& model);
// Why `device` cannot be used here (thunderc_device_available's message), or "no <device> here".
std::string unavailable_reason(DLDevice device);

// Where `run` should run host `inputs` (read from .npy): nullopt when a CPU variant takes them as they are;
// cuda:0 when a CUDA variant takes them once copied there. Throws thunderc::Error with the runtime's message
// when neither can (DEVICE_UNAVAILABLE when a CUDA variant matches but there is no usable GPU).
std::optional<DLDevice> cuda_device_for(const Model& model, const std::vector<HostTensor>& inputs);

// The model's inputs read from .npy files: `named` ("NAME=FILE.npy", --input) first, then `positional` fill the
// rest in input order. UserError for a malformed, unknown, repeated or missing input, or an unreadable file.
std::vector<HostTensor> read_inputs(const Model& model, const std::string& so_path,
                                    const std::vector<std::string>& named, const std::vector<std::string>& positional);

// Only the --input NAME=FILE.npy ones, by input index (nullopt where none is named).
std::vector<std::optional<HostTensor>> read_named_inputs(const Model& model, const std::string& so_path,
                                                         const std::vector<std::string>& named);

// Writes `t` to `path` (.npy), UserError naming `label` when it cannot.
void write_npy(const std::string& path, const HostTensor& t, const std::string& label);

// A tensor of ones with t's dtype and shape (the output gradient loss.backward() seeds); float32/float64 only,
// else a UserError naming `what` (e.g. "--grad-output is required for output 0").
HostTensor ones_like(const HostTensor& t, const std::string& what);

}  // namespace commands
}  // namespace thunderc
