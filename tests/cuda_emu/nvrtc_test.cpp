// codegen/nvfuser/nvrtc.{h,cpp}: NVRTC through dlopen. Registered only when configure found libnvrtc; no GPU
// is needed (cubins are only produced and inspected).
#include "codegen/nvfuser/nvrtc.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/error.h"

namespace {

const char* kSource = R"(
static __device__ __forceinline__ float tc_sq(float x) { return x * x; }

extern "C" __global__ void __launch_bounds__(256) tc_small_a(float* __restrict__ p0, const float* __restrict__ p1, long long n) {
  __shared__ float tile[256];
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? tc_sq(p1[i]) : 0.0f;
  __syncthreads();
  if (i < n) p0[i] = tile[(threadIdx.x + 1) % 256] + expf(p1[i]);
}

extern "C" __global__ void tc_small_b(float* __restrict__ p0, const int* __restrict__ idx, int j) {
  float a[256];
  for (int k = 0; k < 256; ++k) a[(k * 7) & 255] = p0[k * j + idx[k]];
  p0[threadIdx.x] = a[j & 255] + a[(j * 3) & 255];
}
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("nvrtc_info finds NVRTC and its architectures") {
  const thunderc::NvrtcInfo& info = thunderc::nvrtc_info();
  INFO(info.reason);
  REQUIRE(info.available);
  CHECK(!info.version.empty());
  CHECK(info.version.find('.') != std::string::npos);
  CHECK(has(info.archs, "sm_80"));
  CHECK(has(info.archs, "sm_90"));
  CHECK(&info == &thunderc::nvrtc_info());
}

TEST_CASE("parse_cuda_archs") {
  using thunderc::parse_cuda_archs;
  CHECK(parse_cuda_archs("sm_80,sm_90") == std::vector<std::string>{"sm_80", "sm_90"});
  CHECK(parse_cuda_archs(" sm_90 , sm_80,sm_90,") == std::vector<std::string>{"sm_80", "sm_90"});
  if (has(thunderc::nvrtc_info().archs, "sm_100")) {
    CHECK(parse_cuda_archs("sm_100,sm_86") == std::vector<std::string>{"sm_86", "sm_100"});
  }
  CHECK_THROWS_WITH_AS(parse_cuda_archs("sm_80,sm_12"),
                       doctest::Contains("CUDA architecture 'sm_12' is not supported (NVRTC"), thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs("sm_12"), doctest::Contains("sm_80, "), thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs("sm_80,ampere"), doctest::Contains("malformed CUDA architecture 'ampere'"),
                       thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs("80"), doctest::Contains("'80'"), thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs("compute_90"), doctest::Contains("'compute_90'"), thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs(""), doctest::Contains("no CUDA architecture given"), thunderc::UserError);
  CHECK_THROWS_WITH_AS(parse_cuda_archs(" , "), doctest::Contains("no CUDA architecture given"), thunderc::UserError);
}

TEST_CASE("compile_cuda: cubins for sm_80 and sm_90, PTX for sm_90, resources") {
  REQUIRE(thunderc::nvrtc_info().available);
  const thunderc::CudaCompileResult r = thunderc::compile_cuda(kSource, {"sm_80", "sm_90"}, {"tc_small_a", "tc_small_b"});
  REQUIRE(r.images.size() == 3);
  const char elf[4] = {0x7f, 'E', 'L', 'F'};
  for (int i = 0; i < 2; ++i) {
    const thunderc::CudaImage& img = r.images[i];
    CHECK(img.arch == (i == 0 ? "sm_80" : "sm_90"));
    CHECK_FALSE(img.ptx);
    REQUIRE(img.data.size() > 4);
    CHECK(std::equal(elf, elf + 4, img.data.begin()));
  }
  const thunderc::CudaImage& ptx = r.images[2];
  CHECK(ptx.arch == "compute_90");
  CHECK(ptx.ptx);
  REQUIRE(!ptx.data.empty());
  CHECK(ptx.data.back() != 0);
  const std::string text(ptx.data.begin(), ptx.data.end());
  CHECK(text.find(".target sm_90") != std::string::npos);
  CHECK(text.find(".entry tc_small_a") != std::string::npos);
  CHECK(text.find(".entry tc_small_b") != std::string::npos);

  REQUIRE(r.resources.size() == 4);
  const char* order[4][2] = {{"tc_small_a", "sm_80"}, {"tc_small_b", "sm_80"}, {"tc_small_a", "sm_90"}, {"tc_small_b", "sm_90"}};
  for (int i = 0; i < 4; ++i) {
    const thunderc::KernelResources& k = r.resources[i];
    CAPTURE(i);
    CHECK(k.kernel == order[i][0]);
    CHECK(k.arch == order[i][1]);
    CHECK(k.registers > 0);
    CHECK(k.registers <= 255);
  }
  CHECK(r.resources[0].static_shared_bytes == 1024);
  CHECK(r.resources[1].static_shared_bytes == 0);
  CHECK(r.resources[1].local_bytes >= 1024);
  CHECK(r.resources[0].local_bytes == 0);
}

TEST_CASE("compile_cuda is deterministic") {
  REQUIRE(thunderc::nvrtc_info().available);
  const auto a = thunderc::compile_cuda(kSource, {"sm_80", "sm_90"}, {"tc_small_a"});
  const auto b = thunderc::compile_cuda(kSource, {"sm_80", "sm_90"}, {"tc_small_a"});
  REQUIRE(a.images.size() == b.images.size());
  for (size_t i = 0; i < a.images.size(); ++i) {
    CHECK(a.images[i].arch == b.images[i].arch);
    CHECK(a.images[i].data == b.images[i].data);
  }
}

TEST_CASE("compile_cuda: a source that does not compile is an InternalError with NVRTC's log") {
  REQUIRE(thunderc::nvrtc_info().available);
  const std::string bad =
      "extern \"C\" __global__ void k(float* p) {\n"
      "  p[0] = undefined_thing + 1.0f;\n"
      "}\n";
  try {
    thunderc::compile_cuda(bad, {"sm_80"}, {"k"});
    FAIL("expected an InternalError");
  } catch (const thunderc::InternalError& e) {
    const std::string what = e.what();
    CHECK(what.find("identifier \"undefined_thing\" is undefined") != std::string::npos);
    CHECK(what.find("2 |   p[0] = undefined_thing + 1.0f;") != std::string::npos);
    CHECK(what.find("bug in thunderc") != std::string::npos);
  }
}

TEST_CASE("compile_cuda: unknown architecture and unknown kernel") {
  REQUIRE(thunderc::nvrtc_info().available);
  CHECK_THROWS_WITH_AS(thunderc::compile_cuda(kSource, {"sm_12"}, {}), doctest::Contains("sm_12"), thunderc::UserError);
  CHECK_THROWS_WITH_AS(thunderc::compile_cuda(kSource, {"sm_80"}, {"tc_missing"}),
                       doctest::Contains("kernel 'tc_missing' is not a __global__ entry"), thunderc::InternalError);
}

TEST_CASE("the emulation contract file is valid CUDA for NVRTC") {
  REQUIRE(thunderc::nvrtc_info().available);
  const std::string source = read_text(THUNDERC_CUDA_EMU_CONTRACT_DIR "/kernels.cu");
  REQUIRE(!source.empty());
  const auto r = thunderc::compile_cuda(source, {"sm_80", "sm_90"}, {"tc_v0_k3", "tc_v0_k4", "tc_v0_k5"});
  CHECK(r.images.size() == 3);
  CHECK(r.resources.size() == 6);
  CHECK(r.resources[1].static_shared_bytes == 32);  // tc_v0_k4: float warp_sums[8]
}
