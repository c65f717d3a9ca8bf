// Stream, mirroring cuda.core's test_stream.py: options, priorities, sync/query,
// waiting on events and streams, recording, from_handle, the default streams, move
// semantics and close, and stream ordering observed through a kernel.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "gpu.hpp"
#include "host_gate.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Device;
using cuwrap::Stream;
using cuwrap::StreamOptions;
using cuwrap::testing::first_difference;
using cuwrap::testing::random_bytes;
using cuwrap::testing::read_back;
using cuwrap::testing::TestKernels;

static_assert(cuwrap::testing::NothrowMoveOnly<Stream>);

// GPU clocks a kernel spins before writing: long enough (milliseconds) that work not
// ordered after it would see the old data.
constexpr long long kStreamSpinCycles = 50'000'000;

std::vector<std::byte> plus(const std::vector<std::byte>& data, unsigned add) {
  std::vector<std::byte> out(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    out[i] = static_cast<std::byte>(static_cast<unsigned char>(data[i]) + add);
  }
  return out;
}

class StreamTest : public cuwrap::testing::DeviceTest {};

TEST(StreamNoFixture, DefaultOptionsAreNonblockingPriorityZero) {
  CUWRAP_REQUIRE_GPU();
  const StreamOptions options;
  EXPECT_TRUE(options.nonblocking);
  EXPECT_EQ(options.priority, 0);
  Stream stream = Device(0).create_stream();
  EXPECT_TRUE(stream.is_open());
  EXPECT_TRUE(stream.is_nonblocking());
  EXPECT_EQ(stream.priority(), 0);
  EXPECT_EQ(stream.device(), Device(0));
  EXPECT_NE(stream.handle(), nullptr);
  EXPECT_EQ(stream.context(), Device(0).context());
  EXPECT_EQ(cuwrap::driver::cuStreamGetCtx(stream.handle()), Device(0).context());
}

TEST_F(StreamTest, BlockingOption) {
  Stream stream = device().create_stream({.nonblocking = false});
  EXPECT_FALSE(stream.is_nonblocking());
  EXPECT_EQ(cuwrap::driver::cuStreamGetFlags(stream.handle()) & CU_STREAM_NON_BLOCKING, 0u);
}

TEST_F(StreamTest, PrioritiesInTheDeviceRangeAreKept) {
  const auto [least, greatest] = cuwrap::driver::cuCtxGetStreamPriorityRange();
  for (int priority = greatest; priority <= least; ++priority) {
    Stream stream = device().create_stream({.nonblocking = true, .priority = priority});
    EXPECT_EQ(stream.priority(), priority);
  }
}

TEST_F(StreamTest, PriorityOutsideTheRangeIsClampedAsTheDriverDoes) {
  const auto [least, greatest] = cuwrap::driver::cuCtxGetStreamPriorityRange();
  Stream low = device().create_stream({.nonblocking = true, .priority = least + 5});
  EXPECT_EQ(low.priority(), least);
  Stream high = device().create_stream({.nonblocking = true, .priority = greatest - 5});
  EXPECT_EQ(high.priority(), greatest);
}

TEST_F(StreamTest, SyncAndIsDone) {
  CUWRAP_REQUIRE_NVRTC();
  TestKernels kernels(device());
  Stream stream = device().create_stream();
  cuwrap::Buffer buffer = device().allocate(1024, stream);
  buffer.fill(std::uint8_t{3}, stream);
  // Loaded before the gate (host_gate.hpp: a first launch behind it would hang); adds 0.
  kernels.spin_then_add(stream, buffer.handle(), buffer.size(), 0, 0);
  stream.sync();
  cuwrap::testing::HostGate gate(stream.handle());  // the stream cannot pass until open()
  kernels.spin_then_add(stream, buffer.handle(), buffer.size(), kStreamSpinCycles, 1);
  EXPECT_FALSE(stream.is_done());  // however slow this thread: the kernel waits on the gate
  gate.open();
  stream.sync();
  EXPECT_TRUE(stream.is_done());
  EXPECT_EQ(read_back(buffer, stream), std::vector<std::byte>(buffer.size(), std::byte{4}));
}

TEST_F(StreamTest, CopyAfterKernelSeesItsResult) {
  CUWRAP_REQUIRE_NVRTC();
  TestKernels kernels(device());
  Stream stream = device().create_stream();
  const auto data = random_bytes((1 << 20) + 13, 1);
  cuwrap::Buffer buffer = device().allocate(data.size(), stream);
  buffer.copy_from(std::span<const std::byte>(data), stream);
  kernels.spin_then_add(stream, buffer.handle(), buffer.size(), kStreamSpinCycles, 7);
  const auto back = read_back(buffer, stream);
  EXPECT_EQ(first_difference(back, plus(data, 7)), -1);
}

TEST_F(StreamTest, WaitOnStreamOrdersWorkAcrossStreams) {
  CUWRAP_REQUIRE_NVRTC();
  TestKernels kernels(device());
  Stream producer = device().create_stream();
  Stream consumer = device().create_stream();
  const auto data = random_bytes(1 << 20, 2);
  cuwrap::Buffer buffer = device().allocate(data.size(), producer);
  buffer.copy_from(std::span<const std::byte>(data), producer);
  kernels.spin_then_add(producer, buffer.handle(), buffer.size(), kStreamSpinCycles, 5);
  consumer.wait(producer);
  const auto back = read_back(buffer, consumer);
  EXPECT_EQ(first_difference(back, plus(data, 5)), -1);
  consumer.wait(consumer);  // waiting on itself is a no-op
}

TEST_F(StreamTest, WaitOnEventOrdersWorkAcrossStreams) {
  CUWRAP_REQUIRE_NVRTC();
  TestKernels kernels(device());
  Stream producer = device().create_stream();
  Stream consumer = device().create_stream();
  const auto data = random_bytes(1 << 20, 3);
  cuwrap::Buffer buffer = device().allocate(data.size(), producer);
  buffer.copy_from(std::span<const std::byte>(data), producer);
  kernels.spin_then_add(producer, buffer.handle(), buffer.size(), kStreamSpinCycles, 9);
  const cuwrap::Event done = producer.record();
  consumer.wait(done);
  const auto back = read_back(buffer, consumer);
  EXPECT_TRUE(done.is_done());
  EXPECT_EQ(first_difference(back, plus(data, 9)), -1);
}

TEST_F(StreamTest, RecordCreatesOrReusesEvents) {
  Stream stream = device().create_stream();
  cuwrap::Event event = stream.record();
  EXPECT_TRUE(event.is_timing_disabled());
  EXPECT_EQ(event.device(), device());
  cuwrap::Event timed = stream.record({.enable_timing = true});
  EXPECT_FALSE(timed.is_timing_disabled());
  cuwrap::Event reused = device().create_event();
  stream.record(reused);
  stream.sync();
  EXPECT_TRUE(event.is_done());
  EXPECT_TRUE(reused.is_done());
}

TEST_F(StreamTest, MoveLeavesSourceClosedAndCloseIsIdempotent) {
  Stream a = device().create_stream();
  const CUstream handle = a.handle();
  Stream b = std::move(a);
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_EQ(b.handle(), handle);
  EXPECT_THROW(a.sync(), std::logic_error);
  Stream c = device().create_stream();
  c = std::move(b);  // c's own stream is released
  EXPECT_EQ(c.handle(), handle);
  c.sync();
  c.close();
  c.close();
  EXPECT_FALSE(c.is_open());
  try {
    c.sync();
    FAIL() << "sync on a closed stream did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "Stream::sync on a closed Stream");
  }
  EXPECT_THROW(static_cast<void>(c.priority()), std::logic_error);
  EXPECT_THROW(c.wait(device().create_stream()), std::logic_error);
  Stream d = device().create_stream();
  EXPECT_THROW(d.wait(c), std::logic_error);
}

TEST_F(StreamTest, FromHandleNeverDestroysTheStream) {
  const CUstream raw = cuwrap::driver::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  {
    cuwrap::StreamRef wrapped = cuwrap::StreamRef::from_handle(raw);
    EXPECT_EQ(wrapped.handle(), raw);
    EXPECT_TRUE(wrapped.is_nonblocking());
    EXPECT_EQ(wrapped.device(), device());
    EXPECT_EQ(wrapped.context(), device().context());
    wrapped.sync();
  }
  // Still valid: query and destroy succeed.
  EXPECT_EQ(cuwrap::driver::raw::cuStreamQuery(raw), CUDA_SUCCESS);
  EXPECT_EQ(cuwrap::driver::raw::cuStreamDestroy(raw), CUDA_SUCCESS);
}

TEST_F(StreamTest, DefaultStreamsWork) {
  for (const cuwrap::StreamRef* s :
       {&cuwrap::kLegacyDefaultStream, &cuwrap::kPerThreadDefaultStream}) {
    EXPECT_FALSE(s->is_nonblocking());
    EXPECT_EQ(s->device(), device());
    EXPECT_EQ(s->context(), device().context());
    const auto data = random_bytes(4096, 4);
    cuwrap::Buffer buffer = device().allocate(data.size(), *s);
    buffer.copy_from(std::span<const std::byte>(data), *s);
    const auto back = read_back(buffer, *s);
    EXPECT_TRUE(s->is_done());
    EXPECT_EQ(first_difference(data, back), -1);
    cuwrap::Event e = s->record();
    e.sync();
  }
  EXPECT_EQ(Stream::from_handle(nullptr).handle(), CU_STREAM_LEGACY);  // the null stream, by name
  EXPECT_EQ(Stream::from_handle(CU_STREAM_LEGACY).handle(), CU_STREAM_LEGACY);
}

TEST_F(StreamTest, BlockingStreamOrdersWithLegacyDefaultStream) {
  CUWRAP_REQUIRE_NVRTC();
  TestKernels kernels(device());
  Stream blocking = device().create_stream({.nonblocking = false});
  const auto data = random_bytes(1 << 16, 5);
  cuwrap::Buffer buffer = device().allocate(data.size(), blocking);
  buffer.copy_from(std::span<const std::byte>(data), blocking);
  kernels.spin_then_add(blocking, buffer.handle(), buffer.size(), kStreamSpinCycles, 2);
  const auto back = read_back(buffer, cuwrap::kLegacyDefaultStream);
  EXPECT_EQ(first_difference(back, plus(data, 2)), -1);
}

TEST_F(StreamTest, BufferKeepsItsAllocationStreamAliveForTheFree) {
  cuwrap::DeviceMemoryResource mr(device(), {.create_pool = true});
  cuwrap::Buffer buffer = [&] {
    Stream stream = device().create_stream();
    return mr.allocate(1 << 20, stream);
  }();              // the Stream object is gone; the buffer still frees on its stream
  device().sync();  // the allocation is ordered on a stream only the buffer knows now
  buffer.fill(std::uint8_t{1}, cuwrap::kLegacyDefaultStream);
  device().sync();
  buffer.close();
  device().sync();
  cuuint64_t used = 1;
  cuwrap::driver::cuMemPoolGetAttribute(mr.handle(), CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  EXPECT_EQ(used, 0u);
}

TEST_F(StreamTest, StreamsOnEveryDevice) {
  for (const Device& device : Device::all()) {
    Stream stream = device.create_stream();
    EXPECT_EQ(stream.device(), device);
    EXPECT_EQ(cuwrap::driver::cuStreamGetCtx(stream.handle()), device.context());
    Stream other = device.create_stream();
    other.wait(stream);
    stream.sync();
  }
  // Creating a stream on device N while device 0 is current leaves device 0 current.
  device().set_current();
  if (Device::count() > 1) {
    Stream stream = Device(1).create_stream();
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), device().context());
    EXPECT_EQ(stream.device(), Device(1));
  }
}

TEST_F(StreamTest, UsableFromAThreadWithoutCurrentContext) {
  Stream stream = device().create_stream();
  cuwrap::Buffer buffer = device().allocate(4096, stream);
  std::thread([&] {
    const auto data = random_bytes(4096, 6);
    buffer.copy_from(std::span<const std::byte>(data), stream);
    const auto back = read_back(buffer, stream);
    EXPECT_EQ(first_difference(data, back), -1);
    EXPECT_TRUE(stream.is_done());
  }).join();
}

}  // namespace
