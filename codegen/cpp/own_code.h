// Helpers shared by the cpp executor's operators with code of their own (codegen/cpp/indexing.cpp,
// scatter.cpp, resample.cpp): each is one loop nest over contiguous buffers, never in a fused region.
// The text they print must not change shape with the sizes (only integer literals may differ): a symbolic
// variant merges the texts printed for several sizes (codegen/symbolic_code.h).
#pragma once

#include <string>

#include "codegen/backend.h"
#include "codegen/loops/region_lowering.h"

namespace thunderc::own_code {

// Elements touched from which a team of threads pays for itself (as the loop nests' threshold).
constexpr std::int64_t kParallelElements = 65536;

inline std::string S(std::int64_t v) { return std::to_string(v) + "LL"; }

inline std::int64_t product(const Shape& s, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

inline std::size_t wrapped(std::int64_t dim, std::size_t rank) {
  return static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim);
}

inline std::string parallel_for_if(std::int64_t work) {
  return "#pragma omp parallel for num_threads(thunderc_cpp_nt) schedule(static) if (" + S(work) + " >= " +
         S(kParallelElements) + ")";
}

// Declares `name` as a typed pointer to v's buffer.
inline void pointer(const EmitContext& ctx, SourceWriter& out, const std::string& name, ValueId v, bool is_const) {
  const std::string T = loops::ctype(ctx.trace().type(v).dtype);
  const std::string c = is_const ? "const " : "";
  out.line(c + T + "* __restrict " + name + " = static_cast<" + c + T + "*>(" + ctx.buffer(v) + ".data);");
}

// Fails the call, as ATen raises, unless every one of the n indices at `idx` is in [lo, size) (lo = 0, or
// -size where negative indices count from the end).
inline void check_indices(const EmitContext& ctx, SourceWriter& out, const std::string& idx, const std::string& op,
                          std::int64_t n, std::int64_t size, std::size_t dim, bool negative_ok = false) {
  out.line("for (int64_t i = 0; i < " + S(n) + "; ++i) {");
  out.line("  if (" + idx + "[i] < " + (negative_ok ? "-" + S(size) : std::string("0")) + " || " + idx + "[i] >= " +
           S(size) + ") {");
  out.line("    std::snprintf(call->error, call->error_capacity, \"" + op +
           ": index %lld is out of range for dimension " + std::to_string(dim) + " of size %lld\", (long long)" + idx +
           "[i], (long long)" + S(size) + ");");
  out.line("    " + ctx.on_failure());
  out.line("  }");
  out.line("}");
}

// The C++ expression for the offset, in a tensor with `strides`, of the element whose coordinates are those
// of flat position `flat` in `shape` (row-major), each coordinate d multiplied by strides[d]; dims where
// skip[d] holds contribute nothing.
inline std::string offset_of(const std::string& flat, const Shape& shape, const Shape& strides,
                             const std::vector<bool>& skip = {}) {
  std::string e = "0";
  std::int64_t step = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (skip.empty() || !skip[d])
      e += " + ((" + flat + " / " + S(step) + ") % " + S(shape[d]) + ") * " + S(strides[d]);
    step *= shape[d];
  }
  return e;
}

}  // namespace thunderc::own_code
