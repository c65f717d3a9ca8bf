// Memory pool settings on a GPU: MemoryPoolAttributes setters read back, per-device
// Access (the owner's refused, a peer's granted and revoked on two GPUs),
// DeviceMemoryResource::from_handle over pools it does or does not own, and managed
// memory attached to the host at allocation and then to a stream.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace {

using cuwrap::Access;
using cuwrap::DeviceMemoryResource;
using cuwrap::testing::contains;

class PoolSettings : public cuwrap::testing::DeviceStreamTest {};

// A pool of device 0 made with the driver alone, as another library would.
CUmemoryPool create_pool_on_device_0() {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  return cuwrap::driver::cuMemPoolCreate(&props);
}

TEST_F(PoolSettings, AttributeSettersAreReadBack) {
  DeviceMemoryResource mr(device(), {.create_pool = true});
  const cuwrap::MemoryPoolAttributes attributes = mr.attributes();
  attributes.set_release_threshold(std::uint64_t{1} << 20);
  EXPECT_EQ(attributes.release_threshold(), std::uint64_t{1} << 20);
  attributes.set_release_threshold(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(attributes.release_threshold(), std::numeric_limits<std::uint64_t>::max());
  for (const bool value : {false, true}) {
    attributes.set_reuse_follow_event_dependencies(value);
    EXPECT_EQ(attributes.reuse_follow_event_dependencies(), value);
    attributes.set_reuse_allow_opportunistic(value);
    EXPECT_EQ(attributes.reuse_allow_opportunistic(), value);
    attributes.set_reuse_allow_internal_dependencies(value);
    EXPECT_EQ(attributes.reuse_allow_internal_dependencies(), value);
  }
}

TEST_F(PoolSettings, TheOwnersAccessIsReadWriteAndCannotChange) {
  DeviceMemoryResource mr(device(), {.create_pool = true});
  EXPECT_EQ(mr.access(device()), Access::ReadWrite);
  try {
    mr.set_access(device(), Access::None);
    FAIL() << "the owner's access was changed";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "owns the pool")) << e.what();
  }
  EXPECT_EQ(mr.access(device()), Access::ReadWrite);
}

TEST_F(PoolSettings, APeersAccessIsGrantedAndRevoked) {
  CUWRAP_REQUIRE_GPUS(2);
  const cuwrap::Device peer(1);
  if (!peer.can_access_peer(device())) {
    GTEST_SKIP() << "device 1 cannot access device 0's memory in this topology";
  }
  DeviceMemoryResource mr(device(), {.create_pool = true});
  EXPECT_EQ(mr.access(peer), Access::None);
  mr.set_access(peer, Access::ReadWrite);
  EXPECT_EQ(mr.access(peer), Access::ReadWrite);
  mr.set_access(peer, Access::None);
  EXPECT_EQ(mr.access(peer), Access::None);
}

TEST_F(PoolSettings, FromHandleNonOwningLeavesThePoolAlive) {
  const CUmemoryPool pool = create_pool_on_device_0();
  {
    DeviceMemoryResource mr = DeviceMemoryResource::from_handle(pool);
    EXPECT_EQ(mr.device_id(), 0);
    EXPECT_FALSE(mr.is_own_pool());
    cuwrap::Buffer buffer = mr.allocate(4096, stream());
    EXPECT_EQ(cuwrap::pointer_attributes(buffer.handle()).pool, pool);
    buffer.close(stream());
  }
  stream().sync();
  // Still a pool: the driver answers for it, and it can be destroyed by its creator.
  cuuint64_t threshold = 1;
  cuwrap::driver::cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  cuwrap::driver::cuMemPoolDestroy(pool);

  DeviceMemoryResource default_pool = DeviceMemoryResource::from_handle(
      cuwrap::driver::cuDeviceGetDefaultMemPool(device().handle()));
  EXPECT_EQ(default_pool.device_id(), 0);
  EXPECT_THROW((void)DeviceMemoryResource::adopt(default_pool.handle()), std::invalid_argument);
}

TEST_F(PoolSettings, FromHandleOwningDestroysThePoolOnClose) {
  const CUmemoryPool pool = create_pool_on_device_0();
  DeviceMemoryResource mr = DeviceMemoryResource::adopt(pool, device());
  EXPECT_TRUE(mr.is_own_pool());
  cuwrap::Buffer buffer = mr.allocate(256, stream());
  buffer.close(stream());
  stream().sync();
  EXPECT_NO_THROW(mr.close());
  EXPECT_FALSE(mr.is_open());
}

constexpr const char* kIncrement = R"(
extern "C" __global__ void increment(int* data, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}
)";

TEST_F(PoolSettings, ManagedMemoryAttachedToTheHostThenToAStream) {
  CUWRAP_REQUIRE_NVRTC();
  if (device().attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) == 0) {
    GTEST_SKIP() << "device 0 has no managed memory";
  }
  const cuwrap::Kernel increment = cuwrap::Program(kIncrement, cuwrap::CodeType::Cxx)
                                       .compile(cuwrap::TargetType::Cubin)
                                       .get_kernel("increment");
  cuwrap::ManagedMemoryResource mr({.attach = CU_MEM_ATTACH_HOST});
  constexpr unsigned kN = 1000;
  cuwrap::Buffer buffer = mr.allocate(kN * sizeof(int), stream());
  const std::span<int> host = buffer.host_span<int>();
  for (unsigned i = 0; i < kN; ++i) {
    host[i] = static_cast<int>(i);
  }
  stream().attach(buffer, CU_MEM_ATTACH_SINGLE);
  cuwrap::launch(stream(), {.grid = 4, .block = 256}, increment, buffer.as<int>(), kN);
  stream().sync();
  for (unsigned i = 0; i < kN; ++i) {
    ASSERT_EQ(host[i], static_cast<int>(i) + 1) << i;
  }
  stream().attach(buffer, CU_MEM_ATTACH_GLOBAL);
  stream().sync();
  EXPECT_THROW(stream().attach(buffer, static_cast<CUmemAttach_flags>(3)), std::invalid_argument);
}

}  // namespace
