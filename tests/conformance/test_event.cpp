// Port of cuda.core's tests/test_event.py: one TEST per Python test function (see
// README.md for those not ported and why).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "host_gate.hpp"

#include <cuda.h>

#include <chrono>
#include <concepts>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

namespace {

using cuwrap::Event;
using cuwrap::EventOptions;
using cuwrap::Stream;
using cuwrap::testing::DeviceTest;

class test_event : public DeviceTest {};

// cuda.core refuses Event(): an event comes from a device or a stream.
// cuda.core refuses Event(); cuwrap's default Event is a closed one (as its Stream), and
// using it is misuse (std::logic_error, cuda.core's RuntimeError), before any driver call.
TEST(test_event_cpu, test_event_init_disabled) {
  const Event event;
  EXPECT_FALSE(event.is_open());
  EXPECT_THROW(event.sync(), std::logic_error);
  EXPECT_THROW(static_cast<void>(event.handle()), std::logic_error);
  EXPECT_FALSE(std::is_copy_constructible_v<Event>);
}

TEST_F(test_event, test_timing_success) {
  const EventOptions options{.enable_timing = true};
  const Stream stream = device().create_stream();
  const Event e1 = stream.record(options);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const Event e2 = stream.record(options);
  e2.sync();
  const auto elapsed_ms = e2 - e1;
  static_assert(std::is_same_v<std::remove_const_t<decltype(elapsed_ms)>, float>);
  // As cuda.core: a generous tolerance; this exercises operator-, not the clock.
  constexpr float kDelayMs = 500.0F;
  constexpr float kTolerance = 20.0F;
  EXPECT_GE(elapsed_ms, kDelayMs - kTolerance);
  EXPECT_LT(elapsed_ms, kDelayMs + kTolerance);
}

// cuda.core's busy_waited_sync=True is cuwrap's blocking_sync = false (the option's
// deprecated spelling warns); a blocking-sync event is not busy-waited, and neither
// is a default one (cuda.core's default).
TEST_F(test_event, test_is_sync_busy_waited) {
  const Stream stream = device().create_stream();
  EventOptions blocking{.enable_timing = false};
  blocking.blocking_sync = true;
  const Event blocking_event = stream.record(blocking);
  EXPECT_TRUE(blocking_event.is_blocking_sync());
  EXPECT_FALSE(blocking_event.is_sync_busy_waited());

  const Event default_event = stream.record(EventOptions{.enable_timing = false});
  EXPECT_FALSE(default_event.is_sync_busy_waited());
}

TEST_F(test_event, test_sync) {
  const Stream stream = device().create_stream();
  const Event event = stream.record(EventOptions{.enable_timing = false});
  event.sync();
  EXPECT_TRUE(event.is_done());
}

TEST_F(test_event, test_is_done) {
  const Stream stream = device().create_stream();
  const Event event = stream.record(EventOptions{.enable_timing = false});
  // Without a sync the work may or may not be done; asking must not throw.
  EXPECT_NO_THROW(static_cast<void>(event.is_done()));
}

TEST_F(test_event, test_error_timing_disabled) {
  const EventOptions enabled{.enable_timing = true};
  const EventOptions disabled{.enable_timing = false};
  const Stream stream = device().create_stream();

  Event event1 = stream.record(enabled);
  Event event2 = stream.record(disabled);
  EXPECT_FALSE(event1.is_timing_disabled());
  EXPECT_TRUE(event2.is_timing_disabled());
  stream.sync();
  EXPECT_THROW(static_cast<void>(event2 - event1), std::logic_error);

  event1 = stream.record(disabled);
  event2 = stream.record(disabled);
  stream.sync();
  EXPECT_THROW(static_cast<void>(event2 - event1), std::logic_error);
}

// cuda.core's RuntimeError here is the driver's answer (an event never recorded):
// cuwrap's DriverError.
TEST_F(test_event, test_error_timing_recorded) {
  const EventOptions enabled{.enable_timing = true};
  const Stream stream = device().create_stream();
  const Event event1 = stream.record(enabled);
  const Event event2 = device().create_event(enabled);
  const Event event3 = device().create_event(enabled);
  stream.sync();
  EXPECT_THROW(static_cast<void>(event2 - event1), cuwrap::DriverError);
  EXPECT_THROW(static_cast<void>(event1 - event2), cuwrap::DriverError);
  EXPECT_THROW(static_cast<void>(event3 - event2), cuwrap::DriverError);
}

// The stream is held behind a gate (cuda.core uses a latch kernel): the second event
// has not completed, and timing it is the driver's CUDA_ERROR_NOT_READY.
TEST_F(test_event, test_error_timing_incomplete) {
  const EventOptions enabled{.enable_timing = true};
  const Stream stream = device().create_stream();
  const Event event1 = stream.record(enabled);
  event1.sync();
  cuwrap::testing::HostGate gate(stream.handle());
  const Event event3 = stream.record(enabled);
  try {
    static_cast<void>(event3 - event1);
    ADD_FAILURE() << "timing an event that has not completed did not throw";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_NOT_READY) << e.what();
  }
  gate.open();
  event3.sync();
  EXPECT_NO_THROW(static_cast<void>(event3 - event1));
}

TEST_F(test_event, test_event_device) {
  const Event event = device().create_event(EventOptions{});
  EXPECT_EQ(event.device(), device());
}

TEST_F(test_event, test_event_context) {
  const Event event = device().create_event(EventOptions{});
  EXPECT_NE(event.context(), nullptr);
  EXPECT_EQ(event.context(), device().context());
}

TEST_F(test_event, test_event_equality_reflexive) {
  const Stream stream = device().create_stream();
  const Event event = stream.record();
  EXPECT_TRUE(event == event);
}

TEST_F(test_event, test_event_inequality_different_events) {
  const Stream stream = device().create_stream();
  const Event e1 = stream.record();
  const Event e2 = stream.record();
  EXPECT_FALSE(e1 == e2);
}

// cuda.core: comparing with another type is False; in C++ it does not compile.
TEST(test_event_cpu, test_event_type_safety) {
  EXPECT_FALSE((std::equality_comparable_with<Event, std::string>));
  EXPECT_FALSE((std::equality_comparable_with<Event, int>));
  EXPECT_TRUE(std::equality_comparable<Event>);
}

}  // namespace
