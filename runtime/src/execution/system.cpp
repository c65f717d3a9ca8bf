// cuwrap::system over NVML. See cuwrap/system.hpp.
#include <cuwrap/system.hpp>
#include <cuwrap/version.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#if CUWRAP_HAS_NVML
#include <cuwrap/nvml.hpp>

#include <type_traits>
#endif

namespace cuwrap::system {

namespace {

// Every named reason, with its name: reasons() and both to_string() read this one list.
struct NamedReason {
  ClocksEventReason reason;
  const char* name;
};
constexpr NamedReason kReasons[] = {
    {ClocksEventReason::GpuIdle, "GpuIdle"},
    {ClocksEventReason::ApplicationsClocksSetting, "ApplicationsClocksSetting"},
    {ClocksEventReason::SwPowerCap, "SwPowerCap"},
    {ClocksEventReason::HwSlowdown, "HwSlowdown"},
    {ClocksEventReason::SyncBoost, "SyncBoost"},
    {ClocksEventReason::SwThermalSlowdown, "SwThermalSlowdown"},
    {ClocksEventReason::HwThermalSlowdown, "HwThermalSlowdown"},
    {ClocksEventReason::HwPowerBrakeSlowdown, "HwPowerBrakeSlowdown"},
    {ClocksEventReason::DisplayClockSetting, "DisplayClockSetting"},
};

}  // namespace

std::vector<ClocksEventReason> ClocksEventReasons::reasons() const {
  std::vector<ClocksEventReason> out;
  for (const NamedReason& named : kReasons) {
    if (contains(named.reason)) {
      out.push_back(named.reason);
    }
  }
  return out;
}

const char* to_string(ClocksEventReason reason) noexcept {
  for (const NamedReason& named : kReasons) {
    if (named.reason == reason) {
      return named.name;
    }
  }
  return "unknown";
}

std::string to_string(ClocksEventReasons reasons) {
  if (reasons.empty()) {
    return "None";
  }
  std::string text;
  std::uint64_t named = 0;
  for (const ClocksEventReason reason : reasons.reasons()) {
    text += text.empty() ? "" : "|";
    text += to_string(reason);
    named |= static_cast<std::uint64_t>(reason);
  }
  if (const std::uint64_t rest = reasons.bits() & ~named; rest != 0) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(rest));
    text += text.empty() ? "" : "|";
    text += hex;
  }
  return text;
}

int driver_version() { return cuwrap::driver_version(); }

#if CUWRAP_HAS_NVML

namespace {

// NVML counts nvmlInit calls against nvmlShutdown calls; cuwrap initialises once per
// process, at first use (a function-local static: thread-safe, and tried again after a
// failure), and never shuts down, so a program's own nvmlInit/nvmlShutdown pair is unaffected.
void initialize() {
  static const bool initialized = (nvml::nvmlInit_v2(), true);
  (void)initialized;
}

// nvmlDevice_t is the nvmlDevice_st pointer, or (NVML 13) a struct holding it.
template <class Handle = nvmlDevice_t>
Handle to_nvml(nvmlDevice_st* device) noexcept {
  if constexpr (std::is_pointer_v<Handle>) {
    return device;
  } else {
    return Handle{device};
  }
}

template <class Handle>
nvmlDevice_st* from_nvml(Handle handle) noexcept {
  if constexpr (std::is_pointer_v<Handle>) {
    return handle;
  } else {
    return handle.handle;
  }
}

// Return read(), or nothing where NVML answers NVML_ERROR_NOT_SUPPORTED (header's rule).
template <class Read>
auto if_supported(Read read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const NvmlError& e) {
    if (e.code() == NVML_ERROR_NOT_SUPPORTED) {
      return std::nullopt;
    }
    throw;
  }
}

// Return the handle of the device with the UUID `id` without prefix: a GPU ("GPU-"), or
// a MIG instance ("MIG-"), which CUDA counts as a device of its own.
nvmlDevice_st* handle_by_uuid(const std::string& id) {
  initialize();
  try {
    return from_nvml(nvml::nvmlDeviceGetHandleByUUID(("GPU-" + id).c_str()));
  } catch (const NvmlError& e) {
    if (e.code() != NVML_ERROR_NOT_FOUND) {
      throw;
    }
    nvmlDevice_t mig{};
    if (nvml::raw::nvmlDeviceGetHandleByUUID(("MIG-" + id).c_str(), &mig) == NVML_SUCCESS) {
      return from_nvml(mig);
    }
    throw;
  }
}

nvmlClockType_t nvml_clock(ClockType type) {
  switch (type) {
    case ClockType::Graphics:
      return NVML_CLOCK_GRAPHICS;
    case ClockType::Sm:
      return NVML_CLOCK_SM;
    case ClockType::Memory:
      return NVML_CLOCK_MEM;
    case ClockType::Video:
      return NVML_CLOCK_VIDEO;
  }
  throw std::invalid_argument("cuwrap::system::Device::get_clock: clock type " +
                              std::to_string(static_cast<int>(type)) + " is not a ClockType");
}

// NVML's marker for "no value" in a field (NVML_VALUE_NOT_AVAILABLE, -1 in the field's type).
template <class T>
std::optional<T> available(T value) {
  if (value == static_cast<T>(NVML_VALUE_NOT_AVAILABLE)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

Device::Device(const cuwrap::Device& device) : handle_(handle_by_uuid(device.uuid())) {}

Device::Device(unsigned int index) {
  if (const unsigned int count = num_devices(); index >= count) {
    throw std::out_of_range("cuwrap::system::Device: index " + std::to_string(index) +
                            " is out of range: NVML reports " + std::to_string(count) +
                            " device(s)");
  }
  handle_ = from_nvml(nvml::nvmlDeviceGetHandleByIndex_v2(index));
}

Device Device::from_uuid(std::string_view uuid) {
  if (uuid.starts_with("GPU-") || uuid.starts_with("MIG-")) {
    initialize();
    return Device(from_nvml(nvml::nvmlDeviceGetHandleByUUID(std::string(uuid).c_str())));
  }
  return Device(handle_by_uuid(std::string(uuid)));
}

std::vector<Device> Device::get_all_devices() {
  const unsigned int count = num_devices();
  std::vector<Device> devices;
  devices.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    devices.push_back(Device(from_nvml(nvml::nvmlDeviceGetHandleByIndex_v2(i))));
  }
  return devices;
}

nvmlDevice_t Device::handle() const noexcept { return to_nvml(handle_); }

unsigned int Device::index() const { return nvml::nvmlDeviceGetIndex(handle()); }

std::string Device::name() const { return nvml::nvmlDeviceGetName(handle()); }

std::string Device::uuid() const { return nvml::nvmlDeviceGetUUID(handle()); }

std::string Device::uuid_without_prefix() const {
  std::string id = uuid();
  if (id.starts_with("GPU-") || id.starts_with("MIG-")) {
    id.erase(0, 4);
  }
  return id;
}

cuwrap::Device Device::to_cuda_device() const {
  const std::string id = uuid_without_prefix();
  for (const cuwrap::Device& device : cuwrap::Device::all()) {
    if (device.uuid() == id) {
      return device;
    }
  }
  throw std::runtime_error("cuwrap::system::Device::to_cuda_device: CUDA has no device with UUID " +
                           uuid() + " (CUDA_VISIBLE_DEVICES hides it, or it is a GPU in MIG mode)");
}

std::optional<unsigned int> Device::temperature() const {
  return if_supported([&] {
    unsigned int celsius = 0;
    nvml::nvmlDeviceGetTemperature(handle(), NVML_TEMPERATURE_GPU, &celsius);
    return celsius;
  });
}

std::optional<unsigned int> Device::power_usage_mw() const {
  return if_supported([&] { return nvml::nvmlDeviceGetPowerUsage(handle()); });
}

std::optional<unsigned int> Device::power_limit_mw() const {
  return if_supported([&] { return nvml::nvmlDeviceGetEnforcedPowerLimit(handle()); });
}

ClockInfo Device::get_clock(ClockType type) const {
  const nvmlClockType_t clock = nvml_clock(type);
  return {if_supported([&] { return nvml::nvmlDeviceGetClockInfo(handle(), clock); }),
          if_supported([&] { return nvml::nvmlDeviceGetMaxClockInfo(handle(), clock); })};
}

std::optional<Utilization> Device::utilization() const {
  return if_supported([&] {
    const nvmlUtilization_t rates = nvml::nvmlDeviceGetUtilizationRates(handle());
    return Utilization{rates.gpu, rates.memory};
  });
}

std::optional<MemoryInfo> Device::memory_info() const {
  return if_supported([&] {
    const nvmlMemory_t memory = nvml::nvmlDeviceGetMemoryInfo(handle());
    return MemoryInfo{memory.total, memory.free, memory.used};
  });
}

PciInfo Device::pci_info() const {
  const nvmlDevice_t device = handle();
  PciInfo info;
  info.bus_id = if_supported([&] {
                  const nvmlPciInfo_t pci = nvml::nvmlDeviceGetPciInfo_v3(device);
                  return std::string(pci.busId);
                }).value_or("");
  info.current_link_generation =
      if_supported([&] { return nvml::nvmlDeviceGetCurrPcieLinkGeneration(device); });
  info.current_link_width =
      if_supported([&] { return nvml::nvmlDeviceGetCurrPcieLinkWidth(device); });
  info.link_generation =
      if_supported([&] { return nvml::nvmlDeviceGetMaxPcieLinkGeneration(device); });
  info.max_link_generation =
      if_supported([&] { return nvml::nvmlDeviceGetGpuMaxPcieLinkGeneration(device); });
  info.max_link_width = if_supported([&] { return nvml::nvmlDeviceGetMaxPcieLinkWidth(device); });
  return info;
}

std::optional<PendingMode> Device::ecc_mode() const {
  return if_supported([&] {
    const nvml::nvmlDeviceGetEccMode_result ecc = nvml::nvmlDeviceGetEccMode(handle());
    return PendingMode{ecc.current == NVML_FEATURE_ENABLED, ecc.pending == NVML_FEATURE_ENABLED};
  });
}

std::optional<ClocksEventReasons> Device::current_clock_event_reasons() const {
  return if_supported(
      [&] { return ClocksEventReasons(nvml::nvmlDeviceGetCurrentClocksEventReasons(handle())); });
}

std::optional<ClocksEventReasons> Device::supported_clock_event_reasons() const {
  return if_supported(
      [&] { return ClocksEventReasons(nvml::nvmlDeviceGetSupportedClocksEventReasons(handle())); });
}

std::optional<std::vector<ProcessInfo>> Device::compute_running_processes() const {
  return if_supported([&] {
    std::vector<ProcessInfo> processes;
    for (const nvmlProcessInfo_t& p : nvml::nvmlDeviceGetComputeRunningProcesses_v3(handle())) {
      processes.push_back({p.pid, available(p.usedGpuMemory), available(p.gpuInstanceId),
                           available(p.computeInstanceId)});
    }
    return processes;
  });
}

std::optional<PendingMode> Device::mig_mode() const {
  return if_supported([&] {
    const nvml::nvmlDeviceGetMigMode_result mig = nvml::nvmlDeviceGetMigMode(handle());
    return PendingMode{mig.currentMode == NVML_DEVICE_MIG_ENABLE,
                       mig.pendingMode == NVML_DEVICE_MIG_ENABLE};
  });
}

std::optional<bool> Device::nvlink_state(unsigned int link) const {
  if (link >= kMaxNvlinks) {
    throw std::invalid_argument("cuwrap::system::Device::nvlink_state: link " +
                                std::to_string(link) + " is not below kMaxNvlinks (" +
                                std::to_string(kMaxNvlinks) + ")");
  }
  return if_supported(
      [&] { return nvml::nvmlDeviceGetNvLinkState(handle(), link) == NVML_FEATURE_ENABLED; });
}

std::vector<NvlinkState> Device::nvlink_states() const {
  std::vector<NvlinkState> states;
  for (unsigned int link = 0; link < kMaxNvlinks; ++link) {
    try {
      states.push_back(
          {link, nvml::nvmlDeviceGetNvLinkState(handle(), link) == NVML_FEATURE_ENABLED});
    } catch (const NvmlError& e) {
      // No such link on this device: NVML says "not supported" or "invalid argument".
      if (e.code() != NVML_ERROR_NOT_SUPPORTED && e.code() != NVML_ERROR_INVALID_ARGUMENT) {
        throw;
      }
    }
  }
  return states;
}

std::string nvml_version() {
  initialize();
  return nvml::nvmlSystemGetNVMLVersion();
}

std::string driver_version_string() {
  initialize();
  return nvml::nvmlSystemGetDriverVersion();
}

unsigned int num_devices() {
  initialize();
  return nvml::nvmlDeviceGetCount_v2();
}

std::string process_name(unsigned int pid) {
  initialize();
  return nvml::nvmlSystemGetProcessName(pid);
}

#else  // !CUWRAP_HAS_NVML

namespace {

[[noreturn]] void throw_no_nvml(const char* feature) {
  throw UnsupportedError(feature,
                         "the NVML bindings, which this build of cuwrap lacks (no nvml.h at "
                         "configure time; configure with -DCUWRAP_EXTRA_HEADERS_DIR=<directory "
                         "with nvml.h>: docs/nvml.md)");
}

}  // namespace

Device::Device(const cuwrap::Device& /*device*/) { throw_no_nvml("cuwrap::system::Device"); }
Device::Device(unsigned int /*index*/) { throw_no_nvml("cuwrap::system::Device"); }
Device Device::from_uuid(std::string_view /*uuid*/) {
  throw_no_nvml("cuwrap::system::Device::from_uuid");
}
std::vector<Device> Device::get_all_devices() {
  throw_no_nvml("cuwrap::system::Device::get_all_devices");
}

// No Device can be made without NVML: its readings are never reached.
unsigned int Device::index() const { throw_no_nvml("cuwrap::system::Device"); }
std::string Device::name() const { throw_no_nvml("cuwrap::system::Device"); }
std::string Device::uuid() const { throw_no_nvml("cuwrap::system::Device"); }
std::string Device::uuid_without_prefix() const { throw_no_nvml("cuwrap::system::Device"); }
cuwrap::Device Device::to_cuda_device() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<unsigned int> Device::temperature() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<unsigned int> Device::power_usage_mw() const {
  throw_no_nvml("cuwrap::system::Device");
}
std::optional<unsigned int> Device::power_limit_mw() const {
  throw_no_nvml("cuwrap::system::Device");
}
ClockInfo Device::get_clock(ClockType /*type*/) const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<Utilization> Device::utilization() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<MemoryInfo> Device::memory_info() const { throw_no_nvml("cuwrap::system::Device"); }
PciInfo Device::pci_info() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<PendingMode> Device::ecc_mode() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<ClocksEventReasons> Device::current_clock_event_reasons() const {
  throw_no_nvml("cuwrap::system::Device");
}
std::optional<ClocksEventReasons> Device::supported_clock_event_reasons() const {
  throw_no_nvml("cuwrap::system::Device");
}
std::optional<std::vector<ProcessInfo>> Device::compute_running_processes() const {
  throw_no_nvml("cuwrap::system::Device");
}
std::optional<PendingMode> Device::mig_mode() const { throw_no_nvml("cuwrap::system::Device"); }
std::optional<bool> Device::nvlink_state(unsigned int /*link*/) const {
  throw_no_nvml("cuwrap::system::Device");
}
std::vector<NvlinkState> Device::nvlink_states() const { throw_no_nvml("cuwrap::system::Device"); }

std::string nvml_version() { throw_no_nvml("cuwrap::system::nvml_version"); }
std::string driver_version_string() { throw_no_nvml("cuwrap::system::driver_version_string"); }
unsigned int num_devices() { throw_no_nvml("cuwrap::system::num_devices"); }
std::string process_name(unsigned int /*pid*/) { throw_no_nvml("cuwrap::system::process_name"); }

#endif  // CUWRAP_HAS_NVML

}  // namespace cuwrap::system
