# The .deb: `cpack -G DEB` in the build directory writes cuwrap-dev_<version>_<arch>.deb
# holding what `cmake --install` installs (cmake/install.cmake) under /usr: the library,
# the headers, the CMake and pkg-config packages, and cuwrap-gen with its templates when
# the generator was built.
set(CPACK_PACKAGE_NAME cuwrap-dev)
set(CPACK_PACKAGE_VENDOR "cuwrap")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "typed C++20 bindings for the CUDA driver API, NVRTC and nvJitLink")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "cuwrap wraps the CUDA driver API, NVRTC and nvJitLink in typed, throwing C++20 functions "
    "generated from the toolkit headers, with a high-level layer (devices, streams, buffers, "
    "programs, graphs). libcuda, libnvrtc and libnvJitLink are opened at run time; building "
    "against cuwrap needs the headers of the CUDA toolkit it was built for.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "cuwrap maintainers" CACHE STRING
    "The Maintainer field of the .deb")
# Depends: what cuwrap-gen and the interposer link (dpkg-shlibdeps, when installed), and
# libssl3, whose libcrypto FileProgramCache opens at run time for SHA-256.
find_program(CUWRAP_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(CUWRAP_DPKG_SHLIBDEPS)
if(CUWRAP_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libssl3 | libssl1.1")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libssl3 | libssl1.1")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pkg-config")
include(CPack)
