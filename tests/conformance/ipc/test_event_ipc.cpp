// cuda_core/tests/memory_ipc/test_event_ipc.py, ported in part: an IPC-enabled event
// cannot use timing. README.md says what is ported and why the rest is not.
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"

#include <stdexcept>
#include <string>

namespace {

class TestEventIpc : public cuwrap::testing::DeviceStreamTest {};

TEST_F(TestEventIpc, TestEventTimingDisabled) {
  // cuda.core: TypeError "IPC-enabled events cannot use timing."; cuwrap:
  // std::invalid_argument naming both options, before the driver.
  const cuwrap::EventOptions options{.enable_timing = true, .ipc_enabled = true};
  try {
    static_cast<void>(stream().record(options));
    ADD_FAILURE() << "an IPC-enabled event with timing was recorded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("enable_timing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(device().create_event(options)), std::invalid_argument);
}

}  // namespace
