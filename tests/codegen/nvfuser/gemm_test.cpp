// The FP32 GEMM / conv2d CUDA generators (codegen/nvfuser/gemm.h), without a GPU:
//   "nvrtc: ..."    every variant the generators emit compiles with NVRTC (sm_80, sm_90) in ONE translation unit;
//   "path: ..."     which kernel each shape gets, and that the text is self-contained;
//   "emulated: ..." the kernels run on the CPU through tests/cuda_emu (each CUDA thread a fiber, real
//                   __syncthreads and shuffles) and match a double-precision reference within
//                   |got - ref| <= 1e-4 * |ref| + 1e-4 * sqrt(K) (inputs uniform in [-1, 1]).
// The emulated kernels of all cases are compiled once into one shared library (cached in THUNDERC_TEST_TMP by a
// hash of the text, so the ctest processes share it).
#include <dlfcn.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/nvfuser/gemm.h"
#include "codegen/nvfuser/nvfuser_backend.h"
#include "codegen/nvfuser/nvrtc.h"

using thunderc::cuda::Conv2dSpec;
using thunderc::cuda::conv2d_kernel;
using thunderc::cuda::gemm_kernel;
using thunderc::cuda::GemmSpec;
using thunderc::cuda::KernelLaunch;

namespace {

// ---- cases ---------------------------------------------------------------------------------------------

enum class Epi { None, Bias, Index };

struct GemmCase {
  std::string id;
  GemmSpec spec;
  Epi epi = Epi::None;
  std::string expect;  // the path gemm_kernel must choose
};

struct ConvCase {
  std::string id;
  Conv2dSpec spec;
  Epi epi = Epi::None;
  std::string expect;
};

// Row-major A [batch][M][K], B [batch][K][N], C [batch][M][N].
GemmSpec row_major(long long batch, long long M, long long N, long long K) {
  GemmSpec s;
  s.batch = batch, s.M = M, s.N = N, s.K = K;
  s.a_batch = M * K, s.a_row = K, s.a_col = 1;
  s.b_batch = K * N, s.b_row = N, s.b_col = 1;
  s.c_batch = M * N, s.c_row = N, s.c_col = 1;
  return s;
}
// As torch.nn.Linear: x [M][K], weight [N][K] (B[k][n] = weight[n][k]), out [M][N].
GemmSpec linear(long long M, long long N, long long K) {
  GemmSpec s = row_major(1, M, N, K);
  s.b_batch = 0, s.b_row = 1, s.b_col = K;
  return s;
}
GemmSpec with_tile(GemmSpec s, int tile) {
  s.tile = tile;
  return s;
}
GemmSpec transposed_a(GemmSpec s) {  // A stored [K][M]
  s.a_row = 1, s.a_col = s.M, s.a_batch = s.M * s.K;
  return s;
}
GemmSpec column_major_c(GemmSpec s) {  // C stored [N][M]
  s.c_row = 1, s.c_col = s.M, s.c_batch = s.M * s.N;
  return s;
}

const std::vector<GemmCase>& gemm_cases() {
  static const std::vector<GemmCase> cases = [] {
    std::vector<GemmCase> c;
    c.push_back({"odd32", with_tile(row_major(1, 37, 53, 29), 32), Epi::None, "tiled32"});
    c.push_back({"odd64", with_tile(row_major(1, 37, 53, 29), 64), Epi::None, "tiled64"});
    c.push_back({"odd128", with_tile(row_major(1, 37, 53, 29), 128), Epi::None, "tiled128"});
    c.push_back({"odd_auto", row_major(1, 37, 53, 29), Epi::Bias, "tiled32"});
    c.push_back({"multi32", row_major(2, 70, 75, 40), Epi::Bias, "tiled32"});
    c.push_back({"multi64", with_tile(row_major(1, 130, 70, 40), 64), Epi::Index, "tiled64"});
    c.push_back({"multi128", with_tile(row_major(1, 130, 140, 20), 128), Epi::Bias, "tiled128"});
    c.push_back({"vec4_32", row_major(1, 64, 68, 32), Epi::None, "tiled32"});
    c.push_back({"vec4_128", with_tile(row_major(1, 36, 44, 24), 128), Epi::None, "tiled128"});
    c.push_back({"trans_a", transposed_a(row_major(1, 37, 53, 29)), Epi::None, "tiled32"});
    c.push_back({"trans_a_vec4", transposed_a(row_major(1, 36, 52, 28)), Epi::Index, "tiled32"});
    c.push_back({"trans_a_vec4_64", with_tile(transposed_a(row_major(1, 36, 52, 28)), 64), Epi::None, "tiled64"});
    c.push_back({"linear", linear(33, 45, 40), Epi::Bias, "tiled32"});
    c.push_back({"linear_odd_k", linear(33, 45, 39), Epi::Bias, "tiled32"});
    c.push_back({"linear128", with_tile(linear(20, 30, 36), 128), Epi::Bias, "tiled128"});
    c.push_back({"col_major_c", column_major_c(row_major(1, 37, 53, 29)), Epi::Index, "tiled32"});
    c.push_back({"col_major_c128", with_tile(column_major_c(row_major(1, 37, 53, 29)), 128), Epi::None, "tiled128"});
    {
      GemmSpec s = row_major(3, 20, 24, 18);
      s.a_batch = 0;  // one A shared by the batch
      c.push_back({"batch_shared_a", s, Epi::Index, "tiled32"});
    }
    {
      GemmSpec s = row_major(2, 40, 36, 12);
      s.b_batch = 0;  // one B shared by the batch (matmul of a batch by a matrix)
      c.push_back({"batch_shared_b", with_tile(s, 64), Epi::Index, "tiled64"});
    }
    c.push_back({"ones_tiled", with_tile(row_major(1, 1, 1, 1), 32), Epi::Bias, "tiled32"});
    c.push_back({"k1", row_major(1, 17, 19, 1), Epi::None, "tiled32"});
    c.push_back({"k0", row_major(1, 9, 10, 0), Epi::Bias, "tiled32"});
    // small path
    c.push_back({"ones", row_major(1, 1, 1, 1), Epi::Bias, "warp_dot"});
    c.push_back({"gemv_linear4", linear(1, 37, 200), Epi::Bias, "warp_dot4"});
    c.push_back({"gemv_linear", linear(1, 37, 199), Epi::Bias, "warp_dot"});
    c.push_back({"gemv_rowmajor_b", row_major(1, 1, 70, 100), Epi::Bias, "slice"});
    c.push_back({"matvec_n1", row_major(1, 50, 1, 64), Epi::Index, "warp_dot4"});
    c.push_back({"matvec_n1_transposed", transposed_a(row_major(1, 50, 1, 63)), Epi::None, "slice"});
    c.push_back({"small_m5_linear", linear(5, 40, 33), Epi::Bias, "warp_dot"});
    c.push_back({"small_m8_linear4", linear(8, 12, 36), Epi::Index, "warp_dot4"});
    {
      GemmSpec s = row_major(3, 3, 20, 17);
      s.b_batch = 0;
      c.push_back({"small_batch_shared_b", s, Epi::Index, "slice"});
    }
    {
      GemmSpec s = row_major(2, 30, 2, 16);
      s.a_batch = 0;
      c.push_back({"small_n2_shared_a", s, Epi::Index, "warp_dot"});
    }
    return c;
  }();
  return cases;
}

Conv2dSpec conv(long long N, long long C, long long H, long long W, long long K, long long R, long long S,
                long long stride, long long pad, long long dil, long long groups) {
  Conv2dSpec s;
  s.N = N, s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = S;
  s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad, s.dil_h = s.dil_w = dil, s.groups = groups;
  s.OH = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  s.OW = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  return s;
}
Conv2dSpec conv_tile(Conv2dSpec s, int tile) {
  s.tile = tile;
  return s;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = [] {
    std::vector<ConvCase> c;
    c.push_back({"general", conv(2, 3, 9, 8, 5, 3, 3, 1, 0, 1, 1), Epi::Bias, "conv_tiled32"});
    c.push_back({"strided", conv(2, 3, 9, 8, 5, 3, 3, 2, 0, 1, 1), Epi::None, "conv_tiled32"});
    c.push_back({"padded", conv(2, 3, 7, 6, 5, 3, 3, 1, 1, 1, 1), Epi::Index, "conv_tiled32"});
    c.push_back({"stride2_pad1", conv(1, 4, 9, 9, 6, 3, 3, 2, 1, 1, 1), Epi::Bias, "conv_tiled32"});
    c.push_back({"dilated", conv(1, 3, 9, 10, 4, 3, 3, 1, 2, 2, 1), Epi::Bias, "conv_tiled32"});
    c.push_back({"grouped", conv(2, 4, 7, 7, 6, 3, 3, 1, 1, 1, 2), Epi::Bias, "conv_tiled32"});
    c.push_back({"depthwise", conv(2, 6, 7, 8, 6, 3, 3, 1, 1, 1, 6), Epi::Bias, "depthwise"});
    c.push_back({"depthwise_s2_mult2", conv(1, 3, 9, 9, 6, 3, 3, 2, 1, 1, 3), Epi::Index, "depthwise"});
    c.push_back({"depthwise_as_gemm", conv_tile(conv(1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 4), 32), Epi::Bias,
                 "conv_tiled32"});
    c.push_back({"pointwise", conv(2, 9, 5, 7, 12, 1, 1, 1, 0, 1, 1), Epi::Bias, "conv1x1_tiled32"});
    c.push_back({"pointwise_k4", conv(2, 9, 5, 7, 4, 1, 1, 1, 0, 1, 1), Epi::Bias, "conv1x1_slice"});
    c.push_back({"pointwise_vec4", conv(1, 8, 4, 8, 12, 1, 1, 1, 0, 1, 1), Epi::None, "conv1x1_tiled32"});
    c.push_back({"pointwise_stride2", conv(1, 5, 7, 7, 6, 1, 1, 2, 0, 1, 1), Epi::None, "conv_tiled32"});
    {
      Conv2dSpec s = conv(1, 3, 8, 9, 5, 2, 3, 1, 0, 1, 1);
      s.stride_h = 2, s.pad_h = 1, s.dil_w = 2;
      s.OH = (s.H + 2 * s.pad_h - s.dil_h * (s.R - 1) - 1) / s.stride_h + 1;
      s.OW = (s.W + 2 * s.pad_w - s.dil_w * (s.S - 1) - 1) / s.stride_w + 1;
      c.push_back({"asymmetric", s, Epi::Index, "conv_tiled32"});
    }
    c.push_back({"multi_tile32", conv(2, 8, 10, 10, 40, 3, 3, 1, 1, 1, 1), Epi::Bias, "conv_tiled32"});
    c.push_back({"multi_tile64", conv_tile(conv(1, 5, 10, 9, 70, 3, 3, 1, 1, 1, 1), 64), Epi::Bias, "conv_tiled64"});
    c.push_back({"tile128", conv_tile(conv(1, 4, 12, 12, 10, 3, 3, 1, 1, 1, 2), 128), Epi::Index,
                 "conv_tiled128"});
    return c;
  }();
  return cases;
}

void add_epilogue(GemmSpec& s, Epi e) {
  if (e == Epi::Bias) {
    s.extra_params = {"const float* __restrict__ bias"};
    s.epilogue = "out = acc + bias[n];";
  } else if (e == Epi::Index) {
    s.epilogue = "out = acc * 0.5f + (float)(b * 100 + m * 10 + n) * 0.01f;";
  }
}
void add_epilogue(Conv2dSpec& s, Epi e) {
  if (e == Epi::Bias) {
    s.extra_params = {"const float* __restrict__ bias"};
    s.epilogue = "out = acc + bias[k];";
  } else if (e == Epi::Index) {
    s.epilogue = "const float t = acc + (float)(n * 1000 + k * 100 + oh * 10 + ow) * 0.001f;\nout = fmaxf(t, 0.0f);";
  }
}

KernelLaunch make(const GemmCase& c) {
  GemmSpec s = c.spec;
  add_epilogue(s, c.epi);
  return gemm_kernel("g_" + c.id, s);
}
KernelLaunch make(const ConvCase& c) {
  Conv2dSpec s = c.spec;
  add_epilogue(s, c.epi);
  return conv2d_kernel("c_" + c.id, s);
}

// ---- the emulated library ------------------------------------------------------------------------------

std::string strip_name(const std::string& decl) {  // "const float* __restrict__ bias" -> "const float*"
  std::size_t end = decl.size();
  while (end > 0 && (std::isalnum(static_cast<unsigned char>(decl[end - 1])) || decl[end - 1] == '_')) --end;
  std::string type = decl.substr(0, end);
  for (std::size_t p; (p = type.find("__restrict__")) != std::string::npos;) type.erase(p, 12);
  return type;
}

std::string emu_wrapper(const KernelLaunch& k) {
  std::ostringstream o;
  o << "extern \"C\" void run_" << k.name << "(void** args) {\n"
    << "  const unsigned grid[3] = {" << k.grid[0] << "u, " << k.grid[1] << "u, " << k.grid[2] << "u};\n"
    << "  const unsigned block[3] = {" << k.block[0] << "u, " << k.block[1] << "u, " << k.block[2] << "u};\n";
  for (std::size_t i = 0; i < k.params.size(); ++i)
    o << "  auto p" << i << " = *static_cast<" << strip_name(k.params[i]) << "*>(args[" << i << "]);\n";
  o << "  thunderc_emu::launch(grid, block, " << k.shared_bytes << "u, [&] { " << k.name << "(";
  for (std::size_t i = 0; i < k.params.size(); ++i) o << (i ? ", " : "") << "p" << i;
  o << "); });\n}\n";
  return o.str();
}

class EmuLibrary {
 public:
  using Run = void (*)(void**);
  static EmuLibrary& get() {
    static EmuLibrary lib;
    return lib;
  }
  Run run(const std::string& name) const {
    if (!handle_) throw std::runtime_error("emulated library not built: " + error_);
    auto f = reinterpret_cast<Run>(dlsym(handle_, ("run_" + name).c_str()));
    if (!f) throw std::runtime_error("no run_" + name + " in the emulated library");
    return f;
  }

 private:
  EmuLibrary() {
    std::string text = "// generated by test_codegen_nvfuser: every emulated kernel in one translation unit\n"
                       "#include \"thunderc/cuda_emu.h\"\n\n";
    for (const auto& c : gemm_cases()) text += make(c).source + "\n";
    for (const auto& c : conv_cases()) text += make(c).source + "\n";
    for (const auto& c : gemm_cases()) text += emu_wrapper(make(c));
    for (const auto& c : conv_cases()) text += emu_wrapper(make(c));
    namespace fs = std::filesystem;
    fs::create_directories(THUNDERC_TEST_TMP);
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(text));
    const std::string base = std::string(THUNDERC_TEST_TMP) + "/emu_gemm_" + hash;
    const std::string so = base + ".so";
    if (!fs::exists(so)) {
      const std::string tag = "." + std::to_string(getpid());
      const std::string src = base + tag + ".cpp", tmp = base + tag + ".so";
      std::ofstream(src) << text;
      const std::string cmd = std::string(THUNDERC_TEST_CXX) + " -std=c++17 -O1 -shared -fPIC -DTHUNDERC_CUDA_EMULATION -I" +
                              THUNDERC_CUDA_EMU_INCLUDE_DIR + " -o " + tmp + " " + src + " 2> " + base + tag + ".log";
      if (std::system(cmd.c_str()) != 0) {
        std::ifstream log(base + tag + ".log");
        std::stringstream ss;
        ss << log.rdbuf();
        error_ = "compiling the emulated kernels failed: " + cmd + "\n" + ss.str().substr(0, 4000);
        return;
      }
      fs::rename(tmp, so);  // atomic: concurrent test processes see a whole library or none
      fs::remove(src);
      fs::remove(base + tag + ".log");
    }
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) error_ = dlerror();
  }
  void* handle_ = nullptr;
  std::string error_;
};

// ---- buffers and references ----------------------------------------------------------------------------

// A float buffer whose data starts 16 bytes past a 64-byte boundary (as a view with an offset would), with
// guard elements after it.
struct Buffer {
  std::vector<float> storage;
  float* data = nullptr;
  std::size_t size = 0;
  static constexpr std::size_t kGuard = 64;
  explicit Buffer(std::size_t n, float fill = 0.0f) : size(n) {
    storage.assign(n + 16 + 4 + kGuard, fill);
    auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    std::size_t skip = ((64 - addr % 64) % 64) / sizeof(float) + 4;
    data = storage.data() + skip;
  }
  bool guard_intact(float fill) const {
    for (std::size_t i = 0; i < kGuard; ++i)
      if (std::memcmp(&data[size + i], &fill, sizeof fill) != 0) return false;
    return true;
  }
};

unsigned long long g_seed = 0x9E3779B97F4A7C15ull;
float uniform() {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<float>((g_seed >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;  // [-1, 1)
}
void randomize(Buffer& b) {
  for (std::size_t i = 0; i < b.size; ++i) b.data[i] = uniform();
}

std::size_t extent(long long batch, long long rows, long long cols, long long sb, long long sr, long long sc) {
  if (batch == 0 || rows == 0 || cols == 0) return 1;
  return static_cast<std::size_t>((batch - 1) * sb + (rows - 1) * sr + (cols - 1) * sc + 1);
}

const float kSentinel = 12345.0f;

bool close(double got, double ref, long long K) {
  return std::fabs(got - ref) <= 1e-4 * std::fabs(ref) + 1e-4 * std::sqrt(static_cast<double>(std::max(1LL, K)));
}

void run_gemm_case(const GemmCase& c) {
  CAPTURE(c.id);
  const KernelLaunch k = make(c);
  CHECK(k.path == c.expect);
  const GemmSpec& s = c.spec;
  Buffer a(extent(s.batch, s.M, s.K, s.a_batch, s.a_row, s.a_col)), b(extent(s.batch, s.K, s.N, s.b_batch, s.b_row, s.b_col));
  Buffer out(extent(s.batch, s.M, s.N, s.c_batch, s.c_row, s.c_col), kSentinel), bias(static_cast<std::size_t>(std::max(1LL, s.N)));
  randomize(a), randomize(b), randomize(bias);
  float *pc = out.data, *pa = a.data, *pb = b.data, *pbias = bias.data;
  std::vector<void*> args = {&pc, &pa, &pb};
  if (c.epi == Epi::Bias) args.push_back(&pbias);
  EmuLibrary::get().run(k.name)(args.data());
  std::vector<char> written(out.size, 0);
  int bad = 0;
  for (long long bb = 0; bb < s.batch; ++bb)
    for (long long m = 0; m < s.M; ++m)
      for (long long n = 0; n < s.N; ++n) {
        double acc = 0;
        for (long long kk = 0; kk < s.K; ++kk)
          acc += static_cast<double>(a.data[bb * s.a_batch + m * s.a_row + kk * s.a_col]) *
                 b.data[bb * s.b_batch + kk * s.b_row + n * s.b_col];
        double ref = acc;
        if (c.epi == Epi::Bias) ref = acc + bias.data[n];
        if (c.epi == Epi::Index) ref = acc * 0.5 + static_cast<float>(bb * 100 + m * 10 + n) * 0.01f;
        const std::size_t at = static_cast<std::size_t>(bb * s.c_batch + m * s.c_row + n * s.c_col);
        written[at] = 1;
        if (!close(out.data[at], ref, s.K) && bad++ < 5)
          FAIL_CHECK("b " << bb << " m " << m << " n " << n << ": got " << out.data[at] << ", expected " << ref);
      }
  for (std::size_t i = 0; i < out.size; ++i)
    if (!written[i] && out.data[i] != kSentinel && bad++ < 5) FAIL_CHECK("element " << i << " written, not an output");
  CHECK(out.guard_intact(kSentinel));
  CHECK(bad == 0);
}

void run_conv_case(const ConvCase& c) {
  CAPTURE(c.id);
  const KernelLaunch k = make(c);
  CHECK(k.path == c.expect);
  const Conv2dSpec& s = c.spec;
  const long long Cg = s.C / s.groups, Kg = s.K / s.groups;
  Buffer in(static_cast<std::size_t>(s.N * s.C * s.H * s.W)), w(static_cast<std::size_t>(s.K * Cg * s.R * s.S));
  Buffer out(static_cast<std::size_t>(s.N * s.K * s.OH * s.OW), kSentinel), bias(static_cast<std::size_t>(s.K));
  randomize(in), randomize(w), randomize(bias);
  float *po = out.data, *pi = in.data, *pw = w.data, *pbias = bias.data;
  std::vector<void*> args = {&po, &pi, &pw};
  if (c.epi == Epi::Bias) args.push_back(&pbias);
  EmuLibrary::get().run(k.name)(args.data());
  int bad = 0;
  for (long long n = 0; n < s.N; ++n)
    for (long long kk = 0; kk < s.K; ++kk)
      for (long long oh = 0; oh < s.OH; ++oh)
        for (long long ow = 0; ow < s.OW; ++ow) {
          const long long g = kk / Kg;
          double acc = 0;
          for (long long cc = 0; cc < Cg; ++cc)
            for (long long r = 0; r < s.R; ++r)
              for (long long q = 0; q < s.S; ++q) {
                const long long ih = oh * s.stride_h - s.pad_h + r * s.dil_h, iw = ow * s.stride_w - s.pad_w + q * s.dil_w;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                acc += static_cast<double>(in.data[((n * s.C + g * Cg + cc) * s.H + ih) * s.W + iw]) *
                       w.data[((kk * Cg + cc) * s.R + r) * s.S + q];
              }
          double ref = acc;
          if (c.epi == Epi::Bias) ref = acc + bias.data[kk];
          if (c.epi == Epi::Index) ref = std::max(0.0, acc + static_cast<float>(n * 1000 + kk * 100 + oh * 10 + ow) * 0.001f);
          const float got = out.data[((n * s.K + kk) * s.OH + oh) * s.OW + ow];
          if (!close(got, ref, Cg * s.R * s.S) && bad++ < 5)
            FAIL_CHECK("n " << n << " k " << kk << " oh " << oh << " ow " << ow << ": got " << got << ", expected " << ref);
        }
  CHECK(out.guard_intact(kSentinel));
  CHECK(bad == 0);
}

void run_gemm_cases(const std::function<bool(const GemmCase&)>& pick) {
  int n = 0;
  for (const auto& c : gemm_cases())
    if (pick(c)) run_gemm_case(c), ++n;
  CHECK(n > 0);
}
void run_conv_cases(const std::function<bool(const ConvCase&)>& pick) {
  int n = 0;
  for (const auto& c : conv_cases())
    if (pick(c)) run_conv_case(c), ++n;
  CHECK(n > 0);
}

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

}  // namespace

// ---- emulated runs -------------------------------------------------------------------------------------

TEST_CASE("emulated: gemm tiled kernels (32, 64, 128 tiles, odd sizes, several tiles, size 1, K 0)") {
  run_gemm_cases([](const GemmCase& c) {
    return starts(c.expect, "tiled") && c.spec.a_row != 1 && c.spec.b_row != 1 && c.spec.c_row != 1 &&
           c.spec.a_batch != 0 && c.spec.b_batch != 0;
  });
}
TEST_CASE("emulated: gemm tiled kernels with transposed operands, linear weights, column-major C") {
  run_gemm_cases([](const GemmCase& c) {
    return starts(c.expect, "tiled") && (c.spec.a_row == 1 || c.spec.b_row == 1 || c.spec.c_row == 1);
  });
}
TEST_CASE("emulated: gemm batched with a shared operand (batch stride 0)") {
  run_gemm_cases([](const GemmCase& c) { return c.spec.batch > 1 && (c.spec.a_batch == 0 || c.spec.b_batch == 0); });
}
TEST_CASE("emulated: gemm small path (GEMV, matrix-vector, small-batch linear)") {
  run_gemm_cases([](const GemmCase& c) { return !starts(c.expect, "tiled"); });
}
TEST_CASE("emulated: conv2d implicit GEMM (general, strided, padded, dilated, grouped, asymmetric)") {
  run_conv_cases([](const ConvCase& c) { return starts(c.expect, "conv_tiled") && c.id.find("multi") == std::string::npos; });
}
TEST_CASE("emulated: conv2d implicit GEMM over several tiles (32, 64 and 128 tiles)") {
  run_conv_cases([](const ConvCase& c) { return c.id.find("multi") != std::string::npos || c.id == "tile128"; });
}
TEST_CASE("emulated: conv2d depthwise direct kernel") {
  run_conv_cases([](const ConvCase& c) { return c.expect == "depthwise"; });
}
TEST_CASE("emulated: conv2d 1x1 as GEMM") {
  run_conv_cases([](const ConvCase& c) { return starts(c.expect, "conv1x1"); });
}

// ---- NVRTC ---------------------------------------------------------------------------------------------

namespace {

// Shapes of real models (not emulated: too large) that select the remaining variants by themselves.
std::vector<KernelLaunch> large_kernels() {
  std::vector<KernelLaunch> k;
  auto g = [&](const char* name, GemmSpec s, Epi e = Epi::None) {
    add_epilogue(s, e);
    k.push_back(gemm_kernel(name, s));
  };
  auto cv = [&](const char* name, Conv2dSpec s, Epi e = Epi::None) {
    add_epilogue(s, e);
    k.push_back(conv2d_kernel(name, s));
  };
  g("big_square", row_major(1, 4096, 4096, 4096));
  g("big_linear", linear(2048, 4096, 1024), Epi::Bias);
  g("mid_square", row_major(1, 1024, 1024, 1024));
  g("bmm_attention", row_major(96, 128, 128, 64), Epi::Index);
  g("gemv_big", linear(1, 1000, 2048), Epi::Bias);
  g("huge_batch", row_major(70000, 1, 16, 16));  // grid.y clamped; the kernel loops over the batch
  g("huge_batch_tiled", row_major(70000, 16, 16, 16));
  {
    GemmSpec s = row_major(1, 9, 10, 3);
    s.M = 0;  // empty output
    g("empty_m", s);
  }
  cv("resnet_stem", conv(1, 3, 224, 224, 64, 7, 7, 2, 3, 1, 1), Epi::Bias);
  cv("resnet_3x3", conv(8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1), Epi::Bias);
  cv("resnet_1x1", conv(8, 256, 56, 56, 64, 1, 1, 1, 0, 1, 1), Epi::Bias);
  cv("mobilenet_dw", conv(1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 32), Epi::Bias);
  cv("resnext_grouped", conv(4, 128, 28, 28, 128, 3, 3, 1, 1, 1, 32), Epi::Bias);
  return k;
}

std::vector<KernelLaunch> all_kernels() {
  std::vector<KernelLaunch> all;
  for (const auto& c : gemm_cases()) all.push_back(make(c));
  for (const auto& c : conv_cases()) all.push_back(make(c));
  for (auto& k : large_kernels()) all.push_back(k);
  return all;
}

}  // namespace

namespace {

// Compiles every kernel (emulated cases and the large shapes above) in ONE translation unit for `arch` with
// thunderc::compile_cuda, and checks ptxas' report: no local memory (spills), the 128x128 tile within 128
// registers (two 256-thread blocks per SM).
void compile_all(const std::string& arch) {
  const auto& info = thunderc::nvrtc_info();
  INFO(info.reason);
  REQUIRE(info.available);  // registered only where configure found NVRTC
  // One kernel per distinct text once the name and every number are blanked out: the other shapes of a variant
  // give the same code with other literals (and would only slow this test down).
  std::vector<KernelLaunch> all;
  std::set<std::string> seen, paths;
  for (auto& k : all_kernels()) {
    paths.insert(k.path);
    std::string shape;
    const std::string body = k.source.substr(k.source.find(k.name + "(\n"));  // the kernel, without the comment
    for (std::size_t i = k.name.size(); i < body.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(body[i])) || shape.empty() || shape.back() != '#')
        shape += std::isdigit(static_cast<unsigned char>(body[i])) ? '#' : body[i];
    if (seen.insert(shape).second) all.push_back(k);
  }
  MESSAGE(all.size() << " distinct kernels of " << all_kernels().size());
  std::string text;
  std::vector<std::string> names;
  for (const auto& k : all) text += k.source + "\n", names.push_back(k.name);
  for (const char* p : {"tiled32", "tiled64", "tiled128", "warp_dot", "warp_dot4", "slice", "conv_tiled32",
                        "conv_tiled64", "conv_tiled128", "depthwise", "conv1x1_tiled32", "conv1x1_slice", "empty"}) {
    const std::string path = p;
    CAPTURE(path);
    CHECK(paths.count(p) == 1);
  }
  thunderc::CudaCompileResult result;
  try {
    result = thunderc::compile_cuda(text, {arch}, names);
  } catch (const std::exception& e) {
    FAIL(e.what());
  }
  CHECK(result.resources.size() == all.size());
  for (const auto& r : result.resources) {
    CAPTURE(r.kernel);
    CHECK(r.arch == arch);
    for (const auto& k : all) {
      if (k.name != r.kernel) continue;
      if (starts(k.path, "conv_tiled")) {
        // the gathered A tile costs registers: ptxas spills a little on sm_90 (8-16 bytes, 40 for the
        // 128-tile); a bound, so that a regression shows
        CHECK(r.local_bytes <= 64);
      } else {
        CHECK(r.local_bytes == 0);
      }
      if (k.path == "tiled128" || k.path == "conv1x1_tiled128") CHECK(r.registers <= 128);
    }
  }
}

}  // namespace

TEST_CASE("nvrtc: every gemm and conv2d variant compiles in one translation unit for sm_80") { compile_all("sm_80"); }
TEST_CASE("nvrtc: every gemm and conv2d variant compiles in one translation unit for sm_90") { compile_all("sm_90"); }

// ---- paths and text ------------------------------------------------------------------------------------

TEST_CASE("path: gemm_kernel and conv2d_kernel choose the kernel by shape") {
  std::map<std::string, std::string> expect = {
      {"big_square", "tiled128"},        {"big_linear", "tiled128"},     {"mid_square", "tiled64"},
      {"bmm_attention", "tiled64"},      {"gemv_big", "warp_dot4"},      {"huge_batch", "slice"},
      {"huge_batch_tiled", "tiled32"},  {"empty_m", "empty"},           {"resnet_stem", "conv_tiled64"},
      {"resnet_3x3", "conv_tiled64"},    {"resnet_1x1", "conv1x1_tiled64"}, {"mobilenet_dw", "depthwise"},
      {"resnext_grouped", "conv_tiled32"}};
  for (const auto& k : large_kernels()) {
    CAPTURE(k.name);
    REQUIRE(expect.count(k.name) == 1);
    CHECK(k.path == expect[k.name]);
  }
  for (const auto& c : gemm_cases()) {
    CAPTURE(c.id);
    CHECK(make(c).path == c.expect);
  }
  for (const auto& c : conv_cases()) {
    CAPTURE(c.id);
    CHECK(make(c).path == c.expect);
  }
  // launch limits: grid.y and grid.z at most 65535
  for (const auto& k : all_kernels()) {
    CAPTURE(k.name);
    CHECK(k.grid[1] <= 65535u);
    CHECK(k.grid[2] <= 65535u);
    CHECK(k.grid[0] >= 1u);
    CHECK(k.block[0] * k.block[1] * k.block[2] <= 1024u);
  }
}

TEST_CASE("path: generated text is self-contained and defines nothing but the kernel") {
  for (const auto& k : all_kernels()) {
    CAPTURE(k.name);
    CHECK(k.source.find("#include") == std::string::npos);
    CHECK(k.shared_bytes == 0u);
    const std::string head = "extern \"C\" __global__ void ";
    CHECK(k.source.find(head) != std::string::npos);
    CHECK(k.source.find(" " + k.name + "(\n") != std::string::npos);
    if (k.path != "empty") {  // __launch_bounds__(threads) or __launch_bounds__(threads, min blocks)
      const std::string lb = "__launch_bounds__(" + std::to_string(k.block[0] * k.block[1] * k.block[2]);
      const std::size_t at = k.source.find(lb);
      REQUIRE(at != std::string::npos);
      CHECK((k.source[at + lb.size()] == ')' || k.source[at + lb.size()] == ','));
    }
    // every line at namespace scope is a comment, the kernel's declaration or its closing brace
    std::istringstream in(k.source);
    int depth = 0;
    for (std::string line; std::getline(in, line);) {
      if (depth == 0 && !line.empty() && !starts(line, "//") && !starts(line, "extern \"C\"") && line != "}" &&
          !starts(line, "    "))
        FAIL_CHECK("namespace-scope line: " << line);
      for (char ch : line) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    }
    CHECK(depth == 0);
    // parameter declarations in order: c/out first, then the operands, then the extras
    for (const auto& p : k.params) CHECK(k.source.find(p) != std::string::npos);
  }
}

TEST_CASE("path: invalid specs are rejected") {
  CHECK_THROWS(gemm_kernel("bad name", row_major(1, 4, 4, 4)));
  CHECK_THROWS(gemm_kernel("g", with_tile(row_major(1, 4, 4, 4), 48)));
  GemmSpec neg = row_major(1, 4, 4, 4);
  neg.K = -1;
  CHECK_THROWS(gemm_kernel("g", neg));
  Conv2dSpec c = conv(1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1);
  c.OH = 7;
  CHECK_THROWS(conv2d_kernel("c", c));
  CHECK_THROWS(conv2d_kernel("c", conv(1, 4, 8, 8, 6, 3, 3, 1, 1, 1, 4)));  // K not divisible by groups
}

// The same generators with 16-bit operands (--precision bf16/fp16: GemmSpec::elem), behind the kernels' prelude
// that defines thunderc_f16/thunderc_bf16 (PTX cvt.rn; bf16 needs sm_80): one kernel per path, both types,
// compiled for sm_80 and sm_90. (Their numerics are checked emulated by gemm_ops_test and samples_e2e_test.)
TEST_CASE("nvrtc: every gemm and conv2d path compiles with float16 and bfloat16 operands for sm_80 and sm_90") {
  REQUIRE(thunderc::nvrtc_info().available);
  std::vector<thunderc::CudaKernel> kernels;
  std::vector<std::string> names;
  std::set<std::string> paths;
  for (const char* elem : {"thunderc_f16", "thunderc_bf16"}) {
    auto add = [&](const KernelLaunch& k) {
      if (!paths.insert(std::string(elem) + ":" + k.path).second) return;
      thunderc::CudaKernel c;
      c.name = k.name;
      c.source = k.source;
      c.what = k.path;
      kernels.push_back(c);
      names.push_back(c.name);
    };
    const std::string prefix = std::string(elem) == "thunderc_f16" ? "h_" : "bh_";
    for (const auto& c : gemm_cases()) {
      GemmSpec s = c.spec;
      add_epilogue(s, c.epi);
      s.elem = elem;
      add(gemm_kernel(prefix + "g_" + c.id, s));
    }
    for (const auto& c : conv_cases()) {
      Conv2dSpec s = c.spec;
      add_epilogue(s, c.epi);
      s.elem = elem;
      add(conv2d_kernel(prefix + "c_" + c.id, s));
    }
  }
  for (const char* p : {"thunderc_bf16:tiled32", "thunderc_bf16:warp_dot", "thunderc_bf16:slice",
                        "thunderc_bf16:conv_tiled32", "thunderc_bf16:depthwise", "thunderc_f16:conv1x1_tiled32"}) {
    CAPTURE(std::string(p));
    CHECK(paths.count(p) == 1);
  }
  CHECK(paths.count("thunderc_bf16:warp_dot4") == 0);  // float4 loads are for float32 only
  const std::string text = thunderc::cuda_module_source(kernels);
  for (const char* arch : {"sm_80", "sm_90"}) {
    CAPTURE(std::string(arch));
    thunderc::CudaCompileResult result;
    try {
      result = thunderc::compile_cuda(text, {arch}, names);
    } catch (const std::exception& e) {
      FAIL(e.what());
    }
    CHECK(result.resources.size() == kernels.size());
  }
}
