// --autograd end to end: the samples compiled into training .so files, one forward_train + backward through
// libthunderc_runtime, against LibTorch autograd on the same TorchScript module (eval mode, the same inputs and
// output gradients). Gradients of every parameter (and of the input where --requires-grad names it) must agree:
// |ours - torch| <= 1e-5 * max(1, max |torch|) + 1e-5 * |torch| per element (float32 through a dozen layers;
// the backward's GEMMs sum in another order than ATen's).
//
// Dropout (--module-mode train): LibTorch's dropout draws its noise with bernoulli_ from a global generator,
// thunderc's from Philox at the call's RNG state. For parity this binary replaces ATen's CPU bernoulli_.float
// kernel with one that draws the .so's masks (thunderc/philox.h, the same counter blocks in the same order),
// so LibTorch's own dropout arithmetic (scale, feature noise, alpha dropout) runs on the same noise.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <torch/csrc/autograd/autograd.h>
#include <torch/library.h>
#include <torch/optim.h>

#include "doctest_with_torch.h"
#include "common/run_process.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "codegen/nvfuser/emu_model.h"
#include "codegen/nvfuser/fake_libs.h"
#include "thunderc/aten.hpp"
#include "thunderc/npy.hpp"
#include "thunderc/philox.h"
#include "thunderc/runtime.hpp"

namespace fs = std::filesystem;

namespace {

using Result = thunderc_test::ProcessResult;

// The RNG state LibTorch's dropout draws from (see the top): the seed, and the next mask's counter block.
struct ReferenceRng {
  std::uint64_t seed = 0;
  std::uint64_t block = 0;
  int draws = 0;  // bernoulli_ calls since the last reset
} reference_rng;

at::Tensor& philox_bernoulli_(at::Tensor& self, double keep, c10::optional<at::Generator>) {
  if (!self.is_contiguous() || self.scalar_type() != at::kFloat)
    throw std::runtime_error("test bernoulli_: expected a contiguous float32 tensor");
  thunderc_dropout_mask(self.data_ptr<float>(), 0, self.numel(), reference_rng.seed, reference_rng.block, keep);
  reference_rng.block += thunderc_dropout_blocks(self.numel());
  ++reference_rng.draws;
  return self;
}

TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("bernoulli_.float", philox_bernoulli_); }

Result run_thunderc(const std::string& args) {
  Result r = thunderc_test::run_shell(std::string(THUNDERC_BIN) + " " + args);
  REQUIRE(r.code >= 0);
  return r;
}

fs::path tmp_dir(const std::string& name) {
  fs::path d = fs::path(THUNDERC_TEST_TMP) / "training" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

fs::path compile(const std::string& model, const fs::path& dir, const std::string& flags) {
  fs::path so = dir / (fs::path(model).stem().string() + ".so");
  Result r = run_thunderc(sample(model) + " -o " + so.string() + " " + flags);
  INFO(r.out);
  REQUIRE(r.code == 0);
  return so;
}

at::Tensor as_tensor(const thunderc::HostTensor& h) {
  return at::from_blob(const_cast<void*>(h.raw()), std::vector<std::int64_t>(h.shape().begin(), h.shape().end()),
                       thunderc::aten::to_scalar_type(h.dtype()))
      .clone();
}

thunderc::HostTensor as_host(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  thunderc::HostTensor h(thunderc::aten::to_dl_dtype(c.scalar_type()), std::vector<int64_t>(c.sizes().begin(), c.sizes().end()));
  std::memcpy(h.raw(), c.data_ptr(), c.nbytes());
  return h;
}

std::vector<thunderc::HostTensor> as_hosts(const std::vector<at::Tensor>& ts) {
  std::vector<thunderc::HostTensor> h;
  for (const at::Tensor& t : ts) h.push_back(as_host(t));
  return h;
}

// Normal random gradients for outputs of these shapes (LibTorch's, for the reference's backward).
std::vector<at::Tensor> random_grad_outputs(const std::vector<thunderc::HostTensor>& outs) {
  std::vector<at::Tensor> gy;
  for (const thunderc::HostTensor& o : outs) gy.push_back(at::randn(std::vector<std::int64_t>(o.shape().begin(), o.shape().end())));
  return gy;
}

// A copy of parameter i's live value (host or device memory).
at::Tensor parameter_value(thunderc::Model& model, std::size_t i) {
  const DLTensor view = model.parameter(i);
  thunderc::HostTensor h(view.dtype, std::vector<int64_t>(view.shape, view.shape + view.ndim));
  thunderc::copy_to_host(view.device, h.raw(), view.data, h.nbytes());
  return as_tensor(h);
}

void check_grad(const at::Tensor& ours, const at::Tensor& ref, const std::string& what) {
  REQUIRE_MESSAGE(ours.sizes() == ref.sizes(), what, ": ", ours.sizes(), " vs ", ref.sizes());
  const double scale = std::max(1.0, ref.abs().max().item<double>());
  const double worst = ((ours - ref).abs() - (1e-5 * ref.abs() + 1e-5 * scale)).max().item<double>();
  CHECK_MESSAGE(worst <= 0, what, ": max |diff| ", (ours - ref).abs().max().item<double>(), " (scale ", scale, ")");
}

// Inputs at the variant's shapes: normal floats; int64 token ids in [0, 96) or an attention mask (ones, the
// second row's tail zero).
std::vector<at::Tensor> make_inputs(thunderc::Model& model) {
  const thunderc::VariantInfo v = model.variant(0);
  const std::vector<std::string> names = model.input_names();
  std::vector<at::Tensor> in;
  for (std::size_t k = 0; k < v.inputs.size(); ++k) {
    const auto& shape = v.inputs[k].shape;
    if (thunderc::aten::to_scalar_type(v.inputs[k].dtype) == at::kLong) {
      if (names[k] == "attention_mask") {
        at::Tensor m = at::ones(shape, at::kLong);
        if (shape[0] > 1) m.index_put_({1, at::indexing::Slice(shape[1] / 2, at::indexing::None)}, 0);
        in.push_back(m);
      } else {
        at::Tensor ids = at::randint(0, 96, shape, at::kLong);
        ids.view(-1)[0] = 0;  // the samples' padding_idx: its row gets no gradient
        in.push_back(ids);
      }
    } else {
      in.push_back(at::randn(shape));
    }
  }
  return in;
}

struct Reference {
  std::vector<at::Tensor> outputs;
  std::map<std::string, at::Tensor> grads;    // by parameter or input name
  std::map<std::string, at::Tensor> buffers;  // after the forward (train mode updates the running statistics)
};

// LibTorch autograd of the module at `path` (eval mode) for these inputs and output gradients.
Reference torch_gradients(const std::string& path, const std::vector<at::Tensor>& inputs,
                          const std::vector<std::string>& input_names, const std::vector<std::string>& requires_grad,
                          const std::vector<at::Tensor>& grad_outputs, bool train) {
  torch::jit::Module m = torch::jit::load(path);
  m.train(train);
  std::vector<std::string> names;
  std::vector<at::Tensor> leaves;
  for (const auto& p : m.named_parameters(true)) {
    names.push_back(p.name);
    leaves.push_back(p.value);
  }
  std::vector<c10::IValue> args;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    at::Tensor x = inputs[k].clone();
    if (std::find(requires_grad.begin(), requires_grad.end(), input_names[k]) != requires_grad.end()) {
      x.set_requires_grad(true);
      names.push_back(input_names[k]);
      leaves.push_back(x);
    }
    args.push_back(x);
  }
  c10::IValue out = m.forward(args);
  Reference r;
  if (out.isTensor()) r.outputs.push_back(out.toTensor());
  else
    for (const auto& e : out.toTupleRef().elements()) r.outputs.push_back(e.toTensor());
  std::vector<at::Tensor> outs, gouts;
  for (std::size_t j = 0; j < r.outputs.size(); ++j)
    if (r.outputs[j].requires_grad()) outs.push_back(r.outputs[j]), gouts.push_back(grad_outputs[j]);
  auto grads = torch::autograd::grad(outs, leaves, gouts, /*retain_graph=*/false, /*create_graph=*/false,
                                     /*allow_unused=*/true);
  for (std::size_t i = 0; i < names.size(); ++i)
    r.grads[names[i]] = grads[i].defined() ? grads[i] : at::zeros_like(leaves[i]);
  for (at::Tensor& o : r.outputs) o = o.detach();
  for (const auto& b : m.named_buffers(true)) r.buffers[b.name] = b.value.clone();
  return r;
}

// Buffers that are no running statistic (num_batches_tracked, int64): not state of the .so.
std::size_t count_int_buffers(const Reference& r) {
  std::size_t n = 0;
  for (const auto& [name, b] : r.buffers) n += b.is_floating_point() ? 0 : 1;
  return n;
}

// train: --module-mode train against the module in train() mode, the running statistics (the .so's buffers)
// compared after the forward too.
// `path`: a TorchScript file; `extra`: more compile flags (--shapes).
// With `rng` (a model with dropout): the forward draws at that state, and LibTorch's dropout the same masks.
// With `cuda`: compiled with --device cuda and run on cuda:0 through the fake driver, the generated kernels
// emulated on the CPU (tests/codegen/nvfuser/emu_model.h); the parameters then live in (fake) device memory.
void check_model(const std::string& path, const std::vector<std::string>& requires_grad, bool train,
                 const std::string& extra = "", const thunderc::Model::RngState* rng = nullptr, bool cuda = false) {
  const std::string model = fs::path(path).stem().string();
  CAPTURE(model);
  CAPTURE(train);
  CAPTURE(cuda);
  fs::path dir = tmp_dir(model + (train ? "_train" : "") + (extra.find("--executors") != std::string::npos ? "_ex" : "") +
                         (cuda ? "_cuda" : ""));
  std::string flags = train ? "--autograd --module-mode train" : "--autograd";
  for (const std::string& n : requires_grad) flags += " --requires-grad " + n;
  if (cuda) flags += " --device cuda --keep-sources " + (dir / "src").string();
  fs::path so = dir / (model + ".so");
  {
    Result r = run_thunderc(path + " -o " + so.string() + " " + flags + " " + extra);
    INFO(r.out);
    REQUIRE(r.code == 0);
  }
  if (cuda) nvfuser_emu::register_kernels(nvfuser_emu::build_emulated_kernels(dir / "src"));
  thunderc::Model compiled(so.string());
  REQUIRE(compiled.is_training());
  const DLDevice device = cuda ? nvfuser_emu::kCuda0 : DLDevice{kDLCPU, 0};
  if (cuda) {
    // A CUDA training model's parameters have no home until it is prepared (or run) on a device.
    CHECK_THROWS_WITH_AS(compiled.parameter(0), doctest::Contains("not on a device yet"), thunderc::Error);
    compiled.prepare_device(device);
    for (std::size_t i = 0; i < compiled.num_parameters(); ++i) CHECK(compiled.parameter(i).device.device_type == kDLCUDA);
  }
  at::manual_seed(5);
  std::vector<at::Tensor> inputs = make_inputs(compiled);
  auto [outs, ctx] = compiled.forward_train(as_hosts(inputs), rng, device);
  const std::vector<at::Tensor> grad_outputs = random_grad_outputs(outs);
  std::vector<thunderc::HostTensor> grads = compiled.backward(ctx, as_hosts(grad_outputs), device);

  reference_rng = ReferenceRng{rng ? rng->seed : 0, rng ? rng->offset : 0, 0};
  Reference ref = torch_gradients(path, inputs, compiled.input_names(), requires_grad, grad_outputs, train);
  // LibTorch drew one mask per dropout with 0 < p < 1, exactly the blocks the .so drew.
  CHECK(reference_rng.block - (rng ? rng->offset : 0) == compiled.rng_blocks(0));
  REQUIRE(ref.outputs.size() == outs.size());
  for (std::size_t j = 0; j < outs.size(); ++j) check_grad(as_tensor(outs[j]), ref.outputs[j], "output " + std::to_string(j));
  const std::vector<std::string> names = compiled.gradient_names();
  // Every parameter LibTorch's module has gets a gradient (those the forward never reads are not parameters of
  // the .so: PyTorch gives them None).
  std::size_t matched = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto it = ref.grads.find(names[i]);
    REQUIRE_MESSAGE(it != ref.grads.end(), "gradient ", names[i], " has no counterpart in LibTorch");
    check_grad(as_tensor(grads[i]), it->second, "gradient of " + names[i]);
    ++matched;
  }
  CHECK(matched == names.size());
  // Buffers: the running statistics after one training forward.
  std::size_t buffers = 0;
  for (std::size_t i = 0; i < compiled.num_parameters(); ++i) {
    if (compiled.parameter_is_trainable(i)) continue;
    const std::string name = compiled.parameter_names()[i];
    REQUIRE_MESSAGE(ref.buffers.count(name), "buffer ", name, " has no counterpart in LibTorch");
    check_grad(parameter_value(compiled, i), ref.buffers.at(name), "buffer " + name);
    ++buffers;
  }
  CHECK(buffers == (train ? ref.buffers.size() - count_int_buffers(ref) : 0));
}

// Every dropout form --module-mode train imports, in a scripted module whose dropouts follow self.training:
// in place (dropout_) after a linear, plain after relu, alpha dropout, feature dropout on [N, C, 1] (one draw
// per plane), and p = 1 (x * 0, no draw) as a second output.
void save_dropout_module(const std::string& path) {
  at::manual_seed(13);
  torch::jit::Module m("DropoutNet");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("w1", (at::randn({16, 8}) * 0.4).requires_grad_(), false);
  m.register_parameter("b1", (at::randn({16}) * 0.1).requires_grad_(), false);
  m.register_parameter("w2", (at::randn({5, 16}) * 0.3).requires_grad_(), false);
  m.register_parameter("b2", (at::randn({5}) * 0.1).requires_grad_(), false);
  m.define(R"(
def forward(self, x):
    y = torch.linear(x, self.w1, self.b1)
    y = torch.dropout_(y, 0.4, self.training)
    y = torch.dropout(torch.relu(y), 0.3, self.training)
    y = torch.alpha_dropout(y, 0.2, self.training)
    z = torch.linear(y, self.w2, self.b2)
    z = torch.feature_dropout(z.unsqueeze(2), 0.5, self.training).squeeze(2)
    return z, torch.dropout(x, 1.0, self.training)
)");
  m.eval();
  m.save(path);
}

void check_sample(const std::string& model, const std::vector<std::string>& requires_grad, bool train = false) {
  check_model(sample(model + ".pt"), requires_grad, train);
}

// A scripted module whose batch norms follow self.training (a traced one has eval mode baked in, so LibTorch
// could not run it in train mode): conv -> BatchNorm2d -> relu -> mean -> linear -> BatchNorm1d (momentum
// 0.3, eps 1e-3), saved to `path`.
void save_batch_norm_module(const std::string& path) {
  at::manual_seed(11);
  torch::jit::Module m("TrainNet");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("conv_w", (at::randn({4, 3, 3, 3}) * 0.3).requires_grad_(), false);
  m.register_parameter("bn_w", (at::rand({4}) + 0.5).requires_grad_(), false);
  m.register_parameter("bn_b", (at::randn({4}) * 0.1).requires_grad_(), false);
  m.register_buffer("bn_rm", at::randn({4}) * 0.1);
  m.register_buffer("bn_rv", at::rand({4}) + 0.5);
  m.register_parameter("fc_w", (at::randn({5, 4}) * 0.5).requires_grad_(), false);
  m.register_parameter("bn1_w", (at::rand({5}) + 0.5).requires_grad_(), false);
  m.register_parameter("bn1_b", (at::randn({5}) * 0.1).requires_grad_(), false);
  m.register_buffer("bn1_rm", at::randn({5}) * 0.1);
  m.register_buffer("bn1_rv", at::rand({5}) + 0.5);
  m.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.conv_w, None, [1, 1], [1, 1], [1, 1], 1)
    y = torch.batch_norm(y, self.bn_w, self.bn_b, self.bn_rm, self.bn_rv, self.training, 0.1, 1e-5, False)
    z = torch.relu(y).mean([2, 3])
    z = torch.linear(z, self.fc_w, None)
    return torch.batch_norm(z, self.bn1_w, self.bn1_b, self.bn1_rm, self.bn1_rv, self.training, 0.3, 1e-3, False)
)");
  m.eval();
  m.save(path);
}

}  // namespace

TEST_CASE("--autograd samples: gradients match LibTorch autograd") {
  check_sample("mlp", {"x"});
  check_sample("mlp_scripted", {});
  check_sample("gpt_block", {"x"});
  check_sample("gpt_block_scripted", {});
  check_sample("encoder_layer", {});
  check_sample("bert_tiny", {});
  check_sample("distilbert_tiny", {});
  check_sample("gpt2_tiny", {});
  check_sample("cnn", {"x"});
}

// conv2d's gradients on both paths: oneDNN's backward primitives (the default list; the forward's
// convolutions reorder their parameter weights each call) and decompose's im2col/col2im GEMMs. A module whose
// dense, grouped-strided and 1x1 convolutions are large enough for onednn to take in training (2^19
// multiply-adds) and whose depthwise one is not; compiled with the defaults and with --executors cpp,blas.
TEST_CASE("--autograd: conv2d's gradients through onednn and through im2col GEMMs match LibTorch autograd") {
  const fs::path dir = tmp_dir("conv_paths");
  const std::string path = (dir / "conv_net.pt").string();
  {
    at::manual_seed(12);
    torch::jit::Module m("ConvNet");
    m.register_parameter("w1", (at::randn({32, 16, 3, 3}) * 0.1).requires_grad_(), false);
    m.register_parameter("b1", (at::randn({32}) * 0.1).requires_grad_(), false);
    m.register_parameter("w2", (at::randn({32, 16, 3, 3}) * 0.1).requires_grad_(), false);
    m.register_parameter("w3", (at::randn({32, 1, 3, 3}) * 0.3).requires_grad_(), false);
    m.register_parameter("w4", (at::randn({128, 32, 1, 1}) * 0.2).requires_grad_(), false);
    m.register_parameter("b4", (at::randn({128}) * 0.1).requires_grad_(), false);
    m.define(R"(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1], [1, 1], 1))
    y = torch.relu(torch.conv2d(y, self.w2, None, [2, 2], [1, 1], [1, 1], 2))
    y = torch.conv2d(y, self.w3, None, [1, 1], [1, 1], [1, 1], 32)
    y = torch.conv2d(y, self.w4, self.b4, [1, 1], [0, 0], [1, 1], 1)
    return y.mean([2, 3])
)");
    m.eval();
    m.save(path);
  }
  const std::string so = (dir / "conv_net.so").string();
  Result r = run_thunderc(path + " --shapes x=4x16x25x24 --autograd -o " + so + " --keep-sources " + (dir / "src").string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  std::ifstream in(dir / "src" / "model.cpp");
  const std::string code{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK(code.find("thunderc_onednn::Conv2dBackward<false>") != std::string::npos);
  CHECK(code.find("thunderc_onednn::Conv2dBackward<true>") != std::string::npos);
  CHECK(code.find("weights reordered per call") != std::string::npos);
  CHECK(code.find("col2im") != std::string::npos);  // the depthwise convolution's input gradient
  check_model(path, {"x"}, false, "--shapes x=4x16x25x24");
  check_model(path, {"x"}, false, "--shapes x=4x16x25x24 --executors cpp,blas");
}

TEST_CASE("--autograd: parameters equal in value stay distinct (freezing would pool them)") {
  // Three zero biases and a LayerNorm weight of ones, as a freshly initialized model has: each gets its own
  // gradient (b1's is about 0 through the LayerNorm, ln_b's and b2's are sums of the output gradient).
  const fs::path dir = tmp_dir("equal_params_source");
  const std::string path = (dir / "equal_params.pt").string();
  at::manual_seed(3);
  torch::jit::Module m("EqualParams");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_parameter("w1", at::randn({4, 3}).requires_grad_(), false);
  m.register_parameter("b1", at::zeros({4}).requires_grad_(), false);
  m.register_parameter("ln_w", at::ones({4}).requires_grad_(), false);
  m.register_parameter("ln_b", at::zeros({4}).requires_grad_(), false);
  m.register_parameter("w2", at::randn({4, 4}).requires_grad_(), false);
  m.register_parameter("b2", at::zeros({4}).requires_grad_(), false);
  m.define(R"(
def forward(self, x):
    y = torch.layer_norm(torch.linear(x, self.w1, self.b1), [4], self.ln_w, self.ln_b, 1e-5, False)
    return torch.linear(y, self.w2, self.b2)
)");
  m.save(path);
  check_model(path, {"x"}, false, "--shapes x=5x3");
}

TEST_CASE("--module-mode train: batch norm normalizes with batch statistics and updates its running statistics") {
  const fs::path dir = tmp_dir("train_mode");
  const std::string bn = (dir / "batch_norm_net.pt").string();
  save_batch_norm_module(bn);
  check_model(bn, {"x"}, true, "--shapes x=6x3x5x4");
  check_model(bn, {"x"}, false, "--shapes x=6x3x5x4");  // eval mode: running statistics, no buffers
  {
    // The state carries over: three training forwards (run() is one too) of a freshly opened model move the
    // running statistics as three LibTorch train-mode forwards do.
    thunderc::Model compiled((fs::path(THUNDERC_TEST_TMP) / "training" / "batch_norm_net_train" / "batch_norm_net.so").string());
    torch::jit::Module ref = torch::jit::load(bn);
    ref.train(true);
    at::NoGradGuard no_grad;
    for (int step = 0; step < 3; ++step) {
      const at::Tensor x = at::randn({6, 3, 5, 4}) * (step + 1) + step;
      ref.forward({x});
      if (step == 2) compiled.run(std::vector<thunderc::HostTensor>{as_host(x)});
      else compiled.forward_train(std::vector<thunderc::HostTensor>{as_host(x)});
    }
    std::map<std::string, at::Tensor> expected;
    for (const auto& b : ref.named_buffers(true)) expected[b.name] = b.value;
    std::size_t checked = 0;
    for (std::size_t i = 0; i < compiled.num_parameters(); ++i) {
      if (compiled.parameter_is_trainable(i)) continue;
      const std::string name = compiled.parameter_names()[i];
      const DLTensor view = compiled.parameter(i);
      const at::Tensor ours = at::from_blob(view.data, std::vector<std::int64_t>(view.shape, view.shape + view.ndim), at::kFloat);
      check_grad(ours, expected.at(name), "buffer " + name + " after 3 forwards");
      ++checked;
    }
    CHECK(checked == 4);
  }
  // Models without batch norm or dropout compile the same program as in eval mode (no buffers, no rng).
  check_sample("mlp", {"x"}, true);
  Result no_autograd = run_thunderc(sample("cnn.pt") + " --module-mode train -o " + (dir / "c.so").string());
  CHECK(no_autograd.code == 1);
  CHECK_MESSAGE(no_autograd.out.find("needs --autograd") != std::string::npos, no_autograd.out);
}

TEST_CASE("--module-mode train: dropout draws the masks LibTorch's dropout computes with, at the call's RNG state") {
  const fs::path dir = tmp_dir("dropout");
  const std::string path = (dir / "dropout_net.pt").string();
  save_dropout_module(path);
  // Outputs and every gradient against LibTorch autograd in train() mode on the same noise (see the top), with
  // a seed using both key words and an offset past 2^32; the torch executor draws the same masks as cpp.
  const thunderc::Model::RngState state{0x5eed1234abcd9876ull, (std::uint64_t{1} << 32) + 77};
  check_model(path, {"x"}, true, "--shapes x=6x8", &state);
  check_model(path, {"x"}, true, "--shapes x=6x8 --executors torch", &state);

  thunderc::Model m((fs::path(THUNDERC_TEST_TMP) / "training" / "dropout_net_train" / "dropout_net.so").string());
  // 96 elements (24 blocks) for each of the three elementwise dropouts, 30 planes (8 blocks) for the feature one.
  const std::uint64_t blocks = m.rng_blocks(0);
  CHECK(blocks == 3 * 24 + 8);
  at::manual_seed(2);
  const std::vector<thunderc::HostTensor> x = {as_host(at::randn({6, 8}))};
  auto same = [](const thunderc::HostTensor& a, const thunderc::HostTensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
  };
  // The model's generator starts at (0, 0); each training forward (run() too) takes its blocks.
  CHECK(m.rng_state().seed == 0);
  CHECK(m.rng_state().offset == 0);
  auto first = m.forward_train(x);
  auto second = m.forward_train(x);
  CHECK(m.rng_state().offset == 2 * blocks);
  CHECK_FALSE(same(first.outputs[0], second.outputs[0]));
  const thunderc::Model::RngState at0{0, 0}, at1{0, blocks};
  auto again0 = m.forward_train(x, &at0);
  auto again1 = m.forward_train(x, &at1);
  CHECK(m.rng_state().offset == 2 * blocks);  // explicit states leave the generator alone
  CHECK(same(first.outputs[0], again0.outputs[0]));
  CHECK(same(second.outputs[0], again1.outputs[0]));
  m.run(x);
  CHECK(m.rng_state().offset == 3 * blocks);
  // A backward uses the masks of the forward that made its context, however the generator moved since.
  const std::vector<thunderc::HostTensor> gy = {as_host(at::randn({6, 5})), as_host(at::randn({6, 8}))};
  const std::vector<thunderc::HostTensor> g_first = m.backward(first.context, gy), g_again = m.backward(again0.context, gy),
                                          g_second = m.backward(second.context, gy);
  REQUIRE(g_first.size() == g_again.size());
  bool differs = false;
  for (std::size_t i = 0; i < g_first.size(); ++i) {
    CHECK(same(g_first[i], g_again[i]));
    differs = differs || !same(g_first[i], g_second[i]);
  }
  CHECK(differs);
  m.set_rng_state({9, 5});
  auto seeded = m.forward_train(x);
  const thunderc::Model::RngState at9{9, 5};
  CHECK(same(seeded.outputs[0], m.forward_train(x, &at9).outputs[0]));
  CHECK(m.rng_state().seed == 9);
  CHECK(m.rng_state().offset == 5 + blocks);
}

TEST_CASE("--module-mode train: the gpt_block sample's dropouts, and thunderc grad --seed/--offset") {
  // gpt_block is traced (its dropouts' train flags are constants), so LibTorch cannot run it in train mode;
  // what is checked: it compiles, draws 3 masks, differs from eval mode, and grad's state reproduces a step.
  const fs::path dir = tmp_dir("gpt_block_dropout");
  const fs::path so = dir / "gpt_block.so";
  Result r = run_thunderc(sample("gpt_block.pt") + " --autograd --module-mode train -o " + so.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  thunderc::Model m(so.string());
  CHECK(m.rng_blocks(0) == 3 * 16 * 64 / 4);  // attention weights [1, 4, 16, 16] and two [1, 16, 64] residuals
  const thunderc::HostTensor x = thunderc::npy::load(sample("gpt_block.input.npy"));
  const thunderc::HostTensor eval = thunderc::npy::load(sample("gpt_block.expected.npy"));
  const at::Tensor y = as_tensor(m.forward_train({x}).outputs[0]);
  CHECK((y - as_tensor(eval)).abs().max().item<double>() > 1e-2);
  thunderc::npy::save((dir / "gy.npy").string(), as_host(at::ones({1, 16, 64})));
  auto grad = [&](const std::string& out, const std::string& state) {
    Result g = run_thunderc("grad " + so.string() + " " + sample("gpt_block.input.npy") + " --grad-output " +
                            (dir / "gy.npy").string() + " --output-dir " + (dir / out).string() + " " + state);
    INFO(g.out);
    REQUIRE(g.code == 0);
    return as_tensor(thunderc::npy::load((dir / out / "grad_attn.qkv.weight.npy").string()));
  };
  const at::Tensor a = grad("a", "--seed 3 --offset 768"), b = grad("b", "--seed 3 --offset 768"), c = grad("c", "--seed 4");
  CHECK(at::equal(a, b));
  CHECK_FALSE(at::equal(a, c));
  const thunderc::Model::RngState s3{3, 768};
  const std::vector<thunderc::HostTensor> gy = {as_host(at::ones({1, 16, 64}))};
  auto step = m.forward_train({x}, &s3);
  const std::vector<std::string> names = m.gradient_names();
  const std::size_t k = static_cast<std::size_t>(std::find(names.begin(), names.end(), "attn.qkv.weight") - names.begin());
  REQUIRE(k < names.size());
  CHECK(at::equal(as_tensor(m.backward(step.context, gy)[k]), a));
}

// CUDA training variants (--autograd --device cuda): the forward and backward programs compiled for nvfuser,
// cuBLASLt and cuDNN (the CUDA default list), run on cuda:0 through the fake driver with the generated kernels
// emulated on the CPU; outputs and every gradient against LibTorch autograd at the tolerance above. Label
// cuda-emu (tests/e2e/CMakeLists.txt).
TEST_CASE("emulated CUDA: --autograd --device cuda samples: gradients match LibTorch autograd") {
  check_model(sample("mlp.pt"), {"x"}, false, "", nullptr, true);
  check_model(sample("gpt_block.pt"), {"x"}, false, "", nullptr, true);
  check_model(sample("encoder_layer.pt"), {}, false, "", nullptr, true);
  // conv2d's gradients as GEMMs around nvfuser's im2col/col2im kernels, max_pool2d_backward's kernel.
  check_model(sample("cnn.pt"), {"x"}, false, "", nullptr, true);
}

// Language models on CUDA: int64 input_ids and attention masks moved, compared and converted by nvfuser's
// loops, embedding's rows gathered and its gradient scattered by nvfuser's indexing kernels
// (codegen/nvfuser/indexing.h; BERT's word embedding has padding_idx 0).
TEST_CASE("emulated CUDA: --autograd --device cuda language models: embeddings and integer inputs") {
  check_model(sample("bert_tiny.pt"), {}, false, "", nullptr, true);
  check_model(sample("distilbert_tiny.pt"), {}, false, "", nullptr, true);
  check_model(sample("gpt2_tiny.pt"), {}, false, "", nullptr, true);
}

// Dropout on CUDA: nvfuser's Philox kernel (codegen/nvfuser/dropout.h) draws the masks the CPU build and
// LibTorch's dropout (on the same noise, see the top) use, from the RNG state the runtime copies to the device
// per call. With --cuda-graphs (the forward captured from its second call, then replayed), calls at different
// states still draw different masks, and equal states equal ones.
TEST_CASE("emulated CUDA: --module-mode train dropout: the CPU's Philox masks, drawn on the device") {
  const fs::path dir = tmp_dir("dropout_cuda");
  const std::string path = (dir / "dropout_net.pt").string();
  save_dropout_module(path);
  const thunderc::Model::RngState state{0x5eed1234abcd9876ull, (std::uint64_t{1} << 32) + 77};
  check_model(path, {"x"}, true, "--shapes x=6x8", &state, true);

  const fs::path graphs = dir / "graphs";
  fs::create_directories(graphs);
  const fs::path so = graphs / "dropout_net.so";
  Result r = run_thunderc(path + " --autograd --module-mode train --shapes x=6x8 --device cuda --cuda-graphs -o " +
                          so.string() + " --keep-sources " + (graphs / "src").string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  nvfuser_emu::register_kernels(nvfuser_emu::build_emulated_kernels(graphs / "src"));
  thunderc::Model m(so.string());
  at::manual_seed(2);
  const std::vector<thunderc::HostTensor> x = {as_host(at::randn({6, 8}))};
  const thunderc::Model::RngState a{1, 0}, b{1, 1000};
  std::vector<thunderc::HostTensor> outs;
  for (const auto* st : {&a, &b, &a, &b}) outs.push_back(m.forward_train(x, st, nvfuser_emu::kCuda0).outputs[0]);
  auto same = [](const thunderc::HostTensor& p, const thunderc::HostTensor& q) {
    return p.shape() == q.shape() && std::memcmp(p.raw(), q.raw(), p.nbytes()) == 0;
  };
  CHECK_FALSE(same(outs[0], outs[1]));
  CHECK(same(outs[0], outs[2]));
  CHECK(same(outs[1], outs[3]));
}

TEST_CASE("emulated CUDA: --module-mode train batch norm: batch statistics, running statistics updated on the device") {
  const fs::path dir = tmp_dir("train_mode_cuda");
  const std::string bn = (dir / "batch_norm_net.pt").string();
  save_batch_norm_module(bn);
  check_model(bn, {"x"}, true, "--shapes x=6x3x5x4", nullptr, true);
}

TEST_CASE("emulated CUDA: a training model keeps its parameters on the device it first ran on") {
  // Two fake devices: read by the fake driver when it is first initialized, after this (ctest runs each test
  // case in a process of its own).
  setenv("THUNDERC_FAKE_CUDA_DEVICES", "2", 1);
  const fs::path dir = tmp_dir("cuda_placement");
  const fs::path so = compile("mlp.pt", dir, "--autograd --device cuda --keep-sources " + (dir / "src").string());
  const std::string kernels = nvfuser_emu::build_emulated_kernels(dir / "src");
  nvfuser_emu::register_kernels(kernels);
  const thunderc::HostTensor x = thunderc::npy::load(sample("mlp.input.npy"));
  const thunderc::HostTensor want = thunderc::npy::load(sample("mlp.expected.npy"));
  thunderc::Model a(so.string()), b(so.string());
  // The first training call places a's parameters on cuda:1 (LibTorch's eval output: no batch norm, no dropout).
  auto step = a.forward_train({x}, nullptr, DLDevice{kDLCUDA, 1});
  CHECK((as_tensor(step.outputs[0]) - as_tensor(want)).abs().max().item<double>() < 1e-5);
  CHECK(a.parameter(0).device.device_id == 1);
  CHECK_THROWS_WITH_AS(a.forward_train({x}, nullptr, nvfuser_emu::kCuda0),
                       doctest::Contains("parameters live on cuda:1"), thunderc::Error);
  CHECK_THROWS_WITH_AS(a.prepare_device(nvfuser_emu::kCuda0), doctest::Contains("parameters live on cuda:1"), thunderc::Error);
  // Another instance of the model is independent: it goes to cuda:0. Its gradients equal a's (same kernels).
  auto other = b.forward_train({x}, nullptr, nvfuser_emu::kCuda0);
  const std::vector<thunderc::HostTensor> gy = {as_host(at::ones({1, 10}))};
  const auto ga = a.backward(step.context, gy, DLDevice{kDLCUDA, 1}), gb = b.backward(other.context, gy, nvfuser_emu::kCuda0);
  REQUIRE(ga.size() == gb.size());
  for (std::size_t i = 0; i < ga.size(); ++i) CHECK(at::equal(as_tensor(ga[i]), as_tensor(gb[i])));
  // thunderc grad runs a CUDA training model on cuda:0 (the fake driver loads the emulated kernels named by
  // THUNDERC_FAKE_CUDA_KERNELS in that process): the same gradients.
  thunderc::npy::save((dir / "gy.npy").string(), gy[0]);
  setenv("THUNDERC_FAKE_CUDA_KERNELS", kernels.c_str(), 1);  // the child inherits it, and LD_LIBRARY_PATH
  Result g = run_thunderc("grad " + so.string() + " " + sample("mlp.input.npy") + " --grad-output " + (dir / "gy.npy").string() +
                   " --output-dir " + (dir / "grads").string());
  INFO(g.out);
  REQUIRE(g.code == 0);
  const std::vector<std::string> names = b.gradient_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    CHECK(at::equal(as_tensor(thunderc::npy::load((dir / "grads" / ("grad_" + names[i] + ".npy")).string())),
                    as_tensor(gb[i])));
  // thunderc bench times its training steps on the device (the host clock: each call waits for the device).
  Result bench = run_thunderc("bench " + so.string() + " --iterations 2 --warmup 1 --json");
  INFO(bench.out);
  REQUIRE(bench.code == 0);
  CHECK(bench.out.find("\"mode\": \"training step\"") != std::string::npos);
  CHECK(bench.out.find("\"device\": \"cuda:0\"") != std::string::npos);
  // A backward's tensors must be on its context's device.
  CHECK_THROWS_WITH_AS(a.backward(step.context, gy, nvfuser_emu::kCuda0), doctest::Contains("cuda:1 tensor"),
                       thunderc::Error);
  // An in-place update through a device view is what the next call computes with: zero every parameter of
  // a, and its output is 0 (the mlp's last layer is a linear with bias).
  for (std::size_t i = 0; i < a.num_parameters(); ++i) {
    const DLTensor p = a.parameter(i);
    thunderc::HostTensor zeros(p.dtype, std::vector<int64_t>(p.shape, p.shape + p.ndim));
    std::memset(zeros.raw(), 0, zeros.nbytes());
    thunderc::check(thunderc_device_copy_to_device(p.device, p.data, zeros.raw(), zeros.nbytes(), nullptr));
  }
  CHECK(as_tensor(a.forward_train({x}, nullptr, DLDevice{kDLCUDA, 1}).outputs[0]).abs().max().item<double>() == 0);
  // run_alloc runs the training forward too (its saved tensors in device scratch, freed when it returns).
  const thunderc::DeviceTensor dx = thunderc::DeviceTensor::from_host(x, DLDevice{kDLCUDA, 1});
  std::vector<thunderc::ManagedTensor> ran = a.run_alloc({dx.dl()});
  REQUIRE(ran.size() == 1);
  CHECK(as_tensor(ran[0].to_host()).abs().max().item<double>() == 0);
  CHECK(as_tensor(b.run_alloc({thunderc::DeviceTensor::from_host(x, nvfuser_emu::kCuda0).dl()})[0].to_host())
            .sub(as_tensor(other.outputs[0]))
            .abs()
            .max()
            .item<double>() == 0);
}

namespace {

// One --optimizer configuration: torch.optim's hyperparameters.
struct OptimizerCase {
  std::string kind;
  double lr = 1e-2, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// --optimizer: four steps of forward_train, backward and optimizer_step on `model` (a sample) against LibTorch's
// module with torch::optim's SGD or AdamW, on the same inputs and output gradients each step (new ones every
// step); every parameter after every step at the gradients' tolerance. With `cuda`, the CUDA build emulated.
void check_optimizer(const std::string& model, const OptimizerCase& c, bool cuda) {
  CAPTURE(model);
  CAPTURE(c.kind);
  CAPTURE(cuda);
  const fs::path dir = tmp_dir(model + "_" + c.kind + (c.nesterov ? "_nesterov" : "") + (cuda ? "_cuda" : ""));
  std::string flags = "--autograd --optimizer " + c.kind;
  if (cuda) flags += " --device cuda --keep-sources " + (dir / "src").string();
  const fs::path so = compile(model + ".pt", dir, flags);
  if (cuda) nvfuser_emu::register_kernels(nvfuser_emu::build_emulated_kernels(dir / "src"));
  thunderc::Model m(so.string());
  const DLDevice device = cuda ? nvfuser_emu::kCuda0 : DLDevice{kDLCPU, 0};
  if (cuda) m.prepare_device(device);
  REQUIRE(m.optimizer() == c.kind);
  thunderc_optimizer_options o = m.optimizer_options();
  o.lr = c.lr;
  o.weight_decay = c.weight_decay;
  o.momentum = c.momentum;
  o.dampening = c.dampening;
  o.nesterov = c.nesterov ? 1 : 0;
  o.beta1 = c.beta1;
  o.beta2 = c.beta2;
  o.eps = c.eps;

  torch::jit::Module ref = torch::jit::load(sample(model + ".pt"));
  ref.eval();
  std::vector<at::Tensor> params;
  std::map<std::string, at::Tensor> by_name;
  for (const auto& p : ref.named_parameters(true)) {
    params.push_back(p.value);
    by_name[p.name] = p.value;
  }
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (c.kind == "sgd")
    opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(c.lr)
                                                          .momentum(c.momentum)
                                                          .dampening(c.dampening)
                                                          .weight_decay(c.weight_decay)
                                                          .nesterov(c.nesterov));
  else
    opt = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(c.lr)
                                                            .betas(std::make_tuple(c.beta1, c.beta2))
                                                            .eps(c.eps)
                                                            .weight_decay(c.weight_decay));
  for (int step = 1; step <= 4; ++step) {
    CAPTURE(step);
    at::manual_seed(100 + step);
    const std::vector<at::Tensor> inputs = make_inputs(m);
    auto [outs, ctx] = m.forward_train(as_hosts(inputs), nullptr, device);
    const std::vector<at::Tensor> gy = random_grad_outputs(outs);
    m.optimizer_step(m.backward(ctx, as_hosts(gy), device), o, device);

    opt->zero_grad();
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    c10::IValue out = ref.forward(args);
    std::vector<at::Tensor> ys;
    if (out.isTensor()) ys.push_back(out.toTensor());
    else
      for (const auto& e : out.toTupleRef().elements()) ys.push_back(e.toTensor());
    torch::autograd::backward(ys, gy);
    opt->step();

    const std::vector<std::string> names = m.parameter_names();
    for (std::size_t i = 0; i < names.size(); ++i) {
      REQUIRE_MESSAGE(by_name.count(names[i]), names[i]);
      check_grad(parameter_value(m, i), by_name.at(names[i]).detach(), "parameter " + names[i] + " after the step");
    }
  }
  CHECK(m.optimizer_steps() == 4);
}

}  // namespace

TEST_CASE("--optimizer sgd and adamw: parameters after each step match torch::optim on LibTorch's module") {
  OptimizerCase sgd{"sgd"};
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.dampening = 0.1;
  sgd.weight_decay = 0.01;
  check_optimizer("mlp", sgd, false);
  OptimizerCase nesterov{"sgd"};
  nesterov.lr = 0.002;  // small enough that four steps stay near the start (larger ones blow it up to 1e3)
  nesterov.momentum = 0.8;
  nesterov.nesterov = true;
  check_optimizer("gpt_block", nesterov, false);
  OptimizerCase adamw{"adamw"};
  adamw.lr = 0.01;
  adamw.weight_decay = 0.05;
  adamw.beta1 = 0.8;
  adamw.beta2 = 0.99;
  check_optimizer("mlp", adamw, false);
  check_optimizer("cnn", adamw, false);
}

TEST_CASE("--optimizer: options torch.optim refuses, wrong gradients and models without one are clear errors") {
  const fs::path dir = tmp_dir("optimizer_errors");
  fs::create_directories(dir / "plain");
  thunderc::Model plain(compile("mlp.pt", dir / "plain", "--autograd").string());
  CHECK(plain.optimizer().empty());
  CHECK_THROWS_WITH_AS(plain.optimizer_options(), doctest::Contains("was compiled without --optimizer"), thunderc::Error);
  thunderc::Model m(compile("mlp.pt", dir, "--autograd --optimizer sgd").string());
  const thunderc_optimizer_options defaults = m.optimizer_options();
  CHECK(defaults.lr == 1e-3);
  CHECK(defaults.weight_decay == 0);
  auto [outs, ctx] = m.forward_train({thunderc::npy::load(sample("mlp.input.npy"))});
  const std::vector<thunderc::HostTensor> grads = m.backward(ctx, {as_host(at::ones({1, 10}))});
  const thunderc::HostTensor before = as_host(parameter_value(m, 0));
  auto refused = [&](thunderc_optimizer_options o, const char* why) {
    CHECK_THROWS_WITH_AS(m.optimizer_step(grads, o), doctest::Contains(why), thunderc::Error);
  };
  thunderc_optimizer_options o = defaults;
  o.lr = -1;
  refused(o, "invalid learning rate");
  o = defaults;
  o.nesterov = 1;
  refused(o, "nesterov momentum requires a momentum > 0 and zero dampening");
  o = defaults;
  o.struct_size = 8;
  refused(o, "struct_size is 8");
  std::vector<thunderc::HostTensor> short_list(grads.begin(), grads.end() - 1);
  CHECK_THROWS_WITH_AS(m.optimizer_step(short_list, defaults), doctest::Contains("gradient(s), got"), thunderc::Error);
  std::vector<thunderc::HostTensor> swapped = grads;
  std::swap(swapped[0], swapped[1]);
  CHECK_THROWS_WITH_AS(m.optimizer_step(swapped, defaults), doctest::Contains("expected a contiguous float32"), thunderc::Error);
  // Nothing refused changed a parameter or counted a step; a good step does both.
  CHECK(at::equal(parameter_value(m, 0), as_tensor(before)));
  CHECK(m.optimizer_steps() == 0);
  m.optimizer_step(grads, defaults);
  CHECK(m.optimizer_steps() == 1);
  CHECK_FALSE(at::equal(parameter_value(m, 0), as_tensor(before)));
  // thunderc grad --steps runs the same steps: three from a fresh model equal three through the C API.
  {
    thunderc::npy::save((dir / "gy.npy").string(), as_host(at::ones({1, 10})));
    const std::string cmd = "grad " + (dir / "mlp.so").string() + " " + sample("mlp.input.npy") + " --grad-output " +
                            (dir / "gy.npy").string() + " --steps 3 --lr 0.02 --output-dir " + (dir / "steps").string();
    Result g = run_thunderc(cmd);
    INFO(g.out);
    REQUIRE(g.code == 0);
    thunderc::Model fresh((dir / "mlp.so").string());
    thunderc_optimizer_options o3 = fresh.optimizer_options();
    o3.lr = 0.02;
    for (int k = 0; k < 3; ++k) {
      auto step = fresh.forward_train({thunderc::npy::load(sample("mlp.input.npy"))});
      fresh.optimizer_step(fresh.backward(step.context, {as_host(at::ones({1, 10}))}), o3);
    }
    const std::vector<std::string> names = fresh.parameter_names();
    for (std::size_t i = 0; i < names.size(); ++i)
      CHECK(at::equal(as_tensor(thunderc::npy::load((dir / "steps" / ("param_" + names[i] + ".npy")).string())),
                      parameter_value(fresh, i)));
    Result none = run_thunderc("grad " + (dir / "plain" / "mlp.so").string() + " " + sample("mlp.input.npy") +
                               " --grad-output " + (dir / "gy.npy").string() + " --steps 2");
    CHECK(none.code == 1);
    CHECK_MESSAGE(none.out.find("was compiled without --optimizer, so --steps and --lr have nothing to run") !=
                      std::string::npos, none.out);
  }
  // The state is readable (sgd: the momentum buffer, which momentum 0 leaves at the gradient).
  const DLTensor buf = m.optimizer_state(0, 0);
  CHECK(buf.ndim == 2);
  CHECK_THROWS_WITH_AS(m.optimizer_state(0, 1), doctest::Contains("slot 1 out of range"), thunderc::Error);
}

TEST_CASE("emulated CUDA: --optimizer sgd and adamw on the device match torch::optim") {
  OptimizerCase sgd{"sgd"};
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.weight_decay = 0.01;
  check_optimizer("mlp", sgd, true);
  OptimizerCase adamw{"adamw"};
  adamw.weight_decay = 0.05;
  check_optimizer("mlp", adamw, true);
}

// --cuda-graphs with a training model: the forward, backward and optimizer entries are captured on their second
// call and replayed (each copies its inputs into the graph's buffers and its outputs back, so the optimizer's
// in-place update lands in the live parameters); four steps equal the model without graphs bit for bit.
TEST_CASE("emulated CUDA: --cuda-graphs replays training steps, the optimizer's included") {
  const fs::path dir = tmp_dir("cuda_graphs_training");
  std::vector<std::vector<thunderc::HostTensor>> params;
  for (const bool graphs : {true, false}) {
    const fs::path sub = dir / (graphs ? "graphs" : "plain");
    fs::create_directories(sub);
    const fs::path so = compile("mlp.pt", sub, std::string("--autograd --optimizer adamw --device cuda --keep-sources ") +
                                                   (sub / "src").string() + (graphs ? " --cuda-graphs" : ""));
    nvfuser_emu::register_kernels(nvfuser_emu::build_emulated_kernels(sub / "src"));
    thunderc::Model m(so.string());
    const uint64_t launches = fake_libs::driver_stats().graph_launches;
    thunderc_optimizer_options o = m.optimizer_options();
    o.lr = 0.01;
    for (int step = 0; step < 4; ++step) {
      at::manual_seed(step);
      auto fwd = m.forward_train({as_host(at::randn({1, 64}))}, nullptr, nvfuser_emu::kCuda0);
      m.optimizer_step(m.backward(fwd.context, {as_host(at::randn({1, 10}))}, nvfuser_emu::kCuda0), o, nvfuser_emu::kCuda0);
    }
    // Calls 2..4 of each of the three entries replay a graph; without --cuda-graphs none does.
    CHECK(fake_libs::driver_stats().graph_launches - launches == (graphs ? 9u : 0u));
    params.emplace_back();
    for (std::size_t i = 0; i < m.num_parameters(); ++i) params.back().push_back(as_host(parameter_value(m, i)));
  }
  REQUIRE(params[0].size() == params[1].size());
  for (std::size_t i = 0; i < params[0].size(); ++i) CHECK(at::equal(as_tensor(params[0][i]), as_tensor(params[1][i])));
}
