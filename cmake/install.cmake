# Installation and the CMake package: `cmake --install <build> --prefix <prefix>` lays out
#
#   include/cuwrap/...                 the runtime headers and the generated bindings
#   lib/libcuwrap.a                    the library
#   bin/cuwrap-gen                     the generator (when it was built)
#   share/cuwrap/templates/            the generator's templates
#   share/doc/cuwrap/                  the documentation
#   lib/cmake/cuwrap/                  the package: find_package(cuwrap) → cuwrap::cuwrap
#
# The CUDA headers are not installed: the package records the directory cuwrap was
# built against (CUWRAP_CUDA_INCLUDE_DIR) and a consumer may point it elsewhere.
include(CMakePackageConfigHelpers)

set(CUWRAP_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cuwrap"
    CACHE STRING "Where the cuwrap CMake package is installed, relative to the prefix")
mark_as_advanced(CUWRAP_INSTALL_CMAKEDIR)

install(TARGETS cuwrap EXPORT cuwrapTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/ ${CUWRAP_BINDINGS_ROOT}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

if(TARGET cuwrap-gen)
  install(TARGETS cuwrap-gen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/templates/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cuwrap/templates)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")

install(EXPORT cuwrapTargets NAMESPACE cuwrap:: DESTINATION ${CUWRAP_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/cuwrapConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cuwrapConfig.cmake
  INSTALL_DESTINATION ${CUWRAP_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_DATADIR CMAKE_INSTALL_BINDIR)
# 0.x releases promise compatibility within a minor version only.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/cuwrapConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/cuwrapConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/cuwrapConfigVersion.cmake
  DESTINATION ${CUWRAP_INSTALL_CMAKEDIR})
