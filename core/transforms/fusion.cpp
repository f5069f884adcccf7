#include "core/transforms/fusion.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include "core/ir/error.h"
#include "core/ir/verifier.h"

namespace thunderc {

namespace {

// Condensed dataflow graph: node(i) is the region of symbol i (an id >= n) or the symbol itself.
struct Partition {
  const std::vector<BoundSymbol>& syms;
  std::vector<std::vector<std::size_t>> preds;  // symbol -> producing symbols (deduplicated)
  std::vector<std::size_t> group;              // symbol -> node id

  explicit Partition(const std::vector<BoundSymbol>& s, const std::map<ValueId, std::size_t>& producer) : syms(s) {
    preds.resize(s.size());
    group.resize(s.size());
    std::iota(group.begin(), group.end(), 0);
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (const Operand& in : s[i].inputs) {
        if (!in.is_tensor()) continue;
        auto p = producer.find(in.value);
        if (p != producer.end() && std::find(preds[i].begin(), preds[i].end(), p->second) == preds[i].end())
          preds[i].push_back(p->second);
      }
    }
  }

  // Kahn's algorithm on the condensed graph; true when acyclic.
  bool acyclic() const {
    std::map<std::size_t, std::set<std::size_t>> succ;
    std::map<std::size_t, std::size_t> indeg;
    for (std::size_t i = 0; i < syms.size(); ++i) indeg.emplace(group[i], 0);
    for (std::size_t i = 0; i < syms.size(); ++i)
      for (std::size_t p : preds[i])
        if (group[p] != group[i] && succ[group[p]].insert(group[i]).second) ++indeg[group[i]];
    std::vector<std::size_t> ready;
    for (auto& [n, d] : indeg)
      if (d == 0) ready.push_back(n);
    std::size_t seen = 0;
    while (!ready.empty()) {
      std::size_t n = ready.back();
      ready.pop_back();
      ++seen;
      for (std::size_t m : succ[n])
        if (--indeg[m] == 0) ready.push_back(m);
    }
    return seen == indeg.size();
  }

  // Moves every member of node `from` into node `to`; undone when it creates a cycle.
  bool try_merge(std::size_t from, std::size_t to) {
    if (from == to) return true;
    std::vector<std::size_t> moved;
    for (std::size_t i = 0; i < syms.size(); ++i)
      if (group[i] == from) group[i] = to, moved.push_back(i);
    if (acyclic()) return true;
    for (std::size_t i : moved) group[i] = from;
    return false;
  }
};

// nvfuser's GEMM-backed operators: a GEMM heads a region of its own (never joins its producers' region), so
// the elementwise ops that follow it can become its kernel's epilogue.
bool gemm_backed(const BoundSymbol& s) {
  static const std::set<std::string> ops = {"linear", "matmul", "bmm", "addmm", "conv2d"};
  return ops.count(s.op->name) > 0;
}

}  // namespace

Trace fuse_cpp_regions(const Trace& trace) { return fuse_regions(trace, "cpp"); }

Trace fuse_regions(const Trace& trace, const std::string& executor) {
  // Attention has a kernel of its own (codegen/cpp/attention.h): it stays a lone symbol, never in a region.
  auto is_candidate = [&](const BoundSymbol& s) {
    return s.executor == executor && !s.is_region() && s.op->category != OpCategory::Attention;
  };
  if (std::none_of(trace.symbols().begin(), trace.symbols().end(), is_candidate)) {
    Trace same = trace;
    same.constructed_by = "fusion";
    return same;
  }
  const auto& syms = trace.symbols();
  const std::size_t n = syms.size();
  std::map<ValueId, std::size_t> producer;
  for (std::size_t i = 0; i < n; ++i)
    for (ValueId o : syms[i].outputs) producer[o] = i;
  Partition part(syms, producer);

  // Region ids start at n so they never collide with a lone symbol's id.
  std::size_t next_region = n;
  std::vector<bool> in_region(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_candidate(syms[i])) continue;
    // cpp producers, most recent first.
    std::vector<std::size_t> producers;
    for (std::size_t p : part.preds[i])
      if (in_region[p]) producers.push_back(p);
    std::sort(producers.rbegin(), producers.rend());
    std::size_t region = 0;
    bool joined = false;
    if (gemm_backed(syms[i])) {  // a region of its own, which its consumers may join
      part.group[i] = next_region++;
      in_region[i] = true;
      continue;
    }
    for (std::size_t p : producers) {
      if (part.try_merge(part.group[i], part.group[p])) {
        region = part.group[p];
        joined = true;
        break;
      }
    }
    if (!joined) {
      region = next_region++;
      part.group[i] = region;
    }
    in_region[i] = true;
    for (std::size_t p : producers) part.try_merge(part.group[p], region);
  }

  // Regions holding only reshapes stay top-level (their buffers alias, no copy).
  std::map<std::size_t, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < n; ++i)
    if (in_region[i]) members[part.group[i]].push_back(i);
  // So do lone GEMMs (nothing to fuse into their epilogue).
  for (auto it = members.begin(); it != members.end();) {
    bool only_reshape = std::all_of(it->second.begin(), it->second.end(),
                                    [&](std::size_t i) { return syms[i].op->name == "reshape"; });
    bool lone_gemm = it->second.size() == 1 && gemm_backed(syms[it->second[0]]);
    if (only_reshape || lone_gemm) {
      for (std::size_t i : it->second) {
        in_region[i] = false;
        part.group[i] = i;
      }
      it = members.erase(it);
    } else {
      ++it;
    }
  }

  // Topological order of the condensed graph; among ready nodes, the one whose first member came first.
  std::map<std::size_t, std::size_t> key;  // node -> smallest member index
  for (std::size_t i = 0; i < n; ++i) key.emplace(part.group[i], i);
  std::map<std::size_t, std::set<std::size_t>> succ;
  std::map<std::size_t, std::size_t> indeg;
  for (auto& [node, k] : key) indeg[node] = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p : part.preds[i])
      if (part.group[p] != part.group[i] && succ[part.group[p]].insert(part.group[i]).second) ++indeg[part.group[i]];
  using Item = std::pair<std::size_t, std::size_t>;  // (key, node)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (auto& [node, d] : indeg)
    if (d == 0) ready.push({key[node], node});
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    std::size_t node = ready.top().second;
    ready.pop();
    order.push_back(node);
    for (std::size_t m : succ[node])
      if (--indeg[m] == 0) ready.push({key[m], m});
  }
  THUNDERC_CHECK(order.size() == key.size(), "fusion: the partition has a cycle");

  // Uses outside each node.
  std::set<ValueId> returned(trace.outputs().begin(), trace.outputs().end());
  Trace out = trace.clone_without_symbols();
  out.constructed_by = "fusion";
  std::size_t region_number = 0;
  for (std::size_t node : order) {
    if (!members.count(node)) {
      out.append(syms[node]);
      continue;
    }
    const std::vector<std::size_t>& idx = members[node];
    std::set<ValueId> defined;
    BoundSymbol region;
    region.op = &op("fusion");
    region.executor = executor;
    std::set<ValueId> seen_inputs;
    for (std::size_t i : idx) {
      for (const Operand& in : syms[i].inputs)
        if (in.is_tensor() && !defined.count(in.value) && seen_inputs.insert(in.value).second)
          region.inputs.push_back(Operand::tensor(in.value));
      for (ValueId o : syms[i].outputs) defined.insert(o);
      region.subsymbols.push_back(syms[i]);
    }
    for (std::size_t i : idx) {
      for (ValueId o : syms[i].outputs) {
        bool used_outside = returned.count(o) > 0;
        for (std::size_t j = 0; j < n && !used_outside; ++j) {
          if (part.group[j] == node) continue;
          for (const Operand& in : syms[j].inputs) used_outside = used_outside || (in.is_tensor() && in.value == o);
        }
        if (used_outside) region.outputs.push_back(o);
      }
    }
    region.source = syms[idx.front()].source;
    region.attrs.set("name", executor + "_fusion" + std::to_string(region_number++));
    out.append(std::move(region));
  }
  verify_trace(out, "fusion");
  return out;
}

Trace fuse_all_regions(const Trace& trace) {
  Trace out = fuse_regions(trace, "cpp");
  return fuse_regions(out, "nvfuser");
}

const Transform& fusion_transform() {
  static const Transform t{"fusion",
                           "symbols claimed by cpp or nvfuser are grouped into fusion regions (cpp_fusion<N>, "
                           "nvfuser_fusion<N>) by dataflow",
                           [](const Trace& trace, const TransformContext&) { return fuse_all_regions(trace); }};
  return t;
}

}  // namespace thunderc
