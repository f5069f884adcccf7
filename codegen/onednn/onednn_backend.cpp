// The `onednn` executor's code generation. Each claimed conv2d or linear (checkers: onednn_conv_checker and
// onednn_linear_checker in core/executors/registry.cpp), or region of one with the residual add and activation
// fusion gave it (fuse_library_epilogues), becomes one thunderc_onednn::Conv2d or ::Linear call whose spec holds
// every size as a literal: symbolic variants merge those literals into expressions (codegen/symbolic_code.h), so the
// spec is a plain local and the call site's plan cache is the only static.
#include "codegen/onednn/onednn_backend.h"
#include "codegen/resources.h"

#include <optional>

#include "core/ir/error.h"
#include "core/transforms/fusion.h"

namespace thunderc {

namespace {

std::string ll(std::int64_t v) { return std::to_string(v) + "LL"; }

// What a region adds to its convolution (subsymbols[0]): a residual add, then an activation (each optional;
// fuse_library_epilogues builds them in that order).
struct Epilogue {
  std::optional<ValueId> residual;  // the add's operand that is not the convolution's output
  const BoundSymbol* activation = nullptr;
};

Epilogue epilogue_of(const BoundSymbol& sym) {
  Epilogue e;
  if (!sym.is_region()) return e;
  ValueId cur = sym.subsymbols[0].outputs[0];
  for (std::size_t k = 1; k < sym.subsymbols.size(); ++k) {
    const BoundSymbol& s = sym.subsymbols[k];
    if (s.op->name == "add" && !e.residual && !e.activation) {
      e.residual = s.inputs[0].value == cur ? s.inputs[1].value : s.inputs[0].value;
    } else {
      THUNDERC_CHECK(!e.activation && s.inputs.size() == 1, "onednn: a region must be a conv2d, an optional add and an "
                     "optional activation; got '", s.op->name, "' at position ", k);
      e.activation = &s;
    }
    cur = s.outputs[0];
  }
  return e;
}

// The activation as the kernel's Conv2dSpec fields (activation, alpha, beta) and a description.
struct ActivationCode {
  const char* code = "thunderc_onednn::kNoActivation";
  double alpha = 0, beta = 0;
  std::string what;
};

ActivationCode activation_code(const BoundSymbol* act) {
  ActivationCode a;
  if (!act) return a;
  const std::string& op = act->op->name;
  a.what = " " + op;
  if (op == "relu") {
    a.code = "thunderc_onednn::kRelu";
  } else if (op == "hardtanh" || op == "clamp") {
    a.code = "thunderc_onednn::kClip";
    a.alpha = act->attrs.get_float(op == "clamp" ? "min" : "min_val");
    a.beta = act->attrs.get_float(op == "clamp" ? "max" : "max_val");
    a.what += "(" + c_number_literal(a.alpha) + ", " + c_number_literal(a.beta) + ")";
  } else if (op == "sigmoid") {
    a.code = "thunderc_onednn::kSigmoid";
  } else if (op == "silu") {
    a.code = "thunderc_onednn::kSilu";
  } else if (op == "hardswish") {
    a.code = "thunderc_onednn::kHardswish";
  } else if (op == "gelu") {
    const bool tanh = act->attrs.get_string("approximate") == "tanh";
    a.code = tanh ? "thunderc_onednn::kGeluTanh" : "thunderc_onednn::kGeluErf";
    if (tanh) a.what += "(tanh)";
  } else {
    THUNDERC_CHECK(false, "onednn: no post-op for activation '", op, "'");
  }
  return a;
}

}  // namespace

OnednnLocation OnednnLocation::from_build() {
  return {resource_paths().onednn_include, THUNDERC_ONEDNN_INCLUDE_DIR, THUNDERC_ONEDNN_LIBRARY};
}

OnednnBackend::OnednnBackend(OnednnLocation location, bool winograd)
    : location_(std::move(location)), winograd_(winograd) {}

LinkInputs OnednnBackend::link_inputs() const {
  THUNDERC_CHECK(!location_.library.empty(), "onednn: claimed in a thunderc built without oneDNN");
  LinkInputs in;
  in.includes = {"thunderc/onednn_kernels.h"};
  in.include_dirs = {location_.kernels_include_dir};
  const bool system = location_.include_dir == "/usr/include" || location_.include_dir == "/usr/local/include";
  if (!system) in.include_dirs.push_back(location_.include_dir);  // -I/usr/include would reorder system headers
  in.libraries = {location_.library};
  in.compile_flags = {"-fopenmp"};
  in.link_flags = {"-fopenmp"};
  return in;
}

std::optional<ValueId> OnednnBackend::output_over_input(const Trace& trace, const BoundSymbol& sym) const {
  const std::optional<ValueId> residual = epilogue_of(sym).residual;
  if (!residual) return std::nullopt;
  for (const Operand& in : sym.subsymbols[0].inputs)  // conv(x) + x: the convolution reads it while writing
    if (in.is_tensor() && in.value == *residual) return std::nullopt;
  return residual;
}

namespace {

// The call statement both kernels share: run(spec, x, w, bias, residual, y, ...), failing the variant on error.
void emit_call(const EmitContext& ctx, const BoundSymbol& sym, const char* kernel, const std::string& what,
               const std::string& fields, const Epilogue& epilogue, SourceWriter& out) {
  const BoundSymbol& head = sym.is_region() ? sym.subsymbols[0] : sym;
  const bool bias = head.inputs.size() > 2 && head.inputs[2].is_tensor();
  auto data = [&](ValueId v) { return "static_cast<const float*>(" + ctx.buffer(v) + ".data)"; };
  out.line("{  " + c_comment("oneDNN: " + what));
  out.indent();
  out.line(std::string("static thunderc_onednn::") + kernel + " op;");
  out.line(std::string("const thunderc_onednn::") + kernel + "Spec spec = {" + fields + "};");
  out.line("if (op.run(spec, " + data(head.inputs[0].value) + ", " + data(head.inputs[1].value) + ", " +
           (bias ? data(head.inputs[2].value) : std::string("nullptr")) + ", " +
           (epilogue.residual ? data(*epilogue.residual) : std::string("nullptr")) + ", static_cast<float*>(" +
           ctx.buffer(sym.outputs[0]) + ".data), call->num_threads, call->error, call->error_capacity) != 0) {");
  out.line("  " + ctx.on_failure());
  out.line("}");
  out.dedent();
  out.line("}");
}

// The spec's fields: the sizes, then activation, alpha and beta, then (convolutions) the trailing sizes.
std::string spec_fields(const std::vector<std::int64_t>& sizes, const ActivationCode& act,
                        const std::vector<std::int64_t>& trailing = {}) {
  std::string fields;
  for (std::int64_t v : sizes) fields += (fields.empty() ? "" : ", ") + ll(v);
  fields += ", " + std::string(act.code) + ", static_cast<float>(" + c_number_literal(act.alpha) +
            "), static_cast<float>(" + c_number_literal(act.beta) + ")";
  for (std::int64_t v : trailing) fields += ", " + ll(v);
  return fields;
}

// A conv2d's attribute as its two values.
IntList two(const BoundSymbol& conv, const char* name) {
  const IntList& v = conv.attrs.get_ints(name);
  return v.size() == 1 ? IntList{v[0], v[0]} : v;
}

}  // namespace

void OnednnBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  const BoundSymbol& head = sym.is_region() ? sym.subsymbols[0] : sym;
  if (head.op->name == "linear") return emit_linear(ctx, sym, out);
  if (head.op->name.rfind("conv2d_backward_", 0) == 0) return emit_conv2d_backward(ctx, sym, out);
  emit_conv2d(ctx, sym, out);
}

void OnednnBackend::emit_conv2d_backward(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  const Trace& t = ctx.trace();
  THUNDERC_CHECK(!sym.is_region(), "onednn: a region around '", sym.op->name, "'");
  const std::string& name = sym.op->name;
  const bool weights = name == "conv2d_backward_weight" || name == "conv2d_backward_weight_nhwc";
  // conv2d_backward_*_nhwc (the channels-last pass): the gradient and the activation [N, H, W, C].
  const bool channels_last = name.size() > 5 && name.compare(name.size() - 5, 5, "_nhwc") == 0;
  TensorType g = t.type(sym.inputs[0].value), b = t.type(sym.inputs[1].value), r = t.type(sym.outputs[0]);
  TensorType &x = weights ? b : r, &w = weights ? r : b;
  THUNDERC_CHECK(x.rank() == 4 && w.rank() == 4 && g.rank() == 4, "onednn: ", sym.op->name, " of rank ", x.rank());
  if (channels_last)  // [n, h, w, c] -> the NCHW sizes the spec lists
    for (TensorType* v : {&x, &g}) v->shape = {v->shape[0], v->shape[3], v->shape[1], v->shape[2]};
  const IntList st = two(sym, "stride"), pd = two(sym, "padding"), dl = two(sym, "dilation");
  const std::vector<std::int64_t> sizes = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2],
                                          w.shape[3], st[0], st[1], pd[0], pd[1], dl[0], dl[1],
                                          sym.attrs.get_int("groups"), g.shape[2], g.shape[3], 0, 0,
                                          channels_last ? 1 : 0, 0};
  const std::string what = std::string(weights ? "conv2d weight gradient " : "conv2d input gradient ") +
                           shape_str(g.shape) + " -> " + shape_str(r.shape) + ", kernel " + std::to_string(w.shape[2]) +
                           "x" + std::to_string(w.shape[3]) + (channels_last ? ", NHWC" : "");
  auto data = [&](ValueId v) { return "static_cast<const float*>(" + ctx.buffer(v) + ".data)"; };
  out.line("{  " + c_comment("oneDNN: " + what));
  out.indent();
  out.line(std::string("static thunderc_onednn::Conv2dBackward<") + (weights ? "true" : "false") + "> op;");
  out.line("const thunderc_onednn::Conv2dSpec spec = {" + spec_fields(sizes, ActivationCode{}, {1}) + "};");
  out.line("if (op.run(spec, " + data(sym.inputs[0].value) + ", " + data(sym.inputs[1].value) + ", static_cast<float*>(" +
           ctx.buffer(sym.outputs[0]) + ".data), call->num_threads, call->error, call->error_capacity) != 0) {");
  out.line("  " + ctx.on_failure());
  out.line("}");
  out.dedent();
  out.line("}");
}

void OnednnBackend::emit_linear(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  const Trace& t = ctx.trace();
  const BoundSymbol& linear = sym.is_region() ? sym.subsymbols[0] : sym;
  const Epilogue epilogue = epilogue_of(sym);
  const ActivationCode act = activation_code(epilogue.activation);
  const TensorType &x = t.type(linear.inputs[0].value), &w = t.type(linear.inputs[1].value);
  THUNDERC_CHECK(w.rank() == 2 && x.rank() >= 1, "onednn: linear of a rank-", w.rank(), " weight");
  const std::int64_t k = x.shape.back(), n = w.shape[0], m = x.numel() / std::max<std::int64_t>(k, 1);
  const bool bias = linear.inputs.size() > 2 && linear.inputs[2].is_tensor();
  const std::string what = "linear [" + std::to_string(m) + ", " + std::to_string(k) + "] x [" + std::to_string(n) +
                           ", " + std::to_string(k) + "]^T" + (bias ? " +bias" : "") +
                           (epilogue.residual ? " +residual" : "") + act.what;
  emit_call(ctx, sym, "Linear", what, spec_fields({m, k, n, bias ? 1 : 0, epilogue.residual ? 1 : 0}, act), epilogue,
            out);
}

void OnednnBackend::emit_conv2d(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  const Trace& t = ctx.trace();
  const BoundSymbol& conv = sym.is_region() ? sym.subsymbols[0] : sym;
  const bool channels_last = conv.op->name == "conv2d_nhwc";
  THUNDERC_CHECK(conv.op->name == "conv2d" || channels_last, "onednn: no code generation for '", conv.op->name, "'");
  const Epilogue epilogue = epilogue_of(sym);
  const std::optional<ValueId>& residual = epilogue.residual;
  const ActivationCode act = activation_code(epilogue.activation);
  TensorType x = t.type(conv.inputs[0].value), y = t.type(sym.outputs[0]);
  const TensorType& w = t.type(conv.inputs[1].value);
  THUNDERC_CHECK(x.rank() == 4 && w.rank() == 4, "onednn: conv2d of rank ", x.rank());
  if (channels_last)  // [n, h, w, c] -> the NCHW sizes the spec lists
    for (TensorType* v : {&x, &y}) v->shape = {v->shape[0], v->shape[3], v->shape[1], v->shape[2]};
  const IntList st = two(conv, "stride"), pd = two(conv, "padding"), dl = two(conv, "dilation");
  const bool bias = conv.inputs.size() > 2 && conv.inputs[2].is_tensor();
  // Fusion marks the convolutions whose output a bounded variant keeps finite (Winograd turns inf into NaN).
  const bool winograd = winograd_ && winograd_marked(sym);
  const std::vector<std::int64_t> sizes = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2],
                                          w.shape[3], st[0], st[1], pd[0], pd[1], dl[0], dl[1],
                                          conv.attrs.get_int("groups"), y.shape[2], y.shape[3], bias ? 1 : 0,
                                          residual ? 1 : 0, channels_last ? 1 : 0, winograd ? 1 : 0};
  std::string what = "conv2d " + shape_str(x.shape) + " -> " + shape_str(y.shape) + ", kernel " +
                     std::to_string(w.shape[2]) + "x" + std::to_string(w.shape[3]) + (bias ? " +bias" : "") +
                     (residual ? " +residual" : "") + act.what + (channels_last ? ", NHWC" : "") +
                     (winograd ? ", Winograd where it pays" : "");
  // Weights that are not constants (a training variant's parameters) are reordered by every call.
  const bool weights_vary = t.value(conv.inputs[1].value).origin != ValueOrigin::Constant;
  if (weights_vary) what += ", weights reordered per call";
  emit_call(ctx, sym, "Conv2d", what, spec_fields(sizes, act, {weights_vary ? 1 : 0}), epilogue, out);
}

}  // namespace thunderc
