// Tests of the optional LibTorch adapter (aten.hpp); the only runtime test that links LibTorch.
// LibTorch (glog) defines its own CHECK macro, so this file spells the doctest macros DOCTEST_*.
#include <doctest/doctest.h>

#include <ATen/ATen.h>

#include "thunderc/aten.hpp"

TEST_CASE("aten adapter runs the model on at::Tensors") {
  thunderc::Model model(std::string(THUNDERC_TEST_MODEL_DIR) + "/two_variants.so");
  at::Tensor x = at::arange(12, at::kFloat).reshape({4, 3});
  std::vector<at::Tensor> outs = thunderc::aten::run(model, {x});
  DOCTEST_REQUIRE(outs.size() == 2);
  DOCTEST_CHECK(outs[0].equal(x * 2 + 1));
  DOCTEST_CHECK(outs[1].equal(x.sum(1)));
  // Non-contiguous input is made contiguous first.
  at::Tensor xt = at::arange(6, at::kFloat).reshape({3, 2}).t();
  DOCTEST_CHECK_FALSE(xt.is_contiguous());
  DOCTEST_CHECK(thunderc::aten::run(model, {xt})[0].equal(xt * 2 + 1));
  DOCTEST_CHECK_THROWS_AS(thunderc::aten::run(model, {at::zeros({2, 3}, at::kDouble)}), thunderc::Error);
  DOCTEST_CHECK(thunderc::aten::to_dl_dtype(at::kBool).code == THUNDERC_DL_BOOL);
  DOCTEST_CHECK((thunderc::aten::to_scalar_type(thunderc::aten::to_dl_dtype(at::kBFloat16)) == at::kBFloat16));
}
