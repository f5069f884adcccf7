// A model's fused attention end to end (label cuda-emu): the runtime opens models/cuda_sdpa_model.cpp, runs it
// under the fake driver, and its device_api.sdpa goes through cuda_exec.cpp (cuDNN state per device, the library
// workspace per stream) to runtime/src/cudnn.cpp and the fake cuDNN. Shares test_cuda_conv.cpp's main().
// Tolerance as in test_cudnn_sdpa.cpp: 2e-3 of max |O| for float16, 1.5e-2 for bfloat16.
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fake_cudnn.h"
#include "fp16_util.hpp"
#include "test_util.hpp"
#include "thunderc/abi.h"
#include "thunderc/runtime.h"

using namespace thunderc_test;

namespace {

template <class F>
F model_fn(const std::string& lib, const char* name) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(h != nullptr, lib << " cannot be opened (run through ctest)");
  auto f = reinterpret_cast<F>(dlsym(h, name));
  REQUIRE_MESSAGE(static_cast<bool>(f), name);
  return f;
}

thunderc_fake_cudnn_stats_t cudnn_stats() {
  thunderc_fake_cudnn_stats_t s{};
  model_fn<thunderc_fake_cudnn_stats_fn>("libcudnn.so.9", "thunderc_fake_cudnn_stats")(&s);
  return s;
}

const DLDevice kDev{kDLCUDA, 0};
constexpr int64_t B = 2, H = 3, SQ = 16, SKV = 24, D = 32, DV = 16;

struct Device16 {
  void* ptr = nullptr;
  explicit Device16(size_t n) {
    Status st(thunderc_device_alloc(kDev, n * 2, &ptr));
    REQUIRE_MESSAGE(st.ok(), st.message());
  }
  ~Device16() { thunderc_status_free(thunderc_device_free(kDev, ptr)); }
};

// The model's inputs (16-bit values of `dtype`), its output, and a double reference.
struct Problem {
  thunderc_sdpa op;
  std::vector<uint16_t> q, k, v, mask, o;
  explicit Problem(const thunderc_sdpa& op_)
      : op(op_),
        q(B * H * SQ * D), k(B * H * SKV * D), v(B * H * SKV * DV), mask(B * H * SQ * SKV), o(B * H * SQ * DV, 0x7bad) {
    auto fill = [&](std::vector<uint16_t>& x, double a, double amp, double offset) {
      for (size_t i = 0; i < x.size(); ++i) x[i] = encode(static_cast<float>(offset + amp * std::sin(a * static_cast<double>(i))));
    };
    fill(q, 0.41, 1.5, 0), fill(k, 0.83, 1.5, 0), fill(v, 0.57, 1.0, 0.25), fill(mask, 0.31, 2.0, -1);
  }
  uint16_t encode(float f) const { return op.dtype == THUNDERC_LIB_BFLOAT16 ? to_bf16(f) : to_half(f); }
  double decode(uint16_t h) const { return op.dtype == THUNDERC_LIB_BFLOAT16 ? from_bf16(h) : from_half(h); }

  double relative_error() const {
    double err = 0, top = 0;
    std::vector<double> s(SKV);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < SQ; ++i) {
          double mx = -std::numeric_limits<double>::infinity(), z = 0;
          for (int64_t j = 0; j < SKV; ++j) {
            double acc = 0;
            for (int64_t x = 0; x < D; ++x) acc += decode(q[((b * H + h) * SQ + i) * D + x]) * decode(k[((b * H + h) * SKV + j) * D + x]);
            acc *= op.scale;
            if (op.has_mask) acc += decode(mask[op.mask_batch * b + op.mask_head * h + op.mask_row * i + j]);
            if (op.causal && j > i) acc = -std::numeric_limits<double>::infinity();
            mx = std::max(mx, s[j] = acc);
          }
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t y = 0; y < DV; ++y) {
            double ref = 0;
            for (int64_t j = 0; j < SKV; ++j) ref += s[j] / z * decode(v[((b * H + h) * SKV + j) * DV + y]);
            const double got = decode(o[((b * H + h) * SQ + i) * DV + y]);
            if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
            err = std::max(err, std::fabs(got - ref));
            top = std::max(top, std::fabs(ref));
          }
        }
    return err / top;
  }
};

// Runs the model once with `p.op`; "" or the status message. Fills p.o.
std::string run(thunderc_model* m, const std::string& so, Problem& p) {
  model_fn<void (*)(const thunderc_sdpa*)>(so, "thunderc_test_sdpa_set_op")(&p.op);
  Device16 dq(p.q.size()), dk(p.k.size()), dv(p.v.size()), dm(p.mask.size()), dout(p.o.size());
  const std::pair<Device16*, std::vector<uint16_t>*> ins[] = {{&dq, &p.q}, {&dk, &p.k}, {&dv, &p.v}, {&dm, &p.mask},
                                                               {&dout, &p.o}};
  for (const auto& [dst, src] : ins) {
    Status c(thunderc_device_copy_to_device(kDev, dst->ptr, src->data(), src->size() * 2, nullptr));
    REQUIRE(c.ok());
  }
  int64_t shapes[5][4] = {{B, H, SQ, D}, {B, H, SKV, D}, {B, H, SKV, DV}, {B, H, SQ, SKV}, {B, H, SQ, DV}};
  DLTensor t[5]{};
  for (int i = 0; i < 5; ++i) {
    t[i].data = ins[i].first->ptr, t[i].device = kDev, t[i].ndim = 4, t[i].dtype = DLDataType{kDLFloat, 16, 1};
    t[i].shape = shapes[i];
  }
  Status st(thunderc_model_run(m, t, 4, &t[4], 1));
  if (!st.ok()) return st.message();
  Status back(thunderc_device_copy_to_host(kDev, p.o.data(), dout.ptr, p.o.size() * 2, nullptr));
  REQUIRE(back.ok());
  return "";
}

thunderc_sdpa base_op(const std::string& so) {
  thunderc_sdpa op{};
  model_fn<void (*)(thunderc_sdpa*)>(so, "thunderc_test_sdpa_get_op")(&op);
  return op;
}

}  // namespace

TEST_CASE("cudnn sdpa end to end: float16 and bfloat16 attention runs through device_api.sdpa, its plan built once") {
  const std::string so = model_path("cuda_sdpa_model");
  thunderc_model* m = nullptr;
  Status open(thunderc_model_open(so.c_str(), nullptr, &m));
  REQUIRE_MESSAGE(open.ok(), open.message());
  const long fallbacks = model_fn<long (*)()>(so, "thunderc_test_sdpa_fallbacks")();

  thunderc_sdpa op = base_op(so);
  op.causal = 1, op.has_mask = 1;
  op.mask_batch = H * SQ * SKV, op.mask_head = 0, op.mask_row = SKV;  // broadcast over heads
  const auto s0 = cudnn_stats();
  for (int i = 0; i < 3; ++i) {
    Problem p(op);
    REQUIRE(run(m, so, p) == "");
    CHECK(p.relative_error() <= 2e-3);
  }
  const auto s1 = cudnn_stats();
  CHECK(s1.plans_finalized == s0.plans_finalized + 1);
  CHECK(s1.executes == s0.executes + 3);

  // bfloat16 data in the same buffers, a mask broadcast over the batch, another id.
  op.id = 1, op.dtype = THUNDERC_LIB_BFLOAT16, op.causal = 0;
  op.mask_batch = 0, op.mask_head = SQ * SKV;
  Problem p(op);
  REQUIRE(run(m, so, p) == "");
  CHECK(p.relative_error() <= 1.5e-2);
  CHECK(model_fn<long (*)()>(so, "thunderc_test_sdpa_fallbacks")() == fallbacks);
  thunderc_model_close(m);
}

TEST_CASE("cudnn sdpa end to end: float32 and d 136 fall back (the model's own kernel would run)") {
  const std::string so = model_path("cuda_sdpa_model");
  thunderc_model* m = nullptr;
  Status open(thunderc_model_open(so.c_str(), nullptr, &m));
  REQUIRE_MESSAGE(open.ok(), open.message());
  const long before = model_fn<long (*)()>(so, "thunderc_test_sdpa_fallbacks")();
  thunderc_sdpa op = base_op(so);
  op.id = 7, op.dtype = THUNDERC_LIB_FLOAT32;
  Problem f32(op);
  CHECK(run(m, so, f32).find("failed (code 1): sdpa fell back") != std::string::npos);
  op.id = 8, op.dtype = THUNDERC_LIB_FLOAT16, op.d = 136;  // never read: the call falls back first
  Problem d136(op);
  CHECK(run(m, so, d136).find("failed (code 1): sdpa fell back") != std::string::npos);
  CHECK(model_fn<long (*)()>(so, "thunderc_test_sdpa_fallbacks")() == before + 2);
  thunderc_model_close(m);
}

TEST_CASE("cudnn sdpa end to end: an operation of an older ABI (struct_size too small) is an error naming the call") {
  const std::string so = model_path("cuda_sdpa_model");
  thunderc_model* m = nullptr;
  Status open(thunderc_model_open(so.c_str(), nullptr, &m));
  REQUIRE_MESSAGE(open.ok(), open.message());
  thunderc_sdpa op = base_op(so);
  op.id = 9, op.struct_size = sizeof(thunderc_sdpa) - 8;
  Problem p(op);
  const std::string message = run(m, so, p);
  INFO(message);
  CHECK(message.find("device_api.sdpa #9: NULL context or an operation of an older ABI (struct_size " +
                     std::to_string(sizeof(thunderc_sdpa) - 8) + ", expected at least " +
                     std::to_string(sizeof(thunderc_sdpa)) + ")") != std::string::npos);
  thunderc_model_close(m);
}
