// Golden Before/After traces of the attention transform on the sample models (imported with the TorchScript
// frontend): Before is the trace after the passes that precede attention in the default list (dce, cse,
// constant-folding, fold-batchnorm), After is attention's result; and autocast after attention.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "core/frontend/torchscript.h"
#include "core/transforms/attention.h"
#include "core/transforms/autocast.h"
#include "core/transforms/pipeline.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

Trace before_attention(const std::string& sample) {
  TorchScriptModel model = TorchScriptModel::load(std::string(THUNDERC_SAMPLES) + "/" + sample);
  REQUIRE(model.recorded_shapes().has_value());
  Trace t = model.import(model.resolve_shapes(*model.recorded_shapes(), Device::cpu()));
  TransformContext ctx{Device::cpu(), {}, {}};
  for (const char* name : {"dce", "cse", "constant-folding", "fold-batchnorm"}) {
    const RegisteredPass* p = find_pass(name);
    REQUIRE(p);
    t = p->transform.run(t, ctx);
    t.constructed_by = name;
  }
  return t;
}

int count(const Trace& t, const std::string& op_name) {
  int n = 0;
  for (const BoundSymbol& s : t.symbols()) n += s.op->name == op_name;
  return n;
}

// One attention replaces the matmul/softmax chain; it returns that symbol.
BoundSymbol check_sample(const std::string& sample, const std::string& golden) {
  Trace before = before_attention(sample);
  Trace after = fuse_attention(before);
  check_before_after(golden, before, after);
  CHECK(count(after, "scaled_dot_product_attention") == 1);
  CHECK(count(after, "softmax") == 0);
  CHECK(count(after, "matmul") == count(before, "matmul") - 2);
  CHECK(after.outputs() == before.outputs());
  for (const BoundSymbol& s : after.symbols())
    if (s.op->name == "scaled_dot_product_attention") return s;
  return {};
}

}  // namespace

TEST_CASE("attention on samples/gpt_block.pt: the causal masked_fill becomes is_causal") {
  BoundSymbol s = check_sample("gpt_block.pt", "attention_gpt_block");
  CHECK(s.attrs.get_bool("is_causal"));
  CHECK(s.inputs[3].kind == OperandKind::None);
  CHECK(s.attrs.get_float("scale") == 0.25);  // 1 / sqrt(16), recorded explicitly
}

TEST_CASE("attention on samples/gpt_block_scripted.pt (scale as a Python number)") {
  BoundSymbol s = check_sample("gpt_block_scripted.pt", "attention_gpt_block_scripted");
  CHECK(s.attrs.get_bool("is_causal"));
  CHECK(s.attrs.get_float("scale") == 0.25);
}

TEST_CASE("attention on samples/encoder_layer.pt: the key-padding mask becomes a keep-mask constant") {
  BoundSymbol s = check_sample("encoder_layer.pt", "attention_encoder_layer");
  CHECK_FALSE(s.attrs.get_bool("is_causal"));
  REQUIRE(s.inputs[3].is_tensor());
  CHECK(s.attrs.get_float("scale") == 0.25);
}

// autocast (--precision bf16) after attention, as in the default pipeline: the sdpa and the four linears in
// bfloat16 with converted weights, layer_norm in float32, the output cast back to float32.
TEST_CASE("autocast bf16 on samples/gpt_block.pt after attention: golden Before/After") {
  Trace before = fuse_attention(before_attention("gpt_block.pt"));
  before.constructed_by = "attention";
  Trace after = autocast(before, DType::BFloat16);
  check_before_after("autocast_gpt_block", before, after);
  const BoundSymbol* sdpa = nullptr;
  for (const BoundSymbol& s : after.symbols())
    if (s.op->name == "scaled_dot_product_attention") sdpa = &s;
  REQUIRE(sdpa);
  for (int i = 0; i < 3; ++i) CHECK(after.type(sdpa->inputs[i].value).dtype == DType::BFloat16);
  for (const BoundSymbol& s : after.symbols())
    if (s.op->name == "layer_norm") CHECK(after.type(s.outputs[0]).dtype == DType::Float32);
  CHECK(after.type(after.outputs()[0]) == before.type(before.outputs()[0]));
}
