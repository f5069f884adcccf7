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
  }
  throw UserError(os.str());
}

}  // namespace thunderc
