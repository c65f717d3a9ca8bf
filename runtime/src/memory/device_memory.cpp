// Device's memory: its default memory resource and Device::allocate. See
// cuwrap/device.hpp. Defined with the memory concept, which Device (execution) may not
// include.
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "memory/stream_ordered.hpp"

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

// Device::allocate's resource while its stream captures a graph: graph memory
// (cuMemAllocAsync, an allocation node), as Device::allocate always gave there. A
// DeviceMemoryResource itself refuses a capturing stream, as cuda.core's.
class CaptureResource final : public MemoryResource {
 public:
  CaptureResource() {
    set_detached_deallocate([](CUdeviceptr ptr, std::size_t /*size*/, const Stream& stream) {
      detail::free_stream_ordered(ptr, stream);
    });
  }
  Buffer allocate(std::size_t size, StreamRef stream) override {
    return detail::allocate_stream_ordered(size, stream, this);
  }
  void deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) override {
    detail::free_stream_ordered(ptr, stream);
  }
};

DefaultResources& default_resources() {
  static auto* resources = new DefaultResources(detail::device_count());
  return *resources;
}

}  // namespace

DeviceMemoryResource& Device::memory_resource() const { return default_resources().get(*this); }

Buffer Device::allocate(std::size_t size, StreamRef stream) const {
  if (driver::cuStreamIsCapturing(stream.handle()) == CU_STREAM_CAPTURE_STATUS_ACTIVE)
      [[unlikely]] {
    static auto* capture = new CaptureResource;  // never destroyed, as the default ones
    return capture->allocate(size, stream);
  }
  return memory_resource().allocate(size, stream);
}

Buffer Device::allocate(std::size_t size) const { return allocate(size, default_stream()); }

}  // namespace cuwrap
