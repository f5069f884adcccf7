#include "core/executors/executor.h"

#include <algorithm>

#include "core/ir/error.h"

namespace thunderc {

Executor::Executor(Info info) : info_(std::move(info)) {
  THUNDERC_CHECK(!info_.name.empty(), "an executor needs a name");
  THUNDERC_CHECK(!info_.devices.empty(), "executor ", info_.name, " serves no device");
}

bool Executor::serves(DeviceKind kind) const {
  return std::find(info_.devices.begin(), info_.devices.end(), kind) != info_.devices.end();
}

std::string Executor::devices_str() const {
  std::string s;
  for (DeviceKind k : info_.devices) s += (s.empty() ? "" : ",") + std::string(device_kind_name(k));
  return s;
}

std::string Executor::categories_str() const {
  std::string s;
  for (OpCategory c : info_.categories) s += (s.empty() ? "" : ", ") + std::string(op_category_name(c));
  return s;
}

Availability Executor::availability(DeviceKind kind) const {
  if (!serves(kind))
    return {false, "runs on " + devices_str() + ", not on " + device_kind_name(kind)};
  if (info_.cache_probe) {
    auto it = probed_.find(kind);
    if (it != probed_.end()) return it->second;
  }
  Availability a = info_.probe ? info_.probe(kind) : Availability{true, ""};
  if (!a.available && a.reason.empty()) a.reason = "unavailable";
  if (info_.cache_probe) probed_[kind] = a;
  return a;
}

void Executor::register_impl(const std::string& op_name, Checker checker, Claim claim) {
  THUNDERC_CHECK(op_registry().find(op_name) != nullptr, "executor ", info_.name,
                 " implements unknown operator ", op_name);
  impls_[op_name] = std::move(checker);
  claims_[op_name] = claim;
}

std::vector<std::string> Executor::fallback_ops() const {
  std::vector<std::string> out;
  for (const auto& [name, claim] : claims_)
    if (claim == Claim::Fallback) out.push_back(name);
  return out;
}

Executor::Claim Executor::claim_of(const std::string& op_name) const {
  auto it = claims_.find(op_name);
  return it == claims_.end() ? Claim::Preferred : it->second;
}

bool Executor::can_execute(const Trace& trace, const BoundSymbol& sym) const {
  if (!sym.op) return false;
  auto it = impls_.find(sym.op->name);
  if (it == impls_.end()) return false;
  return !it->second || it->second(trace, sym);
}

// ---- Selection ---------------------------------------------------------------------------------------

std::vector<std::string> ExecutorSelection::names() const {
  std::vector<std::string> out;
  for (const Executor* e : executors) out.push_back(e->name());
  return out;
}

std::string ExecutorSelection::names_str() const {
  std::string s;
  for (const Executor* e : executors) s += (s.empty() ? "" : ", ") + e->name();
  return s.empty() ? "(none)" : s;
}

std::string executor_names() {
  std::string s;
  for (const Executor* e : all_executors()) s += (s.empty() ? "" : ", ") + e->name();
  return s;
}

const Executor* find_executor(const std::string& name) {
  for (const Executor* e : all_executors())
    if (e->name() == name) return e;
  return nullptr;
}

std::vector<const Executor*> always_executors() {
  std::vector<const Executor*> out;
  for (const Executor* e : all_executors())
    if (e->is_always()) out.push_back(e);
  return out;
}

std::vector<std::string> default_executor_names(DeviceKind device) {
  if (device == DeviceKind::CUDA) return {"cudnn", "cublas", "nvfuser"};
  return {"cpp", "onednn", "blas"};  // onednn first for convolutions, blas where it is unavailable
}

ExecutorSelection default_executors(DeviceKind device) {
  ExecutorSelection sel;
  for (const std::string& name : default_executor_names(device)) {
    const Executor* e = find_executor(name);
    THUNDERC_CHECK(e != nullptr, "default executor ", name, " is not registered");
    if (!e->implemented()) {
      sel.notes.push_back(name + ": not implemented yet");
      continue;
    }
    Availability a = e->availability(device);
    if (!a.available) {
      sel.notes.push_back(name + ": unavailable (" + a.reason + ")");
      continue;
    }
    sel.executors.push_back(e);
  }
  return sel;
}

ExecutorSelection resolve_executors(const std::vector<std::string>& requested, DeviceKind device,
                                    bool standalone) {
  ExecutorSelection sel;
  if (requested.empty()) {
    sel = default_executors(device);
  } else {
    for (const std::string& name : requested) {
      const Executor* e = find_executor(name);
      if (!e)
        user_error("unknown executor '", name, "'; known executors: ", executor_names(),
                   " (see thunderc --list-executors)");
      if (std::find(sel.executors.begin(), sel.executors.end(), e) != sel.executors.end()) continue;
      if (!e->serves(device))
        user_error("executor '", name, "' runs on ", e->devices_str(), ", not on ", device_kind_name(device),
                   " (--device ", device_kind_name(device), ")");
      Availability a = e->availability(device);
      if (!a.available) user_error("executor '", name, "' is not available: ", a.reason);
      if (!e->implemented()) sel.notes.push_back(name + ": not implemented yet (claims nothing)");
      sel.executors.push_back(e);
    }
  }
  if (!standalone) {
    for (const Executor* e : always_executors()) {
      if (std::find(sel.executors.begin(), sel.executors.end(), e) != sel.executors.end()) continue;
      Availability a = e->availability(device);
      if (!a.available) {
        sel.notes.push_back(e->name() + ": unavailable on " + device_kind_name(device) + " (" + a.reason + ")");
        continue;
      }
      sel.executors.push_back(e);
    }
  }
  return sel;
}

// ---- Claiming ----------------------------------------------------------------------------------------

std::vector<UnclaimedSymbol> claim_executors(Trace& trace, const std::vector<const Executor*>& executors) {
  std::vector<UnclaimedSymbol> unclaimed;
  auto& symbols = trace.mutable_symbols();
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    BoundSymbol& sym = symbols[i];
    sym.executor.clear();
    const Executor* fallback = nullptr;
    for (const Executor* e : executors) {
      if (!e->can_execute(trace, sym)) continue;
      if (e->claim_of(sym.op->name) == Executor::Claim::Preferred) {
        // An always-executor (torch) is everyone's last resort, a fallback implementation included.
        sym.executor = fallback && e->is_always() ? fallback->name() : e->name();
        break;
      }
      if (!fallback) fallback = e;
    }
    if (sym.executor.empty() && fallback) sym.executor = fallback->name();
    if (sym.executor.empty()) unclaimed.push_back({i, sym.op ? sym.op->name : "?", sym.source});
  }
  return unclaimed;
}

std::string unclaimed_message(const Trace& trace, const std::vector<UnclaimedSymbol>& unclaimed,
                              const ExecutorSelection& selection, std::size_t max_listed) {
  std::string s = "no executor can run " + std::to_string(unclaimed.size()) + " of " +
                  std::to_string(trace.symbols().size()) + " operation" +
                  (trace.symbols().size() == 1 ? "" : "s") + ":\n";
  std::size_t width = 0;
  for (std::size_t i = 0; i < unclaimed.size() && i < max_listed; ++i) width = std::max(width, unclaimed[i].op.size());
  for (std::size_t i = 0; i < unclaimed.size() && i < max_listed; ++i) {
    const UnclaimedSymbol& u = unclaimed[i];
    std::string line = "  " + u.op;
    if (!u.source.empty()) line += std::string(width - u.op.size() + 2, ' ') + "at " + u.source;
    s += line + "\n";
  }
  if (unclaimed.size() > max_listed) s += "  ... and " + std::to_string(unclaimed.size() - max_listed) + " more\n";
  s += "executors asked: " + selection.names_str();
  for (const std::string& n : selection.notes) s += "\n  note: " + n;
  // When an always-executor was left out by --standalone (not for being unavailable), say how to get it back.
  bool always_missing = false;
  for (const Executor* e : always_executors()) {
    bool asked = std::find(selection.executors.begin(), selection.executors.end(), e) != selection.executors.end();
    bool noted = std::any_of(selection.notes.begin(), selection.notes.end(),
                             [&](const std::string& n) { return n.rfind(e->name() + ":", 0) == 0; });
    always_missing = always_missing || (!asked && !noted);
  }
  if (always_missing) {
    std::string always;
    for (const Executor* e : always_executors()) always += (always.empty() ? "" : ", ") + e->name();
    s += "\nhint: without --standalone, " + always + " runs whatever the other executors cannot";
  }
  return s;
}

std::vector<std::pair<std::string, std::size_t>> executor_counts(const Trace& trace) {
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const BoundSymbol& sym : trace.symbols()) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == sym.executor; });
    if (it == counts.end())
      counts.emplace_back(sym.executor, 1);
    else
      ++it->second;
  }
  return counts;
}

Device select_device(const std::optional<Device>& requested, const std::vector<std::string>& executors) {
  std::vector<std::string> cpu_only, cuda_only;
  for (const std::string& name : executors) {
    const Executor* e = find_executor(name);
    if (!e || e->is_always()) continue;  // unknown names are reported by resolve_executors
    bool cpu = e->serves(DeviceKind::CPU), cuda = e->serves(DeviceKind::CUDA);
    if (cpu && !cuda) cpu_only.push_back(name);
    if (cuda && !cpu) cuda_only.push_back(name);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!cpu_only.empty() && !cuda_only.empty())
    user_error("--executors mixes CPU executors (", join(cpu_only), ") with CUDA executors (", join(cuda_only),
               "); a model is compiled for one device: pick one set (e.g. --executors ", cuda_only[0], " --device cuda)");
  if (requested) {
    const std::vector<std::string>& wrong = requested->kind == DeviceKind::CPU ? cuda_only : cpu_only;
    if (!wrong.empty())
      user_error("--device ", requested->str(), " does not match --executors: ", join(wrong), " runs on ",
                 requested->kind == DeviceKind::CPU ? "cuda" : "cpu", " only (drop --device, or use --device ",
                 requested->kind == DeviceKind::CPU ? "cuda" : "cpu", ")");
    return *requested;
  }
  return cuda_only.empty() ? Device::cpu() : Device::cuda(0);
}

}  // namespace thunderc
