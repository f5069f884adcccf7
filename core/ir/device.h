// Where a tensor lives. Part of every tensor type, so CUDA targets need no redesign.
#pragma once

#include <string>
#include <string_view>

namespace thunderc {

enum class DeviceKind : unsigned char { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;  // CUDA ordinal; always 0 for CPU

  static Device cpu() { return {DeviceKind::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::CUDA, index}; }
  // "cpu", "cuda", "cuda:1". Throws UserError on anything else.
  static Device parse(std::string_view text);

  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

const char* device_kind_name(DeviceKind kind);  // "cpu", "cuda"

}  // namespace thunderc
