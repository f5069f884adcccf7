// libthunderc_aten_shim: runs one catalog operator with ATen on caller-owned contiguous buffers.
// Inputs are wrapped without copying (from_blob); the result is copied into the output buffer.
#include "thunderc/aten_shim.h"
#include "thunderc/philox.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ScalarOps.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "core/ir/attr_codec.h"
#include "core/ir/error.h"

namespace thunderc {
namespace {

c10::ScalarType to_torch(std::int32_t code) {
  static const c10::ScalarType table[kNumDTypes] = {
      c10::kBool, c10::kByte, c10::kChar, c10::kShort, c10::kInt, c10::kLong, c10::kHalf, c10::kBFloat16,
      c10::kFloat, c10::kDouble, c10::kComplexFloat, c10::kComplexDouble};
  if (code < 0 || code >= kNumDTypes) internal_error("dtype code ", code, " out of range");
  return table[code];
}

at::Tensor wrap(const thunderc_buffer& b) {
  return at::from_blob(b.data, at::IntArrayRef(b.shape, static_cast<std::size_t>(b.rank)),
                       at::TensorOptions().dtype(to_torch(b.dtype)));
}

// One operand as ATen sees it: a tensor, a Python number (a wrapped-number tensor, so type promotion
// matches PyTorch's), or None (undefined).
at::Tensor operand(const thunderc_operand& o) {
  switch (o.kind) {
    case THUNDERC_OPERAND_NONE: return {};
    case THUNDERC_OPERAND_TENSOR: return wrap(*o.tensor);
    default: break;
  }
  at::Scalar s = o.kind == THUNDERC_OPERAND_INT ? at::Scalar(o.i)
                 : o.kind == THUNDERC_OPERAND_BOOL ? at::Scalar(o.i != 0)
                                                   : at::Scalar(o.f);
  at::Tensor t = c10::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

c10::optional<at::Tensor> opt(const at::Tensor& t) { return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt; }
c10::optional<c10::ScalarType> opt_dtype(const Attrs& a, const std::string& name) {
  auto d = a.get_optional_dtype(name);
  return d ? c10::optional<c10::ScalarType>(to_torch(static_cast<std::int32_t>(*d))) : c10::nullopt;
}
c10::optional<std::int64_t> opt_int(const Attrs& a, const std::string& name) {
  auto v = a.get_optional_int(name);
  return v ? c10::optional<std::int64_t>(*v) : c10::nullopt;
}
c10::optional<at::Scalar> opt_scalar(const Attrs& a, const std::string& name) {
  return a.is_none(name) ? c10::nullopt : c10::optional<at::Scalar>(a.get_float(name));
}

using Args = std::vector<at::Tensor>;
using OpFn = std::function<at::Tensor(const Args&, const Attrs&)>;

// The index list of index / index_put: operands first.. at the positions `dims`, None (a whole dim) between.
c10::List<c10::optional<at::Tensor>> index_list(const Args& x, std::size_t first, const IntList& dims) {
  c10::List<c10::optional<at::Tensor>> list;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    while (static_cast<std::int64_t>(list.size()) < dims[i]) list.push_back(c10::nullopt);
    list.push_back(x[first + i].to(at::kLong));  // LibTorch before 2.0 refuses int32 indices; PyTorch 2 takes them
  }
  return list;
}

// softmax(q k^T * scale + mask) v, written out so it works with every LibTorch version.
at::Tensor attention(const Args& x, const Attrs& a) {
  const at::Tensor &q = x[0], &k = x[1], &v = x[2], &mask = x[3];
  double scale = a.is_none("scale") ? 1.0 / std::sqrt(static_cast<double>(q.size(-1))) : a.get_float("scale");
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (a.get_bool("is_causal")) {
    at::Tensor keep = at::ones({q.size(-2), k.size(-2)}, at::TensorOptions().dtype(at::kBool)).tril();
    s = s.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (mask.defined())
    s = mask.scalar_type() == at::kBool ? s.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity()) : s + mask;
  return at::matmul(at::softmax(s, -1), v);
}

const std::unordered_map<std::string, OpFn>& ops() {
  static const std::unordered_map<std::string, OpFn> table = [] {
    std::unordered_map<std::string, OpFn> t;
    using A = const Args&;
    using T = const Attrs&;
    // Elementwise.
    t["relu"] = [](A x, T) { return at::relu(x[0]); };
    t["neg"] = [](A x, T) { return at::neg(x[0]); };
    t["abs"] = [](A x, T) { return at::abs(x[0]); };
    t["exp"] = [](A x, T) { return at::exp(x[0]); };
    t["log"] = [](A x, T) { return at::log(x[0]); };
    t["sqrt"] = [](A x, T) { return at::sqrt(x[0]); };
    t["rsqrt"] = [](A x, T) { return at::rsqrt(x[0]); };
    t["reciprocal"] = [](A x, T) { return at::reciprocal(x[0]); };
    t["sin"] = [](A x, T) { return at::sin(x[0]); };
    t["cos"] = [](A x, T) { return at::cos(x[0]); };
    t["erf"] = [](A x, T) { return at::erf(x[0]); };
    t["sigmoid"] = [](A x, T) { return at::sigmoid(x[0]); };
    t["tanh"] = [](A x, T) { return at::tanh(x[0]); };
    t["gelu"] = [](A x, T a) { return at::gelu(x[0], a.get_string("approximate")); };
    t["silu"] = [](A x, T) { return at::silu(x[0]); };
    t["hardswish"] = [](A x, T) { return at::hardswish(x[0]); };
    t["hardsigmoid"] = [](A x, T) { return at::hardsigmoid(x[0]); };
    t["hardtanh"] = [](A x, T a) { return at::hardtanh(x[0], a.get_float("min_val"), a.get_float("max_val")); };
    t["leaky_relu"] = [](A x, T a) { return at::leaky_relu(x[0], a.get_float("negative_slope")); };
    t["clamp"] = [](A x, T a) { return at::clamp(x[0], opt_scalar(a, "min"), opt_scalar(a, "max")); };
    t["logical_not"] = [](A x, T) { return at::logical_not(x[0]); };
    t["tan"] = [](A x, T) { return at::tan(x[0]); };
    t["asin"] = [](A x, T) { return at::asin(x[0]); };
    t["acos"] = [](A x, T) { return at::acos(x[0]); };
    t["atan"] = [](A x, T) { return at::atan(x[0]); };
    t["sinh"] = [](A x, T) { return at::sinh(x[0]); };
    t["cosh"] = [](A x, T) { return at::cosh(x[0]); };
    t["asinh"] = [](A x, T) { return at::asinh(x[0]); };
    t["acosh"] = [](A x, T) { return at::acosh(x[0]); };
    t["atanh"] = [](A x, T) { return at::atanh(x[0]); };
    t["expm1"] = [](A x, T) { return at::expm1(x[0]); };
    t["log1p"] = [](A x, T) { return at::log1p(x[0]); };
    t["log2"] = [](A x, T) { return at::log2(x[0]); };
    t["log10"] = [](A x, T) { return at::log10(x[0]); };
    t["ceil"] = [](A x, T) { return at::ceil(x[0]); };
    t["floor"] = [](A x, T) { return at::floor(x[0]); };
    t["trunc"] = [](A x, T) { return at::trunc(x[0]); };
    t["round"] = [](A x, T) { return at::round(x[0]); };
    t["sign"] = [](A x, T) { return at::sign(x[0]); };
    t["isnan"] = [](A x, T) { return at::isnan(x[0]); };
    t["isinf"] = [](A x, T) { return at::isinf(x[0]); };
    t["bitwise_not"] = [](A x, T) { return at::bitwise_not(x[0]); };
    t["elu"] = [](A x, T a) {
      return at::elu(x[0], a.get_float("alpha"), a.get_float("scale"), a.get_float("input_scale"));
    };
    t["to_dtype"] = [](A x, T a) { return x[0].to(to_torch(static_cast<std::int32_t>(a.get_dtype("dtype")))); };
    t["add"] = [](A x, T) { return at::add(x[0], x[1]); };
    t["sub"] = [](A x, T) { return at::sub(x[0], x[1]); };
    t["mul"] = [](A x, T) { return at::mul(x[0], x[1]); };
    t["div"] = [](A x, T a) {
      if (a.is_none("rounding_mode")) return at::div(x[0], x[1]);
      return at::div(x[0], x[1], c10::string_view(a.get_string("rounding_mode")));
    };
    t["pow"] = [](A x, T) { return at::pow(x[0], x[1]); };
    t["maximum"] = [](A x, T) { return at::maximum(x[0], x[1]); };
    t["minimum"] = [](A x, T) { return at::minimum(x[0], x[1]); };
    t["eq"] = [](A x, T) { return at::eq(x[0], x[1]); };
    t["ne"] = [](A x, T) { return at::ne(x[0], x[1]); };
    t["lt"] = [](A x, T) { return at::lt(x[0], x[1]); };
    t["le"] = [](A x, T) { return at::le(x[0], x[1]); };
    t["gt"] = [](A x, T) { return at::gt(x[0], x[1]); };
    t["ge"] = [](A x, T) { return at::ge(x[0], x[1]); };
    t["logical_and"] = [](A x, T) { return at::logical_and(x[0], x[1]); };
    t["logical_or"] = [](A x, T) { return at::logical_or(x[0], x[1]); };
    t["logical_xor"] = [](A x, T) { return at::logical_xor(x[0], x[1]); };
    t["bitwise_and"] = [](A x, T) { return at::bitwise_and(x[0], x[1]); };
    t["bitwise_or"] = [](A x, T) { return at::bitwise_or(x[0], x[1]); };
    t["bitwise_xor"] = [](A x, T) { return at::bitwise_xor(x[0], x[1]); };
    t["atan2"] = [](A x, T) { return at::atan2(x[0], x[1]); };
    t["hypot"] = [](A x, T) { return at::hypot(x[0], x[1]); };
    t["fft_r2c"] = [](A x, T a) {
      return at::_fft_r2c(x[0], a.get_ints("dim"), a.get_int("normalization"), a.get_bool("onesided"));
    };
    // ATen's c2r may overwrite its input (pocketfft works in place): it gets a copy, not our buffer.
    t["fft_c2r"] = [](A x, T a) {
      return at::_fft_c2r(x[0].clone(), a.get_ints("dim"), a.get_int("normalization"), a.get_int("last_dim_size"));
    };
    t["fft_c2c"] = [](A x, T a) {
      return at::_fft_c2c(x[0], a.get_ints("dim"), a.get_int("normalization"), a.get_bool("forward"));
    };
    t["view_as_real"] = [](A x, T) { return at::view_as_real(x[0]); };
    t["view_as_complex"] = [](A x, T) { return at::view_as_complex(x[0]); };
    t["fmod"] = [](A x, T) { return at::fmod(x[0], x[1]); };
    t["remainder"] = [](A x, T) { return at::remainder(x[0], x[1]); };
    t["where"] = [](A x, T) { return at::where(x[0], x[1], x[2]); };
    t["masked_fill"] = [](A x, T) { return at::masked_fill(x[0], x[1], x[2]); };
    // Reductions and normalizations.
    t["sum"] = [](A x, T a) { return at::sum(x[0], a.get_ints("dims"), a.get_bool("keepdim"), opt_dtype(a, "dtype")); };
    t["mean"] = [](A x, T a) { return at::mean(x[0], a.get_ints("dims"), a.get_bool("keepdim"), opt_dtype(a, "dtype")); };
    t["amax"] = [](A x, T a) { return at::amax(x[0], a.get_ints("dims"), a.get_bool("keepdim")); };
    t["amin"] = [](A x, T a) { return at::amin(x[0], a.get_ints("dims"), a.get_bool("keepdim")); };
    // any/all over a list of dims, one dim at a time from the last (LibTorch before 2.2 takes a single dim).
    for (const char* name : {"any", "all"}) {
      const bool is_any = std::string(name) == "any";
      t[name] = [is_any](A x, T a) {
        std::vector<std::int64_t> dims = a.get_ints("dims");
        const bool keepdim = a.get_bool("keepdim");
        if (dims.empty())
          for (std::int64_t d = 0; d < x[0].dim(); ++d) dims.push_back(d);
        for (auto& d : dims) d = d < 0 ? d + x[0].dim() : d;
        std::sort(dims.rbegin(), dims.rend());
        at::Tensor r = x[0];
        if (dims.empty()) r = r.ne(0);  // a 0-dim tensor: its own truth value
        for (std::int64_t d : dims) r = is_any ? at::any(r, d, keepdim) : at::all(r, d, keepdim);
        return x[0].scalar_type() == at::kByte ? r.to(at::kByte) : r.to(at::kBool);
      };
    }
    // var: two passes, as the decomposition; correction may be any number (LibTorch 1.13 takes an integer).
    t["var"] = [](A x, T a) {
      std::vector<std::int64_t> dims = a.get_ints("dims");
      double count = 1;
      if (dims.empty()) count = static_cast<double>(x[0].numel());
      for (std::int64_t d : dims) count *= static_cast<double>(x[0].size(d));
      at::Tensor mu = at::mean(x[0], dims, true);
      at::Tensor ss = at::sum((x[0] - mu) * (x[0] - mu), dims, a.get_bool("keepdim"));
      return ss / std::max(0.0, count - a.get_float("correction"));
    };
    t["softmax"] = [](A x, T a) { return at::softmax(x[0], a.get_int("dim"), opt_dtype(a, "dtype")); };
    t["log_softmax"] = [](A x, T a) { return at::log_softmax(x[0], a.get_int("dim"), opt_dtype(a, "dtype")); };
    t["layer_norm"] = [](A x, T a) {
      return at::layer_norm(x[0], a.get_ints("normalized_shape"), opt(x[1]), opt(x[2]), a.get_float("eps"));
    };
    // Composed from ATen ops: LibTorch before 2.4 has no at::rms_norm. Half types compute in float32, as
    // at::rms_norm does.
    t["rms_norm"] = [](A x, T a) {
      at::Tensor in = x[0].is_floating_point() && x[0].element_size() < 4 ? x[0].to(at::kFloat) : x[0];
      std::vector<std::int64_t> dims;
      const auto k = static_cast<std::int64_t>(a.get_ints("normalized_shape").size());
      for (std::int64_t d = in.dim() - k; d < in.dim(); ++d) dims.push_back(d);
      at::Tensor y = in * at::rsqrt(at::mean(in * in, dims, true) + a.get_float("eps"));
      y = y.to(x[0].scalar_type());
      return x[1].defined() ? y * x[1] : y;
    };
    t["batch_norm"] = [](A x, T a) {
      return at::batch_norm(x[0], opt(x[1]), opt(x[2]), opt(x[3]), opt(x[4]), false, 0.0, a.get_float("eps"), false);
    };
    // Shape.
    t["reshape"] = [](A x, T a) { return x[0].reshape(a.get_ints("shape")); };
    t["permute"] = [](A x, T a) { return x[0].permute(a.get_ints("dims")); };
    t["expand"] = [](A x, T a) { return x[0].expand(a.get_ints("shape")); };
    t["slice"] = [](A x, T a) {
      return x[0].slice(a.get_int("dim"), a.get_int("start"), a.get_int("end"), a.get_int("step"));
    };
    t["select"] = [](A x, T a) { return x[0].select(a.get_int("dim"), a.get_int("index")); };
    t["cat"] = [](A x, T a) { return at::cat(x, a.get_int("dim")); };
    t["flip"] = [](A x, T a) { return at::flip(x[0], a.get_ints("dims")); };
    t["repeat"] = [](A x, T a) { return x[0].repeat(a.get_ints("repeats")); };
    t["constant_pad_nd"] = [](A x, T a) { return at::constant_pad_nd(x[0], a.get_ints("pad"), a.get_float("value")); };
    t["pad"] = [](A x, T a) {
      const std::vector<std::int64_t> pad = a.get_ints("pad");
      const bool reflect = a.get_string("mode") == "reflect";
      switch (pad.size()) {
        case 2: return reflect ? at::reflection_pad1d(x[0], pad) : at::replication_pad1d(x[0], pad);
        case 4: return reflect ? at::reflection_pad2d(x[0], pad) : at::replication_pad2d(x[0], pad);
        default: return reflect ? at::reflection_pad3d(x[0], pad) : at::replication_pad3d(x[0], pad);
      }
    };
    t["upsample_nearest2d"] = [](A x, T a) {
      auto scale = [&](const char* name) {
        return a.is_none(name) ? c10::optional<double>() : c10::optional<double>(a.get_float(name));
      };
      return at::upsample_nearest2d(x[0], a.get_ints("output_size"), scale("scale_h"), scale("scale_w"));
    };
    t["group_norm"] = [](A x, T a) {
      return at::group_norm(x[0], a.get_int("num_groups"), opt(x[1]), opt(x[2]), a.get_float("eps"));
    };
    t["slice_scatter"] = [](A x, T a) {
      return at::slice_scatter(x[0], x[1].to(x[0].scalar_type()), a.get_int("dim"), a.get_int("start"), a.get_int("end"),
                               a.get_int("step"));
    };
    t["select_scatter"] = [](A x, T a) {
      return at::select_scatter(x[0], x[1].to(x[0].scalar_type()), a.get_int("dim"), a.get_int("index"));
    };
    // Matrix products, convolution, pooling, embedding, attention.
    t["linear"] = [](A x, T) { return at::linear(x[0], x[1], opt(x[2])); };
    t["matmul"] = [](A x, T) { return at::matmul(x[0], x[1]); };
    t["bmm"] = [](A x, T) { return at::bmm(x[0], x[1]); };
    t["addmm"] = [](A x, T a) { return at::addmm(x[0], x[1], x[2], a.get_float("beta"), a.get_float("alpha")); };
    t["conv2d"] = [](A x, T a) {
      return at::conv2d(x[0], x[1], opt(x[2]), a.get_ints("stride"), a.get_ints("padding"), a.get_ints("dilation"),
                        a.get_int("groups"));
    };
    t["max_pool2d"] = [](A x, T a) {
      return at::max_pool2d(x[0], a.get_ints("kernel_size"), a.get_ints("stride"), a.get_ints("padding"),
                            a.get_ints("dilation"), a.get_bool("ceil_mode"));
    };
    t["avg_pool2d"] = [](A x, T a) {
      return at::avg_pool2d(x[0], a.get_ints("kernel_size"), a.get_ints("stride"), a.get_ints("padding"),
                            a.get_bool("ceil_mode"), a.get_bool("count_include_pad"), opt_int(a, "divisor_override"));
    };
    t["adaptive_avg_pool2d"] = [](A x, T a) { return at::adaptive_avg_pool2d(x[0], a.get_ints("output_size")); };
    t["im2col"] = [](A x, T a) {
      return at::im2col(x[0], a.get_ints("kernel_size"), a.get_ints("dilation"), a.get_ints("padding"), a.get_ints("stride"));
    };
    t["col2im"] = [](A x, T a) {
      return at::col2im(x[0], a.get_ints("output_size"), a.get_ints("kernel_size"), a.get_ints("dilation"),
                        a.get_ints("padding"), a.get_ints("stride"));
    };
    // conv2d's gradients: ATen's convolution_backward, which reads only the shape of the tensor it does not
    // differentiate through (given as zeros of that shape).
    auto conv_backward = [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& w, T a, bool input) {
      const std::array<bool, 3> mask = {input, !input, false};
      auto grads = at::convolution_backward(g, x, w, c10::nullopt, a.get_ints("stride"), a.get_ints("padding"),
                                            a.get_ints("dilation"), false, {0, 0}, a.get_int("groups"), mask);
      return input ? std::get<0>(grads) : std::get<1>(grads);
    };
    t["conv2d_backward_input"] = [conv_backward](A x, T a) {
      return conv_backward(x[0], at::zeros(a.get_ints("input_size"), x[1].options()), x[1], a, true);
    };
    t["conv2d_backward_weight"] = [conv_backward](A x, T a) {
      return conv_backward(x[0], x[1], at::zeros(a.get_ints("weight_size"), x[1].options()), a, false);
    };
    // Dropout's mask (--module-mode train): the same Philox draws as the cpp executor's (thunderc/philox.h).
    t["dropout_mask"] = [](A x, T a) {
      if (!x[0].defined()) internal_error("dropout_mask without an rng (autodiff gives every mask one)");
      const IntList& shape = a.get_ints("shape");
      at::Tensor rng = x[0].to(at::kLong).contiguous();
      at::Tensor mask = at::empty(shape, at::TensorOptions().dtype(at::kDouble));
      const std::int64_t* state = rng.data_ptr<std::int64_t>();
      thunderc_dropout_mask(mask.data_ptr<double>(), 0, mask.numel(), static_cast<std::uint64_t>(state[0]),
                            static_cast<std::uint64_t>(state[1]) + static_cast<std::uint64_t>(a.get_int("block")),
                            1.0 - a.get_float("p"));
      return mask.to(to_torch(static_cast<std::int32_t>(a.get_dtype("dtype"))));
    };
    // max_pool2d's gradient: ATen's indices of the input, then its backward kernel.
    t["max_pool2d_backward"] = [](A x, T a) {
      const IntList &k = a.get_ints("kernel_size"), &s = a.get_ints("stride"), &p = a.get_ints("padding"),
                    &d = a.get_ints("dilation");
      const bool ceil = a.get_bool("ceil_mode");
      const at::Tensor indices = std::get<1>(at::max_pool2d_with_indices(x[1], k, s, p, d, ceil));
      return at::max_pool2d_with_indices_backward(x[0], x[1], k, s, p, d, ceil, indices);
    };
    // Channels-last forms (the channels-last pass): [N, H, W, C] in and out, the NCHW operator between.
    for (const char* name : {"conv2d", "max_pool2d", "avg_pool2d"}) {
      auto nchw_op = t.at(name);
      t[std::string(name) + "_nhwc"] = [nchw_op](A x, T a) {
        std::vector<at::Tensor> args(x.begin(), x.end());
        args[0] = args[0].permute({0, 3, 1, 2});
        return nchw_op(args, a).permute({0, 2, 3, 1}).contiguous();
      };
    }
    // The gradients' channels-last forms (a training backward's channels-last pass): the leading `nhwc` operands
    // [N, H, W, C]; the result too, but for the weight's gradient (OIHW).
    struct Grad {
      const char* name;
      std::size_t nhwc;
      bool nhwc_result;
    };
    for (const Grad& g : {Grad{"conv2d_backward_input", 1, true}, Grad{"conv2d_backward_weight", 2, false},
                          Grad{"max_pool2d_backward", 2, true}}) {
      auto nchw_op = t.at(g.name);
      t[std::string(g.name) + "_nhwc"] = [nchw_op, g](A x, T a) {
        std::vector<at::Tensor> args(x.begin(), x.end());
        for (std::size_t i = 0; i < g.nhwc; ++i) args[i] = args[i].permute({0, 3, 1, 2});
        at::Tensor r = nchw_op(args, a);
        return g.nhwc_result ? r.permute({0, 2, 3, 1}).contiguous() : r;
      };
    }
    t["index_select"] = [](A x, T a) { return at::index_select(x[0], a.get_int("dim"), x[1]); };
    t["gather"] = [](A x, T a) { return at::gather(x[0], a.get_int("dim"), x[1]); };
    t["argmax"] = [](A x, T a) {
      return at::argmax(x[0], a.is_none("dim") ? c10::optional<int64_t>() : c10::optional<int64_t>(a.get_int("dim")),
                        a.get_bool("keepdim"));
    };
    t["argmin"] = [](A x, T a) {
      return at::argmin(x[0], a.is_none("dim") ? c10::optional<int64_t>() : c10::optional<int64_t>(a.get_int("dim")),
                        a.get_bool("keepdim"));
    };
    t["cumsum"] = [](A x, T a) { return at::cumsum(x[0], a.get_int("dim"), opt_dtype(a, "dtype")); };
    t["embedding"] = [](A x, T) { return at::embedding(x[0], x[1]); };
    t["prod"] = [](A x, T a) {
      if (a.is_none("dim")) {
        at::Tensor p = at::prod(x[0], opt_dtype(a, "dtype"));
        return a.get_bool("keepdim") ? p.reshape(std::vector<int64_t>(static_cast<std::size_t>(x[0].dim()), 1)) : p;
      }
      return at::prod(x[0], a.get_int("dim"), a.get_bool("keepdim"), opt_dtype(a, "dtype"));
    };
    t["diagonal"] = [](A x, T a) {
      return at::diagonal(x[0], a.get_int("offset"), a.get_int("dim1"), a.get_int("dim2")).contiguous();
    };
    t["scatter"] = [](A x, T a) {
      if (x[2].unsafeGetTensorImpl()->is_wrapped_number())
        return at::scatter(x[0], a.get_int("dim"), x[1], x[2].item());
      return at::scatter(x[0], a.get_int("dim"), x[1], x[2]);
    };
    t["scatter_reduce"] = [](A x, T a) {
      return at::scatter_reduce(x[0], a.get_int("dim"), x[1], x[2], a.get_string("reduce"), a.get_bool("include_self"));
    };
    t["masked_scatter"] = [](A x, T) { return at::masked_scatter(x[0], x[1], x[2]); };
    t["index"] = [](A x, T a) { return at::index(x[0], index_list(x, 1, a.get_ints("dims"))); };
    t["index_put"] = [](A x, T a) {
      return at::index_put(x[0], index_list(x, 2, a.get_ints("dims")), x[1], a.get_bool("accumulate"));
    };
    t["max_pool3d"] = [](A x, T a) {
      return at::max_pool3d(x[0], a.get_ints("kernel_size"), a.get_ints("stride"), a.get_ints("padding"),
                            a.get_ints("dilation"), a.get_bool("ceil_mode"));
    };
    t["avg_pool3d"] = [](A x, T a) {
      return at::avg_pool3d(x[0], a.get_ints("kernel_size"), a.get_ints("stride"), a.get_ints("padding"),
                            a.get_bool("ceil_mode"), a.get_bool("count_include_pad"), opt_int(a, "divisor_override"));
    };
    t["adaptive_avg_pool3d"] = [](A x, T a) {
      IntList size = a.get_ints("output_size");
      if (size.size() == 1) size = {size[0], size[0], size[0]};  // ATen's operator takes three sizes
      return at::adaptive_avg_pool3d(x[0], size);
    };
    t["grid_sampler_2d"] = [](A x, T a) {
      return at::grid_sampler_2d(x[0], x[1], a.get_int("interpolation_mode"), a.get_int("padding_mode"), a.get_bool("align_corners"));
    };
    t["embedding_bag"] = [](A x, T a) {
      const int64_t padding = a.is_none("padding_idx") ? -1 : a.get_int("padding_idx");
      at::Tensor offsets = x[2], indices = x[1], weights = x[3];
      if (!offsets.defined()) {  // 2-D indices: each row a bag
        offsets = at::arange(0, indices.numel(), std::max<int64_t>(indices.size(1), 1), indices.options());
        if (indices.size(1) == 0) offsets = at::zeros({indices.size(0)}, indices.options());
        indices = indices.reshape({-1});
        if (weights.defined()) weights = weights.reshape({-1});
      }
      return std::get<0>(at::_embedding_bag(x[0], indices, offsets, false, a.get_int("mode"), false, opt(weights),
                                            a.get_bool("include_last_offset"), padding));
    };
    t["upsample_bilinear2d"] = [](A x, T a) {
      auto scale = [&](const char* name) {
        return a.is_none(name) ? c10::optional<double>() : c10::optional<double>(a.get_float(name));
      };
      return at::upsample_bilinear2d(x[0], a.get_ints("output_size"), a.get_bool("align_corners"), scale("scale_h"),
                                     scale("scale_w"));
    };
    t["scaled_dot_product_attention"] = attention;
    return t;
  }();
  return table;
}

// Operators with more than one result.
using MultiOpFn = std::function<std::vector<at::Tensor>(const Args&, const Attrs&)>;
const std::unordered_map<std::string, MultiOpFn>& multi_ops() {
  static const std::unordered_map<std::string, MultiOpFn> table = [] {
    using A = const Args&;
    using T = const Attrs&;
    std::unordered_map<std::string, MultiOpFn> t;
    t["sort"] = [](A x, T a) -> std::vector<at::Tensor> {
      auto [values, indices] = at::sort(x[0], a.get_bool("stable"), a.get_int("dim"), a.get_bool("descending"));
      return {values, indices};
    };
    t["topk"] = [](A x, T a) -> std::vector<at::Tensor> {
      auto [values, indices] = at::topk(x[0], a.get_int("k"), a.get_int("dim"), a.get_bool("largest"), a.get_bool("sorted"));
      return {values, indices};
    };
    return t;
  }();
  return table;
}

void write_error(char* error, std::size_t capacity, const std::string& msg) {
  if (!error || capacity == 0) return;
  std::size_t n = std::min(msg.size(), capacity - 1);
  std::memcpy(error, msg.data(), n);
  error[n] = '\0';
}

}  // namespace
}  // namespace thunderc

extern "C" {

uint32_t thunderc_aten_shim_version(void) { return THUNDERC_ATEN_SHIM_VERSION; }

// ATen's OpenMP backend keeps the intra-op thread count in the calling thread's OpenMP ICV
// (at::set_num_threads -> omp_set_num_threads), so the count is remembered per calling thread: two models
// called concurrently from different threads with different counts each keep their own, and a thread whose
// count is already right pays nothing. (A process-wide cache would skip the call on a thread whose ICV was
// never set, and leave it on the default.)
void thunderc_aten_set_num_threads(int32_t n) {
  static thread_local int32_t current = 0;
  if (n > 0 && current != n) {
    at::set_num_threads(n);
    current = n;
  }
}

int32_t thunderc_aten_call(const char* op_name, const thunderc_operand* inputs, int32_t num_inputs,
                           const int64_t* attr_ints, int32_t num_attr_ints, const double* attr_floats,
                           int32_t num_attr_floats, const char* const* attr_strings, int32_t num_attr_strings,
                           const thunderc_buffer* outputs, int32_t num_outputs, char* error, size_t error_capacity) {
  using namespace thunderc;
  try {
    c10::InferenceMode guard;
    const OpDef* def = op_registry().find(op_name);
    auto single = ops().find(op_name);
    auto multi = multi_ops().find(op_name);
    if (!def || (single == ops().end() && multi == multi_ops().end()))
      internal_error("the ATen shim has no implementation of '", op_name, "'");
    Attrs attrs = decode_attrs(*def, attr_ints, static_cast<std::size_t>(num_attr_ints), attr_floats,
                               static_cast<std::size_t>(num_attr_floats), attr_strings,
                               static_cast<std::size_t>(num_attr_strings));
    Args args;
    args.reserve(static_cast<std::size_t>(num_inputs));
    for (int32_t i = 0; i < num_inputs; ++i) args.push_back(operand(inputs[i]));
    const std::vector<at::Tensor> results =
        single != ops().end() ? std::vector<at::Tensor>{single->second(args, attrs)} : multi->second(args, attrs);
    if (static_cast<std::size_t>(num_outputs) != results.size())
      internal_error(op_name, ": ATen computed ", results.size(), " results for ", num_outputs, " output buffers");
    for (std::size_t i = 0; i < results.size(); ++i) {
      at::Tensor out = wrap(outputs[i]);
      if (!results[i].sizes().equals(out.sizes()) || results[i].scalar_type() != out.scalar_type())
        internal_error(op_name, ": ATen computed ", results[i].toString(), results[i].sizes(), " as result ", i,
                       ", thunderc planned ", out.toString(), out.sizes());
      out.copy_(results[i]);
    }
    return 0;
  } catch (const c10::Error& e) {
    write_error(error, error_capacity, std::string("torch executor: ") + op_name + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    write_error(error, error_capacity, std::string("torch executor: ") + op_name + ": " + e.what());
  }
  return 1;
}

}  // extern "C"
