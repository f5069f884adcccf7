#include "codegen/cpp/dropout.h"

#include "codegen/cpp/own_code.h"

namespace thunderc {

namespace {

using namespace own_code;

// Elements per parallel iteration: a multiple of 4, so that each chunk starts at a counter block.
constexpr std::int64_t kChunk = 4096;

}  // namespace

bool is_cpp_dropout_op(const std::string& name) { return name == "dropout_mask"; }

void emit_cpp_dropout_mask(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) {
  const Trace& t = ctx.trace();
  THUNDERC_CHECK(sym.inputs[0].is_tensor(), "cpp codegen: dropout_mask without an rng (autodiff gives every mask one)");
  const TensorType& mask = t.type(sym.outputs[0]);
  const std::int64_t n = mask.numel(), block = sym.attrs.get_int("block");
  const double keep = 1.0 - sym.attrs.get_float("p");
  out.comment("dropout_mask: " + mask.str() + ", kept with probability " + loops::lit(keep, DType::Float64) +
              ", counter blocks offset + " + std::to_string(block) + " ..");
  pointer(ctx, out, "rng", sym.inputs[0].value, true);
  pointer(ctx, out, "dst", sym.outputs[0], false);
  out.line("const uint64_t seed = static_cast<uint64_t>(rng[0]);");
  out.line("const uint64_t block = static_cast<uint64_t>(rng[1]) + " + std::to_string(block) + "ULL;");
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  out.line(parallel_for_if(n));
  out.line("for (int64_t q = 0; q < " + S(chunks) + "; ++q) {");
  out.line("  const int64_t first = q * " + S(kChunk) + ";");
  out.line("  const int64_t count = " + S(n) + " - first < " + S(kChunk) + " ? " + S(n) + " - first : " + S(kChunk) + ";");
  out.line("  thunderc_dropout_mask(dst + first, first, count, seed, block, " + loops::lit(keep, DType::Float64) + ");");
  out.line("}");
}

}  // namespace thunderc
