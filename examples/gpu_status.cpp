// Print an nvidia-smi-like table of every CUDA device through cuwrap::system (NVML): name,
// temperature, power use and limit, SM and memory clocks, utilization, memory, PCIe link,
// ECC and MIG mode, active NVLinks and why the clocks are held back; then the compute
// processes. Each cuwrap::Device is matched to its NVML device by UUID, so the rows follow
// CUDA's numbering (CUDA_VISIBLE_DEVICES reorderings included), not NVML's. A reading the
// device does not support shows as "N/A", as in nvidia-smi.
//
// Needs NVML bound (CUWRAP_EXTRA_HEADERS_DIR naming nvml.h's directory: docs/nvml.md),
// libnvidia-ml.so.1 and a GPU; without them it says so and exits 0.
#include <cuwrap/cuwrap.hpp>

#include "support.hpp"

#include <iomanip>
#include <iostream>
#include <optional>
#include <string>

namespace {

namespace system = cuwrap::system;

// Return the reading with its unit, or "N/A".
template <class T>
std::string shown(const std::optional<T>& value, const char* unit = "") {
  return value ? std::to_string(*value) + unit : std::string("N/A");
}

// Return milliwatts as whole watts, or "N/A".
std::string watts(const std::optional<unsigned int>& milliwatts) {
  return milliwatts ? std::to_string(*milliwatts / 1000) + "W" : std::string("N/A");
}

// Return "on"/"off", with what the next reset changes it to.
std::string mode(const std::optional<system::PendingMode>& m) {
  if (!m) {
    return "N/A";
  }
  std::string text = m->current ? "on" : "off";
  if (m->pending != m->current) {
    text += m->pending ? "->on" : "->off";
  }
  return text;
}

int gpu_status() {
  std::string driver;
  try {
    driver = system::driver_version_string();
  } catch (const cuwrap::UnsupportedError& e) {  // cuwrap was built without nvml.h
    std::cout << "cuwrap example skipped: gpu_status: " << e.what() << '\n';
    return 0;
  }
  std::cout << "Driver " << driver << ", NVML " << system::nvml_version() << ", CUDA "
            << cuwrap::version_string(system::driver_version()) << '\n';
  std::cout << std::left << std::setw(4) << "#" << std::setw(28) << "name" << std::setw(7) << "temp"
            << std::setw(12) << "power/cap" << std::setw(12) << "SM/mem MHz" << std::setw(6)
            << "util" << std::setw(20) << "memory used/total" << std::setw(12) << "PCIe"
            << std::setw(9) << "ECC" << std::setw(9) << "MIG" << std::setw(8) << "NVLinks"
            << "clocks held by\n";
  for (const cuwrap::Device& device : cuwrap::Device::all()) {
    const system::Device gpu(device);
    const std::optional<system::MemoryInfo> memory = gpu.memory_info();
    const system::PciInfo pci = gpu.pci_info();
    unsigned int active_links = 0;
    for (const system::NvlinkState& link : gpu.nvlink_states()) {
      active_links += link.active ? 1 : 0;
    }
    const std::optional<system::ClocksEventReasons> reasons = gpu.current_clock_event_reasons();
    const std::optional<system::Utilization> utilization = gpu.utilization();
    std::cout << std::setw(4) << device.device_id() << std::setw(28) << gpu.name() << std::setw(7)
              << shown(gpu.temperature(), "C") << std::setw(12)
              << (watts(gpu.power_usage_mw()) + "/" + watts(gpu.power_limit_mw())) << std::setw(12)
              << (shown(gpu.get_clock(system::ClockType::Sm).current_mhz) + "/" +
                  shown(gpu.get_clock(system::ClockType::Memory).current_mhz))
              << std::setw(6)
              << (utilization ? std::to_string(utilization->gpu) + "%" : std::string("N/A"))
              << std::setw(20)
              << (memory ? std::to_string(memory->used >> 20) + "/" +
                               std::to_string(memory->total >> 20) + " MiB"
                         : std::string("N/A"))
              << std::setw(12)
              << ("gen " + shown(pci.current_link_generation) + " x" +
                  shown(pci.current_link_width))
              << std::setw(9) << mode(gpu.ecc_mode()) << std::setw(9) << mode(gpu.mig_mode())
              << std::setw(8) << active_links
              << (reasons ? system::to_string(*reasons) : std::string("N/A")) << '\n';
  }
  std::cout << "Compute processes:\n";
  for (const cuwrap::Device& device : cuwrap::Device::all()) {
    const auto processes = system::Device(device).compute_running_processes();
    if (!processes) {
      continue;  // NVML does not list them for this device
    }
    for (const system::ProcessInfo& process : *processes) {
      std::string name = "?";
      try {
        name = system::process_name(process.pid);
      } catch (const cuwrap::Error&) {
        // A process NVML cannot name (another PID namespace): shown as "?".
      }
      std::cout << "  " << device.device_id() << "  pid " << process.pid << "  " << name << "  "
                << (process.used_gpu_memory
                        ? std::to_string(*process.used_gpu_memory >> 20) + " MiB"
                        : std::string("N/A"))
                << '\n';
    }
  }
  return 0;
}

}  // namespace

// A missing libnvidia-ml.so.1 skips the example (example::run).
int main() { return example::run_on_gpu("gpu_status", gpu_status); }
