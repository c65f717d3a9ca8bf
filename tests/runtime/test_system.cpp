// cuwrap::system: the clock event reason set and the refusal without NVML on any machine;
// NVML's view of each CUDA device (matched by UUID) where NVML is bound, libnvidia-ml.so.1
// loads and a GPU is present. The readings against fixed answers, without a GPU, are in
// tests/compat/test_system_fake_nvml.cpp.
#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/system.hpp>
#include <cuwrap/version.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <string>
#include <vector>

namespace {

namespace system = cuwrap::system;
using system::ClocksEventReason;
using system::ClocksEventReasons;

TEST(System, ClocksEventReasonsIsNvmlsBitmaskTyped) {
  constexpr ClocksEventReasons none;
  static_assert(none.empty());
  constexpr ClocksEventReasons some =
      none | ClocksEventReason::GpuIdle | ClocksEventReason::HwThermalSlowdown;
  static_assert(some.bits() == 0x41);
  static_assert(some.contains(ClocksEventReason::GpuIdle));
  static_assert(!some.contains(ClocksEventReason::SwPowerCap));
  EXPECT_EQ(some.reasons(), (std::vector<ClocksEventReason>{ClocksEventReason::GpuIdle,
                                                            ClocksEventReason::HwThermalSlowdown}));
  EXPECT_EQ(system::to_string(none), "None");
  EXPECT_EQ(system::to_string(some), "GpuIdle|HwThermalSlowdown");
  EXPECT_EQ(system::to_string(ClocksEventReasons(0x204)), "SwPowerCap|0x200")
      << "bits without a name are kept";
  EXPECT_STREQ(system::to_string(ClocksEventReason::DisplayClockSetting), "DisplayClockSetting");
}

TEST(System, DriverVersionIsLibcudasAndNeedsNoNvml) {
  try {
    EXPECT_EQ(system::driver_version(), cuwrap::driver_version());
  } catch (const cuwrap::LoadError& e) {
    // No usable libcuda here: both refuse alike.
    EXPECT_THROW((void)cuwrap::driver_version(), cuwrap::LoadError) << e.what();
  }
}

TEST(System, WithoutNvmlBindingsRefusesSayingHowToBindThem) {
#if CUWRAP_HAS_NVML
  GTEST_SKIP() << "the build binds NVML (the fake's tests: tests/compat/test_system_fake_nvml.cpp)";
#else
  try {
    (void)system::num_devices();
    ADD_FAILURE() << "num_devices() returned without NVML bindings";
  } catch (const cuwrap::UnsupportedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuwrap::system::num_devices"), std::string::npos) << what;
    EXPECT_NE(what.find("NVML"), std::string::npos) << what;
    EXPECT_NE(what.find("-DCUWRAP_EXTRA_HEADERS_DIR"), std::string::npos) << what;
  }
  EXPECT_THROW((void)system::nvml_version(), cuwrap::UnsupportedError);
  EXPECT_THROW((void)system::driver_version_string(), cuwrap::UnsupportedError);
  EXPECT_THROW((void)system::process_name(1), cuwrap::UnsupportedError);
  EXPECT_THROW((void)system::Device(0u), cuwrap::UnsupportedError);
  EXPECT_THROW((void)system::Device::get_all_devices(), cuwrap::UnsupportedError);
  EXPECT_THROW((void)system::Device::from_uuid("GPU-0"), cuwrap::UnsupportedError);
#endif
}

#if CUWRAP_HAS_NVML
// Return "" when NVML answers (libnvidia-ml.so.1 loads and initialises), else why not.
std::string nvml_unavailable_reason() {
  try {
    (void)system::num_devices();
    return "";
  } catch (const cuwrap::Error& e) {
    return e.what();
  }
}
#endif

TEST(System, EachCudaDeviceHasItsNvmlDevice) {
#if !CUWRAP_HAS_NVML
  GTEST_SKIP() << "the build has no NVML bindings (CUWRAP_EXTRA_HEADERS_DIR: docs/nvml.md)";
#else
  CUWRAP_REQUIRE_GPU();
  if (const std::string reason = nvml_unavailable_reason(); !reason.empty()) {
    GTEST_SKIP() << "needs libnvidia-ml.so.1: " << reason;
  }
  EXPECT_FALSE(system::driver_version_string().empty());
  EXPECT_FALSE(system::nvml_version().empty());
  EXPECT_GE(system::num_devices(), static_cast<unsigned int>(cuwrap::Device::count()));
  for (const cuwrap::Device& device : cuwrap::Device::all()) {
    const system::Device gpu(device);
    EXPECT_EQ(gpu.uuid_without_prefix(), device.uuid());
    EXPECT_EQ(gpu.to_cuda_device(), device);
    EXPECT_EQ(system::Device(gpu.index()), gpu);
    EXPECT_EQ(system::Device::from_uuid(gpu.uuid()), gpu);
    EXPECT_EQ(gpu.name(), device.name());
    if (const auto memory = gpu.memory_info()) {
      EXPECT_GT(memory->total, 0u);
      EXPECT_LE(memory->used, memory->total);
    }
    if (const auto celsius = gpu.temperature()) {
      EXPECT_LT(*celsius, 150u);
    }
    if (const auto usage = gpu.utilization()) {
      EXPECT_LE(usage->gpu, 100u);
      EXPECT_LE(usage->memory, 100u);
    }
    const system::ClockInfo sm = gpu.get_clock(system::ClockType::Sm);
    if (sm.current_mhz && sm.max_mhz) {
      EXPECT_LE(*sm.current_mhz, *sm.max_mhz + 50) << "MHz";
    }
    for (const system::NvlinkState& link : gpu.nvlink_states()) {
      EXPECT_LT(link.link, system::Device::kMaxNvlinks);
    }
    EXPECT_NO_THROW((void)gpu.compute_running_processes());
    EXPECT_NO_THROW((void)gpu.ecc_mode());
    EXPECT_NO_THROW((void)gpu.mig_mode());
    EXPECT_NO_THROW((void)gpu.pci_info());
    EXPECT_NO_THROW((void)gpu.power_usage_mw());
    if (const auto reasons = gpu.current_clock_event_reasons()) {
      EXPECT_FALSE(system::to_string(*reasons).empty());
    }
  }
#endif
}

}  // namespace
