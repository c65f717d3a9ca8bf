// Test support: whether the bindings under test can load NVRTC and nvJitLink of their
// toolkit, and skipping a test that needs one where it cannot.
//
// The bindings load the libraries of the CUDA major they were generated from
// (libnvrtc.so.<major>, libnvJitLink.so.<major>: the NVRTC and nvJitLink entry points are
// versioned symbols). A machine may lack them: CI builds against the CUDA 12.4 and 12.6
// headers alone, and the GPU machine has CUDA 13 only. A test that compiles with NVRTC,
// or uses what only nvJitLink does, then skips, naming the library that could not be
// used; wherever the library is installed it runs.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/nvrtc_raw.hpp>
#if __has_include(<cuwrap/nvjitlink_raw.hpp>)  // no nvJitLink.h before CUDA 12.0
#include <cuwrap/nvjitlink_raw.hpp>
#define CUWRAP_TESTING_HAVE_NVJITLINK 1
#endif

#include <cuwrap/error.hpp>
#if CUWRAP_HAS_NVVM
#include <cuwrap/nvvm_raw.hpp>
#endif

#include <string>

namespace cuwrap::testing {

/// "needs <what> (<file>), which cannot be loaded: <reason>".
inline std::string toolkit_library_missing(const char* what, detail::Library library) {
  const std::string reason = cuwrap::last_load_error();
  return std::string("needs ") + what + " (" + detail::library_path(library) +
         "), which cannot be used by these bindings: " +
         (reason.empty() ? std::string("its first call failed") : reason);
}

/// Return "" when NVRTC can be loaded by the bindings, else why not (naming the library).
inline const std::string& nvrtc_unusable_reason() {
  static const std::string reason = [] {
    int major = 0;
    int minor = 0;
    if (nvrtc::raw::nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
      return std::string();
    }
    return toolkit_library_missing("NVRTC", detail::Library::Nvrtc);
  }();
  return reason;
}

/// Return "" when an nvJitLink handle can be created through the bindings, else why not
/// (naming the library).
inline const std::string& nvjitlink_unusable_reason() {
  static const std::string reason = [] {
#ifdef CUWRAP_TESTING_HAVE_NVJITLINK
    const char* options[] = {"-arch=sm_90"};
    nvJitLinkHandle handle = nullptr;
    if (nvjitlink::raw::nvJitLinkCreate(&handle, 1, options) == NVJITLINK_SUCCESS) {
      static_cast<void>(nvjitlink::raw::nvJitLinkDestroy(&handle));
      return std::string();
    }
    return toolkit_library_missing("nvJitLink", detail::Library::NvJitLink);
#else
    return std::string("needs nvJitLink, which these bindings do not have (no nvJitLink.h)");
#endif
  }();
  return reason;
}

/// Return "" when libNVVM can be loaded by the bindings, else why not (naming the library,
/// or the header the bindings were generated without).
inline const std::string& nvvm_unusable_reason() {
  static const std::string reason = [] {
#if CUWRAP_HAS_NVVM
    int major = 0;
    int minor = 0;
    if (nvvm::raw::nvvmVersion(&major, &minor) == NVVM_SUCCESS) {
      return std::string();
    }
    return toolkit_library_missing("libNVVM", detail::Library::Nvvm);
#else
    return std::string("needs libNVVM, which these bindings do not have (no nvvm.h)");
#endif
  }();
  return reason;
}

}  // namespace cuwrap::testing

/// Skip the current test (GTEST_SKIP, from a test body or SetUp), naming the library,
/// unless NVRTC can be used.
#define CUWRAP_REQUIRE_NVRTC()                                    \
  do {                                                            \
    if (!::cuwrap::testing::nvrtc_unusable_reason().empty()) {    \
      GTEST_SKIP() << ::cuwrap::testing::nvrtc_unusable_reason(); \
    }                                                             \
  } while (false)

/// Skip the current test, naming the library, unless nvJitLink can be used.
#define CUWRAP_REQUIRE_NVJITLINK()                                    \
  do {                                                                \
    if (!::cuwrap::testing::nvjitlink_unusable_reason().empty()) {    \
      GTEST_SKIP() << ::cuwrap::testing::nvjitlink_unusable_reason(); \
    }                                                                 \
  } while (false)

/// Skip the current test, naming the library, unless libNVVM can be used.
#define CUWRAP_REQUIRE_NVVM()                                    \
  do {                                                           \
    if (!::cuwrap::testing::nvvm_unusable_reason().empty()) {    \
      GTEST_SKIP() << ::cuwrap::testing::nvvm_unusable_reason(); \
    }                                                            \
  } while (false)
