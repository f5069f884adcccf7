// End-to-end tests of `thunderc run`, `inspect` and `bench`: each case runs the driver (THUNDERC_CMDS_BIN, the
// three subcommands with cli/main.cpp's error mapping) on the runtime's hand-written test model
// (THUNDERC_TEST_MODEL = two_variants.so: y = 2*x + 1, rowsum = x.sum(1); variant #0 takes float32[2, 3],
// variant #1 float32[4, 3]) and checks exit code, output, and the files written.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "common/run_process.h"

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "thunderc/npy.hpp"

void write_reference_module(const std::string& path);      // reference_module.cpp
void write_single_output_module(const std::string& path);  // reference_module.cpp

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using thunderc::HostTensor;

using Result = thunderc_test::ProcessResult;
using thunderc_test::command_line;
using thunderc_test::shell_quote;

Result shell(const std::string& cmd) {
  Result r = thunderc_test::run_shell(cmd);
  REQUIRE(r.code >= 0);
  return r;
}

Result run_cli(const std::vector<std::string>& args) { return shell(command_line(THUNDERC_CMDS_BIN, args)); }

// Only stdout (for JSON): stderr goes to the test log.
Result run_cli_stdout(const std::vector<std::string>& args) {
  Result r = thunderc_test::run_shell(command_line(THUNDERC_CMDS_BIN, args), false);
  REQUIRE(r.code >= 0);
  return r;
}

const std::string kModel = THUNDERC_TEST_MODEL;

std::string tmp(const std::string& name) {
  fs::create_directories(THUNDERC_TEST_TMP);
  return (fs::path(THUNDERC_TEST_TMP) / name).string();
}

// A fresh, empty directory under the test's tmp folder.
std::string fresh_dir(const std::string& name) {
  const std::string d = tmp(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + 0.5f * static_cast<float>(i);
  return v;
}

std::string save_input(const std::string& name, const HostTensor& t) {
  const std::string path = tmp(name);
  thunderc::npy::save(path, t);
  return path;
}

// Checks output0 == 2*x + 1 and output1 == x.sum(1) as written by `run` into dir.
void check_outputs(const std::string& dir, int64_t rows, const std::vector<float>& x) {
  HostTensor y = thunderc::npy::load(dir + "/output0.npy");
  HostTensor s = thunderc::npy::load(dir + "/output1.npy");
  REQUIRE(y.shape() == std::vector<int64_t>{rows, 3});
  REQUIRE(s.shape() == std::vector<int64_t>{rows});
  const float* yp = y.data<float>();
  const float* sp = s.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (int64_t c = 0; c < 3; ++c) {
      CHECK(yp[r * 3 + c] == doctest::Approx(2 * x[r * 3 + c] + 1));
      acc += x[r * 3 + c];
    }
    CHECK(sp[r] == doctest::Approx(acc));
  }
}

bool has(const Result& r, const std::string& phrase) { return r.out.find(phrase) != std::string::npos; }

#define CHECK_OUTPUT(r, phrase) \
  CHECK_MESSAGE(has(r, phrase), "expected \"" << phrase << "\" in the output of " << r.cmd << ":\n" << r.out)

}  // namespace

// ---- run ----------------------------------------------------------------------------------------------------

TEST_CASE("run: named input, variant #0, outputs equal the model's math") {
  const std::vector<float> x = iota(6, -1.0f);
  const std::string in = save_input("x23.npy", HostTensor::from_vector<float>({2, 3}, x));
  const std::string dir = tmp("out_named/nested");
  fs::remove_all(tmp("out_named"));
  Result r = run_cli({"run", kModel, "--input", "x=" + in, "--output-dir", dir});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "output0: float32[2, 3] -> " + dir + "/output0.npy");
  CHECK_OUTPUT(r, "output1: float32[2] -> " + dir + "/output1.npy");
  check_outputs(dir, 2, x);
}

// --expect follows numpy.isclose: equal infinities match, an infinity matches nothing else, NaN matches NaN only
// with --equal-nan, and tolerances must be finite and >= 0 (issue #12, item 2).
TEST_CASE("run --expect: infinities, NaN and tolerances follow numpy.isclose") {
  const float inf = INFINITY, nan = NAN;
  // y = 2*x + 1 and rowsum = x.sum(1): x = [[inf, 0, 1], [-inf, 2, 3]] gives y = [[inf, 1, 3], [-inf, 5, 7]],
  // rowsum = [inf, -inf].
  const std::string in = save_input("x_inf.npy", HostTensor::from_vector<float>({2, 3}, {inf, 0, 1, -inf, 2, 3}));
  const std::string dir = fresh_dir("out_inf");
  auto expect = [&](const std::string& name, std::vector<float> y) {
    return save_input(name, HostTensor::from_vector<float>({2, 3}, y));
  };
  SUBCASE("identical infinities match") {
    Result r = run_cli({"run", kModel, in, "--output-dir", dir, "--expect", expect("want_inf.npy", {inf, 1, 3, -inf, 5, 7})});
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK_OUTPUT(r, "output0: matches");
    CHECK_OUTPUT(r, "max abs diff 0");
  }
  SUBCASE("an expected infinity does not match a finite output") {
    const std::string fin = save_input("x_fin.npy", HostTensor::from_vector<float>({2, 3}, {0, 0, 1, 1, 2, 3}));
    Result r = run_cli({"run", kModel, fin, "--output-dir", dir, "--expect", expect("want_inf2.npy", {inf, 1, 3, 3, 5, 7})});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "output0 differs from");
    CHECK_OUTPUT(r, "in 1 of 6 elements");
    CHECK_OUTPUT(r, "largest difference inf at element 0: got 1, expected inf");
  }
  SUBCASE("infinities of opposite sign differ") {
    Result r = run_cli({"run", kModel, in, "--output-dir", dir, "--expect", expect("want_sign.npy", {-inf, 1, 3, -inf, 5, 7})});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "in 1 of 6 elements");
  }
  SUBCASE("NaN matches NaN only with --equal-nan") {
    // The test model refuses NaN inputs; rowsum of [inf, -inf, 0] is NaN.
    const std::string xn = save_input("x_nan.npy", HostTensor::from_vector<float>({2, 3}, {inf, -inf, 0, 1, 2, 3}));
    const std::string want_y = expect("want_nan_y.npy", {inf, -inf, 1, 3, 5, 7});
    const std::string want_sum = save_input("want_nan_sum.npy", HostTensor::from_vector<float>({2}, {nan, 6}));
    Result strict = run_cli({"run", kModel, xn, "--output-dir", dir, "--expect", want_y, "--expect", want_sum});
    CHECK(strict.code == 1);
    CHECK_OUTPUT(strict, "output0: matches");
    CHECK_OUTPUT(strict, "output1 differs from");
    CHECK_OUTPUT(strict, "in 1 of 2 elements");
    CHECK_OUTPUT(strict, "--equal-nan");
    Result lenient =
        run_cli({"run", kModel, xn, "--output-dir", dir, "--expect", want_y, "--expect", want_sum, "--equal-nan"});
    CHECK_MESSAGE(lenient.code == 0, lenient.out);
    CHECK_OUTPUT(lenient, "output1: matches");
    // A NaN output never matches a number, even with --equal-nan.
    const std::string want_num = save_input("want_num_sum.npy", HostTensor::from_vector<float>({2}, {1, 6}));
    Result number =
        run_cli({"run", kModel, xn, "--output-dir", dir, "--equal-nan", "--expect", want_y, "--expect", want_num});
    CHECK(number.code == 1);
    CHECK_OUTPUT(number, "output1 differs from");
  }
  SUBCASE("tolerances must be finite and >= 0") {
    const std::string want = expect("want_tol.npy", {inf, 1, 3, -inf, 5, 7});
    for (const char* flag : {"--rtol", "--atol"})
      for (const char* value : {"nan", "inf", "-1", "-0.5"}) {
        CAPTURE(flag);
        CAPTURE(value);
        Result r = run_cli({"run", kModel, in, "--output-dir", dir, "--expect", want, flag, value});
        CHECK(r.code == 1);
        CHECK_OUTPUT(r, "thunderc: error: ");
        CHECK_OUTPUT(r, std::string(flag) + " must be a finite number >= 0");
        CHECK(r.out.size() < 400);
      }
  }
}

TEST_CASE("run: positional input, variant #1") {
  const std::vector<float> x = iota(12, 3.0f);
  const std::string in = save_input("x43.npy", HostTensor::from_vector<float>({4, 3}, x));
  const std::string dir = fresh_dir("out_positional");
  Result r = run_cli({"run", kModel, in, "--output-dir", dir, "--threads", "1"});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "output0: float32[4, 3] -> ");
  CHECK_OUTPUT(r, "output1: float32[4] -> ");
  check_outputs(dir, 4, x);
}

TEST_CASE("run: default output directory is the current directory") {
  const std::vector<float> x = iota(6, 0.25f);
  const std::string in = save_input("x23_cwd.npy", HostTensor::from_vector<float>({2, 3}, x));
  const std::string dir = fresh_dir("out_cwd");
  Result r = shell("cd " + shell_quote(dir) + " && " + command_line(THUNDERC_CMDS_BIN, {"run", kModel, "-i", "x=" + in}));
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "output0: float32[2, 3] -> output0.npy");
  check_outputs(dir, 2, x);
}

TEST_CASE("run: a shape no variant takes names the input and lists the variants") {
  const std::string in = save_input("x33.npy", HostTensor::from_vector<float>({3, 3}, iota(9, 0)));
  Result r = run_cli({"run", kModel, "--input", "x=" + in, "--output-dir", tmp("out_bad")});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: ");
  CHECK_OUTPUT(r, "'x'");
  CHECK_OUTPUT(r, "[3, 3]");
  CHECK_OUTPUT(r, "#0 x: float32[2, 3] cpu");
  CHECK_OUTPUT(r, "#1 x: float32[4, 3] cpu");
  CHECK_FALSE(fs::exists(tmp("out_bad/output0.npy")));
}

TEST_CASE("run: a dtype no variant takes is an error naming the variants") {
  const std::string in = save_input("x23_f64.npy", HostTensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}));
  Result r = run_cli({"run", kModel, in, "--output-dir", tmp("out_f64")});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "'x'");
  CHECK_OUTPUT(r, "float64");
  CHECK_OUTPUT(r, "#0 x: float32[2, 3] cpu");
}

TEST_CASE("run: missing input") {
  Result r = run_cli({"run", kModel});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: missing input 'x'");
  CHECK_OUTPUT(r, "takes 1 input: x: float32");
}

TEST_CASE("run: unknown input name lists the model's inputs") {
  const std::string in = save_input("x23_unknown.npy", HostTensor::from_vector<float>({2, 3}, iota(6, 0)));
  Result r = run_cli({"run", kModel, "--input", "y=" + in});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "unknown input 'y'");
  CHECK_OUTPUT(r, "takes 1 input: x: float32");
}

TEST_CASE("run: each input exactly once") {
  const std::string in = save_input("x23_twice.npy", HostTensor::from_vector<float>({2, 3}, iota(6, 0)));
  Result twice = run_cli({"run", kModel, "--input", "x=" + in, "--input", "x=" + in});
  CHECK(twice.code == 1);
  CHECK_OUTPUT(twice, "input 'x' given twice");
  Result extra = run_cli({"run", kModel, "--input", "x=" + in, in});
  CHECK(extra.code == 1);
  CHECK_OUTPUT(extra, "too many input files");
  Result extra_positional = run_cli({"run", kModel, in, in});
  CHECK(extra_positional.code == 1);
  CHECK_OUTPUT(extra_positional, "too many input files");
  Result syntax = run_cli({"run", kModel, "--input", in});
  CHECK(syntax.code == 1);
  CHECK_OUTPUT(syntax, "--input expects NAME=FILE.npy");
}

TEST_CASE("run: malformed and missing .npy files") {
  const std::string bad = tmp("garbage.npy");
  std::ofstream(bad) << "this is not a numpy file";
  Result r = run_cli({"run", kModel, "--input", "x=" + bad});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: input 'x': ");
  CHECK_OUTPUT(r, bad);
  Result missing = run_cli({"run", kModel, tmp("does_not_exist.npy")});
  CHECK(missing.code == 1);
  CHECK_OUTPUT(missing, "does_not_exist.npy");
}

TEST_CASE("run: missing and corrupt model files surface the runtime's message") {
  Result missing = run_cli({"run", tmp("no_such_model.so")});
  CHECK(missing.code == 1);
  CHECK_OUTPUT(missing, "thunderc: error: ");
  CHECK_OUTPUT(missing, "no_such_model.so");

  const std::string corrupt = tmp("corrupt.so");
  std::ofstream(corrupt) << "not an ELF file at all";
  Result r = run_cli({"run", corrupt});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: ");
  CHECK_OUTPUT(r, "corrupt.so");

  // A truncated copy of the real model.
  const std::string truncated = tmp("truncated.so");
  {
    std::ifstream in(kModel, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  Result t = run_cli({"inspect", truncated});
  CHECK(t.code == 1);
  CHECK_OUTPUT(t, "truncated.so");
}

// ---- inspect ------------------------------------------------------------------------------------------------

TEST_CASE("inspect: summary") {
  Result r = run_cli({"inspect", kModel});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "thunderc:  0.1.0");
  CHECK_OUTPUT(r, "source:    tests/runtime/models/test_model.cpp (handwritten)");
  CHECK_OUTPUT(r, "sha256:    0000000000000000000000000000000000000000000000000000000000000000");
  CHECK_OUTPUT(r, "executors: native");
  CHECK_OUTPUT(r, "cache:");
  CHECK_OUTPUT(r, "constant values");
  CHECK_OUTPUT(r, "device:");
  CHECK_OUTPUT(r, "inputs:    x: float32");
  CHECK_OUTPUT(r, "outputs:   y: float32, rowsum: float32");
  CHECK_OUTPUT(r, "weights:   0 tensors, 0 bytes, embedded");
  CHECK_OUTPUT(r, "variants:  2");
  CHECK_OUTPUT(r, "#0  thunderc_variant_0");
  CHECK_OUTPUT(r, "#1  thunderc_variant_1");
  CHECK_OUTPUT(r, "inputs:    x: float32[4, 3] cpu");
  CHECK_OUTPUT(r, "outputs:   y: float32[4, 3], rowsum: float32[4]");
  CHECK_OUTPUT(r, "workspace: 4096 bytes (4.0 KiB)");
  CHECK_OUTPUT(r, "executors: native 2 (2 operations)");
}

TEST_CASE("inspect --json prints the manifest") {
  Result r = run_cli_stdout({"inspect", kModel, "--json"});
  REQUIRE(r.code == 0);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  CHECK(j["format"] == "thunderc-manifest");
  CHECK(j["variants"].size() == 2);
  fs::path manifest = kModel;
  manifest.replace_extension(".json");
  std::ifstream in(manifest);
  CHECK(j == json::parse(in));
}

// A model whose variants all need cuda:0: the runtime's env_manifest test model embeds the manifest named by
// $THUNDERC_TEST_MANIFEST, here two_variants.json moved to cuda:0. Without a CUDA driver the runtime cannot
// open it (DEVICE_UNAVAILABLE); inspect then shows OUT.json with a note, and run fails with the runtime's message.
TEST_CASE("inspect: a model for a device this machine may lack") {
  const std::string dir = fresh_dir("cuda_model");
  const std::string so = dir + "/cuda_model.so";
  const std::string manifest_path = dir + "/cuda_model.json";
  fs::copy_file(THUNDERC_TEST_ENV_MODEL, so);
  fs::path source = kModel;
  source.replace_extension(".json");
  std::ifstream in(source);
  json m = json::parse(in);
  m["options"]["device"] = "cuda";
  for (json& v : m["variants"])
    for (json& g : v["guards"]) g["device"] = "cuda:0";
  std::ofstream(manifest_path) << m.dump();
  const std::string env = "THUNDERC_TEST_MANIFEST=" + shell_quote(manifest_path) + " ";

  Result r = shell(env + command_line(THUNDERC_CMDS_BIN, {"inspect", so}));
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "x: float32[2, 3] cuda:0");
  CHECK_OUTPUT(r, "x: float32[4, 3] cuda:0");
  if (has(r, "DEVICE") || has(r, "note:")) {
    CHECK_OUTPUT(r, "thunderc: note: ");
  }
  Result json_out = shell(env + command_line(THUNDERC_CMDS_BIN, {"inspect", so, "--json"}) + " 2>/dev/null");
  CHECK(json_out.code == 0);

  const std::string x = save_input("x23_cuda.npy", HostTensor::from_vector<float>({2, 3}, iota(6, 0)));
  Result run = shell(env + command_line(THUNDERC_CMDS_BIN, {"run", so, x, "--output-dir", dir}));
  CHECK(run.code == 1);
  CHECK_OUTPUT(run, "thunderc: error: ");
}

TEST_CASE("inspect: missing model") {
  Result r = run_cli({"inspect", tmp("nothing_here.so")});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "nothing_here.so");
}

// ---- bench --------------------------------------------------------------------------------------------------

json bench_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"bench", kModel, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  Result r = run_cli_stdout(args);
  REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

TEST_CASE("bench --iterations 5 --json") {
  json j = bench_json({"--iterations", "5"});
  for (const char* key : {"median_ms", "min_ms", "p90_ms", "iterations", "threads"}) CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["iterations"] == 5);
  CHECK(j["threads"].get<int>() >= 1);
  CHECK(j["variant"] == 0);
  CHECK(j["min_ms"].get<double>() <= j["median_ms"].get<double>());
  CHECK(j["median_ms"].get<double>() <= j["p90_ms"].get<double>());
  CHECK_FALSE(j.contains("speedup"));
}

TEST_CASE("bench --shapes chooses the variant and --threads is reported") {
  CHECK(bench_json({"--iterations", "2", "--shapes", "4x3"})["variant"] == 1);
  CHECK(bench_json({"--iterations", "2", "--shapes", "x=2x3:float32"})["variant"] == 0);
  CHECK(bench_json({"--iterations", "2", "--threads", "1"})["threads"] == 1);
}

TEST_CASE("bench: bad --shapes and flags") {
  Result none = run_cli({"bench", kModel, "--shapes", "5x3"});
  CHECK(none.code == 1);
  CHECK_OUTPUT(none, "no available variant");
  CHECK_OUTPUT(none, "#1 x: float32[4, 3] cpu");
  Result unknown = run_cli({"bench", kModel, "--shapes", "y=2x3"});
  CHECK(unknown.code == 1);
  CHECK_OUTPUT(unknown, "unknown input 'y'");
  Result dtype = run_cli({"bench", kModel, "--shapes", "x=2x3:int64"});
  CHECK(dtype.code == 1);
  Result malformed = run_cli({"bench", kModel, "--shapes", "2xx3"});
  CHECK(malformed.code == 1);
  CHECK_OUTPUT(malformed, "2xx3");
  Result iters = run_cli({"bench", kModel, "--iterations", "0"});
  CHECK(iters.code == 1);
  CHECK_OUTPUT(iters, "--iterations must be >= 1");
}

// Command-line mistakes are user errors: exit 1 with a short message, never CLI11's own exit codes (105, 109,
// 114...) or a range with hundreds of digits (issue #12, item 6).
TEST_CASE("run/bench: command-line mistakes exit 1 with a short message") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", kModel, "--no-such-flag"}, {"run", kModel, "--rtol", "-1"},
        {"run", kModel, "--threads", "-1"}, {"run", kModel, "--rtol", "abc"}, {"bench", kModel, "--threads", "-2"},
        {"bench", kModel, "--iterations", "x"}, {"run"}, {"nosuchcommand"}}) {
    Result r = run_cli(args);
    CAPTURE(r.cmd);
    CHECK_MESSAGE(r.code == 1, r.out);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK(r.out.size() < 500);
  }
  Result help = run_cli({"run", "--help"});
  CHECK(help.code == 0);
  CHECK_OUTPUT(help, "--equal-nan");
}

// Issue #12, item 3: a model whose sizes cannot be allocated here (an old or foreign manifest: 2^46 x 3 floats,
// 3 PiB) makes bench fail with a clear message and exit 1, never std::bad_alloc and exit 3.
TEST_CASE("bench: sizes that cannot be allocated are a clear error, not bad_alloc") {
  const std::string dir = fresh_dir("huge_model");
  const std::string so = dir + "/huge.so";
  const std::string manifest_path = dir + "/huge.json";
  fs::copy_file(THUNDERC_TEST_ENV_MODEL, so);
  fs::path source = kModel;
  source.replace_extension(".json");
  std::ifstream in(source);
  json m = json::parse(in);
  const int64_t rows = int64_t{1} << 46;
  m["variants"][0]["guards"][0]["shape"] = {rows, 3};
  m["variants"][0]["output_shapes"] = {{rows, 3}, {rows}};
  std::ofstream(manifest_path) << m.dump();
  const std::string env = "THUNDERC_TEST_MANIFEST=" + shell_quote(manifest_path) + " ";
  Result r = shell(env + command_line(THUNDERC_CMDS_BIN, {"bench", so, "--iterations", "1", "--warmup", "0"}));
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: out of memory allocating input 'x' (float32[70368744177664, 3])");
}

TEST_CASE("bench: text output") {
  Result r = run_cli({"bench", kModel, "--iterations", "3", "--warmup", "1", "--threads", "2"});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "variant #0 (x: float32[2, 3] cpu)");
  CHECK_OUTPUT(r, "threads:     2 (--threads)");
  CHECK_OUTPUT(r, "iterations:  3 timed, after 1 warmup");
  CHECK_OUTPUT(r, "thunderc:    min ");
  CHECK_OUTPUT(r, ", median ");
  CHECK_OUTPUT(r, ", p90 ");
}

TEST_CASE("bench --compare with a TorchScript module of the same math") {
  const std::string pt = tmp("reference.pt");
  write_reference_module(pt);
  json j = bench_json({"--iterations", "3", "--warmup", "1", "--shapes", "4x3", "--compare", pt});
  for (const char* key : {"torchscript_median_ms", "speedup", "max_abs_diff"}) CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["variant"] == 1);
  CHECK(j["max_abs_diff"].get<double>() < 1e-5);
  CHECK(j["speedup"].get<double>() > 0);

  Result r = run_cli({"bench", kModel, "--iterations", "2", "--warmup", "0", "--threads", "1", "--compare", pt});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_OUTPUT(r, "torchscript: min ");
  CHECK_OUTPUT(r, "at::set_num_threads(1)");
  CHECK_OUTPUT(r, "speedup:     ");
  CHECK_OUTPUT(r, "max |diff|:  ");

  const std::string one = tmp("one_output.pt");
  write_single_output_module(one);
  Result mismatch = run_cli({"bench", kModel, "--iterations", "1", "--compare", one});
  CHECK(mismatch.code == 1);
  CHECK_OUTPUT(mismatch, "returns 1 tensor(s) but the compiled model returns 2");

  Result missing = run_cli({"bench", kModel, "--iterations", "1", "--compare", tmp("no_such.pt")});
  CHECK(missing.code == 1);
  CHECK_OUTPUT(missing, "cannot load TorchScript model");
}

// Compiles samples/<sample> with the real compiler into a fresh dir/mlp.so; the compile must succeed.
std::string compile_sample(const std::string& dir_name, const std::string& sample,
                           const std::vector<std::string>& flags = {}) {
  const std::string so = fresh_dir(dir_name) + "/mlp.so";
  std::vector<std::string> args = {std::string(THUNDERC_SAMPLES) + "/" + sample, "-o", so};
  args.insert(args.end(), flags.begin(), flags.end());
  Result compile = shell(command_line(THUNDERC_BIN, args));
  REQUIRE_MESSAGE(compile.code == 0, compile.out);
  return so;
}

TEST_CASE("compiled sample: bench --compare against TorchScript") {
  const std::string so = compile_sample("compiled_mlp", "mlp.pt");
  const std::string pt = std::string(THUNDERC_SAMPLES) + "/mlp.pt";
  Result inspect = run_cli({"inspect", so});
  CHECK_MESSAGE(inspect.code == 0, inspect.out);
  CHECK_OUTPUT(inspect, "mlp.pt");
  json j = [&] {
    Result r = run_cli_stdout({"bench", so, "--json", "--iterations", "5", "--warmup", "1", "--compare", pt});
    REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
    return json::parse(r.out);
  }();
  REQUIRE(j.contains("max_abs_diff"));
  CHECK(j["max_abs_diff"].is_number());
  CHECK(j["max_abs_diff"].get<double>() < 1e-4);
  CHECK_FALSE(j.contains("profile"));  // compiled without --profile
  Result text = run_cli({"bench", so, "--iterations", "2", "--warmup", "0"});
  CHECK_FALSE(has(text, "profile:"));
}

// --profile: every operation is timed into counters the .so exports; bench reports the timed calls' share.
// The operations run inside the call, one after another, so their times sum to at most the calls' wall time.
TEST_CASE("compiled with --profile: bench shows each operation's time, and the outputs are unchanged") {
  const std::string so = compile_sample("compiled_cnn_profile", "cnn.pt", {"--profile"});
  const std::string pt = std::string(THUNDERC_SAMPLES) + "/cnn.pt";
  constexpr int kIterations = 20;
  json j = [&] {
    Result r = run_cli_stdout({"bench", so, "--json", "--iterations", std::to_string(kIterations), "--warmup", "3",
                               "--threads", "1", "--compare", pt});
    REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
    return json::parse(r.out);
  }();
  CHECK(j["max_abs_diff"].get<double>() < 1e-4);  // timing changes no result (same tolerance as the mlp's)
  REQUIRE(j.contains("profile"));
  const json& ops = j["profile"]["operations"];
  REQUIRE(ops.is_array());
  CHECK(ops.size() >= 5);  // convolutions, pooling, the linear: every operation of the variant
  double sum_ms = 0, most_ms = 0;
  for (const json& op : ops) {
    INFO(op.dump());
    CHECK(op["calls"].get<int>() == kIterations);  // the warm-up's calls are not counted
    CHECK(op["operation"].get<std::string>().find(" = ") != std::string::npos);
    CHECK(op["total_ms"].get<double>() >= 0);
    sum_ms += op["total_ms"].get<double>();
    most_ms = std::max(most_ms, op["total_ms"].get<double>());
  }
  const double wall_ms = j["profile"]["total_ms"].get<double>();
  CHECK(most_ms > 0);
  CHECK(sum_ms <= wall_ms);
  CHECK(wall_ms >= j["median_ms"].get<double>() * kIterations / 2);  // the timed calls' wall time, not one call's

  Result text = run_cli({"bench", so, "--iterations", "5", "--warmup", "1"});
  REQUIRE_MESSAGE(text.code == 0, text.out);
  CHECK_OUTPUT(text, "profile:     per call, mean over the timed calls (--profile; " + std::to_string(ops.size()) + " operations)");
  CHECK_OUTPUT(text, "outside the operations");
  Result inspect = run_cli_stdout({"inspect", so, "--json"});
  REQUIRE(inspect.code == 0);
  CHECK(json::parse(inspect.out)["options"]["profile"] == true);
}

TEST_CASE("compiled sample with symbolic dimensions: inspect, run and bench take the sizes at run time") {
  const std::string so = compile_sample("compiled_symbolic", "mlp_scripted.pt",
                                        {"--cache", "symbolic values", "--shapes", "x=Bx64", "--dim", "B=1:32"});
  const std::string dir = fs::path(so).parent_path().string();
  const std::string pt = std::string(THUNDERC_SAMPLES) + "/mlp_scripted.pt";
  Result inspect = run_cli({"inspect", so});
  CHECK_MESSAGE(inspect.code == 0, inspect.out);
  CHECK_OUTPUT(inspect, "x: float32[B, 64] cpu");
  CHECK_OUTPUT(inspect, "B in 1..32");
  CHECK_OUTPUT(inspect, "output0: float32[B, 10]");

  std::vector<float> x(5 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  const std::string in = save_input("sym_x.npy", HostTensor::from_vector<float>({5, 64}, x));
  Result run = run_cli({"run", so, in, "--output-dir", dir + "/out"});
  REQUIRE_MESSAGE(run.code == 0, run.out);
  CHECK(thunderc::npy::load(dir + "/out/output0.npy").shape() == std::vector<int64_t>{5, 10});

  Result no_shapes = run_cli({"bench", so, "--iterations", "2", "--warmup", "0"});
  CHECK(no_shapes.code == 1);
  CHECK_OUTPUT(no_shapes, "symbolic dimensions");
  Result too_big = run_cli({"bench", so, "--shapes", "x=40x64", "--iterations", "2", "--warmup", "0"});
  CHECK(too_big.code == 1);
  CHECK_OUTPUT(too_big, "outside B's range 1..32");
  json j = [&] {
    Result r = run_cli_stdout({"bench", so, "--shapes", "x=7x64", "--json", "--iterations", "3", "--warmup", "1",
                               "--compare", pt});
    REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
    return json::parse(r.out);
  }();
  REQUIRE(j.contains("max_abs_diff"));
  CHECK(j["max_abs_diff"].get<double>() < 1e-4);
}

TEST_CASE("a training .so built for two CPU levels: both levels' gradients match LibTorch autograd") {
  const std::string so = compile_sample("compiled_mlp_train_levels", "mlp.pt",
                                        {"--autograd", "--cpu-target", "x86-64-v2,x86-64-v4"});
  const std::string pt = std::string(THUNDERC_SAMPLES) + "/mlp.pt";
  // Uncapped: the v4 copy on an AVX-512 machine (the v2 one elsewhere); capped: the v2 copy, whose forward and
  // backward entries are the manifest's own names.
  for (const std::string env : {"", "THUNDERC_MAX_CPU_TARGET=x86-64-v2 "}) {
    CAPTURE(env);
    Result r = thunderc_test::run_shell(env + command_line(THUNDERC_CMDS_BIN, {"bench", so, "--json", "--iterations", "2",
                                                                                "--warmup", "0", "--threads", "1",
                                                                                "--compare", pt}),
                                        false);
    REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
    const json j = json::parse(r.out);
    CHECK(j["mode"] == "training step");
    CHECK(j["gradients"].get<int>() == 6);
    REQUIRE(j["max_rel_grad_diff"].is_number());
    CHECK(j["max_rel_grad_diff"].get<double>() < 1e-5);
    CHECK(j["max_abs_diff"].get<double>() < 1e-5);
  }
}

TEST_CASE("inspect: a training .so's parameters, saved tensors, backward entry and optimizer") {
  const std::string so = compile_sample("compiled_mlp_train_adamw", "mlp.pt", {"--autograd", "--optimizer", "adamw"});
  Result r = run_cli_stdout({"inspect", so});
  REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
  // mlp: fc1 (128x64 + 128), layer norm (128 + 128), fc2 (10x128 + 10) = 9866 floats.
  CHECK_MESSAGE(r.out.find("training:  6 parameters, 39464 bytes (38.5 KiB); 6 gradients") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("optimizer: adamw (thunderc_variant_2; state per parameter: exp_avg, exp_avg_sq)") !=
                    std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find(", for the backward thunderc_variant_1 (workspace ") != std::string::npos, r.out);
}

TEST_CASE("compiled training sample: bench times a training step and --compare checks the gradients") {
  const std::string so = compile_sample("compiled_bert_train", "bert_tiny.pt", {"--autograd"});
  const std::string pt = std::string(THUNDERC_SAMPLES) + "/bert_tiny.pt";
  const std::string ids = std::string(THUNDERC_SAMPLES) + "/bert_tiny.input_ids.npy";
  const std::string mask = std::string(THUNDERC_SAMPLES) + "/bert_tiny.attention_mask.npy";
  json j = [&] {
    Result r = run_cli_stdout({"bench", so, "--input", "input_ids=" + ids, "--input", "attention_mask=" + mask, "--json",
                               "--iterations", "3", "--warmup", "1", "--threads", "1", "--compare", pt});
    REQUIRE_MESSAGE(r.code == 0, r.cmd << "\n" << r.out);
    return json::parse(r.out);
  }();
  CHECK(j["mode"] == "training step");
  CHECK(j["gradients"].get<int>() == 39);
  // The sample's ids hold its padding_idx (0), whose embedding row gets no gradient in PyTorch.
  REQUIRE(j["max_rel_grad_diff"].is_number());
  CHECK(j["max_rel_grad_diff"].get<double>() < 1e-5);
  CHECK(j["max_abs_diff"].get<double>() < 1e-4);

  Result text = run_cli({"bench", so, "--input", "input_ids=" + ids, "--input", "attention_mask=" + mask,
                         "--iterations", "2", "--warmup", "0", "--threads", "1"});
  CHECK_MESSAGE(text.code == 0, text.out);
  CHECK_OUTPUT(text, "training step (forward_train + backward");
  CHECK_OUTPUT(text, "2 from --input");

  Result bad = run_cli({"bench", so, "--input", "nope=" + ids, "--iterations", "1"});
  CHECK(bad.code == 1);
  CHECK_OUTPUT(bad, "unknown input 'nope'");
  Result wrong_dtype = run_cli({"bench", so, "--input", "input_ids=" + std::string(THUNDERC_SAMPLES) + "/mlp.input.npy",
                                "--iterations", "1"});
  CHECK(wrong_dtype.code == 1);
  CHECK_OUTPUT(wrong_dtype, "no available variant");
}
