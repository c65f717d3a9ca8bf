// Event, mirroring cuda.core's test_event.py: options and flags, sync/query, elapsed
// time (positive, ordered, rejected without timing), IPC descriptors, from_handle,
// move semantics and close.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "gpu.hpp"
#include "host_gate.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

using cuwrap::Device;
using cuwrap::Event;
using cuwrap::EventOptions;
using cuwrap::Stream;

static_assert(cuwrap::testing::NothrowMoveOnly<Event>);

constexpr long long kSpinCycles = 20'000'000;

// Device 0 made current, the test kernels, a stream and a 4 KiB buffer on it: what a
// test needs to keep the stream busy while it looks at events.
struct SpinWork {
  SpinWork()
      : device(current_device()),
        kernels(device),
        stream(device.create_stream()),
        buffer(device.allocate(4096, stream)) {}

  // Enqueue a kernel that spins `cycles` GPU clocks, then adds 1 to every byte of buffer.
  void spin(long long cycles) const {
    kernels.spin_then_add(stream, buffer.handle(), buffer.size(), cycles, 1);
  }

  static Device current_device() {
    const Device device(0);
    device.set_current();
    return device;
  }

  Device device;
  cuwrap::testing::TestKernels kernels;
  Stream stream;
  cuwrap::Buffer buffer;
};

TEST(Event, DefaultOptions) {
  CUWRAP_REQUIRE_GPU();
  const EventOptions options;
  EXPECT_FALSE(options.enable_timing);
  EXPECT_FALSE(options.blocking_sync);
  EXPECT_FALSE(options.ipc_enabled);
  Event event = Device(0).create_event();
  EXPECT_TRUE(event.is_open());
  EXPECT_TRUE(event.is_timing_disabled());
  // As cuda.core 1.3's tests assert: a default event is not busy-waited (the context's
  // scheduling policy decides) and not blocking.
  EXPECT_FALSE(event.is_sync_busy_waited());
  EXPECT_FALSE(event.is_blocking_sync());
  EXPECT_FALSE(event.is_ipc_enabled());
  EXPECT_EQ(event.device(), Device(0));
  EXPECT_EQ(event.context(), Device(0).context());
  EXPECT_TRUE(event.is_done());  // never recorded: complete
}

TEST(Event, OptionsAreReported) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  Event timed = device.create_event({.enable_timing = true});
  EXPECT_FALSE(timed.is_timing_disabled());
  EXPECT_FALSE(timed.is_sync_busy_waited());
  Event blocking = device.create_event({.enable_timing = false, .blocking_sync = true});
  EXPECT_TRUE(blocking.is_timing_disabled());
  EXPECT_TRUE(blocking.is_blocking_sync());
  EXPECT_FALSE(blocking.is_sync_busy_waited());
}

TEST(Event, SyncWaitsForRecordedWork) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  SpinWork work;
  work.buffer.fill(std::uint8_t{1}, work.stream);
  work.spin(kSpinCycles * 2);
  for (bool blocking : {false, true}) {
    Event event = work.stream.record({.blocking_sync = blocking});
    event.sync();
    EXPECT_TRUE(event.is_done());
  }
  EXPECT_TRUE(work.stream.is_done());
}

TEST(Event, IsDoneIsFalseWhileWorkRuns) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  SpinWork work;
  work.spin(0);  // loaded before the gate (host_gate.hpp: a first launch behind it would hang)
  work.stream.sync();
  cuwrap::testing::HostGate gate(work.stream.handle());  // the stream cannot pass until open()
  work.spin(kSpinCycles);
  Event event = work.stream.record();
  EXPECT_FALSE(event.is_done());  // however slow this thread: the kernel waits on the gate
  gate.open();
  event.sync();
  EXPECT_TRUE(event.is_done());
}

TEST(Event, ElapsedTimeIsPositiveAndOrdered) {
  CUWRAP_REQUIRE_GPU();
  CUWRAP_REQUIRE_NVRTC();
  SpinWork work;
  const EventOptions timing{.enable_timing = true};
  Event start = work.stream.record(timing);
  work.spin(kSpinCycles);
  Event middle = work.stream.record(timing);
  work.spin(kSpinCycles);
  Event end = work.device.create_event(timing);
  work.stream.record(end);
  end.sync();
  // Each spin is 20M GPU clocks, over 10 ms at any clock rate a GPU runs at: far above the
  // events' resolution (about half a microsecond), so the order cannot come out wrong.
  const float first = middle - start;
  const float total = end - start;
  EXPECT_GT(first, 0.0f);
  EXPECT_GT(total, first);
}

TEST(Event, ElapsedTimeWithoutTimingThrowsLogicError) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  Stream stream = device.create_stream();
  Event timed = stream.record({.enable_timing = true});
  Event untimed = stream.record();
  stream.sync();
  try {
    static_cast<void>(untimed - timed);
    FAIL() << "elapsed time with an untimed event did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("end event"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("enable_timing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(timed - untimed), std::logic_error);
  Event closed = stream.record({.enable_timing = true});
  closed.close();
  EXPECT_THROW(static_cast<void>(timed - closed), std::logic_error);
}

TEST(Event, IpcRequiresTimingDisabled) {
  CUWRAP_REQUIRE_GPU();
  try {
    Event event = Device(0).create_event({.enable_timing = true, .ipc_enabled = true});
    FAIL() << "an IPC event with timing was created";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ipc_enabled"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("enable_timing"), std::string::npos) << e.what();
  }
}

TEST(Event, IpcDescriptor) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  Event plain = device.create_event();
  EXPECT_THROW(static_cast<void>(plain.get_ipc_descriptor()), std::logic_error);
  std::optional<Event> created;
  try {
    created.emplace(device, EventOptions{.ipc_enabled = true});
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "the driver does not support IPC events here: " << e.what();
  }
  Event& ipc = *created;
  EXPECT_TRUE(ipc.is_ipc_enabled());
  EXPECT_TRUE(ipc.is_timing_disabled());
  cuwrap::IPCEventDescriptor descriptor{};
  try {
    descriptor = ipc.get_ipc_descriptor();
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "cuIpcGetEventHandle unsupported here: " << e.what();
  }
  bool nonzero = false;
  for (char c : descriptor.handle.reserved) {
    nonzero = nonzero || c != 0;
  }
  EXPECT_TRUE(nonzero);
  EXPECT_EQ(descriptor.blocking_sync, 0);  // made without blocking_sync
  // The same event gives the same descriptor.
  const cuwrap::IPCEventDescriptor again = ipc.get_ipc_descriptor();
  EXPECT_EQ(std::string(descriptor.handle.reserved, sizeof descriptor.handle.reserved),
            std::string(again.handle.reserved, sizeof again.handle.reserved));
}

TEST(Event, MoveAndClose) {
  CUWRAP_REQUIRE_GPU();
  Event a = Device(0).create_event();
  const CUevent handle = a.handle();
  Event b = std::move(a);
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_EQ(b.handle(), handle);
  try {
    a.sync();
    FAIL() << "sync on a moved-from event did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "Event::sync on a closed Event");
  }
  Event c = Device(0).create_event();
  c = std::move(b);
  EXPECT_EQ(c.handle(), handle);
  c.close();
  c.close();
  EXPECT_THROW(static_cast<void>(c.is_done()), std::logic_error);
  EXPECT_THROW(static_cast<void>(c.handle()), std::logic_error);
}

TEST(Event, FromHandleNeverDestroysTheEvent) {
  CUWRAP_REQUIRE_GPU();
  Device(0).set_current();
  const CUevent raw = cuwrap::driver::cuEventCreate(CU_EVENT_DEFAULT);
  {
    cuwrap::EventRef wrapped = Event::from_handle(raw);
    EXPECT_EQ(wrapped.handle(), raw);
    Stream stream = Device(0).create_stream();
    stream.record(wrapped);
    wrapped.sync();
    EXPECT_TRUE(wrapped.is_done());
  }
  EXPECT_EQ(cuwrap::driver::raw::cuEventQuery(raw), CUDA_SUCCESS);
  EXPECT_EQ(cuwrap::driver::raw::cuEventDestroy(raw), CUDA_SUCCESS);
}

TEST(Event, EventsOnEveryDevice) {
  CUWRAP_REQUIRE_GPU();
  for (const Device& device : Device::all()) {
    Stream stream = device.create_stream();
    Event start = stream.record({.enable_timing = true});
    Event end = stream.record({.enable_timing = true});
    end.sync();
    EXPECT_GE(end - start, 0.0f);
    EXPECT_EQ(end.device(), device);
  }
}

}  // namespace
