// Registered host memory (register_host_memory, cuMemHostRegister) and the legacy pinned
// resource's cuMemHostAlloc flags: the options' flags and the closed owner without a GPU;
// registration, mapping, kernels writing through the mapping, unregistration and the
// driver's refusals on a GPU.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::HostRegisterOptions;
using cuwrap::RegisteredHostMemory;
using cuwrap::RegisteredHostMemoryRef;

static_assert(std::is_base_of_v<RegisteredHostMemoryRef, RegisteredHostMemory>);
static_assert(std::is_trivially_copyable_v<RegisteredHostMemoryRef>);
static_assert(!std::is_copy_constructible_v<RegisteredHostMemory>);
static_assert(std::is_nothrow_move_constructible_v<RegisteredHostMemory>);

TEST(HostRegisterOptions, EachOptionIsItsDriverFlag) {
  EXPECT_EQ(HostRegisterOptions{}.flags(), 0U);
  EXPECT_EQ(HostRegisterOptions{.portable = true}.flags(),
            static_cast<unsigned>(CU_MEMHOSTREGISTER_PORTABLE));
  EXPECT_EQ(HostRegisterOptions{.device_mapped = true}.flags(),
            static_cast<unsigned>(CU_MEMHOSTREGISTER_DEVICEMAP));
  EXPECT_EQ(HostRegisterOptions{.read_only = true}.flags(),
            static_cast<unsigned>(CU_MEMHOSTREGISTER_READ_ONLY));
  EXPECT_EQ(HostRegisterOptions{.io_memory = true}.flags(),
            static_cast<unsigned>(CU_MEMHOSTREGISTER_IOMEMORY));
  EXPECT_EQ((HostRegisterOptions{.portable = true, .device_mapped = true}.flags()),
            static_cast<unsigned>(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
}

TEST(RegisteredHostMemory, DefaultConstructedIsClosedAndRefusesUse) {
  RegisteredHostMemory closed;
  EXPECT_FALSE(closed.is_open());
  EXPECT_THROW((void)closed.host_span(), std::logic_error);
  EXPECT_THROW((void)closed.device_pointer(), std::logic_error);
  EXPECT_THROW((void)closed.device_buffer(), std::logic_error);
  EXPECT_NO_THROW(closed.close()) << "closing a closed registration does nothing";
}

TEST(RegisteredHostMemory, AnEmptySpanIsRefusedBeforeTheDriver) {
  std::vector<std::byte> none;
  try {
    (void)cuwrap::register_host_memory(std::span<std::byte>(none));
    FAIL() << "an empty registration was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("register_host_memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)RegisteredHostMemoryRef::from_handle({}), std::invalid_argument);
}

TEST(LegacyPinnedMemoryResourceOptions, EachOptionIsItsDriverFlag) {
  EXPECT_EQ(cuwrap::LegacyPinnedMemoryResource().flags(), 0U) << "cuMemAllocHost";
  const cuwrap::LegacyPinnedMemoryResource mapped(
      cuwrap::LegacyPinnedMemoryResourceOptions{.portable = true, .device_mapped = true});
  EXPECT_EQ(mapped.flags(),
            static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  const cuwrap::LegacyPinnedMemoryResource combined(
      cuwrap::LegacyPinnedMemoryResourceOptions{.write_combined = true});
  EXPECT_EQ(combined.flags(), static_cast<unsigned>(CU_MEMHOSTALLOC_WRITECOMBINED));
}

constexpr const char* kAddOne = R"(
extern "C" __global__ void add_one(float* x, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
)";

class HostMemoryTest : public cuwrap::testing::DeviceStreamTest {};

TEST_F(HostMemoryTest, RegisteredMemoryIsPinnedUntilClosed) {
  std::vector<float> host(4096, 1.0F);
  RegisteredHostMemory pinned = cuwrap::register_host_memory(host);
  EXPECT_TRUE(pinned.is_open());
  EXPECT_EQ(pinned.data(), static_cast<void*>(host.data()));
  EXPECT_EQ(pinned.size(), host.size() * sizeof(float));
  EXPECT_EQ(pinned.host_span<float>().size(), host.size());
  EXPECT_EQ(pinned.device_pointer(), CUdeviceptr{0}) << "not mapped";
  EXPECT_THROW((void)pinned.device_buffer(), std::logic_error);
  EXPECT_EQ(cuwrap::pointer_attributes(host.data()).memory_type, CU_MEMORYTYPE_HOST);

  // Registered twice: the driver refuses, and the first registration stays.
  try {
    (void)cuwrap::register_host_memory(host);
    FAIL() << "a second registration of the same memory was accepted";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  }
  EXPECT_EQ(cuwrap::pointer_attributes(host.data()).memory_type, CU_MEMORYTYPE_HOST);

  // A copy through the registration lands in the vector.
  cuwrap::Buffer device_copy = device().allocate(pinned.size(), stream());
  device_copy.fill(std::uint8_t{0}, stream());
  device_copy.copy_to(pinned.host_span(), stream());
  stream().sync();
  EXPECT_EQ(host[0], 0.0F);
  EXPECT_EQ(host.back(), 0.0F);

  pinned.close();
  EXPECT_FALSE(pinned.is_open());
  EXPECT_EQ(cuwrap::pointer_attributes(host.data()).memory_type, CUmemorytype{})
      << "unregistered: ordinary pageable memory again";
}

TEST_F(HostMemoryTest, MappedMemoryIsWrittenByAKernel) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::ObjectCode code =
      cuwrap::Program(kAddOne, cuwrap::CodeType::Cxx).compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel add_one = code.get_kernel("add_one");
  std::vector<float> host(10000, 2.0F);
  const std::size_t n = host.size();
  RegisteredHostMemory mapped = cuwrap::register_host_memory(host, {.device_mapped = true});
  ASSERT_NE(mapped.device_pointer(), CUdeviceptr{0});
  EXPECT_EQ(mapped.flags(), static_cast<unsigned>(CU_MEMHOSTREGISTER_DEVICEMAP));
  cuwrap::launch(stream(), cuwrap::LaunchConfig::for_elements(n, 256), add_one,
                 mapped.device_buffer().as<float>(), static_cast<unsigned long long>(n));
  stream().sync();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(host[i], 3.0F) << "element " << i;
  }

  // A view of the same registration, as another library's code would make it.
  const RegisteredHostMemoryRef view =
      RegisteredHostMemoryRef::from_handle(std::as_writable_bytes(std::span(host)));
  EXPECT_EQ(view.device_pointer(), mapped.device_pointer());

  // Moving the owner keeps one registration; the moved-from one is closed.
  RegisteredHostMemory moved = std::move(mapped);
  EXPECT_FALSE(mapped.is_open());  // NOLINT(bugprone-use-after-move): checked on purpose
  EXPECT_TRUE(moved.is_open());
}

TEST_F(HostMemoryTest, FromHandleRefusesMemoryTheDriverDoesNotKnow) {
  std::vector<std::byte> plain(256);
  EXPECT_THROW((void)RegisteredHostMemoryRef::from_handle(plain), cuwrap::DriverError);
}

TEST_F(HostMemoryTest, RegistrationWithNoContextCurrentLeavesNoneCurrent) {
  cuwrap::driver::cuCtxSetCurrent(nullptr);
  std::vector<int> host(1024, 7);
  {
    RegisteredHostMemory pinned = cuwrap::register_host_memory(host, {.device_mapped = true});
    EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "none current, as before";
    EXPECT_NE(pinned.device_pointer(), CUdeviceptr{0});
  }
  EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
  EXPECT_EQ(cuwrap::pointer_attributes(host.data()).memory_type, CUmemorytype{})
      << "the destructor unregistered it in device 0's primary context";
}

TEST_F(HostMemoryTest, LegacyPinnedResourceMapsItsAllocations) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::ObjectCode code =
      cuwrap::Program(kAddOne, cuwrap::CodeType::Cxx).compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel add_one = code.get_kernel("add_one");
  cuwrap::LegacyPinnedMemoryResource mapped_mr(
      cuwrap::LegacyPinnedMemoryResourceOptions{.portable = true, .device_mapped = true});
  const std::size_t n = 512;
  cuwrap::Buffer buffer = mapped_mr.allocate(n * sizeof(float), stream());
  const std::span<float> host = buffer.host_span<float>();
  for (float& x : host) {
    x = 5.0F;
  }
  unsigned flags = 0;
  ASSERT_EQ(cuwrap::driver::raw::cuMemHostGetFlags(&flags, host.data()), CUDA_SUCCESS);
  EXPECT_NE(flags & CU_MEMHOSTALLOC_DEVICEMAP, 0U);
  EXPECT_NE(flags & CU_MEMHOSTALLOC_PORTABLE, 0U);
  cuwrap::launch(stream(), cuwrap::LaunchConfig::for_elements(n, 128), add_one, buffer.as<float>(),
                 static_cast<unsigned long long>(n));
  stream().sync();
  EXPECT_EQ(host[0], 6.0F);
  EXPECT_EQ(host[n - 1], 6.0F);
}

static_assert(std::is_same_v<decltype(std::declval<const cuwrap::Device&>().memory_resource()),
                             cuwrap::DeviceMemoryResource&>,
              "the default resource is typed: its pool settings need no cast");

TEST_F(HostMemoryTest, DefaultPoolTrimsToWhatItIsAskedToKeep) {
  cuwrap::DeviceMemoryResource& pool = device().memory_resource();
  EXPECT_EQ(pool.attributes().release_threshold(), UINT64_MAX)
      << "raised on first use, as documented";
  {
    cuwrap::Buffer big = device().allocate(std::size_t{64} << 20, stream());
    stream().sync();
  }
  stream().sync();
  const std::uint64_t reserved_before = pool.attributes().reserved_mem_current();
  ASSERT_GE(reserved_before, std::uint64_t{64} << 20) << "the pool keeps the freed memory";
  pool.trim_to(0);
  const std::uint64_t reserved_after = pool.attributes().reserved_mem_current();
  EXPECT_LT(reserved_after, reserved_before);
}

}  // namespace
