// A model's CUDA side (cuda_exec.cpp): its thunderc_cuda_module, and per CUDA device, created lazily on the
// first call there: the primary context, the loaded image and its kernels, the weights on the device and a
// workspace pool per stream.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "internal.hpp"

namespace thunderc::rt {

class CudaModel {
 public:
  // Reads and validates `mod` (throws MANIFEST naming the problem). `model_path` names the model in messages;
  // `workspace_bytes`: the size of every pooled workspace block (the largest CUDA variant's workspace).
  // `graphs` (manifest options.cuda_graphs): each (device, stream, variant) captures its launches into a
  // CUDA graph on its second call and replays it from then on (see call()).
  CudaModel(const thunderc_cuda_module* mod, std::string model_path, size_t workspace_bytes, bool graphs = false);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  // Runs `fn` for one call on CUDA device `ordinal`: sets up the device state once, makes its context current,
  // lends the call a workspace block of `stream`'s pool (returned after fn returns), and fills call->device,
  // stream, weights, device_api, workspace. Returns fn's result (messages in call->error). Throws RtError for
  // what happens before fn runs (no device, no image for it, ...).
  //
  // With graphs, per (device, stream, fn): the first call runs directly (it builds the library plans and
  // everything else that is set up lazily, which a capture must not do); the second captures fn's work on a
  // private stream into a graph over static device buffers (inputs, outputs, workspace, library scratch)
  // and instantiates it; that call and every later one copy the inputs into the static buffers, launch the
  // graph on `stream` and copy the outputs out, all ordered on `stream`. Calls on one (stream, fn) are
  // serialized while they enqueue. A capture that fails (an operation the driver cannot capture, no graph
  // support in the driver) leaves that (stream, fn) running directly; $THUNDERC_CUDA_GRAPHS_LOG=1 says why.
  int32_t call(int ordinal, thunderc_entry_fn fn, thunderc_call* call, void* stream);

  // Initializes device `ordinal` (as call() does) and returns what image it loaded ("sm_90 cubin").
  const std::string& prepare(int ordinal);

  // "sm_90 (cubin), compute_80 (PTX)"
  const std::string& archs_text() const { return archs_text_; }

  struct Image {
    std::string arch;  // as in the module: "sm_90", "compute_80"
    uint32_t kind = 0;
    int major = 0, minor = 0;
    const void* data = nullptr;
    size_t size = 0;
  };
  struct Device;

 private:
  Device& ready_device(int ordinal);
  struct Graph;
  int32_t run_direct(Device& dev, thunderc_entry_fn fn, thunderc_call* call, void* stream, bool* used_library);
  bool capture(Device& dev, Graph& g, thunderc_entry_fn fn, const thunderc_call* call);
  int32_t replay(Graph& g, thunderc_call* call, void* stream);
  void init_device(Device& dev);
  void release_device(Device& dev) noexcept;

  std::string path_;
  std::vector<Image> images_;
  std::vector<std::string> kernel_names_;
  const unsigned char* weights_ = nullptr;
  size_t weights_size_ = 0;
  size_t workspace_bytes_ = 0;
  bool graphs_ = false;
  std::string archs_text_;
  std::vector<std::unique_ptr<Device>> devices_;  // one per CUDA device present (created empty at open)

  friend struct CudaCall;
};

}  // namespace thunderc::rt
