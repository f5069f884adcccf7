// pool-before-conv: average pooling of a 1x1 convolution's output pools the convolution's input instead,
//
//   avg_pool2d(conv2d(x, W, b), k, s)  ->  conv2d(avg_pool2d(x, k, s), W, b)
//
// because a 1x1 convolution mixes channels at each pixel and average pooling mixes pixels within each channel:
// both are linear, so they commute, and a window's average of the bias is the bias. Why: DenseNet's transition
// layers (batch norm, relu, 1x1 convolution, 2x2 average pooling) then convolve a quarter of the pixels, which
// was a tenth of DenseNet-121's time.
//
// Rewritten when the convolution's output is read by the pooling alone and is no output, the convolution is
// 1x1 with stride 1 and no padding (any groups), the pooling leaves fewer pixels than it reads, and the bias
// survives the swap: no bias, or every window divided by the number of its elements it sums (no
// divisor_override, and no zero padding counted in the divisor). The sums run in another order (the window
// sum before the channel sum), so float rounding differs as between two GEMM kernels. A NaN or inf in the
// input makes the same outputs NaN or inf (the argument is in the .cpp); as with any reordered sum, a finite
// intermediate near float's limit can overflow in one order and not the other. Traces with regions are
// returned unchanged.
#pragma once

#include "core/transforms/transform.h"

namespace thunderc {

Trace pool_before_conv(const Trace& trace, const TransformContext& ctx);
const Transform& pool_before_conv_transform();

}  // namespace thunderc
