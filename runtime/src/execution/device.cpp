// Device and DeviceProperties. See cuwrap/device.hpp.
#include "base/compat.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>

#include <cstdio>
#include <ostream>

namespace cuwrap {

std::ostream& operator<<(std::ostream& os, const ComputeCapability& cc) {
  return os << cc.major << '.' << cc.minor;
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  detail::check_device_ordinal(ordinal);
  device_ = driver::cuDeviceGet(ordinal);
}

int Device::count() { return detail::device_count(); }

std::vector<Device> Device::all() {
  const int n = count();
  std::vector<Device> devices;
  devices.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    devices.emplace_back(i);
  }
  return devices;
}

void Device::set_current() const { driver::cuCtxSetCurrent(detail::primary_context(ordinal_)); }

void Device::sync() const { detail::context_synchronize(detail::primary_context(ordinal_)); }

Stream Device::create_stream(const StreamOptions& options) const { return Stream(*this, options); }

Event Device::create_event(const EventOptions& options) const { return Event(*this, options); }

bool Device::can_access_peer(const Device& peer) const {
  if (peer == *this) {
    return true;
  }
  return driver::cuDeviceCanAccessPeer(device_, peer.device_) != 0;
}

std::string Device::name() const { return driver::cuDeviceGetName(device_); }

ComputeCapability Device::compute_capability() const {
  return {attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
          attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)};
}

std::string Device::arch() const {
  const ComputeCapability cc = compute_capability();
  return std::to_string(cc.major * 10 + cc.minor);
}

std::string Device::pci_bus_id() const { return driver::cuDeviceGetPCIBusId(device_); }

std::string Device::uuid() const {
  const CUuuid id = driver::cuDeviceGetUuid(device_);
  // cuda.core's layout: 8-4-4-4-12 lowercase hex digits (nvidia-smi adds "GPU-").
  std::string text;
  char digits[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      text += '-';
    }
    std::snprintf(digits, sizeof digits, "%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(id.bytes[i])));
    text += digits;
  }
  return text;
}

int Device::attribute(CUdevice_attribute attribute) const {
  return driver::cuDeviceGetAttribute(attribute, device_);
}

DeviceProperties Device::properties() const { return DeviceProperties(*this); }

CUcontext Device::context() const { return detail::primary_context(ordinal_); }

std::ostream& operator<<(std::ostream& os, const Device& device) {
  return os << "<Device " << device.device_id() << " (" << device.name() << ")>";
}

std::ostream& operator<<(std::ostream& os, const std::vector<Device>& devices) {
  os << '[';
  const char* separator = "";
  for (const Device& device : devices) {
    os << separator << device;
    separator = ", ";
  }
  return os << ']';
}

int DeviceProperties::get(CUdevice_attribute attribute) const {
  return driver::cuDeviceGetAttribute(attribute, device_);
}

}  // namespace cuwrap
