# Installation and the CMake package: `cmake --install <build> --prefix <prefix>` lays out
#
#   include/cuwrap/...                 the runtime headers and the generated bindings
#   lib/libcuwrap.a                    the library
#   bin/cuwrap-gen                     the generator (when it was built)
#   share/cuwrap/templates/            the generator's templates
#   share/doc/cuwrap/                  the documentation
#   lib/cmake/cuwrap/                  the package: find_package(cuwrap) → cuwrap::cuwrap
#   lib/pkgconfig/cuwrap.pc            the same for pkg-config (pkg-config cuwrap)
#
# Both packages find the library and headers relative to themselves, so the tree can be
# moved (a .deb installs it to /usr; tests extract it into a scratch directory).
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

cuwrap_version_text(${CUWRAP_CUDA_VERSION} CUWRAP_CUDA_VERSION_TEXT)
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

# pkg-config: ${pcfiledir}-relative prefix; the CUDA include directory is the build's.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "cuwrap: CMAKE_INSTALL_LIBDIR must be relative to the prefix for the "
                      "relocatable packages; it is ${CMAKE_INSTALL_LIBDIR}")
endif()
file(RELATIVE_PATH CUWRAP_PC_PREFIX_FROM_PCFILEDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
set(CUWRAP_PC_DEFINITIONS "")
if(CUWRAP_DLPACK_INCLUDE_DIR)
  set(CUWRAP_PC_DEFINITIONS " -DCUWRAP_HAS_DLPACK=1")
endif()
# What the static library needs from the system: dlopen and threads.
set(CUWRAP_PC_SYSTEM_LIBS "-pthread")
if(CMAKE_DL_LIBS)
  string(PREPEND CUWRAP_PC_SYSTEM_LIBS "-l${CMAKE_DL_LIBS} ")
endif()
# The libraries linked in statically where their option is ON (nvPTXCompiler;
# runtime/CMakeLists.txt lists them): a user of the static libcuwrap links their archives,
# and what they need, after -lcuwrap, and compiles with their options defined, as
# cuwrap::cuwrap gives CMake users.
foreach(_definition ${CUWRAP_STATIC_DEFINITIONS})
  string(APPEND CUWRAP_PC_DEFINITIONS " -D${_definition}")
endforeach()
if(CUWRAP_STATIC_ARCHIVES)
  list(JOIN CUWRAP_STATIC_ARCHIVES " " _archives)
  string(PREPEND CUWRAP_PC_SYSTEM_LIBS "${_archives} -lm -lrt ")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/cuwrap.pc.in ${CMAKE_CURRENT_BINARY_DIR}/cuwrap.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cuwrap.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
