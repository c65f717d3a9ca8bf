// The Device members that look devices up (current, from_pci_bus_id) and read or change
// the settings of a device's primary context (memory_info, P2P attributes, flags,
// reset). See cuwrap/device.hpp.
#include "base/compat.hpp"
#include "base/context_registry.hpp"

#include <cuwrap/context.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {

Device Device::current() {
  const CUcontext context = detail::current_context();
  if (context == nullptr) {
    throw std::logic_error(
        "Device::current: no context is current on this thread; call "
        "Device(ordinal).set_current() (or make a context current) first");
  }
  return Device(detail::device_of_context(context));
}

std::optional<Device> Device::current_if() {
  const CUcontext context = detail::current_context();
  if (context == nullptr) {
    return std::nullopt;
  }
  return Device(detail::device_of_context(context));
}

Device Device::from_pci_bus_id(std::string_view pci_bus_id) {
  if (pci_bus_id.empty() || pci_bus_id.find('\0') != std::string_view::npos) {
    throw std::invalid_argument("Device::from_pci_bus_id: pci_bus_id \"" + std::string(pci_bus_id) +
                                R"(" is no PCI bus id (e.g. "0000:3b:00.0"))");
  }
  detail::ensure_driver_initialized();
  const std::string id(pci_bus_id);
  CUdevice device = 0;
  const CUresult status = driver::raw::cuDeviceGetByPCIBusId(&device, id.c_str());
  if (status == CUDA_ERROR_INVALID_VALUE || status == CUDA_ERROR_INVALID_DEVICE ||
      status == CUDA_ERROR_NO_DEVICE) {
    throw std::invalid_argument("Device::from_pci_bus_id: pci_bus_id \"" + id +
                                "\" names no visible CUDA device");
  }
  if (status != CUDA_SUCCESS) {
    throw DriverError(status, "cuDeviceGetByPCIBusId");
  }
  return Device(detail::ordinal_of(device));
}

ContextRef Device::primary_context() const { return ContextRef(context()); }

MemoryInfo Device::memory_info() const {
  // cuMemGetInfo answers for the current context's device: keep a context of this device
  // that the caller made current (a regular or green one), else use the primary one.
  const detail::ScopedContext scope(detail::context_for_device(ordinal_));
  const auto [free, total] = driver::cuMemGetInfo();
  return {.free = free, .total = total};
}

int Device::p2p_attribute(CUdevice_P2PAttribute attribute, const Device& peer) const {
  if (peer == *this) {
    throw std::invalid_argument("Device::p2p_attribute: peer is device " +
                                std::to_string(ordinal_) +
                                " itself; P2P attributes are between two devices");
  }
  return driver::cuDeviceGetP2PAttribute(attribute, device_, peer.device_);
}

void Device::set_primary_context_flags(unsigned flags) const {
  constexpr unsigned kKnownFlags =
      CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_FLAGS_MASK;
  if ((flags & ~kKnownFlags) != 0) {
    throw std::invalid_argument("Device::set_primary_context_flags: flags " +
                                std::to_string(flags) + " has bits that are no CU_CTX_* flag");
  }
  driver::cuDevicePrimaryCtxSetFlags(device_, flags);
}

unsigned Device::primary_context_flags() const {
  return driver::cuDevicePrimaryCtxGetState(device_).flags;
}

void Device::reset() const {
  const CUcontext context = detail::primary_context(ordinal_);
  // The ID the objects made in it hold; the context's state re-created after the reset
  // has another (IDs are never reused), so they throw ContextDestroyedError.
  const unsigned long long id = detail::context_id(context);
  detail::context_synchronize(context);
  detail::run_context_destroy_hook(id);
  driver::cuDevicePrimaryCtxReset(device_);
  detail::note_context_destroyed(id);
  // The handle cuwrap retained names the destroyed context (cuCtxGetId answers
  // CUDA_ERROR_CONTEXT_IS_DESTROYED on it, driver 580): retain the new one.
  const CUcontext renewed = detail::renew_primary_context(ordinal_);
  CUcontext current = nullptr;
  if (driver::raw::cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context &&
      renewed != context) {
    driver::cuCtxSetCurrent(renewed);  // the thread had the old one current: keep it so
  }
}

}  // namespace cuwrap
