// The onednn executor against the torch executor (ATen's convolution and linear): conv2d with stride, padding,
// dilation, groups, depthwise and 1x1 shapes, with and without bias, and with the residual add that fusion hands
// it (the activation after it stays with cpp outside bounded variants); linear on 1-D to 4-D inputs, M = 1
// included, with bias, residual and (as a bounded variant fuses it) activation; NaN and inf inputs; 1 and 2
// threads, and two models called concurrently with different counts.
// Tolerance: float32 rtol 1e-4, atol 1e-5 (oneDNN's blocked kernels sum in another order than ATen's).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "blas_test_util.h"
#include "codegen/build.h"
#include "codegen/module_codegen.h"
#include "common/run_process.h"
#include "core/transforms/channels_last.h"
#include "core/transforms/fusion.h"
#include "pass_test_util.h"

using namespace blastest;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

// What follows a convolution in a test model: nothing, or a residual add and/or an activation.
struct Epilogue {
  bool residual = false;
  const char* activation = nullptr;  // "relu", "sigmoid", "silu"
};

struct Suite {
  Trace t;
  Rng rng{7};
  std::vector<std::string> labels;  // per output

  ValueId input(const Shape& s) { return t.add_input("x" + std::to_string(t.inputs().size()), tt(s)); }
  ValueId constant(const Shape& s) { return random_constant(t, "c" + std::to_string(t.constants().size()), tt(s), rng); }
  void out(ValueId v, std::string label) {
    auto outs = t.outputs();
    outs.push_back(v);
    t.set_outputs(outs);
    labels.push_back(std::move(label) + " -> " + shape_str(t.type(v).shape));
  }
  void conv(const Shape& x, const Shape& w, bool bias, IntList stride, IntList pad, IntList dil, std::int64_t groups,
            Epilogue e = {}) {
    ValueId y = t.emit1(op("conv2d"),
                        {Operand::tensor(input(x)), Operand::tensor(constant(w)), bias ? Operand::tensor(constant({w[0]})) : Operand::none()},
                        {{"stride", stride}, {"padding", pad}, {"dilation", dil}, {"groups", groups}});
    std::string label = "conv2d " + shape_str(x) + " w " + shape_str(w) + (bias ? " bias" : "") + " stride " +
                        shape_str(stride) + " pad " + shape_str(pad) + " dil " + shape_str(dil) + " groups " +
                        std::to_string(groups);
    finish(y, label, e, false);
  }
  // conv2d with the weights (and bias) as inputs, as a training variant's parameters: a new value each call.
  void conv_varying(const Shape& x, const Shape& w, bool bias, IntList stride, IntList pad, IntList dil,
                    std::int64_t groups) {
    ValueId y = t.emit1(op("conv2d"),
                        {Operand::tensor(input(x)), Operand::tensor(input(w)), bias ? Operand::tensor(input({w[0]})) : Operand::none()},
                        {{"stride", stride}, {"padding", pad}, {"dilation", dil}, {"groups", groups}});
    out(y, "conv2d (weights an input) " + shape_str(x) + " w " + shape_str(w) + " stride " + shape_str(stride) +
               " pad " + shape_str(pad) + " dil " + shape_str(dil) + " groups " + std::to_string(groups));
  }
  // conv2d's two gradients for an input x and weight w, from an output gradient input.
  void conv_grads(const Shape& x, const Shape& w, IntList stride, IntList pad, IntList dil, std::int64_t groups) {
    const Attrs a{{"stride", stride}, {"padding", pad}, {"dilation", dil}, {"groups", groups}};
    const TensorType xt = tt(x), wt = tt(w);
    const std::vector<OperandInfo> args = {{OperandKind::Tensor, &xt, {}}, {OperandKind::Tensor, &wt, {}}, {}};
    const Shape y = op("conv2d").meta(MetaArgs{op("conv2d"), args, a})[0].shape;
    Attrs ai = a, aw = a;
    ai.set("input_size", IntList(x.begin(), x.end()));
    aw.set("weight_size", IntList(w.begin(), w.end()));
    const std::string what = shape_str(x) + " w " + shape_str(w) + " stride " + shape_str(stride) + " pad " +
                             shape_str(pad) + " dil " + shape_str(dil) + " groups " + std::to_string(groups);
    const ValueId g = input(y);
    out(t.emit1(op("conv2d_backward_input"), {Operand::tensor(g), Operand::tensor(input(w))}, ai), "input gradient " + what);
    out(t.emit1(op("conv2d_backward_weight"), {Operand::tensor(g), Operand::tensor(input(x))}, aw), "weight gradient " + what);
  }
  // linear(x, w [n, x.shape[-1]], bias?), then the epilogue.
  void linear(const Shape& x, std::int64_t n, bool bias, Epilogue e = {}) {
    const std::int64_t k = x.back();
    ValueId y = t.emit1(op("linear"), {Operand::tensor(input(x)), Operand::tensor(constant({n, k})),
                                       bias ? Operand::tensor(constant({n})) : Operand::none()}, {});
    std::string label = "linear " + shape_str(x) + " w [" + std::to_string(n) + ", " + std::to_string(k) + "]" +
                        (bias ? " bias" : "");
    finish(y, label, e, true);
  }
  // y's epilogue, then y as an output: a residual add (the new input on the left or the right, so that fusion
  // sees both orders), then the activation ("gelu_tanh": gelu(approximate='tanh')).
  void finish(ValueId y, std::string label, const Epilogue& e, bool residual_on_left) {
    if (e.residual) {
      const Operand r = Operand::tensor(input(t.type(y).shape));
      y = t.emit1(op("add"), residual_on_left ? std::vector<Operand>{r, Operand::tensor(y)}
                                              : std::vector<Operand>{Operand::tensor(y), r}, {});
      label += " + residual";
    }
    if (e.activation) {
      const bool gelu_tanh = std::string(e.activation) == "gelu_tanh";
      Attrs attrs;
      if (gelu_tanh) attrs.set("approximate", std::string("tanh"));
      y = t.emit1(op(gelu_tanh ? "gelu" : e.activation), {Operand::tensor(y)}, attrs);
      label += std::string(" ") + e.activation;
    }
    out(y, label);
  }

  // Fusion as in a bounded variant: every value proven finite, so activations join the library call too.
  bool bounded = false;
  // The channels-last pass first (as the compiler runs it): conv2d_nhwc and conv2d_backward_*_nhwc, with
  // permutes (cpp) at the trace's inputs and outputs.
  bool nhwc = false;

  // The trace as the compiler would hand it to codegen: onednn claims the convolutions and linears, cpp the
  // rest, and fusion gives each the residual add (and in a bounded variant the activation) that follows it.
  Trace claimed_and_fused() const {
    Trace c = nhwc ? channels_last(t, transform_context({"onednn", "cpp"})) : t;
    auto unclaimed = claim_executors(c, {find_executor("onednn"), find_executor("cpp")});
    REQUIRE(unclaimed.empty());
    return bounded ? fuse_library_epilogues(c, [](ValueId) { return true; }) : fuse_library_epilogues(c);
  }

  std::string compile_onednn(const std::string& name, const std::optional<std::string>& keep = std::nullopt) const {
    return thunderc_test::compile_trace(claimed_and_fused(), {"onednn", "cpp"}, name, THUNDERC_TEST_TMP, keep);
  }

  // Every output of the onednn model against the torch executor's, on two random input sets (plus `edit`).
  void check(const std::string& name, int threads = 0,
             const std::function<void(std::vector<HostTensor>&)>& edit = nullptr) {
    const Trace fused = claimed_and_fused();
    for (const BoundSymbol& s : fused.symbols()) {
      const BoundSymbol& head = s.is_region() ? s.subsymbols[0] : s;
      if (head.op->name.rfind("conv2d", 0) == 0 || head.op->name == "linear")
        CHECK_MESSAGE(s.executor == "onednn", "a " << head.op->name << " left out of onednn");
      else CHECK_MESSAGE(s.executor == "cpp", head.op->name << " not claimed by cpp");
    }
    OpenOptions opts;
    opts.num_threads = threads;
    thunderc::Model mo(compile_onednn(name), opts), mt(compile(t, {"torch"}, name + "_torch"), opts);
    for (std::uint64_t seed : {1, 2}) {
      auto in = random_inputs(t, seed);
      if (edit) edit(in);
      auto got = mo.run(in), want = mt.run(in);
      REQUIRE(got.size() == labels.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(labels[i]);
        CHECK(got[i].shape() == want[i].shape());
        CHECK(worst_ratio(got[i], want[i], kRtol, kAtol) <= 1.0);
      }
    }
  }
};

}  // namespace

TEST_CASE("onednn conv2d matches the torch executor (float32)") {
  Suite s;
  for (const ConvCase& c : conv_cases()) s.conv(c.x, c.w, c.bias, c.stride, c.pad, c.dil, c.groups);
  s.conv({1, 32, 14, 14}, {64, 32, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1);  // blocked channels, stride 2
  s.conv({1, 3, 32, 32}, {16, 3, 7, 7}, false, {2, 2}, {3, 3}, {1, 1}, 1);   // a ResNet stem
  s.check("conv_f32");
}

// A convolution of the gradient tests below: input and weight shapes, stride, padding, dilation, groups.
struct GradCase {
  Shape x, w;
  IntList stride, pad, dil;
  std::int64_t groups;
};

// --autograd's convolutions: the forward's weights are parameters (inputs here; random_inputs gives each call
// new values, so a plan that kept the first call's weights fails), and conv2d's gradients run as oneDNN's
// backward primitives: stride, padding past the kernel, dilation, groups, depthwise, 1x1, rows and columns no
// window reaches, a ResNet stem. Each has at least the 2^19 multiply-adds below which onednn leaves a training
// convolution to blas and decompose (the claims test below).
TEST_CASE("onednn conv2d with varying weights and conv2d's gradients match the torch executor (float32)") {
  const std::vector<GradCase> cases = {
      {{2, 16, 24, 23}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 32, 25, 24}, {48, 16, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
      {{4, 96, 57, 56}, {96, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 96},  // depthwise, stride 2, a row no window reads
      {{2, 64, 29, 29}, {128, 64, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
      {{1, 32, 30, 31}, {32, 32, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1},
      {{1, 24, 20, 20}, {64, 24, 3, 3}, {1, 3}, {3, 2}, {1, 1}, 1},  // padding past the kernel
      {{2, 40, 33, 31}, {48, 40, 3, 3}, {2, 2}, {0, 0}, {1, 1}, 1},  // odd sizes, no padding
      {{1, 3, 64, 64}, {16, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},    // a ResNet stem
  };
  Suite s;
  bool bias = false;
  for (const GradCase& c : cases) {
    s.conv_varying(c.x, c.w, bias = !bias, c.stride, c.pad, c.dil, c.groups);
    s.conv_grads(c.x, c.w, c.stride, c.pad, c.dil, c.groups);
  }
  s.check("conv_grads_f32");
  s.check("conv_grads_f32_1t", 1);
  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "conv_grads_src";
  fs::remove_all(src);
  s.compile_onednn("conv_grads_src", src.string());
  const std::string code = read_dir_text(src);
  CHECK(code.find("static thunderc_onednn::Conv2dBackward<false> op;") != std::string::npos);
  CHECK(code.find("static thunderc_onednn::Conv2dBackward<true> op;") != std::string::npos);
  CHECK(code.find("weights reordered per call") != std::string::npos);
}

// The same in channels-last form (a training backward's channels-last pass): the gradient and activations NHWC,
// so oneDNN's backward primitives read and write them as they are; and small outputs next to large weights,
// where the weight gradient (and a training forward) take oneDNN's GEMM kernel on PyTorch's OIHW weights
// (gemm_weight_grad_pays, gemm_forward_pays), NHWC activations reordered to NCHW for it.
TEST_CASE("onednn conv2d's gradients on channels-last tensors, and the GEMM kernel for small outputs, match the torch "
          "executor (float32)") {
  const std::vector<GradCase> cases = {
      {{2, 16, 24, 23}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 32, 25, 24}, {48, 16, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
      {{4, 96, 57, 56}, {96, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 96},  // depthwise
      {{1, 24, 20, 20}, {64, 24, 3, 3}, {1, 3}, {3, 2}, {1, 1}, 1},  // padding past the kernel
      {{1, 128, 7, 7}, {64, 128, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},   // 7x7 output: GEMM
      {{1, 64, 14, 13}, {128, 64, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},  // 7x7 from 14x13, stride 2: GEMM
      {{2, 96, 6, 6}, {192, 96, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},    // 1x1, two images of 6x6: GEMM
  };
  Suite s;
  s.nhwc = true;
  bool bias = false;
  for (const GradCase& c : cases) {
    s.conv_varying(c.x, c.w, bias = !bias, c.stride, c.pad, c.dil, c.groups);
    s.conv_grads(c.x, c.w, c.stride, c.pad, c.dil, c.groups);
  }
  s.check("conv_grads_nhwc_f32");
  s.check("conv_grads_nhwc_f32_1t", 1);
  const Trace fused = s.claimed_and_fused();
  std::vector<std::string> names;
  for (const BoundSymbol& sym : fused.symbols()) names.push_back(sym.op->name);
  CHECK(std::count(names.begin(), names.end(), "conv2d_backward_input_nhwc") == 7);
  CHECK(std::count(names.begin(), names.end(), "conv2d_backward_weight_nhwc") == 7);
  CHECK(std::count(names.begin(), names.end(), "conv2d_backward_input") == 0);
  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "conv_grads_nhwc_src";
  fs::remove_all(src);
  s.compile_onednn("conv_grads_nhwc_src", src.string());
  const std::string code = read_dir_text(src);
  CHECK(code.find("conv2d input gradient [1, 64, 7, 7] -> [1, 128, 7, 7], kernel 3x3, NHWC") != std::string::npos);
}

TEST_CASE("onednn runs the residual add inside the convolution, activations stay with cpp") {
  Suite s;
  s.conv({1, 16, 8, 8}, {16, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, {true, "relu"});  // a ResNet block's end
  s.conv({2, 8, 7, 7}, {8, 8, 1, 1}, false, {1, 1}, {0, 0}, {1, 1}, 1, {true, nullptr});
  s.conv({1, 12, 9, 9}, {12, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 12, {false, "silu"});  // depthwise + silu
  s.conv({1, 3, 6, 6}, {5, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, {true, "sigmoid"});  // odd channels

  // Before: conv2d, add, relu | conv2d, add | conv2d, silu | conv2d, add, sigmoid.
  // After: onednn(conv2d, add), cpp relu | onednn(conv2d, add) | onednn conv2d, cpp silu | onednn(conv2d, add), cpp sigmoid.
  std::vector<std::string> got;
  const Trace fused = s.claimed_and_fused();
  for (const BoundSymbol& r : fused.symbols()) {
    std::string what = r.executor + ":";
    for (const BoundSymbol& m : r.is_region() ? r.subsymbols : std::vector<BoundSymbol>{r}) what += " " + m.op->name;
    got.push_back(what);
  }
  CHECK(got == std::vector<std::string>{"onednn: conv2d add", "cpp: relu", "onednn: conv2d add", "onednn: conv2d",
                                        "cpp: silu", "onednn: conv2d add", "cpp: sigmoid"});
  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "epilogue_src";
  fs::remove_all(src);
  s.compile_onednn("epilogue_src", src.string());
  const std::string code = read_dir_text(src);
  CHECK(code.find("static thunderc_onednn::Conv2d op;") != std::string::npos);
  CHECK(code.find("oneDNN: conv2d [1, 16, 8, 8] -> [1, 16, 8, 8], kernel 3x3 +bias +residual") != std::string::npos);
  CHECK(code.find("const thunderc_onednn::Conv2dSpec spec = {1LL, 16LL, 8LL, 8LL, 16LL, 3LL, 3LL, 1LL, 1LL, 1LL, 1LL, "
                  "1LL, 1LL, 1LL, 8LL, 8LL, 1LL, 1LL, 0LL, 0LL, thunderc_onednn::kNoActivation, static_cast<float>(0.0), "
                  "static_cast<float>(0.0), 0LL};") != std::string::npos);  // ..., weights_vary 0: constant weights

  s.check("epilogue");
}

TEST_CASE("a fused residual that dies at the convolution shares its buffer with the output (not in conv(y) + y)") {
  // out0 = relu(conv(x1) + conv(x0)) (the residual dies there: the output takes over its buffer, no copy in);
  // y1 = conv(x2); out1 = relu(conv(y1) + y1) (the convolution reads y1: its own buffer).
  Suite s;
  auto conv = [&](ValueId x, const Shape& w) {
    return s.t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(s.constant(w)), Operand::tensor(s.constant({w[0]}))},
                     {{"stride", IntList{1, 1}}, {"padding", IntList{1, 1}}, {"dilation", IntList{1, 1}},
                      {"groups", std::int64_t{1}}});
  };
  const ValueId y0 = conv(s.input({1, 8, 9, 9}), {8, 8, 3, 3});
  const ValueId sum0 = s.t.emit1(op("add"), {Operand::tensor(conv(s.input({1, 4, 9, 9}), {8, 4, 3, 3})), Operand::tensor(y0)}, {});
  const ValueId out0 = s.t.emit1(op("relu"), {Operand::tensor(sum0)}, {});
  s.out(out0, "conv + dying residual");
  const ValueId y1 = conv(s.input({1, 6, 7, 7}), {6, 6, 3, 3});
  const ValueId sum1 = s.t.emit1(op("add"), {Operand::tensor(conv(y1, {6, 6, 3, 3})), Operand::tensor(y1)}, {});
  s.out(s.t.emit1(op("relu"), {Operand::tensor(sum1)}, {}), "conv(y) + y");

  const Trace fused = s.claimed_and_fused();
  BackendSet backends = make_backends(Toolchain::from_build());
  const ModulePlan plan = plan_module({ModuleVariant{&fused, "residual"}}, backends);
  const VariantMemoryPlan& mem = plan.memory.at(0);
  // Fusion gives either convolution of the first add the other one's output as its residual.
  auto residual_of = [&](ValueId sum) {
    for (const BoundSymbol& r : fused.symbols())
      if (r.is_region() && r.outputs[0] == sum) {
        const BoundSymbol& add = r.subsymbols.at(1);
        return add.inputs[0].value == r.subsymbols[0].outputs[0] ? add.inputs[1].value : add.inputs[0].value;
      }
    FAIL("no onednn region computes the sum");
    return ValueId{};
  };
  CHECK(mem.buffers.at(sum0).storage == Storage::Workspace);
  CHECK(mem.buffers.at(sum0).offset == mem.buffers.at(residual_of(sum0)).offset);
  CHECK(residual_of(sum1) == y1);
  CHECK(mem.buffers.at(sum1).offset != mem.buffers.at(y1).offset);
  s.check("residual_in_place");
  s.check("residual_in_place_2threads", 2);
}

TEST_CASE("onednn propagates NaN and inf as PyTorch does, through the fused relu too") {
  Suite s;
  s.conv({1, 8, 6, 6}, {8, 8, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, {true, "relu"});
  s.conv({1, 8, 6, 6}, {8, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 8);
  s.check("nan", 0, [](std::vector<HostTensor>& in) {
    float* x0 = static_cast<float*>(in[0].raw());
    x0[0] = std::nanf("");
    x0[40] = INFINITY;
    static_cast<float*>(in[1].raw())[7] = std::nanf("");  // the residual
    static_cast<float*>(in[2].raw())[13] = -INFINITY;     // the depthwise input
  });
}

TEST_CASE("onednn at 1 and 2 threads, and two models called concurrently with different counts") {
  Suite s;
  s.conv({1, 16, 20, 20}, {32, 16, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, {false, "relu"});
  s.conv({1, 24, 12, 12}, {24, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 24);
  s.check("threads1", 1);
  s.check("threads2", 2);

  const std::string so = s.compile_onednn("concurrent");
  thunderc::Model want(compile(s.t, {"torch"}, "concurrent_torch"));
  const auto in = random_inputs(s.t, 3);
  const auto expected = want.run(in);
  const auto worst = worst_ratio_concurrent(so, in, expected, kRtol, kAtol);
  CHECK(worst[0] <= 1.0);
  CHECK(worst[1] <= 1.0);
}

// Grouped convolutions after the channels-last pass: on AVX-512 oneDNN runs them on the NHWC tensors as they are
// (grouped_nhwc_pays), elsewhere in its blocked layout; RegNet's groups of 8 channels, strided and not, with the
// residual and a relu, and groups of 16 with dilation. And a classifier head whose 440x1000 weights make the
// matrix-vector product run on two threads (kMatVecParallelMinWeights). At 1 and 2 threads.
TEST_CASE("onednn grouped convolutions on channels-last tensors and a large classifier head match the torch executor") {
  Suite s;
  s.nhwc = true;
  s.conv({1, 48, 30, 30}, {48, 8, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 6, {false, "relu"});
  s.conv({1, 104, 14, 14}, {104, 8, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 13, {true, "relu"});
  s.conv({2, 32, 9, 11}, {64, 16, 3, 3}, false, {1, 2}, {2, 1}, {2, 1}, 2);
  s.linear({1, 440}, 1000, true);
  s.check("grouped_nhwc_1t", 1);
  s.check("grouped_nhwc_2t", 2);
  s.bounded = true;  // the relus inside the convolutions
  s.check("grouped_nhwc_bounded_2t", 2);
}

// The kinds of linear a model has: transformer projections (rank 3), ConvNeXt's channels-last MLP (rank 4), a
// classifier head (M = 1), a 1-D input, no bias.
void linear_cases(Suite& s) {
  s.linear({4, 64}, 32, true);
  s.linear({2, 7, 48}, 80, true);
  s.linear({1, 3, 5, 24}, 40, false);
  s.linear({1, 100}, 70, true);
  s.linear({24}, 10, true);
  s.linear({5, 33}, 1, false);  // odd K, a single output feature
}

TEST_CASE("onednn linear matches the torch executor (float32)") {
  Suite s;
  linear_cases(s);
  s.linear({3, 16}, 16, true, {true, nullptr});  // residual: the sum post-op
  s.linear({6, 20}, 12, true, {false, "relu"});  // the relu stays with cpp (not bounded)
  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "linear_src";
  fs::remove_all(src);
  s.compile_onednn("linear_src", src.string());
  const std::string code = read_dir_text(src);
  CHECK(code.find("static thunderc_onednn::Linear op;") != std::string::npos);
  CHECK(code.find("oneDNN: linear [15, 24] x [40, 24]^T\n") != std::string::npos);
  CHECK(code.find("oneDNN: linear [3, 16] x [16, 16]^T +bias +residual\n") != std::string::npos);
  CHECK(code.find("const thunderc_onednn::LinearSpec spec = {14LL, 48LL, 80LL, 1LL, 0LL, "
                  "thunderc_onednn::kNoActivation, static_cast<float>(0.0), static_cast<float>(0.0)};") !=
        std::string::npos);
  CHECK(code.find("thunderc_onednn::kRelu") == std::string::npos);
  s.check("linear_f32");
  s.check("linear_f32_2threads", 2);
}

TEST_CASE("onednn linear with the activation a bounded variant fuses, and NaN and inf outside one") {
  Suite s;
  s.linear({4, 32}, 24, true, {false, "relu"});
  s.linear({2, 3, 16}, 16, true, {true, "silu"});
  s.linear({5, 8}, 12, false, {false, "sigmoid"});
  s.linear({1, 4, 4, 24}, 96, true, {false, "gelu"});  // ConvNeXt's MLP
  s.linear({3, 40}, 64, true, {false, "gelu_tanh"});  // GPT-2's
  s.bounded = true;
  const fs::path src = fs::path(THUNDERC_TEST_TMP) / "linear_bounded_src";
  fs::remove_all(src);
  s.compile_onednn("linear_bounded_src", src.string());
  const std::string code = read_dir_text(src);
  CHECK(code.find("oneDNN: linear [4, 32] x [24, 32]^T +bias relu\n") != std::string::npos);
  CHECK(code.find("oneDNN: linear [6, 16] x [16, 16]^T +bias +residual silu\n") != std::string::npos);
  CHECK(code.find("thunderc_onednn::kSigmoid") != std::string::npos);
  CHECK(code.find("oneDNN: linear [16, 24] x [96, 24]^T +bias gelu\n") != std::string::npos);
  CHECK(code.find("oneDNN: linear [3, 40] x [64, 40]^T +bias gelu(tanh)\n") != std::string::npos);
  CHECK(code.find("thunderc_onednn::kGeluErf") != std::string::npos);
  CHECK(code.find("thunderc_onednn::kGeluTanh") != std::string::npos);
  s.check("linear_bounded");

  Suite n;
  linear_cases(n);
  n.linear({3, 16}, 16, true, {true, nullptr});
  n.check("linear_nan", 0, [](std::vector<HostTensor>& in) {
    static_cast<float*>(in[0].raw())[5] = std::nanf("");
    static_cast<float*>(in[1].raw())[0] = INFINITY;
    static_cast<float*>(in[2].raw())[20] = -INFINITY;
    static_cast<float*>(in.back().raw())[9] = std::nanf("");  // the residual
  });
}

TEST_CASE("onednn claims only what it implements") {
  Trace t;
  Rng rng(1);
  auto conv = [&](ValueId x, ValueId w) {
    return t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), Operand::none()},
                   {{"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}}, {"groups", std::int64_t{1}}});
  };
  ValueId unbatched = conv(t.add_input("u", tt({3, 5, 5})), random_constant(t, "w0", tt({4, 3, 3, 3}), rng));
  ValueId f64 = conv(t.add_input("d", tt({1, 3, 5, 5}, DType::Float64)), random_constant(t, "w1", tt({4, 3, 3, 3}, DType::Float64), rng));
  ValueId empty = conv(t.add_input("e", tt({0, 3, 5, 5})), random_constant(t, "w2", tt({4, 3, 3, 3}), rng));
  t.set_outputs({unbatched, f64, empty});
  const Executor* onednn = find_executor("onednn");
  REQUIRE(onednn != nullptr);
  CHECK(onednn->availability(DeviceKind::CPU).available);
  CHECK_FALSE(onednn->availability(DeviceKind::CUDA).available);
  // linear: a constant rank-2 float32 weight, nothing empty.
  auto linear = [&](ValueId x, ValueId w) { return t.emit1(op("linear"), {Operand::tensor(x), Operand::tensor(w), Operand::none()}, {}); };
  linear(t.add_input("lw", tt({2, 8})), t.add_input("lw_w", tt({4, 8})));
  linear(t.add_input("ld", tt({2, 8}, DType::Float64)), random_constant(t, "lw1", tt({4, 8}, DType::Float64), rng));
  linear(t.add_input("l1", tt({2, 8})), random_constant(t, "lw2", tt({8}), rng));
  linear(t.add_input("le", tt({0, 8})), random_constant(t, "lw3", tt({4, 8}), rng));
  for (const BoundSymbol& sym : t.symbols()) CHECK_FALSE(onednn->can_execute(t, sym));
  linear(t.add_input("ok", tt({2, 8})), random_constant(t, "lw4", tt({4, 8}), rng));
  CHECK(onednn->can_execute(t, t.symbols().back()));
  // A convolution's weights may be an input (a training variant's parameters: reordered by every call), from
  // 2^19 multiply-adds on: [1, 16, 32, 32] by [32, 16, 3, 3] has 4.1 M, [1, 3, 5, 5] by [4, 3, 3, 3] 972.
  conv(t.add_input("x", tt({1, 16, 32, 32})), t.add_input("w", tt({32, 16, 3, 3})));
  CHECK(onednn->can_execute(t, t.symbols().back()));
  conv(t.add_input("xs", tt({1, 3, 5, 5})), t.add_input("ws", tt({4, 3, 3, 3})));
  CHECK_FALSE(onednn->can_execute(t, t.symbols().back()));
  conv(t.add_input("xc", tt({1, 3, 5, 5})), random_constant(t, "wc", tt({4, 3, 3, 3}), rng));  // constant: any size
  CHECK(onednn->can_execute(t, t.symbols().back()));
  // Its gradients likewise.
  auto grad = [&](const char* name, ValueId g, ValueId b, const char* size_attr, IntList size) {
    Attrs a{{"stride", IntList{1, 1}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}}, {"groups", std::int64_t{1}}};
    a.set(size_attr, std::move(size));
    t.emit1(op(name), {Operand::tensor(g), Operand::tensor(b)}, a);
    return onednn->can_execute(t, t.symbols().back());
  };
  CHECK(grad("conv2d_backward_input", t.add_input("g", tt({1, 32, 30, 30})), t.add_input("gw", tt({32, 16, 3, 3})),
             "input_size", {1, 16, 32, 32}));
  CHECK(grad("conv2d_backward_weight", t.add_input("g2", tt({1, 32, 30, 30})), t.add_input("gx", tt({1, 16, 32, 32})),
             "weight_size", {32, 16, 3, 3}));
  CHECK_FALSE(grad("conv2d_backward_input", t.add_input("g3", tt({1, 4, 3, 3})), t.add_input("gw3", tt({4, 3, 3, 3})),
                   "input_size", {1, 3, 5, 5}));
  CHECK_FALSE(grad("conv2d_backward_weight", t.add_input("g4", tt({1, 4, 3, 3})), t.add_input("gx4", tt({1, 3, 5, 5})),
                   "weight_size", {4, 3, 3, 3}));
  // The default CPU list puts it before blas, so convolutions and linears go to oneDNN.
  CHECK(default_executors(DeviceKind::CPU).names_str() == "cpp, onednn, blas");
}

TEST_CASE("an onednn model .so links oneDNN and not LibTorch") {
  Suite s;
  s.conv({1, 3, 6, 6}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, {false, "relu"});
  const std::string so = s.compile_onednn("elf_onednn");
  // The NEEDED entries only: other lines hold addresses ("STRTAB 0xc10" would match "c10").
  const std::string needed =
      thunderc_test::run_shell("readelf -d " + thunderc_test::shell_quote(so) + " | grep NEEDED").out;
  INFO(needed);
  CHECK(needed.find("libdnnl") != std::string::npos);
  for (const char* lib : {"torch", "c10", "aten_shim", "openblas"}) CHECK(needed.find(lib) == std::string::npos);
}
