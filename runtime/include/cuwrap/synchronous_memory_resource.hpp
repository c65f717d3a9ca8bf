// SynchronousDeviceMemoryResource: device memory outside memory pools (cuMemAlloc /
// cuMemFree), as cuda.core's synchronous resource for devices or programs where pools
// are unsupported or unwanted.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>

namespace cuwrap {

/// Device memory from cuMemAlloc, in the device's primary context: no pool.
///
/// Allocation is immediate (not ordered on the stream); freeing waits for the buffer's
/// stream and then calls cuMemFree, so a Buffer can be closed like any other. Unlike
/// pool memory, this memory follows the contexts' peer access
/// (Device::enable_peer_access) alone. Buffers that outlive the resource object still
/// free their memory.
///
/// Example:
/// \code
///   cuwrap::SynchronousDeviceMemoryResource mr(cuwrap::Device(1));
///   cuwrap::Buffer halo = mr.allocate(1 << 20, stream);   // reachable by peers
/// \endcode
class SynchronousDeviceMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;
  using MemoryResource::deallocate;
  /// Allocate memory of `device`.
  explicit SynchronousDeviceMemoryResource(const Device& device);

  /// Return true: the memory is device memory.
  bool is_device_accessible() const override { return true; }
  /// Return false: the host cannot access it directly.
  bool is_host_accessible() const override { return false; }
  /// Return the ordinal of the device the memory belongs to.
  int device_id() const override { return device_id_; }

 protected:
  /// Allocate `size` bytes now (cuMemAlloc in the device's primary context); `stream`
  /// is the buffer's stream for its free.
  Buffer do_allocate(std::size_t size, StreamRef stream) override;
  /// Wait for `stream`, then free `ptr` (cuMemFree).
  void do_deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

 private:
  int device_id_;
};

}  // namespace cuwrap
