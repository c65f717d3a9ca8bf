// cuwrap::system against a stand-in libnvidia-ml (fake_libnvml.cpp, CUWRAP_FAKE_LIBNVML)
// and the stand-in libcuda (fake_libcuda.cpp), without a GPU: a CUDA device is matched to
// its NVML device by UUID (NVML's index 1, not 0), NVML_ERROR_NOT_SUPPORTED is an empty
// reading, other errors throw NvmlError, NVML is initialised once. Needs the NVML
// bindings (CUWRAP_HAS_NVML): the fake is built only where nvml.h is found.
#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/system.hpp>

#include <gtest/gtest.h>

#include "fake_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

#if CUWRAP_HAS_NVML
// Before anything loads libnvidia-ml: every test of this process talks to the fake.
const bool kFakeNvmlInstalled = [] {
  setenv("CUWRAP_LIBNVML", CUWRAP_FAKE_LIBNVML, 1);
  return true;
}();

namespace system = cuwrap::system;

constexpr const char* kCudaUuid = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";

// Return how often the fake's nvmlInit_v2 was called.
int init_calls() {
  void* handle = ::dlopen(CUWRAP_FAKE_LIBNVML, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << "the fake libnvidia-ml is not loaded";
  auto* fn = handle != nullptr
                 ? reinterpret_cast<int (*)()>(::dlsym(handle, "cuwrap_fake_nvml_init_calls"))
                 : nullptr;
  const int calls = fn != nullptr ? fn() : -1;
  if (handle != nullptr) {
    ::dlclose(handle);
  }
  return calls;
}

TEST(SystemFakeNvml, VersionsCountAndProcessNames) {
  ASSERT_TRUE(kFakeNvmlInstalled);
  EXPECT_EQ(system::nvml_version(), "13.580.65.06");
  EXPECT_EQ(system::driver_version_string(), "580.65.06");
  EXPECT_EQ(system::num_devices(), 2u);
  EXPECT_EQ(system::process_name(4242), "fake_trainer");
  EXPECT_EQ(system::driver_version(), cuwrap::driver_version());  // libcuda's, not NVML's
}

TEST(SystemFakeNvml, InitialisesNvmlOnceAtFirstUse) {
  (void)system::num_devices();
  (void)system::Device(cuwrap::Device(0));
  (void)system::Device::get_all_devices();
  (void)system::nvml_version();
  EXPECT_EQ(init_calls(), 1);
}

TEST(SystemFakeNvml, MatchesTheCudaDeviceByUuidNotByIndex) {
  const cuwrap::Device cuda(0);
  const system::Device gpu(cuda);
  EXPECT_EQ(gpu.index(), 1u) << "NVML's order is not CUDA's";
  EXPECT_EQ(gpu.uuid(), kCudaUuid);
  EXPECT_EQ(gpu.uuid_without_prefix(), cuda.uuid());
  EXPECT_EQ(gpu.name(), "Fake GPU");
  EXPECT_EQ(gpu.to_cuda_device(), cuda);
  EXPECT_EQ(system::Device(1u), gpu);
  EXPECT_EQ(system::Device::from_uuid(kCudaUuid), gpu);
  EXPECT_EQ(system::Device::from_uuid(cuda.uuid()), gpu);
  const std::vector<system::Device> all = system::Device::get_all_devices();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].index(), 0u);
  EXPECT_EQ(all[1], gpu);
}

TEST(SystemFakeNvml, AGpuCudaDoesNotSeeHasNoCudaDevice) {
  const system::Device hidden(0u);
  EXPECT_EQ(hidden.name(), "Fake Hidden GPU");
  try {
    (void)hidden.to_cuda_device();
    ADD_FAILURE() << "to_cuda_device() of a GPU CUDA does not see returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU-ffffffff"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA_VISIBLE_DEVICES"), std::string::npos) << e.what();
  }
}

TEST(SystemFakeNvml, ReadingsOfAGpuThatSupportsThem) {
  const system::Device gpu(cuwrap::Device(0));
  EXPECT_EQ(gpu.temperature(), 47u);
  EXPECT_EQ(gpu.power_usage_mw(), 123456u);
  EXPECT_EQ(gpu.power_limit_mw(), 700000u);
  const system::ClockInfo sm = gpu.get_clock(system::ClockType::Sm);
  EXPECT_EQ(sm.current_mhz, 1755u);
  EXPECT_EQ(sm.max_mhz, 1980u);
  EXPECT_EQ(gpu.get_clock(system::ClockType::Memory).max_mhz, 2619u);
  const system::ClockInfo video = gpu.get_clock(system::ClockType::Video);
  EXPECT_EQ(video.current_mhz, 1755u);
  EXPECT_FALSE(video.max_mhz.has_value()) << "one figure of two not supported";
  ASSERT_TRUE(gpu.utilization().has_value());
  EXPECT_EQ(gpu.utilization()->gpu, 87u);
  EXPECT_EQ(gpu.utilization()->memory, 35u);
  const std::optional<system::MemoryInfo> memory = gpu.memory_info();
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->total, 80ull << 30);
  EXPECT_EQ(memory->free, 60ull << 30);
  EXPECT_EQ(memory->used, 20ull << 30);
  const system::PciInfo pci = gpu.pci_info();
  EXPECT_EQ(pci.bus_id, "00000000:41:00.0");
  EXPECT_EQ(pci.current_link_generation, 4u);
  EXPECT_EQ(pci.current_link_width, 8u);
  EXPECT_EQ(pci.link_generation, 5u);
  EXPECT_EQ(pci.max_link_generation, 5u);
  EXPECT_EQ(pci.max_link_width, 16u);
  EXPECT_EQ(gpu.ecc_mode(), (system::PendingMode{true, false}));
  EXPECT_EQ(gpu.mig_mode(), (system::PendingMode{false, true}));
  const std::optional<system::ClocksEventReasons> reasons = gpu.current_clock_event_reasons();
  ASSERT_TRUE(reasons.has_value());
  EXPECT_EQ(*reasons, system::ClocksEventReasons{} | system::ClocksEventReason::SwPowerCap |
                          system::ClocksEventReason::HwSlowdown);
  EXPECT_EQ(system::to_string(*reasons), "SwPowerCap|HwSlowdown");
  ASSERT_TRUE(gpu.supported_clock_event_reasons().has_value());
  EXPECT_EQ(gpu.supported_clock_event_reasons()->reasons().size(), 9u);
}

TEST(SystemFakeNvml, ProcessesAndNvlinks) {
  const system::Device gpu(cuwrap::Device(0));
  const std::optional<std::vector<system::ProcessInfo>> processes = gpu.compute_running_processes();
  ASSERT_TRUE(processes.has_value());
  ASSERT_EQ(processes->size(), 2u);
  EXPECT_EQ((*processes)[0].pid, 4242u);
  EXPECT_EQ((*processes)[0].used_gpu_memory, 1ull << 30);
  EXPECT_FALSE((*processes)[0].gpu_instance_id.has_value()) << "not a MIG device";
  EXPECT_FALSE((*processes)[1].used_gpu_memory.has_value()) << "NVML_VALUE_NOT_AVAILABLE";
  EXPECT_EQ((*processes)[1].gpu_instance_id, 1u);
  EXPECT_EQ((*processes)[1].compute_instance_id, 0u);
  EXPECT_EQ(gpu.nvlink_state(0), false);
  EXPECT_EQ(gpu.nvlink_state(1), true);
  const std::vector<system::NvlinkState> links = gpu.nvlink_states();
  ASSERT_EQ(links.size(), 2u) << "links NVML refuses as invalid are not the device's";
  EXPECT_EQ(links[1].link, 1u);
  EXPECT_TRUE(links[1].active);
}

TEST(SystemFakeNvml, NotSupportedReadingsAreEmpty) {
  const system::Device hidden(0u);
  EXPECT_FALSE(hidden.temperature().has_value());
  EXPECT_FALSE(hidden.power_usage_mw().has_value());
  EXPECT_FALSE(hidden.power_limit_mw().has_value());
  EXPECT_FALSE(hidden.get_clock(system::ClockType::Graphics).current_mhz.has_value());
  EXPECT_FALSE(hidden.get_clock(system::ClockType::Graphics).max_mhz.has_value());
  EXPECT_FALSE(hidden.memory_info().has_value());
  const system::PciInfo pci = hidden.pci_info();
  EXPECT_EQ(pci.bus_id, "");
  EXPECT_FALSE(pci.current_link_width.has_value());
  EXPECT_FALSE(hidden.ecc_mode().has_value());
  EXPECT_FALSE(hidden.mig_mode().has_value());
  EXPECT_FALSE(hidden.current_clock_event_reasons().has_value());
  EXPECT_FALSE(hidden.supported_clock_event_reasons().has_value());
  EXPECT_FALSE(hidden.compute_running_processes().has_value());
  EXPECT_FALSE(hidden.nvlink_state(0).has_value());
  EXPECT_TRUE(hidden.nvlink_states().empty());
}

TEST(SystemFakeNvml, OtherErrorsThrowNvmlError) {
  const system::Device hidden(0u);
  try {
    (void)hidden.utilization();
    ADD_FAILURE() << "utilization() of a lost GPU returned";
  } catch (const cuwrap::NvmlError& e) {
    EXPECT_EQ(e.code(), NVML_ERROR_GPU_IS_LOST);
    EXPECT_NE(std::string(e.what()).find("nvmlDeviceGetUtilizationRates"), std::string::npos)
        << e.what();
  }
  try {
    (void)system::Device::from_uuid("GPU-12345678-0000-0000-0000-000000000000");
    ADD_FAILURE() << "from_uuid of an unknown UUID returned";
  } catch (const cuwrap::NvmlError& e) {
    EXPECT_EQ(e.code(), NVML_ERROR_NOT_FOUND);
  }
}

TEST(SystemFakeNvml, BadArgumentsNameTheValue) {
  try {
    (void)system::Device(2u);
    ADD_FAILURE() << "system::Device(2) of 2 devices returned";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("index 2"), std::string::npos) << e.what();
  }
  const system::Device gpu(1u);
  EXPECT_THROW((void)gpu.nvlink_state(system::Device::kMaxNvlinks), std::invalid_argument);
}
#else
TEST(SystemFakeNvml, NeedsTheNvmlBindings) {
  GTEST_SKIP() << "the build has no NVML bindings (CUWRAP_EXTRA_HEADERS_DIR: docs/nvml.md)";
}
#endif

}  // namespace
