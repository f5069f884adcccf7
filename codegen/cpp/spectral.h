// The cpp executor's complex operators: fft_r2c, fft_c2r and fft_c2c as calls into thunderc/fft.h (computed in
// double whatever the precision, lines of each transformed dim in parallel), and view_as_real /
// view_as_complex as copies of the interleaved pairs (the buffers are distinct; the bytes are the same).
// What the checker (cpu_spectral, core/executors/cpp_support.cpp) accepts is what this handles.
#pragma once

#include "codegen/backend.h"

namespace thunderc {

void emit_cpp_spectral(const EmitContext& ctx, const BoundSymbol& sym, SourceWriter& out);

}  // namespace thunderc
