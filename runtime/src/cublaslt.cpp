// cuBLASLt through dlopen (see cuda_libs.hpp).
#include "cuda_libs.hpp"

namespace thunderc::rt {

class CublasLtDevice {};

void CublasLtDeviceDeleter::operator()(CublasLtDevice* p) const noexcept { delete p; }

CublasLtDevicePtr make_cublaslt_device(int) { return CublasLtDevicePtr(new CublasLtDevice); }

int32_t cublaslt_gemm(CublasLtDevice&, const LibCall&, const thunderc_gemm*, void*, const void*, const void*,
                      const void*, char*, size_t) noexcept {
  return THUNDERC_DEVICE_API_FALLBACK;
}

std::string cublaslt_library_text() { return "not used yet"; }

}  // namespace thunderc::rt
