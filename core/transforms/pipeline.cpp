#include "core/transforms/pipeline.h"

#include <chrono>
#include <cstdio>

#include "core/ir/error.h"
#include "core/ir/verifier.h"
#include "core/transforms/attention.h"
#include "core/transforms/autocast.h"
#include "core/transforms/channels_last.h"
#include "core/transforms/constant_folding.h"
#include "core/transforms/cse.h"
#include "core/transforms/dce.h"
#include "core/transforms/decompose.h"
#include "core/transforms/pool_before_conv.h"
#include "core/transforms/remat.h"
#include "core/transforms/split_cat_conv.h"
// Every pass is registered explicitly below (no __has_include: a pass whose header went missing must fail
// the build, not silently leave the pipeline).
#include "core/transforms/fold_batchnorm.h"
#include "core/transforms/fusion.h"

namespace thunderc {

namespace {

// Claiming is not a Transform (it always runs and cannot be listed away); this entry only names it for
// --list-transforms, the dumps and the timing table.
const Transform& claim_entry() {
  static const Transform t{kClaimPassName,
                           "every symbol is claimed by the first executor that accepts it (always runs)", nullptr};
  return t;
}

}  // namespace

// THE ORDER.
const std::vector<RegisteredPass>& registered_passes() {
  static const std::vector<RegisteredPass> passes = {
      {dce_transform(), PassPhase::Either},
      {cse_transform(), PassPhase::Either},
      {constant_folding_transform(), PassPhase::Either},
      {fold_batchnorm_transform(), PassPhase::BeforeClaim},
      {attention_transform(), PassPhase::BeforeClaim},  // before decompose, which undoes it when nothing claims it
      {autocast_transform(), PassPhase::BeforeClaim},   // after attention: sdpa is one low-precision op
      {decompose_transform(), PassPhase::BeforeClaim},
      {split_cat_conv_transform(), PassPhase::BeforeClaim},  // before channels-last, which then sees the pieces' convs
      {pool_before_conv_transform(), PassPhase::BeforeClaim},  // after fold-batchnorm: a folded bias moves too
      {channels_last_transform(), PassPhase::BeforeClaim},  // last before claiming: sees the ops executors get
      {fusion_transform(), PassPhase::AfterClaim},
      {remat_transform(), PassPhase::AfterClaim},
  };
  return passes;
}

const RegisteredPass* find_pass(const std::string& name) {
  for (const RegisteredPass& p : registered_passes())
    if (p.transform.name == name) return &p;
  return nullptr;
}

std::string known_pass_names() {
  std::string s;
  for (const RegisteredPass& p : registered_passes()) s += (s.empty() ? "" : ", ") + p.transform.name;
  return s;
}

std::vector<std::string> default_transforms() {
  std::vector<std::string> names;
  for (const RegisteredPass& p : registered_passes()) names.push_back(p.transform.name);
  names.push_back("dce");  // again after claiming: removes what fusion and remat left unused
  return names;
}

std::vector<std::string> PassPlan::names() const {
  std::vector<std::string> out;
  for (const Transform* t : before_claim) out.push_back(t->name);
  for (const Transform* t : after_claim) out.push_back(t->name);
  return out;
}

PassPlan plan_passes(const std::vector<std::string>& names) {
  std::vector<std::string> list;
  for (const std::string& n : names)
    if (!n.empty()) list.push_back(n);
  if (list.size() == 1 && list[0] == "none") list.clear();
  PassPlan plan;
  bool claimed = false;
  std::string first_after;  // the pass that put claiming before it (for the error message)
  for (const std::string& name : list) {
    if (name == kClaimPassName) {
      if (claimed && first_after == kClaimPassName) user_error("--transforms lists ", kClaimPassName, " twice");
      if (claimed)
        user_error("--transforms: ", kClaimPassName, " comes after '", first_after,
                   "', which needs claimed symbols; list it earlier");
      claimed = true;
      first_after = kClaimPassName;
      continue;
    }
    const RegisteredPass* p = find_pass(name);
    if (!p)
      user_error("unknown transform '", name, "'; known transforms: ", known_pass_names(),
                 " (see thunderc --list-transforms)");
    if (p->phase == PassPhase::AfterClaim && !claimed) {
      claimed = true;
      first_after = name;
    }
    if (p->phase == PassPhase::BeforeClaim && claimed)
      user_error("--transforms: '", name, "' must run before executors are claimed, but it comes after '",
                 first_after, "'; list it earlier");
    (claimed ? plan.after_claim : plan.before_claim).push_back(&p->transform);
  }
  return plan;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string stamp(const std::string& pass, double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", ms);
  return pass + " (took " + buf + " ms)";
}

}  // namespace

Trace run_passes(Trace trace, const PassPlan& plan, const TransformContext& context,
                 const ExecutorSelection& selection, PassObserver* observer) {
  auto run_one = [&](const Transform& t) {
    if (observer) observer->pass_started(t.name);
    auto start = std::chrono::steady_clock::now();
    Trace next = t.run(trace, context);
    double ms = ms_since(start);
    next.constructed_by = stamp(t.name, ms);
    verify_trace(next, t.name);
    trace = std::move(next);
    if (observer) observer->pass_finished(t.name, trace, ms);
  };
  for (const Transform* t : plan.before_claim) run_one(*t);

  if (observer) observer->pass_started(kClaimPassName);
  auto start = std::chrono::steady_clock::now();
  std::vector<UnclaimedSymbol> unclaimed = claim_executors(trace, selection.executors);
  if (!unclaimed.empty()) throw UserError(unclaimed_message(trace, unclaimed, selection));
  double ms = ms_since(start);
  trace.constructed_by = stamp(kClaimPassName, ms);
  verify_trace(trace, kClaimPassName);
  if (observer) observer->pass_finished(kClaimPassName, trace, ms);

  for (const Transform* t : plan.after_claim) {
    run_one(*t);
    for (const BoundSymbol& sym : trace.symbols())
      if (sym.executor.empty()) internal_error("'", t->name, "' left a '", sym.op->name, "' symbol unclaimed");
  }
  // The time is for the observer (dumps); what is built from the result (generated sources) stays deterministic.
  trace.constructed_by = trace.constructed_by.substr(0, trace.constructed_by.find(" (took "));
  return trace;
}

std::string list_transforms_text() {
  std::vector<std::string> defaults = default_transforms();
  std::size_t width = std::string(kClaimPassName).size();
  for (const RegisteredPass& p : registered_passes()) width = std::max(width, p.transform.name.size());
  auto line = [&](const Transform& t, const std::string& when) {
    std::string name = t.name + std::string(width - t.name.size(), ' ');
    return "  " + name + "  " + when + "  " + t.summary + "\n";
  };
  auto when = [](PassPhase ph) {
    switch (ph) {
      case PassPhase::BeforeClaim: return "before";
      case PassPhase::AfterClaim: return "after ";
      case PassPhase::Either: return "either";
    }
    return "";
  };
  std::string out = "Transforms, in pipeline order (WHEN: before or after executors are claimed, or either):\n";
  out += "  " + std::string("NAME") + std::string(width - 4, ' ') + "  WHEN    WHAT HOLDS AFTER IT\n";
  bool claim_listed = false;
  for (const RegisteredPass& p : registered_passes()) {
    if (!claim_listed && p.phase == PassPhase::AfterClaim) {
      out += line(claim_entry(), "      ");
      claim_listed = true;
    }
    out += line(p.transform, when(p.phase));
  }
  if (!claim_listed) out += line(claim_entry(), "      ");
  std::string d;
  for (const std::string& n : defaults) d += (d.empty() ? "" : ",") + n;
  out += "\nDefault (when --transforms is not given): " + d + "\n";
  out += "--transforms LIST replaces the optional passes (\"none\" for none); claiming always runs, before the\n"
         "first pass that needs claimed symbols. The compiled model's manifest records the list that ran.\n";
  return out;
}

}  // namespace thunderc
