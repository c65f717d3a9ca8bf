// Test support: whether nvJitLink can be used by the bindings under test.
//
// The nvJitLink entry points are versioned symbols (__nvJitLinkCreate_12_4): bindings of
// one CUDA major need that major's libnvJitLink. A machine may lack it (the GPU machine
// has CUDA 13 only, and a build from the CUDA 12.4 headers then has no nvJitLink): the
// Linker and Program then use the driver's linker, and tests of what only nvJitLink does
// skip, naming the library that could not be used. Wherever the library is installed
// (CI's 13.0 build, the GPU machine's 13.0 build) they run.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/nvjitlink.hpp>

#include <string>

namespace cuwrap::testing {

/// Return "" when an nvJitLink handle can be created through the bindings, else why not.
inline const std::string& nvjitlink_unusable_reason() {
  static const std::string reason = [] {
    const char* options[] = {"-arch=sm_90"};
    nvJitLinkHandle handle = nullptr;
    const nvJitLinkResult status = nvjitlink::raw::nvJitLinkCreate(&handle, 1, options);
    if (status == NVJITLINK_SUCCESS) {
      static_cast<void>(nvjitlink::raw::nvJitLinkDestroy(&handle));
      return std::string();
    }
    const std::string load_error = cuwrap::last_load_error();
    return "nvJitLink cannot be used by these bindings (" +
           cuwrap::detail::library_path(cuwrap::detail::Library::NvJitLink) + "): " +
           (load_error.empty() ? "nvJitLinkCreate failed" : load_error);
  }();
  return reason;
}

}  // namespace cuwrap::testing

/// Skip the current test, saying why, unless nvJitLink can be used.
#define CUWRAP_REQUIRE_NVJITLINK()                                                \
  do {                                                                            \
    if (!::cuwrap::testing::nvjitlink_unusable_reason().empty()) {                \
      GTEST_SKIP() << ::cuwrap::testing::nvjitlink_unusable_reason();             \
    }                                                                             \
  } while (false)
