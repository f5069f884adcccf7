// The pass registry and order (core/transforms/pipeline.h): default list, --transforms resolution and its
// errors, and run_passes (verification, stamps, claiming).
#include <algorithm>

#include "core/transforms/pipeline.h"
#include "transforms_test_util.h"

using namespace xftest;

namespace {

std::vector<std::string> names_of(const std::vector<const Transform*>& ts) {
  std::vector<std::string> out;
  for (const Transform* t : ts) out.push_back(t->name);
  return out;
}

std::string user_error_of(const std::vector<std::string>& names) {
  try {
    plan_passes(names);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

bool registered(const std::string& name) { return find_pass(name) != nullptr; }

// The expected default order: every pass is registered explicitly (pipeline.cpp), none is optional.
std::vector<std::string> expected_default() {
  return {"dce", "cse", "constant-folding", "fold-batchnorm", "attention", "autocast", "decompose", "split-cat-conv", "pool-before-conv",
          "channels-last", "fusion", "remat", "dce"};
}

}  // namespace

TEST_CASE("pipeline: the default order") {
  CHECK(registered("fold-batchnorm"));
  CHECK(registered("fusion"));
  CHECK(default_transforms() == expected_default());
  PassPlan plan = plan_passes(default_transforms());
  std::vector<std::string> before = names_of(plan.before_claim), after = names_of(plan.after_claim);
  CHECK(before.back() == "channels-last");
  CHECK(before.front() == "dce");
  CHECK(after.back() == "dce");
  CHECK(std::find(after.begin(), after.end(), "remat") != after.end());
  CHECK(plan.names() == default_transforms());
  for (const RegisteredPass& p : registered_passes()) {
    CHECK_FALSE(p.transform.summary.empty());
    CHECK(p.transform.run);
  }
}

TEST_CASE("pipeline: --transforms replaces the optional passes, claiming goes before the first after-claim pass") {
  PassPlan p = plan_passes({"cse", "remat", "dce"});
  CHECK(names_of(p.before_claim) == std::vector<std::string>{"cse"});
  CHECK(names_of(p.after_claim) == std::vector<std::string>{"remat", "dce"});
  p = plan_passes({"dce", "claim-executors", "cse"});
  CHECK(names_of(p.before_claim) == std::vector<std::string>{"dce"});
  CHECK(names_of(p.after_claim) == std::vector<std::string>{"cse"});
  CHECK(plan_passes({"none"}).names().empty());
  CHECK(plan_passes({}).names().empty());
  CHECK(plan_passes({"", "dce", ""}).names() == std::vector<std::string>{"dce"});
}

TEST_CASE("pipeline: unknown names and impossible orders are user errors") {
  std::string e = user_error_of({"dce", "frobnicate"});
  CHECK(e.find("unknown transform 'frobnicate'") != std::string::npos);
  for (const RegisteredPass& p : registered_passes()) CHECK(e.find(p.transform.name) != std::string::npos);
  CHECK(e.find("--list-transforms") != std::string::npos);
  e = user_error_of({"remat", "decompose"});
  CHECK(e.find("'decompose' must run before executors are claimed") != std::string::npos);
  CHECK(e.find("'remat'") != std::string::npos);
  e = user_error_of({"claim-executors", "decompose"});
  CHECK(e.find("must run before executors are claimed") != std::string::npos);
}

TEST_CASE("pipeline: run_passes verifies, stamps, claims and reports every step in order") {
  Trace t;
  t.constructed_by = "test";
  ValueId x = t.add_input("x", f32({4}));
  ValueId dead = t.emit1(op("exp"), {T(x)}, {});
  ValueId a = t.emit1(op("relu"), {T(x)}, {});
  ValueId b = t.emit1(op("relu"), {T(x)}, {});
  ValueId c = t.emit1(op("add"), {T(a), T(b)}, {});
  (void)dead;
  t.set_outputs({c});

  struct Recorder : PassObserver {
    std::vector<std::string> events;
    void pass_started(const std::string& p) override { events.push_back("start " + p); }
    void pass_finished(const std::string& p, const Trace& after, double) override {
      events.push_back("end " + p + " " + std::to_string(after.symbols().size()) + " " + after.constructed_by);
    }
  } rec;
  // torch claims everything; built without LibTorch it claims nothing (unavailable), and cpp claims these ops.
  const std::string executor = THUNDERC_WITH_LIBTORCH ? "torch" : "cpp";
  ExecutorSelection sel;
  sel.executors = {find_executor(executor)};
  TransformContext ctx{Device::cpu(), sel.executors, {}};
  Trace out = run_passes(t, plan_passes({"dce", "cse", "remat", "dce"}), ctx, sel, &rec);
  REQUIRE(rec.events.size() == 10);
  CHECK(rec.events[0] == "start dce");
  CHECK(rec.events[1].rfind("end dce 3 dce (took ", 0) == 0);
  CHECK(rec.events[3].rfind("end cse 2 cse (took ", 0) == 0);
  CHECK(rec.events[5].rfind("end claim-executors 2 claim-executors (took ", 0) == 0);
  CHECK(rec.events[9].rfind("end dce 2 dce (took ", 0) == 0);
  CHECK(out.constructed_by == "dce");  // no time in what codegen sees
  for (const BoundSymbol& s : out.symbols()) CHECK(s.executor == executor);
}

TEST_CASE("pipeline: claiming that leaves symbols to nobody is a user error naming them") {
  Trace t;
  ValueId x = t.add_input("x", f32({4}));
  t.set_outputs({t.emit1(op("relu"), {T(x)}, {})});
  ExecutorSelection sel;  // no executor at all
  TransformContext ctx{Device::cpu(), {}, {}};
  try {
    run_passes(t, plan_passes({}), ctx, sel);
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("relu") != std::string::npos);
  }
}

TEST_CASE("pipeline: --list-transforms text lists every pass in order with claiming in its place") {
  std::string text = list_transforms_text();
  std::size_t last = 0;
  for (const RegisteredPass& p : registered_passes()) {
    std::size_t at = text.find("  " + p.transform.name + " ");
    REQUIRE_MESSAGE(at != std::string::npos, p.transform.name);
    CHECK(at >= last);
    last = at;
    CHECK(text.find(p.transform.summary) != std::string::npos);
  }
  CHECK(text.find("claim-executors") < text.find("  remat "));
  CHECK(text.find("claim-executors") > text.find("  decompose "));
  CHECK(text.find("Default (when --transforms is not given): dce,cse,constant-folding") != std::string::npos);
}
