// What both backends' im2col / col2im code (codegen/cpp/conv_columns.cpp, codegen/nvfuser/cnn_gradients.cpp)
// reads off one symbol: the image [N, C, H, W] (im2col's input, col2im's output), the window and the output
// positions OH x OW of the columns [N, C*kh*kw, OH*OW].
#pragma once

#include "codegen/loops/region_lowering.h"

namespace thunderc::loops {

struct ConvColumnsPlan {
  bool to_columns = true;  // im2col (else col2im)
  DType dtype = DType::Float32;
  Shape image;             // [N, C, H, W]
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  IntList k, d, p, s;      // kernel_size, dilation, padding, stride: two values each (the meta function's rule)
  std::int64_t oh = 0, ow = 0, l = 0, kk = 0;  // output positions, their count, window elements
};

inline ConvColumnsPlan plan_conv_columns(const Trace& t, const BoundSymbol& sym) {
  ConvColumnsPlan c;
  c.to_columns = sym.op->name == "im2col";
  const TensorType& image = t.type(c.to_columns ? sym.inputs[0].value : sym.outputs[0]);
  c.dtype = image.dtype;
  c.image = image.shape;
  c.n = image.shape[0], c.c = image.shape[1], c.h = image.shape[2], c.w = image.shape[3];
  c.k = sym.attrs.get_ints("kernel_size"), c.d = sym.attrs.get_ints("dilation");
  c.p = sym.attrs.get_ints("padding"), c.s = sym.attrs.get_ints("stride");
  c.oh = (c.h + 2 * c.p[0] - c.d[0] * (c.k[0] - 1) - 1) / c.s[0] + 1;
  c.ow = (c.w + 2 * c.p[1] - c.d[1] * (c.k[1] - 1) - 1) / c.s[1] + 1;
  c.l = c.oh * c.ow;
  c.kk = c.k[0] * c.k[1];
  return c;
}

}  // namespace thunderc::loops
