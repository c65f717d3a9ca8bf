// SynchronousMemoryResource: cuMemAlloc / cuMemFree device memory. See
// cuwrap/synchronous_memory_resource.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/synchronous_memory_resource.hpp>

#include <stdexcept>

namespace cuwrap {
namespace {

constexpr const char* kName = "SynchronousMemoryResource";

// Sync `stream`, then cuMemFree `ptr` (also when the sync failed: that failure goes to
// the release-failure handler). cuMemFree finds the allocation's context from the
// pointer, so no context needs to be current.
void free_after_sync(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr == 0) {
    return;
  }
  try {
    stream.sync();
  } catch (const DriverError& e) {
    detail::report_release_failure(e.code(), e.function().c_str(), kName);
  }
  detail::check(driver::raw::cuMemFree(ptr), "cuMemFree");
}

void free_detached(CUdeviceptr ptr, std::size_t size, const Stream& stream) {
  free_after_sync(ptr, size, stream);
}

}  // namespace

SynchronousMemoryResource::SynchronousMemoryResource(const Device& device)
    : device_id_(device.device_id()) {
  set_detached_deallocate(&free_detached);
}

SynchronousMemoryResource::SynchronousMemoryResource(int device_id)
    : SynchronousMemoryResource(Device(device_id)) {}

Buffer SynchronousMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("SynchronousMemoryResource", "allocate");
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(device_id_);
    ptr = driver::cuMemAlloc(size);
  }
  return Buffer::adopt(ptr, size, this, stream);
}

void SynchronousMemoryResource::deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) {
  if (ptr == 0) {
    return;
  }
  // The legacy default stream (allocate(size)) is the current context's: with none
  // current, sync the one of this resource's device.
  const detail::ScopedCurrentOrPrimary scope(device_id_);
  free_after_sync(ptr, size, stream);
}

}  // namespace cuwrap
