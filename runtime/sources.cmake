# The runtime's source files, named once: runtime/CMakeLists.txt builds libthunderc_runtime from them and
# fuzz/CMakeLists.txt builds them again with the fuzzer's instrumentation. Paths are relative to runtime/.
set(THUNDERC_RUNTIME_SOURCES
  src/runtime.cpp
  src/optimizer.cpp
  src/manifest.cpp
  src/util.cpp
  src/elf_check.cpp
  src/cuda_driver.cpp
  src/cuda_exec.cpp
  src/cublaslt.cpp
  src/cudnn.cpp
  src/device.cpp)
