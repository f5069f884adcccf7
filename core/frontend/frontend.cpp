// load_model: picks the frontend by content (see frontend.h). TorchScriptModel is wrapped, not changed.
// Built without LibTorch (THUNDERC_WITH_LIBTORCH=0, library thunderc_frontend_nolibtorch), it reads .pt2 only.
#include "core/frontend/frontend.h"

#include <filesystem>

#include "core/frontend/pt2.h"
#include "core/ir/error.h"
#if THUNDERC_WITH_LIBTORCH
#include "core/frontend/torchscript.h"
#endif

namespace thunderc {

#if THUNDERC_WITH_LIBTORCH

namespace {

class TorchScriptFrontend : public ModelFrontend {
 public:
  explicit TorchScriptFrontend(TorchScriptModel model) : model_(std::move(model)) {}
  const std::string& path() const override { return model_.path(); }
  std::string format() const override { return "torchscript"; }
  std::string description() const override { return "TorchScript, LibTorch " + libtorch_version(); }
  const std::vector<std::string>& input_names() const override { return model_.input_names(); }
  std::optional<Specialization> recorded_shapes() const override { return model_.recorded_shapes(); }
  std::vector<TensorType> resolve_shapes(const Specialization& spec, Device device) const override {
    return model_.resolve_shapes(spec, device);
  }
  Trace import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges,
               bool alias_updates) const override {
    return model_.import(input_types, sharp_edges, alias_updates);
  }
  std::string graph_str() const override { return model_.graph_str(); }
  std::vector<std::string> parameter_names() const override { return model_.parameter_names(); }
  void set_trace_parameters(bool on) override { model_.set_trace_parameters(on); }
  void set_training_mode(bool on) override { model_.set_training_mode(on); }
  std::vector<std::string> buffer_names() const override { return model_.buffer_names(); }

 private:
  TorchScriptModel model_;
};

}  // namespace

std::unique_ptr<ModelFrontend> load_model(const std::string& path) {
  if (detect_model_format(path) == ModelFormat::Pt2) return Pt2Model::load(path);
  return std::make_unique<TorchScriptFrontend>(TorchScriptModel::load(path));
}

ImportedOps imported_ops() { return {torchscript_imported_kinds(), pt2_imported_targets()}; }

#else  // !THUNDERC_WITH_LIBTORCH

std::unique_ptr<ModelFrontend> load_model(const std::string& path) {
  if (detect_model_format(path) == ModelFormat::Pt2) return Pt2Model::load(path);
  // A missing or unreadable file: the .pt2 reader's "cannot open the model file (...)".
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Pt2Model::load(path);
  user_error("this thunderc was built without LibTorch (-DTHUNDERC_WITH_LIBTORCH=OFF): it reads torch.export .pt2 "
             "programs only; ", path, " is not one (a TorchScript model?): export the model with torch.export.export "
             "and torch.export.save (docs/pt2.md), or compile it with a thunderc built with LibTorch");
}

ImportedOps imported_ops() { return {{}, pt2_imported_targets()}; }

#endif

}  // namespace thunderc
