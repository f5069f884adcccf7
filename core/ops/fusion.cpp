// The region operator. A fusion pass groups symbols that one executor can run as a unit into a bound
// symbol of op "fusion" whose subsymbols are the grouped symbols; the verifier checks regions by walking
// their subsymbols, so this meta function is never asked for output types.
#include "core/ir/error.h"
#include "core/ops/ops.h"

namespace thunderc {

void register_fusion_op(OpRegistry& r) {
  r.add({"fusion", OpCategory::Fusion, {{"inputs", false, false, true}}, {{"name", AttrType::String}},
         [](const MetaArgs&) -> std::vector<TensorType> {
           internal_error("the types of a fusion come from its subsymbols, not from a meta function");
         },
         "a region of symbols run as one unit by the executor that claimed it"});
}

}  // namespace thunderc
