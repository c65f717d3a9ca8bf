// Print an nvidia-smi-like table of every CUDA device from NVML: name, temperature, power
// use and limit, SM and memory clocks, utilization, memory and PCIe link. Each
// cuwrap::Device is matched to its NVML device by UUID, so the rows follow CUDA's
// numbering (CUDA_VISIBLE_DEVICES reorderings included), not NVML's.
//
// Needs NVML bound (CUWRAP_EXTRA_HEADERS_DIR naming nvml.h's directory: docs/nvml.md),
// libnvidia-ml.so.1 and a GPU; without them it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <iostream>
#include <string>

#if CUWRAP_HAS_NVML
#include <cuwrap/nvml.hpp>

#include <iomanip>

namespace {

// A reading NVML may not support on this device ("N/A", as nvidia-smi prints it).
template <class Read>
std::string reading(Read read, const char* unit) {
  try {
    return std::to_string(read()) + unit;
  } catch (const cuwrap::NvmlError& e) {
    if (e.code() == NVML_ERROR_NOT_SUPPORTED) {
      return "N/A";
    }
    throw;
  }
}

int gpu_status() {
  namespace nvml = cuwrap::nvml;
  nvml::nvmlInit_v2();
  std::cout << "Driver " << nvml::nvmlSystemGetDriverVersion() << ", NVML "
            << nvml::nvmlSystemGetNVMLVersion() << ", CUDA "
            << cuwrap::version_string(cuwrap::driver_version()) << '\n';
  std::cout << std::left << std::setw(4) << "#" << std::setw(28) << "name" << std::setw(7) << "temp"
            << std::setw(16) << "power/limit" << std::setw(14) << "SM/mem MHz" << std::setw(10)
            << "util" << std::setw(20) << "memory used/total"
            << "PCIe\n";
  for (const cuwrap::Device& device : cuwrap::Device::all()) {
    const nvmlDevice_t handle = nvml::nvmlDeviceGetHandleByUUID(("GPU-" + device.uuid()).c_str());
    unsigned int temperature = 0;
    const bool has_temperature = nvml::raw::nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU,
                                                                     &temperature) == NVML_SUCCESS;
    const nvmlMemory_t memory = nvml::nvmlDeviceGetMemoryInfo(handle);
    const std::string power =
        reading([&] { return nvml::nvmlDeviceGetPowerUsage(handle) / 1000; }, "W") + "/" +
        reading([&] { return nvml::nvmlDeviceGetEnforcedPowerLimit(handle) / 1000; }, "W");
    const std::string clocks =
        reading([&] { return nvml::nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM); }, "") + "/" +
        reading([&] { return nvml::nvmlDeviceGetClockInfo(handle, NVML_CLOCK_MEM); }, "");
    const std::string utilization =
        reading([&] { return nvml::nvmlDeviceGetUtilizationRates(handle).gpu; }, "%");
    const std::string pcie =
        "gen " + reading([&] { return nvml::nvmlDeviceGetCurrPcieLinkGeneration(handle); }, "") +
        " x" + reading([&] { return nvml::nvmlDeviceGetCurrPcieLinkWidth(handle); }, "");
    std::cout << std::setw(4) << device.device_id() << std::setw(28)
              << nvml::nvmlDeviceGetName(handle) << std::setw(7)
              << (has_temperature ? std::to_string(temperature) + "C" : std::string("N/A"))
              << std::setw(16) << power << std::setw(14) << clocks << std::setw(10) << utilization
              << std::setw(20)
              << (std::to_string(memory.used >> 20) + "/" + std::to_string(memory.total >> 20) +
                  " MiB")
              << pcie << '\n';
  }
  nvml::nvmlShutdown();
  return 0;
}

}  // namespace

// A missing libnvidia-ml.so.1 skips the example (example::run).
int main() { return example::run_on_gpu("gpu_status", gpu_status); }
#else
int main() {
  std::cout << "cuwrap example skipped: gpu_status needs the NVML bindings (configure with "
               "-DCUWRAP_EXTRA_HEADERS_DIR=<directory with nvml.h>; docs/nvml.md)\n";
  return 0;
}
#endif
