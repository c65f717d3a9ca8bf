// SynchronousDeviceMemoryResource: cuMemAlloc / cuMemFree. See
// cuwrap/synchronous_memory_resource.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/synchronous_memory_resource.hpp>

namespace cuwrap {
namespace {

// Wait for the buffer's stream, then free: its last uses may still be queued there.
void free_after_stream(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr == 0) {
    return;
  }
  stream.sync();
  driver::cuMemFree(ptr);
}

void free_detached(CUdeviceptr ptr, std::size_t size, const Stream& stream) {
  free_after_stream(ptr, size, stream);
}

}  // namespace

SynchronousDeviceMemoryResource::SynchronousDeviceMemoryResource(const Device& device)
    : device_id_(device.device_id()) {
  set_detached_deallocate(&free_detached);
}

Buffer SynchronousDeviceMemoryResource::do_allocate(std::size_t size, StreamRef stream) {
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(device_id_);
    ptr = driver::cuMemAlloc(size);
  }
  try {
    return Buffer::from_handle(ptr, size, this, stream);
  } catch (...) {
    if (ptr != 0) {
      detail::report_release_failure(driver::raw::cuMemFree(ptr), "cuMemFree",
                                     "SynchronousDeviceMemoryResource");
    }
    throw;
  }
}

void SynchronousDeviceMemoryResource::do_deallocate(CUdeviceptr ptr, std::size_t size,
                                                    StreamRef stream) {
  free_after_stream(ptr, size, stream);
}

}  // namespace cuwrap
