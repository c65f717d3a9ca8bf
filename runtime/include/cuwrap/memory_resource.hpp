// Memory resources: where Buffers come from (cuda.core's MemoryResource family).
//
// DeviceMemoryResource   device memory from a stream-ordered pool (cuMemAllocFromPoolAsync)
// PinnedMemoryResource   page-locked host memory from a host memory pool (CUDA 13 drivers),
//                        else cuMemHostAlloc
// LegacyPinnedMemoryResource  page-locked host memory from cuMemAllocHost
// ManagedMemoryResource  unified memory from cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL)
//
// A Buffer keeps a plain pointer to its resource: a resource must outlive the buffers
// it allocated. Device::memory_resource() lives until the process exits.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace cuwrap {

class Stream;

/// The interface of every memory resource: allocate and free buffers, ordered on streams.
///
/// Implement allocate() with Buffer::from_handle(ptr, size, this[, stream]) so the
/// buffer frees itself through deallocate().
class MemoryResource {
 public:
  /// Allocate `size` bytes, ordered on `stream`.
  virtual Buffer allocate(std::size_t size, const Stream& stream) = 0;
  /// Free `ptr` (of `size` bytes) from this resource, ordered on `stream`.
  virtual void deallocate(CUdeviceptr ptr, std::size_t size, const Stream& stream) = 0;
  /// Return whether the GPU can access the memory.
  virtual bool is_device_accessible() const = 0;
  /// Return whether the host can access the memory.
  virtual bool is_host_accessible() const = 0;
  /// Return the ordinal of the device the memory belongs to, or -1 when it is not tied
  /// to one device (host memory; the default).
  virtual int device_id() const { return -1; }
  virtual ~MemoryResource() = default;
};

/// Options of a DeviceMemoryResource.
struct DeviceMemoryResourceOptions {
  /// Create a pool of its own (cuMemPoolCreate) instead of using the device's default
  /// pool. Also implied by max_size != 0 or ipc_enabled.
  bool create_pool = false;
  /// Own pool only: the most bytes the pool may reserve (0: no limit beyond the device).
  std::size_t max_size = 0;
  /// Bytes of free memory the pool keeps reserved across synchronisations
  /// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD). Unset: everything for an own pool; for the
  /// default pool a threshold of 0 is raised to everything, as cuda.core does.
  std::optional<std::uint64_t> release_threshold = std::nullopt;
  /// Own pool only: allow exporting the pool as a POSIX file descriptor.
  bool ipc_enabled = false;
};

/// Device memory from a stream-ordered memory pool of one device.
///
/// allocate() is cuMemAllocFromPoolAsync and deallocate() cuMemFreeAsync, on the given
/// stream. Not copyable or movable: buffers point to it.
class DeviceMemoryResource : public MemoryResource {
 public:
  /// Use `device`'s default memory pool, or a new pool as `options` ask.
  ///
  /// Throws DriverError when the device does not support memory pools.
  explicit DeviceMemoryResource(const Device& device,
                                const DeviceMemoryResourceOptions& options = {});
  /// Use `device`'s memory pool: the default pool.
  explicit DeviceMemoryResource(int device_id) : DeviceMemoryResource(Device(device_id)) {}
  DeviceMemoryResource(const DeviceMemoryResource&) = delete;
  DeviceMemoryResource& operator=(const DeviceMemoryResource&) = delete;
  /// Destroy the pool if this resource created it (never throws).
  ~DeviceMemoryResource() override;

  /// Allocate `size` bytes from the pool, ordered on `stream`.
  Buffer allocate(std::size_t size, const Stream& stream) override;
  /// Return `ptr` to the pool, ordered on `stream` (cuMemFreeAsync).
  void deallocate(CUdeviceptr ptr, std::size_t size, const Stream& stream) override;
  /// Return true.
  bool is_device_accessible() const override { return true; }
  /// Return false.
  bool is_host_accessible() const override { return false; }
  /// Return the device the pool belongs to.
  int device_id() const override { return device_id_; }

  /// Return the pool handle.
  CUmemoryPool handle() const noexcept { return pool_; }
  /// Return whether this resource created (and owns) its pool.
  bool is_own_pool() const noexcept { return owns_pool_; }

 private:
  CUmemoryPool pool_ = nullptr;
  int device_id_ = 0;
  bool owns_pool_ = false;
};

/// Page-locked host memory, accessible from the host and every device.
///
/// Uses a pinned host memory pool (stream-ordered, CU_MEM_LOCATION_TYPE_HOST) where the
/// driver supports one (CUDA 13), else cuMemHostAlloc (portable, device-mapped) and a
/// stream synchronisation before each free. Memory from the pool is ready once the
/// allocation stream reaches it: sync the stream before touching it from the host.
class PinnedMemoryResource : public MemoryResource {
 public:
  /// Create the resource (and its pool, when the driver supports host pools).
  PinnedMemoryResource();
  PinnedMemoryResource(const PinnedMemoryResource&) = delete;
  PinnedMemoryResource& operator=(const PinnedMemoryResource&) = delete;
  /// Destroy the pool (never throws).
  ~PinnedMemoryResource() override;

  /// Allocate `size` bytes of page-locked memory, ordered on `stream`.
  Buffer allocate(std::size_t size, const Stream& stream) override;
  /// Free `ptr`, ordered on `stream` (pool), or after syncing `stream` (fallback).
  void deallocate(CUdeviceptr ptr, std::size_t size, const Stream& stream) override;
  /// Return true.
  bool is_device_accessible() const override { return true; }
  /// Return true.
  bool is_host_accessible() const override { return true; }

  /// Return whether allocations come from a host memory pool (else cuMemHostAlloc).
  bool uses_pool() const noexcept { return pool_ != nullptr; }
  /// Return the host pool (nullptr when the fallback is used).
  CUmemoryPool handle() const noexcept { return pool_; }

 private:
  CUmemoryPool pool_ = nullptr;
};

/// Page-locked host memory from cuMemAllocHost / cuMemFreeHost.
///
/// Allocation is synchronous; deallocate() syncs the stream first, so work on it that
/// still uses the memory completes before the memory goes away.
class LegacyPinnedMemoryResource : public MemoryResource {
 public:
  LegacyPinnedMemoryResource() = default;

  /// Allocate `size` bytes with cuMemAllocHost (in the stream's context).
  Buffer allocate(std::size_t size, const Stream& stream) override;
  /// Sync `stream`, then cuMemFreeHost.
  void deallocate(CUdeviceptr ptr, std::size_t size, const Stream& stream) override;
  /// Return true.
  bool is_device_accessible() const override { return true; }
  /// Return true.
  bool is_host_accessible() const override { return true; }
};

/// Unified (managed) memory from cuMemAllocManaged with CU_MEM_ATTACH_GLOBAL.
///
/// Allocation is synchronous; deallocate() syncs the stream, then cuMemFree.
class ManagedMemoryResource : public MemoryResource {
 public:
  ManagedMemoryResource() = default;

  /// Allocate `size` bytes of managed memory (in the stream's context).
  Buffer allocate(std::size_t size, const Stream& stream) override;
  /// Sync `stream`, then cuMemFree.
  void deallocate(CUdeviceptr ptr, std::size_t size, const Stream& stream) override;
  /// Return true.
  bool is_device_accessible() const override { return true; }
  /// Return true.
  bool is_host_accessible() const override { return true; }
};

}  // namespace cuwrap
