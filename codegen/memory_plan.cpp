#include "codegen/memory_plan.h"

#include <algorithm>

#include "core/frontend/shape_spec.h"
#include "core/ir/error.h"

namespace thunderc {

// reshape, and the two views between a complex tensor and its pairs: the same bytes under another type.
bool shares_input_buffer(const BoundSymbol& sym) {
  const std::string& name = sym.op->name;
  return name == "reshape" || name == "view_as_real" || name == "view_as_complex";
}

namespace {
std::size_t align_up(std::size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

// The workspace bytes of `v`, checked: UserError when the size overflows or exceeds kMaxTensorBytes.
std::size_t checked_buffer_bytes(const Trace& trace, ValueId v) {
  const TensorType& type = trace.type(v);
  std::optional<std::uint64_t> bytes = checked_tensor_bytes(type.shape, dtype_size(type.dtype));
  if (!bytes || *bytes > kMaxTensorBytes)
    user_error("tensor ", trace.value(v).name, " of type ", type.str(), " would take ", bytes_text(bytes),
               "; thunderc refuses tensors above ", max_tensor_bytes_text());
  return align_up(std::max<std::size_t>(static_cast<std::size_t>(*bytes), 1));
}

// offset + size for the workspace's extent, checked against kMaxTensorBytes (each part is at most that, so the
// sum cannot overflow).
std::size_t checked_end(std::size_t offset, std::size_t size, const char* what) {
  std::size_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || end > kMaxTensorBytes)
    user_error("the workspace of this variant would need ", bytes_text(__builtin_add_overflow(offset, size, &end)
                                                                          ? std::nullopt
                                                                          : std::optional<std::uint64_t>(end)),
               " (for ", what, "); thunderc refuses workspaces above ", max_tensor_bytes_text());
  return end;
}

struct Interval {
  std::size_t offset, size;
};

// Lowest offset where `size` bytes fit between the live intervals.
std::size_t first_fit(std::vector<Interval> live, std::size_t size) {
  std::sort(live.begin(), live.end(), [](const Interval& a, const Interval& b) { return a.offset < b.offset; });
  std::size_t candidate = 0;
  for (const Interval& iv : live) {
    if (candidate + size <= iv.offset) break;
    candidate = std::max(candidate, iv.offset + iv.size);
  }
  return candidate;
}
}  // namespace

VariantMemoryPlan plan_memory(const Trace& trace, const std::map<ValueId, std::size_t>& constant_offsets,
                              const ScratchFn& scratch_bytes, const InPlaceFn& in_place) {
  VariantMemoryPlan plan;
  auto root = [&](ValueId v) {
    auto it = plan.buffers.find(v);
    return it != plan.buffers.end() && it->second.storage == Storage::Alias ? it->second.alias_of : v;
  };
  for (std::size_t i = 0; i < trace.inputs().size(); ++i)
    plan.buffers[trace.inputs()[i]] = {Storage::Input, i, 0, 0};
  for (ValueId c : trace.constants()) {
    auto it = constant_offsets.find(c);
    THUNDERC_CHECK(it != constant_offsets.end(), "constant '", trace.value(c).name, "' has no place in the blob");
    plan.buffers[c] = {Storage::Constant, 0, it->second, 0};
  }

  // Outputs produced by a (non-aliasing) symbol are written in place, each value once.
  std::map<ValueId, std::size_t> output_of;
  const auto& symbols = trace.symbols();
  for (std::size_t j = 0; j < trace.outputs().size(); ++j) {
    ValueId v = trace.outputs()[j];
    bool produced = trace.value(v).origin == ValueOrigin::Intermediate;
    for (const BoundSymbol& s : symbols)
      if (std::find(s.outputs.begin(), s.outputs.end(), v) != s.outputs.end() && shares_input_buffer(s)) produced = false;
    if (produced && !output_of.count(v)) output_of[v] = j;
    else plan.output_copies.push_back({j, v});
  }

  // Aliases first, so lifetimes accumulate on the buffer that actually holds the bytes.
  for (const BoundSymbol& s : symbols)
    if (shares_input_buffer(s) && !output_of.count(s.outputs[0]))
      plan.buffers[s.outputs[0]] = {Storage::Alias, 0, 0, root(s.inputs[0].value)};
  std::map<ValueId, std::size_t> last_use;
  for (std::size_t i = 0; i < symbols.size(); ++i)
    for (const Operand& in : symbols[i].inputs)
      if (in.is_tensor()) last_use[root(in.value)] = i;
  for (const auto& copy : plan.output_copies) last_use[root(copy.value)] = symbols.size();

  struct Live {
    Interval where;
    std::size_t until;
  };
  std::vector<Live> live;
  // The offset of the input buffer symbol i's output `out` may take over (in_place): a workspace buffer of
  // `size` bytes whose last reader is symbol i; its interval then lives on until out's last reader.
  auto take_over_input = [&](std::size_t i, ValueId out, std::size_t size) -> std::optional<std::size_t> {
    if (!in_place || symbols[i].outputs.size() != 1) return std::nullopt;
    std::optional<ValueId> in = in_place(trace, symbols[i]);
    if (!in) return std::nullopt;
    const ValueId holder = root(*in);
    auto b = plan.buffers.find(holder);
    auto read = last_use.find(holder);
    if (b == plan.buffers.end() || b->second.storage != Storage::Workspace || read == last_use.end() ||
        read->second != i || align_up(checked_buffer_bytes(trace, holder)) != align_up(size))
      return std::nullopt;
    for (Live& l : live)
      if (l.where.offset == b->second.offset && l.until == i) {
        auto lu = last_use.find(out);
        l.until = lu == last_use.end() ? i : lu->second;
        return b->second.offset;
      }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    // Buffers whose last reader ran before symbol i are free for its outputs.
    live.erase(std::remove_if(live.begin(), live.end(), [&](const Live& l) { return l.until < i; }), live.end());
    for (ValueId out : symbols[i].outputs) {
      if (plan.buffers.count(out)) continue;  // alias
      if (auto o = output_of.find(out); o != output_of.end()) {
        plan.buffers[out] = {Storage::Output, o->second, 0, 0};
        continue;
      }
      std::size_t size = checked_buffer_bytes(trace, out);
      if (std::optional<std::size_t> shared = take_over_input(i, out, size)) {
        plan.buffers[out] = {Storage::Workspace, 0, *shared, 0};
        continue;
      }
      std::vector<Interval> occupied;
      for (const Live& l : live) occupied.push_back(l.where);
      std::size_t offset = first_fit(occupied, size);
      const std::size_t end = checked_end(offset, size, ("tensor " + trace.value(out).name).c_str());
      plan.buffers[out] = {Storage::Workspace, 0, offset, 0};
      auto lu = last_use.find(out);
      live.push_back({{offset, size}, lu == last_use.end() ? i : lu->second});
      plan.workspace_bytes = std::max(plan.workspace_bytes, end);
    }
    std::size_t scratch = scratch_bytes ? scratch_bytes(trace, symbols[i]) : 0;
    if (scratch > 0) {
      std::vector<Interval> occupied;
      for (const Live& l : live) occupied.push_back(l.where);
      if (scratch > kMaxTensorBytes)
        user_error("operation ", symbols[i].op->name, " would need ", bytes_text(scratch),
                   " of scratch space; thunderc refuses workspaces above ", max_tensor_bytes_text());
      std::size_t size = align_up(scratch);
      std::size_t offset = first_fit(occupied, size);
      const std::size_t end = checked_end(offset, size, ("the scratch space of " + symbols[i].op->name).c_str());
      plan.scratch[i] = offset;
      live.push_back({{offset, size}, i});
      plan.workspace_bytes = std::max(plan.workspace_bytes, end);
    }
  }
  return plan;
}

}  // namespace thunderc
