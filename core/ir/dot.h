// A trace as a Graphviz DOT picture (`thunderc examine --dot FILE`, docs/architecture.md): one node per operation
// (fusion regions as clusters holding their operations), filled with its executor's colour; inputs and outputs
// as ellipses; each edge labelled with the tensor's dtype and shape; weights left out (their number is in the
// consuming node's label). Every name from the model is escaped: the text cannot break out of its label.
#pragma once

#include <string>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

struct DotGraph {
  std::string title;   // "x=1x64:float32"
  const Trace* trace;  // after every pass (executors claimed)
};

// One digraph; with several traces, one cluster per trace.
std::string traces_to_dot(const std::vector<DotGraph>& graphs);

// The fill colour of an executor's nodes (fixed per name, so pictures compare across models).
std::string executor_colour(const std::string& executor);

}  // namespace thunderc
