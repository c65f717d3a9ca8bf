// Test support: tests of features newer than the oldest supported toolkit or driver.
//
// On an older driver (real, or emulated by the fault interposer through
// CUWRAP_LIBCUDA + CUWRAP_EMULATE_DRIVER_VERSION) or a build from older headers, such a
// feature must throw cuwrap::UnsupportedError naming it; the test checks exactly that
// and then skips, saying why. On a new enough setup the test runs normally.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include <string>

namespace cuwrap::testing {

/// Return the smaller of the bindings' and the installed driver's CUDA version: what a
/// feature's minimum is compared against.
inline int available_cuda_version() {
  const int driver = cuwrap::driver_version();
  return driver < cuwrap::bindings_version() ? driver : cuwrap::bindings_version();
}

/// Return "" when the driver and the bindings are at least `required`, else why not
/// ("the driver is CUDA 12.4, the test needs 12.8").
inline std::string cuda_too_old_reason(int required) {
  const int driver = cuwrap::driver_version();
  if (driver < required) {
    return "the driver is CUDA " + cuwrap::version_string(driver) + ", the test needs " +
           cuwrap::version_string(required);
  }
  if (cuwrap::bindings_version() < required) {
    return "cuwrap was built against CUDA " + cuwrap::version_string(cuwrap::bindings_version()) +
           ", the test needs " + cuwrap::version_string(required);
  }
  return {};
}

/// Return "" when `error` is the UnsupportedError expected of `feature` (its feature()
/// contains `feature`, it needs `required` and reports the version that falls short),
/// else what is wrong with it.
inline std::string unsupported_mismatch(const cuwrap::UnsupportedError& error,
                                        const std::string& feature, int required) {
  if (error.feature().find(feature) == std::string::npos) {
    return "UnsupportedError names \"" + error.feature() + "\", expected \"" + feature + "\"";
  }
  if (error.required_version() != required) {
    return "UnsupportedError requires " + std::to_string(error.required_version()) + ", expected " +
           std::to_string(required);
  }
  if (error.available_version() >= required) {
    return "UnsupportedError reports " + std::to_string(error.available_version()) +
           " as too old for " + std::to_string(required);
  }
  return {};
}

}  // namespace cuwrap::testing

/// When the driver or the bindings are older than CUDA `required`: check that
/// `statement` throws UnsupportedError naming `feature` with that minimum, then skip the
/// rest of the test with the reason. Otherwise do nothing (the test goes on and uses the
/// feature).
#define CUWRAP_EXPECT_UNSUPPORTED_BELOW(required, feature, statement)                           \
  do {                                                                                          \
    const std::string cuwrap_version_reason = ::cuwrap::testing::cuda_too_old_reason(required); \
    if (!cuwrap_version_reason.empty()) {                                                       \
      try {                                                                                     \
        statement;                                                                              \
        ADD_FAILURE() << "expected UnsupportedError for " << (feature) << " ("                  \
                      << cuwrap_version_reason << "), nothing was thrown";                      \
      } catch (const ::cuwrap::UnsupportedError& cuwrap_unsupported) {                          \
        const std::string cuwrap_mismatch =                                                     \
            ::cuwrap::testing::unsupported_mismatch(cuwrap_unsupported, feature, required);     \
        EXPECT_TRUE(cuwrap_mismatch.empty()) << cuwrap_mismatch;                                \
      }                                                                                         \
      GTEST_SKIP() << (feature) << " unsupported as expected: " << cuwrap_version_reason;       \
    }                                                                                           \
  } while (false)
