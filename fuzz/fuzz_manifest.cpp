// libFuzzer target: the runtime's manifest parser (runtime/src/manifest.cpp, parse_manifest), which
// thunderc_model_open runs on the manifest a model .so embeds (and on OUT.json). An invalid manifest must
// throw RtError(THUNDERC_STATUS_MANIFEST); any other exception, a crash or a sanitizer report (e.g. signed
// overflow in the size checks) is a finding. What parses is then exercised the way a call would: each
// symbolic variant's output shapes at the symbols' minima and maxima, and bind_dims on guard-shaped inputs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "internal.hpp"

using namespace thunderc::rt;

namespace {
[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_manifest: %s\n", what.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Manifest m;
  try {
    m = parse_manifest(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const RtError& e) {
    if (e.code() != THUNDERC_STATUS_MANIFEST && e.code() != THUNDERC_STATUS_ABI_MISMATCH)
      finding(std::string("RtError with unexpected code: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    finding(std::string("parse_manifest threw something other than RtError: ") + e.what());
  }
  for (const Variant& v : m.variants) {
    if (v.guards.size() != m.inputs.size()) finding("guards/inputs count mismatch accepted");
    if (v.output_shapes.size() != m.outputs.size()) finding("output_shapes/outputs count mismatch accepted");
    for (const Guard& g : v.guards) {
      if (g.sym.size() != g.shape.size()) finding("guard sym/shape size mismatch");
      for (size_t d = 0; d < g.shape.size(); ++d)
        if (g.sym[d] >= static_cast<int>(v.dims.size())) finding("guard refers to a symbol out of range");
    }
    // Inputs shaped like the guards with the symbols at the corners of their ranges: all at the minimum,
    // all at the maximum, and alternating (an output size c + a*B + b*C with a > 0 > b is smallest there).
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<int64_t> values(v.dims.size());
      for (size_t k = 0; k < v.dims.size(); ++k) {
        const bool at_max = pattern == 1 || (pattern == 2 && k % 2) || (pattern == 3 && k % 2 == 0);
        values[k] = at_max ? v.dims[k].max : v.dims[k].min;
      }
      std::vector<std::vector<int64_t>> shapes;
      std::vector<DLTensor> tensors(v.guards.size());
      for (const Guard& g : v.guards) {
        std::vector<int64_t> s = g.shape;
        for (size_t d = 0; d < s.size(); ++d)
          if (g.sym[d] >= 0) s[d] = values[static_cast<size_t>(g.sym[d])];
        shapes.push_back(std::move(s));
      }
      for (size_t i = 0; i < tensors.size(); ++i) {
        tensors[i] = DLTensor{};
        tensors[i].ndim = static_cast<int>(shapes[i].size());
        tensors[i].shape = shapes[i].data();
        tensors[i].dtype = v.guards[i].dtype;
        tensors[i].device = v.guards[i].device;
      }
      if (v.symbolic()) {
        std::vector<int64_t> bound(v.dims.size(), -7);
        std::string why = bind_dims(v, m.inputs, tensors.data(), tensors.size(), bound.data());
        if (!why.empty()) finding("bind_dims rejects inputs shaped exactly like the guards: " + why);
      }
      for (size_t o = 0; o < v.output_shapes.size(); ++o) {
        std::vector<int64_t> shape(v.output_shapes[o].size() + 1, -9);
        output_shape(v, o, values.data(), shape.data());
        for (size_t d = 0; d < v.output_shapes[o].size(); ++d)
          if (shape[d] < 0) finding("output_shape gives a negative extent for symbol values within their ranges (output " +
                    std::to_string(o) + " of variant " + std::to_string(v.id) + ")");
      }
    }
  }
  return 0;
}
