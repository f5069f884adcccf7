// Turns the claimed traces of every variant into the sources of one model .so: a C++ file with one
// exported entry per variant (the trace as comments, each symbol emitted by its executor's backend), an
// assembler file that embeds the weights blob and the manifest with .incbin (never as C literals), and
// the blob itself. Output is deterministic: same traces and manifest, same bytes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/memory_plan.h"
#include "core/ir/symbolic.h"
#include "core/ir/trace.h"

namespace thunderc {

struct ModuleVariant {
  const Trace* trace = nullptr;
  std::string label;  // "x=1x64:float32", for comments
  // Symbolic variants (--cache "symbolic values"): sizes as expressions in the symbols, read from the inputs
  // at run time; `trace` is the one traced at the symbols' maxima. Null for fixed shapes.
  const SymbolicTrace* symbolic = nullptr;
};

// Constants of all variants packed into one blob; equal constants (same type and bytes) stored once.
struct WeightsBlob {
  std::vector<unsigned char> bytes;
  std::size_t count = 0;                                // distinct constants
  std::vector<std::map<ValueId, std::size_t>> offsets;  // per variant: constant -> offset
};

struct ModulePlan {
  WeightsBlob weights;
  std::vector<VariantMemoryPlan> memory;  // per variant
};

using BackendSet = std::map<std::string, std::unique_ptr<Backend>>;

ModulePlan plan_module(const std::vector<ModuleVariant>& variants, const BackendSet& backends);

// Name of variant i's exported entry point.
std::string variant_entry(std::size_t i);

struct GeneratedModule {
  std::string cpp;        // model.cpp
  std::string assembly;   // model_data.S, .incbin's weights.bin and manifest.json
  std::vector<unsigned char> weights;
  std::string manifest;
  LinkInputs link;        // union of the backends used
};

// `header` is a comment for the top of model.cpp (e.g. the command line); any text is safe.
GeneratedModule generate_module(const std::vector<ModuleVariant>& variants, const ModulePlan& plan,
                                const BackendSet& backends, const std::string& manifest, const std::string& header);

}  // namespace thunderc
