// VirtualMemoryResource: memory from the CUDA virtual memory management API
// (cuMemCreate / cuMemAddressReserve / cuMemMap / cuMemSetAccess), whose buffers can
// grow in place (cuda.core's _memory/_virtual_memory_resource).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuwrap {

/// What kind of physical memory cuMemCreate makes.
enum class VirtualMemoryAllocationType {
  Pinned,   ///< CU_MEM_ALLOCATION_TYPE_PINNED
  Managed,  ///< CU_MEM_ALLOCATION_TYPE_MANAGED (CUDA 13 toolkits and drivers)
};

/// Where the physical memory lives.
enum class VirtualMemoryLocationType {
  Device,           ///< the resource's device
  Host,             ///< host memory
  HostNuma,         ///< host memory on NUMA node VirtualMemoryResourceOptions::numa_id
  HostNumaCurrent,  ///< host memory on the calling thread's NUMA node
};

/// Which shareable handle the physical memory can be exported as.
enum class VirtualMemoryHandleType {
  None,     ///< not exportable
  PosixFd,  ///< a POSIX file descriptor (Linux)
  Fabric,   ///< a fabric handle (multi-node NVLink)
};

/// Which allocation granularity sizes are rounded to.
enum class VirtualMemoryGranularity {
  Minimum,      ///< CU_MEM_ALLOC_GRANULARITY_MINIMUM
  Recommended,  ///< CU_MEM_ALLOC_GRANULARITY_RECOMMENDED (faster)
};

/// Access a device gets to the mapped memory.
enum class VirtualMemoryAccess {
  None,       ///< no access granted
  Read,       ///< read-only
  ReadWrite,  ///< read and write
};

/// Options of a VirtualMemoryResource, as cuda.core's VirtualMemoryResourceOptions.
struct VirtualMemoryResourceOptions {
  /// The kind of physical memory.
  VirtualMemoryAllocationType allocation_type = VirtualMemoryAllocationType::Pinned;
  /// Where the physical memory lives.
  VirtualMemoryLocationType location_type = VirtualMemoryLocationType::Device;
  /// The handle type the memory can be exported as (cuda.core's default: POSIX fd).
  VirtualMemoryHandleType handle_type = VirtualMemoryHandleType::PosixFd;
  /// The granularity sizes and addresses are rounded to.
  VirtualMemoryGranularity granularity = VirtualMemoryGranularity::Recommended;
  /// Ask for memory usable with GPUDirect RDMA.
  bool gpu_direct_rdma = false;
  /// An address to try to reserve at (0: the driver chooses).
  CUdeviceptr addr_hint = 0;
  /// The alignment of reservations (0: the granularity).
  std::size_t addr_align = 0;
  /// Other devices (ordinals) granted `peer_access` besides the resource's device.
  std::vector<int> peers{};
  /// The access of the resource's device.
  VirtualMemoryAccess self_access = VirtualMemoryAccess::ReadWrite;
  /// The access of `peers`.
  VirtualMemoryAccess peer_access = VirtualMemoryAccess::ReadWrite;
  /// The host NUMA node, for VirtualMemoryLocationType::HostNuma.
  int numa_id = 0;
};

/// One buffer of a VirtualMemoryResource as another process imports it
/// (VirtualMemoryResource::export_buffer, import_buffer): its physical allocation as a
/// POSIX file descriptor and its size. Send the handle with IPCChannel::send and the
/// size as a value.
struct IPCVirtualBuffer {
  IPCAllocationHandle handle;  ///< the physical allocation (owns its file descriptor)
  std::uint64_t size = 0;      ///< the buffer's size in bytes (a multiple of the granularity)
};

/// Memory reserved, created and mapped with the virtual memory management API.
///
/// Each buffer is one address reservation mapped to physical allocations of a size
/// rounded up to the granularity. modify_allocation() grows a buffer in place: new
/// physical memory is mapped right after the old one (reserving the address range
/// that follows), or, where that range is taken, the old physical memory is remapped
/// at the start of a new, larger reservation; the contents are never copied.
/// Allocation and free are synchronous (deallocate() syncs the stream first).
/// Not copyable or movable: buffers point to it; it must outlive them.
///
/// Example:
/// \code
///   cuwrap::VirtualMemoryResource vmm(dev);
///   cuwrap::Buffer buf = vmm.allocate(1 << 20, stream);
///   vmm.modify_allocation(buf, 64 << 20);   // same contents, 64 MiB now
/// \endcode
class VirtualMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Create the resource for `device`.
  ///
  /// Throws UnsupportedError when the device lacks virtual memory management (or
  /// GPUDirect RDMA when asked for), or the toolkit lacks managed allocations;
  /// std::invalid_argument for a peer that is not a device ordinal.
  explicit VirtualMemoryResource(Device device, const VirtualMemoryResourceOptions& options = {});
  VirtualMemoryResource(const VirtualMemoryResource&) = delete;
  VirtualMemoryResource& operator=(const VirtualMemoryResource&) = delete;
  /// Release every allocation still held (never throws).
  ~VirtualMemoryResource() override;

  /// Reserve, create and map `size` bytes rounded up to granularity().
  ///
  /// The buffer's size() is the rounded size, as in cuda.core (so two buffers of 1024
  /// and 4096 bytes asked for are one granule each, and copy into each other); a `size`
  /// of 0 gives an empty buffer.
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Sync `stream`, then unmap, release and free what `ptr`'s allocation holds.
  ///
  /// Does nothing for an allocation close() already released.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;
  /// Return whether the resource's device may access the memory.
  bool is_device_accessible() const override;
  /// Return whether the memory lives in host memory.
  bool is_host_accessible() const override;
  /// Return the resource's device.
  int device_id() const override { return device_.device_id(); }

  /// Grow `buffer` (allocated here) to `new_size` bytes, keeping its contents.
  ///
  /// The buffer's size() becomes `new_size` as given (cuda.core does the same), while the
  /// memory mapped behind it is rounded up to granularity().
  /// The address stays the same when the range after the reservation is free, else
  /// the buffer moves to a new address (still without copying). A `new_size` not
  /// above the current size changes nothing. On failure the buffer is unchanged.
  /// Throws std::invalid_argument for a buffer of another resource, std::logic_error
  /// for a closed buffer or resource.
  void modify_allocation(Buffer& buffer, std::size_t new_size);
  /// Export `buffer` (allocated here, never grown by modify_allocation) for another
  /// process: its physical allocation as a POSIX file descriptor, and its size.
  ///
  /// Throws std::logic_error when the resource was not made for IPC (handle_type other
  /// than VirtualMemoryHandleType::PosixFd) or the buffer was grown (several physical
  /// allocations), std::invalid_argument for a buffer of another resource.
  IPCVirtualBuffer export_buffer(const Buffer& buffer) const;
  /// Map, in this process, `size` bytes of the physical allocation another process
  /// exported with export_buffer(): a buffer of this resource, readable and writable as
  /// the options grant, released by close() or deallocate like one allocated here.
  ///
  /// `handle` is consumed (its file descriptor closed) whatever happens. Untrusted input
  /// is checked before a Buffer exists: a `size` of 0 or not a multiple of granularity()
  /// is std::invalid_argument before any driver call; memory of another device or kind
  /// than this resource's, or a `size` larger than the shared allocation (the driver
  /// refuses to map it), is std::invalid_argument naming the sizes, with everything taken
  /// so far released (docs/ipc.md).
  Buffer import_buffer(IPCAllocationHandle&& handle, std::uint64_t size, StreamRef stream);
  /// Release every allocation still held, in order (unmap, release the physical
  /// memory, free the address range); idempotent, never throws.
  ///
  /// Buffers still open then refer to freed addresses: close them first.
  void close() noexcept override;

  /// Return the granularity sizes are rounded to.
  std::size_t granularity() const noexcept { return granularity_; }
  /// Return the options the resource was created with.
  const VirtualMemoryResourceOptions& options() const noexcept { return options_; }
  /// Return how many allocations the resource holds now.
  std::size_t allocation_count() const;

 private:
  /// One physical allocation mapped at `ptr`.
  struct Chunk {
    CUdeviceptr ptr = 0;
    std::size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  /// One reserved address range.
  struct Range {
    CUdeviceptr ptr = 0;
    std::size_t size = 0;
  };
  /// What one buffer holds: its reservations and the physical memory mapped there.
  struct Allocation {
    std::vector<Range> ranges;
    std::vector<Chunk> chunks;
    std::size_t mapped = 0;  // bytes mapped from the start of the first range
  };

  void require_open(const char* operation) const;
  CUmemAllocationProp allocation_prop() const;
  std::vector<CUmemAccessDesc> access_descriptors() const;
  Chunk map_new_chunk(CUdeviceptr at, std::size_t size) const;
  void grow_in_place(Allocation& allocation, CUdeviceptr base, std::size_t extra);
  CUdeviceptr grow_by_remapping(Allocation& allocation, std::size_t total, std::size_t extra);
  static void release(const Allocation& allocation) noexcept;

  Device device_;
  VirtualMemoryResourceOptions options_;
  std::size_t granularity_ = 0;
  // The allocations by base address, with their mutex: behind a pointer, so that
  // <map> and <mutex> stay out of this header (runtime/src/memory/virtual_memory_resource.cpp).
  struct Allocations;
  Allocations* allocations_ = nullptr;  // owned
};

}  // namespace cuwrap
