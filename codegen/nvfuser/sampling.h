// nvfuser's resampling kernels: upsample_bilinear2d and grid_sampler_2d (bilinear, nearest; zeros, border,
// reflection padding), a thread per output element, with the cpp kernel's arithmetic (codegen/cpp/resample.cpp:
// ATen's source-index rules, computed in the opmath type, the half types in float). Kernels of their own
// (run_alone), never in a region.
#pragma once

#include <string>

#include "codegen/backend.h"
#include "codegen/nvfuser/gemm.h"

namespace thunderc {

bool is_cuda_sampling_op(const std::string& name);

// The kernel of an upsample_bilinear2d (parameters: out, x) or grid_sampler_2d (out, x, grid) symbol.
cuda::KernelLaunch cuda_sampling_kernel(const std::string& name, const Trace& t, const BoundSymbol& sym);

// The symbol's launch (its kernel registered through ctx).
void emit_cuda_sampling(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
