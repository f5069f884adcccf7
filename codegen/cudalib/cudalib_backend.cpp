#include "codegen/cudalib/cudalib_backend.h"

#include "codegen/loops/attention_plan.h"
#include "codegen/nvfuser/gemm_plan.h"
#include "codegen/nvfuser/nvfuser_backend.h"
#include "core/ir/error.h"

#include <optional>

namespace thunderc {

namespace {

// The same symbol, claimed by nvfuser: its kernels are the library call's fallback.
BoundSymbol as_nvfuser(const BoundSymbol& sym) {
  BoundSymbol s = sym;
  s.executor = "nvfuser";
  for (BoundSymbol& m : s.subsymbols) m.executor = "nvfuser";
  return s;
}

// The epilogue a region's members after its head ask for.
struct Epilogue {
  const char* activation = "THUNDERC_LIB_ACT_NONE";
  std::string activation_name;             // for the manifest ("relu")
  std::optional<ValueId> residual;
};

Epilogue epilogue_of(const BoundSymbol& sym) {
  Epilogue e;
  if (!sym.is_region()) return e;
  ValueId cur = sym.subsymbols[0].outputs[0];
  for (std::size_t i = 1; i < sym.subsymbols.size(); ++i) {
    const BoundSymbol& m = sym.subsymbols[i];
    const std::string& op = m.op->name;
    if (op == "add") {
      e.residual = m.inputs[0].value == cur ? m.inputs[1].value : m.inputs[0].value;
    } else {
      e.activation_name = op;
      if (op == "relu") e.activation = "THUNDERC_LIB_ACT_RELU";
      else if (op == "gelu") e.activation = "THUNDERC_LIB_ACT_GELU_TANH";  // fusion admits only approximate='tanh'
      else if (op == "sigmoid") e.activation = "THUNDERC_LIB_ACT_SIGMOID";
      else if (op == "silu") e.activation = "THUNDERC_LIB_ACT_SILU";
      else internal_error("library call: no epilogue for ", op);
    }
    cur = m.outputs[0];
  }
  return e;
}

std::string ll(std::int64_t v) { return std::to_string(v) + "LL"; }

// The checkers (cublas_gemm, cudnn_conv) admit one dtype for every operand: float32, float16 or bfloat16.
const char* lib_dtype(DType d) {
  switch (d) {
    case DType::Float32: return "THUNDERC_LIB_FLOAT32";
    case DType::Float16: return "THUNDERC_LIB_FLOAT16";
    case DType::BFloat16: return "THUNDERC_LIB_BFLOAT16";
    default: internal_error("library call: no library dtype for ", dtype_name(d));
  }
}

// The status check after a library call: FALLBACK runs nvfuser's code for the same symbol.
void emit_status(const EmitContext& ctx, const BoundSymbol& sym, const std::string& call, SourceWriter& out) {
  out.line("const int32_t status = " + call + ";");
  out.line("if (status == THUNDERC_DEVICE_API_FALLBACK) {  // the library cannot run it here: nvfuser's kernel");
  out.indent();
  NvfuserBackend().emit_symbol(ctx, as_nvfuser(sym), out);
  out.dedent();
  out.line("} else if (status != 0) {");
  out.line("  " + ctx.on_failure());
  out.line("}");
}

// scaled_dot_product_attention through cuDNN (checker: cudnn_attention): the output's batch dims become
// (batch, heads) = (product of all but the last, the last); q, k, v and the output are dense.
void emit_sdpa(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  const loops::AttentionPlan p = loops::plan_attention(t, sym);
  const DType dt = t.type(sym.outputs[0]).dtype;
  const std::int64_t heads = p.batch.empty() ? 1 : p.batch.back(), batch = p.batch.empty() ? 1 : p.batches / heads;
  std::int64_t mask_batch = 0, mask_head = 0;
  if (p.has_mask) {
    const std::size_t nb = p.batch.size();  // at most 2 (the checker's rule)
    if (nb >= 1) mask_head = p.mask_strides[nb - 1];
    if (nb == 2) mask_batch = p.mask_strides[0];
    THUNDERC_CHECK(p.mask_col == 1 || p.S == 1, "cudnn attention: the mask is not dense along the keys");
  }
  std::string what = "sdpa " + std::to_string(batch) + "x" + std::to_string(heads) + " L=" + std::to_string(p.L) +
                     " S=" + std::to_string(p.S) + " E=" + std::to_string(p.E) + (p.causal ? " causal" : "") +
                     (p.has_mask ? " +mask" : "") + " (" + dtype_name(dt) + ")";
  std::uint32_t id = ctx.add_library_call({"cudnn", what});
  auto ptr = [&](ValueId v) { return ctx.buffer(v) + ".data"; };
  out.line("{  " + c_comment("cuDNN: " + what));
  out.indent();
  out.line("static const thunderc_sdpa op = {sizeof(thunderc_sdpa), " + std::to_string(id) + "u, " + lib_dtype(dt) +
           ", " + (p.causal ? "1u" : "0u") + ", " + (p.has_mask ? "1u" : "0u") + ", 0u,");
  out.line("    " + ll(batch) + ", " + ll(heads) + ", " + ll(p.L) + ", " + ll(p.S) + ", " + ll(p.E) + ", " + ll(p.Ev) + ",");
  out.line("    " + ll(mask_batch) + ", " + ll(mask_head) + ", " + ll(p.mask_row) + ", " + c_number_literal(p.scale) + "};");
  const std::string call = "call->device_api->sdpa(call->device_api->context, &op, " + ptr(sym.outputs[0]) + ", " +
                           ptr(sym.inputs[0].value) + ", " + ptr(sym.inputs[1].value) + ", " + ptr(sym.inputs[2].value) +
                           ", " + (p.has_mask ? ptr(sym.inputs[3].value) : std::string("nullptr")) +
                           ", call->error, call->error_capacity)";
  emit_status(ctx, sym, call, out);
  out.dedent();
  out.line("}");
}

}  // namespace

void LibraryBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  const Trace& t = ctx.trace();
  const BoundSymbol& head = sym.is_region() ? sym.subsymbols[0] : sym;
  if (head.op->category == OpCategory::Attention) {
    THUNDERC_CHECK(executor_ == "cudnn" && !sym.is_region(), "library call: attention claimed by ", executor_);
    if (t.type(sym.outputs[0]).numel() == 0) return;  // nothing to compute (nvfuser's code launches nothing either)
    emit_sdpa(ctx, sym, out);
    return;
  }
  const BoundSymbol fallback = as_nvfuser(sym);
  NvfuserBackend nvfuser;
  GemmPlan p = plan_gemm(t, head);
  if (p.empty) {  // no output element; nvfuser's code for it launches nothing either
    nvfuser.emit_symbol(ctx, fallback, out);
    return;
  }
  const Epilogue e = epilogue_of(sym);
  auto ptr = [&](ValueId v) { return ctx.buffer(v) + ".data"; };
  auto input = [&](std::size_t i) { return ptr(head.inputs[i].value); };
  const bool bias = !p.extras.empty();
  std::string what = p.what + (bias ? " +bias" : "") + (e.residual ? " +residual" : "") +
                     (e.activation_name.empty() ? "" : " " + e.activation_name);

  const std::string math = tf32_ ? "THUNDERC_LIB_MATH_TF32" : "THUNDERC_LIB_MATH_FP32";
  const std::string dtype = lib_dtype(t.type(head.outputs[0]).dtype);
  if (tf32_) what += " (tf32)";
  if (t.type(head.outputs[0]).dtype != DType::Float32) what += std::string(" (") + dtype_name(t.type(head.outputs[0]).dtype) + ")";
  out.line("{  " + c_comment((executor_ == "cudnn" ? "cuDNN: " : "cuBLASLt: ") + what));
  out.indent();
  std::string call;
  if (!p.conv) {
    THUNDERC_CHECK(executor_ == "cublas", "library call: ", head.op->name, " claimed by ", executor_);
    const cuda::GemmSpec& g = p.g;
    std::uint32_t id = ctx.add_library_call({"cublasLt", what});
    out.line("static const thunderc_gemm op = {sizeof(thunderc_gemm), " + std::to_string(id) +
             "u, " + dtype + ", " + math + ", " + e.activation + ", " + (bias ? "1u" : "0u") + ",");
    out.line("    " + ll(g.batch) + ", " + ll(g.M) + ", " + ll(g.N) + ", " + ll(g.K) + ",");
    out.line("    " + ll(g.a_batch) + ", " + ll(g.a_row) + ", " + ll(g.a_col) + ", " + ll(g.b_batch) + ", " +
             ll(g.b_row) + ", " + ll(g.b_col) + ", " + ll(g.c_batch) + ", " + ll(g.c_row) + "};");
    call = "call->device_api->gemm(call->device_api->context, &op, " + ptr(sym.outputs[0]) + ", " +
           input(p.operands[0]) + ", " + input(p.operands[1]) + ", " + (bias ? input(p.extras[0]) : "nullptr") +
           ", call->error, call->error_capacity)";
  } else {
    THUNDERC_CHECK(executor_ == "cudnn", "library call: conv2d claimed by ", executor_);
    const cuda::Conv2dSpec& c = p.c;
    std::uint32_t id = ctx.add_library_call({"cudnn", what});
    out.line("static const thunderc_conv2d op = {sizeof(thunderc_conv2d), " + std::to_string(id) +
             "u, " + dtype + ", " + math + ", " + e.activation + ", " + (bias ? "1u" : "0u") + ", " +
             (e.residual ? "1u" : "0u") + ", 0u,");
    out.line("    " + ll(c.N) + ", " + ll(c.C) + ", " + ll(c.H) + ", " + ll(c.W) + ", " + ll(c.K) + ", " + ll(c.R) +
             ", " + ll(c.S) + ", " + ll(c.OH) + ", " + ll(c.OW) + ",");
    out.line("    " + ll(c.stride_h) + ", " + ll(c.stride_w) + ", " + ll(c.pad_h) + ", " + ll(c.pad_w) + ", " +
             ll(c.dil_h) + ", " + ll(c.dil_w) + ", " + ll(c.groups) + "};");
    call = "call->device_api->conv2d(call->device_api->context, &op, " + ptr(sym.outputs[0]) + ", " +
           input(p.operands[0]) + ", " + input(p.operands[1]) + ", " + (bias ? input(p.extras[0]) : "nullptr") + ", " +
           (e.residual ? ptr(*e.residual) : "nullptr") + ", call->error, call->error_capacity)";
  }
  emit_status(ctx, sym, call, out);
  out.dedent();
  out.line("}");
}

void LibraryBackend::emit_module_prelude(SourceWriter& out) const { NvfuserBackend().emit_module_prelude(out); }

std::size_t LibraryBackend::scratch_bytes(const Trace& trace, const BoundSymbol& sym) const {
  return NvfuserBackend().scratch_bytes(trace, as_nvfuser(sym));
}

}  // namespace thunderc
