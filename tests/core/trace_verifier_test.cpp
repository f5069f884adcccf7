// Trace construction (Trace::emit), attributes, and verify_trace on good and deliberately broken traces.
#include <memory>

#include "core/ir/printer.h"
#include "core/ir/verifier.h"
#include "core_test_util.h"

using namespace coretest;

namespace {

std::shared_ptr<ConstantData> zeros(std::size_t n) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.assign(n, 0);
  return d;
}

// x: f32[2, 3], y: f32[3]; w (constant f32[4, 3]); t0 = relu(x); t1 = linear(t0, w, None); t2 = add(t1, 1.0).
struct Small {
  Trace t;
  ValueId x, y, w, t0, t1, t2;
  std::shared_ptr<ConstantData> wdata;
  Small() {
    x = t.add_input("x", f32({2, 3}));
    y = t.add_input("y", f32({3}));
    wdata = zeros(48);
    w = t.add_constant("w", f32({4, 3}), wdata);
    t0 = t.emit1(op("relu"), {Operand::tensor(x)}, {});
    t1 = t.emit1(op("linear"), {Operand::tensor(t0), Operand::tensor(w), Operand::none()}, {});
    t2 = t.emit1(op("add"), {Operand::tensor(t1), Operand::number(1.0)}, {});
    t.set_outputs({t2});
  }
};

// verify_trace's InternalError message, or "<valid>".
std::string verify_error(const Trace& t, const std::string& after = "some_pass") {
  try {
    verify_trace(t, after);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "<valid>";
}

#define CHECK_INVALID(trace, ...)                                                                      \
  do {                                                                                                 \
    std::string coretest_v_ = verify_error(trace);                                                     \
    CHECK_MESSAGE(coretest_v_ != "<valid>", "verify_trace accepted a broken trace");                  \
    for (const char* coretest_p_ : {"bug", "some_pass", __VA_ARGS__})                                  \
      CHECK_MESSAGE(contains(coretest_v_, coretest_p_), "'" << coretest_v_ << "' lacks '" << std::string(coretest_p_) << "'"); \
  } while (0)

}  // namespace

TEST_CASE("emit: creates typed outputs and fills attribute defaults in declared order") {
  Trace t;
  ValueId x = t.add_input("x", f32({1, 4, 9, 9}));
  ValueId w = t.add_input("w", f32({8, 2, 3, 3}));
  // Given out of order and partially: stored in declaration order with defaults.
  ValueId y = t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), Operand::none()},
                      {{"groups", I(2)}, {"stride", IntList{2}}});
  CHECK(t.type(y) == f32({1, 8, 4, 4}));
  const Attrs& a = t.symbols().back().attrs;
  const std::vector<std::pair<std::string, AttrValue>> want = {
      {"stride", IntList{2}}, {"padding", IntList{0, 0}}, {"dilation", IntList{1, 1}}, {"groups", I(2)}};
  CHECK(a.items() == want);
  CHECK(t.value(y).origin == ValueOrigin::Intermediate);
  CHECK(t.value(y).name == "t0");
  CHECK(t.symbols().back().op == &op("conv2d"));
  CHECK(t.symbols().back().outputs == std::vector<ValueId>{y});

  // Ints given for float attributes are stored as floats.
  ValueId z = t.emit1(op("leaky_relu"), {Operand::tensor(y)}, {{"negative_slope", I(1)}});
  CHECK(std::holds_alternative<double>(t.symbols().back().attrs.get("negative_slope")));
  CHECK(t.symbols().back().attrs.get_float("negative_slope") == 1.0);
  ValueId s = t.emit1(op("softmax"), {Operand::tensor(z)}, {{"dim", I(1)}}, "m.py(1): f");
  CHECK(t.symbols().back().attrs.items().size() == 2);
  CHECK(t.symbols().back().attrs.is_none("dtype"));
  CHECK(t.symbols().back().source == "m.py(1): f");
  t.set_outputs({s});
  CHECK(verify_error(t) == "<valid>");
}

TEST_CASE("emit: UserError from meta leaves the trace unchanged") {
  Small s;
  std::size_t nsym = s.t.symbols().size(), nval = s.t.num_values();
  std::string before = print_trace(s.t);
  try {
    s.t.emit(op("add"), {Operand::tensor(s.x), Operand::tensor(s.w)}, {});
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    std::string msg = e.what();
    CHECK(contains(msg, "add"));
    CHECK(contains(msg, "[2, 3] and [4, 3]"));
    CHECK(contains(msg, "cannot be broadcast"));
    CHECK_FALSE(contains(msg, "bug"));
  }
  CHECK(s.t.symbols().size() == nsym);
  CHECK(s.t.num_values() == nval);
  CHECK(print_trace(s.t) == before);
  // The next temporary name is still t3.
  CHECK(s.t.value(s.t.emit1(op("neg"), {Operand::tensor(s.y)}, {})).name == "t3");
}

TEST_CASE("emit: declaration violations are internal errors") {
  Small s;
  auto X = Operand::tensor(s.x);
  auto emit = [&](const char* name, std::vector<Operand> in, Attrs a = {}) {
    return s.t.emit(op(name), std::move(in), std::move(a));
  };
  CHECK_THROWS_AS(emit("relu", {X, X}), InternalError);                   // too many operands
  CHECK_THROWS_AS(emit("add", {X}), InternalError);                       // too few
  CHECK_THROWS_AS(emit("relu", {Operand::number(1.0)}), InternalError);   // number where a tensor is needed
  CHECK_THROWS_AS(emit("relu", {Operand::none()}), InternalError);        // None for a required input
  CHECK_THROWS_AS(emit("relu", {X}, {{"bogus", I(1)}}), InternalError);   // unknown attribute
  CHECK_THROWS_AS(emit("softmax", {X}), InternalError);                   // missing required attribute
  CHECK_THROWS_AS(emit("softmax", {X}, {{"dim", 1.5}}), InternalError);   // wrong attribute type
  CHECK_THROWS_AS(emit("sum", {X}, {{"keepdim", None{}}}), InternalError);  // None for a non-nullable attribute
  CHECK_THROWS_AS(emit("linear", {X, X, X, X}), InternalError);
  CHECK_THROWS_AS(s.t.value(1000), InternalError);
  try {
    emit("relu", {X}, {{"bogus", I(1)}});
  } catch (const InternalError& e) {
    CHECK(contains(e.what(), "bug"));
    CHECK(contains(e.what(), "relu has no attribute 'bogus'"));
  }
  CHECK(s.t.symbols().size() == 3);
  CHECK(verify_error(s.t) == "<valid>");
}

TEST_CASE("add_constant checks its bytes") {
  Trace t;
  CHECK_THROWS_AS(t.add_constant("w", f32({2}), zeros(7)), InternalError);
  CHECK_THROWS_AS(t.add_constant("w", f32({2}), nullptr), InternalError);
  ValueId ok = t.add_constant("w", tt(DType::Float16, {2, 2}), zeros(8));
  CHECK(t.value(ok).origin == ValueOrigin::Constant);
  CHECK(t.constants() == std::vector<ValueId>{ok});
  CHECK(t.value(ok).data->bytes.size() == 8);
}

TEST_CASE("verify_trace accepts good traces") {
  Small s;
  CHECK(verify_error(s.t) == "<valid>");
  // No symbols, output an input.
  Trace t;
  t.set_outputs({t.add_input("a", f32({}))});
  CHECK(verify_error(t) == "<valid>");
  // Rebuilding with clone_without_symbols + append keeps it valid.
  Trace r = s.t.clone_without_symbols();
  CHECK(r.symbols().empty());
  CHECK(r.num_values() == s.t.num_values());
  for (const BoundSymbol& sym : s.t.symbols()) r.append(sym);
  CHECK(verify_error(r) == "<valid>");
  CHECK(print_trace(r) == print_trace(s.t));
  // A pass can emit new symbols after cloning; temporaries do not collide with the old ones.
  Trace r2 = s.t.clone_without_symbols();
  r2.append(s.t.symbols()[0]);
  ValueId n = r2.emit1(op("neg"), {Operand::tensor(s.t0)}, {});
  CHECK(r2.value(n).name == "t3");
  r2.set_outputs({n});
  CHECK(verify_error(r2) == "<valid>");
}

TEST_CASE("verify_trace: use before definition") {
  Small s;
  std::swap(s.t.mutable_symbols()[0], s.t.mutable_symbols()[1]);
  CHECK_INVALID(s.t, "t1 = linear(t0, w, None)", "before it is defined");

  Small dropped;
  Trace r = dropped.t.clone_without_symbols();
  r.append(dropped.t.symbols()[1]);  // relu skipped: t0 is never defined
  r.append(dropped.t.symbols()[2]);
  CHECK_INVALID(r, "before it is defined");

  Small bad_id;
  bad_id.t.mutable_symbols()[0].inputs[0] = Operand::tensor(999);
  CHECK_INVALID(bad_id.t, "before it is defined");
}

TEST_CASE("verify_trace: recorded output type differs from meta") {
  Small s;
  // relu now reads y (f32[3]) but its output t0 was recorded as f32[2, 3]. linear(t0) still fits.
  s.t.mutable_symbols()[0].inputs[0] = Operand::tensor(s.y);
  CHECK_INVALID(s.t, "t0 = relu(y)", "'t0' has type cpu f32[2, 3], meta gives cpu f32[3]");

  Small d;
  d.t.mutable_symbols()[2].inputs[1] = Operand::number(std::int64_t{1});  // still f32: fine
  CHECK(verify_error(d.t) == "<valid>");
  Trace t;
  ValueId x = t.add_input("x", f32({2}));
  ValueId c = t.emit1(op("to_dtype"), {Operand::tensor(x)}, {{"dtype", DType::Float16}});
  t.set_outputs({c});
  t.mutable_symbols()[0].attrs.set("dtype", DType::Float64);
  CHECK_INVALID(t, "has type cpu f16[2], meta gives cpu f64[2]");
}

TEST_CASE("verify_trace: duplicate definitions and wrong output counts") {
  Small s;
  s.t.append(s.t.symbols()[0]);  // t0 defined again
  CHECK_INVALID(s.t, "'t0' is defined twice");

  Small in;
  in.t.mutable_symbols()[0].outputs[0] = in.x;  // redefines an input
  CHECK_INVALID(in.t, "defined twice");

  Small none;
  none.t.mutable_symbols()[2].outputs.clear();
  CHECK_INVALID(none.t, "has 0 outputs, its meta function gives 1");

  Small two;
  two.t.mutable_symbols()[2].outputs.push_back(two.y);
  CHECK_INVALID(two.t, "has 2 outputs");

  Small unknown;
  unknown.t.mutable_symbols()[2].outputs[0] = 500;
  CHECK_INVALID(unknown.t, "unknown value id 500");
}

TEST_CASE("verify_trace: bad attributes and operands") {
  Small s;
  s.t.mutable_symbols()[0].attrs.set("bogus", I(1));
  CHECK_INVALID(s.t, "does not type-check", "bogus");

  Trace t;
  ValueId x = t.add_input("x", f32({2, 3}));
  ValueId y = t.emit1(op("sum"), {Operand::tensor(x)}, {{"dims", IntList{1}}});
  t.set_outputs({y});
  CHECK(verify_error(t) == "<valid>");
  Trace reordered = t;
  reordered.mutable_symbols()[0].attrs = Attrs{{"keepdim", false}, {"dims", IntList{1}}, {"dtype", None{}}};
  CHECK_INVALID(reordered, "order or defaults");
  Trace missing = t;
  missing.mutable_symbols()[0].attrs = Attrs{{"dims", IntList{1}}};
  CHECK_INVALID(missing, "order or defaults");
  Trace wrong_type = t;
  wrong_type.mutable_symbols()[0].attrs.set("keepdim", I(0));
  CHECK_INVALID(wrong_type, "does not type-check", "keepdim");

  Small scalar;
  scalar.t.mutable_symbols()[0].inputs[0] = Operand::number(1.0);
  CHECK_INVALID(scalar.t, "does not type-check", "cannot be a number");

  Small meta_rejects;  // t2 = add(t1, y): [2, 4] and [3] do not broadcast
  meta_rejects.t.mutable_symbols()[2].inputs[1] = Operand::tensor(meta_rejects.y);
  CHECK_INVALID(meta_rejects.t, "does not type-check", "cannot be broadcast");

  Small no_op;
  no_op.t.mutable_symbols()[1].op = nullptr;
  CHECK_INVALID(no_op.t, "no operator");
}

TEST_CASE("verify_trace: constants and outputs") {
  Small s;
  s.wdata->bytes.resize(47);
  CHECK_INVALID(s.t, "constant 'w' does not hold 48 bytes");

  Small o;
  o.t.set_outputs({o.t2, 77});
  CHECK_INVALID(o.t, "an output is not defined");

  Small msg;
  std::swap(msg.t.mutable_symbols()[0], msg.t.mutable_symbols()[2]);
  std::string m = verify_error(msg.t, "fusion");
  CHECK(contains(m, "trace after 'fusion' is invalid"));
  CHECK(contains(m, "internal error (this is a bug in thunderc"));
}

TEST_CASE("Attrs accessors") {
  Attrs a{{"i", I(3)}, {"f", 0.5}, {"b", true}, {"s", std::string("x")}, {"l", IntList{1, 2}},
          {"d", DType::Int8}, {"n", None{}}};
  CHECK(a.get_int("i") == 3);
  CHECK(a.get_float("i") == 3.0);
  CHECK(a.get_float("f") == 0.5);
  CHECK(a.get_bool("b"));
  CHECK(a.get_string("s") == "x");
  CHECK(a.get_ints("l") == IntList{1, 2});
  CHECK(a.get_dtype("d") == DType::Int8);
  CHECK(a.is_none("n"));
  CHECK_FALSE(a.get_optional_int("n").has_value());
  CHECK(a.get_optional_int("i") == 3);
  CHECK_FALSE(a.get_optional_dtype("n").has_value());
  CHECK(a.get_optional_dtype("d") == DType::Int8);
  CHECK_THROWS_AS(a.get_int("f"), InternalError);
  CHECK_THROWS_AS(a.get_string("i"), InternalError);
  CHECK_THROWS_AS(a.get("missing"), InternalError);
  CHECK(a.has("l"));
  CHECK_FALSE(a.has("missing"));
  // set replaces in place, keeping the order.
  a.set("i", I(4));
  CHECK(a.items().front().first == "i");
  CHECK(a.get_int("i") == 4);
  CHECK(a.items().size() == 7);
  CHECK(attr_matches(I(1), AttrType::Float, false));
  CHECK_FALSE(attr_matches(1.0, AttrType::Int, false));
  CHECK(attr_matches(None{}, AttrType::Int, true));
  CHECK_FALSE(attr_matches(None{}, AttrType::Int, false));
  CHECK(std::string(attr_type_name(AttrType::IntList)) == "int[]");
}

TEST_CASE("op registry") {
  const OpRegistry& r = op_registry();
  CHECK(r.find("nope") == nullptr);
  CHECK_THROWS_AS(r.get("nope"), InternalError);
  CHECK(&r.get("add") == r.find("add"));
  auto all = r.all();
  REQUIRE(all.size() > 40);
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1]->name < all[i]->name);
  for (const OpDef* d : all) {
    CAPTURE(d->name);
    CHECK(d->meta);
    CHECK_FALSE(d->doc.empty());
    CHECK(std::string(op_category_name(d->category)) != "?");
    for (std::size_t i = 0; i + 1 < d->inputs.size(); ++i) CHECK_FALSE(d->inputs[i].variadic);
  }
  CHECK(op("conv2d").category == OpCategory::Convolution);
  CHECK(op("cat").inputs.back().variadic);
  OpRegistry mine;
  OpDef def{"x", OpCategory::Shape, {{"a"}}, {}, [](const MetaArgs& m) { return std::vector<TensorType>{m.tensor(0)}; }, "x"};
  mine.add(def);
  CHECK_THROWS_AS(mine.add(def), InternalError);
  def.meta = nullptr;
  def.name = "y";
  CHECK_THROWS_AS(mine.add(def), InternalError);
}
