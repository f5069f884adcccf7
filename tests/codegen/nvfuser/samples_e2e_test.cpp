// The samples compiled for CUDA by the thunderc binary, as a user would (the design card's command,
// `--executors nvfuser,cudnn`, and `--device cuda`), then run through the runtime with the fake driver and the
// CUDA emulator, against LibTorch's own output (samples/<name>.expected.npy, made by samples/make_samples.py).
// Tolerance: rtol 1e-4, atol 1e-5 (float32; GEMMs and reductions sum in another order than LibTorch's CPU
// kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "codegen/nvfuser/emu_model.h"
#include "common/run_process.h"
#include "codegen/nvfuser/fake_libs.h"
#include "thunderc/npy.hpp"

namespace {

namespace fs = std::filesystem;

struct Compiled {
  std::string so;
  fs::path sources;
  nlohmann::json manifest;
};

// `name`: a TorchScript sample (samples/<name>.pt) or, as "pt2/<name>", a torch.export one (samples/pt2/<name>.pt2).
Compiled compile_sample(const std::string& name, const std::vector<std::string>& flags) {
  // One folder per (test case, sample, flags): ctest -j runs the test cases below in parallel, and several
  // compile the same sample with the same flags.
  std::string key = std::string(doctest::getContextOptions()->currentTest->m_name) + "\n";
  for (const std::string& f : flags) key += f + " ";
  const bool pt2 = name.rfind("pt2/", 0) == 0;
  const std::string stem = pt2 ? name.substr(4) : name;
  fs::path dir = fs::path(THUNDERC_TEST_TMP) / ("sample_" + stem + "_" + std::to_string(std::hash<std::string>{}(key)));
  fs::create_directories(dir);
  Compiled c{(dir / (stem + ".so")).string(), dir / "src", {}};
  std::vector<std::string> args = {std::string(THUNDERC_SAMPLES_DIR) + "/" + name + (pt2 ? ".pt2" : ".pt"), "-o", c.so,
                                   "--keep-sources", c.sources.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = thunderc_test::run_program(THUNDERC_BIN, args);
  INFO(r.out);
  REQUIRE(r.code == 0);
  std::ifstream in(dir / (stem + ".json"));
  c.manifest = nlohmann::json::parse(in);
  return c;
}

double max_rel_excess(const thunderc::HostTensor& got, const thunderc::HostTensor& want, double rtol, double atol,
                      std::size_t* bad) {
  const float* g = static_cast<const float*>(got.raw());
  const float* w = static_cast<const float*>(want.raw());
  double worst = 0;
  for (std::size_t i = 0; i < want.numel(); ++i) {
    double err = std::abs(double(g[i]) - double(w[i]));
    double allowed = atol + rtol * std::abs(double(w[i]));
    if (!(err <= allowed)) {
      ++*bad;
      worst = std::max(worst, err);
    }
  }
  return worst;
}

// `executors`: those that may claim the sample's symbols. `library_runs`: whether the fake cuBLASLt runs the
// GEMM calls (false: it finds no algorithm, every call falls back to the nvfuser kernel compiled beside it).
// Returns the compiled sample, for further checks.
Compiled check_sample(const std::string& name, const std::vector<std::string>& flags,
                      const std::set<std::string>& executors = {"nvfuser"}, bool library_runs = true,
                      double rtol = 1e-4, double atol = 1e-5) {
  Compiled c = compile_sample(name, flags);
  // The manifest: a CUDA variant with kernels compiled for sm_80 and sm_90 (cubins) plus PTX.
  const auto& v = c.manifest["variants"][0];
  CHECK(v["device"] == "cuda:0");
  CHECK(c.manifest["cuda"]["archs"] == nlohmann::json({"sm_80", "sm_90"}));
  std::vector<std::string> images;
  for (const auto& im : c.manifest["cuda"]["images"]) images.push_back(im["arch"].get<std::string>() + ":" + im["kind"].get<std::string>());
  CHECK(images == std::vector<std::string>{"sm_80:cubin", "sm_90:cubin", "compute_90:ptx"});
  REQUIRE(v["cuda"]["kernels"].size() > 0);
  for (const auto& k : v["cuda"]["kernels"]) {
    INFO(k.dump());
    CHECK(k["resources"]["sm_80"]["registers"].get<int>() > 0);
    CHECK(k["resources"]["sm_90"]["registers"].get<int>() > 0);
    CHECK(k["block"][0].get<int>() * k["block"][1].get<int>() * k["block"][2].get<int>() <= 1024);
  }
  for (const auto& [executor, count] : v["executors"].items()) {
    INFO(executor);
    CHECK(executors.count(executor) == 1);
  }
  std::map<std::string, uint64_t> calls;
  for (const auto& lc : v["cuda"]["library_calls"]) ++calls[lc["library"].get<std::string>()];
  // One library call per symbol (or region) a library executor claimed, and no other library.
  auto claimed = [&](const char* executor) { return v["executors"].value(executor, uint64_t{0}); };
  CHECK(calls["cublasLt"] == claimed("cublas"));
  CHECK(calls["cudnn"] == claimed("cudnn"));
  CHECK(calls["cublasLt"] + calls["cudnn"] == v["cuda"]["library_calls"].size());
  // Every sample has a linear; the CNN has the convolutions.
  if (executors.count("cublas")) CHECK(calls["cublasLt"] > 0);
  if (executors.count("cudnn") && name == "cnn") CHECK(calls["cudnn"] > 0);
  // No LibTorch, no CUDA library: the runtime reaches the driver itself.
  auto needed = thunderc_test::run_shell("readelf -d " + thunderc_test::shell_quote(c.so));
  REQUIRE(needed.code == 0);
  for (const char* lib : {"libtorch", "libc10", "aten_shim", "libcuda", "libcudart", "libnvrtc"}) {
    INFO(lib);
    CHECK(needed.out.find(lib) == std::string::npos);
  }
  // Run it: the runtime loads the sm_90 cubin for the fake's compute capability 9.0, the kernels run emulated.
  nvfuser_emu::EmulatedModel m(c.so, c.sources);
  // Inputs and PyTorch's outputs: <name>.input.npy and <name>.expected.npy, or (the language models)
  // <name>.input_ids.npy [+ .attention_mask.npy] and <name>.expected0.npy, expected1.npy, ...
  const std::string base = std::string(THUNDERC_SAMPLES_DIR) + "/" + name;
  std::vector<thunderc::HostTensor> in, wants;
  if (fs::exists(base + ".input.npy")) {
    in.push_back(thunderc::npy::load(base + ".input.npy"));
  } else {
    for (const char* part : {".input_ids.npy", ".attention_mask.npy"})
      if (fs::exists(base + part)) in.push_back(thunderc::npy::load(base + part));
  }
  if (fs::exists(base + ".expected.npy")) wants.push_back(thunderc::npy::load(base + ".expected.npy"));
  for (int k = 0; fs::exists(base + ".expected" + std::to_string(k) + ".npy"); ++k)
    wants.push_back(thunderc::npy::load(base + ".expected" + std::to_string(k) + ".npy"));
  REQUIRE(!in.empty());
  if (library_runs) unsetenv("THUNDERC_FAKE_CUBLASLT_NO_ALGO");
  else setenv("THUNDERC_FAKE_CUBLASLT_NO_ALGO", "1", 1);
  const uint64_t before = fake_libs::cublaslt_matmuls(), dnn_before = fake_libs::cudnn_executes();
  auto got = m.run(in);
  unsetenv("THUNDERC_FAKE_CUBLASLT_NO_ALGO");
  // Each GEMM library call ran in cuBLASLt once, or (no algorithm) never and its fallback kernel did; each
  // convolution ran in cuDNN once.
  CHECK(fake_libs::cublaslt_matmuls() - before == (library_runs ? calls["cublasLt"] : 0));
  CHECK(fake_libs::cudnn_executes() - dnn_before == calls["cudnn"]);
  REQUIRE(got.size() == wants.size());
  for (std::size_t k = 0; k < wants.size(); ++k) {
    REQUIRE(got[k].shape() == wants[k].shape());
    std::size_t bad = 0;
    double worst = max_rel_excess(got[k], wants[k], rtol, atol, &bad);
    INFO(name << " output " << k << ": " << bad << " elements outside rtol " << rtol << " / atol " << atol
              << ", worst abs error " << worst);
    CHECK(bad == 0);
  }
  return c;
}

}  // namespace

TEST_CASE("samples: the card's command --executors nvfuser,cudnn, run emulated, match LibTorch") {
  const std::set<std::string> ex = {"nvfuser", "cudnn"};
  SUBCASE("mlp") { check_sample("mlp", {"--executors", "nvfuser,cudnn"}, ex); }
  SUBCASE("cnn") { check_sample("cnn", {"--executors", "nvfuser,cudnn"}, ex); }
  SUBCASE("gpt_block") { check_sample("gpt_block", {"--executors", "nvfuser,cudnn"}, ex); }
}

TEST_CASE("samples: --device cuda (cudnn, cublas, nvfuser), run emulated, match LibTorch") {
  const std::set<std::string> ex = {"nvfuser", "cudnn", "cublas"};
  SUBCASE("mlp") { check_sample("mlp", {"--device", "cuda"}, ex); }
  SUBCASE("cnn") { check_sample("cnn", {"--device", "cuda"}, ex); }
  SUBCASE("gpt_block (causal attention on nvfuser's flash kernel)") { check_sample("gpt_block", {"--device", "cuda"}, ex); }
  SUBCASE("encoder_layer (key-padding mask)") { check_sample("encoder_layer", {"--device", "cuda"}, ex); }
  SUBCASE("pt2/llama_block (rms_norm, rotary tables, grouped-query causal attention, SwiGLU)") {
    check_sample("pt2/llama_block", {"--device", "cuda"}, ex);
  }
  SUBCASE("mlp_scripted") { check_sample("mlp_scripted", {"--device", "cuda", "--shapes", "x=1x64"}, ex); }
  SUBCASE("gpt_block_scripted") { check_sample("gpt_block_scripted", {"--device", "cuda", "--shapes", "x=1x16x64"}, ex); }
}

// The language models (int64 token ids and masks: nvfuser's integer loops, embedding kernel), and the .pt2
// programs of indexing operators (index_select, gather, argmax, cumsum, sort, topk, prod, diagonal, scatter,
// index, index_put: nvfuser's indexing kernels, codegen/nvfuser/indexing.h).
TEST_CASE("samples: --device cuda language models and indexing programs, run emulated, match LibTorch") {
  const std::set<std::string> ex = {"nvfuser", "cudnn", "cublas"};
  SUBCASE("bert_tiny") { check_sample("bert_tiny", {"--device", "cuda"}, ex); }
  SUBCASE("distilbert_tiny") { check_sample("distilbert_tiny", {"--device", "cuda"}, ex); }
  SUBCASE("gpt2_tiny") { check_sample("gpt2_tiny", {"--device", "cuda"}, ex); }
  SUBCASE("pt2/core_ops") { check_sample("pt2/core_ops", {"--executors", "nvfuser"}); }
  SUBCASE("pt2/composites") { check_sample("pt2/composites", {"--executors", "nvfuser"}); }
  SUBCASE("pt2/positions") { check_sample("pt2/positions", {"--executors", "nvfuser"}); }
}

TEST_CASE("samples: --device cuda where cuBLASLt finds no algorithm: every GEMM runs its fallback kernel") {
  const std::set<std::string> ex = {"nvfuser", "cudnn", "cublas"};
  SUBCASE("mlp") { check_sample("mlp", {"--device", "cuda"}, ex, false); }
  SUBCASE("gpt_block") { check_sample("gpt_block", {"--device", "cuda"}, ex, false); }
}

TEST_CASE("samples: --precision tf32 is recorded and reaches every library call's descriptor") {
  // The fake cuDNN's tensor-core engine (the one TF32 may pick) rounds its inputs to TF32 (10-bit mantissa),
  // as real tensor cores do: the CNN then agrees with LibTorch's float32 to rtol 1e-3 / atol 1e-4, not 1e-4/1e-5.
  const std::set<std::string> ex = {"nvfuser", "cudnn", "cublas"};
  check_sample("cnn", {"--device", "cuda", "--precision", "tf32"}, ex, true, 1e-3, 1e-4);
  Compiled c = compile_sample("cnn", {"--device", "cuda", "--precision", "tf32"});
  CHECK(c.manifest["options"]["precision"] == "tf32");
  for (const auto& lc : c.manifest["variants"][0]["cuda"]["library_calls"]) {
    INFO(lc.dump());
    CHECK(lc["what"].get<std::string>().find("(tf32)") != std::string::npos);
  }
  std::ifstream in(c.sources / "model.cpp");
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(src.find("THUNDERC_LIB_MATH_TF32") != std::string::npos);
  CHECK(src.find("THUNDERC_LIB_MATH_FP32") == std::string::npos);
}

// --precision bf16/fp16 (the autocast transform): matmuls, convolutions and attention in the low dtype with
// float accumulation, softmax and norms in float32, weights stored converted, the interface float32. Against
// LibTorch's float32 output the tolerance is the low dtype's: bf16 (8-bit mantissa) rtol/atol 2e-2, fp16
// (11-bit) 3e-3; measured worst differences are about a fifth of that (samples: bf16 0.0048, fp16 0.00067).
void check_half(const std::string& name, const std::string& precision, bool library_runs) {
  INFO(name << " --precision " << precision << (library_runs ? "" : " (no cuBLASLt algorithm)"));
  const double tol = precision == "bf16" ? 2e-2 : 3e-3;
  const std::vector<std::string> flags = {"--device", "cuda", "--precision", precision};
  Compiled c = check_sample(name, flags, {"nvfuser", "cudnn", "cublas"}, library_runs, tol, tol);
  CHECK(c.manifest["options"]["precision"] == precision);
  CHECK(c.manifest["inputs"][0]["dtype"] == "float32");  // the interface stays the model's
  CHECK(c.manifest["outputs"][0]["dtype"] == "float32");
  std::ifstream in(c.sources / "model.cpp"), kin(c.sources / "kernels.cu");
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string kernels((std::istreambuf_iterator<char>(kin)), std::istreambuf_iterator<char>());
  const std::string lib = precision == "bf16" ? "THUNDERC_LIB_BFLOAT16" : "THUNDERC_LIB_FLOAT16";
  const std::string elem = precision == "bf16" ? "thunderc_bf16" : "thunderc_f16";
  // Every library call is in the low dtype (none float32), and the fallback kernels read and write it.
  CHECK(src.find(lib) != std::string::npos);
  CHECK(src.find("THUNDERC_LIB_FLOAT32") == std::string::npos);
  CHECK(kernels.find("const " + elem + "* __restrict__ a_") != std::string::npos);
}

TEST_CASE("samples: --precision bf16 and fp16 (autocast), run emulated, match LibTorch's float32 within the dtype's tolerance") {
  SUBCASE("mlp bf16") { check_half("mlp", "bf16", true); }
  SUBCASE("mlp fp16") { check_half("mlp", "fp16", true); }
  SUBCASE("cnn bf16 (cuDNN convolutions in bfloat16)") { check_half("cnn", "bf16", true); }
  SUBCASE("cnn fp16") { check_half("cnn", "fp16", true); }
  SUBCASE("gpt_block bf16 (attention on nvfuser's flash kernel in bfloat16)") { check_half("gpt_block", "bf16", true); }
  SUBCASE("gpt_block fp16") { check_half("gpt_block", "fp16", true); }
  SUBCASE("encoder_layer bf16") { check_half("encoder_layer", "bf16", true); }
  SUBCASE("encoder_layer fp16") { check_half("encoder_layer", "fp16", true); }
  SUBCASE("gpt_block bf16, every GEMM on its fallback kernel") { check_half("gpt_block", "bf16", false); }
}

// --cuda-graphs: call 1 runs directly, call 2 captures and replays, call 3 replays with other input values.
// Every call must give what the same model without graphs gives (and, for the sample input, LibTorch's).
void check_graphs(const std::string& name, const std::vector<std::string>& flags) {
  std::vector<std::string> with = flags;
  with.push_back("--cuda-graphs");
  Compiled g = compile_sample(name, with), plain = compile_sample(name, flags);
  CHECK(g.manifest["options"]["cuda_graphs"] == true);
  CHECK_FALSE(plain.manifest["options"].contains("cuda_graphs"));
  nvfuser_emu::EmulatedModel mg(g.so, g.sources), mp(plain.so, plain.sources);
  thunderc::HostTensor x = thunderc::npy::load(std::string(THUNDERC_SAMPLES_DIR) + "/" + name + ".input.npy");
  thunderc::HostTensor want = thunderc::npy::load(std::string(THUNDERC_SAMPLES_DIR) + "/" + name + ".expected.npy");
  thunderc::HostTensor x2 = x;  // other values: x * -0.5 + 0.25
  for (std::size_t i = 0; i < x2.numel(); ++i) {
    float* p = static_cast<float*>(x2.raw()) + i;
    *p = *p * -0.5f + 0.25f;
  }
  const uint64_t launches_before = fake_libs::driver_stats().graph_launches;
  for (int call = 1; call <= 4; ++call) {
    INFO(name << " call " << call);
    const thunderc::HostTensor& in = call == 3 ? x2 : x;
    auto got = mg.run({in});
    auto ref = mp.run({in});
    REQUIRE(got.size() == 1);
    std::size_t bad = 0;
    double worst = max_rel_excess(got[0], ref[0], 0, 0, &bad);  // the same kernels in the same order: bitwise
    INFO(bad << " elements differ from the model without graphs, worst " << worst);
    CHECK(bad == 0);
    if (call != 3) {
      bad = 0;
      max_rel_excess(got[0], want, 1e-4, 1e-5, &bad);
      CHECK(bad == 0);
    }
  }
  // Calls 2, 3 and 4 launched the graph; call 1 did not.
  CHECK(fake_libs::driver_stats().graph_launches - launches_before == 3);
}

TEST_CASE("samples: --cuda-graphs captures on the second call and replays, with library calls and fallbacks") {
  SUBCASE("cnn, --device cuda (cuDNN convolutions)") { check_graphs("cnn", {"--device", "cuda"}); }
  SUBCASE("gpt_block, --device cuda (cuBLASLt GEMMs)") { check_graphs("gpt_block", {"--device", "cuda"}); }
  SUBCASE("mlp, --executors nvfuser (kernels only)") { check_graphs("mlp", {"--executors", "nvfuser"}); }
}

TEST_CASE("samples: --executors nvfuser alone keeps every GEMM and convolution on nvfuser's kernels") {
  SUBCASE("cnn") { check_sample("cnn", {"--executors", "nvfuser"}); }
  SUBCASE("gpt_block") { check_sample("gpt_block", {"--executors", "nvfuser"}); }
}

TEST_CASE("samples: a CUDA compile is deterministic (byte-identical .so and .json, cubins and PTX included)") {
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::vector<std::string> so, json;
  for (const char* dir : {"det_a", "det_b"}) {
    fs::path d = fs::path(THUNDERC_TEST_TMP) / dir;
    fs::create_directories(d);
    std::string out = (d / "cnn.so").string();
    auto r = thunderc_test::run_program(THUNDERC_BIN, {std::string(THUNDERC_SAMPLES_DIR) + "/cnn.pt", "--device", "cuda", "-o", out});
    INFO(r.out);
    REQUIRE(r.code == 0);
    so.push_back(read(out));
    json.push_back(read((d / "cnn.json").string()));
  }
  CHECK(so[0].size() > 0);
  CHECK(so[0] == so[1]);
  CHECK(json[0] == json[1]);
}
