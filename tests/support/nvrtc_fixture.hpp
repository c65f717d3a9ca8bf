// Test support: a DeviceTest fixture that also skips, naming the reason, where NVRTC
// cannot be used (the tests compile their kernels at run time).
#pragma once

#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

namespace cuwrap::testing {

/// DeviceTest (device 0, current) that skips unless NVRTC can be used.
class DeviceNvrtcTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
  }
};

}  // namespace cuwrap::testing
