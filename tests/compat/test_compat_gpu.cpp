// The version helpers of runtime/src/base/compat.hpp on a real GPU. On a current driver they
// take the newest entry points; under an emulated older driver (scripts/device_compat.sh:
// the fault interposer with CUWRAP_EMULATE_DRIVER_VERSION) the fallbacks, which must give
// the same answers.
#include <gtest/gtest.h>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/stream.hpp>

#include <thread>

#include "base/compat.hpp"  // runtime/src
#include "device_fixture.hpp"

namespace {

using cuwrap::testing::DeviceTest;

class CompatGpu : public DeviceTest {};

TEST_F(CompatGpu, StreamDeviceAndContextsMatchTheStreamsDevice) {
  for (const cuwrap::Device& dev : cuwrap::Device::all()) {
    const cuwrap::Stream stream = dev.create_stream();
    EXPECT_EQ(cuwrap::detail::stream_device(stream.handle()), dev.handle());
    const cuwrap::detail::StreamContexts contexts =
        cuwrap::detail::stream_contexts(stream.handle());
    EXPECT_EQ(contexts.context, dev.context());
    EXPECT_EQ(contexts.green, nullptr);
  }
}

TEST_F(CompatGpu, ContextHelpersWorkFromAThreadWithoutCurrentContext) {
  const CUcontext context = device().context();
  const CUdevice expected = device().handle();
  CUdevice found = -1;
  CUcontext current_after = nullptr;
  bool synchronized = false;
  std::thread worker([&] {
    found = cuwrap::detail::context_device(context);
    cuwrap::detail::context_synchronize(context);
    synchronized = true;
    current_after = cuwrap::driver::cuCtxGetCurrent();
  });
  worker.join();
  EXPECT_EQ(found, expected);
  EXPECT_TRUE(synchronized);
  // Either form leaves the thread with no context or with this one, never another.
  EXPECT_TRUE(current_after == nullptr || current_after == context);
}

TEST_F(CompatGpu, EventTimeIsMeasured) {
  const cuwrap::Stream stream = device().create_stream();
  const cuwrap::Event start = stream.record({.enable_timing = true});
  const cuwrap::Event end = stream.record({.enable_timing = true});
  end.sync();
  const float ms = cuwrap::detail::event_elapsed_ms(start.handle(), end.handle());
  EXPECT_GE(ms, 0.0F);
  EXPECT_FLOAT_EQ(ms, end - start);
}

TEST_F(CompatGpu, StreamFromHandleFindsTheDeviceOnEveryDriver) {
  const CUstream raw = cuwrap::driver::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  {
    const cuwrap::StreamRef stream = cuwrap::StreamRef::from_handle(raw);
    EXPECT_EQ(stream.device(), device());
    EXPECT_EQ(stream.context(), device().context());
    stream.sync();
  }
  cuwrap::driver::cuStreamDestroy(raw);
}

}  // namespace
