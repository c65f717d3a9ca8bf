// SynchronousMemoryResource: device memory outside memory pools (cuMemAlloc / cuMemFree),
// as cuda.core's synchronous resource, for devices or programs that do without pools.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cuda.h>

#include <cstddef>

namespace cuwrap {

/// Device memory from cuMemAlloc in a device's primary context, freed with cuMemFree.
///
/// Neither call is stream-ordered. allocate() takes a stream for the MemoryResource
/// interface only: the memory is allocated at once, before any work queued on the stream
/// (the stream is the one the buffer later frees on). deallocate() syncs the stream it is
/// given, so work on it that still uses the memory completes, then frees the memory. Use
/// it where a device has no memory pools (memory_pools_supported() is 0) or where code
/// expects memory that follows the contexts' peer access: Device::enable_peer_access
/// (cuCtxEnablePeerAccess) reaches this memory on another device directly.
///
/// A zero-byte allocation makes no driver call and gives a buffer whose handle is 0, as
/// cuda.core's does. Buffers may outlive the resource object (they free with cuMemFree).
///
/// Example:
/// \code
///   cuwrap::SynchronousMemoryResource mr(cuwrap::Device(0));
///   cuwrap::Stream stream = cuwrap::Device(0).create_stream();
///   cuwrap::Buffer buffer = mr.allocate(1 << 20, stream);  // cuMemAlloc, synchronous
/// \endcode
class SynchronousMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Allocate memory of `device` (no driver call until the first allocation).
  explicit SynchronousMemoryResource(const Device& device);
  /// Allocate memory of the device with ordinal `device_id`.
  ///
  /// Throws std::invalid_argument naming the ordinal when it is no device (negative, or
  /// not below the device count).
  explicit SynchronousMemoryResource(int device_id);

  /// Allocate `size` bytes with cuMemAlloc in the device's primary context, at once;
  /// `stream` is where the buffer later frees.
  ///
  /// Throws std::logic_error on a closed resource; DriverError naming cuMemAlloc when the
  /// driver refuses (out of memory).
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Sync `stream`, then cuMemFree (nothing for a null pointer).
  ///
  /// The free happens even when the sync fails: that failure goes to the release-failure
  /// handler. Throws DriverError when cuMemFree fails.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return the ordinal of the device the memory belongs to.
  int device_id() const override { return device_id_; }

 private:
  int device_id_ = 0;
};

}  // namespace cuwrap
