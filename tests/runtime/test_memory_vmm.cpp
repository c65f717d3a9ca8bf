// VirtualMemoryResource: allocations rounded to the granularity (reporting the rounded
// size, as cuda.core's), usable by kernels and copies; modify_allocation grows a buffer keeping
// every byte, both where the range after it is free (in place) and where it is taken (remapped to a
// new address); deallocate and close release everything; misuse is refused.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/virtual_memory_resource.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "device_fixture.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::VirtualMemoryResource;
using cuwrap::VirtualMemoryResourceOptions;
using cuwrap::testing::first_difference;
using cuwrap::testing::random_bytes;
using cuwrap::testing::read_back;

class VmmTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (device().attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
      GTEST_SKIP() << "device 0 has no virtual memory management";
    }
  }

  // Options without an exportable handle: a container may refuse POSIX fd handles.
  static VirtualMemoryResourceOptions plain() {
    VirtualMemoryResourceOptions options;
    options.handle_type = cuwrap::VirtualMemoryHandleType::None;
    return options;
  }
};

TEST_F(VmmTest, AllocatesCopiesAndRunsKernels) {
  CUWRAP_REQUIRE_NVRTC();
  VirtualMemoryResource vmm(device(), plain());
  ASSERT_GT(vmm.granularity(), 0U);
  Buffer buffer = vmm.allocate(vmm.granularity() + 17, stream());
  const std::size_t size = 2 * vmm.granularity();  // rounded up, as cuda.core reports it
  EXPECT_EQ(buffer.size(), size);
  EXPECT_EQ(buffer.handle() % vmm.granularity(), 0U);
  EXPECT_TRUE(buffer.is_device_accessible());
  EXPECT_EQ(vmm.allocation_count(), 1U);
  const std::vector<std::byte> data = random_bytes(size, 3);
  buffer.copy_from(std::span<const std::byte>(data), stream());
  const cuwrap::testing::TestKernels kernels(device());
  kernels.spin_then_add(stream(), buffer.handle(), size, 0, 1);
  std::vector<std::byte> expected = data;
  for (auto& b : expected) {
    b = static_cast<std::byte>(static_cast<unsigned char>(b) + 1);
  }
  EXPECT_EQ(first_difference(read_back(buffer, stream()), expected), -1);
  buffer.close(stream());
  EXPECT_EQ(vmm.allocation_count(), 0U) << "deallocate releases the allocation";
}

TEST_F(VmmTest, GrowingKeepsEveryByteAndTheNewPartIsUsable) {
  VirtualMemoryResource vmm(device(), plain());
  Buffer buffer = vmm.allocate(3 * vmm.granularity() / 2, stream());
  const std::size_t small = buffer.size();  // two granules
  const std::vector<std::byte> data = random_bytes(small, 11);
  buffer.copy_from(std::span<const std::byte>(data), stream());
  stream().sync();  // growing may remap: the copy must be done first
  std::size_t size = small;
  for (int step = 0; step < 3; ++step) {  // several growths: in place and not
    size = size * 2 + 5;
    vmm.modify_allocation(buffer, size);
    ASSERT_EQ(buffer.size(), size);
    const std::vector<std::byte> back = read_back(buffer, stream());
    const std::vector<std::byte> kept(back.begin(),
                                      back.begin() + static_cast<std::ptrdiff_t>(small));
    EXPECT_EQ(first_difference(kept, data), -1) << "growth " << step << " lost the old contents";
  }
  // The whole grown buffer is mapped and writable.
  const std::vector<std::byte> fresh = random_bytes(size, 12);
  buffer.copy_from(std::span<const std::byte>(fresh), stream());
  EXPECT_EQ(first_difference(read_back(buffer, stream()), fresh), -1);
  buffer.close(stream());
  EXPECT_EQ(vmm.allocation_count(), 0U);
}

TEST_F(VmmTest, GrowsByRemappingWhenTheNextRangeIsTaken) {
  VirtualMemoryResource vmm(device(), plain());
  const std::size_t granule = vmm.granularity();
  Buffer buffer = vmm.allocate(granule, stream());
  const std::vector<std::byte> data = random_bytes(granule, 21);
  buffer.copy_from(std::span<const std::byte>(data), stream());
  stream().sync();
  // Take the range right after the buffer, so it cannot grow in place.
  const CUdeviceptr end = buffer.handle() + granule;
  const CUdeviceptr blocker = cuwrap::driver::cuMemAddressReserve(granule, granule, end, 0);
  const CUdeviceptr before = buffer.handle();
  vmm.modify_allocation(buffer, 2 * granule);
  if (blocker == end) {
    EXPECT_NE(buffer.handle(), before) << "the buffer had to move to a new range";
  }
  const std::vector<std::byte> back = read_back(buffer, stream());
  EXPECT_EQ(first_difference(std::vector<std::byte>(
                                 back.begin(), back.begin() + static_cast<std::ptrdiff_t>(granule)),
                             data),
            -1);
  buffer.fill(std::uint8_t{0x7E}, stream());
  EXPECT_EQ(first_difference(read_back(buffer, stream()),
                             std::vector<std::byte>(2 * granule, std::byte{0x7E})),
            -1);
  cuwrap::driver::cuMemAddressFree(blocker, granule);
  buffer.close(stream());
  EXPECT_EQ(vmm.allocation_count(), 0U);
}

TEST_F(VmmTest, ShrinkingOrGrowingWithinTheRoundingKeepsTheAddress) {
  VirtualMemoryResource vmm(device(), plain());
  const std::size_t granule = vmm.granularity();
  Buffer buffer = vmm.allocate(100, stream());
  EXPECT_EQ(buffer.size(), granule) << "allocate reports the size rounded to the granularity";
  const CUdeviceptr address = buffer.handle();
  vmm.modify_allocation(buffer, 50);
  EXPECT_EQ(buffer.size(), granule) << "modify_allocation never shrinks";
  EXPECT_EQ(buffer.handle(), address);
  vmm.modify_allocation(buffer, granule + 1);  // maps a second granule
  EXPECT_EQ(buffer.size(), granule + 1) << "modify_allocation reports the size asked for";
  const CUdeviceptr grown = buffer.handle();
  vmm.modify_allocation(buffer, 2 * granule);  // within what is mapped already
  EXPECT_EQ(buffer.size(), 2 * granule);
  EXPECT_EQ(buffer.handle(), grown);
  buffer.fill(std::uint8_t{1}, stream());
  stream().sync();
}

// cuda.core's vmm_memory_example: buffers of 1 KiB, 4 KiB and 1 MiB, then a copy from
// the first into the second. Each reports its size rounded up to the granularity, so
// the two small ones have one size and the copy is accepted.
TEST_F(VmmTest, SmallBuffersOfDifferentRequestedSizesCopyAsInCudaCore) {
  VirtualMemoryResource vmm(device(), plain());
  const std::size_t granule = vmm.granularity();
  const std::size_t requested[] = {1024, 4096, 1024 * 1024};
  std::vector<Buffer> buffers;
  for (const std::size_t size : requested) {
    buffers.push_back(vmm.allocate(size, stream()));
    EXPECT_EQ(buffers.back().size(), (size + granule - 1) / granule * granule)
        << "requested " << size << " bytes, granularity " << granule;
    EXPECT_TRUE(buffers.back().is_device_accessible());
    EXPECT_EQ(buffers.back().memory_resource(), &vmm);
  }
  ASSERT_EQ(buffers[0].size(), buffers[1].size());
  const std::vector<std::byte> data = random_bytes(buffers[0].size(), 31);
  buffers[0].copy_from(std::span<const std::byte>(data), stream());
  buffers[1].copy_from(buffers[0], stream());
  EXPECT_EQ(first_difference(read_back(buffers[1], stream()), data), -1);
  for (Buffer& buffer : buffers) {
    buffer.close(stream());
  }
  EXPECT_EQ(vmm.allocation_count(), 0U);
}

TEST_F(VmmTest, CloseReleasesWhatIsLeftAndRefusesMore) {
  VirtualMemoryResource vmm(device(), plain());
  Buffer a = vmm.allocate(1000, stream());
  Buffer b = vmm.allocate(3 * vmm.granularity(), stream());
  EXPECT_EQ(vmm.allocation_count(), 2U);
  stream().sync();
  vmm.close();
  EXPECT_FALSE(vmm.is_open());
  EXPECT_EQ(vmm.allocation_count(), 0U);
  EXPECT_THROW(static_cast<void>(vmm.allocate(1, stream())), std::logic_error);
  EXPECT_THROW(vmm.modify_allocation(b, 10 * vmm.granularity()), std::logic_error);
  a.close(stream());  // already released by close(): nothing happens
  b.close();
  vmm.close();  // idempotent
}

TEST_F(VmmTest, RefusesBuffersOfOtherResourcesAndBadOptions) {
  VirtualMemoryResource vmm(device(), plain());
  VirtualMemoryResource other(device(), plain());
  Buffer theirs = other.allocate(10, stream());
  EXPECT_THROW(vmm.modify_allocation(theirs, 100), std::invalid_argument);
  Buffer pooled = device().allocate(10, stream());
  EXPECT_THROW(vmm.modify_allocation(pooled, 100), std::invalid_argument);
  Buffer empty;
  EXPECT_THROW(vmm.modify_allocation(empty, 100), std::logic_error);
  pooled.close(stream());
  theirs.close(stream());
  VirtualMemoryResourceOptions bad_peer = plain();
  bad_peer.peers = {cuwrap::Device::count()};
  EXPECT_THROW(VirtualMemoryResource(device(), bad_peer), std::invalid_argument);
  VirtualMemoryResourceOptions bad_align = plain();
  bad_align.addr_align = vmm.granularity() + 1;
  EXPECT_THROW(VirtualMemoryResource(device(), bad_align), std::invalid_argument);
}

TEST_F(VmmTest, MinimumGranularityIsNoLargerThanRecommended) {
  VirtualMemoryResourceOptions minimum = plain();
  minimum.granularity = cuwrap::VirtualMemoryGranularity::Minimum;
  const VirtualMemoryResource small(device(), minimum);
  const VirtualMemoryResource recommended(device(), plain());
  EXPECT_LE(small.granularity(), recommended.granularity());
  EXPECT_EQ(recommended.granularity() % small.granularity(), 0U);
}

}  // namespace
