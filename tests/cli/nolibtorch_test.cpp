// A thunderc built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF; built and registered only there, see
// tests/cli/CMakeLists.txt): the executor registry (torch listed but unavailable, no always-executor, defaults
// standalone) and the thunderc binary's clear user errors (exit 1) for a TorchScript model, the torch executor
// and bench --compare, next to a .pt2 that compiles and runs. Label: cli.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/compile_trace.h"
#include "common/run_process.h"
#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "core/ops/ops.h"
#include "core/transforms/fusion.h"

#if THUNDERC_WITH_LIBTORCH
#error "tests/cli/nolibtorch_test.cpp is for builds with -DTHUNDERC_WITH_LIBTORCH=OFF"
#endif

namespace fs = std::filesystem;
using namespace thunderc;
using thunderc_test::ProcessResult;

namespace {

const std::string kNoLibTorch =
    "this thunderc was built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF)";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

ProcessResult thunderc_run(const std::vector<std::string>& args) {
  return thunderc_test::run_program(THUNDERC_BIN, args);
}

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

fs::path tmp_dir(const std::string& name) {
  fs::path dir = fs::path(THUNDERC_TEST_TMP) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("registry: torch is listed, unavailable everywhere with the reason, and no always-executor") {
  const Executor* torch = find_executor("torch");
  REQUIRE(torch);
  CHECK_FALSE(torch->is_always());
  CHECK(always_executors().empty());
  for (DeviceKind k : {DeviceKind::CPU, DeviceKind::CUDA}) {
    Availability a = torch->availability(k);
    CHECK_FALSE(a.available);
    CHECK(contains(a.reason, kNoLibTorch));
  }
  // Reporting LibTorch's CUDA support (which nothing does here) does not bring it back.
  set_torch_cuda_support(true);
  CHECK_FALSE(torch->availability(DeviceKind::CUDA).available);
  set_torch_cuda_support(false);
}

TEST_CASE("registry: default CPU executors are cpp, onednn, blas, standalone, and --executors torch is a user error") {
  CHECK(default_executor_names(DeviceKind::CPU) == std::vector<std::string>{"cpp", "onednn", "blas"});
  ExecutorSelection s = resolve_executors({}, DeviceKind::CPU, false);
  for (const std::string& name : s.names()) CHECK(name != "torch");
  for (const std::string& n : s.notes) CHECK_MESSAGE(!contains(n, "torch"), n);  // nothing to note: never asked
  std::string msg;
  try {
    resolve_executors({"cpp", "torch"}, DeviceKind::CPU, false);
  } catch (const UserError& e) {
    msg = e.what();
  }
  CHECK(contains(msg, "executor 'torch' is not available: " + kNoLibTorch));
}

TEST_CASE("thunderc binary: a TorchScript model is refused with a clear error (exit 1)") {
  fs::path dir = tmp_dir("torchscript");
  ProcessResult r = thunderc_run({sample("mlp.pt"), "-o", (dir / "mlp.so").string()});
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "thunderc: error: " + kNoLibTorch + ": it reads torch.export .pt2 programs only; "));
  CHECK(contains(r.out, "mlp.pt is not one"));
  CHECK_FALSE(fs::exists(dir / "mlp.so"));

  ProcessResult e = thunderc_run({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1x64"});
  INFO(e.out);
  CHECK(e.code == 1);
  CHECK(contains(e.out, "thunderc: error: " + kNoLibTorch + ": it reads torch.export .pt2 programs only; "));

  // A missing file is still just a missing file.
  ProcessResult m = thunderc_run({(dir / "missing.pt").string(), "-o", (dir / "m.so").string()});
  CHECK(m.code == 1);
  CHECK_MESSAGE(contains(m.out, "cannot open the model file"), m.out);
}

TEST_CASE("thunderc binary: the torch executor is unavailable, saying why (exit 1)") {
  fs::path dir = tmp_dir("torch_executor");
  ProcessResult r = thunderc_run({sample("pt2/mlp.pt2"), "-o", (dir / "mlp.so").string(), "--executors", "torch"});
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(contains(r.out, "thunderc: error: executor 'torch' is not available: " + kNoLibTorch));

  // --cache "symbolic values" runs on the native executors (no torch needed); the export's range still holds.
  ProcessResult s = thunderc_run({sample("pt2/dynamic_batch.pt2"), "-o", (dir / "db.so").string(), "--shapes",
                                  "x=Bx12", "--dim", "B=1:16", "--cache", "symbolic values"});
  INFO(s.out);
  CHECK(s.code == 0);
  CHECK(contains(s.out, "symbolic sizes: B in 1..16"));
  ProcessResult wide = thunderc_run({sample("pt2/dynamic_batch.pt2"), "-o", (dir / "db.so").string(), "--shapes",
                                     "x=Bx12", "--dim", "B=1:32", "--cache", "symbolic values"});
  INFO(wide.out);
  CHECK(wide.code == 1);
  CHECK(contains(wide.out, "outside the range the export allows (1..16)"));

  ProcessResult l = thunderc_run({"--list-executors"});
  INFO(l.out);
  CHECK(l.code == 0);
  CHECK(contains(l.out, "unavailable: " + kNoLibTorch));
  CHECK(contains(l.out, "cpu:  cpp, onednn, blas"));
  CHECK(contains(l.out, "Always-executors (appended to every list unless --standalone): none (built without LibTorch)"));

  ProcessResult v = thunderc_run({"--version"});
  CHECK(v.code == 0);
  CHECK_MESSAGE(contains(v.out, "LibTorch: none"), v.out);

  // The operator list: the .pt2 frontend's names only (no TorchScript importer here), every one mapped.
  ProcessResult ops = thunderc_run({"--list-ops"});
  INFO(ops.out);
  CHECK(ops.code == 0);
  CHECK(contains(ops.out, "the frontends import 0 TorchScript node kinds"));
  CHECK(contains(ops.out, "PyTorch's Core ATen opset"));
  CHECK_FALSE(contains(ops.out, "bug:"));
}

TEST_CASE("thunderc binary: a .pt2 compiles standalone and runs, and bench --compare is refused (exit 1)") {
  fs::path dir = tmp_dir("pt2_bench");
  const std::string so = (dir / "mlp.so").string();
  ProcessResult c = thunderc_run({sample("pt2/mlp.pt2"), "-o", so});
  INFO(c.out);
  REQUIRE(c.code == 0);
  CHECK(contains(c.out, "executors cpp, onednn, blas"));
  CHECK_FALSE(contains(c.out, "torch"));

  ProcessResult run = thunderc_run({"run", so, sample("pt2/mlp.input.npy"), "--expect", sample("pt2/mlp.expected.npy"),
                                    "--rtol", "1e-4", "--atol", "1e-5", "--output-dir", dir.string()});
  INFO(run.out);
  CHECK(run.code == 0);
  CHECK(contains(run.out, "output0: matches"));

  ProcessResult b = thunderc_run({"bench", so, "--iterations", "1", "--compare", sample("mlp.pt")});
  INFO(b.out);
  CHECK(b.code == 1);
  CHECK(contains(b.out, "thunderc: error: --compare runs the TorchScript model with LibTorch, and " + kNoLibTorch));

  ProcessResult ok = thunderc_run({"bench", so, "--iterations", "2", "--warmup", "1"});
  INFO(ok.out);
  CHECK(ok.code == 0);
}

// This thunderc links no OpenMP runtime: a model's parallel loops bring libgomp in, and its thread pool must
// outlive the model. Closing the model used to unload libgomp under its parked threads: SIGSEGV at exit
// (seen on resnet18 with `thunderc run`). Each call here runs a 4M-element loop nest on 2 threads.
TEST_CASE("thunderc binary: a model whose loops run on OpenMP threads is closed and the program exits cleanly") {
  fs::path dir = tmp_dir("omp_exit");
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Float32, {2048, 2048}, Device::cpu()});
  ValueId y = t.emit1(op("relu"), {Operand::tensor(x)}, {});
  t.set_outputs({t.emit1(op("mul"), {Operand::tensor(y), Operand::number(Scalar(2.0))}, {})});
  REQUIRE(claim_executors(t, {find_executor("cpp")}).empty());
  const std::string so = thunderc_test::compile_trace(fuse_cpp_regions(t), {"cpp"}, "wide", dir);
  for (const char* threads : {"2", "1"}) {
    CAPTURE(threads);
    ProcessResult b = thunderc_run({"bench", so, "--iterations", "3", "--warmup", "1", "--threads", threads});
    INFO(b.out);
    CHECK(b.code == 0);
  }
}
