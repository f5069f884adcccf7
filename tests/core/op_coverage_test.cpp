// Every operator in the catalog must have a meta-function test case (OPS_TEST_CASE registers the names it
// covers at static-initialization time, so this holds whichever test cases are selected to run).
#include "core_test_util.h"

using namespace coretest;

TEST_CASE("every catalog operator has a meta test case") {
  const auto& tested = tested_ops();
  std::vector<std::string> untested;
  for (const OpDef* d : op_registry().all())
    if (!tested.count(d->name)) untested.push_back(d->name);
  std::string list;
  for (const auto& n : untested) list += n + " ";
  CHECK_MESSAGE(untested.empty(), "operators without a meta test: " << list);
  // And no test claims an operator the catalog does not have.
  for (const std::string& name : tested) {
    CAPTURE(name);
    CHECK(op_registry().find(name) != nullptr);
  }
  CHECK(tested.size() == op_registry().all().size());
}
