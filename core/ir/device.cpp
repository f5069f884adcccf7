#include "core/ir/device.h"

#include <cctype>

#include "core/ir/error.h"

namespace thunderc {

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::CPU ? "cpu" : "cuda"; }

std::string Device::str() const {
  if (kind == DeviceKind::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.substr(0, 5) == "cuda:" && text.size() > 5 && text.size() < 9) {
    int index = 0;
    for (char c : text.substr(5)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) user_error("invalid device '", text, "'");
      index = index * 10 + (c - '0');
    }
    return cuda(index);
  }
  user_error("invalid device '", text, "': expected cpu, cuda or cuda:N");
}

}  // namespace thunderc
