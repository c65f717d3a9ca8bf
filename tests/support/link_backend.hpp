// Test support: which linker the library links with (nvJitLink or the driver's cuLink*),
// answered from the versions the test sees, so that each Linker / PTX-Program test states
// what it expects on every driver, real or emulated (the interposer's
// CUWRAP_EMULATE_DRIVER_VERSION, the stand-in libcuda's CUWRAP_FAKE_DRIVER_VERSION).
//
// The rule (docs/compile.md, runtime/include/cuwrap/linker.hpp), as cuda.core's: nvJitLink
// when it is 12.3 or newer, of the driver's major version (or there is no driver to compare
// with) and a handle can be created; otherwise the driver's linker, which refuses
// link-time optimisation, LTO-IR inputs and PTX output. The answer is computed here from
// the versions, not asked of the library, so a test also checks that the library obeys it.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include "toolkit_libraries.hpp"

#include <exception>
#include <string>

namespace cuwrap::testing {

/// The two linkers the library can link with.
enum class LinkBackend {
  NvJitLink,  ///< libnvJitLink (Linker::backend() "nvJitLink")
  Driver,     ///< the driver's cuLinkCreate / cuLinkAddData / cuLinkComplete ("driver")
};

/// Return the name Linker::backend() and Program::backend() give `backend`.
inline const char* link_backend_name(LinkBackend backend) {
  return backend == LinkBackend::NvJitLink ? "nvJitLink" : "driver";
}

/// Return the backend for a driver of CUDA `driver_version` (0: no driver loads) and an
/// nvJitLink of `nvjitlink_version` (0: none loads or it cannot create a handle).
constexpr LinkBackend link_backend_for(int driver_version, int nvjitlink_version) {
  if (nvjitlink_version < 12030) {
    return LinkBackend::Driver;
  }
  if (driver_version != 0 && driver_version / 1000 != nvjitlink_version / 1000) {
    return LinkBackend::Driver;
  }
  return LinkBackend::NvJitLink;
}

/// The backend expected in this process, and the versions it follows from.
struct LinkBackendExpectation {
  LinkBackend backend = LinkBackend::Driver;
  int driver_version = 0;     ///< 0: no driver loads
  int nvjitlink_version = 0;  ///< 0: no usable nvJitLink
  /// "driver CUDA 12.8, nvJitLink 13.0: the driver's linker (another major version)".
  std::string reason;
};

/// Return the backend the library will use here, from the driver's and nvJitLink's versions.
inline const LinkBackendExpectation& expected_link_backend() {
  static const LinkBackendExpectation expectation = [] {
    LinkBackendExpectation e;
    try {
      e.driver_version = cuwrap::driver_version();
    } catch (const std::exception&) {
      e.driver_version = 0;
    }
#ifdef CUWRAP_TESTING_HAVE_NVJITLINK
    unsigned major = 0;
    unsigned minor = 0;
    if (nvjitlink_unusable_reason().empty() &&
        nvjitlink::raw::nvJitLinkVersion(&major, &minor) == NVJITLINK_SUCCESS) {
      e.nvjitlink_version = static_cast<int>(major * 1000 + minor * 10);
    }
#endif
    e.backend = link_backend_for(e.driver_version, e.nvjitlink_version);
    const std::string driver = e.driver_version == 0
                                   ? std::string("no driver")
                                   : "driver CUDA " + cuwrap::version_string(e.driver_version);
    const std::string nvjitlink = e.nvjitlink_version == 0
                                      ? std::string("no usable nvJitLink")
                                      : "nvJitLink " + cuwrap::version_string(e.nvjitlink_version);
    std::string why;
    if (e.backend == LinkBackend::NvJitLink) {
      why = "nvJitLink";
    } else if (e.nvjitlink_version == 0) {
      why = "the driver's linker (" + nvjitlink_unusable_reason() + ")";
    } else if (e.nvjitlink_version < 12030) {
      why = "the driver's linker (nvJitLink older than 12.3)";
    } else {
      why = "the driver's linker (another major version)";
    }
    e.reason = driver + ", " + nvjitlink + ": " + why;
    return e;
  }();
  return expectation;
}

/// Return true when the library is expected to link with nvJitLink here.
inline bool expects_nvjitlink() {
  return expected_link_backend().backend == LinkBackend::NvJitLink;
}

}  // namespace cuwrap::testing

/// Skip the current test, saying which versions make the library link with the driver's
/// linker, unless it links with nvJitLink. For the part of a test that only nvJitLink
/// does (link-time optimisation, PTX output, nvJitLink's own errors); what the driver's
/// linker does instead is checked before it.
#define CUWRAP_REQUIRE_NVJITLINK_BACKEND()                               \
  do {                                                                   \
    if (!::cuwrap::testing::expects_nvjitlink()) {                       \
      GTEST_SKIP() << "nvJitLink only; here "                            \
                   << ::cuwrap::testing::expected_link_backend().reason; \
    }                                                                    \
  } while (false)
