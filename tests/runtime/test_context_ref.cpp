// Regular contexts, ContextRef and ScopedCurrentContext, the device look-ups and
// primary-context settings, and the stream attributes, on a GPU. Each test that looks at
// the current context runs its calls on a fresh thread (none current at its start), so
// that no other test can change what it sees.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

using cuwrap::ContextRef;
using cuwrap::Device;

// Run `body` on a new thread (no context current there) and rethrow what it threw.
template <class Body>
void on_fresh_thread(Body&& body) {
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) {
    std::rethrow_exception(error);
  }
}

CUcontext current() { return cuwrap::driver::cuCtxGetCurrent(); }

TEST(ContextRefGpu, CurrentIsNulloptOnAFreshThreadAndDeviceCurrentRefuses) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    static_cast<void>(Device::count());  // initialises the driver
    EXPECT_FALSE(ContextRef::current().has_value());
    try {
      static_cast<void>(Device::current());
      ADD_FAILURE() << "Device::current answered with no context current";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("set_current"), std::string::npos) << e.what();
    }
    Device(0).set_current();
    const std::optional<ContextRef> now = ContextRef::current();
    ASSERT_TRUE(now.has_value());
    EXPECT_EQ(*now, Device(0).primary_context());
    EXPECT_EQ(Device::current(), Device(0));
  });
}

TEST(ContextRefGpu, RegularContextIsCreatedWithoutBecomingCurrent) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    cuwrap::Context ctx = dev.create_context({.flags = CU_CTX_SCHED_BLOCKING_SYNC});
    EXPECT_EQ(current(), nullptr) << "create_context left its context current";
    EXPECT_FALSE(ctx.is_green());
    EXPECT_FALSE(static_cast<const ContextRef&>(ctx).is_green());
    EXPECT_NE(ctx.handle(), dev.context());
    EXPECT_EQ(ctx.device(), dev);
    EXPECT_EQ(ctx.flags() & CU_CTX_SCHED_MASK, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
    EXPECT_THROW(static_cast<void>(ctx.green_handle()), std::logic_error);
    EXPECT_THROW(static_cast<void>(ctx.resources()), std::logic_error);
    EXPECT_EQ(current(), nullptr) << "reading flags left the context current";
  });
}

TEST(ContextRefGpu, RegularContextRunsWorkOnItsStreams) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  cuwrap::Context ctx = dev.create_context({});
  cuwrap::Stream stream = ctx.create_stream();
  EXPECT_EQ(stream.context(), ctx.handle());
  cuwrap::Buffer buffer = dev.allocate(256, stream);
  buffer.fill(std::uint8_t{7}, stream);
  std::vector<unsigned char> host(256);
  buffer.copy_to(std::as_writable_bytes(std::span(host)), stream);
  stream.sync();
  EXPECT_EQ(host.front(), 7);
  EXPECT_EQ(host.back(), 7);
  buffer.close(stream);
  ctx.sync();
}

TEST(ContextRefGpu, ClosedContextRefusesEveryOperation) {
  CUWRAP_REQUIRE_GPU();
  cuwrap::Context ctx = Device(0).create_context({});
  cuwrap::Context moved = std::move(ctx);
  EXPECT_FALSE(ctx.is_open());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(static_cast<void>(ctx.limit(CU_LIMIT_STACK_SIZE)), std::logic_error);
  EXPECT_THROW(static_cast<void>(ctx.make_current()), std::logic_error);
  EXPECT_THROW(ctx.sync(), std::logic_error);
  EXPECT_NO_THROW(moved.sync());
  moved.close();
  EXPECT_THROW(static_cast<void>(moved.flags()), std::logic_error);
}

TEST(ContextRefGpu, MakeCurrentPushesAndThePopRestoresAlsoOnExceptions) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    cuwrap::Context ctx = dev.create_context({});
    dev.set_current();
    {
      const cuwrap::ScopedCurrentContext scope = ctx.make_current();
      EXPECT_EQ(current(), ctx.handle());
      EXPECT_EQ(scope.context(), ctx.handle());
    }
    EXPECT_EQ(current(), dev.context());
    try {
      const cuwrap::ScopedCurrentContext scope = ctx.make_current();
      throw std::runtime_error("leaving the scope");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(current(), dev.context());
    cuwrap::driver::cuCtxSetCurrent(nullptr);
    {
      auto outer = dev.primary_context().make_current();
      auto moved = std::move(outer);
      EXPECT_EQ(outer.context(), nullptr);  // NOLINT(bugprone-use-after-move)
      EXPECT_EQ(current(), dev.context());
    }
    EXPECT_EQ(current(), nullptr);
  });
}

TEST(ContextRefGpu, LimitsCacheConfigAndPriorityRangeLeaveTheCurrentContext) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    cuwrap::Context ctx = dev.create_context({});
    constexpr std::size_t kFifo = std::size_t{3} << 20;
    ctx.set_limit(CU_LIMIT_PRINTF_FIFO_SIZE, kFifo);
    EXPECT_GE(ctx.limit(CU_LIMIT_PRINTF_FIFO_SIZE), kFifo);
    const std::size_t stack = ctx.limit(CU_LIMIT_STACK_SIZE);
    ctx.set_limit(CU_LIMIT_STACK_SIZE, stack + 1024);
    EXPECT_GE(ctx.limit(CU_LIMIT_STACK_SIZE), stack + 1024);
    ctx.set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, std::size_t{16} << 20);
    EXPECT_GE(ctx.limit(CU_LIMIT_MALLOC_HEAP_SIZE), std::size_t{16} << 20);
    ctx.set_cache_config(CU_FUNC_CACHE_PREFER_L1);
    EXPECT_EQ(ctx.cache_config(), CU_FUNC_CACHE_PREFER_L1);
    const cuwrap::StreamPriorityRange range = ctx.stream_priority_range();
    EXPECT_LE(range.greatest, range.least);
    EXPECT_EQ(current(), nullptr) << "a setting left the context current";
    // The primary context's settings do not change with the regular context's.
    EXPECT_NE(dev.primary_context().limit(CU_LIMIT_PRINTF_FIFO_SIZE), std::size_t{0});
  });
}

TEST(DeviceSettingsGpu, LookUpsAndMemoryInfo) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    EXPECT_EQ(Device::from_pci_bus_id(dev.pci_bus_id()), dev);
    EXPECT_THROW(static_cast<void>(Device::from_pci_bus_id("ffff:ff:1f.7")), std::invalid_argument);
    const cuwrap::MemoryInfo info = dev.memory_info();
    EXPECT_GT(info.total, std::size_t{0});
    EXPECT_LE(info.free, info.total);
    EXPECT_EQ(current(), nullptr) << "memory_info left a context current";
    EXPECT_THROW(
        static_cast<void>(dev.p2p_attribute(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev)),
        std::invalid_argument);
    Device mutable_dev = dev;
    EXPECT_THROW(mutable_dev.set_primary_context_flags(0x80000000U), std::invalid_argument);
  });
}

TEST(DeviceSettingsGpu, DefaultStreamKeepsACurrentContext) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    cuwrap::Context ctx = dev.create_context({});
    const cuwrap::ScopedCurrentContext scope = ctx.make_current();
    static_cast<void>(dev.default_stream());
    EXPECT_EQ(current(), ctx.handle()) << "default_stream replaced the current context";
  });
}

TEST(DeviceSettingsGpu, HashesKeyUnorderedContainers) {
  CUWRAP_REQUIRE_GPU();
  std::unordered_set<Device> devices;
  for (const Device& d : Device::all()) {
    devices.insert(d);
    devices.insert(Device(d.device_id()));
  }
  EXPECT_EQ(devices.size(), static_cast<std::size_t>(Device::count()));
  const cuwrap::Stream stream = Device(0).create_stream();
  const cuwrap::Event event = Device(0).create_event();
  std::unordered_set<cuwrap::StreamRef> streams{stream, cuwrap::StreamRef(stream.handle())};
  std::unordered_set<cuwrap::EventRef> events{event, cuwrap::EventRef(event.handle())};
  std::unordered_set<ContextRef> contexts{Device(0).primary_context(),
                                          ContextRef(Device(0).context())};
  EXPECT_EQ(streams.size(), 1U);
  EXPECT_EQ(events.size(), 1U);
  EXPECT_EQ(contexts.size(), 1U);
}

TEST(DeviceSettingsGpu, PrimaryContextFlagsRoundTrip) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const unsigned before = dev.primary_context_flags();
  Device same = dev;
  same.set_primary_context_flags((before & ~CU_CTX_SCHED_MASK) | CU_CTX_SCHED_YIELD);
  EXPECT_EQ(dev.primary_context_flags() & CU_CTX_SCHED_MASK,
            static_cast<unsigned>(CU_CTX_SCHED_YIELD));
  same.set_primary_context_flags(before);
  EXPECT_EQ(dev.primary_context_flags(), before);
}

// A reset destroys the primary context's state for the whole process: this test's
// process only (ctest runs each test in its own).
TEST(DeviceSettingsGpu, ResetMakesOldObjectsThrowContextDestroyedError) {
  CUWRAP_REQUIRE_GPU();
  Device dev(0);
  const cuwrap::Stream before = dev.create_stream();
  const cuwrap::Event event = before.record();
  before.sync();
  dev.reset();
  EXPECT_THROW(before.sync(), cuwrap::ContextDestroyedError);
  EXPECT_THROW(before.wait(event), cuwrap::ContextDestroyedError);
  const cuwrap::Stream after = dev.create_stream();
  cuwrap::Buffer buffer = dev.allocate(64, after);
  buffer.fill(std::uint8_t{1}, after);
  EXPECT_NO_THROW(after.sync());
  buffer.close(after);
}

TEST(DeviceSettingsGpu, TwoDevicesP2PAttribute) {
  CUWRAP_REQUIRE_GPUS(2);
  const Device a(0);
  const Device b(1);
  const int supported = a.p2p_attribute(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, b);
  EXPECT_EQ(supported != 0, a.can_access_peer(b));
  on_fresh_thread([&] {
    b.set_current();
    EXPECT_EQ(Device::current(), b);
    static_cast<void>(a.memory_info());
    EXPECT_EQ(current(), b.context()) << "memory_info of device 0 replaced device 1's context";
  });
}

TEST(StreamAttributesGpu, SynchronizationPolicyRoundTripsAndCopies) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const cuwrap::Stream source = dev.create_stream();
  const cuwrap::Stream target = dev.create_stream();
  source.set_synchronization_policy(CU_SYNC_POLICY_BLOCKING_SYNC);
  EXPECT_EQ(source.synchronization_policy(), CU_SYNC_POLICY_BLOCKING_SYNC);
  target.set_synchronization_policy(CU_SYNC_POLICY_SPIN);
  EXPECT_EQ(target.synchronization_policy(), CU_SYNC_POLICY_SPIN);
  target.copy_attributes_from(source);
  EXPECT_EQ(target.synchronization_policy(), CU_SYNC_POLICY_BLOCKING_SYNC);
}

TEST(StreamAttributesGpu, AccessPolicyWindowIsSetAndReset) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const int max_window = dev.attribute(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
  if (max_window <= 0) {
    GTEST_SKIP() << "the device has no L2 access policy window";
  }
  const cuwrap::Stream stream = dev.create_stream();
  cuwrap::Buffer buffer = dev.allocate(std::size_t{1} << 20, stream);
  stream.set_access_policy_window(buffer, 0.75F);
  CUstreamAttrValue value = cuwrap::driver::cuStreamGetAttribute(
      stream.handle(), CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  EXPECT_EQ(value.accessPolicyWindow.base_ptr, reinterpret_cast<void*>(buffer.handle()));
  EXPECT_EQ(value.accessPolicyWindow.num_bytes, buffer.size());
  EXPECT_FLOAT_EQ(value.accessPolicyWindow.hitRatio, 0.75F);
  EXPECT_EQ(value.accessPolicyWindow.hitProp, CU_ACCESS_PROPERTY_PERSISTING);
  const cuwrap::Stream copy = dev.create_stream();
  copy.copy_attributes_from(stream);
  value =
      cuwrap::driver::cuStreamGetAttribute(copy.handle(), CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  EXPECT_EQ(value.accessPolicyWindow.num_bytes, buffer.size());
  stream.reset_access_policy_window();
  value = cuwrap::driver::cuStreamGetAttribute(stream.handle(),
                                               CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  EXPECT_EQ(value.accessPolicyWindow.num_bytes, 0U);
  const cuwrap::BufferRef too_large(buffer.handle(), static_cast<std::size_t>(max_window) + 1);
  EXPECT_THROW(stream.set_access_policy_window(too_large, 0.5F), std::invalid_argument);
  buffer.close(stream);
}

}  // namespace

namespace {

TEST(ContextRefGpu, SetCurrentPushAndPopWorkWithoutAScope) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    EXPECT_FALSE(Device::current_if().has_value()) << "none current on a fresh thread";
    try {
      static_cast<void>(ContextRef::pop());
      ADD_FAILURE() << "pop with no context current was accepted";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("no context is current"), std::string::npos) << e.what();
    }
    const Device dev(0);
    cuwrap::Context own = dev.create_context();  // a regular context, not made current
    EXPECT_FALSE(own.is_green());
    EXPECT_EQ(current(), nullptr) << "create_context makes nothing current";

    dev.primary_context().set_current();
    EXPECT_EQ(current(), dev.context());
    ASSERT_TRUE(Device::current_if().has_value());
    EXPECT_EQ(Device::current_if()->device_id(), 0);

    const ContextRef pushed = own.push();
    EXPECT_EQ(pushed.handle(), own.handle());
    EXPECT_EQ(current(), own.handle());
    // memory_info answers in the current context when it is one of the device's.
    const cuwrap::MemoryInfo info = dev.memory_info();
    EXPECT_GT(info.total, 0U);
    EXPECT_EQ(current(), own.handle()) << "memory_info leaves the current context as it was";

    EXPECT_EQ(ContextRef::pop().handle(), own.handle());
    EXPECT_EQ(current(), dev.context()) << "the one below is current again";
    EXPECT_EQ(ContextRef::pop().handle(), dev.context());
    EXPECT_EQ(current(), nullptr);
  });
}

TEST(ContextRefGpu, ResetAndPrimaryFlagsAreCallableOnAConstDevice) {
  CUWRAP_REQUIRE_GPU();
  const Device dev(0);
  const unsigned flags = dev.primary_context_flags();
  dev.set_primary_context_flags(flags);  // const Device&: as the other mutating operations
  EXPECT_EQ(dev.primary_context_flags(), flags);
  static_assert(std::is_same_v<decltype(dev.reset()), void>);
}

}  // namespace

namespace {

TEST(ContextRefGpu, ArraysAndPitchedMemoryFollowTheChosenContext) {
  CUWRAP_REQUIRE_GPU();
  on_fresh_thread([] {
    const Device dev(0);
    cuwrap::Context own = dev.create_context();
    {
      auto current = own.make_current();
      const cuwrap::Array image(dev, {.width = 16, .height = 16});
      EXPECT_EQ(image.context(), own.handle()) << "made in the context the caller chose";
      const cuwrap::PitchedBuffer rows = dev.allocate_pitched(64, 4);
      EXPECT_EQ(cuwrap::pointer_attributes(rows.handle()).context, own.handle());
    }
    const cuwrap::Array primary(dev, {.width = 16, .height = 16});
    EXPECT_EQ(primary.context(), dev.context()) << "none current: the primary context";
  });
}

}  // namespace
