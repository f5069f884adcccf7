// End-to-end tests of the thunderc binary: each case runs it (THUNDERC_BIN) and checks the exit code and a
// key phrase of its output.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "common/run_process.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Result = thunderc_test::ProcessResult;
using thunderc_test::shell_quote;

// Runs thunderc with `args`, in directory `cwd` when given.
Result thunderc(const std::vector<std::string>& args, const std::string& cwd = "") {
  Result r = thunderc_test::run_program(THUNDERC_BIN, args, cwd);
  REQUIRE(r.code >= 0);
  return r;
}

// The same after `env` assignments ("A=1"; none when empty), through the shell.
Result thunderc_env(const std::string& env, const std::vector<std::string>& args) {
  Result r = thunderc_test::run_shell(env + (env.empty() ? "" : " ") + thunderc_test::command_line(THUNDERC_BIN, args));
  REQUIRE(r.code >= 0);
  return r;
}

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

// The highest x86-64 level this CPU runs, from the psABI's feature lists (runtime/src/cpu_isa.hpp
// holds the runtime's copy; its namespace would clash with this file's thunderc() helper).
std::string host_cpu_level() {
#define HAS(f) __builtin_cpu_supports(f)  // the builtin takes string literals only
  if (!(HAS("popcnt") && HAS("sse3") && HAS("ssse3") && HAS("sse4.1") && HAS("sse4.2"))) return "x86-64";
  if (!(HAS("avx") && HAS("avx2") && HAS("bmi") && HAS("bmi2") && HAS("fma"))) return "x86-64-v2";
  if (!(HAS("avx512f") && HAS("avx512bw") && HAS("avx512cd") && HAS("avx512dq") && HAS("avx512vl"))) return "x86-64-v3";
#undef HAS
  return "x86-64-v4";
}

std::string tmp_file(const std::string& name, const std::string& content) {
  mkdir(THUNDERC_TEST_TMP, 0755);
  std::string path = std::string(THUNDERC_TEST_TMP) + "/" + name;
  std::ofstream(path) << content;
  return path;
}

int shell(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A copy of samples/NAME.pt without the extra/thunderc.json file that records its input shapes, re-zipped
// with `cmake -E tar` (TorchScript archives are zip files whose entries sit under one top folder NAME/).
std::string without_recorded_shapes(const std::string& name) {
  std::string dir = std::string(THUNDERC_TEST_TMP) + "/noshapes_" + name;
  std::string out = dir + "/" + name + "_noshapes.pt";
  std::string cmake = shell_quote(THUNDERC_CMAKE);
  std::string cmd = "rm -rf " + shell_quote(dir) + " && mkdir -p " + shell_quote(dir) + " && cd " + shell_quote(dir) + " && " + cmake +
                    " -E tar xf " + shell_quote(sample(name + ".pt")) + " && rm -rf " + shell_quote(name + "/extra") + " && " +
                    cmake + " -E tar cf " + shell_quote(out) + " --format=zip " + shell_quote(name);
  REQUIRE_MESSAGE(shell(cmd) == 0, cmd);
  return out;
}

bool has(const Result& r, const std::string& phrase) { return r.out.find(phrase) != std::string::npos; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

#define CHECK_OUTPUT(r, phrase) CHECK_MESSAGE(has(r, phrase), "expected \"" << phrase << "\" in:\n" << r.out)

}  // namespace

TEST_CASE("--version") {
  Result r = thunderc({"--version"});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "thunderc 0.");
  CHECK_OUTPUT(r, "LibTorch ");
  // build/bin/thunderc is not in an installed layout: it uses the source tree's headers (tests/install
  // checks the installed case).
  CHECK_OUTPUT(r, "kernel headers: the build tree (");
}

TEST_CASE("--help shows the subcommand and examples") {
  Result r = thunderc({"--help"});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "examine");
  CHECK_OUTPUT(r, "Examples:");
  CHECK_OUTPUT(r, "--list-executors");
  CHECK_OUTPUT(r, "-o OUT.so");
}

TEST_CASE("--list-executors lists all six") {
  Result r = thunderc({"--list-executors"});
  CHECK(r.code == 0);
  for (const char* name : {"torch", "cpp", "blas", "onednn", "nvfuser", "cublas", "cudnn"}) CHECK_OUTPUT(r, std::string("  ") + name + " ");
  CHECK_FALSE(has(r, "not implemented yet"));  // every executor has its code generation
  CHECK_OUTPUT(r, "Default executors");
  CHECK_OUTPUT(r, "Always-executors (appended to every list unless --standalone): torch");
}

TEST_CASE("examine traced samples (recorded shapes)") {
  // With an explicit executor list, so the claims below do not depend on the CPU defaults.
  SUBCASE("mlp") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--executors", "torch"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "Outputs:");
    CHECK_OUTPUT(r, "cpu f32[1, 10]");
    CHECK_OUTPUT(r, "torch.linear(");
    CHECK_OUTPUT(r, "OK: every operation is supported and claimed");
  }
  SUBCASE("cnn") {
    Result r = thunderc({"examine", sample("cnn.pt"), "--executors", "torch"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "cpu f32[1, 3, 32, 32]");
    CHECK_OUTPUT(r, "cpu f32[1, 10]");
    CHECK_OUTPUT(r, "torch.conv2d(");
  }
  SUBCASE("gpt_block") {
    Result r = thunderc({"examine", sample("gpt_block.pt")});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "Outputs:");
    CHECK_OUTPUT(r, "cpu f32[1, 16, 64]");
  }
}

TEST_CASE("examine scripted samples with --shapes") {
  SUBCASE("mlp_scripted, named") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1x64"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "cpu f32[1, 10]");
    CHECK_OUTPUT(r, "(from --shapes)");
  }
  SUBCASE("gpt_block_scripted, positional") {
    Result r = thunderc({"examine", sample("gpt_block_scripted.pt"), "--shapes", "1x16x64"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "cpu f32[1, 16, 64]");
  }
  SUBCASE("two specializations") {
    Result r = thunderc({"examine", "--shapes", "x=1x64", "--shapes", "x=4x64", sample("mlp_scripted.pt")});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "Specialization 2 of 2");
    CHECK_OUTPUT(r, "cpu f32[4, 10]");
  }
  SUBCASE("verbose shows the TorchScript graph") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--verbose", "--executors", "torch"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "TorchScript graph");
  }
}

TEST_CASE("compile writes OUT.so and OUT.json (creating the directory) and reports what it did") {
  std::string dir = std::string(THUNDERC_TEST_TMP) + "/compile_output/new_dir";
  std::filesystem::remove_all(dir);
  std::string so = dir + "/mlp.so";
  std::remove(so.c_str());
  Result r = thunderc({sample("mlp.pt"), "-o", so});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "compiled");
  CHECK_OUTPUT(r, "mlp.json");
  CHECK(std::ifstream(so).good());
  CHECK(std::ifstream(dir + "/mlp.json").good());
}

TEST_CASE("--bounded-variants: auto puts a bounded variant before the exact one, off leaves it out, others are refused") {
  const std::string dir = std::string(THUNDERC_TEST_TMP) + "/bounded_variants";
  std::filesystem::create_directories(dir);
  auto variants = [&](const std::string& json) {
    std::ifstream in(json);
    return nlohmann::json::parse(in)["variants"];
  };
  // samples/cnn.pt: convolutions followed by relu, claimed by onednn by default.
  Result automatic = thunderc({sample("cnn.pt"), "-o", dir + "/auto.so"});
  REQUIRE(automatic.code == 0);
  CHECK_OUTPUT(automatic, "2 variants");
  // What the bounded variant holds: cnn's relus after its convolutions and linears, and its 3x3 stride-1
  // convolutions marked for Winograd (marked at compile time; whether it pays, the running CPU decides).
  CHECK_OUTPUT(automatic, "variant 0 is bounded (oneDNN: 6 fused activations, 3 convolutions that may use Winograd), "
                          "for calls whose floating-point inputs are all finite with |x| <= 2^");
  const auto v = variants(dir + "/auto.json");
  REQUIRE(v.size() == 2);
  CHECK(v[0]["guards"][0]["finite_max_abs"].get<double>() >= 1);
  CHECK_FALSE(v[1]["guards"][0].contains("finite_max_abs"));
  CHECK(v[0]["executors"]["cpp"].get<int>() < v[1]["executors"]["cpp"].get<int>());  // relus moved into oneDNN
  Result off = thunderc({sample("cnn.pt"), "-o", dir + "/off.so", "--bounded-variants", "off"});
  REQUIRE(off.code == 0);
  CHECK_OUTPUT(off, "1 variant,");
  CHECK(variants(dir + "/off.json").size() == 1);
  nlohmann::json exact = v[1];  // the exact variant is the same either way, but for its id and entry
  exact["id"] = 0;
  exact["entry"] = "thunderc_variant_0";
  CHECK(variants(dir + "/off.json")[0] == exact);
  Result bad = thunderc({"examine", sample("cnn.pt"), "--bounded-variants", "maybe"});
  CHECK(bad.code == 1);
  CHECK_OUTPUT(bad, "--bounded-variants must be auto or off, got 'maybe'");
  // Without oneDNN in the list nothing would fuse: no bounded variant.
  Result blas = thunderc({sample("cnn.pt"), "-o", dir + "/blas.so", "--executors", "cpp,blas"});
  REQUIRE(blas.code == 0);
  CHECK(variants(dir + "/blas.json").size() == 1);
}

TEST_CASE("CUDA: the card's command compiles for CUDA (no GPU needed), says what it did, and run fails clearly without a GPU") {
  std::string dir = std::string(THUNDERC_TEST_TMP) + "/cuda_compile";
  std::filesystem::remove_all(dir);
  std::string so = dir + "/mlp.so";
  Result r = thunderc({sample("mlp.pt"), "--executors", "nvfuser,cudnn", "-o", so});
  Result probe = thunderc({"--list-executors"});
  if (has(probe, "nvfuser  cuda      available")) {
    REQUIRE(r.code == 0);
    CHECK_OUTPUT(r, "executors nvfuser, cudnn");
    CHECK_OUTPUT(r, "CUDA: ");
    CHECK_OUTPUT(r, "0 library calls");  // the MLP has no convolution for cudnn; nvfuser runs its linears
    CHECK_OUTPUT(r, "cubins for sm_80, sm_90");
    Result inspect = thunderc({"inspect", so});
    CHECK(inspect.code == 0);
    CHECK_OUTPUT(inspect, "cuda:0");
    CHECK_OUTPUT(inspect, "tc_v0_s0_linear");
    // Without a device `run` explains and exits 1; with one it reproduces LibTorch's output.
    Result run = thunderc({"run", so, sample("mlp.input.npy"), "--expect", sample("mlp.expected.npy"), "--output-dir", dir});
    if (run.code != 0) {
      CHECK(run.code == 1);
      CHECK_OUTPUT(run, "thunderc: error: ");
      CHECK_OUTPUT(run, "cuda:0");
    } else {
      CHECK_OUTPUT(run, "matches");
    }
    Result arch = thunderc({sample("mlp.pt"), "--device", "cuda", "--cuda-arch", "sm_12", "-o", so});
    CHECK(arch.code == 1);
    CHECK_OUTPUT(arch, "CUDA architecture 'sm_12' is not supported");
  } else {  // no NVRTC here: nvfuser is unavailable, and the error says why
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "executor 'nvfuser' is not available");
    CHECK_OUTPUT(r, "NVRTC");
  }
  Result cpu_arch = thunderc({sample("mlp.pt"), "--cuda-arch", "sm_90", "-o", so});
  CHECK(cpu_arch.code == 1);
  CHECK_OUTPUT(cpu_arch, "--cuda-arch applies to CUDA variants only");
}

TEST_CASE("errors") {
  SUBCASE("missing file") {
    Result r = thunderc({"examine", sample("does_not_exist.pt")});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK_OUTPUT(r, "does_not_exist.pt");
  }
  SUBCASE("not a TorchScript file") {
    std::string path = tmp_file("not_a_model.pt", "this is a text file, not a TorchScript archive\n");
    Result r = thunderc({"examine", path});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK_OUTPUT(r, "not_a_model.pt");
  }
  SUBCASE("scripted model without --shapes") {
    // The samples record their shapes (extra/thunderc.json); a copy without that file needs --shapes.
    std::string path = without_recorded_shapes("mlp_scripted");
    Result r = thunderc({"examine", path});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "does not record its input shapes; pass --shapes for its input x");
    r = thunderc({"examine", path, "--shapes", "x=2x64"});
    CHECK(r.code == 0);
    CHECK_OUTPUT(r, "cpu f32[2, 10]");
  }
  SUBCASE("bad --shapes text") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1xfoo"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK_OUTPUT(r, "1xfoo");
  }
  SUBCASE("unknown input name in --shapes") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "nosuchinput=1x64"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK_OUTPUT(r, "nosuchinput");
  }
  SUBCASE("unknown executor") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--executors", "cpp,tensorrt"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "unknown executor 'tensorrt'");
    CHECK_OUTPUT(r, "torch, cpp, blas, onednn, nvfuser, cublas, cudnn");
  }
  SUBCASE("executor for another device") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--device", "cpu", "--executors", "cudnn"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "--device cpu does not match --executors: cudnn runs on cuda only");
  }
  SUBCASE("CPU and CUDA executors in one list") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--executors", "cpp,nvfuser"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "mixes CPU executors (cpp) with CUDA executors (nvfuser)");
  }
  SUBCASE("a CUDA executor alone that cannot run the model's operators: each is listed with the executors asked") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--executors", "cudnn"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "no executor can run 4 of 4 operations");
    CHECK_OUTPUT(r, "layer_norm");
    CHECK_OUTPUT(r, "executors asked: cudnn");
  }
  SUBCASE("--precision: unknown, fp16 on the CPU, tf32 on the CPU, fp16 without the autocast transform") {
    Result bad = thunderc({"examine", sample("mlp.pt"), "--precision", "fp8"});
    CHECK(bad.code == 1);
    CHECK_OUTPUT(bad, "--precision must be fp32, tf32, bf16 or fp16, got 'fp8'");
    Result half = thunderc({"examine", sample("mlp.pt"), "--precision", "fp16"});
    CHECK(half.code == 1);
    CHECK_OUTPUT(half, "--precision fp16 is for --device cuda");
    Result no_autocast = thunderc({"examine", sample("mlp.pt"), "--device", "cuda", "--precision", "fp16", "--transforms", "dce"});
    CHECK(no_autocast.code == 1);
    CHECK_OUTPUT(no_autocast, "--precision fp16 needs the autocast transform, which --transforms leaves out");
    Result cpu = thunderc({"examine", sample("mlp.pt"), "--precision", "tf32"});
    CHECK(cpu.code == 1);
    CHECK_OUTPUT(cpu, "--precision tf32 is a tensor-core mode of NVIDIA GPUs: it needs --device cuda");
  }
  SUBCASE("--cpu-target: recorded in the manifest; an unknown level refused") {
    const std::string so = std::string(THUNDERC_TEST_TMP) + "/cpu_target_v2.so";
    Result ok = thunderc({sample("mlp.pt"), "--cpu-target", "x86-64-v2", "-o", so});
    REQUIRE(ok.code == 0);
    CHECK(read_text(std::string(THUNDERC_TEST_TMP) + "/cpu_target_v2.json").find("\"cpu_target\": \"x86-64-v2\"") !=
          std::string::npos);
    Result run = thunderc({"run", so, sample("mlp.input.npy"), "--expect", sample("mlp.expected.npy"), "--output-dir",
                           std::string(THUNDERC_TEST_TMP) + "/cpu_target_v2_out"});
    CHECK(run.code == 0);
    Result bad = thunderc({sample("mlp.pt"), "--cpu-target", "x86-64-v3,avx512", "-o", so});
    CHECK(bad.code == 1);
    CHECK_OUTPUT(bad, "--cpu-target takes x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or native, or a comma-separated "
                      "list of them (e.g. x86-64-v3,x86-64-v4); got 'avx512'");
    Result empty = thunderc({sample("mlp.pt"), "--cpu-target", "x86-64-v3,", "-o", so});
    CHECK(empty.code == 1);
    CHECK_OUTPUT(empty, "got ''");
  }
  SUBCASE("--cpu-target native: the highest named level this machine has, recorded as that level") {
    const std::string so = std::string(THUNDERC_TEST_TMP) + "/cpu_target_native.so";
    Result ok = thunderc({sample("mlp.pt"), "--cpu-target", "native", "-o", so});
    REQUIRE(ok.code == 0);
    const std::string json = read_text(std::string(THUNDERC_TEST_TMP) + "/cpu_target_native.json");
    CHECK(json.find("\"cpu_target\": \"" + host_cpu_level() + "\"") != std::string::npos);
    CHECK(json.find("native") == std::string::npos);
  }
  SUBCASE("--cpu-target x86-64-v2,x86-64-v4 (cpp, onednn, blas): one .so, each level's entries; the runtime runs the "
          "best level, THUNDERC_MAX_CPU_TARGET caps it, both agree with PyTorch") {
    for (const std::string name : {"mlp", "cnn"}) {
      CAPTURE(name);
      const std::string base = std::string(THUNDERC_TEST_TMP) + "/cpu_targets_" + name;
      std::filesystem::remove_all(base + "_src");
      // Given out of order and repeated: recorded ascending, once each.
      Result ok = thunderc({sample(name + ".pt"), "--cpu-target", "x86-64-v4,x86-64-v2,x86-64-v4", "-o", base + ".so",
                            "--keep-sources", base + "_src"});
      REQUIRE(ok.code == 0);
      CHECK_OUTPUT(ok, "host code for x86-64-v2, x86-64-v4 (one copy each; the runtime runs the best level the CPU has)");
      const std::string json = read_text(base + ".json");
      CHECK(json.find("\"cpu_target\": \"x86-64-v2\"") != std::string::npos);
      CHECK(json.find("\"cpu_targets\": [\n      \"x86-64-v2\",\n      \"x86-64-v4\"\n    ]") != std::string::npos);
      // The v4 copy: renamed entries kept global, everything else hidden; its combine files beside the sources.
      CHECK(std::filesystem::exists(base + "_src/cpu_x86-64-v4.o"));
      CHECK(read_text(base + "_src/cpu_x86-64-v4.keep").find("thunderc_variant_0__x86_64_v4\n") != std::string::npos);
      const bool v4 = host_cpu_level() == "x86-64-v4";
      for (const std::string cap : {"", "x86-64-v2", "x86-64-v3"}) {
        CAPTURE(cap);
        const std::string env = cap.empty() ? "" : "THUNDERC_MAX_CPU_TARGET=" + cap;
        Result run = thunderc_env(env, {"run", base + ".so", sample(name + ".input.npy"), "--expect",
                                        sample(name + ".expected.npy"), "--output-dir", base + "_out"});
        CHECK(run.code == 0);
        Result info = thunderc_env(env, {"inspect", base + ".so"});
        REQUIRE(info.code == 0);
        // Uncapped on an AVX-512 machine the v4 copy runs; capped, or elsewhere, the v2 one (under the plain names).
        const bool runs_v4 = cap.empty() && v4;
        const std::string runs = std::string("host code: ") + (runs_v4 ? "x86-64-v4" : "x86-64-v2") +
                                 " runs here (compiled for x86-64-v2, x86-64-v4)";
        CHECK_OUTPUT(info, runs);
        CHECK((info.out.find("#0  thunderc_variant_0__x86_64_v4\n") != std::string::npos) == runs_v4);
      }
      Result below = thunderc_env("THUNDERC_MAX_CPU_TARGET=x86-64", {"run", base + ".so", sample(name + ".input.npy"),
                                                                     "--output-dir", base + "_out"});
      CHECK(below.code == 1);
      CHECK_OUTPUT(below, "THUNDERC_MAX_CPU_TARGET=x86-64 is below x86-64-v2, the lowest level the model was compiled for");
      Result wrong = thunderc_env("THUNDERC_MAX_CPU_TARGET=v4", {"run", base + ".so", sample(name + ".input.npy"),
                                                                "--output-dir", base + "_out"});
      CHECK(wrong.code == 1);
      CHECK_OUTPUT(wrong, "THUNDERC_MAX_CPU_TARGET='v4' is not a CPU target");
    }
  }
  SUBCASE("--conv-algorithm: recorded in the manifest and in each oneDNN call's spec; an unknown one refused") {
    const std::string dir = std::string(THUNDERC_TEST_TMP) + "/conv_direct";
    std::filesystem::remove_all(dir + "_src");
    Result ok = thunderc({sample("cnn.pt"), "--conv-algorithm", "direct", "-o", dir + ".so", "--keep-sources",
                          dir + "_src"});
    REQUIRE(ok.code == 0);
    CHECK(read_text(dir + ".json").find("\"conv_algorithm\": \"direct\"") != std::string::npos);
    const std::string code = read_text(dir + "_src/model.cpp");
    // The spec's last integer field, winograd, before the activation: 0 in every call, bounded variant included.
    CHECK(code.find(" 0LL, thunderc_onednn::k") != std::string::npos);
    CHECK(code.find(" 1LL, thunderc_onednn::k") == std::string::npos);
    Result def = thunderc({sample("cnn.pt"), "-o", std::string(THUNDERC_TEST_TMP) + "/conv_auto.so"});
    REQUIRE(def.code == 0);
    CHECK(read_text(std::string(THUNDERC_TEST_TMP) + "/conv_auto.json").find("\"conv_algorithm\": \"auto\"") !=
          std::string::npos);
    Result bad = thunderc({sample("cnn.pt"), "--conv-algorithm", "fast", "-o", dir + ".so"});
    CHECK(bad.code == 1);
    CHECK_OUTPUT(bad, "--conv-algorithm must be auto or direct, got 'fast'");
  }
  SUBCASE("--cuda-graphs without CUDA") {
    Result r = thunderc({sample("mlp.pt"), "--cuda-graphs", "-o", std::string(THUNDERC_TEST_TMP) + "/graphs_cpu.so"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "--cuda-graphs applies to CUDA variants only");
  }
  SUBCASE("--profile with what it cannot time") {
    const std::string so = std::string(THUNDERC_TEST_TMP) + "/profile_refused.so";
    Result cuda = thunderc({sample("mlp.pt"), "--profile", "--device", "cuda", "-o", so});
    CHECK(cuda.code == 1);
    CHECK_OUTPUT(cuda, "--profile times the operations of CPU variants");
    Result train = thunderc({sample("mlp.pt"), "--profile", "--autograd", "-o", so});
    CHECK(train.code == 1);
    CHECK_OUTPUT(train, "--profile times inference variants");
    Result levels = thunderc({sample("mlp.pt"), "--profile", "--cpu-target", "x86-64-v2,x86-64-v3", "-o", so});
    CHECK(levels.code == 1);
    CHECK_OUTPUT(levels, "give one --cpu-target level, not x86-64-v2,x86-64-v3");
    CHECK_FALSE(std::filesystem::exists(so));
  }
  SUBCASE("bad --device") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--device", "tpu"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "thunderc: error: ");
  }
  SUBCASE("--standalone --executors cpp: cpp cannot run linear") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--standalone", "--executors", "cpp"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "no executor can run");
    CHECK_OUTPUT(r, "linear");
    CHECK_OUTPUT(r, "executors asked: cpp");
  }
  SUBCASE("compile: the same errors, exit 1") {
    Result r = thunderc({sample("mlp.pt"), "-o", std::string(THUNDERC_TEST_TMP) + "/x.so", "--standalone", "--executors", "cpp"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "no executor can run");
  }
  SUBCASE("compile without -o writes the model's stem into the current directory") {
    std::string dir = std::string(THUNDERC_TEST_TMP) + "/default_output";
    std::filesystem::create_directories(dir);
    std::filesystem::remove(dir + "/mlp.so");
    Result r = thunderc({sample("mlp.pt")}, dir);
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(dir + "/mlp.so"));
    CHECK(std::filesystem::exists(dir + "/mlp.json"));
  }
  SUBCASE("CLI11 parse error") {
    Result r = thunderc({"examine", sample("mlp.pt"), "--no-such-flag"});
    CHECK(r.code != 0);
    CHECK_OUTPUT(r, "--no-such-flag");
  }
}

// thunderc run on every sample's example input reproduces LibTorch's output for it (samples/*.expected.npy,
// written by make_samples.py), within run's default tolerances (rtol 1e-4, atol 1e-5).
TEST_CASE("every sample compiles and thunderc run reproduces LibTorch's output") {
  std::string dir = std::string(THUNDERC_TEST_TMP) + "/run_expect";
  std::filesystem::create_directories(dir);
  for (const char* name : {"mlp", "mlp_scripted", "cnn", "gpt_block", "gpt_block_scripted"}) {
    CAPTURE(name);
    std::string so = dir + "/" + name + ".so";
    Result c = thunderc({sample(std::string(name) + ".pt"), "-o", so});
    CHECK_MESSAGE(c.code == 0, c.out);
    Result r = thunderc({"run", so, sample(std::string(name) + ".input.npy"), "--expect",
                         sample(std::string(name) + ".expected.npy"), "--output-dir", dir + "/" + name});
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK_OUTPUT(r, "matches");
  }
  SUBCASE("a mismatch fails and says where") {
    Result r = thunderc({"run", dir + "/mlp.so", sample("mlp.input.npy"), "--expect", sample("mlp.input.npy"),
                         "--output-dir", dir + "/mismatch"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "output0 is float32[1, 10] but");
  }
}

// samples/torch2/llama_block_scripted.pt: TorchScript saved by torch 2.15 (samples/export_samples.py), using
// aten::rms_norm and aten::scaled_dot_product_attention. A LibTorch 2.x build (scripts/build.sh --libtorch-venv)
// compiles it and matches PyTorch's output (rtol 1e-4, atol 1e-5) with the native executors and with torch
// alone; the default build (Debian's LibTorch 1.13, no aten::rms_norm) refuses it, saying what to do.
TEST_CASE("TorchScript saved by torch 2.x (rms_norm, scaled_dot_product_attention)") {
  const std::string dir = std::string(THUNDERC_TEST_TMP) + "/torch2";
  std::filesystem::create_directories(dir);
  const std::string model = std::string(THUNDERC_SAMPLES) + "/torch2/llama_block_scripted.pt";
#if THUNDERC_LIBTORCH_HAS_RMS_NORM
  for (const char* executors : {"cpp,blas,torch", "torch"}) {
    CAPTURE(executors);
    const std::string so = dir + "/llama_" + (std::string(executors) == "torch" ? "torch" : "native") + ".so";
    Result c = thunderc({model, "-o", so, "--executors", executors});
    REQUIRE_MESSAGE(c.code == 0, c.out);
    Result r = thunderc({"run", so, std::string(THUNDERC_SAMPLES) + "/torch2/llama_block_scripted.input.npy",
                         "--expect", std::string(THUNDERC_SAMPLES) + "/torch2/llama_block_scripted.expected.npy",
                         "--output-dir", dir});
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK_OUTPUT(r, "output0: matches");
  }
  Result e = thunderc({"examine", model, "--executors", "torch"});  // nothing decomposed: the imported ops show
  CHECK(e.code == 0);
  CHECK_OUTPUT(e, "torch.rms_norm");
  CHECK_OUTPUT(e, "torch.scaled_dot_product_attention");
#else
  Result c = thunderc({model, "-o", dir + "/llama.so"});
  CHECK(c.code == 1);
  CHECK_OUTPUT(c, "Unknown builtin op: aten::rms_norm");
  CHECK_OUTPUT(c, "scripts/build.sh --libtorch-venv");
  CHECK_OUTPUT(c, "torch.export");
#endif
}

TEST_CASE("--sharp-edges: allow compiles silently, warn prints each, error fails listing all") {
  // gpt_block_scripted branches on x.dim() and reads frozen module attributes (n_head, scale, ...).
  Result allow = thunderc({"examine", sample("gpt_block_scripted.pt")});
  CHECK(allow.code == 0);
  CHECK(allow.out.find("sharp edge") == std::string::npos);
  Result warn = thunderc({"examine", sample("gpt_block_scripted.pt"), "--sharp-edges", "warn"});
  CHECK(warn.code == 0);
  CHECK_OUTPUT(warn, "warning: sharp edge");
  CHECK_OUTPUT(warn, "[shape-dependent-control-flow]");
  CHECK_OUTPUT(warn, "[frozen-attribute]");
  Result error = thunderc({"examine", sample("gpt_block_scripted.pt"), "--sharp-edges", "error"});
  CHECK(error.code == 1);
  CHECK_OUTPUT(error, "sharp edges (--sharp-edges error)");
  CHECK_OUTPUT(error, "[shape-dependent-control-flow]");
  // A model without sharp edges passes under error.
  CHECK(thunderc({"examine", sample("mlp.pt"), "--sharp-edges", "error"}).code == 0);
  Result bad = thunderc({"examine", sample("mlp.pt"), "--sharp-edges", "loud"});
  CHECK(bad.code == 1);
  CHECK_OUTPUT(bad, "--sharp-edges must be allow, warn or error");
}

TEST_CASE("--cache is recorded in the manifest, and unsupported modes are refused before loading") {
  std::string so = std::string(THUNDERC_TEST_TMP) + "/cache_same_input.so";
  Result r = thunderc({sample("mlp.pt"), "-o", so, "--cache", "same input"});
  CHECK_MESSAGE(r.code == 0, r.out);
  std::ifstream json(std::string(THUNDERC_TEST_TMP) + "/cache_same_input.json");
  std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"cache\": \"same input\"") != std::string::npos);
  Result bad = thunderc({sample("mlp.pt"), "-o", so, "--cache", "sometimes"});
  CHECK(bad.code == 1);
  CHECK_OUTPUT(bad, "--cache must be");
  // "symbolic values" needs one --shapes with symbols; mlp.pt records concrete shapes only.
  Result symbolic = thunderc({sample("mlp.pt"), "-o", so, "--cache", "symbolic-values"});
  CHECK(symbolic.code == 1);
  CHECK_OUTPUT(symbolic, "exactly one --shapes with symbolic dimensions");
}

// Symbolic dimensions: --shapes names them, --dim gives their ranges; every mistake is caught before the
// model is loaded (the model path below does not exist).
TEST_CASE("--dim without --shapes on a TorchScript model: it declares no dynamic dimension") {
  Result r = thunderc({sample("mlp.pt"), "-o", std::string(THUNDERC_TEST_TMP) + "/dim_only.so", "--dim", "B=1:8"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--dim B: ");
  CHECK_OUTPUT(r, "declares no dynamic dimension; name symbols in --shapes instead");
}

TEST_CASE("--shapes symbols and --dim: flag errors") {
  const std::string missing = "/nonexistent/model.pt";
  const std::string so = std::string(THUNDERC_TEST_TMP) + "/symbolic_flags.so";
  struct Case {
    std::vector<std::string> args;
    const char* phrase;
  };
  const Case cases[] = {
      {{"--shapes", "x=Bx64"}, "need --cache \"symbolic values\""},
      {{"--shapes", "x=1x64", "--dim", "B=1:8"}, "--dim with --shapes needs --cache \"symbolic values\""},
      {{"--dim", "B=1:8", "--cache", "same input"}, "contradicts"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64"}, "--dim B=LO:HI"},
      {{"--cache", "symbolic values", "--shapes", "x=1x64"}, "has no symbolic dimension"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64", "--dim", "B=1:8", "--dim", "T=1:4"}, "no dimension in --shapes is named T"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64", "--dim", "B=8:2"}, "1 <= LO < HI"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64", "--dim", "B=1"}, "expected NAME=LO:HI"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64", "--dim", "B=1:8", "--dim", "B=2:4"}, "given twice"},
      {{"--cache", "symbolic values", "--shapes", "x=Bx64", "--shapes", "x=Bx32", "--dim", "B=1:8"}, "exactly one --shapes"},
      {{"--cache", "symbolic values", "--shapes", "x=B-1x64", "--dim", "B=1:8"}, "is not a shape"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{missing, "-o", so};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    CAPTURE(joined);
    Result r = thunderc(args);
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, c.phrase);
    CHECK_FALSE(has(r, "nonexistent"));  // refused before loading
  }
}

TEST_CASE("--cache \"symbolic values\" writes dims, symbolic guards and affine output shapes") {
  const std::string so = std::string(THUNDERC_TEST_TMP) + "/symbolic_mlp.so";
  Result r = thunderc({sample("mlp_scripted.pt"), "-o", so, "--cache", "symbolic values", "--shapes", "x=Bx64", "--dim",
                       "B=1:32"});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  std::ifstream json(std::string(THUNDERC_TEST_TMP) + "/symbolic_mlp.json");
  std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"cache\": \"symbolic values\"") != std::string::npos);
  CHECK(text.find("\"B\": {\n") != std::string::npos);
  CHECK(text.find("\"max\": 32") != std::string::npos);
  CHECK(text.find("\"B\",\n") != std::string::npos);  // the guard's shape: ["B", 64]
  CHECK(text.find("\"const\": 0") != std::string::npos);
}

// ---- issue #12 ---------------------------------------------------------------------------------------------

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory under the test's tmp folder holding a copy of samples/mlp.pt named `model_name`.
std::string fresh_copy_of_mlp(const std::string& dir_name, const std::string& model_name) {
  const std::string dir = std::string(THUNDERC_TEST_TMP) + "/" + dir_name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(sample("mlp.pt"), dir + "/" + model_name);
  return dir;
}
}  // namespace

// Item 5: outputs never destroy the model or unrelated files.
TEST_CASE("outputs: -o never overwrites the model, refuses .json, and keep-sources refuses foreign files") {
  const std::string original = read_all(sample("mlp.pt"));
  SUBCASE("-o is the model") {
    const std::string dir = fresh_copy_of_mlp("out_is_model", "mlp.pt");
    for (const std::string& o : {dir + "/mlp.pt", dir + "/./mlp.pt"}) {
      Result r = thunderc({dir + "/mlp.pt", "-o", o});
      CHECK(r.code == 1);
      CHECK_OUTPUT(r, "is the input model itself");
      CHECK(read_all(dir + "/mlp.pt") == original);
    }
    // The same through a relative path from the model's directory.
    Result rel = thunderc({"mlp.pt", "-o", "mlp.pt"}, dir);
    CHECK(rel.code == 1);
    CHECK(read_all(dir + "/mlp.pt") == original);
  }
  SUBCASE("the manifest path would be the model") {
    const std::string dir = fresh_copy_of_mlp("manifest_is_model", "m.json");
    Result r = thunderc({dir + "/m.json", "-o", dir + "/m.so"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "would write its manifest");
    CHECK(read_all(dir + "/m.json") == original);
    CHECK_FALSE(std::filesystem::exists(dir + "/m.so"));
  }
  SUBCASE("-o ending in .json") {
    const std::string dir = fresh_copy_of_mlp("out_json", "mlp.pt");
    Result r = thunderc({dir + "/mlp.pt", "-o", dir + "/x.json"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "ends in .json");
    CHECK_FALSE(std::filesystem::exists(dir + "/x.json"));
    CHECK_FALSE(std::filesystem::exists(dir + "/x.json.json"));
  }
  SUBCASE("-o is a directory") {
    const std::string dir = fresh_copy_of_mlp("out_dir", "mlp.pt");
    Result r = thunderc({dir + "/mlp.pt", "-o", dir});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "is a directory");
  }
  SUBCASE("--keep-sources into a directory with other files") {
    const std::string dir = fresh_copy_of_mlp("keep_foreign", "mlp.pt");
    const std::string keep = dir + "/keep";
    std::filesystem::create_directories(keep);
    std::ofstream(keep + "/notes.txt") << "mine\n";
    std::ofstream(keep + "/model.cpp") << "my own model.cpp\n";
    Result r = thunderc({dir + "/mlp.pt", "-o", dir + "/mlp.so", "--keep-sources", keep});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "is not empty");
    CHECK_OUTPUT(r, "notes.txt");
    CHECK(read_all(keep + "/model.cpp") == "my own model.cpp\n");
    CHECK(read_all(keep + "/notes.txt") == "mine\n");
  }
  SUBCASE("--keep-sources: a previous set is replaced") {
    const std::string dir = fresh_copy_of_mlp("keep_reuse", "mlp.pt");
    const std::string keep = dir + "/keep";
    Result first = thunderc({dir + "/mlp.pt", "-o", dir + "/mlp.so", "--keep-sources", keep});
    REQUIRE_MESSAGE(first.code == 0, first.out);
    CHECK(std::filesystem::exists(keep + "/model.cpp"));
    Result second = thunderc({dir + "/mlp.pt", "-o", dir + "/mlp.so", "--keep-sources", keep});
    CHECK_MESSAGE(second.code == 0, second.out);
  }
  SUBCASE("a planted OUT.so.tmp symlink does not redirect the write") {
    const std::string dir = fresh_copy_of_mlp("planted_tmp", "mlp.pt");
    std::ofstream(dir + "/victim.txt") << "victim\n";
    std::filesystem::create_symlink(dir + "/victim.txt", dir + "/mlp.so.tmp");
    std::filesystem::create_symlink(dir + "/victim.txt", dir + "/mlp.json.tmp");
    Result r = thunderc({dir + "/mlp.pt", "-o", dir + "/mlp.so"});
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK(read_all(dir + "/victim.txt") == "victim\n");
    CHECK(read_all(dir + "/mlp.so").substr(0, 4) == "\x7f" "ELF");
    // No temporary file is left behind.
    for (const auto& e : std::filesystem::directory_iterator(dir))
      CHECK_MESSAGE(e.path().filename().string().rfind(".mlp", 0) != 0, e.path().string());
  }
}

// Item 6: every command-line mistake exits 1 with a short message.
TEST_CASE("command-line mistakes exit 1 with a short message") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"examine", sample("mlp.pt"), "--no-such-flag"},
        {sample("mlp.pt"), "--no-such-flag"},
        {"run", sample("mlp.pt"), "--rtol", "-1"},
        {sample("mlp.pt"), "--executors", ","},
        {"examine", sample("mlp.pt"), "--executors", ","},
        {"--shapes"},
        {"run"}}) {
    Result r = thunderc(args);
    CAPTURE(r.cmd);
    CHECK_MESSAGE(r.code == 1, r.out);
    CHECK_OUTPUT(r, "thunderc: error: ");
    CHECK(r.out.size() < 600);
  }
  CHECK(thunderc({"run", "--help"}).code == 0);
  CHECK(thunderc({"examine", "--help"}).code == 0);
}

// Item 3: absurd sizes are refused at compile time, with overflow-checked arithmetic.
TEST_CASE("absurd --shapes sizes are refused clearly") {
  const std::string so = std::string(THUNDERC_TEST_TMP) + "/absurd.so";
  std::filesystem::remove(so);
  struct Case {
    const char* shapes;
    const char* phrase;
  };
  for (const Case& c : {Case{"x=99999999999x64", "refuses tensors above"},
                        Case{"x=4294967296x4294967296x64", "refuses tensors above"},
                        Case{"x=99999999999999999999x64", "is too large"},
                        Case{"x=2000000000000x64", "is too large"}}) {
    CAPTURE(c.shapes);
    Result r = thunderc({sample("mlp_scripted.pt"), "-o", so, "--shapes", c.shapes});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, c.phrase);
    CHECK_FALSE(has(r, "not a shape"));
    CHECK_FALSE(std::filesystem::exists(so));
    Result e = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", c.shapes});
    CHECK(e.code == 1);
  }
  // An intermediate beyond the limit: x is 2^32 x 64 floats = 2^40 bytes, within it; linear's output 2^32 x 128 is not.
  Result mid = thunderc({sample("mlp_scripted.pt"), "-o", so, "--shapes", "x=4294967296x64"});
  CHECK(mid.code == 1);
  CHECK_OUTPUT(mid, "refuses tensors above");
}

// Item 4: --standalone with torch listed explicitly.
TEST_CASE("--standalone refuses an explicit torch executor") {
  Result r = thunderc({sample("mlp.pt"), "-o", std::string(THUNDERC_TEST_TMP) + "/standalone_torch.so", "--executors",
                       "torch", "--standalone"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--standalone excludes the torch executor");
  CHECK_FALSE(std::filesystem::exists(std::string(THUNDERC_TEST_TMP) + "/standalone_torch.so"));
  Result e = thunderc({"examine", sample("mlp.pt"), "--executors", "cpp,blas,torch", "--standalone"});
  CHECK(e.code == 1);
  CHECK_OUTPUT(e, "--standalone excludes the torch executor");
}

// Item 7: clearer messages.
TEST_CASE("messages: directories, empty shapes, repeated --shapes, control characters and long text") {
  SUBCASE("a directory as the model") {
    Result r = thunderc({"examine", THUNDERC_SAMPLES});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "is a directory");
    Result c = thunderc({THUNDERC_SAMPLES, "-o", std::string(THUNDERC_TEST_TMP) + "/dir_model.so"});
    CHECK(c.code == 1);
    CHECK_OUTPUT(c, "is a directory");
  }
  SUBCASE("a directory where OUT.json goes") {
    const std::string dir = fresh_copy_of_mlp("json_is_dir", "mlp.pt");
    std::filesystem::create_directories(dir + "/out.json");
    Result r = thunderc({dir + "/mlp.pt", "-o", dir + "/out.so"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "is a directory");
    CHECK_FALSE(std::filesystem::exists(dir + "/out.so"));
  }
  SUBCASE("--shapes x= is not taken as a 0-dim shape") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x="});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "is empty; write x=scalar");
  }
  SUBCASE("a repeated --shapes") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1x64", "--shapes", "x=1x64:float32"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "same input shapes and dtypes as specialization 1");
  }
  SUBCASE("control characters and long text are escaped and cut") {
    Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1x\n64"});
    CHECK(r.code == 1);
    CHECK_OUTPUT(r, "\\x0a");
    CHECK(r.out.find("x=1x\n") == std::string::npos);
    Result name = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", std::string(10000, 'y') + "=1x64"});
    CHECK(name.code == 1);
    CHECK_OUTPUT(name, "characters)");
    CHECK(name.out.size() < 1500);
  }
}

TEST_CASE("--list-ops: the catalog as text, JSON and the Markdown of docs/ops.md") {
  Result text = thunderc({"--list-ops"});
  INFO(text.out);
  CHECK(text.code == 0);
  CHECK(has(text, "PyTorch's Core ATen opset (torch 2.15.0): 189 overloads"));
  CHECK(has(text, "Imported without an operator of their own"));
  CHECK_FALSE(has(text, "bug:"));

  Result json = thunderc({"--list-ops", "--json"});
  CHECK(json.code == 0);
  const nlohmann::json ops = nlohmann::json::parse(json.out);
  REQUIRE(ops.is_array());
  CHECK(ops.size() > 60);
  bool embedding = false, var = false;
  for (const auto& op : ops) {
    CHECK(op.contains("aten"));
    CHECK(op.contains("executors"));
    CHECK(op.contains("decomposes"));
    if (op.at("name") == "embedding") {
      embedding = true;
      CHECK(op.at("aten") == nlohmann::json::array({"embedding"}));
      CHECK(op.at("executors") == nlohmann::json::array({"torch", "cpp", "nvfuser"}));
      CHECK(op.at("decomposes") == false);
    }
    if (op.at("name") == "var") {  // only torch runs it; decompose gives the native executors its pieces
      var = true;
      CHECK(op.at("executors") == nlohmann::json::array({"torch"}));
      CHECK(op.at("decomposes") == true);
    }
  }
  CHECK(embedding);
  CHECK(var);

  // docs/ops.md is this output, committed: regenerate with
  //   build/bin/thunderc --list-ops --markdown > docs/ops.md
  Result md = thunderc({"--list-ops", "--markdown"});
  CHECK(md.code == 0);
  std::ifstream in(std::string(THUNDERC_SAMPLES) + "/../docs/ops.md");
  const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(md.out == committed, "docs/ops.md is out of date: build/bin/thunderc --list-ops --markdown > docs/ops.md");

  Result alone = thunderc({"--json"});
  CHECK(alone.code == 1);
  CHECK(has(alone, "--json and --markdown go with --list-ops"));
}
