// Meta functions of matrix products, convolution, pooling, embedding and attention. Expected shapes were
// obtained by running the same calls in PyTorch 1.13 and are hard-coded.
#include <limits>

#include "core/ops/meta_util.h"
#include "core_test_util.h"

using namespace coretest;

namespace {
constexpr DType b1 = DType::Bool, i4 = DType::Int32, i8 = DType::Int64, f2 = DType::Float16, f4 = DType::Float32,
                f8 = DType::Float64;
}  // namespace

OPS_TEST_CASE("meta linear", "linear") {
  CHECK(meta1("linear", {T(f4, {2, 5, 3}), T(f4, {4, 3}), N()}) == tt(f4, {2, 5, 4}));
  CHECK(meta1("linear", {T(f4, {3}), T(f4, {4, 3}), T(f4, {4})}) == tt(f4, {4}));
  CHECK(meta1("linear", {T(f4, {2, 3}), T(f4, {3}), N()}) == tt(f4, {2}));
  CHECK(meta1("linear", {T(f2, {7, 3}), T(f2, {4, 3}), T(f2, {4})}) == tt(f2, {7, 4}));
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {2, 3}), T(f4, {4, 5}), N()}), "linear", "[2, 3]", "[4, 5]",
                   "do not match");
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {}), T(f4, {4, 5}), N()}), "linear", "[4, 5]");
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {2, 3}), T(f4, {4, 3}), T(f4, {5})}), "[5]", "[2, 4]");
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {2, 3}), T(f4, {1, 4, 3}), N()}), "weight must be 1-D or 2-D");
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {2, 3}), T(f2, {4, 3}), N()}), "dtype", "float32", "float16");
  // A 1-D weight with a bias: ATen accepts it for a 1-D input only (PyTorch 1.13: "mat2 must be a matrix").
  CHECK_USER_ERROR(meta_error("linear", {T(f4, {3, 4}), T(f4, {4}), T(f4, {})}), "1-D weight", "needs a 1-D input");
  CHECK(meta1("linear", {T(f4, {4}), T(f4, {4}), T(f4, {})}) == tt(f4, {}));
}

OPS_TEST_CASE("meta matmul", "matmul") {
  CHECK(meta1("matmul", {T(f4, {3}), T(f4, {3})}) == tt(f4, {}));
  CHECK(meta1("matmul", {T(f4, {3}), T(f4, {2, 3, 4})}) == tt(f4, {2, 4}));
  CHECK(meta1("matmul", {T(f4, {2, 1, 5, 3}), T(f4, {4, 3, 6})}) == tt(f4, {2, 4, 5, 6}));
  CHECK(meta1("matmul", {T(f4, {2, 5, 3}), T(f4, {3})}) == tt(f4, {2, 5}));
  CHECK(meta1("matmul", {T(f4, {5, 3}), T(f4, {3, 2})}) == tt(f4, {5, 2}));
  CHECK(meta1("matmul", {T(i8, {5, 3}), T(i8, {3})}) == tt(i8, {5}));
  CHECK_USER_ERROR(meta_error("matmul", {T(f4, {2, 3}), T(f4, {4, 5})}), "matmul", "[2, 3]", "[4, 5]",
                   "cannot be multiplied", "3 != 4");
  CHECK_USER_ERROR(meta_error("matmul", {T(f4, {3}), T(f4, {4})}), "3 != 4");
  CHECK_USER_ERROR(meta_error("matmul", {T(f4, {2, 3, 4}), T(f4, {3, 4, 5})}), "matmul", "[2]", "[3]");
  CHECK_USER_ERROR(meta_error("matmul", {T(f4, {}), T(f4, {3})}), "at least 1-D");
  CHECK_USER_ERROR(meta_error("matmul", {T(f4, {2, 3}), T(f2, {3, 2})}), "dtype");
}

OPS_TEST_CASE("meta bmm", "bmm") {
  CHECK(meta1("bmm", {T(f4, {2, 3, 4}), T(f4, {2, 4, 5})}) == tt(f4, {2, 3, 5}));
  CHECK_USER_ERROR(meta_error("bmm", {T(f4, {2, 3, 4}), T(f4, {1, 4, 5})}), "bmm", "[2, 3, 4]", "[1, 4, 5]");
  CHECK_USER_ERROR(meta_error("bmm", {T(f4, {2, 3, 4}), T(f4, {2, 3, 5})}), "[2, 3, 5]");
  CHECK_USER_ERROR(meta_error("bmm", {T(f4, {3, 4}), T(f4, {4, 5})}), "bmm");
}

OPS_TEST_CASE("meta addmm", "addmm") {
  CHECK(meta1("addmm", {T(f4, {3}), T(f4, {2, 4}), T(f4, {4, 3})}) == tt(f4, {2, 3}));
  CHECK(meta1("addmm", {T(f4, {2, 1}), T(f4, {2, 4}), T(f4, {4, 3})}, {{"beta", 0.5}, {"alpha", I(2)}}) ==
        tt(f4, {2, 3}));
  CHECK(meta1("addmm", {T(f4, {}), T(f4, {2, 4}), T(f4, {4, 3})}) == tt(f4, {2, 3}));
  CHECK_USER_ERROR(meta_error("addmm", {T(f4, {4}), T(f4, {2, 4}), T(f4, {4, 3})}), "addmm", "[4]");
  CHECK_USER_ERROR(meta_error("addmm", {T(f4, {2, 2, 3}), T(f4, {2, 4}), T(f4, {4, 3})}), "addmm",
                   "does not broadcast to [2, 3]");
  CHECK_USER_ERROR(meta_error("addmm", {T(f4, {3}), T(f4, {2, 4}), T(f4, {5, 3})}), "[2, 4]", "[5, 3]");
}

OPS_TEST_CASE("meta conv2d_backward_input and conv2d_backward_weight: the differentiated shape, the gradient must be "
              "conv2d's output", "conv2d_backward_input", "conv2d_backward_weight") {
  Attrs a = {{"stride", IntList{2, 1}}, {"padding", IntList{1, 2}}, {"dilation", IntList{2, 3}}, {"groups", I(2)}};
  Attrs in = a, wt = a;
  in.set("input_size", IntList{2, 8, 15, 17});
  wt.set("weight_size", IntList{16, 4, 3, 3});
  // conv2d([2, 8, 15, 17], [16, 4, 3, 3]) is [2, 16, 7, 15] (meta conv2d below).
  CHECK(meta1("conv2d_backward_input", {T(f4, {2, 16, 7, 15}), T(f4, {16, 4, 3, 3})}, in) == tt(f4, {2, 8, 15, 17}));
  CHECK(meta1("conv2d_backward_weight", {T(f8, {2, 16, 7, 15}), T(f8, {2, 8, 15, 17})}, wt) == tt(f8, {16, 4, 3, 3}));
  // An input one row taller has the same output (the floor): still valid.
  in.set("input_size", IntList{2, 8, 16, 17});
  CHECK(meta1("conv2d_backward_input", {T(f4, {2, 16, 7, 15}), T(f4, {16, 4, 3, 3})}, in) == tt(f4, {2, 8, 16, 17}));
  CHECK_USER_ERROR(meta_error("conv2d_backward_input", {T(f4, {2, 16, 8, 15}), T(f4, {16, 4, 3, 3})}, in),
                   "conv2d_backward_input", "the gradient is float32 [2, 16, 8, 15]", "is float32 [2, 16, 7, 15]");
  CHECK_USER_ERROR(meta_error("conv2d_backward_weight", {T(f4, {2, 16, 7, 15}), T(f8, {2, 8, 15, 17})}, wt),
                   "conv2d_backward_weight", "float64");
  CHECK_USER_ERROR(meta_error("conv2d_backward_weight", {T(f4, {16, 7, 15}), T(f4, {8, 15, 17})}, wt),
                   "conv2d_backward_weight", "4-D");
  wt.set("weight_size", IntList{16, 4, 3});
  CHECK_USER_ERROR(meta_error("conv2d_backward_weight", {T(f4, {2, 16, 7, 15}), T(f4, {2, 8, 15, 17})}, wt),
                   "conv2d_backward_weight", "weight_size must have 4 values");
  CHECK_USER_ERROR(meta_error("conv2d_backward_input", {T(i8, {2, 16, 7, 15}), T(i8, {16, 4, 3, 3})}, in),
                   "conv2d_backward_input");
}

OPS_TEST_CASE("meta channels-last gradients: conv2d's and max_pool2d's through the permutation",
              "conv2d_backward_input_nhwc", "conv2d_backward_weight_nhwc", "max_pool2d_backward_nhwc") {
  Attrs a = {{"stride", IntList{2, 1}}, {"padding", IntList{1, 2}}, {"dilation", IntList{2, 3}}, {"groups", I(2)}};
  Attrs in = a, wt = a;
  in.set("input_size", IntList{2, 8, 15, 17});  // NCHW, as the NCHW operator's
  wt.set("weight_size", IntList{16, 4, 3, 3});
  // The gradient [N, OH, OW, K]; the input's gradient [N, H, W, C]; the weight's OIHW.
  CHECK(meta1("conv2d_backward_input_nhwc", {T(f4, {2, 7, 15, 16}), T(f4, {16, 4, 3, 3})}, in) ==
        tt(f4, {2, 15, 17, 8}));
  CHECK(meta1("conv2d_backward_weight_nhwc", {T(f8, {2, 7, 15, 16}), T(f8, {2, 15, 17, 8})}, wt) ==
        tt(f8, {16, 4, 3, 3}));
  // The NCHW operator's checks, in NHWC terms: an NCHW gradient is the wrong shape.
  CHECK_USER_ERROR(meta_error("conv2d_backward_input_nhwc", {T(f4, {2, 16, 7, 15}), T(f4, {16, 4, 3, 3})}, in),
                   "conv2d_backward_input", "the gradient");
  CHECK_USER_ERROR(meta_error("conv2d_backward_weight_nhwc", {T(f4, {2, 7, 15, 16}), T(f4, {8, 15, 17})}, wt),
                   "conv2d_backward_weight_nhwc", "4-D [N, H, W, C]");
  const Attrs pool{{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}}};
  CHECK(meta1("max_pool2d_backward_nhwc", {T(f4, {1, 56, 56, 64}), T(f4, {1, 112, 112, 64})}, pool) ==
        tt(f4, {1, 112, 112, 64}));
  CHECK_USER_ERROR(meta_error("max_pool2d_backward_nhwc", {T(f4, {1, 64, 56, 56}), T(f4, {1, 112, 112, 64})}, pool),
                   "max_pool2d_backward", "the gradient");
}

OPS_TEST_CASE("meta conv2d", "conv2d") {
  auto conv = [](Shape x, Shape w, Attrs attrs = {}) {
    return meta_shape("conv2d", {T(f4, std::move(x)), T(f4, std::move(w)), N()}, std::move(attrs));
  };
  CHECK(conv({1, 3, 224, 224}, {64, 3, 7, 7}, {{"stride", IntList{2, 2}}, {"padding", IntList{3, 3}}}) ==
        Shape{1, 64, 112, 112});
  CHECK(conv({2, 8, 15, 17}, {16, 4, 3, 3},
             {{"stride", IntList{2, 1}}, {"padding", IntList{1, 2}}, {"dilation", IntList{2, 3}}, {"groups", I(2)}}) ==
        Shape{2, 16, 7, 15});
  // Depthwise with a channel multiplier of 2.
  CHECK(conv({1, 32, 10, 10}, {64, 1, 3, 3}, {{"groups", I(32)}, {"padding", IntList{1}}}) == Shape{1, 64, 10, 10});
  // Unbatched input.
  CHECK(conv({3, 10, 10}, {4, 3, 3, 3}) == Shape{4, 8, 8});
  CHECK(conv({1, 3, 2, 2}, {4, 3, 3, 3}, {{"padding", IntList{1, 1}}}) == Shape{1, 4, 2, 2});
  CHECK(conv({1, 3, 9, 9}, {4, 3, 3, 3}, {{"stride", IntList{2}}}) == Shape{1, 4, 4, 4});
  // With a bias, on CUDA.
  auto cuda = [](Shape s) { return T(tt(f4, std::move(s), Device::cuda())); };
  CHECK(meta1("conv2d", {cuda({1, 3, 8, 8}), cuda({4, 3, 1, 1}), cuda({4})}) == tt(f4, {1, 4, 8, 8}, Device::cuda()));

  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 10, 10}), T(f4, {4, 2, 3, 3}), N()}), "[4, 2, 3, 3]",
                   "expects 2 x 1 (groups) input channels", "[1, 3, 10, 10]", "has 3");
  // groups * weight channels would overflow int64: still the mismatch message.
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 4, 10, 10}), T(f4, {4, std::int64_t{1} << 62, 3, 3}), N()},
                              {{"groups", std::int64_t{4}}}),
                   "input channels", "has 4");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 2, 2}), T(f4, {4, 3, 3, 3}), N()}), "conv2d", "smaller",
                   "[4, 3, 3, 3]");
  CHECK_USER_ERROR(
      meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f4, {4, 3, 3, 3}), N()}, {{"dilation", IntList{3, 3}}}),
      "smaller");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 4, 5, 5}), T(f4, {6, 1, 3, 3}), N()}, {{"groups", I(3)}}),
                   "groups=3");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f4, {4, 3, 3, 3}), T(f4, {5})}),
                   "bias must have shape [4]", "[5]");
  CHECK_USER_ERROR(meta_error("conv2d", {T(i4, {1, 3, 5, 5}), T(i4, {4, 3, 3, 3}), N()}), "floating point");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f4, {4, 3, 3}), N()}), "weight must be 4-D");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {3, 5}), T(f4, {4, 3, 3, 3}), N()}), "3-D", "4-D", "[3, 5]");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f4, {4, 3, 3, 3}), N()}, {{"stride", IntList{0}}}),
                   "stride");
  CHECK_USER_ERROR(
      meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f4, {4, 3, 3, 3}), N()}, {{"stride", IntList{1, 1, 1}}}),
      "stride must have 1 or 2 values");
  CHECK_USER_ERROR(meta_error("conv2d", {T(f4, {1, 3, 5, 5}), T(f2, {4, 3, 3, 3}), N()}), "dtype", "float16");
}

TEST_CASE("pooled_size matches torch's pooling_output_shape") {
  // (size, kernel, stride, pad) -> torch's output size without / with ceil_mode (dilation 1).
  struct Case {
    std::int64_t size, k, s, p, floor_out, ceil_out;
  };
  const Case cases[] = {
      {5, 2, 2, 0, 2, 3},  {5, 3, 2, 1, 3, 3},  {6, 3, 2, 1, 3, 4},     {4, 2, 3, 0, 1, 2},
      {7, 3, 3, 1, 3, 3},  {10, 3, 4, 1, 3, 3}, {2, 2, 2, 1, 2, 2},     {1, 2, 2, 1, 1, 1},
      {112, 3, 2, 1, 56, 57}, {6, 2, 3, 1, 3, 3}, {3, 3, 3, 1, 1, 2}, {5, 3, 3, 1, 2, 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.size);
    CAPTURE(c.k);
    CAPTURE(c.s);
    CAPTURE(c.p);
    CHECK(pooled_size(c.size, c.k, c.p, c.s, 1, false) == c.floor_out);
    CHECK(pooled_size(c.size, c.k, c.p, c.s, 1, true) == c.ceil_out);
  }
  CHECK(pooled_size(10, 3, 1, 2, 2, true) == 5);
  CHECK(pooled_size(10, 3, 0, 2, 3, false) == 2);
  // Negative spans round toward minus infinity (conv2d relies on it to detect too-small inputs).
  CHECK(pooled_size(2, 3, 0, 1, 1, false) == 0);
  CHECK(pooled_size(2, 5, 0, 2, 1, false) == -1);  // torch: floor(-3 / 2) + 1
  // Attributes from a model file can be any int64: an overflowing size is a user error, never UB.
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  auto error_of = [](auto fn) {
    try {
      fn();
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of([&] { pooled_size(10, 3, big, 1, 1, false); }).find("overflows int64") != std::string::npos);
  CHECK(error_of([&] { pooled_size(10, big, 0, 1, 3, false); }).find("overflows int64") != std::string::npos);
  CHECK(error_of([&] { pooled_size(big, 1, 0, big, 1, true); }).find("overflows int64") != std::string::npos);
  CHECK(pooled_size(big - 2, 1, 0, 1, 1, false) == big - 2);
  // span = -2^63: floor(-2^63 / 3) + 1, computed without negating the span (which would overflow).
  CHECK(pooled_size(-big, 1, 0, 3, 1, false) == -3074457345618258602LL);
}

OPS_TEST_CASE("meta max_pool2d and avg_pool2d", "max_pool2d", "avg_pool2d") {
  // (size, kernel, stride, pad) -> torch.nn.functional.max_pool2d / avg_pool2d output sizes. The ceil_mode cases
  // (5,3,3,1), (10,3,4,1) and (1,2,2,1) hit the "last window must start inside" rule.
  struct Case {
    std::int64_t size, k, s, p, floor_out, ceil_out;
  };
  const Case cases[] = {
      {5, 2, 2, 0, 2, 3}, {6, 3, 2, 1, 3, 4}, {4, 2, 3, 0, 1, 2}, {10, 3, 4, 1, 3, 3},
      {1, 2, 2, 1, 1, 1}, {112, 3, 2, 1, 56, 57}, {3, 3, 3, 1, 1, 2}, {5, 3, 3, 1, 2, 2},
  };
  for (const char* name : {"max_pool2d", "avg_pool2d"}) {
    for (const Case& c : cases) {
      CAPTURE(name);
      CAPTURE(c.size);
      CAPTURE(c.k);
      CAPTURE(c.s);
      CAPTURE(c.p);
      Attrs a{{"kernel_size", IntList{c.k, c.k}}, {"stride", IntList{c.s, c.s}}, {"padding", IntList{c.p, c.p}}};
      CHECK(meta_shape(name, {T(f4, {1, 2, c.size, c.size})}, a) == Shape{1, 2, c.floor_out, c.floor_out});
      a.set("ceil_mode", true);
      CHECK(meta_shape(name, {T(f4, {1, 2, c.size, c.size})}, a) == Shape{1, 2, c.ceil_out, c.ceil_out});
    }
    // stride [] means stride = kernel_size; a single value applies to both dims; unbatched input.
    CHECK(meta1(name, {T(f2, {3, 8, 6})}, {{"kernel_size", IntList{2}}}) == tt(f2, {3, 4, 3}));
    CHECK(meta_shape(name, {T(f4, {1, 1, 9, 7})}, {{"kernel_size", IntList{3, 2}}, {"stride", IntList{2, 1}}}) ==
          Shape{1, 1, 4, 6});
    CHECK_USER_ERROR(meta_error(name, {T(f4, {1, 1, 5, 5})},
                                {{"kernel_size", IntList{3}}, {"stride", IntList{1}}, {"padding", IntList{2}}}),
                     name, "padding 2", "half");
    // torch: "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"
    CHECK_USER_ERROR(meta_error(name, {T(f4, {1, 1, 2, 2})}, {{"kernel_size", IntList{3}}, {"stride", IntList{1}}}),
                     name, "too small", "[1, 1, 2, 2]");
    CHECK_USER_ERROR(meta_error(name, {T(f4, {1, 1, 5, 5})}, {{"kernel_size", IntList{0}}}), "positive");
    CHECK_USER_ERROR(meta_error(name, {T(f4, {5, 5})}, {{"kernel_size", IntList{2}}}), "3-D", "[5, 5]");
    CHECK_THROWS_AS(meta(name, {T(f4, {1, 1, 5, 5})}), InternalError);  // kernel_size is required
  }
  // Dilation (max pooling only): torch gives 5 and 2.
  CHECK(meta_shape("max_pool2d", {T(f4, {1, 1, 10, 10})},
                   {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}},
                    {"dilation", IntList{2}}, {"ceil_mode", true}}) == Shape{1, 1, 5, 5});
  CHECK(meta_shape("max_pool2d", {T(f4, {1, 1, 10, 10})},
                   {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"dilation", IntList{3}}}) ==
        Shape{1, 1, 2, 2});
  CHECK_THROWS_AS(meta("avg_pool2d", {T(f4, {1, 1, 10, 10})}, {{"kernel_size", IntList{3}}, {"dilation", IntList{2}}}),
                  InternalError);
  CHECK(meta1("max_pool2d", {T(i8, {1, 1, 4, 4})}, {{"kernel_size", IntList{2}}}) == tt(i8, {1, 1, 2, 2}));
  CHECK_USER_ERROR(meta_error("avg_pool2d", {T(i8, {1, 1, 4, 4})}, {{"kernel_size", IntList{2}}}), "avg_pool2d",
                   "floating point");
  CHECK(meta1("avg_pool2d", {T(f4, {1, 1, 4, 4})},
              {{"kernel_size", IntList{2}}, {"count_include_pad", false}, {"divisor_override", I(3)}}) ==
        tt(f4, {1, 1, 2, 2}));
}

OPS_TEST_CASE("meta adaptive_avg_pool2d", "adaptive_avg_pool2d") {
  CHECK(meta1("adaptive_avg_pool2d", {T(f4, {1, 3, 7, 9})}, {{"output_size", IntList{2, 3}}}) == tt(f4, {1, 3, 2, 3}));
  CHECK(meta1("adaptive_avg_pool2d", {T(f4, {2, 3, 7, 9})}, {{"output_size", IntList{5}}}) == tt(f4, {2, 3, 5, 5}));
  CHECK(meta1("adaptive_avg_pool2d", {T(f2, {3, 7, 9})}, {{"output_size", IntList{1, 1}}}) == tt(f2, {3, 1, 1}));
  CHECK(meta1("adaptive_avg_pool2d", {T(f4, {1, 3, 2, 2})}, {{"output_size", IntList{4, 4}}}) == tt(f4, {1, 3, 4, 4}));
  CHECK_USER_ERROR(meta_error("adaptive_avg_pool2d", {T(f4, {1, 3, 7, 9})}, {{"output_size", IntList{0, 1}}}),
                   "positive", "[0, 1]");
  CHECK_USER_ERROR(meta_error("adaptive_avg_pool2d", {T(f4, {7, 9})}, {{"output_size", IntList{1}}}), "[7, 9]");
  CHECK_USER_ERROR(meta_error("adaptive_avg_pool2d", {T(i4, {1, 3, 7, 9})}, {{"output_size", IntList{1}}}),
                   "floating point");
  CHECK_USER_ERROR(meta_error("adaptive_avg_pool2d", {T(f4, {1, 3, 7, 9})}, {{"output_size", IntList{1, 2, 3}}}),
                   "1 or 2 values");
}

OPS_TEST_CASE("meta embedding", "embedding") {
  CHECK(meta1("embedding", {T(f4, {10, 4}), T(i8, {2, 3})}) == tt(f4, {2, 3, 4}));
  CHECK(meta1("embedding", {T(f2, {10, 4}), T(i4, {5})}) == tt(f2, {5, 4}));
  CHECK(meta1("embedding", {T(f4, {10, 4}), T(i8, {})}) == tt(f4, {4}));
  CHECK_USER_ERROR(meta_error("embedding", {T(f4, {10, 4}), T(f4, {2})}), "indices", "int32 or int64", "float32");
  CHECK_USER_ERROR(meta_error("embedding", {T(f4, {10}), T(i8, {2})}), "weight must be 2-D", "[10]");
}

OPS_TEST_CASE("meta scaled_dot_product_attention", "scaled_dot_product_attention") {
  const char* sdpa = "scaled_dot_product_attention";
  auto q = [] { return T(f4, {2, 4, 8, 16}); };
  auto k = [] { return T(f4, {2, 4, 10, 16}); };
  auto v = [] { return T(f4, {2, 4, 10, 32}); };
  CHECK(meta1(sdpa, {q(), k(), v(), N()}) == tt(f4, {2, 4, 8, 32}));
  CHECK(meta1(sdpa, {q(), k(), v(), N()}, {{"is_causal", true}, {"scale", 0.125}}) == tt(f4, {2, 4, 8, 32}));
  // Masks are [..., L, S] and broadcast to the attention weights [2, 4, 8, 10].
  CHECK(meta1(sdpa, {q(), k(), v(), T(b1, {8, 10})}) == tt(f4, {2, 4, 8, 32}));
  CHECK(meta1(sdpa, {q(), k(), v(), T(f4, {2, 1, 8, 10})}) == tt(f4, {2, 4, 8, 32}));
  CHECK(meta1(sdpa, {q(), k(), v(), T(b1, {1, 10})}) == tt(f4, {2, 4, 8, 32}));
  CHECK_USER_ERROR(meta_error(sdpa, {q(), k(), v(), T(b1, {8, 8})}), "mask", "[8, 8]");
  CHECK_USER_ERROR(meta_error(sdpa, {q(), k(), v(), T(f4, {3, 1, 8, 10})}), "mask", "[3, 1, 8, 10]");
  // A float mask must have the query's dtype; a bool mask need not.
  CHECK_USER_ERROR(meta_error(sdpa, {q(), k(), v(), T(f2, {8, 10})}), "dtype", "float16");
  // Unbatched 2-D and broadcast batch dims.
  CHECK(meta1(sdpa, {T(f2, {8, 16}), T(f2, {10, 16}), T(f2, {10, 4}), N()}) == tt(f2, {8, 4}));
  CHECK(meta1(sdpa, {T(f4, {1, 4, 8, 16}), T(f4, {2, 1, 10, 16}), T(f4, {2, 1, 10, 32}), N()}) ==
        tt(f4, {2, 4, 8, 32}));
  CHECK_USER_ERROR(meta_error(sdpa, {q(), T(f4, {2, 4, 10, 8}), v(), N()}), sdpa, "do not fit");
  CHECK_USER_ERROR(meta_error(sdpa, {q(), k(), T(f4, {2, 4, 9, 32}), N()}), "do not fit");
  CHECK_USER_ERROR(meta_error(sdpa, {q(), T(f4, {4, 10, 16}), v(), N()}), "same rank");
  CHECK_USER_ERROR(meta_error(sdpa, {T(i8, {2, 8, 16}), T(i8, {2, 10, 16}), T(i8, {2, 10, 32}), N()}),
                   "floating point");
  CHECK_USER_ERROR(meta_error(sdpa, {q(), T(f2, {2, 4, 10, 16}), v(), N()}), "dtype");
}

OPS_TEST_CASE("meta group_norm and upsample_nearest2d", "group_norm", "upsample_nearest2d") {
  CHECK(meta1("group_norm", {T(f4, {2, 6, 3, 3}), T(f4, {6}), T(f4, {6})}, {{"num_groups", I(3)}}) == tt(f4, {2, 6, 3, 3}));
  CHECK(meta1("group_norm", {T(f4, {2, 4}), N(), N()}, {{"num_groups", I(1)}}) == tt(f4, {2, 4}));
  CHECK_USER_ERROR(meta_error("group_norm", {T(f4, {2, 6, 3}), N(), N()}, {{"num_groups", I(4)}}), "group_norm", "6 channels",
                   "4 groups");
  CHECK_USER_ERROR(meta_error("group_norm", {T(f4, {2, 6}), T(f4, {3}), N()}, {{"num_groups", I(2)}}), "weight", "[3]", "[6]");
  CHECK_USER_ERROR(meta_error("group_norm", {T(i8, {2, 6}), N(), N()}, {{"num_groups", I(2)}}), "group_norm", "floating point");
  CHECK(meta1("upsample_nearest2d", {T(f4, {1, 3, 4, 5})}, {{"output_size", IntList{8, 7}}}) == tt(f4, {1, 3, 8, 7}));
  CHECK(meta1("upsample_nearest2d", {T(i8, {1, 1, 4, 4})}, {{"output_size", IntList{2, 2}}, {"scale_h", 0.5}}) ==
        tt(i8, {1, 1, 2, 2}));
  CHECK_USER_ERROR(meta_error("upsample_nearest2d", {T(f4, {3, 4, 5})}, {{"output_size", IntList{8, 7}}}), "4-D");
  CHECK_USER_ERROR(meta_error("upsample_nearest2d", {T(f4, {1, 3, 4, 5})}, {{"output_size", IntList{8}}}), "two positive");
}

OPS_TEST_CASE("meta channels-last forms: the NCHW operator's rules through the permutation", "conv2d_nhwc",
              "max_pool2d_nhwc", "avg_pool2d_nhwc") {
  // [N, H, W, C] in, [N, H', W', C'] out, the sizes of the NCHW operator.
  const Attrs conv_attrs{{"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}};
  CHECK(meta1("conv2d_nhwc", {T(f4, {2, 9, 7, 3}), T(f4, {8, 3, 3, 3}), T(f4, {8})}, conv_attrs) ==
        tt(f4, {2, 5, 4, 8}));
  CHECK(meta_shape("conv2d", {T(f4, {2, 3, 9, 7}), T(f4, {8, 3, 3, 3}), T(f4, {8})}, conv_attrs) == Shape{2, 8, 5, 4});
  CHECK(meta1("conv2d_nhwc", {T(f4, {1, 6, 6, 12}), T(f4, {12, 1, 3, 3}), N()}, {{"groups", I(12)}}) ==
        tt(f4, {1, 4, 4, 12}));
  const Attrs pool{{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}}};
  for (const char* name : {"max_pool2d_nhwc", "avg_pool2d_nhwc"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f4, {1, 112, 112, 64})}, pool) == tt(f4, {1, 56, 56, 64}));
    CHECK_USER_ERROR(meta_error(name, {T(f4, {3, 8, 6})}, pool), name, "4-D [N, H, W, C]", "[3, 8, 6]");
  }
  // The NCHW operator's checks still apply, read in NHWC terms: the channels are the last dim.
  CHECK_USER_ERROR(meta_error("conv2d_nhwc", {T(f4, {1, 6, 6, 4}), T(f4, {8, 3, 3, 3}), N()}, {}), "conv2d",
                   "input channels");
  CHECK_USER_ERROR(meta_error("conv2d_nhwc", {T(f4, {1, 3, 3}), T(f4, {8, 3, 3, 3}), N()}, {}), "conv2d_nhwc",
                   "4-D");
}
