// cuda_core/tests/memory_ipc/test_event_ipc.py, ported in part: an IPC-enabled event
// cannot use timing, and keeps its properties in another process. README.md says what is
// ported and why the rest is not.
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <array>
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

TEST(TestIpcEventPropertiesChild, ChildMain) {
  if (!cuwrap::conformance::is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = cuwrap::conformance::parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const auto descriptor = channel.receive_value<cuwrap::IPCEventDescriptor>();
  const cuwrap::Event e = cuwrap::Event::from_ipc_descriptor(descriptor, device);
  EXPECT_EQ(e.device().device_id(), 0);
  const std::array<bool, 3> props = {e.is_ipc_enabled(), e.is_timing_disabled(),
                                     e.is_sync_busy_waited()};
  channel.send_value(props);
}

class TestIpcEventProperties : public cuwrap::testing::DeviceStreamTest,
                               public ::testing::WithParamInterface<bool> {};

TEST_P(TestIpcEventProperties, TestMain) {
  const bool busy_waited_sync = GetParam();
  cuwrap::IPCChildProcess child =
      cuwrap::conformance::start_child("TestIpcEventPropertiesChild.ChildMain");
  const cuwrap::Event e = stream().record(
      cuwrap::EventOptions{.blocking_sync = !busy_waited_sync, .ipc_enabled = true});
  child.channel().send_value(e.get_ipc_descriptor());
  const auto props = child.channel().receive_value<std::array<bool, 3>>();
  EXPECT_EQ(props[0], e.is_ipc_enabled());
  EXPECT_EQ(props[1], e.is_timing_disabled());
  EXPECT_EQ(props[2], e.is_sync_busy_waited());
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
}

INSTANTIATE_TEST_SUITE_P(BusyWaitedSync, TestIpcEventProperties, ::testing::Bool());

}  // namespace
