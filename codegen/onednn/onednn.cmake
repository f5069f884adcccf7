# The `onednn` executor's code generation, part of thunderc_codegen (included from codegen/CMakeLists.txt).
# Generated code includes onednn/include/thunderc/onednn_kernels.h and oneDNN's headers, and links libdnnl
# (found in the top-level CMakeLists.txt; without it the executor is unavailable and claims nothing).
target_sources(thunderc_codegen PRIVATE ${CMAKE_CURRENT_LIST_DIR}/onednn_backend.cpp)
set(_thunderc_onednn_defs "")
if(THUNDERC_WITH_ONEDNN)
  list(APPEND _thunderc_onednn_defs "THUNDERC_ONEDNN_INCLUDE_DIR=\"${THUNDERC_ONEDNN_INCLUDE_DIR}\""
       "THUNDERC_ONEDNN_LIBRARY=\"${THUNDERC_ONEDNN_LIBRARY}\"")
else()
  list(APPEND _thunderc_onednn_defs "THUNDERC_ONEDNN_INCLUDE_DIR=\"\"" "THUNDERC_ONEDNN_LIBRARY=\"\"")
endif()
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/onednn_backend.cpp PROPERTIES COMPILE_DEFINITIONS "${_thunderc_onednn_defs}")
