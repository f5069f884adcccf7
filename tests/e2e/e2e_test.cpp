// Compile -> run through the runtime -> equal to LibTorch's forward on the same module and inputs.
// Tolerances: the torch executor calls the same ATen kernels as the TorchScript interpreter, on the same
// thread count, so float32 results agree to rtol 1e-5, atol 1e-6 (summation order can differ slightly).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "doctest_with_torch.h"
#include "common/run_process.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>
#include <sstream>
#include <thread>

#include "thunderc/aten.hpp"
#include "thunderc/runtime.hpp"
#include "cpu_isa.hpp"

namespace fs = std::filesystem;

namespace {

using Result = thunderc_test::ProcessResult;

Result run_thunderc(const std::string& args) {
  Result r = thunderc_test::run_shell(std::string(THUNDERC_BIN) + " " + args);
  REQUIRE(r.code >= 0);
  return r;
}

fs::path tmp_dir(const std::string& name) {
  fs::path d = fs::path(THUNDERC_TEST_TMP) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compiles `model` with extra flags into dir/<stem>.so; checks success.
fs::path compile(const std::string& model, const fs::path& dir, const std::string& flags = "") {
  fs::path so = dir / (fs::path(model).stem().string() + ".so");
  Result r = run_thunderc(sample(model) + " -o " + so.string() + " " + flags);
  INFO(r.out);
  REQUIRE(r.code == 0);
  REQUIRE(fs::exists(so));
  REQUIRE(fs::exists(fs::path(so).replace_extension(".json")));
  return so;
}

// LibTorch's outputs of the TorchScript module at `path` (a tensor or a tuple of them).
std::vector<at::Tensor> forward_file(const std::string& path, const std::vector<at::Tensor>& inputs) {
  torch::jit::Module m = torch::jit::load(path);
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

std::vector<at::Tensor> torch_forward(const std::string& model, const std::vector<at::Tensor>& inputs) {
  return forward_file(sample(model), inputs);
}

// Saves a module whose forward is `source` (TorchScript) as dir/<name>.pt and returns its path; `setup` registers
// its parameters.
std::string save_module(const fs::path& dir, const std::string& name, const std::string& source,
                        const std::function<void(torch::jit::Module&)>& setup = nullptr) {
  torch::jit::Module m("__torch__." + name);
  if (setup) setup(m);
  m.define(source);
  const std::string pt = (dir / (name + ".pt")).string();
  m.save(pt);
  return pt;
}

// Compiles the model at `pt` into so with `flags`; checks success.
void compile_file(const std::string& pt, const fs::path& so, const std::string& flags) {
  Result r = run_thunderc(pt + " -o " + so.string() + " " + flags);
  INFO(r.out);
  REQUIRE(r.code == 0);
}

void check_close(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, double rtol = 1e-5,
                 double atol = 1e-6, bool equal_nan = false) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    CHECK(got[i].sizes().vec() == want[i].sizes().vec());
    CHECK(std::string(c10::toString(got[i].scalar_type())) == c10::toString(want[i].scalar_type()));
    const double diff = got[i].numel() == 0 || got[i].sizes() != want[i].sizes()
                            ? 0.0
                            : (got[i].to(at::kDouble) - want[i].to(at::kDouble)).abs().max().item<double>();
    INFO("max abs diff " << diff);
    CHECK(at::allclose(got[i], want[i], rtol, atol, equal_nan));
  }
}

// Parity of one compiled sample against LibTorch on seeded random inputs of the given shapes.
void check_parity(const std::string& model, const std::vector<std::vector<int64_t>>& shapes, const std::string& flags = "",
                  double rtol = 1e-5, double atol = 1e-6) {
  // One folder per (test case, model, flags): ctest -j runs test cases in parallel, and two of them compile
  // gpt_block.pt with the same flags (tmp_dir empties the folder: a shared one made the attention test flaky).
  const std::string test_case = doctest::getContextOptions()->currentTest->m_name;
  fs::path dir = tmp_dir(fs::path(model).stem().string() + "_parity_" + std::to_string(std::hash<std::string>{}(test_case + "\n" + flags)));
  fs::path so = compile(model, dir, flags);
  thunderc::Model compiled(so.string());
  at::manual_seed(7);
  std::vector<at::Tensor> inputs;
  for (const auto& s : shapes) inputs.push_back(at::randn(s));
  check_close(thunderc::aten::run(compiled, inputs), torch_forward(model, inputs), rtol, atol);
}

}  // namespace

TEST_CASE("every sample compiles and matches LibTorch (torch executor)") {
  SUBCASE("mlp") { check_parity("mlp.pt", {{1, 64}}); }
  SUBCASE("mlp_scripted") { check_parity("mlp_scripted.pt", {{1, 64}}); }
  SUBCASE("cnn") { check_parity("cnn.pt", {{1, 3, 32, 32}}); }
  SUBCASE("gpt_block") { check_parity("gpt_block.pt", {{1, 16, 64}}); }
  SUBCASE("gpt_block_scripted unbatched") { check_parity("gpt_block_scripted.pt", {{16, 64}}, "--shapes x=16x64"); }
  SUBCASE("encoder_layer") { check_parity("encoder_layer.pt", {{2, 12, 32}}); }
}

// --precision bf16 on the CPU: autocast (matmuls, convolutions, attention in bfloat16 on torch, i.e. oneDNN; the
// casts, norms and elementwise work on cpp's loops over bfloat16 storage). It runs only where the CPU has BF16
// instructions; elsewhere the runtime refuses every CPU variant with the reason. Tolerance against LibTorch's
// float32: rtol/atol 2e-2 (bfloat16 keeps 8 bits of mantissa; measured worst 0.004 on the samples).
TEST_CASE("--precision bf16 on the CPU: matches LibTorch's float32 within 2e-2 where the CPU has BF16 instructions, refused elsewhere") {
  const bool bf16_cpu = thunderc::rt::missing_bf16_features(thunderc::rt::host_cpu_supports).empty();
  INFO("this CPU has " << (bf16_cpu ? "" : "no ") << "AVX512_BF16/AMX-BF16");
  if (bf16_cpu) {
    SUBCASE("mlp") { check_parity("mlp.pt", {{1, 64}}, "--precision bf16", 2e-2, 2e-2); }
    SUBCASE("cnn") { check_parity("cnn.pt", {{1, 3, 32, 32}}, "--precision bf16", 2e-2, 2e-2); }
    SUBCASE("gpt_block") { check_parity("gpt_block.pt", {{1, 16, 64}}, "--precision bf16", 2e-2, 2e-2); }
    SUBCASE("encoder_layer") { check_parity("encoder_layer.pt", {{2, 12, 32}}, "--precision bf16", 2e-2, 2e-2); }
  }
  // Either way: the manifest records it and the weights of the products are stored in bfloat16.
  fs::path dir = tmp_dir("bf16_cpu");
  fs::path so = compile("mlp.pt", dir, "--precision bf16");
  const std::string manifest = read_bytes(fs::path(so).replace_extension(".json"));
  CHECK(manifest.find("\"precision\": \"bf16\"") != std::string::npos);
  Result r = run_thunderc("run " + so.string() + " " + sample("mlp.input.npy") + " --expect " + sample("mlp.expected.npy") +
                          " --rtol 2e-2 --atol 2e-2 --output-dir " + (dir / "out").string());
  INFO(r.out);
  if (bf16_cpu) {
    CHECK(r.code == 0);
  } else {
    CHECK(r.code == 1);
    CHECK(r.out.find("needs AVX512_BF16 or AMX-BF16, and this CPU has neither") != std::string::npos);
  }
}

// The attention pass makes one scaled_dot_product_attention of each block's attention; by default cpp runs it
// with its fused kernel, with --decompose it is written back as primitives (cpp and blas), with torch alone
// ATen runs it. All three match LibTorch running the original primitives.
TEST_CASE("attention samples match LibTorch whoever runs the attention") {
  for (const char* flags : {"", "--decompose scaled_dot_product_attention", "--executors torch"}) {
    INFO("flags: " << flags);
    check_parity("gpt_block.pt", {{1, 16, 64}}, flags);
    check_parity("encoder_layer.pt", {{2, 12, 32}}, flags);
  }
}

TEST_CASE("a two-variant .so sends each shape to its own variant") {
  fs::path dir = tmp_dir("two_variants");
  fs::path so = compile("mlp_scripted.pt", dir, "--shapes x=1x64 --shapes x=8x64");
  thunderc::Model compiled(so.string());
  CHECK(compiled.num_variants() == 2);
  for (int64_t batch : {1, 8}) {
    at::manual_seed(batch);
    at::Tensor x = at::randn({batch, 64});
    DLTensor dl = thunderc::aten::view(x);
    size_t chosen = 99;
    REQUIRE(thunderc_model_select_variant(compiled.get(), &dl, 1, &chosen) == nullptr);
    CHECK(chosen == (batch == 1 ? 0u : 1u));
    check_close(thunderc::aten::run(compiled, {x}), torch_forward("mlp_scripted.pt", {x}));
  }
  SUBCASE("a shape no variant accepts names the input and the variants") {
    at::Tensor x = at::randn({3, 64});
    try {
      thunderc::aten::run(compiled, {x});
      FAIL("expected an error");
    } catch (const thunderc::Error& e) {
      std::string msg = e.what();
      CHECK(msg.find("'x'") != std::string::npos);
      CHECK(msg.find("[3, 64]") != std::string::npos);
      CHECK(msg.find("[1, 64]") != std::string::npos);
      CHECK(msg.find("[8, 64]") != std::string::npos);
    }
  }
  SUBCASE("a wrong dtype is rejected") {
    CHECK_THROWS_AS(thunderc::aten::run(compiled, {at::randn({1, 64}, at::kDouble)}), thunderc::Error);
  }
}

TEST_CASE("compilation is deterministic: the same model and options give byte-identical files") {
  fs::path a = compile("cnn.pt", tmp_dir("det_a"));
  fs::path b = compile("cnn.pt", tmp_dir("det_b"));
  CHECK(read_bytes(a) == read_bytes(b));
  CHECK(read_bytes(fs::path(a).replace_extension(".json")) == read_bytes(fs::path(b).replace_extension(".json")));
}

TEST_CASE("the embedded manifest equals the .json and the source model is not needed at run time") {
  fs::path dir = tmp_dir("standalone_files");
  fs::path so = compile("gpt_block.pt", dir);
  fs::path moved = tmp_dir("standalone_moved") / "block.so";
  fs::copy_file(so, moved);
  fs::copy_file(fs::path(so).replace_extension(".json"), fs::path(moved).replace_extension(".json"));
  thunderc::Model compiled(moved.string());
  CHECK(compiled.manifest() == read_bytes(fs::path(so).replace_extension(".json")));
  at::Tensor x = at::randn({1, 16, 64});
  check_close(thunderc::aten::run(compiled, {x}), torch_forward("gpt_block.pt", {x}));
}

TEST_CASE("8 threads calling one model get the same results as serial calls") {
  fs::path so = compile("cnn.pt", tmp_dir("threads"));
  thunderc::Model compiled(so.string());
  std::vector<at::Tensor> inputs, expected;
  for (int i = 0; i < 8; ++i) {
    at::manual_seed(100 + i);
    inputs.push_back(at::randn({1, 3, 32, 32}));
    expected.push_back(thunderc::aten::run(compiled, {inputs.back()})[0]);
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        int i = (t + k) % 8;
        at::Tensor got = thunderc::aten::run(compiled, {inputs[i]})[0];
        if (!at::equal(got, expected[i])) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) CHECK(mismatches[t] == 0);
}

// PyTorch's fused attention kernels (what nn.MultiheadAttention / nn.TransformerEncoderLayer record when
// traced under no_grad) are decomposed by the frontend; the compiled model matches LibTorch running them.
TEST_CASE("fused attention and encoder-layer kernels are decomposed and match LibTorch") {
  fs::path dir = tmp_dir("fused_attention");
  const int64_t e = 16, ff = 32;
  auto param = [](torch::jit::Module& m, const std::string& name, std::vector<int64_t> shape) {
    m.register_parameter(name, at::randn(shape) * 0.3, false);
  };
  at::manual_seed(3);
  torch::jit::Module mha("__torch__.FusedMHA");
  param(mha, "w", {3 * e, e});
  param(mha, "b", {3 * e});
  param(mha, "pw", {e, e});
  param(mha, "pb", {e});
  mha.define(R"(
def forward(self, x):
    out, weights = torch._native_multi_head_attention(x, x, x, 16, 2, self.w, self.b, self.pw, self.pb, None, True, True, None)
    return out, weights
)");
  torch::jit::Module layer("__torch__.FusedEncoderLayer");
  param(layer, "w", {3 * e, e});
  param(layer, "b", {3 * e});
  param(layer, "pw", {e, e});
  param(layer, "pb", {e});
  param(layer, "n1w", {e});
  param(layer, "n1b", {e});
  param(layer, "n2w", {e});
  param(layer, "n2b", {e});
  param(layer, "f1w", {ff, e});
  param(layer, "f1b", {ff});
  param(layer, "f2w", {e, ff});
  param(layer, "f2b", {e});
  layer.define(R"(
def forward(self, x):
    a = torch._transformer_encoder_layer_fwd(x, 16, 4, self.w, self.b, self.pw, self.pb, True, False, 1e-5, self.n1w, self.n1b, self.n2w, self.n2b, self.f1w, self.f1b, self.f2w, self.f2b, None, None)
    return torch._transformer_encoder_layer_fwd(a, 16, 4, self.w, self.b, self.pw, self.pb, False, True, 1e-5, self.n1w, self.n1b, self.n2w, self.n2b, self.f1w, self.f1b, self.f2w, self.f2b, None, None)
)");
  for (auto* m : {&mha, &layer}) {
    std::string name = m == &mha ? "mha" : "layer";
    CAPTURE(name);
    std::string pt = (dir / (name + ".pt")).string();
    m->save(pt);
    fs::path so = dir / (name + ".so");
    Result r = run_thunderc(pt + " -o " + so.string() + " --shapes x=2x5x16");
    INFO(r.out);
    REQUIRE(r.code == 0);
    thunderc::Model compiled(so.string());
    at::Tensor x = at::randn({2, 5, 16});
    torch::jit::Module ref = torch::jit::load(pt);
    c10::InferenceMode guard;
    c10::IValue out = ref.forward({x});
    std::vector<at::Tensor> want;
    if (out.isTensor()) want.push_back(out.toTensor());
    else
      for (const auto& t : out.toTupleRef().elements()) want.push_back(t.toTensor());
    check_close(thunderc::aten::run(compiled, {x}), want, 1e-4, 1e-5);
  }
}

// The native CPU executors alone: every sample compiles with --standalone, the .so does not need LibTorch
// (nor the ATen shim), and it still matches LibTorch.
TEST_CASE("every sample compiles --standalone with cpp and blas: no LibTorch at run time, same results") {
  struct Case {
    const char* model;
    std::vector<std::vector<int64_t>> shapes;
    const char* flags;
  };
  for (const Case& c : {Case{"mlp.pt", {{1, 64}}, ""}, Case{"mlp_scripted.pt", {{8, 64}}, "--shapes x=8x64"},
                        Case{"cnn.pt", {{2, 3, 32, 32}}, "--shapes x=2x3x32x32"}, Case{"gpt_block.pt", {{1, 16, 64}}, ""},
                        Case{"gpt_block_scripted.pt", {{16, 64}}, "--shapes x=16x64"}}) {
    CAPTURE(c.model);
    fs::path so = compile(c.model, tmp_dir(std::string("standalone_") + c.model),
                          std::string("--executors cpp,blas --standalone ") + c.flags);
    Result needed = thunderc_test::run_shell("readelf -d " + thunderc_test::shell_quote(so.string()));
    REQUIRE(needed.code == 0);
    CHECK(needed.out.find("NEEDED") != std::string::npos);
    for (const char* lib : {"libtorch", "libc10", "thunderc_aten_shim"}) {
      CAPTURE(lib);
      CHECK(needed.out.find(lib) == std::string::npos);
    }
    thunderc::Model compiled(so.string());
    at::manual_seed(5);
    std::vector<at::Tensor> inputs;
    for (const auto& s : c.shapes) inputs.push_back(at::randn(s));
    // Native kernels sum in another order than ATen: float32 within rtol 1e-4, atol 1e-5.
    check_close(thunderc::aten::run(compiled, inputs), torch_forward(c.model, inputs), 1e-4, 1e-5);
  }
}

// Hugging Face-style models (samples/make_samples.py: TinyBert, TinyDistilBert, TinyGPT2 compute as BertModel,
// DistilBertModel and GPT2Model do, traced with torch.jit.trace) with int64 input_ids (and attention_mask): the
// embeddings, the int64 mask's reshape, comparison and conversion run natively, so --standalone needs no
// LibTorch. GPT-2 also returns its per-layer key/value cache. Against LibTorch at rtol 1e-4, atol 1e-5.
TEST_CASE("Hugging Face-style BERT, DistilBERT and GPT-2 compile --standalone and match LibTorch") {
  struct Case {
    const char* model;
    bool mask;
    int outputs;
  };
  for (const Case& c : {Case{"bert_tiny", true, 2}, Case{"distilbert_tiny", true, 1}, Case{"gpt2_tiny", false, 3}}) {
    CAPTURE(c.model);
    fs::path dir = tmp_dir(c.model);
    fs::path so = compile(std::string(c.model) + ".pt", dir, "--standalone");
    Result needed = thunderc_test::run_shell("readelf -d " + thunderc_test::shell_quote(so.string()));
    REQUIRE(needed.code == 0);
    for (const char* lib : {"libtorch", "libc10", "thunderc_aten_shim"}) CHECK(needed.out.find(lib) == std::string::npos);

    thunderc::Model compiled(so.string());
    at::manual_seed(11);
    at::Tensor ids = at::randint(0, 96, {2, 12}, at::kLong), mask = at::ones({2, 12}, at::kLong);
    mask.index_put_({1, at::indexing::Slice(7, at::indexing::None)}, 0);
    std::vector<at::Tensor> inputs = {ids};
    if (c.mask) inputs.push_back(mask);
    const auto want = torch_forward(std::string(c.model) + ".pt", inputs);
    CHECK(want.size() == static_cast<std::size_t>(c.outputs));
    check_close(thunderc::aten::run(compiled, inputs), want, 1e-4, 1e-5);

    // The sample's own inputs and PyTorch's outputs, through the CLI.
    std::string args = "run " + so.string() + " " + sample(std::string(c.model) + ".input_ids.npy");
    if (c.mask) args += " " + sample(std::string(c.model) + ".attention_mask.npy");
    for (int i = 0; i < c.outputs; ++i) args += " --expect " + sample(std::string(c.model) + ".expected" + std::to_string(i) + ".npy");
    Result r = run_thunderc(args + " --output-dir " + (dir / "out").string());
    INFO(r.out);
    CHECK(r.code == 0);

    // A token id outside the vocabulary fails the call, as PyTorch raises.
    inputs[0] = ids.clone();
    inputs[0].index_put_({0, 3}, 96);
    try {
      thunderc::aten::run(compiled, inputs);
      FAIL("expected an error");
    } catch (const thunderc::Error& e) {
      CHECK(std::string(e.what()).find("embedding: index 96 is out of range for a table of 96 rows") != std::string::npos);
    }
  }
}

// Math, rounding, sign, predicate, remainder and bitwise operators as TorchScript writes them (methods, functions,
// operators, in-place forms): imported, claimed by cpp alone (--executors cpp --standalone) and equal to LibTorch
// within rtol 1e-5, atol 1e-6. The integers come from a compiled constant (arange), bools from comparisons.
TEST_CASE("TorchScript math, rounding, remainder and bitwise operators compile --standalone on cpp and match LibTorch") {
  fs::path dir = tmp_dir("math_ops");
  const std::string pt = save_module(dir, "MathOps", R"(
def forward(self, x, y):
    i = torch.arange(24).view(3, 8) - 11
    bits = ((i & 5) | (i ^ 3)) + torch.bitwise_not(i)
    b = ~(x > 0) ^ (y < 0.5)
    r = torch.round(x * 4) / 2
    z = x.clone()
    z.floor_()
    a = torch.tan(x) + torch.asin(torch.tanh(x)) + torch.acos(torch.sigmoid(y)) + torch.atan(y) + torch.sinh(x) * torch.cosh(y)
    a = a + torch.asinh(x) + torch.acosh(1 + y.abs()) + torch.atanh(torch.tanh(y)) + torch.expm1(x) + torch.log1p(y.abs())
    a = a + torch.log2(y.abs() + 1) + torch.log10(x.abs() + 1)
    c = torch.ceil(x) + torch.trunc(y) + r + torch.sign(x) + z + torch.elu(x, 0.5)
    d = torch.remainder(x, 0.7) + torch.fmod(y, -0.7) + x % y + torch.atan2(x, y)
    return a, c, d, bits.float() * x, b, torch.isnan(x / y), torch.isinf(x / 0.0)
)");
  const fs::path so = dir / "math_ops.so";
  compile_file(pt, so, "--shapes x=3x8,y=8 --executors cpp --standalone");
  at::manual_seed(3);
  at::Tensor x = at::randn({3, 8}), y = at::randn({8});
  x.index_put_({0, 0}, 0.0);  // 0 / 0 is NaN, 0 / 0.0 too
  y.index_put_({0}, 0.0);
  thunderc::Model compiled(so.string());
  check_close(thunderc::aten::run(compiled, {x, y}), forward_file(pt, {x, y}), 1e-5, 1e-6, /*equal_nan=*/true);
}

// Reductions and data movement that decompose into other operators (amin, any, all, var, std, repeat, padding)
// or run natively (flip), imported from TorchScript: with the default executors, and with cpp alone
// --standalone (every rewritten piece native), against LibTorch (rtol 1e-5, atol 1e-6); empty rows included.
TEST_CASE("TorchScript reductions, flips, repeats and pads compile --standalone on cpp and match LibTorch") {
  fs::path dir = tmp_dir("reduce_move_ops");
  const std::string pt = save_module(dir, "ReduceMoveOps", R"(
def forward(self, x, e):
    a = torch.amin(x, 1) + x.amin(dim=[0, 2], keepdim=True).sum()
    v = torch.var(x, 2) + torch.std(x, dim=[0, 1], unbiased=False, keepdim=True).sum() + torch.var(x, dim=2, correction=0)
    an = torch.any(x > 0.8, 2).float() + torch.all(x > -2.0, dim=2).float() + x.gt(0).any().float()
    f = torch.flip(x, [0, 2]) * 2 + x.flip(-1)
    r = x.repeat(2, 1, 3)
    p = torch.constant_pad_nd(x, [1, 2, -1, 0], 0.5)
    return a, v, an, f, r, p, torch.any(e, 1), torch.all(e, 1), torch.amin(e, 0)
)");
  at::manual_seed(4);
  at::Tensor x = at::randn({3, 4, 5}), e = at::randn({2, 0});
  const std::vector<at::Tensor> want = forward_file(pt, {x, e});
  for (const char* flags : {"", "--executors cpp --standalone"}) {
    CAPTURE(flags);
    const fs::path so = dir / (std::string(flags).empty() ? "default.so" : "cpp.so");
    compile_file(pt, so, std::string("--shapes x=3x4x5,e=2x0 ") + flags);
    thunderc::Model compiled(so.string());
    check_close(thunderc::aten::run(compiled, {x, e}), want, 1e-5, 1e-6, /*equal_nan=*/true);
  }
}

// In-place operators, functionalized with alias updates, give LibTorch's results (thunder.jit's in-place
// support), with the default executors and with cpp alone; --skip-inplace-alias-updates drops the write-backs
// through views.
TEST_CASE("in-place models match LibTorch with alias updates") {
  fs::path dir = tmp_dir("inplace");
  struct Case {
    const char* name;
    const char* source;
    bool reads_through_view;  // the result depends on an update made through another view
  };
  const Case cases[] = {
      {"Chain", R"(
def forward(self, x):
    y = x * 2
    y.add_(1)
    y.relu_()
    return y + x
)", false},
      {"SliceAssign", R"(
def forward(self, x):
    y = x * 1.5
    y[:, 0] = 5.0
    y[1] = y[0] * 2
    return y
)", true},
      {"ViewAndTranspose", R"(
def forward(self, x):
    y = x - 1
    v = y.view([-1])
    v.mul_(3)
    t = y.t()
    t[0].clamp_(min=0.0)
    return y, t
)", true},
      {"CloneThenInPlace", R"(
def forward(self, x):
    z = x.clone()
    z.floor_()
    return x + z
)", false},
      {"CopyIntoSlice", R"(
def forward(self, x):
    y = torch.zeros([4, 6])
    z = torch.tanh(x)
    y[1:3].copy_(z)
    y.narrow(1, 4, 2).fill_(-1.0)
    return y
)", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string pt = save_module(dir, c.name, c.source);
    at::manual_seed(21);
    at::Tensor x = at::randn({2, 6});
    const std::vector<at::Tensor> want = forward_file(pt, {x.clone()});  // a copy: the model updates its input
    for (bool skip : {false, true}) {
      CAPTURE(skip);
      fs::path so = dir / (std::string(c.name) + (skip ? "_skip" : "") + ".so");
      Result r = run_thunderc(pt + " -o " + so.string() + " --shapes x=2x6" + (skip ? " --skip-inplace-alias-updates" : ""));
      INFO(r.out);
      REQUIRE(r.code == 0);
      thunderc::Model compiled(so.string());
      std::vector<at::Tensor> got = thunderc::aten::run(compiled, {x});
      REQUIRE(got.size() == want.size());
      bool same = true;
      for (std::size_t i = 0; i < got.size(); ++i) same = same && at::allclose(got[i], want[i], 1e-5, 1e-6);
      if (!skip || !c.reads_through_view) CHECK(same);
      else CHECK_FALSE(same);  // the documented risk of skipping: reads through other views are stale
    }
    // The write-backs (slice_scatter / select_scatter) decompose into slices and a cat: cpp runs them alone.
    fs::path so = dir / (std::string(c.name) + "_native.so");
    compile_file(pt, so, "--shapes x=2x6 --executors cpp --standalone");
    thunderc::Model compiled(so.string());
    std::vector<at::Tensor> got = thunderc::aten::run(compiled, {x});
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(at::allclose(got[i], want[i], 1e-5, 1e-6));
  }
}

// The position-based operators over a symbolic batch: flip and cumsum along it, argmax and index_select
// across it, a constant pad beside it; cpp alone, every size matches.
TEST_CASE("symbolic values: flip, cumsum, argmax, index_select and pads over a symbolic batch match LibTorch") {
  fs::path dir = tmp_dir("symbolic_positions");
  const std::string pt = save_module(dir, "Positions", R"(
def forward(self, x):
    y = torch.flip(x, [0, 1]) * 2 + torch.cumsum(x, 0) + x.argmax(1, keepdim=True).float()
    return torch.index_select(y, 1, torch.tensor([3, 0, 1])) + torch.constant_pad_nd(x, [1, 1], 0.5)[:, :3]
)");
  const fs::path so = dir / "positions.so";
  compile_file(pt, so, "--cache \"symbolic values\" --shapes x=Bx6 --dim B=1:16 --executors cpp --standalone");
  thunderc::Model compiled(so.string());
  CHECK(compiled.num_variants() == 1);
  for (int64_t batch : {1, 5, 16, 2}) {
    CAPTURE(batch);
    at::manual_seed(batch);
    at::Tensor x = at::randn({batch, 6});
    check_close(thunderc::aten::run(compiled, {x}), forward_file(pt, {x}), 1e-5, 1e-6);
  }
}

// --cache "symbolic values": one variant whose kernels read the batch size at run time. With the default
// executors its loops and GEMMs are native (cpp, blas), which sum in another order than ATen: float32
// parity within rtol 1e-4, atol 1e-5, as for fixed shapes on those executors.
TEST_CASE("symbolic values: one variant serves every batch size in the range and matches LibTorch") {
  fs::path dir = tmp_dir("symbolic_mlp");
  fs::path so = compile("mlp_scripted.pt", dir, "--cache \"symbolic values\" --shapes x=Bx64 --dim B=1:32");
  std::string manifest = read_bytes(fs::path(so).replace_extension(".json"));
  CHECK(manifest.find("\"symbolic values\"") != std::string::npos);
  CHECK(manifest.find("\"dims\"") != std::string::npos);
  thunderc::Model compiled(so.string());
  CHECK(compiled.num_variants() == 1);
  for (int64_t batch : {1, 7, 32, 7}) {
    CAPTURE(batch);
    at::manual_seed(batch);
    at::Tensor x = at::randn({batch, 64});
    check_close(thunderc::aten::run(compiled, {x}), torch_forward("mlp_scripted.pt", {x}), 1e-4, 1e-5);
    // Runtime-allocated outputs get the size of this call.
    DLTensor dl = thunderc::aten::view(x);
    std::vector<thunderc::ManagedTensor> outs = compiled.run_alloc({dl});
    REQUIRE(outs.size() == 1);
    CHECK(outs[0].shape() == std::vector<int64_t>{batch, 10});
  }
  SUBCASE("a batch outside the range names B and the range") {
    try {
      thunderc::aten::run(compiled, {at::randn({33, 64})});
      FAIL("expected an error");
    } catch (const thunderc::Error& e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(e.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
      CHECK(msg.find("B") != std::string::npos);
      CHECK(msg.find("33") != std::string::npos);
      CHECK(msg.find("1..32") != std::string::npos);
    }
  }
  SUBCASE("a caller-provided output of another batch size is rejected") {
    at::Tensor x = at::randn({4, 64});
    at::Tensor wrong = at::empty({5, 10});
    std::vector<DLTensor> in{thunderc::aten::view(x)}, out{thunderc::aten::view(wrong)};
    CHECK_THROWS_AS(compiled.run(in, out), thunderc::Error);
  }
}

// The native executors run symbolic variants too (codegen/symbolic_code.h): the loops and BLAS calls read
// the sizes at run time, so a dynamic-batch model needs no LibTorch.
TEST_CASE("symbolic values on cpp and blas alone: --standalone, sizes read at run time, parity at every size") {
  struct Case {
    const char* model;
    const char* flags;
    std::vector<int64_t> fixed;  // the input's shape, with -1 for the symbol
    std::vector<int64_t> sizes;  // minimum, odd ones, maximum
    const char* symbol_var;      // the generated variable of the symbol
  };
  for (const Case& c : {Case{"mlp_scripted.pt", "--shapes x=Bx64 --dim B=1:32", {-1, 64}, {1, 2, 7, 17, 32}, "s0_B"},
                        Case{"cnn.pt", "--shapes x=Bx3x32x32 --dim B=1:8", {-1, 3, 32, 32}, {1, 3, 8}, "s0_B"},
                        Case{"gpt_block.pt", "--shapes x=1xTx64 --dim T=2:16", {1, -1, 64}, {2, 5, 11, 16}, "s0_T"}}) {
    CAPTURE(c.model);
    fs::path dir = tmp_dir(std::string("symbolic_native_") + c.model);
    fs::path so = compile(c.model, dir,
                          std::string("--executors cpp,blas --standalone --cache \"symbolic values\" --keep-sources ") +
                              (dir / "src").string() + " " + c.flags);
    Result needed = thunderc_test::run_shell("readelf -d " + thunderc_test::shell_quote(so.string()));
    REQUIRE(needed.code == 0);
    CHECK(needed.out.find("libtorch") == std::string::npos);
    CHECK(needed.out.find("thunderc_aten_shim") == std::string::npos);
    std::string source = read_bytes(dir / "src" / "model.cpp");
    CHECK(source.find(std::string("LL * ") + c.symbol_var) != std::string::npos);  // sizes as expressions
    CHECK(source.find("aten") == std::string::npos);
    thunderc::Model compiled(so.string());
    CHECK(compiled.num_variants() == 1);
    for (int64_t n : c.sizes) {
      CAPTURE(n);
      std::vector<int64_t> shape = c.fixed;
      for (auto& d : shape) d = d < 0 ? n : d;
      at::manual_seed(n);
      at::Tensor x = at::randn(shape);
      // Native kernels sum in another order than ATen: float32 within rtol 1e-4, atol 1e-5.
      check_close(thunderc::aten::run(compiled, {x}), torch_forward(c.model, {x}), 1e-4, 1e-5);
    }
  }
}

TEST_CASE("symbolic values on cpp alone: means over the symbolic dimension divide by the run-time size") {
  fs::path dir = tmp_dir("symbolic_native_mean");
  const std::string pt = save_module(dir, "BatchMean", R"(
def forward(self, x):
    centered = x - x.mean(0, keepdim=True)
    return torch.softmax(centered, -1) * x.mean(), torch.layer_norm(centered, [8])
)");
  const fs::path so = dir / "mean.so";
  compile_file(pt, so, "--executors cpp --standalone --cache \"symbolic values\" --shapes x=Bx8 --dim B=1:16");
  thunderc::Model compiled(so.string());
  for (int64_t b : {1, 2, 5, 16}) {
    CAPTURE(b);
    at::manual_seed(b);
    at::Tensor x = at::randn({b, 8});
    // Native reductions sum in another order than ATen: rtol 1e-4, atol 1e-5.
    check_close(thunderc::aten::run(compiled, {x}), forward_file(pt, {x}), 1e-4, 1e-5);
  }
}

TEST_CASE("symbolic values: a weight expanded to the batch (a class token) stays an expand, not a constant") {
  fs::path dir = tmp_dir("symbolic_class_token");
  const std::string pt = save_module(dir, "ClassToken", R"(
def forward(self, x):
    tokens = torch.cat([self.cls.expand(x.size(0), -1, -1), x], 1)
    return torch.softmax(tokens, -1)
)", [](torch::jit::Module& m) { m.register_parameter("cls", at::randn({1, 1, 8}), false); });
  const fs::path so = dir / "cls.so";
  compile_file(pt, so, "--executors cpp --standalone --cache \"symbolic values\" --shapes x=Bx4x8 --dim B=1:16");
  thunderc::Model compiled(so.string());
  for (int64_t b : {1, 3, 16}) {
    CAPTURE(b);
    at::Tensor x = at::randn({b, 4, 8});
    check_close(thunderc::aten::run(compiled, {x}), forward_file(pt, {x}), 1e-4, 1e-5);
  }
}

TEST_CASE("symbolic values: every occurrence of a symbol must be equal") {
  fs::path dir = tmp_dir("symbolic_two_inputs");
  torch::jit::Module m("__torch__.TwoInputs");
  m.register_parameter("w", at::randn({8, 8}), false);
  m.define(R"(
def forward(self, a, b):
    c = b.reshape([b.size(0), 2, 4]).transpose(1, 2).reshape([b.size(0), 8])
    return torch.matmul(a, self.w) + c.narrow(0, 0, a.size(0) - 1).sum() * 2.0 + torch.softmax(a, -1)
)");
  std::string pt = (dir / "two.pt").string();
  m.save(pt);
  fs::path so = dir / "two.so";
  Result r = run_thunderc(pt + " -o " + so.string() + " --cache \"symbolic values\" --shapes a=Bx8,b=Bx8 --dim B=1:16");
  INFO(r.out);
  REQUIRE(r.code == 0);
  thunderc::Model compiled(so.string());
  torch::jit::Module ref = torch::jit::load(pt);
  for (int64_t batch : {1, 5, 16}) {
    CAPTURE(batch);
    at::Tensor a = at::randn({batch, 8}), b = at::randn({batch, 8});
    c10::InferenceMode guard;
    check_close(thunderc::aten::run(compiled, {a, b}), {ref.forward({a, b}).toTensor()}, 1e-4, 1e-5);
  }
  try {
    thunderc::aten::run(compiled, {at::randn({3, 8}), at::randn({4, 8})});
    FAIL("expected an error");
  } catch (const thunderc::Error& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(e.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(msg.find("'b' dimension 0 is 4") != std::string::npos);
    CHECK(msg.find("B = 3 from input 'a'") != std::string::npos);
  }
}

TEST_CASE("symbolic values: a compiled constant that depends on the symbol is refused clearly") {
  // Without the attention pass gpt_block keeps its causal mask, a [T, T] constant.
  fs::path dir = tmp_dir("symbolic_gpt");
  Result r = run_thunderc(sample("gpt_block.pt") + " -o " + (dir / "gpt.so").string() +
                          " --cache \"symbolic values\" --shapes x=1xTx64 --dim T=2:16 --transforms dce,cse,constant-folding");
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("symbolic values") != std::string::npos);
  CHECK(r.out.find("T=2") != std::string::npos);
  CHECK(r.out.find("depends on T") != std::string::npos);
}

TEST_CASE("symbolic values: gpt_block over a symbolic sequence length (the causal mask became is_causal)") {
  fs::path so = compile("gpt_block.pt", tmp_dir("symbolic_gpt_causal"), "--cache \"symbolic values\" --shapes x=1xTx64 --dim T=2:16");
  thunderc::Model compiled(so.string());
  for (int64_t T : {2, 5, 16}) {
    INFO("T = " << T);
    at::manual_seed(T);
    at::Tensor x = at::randn({1, T, 64});
    check_close(thunderc::aten::run(compiled, {x}), torch_forward("gpt_block.pt", {x}), 1e-4, 1e-5);
  }
}

TEST_CASE("symbolic values: a convolutional model over a symbolic batch matches LibTorch") {
  fs::path so = compile("cnn.pt", tmp_dir("symbolic_cnn"), "--cache \"symbolic values\" --shapes x=Bx3x32x32 --dim B=1:8");
  thunderc::Model compiled(so.string());
  for (int64_t batch : {1, 3, 8}) {
    CAPTURE(batch);
    at::manual_seed(batch);
    at::Tensor x = at::randn({batch, 3, 32, 32});
    check_close(thunderc::aten::run(compiled, {x}), torch_forward("cnn.pt", {x}), 1e-4, 1e-5);
  }
}

TEST_CASE("symbolic values: two symbols, and a size that is not affine in them is refused") {
  fs::path dir = tmp_dir("symbolic_two_symbols");
  torch::jit::Module ok("__torch__.TwoSymbols");
  ok.define(R"(
def forward(self, x, mask):
    y = torch.softmax(x * 2.0 + x.sum(1, keepdim=True), -1)
    return y.narrow(1, 1, x.size(1) - 1), mask.float().sum(1)
)");
  torch::jit::Module bad("__torch__.Product");
  bad.define(R"(
def forward(self, x, mask):
    return torch.relu(x.reshape([x.size(0) * x.size(1), 8])), mask
)");
  std::string ok_pt = (dir / "ok.pt").string(), bad_pt = (dir / "bad.pt").string();
  ok.save(ok_pt);
  bad.save(bad_pt);
  const std::string flags = " --cache \"symbolic values\" --shapes x=BxTx8,mask=BxT:bool --dim B=1:4 --dim T=2:6";
  Result r = run_thunderc(ok_pt + " -o " + (dir / "ok.so").string() + flags);
  INFO(r.out);
  REQUIRE(r.code == 0);
  thunderc::Model compiled((dir / "ok.so").string());
  torch::jit::Module ref = torch::jit::load(ok_pt);
  for (auto [b, t] : {std::pair<int64_t, int64_t>{1, 2}, {3, 5}, {4, 6}, {2, 2}}) {
    CAPTURE(b);
    CAPTURE(t);
    at::Tensor x = at::randn({b, t, 8}), mask = at::rand({b, t}) > 0.5;
    c10::InferenceMode guard;
    auto out = ref.forward({x, mask}).toTupleRef().elements();
    check_close(thunderc::aten::run(compiled, {x, mask}), {out[0].toTensor(), out[1].toTensor()}, 1e-4, 1e-5);
  }
  Result refused = run_thunderc(bad_pt + " -o " + (dir / "bad.so").string() + flags);
  INFO(refused.out);
  CHECK(refused.code == 1);
  CHECK(refused.out.find("not of the form") != std::string::npos);
}

// The ordering, scatter, advanced-indexing and resampling operators as TorchScript writes them (sort, topk,
// prod, diagonal, scatter / scatter_add / scatter_reduce, x[idx], x[idx] = v, x[mask] = v, index_fill, index_put_ with
// accumulate, upsample_bilinear2d with sizes and with scale factors): cpp alone (--standalone) matches
// LibTorch, within rtol 1e-5, atol 1e-6 (prod and the reductions multiply or add in another order). Indices
// are drawn per call within range; sort, topk and scatter see no ties or repeated places where ATen leaves
// the result unspecified (random normal values; scatter's indices come from a sort).
TEST_CASE("sort, topk, prod, diagonal, scatter family, advanced indexing, bilinear upsampling: cpp matches LibTorch") {
  fs::path dir = tmp_dir("positions2");
  const std::string pt = save_module(dir, "Positions2", R"(
def forward(self, x, idx, img):
    v, i = torch.sort(x, 1, True)
    tv, ti = torch.topk(x, 3, -1)
    p = torch.prod(x[:, :4], 1, True)
    d = torch.diagonal(x, 1)
    s = torch.zeros([4, 8]).scatter(1, i[:, :3], x[:, :3])
    sa = torch.zeros([4, 8]).scatter_add(1, idx, x[:, :5])
    sr = torch.zeros([4, 8]).scatter_reduce(1, idx, x[:, :5], "amax", include_self=False)
    g = x[idx[0]]
    g2 = x[idx[1], idx[2] % 8]
    y = x.clone()
    y[idx[1]] = torch.ones([8])
    z = x.clone()
    z[x > 1] = -1.0
    w = x.clone()
    w.index_put_([idx[0]], x[idx[1]], accumulate=True)
    f = x.index_fill(1, idx[2], -2.0)
    u = torch.upsample_bilinear2d(img, [10, 12], False, None, None)
    u2 = torch.upsample_bilinear2d(img, None, True, [1.5, 2.0])
    return v, i, tv, ti, p, d, s, sa, sr, g, g2, y, z, w, u, u2, f
)");
  const fs::path so = dir / "positions2.so";
  compile_file(pt, so, "--shapes x=4x8,idx=4x5:int64,img=1x2x5x6 --executors cpp --standalone");
  thunderc::Model compiled(so.string());
  for (int seed : {1, 2}) {
    CAPTURE(seed);
    at::manual_seed(seed);
    const at::Tensor x = at::randn({4, 8}), idx = at::randint(0, 4, {4, 5}, at::kLong), img = at::randn({1, 2, 5, 6});
    check_close(thunderc::aten::run(compiled, {x, idx, img}), forward_file(pt, {x, idx, img}), 1e-5, 1e-6);
  }
}

// The same operators over a symbolic batch (one variant: the generated code reads the batch size at run
// time), cpp alone: every batch size in the range matches LibTorch.
TEST_CASE("symbolic values: sort, topk, prod, scatter, index and upsampling over a symbolic batch match LibTorch") {
  fs::path dir = tmp_dir("symbolic_positions2");
  const std::string pt = save_module(dir, "Positions2Sym", R"(
def forward(self, x, img):
    v, i = torch.sort(x, 1)
    tv, ti = torch.topk(x, 2, 1, False)
    s = (x * 0.0).scatter(1, i[:, :3], x[:, :3] * 2)
    r = (x * 0.0).scatter_reduce(1, i % 2, x, "sum")
    g = x[:, i[0]]
    u = torch.upsample_bilinear2d(img, [7, 9], False, None, None)
    return v, i, tv, ti, torch.prod(x, 1), s, r, g, torch.diagonal(x.reshape(-1, 2, 3), 1, 1, 2), u
)");
  const fs::path so = dir / "positions2_sym.so";
  compile_file(pt, so, "--cache \"symbolic values\" --shapes x=Bx6,img=Bx3x4x5 --dim B=1:16 --executors cpp --standalone");
  thunderc::Model compiled(so.string());
  CHECK(compiled.num_variants() == 1);
  for (int64_t batch : {1, 5, 16, 2}) {
    CAPTURE(batch);
    at::manual_seed(batch);
    const at::Tensor x = at::randn({batch, 6}), img = at::randn({batch, 3, 4, 5});
    check_close(thunderc::aten::run(compiled, {x, img}), forward_file(pt, {x, img}), 1e-5, 1e-6);
  }
}

// 3-D pooling, grid sampling and embedding bags as TorchScript calls them: cpp alone matches LibTorch within
// rtol 1e-5, atol 1e-6. The grid stays inside [-1.2, 1.2] (every padding mode matters), the offsets are valid.
// (LibTorch 1.13's embedding_bag in max mode with include_last_offset corrupts its heap: not compared.)
TEST_CASE("3-D pooling, grid_sampler and embedding_bag: cpp matches LibTorch") {
  fs::path dir = tmp_dir("sampling");
  const std::string pt = save_module(dir, "Sampling", R"(
def forward(self, v, img, g, w, idx, off):
    a = torch.max_pool3d(v, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], False)
    b = torch.avg_pool3d(v, [2, 2, 2], [1, 2, 2], [1, 0, 1], True, False, None)
    c = torch.adaptive_avg_pool3d(v, [2, 3, 2])
    grid = torch.tanh(g) * 1.2
    s0 = torch.grid_sampler(img, grid, 0, 0, False)
    s1 = torch.grid_sampler(img, grid, 1, 2, True)
    s2 = torch.grid_sampler(img, grid, 0, 1, True)
    e0, _0, _1, _2 = torch.embedding_bag(w, idx, off, False, 0, False, None, False)
    e1, _3, _4, _5 = torch.embedding_bag(w, idx, off, False, 1, False, None, False)
    e2, _6, _7, _8 = torch.embedding_bag(w, idx, off, False, 2, False, None, False)
    e3, _9, _10, _11 = torch.embedding_bag(w, idx, off, False, 0, False, None, True)
    return a, b, c, s0, s1, s2, e0, e1, e2, e3
)");
  const fs::path so = dir / "sampling.so";
  compile_file(pt, so, "--shapes v=2x3x5x6x7,img=2x3x5x6,g=2x4x7x2,w=10x4,idx=9:int64,off=4:int64 --executors cpp --standalone");
  thunderc::Model compiled(so.string());
  for (int seed : {1, 2}) {
    CAPTURE(seed);
    at::manual_seed(seed);
    const at::Tensor v = at::randn({2, 3, 5, 6, 7}), img = at::randn({2, 3, 5, 6}), g = at::randn({2, 4, 7, 2});
    const at::Tensor w = at::randn({10, 4}), idx = at::randint(0, 10, {9}, at::kLong);
    const at::Tensor off = at::tensor(std::vector<int64_t>{0, 2, 2, 6 + seed});
    check_close(thunderc::aten::run(compiled, {v, img, g, w, idx, off}), forward_file(pt, {v, img, g, w, idx, off}), 1e-5, 1e-6);
  }
}

// Operators rewritten at import into catalog ones (core/frontend/composite_ops.h), from TorchScript: cdist for
// p = 2, 1, inf, 0, 0.5 (with a broadcast batch), pdist, as_strided of an input and of a computed tensor, F.fold
// (col2im) batched and unbatched with stride, padding and dilation, batch norm with batch statistics (training=True
// and no running statistics, with and without weight and bias). cpp alone, --standalone; rtol 1e-5, atol 1e-5. Then inputs with NaN and inf: the
// same non-finite positions as LibTorch.
TEST_CASE("cdist, pdist, as_strided, col2im and batch-statistics batch norm: cpp matches LibTorch") {
  fs::path dir = tmp_dir("composites");
  const std::string pt = save_module(dir, "Composites", R"(
def forward(self, x, img, w, b):
    y = x[:3] * 0.5 + 0.25
    c2 = torch.cdist(x, y)
    c1 = torch.cdist(x, y, 1.0)
    ci = torch.cdist(x.unsqueeze(0).expand([2, 4, 8]), y.unsqueeze(0), float("inf"))
    c0 = torch.cdist(x, torch.round(y), 0.0)
    ch = torch.cdist(x, y, 0.5)
    pd = torch.pdist(x)
    pd3 = torch.pdist(x, 3.0)
    st = torch.as_strided(x, [3, 4], [2, 1], 1)
    st2 = torch.as_strided(x * 2.0, [2, 2, 2], [1, 3, 0])
    f1 = torch.col2im(img.reshape([2, 4, 9]), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1])
    f2 = torch.col2im(img[0].reshape([4, 9]), [5, 5], [2, 2], [2, 2], [1, 1], [2, 2])
    bn = torch.batch_norm(img, w, b, None, None, True, 0.1, 1e-05, False)
    bn2 = torch.batch_norm(img * 2.0, None, None, None, None, True, 0.1, 0.001, False)
    return c2, c1, ci, c0, ch, pd, pd3, st, st2, f1, f2, bn, bn2
)");
  const fs::path so = dir / "composites.so";
  compile_file(pt, so, "--shapes x=4x8,img=2x4x3x3,w=4,b=4 --executors cpp --standalone");
  thunderc::Model compiled(so.string());
  for (int seed : {1, 2}) {
    CAPTURE(seed);
    at::manual_seed(seed);
    const at::Tensor x = at::randn({4, 8}), img = at::randn({2, 4, 3, 3}), w = at::rand({4}) + 0.5, b = at::randn({4});
    check_close(thunderc::aten::run(compiled, {x, img, w, b}), forward_file(pt, {x, img, w, b}), 1e-5, 1e-5);
  }
  SUBCASE("NaN and inf reach the same outputs as in LibTorch") {
    at::manual_seed(3);
    at::Tensor x = at::randn({4, 8}), img = at::randn({2, 4, 3, 3});
    x.index_put_({1, 2}, std::numeric_limits<float>::quiet_NaN());
    x.index_put_({3, 5}, std::numeric_limits<float>::infinity());
    img.index_put_({0, 1, 2, 2}, -std::numeric_limits<float>::infinity());
    const at::Tensor w = at::ones({4}), b = at::zeros({4});
    check_close(thunderc::aten::run(compiled, {x, img, w, b}), forward_file(pt, {x, img, w, b}), 1e-5, 1e-5, true);
  }
}

// Batch norm in training mode with running statistics would update them in place, and at eval it needs them.
TEST_CASE("batch_norm: training with running statistics, and eval without them, are refused with the reason") {
  fs::path dir = tmp_dir("batch_norm_modes");
  auto compile_bn = [&](const std::string& args) {
    const std::string pt = save_module(dir, "BatchNormMode", "\ndef forward(self, x):\n    return torch.batch_norm(x, " + args + ")\n");
    return run_thunderc(pt + " -o " + (dir / "bn.so").string() + " --shapes x=2x3x4");
  };
  Result r = compile_bn("None, None, torch.zeros([3]), torch.ones([3]), True, 0.1, 1e-05, False");
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("updates the running statistics in place") != std::string::npos);
  r = compile_bn("None, None, None, None, False, 0.1, 1e-05, False");
  INFO(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("needs running statistics in eval mode") != std::string::npos);
}

// as_strided through a view reads PyTorch's storage, which thunderc's contiguous tensors do not have: refused.
TEST_CASE("as_strided of a transposed or sliced tensor is refused with the reason") {
  fs::path dir = tmp_dir("as_strided_view");
  for (const std::string view : {"x.t()", "x[1:]", "x.reshape([8, 4]).permute([1, 0])", "x.t().type_as(x)"}) {
    CAPTURE(view);
    const std::string pt = save_module(dir, "AsStridedView", "\ndef forward(self, x):\n    return torch.as_strided(" + view +
                                                                  ", [2, 2], [1, 2])\n");
    Result r = run_thunderc(pt + " -o " + (dir / "v.so").string() + " --shapes x=4x8");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(r.out.find("as_strided") != std::string::npos);
    CHECK(r.out.find("not contiguous or starts at an offset (a view)") != std::string::npos);
  }
}

// torch.fft and complex arithmetic imported from TorchScript: the FFTs become fft_r2c/fft_c2r/fft_c2c, complex
// arithmetic and data movement are lowered to real operators on view_as_real pairs, and complex tensors cross
// the runtime as inputs and outputs. With the default executors (the FFTs on torch) and with cpp alone
// --standalone (thunderc's own FFT), against LibTorch: float32 rtol 1e-4, atol 1e-4 (cpp computes the FFT in
// double, pocketfft in float; bins reach |X| ~ 60 here), float64 1e-10.
TEST_CASE("torch.fft and complex arithmetic compile --standalone on cpp and match LibTorch") {
  fs::path dir = tmp_dir("fft_ops");
  const std::string pt = save_module(dir, "FftOps", R"(
def forward(self, x, w, z):
    X = torch.fft_rfft(x)
    Y = torch.fft_irfft(X * w, n=64)
    F = torch.fft_fft2(x)
    G = torch.fft_ifft2(F * 0.5 - F / (F.abs() + 1.0))
    R = torch.fft_rfftn(x, s=[6, 48], norm="ortho")
    L = torch.fft_irfftn(R, s=[6, 48], norm="ortho")
    zz = z * z.conj() + torch.view_as_complex(torch.view_as_real(z).flip(-1)) - z[1:].repeat(2, 1)[:3]
    c = torch.fft_ifft(zz, n=12, norm="forward")
    return X.abs(), Y, torch.view_as_real(F), G.real, G.imag, torch.angle(X), R, L, c, torch.fft_irfft(z, dim=0)
)");
  const std::string shapes = "--shapes x=4x64,w=33,z=3x9:complex64 ";
  at::manual_seed(11);
  at::Tensor x = at::randn({4, 64}), w = at::rand({33}), z = at::randn({3, 9}, at::kComplexFloat);
  const std::vector<at::Tensor> want = forward_file(pt, {x, w, z});
  for (const char* flags : {"", "--executors cpp --standalone"}) {
    CAPTURE(flags);
    const fs::path so = dir / (std::string(flags).empty() ? "default.so" : "cpp.so");
    compile_file(pt, so, shapes + flags);
    thunderc::Model compiled(so.string());
    check_close(thunderc::aten::run(compiled, {x, w, z}), want, 1e-4, 1e-4);
  }
  // float64 / complex128 on cpp alone
  const std::string pt64 = save_module(dir, "FftOps64", R"(
def forward(self, x, z):
    return torch.fft_rfft2(x, norm="forward"), torch.fft_hfft(z, n=10), torch.fft_fftn(z * 2.0 - 1.0, dim=[0])
)");
  const fs::path so64 = dir / "cpp64.so";
  compile_file(pt64, so64, "--shapes x=5x7:float64,z=4x6:complex128 --executors cpp --standalone");
  at::Tensor x64 = at::randn({5, 7}, at::kDouble), z64 = at::randn({4, 6}, at::kComplexDouble);
  thunderc::Model compiled64(so64.string());
  check_close(thunderc::aten::run(compiled64, {x64, z64}), forward_file(pt64, {x64, z64}), 1e-10, 1e-10);
}

TEST_CASE("complex tensors: operators thunderc does not lower are refused with the reason") {
  fs::path dir = tmp_dir("fft_refused");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"return torch.fft_rfft(x).sum()", "sum of a complex64 tensor is not supported"},
      {"return torch.exp(torch.fft_rfft(x))", "exp of a complex64 tensor is not supported"},
      {"return torch.fft_rfft(x.half())", "needs a float32, float64 or complex input, got float16"},
  };
  for (const auto& [body, message] : cases) {
    CAPTURE(body);
    const std::string pt = save_module(dir, "Refused", "\ndef forward(self, x):\n    " + body + "\n");
    Result r = run_thunderc(pt + " -o " + (dir / "r.so").string() + " --shapes x=4x8");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(r.out.find(message) != std::string::npos);
  }
}
