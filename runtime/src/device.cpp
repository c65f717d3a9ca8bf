// Device and DeviceProperties. See cuwrap/device.hpp.
#include "compat.hpp"

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>

namespace cuwrap {
namespace {

// The per-device DeviceMemoryResource behind Device::memory_resource(). Created on
// first use and deliberately never destroyed: buffers may be freed during static
// destruction, and the default pool it wraps lives as long as the process anyway.
class DefaultResources {
 public:
  explicit DefaultResources(int count)
      : resources_(std::make_unique<std::atomic<DeviceMemoryResource*>[]>(
            static_cast<std::size_t>(count > 0 ? count : 1))) {}

  DeviceMemoryResource& get(const Device& device) {
    std::atomic<DeviceMemoryResource*>& slot =
        resources_[static_cast<std::size_t>(device.device_id())];
    DeviceMemoryResource* mr = slot.load(std::memory_order_acquire);
    if (mr != nullptr) [[likely]] {
      return *mr;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    mr = slot.load(std::memory_order_relaxed);
    if (mr == nullptr) {
      mr = new DeviceMemoryResource(device);  // NOLINT(cppcoreguidelines-owning-memory)
      slot.store(mr, std::memory_order_release);
    }
    return *mr;
  }

 private:
  std::unique_ptr<std::atomic<DeviceMemoryResource*>[]> resources_;
  std::mutex mutex_;
};

DefaultResources& default_resources() {
  static auto* resources = new DefaultResources(detail::device_count());
  return *resources;
}

}  // namespace

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

void Device::sync() const {
  detail::context_synchronize(detail::primary_context(ordinal_));
}

Stream Device::create_stream(const StreamOptions& options) const { return Stream(*this, options); }

Event Device::create_event(const EventOptions& options) const { return Event(*this, options); }

MemoryResource& Device::memory_resource() const { return default_resources().get(*this); }

Buffer Device::allocate(std::size_t size, StreamRef stream) const {
  return memory_resource().allocate(size, stream);
}

Buffer Device::allocate(std::size_t size) const { return allocate(size, default_stream()); }

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
  // nvidia-smi's layout: GPU-8-4-4-4-12 lowercase hex digits.
  std::string text = "GPU-";
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
