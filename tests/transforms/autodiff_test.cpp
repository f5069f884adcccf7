// Gradient parity of every VJP rule (core/ops/vjp.h) with LibTorch autograd. Each case is a small trace of one
// operator (or a few); autodiff builds its forward and backward programs (core/transforms/autodiff.h), which go
// through the default passes, are claimed by the native executors alone (cpp, blas: no torch fallback) and are
// compiled into two .so files run through libthunderc_runtime. LibTorch computes the same function on the same
// float64 inputs and torch::autograd::grad gives the reference gradients for the same output gradients.
// Tolerance: |ours - torch| <= 1e-9 + 1e-9 * |torch| (float64 throughout; only summation order differs).
// Inputs include exact ties and kinks (relu at 0, max of equal values, clamp at its bounds), where PyTorch's
// conventions (threshold_backward, halved ties) must hold.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/compile_trace.h"
#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core/ops/vjp.h"
#include "core/transforms/autodiff.h"
#include "core/transforms/pipeline.h"
#include "thunderc/runtime.hpp"

namespace {

using namespace thunderc;
namespace fs = std::filesystem;

enum class Fill { Normal, Positive, Coarse, Bool, Index };  // Coarse: values in {-1, -0.5, 0, 0.5, 1} (ties, kinks)

struct In {
  Shape shape;
  Fill fill = Fill::Normal;
  std::int64_t index_range = 10;  // Fill::Index: values in [0, index_range)
};

using Build = std::function<std::vector<ValueId>(Trace&, const std::vector<ValueId>&)>;
using Ref = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

Operand T(ValueId v) { return Operand::tensor(v); }
Operand N(double x) { return Operand::number(x); }

DType dtype_of_fill(Fill f) { return f == Fill::Bool ? DType::Bool : f == Fill::Index ? DType::Int64 : DType::Float64; }
bool differentiable(Fill f) { return f != Fill::Bool && f != Fill::Index; }

at::Tensor make_input(const In& in, std::mt19937& gen) {
  std::vector<std::int64_t> shape(in.shape.begin(), in.shape.end());
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> coarse(-2, 2);
  std::uniform_int_distribution<std::int64_t> index(0, in.index_range - 1);
  if (in.fill == Fill::Index) {
    std::vector<std::int64_t> v(n);
    for (auto& x : v) x = index(gen);
    return torch::tensor(v, torch::kInt64).reshape(shape);
  }
  std::vector<double> v(n);
  for (auto& x : v) {
    if (in.fill == Fill::Coarse) x = 0.5 * coarse(gen);
    else if (in.fill == Fill::Positive) x = std::abs(normal(gen)) + 0.2;
    else x = normal(gen);
  }
  at::Tensor t = torch::tensor(v, torch::kFloat64).reshape(shape);
  return in.fill == Fill::Bool ? t.gt(0) : t;
}

HostTensor to_host(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  DLDataType dt = c.scalar_type() == at::kBool ? DLDataType{THUNDERC_DL_BOOL, 8, 1}
                  : c.scalar_type() == at::kLong ? DLDataType{kDLInt, 64, 1}
                                                 : DLDataType{kDLFloat, 64, 1};
  HostTensor h(dt, std::vector<int64_t>(c.sizes().begin(), c.sizes().end()));
  std::memcpy(h.raw(), c.data_ptr(), c.nbytes());
  return h;
}

at::Tensor from_host(const HostTensor& h) {
  std::vector<std::int64_t> shape(h.shape().begin(), h.shape().end());
  return torch::from_blob(const_cast<void*>(h.raw()), shape, torch::kFloat64).clone();
}

// The default passes, claimed by cpp and blas only.
Trace prepared(Trace t) {
  ExecutorSelection sel = resolve_executors({"cpp", "blas"}, DeviceKind::CPU, /*standalone=*/true);
  TransformContext ctx{Device::cpu(), sel.executors, {}};
  return run_passes(std::move(t), plan_passes(default_transforms()), ctx, sel);
}

std::string compiled(const Trace& t, const std::string& name) {
  std::vector<std::string> executors = {"cpp", "blas"};
  return thunderc_test::compile_trace(t, executors, name, fs::path(THUNDERC_TEST_TMP) / "autodiff");
}

void check_close(const at::Tensor& ours, const at::Tensor& ref, const std::string& what) {
  REQUIRE_MESSAGE(ours.sizes() == ref.sizes(), what, ": shape ", ours.sizes(), " vs ", ref.sizes());
  at::Tensor err = (ours - ref).abs() - (1e-9 + 1e-9 * ref.abs());
  const double worst = err.numel() ? err.max().item<double>() : -1;
  CHECK_MESSAGE(worst <= 0, what, ": off by ", worst, " beyond tolerance\nours:\n", ours, "\ntorch:\n", ref);
}

// Builds the case's trace, differentiates it with respect to every floating input, runs forward and backward
// and compares outputs and gradients with LibTorch's.
void check_gradients(const std::string& name, const std::vector<In>& inputs, const Build& build, const Ref& ref,
                     unsigned seed = 1) {
  CAPTURE(name);
  std::mt19937 gen(seed);
  std::vector<at::Tensor> xs;
  for (const In& in : inputs) xs.push_back(make_input(in, gen));

  Trace t;
  std::vector<ValueId> ins;
  std::vector<std::string> names, wanted;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    names.push_back("x" + std::to_string(k));
    ins.push_back(t.add_input(names.back(), TensorType{dtype_of_fill(inputs[k].fill), inputs[k].shape, Device::cpu()}));
    if (differentiable(inputs[k].fill)) wanted.push_back(names.back());
  }
  t.set_outputs(build(t, ins));
  verify_trace(t, "test");
  TrainingTraces tt = build_training_traces(t, {}, names, wanted);
  const Trace fw = prepared(tt.forward), bw = prepared(tt.backward);

  // Reference: LibTorch autograd on the same inputs.
  std::vector<at::Tensor> leaves;
  std::vector<at::Tensor> torch_in;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    at::Tensor x = xs[k].clone();
    if (differentiable(inputs[k].fill)) {
      x.set_requires_grad(true);
      leaves.push_back(x);
    }
    torch_in.push_back(x);
  }
  std::vector<at::Tensor> ys = ref(torch_in);
  REQUIRE(ys.size() == tt.num_outputs);
  std::vector<at::Tensor> gys;
  for (const at::Tensor& y : ys) gys.push_back(make_input(In{Shape(y.sizes().begin(), y.sizes().end())}, gen));
  std::vector<at::Tensor> ref_grads =
      torch::autograd::grad(ys, leaves, gys, /*retain_graph=*/true, /*create_graph=*/false, /*allow_unused=*/true);

  // Ours.
  Model forward(compiled(fw, "fw_" + name));
  std::vector<HostTensor> host_in;
  for (const at::Tensor& x : xs) host_in.push_back(to_host(x));
  std::vector<HostTensor> outs = forward.run(host_in);
  REQUIRE(outs.size() == tt.num_outputs + tt.saved.size());
  for (std::size_t j = 0; j < ys.size(); ++j) check_close(from_host(outs[j]), ys[j].detach(), name + " output " + std::to_string(j));
  std::vector<HostTensor> back_in;
  for (std::size_t j = tt.num_outputs; j < outs.size(); ++j) back_in.push_back(std::move(outs[j]));
  for (const at::Tensor& g : gys) back_in.push_back(to_host(g));
  Model backward(compiled(bw, "bw_" + name));
  std::vector<HostTensor> grads = backward.run(back_in);
  REQUIRE(grads.size() == leaves.size());
  for (std::size_t k = 0; k < grads.size(); ++k) {
    at::Tensor expect = ref_grads[k].defined() ? ref_grads[k] : torch::zeros_like(leaves[k]);
    check_close(from_host(grads[k]), expect, name + " gradient of " + wanted[k]);
  }
}

// One operator applied to the inputs.
Build one(const std::string& opname, Attrs attrs = {}, std::vector<Operand> extra = {}) {
  return [=](Trace& t, const std::vector<ValueId>& in) {
    std::vector<Operand> ops;
    for (ValueId v : in) ops.push_back(T(v));
    ops.insert(ops.end(), extra.begin(), extra.end());
    return std::vector<ValueId>{t.emit1(op(opname), ops, attrs)};
  };
}
Ref torch1(std::function<at::Tensor(const std::vector<at::Tensor>&)> f) {
  return [f](const std::vector<at::Tensor>& x) { return std::vector<at::Tensor>{f(x)}; };
}

}  // namespace

TEST_CASE("autodiff: unary elementwise rules match LibTorch autograd (float64, 1e-9)") {
  struct U {
    const char* op;
    Fill fill;
    std::function<at::Tensor(const at::Tensor&)> f;
    Attrs attrs;
  };
  const std::vector<U> cases = {
      {"relu", Fill::Coarse, [](const at::Tensor& x) { return at::relu(x); }, {}},
      {"neg", Fill::Normal, [](const at::Tensor& x) { return -x; }, {}},
      {"abs", Fill::Normal, [](const at::Tensor& x) { return x.abs(); }, {}},
      {"exp", Fill::Normal, [](const at::Tensor& x) { return x.exp(); }, {}},
      {"expm1", Fill::Normal, [](const at::Tensor& x) { return x.expm1(); }, {}},
      {"log", Fill::Positive, [](const at::Tensor& x) { return x.log(); }, {}},
      {"log1p", Fill::Positive, [](const at::Tensor& x) { return x.log1p(); }, {}},
      {"log2", Fill::Positive, [](const at::Tensor& x) { return x.log2(); }, {}},
      {"log10", Fill::Positive, [](const at::Tensor& x) { return x.log10(); }, {}},
      {"sqrt", Fill::Positive, [](const at::Tensor& x) { return x.sqrt(); }, {}},
      {"rsqrt", Fill::Positive, [](const at::Tensor& x) { return x.rsqrt(); }, {}},
      {"reciprocal", Fill::Positive, [](const at::Tensor& x) { return x.reciprocal(); }, {}},
      {"sin", Fill::Normal, [](const at::Tensor& x) { return x.sin(); }, {}},
      {"cos", Fill::Normal, [](const at::Tensor& x) { return x.cos(); }, {}},
      {"tanh", Fill::Normal, [](const at::Tensor& x) { return x.tanh(); }, {}},
      {"sigmoid", Fill::Normal, [](const at::Tensor& x) { return x.sigmoid(); }, {}},
      {"erf", Fill::Normal, [](const at::Tensor& x) { return x.erf(); }, {}},
      {"silu", Fill::Normal, [](const at::Tensor& x) { return at::silu(x); }, {}},
      {"gelu", Fill::Normal, [](const at::Tensor& x) { return at::gelu(x); }, {{"approximate", std::string("none")}}},
      {"gelu", Fill::Normal, [](const at::Tensor& x) { return at::gelu(x, "tanh"); }, {{"approximate", std::string("tanh")}}},
      {"leaky_relu", Fill::Coarse, [](const at::Tensor& x) { return at::leaky_relu(x, 0.1); }, {{"negative_slope", 0.1}}},
      {"hardtanh", Fill::Coarse, [](const at::Tensor& x) { return at::hardtanh(x, -0.5, 0.5); },
       {{"min_val", -0.5}, {"max_val", 0.5}}},
      {"clamp", Fill::Coarse, [](const at::Tensor& x) { return x.clamp(-0.5, 0.5); }, {{"min", -0.5}, {"max", 0.5}}},
      {"hardsigmoid", Fill::Normal, [](const at::Tensor& x) { return at::hardsigmoid(x * 3); }, {}},
      {"hardswish", Fill::Normal, [](const at::Tensor& x) { return at::hardswish(x * 3); }, {}},
      {"floor", Fill::Normal, [](const at::Tensor& x) { return x.floor(); }, {}},
  };
  for (const U& c : cases) {
    const bool scaled = std::string(c.op) == "hardsigmoid" || std::string(c.op) == "hardswish";
    Build b = [&](Trace& t, const std::vector<ValueId>& in) {
      ValueId x = scaled ? t.emit1(op("mul"), {T(in[0]), N(3)}, {}) : in[0];
      return std::vector<ValueId>{t.emit1(op(c.op), {T(x)}, c.attrs)};
    };
    check_gradients(std::string(c.op) + (c.attrs.has("approximate") ? "_" + c.attrs.get_string("approximate") : ""),
                    {{{3, 5}, c.fill}}, b, torch1([&](const std::vector<at::Tensor>& x) { return c.f(x[0]); }));
  }
}

TEST_CASE("autodiff: binary rules reduce over broadcast dimensions and follow PyTorch at ties") {
  const std::vector<In> bcast = {{{2, 3, 4}}, {{3, 1}}};
  check_gradients("add", bcast, one("add"), torch1([](auto& x) { return x[0] + x[1]; }));
  check_gradients("sub", bcast, one("sub"), torch1([](auto& x) { return x[0] - x[1]; }));
  check_gradients("mul", bcast, one("mul"), torch1([](auto& x) { return x[0] * x[1]; }));
  check_gradients("div", {{{2, 3, 4}}, {{4}, Fill::Positive}}, one("div"), torch1([](auto& x) { return x[0] / x[1]; }));
  check_gradients("mul_scalar", {{{3, 4}}}, one("mul", {}, {N(2.5)}), torch1([](auto& x) { return x[0] * 2.5; }));
  check_gradients("rsub_scalar", {{{3, 4}}}, [](Trace& t, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{t.emit1(op("sub"), {N(1.5), T(in[0])}, {})};
  }, torch1([](auto& x) { return 1.5 - x[0]; }));
  check_gradients("pow", {{{3, 4}, Fill::Positive}, {{3, 4}}}, one("pow"), torch1([](auto& x) { return x[0].pow(x[1]); }));
  check_gradients("pow_scalar", {{{3, 4}}}, one("pow", {}, {N(3)}), torch1([](auto& x) { return x[0].pow(3); }));
  check_gradients("maximum", {{{4, 5}, Fill::Coarse}, {{5}, Fill::Coarse}}, one("maximum"),
                  torch1([](auto& x) { return at::maximum(x[0], x[1]); }));
  check_gradients("minimum", {{{4, 5}, Fill::Coarse}, {{4, 5}, Fill::Coarse}}, one("minimum"),
                  torch1([](auto& x) { return at::minimum(x[0], x[1]); }));
  check_gradients("where", {{{3, 4}, Fill::Bool}, {{3, 4}}, {{4}}}, one("where"),
                  torch1([](auto& x) { return at::where(x[0], x[1], x[2]); }));
  check_gradients("masked_fill", {{{3, 4}}, {{3, 4}, Fill::Bool}}, one("masked_fill", {}, {N(-2)}),
                  torch1([](auto& x) { return x[0].masked_fill(x[1], -2.0); }));
  check_gradients("to_dtype", {{{3, 4}}}, [](Trace& t, const std::vector<ValueId>& in) {
    ValueId f = t.emit1(op("to_dtype"), {T(in[0])}, {{"dtype", DType::Float32}});
    return std::vector<ValueId>{t.emit1(op("to_dtype"), {T(t.emit1(op("mul"), {T(f), T(f)}, {}))}, {{"dtype", DType::Float64}})};
  }, torch1([](auto& x) { at::Tensor f = x[0].to(at::kFloat); return (f * f).to(at::kDouble); }));
  // A value used twice accumulates both contributions.
  check_gradients("mul_self", {{{3, 4}}}, [](Trace& t, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{t.emit1(op("mul"), {T(in[0]), T(in[0])}, {})};
  }, torch1([](auto& x) { return x[0] * x[0]; }));
}

TEST_CASE("autodiff: reductions and normalizations") {
  const In x{{3, 4, 5}};
  check_gradients("sum_dims", {x}, one("sum", {{"dims", IntList{0, 2}}, {"keepdim", false}}),
                  torch1([](auto& v) { return v[0].sum(at::IntArrayRef{0, 2}); }));
  check_gradients("sum_all", {x}, one("sum"), torch1([](auto& v) { return v[0].sum(); }));
  check_gradients("mean_keepdim", {x}, one("mean", {{"dims", IntList{1}}, {"keepdim", true}}),
                  torch1([](auto& v) { return v[0].mean(at::IntArrayRef{1}, true); }));
  check_gradients("amax_ties", {{{3, 4, 5}, Fill::Coarse}}, one("amax", {{"dims", IntList{2}}, {"keepdim", false}}),
                  torch1([](auto& v) { return v[0].amax({2}); }));
  check_gradients("amin_ties", {{{3, 4, 5}, Fill::Coarse}}, one("amin", {{"dims", IntList{0}}, {"keepdim", true}}),
                  torch1([](auto& v) { return v[0].amin({0}, true); }));
  check_gradients("softmax", {x}, one("softmax", {{"dim", std::int64_t{1}}}),
                  torch1([](auto& v) { return v[0].softmax(1); }));
  check_gradients("log_softmax", {x}, one("log_softmax", {{"dim", std::int64_t{2}}}),
                  torch1([](auto& v) { return v[0].log_softmax(2); }));
  check_gradients("layer_norm", {x, {{4, 5}}, {{4, 5}}}, one("layer_norm", {{"normalized_shape", IntList{4, 5}}, {"eps", 1e-5}}),
                  torch1([](auto& v) { return at::layer_norm(v[0], {4, 5}, v[1], v[2], 1e-5); }));
  check_gradients("layer_norm_no_affine", {x}, [](Trace& t, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{t.emit1(op("layer_norm"), {T(in[0]), Operand::none(), Operand::none()},
                                        {{"normalized_shape", IntList{5}}, {"eps", 1e-5}})};
  }, torch1([](auto& v) { return at::layer_norm(v[0], {5}); }));
}

TEST_CASE("autodiff: data movement") {
  const In x{{2, 3, 4}};
  check_gradients("reshape", {x}, one("reshape", {{"shape", IntList{6, 4}}}), torch1([](auto& v) { return v[0].reshape({6, 4}) * 1.0; }));
  check_gradients("permute", {x}, one("permute", {{"dims", IntList{2, 0, 1}}}), torch1([](auto& v) { return v[0].permute({2, 0, 1}); }));
  check_gradients("expand", {{{3, 1}}}, one("expand", {{"shape", IntList{2, 3, 4}}}), torch1([](auto& v) { return v[0].expand({2, 3, 4}); }));
  check_gradients("slice", {x}, one("slice", {{"dim", std::int64_t{2}}, {"start", std::int64_t{1}}, {"end", std::int64_t{3}}}),
                  torch1([](auto& v) { return v[0].slice(2, 1, 3); }));
  check_gradients("select", {x}, one("select", {{"dim", std::int64_t{1}}, {"index", std::int64_t{2}}}),
                  torch1([](auto& v) { return v[0].select(1, 2); }));
  check_gradients("cat", {{{2, 3}}, {{2, 5}}}, one("cat", {{"dim", std::int64_t{1}}}),
                  torch1([](auto& v) { return at::cat({v[0], v[1]}, 1); }));
  check_gradients("flip", {x}, one("flip", {{"dims", IntList{0, 2}}}), torch1([](auto& v) { return v[0].flip({0, 2}); }));
}

TEST_CASE("autodiff: matrix products and embedding") {
  check_gradients("linear", {{{2, 3, 4}}, {{5, 4}}, {{5}}}, one("linear"),
                  torch1([](auto& v) { return at::linear(v[0], v[1], v[2]); }));
  check_gradients("linear_no_bias", {{{3, 4}}, {{5, 4}}}, [](Trace& t, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{t.emit1(op("linear"), {T(in[0]), T(in[1]), Operand::none()}, {})};
  }, torch1([](auto& v) { return at::linear(v[0], v[1]); }));
  check_gradients("matmul_batched_broadcast", {{{2, 3, 4}}, {{4, 5}}}, one("matmul"),
                  torch1([](auto& v) { return at::matmul(v[0], v[1]); }));
  check_gradients("matmul_batch_both", {{{2, 1, 3, 4}}, {{3, 4, 2}}}, one("matmul"),
                  torch1([](auto& v) { return at::matmul(v[0], v[1]); }));
  check_gradients("matmul_vec_mat", {{{4}}, {{4, 5}}}, one("matmul"), torch1([](auto& v) { return at::matmul(v[0], v[1]); }));
  check_gradients("matmul_mat_vec", {{{2, 3, 4}}, {{4}}}, one("matmul"), torch1([](auto& v) { return at::matmul(v[0], v[1]); }));
  check_gradients("matmul_dot", {{{4}}, {{4}}}, one("matmul"), torch1([](auto& v) { return at::matmul(v[0], v[1]); }));
  check_gradients("bmm", {{{2, 3, 4}}, {{2, 4, 5}}}, one("bmm"), torch1([](auto& v) { return at::bmm(v[0], v[1]); }));
  check_gradients("addmm", {{{5}}, {{3, 4}}, {{4, 5}}}, one("addmm", {{"beta", 0.5}, {"alpha", 2.0}}),
                  torch1([](auto& v) { return at::addmm(v[0], v[1], v[2], 0.5, 2.0); }));
  // Repeated indices accumulate into one row.
  check_gradients("embedding", {{{10, 4}}, {{2, 6}, Fill::Index, 4}}, one("embedding"),
                  torch1([](auto& v) { return at::embedding(v[0], v[1]); }));
  // padding_idx rows get no gradient; scale_grad_by_freq divides by each index's count in the batch.
  check_gradients("embedding_padding_idx", {{{10, 4}}, {{3, 6}, Fill::Index, 4}}, one("embedding", {{"padding_idx", std::int64_t{2}}}),
                  torch1([](auto& v) { return at::embedding(v[0], v[1], 2); }));
  check_gradients("embedding_scale_grad_by_freq", {{{10, 4}}, {{3, 6}, Fill::Index, 4}},
                  one("embedding", {{"scale_grad_by_freq", true}}),
                  torch1([](auto& v) { return at::embedding(v[0], v[1], -1, true); }));
  check_gradients("embedding_padding_and_scale", {{{10, 4}}, {{3, 6}, Fill::Index, 4}},
                  one("embedding", {{"padding_idx", std::int64_t{0}}, {"scale_grad_by_freq", true}}),
                  torch1([](auto& v) { return at::embedding(v[0], v[1], 0, true); }));
}

TEST_CASE("autodiff: a composite trace, parameters, and what needs no gradient") {
  // x -> linear(W, b) -> layer_norm -> gelu -> sum: W and b are parameters (constants named like a state_dict),
  // x requires grad, and an integer output and an unused parameter get no gradient path.
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Float64, {3, 4}, Device::cpu()});
  auto constant = [&](const std::string& name, Shape s, double base) {
    auto data = std::make_shared<ConstantData>();
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    data->bytes.resize(n * 8);
    for (std::int64_t i = 0; i < n; ++i) {
      double v = std::sin(base + 0.37 * static_cast<double>(i));
      std::memcpy(data->bytes.data() + 8 * i, &v, 8);
    }
    return t.add_constant(name, TensorType{DType::Float64, s, Device::cpu()}, data);
  };
  ValueId w = constant("fc.weight", {5, 4}, 0.1), b = constant("fc.bias", {5}, 0.7);
  ValueId unused = constant("other.weight", {2}, 0.3);
  (void)unused;
  ValueId h = t.emit1(op("linear"), {T(x), T(w), T(b)}, {});
  ValueId n = t.emit1(op("layer_norm"), {T(h), Operand::none(), Operand::none()}, {{"normalized_shape", IntList{5}}, {"eps", 1e-5}});
  ValueId y = t.emit1(op("gelu"), {T(n)}, {});
  ValueId idx = t.emit1(op("argmax"), {T(y)}, {{"dim", std::int64_t{1}}, {"keepdim", false}});
  t.set_outputs({y, idx});
  TrainingTraces tt = build_training_traces(t, {"fc.weight", "fc.bias", "other.weight", "not.in.trace"}, {"x"}, {"x"});
  REQUIRE(tt.parameters.size() == 3);  // in the order given; absent names are skipped
  CHECK(tt.parameters[0].name == "fc.weight");
  CHECK(tt.parameters[2].name == "other.weight");
  REQUIRE(tt.gradients.size() == 4);
  CHECK((tt.gradients[0].name == "x" && !tt.gradients[0].parameter));
  CHECK((tt.gradients[3].name == "other.weight" && tt.gradients[3].parameter));
  CHECK(tt.num_outputs == 2);
  // forward(x, fc.weight, fc.bias, other.weight) -> (y, idx, saved...); backward(params, saved, grad_y, grad_idx)
  CHECK(tt.forward.inputs().size() == 4);
  CHECK(tt.backward.inputs().size() == 3 + tt.saved.size() + 2);
  CHECK(tt.backward.outputs().size() == 4);
  verify_trace(tt.forward, "test");
  verify_trace(tt.backward, "test");

  const Trace fw = prepared(tt.forward), bw = prepared(tt.backward);
  at::Tensor xt = torch::randn({3, 4}, torch::kFloat64);
  auto tensor_of = [&](ValueId c) {
    const Value& v = t.value(c);
    return torch::from_blob(const_cast<unsigned char*>(v.data->bytes.data()),
                            std::vector<std::int64_t>(v.type.shape.begin(), v.type.shape.end()), torch::kFloat64).clone();
  };
  at::Tensor wt = tensor_of(w).set_requires_grad(true), bt = tensor_of(b).set_requires_grad(true);
  at::Tensor xr = xt.clone().set_requires_grad(true);
  at::Tensor yr = at::gelu(at::layer_norm(at::linear(xr, wt, bt), {5}));
  at::Tensor gy = torch::randn({3, 5}, torch::kFloat64);
  auto ref = torch::autograd::grad({yr}, {xr, wt, bt}, {gy});

  Model forward(compiled(fw, "fw_composite"));
  std::vector<HostTensor> outs = forward.run({to_host(xt), to_host(tensor_of(w)), to_host(tensor_of(b)), to_host(tensor_of(unused))});
  check_close(from_host(outs[0]), yr.detach(), "y");
  std::vector<HostTensor> back_in;
  back_in.push_back(to_host(tensor_of(w)));
  back_in.push_back(to_host(tensor_of(b)));
  back_in.push_back(to_host(tensor_of(unused)));
  for (std::size_t j = 2; j < outs.size(); ++j) back_in.push_back(std::move(outs[j]));
  back_in.push_back(to_host(gy));
  back_in.push_back(to_host(torch::zeros({3}, torch::kInt64)));
  Model backward(compiled(bw, "bw_composite"));
  std::vector<HostTensor> grads = backward.run(back_in);
  check_close(from_host(grads[0]), ref[0], "grad x");
  check_close(from_host(grads[1]), ref[1], "grad fc.weight");
  check_close(from_host(grads[2]), ref[2], "grad fc.bias");
  check_close(from_host(grads[3]), torch::zeros({2}, torch::kFloat64), "grad other.weight (unused: zeros)");
}

TEST_CASE("autodiff: user errors name what is wrong") {
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Float32, {4, 6}, Device::cpu()});
  ValueId i = t.add_input("i", TensorType{DType::Int64, {4}, Device::cpu()});
  ValueId s = t.emit1(op("cumsum"), {T(x)}, {{"dim", std::int64_t{1}}});
  ValueId p = t.emit1(op("prod"), {T(s)}, {{"dim", std::int64_t{1}}});
  t.set_outputs({p, i});
  CHECK_THROWS_WITH_AS(build_training_traces(t, {}, {"x", "i"}, {"y"}),
                       doctest::Contains("--requires-grad y: the model has no input of that name (its inputs: x, i)"),
                       UserError);
  CHECK_THROWS_WITH_AS(build_training_traces(t, {}, {"x", "i"}, {"i"}),
                       doctest::Contains("--requires-grad i: the input is int64; only floating-point tensors have gradients"),
                       UserError);
  // Every operator without a rule is listed at once.
  CHECK_THROWS_WITH_AS(build_training_traces(t, {}, {"x", "i"}, {"x"}),
                       doctest::Contains("no gradient rule for cumsum, prod"), UserError);
}

TEST_CASE("autodiff: the rules' coverage is what docs/training.md lists") {
  std::vector<std::string> with_rule;
  for (const OpDef* d : op_registry().all())
    if (d->vjp) with_rule.push_back(d->name);
  const std::vector<std::string> expected = {
      "abs", "adaptive_avg_pool2d", "add", "addmm", "amax", "amin", "avg_pool2d", "batch_norm", "bmm", "cat", "ceil",
      "clamp", "col2im", "conv2d", "cos", "div", "embedding", "erf", "exp", "expand", "expm1", "flip", "floor", "gelu",
      "hardsigmoid", "hardswish", "hardtanh", "im2col", "layer_norm", "leaky_relu", "linear", "log", "log10", "log1p", "log2",
      "log_softmax", "masked_fill", "matmul", "max_pool2d", "maximum", "mean", "minimum", "mul", "neg", "permute",
      "pow", "reciprocal", "relu", "reshape", "round", "rsqrt", "select", "sigmoid", "sign", "silu", "sin", "slice",
      "softmax", "sqrt", "sub", "sum", "tanh", "to_dtype", "trunc", "where"};
  CHECK(with_rule == expected);
}

TEST_CASE("autodiff: convolution, pooling and batch norm") {
  auto conv = [](IntList stride, IntList padding, IntList dilation, std::int64_t groups, bool bias) {
    Attrs a{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
    Build build = [=](Trace& t, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{
          t.emit1(op("conv2d"), {T(in[0]), T(in[1]), bias ? T(in[2]) : Operand::none()}, a)};
    };
    Ref ref = torch1([=](auto& v) {
      return at::conv2d(v[0], v[1], bias ? v[2] : at::Tensor(), stride, padding, dilation, groups);
    });
    return std::make_pair(build, ref);
  };
  struct ConvCase {
    const char* name;
    Shape x, w;
    IntList stride, padding, dilation;
    std::int64_t groups;
    bool bias;
  };
  // Odd sizes: (H + 2p - d(k - 1) - 1) % stride != 0 leaves input rows no window reaches.
  const std::vector<ConvCase> convs = {
      {"conv2d", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"conv2d_no_bias_pad", {2, 3, 6, 5}, {4, 3, 3, 2}, {1, 1}, {1, 2}, {1, 1}, 1, false},
      {"conv2d_stride2_odd", {2, 3, 8, 9}, {4, 3, 3, 2}, {2, 2}, {1, 1}, {1, 1}, 1, false},
      {"conv2d_stride3_wide_pad", {1, 2, 10, 9}, {3, 2, 2, 2}, {3, 2}, {2, 1}, {1, 1}, 1, true},  // padding > kernel - 1
      {"conv2d_dilation2", {1, 2, 9, 10}, {3, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, true},
      {"conv2d_dilation_stride", {2, 2, 11, 10}, {3, 2, 3, 2}, {2, 3}, {1, 0}, {2, 3}, 1, false},
      {"conv2d_groups2", {2, 4, 7, 7}, {6, 2, 3, 3}, {2, 1}, {1, 0}, {1, 1}, 2, true},
      {"conv2d_depthwise", {2, 4, 8, 7}, {4, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, true},
      {"conv2d_depthwise_multiplier", {1, 3, 6, 6}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3, false},
      {"conv2d_pointwise_stride2", {2, 3, 7, 7}, {5, 3, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true},
      {"conv2d_unbatched", {3, 7, 6}, {4, 3, 3, 3}, {2, 1}, {1, 1}, {1, 1}, 1, true},
  };
  for (const ConvCase& c : convs) {
    auto [build, ref] = conv(c.stride, c.padding, c.dilation, c.groups, c.bias);
    std::vector<In> in = {{c.x}, {c.w}};
    if (c.bias) in.push_back({{c.w[0]}});
    check_gradients(c.name, in, build, ref);
  }

  // im2col and col2im (conv2d's rule is built on them): each other's adjoint.
  {
    const Attrs w{{"kernel_size", IntList{3, 2}}, {"dilation", IntList{1, 2}}, {"padding", IntList{1, 0}}, {"stride", IntList{2, 1}}};
    check_gradients("im2col", {{{2, 3, 7, 6}}}, one("im2col", w),
                    torch1([](auto& v) { return at::im2col(v[0], {3, 2}, {1, 2}, {1, 0}, {2, 1}); }));
    Attrs f = w;
    f.set("output_size", IntList{7, 6});
    check_gradients("col2im", {{{2, 18, 16}}}, one("col2im", f),
                    torch1([](auto& v) { return at::col2im(v[0], {7, 6}, {3, 2}, {1, 2}, {1, 0}, {2, 1}); }));
  }

  // max_pool2d: ties everywhere (Fill::Coarse); the gradient goes to ATen's index, summed where windows overlap.
  auto max_pool = [](IntList k, IntList s, IntList p, IntList d, bool ceil) {
    Attrs a{{"kernel_size", k}, {"stride", s}, {"padding", p}, {"dilation", d}, {"ceil_mode", ceil}};
    Ref ref = torch1([=](auto& v) { return at::max_pool2d(v[0], k, s, p, d, ceil); });
    return std::make_pair(one("max_pool2d", a), ref);
  };
  struct PoolCase {
    const char* name;
    Shape x;
    IntList k, s, p, d;
    bool ceil;
  };
  for (const PoolCase& c : std::vector<PoolCase>{
           {"max_pool2d_overlap", {2, 3, 9, 8}, {3}, {2}, {1}, {1}, false},
           {"max_pool2d_2x2", {2, 2, 8, 6}, {2}, {}, {0}, {1}, false},
           {"max_pool2d_ceil", {1, 2, 7, 8}, {2}, {2}, {0}, {1}, true},
           {"max_pool2d_ceil_pad", {1, 2, 8, 7}, {3, 2}, {2, 2}, {1, 1}, {1}, true},
           {"max_pool2d_dilation", {1, 2, 9, 9}, {2, 3}, {1, 2}, {0, 1}, {2, 2}, false},
           {"max_pool2d_unbatched", {3, 7, 7}, {3}, {1}, {1}, {1}, false},
       }) {
    auto [build, ref] = max_pool(c.k, c.s, c.p, c.d, c.ceil);
    check_gradients(c.name, {{c.x, Fill::Coarse}}, build, ref);
  }
  // Normal inputs too: distinct values, a single maximum per window.
  {
    auto [build, ref] = max_pool({3}, {2}, {1}, {1}, false);
    check_gradients("max_pool2d_overlap_normal", {{{2, 3, 9, 8}}}, build, ref);
  }

  struct AvgCase {
    const char* name;
    Shape x;
    IntList k, s, p;
    bool ceil, include_pad;
    std::optional<std::int64_t> divisor;
  };
  for (const AvgCase& c : std::vector<AvgCase>{
           {"avg_pool2d_2x2", {2, 3, 8, 6}, {2}, {}, {0}, false, true, std::nullopt},  // tiles: an expand
           {"avg_pool2d_overlap_pad", {2, 3, 9, 8}, {3}, {2}, {1}, false, true, std::nullopt},
           {"avg_pool2d_exclude_pad", {2, 3, 9, 8}, {3}, {2}, {1}, false, false, std::nullopt},
           {"avg_pool2d_ceil", {1, 2, 7, 6}, {3, 2}, {2, 2}, {1, 0}, true, true, std::nullopt},
           {"avg_pool2d_ceil_exclude_pad", {1, 2, 7, 6}, {3}, {2}, {1}, true, false, std::nullopt},
           {"avg_pool2d_divisor", {1, 2, 7, 7}, {3}, {2}, {1}, false, true, std::int64_t{5}},
           {"avg_pool2d_unbatched", {3, 7, 5}, {2}, {1}, {1}, false, true, std::nullopt},
       }) {
    Attrs a{{"kernel_size", c.k}, {"stride", c.s}, {"padding", c.p}, {"ceil_mode", c.ceil},
            {"count_include_pad", c.include_pad}};
    if (c.divisor) a.set("divisor_override", *c.divisor);
    const AvgCase cc = c;
    check_gradients(c.name, {{c.x}}, one("avg_pool2d", a), torch1([cc](auto& v) {
                      return at::avg_pool2d(v[0], cc.k, cc.s, cc.p, cc.ceil, cc.include_pad,
                                            cc.divisor ? c10::optional<std::int64_t>(*cc.divisor) : c10::nullopt);
                    }));
  }

  for (auto [name, x, size] : std::vector<std::tuple<const char*, Shape, IntList>>{
           {"adaptive_avg_pool2d_1x1", {2, 3, 5, 7}, {1, 1}},
           {"adaptive_avg_pool2d_divisible", {1, 2, 4, 6}, {2, 3}},
           {"adaptive_avg_pool2d_uneven", {2, 3, 7, 9}, {3, 4}},   // overlapping windows of two sizes
           {"adaptive_avg_pool2d_larger", {1, 2, 3, 3}, {5, 4}},   // more outputs than inputs
           {"adaptive_avg_pool2d_unbatched", {3, 5, 6}, {2, 4}},
       }) {
    const IntList o = size;
    check_gradients(name, {{x}}, one("adaptive_avg_pool2d", {{"output_size", o}}),
                    torch1([o](auto& v) { return at::adaptive_avg_pool2d(v[0], o); }));
  }

  // batch_norm with running statistics: constants (ATen's batch_norm refuses running stats that require grad).
  auto constant = [](Trace& t, const at::Tensor& v) {
    auto data = std::make_shared<ConstantData>();
    at::Tensor c = v.contiguous();
    data->bytes.resize(c.nbytes());
    std::memcpy(data->bytes.data(), c.data_ptr(), c.nbytes());
    return t.add_constant("stat", TensorType{DType::Float64, Shape(c.sizes().begin(), c.sizes().end()), Device::cpu()}, data);
  };
  std::mt19937 gen(7);
  for (bool affine : {true, false}) {
    const at::Tensor mean = make_input({{4}}, gen), var = make_input({{4}, Fill::Positive}, gen);
    Build build = [&](Trace& t, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{t.emit1(op("batch_norm"),
                                          {T(in[0]), affine ? T(in[1]) : Operand::none(), affine ? T(in[2]) : Operand::none(),
                                           T(constant(t, mean)), T(constant(t, var))},
                                          {{"eps", 1e-3}})};
    };
    std::vector<In> in = {{{3, 4, 5, 2}}};
    if (affine) in.insert(in.end(), {In{{4}}, In{{4}}});
    check_gradients(affine ? "batch_norm" : "batch_norm_no_affine", in, build, torch1([&](auto& v) {
                      return at::batch_norm(v[0], affine ? v[1] : at::Tensor(), affine ? v[2] : at::Tensor(), mean, var,
                                            false, 0.1, 1e-3, false);
                    }));
  }
  // A 2-D input (BatchNorm1d): dim 1 is the channel.
  {
    const at::Tensor mean = make_input({{5}}, gen), var = make_input({{5}, Fill::Positive}, gen);
    Build build = [&](Trace& t, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{t.emit1(op("batch_norm"), {T(in[0]), T(in[1]), T(in[2]), T(constant(t, mean)), T(constant(t, var))},
                                          {{"eps", 1e-5}})};
    };
    check_gradients("batch_norm_2d", {{{6, 5}}, {{5}}, {{5}}}, build, torch1([&](auto& v) {
                      return at::batch_norm(v[0], v[1], v[2], mean, var, false, 0.1, 1e-5, false);
                    }));
  }
}
