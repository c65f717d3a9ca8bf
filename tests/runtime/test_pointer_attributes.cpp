// pointer_attributes() on a GPU, for every kind of memory: device memory from cuMemAlloc
// and from a pool, managed memory, mapped and registered page-locked host memory, and
// plain host memory the driver does not know.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"

#include <cstdlib>
#include <memory>
#include <vector>

namespace {

using cuwrap::pointer_attributes;
using cuwrap::PointerAttributes;

class PointerAttributesGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(PointerAttributesGpu, DeviceMemoryFromCuMemAlloc) {
  const CUdeviceptr ptr = cuwrap::driver::cuMemAlloc(4096);
  const PointerAttributes a = pointer_attributes(ptr + 100);
  cuwrap::driver::cuMemFree(ptr);
  EXPECT_TRUE(a.is_cuda_memory());
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_DEVICE);
  ASSERT_TRUE(a.device.has_value());
  EXPECT_EQ(a.device->device_id(), 0);
  EXPECT_EQ(a.base, ptr);
  EXPECT_GE(a.range_size, 4096U);
  EXPECT_FALSE(a.is_managed);
  EXPECT_EQ(a.pool, nullptr);
  EXPECT_EQ(a.context, device().context());
  EXPECT_EQ(a.device_pointer, ptr + 100);
  EXPECT_NE(a.buffer_id, 0U);
}

TEST_F(PointerAttributesGpu, PoolMemoryNamesItsPool) {
  cuwrap::DeviceMemoryResource mr(device(), {.create_pool = true});
  cuwrap::Buffer buffer = mr.allocate(1 << 16, stream());
  const PointerAttributes a = pointer_attributes(buffer.handle());
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_DEVICE);
  EXPECT_EQ(a.pool, mr.handle());
  ASSERT_TRUE(a.device.has_value());
  EXPECT_EQ(a.device->device_id(), 0);
  EXPECT_FALSE(a.is_managed);
  // A DeviceSpan or Buffer address is the same query.
  EXPECT_EQ(pointer_attributes(buffer.as<float>().subspan(8).handle()).pool, mr.handle());
}

TEST_F(PointerAttributesGpu, ManagedMemory) {
  const CUdeviceptr ptr = cuwrap::driver::cuMemAllocManaged(4096, CU_MEM_ATTACH_GLOBAL);
  const PointerAttributes a = pointer_attributes(ptr);
  cuwrap::driver::cuMemFree(ptr);
  EXPECT_TRUE(a.is_managed);
  EXPECT_TRUE(a.is_cuda_memory());
  EXPECT_EQ(a.base, ptr);
}

TEST_F(PointerAttributesGpu, MappedHostMemory) {
  void* host = cuwrap::driver::cuMemHostAlloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
  const CUdeviceptr mapped = cuwrap::driver::cuMemHostGetDevicePointer(host, 0);
  const PointerAttributes a = pointer_attributes(static_cast<const void*>(host));
  cuwrap::driver::cuMemFreeHost(host);
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(a.host_pointer, host);
  EXPECT_EQ(a.device_pointer, mapped);
  EXPECT_FALSE(a.is_managed);
}

TEST_F(PointerAttributesGpu, RegisteredHostMemory) {
  std::vector<char> storage(1 << 16);
  cuwrap::driver::cuMemHostRegister(storage.data(), storage.size(), CU_MEMHOSTREGISTER_PORTABLE);
  const PointerAttributes a = pointer_attributes(static_cast<const void*>(storage.data() + 10));
  cuwrap::driver::cuMemHostUnregister(storage.data());
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_HOST);
  EXPECT_TRUE(a.is_cuda_memory());
  EXPECT_TRUE(a.device.has_value());
  EXPECT_EQ(a.host_pointer, static_cast<void*>(storage.data() + 10));
  EXPECT_FALSE(a.is_managed);
}

TEST_F(PointerAttributesGpu, PlainHostMemoryIsUnknownNotAnError) {
  const auto heap = std::make_unique<int[]>(64);
  const PointerAttributes a = pointer_attributes(static_cast<const void*>(heap.get()));
  EXPECT_FALSE(a.is_cuda_memory());
  EXPECT_FALSE(a.device.has_value());
  EXPECT_FALSE(a.is_managed);
  EXPECT_EQ(a.pool, nullptr);
}

}  // namespace
