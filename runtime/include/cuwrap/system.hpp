// cuwrap::system: the machine's GPUs as NVML sees them (cuda.core's `system` module):
// driver and NVML versions, and per device its name, temperature, power, clocks,
// utilization, memory, PCIe link, ECC, clock event reasons, processes, MIG and NVLink.
//
// NVML is bound where nvml.h is found at configure time (CUWRAP_HAS_NVML: docs/nvml.md).
// This header is the same either way; without the bindings, driver_version() still works
// and everything that needs NVML throws UnsupportedError saying how to bind it.
#pragma once

#include <cuwrap/device.hpp>
#include <cuwrap/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// NVML's device handle points to this type in every nvml.h (nvmlDevice_t is the pointer,
// or since NVML 13 a struct holding it); naming it needs no nvml.h.
struct nvmlDevice_st;

namespace cuwrap::system {

/// A clock domain of a device (cuda.core's `system.ClockType`).
enum class ClockType {
  Graphics,  ///< NVML_CLOCK_GRAPHICS: the graphics clock
  Sm,        ///< NVML_CLOCK_SM: the streaming multiprocessors' clock
  Memory,    ///< NVML_CLOCK_MEM: the memory clock
  Video,     ///< NVML_CLOCK_VIDEO: the video encoder/decoder clock
};

/// Why a device's clocks are below their maximum (cuda.core's `ClocksEventReasons`; one
/// bit of nvml.h's `nvmlClocksEventReason*`, formerly "clock throttle reasons").
enum class ClocksEventReason : std::uint64_t {
  GpuIdle = 0x1,                    ///< nothing runs on the GPU
  ApplicationsClocksSetting = 0x2,  ///< the application clocks setting limits them
  SwPowerCap = 0x4,                 ///< the software power cap (the power limit)
  HwSlowdown = 0x8,                 ///< hardware slowdown (thermal, power brake, ...)
  SyncBoost = 0x10,                 ///< in a sync-boost group with another GPU
  SwThermalSlowdown = 0x20,         ///< software thermal slowdown
  HwThermalSlowdown = 0x40,         ///< hardware thermal slowdown
  HwPowerBrakeSlowdown = 0x80,      ///< hardware power brake slowdown
  DisplayClockSetting = 0x100,      ///< the display clock setting
};

/// A set of ClocksEventReason: NVML's bitmask, typed.
class ClocksEventReasons {
 public:
  /// Make the empty set (the clocks are not held back).
  constexpr ClocksEventReasons() noexcept = default;
  /// Make the set of NVML's bitmask `bits` (bits cuwrap has no name for are kept).
  constexpr explicit ClocksEventReasons(std::uint64_t bits) noexcept : bits_(bits) {}
  /// Return whether `reason` is in the set.
  constexpr bool contains(ClocksEventReason reason) const noexcept {
    return (bits_ & static_cast<std::uint64_t>(reason)) != 0;
  }
  /// Return whether the set is empty (NVML's nvmlClocksEventReasonNone).
  constexpr bool empty() const noexcept { return bits_ == 0; }
  /// Return NVML's bitmask.
  constexpr std::uint64_t bits() const noexcept { return bits_; }
  /// Return the named reasons in the set, lowest bit first.
  std::vector<ClocksEventReason> reasons() const;
  /// Return the set with `reason` added.
  friend constexpr ClocksEventReasons operator|(ClocksEventReasons set,
                                                ClocksEventReason reason) noexcept {
    return ClocksEventReasons(set.bits_ | static_cast<std::uint64_t>(reason));
  }
  /// Compare the bitmasks.
  friend constexpr bool operator==(ClocksEventReasons, ClocksEventReasons) noexcept = default;

 private:
  std::uint64_t bits_ = 0;
};

/// Return the reason's name, e.g. "SwPowerCap".
const char* to_string(ClocksEventReason reason) noexcept;
/// Return the set's names joined by '|' ("GpuIdle|SwPowerCap"), "None" when empty; bits
/// without a name show as one hexadecimal number ("0x200").
std::string to_string(ClocksEventReasons reasons);

/// A clock domain's speeds in MHz; each is empty where NVML does not support it.
struct ClockInfo {
  std::optional<unsigned int> current_mhz;  ///< nvmlDeviceGetClockInfo
  std::optional<unsigned int> max_mhz;      ///< nvmlDeviceGetMaxClockInfo
};

/// Utilization over NVML's last sample period, in percent (cuda.core's `Utilization`).
struct Utilization {
  unsigned int gpu = 0;     ///< time one or more kernels ran
  unsigned int memory = 0;  ///< time device memory was read or written
};

/// Device memory in bytes, as nvmlDeviceGetMemoryInfo reports it (cuda.core's `MemoryInfo`).
struct MemoryInfo {
  unsigned long long total = 0;  ///< physical device memory
  unsigned long long free = 0;   ///< unallocated
  unsigned long long used = 0;   ///< reserved and allocated
};

/// The PCIe link (cuda.core's `PciInfo` names); each figure is empty where NVML does not
/// support it (a MIG or virtual device).
struct PciInfo {
  std::string bus_id;                                   ///< "domain:bus:device.function"
  std::optional<unsigned int> current_link_generation;  ///< the link's generation now
  std::optional<unsigned int> current_link_width;       ///< lanes now
  std::optional<unsigned int> link_generation;      ///< the most this GPU in this system can use
  std::optional<unsigned int> max_link_generation;  ///< the most the GPU itself supports
  std::optional<unsigned int> max_link_width;       ///< the most lanes in this system
};

/// A mode that applies after the next reset: what it is now and what it will be (ECC, MIG).
struct PendingMode {
  bool current = false;  ///< enabled now
  bool pending = false;  ///< enabled after the next reset
  /// Compare both.
  friend constexpr bool operator==(const PendingMode&, const PendingMode&) = default;
};

/// A process with a compute context on a device (cuda.core's `ProcessInfo`).
struct ProcessInfo {
  unsigned int pid = 0;  ///< the process's ID
  /// The device memory it uses in bytes; empty where NVML cannot tell (Windows WDDM).
  std::optional<unsigned long long> used_gpu_memory;
  /// Its GPU instance and compute instance on a MIG device; empty otherwise.
  std::optional<unsigned int> gpu_instance_id;
  std::optional<unsigned int> compute_instance_id;  ///< see gpu_instance_id
};

/// One NVLink link's state.
struct NvlinkState {
  unsigned int link = 0;  ///< the link's index, below Device::kMaxNvlinks
  bool active = false;    ///< whether the link is up
};

/// A GPU as NVML sees it (cuda.core's `system.Device`): a cheap copyable value holding
/// NVML's device handle, which needs no release.
///
/// A reading NVML answers with NVML_ERROR_NOT_SUPPORTED (the device has no such sensor
/// or mode, as nvidia-smi's "N/A") is an empty std::optional; any other failure throws
/// NvmlError. The first system::Device (or any NVML call of this header) initialises NVML
/// once per process (nvmlInit_v2, thread-safe); cuwrap never shuts it down.
///
/// Throws UnsupportedError from every constructor where cuwrap was built without the NVML
/// bindings, LoadError where libnvidia-ml.so.1 cannot be loaded.
///
/// Example:
/// \code
///   for (const cuwrap::Device& gpu : cuwrap::Device::all()) {
///     cuwrap::system::Device nvml(gpu);  // matched by UUID
///     if (auto t = nvml.temperature()) { std::cout << nvml.name() << ": " << *t << " C\n"; }
///   }
/// \endcode
class Device {
 public:
  /// The most NVLink links NVML reports for a device (NVML_NVLINK_MAX_LINKS of NVML 13.0).
  static constexpr unsigned int kMaxNvlinks = 18;

  /// Find the NVML device of the CUDA device `device` by its UUID, so that the match
  /// holds whatever order CUDA_VISIBLE_DEVICES gives the CUDA devices.
  explicit Device(const cuwrap::Device& device);
  /// Find the NVML device with NVML index `index` (NVML's order, not CUDA's).
  explicit Device(unsigned int index);
  /// Find the NVML device with UUID `uuid`, with or without NVML's "GPU-" prefix.
  static Device from_uuid(std::string_view uuid);
  /// Return every device NVML reports, in NVML's order.
  static std::vector<Device> get_all_devices();

  /// Return the device's NVML index.
  unsigned int index() const;
  /// Return the product name, e.g. "NVIDIA H100 80GB HBM3".
  std::string name() const;
  /// Return NVML's UUID, with its prefix: "GPU-" and 8-4-4-4-12 hex digits.
  std::string uuid() const;
  /// Return the UUID without the prefix: cuwrap::Device::uuid()'s form.
  std::string uuid_without_prefix() const;
  /// Return the CUDA device with this device's UUID.
  ///
  /// Throws std::runtime_error when CUDA has none (a device CUDA_VISIBLE_DEVICES hides,
  /// or a GPU in MIG mode, whose CUDA devices are its MIG instances).
  cuwrap::Device to_cuda_device() const;

  /// Return the GPU's temperature in degrees Celsius.
  std::optional<unsigned int> temperature() const;
  /// Return the power the board draws now, in milliwatts (NVML's unit).
  std::optional<unsigned int> power_usage_mw() const;
  /// Return the power limit in force, in milliwatts (nvmlDeviceGetEnforcedPowerLimit).
  std::optional<unsigned int> power_limit_mw() const;
  /// Return the current and maximum speed of the clock domain `type`.
  ClockInfo get_clock(ClockType type) const;
  /// Return the GPU and memory utilization.
  std::optional<Utilization> utilization() const;
  /// Return the device memory's total, free and used bytes.
  std::optional<MemoryInfo> memory_info() const;
  /// Return the PCI bus ID and the PCIe link's generation and width.
  PciInfo pci_info() const;
  /// Return whether ECC is on now and after the next reset.
  std::optional<PendingMode> ecc_mode() const;
  /// Return why the clocks are held back now.
  std::optional<ClocksEventReasons> current_clock_event_reasons() const;
  /// Return the reasons current_clock_event_reasons() can report on this device.
  std::optional<ClocksEventReasons> supported_clock_event_reasons() const;
  /// Return the processes with a compute context on the device (nvidia-smi's list).
  std::optional<std::vector<ProcessInfo>> compute_running_processes() const;
  /// Return whether MIG mode is on now and after the next reset.
  std::optional<PendingMode> mig_mode() const;
  /// Return whether NVLink link `link` is active.
  ///
  /// Throws std::invalid_argument naming `link` when it is not below kMaxNvlinks.
  std::optional<bool> nvlink_state(unsigned int link) const;
  /// Return the state of every link NVML reports for the device (none without NVLink).
  std::vector<NvlinkState> nvlink_states() const;

#if CUWRAP_HAS_NVML
  /// Return NVML's handle, for the calls of <cuwrap/nvml.hpp> this class has no name for.
  nvmlDevice_t handle() const noexcept;
#endif

  /// Compare the NVML handles (the same handle is the same device).
  friend bool operator==(const Device&, const Device&) noexcept = default;

 private:
  explicit Device(nvmlDevice_st* handle) noexcept : handle_(handle) {}

  nvmlDevice_st* handle_ = nullptr;
};

/// Return the installed driver's CUDA version, e.g. 13000 (cuwrap::driver_version(),
/// cuda.core's `get_driver_version()` as one number); needs no NVML.
int driver_version();

/// Return NVML's version, e.g. "13.580.65.06" (cuda.core's `get_nvml_version()`).
std::string nvml_version();

/// Return the kernel-mode driver's version as NVML reports it, e.g. "580.65.06"
/// (cuda.core's `get_driver_version(kernel_mode=True)`).
std::string driver_version_string();

/// Return how many devices NVML reports (cuda.core's `get_num_devices()`): every GPU of
/// the machine, also those CUDA_VISIBLE_DEVICES hides from CUDA.
unsigned int num_devices();

/// Return the name of the process `pid` (cuda.core's `get_process_name()`), e.g. for the
/// processes of Device::compute_running_processes().
std::string process_name(unsigned int pid);

}  // namespace cuwrap::system
