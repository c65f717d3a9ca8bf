// LaunchConfig::check(device), pointer_attributes(), DeviceSpan copies and pool access
// against the
// stand-in driver (tests/compat/fake_libcuda.cpp, one device with an H100's limits),
// without a GPU: each check refuses before any launch, naming the value and the limit;
// pointer_attributes is one cuPointerGetAttributes call where the memory's context is
// current, and answers the device address for that context whatever is current; copies
// reach the driver only when the element counts agree.
#include <gtest/gtest.h>
#include <cuwrap/device.hpp>
#include <cuwrap/device_span.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/pointer_attributes.hpp>
#include <cuwrap/stream.hpp>

#include "fake_driver.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::LaunchConfig;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

// Return the message of the std::invalid_argument that config.check(device) throws, or
// "" when it throws nothing.
std::string check_message(const LaunchConfig& config) {
  try {
    config.check(cuwrap::Device(0));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class OnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kFakeInstalled); }
};

TEST_F(OnFakeDriver, CheckAcceptsWhatTheDeviceCanLaunch) {
  EXPECT_EQ(check_message({.grid = {1000, 10}, .block = {32, 8, 4}}), "");
  EXPECT_EQ(check_message({.grid = 8, .block = 256, .cluster = cuwrap::Dim3(2)}), "");
  EXPECT_EQ(check_message({.grid = 264, .block = 1024, .cooperative_launch = true}), "")
      << "132 multiprocessors hold 2 blocks of 1024 threads each";
  EXPECT_EQ(check_message({.grid = 1, .block = 64, .shmem_size = 232448}), "");
  EXPECT_EQ(check_message({.grid = 1, .block = 64, .priority = -1000}), "")
      << "priorities are clamped, not refused";
}

TEST_F(OnFakeDriver, CheckRefusesZeroExtentsAndOversizedBlocks) {
  EXPECT_TRUE(contains(check_message({.grid = {4, 0}, .block = 32}), "zero extent"));
  EXPECT_TRUE(contains(check_message({.grid = 4, .block = {32, 1, 0}}), "zero extent"));
  const std::string message = check_message({.grid = 1, .block = 15000});
  EXPECT_TRUE(contains(message, "15000")) << message;
  EXPECT_TRUE(contains(message, "1024")) << message;
}

TEST_F(OnFakeDriver, CheckRefusesGridsOverTheDeviceLimits) {
  const std::string message = check_message({.grid = {1, 70000}, .block = 32});
  EXPECT_TRUE(contains(message, "y = 70000")) << message;
  EXPECT_TRUE(contains(message, "limit 65535")) << message;
  EXPECT_TRUE(contains(check_message({.grid = {1, 1, 65536}, .block = 32}), "z = 65536"));
}

TEST_F(OnFakeDriver, CheckRefusesTooMuchSharedMemory) {
  const std::string message = check_message({.grid = 1, .block = 64, .shmem_size = 232449});
  EXPECT_TRUE(contains(message, "232449")) << message;
  EXPECT_TRUE(contains(message, "232448")) << message;
}

TEST_F(OnFakeDriver, CheckRefusesImpossibleClusters) {
  const std::string too_big = check_message({.grid = 64, .block = 32, .cluster = cuwrap::Dim3(32)});
  EXPECT_TRUE(contains(too_big, "32 blocks")) << too_big;
  EXPECT_TRUE(contains(too_big, "16")) << too_big;
  EXPECT_TRUE(
      contains(check_message({.grid = 6, .block = 32, .cluster = cuwrap::Dim3(4)}), "divide"));
}

TEST_F(OnFakeDriver, CheckRefusesCooperativeGridsThatCannotBeResident) {
  // 132 multiprocessors × 32 blocks of 32 threads; 132 × 2 blocks of 1024 threads.
  const std::string by_blocks =
      check_message({.grid = 132 * 32 + 1, .block = 32, .cooperative_launch = true});
  EXPECT_TRUE(contains(by_blocks, std::to_string(132 * 32 + 1) + " blocks")) << by_blocks;
  EXPECT_TRUE(contains(by_blocks, "at most " + std::to_string(132 * 32))) << by_blocks;
  const std::string by_threads =
      check_message({.grid = 265, .block = 1024, .cooperative_launch = true});
  EXPECT_TRUE(contains(by_threads, "at most 264")) << by_threads;
  EXPECT_TRUE(contains(by_threads, "2048 threads")) << by_threads;
  EXPECT_EQ(check_message({.grid = 265, .block = 1024}), "") << "only cooperative grids";
}

TEST_F(OnFakeDriver, ForElementsTakesTheOccupancyBlockAndRoundsTheGridUp) {
  const cuwrap::Kernel kernel =
      cuwrap::Kernel::from_handle(reinterpret_cast<CUkernel>(std::uintptr_t{0x1002}), "two");
  const LaunchConfig config = LaunchConfig::for_elements(kernel, 1000);
  EXPECT_EQ(config.block, cuwrap::Dim3(256));
  EXPECT_EQ(config.grid, cuwrap::Dim3(4)) << "ceil(1000 / 256)";
  EXPECT_EQ(config.shmem_size, 0U);
  EXPECT_EQ(LaunchConfig::for_elements(kernel, 1024).grid, cuwrap::Dim3(4));
  EXPECT_EQ(LaunchConfig::for_elements(kernel, 1025).grid, cuwrap::Dim3(5));
  const LaunchConfig shared = LaunchConfig::for_elements(kernel, 1000, std::size_t{64} * 1024);
  EXPECT_EQ(shared.block, cuwrap::Dim3(128)) << "the dynamic shared memory reaches the driver";
  EXPECT_EQ(shared.grid, cuwrap::Dim3(8));
  EXPECT_EQ(shared.shmem_size, 64U * 1024U);

  EXPECT_THROW((void)LaunchConfig::for_elements(kernel, 0), std::invalid_argument);
  const std::size_t too_many = std::size_t{2147483647} * 256 + 1;
  try {
    (void)LaunchConfig::for_elements(kernel, too_many);
    ADD_FAILURE() << "a grid over 2^31 - 1 blocks was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), std::to_string(too_many))) << e.what();
  }
}

TEST_F(OnFakeDriver, ForElementsOnAGivenDeviceAsksThatDevicesPrimaryContext) {
  const cuwrap::Kernel kernel =
      cuwrap::Kernel::from_handle(reinterpret_cast<CUkernel>(std::uintptr_t{0x1002}), "two");
  const LaunchConfig config = LaunchConfig::for_elements(kernel, 1000, cuwrap::Device(0));
  EXPECT_EQ(config.block, cuwrap::Dim3(256));
  EXPECT_EQ(config.grid, cuwrap::Dim3(4));
  const LaunchConfig shared =
      LaunchConfig::for_elements(kernel, 1000, cuwrap::Device(0), 64 * 1024);
  EXPECT_EQ(shared.block, cuwrap::Dim3(128)) << "the dynamic shared memory reaches the driver";
  EXPECT_EQ(shared.shmem_size, 64U * 1024U);
  EXPECT_THROW((void)LaunchConfig::for_elements(kernel, 0, cuwrap::Device(0)),
               std::invalid_argument);
}

TEST_F(OnFakeDriver, ForElementsWithAGivenBlockSizeNeedsNoKernel) {
  const LaunchConfig config = LaunchConfig::for_elements(1000, 128);
  EXPECT_EQ(config.block, cuwrap::Dim3(128));
  EXPECT_EQ(config.grid, cuwrap::Dim3(8)) << "ceil(1000 / 128)";
  EXPECT_EQ(config.shmem_size, 0U);
  EXPECT_EQ(LaunchConfig::for_elements(1024, 512).grid, cuwrap::Dim3(2));
  EXPECT_EQ(LaunchConfig::for_elements(1025, 512).grid, cuwrap::Dim3(3));
  EXPECT_EQ(LaunchConfig::for_elements(10, 32, 4096).shmem_size, 4096U);
  EXPECT_THROW((void)LaunchConfig::for_elements(0, 128), std::invalid_argument);
  try {
    (void)LaunchConfig::for_elements(1000, 0);
    ADD_FAILURE() << "a block of 0 threads was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "block_size is 0")) << e.what();
  }
  const std::size_t too_many = std::size_t{2147483647} * 32 + 1;
  EXPECT_THROW((void)LaunchConfig::for_elements(too_many, 32), std::invalid_argument);
}

TEST_F(OnFakeDriver, ForElementsLargestBlockTakesTheKernelsLimitOnTheDevice) {
  const cuwrap::Kernel kernel =
      cuwrap::Kernel::from_handle(reinterpret_cast<CUkernel>(std::uintptr_t{0x1002}), "two");
  const LaunchConfig config =
      LaunchConfig::for_elements_largest_block(kernel, 10000, cuwrap::Device(0));
  EXPECT_EQ(config.block, cuwrap::Dim3(768)) << "the kernel's limit, below the device's 1024";
  EXPECT_EQ(config.grid, cuwrap::Dim3(14)) << "ceil(10000 / 768)";
  EXPECT_NO_THROW(config.check(cuwrap::Device(0)));
  EXPECT_THROW((void)LaunchConfig::for_elements_largest_block(kernel, 0, cuwrap::Device(0)),
               std::invalid_argument);
}

TEST_F(OnFakeDriver, KernelAttributeSettersRefuseBadValuesBeforeTheDriver) {
  // The fake has no cuKernelSetAttribute: reaching the driver would throw another error.
  const cuwrap::Kernel kernel =
      cuwrap::Kernel::from_handle(reinterpret_cast<CUkernel>(std::uintptr_t{0x1002}), "two");
  const cuwrap::KernelAttributes attributes = kernel.attributes();
  const cuwrap::Device device(0);
  for (int bad : {-2, 101}) {
    try {
      attributes.set_preferred_shared_memory_carveout(bad, device);
      ADD_FAILURE() << "carveout " << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), std::to_string(bad))) << e.what();
    }
  }
  EXPECT_THROW(attributes.set_max_dynamic_shared_size_bytes(-1, device), std::invalid_argument);
}

// Make `context` current on this thread for the scope, none again afterwards.
class CurrentContext {
 public:
  explicit CurrentContext(CUcontext context) { cuwrap::driver::cuCtxSetCurrent(context); }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;
  ~CurrentContext() { cuwrap::driver::raw::cuCtxSetCurrent(nullptr); }
};

CUcontext fake_context() { return fake_query<CUcontext>("cuwrap_fake_context"); }
CUcontext other_context() { return fake_query<CUcontext>("cuwrap_fake_other_context"); }

constexpr CUdeviceptr kPoolMemory = 0xDE0010;    // the fake's pool memory: no context named
constexpr CUdeviceptr kMappedHost = 0x7F0020;    // the fake's mapped pinned memory
constexpr CUdeviceptr kMappedDevice = 0xAB0020;  // ... as kernels of its context reach it

TEST_F(OnFakeDriver, PointerAttributesAreOneDriverCallInTheMemorysContext) {
  const CurrentContext current(fake_context());
  const int before = fake_query<int>("cuwrap_fake_pointer_attribute_calls");
  const cuwrap::PointerAttributes device_memory = cuwrap::pointer_attributes(kPoolMemory);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_pointer_attribute_calls"), before + 1);
  EXPECT_TRUE(device_memory.is_cuda_memory());
  EXPECT_EQ(device_memory.memory_type, CU_MEMORYTYPE_DEVICE);
  ASSERT_TRUE(device_memory.device.has_value());
  EXPECT_EQ(device_memory.device->device_id(), 0);
  EXPECT_EQ(device_memory.base, CUdeviceptr{0xDE0000});
  EXPECT_EQ(device_memory.range_size, 4096U);
  EXPECT_EQ(device_memory.pool, reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x9001}));
  EXPECT_EQ(device_memory.device_pointer, kPoolMemory);
  EXPECT_EQ(device_memory.buffer_id, 77U);
  EXPECT_FALSE(device_memory.is_managed);

  const int local = 5;
  const cuwrap::PointerAttributes host = cuwrap::pointer_attributes(&local);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_pointer_attribute_calls"), before + 2);
  EXPECT_FALSE(host.is_cuda_memory());
  EXPECT_FALSE(host.device.has_value()) << "plain host memory belongs to no device";
  EXPECT_EQ(host.pool, nullptr);
  EXPECT_EQ(host.range_size, 0U);
  EXPECT_EQ(host.device_pointer, 0U);
}

// CU_POINTER_ATTRIBUTE_DEVICE_POINTER is the driver's answer for the current context:
// with none current, or another device's, the memory's own context answers instead, and
// the caller's current context is left as it was.
TEST_F(OnFakeDriver, DeviceMemoryAddressWithNoContextCurrent) {
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const cuwrap::PointerAttributes a = cuwrap::pointer_attributes(kPoolMemory);
  EXPECT_EQ(a.device_pointer, kPoolMemory) << "pool memory names no context: its device's primary";
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "none is current again";
}

TEST_F(OnFakeDriver, DeviceMemoryAddressWithAnotherContextCurrent) {
  const CurrentContext current(other_context());
  const cuwrap::PointerAttributes a = cuwrap::pointer_attributes(kPoolMemory);
  EXPECT_EQ(a.device_pointer, kPoolMemory);
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other_context()) << "the caller's context is back";
}

TEST_F(OnFakeDriver, MappedPinnedMemoryAddressWithNoContextCurrent) {
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  const cuwrap::PointerAttributes a =
      cuwrap::pointer_attributes(reinterpret_cast<const void*>(kMappedHost));
  EXPECT_EQ(a.memory_type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(a.context, fake_context());
  EXPECT_EQ(a.device_pointer, kMappedDevice) << "the address kernels of its own context use";
  EXPECT_EQ(a.host_pointer, reinterpret_cast<void*>(kMappedHost));
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
}

TEST_F(OnFakeDriver, MappedPinnedMemoryAddressWithAnotherContextCurrent) {
  const CurrentContext current(other_context());
  const int before = fake_query<int>("cuwrap_fake_pointer_attribute_calls");
  const cuwrap::PointerAttributes a =
      cuwrap::pointer_attributes(reinterpret_cast<const void*>(kMappedHost));
  EXPECT_EQ(fake_query<int>("cuwrap_fake_pointer_attribute_calls"), before + 2)
      << "the address is asked again in the memory's own context";
  EXPECT_EQ(a.device_pointer, kMappedDevice);
  EXPECT_EQ(a.host_pointer, reinterpret_cast<void*>(kMappedHost));
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), other_context());
}

TEST_F(OnFakeDriver, DeviceSpanCopiesReachTheDriverOnlyWithEqualCounts) {
  const cuwrap::StreamRef stream =
      cuwrap::StreamRef::from_handle(reinterpret_cast<CUstream>(std::uintptr_t{0x5700}));
  const cuwrap::DeviceSpan<float> span(0xDE0000, 8);
  std::vector<float> host(8, 1.0F);
  const int before = fake_query<int>("cuwrap_fake_memcpy_async_calls");
  span.copy_from(host, stream);
  span.subspan(2, 3).copy_to(std::span<float>(host).first(3), stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memcpy_async_calls"), before + 2);
  EXPECT_THROW(span.subspan(2, 3).copy_to(std::span<float>(host).first(4), stream),
               std::invalid_argument);
  span.first(0).copy_from(std::span<const float>(), stream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memcpy_async_calls"), before + 2)
      << "neither a refused nor an empty copy calls the driver";
}

TEST_F(OnFakeDriver, PoolFromHandleFindsItsOwnerAndRefusesTheOwnersAccess) {
  const auto pool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x9001});
  // Not a default pool; device 0 is the one device with read-write access.
  cuwrap::DeviceMemoryResource mr = cuwrap::DeviceMemoryResource::from_handle(pool);
  EXPECT_EQ(mr.device_id(), 0);
  EXPECT_EQ(mr.handle(), pool);
  EXPECT_FALSE(mr.is_own_pool()) << "non-owning by default";
  EXPECT_EQ(mr.access(cuwrap::Device(0)), cuwrap::Access::ReadWrite);
  // The fake has no cuMemPoolSetAccess: the refusal must come before the driver.
  for (const cuwrap::Access access :
       {cuwrap::Access::None, cuwrap::Access::Read, cuwrap::Access::ReadWrite}) {
    try {
      mr.set_access(cuwrap::Device(0), access);
      ADD_FAILURE() << "the owner's access was changed";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "owns the pool")) << e.what();
    }
  }
  const auto default_pool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x9000});
  EXPECT_EQ(cuwrap::DeviceMemoryResource::from_handle(default_pool).device_id(), 0);
  EXPECT_THROW((void)cuwrap::DeviceMemoryResource::adopt(default_pool), std::invalid_argument)
      << "a default pool cannot be destroyed, so it cannot be owned";
  EXPECT_THROW((void)cuwrap::DeviceMemoryResource::from_handle(nullptr), std::invalid_argument);
}

TEST_F(OnFakeDriver, ManagedAttachFlagsAreCheckedBeforeTheDriver) {
  EXPECT_THROW(cuwrap::ManagedMemoryResource({.attach = CU_MEM_ATTACH_SINGLE}),
               std::invalid_argument);
  const cuwrap::ManagedMemoryResource host_attached({.attach = CU_MEM_ATTACH_HOST});
  EXPECT_EQ(host_attached.attach(), CU_MEM_ATTACH_HOST);
  EXPECT_EQ(cuwrap::ManagedMemoryResource().attach(), CU_MEM_ATTACH_GLOBAL);
  const cuwrap::StreamRef stream(reinterpret_cast<CUstream>(std::uintptr_t{0x5700}));
  EXPECT_THROW(stream.attach(cuwrap::BufferRef(0xDE0000, 64), static_cast<CUmemAttach_flags>(3)),
               std::invalid_argument);
  EXPECT_THROW(stream.attach(cuwrap::BufferRef(0, 0), CU_MEM_ATTACH_SINGLE), std::invalid_argument);
}

}  // namespace
