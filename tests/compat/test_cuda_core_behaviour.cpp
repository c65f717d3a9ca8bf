// Where cuwrap follows cuda.core 1.3's behaviour (issue 28), checked without a GPU
// against the stand-in driver (tests/compat/fake_libcuda.cpp): fills with an int or a
// char fill bytes, Device::uuid() has no "GPU-" prefix, yes/no attributes are bool, and
// a default event is not busy-waited (no CU_EVENT_BLOCKING_SYNC, and says so), and
// memory the device cannot reach is refused by a tensor map and has no DLPack device.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/dlpack.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/tensor_map.hpp>

#include <gtest/gtest.h>

#include "fake_buffer.hpp"
#include "fake_driver.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::kLegacyDefaultStream;
using cuwrap::testing::fake_query;
using cuwrap::testing::kFakeInstalled;

constexpr CUdeviceptr kFakePointer = 0x1000;

// cuda.core types these as bool; cuwrap's accessors return bool too.
static_assert(std::is_same_v<
              decltype(std::declval<cuwrap::DeviceProperties&>().kernel_exec_timeout()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>().unified_addressing()), bool>);
static_assert(std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>()
                                          .pageable_memory_access_uses_host_page_tables()),
                             bool>);
static_assert(std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>()
                                          .direct_managed_mem_access_from_host()),
                             bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>().can_tex2d_gather()), bool>);
static_assert(std::is_same_v<
              decltype(std::declval<cuwrap::DeviceProperties&>().can_flush_remote_writes()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>().cluster_launch()), bool>);
static_assert(
    std::is_same_v<
        decltype(std::declval<cuwrap::DeviceProperties&>().can_use_64_bit_stream_mem_ops()), bool>);
static_assert(
    std::is_same_v<
        decltype(std::declval<cuwrap::DeviceProperties&>().can_use_stream_wait_value_nor()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::DeviceProperties&>().mps_enabled()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::KernelAttributes&>().cache_mode_ca()), bool>);
static_assert(
    std::is_same_v<decltype(std::declval<cuwrap::KernelAttributes&>().cluster_size_must_be_set()),
                   bool>);
static_assert(std::is_same_v<decltype(std::declval<cuwrap::KernelAttributes&>()
                                          .non_portable_cluster_size_allowed()),
                             bool>);
// Counts stay int.
static_assert(std::is_same_v<
              decltype(std::declval<cuwrap::DeviceProperties&>().multiprocessor_count()), int>);
static_assert(std::is_same_v<decltype(std::declval<cuwrap::KernelAttributes&>().num_regs()), int>);

class OnFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kFakeInstalled); }
};

// cuda.core's fill(value) fills bytes: its example checks bytes([42]) * size.
TEST_F(OnFakeDriver, FillWithAnIntOrACharFillsBytes) {
  Buffer buffer = cuwrap::testing::fake_buffer(kFakePointer, 64);
  const int before = fake_query<int>("cuwrap_fake_memset_d8_calls");
  buffer.fill(42, kLegacyDefaultStream);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memset_d8_calls"), before + 1);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_memset_d8_value"), 42u);
  EXPECT_EQ(fake_query<std::size_t>("cuwrap_fake_memset_d8_count"), 64u);
  buffer.fill('b', kLegacyDefaultStream);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_memset_d8_value"), static_cast<unsigned>('b'));
  buffer.fill(255, kLegacyDefaultStream);
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_memset_d8_value"), 255u);
  buffer.fill('\xff', kLegacyDefaultStream);  // a negative char is its byte
  EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_memset_d8_value"), 0xFFu);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memset_d8_calls"), before + 4);
  // Outside a byte: refused before the driver.
  EXPECT_THROW(buffer.fill(256, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_THROW(buffer.fill(-1, kLegacyDefaultStream), std::invalid_argument);
  EXPECT_EQ(fake_query<int>("cuwrap_fake_memset_d8_calls"), before + 4);
}

TEST_F(OnFakeDriver, UuidHasNoGpuPrefix) {
  // The fake's UUID bytes are 0x00..0x0f.
  EXPECT_EQ(Device(0).uuid(), "00010203-0405-0607-0809-0a0b0c0d0e0f");
}

TEST_F(OnFakeDriver, YesNoPropertiesAnswerTheDriversValue) {
  // The fake answers 0 for odd attributes past 100, else 1.
  const cuwrap::DeviceProperties properties = Device(0).properties();
  EXPECT_TRUE(properties.kernel_exec_timeout());                   // 17
  EXPECT_TRUE(properties.cluster_launch());                        // 120
  EXPECT_FALSE(properties.can_use_stream_wait_value_nor());        // 123
  EXPECT_FALSE(properties.mps_enabled());                          // 133
  EXPECT_FALSE(properties.direct_managed_mem_access_from_host());  // 101
}

TEST_F(OnFakeDriver, DefaultEventIsNotBusyWaited) {
  const Device device(0);
  {
    const cuwrap::Event event = device.create_event();
    EXPECT_FALSE(event.is_sync_busy_waited());
    EXPECT_FALSE(event.is_blocking_sync());
    EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_event_flags"), unsigned{CU_EVENT_DISABLE_TIMING});
  }
  {
    const cuwrap::Event blocking = device.create_event({.blocking_sync = true});
    EXPECT_FALSE(blocking.is_sync_busy_waited());
    EXPECT_TRUE(blocking.is_blocking_sync());
    EXPECT_EQ(fake_query<unsigned>("cuwrap_fake_event_flags"),
              unsigned{CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC});
  }
  EXPECT_EQ(fake_query<int>("cuwrap_fake_live_events"), 0);
}

// A user resource whose memory is reachable as it says; it allocates nothing real.
class ReachableResource : public cuwrap::MemoryResource {
 public:
  ReachableResource(bool device, bool host) : device_(device), host_(host) {}
  Buffer allocate(std::size_t size, cuwrap::StreamRef stream) override {
    return Buffer::adopt(0x20000, size, this, stream);
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/,
                  cuwrap::StreamRef /*stream*/) override {}
  bool is_device_accessible() const override { return device_; }
  bool is_host_accessible() const override { return host_; }

 private:
  bool device_;
  bool host_;
};

TEST_F(OnFakeDriver, TensorMapRefusesMemoryTheDeviceCannotReach) {
  const std::uint64_t shape[] = {1024};
  const std::uint32_t box[] = {128};
  cuwrap::TensorMapDescriptor map = cuwrap::TensorMapDescriptor::from_tiled(
      CUdeviceptr{0x10000}, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, shape, {}, box);
  ReachableResource host_only(false, true);
  Buffer host = host_only.allocate(4096, kLegacyDefaultStream);
  try {
    map.replace_address(host);
    ADD_FAILURE() << "a tensor map took memory the device cannot access";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not device-accessible"), std::string::npos) << e.what();
  }
}

#if defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK
TEST_F(OnFakeDriver, DlpackDeviceOfUnreachableMemoryIsAnError) {
  ReachableResource nowhere(false, false);
  Buffer unreachable = nowhere.allocate(64, kLegacyDefaultStream);
  EXPECT_THROW((void)cuwrap::dlpack_device(unreachable), std::invalid_argument);
  ReachableResource host_only(false, true);
  Buffer host = host_only.allocate(64, kLegacyDefaultStream);
  EXPECT_EQ(cuwrap::dlpack_device(host).device_type, kDLCPU);
}
#endif

}  // namespace
