// Test support: GoogleTest fixtures that open device 0 for each test and skip the test
// (with the reason) on a machine without a usable GPU.
#pragma once

#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/version.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <optional>

namespace cuwrap::testing {

/// A fixture holding device 0, made current on the test's thread; skips without a GPU.
///
/// A derived SetUp() calls DeviceTest::SetUp() first and returns when IsSkipped().
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CUWRAP_REQUIRE_GPU();
    device_.emplace(0);
    device_->set_current();
  }

  /// Return device 0 (only while a GPU is there).
  const Device& device() const { return *device_; }

  std::optional<Device> device_;  // engaged only when a GPU is there
};

/// A DeviceTest that also holds a stream on device 0 for the test to use.
class DeviceStreamTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    stream_.emplace(device_->create_stream());
  }

  /// Return the test's stream (only while a GPU is there).
  const Stream& stream() const { return *stream_; }

  std::optional<Stream> stream_;  // engaged only when a GPU is there
};

/// DeviceTest for green contexts with streams: also skips, naming the driver, where the
/// driver is older than 12.5 (green contexts need 12.4, streams in them 12.5).
class GreenStreamTest : public DeviceTest {
 protected:
  /// The first driver with streams in green contexts.
  static constexpr int kGreenStreamDriver = 12050;

  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (cuwrap::driver_version() < kGreenStreamDriver) {
      GTEST_SKIP() << "green-context streams need a CUDA 12.5 driver; this one is "
                   << cuwrap::version_string(cuwrap::driver_version());
    }
  }
};

}  // namespace cuwrap::testing
