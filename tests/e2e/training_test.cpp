// --autograd end to end: the samples compiled into training .so files, one forward_train + backward through
// libthunderc_runtime, against LibTorch autograd on the same TorchScript module (eval mode, the same inputs and
// output gradients). Gradients of every parameter (and of the input where --requires-grad names it) must agree:
// |ours - torch| <= 1e-5 * max(1, max |torch|) + 1e-5 * |torch| per element (float32 through a dozen layers;
// the backward's GEMMs sum in another order than ATen's).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <torch/csrc/autograd/autograd.h>

#include "doctest_with_torch.h"
#include "common/run_process.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "thunderc/aten.hpp"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.hpp"

namespace fs = std::filesystem;

namespace {

using Result = thunderc_test::ProcessResult;

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
  std::map<std::string, at::Tensor> grads;  // by parameter or input name
};

// LibTorch autograd of the module at `path` (eval mode) for these inputs and output gradients.
Reference torch_gradients(const std::string& path, const std::vector<at::Tensor>& inputs,
                          const std::vector<std::string>& input_names, const std::vector<std::string>& requires_grad,
                          const std::vector<at::Tensor>& grad_outputs) {
  torch::jit::Module m = torch::jit::load(path);
  m.eval();
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
  return r;
}

void check_sample(const std::string& model, const std::vector<std::string>& requires_grad) {
  CAPTURE(model);
  fs::path dir = tmp_dir(model);
  std::string flags = "--autograd";
  for (const std::string& n : requires_grad) flags += " --requires-grad " + n;
  fs::path so = compile(model + ".pt", dir, flags);
  thunderc::Model compiled(so.string());
  REQUIRE(compiled.is_training());
  at::manual_seed(5);
  std::vector<at::Tensor> inputs = make_inputs(compiled);
  std::vector<thunderc::HostTensor> host_in;
  for (const at::Tensor& x : inputs) host_in.push_back(as_host(x));
  auto [outs, ctx] = compiled.forward_train(host_in);
  std::vector<at::Tensor> grad_outputs;
  std::vector<thunderc::HostTensor> host_gy;
  for (const thunderc::HostTensor& o : outs) {
    grad_outputs.push_back(at::randn(std::vector<std::int64_t>(o.shape().begin(), o.shape().end())));
    host_gy.push_back(as_host(grad_outputs.back()));
  }
  std::vector<thunderc::HostTensor> grads = compiled.backward(ctx, host_gy);

  Reference ref = torch_gradients(sample(model + ".pt"), inputs, compiled.input_names(), requires_grad, grad_outputs);
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
  CHECK(names.size() >= compiled.num_parameters());
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
