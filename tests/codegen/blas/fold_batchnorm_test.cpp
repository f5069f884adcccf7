// fold-batchnorm: the trace before and after (golden), numerical parity of the folded model with the
// unfolded one, and the cases it must leave alone.
#include <doctest/doctest.h>

#include "blas_test_util.h"
#include "core/ir/printer.h"
#include "core/transforms/fold_batchnorm.h"

using namespace blastest;

namespace {

// x -> conv2d(w, b?) -> batch_norm -> relu, and a second conv whose output is also a trace output.
struct Net {
  Trace t;
  Rng rng{3};
  ValueId x, y1, y2, c2;
  explicit Net(bool conv_bias, DType dt = DType::Float32) {
    x = t.add_input("x", tt({2, 4, 7, 7}, dt));
    ValueId w = random_constant(t, "conv1.weight", tt({6, 2, 3, 3}, dt), rng);
    Operand b = conv_bias ? Operand::tensor(random_constant(t, "conv1.bias", tt({6}, dt), rng)) : Operand::none();
    ValueId gamma = random_constant(t, "bn1.weight", tt({6}, dt), rng, 0.5, 1.5);
    ValueId beta = random_constant(t, "bn1.bias", tt({6}, dt), rng, -0.2, 0.2);
    ValueId mean = random_constant(t, "bn1.running_mean", tt({6}, dt), rng, -0.2, 0.2);
    ValueId var = random_constant(t, "bn1.running_var", tt({6}, dt), rng, 0.5, 1.5);
    ValueId c1 = t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), b},
                         {{"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}, {"groups", std::int64_t{2}}});
    ValueId n1 = t.emit1(op("batch_norm"), {Operand::tensor(c1), Operand::tensor(gamma), Operand::tensor(beta),
                                            Operand::tensor(mean), Operand::tensor(var)},
                         {{"eps", 1e-3}});
    y1 = t.emit1(op("relu"), {Operand::tensor(n1)}, {});
    // Not foldable: conv2's output is read twice (by its batch_norm and as an output).
    ValueId w2 = random_constant(t, "conv2.weight", tt({6, 6, 1, 1}, dt), rng);
    c2 = t.emit1(op("conv2d"), {Operand::tensor(y1), Operand::tensor(w2), Operand::none()}, {});
    y2 = t.emit1(op("batch_norm"), {Operand::tensor(c2), Operand::none(), Operand::none(), Operand::tensor(mean),
                                    Operand::tensor(var)},
                 {});
    t.set_outputs({y1, y2, c2});
  }
};

}  // namespace

TEST_CASE("fold-batchnorm: golden trace before and after") {
  Net n(false);
  Trace after = fold_batchnorm_transform().run(n.t, {});
  verify_trace(after, "fold-batchnorm");
  CHECK(fold_batchnorm_transform().name == "fold-batchnorm");
  PrintOptions o;
  o.show_constants = false;
  CHECK(print_trace(n.t, o) == R"(def forward(x: "cpu f32[2, 4, 7, 7]"):
  t0 = conv2d(x, conv1_weight, None, stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=2)  # t0: "cpu f32[2, 6, 4, 4]"
  t1 = batch_norm(t0, bn1_weight, bn1_bias, bn1_running_mean, bn1_running_var, eps=0.001, momentum=0.1)  # t1: "cpu f32[2, 6, 4, 4]"
  t2 = relu(t1)  # t2: "cpu f32[2, 6, 4, 4]"
  t3 = conv2d(t2, conv2_weight, None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)  # t3: "cpu f32[2, 6, 4, 4]"
  t4 = batch_norm(t3, None, None, bn1_running_mean, bn1_running_var, eps=1e-05, momentum=0.1)  # t4: "cpu f32[2, 6, 4, 4]"
  return (t2, t4, t3)
)");
  // The first batch_norm is folded (its conv gets new constants and writes t1 directly); the second
  // stays because its conv's output t3 is also a trace output.
  CHECK(print_trace(after) == R"(# Constructed by fold-batchnorm
# Constants: 8 tensors, 1.1 KiB
#   conv1_weight: "cpu f32[6, 2, 3, 3]"  from 'conv1.weight'
#   bn1_weight: "cpu f32[6]"  from 'bn1.weight'
#   bn1_bias: "cpu f32[6]"  from 'bn1.bias'
#   bn1_running_mean: "cpu f32[6]"  from 'bn1.running_mean'
#   bn1_running_var: "cpu f32[6]"  from 'bn1.running_var'
#   conv2_weight: "cpu f32[6, 6, 1, 1]"  from 'conv2.weight'
#   conv1_weight_bnfold: "cpu f32[6, 2, 3, 3]"
#   conv1_weight_bnfold_bias: "cpu f32[6]"
def forward(x: "cpu f32[2, 4, 7, 7]"):
  t1 = conv2d(x, conv1_weight_bnfold, conv1_weight_bnfold_bias, stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=2)  # t1: "cpu f32[2, 6, 4, 4]"
  t2 = relu(t1)  # t2: "cpu f32[2, 6, 4, 4]"
  t3 = conv2d(t2, conv2_weight, None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)  # t3: "cpu f32[2, 6, 4, 4]"
  t4 = batch_norm(t3, None, None, bn1_running_mean, bn1_running_var, eps=1e-05, momentum=0.1)  # t4: "cpu f32[2, 6, 4, 4]"
  return (t2, t4, t3)
)");
}

TEST_CASE("fold-batchnorm: the folded model computes what the unfolded one does") {
  for (bool conv_bias : {false, true})
    for (DType dt : {DType::Float32, DType::Float64}) {
      CAPTURE(conv_bias);
      CAPTURE(dtype_name(dt));
      Net n(conv_bias, dt);
      Trace after = fold_batchnorm(n.t);
      verify_trace(after, "fold-batchnorm");
      std::size_t bns = 0;
      for (const BoundSymbol& s : after.symbols()) bns += s.op->name == "batch_norm";
      CHECK(bns == 1);
      std::string tag = std::string(conv_bias ? "bias_" : "nobias_") + dtype_name(dt);
      // Unfolded with the torch executor (ATen's batch_norm) vs folded with blas's conv2d.
      thunderc::Model before(compile(n.t, {"torch"}, "bn_before_" + tag)), folded(compile(after, {"blas", "torch"}, "bn_after_" + tag));
      auto in = random_inputs(n.t, 11);
      auto want = before.run(in), got = folded.run(in);
      REQUIRE(got.size() == want.size());
      double rtol = dt == DType::Float32 ? 1e-4 : 1e-10, atol = dt == DType::Float32 ? 1e-5 : 1e-12;
      for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(worst_ratio(got[i], want[i], rtol, atol) <= 1.0);
      }
    }
}

TEST_CASE("fold-batchnorm leaves alone: non-constant parameters, a conv read twice, a batch_norm after other ops") {
  Trace t;
  Rng rng(5);
  ValueId x = t.add_input("x", tt({1, 2, 5, 5}));
  ValueId mean_in = t.add_input("mean", tt({3}));  // running_mean is an input: not foldable
  ValueId w = random_constant(t, "w", tt({3, 2, 3, 3}), rng);
  ValueId var = random_constant(t, "var", tt({3}), rng, 0.5, 1.5);
  ValueId c = t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), Operand::none()}, {});
  ValueId b1 = t.emit1(op("batch_norm"), {Operand::tensor(c), Operand::none(), Operand::none(), Operand::tensor(mean_in),
                                          Operand::tensor(var)}, {});
  ValueId r = t.emit1(op("relu"), {Operand::tensor(x)}, {});
  ValueId v2 = random_constant(t, "v2", tt({2}), rng, 0.5, 1.5);
  ValueId b2 = t.emit1(op("batch_norm"), {Operand::tensor(r), Operand::none(), Operand::none(), Operand::tensor(v2),
                                          Operand::tensor(v2)}, {});
  t.set_outputs({b1, b2});
  Trace after = fold_batchnorm(t);
  verify_trace(after, "fold-batchnorm");
  PrintOptions o;
  o.show_constants = false;
  std::string before_text = print_trace(t, o), after_text = print_trace(after, o);
  CHECK(after_text == "# Constructed by fold-batchnorm\n" + before_text);
  CHECK(after.constants().size() == t.constants().size());
}
