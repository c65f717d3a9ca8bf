// pointer_attributes() on a GPU, for every kind of memory: device memory from cuMemAlloc
// and from a pool, managed memory, mapped and registered page-locked host memory, and
// plain host memory the driver does not know; the device address with no context
// current and with another device's current.
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

// CU_POINTER_ATTRIBUTE_DEVICE_POINTER is answered for the current context; cuwrap leaves
// none current after its calls, and a program may have another device's current. The
// answer must be the memory's own address either way, and the caller's current context
// must stay what it was.
class PointerAttributesContexts : public PointerAttributesGpu {
 protected:
  // Make `context` current for the scope; device 0's (the fixture's) again afterwards.
  class Current {
   public:
    Current(CUcontext context, const cuwrap::Device& restore) : restore_(restore) {
      cuwrap::driver::cuCtxSetCurrent(context);
    }
    Current(const Current&) = delete;
    Current& operator=(const Current&) = delete;
    ~Current() { cuwrap::driver::raw::cuCtxSetCurrent(restore_.context()); }

   private:
    const cuwrap::Device& restore_;
  };

  // Return device 1's primary context, or nullptr with one GPU (the test skips).
  CUcontext other_device_context() {
    if (cuwrap::Device::count() < 2) {
      return nullptr;
    }
    return cuwrap::Device(1).context();
  }
};

TEST_F(PointerAttributesContexts, DeviceMemoryWithNoContextCurrent) {
  const CUdeviceptr ptr = cuwrap::driver::cuMemAlloc(4096);
  PointerAttributes a;
  CUcontext after = nullptr;
  {
    const Current none(nullptr, device());
    a = pointer_attributes(ptr + 100);
    after = cuwrap::driver::cuCtxGetCurrent();
  }
  cuwrap::driver::cuMemFree(ptr);
  EXPECT_EQ(a.device_pointer, ptr + 100);
  EXPECT_EQ(a.context, device().context());
  EXPECT_EQ(after, nullptr) << "none is current again";
}

TEST_F(PointerAttributesContexts, PoolMemoryWithNoContextCurrent) {
  cuwrap::Buffer buffer = device().allocate(1 << 16, stream());
  stream().sync();
  PointerAttributes a;
  {
    const Current none(nullptr, device());
    a = pointer_attributes(buffer.handle() + 64);
  }
  EXPECT_EQ(a.device_pointer, buffer.handle() + 64);
}

TEST_F(PointerAttributesContexts, ManagedMemoryWithNoContextCurrent) {
  const CUdeviceptr ptr = cuwrap::driver::cuMemAllocManaged(4096, CU_MEM_ATTACH_GLOBAL);
  PointerAttributes a;
  {
    const Current none(nullptr, device());
    a = pointer_attributes(ptr + 16);
  }
  cuwrap::driver::cuMemFree(ptr);
  EXPECT_TRUE(a.is_managed);
  EXPECT_EQ(a.device_pointer, ptr + 16);
}

TEST_F(PointerAttributesContexts, MappedPinnedMemoryWithNoContextCurrent) {
  void* host = cuwrap::driver::cuMemHostAlloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
  const CUdeviceptr mapped = cuwrap::driver::cuMemHostGetDevicePointer(host, 0);
  PointerAttributes a;
  CUcontext after = nullptr;
  {
    const Current none(nullptr, device());
    a = pointer_attributes(static_cast<const void*>(host));
    after = cuwrap::driver::cuCtxGetCurrent();
  }
  cuwrap::driver::cuMemFreeHost(host);
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(a.device_pointer, mapped);
  EXPECT_EQ(a.host_pointer, host);
  EXPECT_EQ(after, nullptr);
}

TEST_F(PointerAttributesContexts, DeviceMemoryWithAnotherDevicesContextCurrent) {
  const CUcontext other = other_device_context();
  if (other == nullptr) {
    GTEST_SKIP() << "needs a second GPU";
  }
  const CUdeviceptr ptr = cuwrap::driver::cuMemAlloc(4096);
  PointerAttributes a;
  CUcontext after = nullptr;
  {
    const Current current(other, device());
    a = pointer_attributes(ptr + 8);
    after = cuwrap::driver::cuCtxGetCurrent();
  }
  cuwrap::driver::cuMemFree(ptr);
  EXPECT_EQ(a.device_pointer, ptr + 8);
  ASSERT_TRUE(a.device.has_value());
  EXPECT_EQ(a.device->device_id(), 0);
  EXPECT_EQ(after, other) << "the caller's context is current again";
}

TEST_F(PointerAttributesContexts, MappedPinnedMemoryWithAnotherDevicesContextCurrent) {
  const CUcontext other = other_device_context();
  if (other == nullptr) {
    GTEST_SKIP() << "needs a second GPU";
  }
  void* host = cuwrap::driver::cuMemHostAlloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
  const CUdeviceptr mapped = cuwrap::driver::cuMemHostGetDevicePointer(host, 0);
  PointerAttributes a;
  CUcontext after = nullptr;
  {
    const Current current(other, device());
    a = pointer_attributes(static_cast<const void*>(host));
    after = cuwrap::driver::cuCtxGetCurrent();
  }
  cuwrap::driver::cuMemFreeHost(host);
  EXPECT_EQ(a.device_pointer, mapped) << "the address of the memory's own context";
  EXPECT_EQ(after, other);
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
