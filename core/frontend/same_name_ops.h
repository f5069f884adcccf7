// ATen operators both frontends import as the catalog operator of the same name, with no attribute: one table
// for torchscript_ops.cpp (aten::<name>, and its in-place aten::<name>_) and pt2_import.cpp
// (torch.ops.aten.<name>.default / .Tensor / .Scalar, and their in-place forms).
#pragma once

namespace thunderc {

// op(self)
inline constexpr const char* kSameNameUnaryOps[] = {
    "relu",  "sigmoid", "tanh",  "exp",   "log",         "sqrt",  "rsqrt", "neg",   "abs",   "erf",
    "reciprocal", "sin", "cos",  "silu",  "hardswish",   "hardsigmoid", "logical_not", "tan", "asin", "acos",
    "atan",  "sinh",    "cosh",  "asinh", "acosh",       "atanh", "expm1", "log1p", "log2",  "log10",
    "ceil",  "floor",   "trunc", "sign",  "bitwise_not"};

// op(self, other): tensors or numbers on either side.
inline constexpr const char* kSameNameBinaryOps[] = {
    "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "atan2", "fmod", "remainder", "hypot"};

}  // namespace thunderc
