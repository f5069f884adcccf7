// nvfuser's GEMM-backed operators (linear, matmul, bmm, addmm, conv2d) as the compiler maps them onto the
// kernels of codegen/nvfuser/gemm.h: layouts, batch strides, bias and alpha/beta epilogues, convolution
// geometry. Each trace runs through the emulated CUDA path against the torch executor on the CPU
// (cpp_test_util.h with THUNDERC_CONFORMANCE_NVFUSER). Tolerance: rtol 1e-4, atol 1e-4 (float32 sums of up
// to a few hundred products, in another order than ATen's).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <iterator>

#include "../cpp/cpp_test_util.h"
#include "codegen/nvfuser/fake_libs.h"
#include "core/transforms/autocast.h"

using namespace cpptest;

namespace {

const Tol kGemm{1e-4, 1e-4};

// How many GEMM kernels of a case compiled by check_against_torch got a fused epilogue.
int fused_epilogues(const std::string& name) {
  std::ifstream in(std::string(THUNDERC_TEST_TMP) + "/" + name + "_nvfuser_src/kernels.cu");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int n = 0;
  for (std::size_t at = text.find("const float gval = out;"); at != std::string::npos; at = text.find("const float gval = out;", at + 1)) ++n;
  return n;
}

ValueId weight(Trace& t, const std::string& name, const Shape& shape, unsigned seed) {
  std::vector<float> w(static_cast<std::size_t>(TensorType{DType::Float32, shape, Device::cpu()}.numel()));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (float& x : w) x = u(gen);
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(w.size() * sizeof(float));
  std::memcpy(data->bytes.data(), w.data(), data->bytes.size());
  return t.add_constant(name, f32(shape), data);
}

}  // namespace

TEST_CASE("emulated gemm ops: linear with and without bias, 2-D and 3-D inputs, GEMV and tiled shapes") {
  for (Shape in : {Shape{1, 64}, Shape{3, 37}, Shape{2, 5, 37}, Shape{70, 33}}) {
    Trace t;
    ValueId x = t.add_input("x", f32(in));
    std::int64_t k = in.back();
    ValueId w = weight(t, "w", {45, k}, 1), b = weight(t, "b", {45}, 2);
    ValueId y = t.emit1(op("linear"), {T(x), T(w), T(b)}, {});
    ValueId z = t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {});
    t.set_outputs({y, z});
    check_against_torch(t, "linear_" + std::to_string(in.size()) + "_" + std::to_string(in[0]), false, kGemm);
  }
}

TEST_CASE("emulated gemm ops: matmul 2-D, batched, one side shared, bmm, addmm") {
  SUBCASE("2-D") {
    Trace t;
    ValueId a = t.add_input("a", f32({19, 23})), b = t.add_input("b", f32({23, 29}));
    t.set_outputs({t.emit1(op("matmul"), {T(a), T(b)}, {})});
    check_against_torch(t, "matmul_2d", false, kGemm);
  }
  SUBCASE("batched, equal batch dims") {
    Trace t;
    ValueId a = t.add_input("a", f32({2, 3, 9, 16})), b = t.add_input("b", f32({2, 3, 16, 11}));
    t.set_outputs({t.emit1(op("matmul"), {T(a), T(b)}, {})});
    check_against_torch(t, "matmul_batched", false, kGemm);
  }
  SUBCASE("b shared by every batch of a") {
    Trace t;
    ValueId a = t.add_input("a", f32({4, 7, 16})), b = t.add_input("b", f32({16, 13}));
    t.set_outputs({t.emit1(op("matmul"), {T(a), T(b)}, {})});
    check_against_torch(t, "matmul_b_shared", false, kGemm);
  }
  SUBCASE("a shared by every batch of b") {
    Trace t;
    ValueId a = t.add_input("a", f32({7, 16})), b = t.add_input("b", f32({3, 16, 13}));
    t.set_outputs({t.emit1(op("matmul"), {T(a), T(b)}, {})});
    check_against_torch(t, "matmul_a_shared", false, kGemm);
  }
  SUBCASE("bmm") {
    Trace t;
    ValueId a = t.add_input("a", f32({5, 1, 33})), b = t.add_input("b", f32({5, 33, 40}));
    t.set_outputs({t.emit1(op("bmm"), {T(a), T(b)}, {})});
    check_against_torch(t, "bmm", false, kGemm);
  }
  SUBCASE("addmm with alpha, beta, broadcast bias") {
    Trace t;
    ValueId bias = t.add_input("bias", f32({12})), a = t.add_input("a", f32({9, 20})), b = t.add_input("b", f32({20, 12}));
    ValueId y = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", 0.5}, {"alpha", 2.0}});
    ValueId z = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", 0.0}, {"alpha", 1.0}});
    ValueId w = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", double(NAN)}, {"alpha", double(INFINITY)}});
    t.set_outputs({y, z, w});  // w: non-finite alpha and beta are valid literals in the epilogue
    check_against_torch(t, "addmm", false, kGemm);
  }
}

TEST_CASE("emulated gemm ops: matmul whose batch dims broadcast against each other is not claimed") {
  Trace t;
  ValueId a = t.add_input("a", TensorType{DType::Float32, {2, 1, 4, 5}, Device::cuda(0)});
  ValueId b = t.add_input("b", TensorType{DType::Float32, {1, 3, 5, 6}, Device::cuda(0)});
  t.set_outputs({t.emit1(op("matmul"), {T(a), T(b)}, {})});
  CHECK_FALSE(find_executor("nvfuser")->can_execute(t, t.symbols()[0]));
}

TEST_CASE("emulated gemm ops: conv2d geometry, groups, depthwise, 1x1, bias") {
  struct Case {
    const char* name;
    Shape x, w;
    IntList stride, padding, dilation;
    std::int64_t groups;
    bool bias;
  };
  for (const Case& c : {Case{"plain", {1, 3, 9, 11}, {8, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
                        Case{"strided_padded", {2, 4, 10, 9}, {6, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true},
                        Case{"dilated", {1, 2, 12, 12}, {5, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, false},
                        Case{"grouped", {1, 4, 8, 8}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, true},
                        Case{"depthwise", {2, 6, 9, 9}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 6, true},
                        Case{"pointwise", {2, 16, 5, 7}, {12, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true}}) {
    Trace t;
    ValueId x = t.add_input("x", f32(c.x));
    ValueId w = weight(t, "w", c.w, 3), b = weight(t, "b", {c.w[0]}, 4);
    ValueId y = t.emit1(op("conv2d"), {T(x), T(w), c.bias ? T(b) : Operand::none()},
                        {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}});
    t.set_outputs({y});
    check_against_torch(t, std::string("conv_") + c.name, false, kGemm);
  }
}

TEST_CASE("emulated gemm ops: elementwise consumers fused into the GEMM's epilogue") {
  SUBCASE("linear, gelu, residual add; the GEMM result also an output and reduced") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 5, 24}));
    ValueId r = t.add_input("r", f32({2, 5, 40}));
    ValueId w = weight(t, "w", {40, 24}, 5), b = weight(t, "b", {40}, 6);
    ValueId y = t.emit1(op("linear"), {T(x), T(w), T(b)}, {});
    ValueId g = t.emit1(op("gelu"), {T(y)}, {{"approximate", std::string("tanh")}});
    ValueId z = t.emit1(op("add"), {T(g), T(r)}, {});
    ValueId s = t.emit1(op("sum"), {T(y)}, {{"dims", IntList{-1}}, {"keepdim", false}});
    t.set_outputs({z, y, s});
    check_against_torch(t, "epilogue_linear", false, kGemm);
    CHECK(fused_epilogues("epilogue_linear") == 1);
  }
  SUBCASE("batched matmul, scale, mask, softmax (attention scores)") {
    Trace t;
    ValueId q = t.add_input("q", f32({2, 3, 8, 16})), k = t.add_input("k", f32({2, 3, 16, 8}));
    ValueId m = t.add_input("m", b8({8, 8}));
    ValueId s = t.emit1(op("matmul"), {T(q), T(k)}, {});
    ValueId sc = t.emit1(op("mul"), {T(s), N(0.25)}, {});
    ValueId mk = t.emit1(op("masked_fill"), {T(sc), T(m), N(-1e4)}, {});
    ValueId p = t.emit1(op("softmax"), {T(mk)}, {{"dim", std::int64_t{-1}}});
    t.set_outputs({p});
    check_against_torch(t, "epilogue_attention", false, kGemm);
    CHECK(fused_epilogues("epilogue_attention") == 1);
  }
  SUBCASE("conv2d, relu; a transposed read of the result is not fused") {
    Trace t;
    ValueId x = t.add_input("x", f32({1, 3, 9, 9}));
    ValueId w = weight(t, "w", {4, 3, 3, 3}, 7), b = weight(t, "b", {4}, 8);
    ValueId y = t.emit1(op("conv2d"), {T(x), T(w), T(b)},
                        {{"stride", IntList{1, 1}}, {"padding", IntList{1, 1}}, {"dilation", IntList{1, 1}}, {"groups", std::int64_t{1}}});
    ValueId a = t.emit1(op("relu"), {T(y)}, {});
    ValueId pt = t.emit1(op("permute"), {T(y)}, {{"dims", IntList{0, 1, 3, 2}}});
    ValueId c = t.emit1(op("add"), {T(pt), T(a)}, {});
    t.set_outputs({a, c});
    check_against_torch(t, "epilogue_conv", false, kGemm);
    CHECK(fused_epilogues("epilogue_conv") == 1);  // relu; the permuted read is a store of its own
  }
}

TEST_CASE("emulated gemm ops: the fusion pass puts a GEMM's consumers in its region") {
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Float32, {4, 8}, Device::cuda(0)});
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(8 * 8 * sizeof(float));
  ValueId w = t.add_constant("w", TensorType{DType::Float32, {8, 8}, Device::cuda(0)}, data);
  ValueId y = t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {});
  ValueId z = t.emit1(op("relu"), {T(y)}, {});
  ValueId lone = t.emit1(op("linear"), {T(z), T(w), Operand::none()}, {});
  t.set_outputs({lone});
  Trace fused = claimed(t, {"nvfuser"});
  INFO(print_trace(fused));
  REQUIRE(fused.symbols().size() == 2);
  CHECK(fused.symbols()[0].is_region());  // linear + relu: one region, relu in the GEMM's epilogue
  CHECK(fused.symbols()[0].subsymbols.size() == 2);
  CHECK(fused.symbols()[1].op->name == "linear");  // nothing to fuse: a lone symbol
}

// ---- The library executors: cublas (cuBLASLt) and cudnn, run against the fake libraries ------------------

namespace {

// `t` moved to CUDA, claimed by the CUDA defaults and fused (library epilogues included).
Trace claimed_with_libraries(const Trace& t) {
  Trace on = t;
  on.set_device(Device::cuda(0));
  return claimed(on, {"cudnn", "cublas", "nvfuser"});
}

// The symbol or region (by head op) that an executor claimed in `t`, or null.
const BoundSymbol* claimed_by(const Trace& t, const std::string& executor, const std::string& head) {
  for (const BoundSymbol& s : t.symbols()) {
    const BoundSymbol& h = s.is_region() ? s.subsymbols[0] : s;
    if (s.executor == executor && h.op->name == head) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("emulated gemm ops through cuBLASLt: layouts, batches, bias and activation epilogues") {
  CudaExecutorsScope scope({"cudnn", "cublas", "nvfuser"});
  const uint64_t before = fake_libs::cublaslt_matmuls();
  SUBCASE("linear, 2-D and 3-D, with and without bias (weight read transposed)") {
    for (Shape in : {Shape{1, 64}, Shape{3, 37}, Shape{2, 5, 37}}) {
      Trace t;
      ValueId x = t.add_input("x", f32(in));
      ValueId w = weight(t, "w", {45, in.back()}, 1), b = weight(t, "b", {45}, 2);
      t.set_outputs({t.emit1(op("linear"), {T(x), T(w), T(b)}, {}), t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {})});
      check_against_torch(t, "lt_linear_" + std::to_string(in.size()) + "_" + std::to_string(in[0]), false, kGemm);
    }
  }
  SUBCASE("matmul 2-D, batched, one side shared; bmm") {
    struct Case {
      const char* name;
      Shape a, b;
      const char* op;
    };
    for (const Case& c : {Case{"2d", {19, 23}, {23, 29}, "matmul"}, Case{"batched", {2, 3, 9, 16}, {2, 3, 16, 11}, "matmul"},
                          Case{"b_shared", {4, 7, 16}, {16, 13}, "matmul"}, Case{"a_shared", {7, 16}, {3, 16, 13}, "matmul"},
                          Case{"bmm", {5, 1, 33}, {5, 33, 40}, "bmm"}}) {
      Trace t;
      ValueId a = t.add_input("a", f32(c.a)), b = t.add_input("b", f32(c.b));
      t.set_outputs({t.emit1(op(c.op), {T(a), T(b)}, {})});
      CHECK(claimed_by(claimed_with_libraries(t), "cublas", c.op) != nullptr);
      check_against_torch(t, std::string("lt_matmul_") + c.name, false, kGemm);
    }
  }
  SUBCASE("addmm: cublas takes alpha 1 with beta 0 or 1; other alpha/beta stay on nvfuser") {
    Trace t;
    ValueId bias = t.add_input("bias", f32({12})), a = t.add_input("a", f32({9, 20})), b = t.add_input("b", f32({20, 12}));
    ValueId y = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", 1.0}, {"alpha", 1.0}});
    ValueId z = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", 0.0}, {"alpha", 1.0}});
    ValueId w = t.emit1(op("addmm"), {T(bias), T(a), T(b)}, {{"beta", 0.5}, {"alpha", 2.0}});
    t.set_outputs({y, z, w});
    Trace c = claimed_with_libraries(t);
    INFO(print_trace(c));
    std::vector<std::string> owners;
    for (const BoundSymbol& s : c.symbols()) owners.push_back(s.executor);
    CHECK(owners == std::vector<std::string>{"cublas", "cublas", "nvfuser"});
    check_against_torch(t, "lt_addmm", false, kGemm);
  }
  SUBCASE("linear + relu and linear + gelu(tanh) become one call; gelu(erf) does not") {
    Trace t;
    ValueId x = t.add_input("x", f32({2, 5, 24}));
    ValueId w = weight(t, "w", {40, 24}, 5), b = weight(t, "b", {40}, 6);
    ValueId r = t.emit1(op("relu"), {T(t.emit1(op("linear"), {T(x), T(w), T(b)}, {}))}, {});
    ValueId g = t.emit1(op("gelu"), {T(t.emit1(op("linear"), {T(x), T(w), Operand::none()}, {}))},
                        {{"approximate", std::string("tanh")}});
    ValueId e = t.emit1(op("gelu"), {T(t.emit1(op("linear"), {T(x), T(w), T(b)}, {}))}, {{"approximate", std::string("none")}});
    t.set_outputs({r, g, e});
    Trace c = claimed_with_libraries(t);
    INFO(print_trace(c));
    std::vector<std::string> shape;
    for (const BoundSymbol& s : c.symbols())
      shape.push_back(s.executor + ":" + (s.is_region() ? "region" + std::to_string(s.subsymbols.size()) : s.op->name));
    // The erf gelu is nvfuser's elementwise region after a lone cuBLASLt linear.
    CHECK(shape == std::vector<std::string>{"cublas:region2", "cublas:region2", "cublas:linear", "nvfuser:region1"});
    check_against_torch(t, "lt_epilogues", false, kGemm);
  }
  CHECK(fake_libs::cublaslt_matmuls() > before);  // cuBLASLt ran them (not the fallback kernels)
}

TEST_CASE("emulated conv2d through the cudnn executor: claimed with its bias, residual add and activation") {
  CudaExecutorsScope scope({"cudnn", "cublas", "nvfuser"});
  Trace t;
  ValueId x = t.add_input("x", f32({2, 4, 9, 9}));
  ValueId res = t.add_input("res", f32({2, 6, 9, 9}));
  ValueId w = weight(t, "w", {6, 4, 3, 3}, 9), b = weight(t, "b", {6}, 10), wd = weight(t, "wd", {6, 1, 3, 3}, 11);
  Attrs geom{{"stride", IntList{1, 1}}, {"padding", IntList{1, 1}}, {"dilation", IntList{1, 1}}, {"groups", std::int64_t{1}}};
  ValueId y = t.emit1(op("conv2d"), {T(x), T(w), T(b)}, geom);
  ValueId s = t.emit1(op("relu"), {T(t.emit1(op("add"), {T(y), T(res)}, {}))}, {});  // ResNet's block end
  Attrs dw = geom;
  dw.set("groups", std::int64_t{6});
  ValueId d = t.emit1(op("silu"), {T(t.emit1(op("conv2d"), {T(s), T(wd), Operand::none()}, dw))}, {});
  t.set_outputs({d});
  Trace c = claimed_with_libraries(t);
  INFO(print_trace(c));
  REQUIRE(c.symbols().size() == 2);
  CHECK(c.symbols()[0].executor == "cudnn");
  CHECK(c.symbols()[0].subsymbols.size() == 3);  // conv2d, add, relu
  CHECK(c.symbols()[1].executor == "cudnn");
  CHECK(c.symbols()[1].subsymbols.size() == 2);  // depthwise conv2d, silu
  check_against_torch(t, "dnn_conv_epilogue", false, kGemm);
}

// ---- Attention through cuDNN (--precision bf16/fp16): the cudnn executor's claim, numerics, fallbacks ----

namespace {

// softmax(q k^T * scale (+ mask)) v on float32 inputs q [2, 3, 16, E], k [2, 3, 16, E], v [2, 3, 16, E]
// (the reference), with an optional mask input of shape `mask` (bool: keep; float: additive).
Trace attention_trace(std::int64_t E, bool causal, const std::optional<TensorType>& mask) {
  Trace t;
  ValueId q = t.add_input("q", f32({2, 3, 16, E})), k = t.add_input("k", f32({2, 3, 16, E}));
  ValueId v = t.add_input("v", f32({2, 3, 16, E}));
  Operand m = mask ? T(t.add_input("mask", *mask)) : Operand::none();
  ValueId o = t.emit1(op("scaled_dot_product_attention"), {T(q), T(k), T(v), m},
                      {{"is_causal", causal}, {"scale", 0.3}});
  t.set_outputs({o});
  return t;
}

// The attention symbol of the autocast trace claimed by the CUDA defaults, and whether cuDNN ran it.
void check_library_attention(const Trace& reference, DType low, const std::string& name, bool want_cudnn) {
  const Trace t = autocast(reference, low);
  const Trace c = claimed_with_libraries(t);
  INFO(print_trace(c));
  const BoundSymbol* dnn = claimed_by(c, "cudnn", "scaled_dot_product_attention");
  const BoundSymbol* own = claimed_by(c, "nvfuser", "scaled_dot_product_attention");
  CHECK((dnn != nullptr) == want_cudnn);
  CHECK((own != nullptr) == !want_cudnn);
  const uint64_t before = fake_libs::cudnn_executes();
  // bf16 keeps 8 bits of mantissa, fp16 11: q, k, v and the result are rounded once each.
  const Tol tol = low == DType::BFloat16 ? Tol{2e-2, 2e-2} : Tol{3e-3, 3e-3};
  check_variant_against_torch(reference, t, name, false, tol);
  const bool engine = std::getenv("THUNDERC_FAKE_CUDNN_NO_ATTENTION") == nullptr;
  CHECK(fake_libs::cudnn_executes() - before == (want_cudnn && engine ? 2u : 0u));  // two seeds
}

}  // namespace

TEST_CASE("emulated attention in bfloat16/float16 (autocast) through the cudnn executor, and what stays on nvfuser") {
  CudaExecutorsScope scope({"cudnn", "cublas", "nvfuser"});
  const TensorType full_mask = f32({2, 3, 16, 16}), head_mask = f32({3, 16, 16}), key_mask = f32({1, 1, 1, 16});
  SUBCASE("causal, bf16 and fp16") {
    check_library_attention(attention_trace(16, true, std::nullopt), DType::BFloat16, "dnn_sdpa_causal_bf16", true);
    check_library_attention(attention_trace(16, true, std::nullopt), DType::Float16, "dnn_sdpa_causal_f16", true);
  }
  SUBCASE("additive masks: full, broadcast over the batch, broadcast over batch, heads and rows") {
    check_library_attention(attention_trace(8, false, full_mask), DType::BFloat16, "dnn_sdpa_mask_full", true);
    check_library_attention(attention_trace(8, false, head_mask), DType::BFloat16, "dnn_sdpa_mask_heads", true);
    check_library_attention(attention_trace(32, true, key_mask), DType::Float16, "dnn_sdpa_mask_keys", true);
  }
  SUBCASE("left to nvfuser: a head size not a multiple of 8, a bool mask, float32") {
    check_library_attention(attention_trace(12, true, std::nullopt), DType::BFloat16, "dnn_sdpa_e12", false);
    check_library_attention(attention_trace(16, false, b8({2, 3, 16, 16})), DType::BFloat16, "dnn_sdpa_bool", false);
    Trace on = attention_trace(16, true, std::nullopt);
    on.set_device(Device::cuda(0));
    CHECK(claimed_by(claimed(on, {"cudnn", "nvfuser"}), "nvfuser", "scaled_dot_product_attention") != nullptr);
  }
  SUBCASE("no cuDNN engine for the graph: every call runs nvfuser's kernel compiled beside it") {
    setenv("THUNDERC_FAKE_CUDNN_NO_ATTENTION", "1", 1);
    check_library_attention(attention_trace(16, true, std::nullopt), DType::BFloat16, "dnn_sdpa_no_engine", true);
    unsetenv("THUNDERC_FAKE_CUDNN_NO_ATTENTION");
  }
}
