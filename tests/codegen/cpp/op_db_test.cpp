// The operator database, after Thunder's OpInfos: for each operator the cpp executor implements with code of
// its own (sorts, gathers, scatters, advanced indexing, resampling, 3-D pooling, embedding bags, ...), sample traces
// covering its dtypes, dims (negative ones too), size-1, empty and odd shapes, views as inputs and edge values
// (NaN, infinities, negative indices, duplicate indices where the op defines them). Every sample is compiled
// with the torch executor (ATen through the shim: the reference) and with cpp, run on the same seeded inputs
// (check_against_torch: floats normal, integers in [0, 10)) and compared; check_native asserts that cpp, not
// torch, ran the operator. A catalog operator of that category that cpp implements but the database lacks
// fails the coverage test below, so a new operator comes with its samples.
//
// Where ATen leaves a result unspecified the samples avoid it: sort ties only with stable=True, topk ties
// never (its index order among equal values is unspecified), scatter / index_put without accumulation never
// write one place twice. Tolerances: float32 rtol/atol 1e-5 (sums and products in another order), float64
// 1e-10.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <set>

#include "cpp_test_util.h"

using namespace cpptest;

namespace {

TensorType ty(DType d, Shape s) { return {d, std::move(s), Device::cpu()}; }
Operand I(std::int64_t v) { return Operand::number(Scalar(v)); }

// One sample: a trace whose outputs are the operator's results on its inputs (several uses per trace, so that
// each sample compiles two .so files).
struct Sample {
  std::string name;
  Trace t;
  std::vector<ValueId> outs;
  Tol tol{};
  InputOpts opts{};

  ValueId in(const std::string& n, TensorType type) { return t.add_input(n, std::move(type)); }
  ValueId op1(const std::string& o, std::vector<Operand> ins, Attrs attrs = {}) { return t.emit1(op(o), std::move(ins), std::move(attrs)); }
  std::vector<ValueId> op_all(const std::string& o, std::vector<Operand> ins, Attrs attrs = {}) {
    return t.emit(op(o), std::move(ins), std::move(attrs));
  }
  void out(ValueId v) { outs.push_back(v); }
  void out(const std::vector<ValueId>& vs) { outs.insert(outs.end(), vs.begin(), vs.end()); }
  // A permutation of 0..n-1 along dim of a random tensor of `shape` (int64): indices without repeats.
  ValueId permutation(const std::string& n, Shape shape, std::int64_t dim) {
    ValueId r = in(n, f32(std::move(shape)));
    return op_all("sort", {T(r)}, {{"dim", dim}, {"stable", true}})[1];
  }
  ValueId slice(ValueId v, std::int64_t dim, std::int64_t start, std::int64_t end) {
    return op1("slice", {T(v)}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}});
  }
};

using Samples = std::vector<Sample>;

Samples prod_samples() {
  Samples out;
  {
    Sample s{"prod_f32"};
    ValueId x = s.in("x", f32({5, 7}));
    s.out(s.op1("prod", {T(x)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("prod", {T(x)}, {{"dim", std::int64_t{-2}}, {"keepdim", true}}));
    s.out(s.op1("prod", {T(x)}, {}));
    s.out(s.op1("prod", {T(x)}, {{"keepdim", true}}));
    ValueId v = s.op1("permute", {T(x)}, {{"dims", IntList{1, 0}}});  // a view as input
    s.out(s.op1("prod", {T(v)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("prod", {T(s.in("e", f32({0, 4})))}, {{"dim", std::int64_t{0}}}));  // empty: ones
    s.out(s.op1("prod", {T(s.in("z", f32({})))}, {}));
    out.push_back(std::move(s));
  }
  {
    Sample s{"prod_nan_f64", {}, {}, {1e-10, 1e-10}, {0.15}};
    ValueId x = s.in("x", f64({4, 3, 6}));
    s.out(s.op1("prod", {T(x)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("prod", {T(s.op1("div", {T(x), N(0.0)}))}, {{"dim", std::int64_t{2}}}));  // infinities
    out.push_back(std::move(s));
  }
  {
    Sample s{"prod_integers"};
    ValueId n = s.in("n", ty(DType::Int32, {3, 5})), b = s.in("b", b8({4, 3}));
    ValueId l = s.in("l", ty(DType::Int64, {2, 40}));  // 40 factors below 10: wraps around as int64
    s.out(s.op1("prod", {T(n)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("prod", {T(b)}, {{"dim", std::int64_t{0}}}));
    s.out(s.op1("prod", {T(n)}, {{"dim", std::int64_t{0}}, {"dtype", DType::Float32}}));
    s.out(s.op1("prod", {T(s.op1("add", {T(l), I(1)}))}, {{"dim", std::int64_t{1}}}));
    out.push_back(std::move(s));
  }
  return out;
}

Samples sort_samples() {
  Samples out;
  {
    Sample s{"sort_f32"};
    ValueId x = s.in("x", f32({6, 9}));
    s.out(s.op_all("sort", {T(x)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op_all("sort", {T(x)}, {{"dim", std::int64_t{-1}}, {"descending", true}}));
    s.out(s.op_all("sort", {T(x)}, {{"dim", std::int64_t{0}}}));  // strided rows
    s.out(s.op_all("sort", {T(s.op1("permute", {T(x)}, {{"dims", IntList{1, 0}}}))}, {}));
    s.out(s.op_all("sort", {T(s.in("e", f32({0, 3})))}, {}));
    s.out(s.op_all("sort", {T(s.in("w", f32({3, 0})))}, {}));
    s.out(s.op_all("sort", {T(s.in("z", f32({})))}, {}));
    s.out(s.op_all("sort", {T(s.in("d", f64({4, 3, 5})))}, {{"dim", std::int64_t{1}}, {"descending", true}}));
    out.push_back(std::move(s));
  }
  {
    // NaN sorts above every number; -inf / inf from x / 0. Ties (NaNs, infinities) keep their order: stable.
    Sample s{"sort_nan_inf", {}, {}, {}, {0.2}};
    ValueId x = s.in("x", f32({5, 11}));
    ValueId inf = s.op1("div", {T(s.in("y", f32({5, 11}))), N(0.0)});
    for (ValueId v : {x, inf})
      for (bool desc : {false, true})
        s.out(s.op_all("sort", {T(v)}, {{"dim", std::int64_t{1}}, {"descending", desc}, {"stable", true}}));
    out.push_back(std::move(s));
  }
  {
    Sample s{"sort_integers_bool"};
    ValueId n = s.in("n", ty(DType::Int32, {5, 12})), b = s.in("b", b8({7})), l = s.in("l", ty(DType::Int64, {12, 3}));
    for (bool desc : {false, true}) {
      s.out(s.op_all("sort", {T(n)}, {{"dim", std::int64_t{1}}, {"descending", desc}, {"stable", true}}));
      s.out(s.op_all("sort", {T(b)}, {{"descending", desc}, {"stable", true}}));
      s.out(s.op_all("sort", {T(l)}, {{"dim", std::int64_t{0}}, {"descending", desc}, {"stable", true}}));
    }
    out.push_back(std::move(s));
  }
  return out;
}

Samples topk_samples() {
  Samples out;
  {
    Sample s{"topk_f32"};
    ValueId x = s.in("x", f32({6, 9}));
    auto k = [](std::int64_t v) { return AttrValue(v); };
    s.out(s.op_all("topk", {T(x)}, {{"k", k(3)}}));
    s.out(s.op_all("topk", {T(x)}, {{"k", k(3)}, {"largest", false}}));
    s.out(s.op_all("topk", {T(x)}, {{"k", k(2)}, {"dim", k(0)}}));
    s.out(s.op_all("topk", {T(x)}, {{"k", k(0)}}));
    s.out(s.op_all("topk", {T(x)}, {{"k", k(9)}, {"dim", k(-1)}, {"largest", false}}));
    s.out(s.op_all("topk", {T(s.in("d", f64({5, 6, 3})))}, {{"k", k(2)}, {"dim", k(1)}}));
    s.out(s.op_all("topk", {T(s.in("e", f32({0, 5})))}, {{"k", k(2)}}));
    s.out(s.op_all("topk", {T(s.in("z", f32({})))}, {{"k", k(1)}}));
    out.push_back(std::move(s));
  }
  {
    // One NaN per row (log of a negative number) at position 4: the largest, never among the smallest.
    Sample s{"topk_nan_integers"};
    ValueId x = s.in("x", f32({6, 9}));
    ValueId nan = s.op1("log", {T(s.op1("neg", {T(s.op1("abs", {T(s.slice(x, 1, 0, 1))}))}))});
    ValueId with_nan = s.op1("cat", {T(s.slice(x, 1, 1, 5)), T(nan), T(s.slice(x, 1, 5, 9))}, {{"dim", std::int64_t{1}}});
    for (bool largest : {true, false}) s.out(s.op_all("topk", {T(with_nan)}, {{"k", std::int64_t{3}}, {"largest", largest}}));
    ValueId distinct = s.permutation("r", {4, 10}, 1);  // int64 without ties
    s.out(s.op_all("topk", {T(distinct)}, {{"k", std::int64_t{4}}}));
    s.out(s.op_all("topk", {T(s.op1("to_dtype", {T(distinct)}, {{"dtype", DType::Int32}}))}, {{"k", std::int64_t{2}}, {"largest", false}}));
    out.push_back(std::move(s));
  }
  return out;
}

Samples diagonal_samples() {
  Sample s{"diagonal"};
  ValueId x = s.in("x", f32({5, 7})), y = s.in("y", f32({3, 4, 5}));
  auto diag = [&](ValueId v, std::int64_t offset, std::int64_t d1, std::int64_t d2) {
    s.out(s.op1("diagonal", {T(v)}, {{"offset", offset}, {"dim1", d1}, {"dim2", d2}}));
  };
  for (std::int64_t offset : {0, 2, -3, 9}) diag(x, offset, 0, 1);  // 9: past the end, empty
  diag(x, 1, 1, 0);
  diag(y, 1, 0, 2);
  diag(y, -1, 2, 0);
  diag(y, 0, -1, 1);
  diag(s.op1("permute", {T(y)}, {{"dims", IntList{2, 0, 1}}}), 0, 0, 1);
  diag(s.in("l", ty(DType::Int64, {4, 4})), 0, 0, 1);
  diag(s.in("b", b8({2, 3, 3})), 0, 1, 2);
  Samples out;
  out.push_back(std::move(s));
  return out;
}

Samples scatter_samples() {
  Samples out;
  {
    // Each row (dim 1) or column (dim 0) of index is part of a permutation: no place written twice.
    Sample s{"scatter"};
    ValueId a = s.in("a", f32({5, 8})), src = s.in("src", f32({5, 6}));
    ValueId rows = s.slice(s.permutation("r", {5, 8}, 1), 1, 0, 4);   // [5, 4] in [0, 8)
    ValueId cols = s.slice(s.permutation("c", {5, 8}, 0), 0, 0, 3);   // [3, 8] in [0, 5)
    s.out(s.op1("scatter", {T(a), T(rows), T(src)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("scatter", {T(a), T(cols), T(s.in("src2", f32({4, 8})))}, {{"dim", std::int64_t{-2}}}));
    s.out(s.op1("scatter", {T(a), T(rows), N(2.5)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("scatter", {T(a), T(s.slice(rows, 1, 0, 0)), T(src)}, {{"dim", std::int64_t{1}}}));  // empty index
    ValueId l = s.in("l", ty(DType::Int64, {5, 8}));
    s.out(s.op1("scatter", {T(l), T(rows), I(-7)}, {{"dim", std::int64_t{1}}}));
    s.out(s.op1("scatter", {T(s.in("b", b8({5, 8}))), T(rows), T(s.in("bs", b8({5, 4})))}, {{"dim", std::int64_t{1}}}));
    out.push_back(std::move(s));
  }
  {
    // Duplicates are the point of a reduction: indices in [0, 10) into 10 rows, 6 x 4 of them.
    Sample s{"scatter_reduce_f32", {}, {}, {}, {0.05}};
    ValueId a = s.in("a", f32({10, 4})), src = s.in("src", f32({6, 4})), index = s.in("index", ty(DType::Int64, {6, 4}));
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool self : {true, false})
        s.out(s.op1("scatter_reduce", {T(a), T(index), T(src)},
                    {{"dim", std::int64_t{0}}, {"reduce", std::string(reduce)}, {"include_self", self}}));
    ValueId wide = s.in("w", f64({3, 12}));  // along dim 1, src larger than index
    s.out(s.op1("scatter_reduce", {T(wide), T(s.in("wi", ty(DType::Int64, {2, 7}))), T(s.in("ws", f64({3, 9})))},
                {{"dim", std::int64_t{1}}, {"reduce", std::string("sum")}}));
    out.push_back(std::move(s));
  }
  {
    // Integer means round down (negative sums too: src - 5 is in [-5, 5)).
    Sample s{"scatter_reduce_integers"};
    ValueId a = s.in("a", ty(DType::Int32, {10, 3})), index = s.in("index", ty(DType::Int64, {8, 3}));
    ValueId src = s.op1("sub", {T(s.in("src", ty(DType::Int32, {8, 3}))), I(5)});
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool self : {true, false})
        s.out(s.op1("scatter_reduce", {T(a), T(index), T(src)},
                    {{"dim", std::int64_t{0}}, {"reduce", std::string(reduce)}, {"include_self", self}}));
    out.push_back(std::move(s));
  }
  return out;
}

Samples index_samples() {
  Samples out;
  {
    Sample s{"index"};
    ValueId x = s.in("x", f32({10, 12, 3}));
    ValueId i4 = s.in("i4", ty(DType::Int64, {4})), i23 = s.in("i23", ty(DType::Int64, {2, 3}));
    ValueId i41 = s.in("i41", ty(DType::Int64, {4, 1})), i32 = s.in("i32", ty(DType::Int32, {5}));
    auto index = [&](ValueId v, std::vector<ValueId> idx, IntList dims) {
      std::vector<Operand> ins{T(v)};
      for (ValueId i : idx) ins.push_back(T(i));
      s.out(s.op1("index", ins, {{"dims", dims}}));
    };
    index(x, {i4}, {0});
    index(x, {i23}, {1});                     // x[:, i23]
    index(x, {i41, i4}, {0, 1});              // broadcast to [4, 4], adjacent: in place
    ValueId small = s.op1("remainder", {T(i4), I(3)});
    index(x, {i4, small}, {0, 2});            // not adjacent: the index dims first
    index(x, {s.op1("sub", {T(i4), I(10)})}, {0});  // negative: from the end
    index(x, {i32}, {1});                     // int32 indices
    index(x, {s.op1("select", {T(i4)}, {{"dim", std::int64_t{0}}, {"index", std::int64_t{1}}})}, {1});  // 0-dim index
    index(x, {s.slice(i4, 0, 0, 0)}, {0});    // no indices: empty
    index(s.op1("permute", {T(x)}, {{"dims", IntList{1, 0, 2}}}), {i4}, {1});
    index(s.in("l", ty(DType::Int64, {10, 2})), {i4}, {0});
    out.push_back(std::move(s));
  }
  {
    Sample s{"index_put"};
    ValueId a = s.in("a", f32({10, 4})), v34 = s.in("v34", f32({3, 4})), v4 = s.in("v4", f32({4}));
    ValueId unique = s.slice(s.permutation("r", {10}, 0), 0, 0, 3);  // 3 distinct rows
    ValueId dup = s.in("dup", ty(DType::Int64, {6}));                 // rows with repeats
    auto put = [&](ValueId base, ValueId values, std::vector<ValueId> idx, IntList dims, bool acc) {
      std::vector<Operand> ins{T(base), T(values)};
      for (ValueId i : idx) ins.push_back(T(i));
      s.out(s.op1("index_put", ins, {{"dims", dims}, {"accumulate", acc}}));
    };
    put(a, v34, {unique}, {0}, false);
    put(a, v4, {unique}, {0}, false);                                  // values broadcast over the rows
    put(a, s.op1("select", {T(v4)}, {{"dim", std::int64_t{0}}, {"index", std::int64_t{0}}}), {unique}, {0}, false);
    put(a, s.in("v64", f32({6, 4})), {dup}, {0}, true);                // duplicates add up
    put(a, s.in("vp", f32({3})), {unique, s.slice(s.permutation("q", {4}, 0), 0, 0, 3)}, {0, 1}, false);
    put(a, v4, {s.op1("sub", {T(unique), I(10)})}, {0}, false);        // negative indices
    ValueId l = s.in("l", ty(DType::Int64, {10, 4}));
    put(l, s.in("lv", ty(DType::Int64, {6, 4})), {dup}, {0}, true);
    out.push_back(std::move(s));
  }
  return out;
}

// The source has as many elements as the input (enough for any mask); the mask broadcasts along rows.
Samples masked_scatter_samples() {
  Sample s{"masked_scatter"};
  ValueId a = s.in("a", f32({5, 7})), src = s.in("src", f32({5, 7})), m = s.in("m", b8({5, 7})), row = s.in("row", b8({7}));
  s.out(s.op1("masked_scatter", {T(a), T(m), T(src)}));
  s.out(s.op1("masked_scatter", {T(a), T(row), T(src)}));
  s.out(s.op1("masked_scatter", {T(s.in("l", ty(DType::Int64, {5, 7}))), T(m), T(s.in("ls", ty(DType::Int64, {40})))}));
  s.out(s.op1("masked_scatter", {T(s.op1("permute", {T(a)}, {{"dims", IntList{1, 0}}})), T(s.in("mt", b8({7, 5}))), T(src)}));
  Samples out;
  out.push_back(std::move(s));
  return out;
}

Samples upsample_samples() {
  Sample s{"upsample_bilinear2d"};
  ValueId x = s.in("x", f32({2, 3, 5, 6}));
  auto up = [&](ValueId v, IntList size, bool align, AttrValue sh = None{}, AttrValue sw = None{}) {
    s.out(s.op1("upsample_bilinear2d", {T(v)}, {{"output_size", size}, {"align_corners", align}, {"scale_h", sh}, {"scale_w", sw}}));
  };
  up(x, {10, 12}, false, 2.0, 2.0);
  up(x, {10, 12}, true);
  up(x, {7, 5}, false);
  up(x, {3, 4}, false);      // downsampling
  up(x, {1, 1}, true);       // a single output: scale 0
  up(x, {8, 9}, false, 1.7, 1.4);  // scales given that differ from in / out
  up(x, {5, 6}, false);      // the same size
  up(s.op1("permute", {T(s.in("nhwc", f32({1, 4, 4, 2})))}, {{"dims", IntList{0, 3, 1, 2}}}), {9, 7}, false);
  up(s.in("d", f64({1, 2, 4, 4})), {9, 9}, false);
  up(s.in("d1", f64({1, 1, 1, 3})), {4, 5}, true);  // a one-pixel dim
  Samples out;
  out.push_back(std::move(s));
  return out;
}

Samples pool3d_samples() {
  Samples out;
  for (bool nan : {false, true}) {
    Sample s{nan ? "pool3d_nan" : "pool3d", {}, {}, {}, {nan ? 0.05 : 0.0}};
    ValueId x = s.in("x", f32({2, 3, 5, 6, 7}));
    auto max = [&](ValueId v, IntList k, IntList st, IntList pad, IntList dil, bool ceil) {
      s.out(s.op1("max_pool3d", {T(v)}, {{"kernel_size", k}, {"stride", st}, {"padding", pad}, {"dilation", dil}, {"ceil_mode", ceil}}));
    };
    auto avg = [&](ValueId v, IntList k, IntList st, IntList pad, bool ceil, bool include_pad, AttrValue divisor = None{}) {
      s.out(s.op1("avg_pool3d", {T(v)}, {{"kernel_size", k}, {"stride", st}, {"padding", pad}, {"ceil_mode", ceil},
                                        {"count_include_pad", include_pad}, {"divisor_override", divisor}}));
    };
    max(x, {3}, {2}, {1}, {1}, false);
    max(x, {2, 3, 2}, {1, 1, 1}, {0}, {2, 1, 2}, false);
    max(x, {2}, {}, {0}, {1}, true);  // stride [] = kernel; ceil_mode keeps a partial last window
    avg(x, {3}, {2}, {1}, false, true);
    avg(x, {3}, {2}, {1}, false, false);
    avg(x, {2}, {2}, {1}, true, true);
    avg(x, {2, 3, 3}, {1, 2, 2}, {0}, false, true, std::int64_t{5});
    for (IntList o : {IntList{2, 3, 4}, IntList{1}, IntList{5, 6, 7}, IntList{3, 4, 5}})
      s.out(s.op1("adaptive_avg_pool3d", {T(x)}, {{"output_size", o}}));
    ValueId u = s.in("u", f32({3, 4, 5, 6}));  // unbatched
    max(u, {2}, {2}, {0}, {1}, false);
    avg(u, {3}, {1}, {1}, false, true);
    s.out(s.op1("adaptive_avg_pool3d", {T(s.in("d", f64({1, 2, 4, 5, 3})))}, {{"output_size", IntList{2, 2, 2}}}));
    if (nan) s.tol = {1e-5, 1e-5};
    out.push_back(std::move(s));
  }
  return out;
}

// Grid positions tanh(g) * 1.2: mostly inside [-1, 1], some outside, where the padding mode decides.
Samples grid_sampler_samples() {
  Samples out;
  for (DType d : {DType::Float32, DType::Float64}) {
    Sample s{std::string("grid_sampler_2d_") + dtype_short_name(d)};
    if (d == DType::Float64) s.tol = {1e-10, 1e-10};
    ValueId x = s.in("x", ty(d, {2, 3, 5, 6}));
    ValueId grid = s.op1("mul", {T(s.op1("tanh", {T(s.in("g", ty(d, {2, 4, 7, 2})))})), N(1.2)});
    for (std::int64_t mode : {0, 1})
      for (std::int64_t padding : {0, 1, 2})
        for (bool align : {false, true})
          s.out(s.op1("grid_sampler_2d", {T(x), T(grid)},
                      {{"interpolation_mode", mode}, {"padding_mode", padding}, {"align_corners", align}}));
    // A one-pixel-wide input: reflection about a single pixel.
    ValueId thin = s.in("thin", ty(d, {2, 1, 3, 1}));
    for (bool align : {false, true})
      s.out(s.op1("grid_sampler_2d", {T(thin), T(grid)}, {{"interpolation_mode", std::int64_t{0}}, {"padding_mode", std::int64_t{2}}, {"align_corners", align}}));
    out.push_back(std::move(s));
  }
  return out;
}

// Offsets made in the trace: 0, then three sorted values in [0, 7] (repeats make empty bags).
Samples embedding_bag_samples() {
  Samples out;
  for (DType it : {DType::Int64, DType::Int32}) {
    Sample s{std::string("embedding_bag_") + dtype_short_name(it)};
    ValueId w = s.in("w", f32({10, 4}));
    ValueId idx = s.in("idx", ty(it, {7}));
    ValueId r = s.op1("minimum", {T(s.in("r", ty(it, {3}))), I(7)});
    ValueId sorted = s.op_all("sort", {T(r)}, {{"stable", true}})[0];
    ValueId zero = s.op1("mul", {T(s.slice(sorted, 0, 0, 1)), I(0)});
    ValueId off = s.op1("cat", {T(zero), T(sorted)}, {{"dim", std::int64_t{0}}});  // [4]
    auto bag = [&](ValueId indices, Operand offsets, Operand weights, std::int64_t mode, bool last, AttrValue padding = None{}) {
      s.out(s.op1("embedding_bag", {T(w), T(indices), offsets, weights},
                  {{"mode", mode}, {"include_last_offset", last}, {"padding_idx", padding}}));
    };
    for (std::int64_t mode : {0, 1, 2}) {
      bag(idx, T(off), Operand::none(), mode, false);
      if (mode != 2) bag(idx, T(off), Operand::none(), mode, true);  // LibTorch 1.13's max with it corrupts its heap
      bag(idx, T(off), Operand::none(), mode, false, std::int64_t{3});
      bag(s.op1("reshape", {T(s.slice(idx, 0, 0, 6))}, {{"shape", IntList{2, 3}}}), Operand::none(), Operand::none(), mode, false);
    }
    bag(idx, T(off), T(s.in("psw", f32({7}))), 0, false);
    out.push_back(std::move(s));
  }
  return out;
}

// float16 and bfloat16 (computed in float, rounded where stored) for every operator of the database and those
// of the older suite, against half_rounded_reference: one operator per output, so within one unit in the last
// place (kF16Op / kBF16Op); sorts, gathers and scatters move values, which must match exactly. Inputs are half
// tensors themselves (a half chain before the operator would round differently from the reference).
Samples half_samples() {
  Samples out;
  for (DType d : {DType::Float16, DType::BFloat16}) {
    const std::string tag = dtype_short_name(d);
    const Tol tol = d == DType::Float16 ? kF16Op : kBF16Op;
    {
      Sample s{"reduce_scan_" + tag, {}, {}, tol, {0.05}};
      ValueId x = s.in("x", ty(d, {5, 7}));
      s.out(s.op1("prod", {T(x)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("prod", {T(x)}, {{"dim", std::int64_t{0}}, {"dtype", DType::Float32}}));
      s.out(s.op1("cumsum", {T(x)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("cumsum", {T(x)}, {{"dim", std::int64_t{0}}, {"dtype", DType::Float64}}));
      s.out(s.op1("cumsum", {T(s.in("n", ty(DType::Int32, {4, 6})))}, {{"dim", std::int64_t{1}}, {"dtype", d}}));
      for (const char* name : {"argmax", "argmin"}) {  // NaN wins; ties (frequent in 16 bits) go to the first
        s.out(s.op1(name, {T(x)}, {{"dim", std::int64_t{1}}}));
        s.out(s.op1(name, {T(x)}, {{"dim", std::int64_t{0}}, {"keepdim", true}}));
      }
      out.push_back(std::move(s));
    }
    {
      Sample s{"sort_" + tag, {}, {}, Tol{0, 0}, {0.1}};
      ValueId x = s.in("x", ty(d, {6, 9}));
      for (bool desc : {false, true}) {
        s.out(s.op_all("sort", {T(x)}, {{"dim", std::int64_t{1}}, {"descending", desc}, {"stable", true}}));
        s.out(s.op_all("sort", {T(x)}, {{"dim", std::int64_t{0}}, {"descending", desc}, {"stable", true}}));
      }
      // topk without ties: a permutation of 0..9 per row, exact in both half types
      ValueId distinct = s.op1("to_dtype", {T(s.permutation("r", {4, 10}, 1))}, {{"dtype", d}});
      s.out(s.op_all("topk", {T(distinct)}, {{"k", std::int64_t{3}}}));
      s.out(s.op_all("topk", {T(distinct)}, {{"k", std::int64_t{4}}, {"largest", false}}));
      out.push_back(std::move(s));
    }
    {
      Sample s{"gather_scatter_" + tag, {}, {}, Tol{0, 0}};
      ValueId x = s.in("x", ty(d, {5, 10})), src = s.in("src", ty(d, {5, 6}));  // indices are in [0, 10)
      ValueId i4 = s.in("i4", ty(DType::Int64, {4})), i54 = s.in("i54", ty(DType::Int64, {5, 4}));
      ValueId rows = s.slice(s.permutation("r", {5, 10}, 1), 1, 0, 4);  // [5, 4], no repeats in a row
      s.out(s.op1("index_select", {T(x), T(i4)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("gather", {T(x), T(i54)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("embedding", {T(s.in("table", ty(d, {10, 6}))), T(s.in("ids", ty(DType::Int64, {2, 5})))}));
      s.out(s.op1("diagonal", {T(x)}, {{"offset", std::int64_t{1}}, {"dim1", std::int64_t{0}}, {"dim2", std::int64_t{1}}}));
      s.out(s.op1("scatter", {T(x), T(rows), T(src)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("scatter", {T(x), T(rows), N(2.5)}, {{"dim", std::int64_t{1}}}));
      s.out(s.op1("index", {T(x), T(i4)}, {{"dims", IntList{1}}}));
      ValueId unique = s.slice(s.permutation("u", {5}, 0), 0, 0, 3);
      s.out(s.op1("index_put", {T(x), T(s.in("v", ty(d, {3, 10}))), T(unique)}, {{"dims", IntList{0}}, {"accumulate", false}}));
      s.out(s.op1("masked_scatter", {T(x), T(s.in("m", b8({5, 10}))), T(s.in("ms", ty(d, {5, 10})))}));
      out.push_back(std::move(s));
    }
    {
      Sample s{"sampling_" + tag, {}, {}, tol};
      ValueId img = s.in("img", ty(d, {2, 3, 5, 6})), vol = s.in("vol", ty(d, {2, 3, 5, 6, 7}));
      s.out(s.op1("upsample_bilinear2d", {T(img)}, {{"output_size", IntList{10, 12}}, {"align_corners", false},
                                                   {"scale_h", 2.0}, {"scale_w", 2.0}}));
      s.out(s.op1("upsample_bilinear2d", {T(img)}, {{"output_size", IntList{7, 5}}, {"align_corners", true},
                                                   {"scale_h", None{}}, {"scale_w", None{}}}));
      ValueId grid = s.in("grid", ty(d, {2, 4, 7, 2}));  // normal positions: some outside [-1, 1]
      for (std::int64_t mode : {0, 1})
        for (std::int64_t padding : {0, 1, 2})
          s.out(s.op1("grid_sampler_2d", {T(img), T(grid)},
                      {{"interpolation_mode", mode}, {"padding_mode", padding}, {"align_corners", mode == 1}}));
      s.out(s.op1("max_pool3d", {T(vol)}, {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}},
                                           {"dilation", IntList{1}}, {"ceil_mode", false}}));
      s.out(s.op1("avg_pool3d", {T(vol)}, {{"kernel_size", IntList{3}}, {"stride", IntList{2}}, {"padding", IntList{1}},
                                           {"ceil_mode", false}, {"count_include_pad", true}, {"divisor_override", None{}}}));
      s.out(s.op1("adaptive_avg_pool3d", {T(vol)}, {{"output_size", IntList{2, 3, 4}}}));
      ValueId w = s.in("w", ty(d, {10, 4})), idx = s.in("idx", ty(DType::Int64, {6}));
      ValueId off = s.op1("mul", {T(s.permutation("o", {3}, 0)), I(2)});  // 0, 2, 4 in some order
      ValueId sorted_off = s.op_all("sort", {T(off)}, {{"stable", true}})[0];
      for (std::int64_t mode : {0, 1, 2})
        s.out(s.op1("embedding_bag", {T(w), T(idx), T(sorted_off), Operand::none()},
                    {{"mode", mode}, {"include_last_offset", false}, {"padding_idx", None{}}}));
      out.push_back(std::move(s));
    }
  }
  return out;
}

const std::map<std::string, std::function<Samples()>>& op_db() {
  static const std::map<std::string, std::function<Samples()>> db = {
      {"prod", prod_samples},       {"sort", sort_samples},         {"topk", topk_samples},
      {"diagonal", diagonal_samples}, {"scatter", scatter_samples}, {"scatter_reduce", scatter_samples},
      {"index", index_samples},     {"index_put", index_samples},   {"upsample_bilinear2d", upsample_samples},
      {"max_pool3d", pool3d_samples}, {"avg_pool3d", pool3d_samples}, {"adaptive_avg_pool3d", pool3d_samples},
      {"grid_sampler_2d", grid_sampler_samples}, {"embedding_bag", embedding_bag_samples},
      {"masked_scatter", masked_scatter_samples}, {"half", half_samples},
  };
  return db;
}

// Checks every sample of `op_name` (the samples of an entry may cover a sibling operator as well).
void run_samples(const std::string& op_name) {
  for (Sample& s : op_db().at(op_name)()) {
    CAPTURE(s.name);
    s.t.set_outputs(s.outs);
    std::set<std::string> ops;
    for (const BoundSymbol& sym : s.t.symbols())
      if (op_db().count(sym.op->name) || op_name == "half") ops.insert(sym.op->name);  // half: every op
    Trace c = s.t;
    claim_executors(c, {find_executor("cpp"), find_executor("torch")});
    for (const BoundSymbol& sym : c.symbols())
      if (ops.count(sym.op->name)) CHECK_MESSAGE(sym.executor == "cpp", sym.op->name << " left to " << sym.executor);
    bool half = false;
    for (ValueId v : s.t.inputs()) half |= is_half(s.t.type(v).dtype);
    for (const BoundSymbol& sym : s.t.symbols())
      for (ValueId o : sym.outputs) half |= is_half(s.t.type(o).dtype);
    if (half) check_half_against_torch(s.t, "opdb_" + s.name, false, s.tol, 1, s.opts);
    else check_against_torch(s.t, "opdb_" + s.name, false, s.tol, 1, s.opts);
  }
}

}  // namespace

TEST_CASE("op database: prod") { run_samples("prod"); }
TEST_CASE("op database: sort") { run_samples("sort"); }
TEST_CASE("op database: topk") { run_samples("topk"); }
TEST_CASE("op database: diagonal") { run_samples("diagonal"); }
TEST_CASE("op database: scatter, scatter_reduce") { run_samples("scatter"); }
TEST_CASE("op database: index, index_put") { run_samples("index"); }
TEST_CASE("op database: upsample_bilinear2d") { run_samples("upsample_bilinear2d"); }
TEST_CASE("op database: max_pool3d, avg_pool3d, adaptive_avg_pool3d") { run_samples("max_pool3d"); }
TEST_CASE("op database: grid_sampler_2d") { run_samples("grid_sampler_2d"); }
TEST_CASE("op database: embedding_bag") { run_samples("embedding_bag"); }
TEST_CASE("op database: masked_scatter") { run_samples("masked_scatter"); }
TEST_CASE("op database: float16 and bfloat16") { run_samples("half"); }

// The database grows with the catalog: every operator with code of its own that cpp implements (the Indexing
// category, and what it runs alone) has samples here, or is one of those the older suite (conformance_test.cpp)
// covers.
TEST_CASE("op database: covers every operator cpp runs with code of its own") {
  // max_pool2d_backward, im2col and col2im: --autograd's, tested against LibTorch autograd in float64 by
  // tests/transforms/autodiff_test.cpp (forward and backward compiled with cpp/blas); max_pool2d_backward_nhwc
  // against the torch executor by conformance_test.cpp; dropout_mask: random, against its header bit for bit in
  // philox_test.cpp.
  const std::set<std::string> older = {"index_select", "gather", "argmax", "argmin", "cumsum", "embedding",
                                       "max_pool2d_backward", "max_pool2d_backward_nhwc", "im2col", "col2im",
                                       "dropout_mask"};
  const Executor* cpp = find_executor("cpp");
  for (const OpDef* def : op_registry().all()) {
    if (!cpp->implements(def->name) || (def->category != OpCategory::Indexing && !cpp->runs_alone(def->name))) continue;
    CAPTURE(def->name);
    CHECK((op_db().count(def->name) > 0 || older.count(def->name) > 0));
  }
}

// Indices are data: one out of range fails the call with ATen's message before anything is written.
TEST_CASE("scatter, index, index_put: an index out of range fails the call with a message") {
  struct Case {
    std::string op;
    std::int64_t bad;
    std::string message;
  };
  for (const Case& c : {Case{"scatter", 8, "scatter: index 8 is out of range for dimension 1 of size 8"},
                        Case{"scatter", -1, "scatter: index -1 is out of range for dimension 1 of size 8"},
                        Case{"index", 5, "index: index 5 is out of range for dimension 0 of size 5"},
                        Case{"index", -6, "index: index -6 is out of range for dimension 0 of size 5"},
                        Case{"index_put", 5, "index_put: index 5 is out of range for dimension 0 of size 5"}}) {
    CAPTURE(c.op);
    CAPTURE(c.bad);
    Trace t;
    ValueId a = t.add_input("a", f32({5, 8}));
    ValueId idx = t.add_input("idx", ty(DType::Int64, c.op == "scatter" ? Shape{5, 2} : Shape{3}));
    ValueId out;
    if (c.op == "scatter") out = t.emit1(op("scatter"), {T(a), T(idx), N(1.0)}, {{"dim", std::int64_t{1}}});
    else if (c.op == "index") out = t.emit1(op("index"), {T(a), T(idx)}, {{"dims", IntList{0}}});
    else out = t.emit1(op("index_put"), {T(a), T(t.add_input("v", f32({8}))), T(idx)}, {{"dims", IntList{0}}});
    t.set_outputs({out});
    thunderc::Model m(compile(claimed(t, {"cpp"}), {"cpp"}, "opdb_range_" + c.op));
    auto in = random_inputs(t, 1, false);
    for (std::size_t i = 0; i < in[1].numel(); ++i) static_cast<std::int64_t*>(in[1].raw())[i] = 0;
    static_cast<std::int64_t*>(in[1].raw())[1] = c.bad;
    try {
      m.run(in);
      FAIL("an out-of-range index did not fail the call");
    } catch (const thunderc::Error& e) {
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
  }
}

TEST_CASE("masked_scatter and embedding_bag: a short source or a bad offset fails the call with a message") {
  {
    Trace t;
    ValueId a = t.add_input("a", f32({2, 3})), m = t.add_input("m", b8({2, 3})), src = t.add_input("src", f32({2}));
    t.set_outputs({t.emit1(op("masked_scatter"), {T(a), T(m), T(src)}, {})});
    thunderc::Model model(compile(claimed(t, {"cpp"}), {"cpp"}, "opdb_masked_scatter_short"));
    auto in = random_inputs(t, 1, false);
    for (int i = 0; i < 6; ++i) static_cast<bool*>(in[1].raw())[i] = i < 3;  // 3 places, 2 source elements
    try {
      model.run(in);
      FAIL("a short source did not fail the call");
    } catch (const thunderc::Error& e) {
      CHECK(std::string(e.what()).find("masked_scatter: the mask holds at 3 places, the source has only 2 elements") !=
            std::string::npos);
    }
    static_cast<bool*>(in[1].raw())[2] = false;  // 2 places: fine, in row-major order
    auto out = model.run(in);
    CHECK(element(out[0], 0) == element(in[2], 0));
    CHECK(element(out[0], 1) == element(in[2], 1));
    CHECK(element(out[0], 2) == element(in[0], 2));
  }
  {
    Trace t;
    ValueId w = t.add_input("w", f32({10, 4})), idx = t.add_input("idx", ty(DType::Int64, {5}));
    ValueId off = t.add_input("off", ty(DType::Int64, {3}));
    t.set_outputs({t.emit1(op("embedding_bag"), {T(w), T(idx), T(off), Operand::none()}, {})});
    thunderc::Model model(compile(claimed(t, {"cpp"}), {"cpp"}, "opdb_embedding_bag_offsets"));
    auto in = random_inputs(t, 1, false);
    for (const std::vector<std::int64_t>& offsets : {std::vector<std::int64_t>{1, 2, 3}, {0, 3, 2}, {0, 2, 6}}) {
      CAPTURE(offsets[0] * 100 + offsets[1] * 10 + offsets[2]);
      for (int i = 0; i < 3; ++i) static_cast<std::int64_t*>(in[2].raw())[i] = offsets[static_cast<std::size_t>(i)];
      try {
        model.run(in);
        FAIL("bad offsets did not fail the call");
      } catch (const thunderc::Error& e) {
        CHECK(std::string(e.what()).find("embedding_bag: offsets must start at 0, never decrease and stay within the 5 indices") !=
              std::string::npos);
      }
    }
  }
}
