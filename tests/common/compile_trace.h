// Compiles a hand-built, claimed trace into dir/name.so (+ .json) with compile_model: how the executor
// conformance suites build the models they run through the runtime.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "codegen/compile.h"

namespace thunderc_test {

inline std::string compile_trace(const thunderc::Trace& trace, const std::vector<std::string>& executors,
                                 const std::string& name, const std::filesystem::path& dir,
                                 const std::optional<std::string>& keep_sources = std::nullopt) {
  std::filesystem::create_directories(dir);
  thunderc::CompileRequest req;
  req.source = {"test:" + name, "", "test"};
  req.options.executors = executors;
  req.options.device = trace.inputs().empty() ? "cpu" : trace.type(trace.inputs()[0]).device.str();
  for (thunderc::ValueId v : trace.inputs()) req.input_names.push_back(trace.value(v).name);
  req.variants = {thunderc::ModuleVariant{&trace, name}};
  req.out_so = (dir / (name + ".so")).string();
  req.out_json = (dir / (name + ".json")).string();
  req.keep_sources = keep_sources;
  thunderc::compile_model(req, thunderc::Toolchain::from_build());
  return req.out_so;
}

}  // namespace thunderc_test
