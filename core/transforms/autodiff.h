// `autodiff`: the training form of a model (thunderc --autograd). From the imported trace it builds the joint
// forward+backward trace with the operators' VJP rules (core/ops/vjp.h), then splits it in two programs:
//
//   forward(inputs..., parameters...)            -> (outputs..., saved...)
//   backward(parameters..., saved..., grad_outputs...) -> (gradients...)
//
// `saved` are the forward values the backward reads (parameters excepted: both programs take them, they are
// the runtime's state), chosen by a minimum cut over their bytes: pointwise and data-movement values the backward
// can recompute from other saved ones are recomputed there instead (rematerialization). Gradients are those of the inputs named in `requires_grad`, then of every parameter
// the trace uses, in parameter order. Operators with differentiable inputs but no rule are decomposed first
// when `decompose` has a rule for them (scaled_dot_product_attention, rms_norm, ...); any left is a UserError
// listing them all. With `buffer_names` (--module-mode train), batch norms whose running statistics are those
// buffers normalize with batch statistics and the forward also outputs the buffers' updated values (after the
// saved ones): forward(inputs..., parameters..., buffers...) -> (outputs..., saved..., buffers'...). Dropout masks
// (dropout_mask without an rng, as the importers emit them in training mode) draw from one more forward input
// after the buffers, the RNG state (rng_blocks below). See docs/training.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/ir/trace.h"

namespace thunderc {

struct TrainingTraces {
  Trace forward;
  Trace backward;
  std::size_t num_outputs = 0;  // the model's outputs come first among forward's outputs; saved ones follow
  struct Parameter {
    std::string name;  // the state_dict name
    TensorType type;
    std::shared_ptr<const ConstantData> initial;
    bool trainable = true;  // false: a buffer training mode updates (batch norm's running statistics)
  };
  // Forward's (and backward's) inputs after the model's, in this order: the trainable parameters, then the
  // buffers. Every trainable parameter has a gradient; buffers have none.
  std::vector<Parameter> parameters;
  // Parameters (indices; buffers) whose new values the forward outputs after the saved ones, in this order:
  // the runtime writes them into its state after each training forward.
  std::vector<std::size_t> updates;
  struct Gradient {
    std::string name;  // an input's name, or a parameter's
    bool parameter = false;
  };
  std::vector<Gradient> gradients;  // backward's outputs, in this order
  std::vector<TensorType> saved;    // forward's outputs after the model's
  // Dropout (--module-mode train): the counter blocks of Philox4x32-10 one training forward draws
  // (codegen/include/thunderc/philox.h). When > 0 the forward takes one more input after the parameters,
  // `rng`: int64 [2] = (seed, offset); its masks use blocks offset .. offset + rng_blocks - 1, so the next call's
  // offset is offset + rng_blocks. The backward recomputes the masks from the saved rng.
  std::uint64_t rng_blocks = 0;
  // Bytes the saved tensors would take if everything the backward reads were saved (rematerialization's
  // min-cut saves fewer: docs/training.md).
  std::size_t saved_bytes_without_remat = 0;
};

// `trace`: an imported trace without regions whose trainable parameters are constants named (source_name) as in
// `parameter_names`; `input_names`: the model's inputs in the trace's input order; `requires_grad`: the inputs
// that get gradients too (UserError naming an unknown or non-floating one).
TrainingTraces build_training_traces(const Trace& trace, const std::vector<std::string>& parameter_names,
                                     const std::vector<std::string>& input_names,
                                     const std::vector<std::string>& requires_grad,
                                     const std::vector<std::string>& buffer_names = {});

}  // namespace thunderc
