// The pass registry and THE order of thunderc's trace transforms (written once, here).
//
//   before claiming:  dce, cse, constant-folding, fold-batchnorm, attention, autocast, decompose, split-cat-conv,
//                     pool-before-conv, channels-last
//   claim-executors:  every symbol gets the first executor whose checker accepts it (always runs)
//   after claiming:   fusion, remat, dce
//
// (fold-batchnorm and fusion are registered when their files are in the tree.) The default list is every
// registered pass in that order. `--transforms LIST` replaces the optional passes: they run in the order
// given; claiming runs before the first pass that needs claimed symbols (fusion, remat) or at the end, or
// where the list names "claim-executors". Passes that work either way (dce, cse, constant-folding) run
// where they are listed; a pass that must run before claiming (attention, autocast, decompose, fold-batchnorm,
// split-cat-conv, pool-before-conv, channels-last) listed after claiming is an error. The pipeline runs verify_trace after every pass and stamps the result's
// constructed_by with "<pass> (took N ms)".
#pragma once

#include <string>
#include <vector>

#include "core/executors/executor.h"
#include "core/ir/trace.h"
#include "core/transforms/transform.h"

namespace thunderc {

inline constexpr const char* kClaimPassName = "claim-executors";

enum class PassPhase {
  BeforeClaim,  // creates unclaimed symbols or rewrites operators executors choose between (decompose)
  AfterClaim,   // needs to know who runs what (fusion, remat)
  Either,       // keeps symbols as they are (dce, cse, constant-folding)
};

struct RegisteredPass {
  Transform transform;  // a copy of the pass's own Transform
  PassPhase phase;
};

// Every registered pass, in pipeline order (each name once).
const std::vector<RegisteredPass>& registered_passes();
const RegisteredPass* find_pass(const std::string& name);  // nullptr if unknown
std::string known_pass_names();                             // "dce, cse, ..." for messages

// The passes that run when --transforms is absent, in order (dce appears twice: before and after claiming).
std::vector<std::string> default_transforms();

// A resolved list: what runs before and after claiming, by name.
struct PassPlan {
  std::vector<const Transform*> before_claim, after_claim;
  // The optional passes in the order they run, without claim-executors: what the manifest records and
  // what --transforms accepts back.
  std::vector<std::string> names() const;
};

// Resolves a --transforms list (nullopt-like: pass default_transforms() when the flag is absent). Empty
// entries are ignored; "none" alone means no optional pass. UserError for unknown names (listing the
// known ones) and for before-claim passes placed after claiming.
PassPlan plan_passes(const std::vector<std::string>& names);

// Told about each pass as it runs (progress display, --dump-traces, --time-passes, --verbose).
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  virtual void pass_started(const std::string& pass) {}
  // `after` is the verified result, already stamped; `ms` the time the pass took (verification excluded).
  virtual void pass_finished(const std::string& pass, const Trace& after, double ms) {}
};

// Runs the plan on one (verified) trace: before-claim passes, claim_executors, after-claim passes, each
// followed by verify_trace. UserError (unclaimed_message) when claiming leaves symbols to nobody;
// InternalError when a pass breaks the trace or an after-claim pass leaves a symbol unclaimed. The observer
// sees each result stamped "<pass> (took N ms)"; the returned trace's constructed_by is the last pass's
// name without the time, so that what is built from it (generated sources, examine) is deterministic.
Trace run_passes(Trace trace, const PassPlan& plan, const TransformContext& context,
                 const ExecutorSelection& selection, PassObserver* observer = nullptr);

// The text of `thunderc --list-transforms`.
std::string list_transforms_text();

}  // namespace thunderc
