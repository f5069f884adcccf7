// Helpers for the tests of the passes that feed onednn (channels-last, split-cat-conv): executor lists as a
// TransformContext, a trace's operator names, and convolutions with seeded random constant weights.
#pragma once

#include <string>
#include <vector>

#include "blas_test_util.h"
#include "core/transforms/transform.h"

namespace blastest {

inline TransformContext transform_context(const std::vector<std::string>& executors) {
  TransformContext ctx;
  for (const std::string& e : executors) ctx.executors.push_back(find_executor(e));
  return ctx;
}

inline std::vector<std::string> op_names(const Trace& t) {
  std::vector<std::string> out;
  for (const BoundSymbol& s : t.symbols()) out.push_back(s.op->name);
  return out;
}

// conv2d(x, w, b) with stride 1 and a square kernel; w (and b, unless `bias` is false) random constants.
inline ValueId random_conv(Trace& t, Rng& rng, ValueId x, std::int64_t oc, std::int64_t k, std::int64_t pad,
                           std::int64_t groups = 1, bool bias = true) {
  const std::int64_t c = t.type(x).shape[1];
  ValueId w = random_constant(t, "w" + std::to_string(t.constants().size()), tt({oc, c / groups, k, k}), rng);
  Operand b = Operand::none();
  if (bias) b = Operand::tensor(random_constant(t, "b" + std::to_string(t.constants().size()), tt({oc}), rng));
  return t.emit1(op("conv2d"), {Operand::tensor(x), Operand::tensor(w), b},
                 {{"stride", IntList{1, 1}}, {"padding", IntList{pad, pad}}, {"dilation", IntList{1, 1}}, {"groups", groups}});
}

}  // namespace blastest
