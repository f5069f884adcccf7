// The transform flags of the thunderc binary: --list-transforms, --transforms, --dump-traces, --time-passes,
// --verbose, --decompose, --disable-torch-autograd, and the manifest's options.transforms.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "common/run_process.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using Result = thunderc_test::ProcessResult;

Result thunderc(const std::vector<std::string>& args) {
  Result r = thunderc_test::run_program(THUNDERC_BIN, args);
  REQUIRE(r.code >= 0);
  return r;
}

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

std::string tmp(const std::string& name) {
  fs::create_directories(THUNDERC_TEST_TMP);
  std::string path = std::string(THUNDERC_TEST_TMP) + "/" + name;
  fs::remove_all(path);
  return path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string without_spaces(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\n'; }), s.end());
  return s;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

#define CHECK_OUTPUT(r, part) CHECK_MESSAGE(contains((r).out, part), "output lacks '" << (part) << "':\n" << (r).out)

}  // namespace

TEST_CASE("--list-transforms lists every pass, claiming and the default list") {
  Result r = thunderc({"--list-transforms"});
  CHECK(r.code == 0);
  for (const char* name : {"dce", "cse", "constant-folding", "decompose", "claim-executors", "remat"})
    CHECK_OUTPUT(r, std::string("  ") + name + " ");
  CHECK_OUTPUT(r, "Default (when --transforms is not given): dce,cse,constant-folding");
  CHECK_OUTPUT(r, "unused constants dropped");
}

TEST_CASE("--help documents the transform flags and --disable-torch-autograd") {
  Result r = thunderc({"--help"});
  CHECK(r.code == 0);
  for (const char* flag : {"--transforms", "--list-transforms", "--dump-traces", "--time-passes", "--verbose",
                           "--disable-torch-autograd", "forward-only", "--autograd", "training variant",
                           "--requires-grad", "--module-mode"})
    CHECK_OUTPUT(r, flag);
}

TEST_CASE("--autograd: contradicting or misplaced flags are clear errors before any work") {
  const std::string out = std::string(THUNDERC_TEST_TMP) + "/autograd_flags.so";
  Result r = thunderc({sample("mlp.pt"), "--autograd", "--disable-torch-autograd", "-o", out});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--autograd and --disable-torch-autograd contradict each other");
  r = thunderc({sample("mlp.pt"), "--requires-grad", "x", "-o", out});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--requires-grad needs --autograd");
  r = thunderc({sample("mlp.pt"), "--autograd", "--requires-grad", "y", "-o", out});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--requires-grad y: the model has no input of that name (its inputs: x)");
  r = thunderc({sample("mlp.pt"), "--autograd", "--shapes", "x=Bx64", "--dim", "B=1:4", "--cache", "symbolic values", "-o", out});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--autograd compiles fixed shapes only for now");
  r = thunderc({sample("mlp.pt"), "--autograd", "--module-mode", "training", "-o", out});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--module-mode must be eval or train, got 'training'");
}

TEST_CASE("an unknown transform name is a clear error listing the known ones") {
  Result r = thunderc({"examine", sample("mlp.pt"), "--transforms", "dce,frobnicate"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "thunderc: error: unknown transform 'frobnicate'; known transforms: dce, cse, constant-folding");
  CHECK_OUTPUT(r, "remat");
  r = thunderc({"examine", sample("mlp.pt"), "--transforms", "remat,decompose"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "'decompose' must run before executors are claimed");
  r = thunderc({"examine", sample("mlp.pt"), "--transforms", "dce", "--decompose", "softmax"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "--decompose needs the decompose transform");
  r = thunderc({"examine", sample("mlp.pt"), "--decompose", "conv2d"});
  CHECK(r.code == 1);
  CHECK_OUTPUT(r, "no rule for 'conv2d'");
}

TEST_CASE("examine shows the transforms and the final trace") {
  Result r = thunderc({"examine", sample("gpt_block.pt")});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "Transforms: dce, cse, constant-folding");
  CHECK_OUTPUT(r, "(default)");
  CHECK_OUTPUT(r, "Trace (after every pass):\n# Constructed by dce\n");
  CHECK_OUTPUT(r, "OPERATOR");
  r = thunderc({"examine", sample("gpt_block.pt"), "--transforms", "none", "--executors", "torch"});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "Transforms: (none) (from --transforms)");
  CHECK_OUTPUT(r, "# Constructed by claim-executors\n");
  CHECK_OUTPUT(r, "torch.softmax(");
  // The attention pass leaves no softmax to decompose by default; without it, the block's softmax is.
  r = thunderc({"examine", sample("gpt_block.pt"), "--executors", "torch", "--decompose", "softmax"});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "torch.scaled_dot_product_attention(");
  CHECK_FALSE(contains(r.out, "torch.softmax("));
  r = thunderc({"examine", sample("gpt_block.pt"), "--executors", "torch", "--decompose", "softmax", "--transforms",
                "dce,cse,decompose"});
  CHECK(r.code == 0);
  CHECK_OUTPUT(r, "torch.amax(");
  CHECK_FALSE(contains(r.out, "torch.softmax("));
}

TEST_CASE("--dump-traces writes one stamped file per pass, the manifest records the transforms") {
  std::string dir = tmp("dump_mlp"), so = tmp("mlp_dump.so");
  Result r = thunderc({sample("mlp.pt"), "-o", so, "--dump-traces", dir, "--time-passes", "--verbose",
                       "--disable-torch-autograd"});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  std::vector<std::string> files = files_in(dir);
  REQUIRE(files.size() >= 4);
  CHECK(files.front() == "00-torchscript-import.txt");
  CHECK(files[1] == "01-dce.txt");
  CHECK(files.back().substr(3) == "dce.txt");
  bool claim = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    char num[32];
    std::snprintf(num, sizeof num, "%02zu-", i);
    CHECK(files[i].rfind(num, 0) == 0);  // numbered without gaps
    std::string pass = files[i].substr(3, files[i].size() - 7);
    claim = claim || pass == "claim-executors";
    std::string text = read_file(fs::path(dir) / files[i]);
    CHECK_MESSAGE(text.rfind("# Constructed by " + pass + " (took ", 0) == 0, files[i] << ":\n" << text);
    CHECK(contains(text.substr(0, text.find('\n')), " ms)"));
    CHECK(contains(text, "def forward("));
  }
  CHECK(claim);
  // --time-passes and --verbose go to stderr (here merged into the output).
  CHECK_OUTPUT(r, "time per step");
  CHECK_OUTPUT(r, "codegen + C++ build");
  CHECK_OUTPUT(r, "thunderc: decompose: ");
  std::string manifest = without_spaces(read_file(fs::path(so).replace_extension(".json")));
  CHECK_MESSAGE(contains(manifest, "\"transforms\":[\"dce\",\"cse\",\"constant-folding\""), manifest);
  CHECK(contains(manifest, "\"disable_torch_autograd\":true"));
}

// --autograd with onednn's convolutions (the cnn sample's largest two): the forward's channels-last pass leaves
// the saved activations its convolutions and the ops between them computed in NHWC ([1, 4, 4, 64] in the
// manifest), the backward takes them so (permute(saved_..., [0, 3, 1, 2]) at its start, folded by its own pass)
// and runs conv2d's gradients in NHWC, with no NCHW form left in the final trace. Gradients: training_test.cpp.
TEST_CASE("--autograd: saved activations stay channels-last across the forward/backward boundary") {
  std::string dir = tmp("dump_cnn_train"), so = tmp("cnn_train.so");
  Result r = thunderc({sample("cnn.pt"), "--autograd", "-o", so, "--dump-traces", dir});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const std::string start = read_file(fs::path(dir) / "backward" / "00-autodiff.txt");
  CHECK_MESSAGE(contains(start, "= permute(saved_"), start);
  const std::string backward = read_file(fs::path(dir) / "backward" / "14-dce.txt");
  CHECK_MESSAGE(contains(backward, "onednn.conv2d_backward_input_nhwc("), backward);
  CHECK(contains(backward, "onednn.conv2d_backward_weight_nhwc("));
  CHECK(!contains(backward, "conv2d_backward_input("));
  CHECK(!contains(backward, "conv2d_backward_weight("));
  const std::string forward = read_file(fs::path(dir) / "forward" / "14-dce.txt");
  CHECK(contains(forward, "onednn.conv2d_nhwc("));
  std::string manifest = without_spaces(read_file(fs::path(so).replace_extension(".json")));
  CHECK_MESSAGE(contains(manifest, "\"shape\":[1,4,4,64]"), manifest);
}

TEST_CASE("--transforms none: only claiming runs, and the manifest says so") {
  std::string dir = tmp("dump_none"), so = tmp("mlp_none.so");
  Result r = thunderc({sample("mlp.pt"), "-o", so, "--transforms", "none", "--dump-traces", dir});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(files_in(dir) == std::vector<std::string>{"00-torchscript-import.txt", "01-claim-executors.txt"});
  std::string manifest = without_spaces(read_file(fs::path(so).replace_extension(".json")));
  CHECK(contains(manifest, "\"transforms\":[]"));
  CHECK(contains(manifest, "\"disable_torch_autograd\":false"));
}

TEST_CASE("--dump-traces with several specializations: one folder each") {
  std::string dir = tmp("dump_specs");
  Result r = thunderc({"examine", sample("mlp_scripted.pt"), "--shapes", "x=1x64", "--shapes", "x=4x64",
                       "--transforms", "dce,remat", "--dump-traces", dir});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  for (const char* sub : {"specialization-1", "specialization-2"})
    CHECK(files_in(fs::path(dir) / sub) ==
          std::vector<std::string>{"00-torchscript-import.txt", "01-dce.txt", "02-claim-executors.txt", "03-remat.txt"});
}
