// Tests labelled gpu: without a CUDA device (or driver) they exit 77, which ctest reports as skipped.
#pragma once

#include <cstdio>

#include "thunderc/runtime.h"

// True (after saying why) when this machine has no CUDA device: the caller returns 77.
inline bool no_cuda_device() {
  int32_t devices = 0;
  thunderc_status st = thunderc_device_count(kDLCUDA, &devices);
  const bool none = st || devices == 0;
  if (none) std::printf("SKIP: no CUDA device here (%s)\n", st ? thunderc_status_message(st) : "the driver reports none");
  thunderc_status_free(st);
  return none;
}
