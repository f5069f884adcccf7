// cuDNN through dlopen (see cuda_libs.hpp). Not implemented yet: every convolution falls back to the kernel
// the model carries.
#include "cuda_libs.hpp"

namespace thunderc::rt {

class CudnnDevice {};

void CudnnDeviceDeleter::operator()(CudnnDevice* p) const noexcept { delete p; }

CudnnDevicePtr make_cudnn_device(int) { return CudnnDevicePtr(new CudnnDevice); }

int32_t cudnn_conv2d(CudnnDevice&, const LibCall&, const thunderc_conv2d*, void*, const void*, const void*,
                     const void*, const void*, char*, size_t) noexcept {
  return THUNDERC_DEVICE_API_FALLBACK;
}

std::string cudnn_library_text() { return "not used yet"; }

}  // namespace thunderc::rt
