// Meta functions of reductions, normalizations and data-movement operators.
#include "core/ops/meta_util.h"
#include "core_test_util.h"

using namespace coretest;

namespace {
constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i1 = DType::Int8, i2 = DType::Int16, i4 = DType::Int32,
                i8 = DType::Int64, f2 = DType::Float16, f4 = DType::Float32, f8 = DType::Float64;
}  // namespace

TEST_CASE("wrap_dim") {
  CHECK(wrap_dim(-1, 3, "op") == 2);
  CHECK(wrap_dim(0, 3, "op") == 0);
  CHECK(wrap_dim(-3, 3, "op") == 0);
  CHECK(wrap_dim(0, 0, "op") == 0);
  CHECK(wrap_dim(-1, 0, "op") == 0);
  CHECK_THROWS_AS(wrap_dim(3, 3, "op"), UserError);
  CHECK_THROWS_AS(wrap_dim(-4, 3, "op"), UserError);
  CHECK_THROWS_AS(wrap_dim(1, 0, "op"), UserError);
  try {
    wrap_dim(5, 2, "myop");
    FAIL("expected UserError");
  } catch (const UserError& e) {
    CHECK(contains(e.what(), "myop"));
    CHECK(contains(e.what(), "5"));
    CHECK(contains(e.what(), "[-2, 1]"));
  }
}

OPS_TEST_CASE("meta sum", "sum") {
  CHECK(meta1("sum", {T(f4, {2, 3, 4})}) == tt(f4, {}));
  CHECK(meta1("sum", {T(f4, {2, 3, 4})}, {{"keepdim", true}}) == tt(f4, {1, 1, 1}));
  CHECK(meta1("sum", {T(f4, {2, 3, 4})}, {{"dims", IntList{1}}}) == tt(f4, {2, 4}));
  CHECK(meta1("sum", {T(f4, {2, 3, 4})}, {{"dims", IntList{-1, 0}}, {"keepdim", true}}) == tt(f4, {1, 3, 1}));
  CHECK(meta1("sum", {T(f4, {2, 3, 4})}, {{"dims", IntList{0, 2}}}) == tt(f4, {3}));
  // Integers and bools accumulate in int64; floating types are kept; dtype= wins.
  CHECK(meta_dtype("sum", {T(i4, {2})}) == i8);
  CHECK(meta_dtype("sum", {T(b1, {2})}) == i8);
  CHECK(meta_dtype("sum", {T(u1, {2})}) == i8);
  CHECK(meta_dtype("sum", {T(f2, {2})}) == f2);
  CHECK(meta_dtype("sum", {T(f4, {2})}, {{"dtype", f8}}) == f8);
  CHECK(meta_dtype("sum", {T(i4, {2})}, {{"dtype", f4}}) == f4);
  // 0-dim input: dim 0 and -1 are allowed.
  CHECK(meta1("sum", {T(f4, {})}, {{"dims", IntList{0}}}) == tt(f4, {}));
  CHECK(meta1("sum", {T(f4, {})}, {{"dims", IntList{-1}}, {"keepdim", true}}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("sum", {T(f4, {})}, {{"dims", IntList{1}}}), "out of range");
  CHECK_USER_ERROR(meta_error("sum", {T(f4, {2, 3, 4})}, {{"dims", IntList{3}}}), "sum", "dimension 3",
                   "out of range", "rank 3");
  CHECK_USER_ERROR(meta_error("sum", {T(f4, {2, 3, 4})}, {{"dims", IntList{0, -3}}}), "more than once");
}

OPS_TEST_CASE("meta mean", "mean") {
  CHECK(meta1("mean", {T(f4, {2, 3})}) == tt(f4, {}));
  CHECK(meta1("mean", {T(f2, {2, 3})}, {{"dims", IntList{-1}}, {"keepdim", true}}) == tt(f2, {2, 1}));
  CHECK(meta1("mean", {T(i4, {2, 3})}, {{"dtype", f4}, {"dims", IntList{0}}}) == tt(f4, {3}));
  // torch: "mean(): could not infer output dtype. Input dtype must be either a floating point ..."
  CHECK_USER_ERROR(meta_error("mean", {T(i4, {2, 3})}), "mean", "int32", "floating point");
  CHECK_USER_ERROR(meta_error("mean", {T(f4, {2, 3})}, {{"dtype", i8}}), "mean", "int64");
  CHECK_USER_ERROR(meta_error("mean", {T(f4, {2, 3})}, {{"dims", IntList{2}}}), "out of range");
}

OPS_TEST_CASE("meta amax", "amax") {
  CHECK(meta1("amax", {T(i4, {2, 3, 4})}, {{"dims", IntList{1}}}) == tt(i4, {2, 4}));
  CHECK(meta1("amax", {T(f4, {2, 3})}) == tt(f4, {}));
  CHECK(meta1("amax", {T(f4, {2, 3})}, {{"dims", IntList{-2}}, {"keepdim", true}}) == tt(f4, {1, 3}));
  CHECK_USER_ERROR(meta_error("amax", {T(f4, {2})}, {{"dims", IntList{-2}}}), "amax", "out of range");
  // amax has no dtype attribute.
  CHECK_THROWS_AS(meta("amax", {T(f4, {2})}, {{"dtype", f8}}), InternalError);
}

OPS_TEST_CASE("meta amin, any, all, var", "amin", "any", "all", "var") {
  CHECK(meta1("amin", {T(i4, {2, 3, 4})}, {{"dims", IntList{1}}}) == tt(i4, {2, 4}));
  CHECK(meta1("amin", {T(f4, {2, 3})}, {{"dims", IntList{-1}}, {"keepdim", true}}) == tt(f4, {2, 1}));
  for (const char* name : {"any", "all"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f4, {2, 3})}) == tt(b1, {}));
    CHECK(meta1(name, {T(i8, {2, 3})}, {{"dims", IntList{0}}, {"keepdim", true}}) == tt(b1, {1, 3}));
    CHECK(meta1(name, {T(u1, {2, 3})}, {{"dims", IntList{1}}}) == tt(u1, {2}));  // as ATen: uint8 stays uint8
    CHECK_USER_ERROR(meta_error(name, {T(b1, {2})}, {{"dims", IntList{1}}}), name, "out of range");
  }
  CHECK(meta1("var", {T(f8, {2, 3, 4})}, {{"dims", IntList{0, 2}}, {"correction", 0.0}}) == tt(f8, {3}));
  CHECK(meta1("var", {T(f4, {2, 3})}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("var", {T(i4, {2})}), "var", "floating point", "int32");
  CHECK_USER_ERROR(meta_error("var", {T(f4, {2, 3})}, {{"dims", IntList{1, -1}}}), "var", "more than once");
}

OPS_TEST_CASE("meta flip, repeat, constant_pad_nd", "flip", "repeat", "constant_pad_nd") {
  CHECK(meta1("flip", {T(i4, {2, 3})}, {{"dims", IntList{0, -1}}}) == tt(i4, {2, 3}));
  CHECK(meta1("flip", {T(f4, {})}, {{"dims", IntList{0}}}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("flip", {T(f4, {2, 3})}, {{"dims", IntList{1, -1}}}), "flip", "more than once");
  CHECK_USER_ERROR(meta_error("flip", {T(f4, {2, 3})}, {{"dims", IntList{2}}}), "flip", "out of range");
  CHECK(meta1("repeat", {T(f4, {2, 3})}, {{"repeats", IntList{2, 1, 3}}}) == tt(f4, {2, 2, 9}));
  CHECK(meta1("repeat", {T(b1, {2})}, {{"repeats", IntList{0}}}) == tt(b1, {0}));
  CHECK_USER_ERROR(meta_error("repeat", {T(f4, {2, 3})}, {{"repeats", IntList{2}}}), "repeat", "fewer");
  CHECK_USER_ERROR(meta_error("repeat", {T(f4, {2})}, {{"repeats", IntList{-1}}}), "repeat", "non-negative");
  CHECK(meta1("constant_pad_nd", {T(f4, {2, 3, 4})}, {{"pad", IntList{1, 2, -1, 0}}}) == tt(f4, {2, 2, 7}));
  CHECK(meta1("constant_pad_nd", {T(i8, {5})}, {{"pad", IntList{0, 0}}, {"value", 3.0}}) == tt(i8, {5}));
  CHECK_USER_ERROR(meta_error("constant_pad_nd", {T(f4, {2})}, {{"pad", IntList{1}}}), "constant_pad_nd", "pair");
  CHECK_USER_ERROR(meta_error("constant_pad_nd", {T(f4, {2})}, {{"pad", IntList{1, 1, 1, 1}}}), "constant_pad_nd", "at most 1");
  CHECK_USER_ERROR(meta_error("constant_pad_nd", {T(f4, {2})}, {{"pad", IntList{-2, -1}}}), "negative");
}

OPS_TEST_CASE("meta pad (reflect, replicate)", "pad") {
  CHECK(meta1("pad", {T(f4, {1, 2, 5})}, {{"pad", IntList{2, 4}}, {"mode", std::string("reflect")}}) == tt(f4, {1, 2, 11}));
  CHECK(meta1("pad", {T(i8, {3, 4})}, {{"pad", IntList{1, 0, 0, 2}}, {"mode", std::string("replicate")}}) == tt(i8, {5, 5}));
  CHECK_USER_ERROR(meta_error("pad", {T(f4, {2, 3})}, {{"pad", IntList{3, 0}}, {"mode", std::string("reflect")}}), "pad",
                   "less than", "size 3");
  CHECK_USER_ERROR(meta_error("pad", {T(f4, {2, 0})}, {{"pad", IntList{1, 1}}, {"mode", std::string("replicate")}}), "pad",
                   "non-empty");
  CHECK_USER_ERROR(meta_error("pad", {T(f4, {2, 3})}, {{"pad", IntList{1, 1}}, {"mode", std::string("circular")}}), "pad",
                   "'circular'");
  CHECK_USER_ERROR(meta_error("pad", {T(f4, {2})}, {{"pad", IntList{1, 1, 1, 1}}, {"mode", std::string("reflect")}}), "pad",
                   "at most 1");
}

OPS_TEST_CASE("meta index_select, gather, argmax, argmin, cumsum", "index_select", "gather", "argmax", "argmin", "cumsum") {
  CHECK(meta1("index_select", {T(f4, {4, 5}), T(i8, {3})}, {{"dim", I(1)}}) == tt(f4, {4, 3}));
  CHECK(meta1("index_select", {T(i4, {4, 5}), T(i4, {})}, {{"dim", I(-2)}}) == tt(i4, {1, 5}));
  CHECK_USER_ERROR(meta_error("index_select", {T(f4, {4}), T(f4, {2})}, {{"dim", I(0)}}), "index_select", "int32 or int64", "float32");
  CHECK_USER_ERROR(meta_error("index_select", {T(f4, {4}), T(i8, {2, 2})}, {{"dim", I(0)}}), "index_select", "1-D");
  CHECK(meta1("gather", {T(f4, {4, 5}), T(i8, {2, 5})}, {{"dim", I(0)}}) == tt(f4, {2, 5}));
  CHECK(meta1("gather", {T(f4, {4, 5}), T(i8, {4, 9})}, {{"dim", I(1)}}) == tt(f4, {4, 9}));
  CHECK_USER_ERROR(meta_error("gather", {T(f4, {4, 5}), T(i4, {2, 5})}, {{"dim", I(0)}}), "gather", "int64", "int32");
  CHECK_USER_ERROR(meta_error("gather", {T(f4, {4, 5}), T(i8, {2})}, {{"dim", I(0)}}), "gather", "as many dims");
  CHECK_USER_ERROR(meta_error("gather", {T(f4, {4, 5}), T(i8, {2, 6})}, {{"dim", I(0)}}), "gather", "larger", "dimension 1");
  for (const char* name : {"argmax", "argmin"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f4, {2, 3, 4})}, {{"dim", I(1)}}) == tt(i8, {2, 4}));
    CHECK(meta1(name, {T(i4, {2, 3})}, {{"dim", I(-1)}, {"keepdim", true}}) == tt(i8, {2, 1}));
    CHECK(meta1(name, {T(f4, {2, 3})}) == tt(i8, {}));
    CHECK(meta1(name, {T(f4, {2, 3})}, {{"keepdim", true}}) == tt(i8, {1, 1}));
    CHECK_USER_ERROR(meta_error(name, {T(f4, {2, 0})}, {{"dim", I(1)}}), name, "empty");
    CHECK_USER_ERROR(meta_error(name, {T(f4, {0})}), name, "no elements");
    CHECK_USER_ERROR(meta_error(name, {T(b1, {2})}), name, "bool");
  }
  CHECK(meta1("cumsum", {T(f4, {2, 3})}, {{"dim", I(1)}}) == tt(f4, {2, 3}));
  CHECK(meta1("cumsum", {T(i4, {2, 3})}, {{"dim", I(0)}}) == tt(i8, {2, 3}));  // integers sum in int64
  CHECK(meta1("cumsum", {T(b1, {2})}, {{"dim", I(0)}}) == tt(i8, {2}));
  CHECK(meta1("cumsum", {T(i4, {2})}, {{"dim", I(0)}, {"dtype", f8}}) == tt(f8, {2}));
  CHECK_USER_ERROR(meta_error("cumsum", {T(f4, {2})}, {{"dim", I(1)}}), "cumsum", "out of range");
}

OPS_TEST_CASE("meta softmax and log_softmax", "softmax", "log_softmax") {
  for (const char* name : {"softmax", "log_softmax"}) {
    CAPTURE(name);
    CHECK(meta1(name, {T(f4, {2, 3})}, {{"dim", I(-1)}}) == tt(f4, {2, 3}));
    CHECK(meta1(name, {T(f4, {2, 3})}, {{"dim", I(0)}}) == tt(f4, {2, 3}));
    CHECK(meta1(name, {T(f4, {})}, {{"dim", I(0)}}) == tt(f4, {}));
    CHECK(meta1(name, {T(f4, {2, 3})}, {{"dim", I(1)}, {"dtype", f2}}) == tt(f2, {2, 3}));
    CHECK(meta1(name, {T(i8, {2, 3})}, {{"dim", I(1)}, {"dtype", f4}}) == tt(f4, {2, 3}));
    CHECK_USER_ERROR(meta_error(name, {T(f4, {2, 3})}, {{"dim", I(2)}}), name, "dimension 2", "out of range");
    CHECK_USER_ERROR(meta_error(name, {T(f4, {2, 3})}, {{"dim", I(-3)}}), "out of range");
    CHECK_USER_ERROR(meta_error(name, {T(i4, {2, 3})}, {{"dim", I(1)}}), name, "floating point", "int32");
    CHECK_THROWS_AS(meta(name, {T(f4, {2, 3})}), InternalError);  // dim is required
  }
}

OPS_TEST_CASE("meta layer_norm", "layer_norm") {
  IntList ns8{8};
  CHECK(meta1("layer_norm", {T(f4, {2, 5, 8}), T(f4, {8}), T(f4, {8})}, {{"normalized_shape", ns8}}) ==
        tt(f4, {2, 5, 8}));
  CHECK(meta1("layer_norm", {T(f2, {2, 5, 8}), N(), N()}, {{"normalized_shape", IntList{5, 8}}, {"eps", 1e-6}}) ==
        tt(f2, {2, 5, 8}));
  CHECK(meta1("layer_norm", {T(f4, {5, 8}), T(f4, {5, 8}), N()}, {{"normalized_shape", IntList{5, 8}}}) ==
        tt(f4, {5, 8}));
  CHECK_USER_ERROR(meta_error("layer_norm", {T(f4, {2, 5, 8}), N(), N()}, {{"normalized_shape", IntList{5}}}),
                   "layer_norm", "[5]", "[2, 5, 8]", "trailing");
  CHECK_USER_ERROR(meta_error("layer_norm", {T(f4, {2, 5, 8}), N(), N()}, {{"normalized_shape", IntList{}}}),
                   "normalized_shape");
  CHECK_USER_ERROR(
      meta_error("layer_norm", {T(f4, {5, 8}), N(), N()}, {{"normalized_shape", IntList{2, 5, 8}}}), "[2, 5, 8]",
      "[5, 8]");
  CHECK_USER_ERROR(meta_error("layer_norm", {T(f4, {2, 8}), T(f4, {7}), N()}, {{"normalized_shape", ns8}}),
                   "weight has shape [7], expected [8]");
  CHECK_USER_ERROR(meta_error("layer_norm", {T(f4, {2, 8}), N(), T(f4, {8, 1})}, {{"normalized_shape", ns8}}),
                   "bias has shape [8, 1], expected [8]");
  CHECK_USER_ERROR(meta_error("layer_norm", {T(i4, {2, 8}), N(), N()}, {{"normalized_shape", ns8}}),
                   "floating point");
}

OPS_TEST_CASE("meta rms_norm", "rms_norm") {
  IntList ns8{8};
  CHECK(meta1("rms_norm", {T(f4, {2, 5, 8}), T(f4, {8})}, {{"normalized_shape", ns8}, {"eps", 1e-6}}) ==
        tt(f4, {2, 5, 8}));
  CHECK(meta1("rms_norm", {T(f2, {2, 5, 8}), N()}, {{"normalized_shape", IntList{5, 8}}, {"eps", 1e-3}}) ==
        tt(f2, {2, 5, 8}));
  CHECK_USER_ERROR(meta_error("rms_norm", {T(f4, {2, 5, 8}), N()}, {{"normalized_shape", IntList{5}}, {"eps", 1e-6}}),
                   "rms_norm", "[5]", "[2, 5, 8]", "trailing");
  CHECK_USER_ERROR(meta_error("rms_norm", {T(f4, {2, 8}), T(f4, {7})}, {{"normalized_shape", ns8}, {"eps", 1e-6}}),
                   "weight has shape [7], expected [8]");
  CHECK_USER_ERROR(meta_error("rms_norm", {T(i4, {2, 8}), N()}, {{"normalized_shape", ns8}, {"eps", 1e-6}}),
                   "floating point");
}

OPS_TEST_CASE("meta batch_norm", "batch_norm") {
  auto c3 = [] { return T(f4, {3}); };
  CHECK(meta1("batch_norm", {T(f4, {2, 3, 4, 4}), c3(), c3(), c3(), c3()}) == tt(f4, {2, 3, 4, 4}));
  CHECK(meta1("batch_norm", {T(f4, {2, 3}), N(), N(), c3(), c3()}, {{"eps", 1e-3}}) == tt(f4, {2, 3}));
  CHECK_USER_ERROR(meta_error("batch_norm", {T(f4, {2, 3, 4}), c3(), c3(), c3(), T(f4, {4})}),
                   "running_var has shape [4], expected [3]");
  CHECK_USER_ERROR(meta_error("batch_norm", {T(f4, {2, 3, 4}), T(f4, {1, 3}), c3(), c3(), c3()}),
                   "weight has shape [1, 3], expected [3]");
  CHECK_USER_ERROR(meta_error("batch_norm", {T(f4, {2, 3, 4}), c3(), T(f4, {2}), c3(), c3()}),
                   "bias has shape [2], expected [3]");
  CHECK_USER_ERROR(meta_error("batch_norm", {T(f4, {2, 3, 4}), c3(), c3(), T(f4, {}), c3()}),
                   "running_mean has shape [], expected [3]");
  CHECK_USER_ERROR(meta_error("batch_norm", {T(f4, {3}), c3(), c3(), c3(), c3()}), "rank >= 2", "[3]");
  CHECK_USER_ERROR(meta_error("batch_norm", {T(i8, {2, 3}), c3(), c3(), c3(), c3()}), "floating point");
  // Running statistics are required operands.
  CHECK_THROWS_AS(meta("batch_norm", {T(f4, {2, 3}), c3(), c3(), N(), c3()}), InternalError);
}

OPS_TEST_CASE("meta reshape", "reshape") {
  auto a = [] { return T(f4, {2, 3, 4}); };
  CHECK(meta1("reshape", {a()}, {{"shape", IntList{-1, 4}}}) == tt(f4, {6, 4}));
  CHECK(meta1("reshape", {a()}, {{"shape", IntList{2, -1}}}) == tt(f4, {2, 12}));
  CHECK(meta1("reshape", {a()}, {{"shape", IntList{24}}}) == tt(f4, {24}));
  CHECK(meta1("reshape", {T(i8, {1, 1})}, {{"shape", IntList{}}}) == tt(i8, {}));
  CHECK(meta1("reshape", {T(f4, {})}, {{"shape", IntList{-1}}}) == tt(f4, {1}));
  CHECK(meta1("reshape", {T(f4, {0, 3})}, {{"shape", IntList{-1, 3}}}) == tt(f4, {0, 3}));
  CHECK_USER_ERROR(meta_error("reshape", {a()}, {{"shape", IntList{-1, -1}}}), "only one dimension can be -1");
  // sizes whose product overflows int64 are an error, not undefined behaviour
  CHECK_USER_ERROR(meta_error("reshape", {a()}, {{"shape", IntList{std::int64_t{1} << 40, std::int64_t{1} << 40, -1}}}),
                   "overflow int64");
  CHECK_THROWS_AS(tt(f4, {std::int64_t{1} << 40, std::int64_t{1} << 40}).numel(), UserError);
  CHECK_USER_ERROR(meta_error("reshape", {a()}, {{"shape", IntList{5, -1}}}), "[5, -1]", "[2, 3, 4]");
  CHECK_USER_ERROR(meta_error("reshape", {a()}, {{"shape", IntList{-2, 12}}}), "invalid size -2");
  CHECK_USER_ERROR(meta_error("reshape", {a()}, {{"shape", IntList{2, 3, 5}}}), "[2, 3, 5]", "[2, 3, 4]",
                   "24 elements");
  CHECK_USER_ERROR(meta_error("reshape", {T(f4, {0, 3})}, {{"shape", IntList{0, -1}}}), "[0, -1]");
}

OPS_TEST_CASE("meta permute", "permute") {
  CHECK(meta1("permute", {T(f4, {2, 3, 4})}, {{"dims", IntList{2, 0, 1}}}) == tt(f4, {4, 2, 3}));
  CHECK(meta1("permute", {T(i8, {2, 3})}, {{"dims", IntList{1, 0}}}) == tt(i8, {3, 2}));
  CHECK(meta1("permute", {T(f4, {})}, {{"dims", IntList{}}}) == tt(f4, {}));
  CHECK_USER_ERROR(meta_error("permute", {T(f4, {2, 3})}, {{"dims", IntList{1, 1}}}), "permute", "[1, 1]",
                   "not a permutation", "[2, 3]");
  CHECK_USER_ERROR(meta_error("permute", {T(f4, {2, 3, 4})}, {{"dims", IntList{0, 1}}}), "not a permutation");
  CHECK_USER_ERROR(meta_error("permute", {T(f4, {2, 3})}, {{"dims", IntList{0, 2}}}), "not a permutation");
}

OPS_TEST_CASE("meta expand", "expand") {
  CHECK(meta1("expand", {T(f4, {3, 1})}, {{"shape", IntList{2, -1, 4}}}) == tt(f4, {2, 3, 4}));
  CHECK(meta1("expand", {T(f4, {3, 1})}, {{"shape", IntList{3, 5}}}) == tt(f4, {3, 5}));
  CHECK(meta1("expand", {T(f4, {3, 1})}, {{"shape", IntList{-1, -1}}}) == tt(f4, {3, 1}));
  CHECK(meta1("expand", {T(f4, {1})}, {{"shape", IntList{0}}}) == tt(f4, {0}));
  CHECK(meta1("expand", {T(f4, {})}, {{"shape", IntList{2, 2}}}) == tt(f4, {2, 2}));
  CHECK_USER_ERROR(meta_error("expand", {T(f4, {3, 1})}, {{"shape", IntList{2, 4}}}), "dimension 0", "size 3",
                   "[3, 1]", "[2, 4]");
  CHECK_USER_ERROR(meta_error("expand", {T(f4, {3, 1})}, {{"shape", IntList{4}}}), "fewer dims");
  // torch: "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"
  CHECK_USER_ERROR(meta_error("expand", {T(f4, {3, 1})}, {{"shape", IntList{-1, -1, 4}}}), "leading",
                   "cannot be -1");
  // torch rejects negative sizes other than -1 (it fails computing numel); so must we.
  CHECK_USER_ERROR(meta_error("expand", {T(f4, {1})}, {{"shape", IntList{-2}}}), "expand", "-2");
  CHECK_USER_ERROR(meta_error("expand", {T(f4, {2, 1})}, {{"shape", IntList{2, -3}}}), "expand", "-3");
}

OPS_TEST_CASE("meta slice", "slice") {
  auto a = [] { return T(f4, {5, 6}); };
  auto sl = [](std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
    return Attrs{{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
  };
  CHECK(meta1("slice", {a()}, sl(0, 1, 5, 2)) == tt(f4, {2, 6}));  // torch: x[1:6:2] of 5 rows -> 2
  CHECK(meta1("slice", {a()}, sl(1, 0, 6, 4)) == tt(f4, {5, 2}));
  CHECK(meta1("slice", {a()}, sl(1, 2, 5, 1)) == tt(f4, {5, 3}));
  CHECK(meta1("slice", {a()}, sl(0, 3, 3, 1)) == tt(f4, {0, 6}));
  // step defaults to 1.
  CHECK(meta1("slice", {a()}, {{"dim", I(1)}, {"start", I(1)}, {"end", I(6)}}) == tt(f4, {5, 5}));
  CHECK_USER_ERROR(meta_error("slice", {a()}, sl(0, 0, 5, 0)), "step must be positive");
  // Bounds and dims are normalized by the frontend; anything else is a bug.
  CHECK_THROWS_AS(meta("slice", {a()}, sl(-1, 0, 5, 1)), InternalError);
  CHECK_THROWS_AS(meta("slice", {a()}, sl(0, 0, 7, 1)), InternalError);
  CHECK_THROWS_AS(meta("slice", {a()}, sl(0, 4, 2, 1)), InternalError);
  CHECK_THROWS_AS(meta("slice", {a()}, sl(2, 0, 1, 1)), InternalError);
}

OPS_TEST_CASE("meta select", "select") {
  CHECK(meta1("select", {T(f4, {5, 6})}, {{"dim", I(1)}, {"index", I(2)}}) == tt(f4, {5}));
  CHECK(meta1("select", {T(i8, {4})}, {{"dim", I(0)}, {"index", I(3)}}) == tt(i8, {}));
  CHECK_THROWS_AS(meta("select", {T(f4, {5, 6})}, {{"dim", I(1)}, {"index", I(6)}}), InternalError);
  CHECK_THROWS_AS(meta("select", {T(f4, {5, 6})}, {{"dim", I(-1)}, {"index", I(0)}}), InternalError);
  CHECK_THROWS_AS(meta("select", {T(f4, {})}, {{"dim", I(0)}, {"index", I(0)}}), InternalError);
}

OPS_TEST_CASE("meta slice_scatter and select_scatter", "slice_scatter", "select_scatter") {
  Attrs sl{{"dim", I(1)}, {"start", I(1)}, {"end", I(5)}, {"step", I(2)}};
  CHECK(meta1("slice_scatter", {T(f4, {3, 6}), T(f4, {3, 2})}, sl) == tt(f4, {3, 6}));
  // The source is cast to the base's dtype.
  CHECK(meta1("slice_scatter", {T(f2, {3, 6}), T(f4, {3, 2})}, sl) == tt(f2, {3, 6}));
  CHECK_USER_ERROR(meta_error("slice_scatter", {T(f4, {3, 6}), T(f4, {3, 3})}, sl), "the region is [3, 2]");
  CHECK_THROWS_AS(meta("slice_scatter", {T(f4, {3, 6}), T(f4, {3, 2})},
                       {{"dim", I(1)}, {"start", I(1)}, {"end", I(7)}, {"step", I(1)}}),
                  InternalError);
  CHECK(meta1("select_scatter", {T(f4, {3, 6}), T(f4, {3})}, {{"dim", I(1)}, {"index", I(4)}}) == tt(f4, {3, 6}));
  CHECK_USER_ERROR(meta_error("select_scatter", {T(f4, {3, 6}), T(f4, {6})}, {{"dim", I(1)}, {"index", I(4)}}),
                   "the region is [3]");
  CHECK_THROWS_AS(meta("select_scatter", {T(f4, {3, 6}), T(f4, {3})}, {{"dim", I(1)}, {"index", I(6)}}), InternalError);
}

OPS_TEST_CASE("meta cat", "cat") {
  CHECK(meta1("cat", {T(f4, {2, 3}), T(f4, {4, 3})}, {{"dim", I(0)}}) == tt(f4, {6, 3}));
  CHECK(meta1("cat", {T(f4, {2, 3}), T(f4, {2, 5}), T(f4, {2, 1})}, {{"dim", I(-1)}}) == tt(f4, {2, 9}));
  CHECK(meta1("cat", {T(f4, {2, 3})}, {{"dim", I(1)}}) == tt(f4, {2, 3}));
  // dtypes promote (torch.cat([int32, float16]) is float16, [uint8, int8] is int16).
  CHECK(meta_dtype("cat", {T(i4, {2}), T(f2, {3})}, {{"dim", I(0)}}) == f2);
  CHECK(meta_dtype("cat", {T(u1, {2}), T(i1, {3})}, {{"dim", I(0)}}) == i2);
  CHECK(meta_dtype("cat", {T(b1, {2}), T(i8, {3}), T(f8, {1})}, {{"dim", I(0)}}) == f8);
  CHECK_USER_ERROR(meta_error("cat", {T(f4, {2, 3}), T(f4, {2, 4})}, {{"dim", I(0)}}), "tensor 1", "[2, 4]",
                   "[2, 3]", "dimension 0");
  CHECK_USER_ERROR(meta_error("cat", {T(f4, {2, 3}), T(f4, {2, 3, 1})}, {{"dim", I(0)}}), "tensor 1");
  CHECK_USER_ERROR(meta_error("cat", {T(f4, {}), T(f4, {})}, {{"dim", I(0)}}), "zero-dimensional");
  CHECK_USER_ERROR(meta_error("cat", {T(f4, {2}), T(f4, {2})}, {{"dim", I(1)}}), "cat", "out of range");
  CHECK_USER_ERROR(
      meta_error("cat", {T(tt(f4, {2}, Device::cuda())), T(f4, {2})}, {{"dim", I(0)}}), "different devices");
  // Variadic: at least one tensor.
  CHECK_THROWS_AS(meta("cat", {}, {{"dim", I(0)}}), InternalError);
}
