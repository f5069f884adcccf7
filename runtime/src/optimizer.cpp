// The optimizer's hyperparameters (thunderc --optimizer): torch.optim's defaults and checks, and the scalars
// the compiled update takes each step (core/transforms/optimizer.h writes the arithmetic that reads them).
#include <cmath>

#include "internal.hpp"

namespace thunderc::rt {

const std::vector<std::string>& optimizer_scalar_names(const std::string& kind) {
  static const std::vector<std::string> sgd = {"neg_lr", "weight_decay", "momentum", "momentum_now",
                                               "one_minus_dampening", "nesterov"};
  static const std::vector<std::string> adamw = {"decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2",
                                                 "neg_step_size", "bias_correction2_sqrt", "eps"};
  static const std::vector<std::string> none;
  return kind == "sgd" ? sgd : kind == "adamw" ? adamw : none;
}

const std::vector<std::string>& optimizer_state_names(const std::string& kind) {
  static const std::vector<std::string> sgd = {"momentum_buffer"};
  static const std::vector<std::string> adamw = {"exp_avg", "exp_avg_sq"};
  static const std::vector<std::string> none;
  return kind == "sgd" ? sgd : kind == "adamw" ? adamw : none;
}

void optimizer_defaults(const std::string& kind, thunderc_optimizer_options* o) {
  *o = thunderc_optimizer_options{};
  o->struct_size = sizeof *o;
  o->lr = 1e-3;
  o->beta1 = 0.9;
  o->beta2 = 0.999;
  o->eps = 1e-8;
  o->weight_decay = kind == "adamw" ? 1e-2 : 0.0;
}

void check_optimizer_options(const std::string& kind, const thunderc_optimizer_options& o) {
  auto bad = [](const std::string& what) { fail(THUNDERC_STATUS_INVALID_ARGUMENT, "thunderc_model_optimizer_step: " + what); };
  auto text = [](double v) { return std::to_string(v); };
  if (!(o.lr >= 0) || !std::isfinite(o.lr)) bad("invalid learning rate " + text(o.lr) + " (lr must be finite and >= 0)");
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay))
    bad("invalid weight_decay " + text(o.weight_decay) + " (must be finite and >= 0)");
  if (kind == "sgd") {
    if (!(o.momentum >= 0) || !std::isfinite(o.momentum)) bad("invalid momentum " + text(o.momentum) + " (must be finite and >= 0)");
    if (!std::isfinite(o.dampening)) bad("invalid dampening " + text(o.dampening));
    if (o.nesterov != 0 && o.nesterov != 1) bad("nesterov must be 0 or 1, got " + std::to_string(o.nesterov));
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
      bad("nesterov momentum requires a momentum > 0 and zero dampening (as torch.optim.SGD)");
  } else {
    if (!(o.beta1 >= 0 && o.beta1 < 1)) bad("invalid beta1 " + text(o.beta1) + " (must be in [0, 1))");
    if (!(o.beta2 >= 0 && o.beta2 < 1)) bad("invalid beta2 " + text(o.beta2) + " (must be in [0, 1))");
    if (!(o.eps >= 0) || !std::isfinite(o.eps)) bad("invalid eps " + text(o.eps) + " (must be finite and >= 0)");
  }
}

// What LibTorch computes in double before it scales a float32 tensor by it; `step` counts from 1.
double optimizer_scalar(const std::string& name, const thunderc_optimizer_options& o, uint64_t step) {
  const double t = static_cast<double>(step);
  if (name == "neg_lr") return -o.lr;
  if (name == "weight_decay") return o.weight_decay;
  if (name == "momentum") return o.momentum;
  if (name == "momentum_now") return step <= 1 ? 0.0 : o.momentum;  // the first step starts the buffer at d
  if (name == "one_minus_dampening") return 1 - o.dampening;
  if (name == "nesterov") return o.nesterov ? 1.0 : 0.0;
  if (name == "decay") return 1 - o.lr * o.weight_decay;
  if (name == "beta1") return o.beta1;
  if (name == "one_minus_beta1") return 1 - o.beta1;
  if (name == "beta2") return o.beta2;
  if (name == "one_minus_beta2") return 1 - o.beta2;
  if (name == "neg_step_size") return -(o.lr / (1 - std::pow(o.beta1, t)));
  if (name == "bias_correction2_sqrt") return std::sqrt(1 - std::pow(o.beta2, t));
  if (name == "eps") return o.eps;
  fail(THUNDERC_STATUS_INTERNAL, "bug: no value for the optimizer's hyperparameter '" + name + "'");
}

}  // namespace thunderc::rt
