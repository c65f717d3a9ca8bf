// detail::allocate_stream_ordered and free_stream_ordered: cuMemAllocAsync and
// cuMemFreeAsync on a stream, an allocation or free node where the stream captures a
// graph. Shared by Device::allocate's capture resource and GraphMemoryResource.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <cstddef>

namespace cuwrap::detail {

/// Allocate `size` bytes with cuMemAllocAsync on `stream` (no call for 0 bytes) and return
/// them as a Buffer of `owner` that frees on `stream`.
///
/// Throws DriverError naming cuMemAllocAsync when the driver refuses.
inline Buffer allocate_stream_ordered(std::size_t size, StreamRef stream, MemoryResource* owner) {
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const CUstream handle = stream.handle();
    check_on_stream(stream, "cuMemAllocAsync",
                    [&] { return driver::raw::cuMemAllocAsync(&ptr, size, handle); });
  }
  return Buffer::adopt(ptr, size, owner, stream);
}

/// Free `ptr` with cuMemFreeAsync on `stream` (nothing for a null pointer).
///
/// Throws DriverError naming cuMemFreeAsync when the driver refuses.
inline void free_stream_ordered(CUdeviceptr ptr, StreamRef stream) {
  if (ptr != 0) {
    const CUstream handle = stream.handle();
    check_on_stream(stream, "cuMemFreeAsync",
                    [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
  }
}

}  // namespace cuwrap::detail
