// libFuzzer target: the --shapes and --dim parsers (core/frontend/shape_spec.cpp). Malformed flags must
// throw thunderc::UserError; any other exception, a crash or a sanitizer report is a finding. Accepted
// --shapes values must print (specialization_str) to text that parses back to the same specialization.
// Input: the first byte picks the parser, the rest is the flag's value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/frontend/shape_spec.h"
#include "core/ir/error.h"

using namespace thunderc;

namespace {
[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_shape_spec: %s\n", what.c_str());
  std::abort();
}

bool same(const Specialization& a, const Specialization& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].shape != b[i].shape || a[i].dtype != b[i].dtype || a[i].symbols != b[i].symbols)
      return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool dim = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (dim) {
      DimRange r = parse_dim_flag(text);
      if (r.lo < 1 || r.hi <= r.lo || r.name.empty()) finding("parse_dim_flag accepted an invalid range: " + text);
      return 0;
    }
    Specialization spec = parse_shapes_flag(text);
    const std::string printed = specialization_str(spec);
    Specialization again;
    try {
      again = parse_shapes_flag(printed);
    } catch (const UserError& e) {
      finding("'" + text + "' parses but its printed form '" + printed + "' does not: " + e.what());
    }
    if (!same(spec, again)) finding("'" + text + "' and its printed form '" + printed + "' differ");
    // Bind every symbol (to 1, 2, ...): no symbol may remain.
    std::vector<std::string> names = spec_symbols(spec);
    std::vector<std::int64_t> values;
    for (size_t i = 0; i < names.size(); ++i) values.push_back(static_cast<std::int64_t>(i + 1));
    for (const InputShape& in : bind_symbols(spec, names, values))
      if (!in.symbols.empty()) finding("bind_symbols left a symbol in '" + text + "'");
  } catch (const UserError&) {
    return 0;
  } catch (const std::exception& e) {
    finding("'" + text + "': threw something other than UserError: " + e.what());
  }
  return 0;
}
