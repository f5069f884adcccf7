#include "cli/pipeline.h"

#include "core/ir/error.h"
#include "core/ir/verifier.h"

namespace thunderc {

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

// "x=1x64" for every input, as an example --shapes value.
std::string example_shapes(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const std::string& n : names) parts.push_back(n + "=1x64");
  return join(parts, ",");
}

}  // namespace

std::string specialization_label(const SpecializedTrace& s) {
  return s.spec.empty() ? std::string("(no inputs)") : specialization_str(s.spec);
}

PipelineResult run_pipeline(const PipelineOptions& options) {
  PipelineResult result;

  // Flags first, so a typo fails before a large model is loaded.
  std::vector<Specialization> specs;
  for (const std::string& text : options.shapes) specs.push_back(parse_shapes_flag(text));
  result.executors = resolve_executors(options.executors, options.device.kind, options.standalone);
  if (result.executors.executors.empty()) {
    std::string why;
    for (const std::string& n : result.executors.notes) why += "\n  note: " + n;
    user_error("no executor can run on ", options.device.str(),
               options.standalone ? " (--standalone leaves no executor)" : "", why);
  }

  result.model = std::make_unique<TorchScriptModel>(TorchScriptModel::load(options.model_path));
  const TorchScriptModel& model = *result.model;

  if (specs.empty()) {
    if (auto recorded = model.recorded_shapes()) {
      specs.push_back(*recorded);
      result.shapes_recorded = true;
    } else {
      const auto& names = model.input_names();
      if (names.empty())
        specs.push_back({});  // nothing to specialize
      else
        user_error(options.model_path, " does not record its input shapes; pass --shapes for its input",
                   names.size() == 1 ? "" : "s", " ", join(names, ", "), " (e.g. --shapes ",
                   example_shapes(names), ")");
    }
  }

  for (std::size_t i = 0; i < specs.size(); ++i) {
    SpecializedTrace s{specs[i], {}, Trace{}};
    // With several specializations, messages say which one failed.
    const std::string prefix = specs.size() > 1 ? "specialization " + std::to_string(i + 1) + " (" +
                                                      specialization_label(s) + "): "
                                                : "";
    try {
      s.input_types = model.resolve_shapes(s.spec, options.device);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what());
    }
    try {
      s.trace = model.import(s.input_types);
    } catch (const UserError& e) {
      throw UserError(prefix + e.what() + "\nexecutors asked: " + result.executors.names_str());
    }
    verify_trace(s.trace, s.trace.constructed_by.empty() ? "torchscript-import" : s.trace.constructed_by);
    std::vector<UnclaimedSymbol> unclaimed = claim_executors(s.trace, result.executors.executors);
    if (!unclaimed.empty()) throw UserError(prefix + unclaimed_message(s.trace, unclaimed, result.executors));
    result.specializations.push_back(std::move(s));
  }
  return result;
}

}  // namespace thunderc
