// The `torch` executor's code generation: each claimed symbol becomes one call into the ATen shim
// (libthunderc_aten_shim, see torch/include/thunderc/aten_shim.h) with its attributes as constant arrays.
#include "codegen/torch/torch_backend.h"

#include <cmath>

#include "core/ir/attr_codec.h"
#include "core/ir/printer.h"
#include "core/ir/types.h"

namespace thunderc {

namespace {
template <typename T, typename F>
std::string array_literal(const std::vector<T>& items, F format) {
  std::string s = "{";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + format(items[i]);
  return s + "}";
}

std::string double_literal(double v) { return c_number_literal(v); }
}  // namespace

TorchBackend::TorchBackend(ShimLocation shim) : shim_(std::move(shim)) {}

LinkInputs TorchBackend::link_inputs() const {
  LinkInputs in;
  in.includes = {"thunderc/aten_shim.h"};
  in.include_dirs = {shim_.include_dir};
  in.libraries = {shim_.library};
  in.rpaths = {shim_.library_dir};
  return in;
}

void TorchBackend::emit_variant_prologue(SourceWriter& out) const {
  out.line("thunderc_aten_set_num_threads(call->num_threads);");
}

void TorchBackend::emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const {
  EncodedAttrs attrs = encode_attrs(*sym.op, sym.attrs);
  out.line("{");
  out.indent();
  std::vector<std::string> operands;
  for (const Operand& in : sym.inputs) {
    switch (in.kind) {
      case OperandKind::None: operands.push_back("{THUNDERC_OPERAND_NONE, 0, 0, 0.0}"); break;
      case OperandKind::Tensor: operands.push_back("{THUNDERC_OPERAND_TENSOR, &" + ctx.buffer(in.value) + ", 0, 0.0}"); break;
      case OperandKind::Scalar:
        if (in.scalar.is_float())
          operands.push_back("{THUNDERC_OPERAND_FLOAT, 0, 0, " + double_literal(in.scalar.to_double()) + "}");
        else
          operands.push_back(std::string("{") + (in.scalar.is_bool() ? "THUNDERC_OPERAND_BOOL" : "THUNDERC_OPERAND_INT") +
                             ", 0, " + std::to_string(in.scalar.to_int()) + "LL, 0.0}");
        break;
    }
  }
  out.line("const thunderc_operand in[] = " + array_literal(operands, [](const std::string& s) { return s; }) + ";");
  std::string ints = "nullptr", floats = "nullptr", strings = "nullptr";
  if (const std::vector<std::string>* exprs = ctx.int_attr_exprs()) {
    // Sizes known at run time (symbolic variant): the array is built on every call.
    out.line("const int64_t ai[] = " + array_literal(*exprs, [](const std::string& e) { return e; }) + ";");
    ints = "ai";
  } else if (!attrs.ints.empty()) {
    out.line("static const int64_t ai[] = " +
             array_literal(attrs.ints, [](std::int64_t v) { return std::to_string(v) + "LL"; }) + ";");
    ints = "ai";
  }
  if (!attrs.floats.empty()) {
    out.line("static const double af[] = " + array_literal(attrs.floats, double_literal) + ";");
    floats = "af";
  }
  if (!attrs.strings.empty()) {
    out.line("static const char* const as[] = " + array_literal(attrs.strings, c_string_literal) + ";");
    strings = "as";
  }
  std::string outs;
  for (std::size_t i = 0; i < sym.outputs.size(); ++i) outs += (i ? ", " : "") + ctx.buffer(sym.outputs[i]);
  out.line("const thunderc_buffer out[] = {" + outs + "};");
  out.line("if (thunderc_aten_call(" + c_string_literal(sym.op->name) + ", in, " + std::to_string(operands.size()) +
           ", " + ints + ", " + std::to_string(attrs.ints.size()) + ", " + floats + ", " +
           std::to_string(attrs.floats.size()) + ", " + strings + ", " + std::to_string(attrs.strings.size()) + ", out, " +
           std::to_string(sym.outputs.size()) + ", call->error, call->error_capacity) != 0)");
  out.line("  " + ctx.on_failure());
  out.dedent();
  out.line("}");
}

}  // namespace thunderc
