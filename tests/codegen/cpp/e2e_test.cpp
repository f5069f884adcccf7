// End to end with the default CPU executors (cpp, blas when available, torch): every sample compiled by
// the thunderc binary and run through libthunderc_runtime equals LibTorch's forward on the same inputs.
// Tolerances: rtol 1e-4, atol 1e-5 (fused loops sum and normalize in another order than ATen).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <torch/script.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include "thunderc/aten.hpp"
#include "thunderc/runtime.hpp"

namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

std::string run(const std::string& cmd, int& code) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::vector<at::Tensor> torch_forward(const std::string& model, const std::vector<at::Tensor>& inputs) {
  torch::jit::Module m = torch::jit::load(sample(model));
  m.eval();
  c10::InferenceMode guard;
  std::vector<c10::IValue> args(inputs.begin(), inputs.end());
  c10::IValue out = m.forward(args);
  std::vector<at::Tensor> outs;
  if (out.isTensor()) outs.push_back(out.toTensor());
  else
    for (const auto& e : out.toTupleRef().elements()) outs.push_back(e.toTensor());
  return outs;
}

void check_sample(const std::string& model, const std::vector<std::vector<int64_t>>& shapes, const std::string& flags = "") {
  fs::path dir = fs::path(THUNDERC_TEST_TMP) / fs::path(model).stem();
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path so = dir / "model.so";
  int code = 0;
  std::string out = run(std::string(THUNDERC_BIN) + " " + sample(model) + " -o " + so.string() + " " + flags, code);
  INFO(out);
  REQUIRE(code == 0);
  std::string manifest;
  {
    thunderc::Model compiled(so.string());
    manifest = compiled.manifest();
    CHECK(manifest.find("\"cpp\"") != std::string::npos);  // the cpp executor ran something
    at::manual_seed(11);
    std::vector<at::Tensor> inputs;
    for (const auto& s : shapes) inputs.push_back(at::randn(s));
    auto got = thunderc::aten::run(compiled, inputs);
    auto want = torch_forward(model, inputs);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("output " << i << " max abs diff " << (got[i] - want[i]).abs().max().item<double>());
      CHECK(got[i].sizes() == want[i].sizes());
      CHECK(at::allclose(got[i], want[i], 1e-4, 1e-5));
    }
  }
}

}  // namespace

TEST_CASE("every sample compiled with the default CPU executors matches LibTorch") {
  SUBCASE("mlp") { check_sample("mlp.pt", {{1, 64}}); }
  SUBCASE("mlp_scripted") { check_sample("mlp_scripted.pt", {{1, 64}}); }
  SUBCASE("cnn") { check_sample("cnn.pt", {{1, 3, 32, 32}}); }
  SUBCASE("gpt_block") { check_sample("gpt_block.pt", {{1, 16, 64}}); }
  SUBCASE("gpt_block_scripted unbatched") { check_sample("gpt_block_scripted.pt", {{16, 64}}, "--shapes x=16x64"); }
  SUBCASE("mlp_scripted batch 8") { check_sample("mlp_scripted.pt", {{8, 64}}, "--shapes x=8x64"); }
}
