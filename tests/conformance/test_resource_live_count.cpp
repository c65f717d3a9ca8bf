// Port of cuda.core's tests/memory/test_resource_live_count.py: one TEST per Python test
// function (see README.md for those not ported and why).
//
// cuda.core counts the pools and address reservations its RAII layer owns; cuwrap says
// per object whether it owns its pool (DeviceMemoryResource::is_own_pool) and how many
// allocations a VirtualMemoryResource holds (allocation_count).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"

#include <atomic>
#include <thread>
#include <vector>

namespace {

using cuwrap::DeviceMemoryResource;
using cuwrap::DeviceMemoryResourceOptions;

constexpr std::size_t kLiveCountPoolSize = 2097152;

class test_resource_live_count : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (!device().properties().memory_pools_supported()) {
      GTEST_SKIP() << "the device does not support memory pools";
    }
  }
  static DeviceMemoryResourceOptions owned() {
    DeviceMemoryResourceOptions options;
    options.max_size = kLiveCountPoolSize;
    return options;
  }
};

TEST_F(test_resource_live_count, test_owned_pool_is_counted_until_freed) {
  DeviceMemoryResource mr(device(), owned());
  EXPECT_TRUE(mr.is_own_pool());
  EXPECT_NE(mr.handle(), cuwrap::driver::cuDeviceGetMemPool(device().handle()));
  mr.close();
  EXPECT_FALSE(mr.is_open());
}

TEST_F(test_resource_live_count, test_borrowed_default_pool_is_not_counted) {
  const DeviceMemoryResource mr(device());
  EXPECT_FALSE(mr.is_own_pool());
  EXPECT_EQ(mr.handle(), cuwrap::driver::cuDeviceGetMemPool(device().handle()));
}

TEST_F(test_resource_live_count, test_va_reservation_is_counted_until_freed) {
  if (!device().properties().virtual_memory_management_supported()) {
    GTEST_SKIP() << "the device does not support virtual memory management";
  }
  cuwrap::VirtualMemoryResource vmm(device());
  const std::size_t before = vmm.allocation_count();
  cuwrap::Buffer buffer = vmm.allocate(4096);
  EXPECT_EQ(vmm.allocation_count(), before + 1);
  buffer.close();
  EXPECT_EQ(vmm.allocation_count(), before);
}

// Threads that each make the device current and create and drop owning pools: every
// pool is its own, and all of them go without an error.
TEST_F(test_resource_live_count, test_concurrent_owned_pool_construct_and_drop_returns_to_start) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10;
  std::atomic<int> owned_pools{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      try {
        device().set_current();
        for (int i = 0; i < kPerThread; ++i) {
          const DeviceMemoryResource mr(device(), owned());
          owned_pools += mr.is_own_pool() ? 1 : 0;
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(owned_pools.load(), kThreads * kPerThread);
}

}  // namespace
