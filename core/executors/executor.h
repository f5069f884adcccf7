// Executors, Thunder style: an executor is a named backend that runs some bound symbols of a trace.
// Each one declares the operators it implements, guarded by checker functions that look at the bound
// symbol's types and attributes; claim_executors() walks a trace and gives every bound symbol to the
// first executor (in the user's order) whose checker accepts it. Always-executors (torch) come last so
// every operator the catalog knows has a fallback, unless the user asks for --standalone.
//
// No LibTorch here: facts that only LibTorch knows (does it have CUDA?) are injected by the caller
// (set_torch_cuda_support), and CUDA libraries are probed with dlopen at run time, never linked.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/device.h"
#include "core/ir/op.h"
#include "core/ir/trace.h"

namespace thunderc {

// Can this executor run this bound symbol (its operand types, attributes, device)?
using Checker = std::function<bool(const Trace&, const BoundSymbol&)>;

struct Availability {
  bool available = false;
  std::string reason;  // why not (empty when available)
};

class Executor {
 public:
  struct Info {
    std::string name;
    std::string description;           // one line
    std::vector<DeviceKind> devices;   // the device kinds it serves
    bool always = false;               // appended to every executor list unless --standalone
    bool implemented = false;          // its code generation exists in this build
    std::vector<OpCategory> categories;  // the operator categories it serves (or will serve)
    // Probes whether it can be used on this machine for one device kind (null: always available).
    std::function<Availability(DeviceKind)> probe;
    bool cache_probe = true;  // false: probe reads injected facts that may change (torch's CUDA support)
  };

  explicit Executor(Info info);

  const std::string& name() const { return info_.name; }
  const std::string& description() const { return info_.description; }
  const std::vector<DeviceKind>& devices() const { return info_.devices; }
  bool serves(DeviceKind kind) const;
  bool is_always() const { return info_.always; }
  bool implemented() const { return info_.implemented; }
  const std::vector<OpCategory>& categories() const { return info_.categories; }
  std::string devices_str() const;     // "cpu", "cpu,cuda"
  std::string categories_str() const;  // "elementwise, reduction"

  // Available for this device kind? Not serving the kind is reported as unavailable, with a reason.
  Availability availability(DeviceKind kind) const;

  // How strongly an implementation claims: Preferred takes the symbol when this executor comes first in
  // the list among those that accept it; Fallback takes it only when no executor of the list accepts it with
  // a Preferred implementation, always-executors (torch) aside: nvfuser's own GEMM/convolution kernels
  // yield to cublas/cudnn wherever those are listed, as Thunder's nvFuser leaves matmuls to others by default.
  enum class Claim { Preferred, Fallback };
  // Registers an implementation of one operator (by catalog name); a null checker accepts every use.
  void register_impl(const std::string& op_name, Checker checker = nullptr, Claim claim = Claim::Preferred);
  bool implements(const std::string& op_name) const { return impls_.count(op_name) != 0; }
  // Operators it runs with code of their own, never inside one of its fused regions (cpp's 3-D pooling,
  // resampling); operators of the Indexing and Attention categories always are.
  void run_alone(const std::string& op_name) { alone_.insert(op_name); }
  bool runs_alone(const std::string& op_name) const { return alone_.count(op_name) != 0; }
  std::size_t num_impls() const { return impls_.size(); }
  // True when it implements the symbol's operator and the checker accepts this use.
  bool can_execute(const Trace& trace, const BoundSymbol& sym) const;
  // How it claims the symbol's operator (Preferred for operators it does not implement).
  Claim claim_of(const std::string& op_name) const;
  // The operators it claims with a Fallback implementation, by name.
  std::vector<std::string> fallback_ops() const;

 private:
  Info info_;
  std::map<std::string, Checker> impls_;
  std::map<std::string, Claim> claims_;
  std::set<std::string> alone_;
  mutable std::map<DeviceKind, Availability> probed_;
};

// ---- Registry ---------------------------------------------------------------------------------------

// Every executor thunderc knows, in a fixed order: torch, cpp, blas, onednn, nvfuser, cublas, cudnn.
const std::vector<const Executor*>& all_executors();
const Executor* find_executor(const std::string& name);  // nullptr if unknown
std::string executor_names();                            // "torch, cpp, blas, onednn, nvfuser, cublas, cudnn"

// Why the torch executor is unavailable in a build without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF), where it is
// also no always-executor (so every executor list is standalone).
inline constexpr const char* kNoLibTorchReason =
    "this thunderc was built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF): the torch executor needs a thunderc "
    "built with LibTorch; use the cpp, onednn and blas executors (CPU) or nvfuser, cublas and cudnn (CUDA)";

// Whether the LibTorch this binary uses can run on CUDA (set by the frontend/CLI, which link LibTorch).
// Until set, torch is reported unavailable on CUDA with `reason`.
void set_torch_cuda_support(bool has_cuda, const std::string& reason = "LibTorch was built without CUDA");

// What a caller asked for, resolved to executors. `notes` explains executors that were left out of a
// default list (not implemented yet, unavailable) so examine/list-executors can say why.
struct ExecutorSelection {
  std::vector<const Executor*> executors;  // in claiming order
  std::vector<std::string> notes;
  std::vector<std::string> names() const;
  std::string names_str() const;  // "cpp, torch"
};

// The default list for a device kind (cpu: cpp, onednn, blas; cuda: cudnn, cublas, nvfuser), filtered to those
// implemented and available; the rest go to notes. Always-executors are not included.
ExecutorSelection default_executors(DeviceKind device);
// The names the default list is drawn from, before filtering.
std::vector<std::string> default_executor_names(DeviceKind device);
// Always-executors, in order.
std::vector<const Executor*> always_executors();

// `requested` (user order; empty: default_executors) plus the always-executors unless `standalone`.
// UserError for unknown names (listing the known ones), executors for another device kind, and
// unavailable ones (with the reason). Executors whose code generation does not exist yet are accepted
// (they claim nothing) and noted. An always-executor that is unavailable on `device` is left out and noted.
ExecutorSelection resolve_executors(const std::vector<std::string>& requested, DeviceKind device,
                                    bool standalone);

// The device to compile for: `requested` (--device) when given, else the one every executor in `executors`
// (--executors, always-executors such as torch aside) serves — so `--executors nvfuser,cudnn` means CUDA —
// else the CPU. UserError for a list mixing CPU-only and CUDA-only executors, or naming an executor that does
// not serve the requested device (e.g. --device cpu --executors nvfuser).
Device select_device(const std::optional<Device>& requested, const std::vector<std::string>& executors);

// One bound symbol no executor accepted.
struct UnclaimedSymbol {
  std::size_t index = 0;  // position in trace.symbols()
  std::string op;         // operator name
  std::string source;     // source location in the model, may be empty
};

// Sets `executor` on every bound symbol to the first executor whose checker accepts it with a Preferred
// implementation, else to the first that accepts it with a Fallback one (clearing it when none does), and
// returns the symbols nobody claimed, in trace order.
std::vector<UnclaimedSymbol> claim_executors(Trace& trace, const std::vector<const Executor*>& executors);

// A user-facing explanation of unclaimed symbols: how many, each op with its source location (at most
// `max_listed`), and the executors that were asked (with notes such as "not implemented yet").
std::string unclaimed_message(const Trace& trace, const std::vector<UnclaimedSymbol>& unclaimed,
                              const ExecutorSelection& selection, std::size_t max_listed = 25);

// Number of bound symbols each executor claimed, in order of first appearance ("" counts unclaimed ones).
std::vector<std::pair<std::string, std::size_t>> executor_counts(const Trace& trace);

}  // namespace thunderc
