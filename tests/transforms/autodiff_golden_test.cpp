// Golden traces of autodiff (core/transforms/autodiff.h): the imported trace, then the forward and backward
// programs it splits it into. Rematerialization's min-cut decides what the forward saves; these cases pin it down:
// pointwise chains are recomputed from a saved model input, products are saved.
#include "core/transforms/autodiff.h"

#include "transforms_test_util.h"

using namespace xftest;

namespace {

ValueId parameter(Trace& t, const std::string& name, Shape shape) {
  return t.add_constant(name, f32(shape), zeros(f32(shape)));
}

void check_split(const std::string& name, const Trace& before, const TrainingTraces& tt) {
  verify_trace(tt.forward, "autodiff");
  verify_trace(tt.backward, "autodiff");
  check_golden(name + ".before.txt", print_trace(before));
  check_golden(name + ".forward.txt", print_trace(tt.forward));
  check_golden(name + ".backward.txt", print_trace(tt.backward));
}

}  // namespace

TEST_CASE("autodiff golden: a pointwise chain is recomputed from the saved input (min-cut)") {
  // out = sum(exp(sin(x * w))): saving everything the backward reads would keep x, x*w and exp(...) (3 x 128
  // bytes); the cut keeps x alone and the backward recomputes the chain.
  Trace t;
  ValueId x = t.add_input("x", f32({4, 8}));
  ValueId w = parameter(t, "w", {8});
  ValueId a = t.emit1(op("mul"), {T(x), T(w)}, {});
  ValueId b = t.emit1(op("sin"), {T(a)}, {});
  ValueId c = t.emit1(op("exp"), {T(b)}, {});
  t.set_outputs({t.emit1(op("sum"), {T(c)}, {})});
  TrainingTraces tt = build_training_traces(t, {"w"}, {"x"}, {"x"});
  check_split("autodiff_pointwise", t, tt);
  REQUIRE(tt.saved.size() == 1);
  CHECK(tt.saved[0].shape == Shape{4, 8});
  CHECK(tt.saved_bytes_without_remat == 3 * 4 * 8 * 4);
}

TEST_CASE("autodiff golden: products are saved, what follows them is recomputed") {
  // h = x @ W^T + b; y = tanh(h) * sigmoid(h): the linear's result is saved (not recomputable), tanh and sigmoid
  // are recomputed from it; x is saved for W's gradient (x does not require grad here).
  Trace t;
  ValueId x = t.add_input("x", f32({2, 4}));
  ValueId w = parameter(t, "fc.weight", {3, 4});
  ValueId bias = parameter(t, "fc.bias", {3});
  ValueId h = t.emit1(op("linear"), {T(x), T(w), T(bias)}, {});
  ValueId y = t.emit1(op("mul"), {T(t.emit1(op("tanh"), {T(h)}, {})), T(t.emit1(op("sigmoid"), {T(h)}, {}))}, {});
  t.set_outputs({y});
  TrainingTraces tt = build_training_traces(t, {"fc.weight", "fc.bias"}, {"x"}, {});
  check_split("autodiff_linear", t, tt);
  REQUIRE(tt.saved.size() == 2);  // x and h (56 bytes), not tanh(h) and sigmoid(h), which the rules read (80)
  CHECK(tt.saved_bytes_without_remat == (2 * 4 + 2 * 2 * 3) * 4);
  CHECK(tt.gradients.size() == 2);
}

TEST_CASE("autodiff golden: dropout masks draw from the rng input, and the backward draws them again") {
  // y = dropout(relu(x * w), 0.25) then dropout(y, 0.5) on [1, 4] planes (feature dropout's noise shape), as the
  // importers emit them in --module-mode train: masks without an rng. autodiff gives both the forward's `rng`
  // input and consecutive counter blocks (32 elements take 8 blocks, the next 4 one); the backward recomputes them
  // from the saved rng (16 bytes) instead of saving the masks (2 x 128 bytes).
  Trace t;
  ValueId x = t.add_input("x", f32({4, 8}));
  ValueId w = parameter(t, "w", {8});
  ValueId h = t.emit1(op("relu"), {T(t.emit1(op("mul"), {T(x), T(w)}, {}))}, {});
  auto mask = [&](Shape shape, double p) {
    return t.emit1(op("dropout_mask"), {Operand::none()}, {{"shape", shape}, {"dtype", DType::Float32}, {"p", p}});
  };
  ValueId y = t.emit1(op("mul"), {T(h), T(t.emit1(op("div"), {T(mask({4, 8}, 0.25)), Operand::number(0.75)}, {}))}, {});
  ValueId z = t.emit1(op("mul"), {T(y), T(t.emit1(op("div"), {T(mask({4, 1}, 0.5)), Operand::number(0.5)}, {}))}, {});
  t.set_outputs({t.emit1(op("sum"), {T(z)}, {})});
  TrainingTraces tt = build_training_traces(t, {"w"}, {"x"}, {"x"});
  check_split("autodiff_dropout", t, tt);
  CHECK(tt.rng_blocks == 8 + 1);
  REQUIRE(tt.forward.inputs().size() == 3);  // x, w, rng
  CHECK(tt.forward.value(tt.forward.inputs()[2]).source_name == "rng");
  std::size_t saved_bytes = 0;
  for (const TensorType& s : tt.saved) saved_bytes += s.nbytes();
  CHECK(saved_bytes == 4 * 8 * 4 + 16);  // x (for relu's and w's gradients) and the rng
  std::size_t masks = 0;
  for (const BoundSymbol& s : tt.backward.symbols()) masks += s.op->name == "dropout_mask";
  CHECK(masks == 2);
}
