// Meta functions of the orderings, scatters, advanced indexing and resampling operators: output shapes and
// dtypes as PyTorch gives them, and a UserError naming the operator for what PyTorch rejects.
#include <doctest/doctest.h>

#include "core_test_util.h"

using namespace coretest;

namespace {
constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i4 = DType::Int32, i8 = DType::Int64, f4 = DType::Float32,
                f8 = DType::Float64;
}  // namespace

OPS_TEST_CASE("meta prod", "prod") {
  CHECK(meta1("prod", {T(f4, {2, 3})}, {{"dim", I(1)}}) == tt(f4, {2}));
  CHECK(meta1("prod", {T(f4, {2, 3})}, {{"dim", I(-2)}, {"keepdim", true}}) == tt(f4, {1, 3}));
  CHECK(meta1("prod", {T(f4, {2, 3})}) == tt(f4, {}));
  CHECK(meta1("prod", {T(f4, {2, 3})}, {{"keepdim", true}}) == tt(f4, {1, 1}));
  CHECK(meta1("prod", {T(i4, {2, 3})}, {{"dim", I(0)}}) == tt(i8, {3}));  // integers and bools in int64
  CHECK(meta1("prod", {T(b1, {2})}) == tt(i8, {}));
  CHECK(meta1("prod", {T(i4, {2})}, {{"dtype", f8}}) == tt(f8, {}));
  CHECK(meta1("prod", {T(f4, {})}, {{"dim", I(0)}}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("prod", {T(f4, {2})}, {{"dim", I(1)}}), "prod", "out of range");
}

OPS_TEST_CASE("meta sort and topk: values and int64 positions", "sort", "topk") {
  auto sorted = meta("sort", {T(f4, {3, 5})}, {{"dim", I(0)}, {"descending", true}});
  REQUIRE(sorted.size() == 2);
  CHECK(sorted[0] == tt(f4, {3, 5}));
  CHECK(sorted[1] == tt(i8, {3, 5}));
  CHECK(meta("sort", {T(b1, {})})[1] == tt(i8, {}));
  CHECK_USER_ERROR(meta_error("sort", {T(f4, {3})}, {{"dim", I(1)}}), "sort", "out of range");
  auto top = meta("topk", {T(f4, {3, 5})}, {{"k", I(2)}});
  REQUIRE(top.size() == 2);
  CHECK(top[0] == tt(f4, {3, 2}));
  CHECK(top[1] == tt(i8, {3, 2}));
  CHECK(meta("topk", {T(i4, {3, 5})}, {{"k", I(3)}, {"dim", I(0)}})[0] == tt(i4, {3, 5}));
  CHECK(meta("topk", {T(f4, {3, 5})}, {{"k", I(0)}})[0] == tt(f4, {3, 0}));
  CHECK(meta("topk", {T(f4, {})}, {{"k", I(1)}})[0] == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("topk", {T(f4, {3, 5})}, {{"k", I(6)}}), "topk", "k (6)", "size 5");
  CHECK_USER_ERROR(meta_error("topk", {T(f4, {3, 5})}, {{"k", I(-1)}}), "topk", "out of range");
  CHECK_USER_ERROR(meta_error("topk", {T(b1, {3})}, {{"k", I(1)}}), "topk", "bool");
}

OPS_TEST_CASE("meta diagonal", "diagonal") {
  CHECK(meta1("diagonal", {T(f4, {5, 7})}) == tt(f4, {5}));
  CHECK(meta1("diagonal", {T(f4, {5, 7})}, {{"offset", I(3)}}) == tt(f4, {4}));
  CHECK(meta1("diagonal", {T(f4, {5, 7})}, {{"offset", I(-2)}}) == tt(f4, {3}));
  CHECK(meta1("diagonal", {T(f4, {5, 7})}, {{"offset", I(9)}}) == tt(f4, {0}));
  CHECK(meta1("diagonal", {T(i8, {2, 3, 4})}, {{"dim1", I(-1)}, {"dim2", I(0)}}) == tt(i8, {3, 2}));
  CHECK_USER_ERROR(meta_error("diagonal", {T(f4, {5})}), "diagonal", "at least 2 dims");
  CHECK_USER_ERROR(meta_error("diagonal", {T(f4, {5, 5})}, {{"dim1", I(1)}, {"dim2", I(-1)}}), "diagonal", "both dimension 1");
}

OPS_TEST_CASE("meta scatter and scatter_reduce", "scatter", "scatter_reduce") {
  CHECK(meta1("scatter", {T(f4, {5, 8}), T(i8, {5, 4}), T(f4, {5, 6})}, {{"dim", I(1)}}) == tt(f4, {5, 8}));
  CHECK(meta1("scatter", {T(i4, {5, 8}), T(i8, {2, 8}), S(Scalar(std::int64_t{3}))}, {{"dim", I(0)}}) == tt(i4, {5, 8}));
  CHECK(meta1("scatter", {T(f4, {}), T(i8, {}), S(Scalar(1.0))}, {{"dim", I(0)}}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("scatter", {T(f4, {5, 8}), T(i4, {5, 4}), T(f4, {5, 4})}, {{"dim", I(1)}}), "scatter", "int64");
  CHECK_USER_ERROR(meta_error("scatter", {T(f4, {5, 8}), T(i8, {5}), T(f4, {5})}, {{"dim", I(0)}}), "scatter", "as many dims");
  CHECK_USER_ERROR(meta_error("scatter", {T(f4, {5, 8}), T(i8, {5, 4}), T(f4, {5, 3})}, {{"dim", I(1)}}), "scatter",
                   "larger than src");
  CHECK_USER_ERROR(meta_error("scatter", {T(f4, {5, 8}), T(i8, {6, 4}), T(f4, {6, 4})}, {{"dim", I(1)}}), "scatter",
                   "larger than the input", "dimension 0");
  CHECK_USER_ERROR(meta_error("scatter", {T(f4, {5, 8}), T(i8, {5, 4}), T(f8, {5, 4})}, {{"dim", I(1)}}), "scatter", "dtype");
  Attrs sum = {{"dim", I(0)}, {"reduce", std::string("sum")}};
  CHECK(meta1("scatter_reduce", {T(f4, {10, 4}), T(i8, {6, 4}), T(f4, {6, 4})}, sum) == tt(f4, {10, 4}));
  CHECK_USER_ERROR(meta_error("scatter_reduce", {T(f4, {10, 4}), T(i8, {6, 4}), T(f4, {6, 4})},
                              {{"dim", I(0)}, {"reduce", std::string("max")}}),
                   "scatter_reduce", "sum, prod, mean, amax, amin", "'max'");
  CHECK_USER_ERROR(meta_error("scatter_reduce", {T(f4, {10, 4}), T(i8, {6, 4}), T(i4, {6, 4})}, sum), "scatter_reduce", "dtype");
}

OPS_TEST_CASE("meta index and index_put: PyTorch's placement of the broadcast index dims", "index", "index_put") {
  CHECK(meta1("index", {T(f4, {10, 12, 3}), T(i8, {4})}, {{"dims", IntList{0}}}) == tt(f4, {4, 12, 3}));
  CHECK(meta1("index", {T(f4, {10, 12, 3}), T(i8, {2, 3})}, {{"dims", IntList{1}}}) == tt(f4, {10, 2, 3, 3}));
  CHECK(meta1("index", {T(f4, {10, 12, 3}), T(i8, {4, 1}), T(i4, {5})}, {{"dims", IntList{0, 1}}}) == tt(f4, {4, 5, 3}));
  CHECK(meta1("index", {T(f4, {10, 12, 3}), T(i8, {4}), T(i8, {4})}, {{"dims", IntList{0, 2}}}) == tt(f4, {4, 12}));
  CHECK(meta1("index", {T(f4, {10, 12, 3}), T(i8, {4}), T(i8, {4})}, {{"dims", IntList{1, 2}}}) == tt(f4, {10, 4}));
  CHECK(meta1("index", {T(f4, {10, 12}), T(i8, {})}, {{"dims", IntList{1}}}) == tt(f4, {10}));
  CHECK_USER_ERROR(meta_error("index", {T(f4, {10, 12}), T(b1, {10})}, {{"dims", IntList{0}}}), "index", "boolean mask",
                   "depends on the mask's values");
  CHECK_USER_ERROR(meta_error("index", {T(f4, {10, 12}), T(u1, {10})}, {{"dims", IntList{0}}}), "index", "boolean mask");
  CHECK_USER_ERROR(meta_error("index", {T(f4, {10, 12}), T(f4, {2})}, {{"dims", IntList{0}}}), "index", "int32 or int64");
  CHECK_USER_ERROR(meta_error("index", {T(f4, {10, 12}), T(i8, {2}), T(i8, {3})}, {{"dims", IntList{0, 1}}}), "index");
  CHECK_USER_ERROR(meta_error("index", {T(f4, {10, 12}), T(i8, {2})}, {{"dims", IntList{2}}}), "index", "2-D input", "[2]");
  Attrs rows = {{"dims", IntList{0}}};
  CHECK(meta1("index_put", {T(f4, {10, 4}), T(f4, {3, 4}), T(i8, {3})}, rows) == tt(f4, {10, 4}));
  CHECK(meta1("index_put", {T(f4, {10, 4}), T(f4, {}), T(i8, {3})}, rows) == tt(f4, {10, 4}));
  CHECK_USER_ERROR(meta_error("index_put", {T(f4, {10, 4}), T(f4, {2, 4}), T(i8, {3})}, rows), "index_put");
  CHECK_USER_ERROR(meta_error("index_put", {T(f4, {10, 4}), T(f8, {3, 4}), T(i8, {3})}, rows), "index_put", "dtype");
}

OPS_TEST_CASE("meta upsample_bilinear2d", "upsample_bilinear2d") {
  Attrs a = {{"output_size", IntList{10, 12}}, {"align_corners", false}};
  CHECK(meta1("upsample_bilinear2d", {T(f4, {2, 3, 5, 6})}, a) == tt(f4, {2, 3, 10, 12}));
  CHECK(meta1("upsample_bilinear2d", {T(f8, {1, 1, 5, 6})}, {{"output_size", IntList{1, 1}}, {"align_corners", true}}) ==
        tt(f8, {1, 1, 1, 1}));
  CHECK_USER_ERROR(meta_error("upsample_bilinear2d", {T(f4, {3, 5, 6})}, a), "upsample_bilinear2d", "4-D");
  CHECK_USER_ERROR(meta_error("upsample_bilinear2d", {T(i8, {1, 3, 5, 6})}, a), "upsample_bilinear2d");
  CHECK_USER_ERROR(meta_error("upsample_bilinear2d", {T(f4, {1, 3, 5, 6})}, {{"output_size", IntList{0, 3}}, {"align_corners", false}}),
                   "upsample_bilinear2d", "positive");
}

OPS_TEST_CASE("meta 3-D pooling", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d") {
  CHECK(meta1("max_pool3d", {T(f4, {2, 3, 5, 6, 7})}, {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}}}) ==
        tt(f4, {2, 3, 3, 3, 4}));
  CHECK(meta1("max_pool3d", {T(f4, {3, 5, 6, 7})}, {{"kernel_size", IntList{2}}, {"ceil_mode", true}}) == tt(f4, {3, 3, 3, 4}));
  CHECK(meta1("max_pool3d", {T(f4, {1, 1, 5, 6, 7})}, {{"kernel_size", IntList{2, 3, 2}}, {"dilation", IntList{2, 1, 2}}}) ==
        tt(f4, {1, 1, 2, 2, 3}));
  CHECK(meta1("avg_pool3d", {T(f8, {1, 2, 4, 4, 4})}, {{"kernel_size", IntList{2}}}) == tt(f8, {1, 2, 2, 2, 2}));
  CHECK(meta1("adaptive_avg_pool3d", {T(f4, {2, 3, 5, 6, 7})}, {{"output_size", IntList{1}}}) == tt(f4, {2, 3, 1, 1, 1}));
  CHECK_USER_ERROR(meta_error("max_pool3d", {T(f4, {5, 6, 7})}, {{"kernel_size", IntList{2}}}), "max_pool3d", "5-D");
  CHECK_USER_ERROR(meta_error("max_pool3d", {T(f4, {1, 5, 6, 7})}, {{"kernel_size", IntList{2, 2}}}), "max_pool3d", "1 or 3 values");
  CHECK_USER_ERROR(meta_error("max_pool3d", {T(f4, {1, 5, 6, 7})}, {{"kernel_size", IntList{2}}, {"padding", IntList{2}}}),
                   "max_pool3d", "half the kernel");
  CHECK_USER_ERROR(meta_error("max_pool3d", {T(f4, {1, 1, 6, 7})}, {{"kernel_size", IntList{2}}}), "max_pool3d", "too small");
  CHECK_USER_ERROR(meta_error("avg_pool3d", {T(i8, {1, 5, 6, 7})}, {{"kernel_size", IntList{2}}}), "avg_pool3d");
  CHECK_USER_ERROR(meta_error("avg_pool3d", {T(f4, {1, 5, 6, 7})}, {{"kernel_size", IntList{2}}, {"divisor_override", I(0)}}),
                   "avg_pool3d", "divisor_override");
  CHECK_USER_ERROR(meta_error("adaptive_avg_pool3d", {T(f4, {1, 5, 6, 7})}, {{"output_size", IntList{0}}}), "adaptive_avg_pool3d",
                   "positive");
}

OPS_TEST_CASE("meta max_pool2d_backward: the input's type, the gradient must be max_pool2d's output", "max_pool2d_backward") {
  const Attrs a = {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}}};
  CHECK(meta1("max_pool2d_backward", {T(f4, {2, 3, 4, 4}), T(f4, {2, 3, 7, 8})}, a) == tt(f4, {2, 3, 7, 8}));
  CHECK(meta1("max_pool2d_backward", {T(f8, {3, 4, 4}), T(f8, {3, 7, 8})}, a) == tt(f8, {3, 7, 8}));
  CHECK_USER_ERROR(meta_error("max_pool2d_backward", {T(f4, {2, 3, 4, 3}), T(f4, {2, 3, 7, 8})}, a), "max_pool2d_backward",
                   "[2, 3, 4, 4]");
  CHECK_USER_ERROR(meta_error("max_pool2d_backward", {T(f8, {2, 3, 4, 4}), T(f4, {2, 3, 7, 8})}, a), "max_pool2d_backward",
                   "float64");
  CHECK_USER_ERROR(meta_error("max_pool2d_backward", {T(i8, {2, 3, 4, 4}), T(i8, {2, 3, 7, 8})}, a), "max_pool2d_backward");
}

OPS_TEST_CASE("meta im2col and col2im: window positions, column shapes", "im2col", "col2im") {
  const Attrs w = {{"kernel_size", IntList{3, 2}}, {"dilation", IntList{1, 2}}, {"padding", IntList{1, 0}}, {"stride", IntList{2, 1}}};
  // OH = (7 + 2 - 2 - 1) / 2 + 1 = 4, OW = (6 - 2 - 1) / 1 + 1 = 4.
  CHECK(meta1("im2col", {T(f4, {2, 3, 7, 6})}, w) == tt(f4, {2, 18, 16}));
  Attrs f = w;
  f.set("output_size", IntList{7, 6});
  CHECK(meta1("col2im", {T(f8, {2, 18, 16})}, f) == tt(f8, {2, 3, 7, 6}));
  CHECK_USER_ERROR(meta_error("im2col", {T(f4, {3, 7, 6})}, w), "im2col", "[N, C, H, W]");
  CHECK_USER_ERROR(meta_error("im2col", {T(f4, {1, 1, 1, 1})}, w), "im2col", "does not fit");
  CHECK_USER_ERROR(meta_error("col2im", {T(f4, {2, 18, 15})}, f), "col2im", "are not [N, C*6, 16]");
  CHECK_USER_ERROR(meta_error("im2col", {T(i8, {2, 3, 7, 6})}, w), "im2col");
}

OPS_TEST_CASE("meta grid_sampler_2d and embedding_bag", "grid_sampler_2d", "embedding_bag") {
  CHECK(meta1("grid_sampler_2d", {T(f4, {2, 3, 5, 6}), T(f4, {2, 4, 7, 2})}) == tt(f4, {2, 3, 4, 7}));
  CHECK_USER_ERROR(meta_error("grid_sampler_2d", {T(f4, {2, 3, 5, 6}), T(f4, {1, 4, 7, 2})}), "grid_sampler_2d", "[N, H', W', 2]");
  CHECK_USER_ERROR(meta_error("grid_sampler_2d", {T(f4, {2, 3, 5, 6}), T(f8, {2, 4, 7, 2})}), "grid_sampler_2d", "dtype");
  CHECK_USER_ERROR(meta_error("grid_sampler_2d", {T(f4, {2, 3, 5, 6}), T(f4, {2, 4, 7, 2})}, {{"padding_mode", I(3)}}),
                   "grid_sampler_2d", "padding_mode");
  CHECK(meta1("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i8, {3}), N()}) == tt(f4, {3, 4}));
  CHECK(meta1("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i8, {3}), N()}, {{"include_last_offset", true}}) == tt(f4, {2, 4}));
  CHECK(meta1("embedding_bag", {T(f8, {10, 4}), T(i4, {5, 2}), N(), N()}, {{"mode", I(2)}}) == tt(f8, {5, 4}));
  CHECK(meta1("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i8, {3}), T(f4, {7})}) == tt(f4, {3, 4}));
  CHECK_USER_ERROR(meta_error("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), N(), N()}), "embedding_bag", "need offsets");
  CHECK_USER_ERROR(meta_error("embedding_bag", {T(f4, {10, 4}), T(i8, {5, 2}), T(i8, {3}), N()}), "embedding_bag", "None");
  CHECK_USER_ERROR(meta_error("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i4, {3}), N()}), "embedding_bag", "offsets");
  CHECK_USER_ERROR(meta_error("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i8, {3}), T(f4, {7})}, {{"mode", I(1)}}),
                   "embedding_bag", "mode 0");
  CHECK_USER_ERROR(meta_error("embedding_bag", {T(f4, {10, 4}), T(i8, {7}), T(i8, {3}), N()}, {{"mode", I(3)}}), "embedding_bag", "mode");
}

OPS_TEST_CASE("meta masked_scatter", "masked_scatter") {
  CHECK(meta1("masked_scatter", {T(f4, {5, 7}), T(b1, {7}), T(f4, {40})}) == tt(f4, {5, 7}));
  CHECK(meta1("masked_scatter", {T(f4, {1, 7}), T(b1, {5, 1}), T(f4, {3})}) == tt(f4, {5, 7}));
  CHECK_USER_ERROR(meta_error("masked_scatter", {T(f4, {5, 7}), T(u1, {7}), T(f4, {40})}), "masked_scatter", "bool");
  CHECK_USER_ERROR(meta_error("masked_scatter", {T(f4, {5, 7}), T(b1, {7}), T(f8, {40})}), "masked_scatter", "dtype");
  CHECK_USER_ERROR(meta_error("masked_scatter", {T(f4, {5, 7}), T(b1, {6}), T(f4, {40})}), "masked_scatter");
}

OPS_TEST_CASE("meta dropout_mask: the attributes' type, an int64 [2] rng", "dropout_mask") {
  const Attrs a = {{"shape", IntList{4, 1, 3}}, {"dtype", DType::Float32}, {"p", 0.25}};
  CHECK(meta1("dropout_mask", {N()}, a) == tt(f4, {4, 1, 3}));  // before autodiff gives it the rng
  CHECK(meta1("dropout_mask", {T(i8, {2})}, a) == tt(f4, {4, 1, 3}));
  Attrs d = a;
  d.set("dtype", DType::Float64);
  d.set("block", std::int64_t{12});
  CHECK(meta1("dropout_mask", {T(i8, {2})}, d) == tt(f8, {4, 1, 3}));
  CHECK_USER_ERROR(meta_error("dropout_mask", {T(i8, {3})}, a), "dropout_mask", "int64 [2]");
  CHECK_USER_ERROR(meta_error("dropout_mask", {T(i4, {2})}, a), "dropout_mask", "int64 [2]");
  Attrs bad = a;
  bad.set("p", 1.5);
  CHECK_USER_ERROR(meta_error("dropout_mask", {N()}, bad), "dropout_mask", "between 0 and 1");
  bad = a;
  bad.set("dtype", DType::Int32);
  CHECK_USER_ERROR(meta_error("dropout_mask", {N()}, bad), "dropout_mask");
}
