#include "codegen/memory_plan.h"

#include <algorithm>

#include "core/ir/error.h"

namespace thunderc {

bool shares_input_buffer(const BoundSymbol& sym) { return sym.op->name == "reshape"; }

namespace {
std::size_t align_up(std::size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

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
                              const ScratchFn& scratch_bytes) {
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
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    // Buffers whose last reader ran before symbol i are free for its outputs.
    live.erase(std::remove_if(live.begin(), live.end(), [&](const Live& l) { return l.until < i; }), live.end());
    for (ValueId out : symbols[i].outputs) {
      if (plan.buffers.count(out)) continue;  // alias
      if (auto o = output_of.find(out); o != output_of.end()) {
        plan.buffers[out] = {Storage::Output, o->second, 0, 0};
        continue;
      }
      std::size_t size = align_up(std::max<std::size_t>(trace.type(out).nbytes(), 1));
      std::vector<Interval> occupied;
      for (const Live& l : live) occupied.push_back(l.where);
      std::size_t offset = first_fit(occupied, size);
      plan.buffers[out] = {Storage::Workspace, 0, offset, 0};
      auto lu = last_use.find(out);
      live.push_back({{offset, size}, lu == last_use.end() ? i : lu->second});
      plan.workspace_bytes = std::max(plan.workspace_bytes, offset + size);
    }
    std::size_t scratch = scratch_bytes ? scratch_bytes(trace, symbols[i]) : 0;
    if (scratch > 0) {
      std::vector<Interval> occupied;
      for (const Live& l : live) occupied.push_back(l.where);
      std::size_t size = align_up(scratch);
      std::size_t offset = first_fit(occupied, size);
      plan.scratch[i] = offset;
      live.push_back({{offset, size}, i});
      plan.workspace_bytes = std::max(plan.workspace_bytes, offset + size);
    }
  }
  return plan;
}

}  // namespace thunderc
