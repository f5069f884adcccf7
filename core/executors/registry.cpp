// The seven executors thunderc knows. torch claims every operator of the catalog; the others claim what their
// code generation handles.
//
// Availability means "can compile for this device here": nvfuser needs NVRTC (kernels are compiled when the
// model is compiled), not a GPU; running a CUDA model needs a GPU, which the runtime checks. cublas and cudnn
// need NVRTC too (each library call carries nvfuser's kernel for the same work, run where the library
// cannot), but not the libraries: the runtime dlopens cuBLASLt and cuDNN on the machine that runs the model.
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/executors/cpp_support.h"
#include "core/executors/executor.h"
#include "core/executors/probe.h"

namespace thunderc {

namespace {

struct TorchCudaSupport {
  std::mutex mutex;
  bool has_cuda = false;
  std::string reason = "LibTorch's CUDA support was not reported (LibTorch was not asked)";
};

TorchCudaSupport& torch_cuda_support() {
  static TorchCudaSupport s;
  return s;
}

Availability torch_probe(DeviceKind kind) {
#if !THUNDERC_WITH_LIBTORCH
  return {false, kNoLibTorchReason};
#endif
  if (kind == DeviceKind::CPU) return {true, ""};
  TorchCudaSupport& s = torch_cuda_support();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.has_cuda) return {true, ""};
  return {false, s.reason};
}

bool torch_runs_on(DeviceKind kind) { return torch_probe(kind).available; }

// torch can run a symbol when every tensor it reads or writes is on a device its LibTorch supports.
bool torch_checker(const Trace& trace, const BoundSymbol& sym) {
  for (const Operand& in : sym.inputs)
    if (in.is_tensor() && !torch_runs_on(trace.type(in.value).device.kind)) return false;
  for (ValueId out : sym.outputs)
    if (!torch_runs_on(trace.type(out).device.kind)) return false;
  return true;
}

// Compiling for CUDA needs the libraries the executor's code generation uses, not a GPU: the compiled model
// checks for one when it runs.
Availability cuda_probe(const std::vector<Availability (*)()>& extra, DeviceKind kind) {
  if (kind != DeviceKind::CUDA) return {false, "CUDA only"};
  for (auto fn : extra) {
    Availability a = fn();
    if (!a.available) return a;
  }
  return {true, ""};
}

template <Availability (*Fn)()>
Availability cached() {
  static std::once_flag once;
  static Availability result;
  std::call_once(once, [] { result = Fn(); });
  return result;
}

// The same search as codegen/nvfuser/nvrtc.cpp, which loads it to compile: $THUNDERC_NVRTC_LIBRARY first.
Availability probe_nvrtc() {
  if (const char* env = std::getenv("THUNDERC_NVRTC_LIBRARY"); env && *env) {
    Availability a = probe_library("NVRTC", {env}, "", false, "nvrtcCreateProgram");
    if (a.available) return a;
  }
  return probe_library("NVRTC", {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"},
                       "libnvrtc", true, "nvrtcCreateProgram");
}
Availability probe_cblas() {
  return probe_library("CBLAS", {"libopenblas.so.0", "libcblas.so.3", "libblas.so.3", "libopenblas.so"}, "",
                       false, "cblas_sgemm");
}

// oneDNN is linked by the model .so (the runtime loads it with the model), so compiling for it needs its
// headers at build time (THUNDERC_WITH_ONEDNN) and its library here, where the models are linked.
Availability probe_onednn() {
#if !THUNDERC_WITH_ONEDNN
  return {false, "this thunderc was built without oneDNN's headers (install libdnnl-dev and rebuild)"};
#else
  return probe_library("oneDNN", {"libdnnl.so.2", "libdnnl.so.3", "libdnnl.so"}, "", false, "dnnl_primitive_create");
#endif
}

// onednn (codegen/onednn): float32 CPU operands, none empty, and (constant_weights) every operand after the first
// (weights, bias) a constant: reordered into oneDNN's layout once, when the model first runs.
bool onednn_operands(const Trace& trace, const BoundSymbol& sym, bool constant_weights) {
  for (const Operand& in : sym.inputs) {
    if (!in.is_tensor()) continue;
    const TensorType& t = trace.type(in.value);
    if (t.device.kind != DeviceKind::CPU || t.dtype != DType::Float32 || t.numel() == 0) return false;
  }
  const TensorType& y = trace.type(sym.outputs[0]);
  if (y.dtype != DType::Float32 || y.device.kind != DeviceKind::CPU || y.numel() == 0) return false;
  if (!constant_weights) return true;
  for (std::size_t i = 1; i < sym.inputs.size(); ++i)
    if (sym.inputs[i].is_tensor() && trace.value(sym.inputs[i].value).origin != ValueOrigin::Constant) return false;
  return true;
}

// The multiply-adds of a convolution, or of one of its gradients (the same count): output (or output gradient)
// elements times one filter's size.
double conv_macs(const Trace& trace, const BoundSymbol& sym) {
  const std::string& name = sym.op->name;
  const bool forward = name == "conv2d" || name == "conv2d_nhwc";
  const Shape& y = forward ? trace.type(sym.outputs[0]).shape : trace.type(sym.inputs[0].value).shape;
  const bool weight_grad = name == "conv2d_backward_weight" || name == "conv2d_backward_weight_nhwc";
  const Shape& w = weight_grad ? trace.type(sym.outputs[0]).shape : trace.type(sym.inputs[1].value).shape;
  double macs = 1;
  for (std::int64_t d : y) macs *= static_cast<double>(d);
  for (std::size_t i = 1; i < w.size(); ++i) macs *= static_cast<double>(w[i]);
  return macs;
}

// A training variant's convolutions (weights that are parameters, and the gradients) below this many
// multiply-adds stay with blas and decompose's im2col GEMMs: oneDNN's per-call weight reorders and primitive
// overhead cost more than they save there. Measured on AVX-512 (scripts/bench_training.sh): the cnn sample's
// training step (convolutions of 0.04-0.6 M multiply-adds) took 0.54 ms with oneDNN for all and 0.36 with this
// rule; ResNet-18's (12-120 M) 135 ms with oneDNN and 200 with blas; mobilenet_v2's 62 ms with the rule at 2^21
// and 51 at 2^19 (its depthwise convolutions of 0.5-2 M are faster on oneDNN).
constexpr double kOnednnTrainingMinMacs = 1 << 19;

// onednn conv2d: 4-D input. Weights that are not constants (a training variant's parameters) are reordered by
// every call (Conv2dSpec::weights_vary), for convolutions of at least kOnednnTrainingMinMacs.
bool onednn_conv_checker(const Trace& trace, const BoundSymbol& sym) {
  if (!onednn_operands(trace, sym, false) || trace.type(sym.inputs[0].value).rank() != 4) return false;
  return trace.value(sym.inputs[1].value).origin == ValueOrigin::Constant ||
         conv_macs(trace, sym) >= kOnednnTrainingMinMacs;
}

// onednn conv2d_backward_input / _weight (--autograd's convolution gradients) and their channels-last forms:
// oneDNN's backward primitives, for convolutions of at least kOnednnTrainingMinMacs.
bool onednn_conv_backward_checker(const Trace& trace, const BoundSymbol& sym) {
  return onednn_operands(trace, sym, false) && conv_macs(trace, sym) >= kOnednnTrainingMinMacs;
}

// onednn linear: a [N, K] weight (packed into the panels of oneDNN's GEMM kernel once). Every M: the kernel
// takes M = 1 as a matrix-vector product, and a claim that does not depend on M keeps symbolic variants on one
// executor (docs/onednn.md, "Linear").
bool onednn_linear_checker(const Trace& trace, const BoundSymbol& sym) {
  if (!onednn_operands(trace, sym, true)) return false;
  const TensorType& w = trace.type(sym.inputs[1].value);
  return w.rank() == 2 && trace.type(sym.inputs[0].value).rank() >= 1;
}

// blas (codegen/blas): float32/float64 CPU tensors of one dtype, every extent small enough for CBLAS's int; float16
// and bfloat16 too, widened to float for the float kernels and rounded once (ATen's CPU GEMMs accumulate them in
// float as well).
bool blas_checker(const Trace& trace, const BoundSymbol& sym) {
  std::vector<const TensorType*> types;
  for (const Operand& in : sym.inputs)
    if (in.is_tensor()) types.push_back(&trace.type(in.value));
  for (ValueId out : sym.outputs) types.push_back(&trace.type(out));
  for (const TensorType* t : types) {
    if (t->device.kind != DeviceKind::CPU || t->dtype != types[0]->dtype || t->rank() > 16 ||
        t->numel() > 0x7fffffff)
      return false;
  }
  const DType d = types[0]->dtype;
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

std::vector<std::unique_ptr<Executor>> make_executors() {
  using C = OpCategory;
  std::vector<std::unique_ptr<Executor>> out;

  Executor::Info torch;
  torch.name = "torch";
  torch.description = "ATen operators through LibTorch (runs every operator thunderc knows)";
  torch.devices = {DeviceKind::CPU, DeviceKind::CUDA};
  // Without LibTorch torch is listed (unavailable, saying why) but is no always-executor: every list is standalone.
  torch.always = THUNDERC_WITH_LIBTORCH;
  torch.implemented = true;
  torch.categories = {C::Elementwise, C::Reduction,  C::Normalization, C::Shape,    C::Matmul,
                      C::Convolution, C::Pooling,    C::Indexing,      C::Attention};
  torch.probe = torch_probe;
  torch.cache_probe = false;
  auto t = std::make_unique<Executor>(std::move(torch));
  for (const OpDef* def : op_registry().all()) t->register_impl(def->name, torch_checker);
  out.push_back(std::move(t));

  Executor::Info cpp;
  cpp.name = "cpp";
  cpp.description = "fused C++ loops for elementwise, reduction and normalization regions, attention and embedding";
  cpp.devices = {DeviceKind::CPU};
  cpp.categories = {C::Elementwise, C::Reduction, C::Normalization, C::Shape, C::Pooling, C::Attention};
  cpp.implemented = true;
  auto c = std::make_unique<Executor>(std::move(cpp));
  register_cpp_impls(*c);
  out.push_back(std::move(c));

  Executor::Info blas;
  blas.name = "blas";
  blas.description = "matrix multiplications and convolutions through CBLAS GEMM (OpenBLAS)";
  blas.devices = {DeviceKind::CPU};
  blas.implemented = true;
  blas.categories = {C::Matmul, C::Convolution};
  blas.probe = [](DeviceKind) { return cached<probe_cblas>(); };
  auto b = std::make_unique<Executor>(std::move(blas));
  for (const char* name : {"linear", "matmul", "bmm", "addmm", "conv2d"}) b->register_impl(name, blas_checker);
  out.push_back(std::move(b));

  Executor::Info onednn;
  onednn.name = "onednn";
  onednn.description = "convolutions, their gradients and linear layers through oneDNN (JIT kernels for the running CPU, weights "
                       "prepacked once; bias and residual add fused, activations only in bounded variants: oneDNN's "
                       "turn NaN into numbers)";
  onednn.devices = {DeviceKind::CPU};
  onednn.implemented = true;
  onednn.categories = {C::Convolution, C::Matmul};
  onednn.probe = [](DeviceKind) { return cached<probe_onednn>(); };
  auto dn1 = std::make_unique<Executor>(std::move(onednn));
  dn1->register_impl("conv2d", onednn_conv_checker);
  dn1->register_impl("conv2d_nhwc", onednn_conv_checker);
  dn1->register_impl("linear", onednn_linear_checker);
  dn1->register_impl("conv2d_backward_input", onednn_conv_backward_checker);
  dn1->register_impl("conv2d_backward_weight", onednn_conv_backward_checker);
  dn1->register_impl("conv2d_backward_input_nhwc", onednn_conv_backward_checker);
  dn1->register_impl("conv2d_backward_weight_nhwc", onednn_conv_backward_checker);
  out.push_back(std::move(dn1));

  Executor::Info nvfuser;
  nvfuser.name = "nvfuser";
  nvfuser.description = "fused CUDA kernels generated by thunderc, compiled with NVRTC for each --cuda-arch";
  nvfuser.devices = {DeviceKind::CUDA};
  nvfuser.categories = {C::Elementwise, C::Reduction, C::Normalization, C::Shape, C::Pooling, C::Matmul,
                        C::Convolution};
  nvfuser.implemented = true;
  nvfuser.probe = [](DeviceKind k) -> Availability {
    if (k != DeviceKind::CUDA) return {false, "CUDA only"};
    return cached<probe_nvrtc>();
  };
  auto nv = std::make_unique<Executor>(std::move(nvfuser));
  register_nvfuser_impls(*nv);
  out.push_back(std::move(nv));

  Executor::Info cublas;
  cublas.name = "cublas";
  cublas.description = "matrix multiplications through cuBLASLt (bias, relu, gelu-tanh epilogues), loaded at run time";
  cublas.devices = {DeviceKind::CUDA};
  cublas.categories = {C::Matmul};
  cublas.implemented = true;
  cublas.probe = [](DeviceKind k) { return cuda_probe({&cached<probe_nvrtc>}, k); };
  auto cb = std::make_unique<Executor>(std::move(cublas));
  register_cublas_impls(*cb);
  out.push_back(std::move(cb));

  Executor::Info cudnn;
  cudnn.name = "cudnn";
  cudnn.description = "convolutions (bias, residual add, relu/sigmoid/silu fused) and float16/bfloat16 attention "
                      "(fused flash attention) through cuDNN's graph API, loaded at run time";
  cudnn.devices = {DeviceKind::CUDA};
  cudnn.categories = {C::Convolution, C::Attention};
  cudnn.implemented = true;
  cudnn.probe = [](DeviceKind k) { return cuda_probe({&cached<probe_nvrtc>}, k); };
  auto dn = std::make_unique<Executor>(std::move(cudnn));
  register_cudnn_impls(*dn);
  out.push_back(std::move(dn));

  return out;
}

}  // namespace

const std::vector<const Executor*>& all_executors() {
  static const std::vector<std::unique_ptr<Executor>> owned = make_executors();
  static const std::vector<const Executor*> view = [] {
    std::vector<const Executor*> v;
    for (const auto& e : owned) v.push_back(e.get());
    return v;
  }();
  return view;
}

void set_torch_cuda_support(bool has_cuda, const std::string& reason) {
  TorchCudaSupport& s = torch_cuda_support();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.has_cuda = has_cuda;
  s.reason = has_cuda ? std::string() : reason;
}

}  // namespace thunderc
