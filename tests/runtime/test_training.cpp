// Tests of training models (ABI 5, thunderc --autograd): parameters, forward_train, backward, through the C API
// and the C++ wrapper, against the hand-written models/training_model.cpp (y = x @ W^T + b).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "test_util.hpp"
#include "thunderc/runtime.h"
#include "thunderc/runtime.hpp"

using namespace thunderc_test;

namespace {

constexpr int64_t kOut = 3, kIn = 4;

DLTensor f32(std::vector<float>& data, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

struct Model {
  thunderc_model* m = nullptr;
  explicit Model(const std::string& path) {
    Status st(thunderc_model_open(path.c_str(), nullptr, &m));
    REQUIRE_MESSAGE(st.ok(), st.message());
    REQUIRE(m != nullptr);
  }
  ~Model() { thunderc_model_close(m); }
};

struct Context {
  thunderc_train_context c = nullptr;
  ~Context() { thunderc_train_context_free(c); }
};

// The model's initial parameters, as training_model.cpp's blob holds them.
std::vector<float> initial_w() {
  std::vector<float> w(kOut * kIn);
  for (size_t k = 0; k < w.size(); ++k) w[k] = -1.0f + 0.25f * static_cast<float>(k);
  return w;
}
std::vector<float> initial_b() { return {0.5f, -1.0f, 2.0f}; }

// Quarter and half steps: every product and sum below is exact in float32, so results compare exactly.
std::vector<float> make_x(int64_t rows, int seed = 0) {
  std::vector<float> x(rows * kIn);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.25f * static_cast<float>((k + seed) % 7) - 0.5f;
  return x;
}
std::vector<float> make_gy(int64_t rows, int seed = 0) {
  std::vector<float> g(rows * kOut);
  for (size_t k = 0; k < g.size(); ++k) g[k] = 0.5f * static_cast<float>((k + seed) % 5) - 1.0f;
  return g;
}

std::vector<float> ref_y(const std::vector<float>& x, int64_t rows, const std::vector<float>& w,
                         const std::vector<float>& b) {
  std::vector<float> y(rows * kOut);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < kOut; ++i) {
      double acc = b[i];
      for (int64_t j = 0; j < kIn; ++j) acc += double(x[r * kIn + j]) * w[i * kIn + j];
      y[r * kOut + i] = static_cast<float>(acc);
    }
  return y;
}

struct Grads {
  std::vector<float> x, w, b;
};
Grads ref_grads(const std::vector<float>& x, const std::vector<float>& gy, int64_t rows, const std::vector<float>& w) {
  Grads g{std::vector<float>(rows * kIn, 0.0f), std::vector<float>(kOut * kIn, 0.0f), std::vector<float>(kOut, 0.0f)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < kOut; ++i) {
      const float d = gy[r * kOut + i];
      for (int64_t j = 0; j < kIn; ++j) {
        g.x[r * kIn + j] += d * w[i * kIn + j];
        g.w[i * kIn + j] += d * x[r * kIn + j];
      }
      g.b[i] += d;
    }
  return g;
}

std::vector<float> values(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  const float* p = static_cast<const float*>(t.data);
  return std::vector<float>(p, p + n);
}

// One training step's buffers for x [rows, 4].
struct Step {
  int64_t rows;
  std::vector<float> x, y, gy, gx, gw, gb;
  std::vector<int64_t> xs, ys, ws{kOut, kIn}, bs{kOut};
  explicit Step(int64_t r, int seed = 0)
      : rows(r), x(make_x(r, seed)), y(r * kOut, -7.0f), gy(make_gy(r, seed)), gx(r * kIn, -7.0f),
        gw(kOut * kIn, -7.0f), gb(kOut, -7.0f), xs{r, kIn}, ys{r, kOut} {}
  DLTensor in() { return f32(x, xs); }
  DLTensor out() { return f32(y, ys); }
  DLTensor grad_out() { return f32(gy, ys); }
  std::vector<DLTensor> grads() { return {f32(gx, xs), f32(gw, ws), f32(gb, bs)}; }
};

Status forward_train(thunderc_model* m, Step& s, Context& ctx) {
  DLTensor in = s.in(), out = s.out();
  return Status(thunderc_model_forward_train(m, &in, 1, &out, 1, &ctx.c));
}

Status backward(thunderc_model* m, Step& s, const Context& ctx) {
  DLTensor gy = s.grad_out();
  std::vector<DLTensor> g = s.grads();
  return Status(thunderc_model_backward(m, ctx.c, &gy, 1, g.data(), g.size()));
}

void check_step(const Step& s, const std::vector<float>& w, const std::vector<float>& b) {
  CHECK(s.y == ref_y(s.x, s.rows, w, b));
  const Grads g = ref_grads(s.x, s.gy, s.rows, w);
  CHECK(s.gx == g.x);
  CHECK(s.gw == g.w);
  CHECK(s.gb == g.b);
}

long entry_calls(int entry) {
  void* h = dlopen(model_path("training_model").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto fn = reinterpret_cast<long (*)(int)>(dlsym(h, "thunderc_test_training_calls"));
  REQUIRE(static_cast<bool>(fn));
  const long n = fn(entry);
  dlclose(h);
  return n;
}

Status open_training_manifest(const std::string& manifest, thunderc_model** m, const std::string& so = "training_env_manifest") {
  TempDir dir;
  const std::string path = dir.path + "/manifest.json";
  write_file(path, manifest);
  setenv("THUNDERC_TEST_MANIFEST", path.c_str(), 1);
  Status st(thunderc_model_open(model_path(so).c_str(), nullptr, m));
  unsetenv("THUNDERC_TEST_MANIFEST");
  return st;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("training: parameters and gradients of a training model") {
  Model h(model_path("training_model"));
  thunderc_model* m = h.m;
  CHECK(thunderc_model_is_training(m) == 1);
  REQUIRE(thunderc_model_num_parameters(m) == 2);
  CHECK(std::string(thunderc_model_parameter_name(m, 0)) == "fc.weight");
  CHECK(std::string(thunderc_model_parameter_name(m, 1)) == "fc.bias");
  CHECK(thunderc_model_parameter_name(m, 2) == nullptr);

  // Initial values equal the blob the .so exports, in buffers of the model's own (64-byte aligned).
  void* so = dlopen(model_path("training_model").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(so != nullptr);
  auto blob_fn = reinterpret_cast<const unsigned char* (*)(size_t*)>(dlsym(so, "thunderc_parameters"));
  REQUIRE(static_cast<bool>(blob_fn));
  size_t len = 0;
  const unsigned char* blob = blob_fn(&len);
  CHECK(len == 128);
  dlclose(so);
  const size_t offsets[2] = {0, 64}, bytes[2] = {48, 12};
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    DLTensor t{};
    REQUIRE(Status(thunderc_model_parameter(m, i, &t)).ok());
    CHECK(t.device.device_type == kDLCPU);
    CHECK(t.dtype.code == kDLFloat);
    CHECK(t.dtype.bits == 32);
    CHECK(t.strides == nullptr);
    CHECK(t.byte_offset == 0);
    CHECK(reinterpret_cast<uintptr_t>(t.data) % 64 == 0);
    CHECK(t.data != blob + offsets[i]);  // a copy, not the .so's read-only data
    CHECK(std::memcmp(t.data, blob + offsets[i], bytes[i]) == 0);
  }
  DLTensor w{};
  REQUIRE(Status(thunderc_model_parameter(m, 0, &w)).ok());
  REQUIRE(w.ndim == 2);
  CHECK(w.shape[0] == 3);
  CHECK(w.shape[1] == 4);
  CHECK(values(w) == initial_w());
  DLTensor b{};
  REQUIRE(Status(thunderc_model_parameter(m, 1, &b)).ok());
  CHECK(b.ndim == 1);
  CHECK(values(b) == initial_b());
  Status range(thunderc_model_parameter(m, 2, &w));
  CHECK(range.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(range.message() == "parameter 2 out of range (training_model.so has 2)");
  CHECK(Status(thunderc_model_parameter(m, 0, nullptr)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(Status(thunderc_model_parameter(nullptr, 0, &w)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);

  REQUIRE(thunderc_model_num_gradients(m) == 3);
  CHECK(std::string(thunderc_model_gradient_name(m, 0)) == "x");
  CHECK(std::string(thunderc_model_gradient_name(m, 1)) == "fc.weight");
  CHECK(std::string(thunderc_model_gradient_name(m, 2)) == "fc.bias");
  CHECK(thunderc_model_gradient_name(m, 3) == nullptr);
  CHECK(thunderc_model_gradient_is_parameter(m, 0) == 0);
  CHECK(thunderc_model_gradient_is_parameter(m, 1) == 1);
  CHECK(thunderc_model_gradient_is_parameter(m, 2) == 1);
  CHECK(thunderc_model_gradient_is_parameter(m, 3) == -1);
  CHECK(thunderc_model_gradient_dtype(m, 0).bits == 32);
  CHECK(thunderc_model_gradient_dtype(m, 3).bits == 0);

  // A second open of the same .so has parameters of its own.
  Model other(model_path("training_model"));
  DLTensor w2{};
  REQUIRE(Status(thunderc_model_parameter(other.m, 0, &w2)).ok());
  CHECK(w2.data != w.data);
}

TEST_CASE("training: forward_train and backward compute y = x W^T + b and its gradients") {
  Model h(model_path("training_model"));
  for (int64_t rows : {int64_t{2}, int64_t{5}}) {
    CAPTURE(rows);
    const int variant = rows == 2 ? 0 : 1;
    const long fwd0 = entry_calls(2 * variant), bwd0 = entry_calls(2 * variant + 1);
    Step s(rows);
    Context ctx;
    {
      Status st = forward_train(h.m, s, ctx);
      REQUIRE_MESSAGE(st.ok(), st.message());
    }
    REQUIRE(ctx.c != nullptr);
    CHECK(entry_calls(2 * variant) == fwd0 + 1);
    // The context's variant decides the gradient shapes.
    int64_t shape[4];
    int32_t ndim = 0;
    REQUIRE(Status(thunderc_model_gradient_shape(h.m, ctx.c, 0, shape, 4, &ndim)).ok());
    CHECK(ndim == 2);
    CHECK(shape[0] == rows);
    CHECK(shape[1] == 4);
    REQUIRE(Status(thunderc_model_gradient_shape(h.m, ctx.c, 2, shape, 4, &ndim)).ok());
    CHECK(ndim == 1);
    CHECK(shape[0] == 3);
    Status small(thunderc_model_gradient_shape(h.m, ctx.c, 1, shape, 1, &ndim));
    CHECK(small.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(ndim == 2);
    CHECK(Status(thunderc_model_gradient_shape(h.m, ctx.c, 3, shape, 4, &ndim)).code() ==
          THUNDERC_STATUS_INVALID_ARGUMENT);
    {
      Status st = backward(h.m, s, ctx);
      REQUIRE_MESSAGE(st.ok(), st.message());
    }
    CHECK(entry_calls(2 * variant + 1) == bwd0 + 1);
    check_step(s, initial_w(), initial_b());
  }
}

TEST_CASE("training: parameters are live state, written in place") {
  Model h(model_path("training_model"));
  DLTensor w{}, b{};
  REQUIRE(Status(thunderc_model_parameter(h.m, 0, &w)).ok());
  REQUIRE(Status(thunderc_model_parameter(h.m, 1, &b)).ok());
  // An SGD step's worth of change, in place.
  std::vector<float> new_w = initial_w(), new_b = initial_b();
  for (float& v : new_w) v = v * 0.5f + 0.25f;
  new_b[1] = 3.0f;
  std::memcpy(w.data, new_w.data(), new_w.size() * sizeof(float));
  static_cast<float*>(b.data)[1] = 3.0f;

  Step s(2);
  Context ctx;
  REQUIRE(forward_train(h.m, s, ctx).ok());
  REQUIRE(backward(h.m, s, ctx).ok());
  check_step(s, new_w, new_b);  // the forward and the backward both read the new values
  CHECK(s.y != ref_y(s.x, 2, initial_w(), initial_b()));

  // The pointer stays the same; another model of the same .so keeps the initial values.
  DLTensor again{};
  REQUIRE(Status(thunderc_model_parameter(h.m, 0, &again)).ok());
  CHECK(again.data == w.data);
  Model fresh(model_path("training_model"));
  DLTensor w2{};
  REQUIRE(Status(thunderc_model_parameter(fresh.m, 0, &w2)).ok());
  CHECK(values(w2) == initial_w());
}

TEST_CASE("training: run and run_alloc run the training forward") {
  Model h(model_path("training_model"));
  const long fwd0 = entry_calls(0);
  Step s(2);
  DLTensor in = s.in(), out = s.out();
  {
    Status st(thunderc_model_run(h.m, &in, 1, &out, 1));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  CHECK(s.y == ref_y(s.x, 2, initial_w(), initial_b()));
  CHECK(entry_calls(0) == fwd0 + 1);

  Step s5(5);
  DLTensor in5 = s5.in();
  DLManagedTensor* managed = nullptr;
  {
    Status st(thunderc_model_run_alloc(h.m, &in5, 1, &managed, 1));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  REQUIRE(managed != nullptr);
  CHECK(values(managed->dl_tensor) == ref_y(s5.x, 5, initial_w(), initial_b()));
  managed->deleter(managed);

  // A changed parameter shows in run() too.
  DLTensor b{};
  REQUIRE(Status(thunderc_model_parameter(h.m, 1, &b)).ok());
  static_cast<float*>(b.data)[0] = -4.0f;
  REQUIRE(Status(thunderc_model_run(h.m, &in, 1, &out, 1)).ok());
  std::vector<float> new_b = initial_b();
  new_b[0] = -4.0f;
  CHECK(s.y == ref_y(s.x, 2, initial_w(), new_b));

  // The variant is the one run() picks, and introspection sees the forward only.
  size_t v = 9;
  REQUIRE(Status(thunderc_model_select_variant(h.m, &in5, 1, &v)).ok());
  CHECK(v == 1);
  thunderc_variant_info info{};
  REQUIRE(Status(thunderc_model_variant_info(h.m, 1, &info)).ok());
  CHECK(info.num_inputs == 1);
  CHECK(info.num_outputs == 1);
  CHECK(std::string(info.entry) == "thunderc_variant_2");
}

TEST_CASE("training: one context serves several backward calls") {
  Model h(model_path("training_model"));
  Step s(5);
  Context ctx;
  REQUIRE(forward_train(h.m, s, ctx).ok());
  REQUIRE(backward(h.m, s, ctx).ok());
  const std::vector<float> gx = s.gx, gw = s.gw, gb = s.gb;
  // Another forward (other inputs, its own context) does not disturb the first context's saved tensors.
  Step other(5, 3);
  Context ctx2;
  REQUIRE(forward_train(h.m, other, ctx2).ok());
  std::fill(s.gx.begin(), s.gx.end(), 0.0f);
  std::fill(s.gw.begin(), s.gw.end(), 0.0f);
  std::fill(s.gb.begin(), s.gb.end(), 0.0f);
  REQUIRE(backward(h.m, s, ctx).ok());
  CHECK(s.gx == gx);
  CHECK(s.gw == gw);
  CHECK(s.gb == gb);
  // Other grad_outputs from the same context.
  s.gy = make_gy(5, 2);
  REQUIRE(backward(h.m, s, ctx).ok());
  check_step(s, initial_w(), initial_b());
  REQUIRE(backward(h.m, other, ctx2).ok());
  check_step(other, initial_w(), initial_b());
}

TEST_CASE("training: argument errors") {
  Model h(model_path("training_model"));
  thunderc_model* m = h.m;
  Step s(2);
  DLTensor in = s.in(), out = s.out();

  // forward_train
  Context ctx;
  CHECK(Status(thunderc_model_forward_train(m, &in, 1, &out, 1, nullptr)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(Status(thunderc_model_forward_train_seeded(m, &in, 1, &out, 1, 3, 4, nullptr)).code() ==
        THUNDERC_STATUS_INVALID_ARGUMENT);
  // The generator of a model without dropout: state kept as set, no blocks drawn.
  uint64_t seed = 1, offset = 1;
  CHECK(Status(thunderc_model_rng_state(m, nullptr, &offset)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  REQUIRE(Status(thunderc_model_rng_state(m, &seed, &offset)).ok());
  CHECK((seed == 0 && offset == 0));
  REQUIRE(Status(thunderc_model_set_rng_state(m, 11, 12)).ok());
  CHECK(thunderc_model_rng_blocks(m, 0) == 0);
  CHECK(thunderc_model_rng_blocks(m, 5) == 0);
  REQUIRE(Status(thunderc_model_rng_state(m, &seed, &offset)).ok());
  CHECK((seed == 11 && offset == 12));
  CHECK(Status(thunderc_model_set_rng_state(nullptr, 1, 2)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  {
    thunderc_train_context junk = reinterpret_cast<thunderc_train_context>(0x1);
    std::vector<float> x3(12, 0.0f);
    std::vector<int64_t> x3s{3, 4};
    DLTensor bad_in = f32(x3, x3s);
    Status st(thunderc_model_forward_train(m, &bad_in, 1, &out, 1, &junk));
    CHECK(st.code() == THUNDERC_STATUS_NO_MATCHING_VARIANT);
    CHECK(st.message().find("input 'x' has shape [3, 4] float32 cpu") != std::string::npos);
    CHECK(junk == nullptr);
    junk = reinterpret_cast<thunderc_train_context>(0x1);
    std::vector<float> y24(8);
    std::vector<int64_t> y24s{2, 4};
    DLTensor bad_out = f32(y24, y24s);
    Status st2(thunderc_model_forward_train(m, &in, 1, &bad_out, 1, &junk));
    CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st2.message() == "output 'y' (#0) for variant #0 of training_model.so: expected a contiguous "
                           "float32[2, 3] cpu tensor, got float32[2, 4] cpu");
    CHECK(junk == nullptr);
    CHECK(Status(thunderc_model_forward_train(m, &in, 1, &out, 0, &junk)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  }
  // An output over a parameter's buffer (run and forward_train read the parameters while writing outputs).
  {
    DLTensor w{};
    REQUIRE(Status(thunderc_model_parameter(m, 0, &w)).ok());
    DLTensor over = out;
    over.data = w.data;
    Status st(thunderc_model_run(m, &in, 1, &over, 1));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "output 'y' (#0) overlaps parameter 'fc.weight' (#0) in memory; outputs must not share "
                          "memory with the model's parameters (pass a separate buffer)");
    thunderc_train_context c = nullptr;
    CHECK(Status(thunderc_model_forward_train(m, &in, 1, &over, 1, &c)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(c == nullptr);
  }

  REQUIRE(forward_train(m, s, ctx).ok());
  DLTensor gy = s.grad_out();
  std::vector<DLTensor> g = s.grads();

  // A grad_output of the wrong shape or dtype, names the output.
  {
    std::vector<int64_t> wrong{3, 2};
    DLTensor bad = gy;
    bad.shape = wrong.data();
    Status st(thunderc_model_backward(m, ctx.c, &bad, 1, g.data(), g.size()));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "grad_output for output 'y' (#0) for variant #0 of training_model.so: expected a contiguous "
                          "float32[2, 3] cpu tensor (the shape and dtype of output 'y'), got float32[3, 2] cpu");
    std::vector<double> gy64(6, 0.0);
    DLTensor bad64 = gy;
    bad64.data = gy64.data();
    bad64.dtype = DLDataType{kDLFloat, 64, 1};
    Status st64(thunderc_model_backward(m, ctx.c, &bad64, 1, g.data(), g.size()));
    CHECK(st64.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st64.message().find("got float64[2, 3] cpu") != std::string::npos);
  }
  // Gradient buffers: shape, counts.
  {
    std::vector<DLTensor> bad = g;
    std::vector<int64_t> wrong{4, 3};
    bad[1].shape = wrong.data();
    Status st(thunderc_model_backward(m, ctx.c, &gy, 1, bad.data(), bad.size()));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "gradient of parameter 'fc.weight' (#1) for variant #0 of training_model.so: expected a "
                          "contiguous float32[3, 4] cpu tensor, got float32[4, 3] cpu");
    Status count(thunderc_model_backward(m, ctx.c, &gy, 1, g.data(), 2));
    CHECK(count.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(count.message() == "training_model.so has 3 gradient(s), got 2 gradient buffers");
    Status none(thunderc_model_backward(m, ctx.c, nullptr, 0, g.data(), g.size()));
    CHECK(none.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(none.message().find("has 1 output(s), got 0 grad_outputs") != std::string::npos);
  }
  // Gradients overlapping what the backward reads, or each other.
  {
    DLTensor w{};
    REQUIRE(Status(thunderc_model_parameter(m, 0, &w)).ok());
    std::vector<DLTensor> bad = g;
    bad[1] = w;  // grad_W into W itself
    Status st(thunderc_model_backward(m, ctx.c, &gy, 1, bad.data(), bad.size()));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "gradient of parameter 'fc.weight' (#1) overlaps parameter 'fc.weight' (#0) in memory; "
                          "gradients must not share memory with the model's parameters (pass a separate buffer)");
    bad = g;
    bad[2].data = s.gy.data();
    Status st2(thunderc_model_backward(m, ctx.c, &gy, 1, bad.data(), bad.size()));
    CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st2.message().find("gradient of parameter 'fc.bias' (#2) overlaps the grad_output for output 'y' (#0)") == 0);
    bad = g;
    bad[2].data = s.gw.data();
    Status st3(thunderc_model_backward(m, ctx.c, &gy, 1, bad.data(), bad.size()));
    CHECK(st3.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st3.message() == "gradient of parameter 'fc.bias' (#2) overlaps gradient of parameter 'fc.weight' (#1) in "
                           "memory; each gradient needs a buffer of its own");
  }
  // Contexts: NULL, another model's.
  {
    Status st(thunderc_model_backward(m, nullptr, &gy, 1, g.data(), g.size()));
    CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(st.message() == "thunderc_model_backward: context is NULL");
    Model other(model_path("training_model"));
    Status st2(thunderc_model_backward(other.m, ctx.c, &gy, 1, g.data(), g.size()));
    CHECK(st2.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(st2.message().find("thunderc_model_backward: the training context belongs to another model") == 0,
                  st2.message());
    int64_t shape[4];
    int32_t ndim = 0;
    CHECK(Status(thunderc_model_gradient_shape(other.m, ctx.c, 0, shape, 4, &ndim)).code() ==
          THUNDERC_STATUS_INVALID_ARGUMENT);
  }
  // The backward entry's own failure.
  {
    s.gy[0] = std::nanf("");
    Status st(thunderc_model_backward(m, ctx.c, &gy, 1, g.data(), g.size()));
    CHECK(st.code() == THUNDERC_STATUS_KERNEL_FAILED);
    CHECK(st.message() == "the backward entry (thunderc_variant_1) of variant #0 of training_model.so failed (code 1): "
                          "grad y contains NaN at flat index 0");
    s.gy = make_gy(2);
  }
  // Still fine after all that.
  REQUIRE(backward(m, s, ctx).ok());
  check_step(s, initial_w(), initial_b());
  thunderc_train_context_free(nullptr);
}

TEST_CASE("training: an inference model refuses the training calls") {
  Model inference(model_path("two_variants"));
  thunderc_model* m = inference.m;
  CHECK(thunderc_model_is_training(m) == 0);
  CHECK(thunderc_model_is_training(nullptr) == 0);
  CHECK(thunderc_model_num_parameters(m) == 0);
  CHECK(thunderc_model_parameter_name(m, 0) == nullptr);
  CHECK(thunderc_model_num_gradients(m) == 0);
  CHECK(thunderc_model_gradient_name(m, 0) == nullptr);
  CHECK(thunderc_model_gradient_is_parameter(m, 0) == -1);

  std::vector<float> x = iota(6), y(6), rs(2);
  std::vector<int64_t> xs{2, 3}, rss{2};
  DLTensor in = f32(x, xs);
  DLTensor outs[2] = {f32(y, xs), f32(rs, rss)};
  thunderc_train_context ctx = reinterpret_cast<thunderc_train_context>(0x1);
  Status st(thunderc_model_forward_train(m, &in, 1, outs, 2, &ctx));
  CHECK(st.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(st.message() == "thunderc_model_forward_train: two_variants.so was compiled without --autograd, so it has no "
                        "parameters, gradients or backward entries (recompile it with thunderc --autograd to train it)");
  CHECK(ctx == nullptr);

  // Dropout's RNG state belongs to training models.
  CHECK(thunderc_model_rng_blocks(m, 0) == 0);
  CHECK(thunderc_model_rng_blocks(nullptr, 0) == 0);
  Status sst(thunderc_model_set_rng_state(m, 1, 2));
  CHECK(sst.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(sst.message().find("thunderc_model_set_rng_state: two_variants.so was compiled without --autograd") == 0);
  uint64_t seed = 7, offset = 7;
  CHECK(Status(thunderc_model_rng_state(m, &seed, &offset)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  ctx = reinterpret_cast<thunderc_train_context>(0x1);
  CHECK(Status(thunderc_model_forward_train_seeded(m, &in, 1, outs, 2, 1, 2, &ctx)).code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);

  DLTensor p{};
  Status pst(thunderc_model_parameter(m, 0, &p));
  CHECK(pst.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(pst.message().find("thunderc_model_parameter: two_variants.so was compiled without --autograd") == 0);

  // A training model's context offered to it.
  Model training(model_path("training_model"));
  Step s(2);
  Context tctx;
  REQUIRE(forward_train(training.m, s, tctx).ok());
  DLTensor gy = s.grad_out();
  std::vector<DLTensor> g = s.grads();
  Status bst(thunderc_model_backward(m, tctx.c, &gy, 1, g.data(), g.size()));
  CHECK(bst.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(bst.message().find("thunderc_model_backward: two_variants.so was compiled without --autograd") == 0);
  int64_t shape[4];
  int32_t ndim = 0;
  Status gst(thunderc_model_gradient_shape(m, tctx.c, 0, shape, 4, &ndim));
  CHECK(gst.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
  CHECK(gst.message().find("compiled without --autograd") != std::string::npos);
}

TEST_CASE("training: invalid training manifests") {
  const std::string good = read_file(model_path("training_model", ".json"));
  thunderc_model* m = nullptr;
  {
    Status st = open_training_manifest(good, &m);
    REQUIRE_MESSAGE(st.ok(), st.message());
    thunderc_model_close(m);
    m = nullptr;
  }
  const std::string v0_guard = "\"device\": \"cpu\", \"dtype\": \"float32\", \"input\": \"x\", \"shape\": [2, 4]";
  const std::string bias_grad = "{\"kind\": \"parameter\", \"name\": \"fc.bias\"}";
  struct Case {
    std::string name, manifest, expect;
  };
  const Case cases[] = {
      {"offset not a multiple of 64", replace(good, "\"offset\": 64", "\"offset\": 32"),
       "training.parameters[1].offset: 32 is not a multiple of 64"},
      {"offset outside the blob", replace(good, "\"offset\": 64", "\"offset\": 128"),
       "training.parameters[1] ('fc.bias'): bytes [128, 140) lie outside the parameter blob, which "
       "thunderc_parameters says is 128 bytes long"},
      {"bytes", replace(good, "\"bytes\": 12", "\"bytes\": 16"),
       "training.parameters[1].bytes: is 16, but a float32[3] tensor has 12 bytes"},
      {"parameter shape", replace(good, "\"offset\": 0, \"shape\": [3, 4]", "\"offset\": 0, \"shape\": [3, -4]"),
       "training.parameters[0].shape[1]: expected a non-negative integer, got -4"},
      {"parameter dtype", replace(good, "\"dtype\": \"float32\", \"name\": \"fc.bias\"", "\"dtype\": \"float33\", \"name\": \"fc.bias\""),
       "training.parameters[1].dtype: unknown dtype 'float33'"},
      {"duplicate parameter", replace(good, "\"name\": \"fc.bias\", \"offset\"", "\"name\": \"fc.weight\", \"offset\""),
       "training.parameters[1].name: 'fc.weight' is also training.parameters[0]'s name"},
      {"training type", replace(good, "\"training\": {\"gradients\"", "\"training\": [], \"trainin\": {\"gradients\""),
       "training: expected an object, got array"},
      {"parameters missing", replace(good, "\"parameters\": [", "\"parameterz\": ["), "training.parameters: missing"},
      {"gradient kind", replace(good, "{\"kind\": \"input\", \"name\": \"x\"}", "{\"kind\": \"buffer\", \"name\": \"x\"}"),
       "training.gradients[0].kind: expected \"input\" or \"parameter\", got \"buffer\""},
      {"gradient of no input", replace(good, "{\"kind\": \"input\", \"name\": \"x\"}", "{\"kind\": \"input\", \"name\": \"z\"}"),
       "training.gradients[0].name: 'z' is not an input of the model (inputs: x)"},
      {"gradient of no parameter", replace(good, bias_grad, "{\"kind\": \"parameter\", \"name\": \"fc.b\"}"),
       "training.gradients[2].name: 'fc.b' is not a parameter (training.parameters: fc.weight, fc.bias)"},
      {"gradient twice", replace(good, bias_grad, "{\"kind\": \"parameter\", \"name\": \"fc.weight\"}"),
       "training.gradients[2]: the gradient of parameter 'fc.weight' is also training.gradients[1]"},
      {"parameter without gradient", replace(good, ", " + bias_grad, ""),
       "training.gradients: parameter 'fc.bias' has no gradient (every trainable parameter must have one)"},
      {"buffer with a gradient", replace(good, "\"name\": \"fc.bias\", \"offset\": 64", "\"name\": \"fc.bias\", \"offset\": 64, \"trainable\": false"),
       "training.gradients: 'fc.bias' is a buffer (\"trainable\": false) and cannot have a gradient"},
      {"trainable not a bool", replace(good, "\"name\": \"fc.bias\", \"offset\": 64", "\"name\": \"fc.bias\", \"offset\": 64, \"trainable\": 0"),
       "training.parameters[1].trainable: expected true or false, got integer"},
      {"update of a trainable parameter", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"updates\": [0], \"gradients\""),
       "training.updates[0]: parameter 'fc.weight' is trainable; only buffers (\"trainable\": false) are updated by the forward"},
      {"update out of range", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"updates\": [2], \"gradients\""),
       "training.updates[0]"},
      {"gradient_shapes count", replace(good, "[[2, 4], [3, 4], [3]]", "[[2, 4], [3, 4]]"),
       "variants[0].training.backward.gradient_shapes: has 2 entries but training.gradients has 3"},
      {"gradient shape", replace(good, "[[2, 4], [3, 4], [3]]", "[[2, 4], [4, 3], [3]]"),
       "variants[0].training.backward.gradient_shapes[1]: is [4, 3], but parameter 'fc.weight' has shape [3, 4]"},
      {"input gradient shape", replace(good, "[[5, 4], [3, 4], [3]]", "[[2, 4], [3, 4], [3]]"),
       "variants[1].training.backward.gradient_shapes[0]: is [2, 4], but input 'x' has shape [5, 4]"},
      {"variant without training", replace(good, "\"training\": {\"backward\": {\"entry\": \"thunderc_variant_3\"",
                                           "\"trainin\": {\"backward\": {\"entry\": \"thunderc_variant_3\""),
       "variants[1].training: missing (every variant of a training model has one)"},
      {"saved dtype", replace(good, "\"saved\": [{\"dtype\": \"float32\"", "\"saved\": [{\"dtype\": \"float33\""),
       "variants[0].training.saved[0].dtype: unknown dtype 'float33'"},
      {"saved shape", replace(good, "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, 4]}]",
                              "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, \"4\"]}]"),
       "variants[0].training.saved[0].shape[1]: expected a non-negative integer, got string"},
      {"backward missing", replace(good, "\"training\": {\"backward\": {\"entry\": \"thunderc_variant_1\"",
                                   "\"training\": {\"backwards\": {\"entry\": \"thunderc_variant_1\""),
       "variants[0].training.backward: missing"},
      {"backward workspace", replace(good, "\"workspace_bytes\": 256", "\"workspace_bytes\": -256"),
       "variants[0].training.backward.workspace_bytes: expected a non-negative integer, got -256"},
      {"backward entry missing", replace(good, "\"entry\": \"thunderc_variant_3\"", "\"entry\": \"thunderc_variant_9\""),
       "does not export 'thunderc_variant_9', the backward entry of variant #1"},
      {"training variants on two kinds of device", replace(good, v0_guard, replace(v0_guard, "\"cpu\"", "\"cuda:0\"")),
       "variants[1].training: every variant of a training model runs on one kind of device, where its parameters "
       "live: variants[0] is on cuda:0, this one on cpu"},
      {"rng_blocks zero", replace(good, "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, 4]}]",
                                  "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, 4]}], \"rng_blocks\": 0"),
       "variants[0].training.rng_blocks: must be positive (absent: no dropout)"},
      {"rng_blocks negative", replace(good, "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, 4]}]",
                                      "\"saved\": [{\"dtype\": \"float32\", \"shape\": [2, 4]}], \"rng_blocks\": -4"),
       "variants[0].training.rng_blocks: expected a non-negative integer, got -4"},
      {"optimizer kind", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"optimizer\": {\"kind\": \"adam\", \"entry\": \"thunderc_variant_1\", \"workspace_bytes\": 0, \"state\": [\"exp_avg\"], \"scalars\": []}, \"gradients\""),
       "training.optimizer.kind: expected \"sgd\" or \"adamw\", got \"adam\""},
      {"optimizer state", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"optimizer\": {\"kind\": \"adamw\", \"entry\": \"thunderc_variant_1\", \"workspace_bytes\": 0, \"state\": [\"exp_avg\"], \"scalars\": []}, \"gradients\""),
       "training.optimizer.state: is [exp_avg], but adamw's state is [exp_avg, exp_avg_sq]"},
      {"optimizer scalar unknown", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"optimizer\": {\"kind\": \"sgd\", \"entry\": \"thunderc_variant_1\", \"workspace_bytes\": 0, \"state\": [\"momentum_buffer\"], \"scalars\": [\"neg_lr\", \"beta1\"]}, \"gradients\""),
       "training.optimizer.scalars[1]: 'beta1' is no hyperparameter of sgd this runtime computes"},
      {"optimizer scalar twice", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"optimizer\": {\"kind\": \"sgd\", \"entry\": \"thunderc_variant_1\", \"workspace_bytes\": 0, \"state\": [\"momentum_buffer\"], \"scalars\": [\"neg_lr\", \"neg_lr\"]}, \"gradients\""),
       "training.optimizer.scalars[1]: 'neg_lr' is also scalars[0]"},
      {"optimizer entry missing", replace(good, "\"training\": {\"gradients\"", "\"training\": {\"optimizer\": {\"kind\": \"sgd\", \"entry\": \"thunderc_variant_9\", \"workspace_bytes\": 0, \"state\": [\"momentum_buffer\"], \"scalars\": [\"neg_lr\"]}, \"gradients\""),
       "does not export 'thunderc_variant_9', the optimizer's entry"},
      {"symbolic training variant",
       replace(replace(good, "\"id\": 0,", "\"id\": 0, \"dims\": {\"B\": {\"min\": 1, \"max\": 4}},"),
               "\"input\": \"x\", \"shape\": [2, 4]", "\"input\": \"x\", \"shape\": [\"B\", 4]"),
       "variants[0].dims: a training model cannot have symbolic variants"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status st = open_training_manifest(c.manifest, &m);
    CHECK(m == nullptr);
    CHECK(st.code() == THUNDERC_STATUS_MANIFEST);
    CHECK_MESSAGE(st.message().find(c.expect) != std::string::npos, st.message());
  }

  // A variant "training" object in an inference manifest.
  const std::string inference = read_file(model_path("two_variants", ".json"));
  Status st = open_training_manifest(replace(inference, "\"workspace_bytes\": 0}", "\"workspace_bytes\": 0, \"training\": {}}"),
                                     &m, "env_manifest");
  CHECK(m == nullptr);
  CHECK(st.code() == THUNDERC_STATUS_MANIFEST);
  CHECK_MESSAGE(st.message().find("variants[0].training: present, but the manifest has no top-level training object") !=
                    std::string::npos,
                st.message());

  // A training manifest, but no blob of initial values.
  Status nb(thunderc_model_open(model_path("training_no_parameters").c_str(), nullptr, &m));
  CHECK(m == nullptr);
  CHECK(nb.code() == THUNDERC_STATUS_MANIFEST);
  CHECK_MESSAGE(nb.message().find("has a training manifest (thunderc --autograd) but does not export "
                                  "thunderc_parameters") != std::string::npos,
                nb.message());
}

TEST_CASE("training: concurrent training steps on one model") {
  Model h(model_path("training_model"));
  std::vector<std::thread> threads;
  std::vector<int> failures(6, 0);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        Step s(t % 2 ? 5 : 2, t + i);
        Context ctx;
        DLTensor in = s.in(), out = s.out();
        thunderc_status st = thunderc_model_forward_train(h.m, &in, 1, &out, 1, &ctx.c);
        if (!st) {
          DLTensor gy = s.grad_out();
          std::vector<DLTensor> g = s.grads();
          st = thunderc_model_backward(h.m, ctx.c, &gy, 1, g.data(), g.size());
        }
        const Grads want = ref_grads(s.x, s.gy, s.rows, initial_w());
        if (st || s.y != ref_y(s.x, s.rows, initial_w(), initial_b()) || s.gx != want.x || s.gw != want.w ||
            s.gb != want.b)
          ++failures[t];
        thunderc_status_free(st);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(failures == std::vector<int>(6, 0));
}

TEST_CASE("training: C++ wrapper") {
  thunderc::TrainContext outlives;  // destroyed after the model: allowed
  {
    thunderc::Model model(model_path("training_model"));
    CHECK(model.is_training());
    CHECK(model.parameter_names() == std::vector<std::string>{"fc.weight", "fc.bias"});
    CHECK(model.gradient_names() == std::vector<std::string>{"x", "fc.weight", "fc.bias"});
    CHECK_FALSE(model.gradient_is_parameter(0));
    CHECK(model.gradient_is_parameter(1));

    const std::vector<float> xv = make_x(2), gyv = make_gy(2);
    auto x = thunderc::HostTensor::from_vector<float>({2, 4}, xv);
    auto gy = thunderc::HostTensor::from_vector<float>({2, 3}, gyv);
    auto [outs, ctx] = model.forward_train({x});
    REQUIRE(outs.size() == 1);
    REQUIRE(static_cast<bool>(ctx));
    CHECK(outs[0].shape() == std::vector<int64_t>{2, 3});
    CHECK(outs[0].to_vector<float>() == ref_y(xv, 2, initial_w(), initial_b()));
    CHECK(model.gradient_shape(ctx, 0) == std::vector<int64_t>{2, 4});
    std::vector<thunderc::HostTensor> grads = model.backward(ctx, {gy});
    REQUIRE(grads.size() == 3);
    const Grads want = ref_grads(xv, gyv, 2, initial_w());
    CHECK(grads[0].shape() == std::vector<int64_t>{2, 4});
    CHECK(grads[0].to_vector<float>() == want.x);
    CHECK(grads[1].shape() == std::vector<int64_t>{3, 4});
    CHECK(grads[1].to_vector<float>() == want.w);
    CHECK(grads[2].to_vector<float>() == want.b);
    CHECK(model.backward(ctx, {gy})[1].to_vector<float>() == want.w);  // again from the same context

    // An SGD step through parameter(): the next forward sees it.
    DLTensor w = model.parameter(0);
    float* wp = static_cast<float*>(w.data);
    const std::vector<float> gw = grads[1].to_vector<float>();
    std::vector<float> new_w = initial_w();
    for (size_t k = 0; k < gw.size(); ++k) {
      wp[k] -= 0.5f * gw[k];
      new_w[k] -= 0.5f * gw[k];
    }
    CHECK(model.run({x})[0].to_vector<float>() == ref_y(xv, 2, new_w, initial_b()));

    try {
      model.backward(ctx, {thunderc::HostTensor::from_vector<float>({3, 2}, std::vector<float>(6, 0.0f))});
      FAIL("expected an exception");
    } catch (const thunderc::Error& e) {
      CHECK(e.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
      CHECK(std::string(e.what()).find("grad_output for output 'y' (#0)") == 0);
    }
    CHECK_THROWS_AS(model.parameter(5), thunderc::Error);

    thunderc::TrainContext moved = std::move(ctx);
    CHECK_FALSE(static_cast<bool>(ctx));
    CHECK(static_cast<bool>(moved));
    outlives = std::move(moved);
  }
  outlives.reset();

  thunderc::Model inference(model_path("two_variants"));
  CHECK_FALSE(inference.is_training());
  CHECK(inference.parameter_names().empty());
  try {
    inference.forward_train({thunderc::HostTensor::from_vector<float>({2, 3}, iota(6))});
    FAIL("expected an exception");
  } catch (const thunderc::Error& e) {
    CHECK(e.code() == THUNDERC_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("compiled without --autograd") != std::string::npos);
  }
}

// --optimizer (training_optimizer_model.json: the same model with the hand-written sgd update thunderc_variant_4):
// the runtime's side of the update. Hyperparameters, state, in-place buffers, the step count and refusals.
TEST_CASE("training: the optimizer entry updates parameters and state in place") {
  thunderc::Model model(model_path("training_optimizer_model"));
  CHECK(model.optimizer() == "sgd");
  thunderc_optimizer_options o = model.optimizer_options();  // torch.optim.SGD's defaults
  CHECK(o.struct_size == sizeof(thunderc_optimizer_options));
  CHECK(o.lr == 1e-3);
  CHECK(o.momentum == 0);
  CHECK(o.weight_decay == 0);
  o.lr = 0.5;
  o.momentum = 0.75;
  o.dampening = 0.5;
  const std::vector<float> xv = make_x(2), gyv = make_gy(2);
  auto x = thunderc::HostTensor::from_vector<float>({2, 4}, xv);
  auto gy = thunderc::HostTensor::from_vector<float>({2, 3}, gyv);
  auto step = model.forward_train({x});
  std::vector<thunderc::HostTensor> grads = model.backward(step.context, {gy});
  const Grads g = ref_grads(xv, gyv, 2, initial_w());
  // The input's gradient is not read: NaN there changes nothing.
  std::fill(grads[0].data<float>(), grads[0].data<float>() + grads[0].numel(), std::nanf(""));
  // Step 1: the buffer starts at the gradient; step 2: buf * 0.75 + 0.5 * g (quarter steps: exact in float32).
  std::vector<float> w = initial_w(), b = initial_b(), bw = g.w, bb = g.b;
  for (size_t k = 0; k < w.size(); ++k) w[k] += -0.5f * bw[k];
  for (size_t k = 0; k < b.size(); ++k) b[k] += -0.5f * bb[k];
  model.optimizer_step(grads, o);
  CHECK(model.optimizer_steps() == 1);
  auto value = [](const DLTensor& t) {
    const float* p = static_cast<const float*>(t.data);
    int64_t n = 1;
    for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
    return std::vector<float>(p, p + n);
  };
  CHECK(value(model.parameter(0)) == w);
  CHECK(value(model.parameter(1)) == b);
  CHECK(value(model.optimizer_state(0, 0)) == bw);
  model.optimizer_step(grads, o);
  for (size_t k = 0; k < w.size(); ++k) {
    bw[k] = bw[k] * 0.75f + 0.5f * g.w[k];
    w[k] += -0.5f * bw[k];
  }
  for (size_t k = 0; k < b.size(); ++k) {
    bb[k] = bb[k] * 0.75f + 0.5f * g.b[k];
    b[k] += -0.5f * bb[k];
  }
  CHECK(model.optimizer_steps() == 2);
  CHECK(value(model.parameter(0)) == w);
  CHECK(value(model.parameter(1)) == b);
  CHECK(value(model.optimizer_state(1, 0)) == bb);
  // Refusals change nothing.
  thunderc_optimizer_options bad = o;
  bad.lr = -1;
  CHECK_THROWS_WITH_AS(model.optimizer_step(grads, bad), doctest::Contains("invalid learning rate"), thunderc::Error);
  bad = o;
  bad.nesterov = 1;
  bad.dampening = 0;
  bad.momentum = 0;
  CHECK_THROWS_WITH_AS(model.optimizer_step(grads, bad), doctest::Contains("nesterov momentum requires"), thunderc::Error);
  std::vector<thunderc::HostTensor> two(grads.begin(), grads.begin() + 2);
  CHECK_THROWS_WITH_AS(model.optimizer_step(two, o), doctest::Contains("has 3 gradient(s), got 2"), thunderc::Error);
  CHECK_THROWS_WITH_AS(model.optimizer_state(0, 1), doctest::Contains("slot 1 out of range"), thunderc::Error);
  CHECK_THROWS_WITH_AS(model.optimizer_state(2, 0), doctest::Contains("parameter 2 out of range"), thunderc::Error);
  CHECK(model.optimizer_steps() == 2);
  CHECK(value(model.parameter(0)) == w);
  // The step count is settable (a resumed run): at 0 the next step starts the buffer again.
  model.set_optimizer_steps(0);
  model.optimizer_step(grads, o);
  CHECK(model.optimizer_steps() == 1);
  CHECK(value(model.optimizer_state(0, 0)) == g.w);
  // A model compiled without --optimizer has none.
  thunderc::Model plain(model_path("training_model"));
  CHECK(plain.optimizer().empty());
  CHECK_THROWS_WITH_AS(plain.optimizer_step(grads, o), doctest::Contains("was compiled without --optimizer"), thunderc::Error);
  CHECK(thunderc_model_optimizer_steps(plain.get()) == 0);
}
