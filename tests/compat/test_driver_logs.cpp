// A failed driver call carries the driver's own log lines (CUDA 12.9+ drivers), read only
// on the failure path: against the stand-in libcuda (tests/compat/fake_libcuda.cpp), whose
// failed cuCtxSynchronize writes a log line, answering first as a 12.8 driver (no logs API:
// never asked) and then as a 12.9 one.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include "fake_driver.hpp"

#include <cuda.h>

#include <cstdlib>
#include <string>

namespace {

using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

// Fail cuCtxSynchronize with a context current (so no "no context" note) and return the
// DriverError's log.
std::string failed_sync_log() {
  cuwrap::driver::cuCtxSetCurrent(fake_query<CUcontext>("cuwrap_fake_other_context"));
  std::string log = "(no DriverError)";
  try {
    cuwrap::driver::cuCtxSynchronize();
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_CONTEXT);
    log = e.log();
    if (!log.empty()) {
      EXPECT_NE(std::string(e.what()).find(log), std::string::npos) << "what() ends with it";
    }
  }
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  return log;
}

TEST(DriverLogs, OlderDriversAreNeverAskedAndSuccessCostsNothing) {
  ASSERT_TRUE(kFakeInstalled);
  setenv("CUWRAP_FAKE_DRIVER_VERSION", "12080", 1);
  EXPECT_EQ(failed_sync_log(), "") << "a 12.8 driver has no logs API";
  EXPECT_EQ(fake_query<int>("cuwrap_fake_log_dumps"), 0);
  setenv("CUWRAP_FAKE_DRIVER_VERSION", "12090", 1);
  for (int i = 0; i < 100; ++i) {
    (void)cuwrap::driver::cuDeviceGetCount();
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_log_dumps"), 0) << "successful calls read no log";
  unsetenv("CUWRAP_FAKE_DRIVER_VERSION");
}

TEST(DriverLogs, AFailedCallCarriesTheLinesWrittenSinceThePreviousFailure) {
  ASSERT_TRUE(kFakeInstalled);
#if CUDA_VERSION < 12090
  GTEST_SKIP() << "bindings from CUDA " << CUDA_VERSION / 1000 << "." << CUDA_VERSION % 1000 / 10
               << " headers: the logs API (cuLogsDumpToMemory) needs 12.9 headers";
#endif
  setenv("CUWRAP_FAKE_DRIVER_VERSION", "12090", 1);
  if (cuwrap::driver_version() < 12090) {
    // The loader resolves entry points for the version the driver had when it was loaded:
    // a process that loaded it as 12.8 (the test above, run in the same process) cannot
    // reach the 12.9 entry points. ctest runs each test in a process of its own.
    GTEST_SKIP() << "the driver was loaded as " << cuwrap::driver_version()
                 << " earlier in this process";
  }
  const std::string first = failed_sync_log();
  EXPECT_NE(first.find("[cuCtxSynchronize] the current context is not the fake's"),
            std::string::npos)
      << first;
  const std::string second = failed_sync_log();
  EXPECT_EQ(second, "[cuCtxSynchronize] the current context is not the fake's")
      << "only the line of this failure, not the earlier ones";
  EXPECT_GE(fake_query<int>("cuwrap_fake_log_dumps"), 2);
  unsetenv("CUWRAP_FAKE_DRIVER_VERSION");
}

}  // namespace
