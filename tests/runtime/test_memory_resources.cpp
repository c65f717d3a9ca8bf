// What porting cuda.core's memory examples showed missing: empty Buffer and Stream,
// typed host views and copies, release() and the deallocation stream, pool attributes,
// close() on resources, and the pinned and managed resources' options.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::DeviceMemoryResourceOptions;
using cuwrap::Stream;

// Expect `call` to throw std::logic_error whose message contains `name`.
template <class Call>
void expect_logic_error_naming(Call&& call, const std::string& name) {
  try {
    call();
    ADD_FAILURE() << "expected std::logic_error naming " << name;
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

// ---- Without a GPU: empty objects ------------------------------------------------------

TEST(EmptyObjects, DefaultBufferIsEmptyAndRefusesUse) {
  Buffer buffer;
  EXPECT_FALSE(buffer.is_open());
  expect_logic_error_naming([&] { static_cast<void>(buffer.size()); }, "Buffer::size");
  expect_logic_error_naming([&] { static_cast<void>(buffer.handle()); }, "Buffer::handle");
  expect_logic_error_naming([&] { static_cast<void>(buffer.release()); }, "Buffer::release");
  expect_logic_error_naming([&] { static_cast<void>(buffer.host_span<float>()); }, "Buffer");
  expect_logic_error_naming([&] { buffer.set_deallocation_stream(cuwrap::kLegacyDefaultStream); },
                            "Buffer::set_deallocation_stream");
  buffer.close();  // closing an empty buffer does nothing
  Buffer assigned = cuwrap::testing::fake_buffer(0x1000, 8);
  buffer = std::move(assigned);
  EXPECT_TRUE(buffer.is_open());
  EXPECT_EQ(buffer.size(), 8U);
}

TEST(EmptyObjects, DefaultStreamIsEmptyAndRefusesUse) {
  Stream stream;
  EXPECT_FALSE(stream.is_open());
  expect_logic_error_naming([&] { static_cast<void>(stream.handle()); }, "Stream::handle");
  expect_logic_error_naming([&] { stream.sync(); }, "Stream");
  stream.close();  // idempotent on an empty stream
  Buffer buffer = cuwrap::testing::fake_buffer(0x1000, 8);
  expect_logic_error_naming([&] { buffer.set_deallocation_stream(stream); }, "Stream");
}

TEST(EmptyObjects, ReleaseGivesUpOwnershipWithoutFreeing) {
  Buffer buffer = cuwrap::testing::fake_buffer(0x2000, 16);
  EXPECT_EQ(buffer.release(), CUdeviceptr{0x2000});
  EXPECT_FALSE(buffer.is_open());
}

// ---- On the GPU -------------------------------------------------------------------------

using ResourceTest = cuwrap::testing::DeviceStreamTest;

TEST_F(ResourceTest, TypedCopiesRoundTripAnyTriviallyCopyableType) {
  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 0.5F);
  Buffer buffer = device().allocate(values.size() * sizeof(float), stream());
  buffer.copy_from(std::span<const float>(values), stream());
  std::vector<float> back(values.size());
  buffer.copy_to(std::span<float>(back), stream());
  stream().sync();
  EXPECT_EQ(back, values);
  struct Pair {
    std::int32_t a;
    std::int16_t b;
  };
  std::vector<Pair> pairs(values.size() * sizeof(float) / sizeof(Pair) + 1);
  EXPECT_THROW(buffer.copy_to(std::span<Pair>(pairs), stream()), std::invalid_argument);
  std::vector<float> short_one(values.size() - 1);
  EXPECT_THROW(buffer.copy_from(std::span<const float>(short_one), stream()),
               std::invalid_argument);
  buffer.close(stream());
  stream().sync();
}

TEST_F(ResourceTest, HostSpanOfPinnedMemoryIsTyped) {
  cuwrap::PinnedMemoryResource pinned;
  Buffer host = pinned.allocate(64 * sizeof(std::uint32_t), stream());
  stream().sync();
  const std::span<std::uint32_t> words = host.host_span<std::uint32_t>();
  ASSERT_EQ(words.size(), 64U);
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i] = static_cast<std::uint32_t>(i * 2654435761U);
  }
  Buffer device_copy = device().allocate(host.size(), stream());
  device_copy.copy_from(host, stream());
  std::vector<std::uint32_t> back(64);
  device_copy.copy_to(std::span<std::uint32_t>(back), stream());
  stream().sync();
  EXPECT_TRUE(std::equal(back.begin(), back.end(), words.begin()));
  EXPECT_THROW(static_cast<void>(host.host_span<std::array<char, 3>>()), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(device_copy.host_span<std::uint32_t>()), std::logic_error);
  device_copy.close(stream());
  host.close(stream());
  stream().sync();
}

TEST_F(ResourceTest, PoolAttributesFollowUse) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  const cuwrap::MemoryPoolAttributes attributes = mr.attributes();
  EXPECT_EQ(attributes.used_mem_current(), 0U);
  EXPECT_EQ(attributes.release_threshold(), std::numeric_limits<std::uint64_t>::max());
  constexpr std::size_t kSize = std::size_t{1} << 20;
  Buffer buffer = mr.allocate(kSize, stream());
  stream().sync();
  EXPECT_GE(attributes.used_mem_current(), kSize);
  EXPECT_GE(attributes.reserved_mem_current(), attributes.used_mem_current());
  EXPECT_GE(attributes.used_mem_high(), kSize);
  EXPECT_GE(attributes.reserved_mem_high(), attributes.reserved_mem_current());
  buffer.close(stream());
  stream().sync();
  EXPECT_EQ(attributes.used_mem_current(), 0U);
  EXPECT_GE(attributes.used_mem_high(), kSize) << "the high-water mark stays until reset";
  attributes.reset_used_mem_high();
  EXPECT_EQ(attributes.used_mem_high(), 0U);
}

TEST_F(ResourceTest, ReleasedMemoryIsFreedByTheCaller) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  Buffer buffer = mr.allocate(4096, stream());
  const CUdeviceptr ptr = buffer.release();
  EXPECT_FALSE(buffer.is_open());
  stream().sync();
  EXPECT_GE(mr.attributes().used_mem_current(), 4096U) << "release() must not free";
  mr.deallocate(ptr, 4096, stream());
  stream().sync();
  EXPECT_EQ(mr.attributes().used_mem_current(), 0U);
}

TEST_F(ResourceTest, DeallocationStreamOrdersTheFree) {
  CUWRAP_REQUIRE_NVRTC();
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  const cuwrap::testing::TestKernels kernels(device());
  Stream other = device().create_stream();
  Buffer buffer = mr.allocate(1 << 16, stream());
  stream().sync();
  buffer.set_deallocation_stream(other);
  // Long work on `other`; the free queued behind it must not happen before it ends.
  kernels.spin_then_add(other, buffer.handle(), buffer.size(), 50'000'000, 1);
  other.close();   // the buffer keeps the CUDA stream alive for its free
  buffer.close();  // frees on `other`, behind the kernel (memcheck sees a use after free if not)
  device().sync();
  EXPECT_EQ(mr.attributes().used_mem_current(), 0U);
}

TEST_F(ResourceTest, ClosedDeviceResourceRefusesAllocationButItsBuffersLive) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  Buffer buffer = mr.allocate(256, stream());
  mr.close();
  mr.close();  // idempotent
  EXPECT_FALSE(mr.is_open());
  expect_logic_error_naming([&] { static_cast<void>(mr.allocate(1, stream())); },
                            "closed DeviceMemoryResource");
  expect_logic_error_naming([&] { static_cast<void>(mr.attributes()); }, "DeviceMemoryResource");
  buffer.fill(std::uint8_t{9}, stream());
  EXPECT_EQ(cuwrap::testing::read_back(buffer, stream()),
            std::vector<std::byte>(256, std::byte{9}));
  buffer.close(stream());
  stream().sync();

  DeviceMemoryResource default_pool(device());
  default_pool.close();  // not owned: the device's default pool stays
  Buffer still = device().allocate(16, stream());
  still.close(stream());
  stream().sync();
}

TEST_F(ResourceTest, PoolAttributesOutlivingTheirResourceThrowInsteadOfReachingTheDriver) {
  std::optional<cuwrap::MemoryPoolAttributes> view;
  {
    DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
    view = mr.attributes();
    EXPECT_EQ(view->used_mem_current(), 0U);
    mr.close();  // the pool is destroyed: its handle may name another pool next
    expect_logic_error_naming([&] { static_cast<void>(view->used_mem_current()); },
                              "MemoryPoolAttributes::used_mem_current");
  }
  expect_logic_error_naming([&] { view->reset_used_mem_high(); }, "is closed");
  DeviceMemoryResource default_pool(device());
  const cuwrap::MemoryPoolAttributes shared = default_pool.attributes();
  default_pool.close();  // not owned, yet the view was this resource's
  expect_logic_error_naming([&] { static_cast<void>(shared.release_threshold()); }, "closed");
}

TEST_F(ResourceTest, PinnedOptionsUseAHostPool) {
  std::optional<cuwrap::PinnedMemoryResource> pinned;
  try {
    pinned.emplace(cuwrap::PinnedMemoryResourceOptions{.numa_id = 0});
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "this driver has no host NUMA memory pools: " << e.what();
  }
  EXPECT_TRUE(pinned->uses_pool());
  Buffer buffer = pinned->allocate(100, stream());
  stream().sync();
  buffer.host_span()[99] = std::byte{7};
  EXPECT_GE(pinned->attributes().used_mem_current(), 100U);
  EXPECT_THROW(static_cast<void>(pinned->get_allocation_handle()), std::logic_error);
  buffer.close(stream());
  stream().sync();
  pinned->close();
  expect_logic_error_naming([&] { static_cast<void>(pinned->allocate(1, stream())); },
                            "closed PinnedMemoryResource");
}

TEST_F(ResourceTest, IpcPinnedPoolExportsAHandle) {
  std::optional<cuwrap::PinnedMemoryResource> pinned;
  try {
    pinned.emplace(cuwrap::PinnedMemoryResourceOptions{.ipc_enabled = true});
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "this driver cannot create exportable host memory pools: " << e.what();
  }
  EXPECT_TRUE(pinned->is_ipc_enabled());
  const cuwrap::IPCAllocationHandle handle = pinned->get_allocation_handle();
  ASSERT_TRUE(handle.is_open());
  EXPECT_GE(::fcntl(handle.handle(), F_GETFD), 0);
}

TEST_F(ResourceTest, ManagedPreferredLocationIsAdvised) {
  cuwrap::ManagedMemoryResource managed(
      cuwrap::ManagedMemoryResourceOptions{.preferred_location = device().device_id()});
  EXPECT_EQ(managed.preferred_location(), device().device_id());
  Buffer buffer = managed.allocate(1 << 16, stream());
  int location = -2;
  cuwrap::driver::cuMemRangeGetAttribute(&location, sizeof(location),
                                         CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, buffer.handle(),
                                         buffer.size());
  EXPECT_EQ(location, device().device_id());
  buffer.close(stream());
  EXPECT_THROW(cuwrap::ManagedMemoryResource(cuwrap::ManagedMemoryResourceOptions{
                   .preferred_location = cuwrap::Device::count()}),
               std::invalid_argument);
}

}  // namespace
