// channels-last: runs the convolutions that onednn claims, and the operations between them, on channels-last
// ([N, H, W, C]) tensors, so that activations cross from one convolution to the next without a layout change.
//
// Why: oneDNN's fastest float32 convolutions on AVX-512 read and write NHWC. Fed PyTorch's NCHW, every call
// reorders its input and its output (two passes over the activations per convolution: on MobileNetV2 more time
// than the convolutions themselves). Elementwise operations do not care about the layout, and pooling over
// NHWC vectorizes along the channels, so a chain conv -> relu -> pool -> conv -> add -> ... can stay NHWC.
//
// After it runs: every conv2d whose first claimer in the executor order is onednn is a conv2d_nhwc reading
// permute(x, [0, 2, 3, 1]) (or the NHWC value that already holds x) and producing the NHWC form of its output.
// A value computed in NHWC stays NHWC through the symbols that read it and can: elementwise operations with a
// 4-D result (their other operands are permuted, lower-rank ones first reshaped to 4-D; 0-D ones kept),
// max_pool2d and avg_pool2d (as *_nhwc, when an executor other than an always-executor claims that form),
// adaptive_avg_pool2d to 1x1 (as mean over H and W with keepdim), cat along the channels, and sum/mean/amax/amin
// over dims that keep the other dims in order. Every other reader, and the trace's outputs, read
// permute(v_nhwc, [0, 3, 1, 2]), made once per value. Values that are never NHWC keep their ids; the results of
// rewritten symbols are new values. Traces without a conv2d that onednn claims, or with regions, are returned
// unchanged.
#pragma once

#include "core/transforms/transform.h"

namespace thunderc {

Trace channels_last(const Trace& trace, const TransformContext& ctx);

// A training backward whose saved inputs its forward computed in NHWC (TransformContext::nhwc_outputs): the same
// program with inputs k where nhwc_inputs[k] typed [N, H, W, C] and read through permute(., [0, 3, 1, 2]), which
// the backward's channels-last pass folds (so its conv2d gradients and the ops between them read them as they are).
// `trace`: unclaimed, without regions (as autodiff built it).
Trace with_nhwc_inputs(const Trace& trace, const std::vector<bool>& nhwc_inputs);
const Transform& channels_last_transform();

}  // namespace thunderc
