// The attention transform on hand-built traces: every recognized form becomes one
// scaled_dot_product_attention with the right inputs and attributes; near misses are left unchanged.
#include <cmath>

#include "core/transforms/attention.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

// q [.., L, E], k [.., S, E], v [.., S, Ev] inputs and the pieces of softmax(q @ k^T ...) @ v.
struct Attn {
  Trace t;
  ValueId q, k, v;

  Attn(Shape qs, Shape ks, Shape vs) {
    q = t.add_input("q", f32(std::move(qs)));
    k = t.add_input("k", f32(std::move(ks)));
    v = t.add_input("v", f32(std::move(vs)));
  }
  IntList swap_last_two(std::size_t rank) const {
    IntList d;
    for (std::size_t i = 0; i < rank; ++i) d.push_back(static_cast<std::int64_t>(i));
    std::swap(d[rank - 1], d[rank - 2]);
    return d;
  }
  ValueId kt(ValueId key) { return t.emit1(op("permute"), {T(key)}, {{"dims", swap_last_two(t.type(key).rank())}}); }
  ValueId scores(ValueId query, ValueId key) { return t.emit1(op("matmul"), {T(query), T(kt(key))}, {}); }
  ValueId softmax(ValueId x, std::int64_t dim = -1) { return t.emit1(op("softmax"), {T(x)}, {{"dim", dim}}); }
  ValueId finish(ValueId p) {
    ValueId r = t.emit1(op("matmul"), {T(p), T(v)}, {});
    t.set_outputs({r});
    return r;
  }
  ValueId bool_constant(const std::string& name, Shape shape, const std::vector<unsigned char>& bytes) {
    return t.add_constant(name, tt(DType::Bool, std::move(shape)), data_of(bytes));
  }
};

// The one attention symbol of `after` (fails the test when there is not exactly one).
const BoundSymbol& the_attention(const Trace& after) {
  const BoundSymbol* found = nullptr;
  int count = 0;
  for (const BoundSymbol& s : after.symbols())
    if (s.op->name == "scaled_dot_product_attention") found = &s, ++count;
  REQUIRE(count == 1);
  return *found;
}

std::vector<std::string> op_names(const Trace& t) {
  std::vector<std::string> out;
  for (const BoundSymbol& s : t.symbols()) out.push_back(s.op->name);
  return out;
}

// Unchanged: same symbols, same printout apart from the stamp.
void check_unchanged(const Trace& before) {
  Trace after = fuse_attention(before);
  verify_trace(after, "attention");
  Trace stamped = before;
  stamped.constructed_by = "attention";
  CHECK(print_trace(after) == print_trace(stamped));
}

// A lower-triangular keep pattern (j <= i) as masked_fill's "drop" mask: 1 where j > i.
std::vector<unsigned char> causal_drop(std::int64_t n) {
  std::vector<unsigned char> m(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) m[static_cast<std::size_t>(i * n + j)] = j > i;
  return m;
}

}  // namespace

TEST_CASE("attention: the GPT form (scale by a 0-dim constant, causal constant mask) is one causal sdpa") {
  Attn a({1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8});
  ValueId c = a.t.add_constant("scale", tt(DType::Float64, {}), data_of(std::vector<double>{0.125}));
  ValueId m = a.bool_constant("mask", {1, 1, 4, 4}, causal_drop(4));
  ValueId s = a.t.emit1(op("mul"), {T(a.scores(a.q, a.k)), T(c)}, {}, "model.py:7");
  ValueId f = a.t.emit1(op("masked_fill"), {T(s), T(m), N(-INFINITY)}, {});
  ValueId r = a.finish(a.softmax(f));
  Trace after = fuse_attention(a.t);
  check_before_after("attention", a.t, after);
  CHECK(op_names(after) == std::vector<std::string>{"scaled_dot_product_attention"});
  const BoundSymbol& sdpa = the_attention(after);
  CHECK(sdpa.outputs[0] == r);  // the final matmul's value, so readers and outputs are unchanged
  CHECK(sdpa.inputs[0].value == a.q);
  CHECK(sdpa.inputs[1].value == a.k);
  CHECK(sdpa.inputs[2].value == a.v);
  CHECK(sdpa.inputs[3].kind == OperandKind::None);
  CHECK(sdpa.attrs.get_bool("is_causal"));
  CHECK(sdpa.attrs.get_float("scale") == 0.125);
  CHECK(after.outputs() == a.t.outputs());
}

TEST_CASE("attention: division, additive masks (either operand order), where and computed bool masks") {
  SUBCASE("div by a number, add(mask, scores), L != S, E != Ev, batch broadcast") {
    Attn a({2, 3, 5, 8}, {1, 3, 7, 8}, {2, 1, 7, 6});
    ValueId bias = a.t.add_input("bias", f32({5, 7}));
    ValueId s = a.t.emit1(op("div"), {T(a.scores(a.q, a.k)), N(4.0)}, {});
    ValueId f = a.t.emit1(op("add"), {T(bias), T(s)}, {});
    a.finish(a.softmax(f, 3));
    Trace after = fuse_attention(a.t);
    verify_trace(after, "attention");
    const BoundSymbol& sdpa = the_attention(after);
    CHECK(sdpa.inputs[3].value == bias);
    CHECK_FALSE(sdpa.attrs.get_bool("is_causal"));
    CHECK(sdpa.attrs.get_float("scale") == 0.25);
    CHECK(after.symbols().size() == 1);
  }
  SUBCASE("no scale at all records scale 1; no mask") {
    Attn a({4, 8}, {6, 8}, {6, 3});
    a.finish(a.softmax(a.scores(a.q, a.k)));
    Trace after = fuse_attention(a.t);
    const BoundSymbol& sdpa = the_attention(after);
    CHECK(sdpa.attrs.get_float("scale") == 1.0);
    CHECK(sdpa.inputs[3].kind == OperandKind::None);
  }
  SUBCASE("q and k scaled before the product, the scores after: all factors multiply") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId qs = a.t.emit1(op("mul"), {T(a.q), N(0.5)}, {});
    ValueId ks = a.t.emit1(op("mul"), {N(0.5), T(a.k)}, {});
    ValueId kt = a.t.emit1(op("div"), {T(a.kt(ks)), N(2.0)}, {});
    ValueId s = a.t.emit1(op("matmul"), {T(qs), T(kt)}, {});
    a.finish(a.softmax(a.t.emit1(op("mul"), {T(s), N(3.0)}, {})));
    Trace after = fuse_attention(a.t);
    const BoundSymbol& sdpa = the_attention(after);
    CHECK(sdpa.attrs.get_float("scale") == doctest::Approx(0.375).epsilon(1e-15));
    CHECK(sdpa.inputs[0].value == a.q);
    CHECK(sdpa.inputs[1].value == a.k);
    CHECK(after.symbols().size() == 1);
  }
  SUBCASE("where(keep, scores, -inf): the keep mask is sdpa's mask as is") {
    Attn a({2, 4, 8}, {2, 6, 8}, {2, 6, 8});
    ValueId keep = a.t.add_input("keep", tt(DType::Bool, {2, 1, 6}));
    ValueId f = a.t.emit1(op("where"), {T(keep), T(a.scores(a.q, a.k)), N(-INFINITY)}, {});
    a.finish(a.softmax(f));
    Trace after = fuse_attention(a.t);
    CHECK(the_attention(after).inputs[3].value == keep);
    CHECK(after.symbols().size() == 1);
  }
  SUBCASE("a computed masked_fill mask is negated by a logical_not before the attention") {
    Attn a({1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8});
    ValueId pad = a.t.add_input("pad", tt(DType::Bool, {1, 1, 1, 4}));
    ValueId f = a.t.emit1(op("masked_fill"), {T(a.scores(a.q, a.k)), T(pad), N(-INFINITY)}, {});
    a.finish(a.softmax(f));
    Trace after = fuse_attention(a.t);
    verify_trace(after, "attention");
    REQUIRE(op_names(after) == std::vector<std::string>{"logical_not", "scaled_dot_product_attention"});
    CHECK(after.symbols()[0].inputs[0].value == pad);
    CHECK(the_attention(after).inputs[3].value == after.symbols()[0].outputs[0]);
  }
  SUBCASE("a constant non-causal mask becomes a negated constant; L != S is never causal") {
    Attn a({1, 1, 2, 8}, {1, 1, 3, 8}, {1, 1, 3, 8});
    ValueId m = a.bool_constant("pad", {1, 3}, {0, 0, 1});
    ValueId f = a.t.emit1(op("masked_fill"), {T(a.scores(a.q, a.k)), T(m), N(-INFINITY)}, {});
    a.finish(a.softmax(f));
    Trace after = fuse_attention(a.t);
    const BoundSymbol& sdpa = the_attention(after);
    CHECK_FALSE(sdpa.attrs.get_bool("is_causal"));
    ValueId keep = sdpa.inputs[3].value;
    CHECK(after.value(keep).name == "pad_keep");
    CHECK(after.value(keep).origin == ValueOrigin::Constant);
    CHECK(values_of<unsigned char>(after, keep) == std::vector<unsigned char>{1, 1, 0});
  }
  SUBCASE("an upper-triangular constant that is not exactly j > i stays a mask") {
    Attn a({1, 3, 8}, {1, 3, 8}, {1, 3, 8});
    ValueId m = a.bool_constant("m", {3, 3}, {0, 1, 1, 0, 0, 0, 0, 0, 0});
    a.finish(a.softmax(a.t.emit1(op("masked_fill"), {T(a.scores(a.q, a.k)), T(m), N(-INFINITY)}, {})));
    Trace after = fuse_attention(a.t);
    const BoundSymbol& sdpa = the_attention(after);
    CHECK_FALSE(sdpa.attrs.get_bool("is_causal"));
    CHECK(sdpa.inputs[3].is_tensor());
  }
  SUBCASE("two attentions in one trace are both rewritten") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId first = a.t.emit1(op("matmul"), {T(a.softmax(a.scores(a.q, a.k))), T(a.v)}, {});
    ValueId second = a.t.emit1(op("matmul"), {T(a.softmax(a.scores(first, a.k))), T(a.v)}, {});
    a.t.set_outputs({second});
    Trace after = fuse_attention(a.t);
    verify_trace(after, "attention");
    CHECK(op_names(after) ==
          std::vector<std::string>{"scaled_dot_product_attention", "scaled_dot_product_attention"});
    CHECK(after.symbols()[1].inputs[0].value == first);
  }
}

TEST_CASE("attention: near misses are left unchanged") {
  SUBCASE("softmax over another dim") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    a.finish(a.softmax(a.scores(a.q, a.k), 1));
    check_unchanged(a.t);
  }
  SUBCASE("softmax computed in another dtype") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId p = a.t.emit1(op("softmax"), {T(a.scores(a.q, a.k))}, {{"dim", I(-1)}, {"dtype", DType::Float64}});
    ValueId r = a.t.emit1(op("matmul"), {T(a.t.emit1(op("to_dtype"), {T(p)}, {{"dtype", DType::Float32}})), T(a.v)}, {});
    a.t.set_outputs({r});
    check_unchanged(a.t);
  }
  SUBCASE("the scores have a second reader") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId s = a.scores(a.q, a.k);
    ValueId r = a.finish(a.softmax(s));
    a.t.set_outputs({r, a.t.emit1(op("relu"), {T(s)}, {})});
    check_unchanged(a.t);
  }
  SUBCASE("the attention weights are a trace output") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId p = a.softmax(a.scores(a.q, a.k));
    ValueId r = a.finish(p);
    a.t.set_outputs({r, p});
    check_unchanged(a.t);
  }
  SUBCASE("a scale that is not a scalar (a tensor of the scores' shape)") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId w = a.t.add_input("w", f32({4, 4}));
    a.finish(a.softmax(a.t.emit1(op("mul"), {T(a.scores(a.q, a.k)), T(w)}, {})));
    check_unchanged(a.t);
  }
  SUBCASE("a permute that does not swap the last two dims") {
    Attn a({2, 4, 4}, {4, 2, 4}, {2, 4, 4});
    ValueId kt = a.t.emit1(op("permute"), {T(a.k)}, {{"dims", IntList{1, 0, 2}}});
    a.finish(a.softmax(a.t.emit1(op("matmul"), {T(a.q), T(kt)}, {})));
    check_unchanged(a.t);
  }
  SUBCASE("masked_fill with a finite value (not equivalent for fully masked rows)") {
    Attn a({2, 4, 8}, {2, 4, 8}, {2, 4, 8});
    ValueId m = a.bool_constant("m", {4, 4}, causal_drop(4));
    a.finish(a.softmax(a.t.emit1(op("masked_fill"), {T(a.scores(a.q, a.k)), T(m), N(-1e9)}, {})));
    check_unchanged(a.t);
  }
  SUBCASE("a mask that broadcasts the scores to a larger shape") {
    Attn a({1, 4, 8}, {1, 4, 8}, {1, 4, 8});
    ValueId bias = a.t.add_input("bias", f32({3, 4, 4}));
    a.finish(a.softmax(a.t.emit1(op("add"), {T(a.scores(a.q, a.k)), T(bias)}, {})));
    check_unchanged(a.t);
  }
  SUBCASE("a key without the transpose (matmul(q, k) with k already [E, S])") {
    Attn a({2, 4, 8}, {2, 8, 4}, {2, 4, 8});
    a.finish(a.softmax(a.t.emit1(op("matmul"), {T(a.q), T(a.k)}, {})));
    check_unchanged(a.t);
  }
  SUBCASE("q, k, v of different ranks (matmul broadcasting k's batch)") {
    Attn a({2, 4, 8}, {4, 8}, {2, 4, 8});
    a.finish(a.softmax(a.scores(a.q, a.k)));
    check_unchanged(a.t);
  }
}
