// Launch sizing on a GPU: LaunchConfig::for_elements against the occupancy API,
// LaunchConfig::check(device[, kernel]) against the device's own limits, and the
// KernelAttributes setters read back through the getters. (The checks against fixed
// limits run without a GPU in tests/compat/test_launch_and_pointer_checks.cpp.)
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::LaunchConfig;
using cuwrap::testing::contains;

constexpr const char* kSizingKernels = R"(
extern "C" __global__ void mark(unsigned* out, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1u;
}
extern "C" __global__ void with_shared(unsigned* out) {
  extern __shared__ unsigned scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = scratch[blockDim.x - 1];
}
)";

class LaunchSizing : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    CUWRAP_REQUIRE_NVRTC();
    code_.emplace(
        cuwrap::Program(kSizingKernels, cuwrap::CodeType::Cxx).compile(cuwrap::TargetType::Cubin));
  }

  // Check `config` against the device and `mark`, launch it over `n` elements, and expect
  // each marked exactly once.
  void expect_each_element_marked_once(const LaunchConfig& config, const cuwrap::Kernel& mark,
                                       std::size_t n) {
    EXPECT_NO_THROW(config.check(device(), mark));
    cuwrap::Buffer out = device().allocate(n * sizeof(unsigned), stream());
    out.fill(std::uint8_t{0}, stream());
    cuwrap::launch(stream(), config, mark, out.as<unsigned>(), static_cast<unsigned long long>(n));
    std::vector<unsigned> host(n);
    out.as<unsigned>().copy_to(host, stream());
    stream().sync();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(host[i], 1U) << "element " << i << " of " << n << ", block " << config.block.x;
    }
  }

  std::optional<cuwrap::ObjectCode> code_;
};

TEST_F(LaunchSizing, ForElementsCoversEveryElementOnce) {
  const cuwrap::Kernel mark = code_->get_kernel("mark");
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{100003}}) {
    const LaunchConfig config = LaunchConfig::for_elements(mark, n);
    const int expected_block = mark.occupancy().max_potential_block_size(0).max_block_size;
    EXPECT_EQ(config.block, cuwrap::Dim3(static_cast<unsigned>(expected_block)));
    EXPECT_EQ(config.grid.x, (n + expected_block - 1) / expected_block) << n;
    EXPECT_EQ(config.shmem_size, 0U);
    expect_each_element_marked_once(config, mark, n);
  }
  EXPECT_THROW((void)LaunchConfig::for_elements(mark, 0), std::invalid_argument);
}

TEST_F(LaunchSizing, GivenDeviceGivenBlockAndLargestBlockFormsCoverEveryElementOnce) {
  const cuwrap::Kernel mark = code_->get_kernel("mark");
  const std::size_t n = 100003;
  const LaunchConfig on_device = LaunchConfig::for_elements(mark, n, device());
  EXPECT_EQ(
      on_device.block.x,
      static_cast<unsigned>(mark.occupancy(device()).max_potential_block_size(0).max_block_size));
  const LaunchConfig given = LaunchConfig::for_elements(n, 96);
  EXPECT_EQ(given.block, cuwrap::Dim3(96));
  const LaunchConfig largest = LaunchConfig::for_elements_largest_block(mark, n, device());
  EXPECT_EQ(largest.block.x, static_cast<unsigned>(mark.attributes().get(
                                 CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device())));
  for (const LaunchConfig& config : {on_device, given, largest}) {
    expect_each_element_marked_once(config, mark, n);
  }
}

TEST_F(LaunchSizing, ForElementsKeepsTheDynamicSharedMemory) {
  const cuwrap::Kernel kernel = code_->get_kernel("with_shared");
  const LaunchConfig config = LaunchConfig::for_elements(kernel, 4096, 1024 * sizeof(unsigned));
  EXPECT_EQ(config.shmem_size, 1024 * sizeof(unsigned));
  EXPECT_EQ(
      config.block.x,
      static_cast<unsigned>(
          kernel.occupancy().max_potential_block_size(1024 * sizeof(unsigned)).max_block_size));
}

TEST_F(LaunchSizing, CheckUsesTheDevicesOwnLimits) {
  const int optin = device().attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  const LaunchConfig too_much{
      .grid = 1, .block = 32, .shmem_size = static_cast<std::size_t>(optin) + 1};
  try {
    too_much.check(device());
    FAIL() << "shared memory above the opt-in maximum was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), std::to_string(optin))) << e.what();
  }
  const LaunchConfig huge_block{.grid = 1, .block = 15000};
  EXPECT_THROW(huge_block.check(device()), std::invalid_argument);
  const int grid_y = device().attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  EXPECT_THROW(
      (LaunchConfig{.grid = {1, static_cast<unsigned>(grid_y) + 1}, .block = 32}.check(device())),
      std::invalid_argument);
  EXPECT_NO_THROW(
      (LaunchConfig{.grid = {1, static_cast<unsigned>(grid_y)}, .block = 32}.check(device())));
  const int sms = device().attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  EXPECT_NO_THROW(
      (LaunchConfig{.grid = static_cast<unsigned>(sms), .block = 256, .cooperative_launch = true}
           .check(device())));
}

TEST_F(LaunchSizing, AttributeSettersAreReadBack) {
  const cuwrap::Kernel kernel = code_->get_kernel("with_shared");
  const cuwrap::KernelAttributes attributes = kernel.attributes();
  const int optin = device().attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  const int static_shared = attributes.shared_size_bytes(device());
  const int allowed = optin - static_shared;
  attributes.set_max_dynamic_shared_size_bytes(allowed, device());
  EXPECT_EQ(attributes.max_dynamic_shared_size_bytes(device()), allowed);
  attributes.set_preferred_shared_memory_carveout(50, device());
  EXPECT_EQ(attributes.preferred_shared_memory_carveout(device()), 50);
  attributes.set_preferred_shared_memory_carveout(-1, device());
  EXPECT_NO_THROW(attributes.set_cache_config(CU_FUNC_CACHE_PREFER_SHARED, device()));
  EXPECT_THROW(attributes.set_preferred_shared_memory_carveout(101, device()),
               std::invalid_argument);

  // A launch asking for more than the 48 KiB default after the limit was lowered: launch()
  // raises it again (the setter is what launch() remembers).
  attributes.set_max_dynamic_shared_size_bytes(0, device());
  EXPECT_EQ(attributes.max_dynamic_shared_size_bytes(device()), 0);
  if (allowed > 48 * 1024) {
    cuwrap::Buffer out = device().allocate(sizeof(unsigned), stream());
    cuwrap::launch(stream(),
                   {.grid = 1, .block = 32, .shmem_size = static_cast<std::size_t>(allowed)},
                   kernel, out);
    stream().sync();
    EXPECT_EQ(attributes.max_dynamic_shared_size_bytes(device()), allowed);
  }

  if (device().compute_capability().major >= 9) {
    attributes.set_non_portable_cluster_size_allowed(true, device());
    EXPECT_EQ(attributes.non_portable_cluster_size_allowed(device()), 1);
    attributes.set_non_portable_cluster_size_allowed(false, device());
    EXPECT_EQ(attributes.non_portable_cluster_size_allowed(device()), 0);
  }
}

}  // namespace
