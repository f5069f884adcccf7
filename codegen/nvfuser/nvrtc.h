// NVRTC at model-compile time: CUDA C++ source -> cubins (+ PTX) without a link dependency on CUDA.
// libnvrtc is dlopen'ed on first use (see nvrtc.cpp for the names tried); nothing here needs the CUDA
// toolkit's headers, so thunderc builds and runs on machines without it (nvrtc_info() says why not).
#pragma once

#include <string>
#include <vector>

namespace thunderc {

struct NvrtcInfo {
  bool available = false;
  std::string reason;              // why not, when !available
  std::string version;             // "13.0"
  std::vector<std::string> archs;  // supported real architectures, "sm_75", "sm_80", ..., oldest first
  std::string library;             // the path or name that was loaded
};

// Probed once (thread-safe). $THUNDERC_NVRTC_LIBRARY, when set, is tried first.
const NvrtcInfo& nvrtc_info();

// "sm_80,sm_90" -> {"sm_80", "sm_90"}: oldest first (numeric order), deduplicated; spaces around entries and
// empty entries are ignored. Accepts sm_<N> and sm_<N>a. UserError for an empty list or a malformed entry,
// and, when NVRTC is available, for an architecture it does not support (the message lists those it does).
std::vector<std::string> parse_cuda_archs(const std::string& text);

struct CudaImage {
  std::string arch;  // "sm_80" (cubin) or "compute_90" (PTX)
  bool ptx = false;
  std::vector<unsigned char> data;  // an ELF cubin, or PTX text without the trailing NUL
};

struct KernelResources {
  std::string kernel;
  std::string arch;  // "sm_80"
  int registers = 0;
  long static_shared_bytes = 0;
  long local_bytes = 0;  // ptxas' stack frame per thread (local arrays and spills)
};

struct CudaCompileResult {
  std::vector<CudaImage> images;          // one cubin per arch, in the order given, then PTX for the newest arch
  std::vector<KernelResources> resources;  // per arch (in order), per kernel (in order), as ptxas reports them
};

// Compiles one self-contained CUDA C++ translation unit (no #include) once per arch to a cubin and once to
// PTX for the newest arch. Options (nvrtc_compile_options): -std=c++17, -default-device, -arch=..., and
// --ptxas-options=-v for the cubins (the resources come from that log); no fast math, no line info, fixed
// program name, so the same inputs give the same bytes. `kernel_names` are the extern "C" __global__
// functions; each must be an entry of the PTX (InternalError otherwise).
// UserError when NVRTC is unavailable (with nvrtc_info().reason) or an arch is unsupported; InternalError
// (a thunderc bug) with NVRTC's log and the offending source lines when the source does not compile.
CudaCompileResult compile_cuda(const std::string& source, const std::vector<std::string>& archs,
                               const std::vector<std::string>& kernel_names);

// The NVRTC options compile_cuda uses for `arch` ("sm_80": a cubin; "compute_90": PTX).
std::vector<std::string> nvrtc_compile_options(const std::string& arch);

}  // namespace thunderc
