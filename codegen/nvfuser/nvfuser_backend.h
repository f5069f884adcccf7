// Code generation for the `nvfuser` executor: thunderc's own fused CUDA kernels.
//
// A region (op "fusion", core/transforms/fusion.h) or a lone loop symbol is lowered by the same rules as
// on the CPU (codegen/loops/region_lowering.h); each loop nest becomes one kernel:
//  * store / update: one thread per output element, grid-stride loop over the flattened (merged) shape;
//    32-bit index arithmetic unless a buffer or the work needs 64 bits.
//  * reduce: one warp per output element when the reduced extent is at most 1024 (8 rows per 256-thread
//    block), else one 256-thread block per output element; warp shuffles, then shared memory across warps.
//    max propagates NaN as PyTorch does.
//  * pooling: one thread per output element.
// linear, matmul, bmm, addmm and conv2d run the tiled GEMM / implicit-GEMM kernels of codegen/nvfuser/gemm.h,
// with their bias (and addmm's alpha/beta) in the kernel's epilogue.
//
// The variant function (host C++) keeps the buffers' device pointers and launches the kernels in order
// through call->device_api on the call's stream; it links no CUDA library. Kernels are named
// tc_v<variant>_s<symbol>_<what>_k<n>: made from indices and operator names only, never from model text.
// cuda_module_source() puts every kernel of a model in one translation unit behind a small prelude that
// gives device code the std:: math names the shared lowering writes, and appends, under
// THUNDERC_CUDA_EMULATION, host launchers for the emulated mode (tests/cuda_emu/).
#pragma once

#include "codegen/backend.h"

namespace thunderc {

class NvfuserBackend : public Backend {
 public:
  std::string executor() const override { return "nvfuser"; }
  LinkInputs link_inputs() const override { return {}; }
  void emit_symbol(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out) const override;
  std::size_t scratch_bytes(const Trace& trace, const BoundSymbol& sym) const override;
  // Host declarations of the kernels' half-precision element types (the variant functions only pass
  // pointers to them); guarded, so that the library backends may emit it too.
  void emit_module_prelude(SourceWriter& out) const override;
};

// The whole CUDA translation unit of a model: prelude, kernels in index order, emulation launchers.
std::string cuda_module_source(const std::vector<CudaKernel>& kernels);

}  // namespace thunderc
