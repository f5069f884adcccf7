// nvfuser's dropout_mask (--module-mode train on CUDA, docs/training.md "Dropout"): the Bernoulli(1 - p) mask
// drawn with Philox4x32-10 exactly as codegen/include/thunderc/philox.h defines it for the CPU, so a CUDA and a
// CPU build draw the same masks from the same (seed, offset). A thread per counter block (four elements). The
// RNG state is a device tensor the runtime fills per call (the backward recomputes the masks from its saved
// copy), read by the kernel at run time, so a CUDA graph replays with each call's state.
#pragma once

#include <string>

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

// The kernel of a dropout_mask symbol; parameters (dst, rng).
cuda::KernelLaunch cuda_dropout_mask_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym);

// The symbol's launch (its kernel registered through ctx).
void emit_cuda_dropout_mask(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
