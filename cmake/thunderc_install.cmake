# What `cmake --install build --prefix P` puts under P (docs/install.md):
#
#   bin/thunderc                                  the compiler (finds the rest relative to itself)
#   lib/libthunderc_runtime.so                    the runtime (C ABI); lib/libthunderc_npy.a, its .npy reader
#   lib/libthunderc_aten_shim.so                  with LibTorch: what code for the torch executor calls
#   include/thunderc/{abi.h,runtime.h,...}        the runtime's headers
#   share/thunderc/include/thunderc/*.h           every backend's kernel headers (generated code includes them)
#   lib/cmake/thunderc/                           find_package(thunderc): thunderc::runtime, thunderc::npy,
#                                                 thunderc::thunderc, thunderc_add_model()
#   lib/pkgconfig/thunderc-runtime.pc             the runtime for pkg-config
#
# codegen/resources.cpp reads the same relative folders (GNUInstallDirs) to find the kernel headers.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# An installed thunderc finds libthunderc_runtime.so (and the ATen shim) next to itself; LibTorch and other
# libraries outside the prefix keep the folders they were linked from.
file(RELATIVE_PATH _thunderc_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set_target_properties(thunderc PROPERTIES
  INSTALL_RPATH "\$ORIGIN/${_thunderc_bin_to_lib}" INSTALL_RPATH_USE_LINK_PATH ON EXPORT_NAME thunderc)
set_target_properties(thunderc_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(thunderc_npy PROPERTIES EXPORT_NAME npy)

install(TARGETS thunderc EXPORT thunderc-targets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS thunderc_runtime thunderc_npy EXPORT thunderc-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET thunderc_aten_shim)
  set_target_properties(thunderc_aten_shim PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS thunderc_aten_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# aten.hpp needs ATen (a consumer with LibTorch may use it); the rest is plain C/C++ over DLPack.
install(FILES
  runtime/include/thunderc/abi.h runtime/include/thunderc/runtime.h runtime/include/thunderc/runtime.hpp
  runtime/include/thunderc/tensor.hpp runtime/include/thunderc/npy.hpp runtime/include/thunderc/aten.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/thunderc)
foreach(_dir IN LISTS THUNDERC_KERNEL_HEADER_DIRS)
  install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/thunderc/include/thunderc FILES_MATCHING PATTERN "*.h")
endforeach()

set(_thunderc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/thunderc)
install(EXPORT thunderc-targets NAMESPACE thunderc:: DESTINATION ${_thunderc_cmake_dir})
configure_package_config_file(cmake/thunderc-config.cmake.in ${CMAKE_BINARY_DIR}/cmake/thunderc-config.cmake
  INSTALL_DESTINATION ${_thunderc_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/thunderc-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/thunderc-config.cmake ${CMAKE_BINARY_DIR}/cmake/thunderc-config-version.cmake
  cmake/thunderc_add_model.cmake DESTINATION ${_thunderc_cmake_dir})

file(RELATIVE_PATH _thunderc_pc_to_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
configure_file(cmake/thunderc-runtime.pc.in ${CMAKE_BINARY_DIR}/cmake/thunderc-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/thunderc-runtime.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# In this build tree too: thunderc_add_model() with the thunderc just built.
add_executable(thunderc::thunderc ALIAS thunderc)
include(cmake/thunderc_add_model.cmake)

# The Python package (docs/python.md) in PREFIX/lib/python3/dist-packages/thunderc: Debian's python3 reads that
# folder under /usr; for another prefix, add it to PYTHONPATH. The package finds the runtime in the prefix.
option(THUNDERC_INSTALL_PYTHON "Install the thunderc Python package with cmake --install" ON)
if(THUNDERC_INSTALL_PYTHON)
  install(DIRECTORY python/thunderc DESTINATION lib/python3/dist-packages
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endif()
