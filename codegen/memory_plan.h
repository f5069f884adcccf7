// Where every value of a variant lives at run time. After plan_memory(trace, constant_offsets):
// inputs and constants are read in place; each intermediate has a 64-byte-aligned offset in the
// variant's workspace, reused once its last reader has run (no buffer is shared by two values alive at
// once, and no symbol's output shares memory with its inputs); a reshape shares its input's buffer;
// outputs computed by a symbol are written straight into the caller's output buffers, any other output
// (an input, a constant, an alias, a repeat) is copied there at the end. A symbol's scratch space does
// not overlap anything live while it runs. The one exception to "no output shares memory with an input":
// a symbol whose backend names an input it may write its output over (InPlaceFn) gets that input's
// workspace buffer when the input dies there and has the output's size (oneDNN's residual add, which it
// computes in the output buffer anyway: sharing saves copying the residual in).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

enum class Storage { Input, Constant, Workspace, Output, Alias };

struct BufferPlan {
  Storage storage = Storage::Workspace;
  std::size_t index = 0;   // Input: input position; Output: output position
  std::size_t offset = 0;  // Constant: offset in the weights blob; Workspace: offset in the workspace
  ValueId alias_of = 0;    // Alias: the value whose buffer this one shares (never itself an Alias)
};

struct VariantMemoryPlan {
  std::map<ValueId, BufferPlan> buffers;  // every value the variant touches
  std::size_t workspace_bytes = 0;
  struct Copy {
    std::size_t output;
    ValueId value;
  };
  std::vector<Copy> output_copies;  // outputs not written in place by their producer
  std::map<std::size_t, std::size_t> scratch;  // symbol index -> workspace offset of its scratch space
};

inline constexpr std::size_t kBufferAlignment = 64;

// Scratch bytes a symbol needs while it runs (e.g. an im2col buffer); it is live only during the symbol.
using ScratchFn = std::function<std::size_t(const Trace&, const BoundSymbol&)>;

// The input of a single-output symbol whose buffer its output may take over (Backend::output_over_input).
using InPlaceFn = std::function<std::optional<ValueId>(const Trace&, const BoundSymbol&)>;

// `constant_offsets`: where each constant of the trace sits in the weights blob. Sizes are computed with
// overflow checks: UserError when a tensor or the workspace would exceed kMaxTensorBytes (2^40 bytes,
// core/frontend/shape_spec.h) or its size overflows.
VariantMemoryPlan plan_memory(const Trace& trace, const std::map<ValueId, std::size_t>& constant_offsets,
                              const ScratchFn& scratch_bytes = nullptr, const InPlaceFn& in_place = nullptr);

// True for operators whose output is their first input's bytes under another shape (no copy needed).
bool shares_input_buffer(const BoundSymbol& sym);

}  // namespace thunderc
