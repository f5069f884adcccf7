// `thunderc --list-ops [--json | --markdown]`: the operator catalog (core/frontend/op_coverage.h): each operator
// with its category, the executors that implement it and the ATen operators the frontends import as it, the ATen
// operators imported without an operator of their own, and the coverage counts. --json: an array with one
// object per operator; --markdown: the page docs/ops.md is generated from.
#pragma once

#include <string>

namespace thunderc {

enum class ListOpsFormat { Text, Json, Markdown };

std::string list_ops_text(ListOpsFormat format);

}  // namespace thunderc
