// The unsupported operators a frontend met while importing a model, reported together in one user error.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/error.h"

namespace thunderc {

struct UnsupportedUse {
  int count = 0;
  std::vector<std::string> where;  // source locations of the first few uses
  std::string why;                 // optional (TorchScript: why a known operator was refused)
};

// Why an operator without a handler cannot be compiled ahead of time at all (not merely "not yet"): those whose
// output shape depends on the input's values. `kind` is either frontend's name ("aten::nonzero",
// "aten.nonzero.default").
inline std::string value_dependent_reason(const std::string& kind) {
  std::string base = kind;
  for (const char* prefix : {"aten::", "aten."})
    if (base.rfind(prefix, 0) == 0) base = base.substr(std::string(prefix).size());
  base = base.substr(0, base.find('.'));
  static const char* const ops[] = {"nonzero", "argwhere", "masked_select", "unique", "_unique", "_unique2",
                                    "unique_consecutive", "unique_dim", "_local_scalar_dense", "item", "bincount"};
  for (const char* op : ops)
    if (base == op)
      return "its output's shape (or a Python number) depends on the input's values, and thunderc compiles shapes ahead "
             "of time; compute a fixed-size result instead (torch.where, masks, topk)";
  return "";
}

// "<path>: 2 operators are not supported by thunderc (3 uses):\n  <op> x2  at a, b, ..." as a UserError.
[[noreturn]] inline void throw_unsupported(const std::string& path, const std::map<std::string, UnsupportedUse>& ops) {
  std::ostringstream os;
  int total = 0;
  for (const auto& [kind, u] : ops) total += u.count;
  os << path << ": " << ops.size() << " operator" << (ops.size() == 1 ? " is" : "s are") << " not supported by thunderc ("
     << total << " use" << (total == 1 ? "" : "s") << "):";
  for (const auto& [kind, u] : ops) {
    os << "\n  " << kind << " x" << u.count;
    if (!u.where.empty()) {
      os << "  at ";
      for (std::size_t i = 0; i < u.where.size(); ++i) os << (i ? ", " : "") << u.where[i];
      if (static_cast<int>(u.where.size()) < u.count) os << ", ...";
    }
    const std::string why = u.why.empty() ? value_dependent_reason(kind) : u.why;
    if (!why.empty()) os << "\n    (" << why << ")";
  }
  throw UserError(os.str());
}

}  // namespace thunderc
