#include "core/transforms/fusion.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <set>

#include "core/ir/error.h"
#include "core/ir/verifier.h"
#include "core/transforms/value_bounds.h"

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
  static const std::set<std::string> ops = {"linear", "matmul", "bmm", "addmm", "conv2d", "conv2d_nhwc"};
  return ops.count(s.op->name) > 0;
}

// A convolution oneDNN may compute with Winograd F(2x2, 3x3): dense, 3x3, stride 1, no dilation. Whether it
// pays is decided at run time from the sizes and the CPU (winograd_pays in codegen/onednn/include/thunderc/
// onednn_kernels.h, which repeats these conditions).
bool winograd_candidate(const Trace& trace, const BoundSymbol& s) {
  if (s.op->name != "conv2d" && s.op->name != "conv2d_nhwc") return false;
  const Shape& w = trace.type(s.inputs[1].value).shape;
  auto ones = [&](const char* name) {
    for (std::int64_t v : s.attrs.get_ints(name))
      if (v != 1) return false;
    return true;
  };
  return w.size() == 4 && w[2] == 3 && w[3] == 3 && s.attrs.get_int("groups") == 1 && ones("stride") &&
         ones("dilation");
}

}  // namespace

Trace fuse_cpp_regions(const Trace& trace) { return fuse_regions(trace, "cpp"); }

Trace fuse_regions(const Trace& trace, const std::string& executor) {
  // Attention, the Indexing category and what the executor runs alone have code of their own
  // (codegen/cpp/attention.h, indexing.h, ...): each stays a lone symbol, never in a region.
  const Executor* ex = find_executor(executor);
  auto is_candidate = [&](const BoundSymbol& s) {
    return s.executor == executor && !s.is_region() && s.op->category != OpCategory::Attention &&
           s.op->category != OpCategory::Indexing && s.op->category != OpCategory::Spectral && !(ex && ex->runs_alone(s.op->name));
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

namespace {

// The epilogue a library call can apply after its GEMM or convolution, in the order it applies them.
struct LibraryEpilogue {
  bool residual = false;                 // one add of a tensor of the output's exact type
  std::set<std::string> activations;     // then at most one of these
};

// nan_hiding_activations: whether activations that turn NaN into a number may be fused at all (bounded variants).
std::optional<LibraryEpilogue> library_epilogue(const std::string& executor, bool nan_hiding_activations) {
  if (executor == "cublas") return LibraryEpilogue{false, {"relu", "gelu"}};  // gelu only approximate='tanh'
  if (executor == "cudnn") return LibraryEpilogue{true, {"relu", "sigmoid", "silu"}};
  // oneDNN's sum post-op, and its eltwise post-ops only where NaN cannot reach them: they compute with
  // max/min instructions (and a clamped exp) that turn NaN into a number, where PyTorch keeps NaN.
  if (executor == "onednn")
    return nan_hiding_activations
               ? LibraryEpilogue{true, {"relu", "hardtanh", "clamp", "sigmoid", "silu", "hardswish", "gelu"}}
               : LibraryEpilogue{true, {}};
  return std::nullopt;
}

// clamp fuses only with both bounds (oneDNN's clip); cuBLASLt's gelu epilogue is the tanh form, oneDNN has both.
bool fusable_activation(const std::string& executor, const BoundSymbol& s) {
  if (s.op->name == "gelu") return executor == "onednn" || s.attrs.get_string("approximate") == "tanh";
  if (s.op->name == "clamp") return !s.attrs.is_none("min") && !s.attrs.is_none("max");
  return true;
}

}  // namespace

Trace fuse_library_epilogues(const Trace& trace, const NanFreePredicate& nan_free) {
  const auto& syms = trace.symbols();
  const std::size_t n = syms.size();
  std::set<ValueId> returned(trace.outputs().begin(), trace.outputs().end());
  // Readers of each value: (symbol, how many of its operands read it).
  std::map<ValueId, std::vector<std::size_t>> readers;
  for (std::size_t j = 0; j < n; ++j)
    for (const Operand& in : syms[j].inputs)
      if (in.is_tensor()) readers[in.value].push_back(j);
  // The single symbol reading v once, when v is not returned either; n otherwise.
  auto sole_reader = [&](ValueId v) -> std::size_t {
    auto it = readers.find(v);
    if (returned.count(v) || it == readers.end() || it->second.size() != 1) return n;
    return it->second[0];
  };

  std::vector<std::vector<std::size_t>> chain_at(n);  // last member -> the whole chain (head first)
  std::vector<bool> winograd_at(n, false);              // last member -> its convolution may use Winograd
  std::vector<bool> absorbed(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const BoundSymbol& head = syms[i];
    if (head.is_region() || !gemm_backed(head) || absorbed[i]) continue;
    auto rule = library_epilogue(head.executor, static_cast<bool>(nan_free));
    if (!rule) continue;
    const TensorType out = trace.type(head.outputs[0]);
    std::vector<std::size_t> chain = {i};
    ValueId cur = head.outputs[0];
    bool residual_done = !rule->residual, activation_done = false;
    while (!activation_done) {
      std::size_t j = sole_reader(cur);
      if (j == n || absorbed[j] || syms[j].is_region() || syms[j].outputs.size() != 1) break;
      const BoundSymbol& s = syms[j];
      if (trace.type(s.outputs[0]) != out || s.executor.empty()) break;
      const std::string& op = s.op->name;
      if (!residual_done && op == "add" && s.inputs.size() == 2 && s.inputs[0].is_tensor() &&
          s.inputs[1].is_tensor()) {
        ValueId other = s.inputs[0].value == cur ? s.inputs[1].value : s.inputs[0].value;
        if (other == cur || trace.type(other) != out) break;
        residual_done = true;
      } else if (rule->activations.count(op) && s.inputs.size() == 1) {
        if (!fusable_activation(head.executor, s)) break;
        if (head.executor == "onednn" && !nan_free(cur)) break;  // NaN could reach a post-op that hides it
        activation_done = true;
      } else {
        break;
      }
      residual_done = true;  // a residual add comes before the activation or not at all
      chain.push_back(j);
      cur = s.outputs[0];
    }
    // Winograd's transforms turn an inf input into NaN (inf - inf) where the direct sum gives inf, and scale
    // values by up to ~150 on the way: only a convolution whose output is finite under bounded inputs may
    // use it, in the bounded variant, which then also keeps that output finite (bounded_values).
    const bool winograd = nan_free && head.executor == "onednn" && winograd_candidate(trace, head) &&
                          nan_free(head.outputs[0]);
    if (chain.size() == 1 && !winograd) continue;
    for (std::size_t k : chain) absorbed[k] = true;
    chain_at[chain.back()] = chain;
    winograd_at[chain.back()] = winograd;
  }

  Trace out = trace.clone_without_symbols();
  out.constructed_by = "fusion";
  std::map<std::string, std::size_t> numbers;
  for (std::size_t j = 0; j < n; ++j) {
    if (!absorbed[j]) {
      out.append(syms[j]);
      continue;
    }
    if (chain_at[j].empty()) continue;  // emitted with its chain's last member, where all its inputs exist
    const std::vector<std::size_t>& chain = chain_at[j];
    BoundSymbol region;
    region.op = &op("fusion");
    region.executor = syms[chain[0]].executor;
    std::set<ValueId> defined, seen;
    for (std::size_t k : chain) {
      BoundSymbol member = syms[k];
      member.executor = region.executor;
      for (const Operand& in : member.inputs)
        if (in.is_tensor() && !defined.count(in.value) && seen.insert(in.value).second)
          region.inputs.push_back(Operand::tensor(in.value));
      for (ValueId o : member.outputs) defined.insert(o);
      region.subsymbols.push_back(std::move(member));
    }
    region.outputs = {syms[chain.back()].outputs[0]};
    region.source = syms[chain[0]].source;
    region.attrs.set("name", region.executor + "_fusion" + std::to_string(numbers[region.executor]++));
    if (winograd_at[j]) region.attrs.set("winograd", true);
    out.append(std::move(region));
  }
  verify_trace(out, "fusion");
  return out;
}

bool winograd_marked(const BoundSymbol& sym) {
  return sym.is_region() && sym.attrs.has("winograd") && sym.attrs.get_bool("winograd");
}

Trace fuse_all_regions(const Trace& trace, const TransformContext& context) {
  NanFreePredicate nan_free;
  if (context.bounded_inputs) nan_free = nan_free_values(trace);
  Trace out = fuse_library_epilogues(trace, nan_free);
  out = fuse_regions(out, "cpp");
  return fuse_regions(out, "nvfuser");
}

const Transform& fusion_transform() {
  static const Transform t{"fusion",
                           "symbols claimed by cpp or nvfuser are grouped into fusion regions (cpp_fusion<N>, "
                           "nvfuser_fusion<N>) by dataflow; cublas/cudnn/onednn calls absorb the epilogue their library "
                           "applies (residual add, activation)",
                           [](const Trace& trace, const TransformContext& context) { return fuse_all_regions(trace, context); }};
  return t;
}

}  // namespace thunderc
