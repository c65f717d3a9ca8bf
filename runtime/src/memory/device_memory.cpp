// Device's memory: its default memory resource and Device::allocate. See
// cuwrap/device.hpp. Defined with the memory concept, which Device (execution) may not
// include.
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/memory_resource.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

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

MemoryResource& Device::memory_resource() const { return default_resources().get(*this); }

Buffer Device::allocate(std::size_t size, StreamRef stream) const {
  return memory_resource().allocate(size, stream);
}

Buffer Device::allocate(std::size_t size) const { return allocate(size, default_stream()); }

}  // namespace cuwrap
