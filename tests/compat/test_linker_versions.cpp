// The Linker's choice of backend by version, without a GPU: against the stand-in driver
// (tests/compat/fake_libcuda.cpp) made to answer a major version other than the
// installed nvJitLink's, the Linker uses the driver's linker and refuses link-time
// optimisation, as cuda.core does.
#include <cuwrap/linker.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/object_code.hpp>
#include <cuwrap/version.hpp>

#include <gtest/gtest.h>

#include "fake_driver.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

using cuwrap::Linker;
using cuwrap::LinkerOptions;
using cuwrap::ObjectCode;

constexpr const char* kPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry noop() { ret; }\n";

TEST(LinkerOnFakeDriver, AnotherMajorVersionThanTheDriverFallsBackAndRefusesLto) {
  ASSERT_TRUE(cuwrap::testing::kFakeInstalled);
  unsigned major = 0;
  unsigned minor = 0;
  if (cuwrap::nvjitlink::raw::nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS ||
      major * 1000 + minor * 10 < 12030) {
    GTEST_SKIP() << "no nvJitLink 12.3+ to compare with the driver";
  }
  // Before anything reads the driver's version (once per process): the other major.
  const int other = major == 12 ? 13000 : 12040;
  ::setenv("CUWRAP_FAKE_DRIVER_VERSION", std::to_string(other).c_str(), 1);
  ASSERT_EQ(cuwrap::driver_version(), other);

  EXPECT_FALSE(cuwrap::detail::nvjitlink_usable());
  const std::string reason = cuwrap::detail::nvjitlink_fallback_reason();
  EXPECT_NE(reason.find("another major version than the driver"), std::string::npos) << reason;

  LinkerOptions options;
  options.arch = "sm_90";
  const Linker linker({ObjectCode::from_ptx(kPtx, "noop")}, options);
  EXPECT_EQ(linker.backend(), "driver");
  EXPECT_EQ(linker.handle(), nullptr);

  options.link_time_optimization = true;
  try {
    const Linker lto({ObjectCode::from_ptx(kPtx, "noop")}, options);
    ADD_FAILURE() << "link-time optimisation was accepted by the driver's linker";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("link_time_optimization"), std::string::npos) << what;
    EXPECT_NE(what.find("another major version"), std::string::npos) << what;
  }
}

}  // namespace
