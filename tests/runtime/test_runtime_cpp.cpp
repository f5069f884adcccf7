// Tests of the header-only C++ wrapper (runtime.hpp).
#include <doctest/doctest.h>

#include "test_util.hpp"
#include "thunderc/npy.hpp"
#include "thunderc/runtime.hpp"

using thunderc_test::model_path;

TEST_CASE("C++ wrapper: open, inspect, run") {
  thunderc::Model model(model_path("two_variants"));
  CHECK(model.input_names() == std::vector<std::string>{"x"});
  CHECK(model.output_names() == std::vector<std::string>{"y", "rowsum"});
  const auto variants = model.variants();
  REQUIRE(variants.size() == 2);
  CHECK(variants[1].inputs[0].shape == std::vector<int64_t>{4, 3});
  CHECK(variants[1].outputs[1].shape == std::vector<int64_t>{4});
  CHECK(variants[0].signature == "x: float32[2, 3] cpu");

  auto x = thunderc::HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<thunderc::HostTensor> outs = model.run({x});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].to_vector<float>() == std::vector<float>{3, 5, 7, 9, 11, 13});
  CHECK(outs[1].to_vector<float>() == std::vector<float>{6, 15});
  CHECK(outs[1].shape() == std::vector<int64_t>{2});

  std::vector<thunderc::ManagedTensor> managed = model.run_alloc({x.dl()});
  REQUIRE(managed.size() == 2);
  CHECK(managed[0].shape() == std::vector<int64_t>{2, 3});
  CHECK(managed[0].data<float>()[5] == 13.0f);
  CHECK(managed[1].to_host().to_vector<float>() == std::vector<float>{6, 15});
  CHECK_THROWS_AS(managed[0].data<double>(), std::invalid_argument);
}

TEST_CASE("C++ wrapper: errors become thunderc::Error") {
  try {
    thunderc::Model model("/nonexistent.so");
    FAIL("expected an exception");
  } catch (const thunderc::Error& e) {
    CHECK(e.code() == THUNDERC_STATUS_NOT_FOUND);
    CHECK(std::string(e.code_name()) == "NOT_FOUND");
  }
  thunderc::Model model(model_path("two_variants"));
  auto bad = thunderc::HostTensor::from_vector<float>({3, 3}, std::vector<float>(9, 1.0f));
  try {
    model.run({bad});
    FAIL("expected an exception");
  } catch (const thunderc::Error& e) {
    CHECK(e.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(std::string(e.what()).find("input 'x' has shape [3, 3] float32 cpu") != std::string::npos);
  }
  thunderc::Model moved = std::move(model);
  CHECK(moved.get() != nullptr);
  CHECK(model.get() == nullptr);
}

TEST_CASE("C++ wrapper: npy in, npy out") {
  thunderc_test::TempDir dir;
  thunderc::Model model(model_path("two_variants"));
  auto x = thunderc::HostTensor::from_vector<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  thunderc::npy::save(dir.path + "/x.npy", x);
  auto outs = model.run({thunderc::npy::load(dir.path + "/x.npy")});
  thunderc::npy::save(dir.path + "/y.npy", outs[0]);
  CHECK(thunderc::npy::load(dir.path + "/y.npy").to_vector<float>()[11] == 23.0f);
}
