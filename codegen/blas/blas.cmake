# The `blas` executor's code generation, part of thunderc_codegen (included from codegen/CMakeLists.txt).
# Generated code includes blas/include/thunderc/blas_kernels.h and links OpenBLAS (libopenblas-dev).
find_library(THUNDERC_OPENBLAS_LIBRARY NAMES openblas DOC "OpenBLAS, linked by model .so files that use the blas executor")
set(_thunderc_openblas "${THUNDERC_OPENBLAS_LIBRARY}")
if(NOT THUNDERC_OPENBLAS_LIBRARY)
  message(WARNING "OpenBLAS not found: models using the blas executor will link with -lopenblas")
  set(_thunderc_openblas "")
endif()
target_sources(thunderc_codegen PRIVATE ${CMAKE_CURRENT_LIST_DIR}/blas_backend.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/blas_backend.cpp PROPERTIES COMPILE_DEFINITIONS
  "THUNDERC_OPENBLAS_LIBRARY=\"${_thunderc_openblas}\"")
