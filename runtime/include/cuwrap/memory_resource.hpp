// Memory resources: where Buffers come from (cuda.core's MemoryResource family).
//
// DeviceMemoryResource   device memory from a stream-ordered pool (cuMemAllocFromPoolAsync)
// PinnedMemoryResource   page-locked host memory from a host memory pool (CUDA 13 drivers),
//                        else cuMemHostAlloc
// LegacyPinnedMemoryResource  page-locked host memory from cuMemAllocHost
// ManagedMemoryResource  unified memory from cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL)
//
// A Buffer may outlive its resource object: each resource shares a small link with its
// buffers (MemoryResource's set_detached_deallocate says how they free without it).
// Device::memory_resource() lives until the process exits.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/shared_flag.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

namespace cuwrap {

class Stream;

/// The alignment the device, pinned, legacy pinned and managed resources guarantee for
/// their allocations: 256 bytes, as cudaMalloc does (CCCL's
/// cuda::mr::default_cuda_malloc_alignment).
///
/// CcclResource and StreamOrderedAllocator accept an alignment that is a power of two no
/// larger than this.
inline constexpr std::size_t kResourceAlignment = 256;

/// The interface of every memory resource: allocate and free buffers, ordered on streams.
///
/// Implement allocate() with Buffer::adopt(ptr, size, this[, stream]) so the
/// buffer frees itself through deallocate().
///
/// A buffer may outlive its resource object (a function returns a buffer from a local
/// resource): the resource and its buffers share a small link, which the resource's
/// destructor marks, so no buffer calls through a destroyed resource. Such a buffer
/// then frees its memory with the function given to set_detached_deallocate(); every
/// built-in resource gives one (its free needs only the driver). A resource that gives
/// none (a user's, by default) makes that buffer's close() report a release failure
/// (docs/errors.md) and close(stream) throw std::logic_error; the memory leaks.
/// Buffer::memory_resource() returns nullptr once the resource is gone.
///
/// Example (a user resource whose free needs nothing from the object):
/// \code
///   class HostResource : public cuwrap::MemoryResource {
///    public:
///     HostResource() { set_detached_deallocate(&free_host); }
///     ...
///     void deallocate(CUdeviceptr ptr, std::size_t size, cuwrap::StreamRef s) override {
///       free_host(ptr, size, s);
///     }
///    private:
///     static void free_host(CUdeviceptr ptr, std::size_t, const cuwrap::Stream&) {
///       std::free(reinterpret_cast<void*>(ptr));
///     }
///   };
/// \endcode
class MemoryResource {
 public:
  /// How buffers free memory once their resource object is gone: a function that needs
  /// nothing from the object (it may throw DriverError, as deallocate() may).
  using DetachedDeallocate = void (*)(CUdeviceptr ptr, std::size_t size, const Stream& stream);

  /// Make the resource and the link its buffers share.
  MemoryResource();
  /// Make a resource of its own: a copy's buffers are not `other`'s.
  MemoryResource(const MemoryResource& other);
  /// Keep this resource's link: buffers stay with the object that allocated them.
  MemoryResource& operator=(const MemoryResource& other) noexcept;
  /// Mark the resource gone for the buffers that outlive it.
  virtual ~MemoryResource();

  /// Allocate `size` bytes, ordered on `stream`; return Buffer::adopt(ptr, size, this,
  /// stream), so that the buffer frees itself through deallocate().
  ///
  /// The built-in resources throw std::logic_error after close(). A derived class that
  /// declares allocate() hides allocate(size); `using MemoryResource::allocate;` brings
  /// it back.
  virtual Buffer allocate(std::size_t size, StreamRef stream) = 0;
  /// Allocate `size` bytes, ordered on the legacy default stream (cuda.core's default).
  Buffer allocate(std::size_t size);
  /// Free `ptr` (of `size` bytes) from this resource, ordered on `stream`.
  ///
  /// Works after close(): buffers still allocated free themselves as before.
  virtual void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) = 0;
  /// Return whether the GPU can access the memory: true unless a resource says otherwise
  /// (device memory, the common case).
  virtual bool is_device_accessible() const { return true; }
  /// Return whether the host can access the memory: false unless a resource says
  /// otherwise (pinned and managed memory do).
  virtual bool is_host_accessible() const { return false; }
  /// Return the ordinal of the device the memory belongs to, or -1 when it is not tied
  /// to one device (host memory; the default).
  virtual int device_id() const { return -1; }
  /// Stop allocating: later allocate() calls throw std::logic_error; idempotent, never
  /// throws. Buffers already allocated stay valid and free themselves as before. A
  /// resource that holds more (a pool of its own) releases it as well, calling this.
  virtual void close() noexcept { closed_ = true; }
  /// Return whether the resource still allocates (false after close()).
  bool is_open() const noexcept { return !closed_; }

 protected:
  /// Throw std::logic_error "<resource>::<operation> on a closed <resource>" when closed.
  void require_open(const char* resource, const char* operation) const {
    if (closed_) [[unlikely]] {
      throw_closed(resource, operation);
    }
  }
  /// Let buffers that outlive this resource free their memory with `deallocate`
  /// (nullptr: they cannot; closing them reports a release failure).
  void set_detached_deallocate(DetachedDeallocate deallocate) noexcept;

 private:
  friend class Buffer;
  [[noreturn]] static void throw_closed(const char* resource, const char* operation);

  detail::Ref<detail::ResourceLink> link_;
  bool closed_ = false;
};

/// The attributes of a stream-ordered memory pool, read live (cuda.core's
/// DeviceMemoryResourceAttributes): what the pool holds now and at most.
///
/// A view: valid while the resource it came from is open; used after that resource's
/// close() (or destruction), every member throws std::logic_error before any driver call.
class MemoryPoolAttributes {
 public:
  /// View the attributes of `pool` (a handle the caller keeps valid).
  explicit MemoryPoolAttributes(CUmemoryPool pool) noexcept : pool_(pool) {}
  /// View the attributes of `pool` while `open` holds true: what a resource's
  /// attributes() returns, so that a view used after close() throws std::logic_error
  /// instead of handing the driver a destroyed pool.
  MemoryPoolAttributes(CUmemoryPool pool, detail::SharedFlag open) noexcept
      : pool_(pool), open_(std::move(open)) {}

  /// Return whether freed memory is reused across streams that an event orders.
  bool reuse_follow_event_dependencies() const;
  /// Return whether freed memory is reused when the free is already known complete.
  bool reuse_allow_opportunistic() const;
  /// Return whether the driver may insert dependencies to reuse freed memory.
  bool reuse_allow_internal_dependencies() const;
  /// Return the bytes of free memory the pool keeps across synchronisations.
  std::uint64_t release_threshold() const;
  /// Return the bytes of backing memory the pool holds now.
  std::uint64_t reserved_mem_current() const;
  /// Return the most bytes of backing memory the pool held since the last reset.
  std::uint64_t reserved_mem_high() const;
  /// Return the bytes allocated from the pool and not yet freed.
  std::uint64_t used_mem_current() const;
  /// Return the most bytes in use at once since the last reset.
  std::uint64_t used_mem_high() const;
  /// Reset reserved_mem_high() to the current value.
  void reset_reserved_mem_high() const;
  /// Reset used_mem_high() to the current value.
  void reset_used_mem_high() const;
  /// Set the bytes of free memory the pool keeps across synchronisations
  /// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; UINT64_MAX keeps everything).
  void set_release_threshold(std::uint64_t bytes) const;
  /// Allow or forbid reusing freed memory across streams that an event orders
  /// (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES).
  void set_reuse_follow_event_dependencies(bool enabled) const;
  /// Allow or forbid reusing freed memory once its free is known complete
  /// (CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC).
  void set_reuse_allow_opportunistic(bool enabled) const;
  /// Allow or forbid the driver inserting dependencies to reuse freed memory
  /// (CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES).
  void set_reuse_allow_internal_dependencies(bool enabled) const;

 private:
  CUmemoryPool pool(const char* operation) const;

  CUmemoryPool pool_;
  detail::SharedFlag open_;  // no flag: a view of a caller's handle
};

/// What a device may do with a memory pool's memory (CUmemAccess_flags).
enum class Access {
  None,       ///< no access (CU_MEM_ACCESS_FLAGS_PROT_NONE)
  Read,       ///< read only (CU_MEM_ACCESS_FLAGS_PROT_READ)
  ReadWrite,  ///< read and write (CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
};

/// A device named by a Device or by its ordinal, where cuda.core accepts either.
class DeviceOrOrdinal {
 public:
  /// Name `device`.
  DeviceOrOrdinal(const Device& device) noexcept  // NOLINT(google-explicit-constructor)
      : device_id_(device.device_id()) {}
  /// Name the device with ordinal `device_id` (checked where it is used).
  DeviceOrOrdinal(int device_id) noexcept  // NOLINT(google-explicit-constructor)
      : device_id_(device_id) {}
  /// Return the ordinal.
  int device_id() const noexcept { return device_id_; }

 private:
  int device_id_;
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
  /// Own pool only: allow exporting the pool to other processes as a POSIX file
  /// descriptor (get_allocation_handle). Linux only.
  bool ipc_enabled = false;
};

/// Device memory from a stream-ordered memory pool of one device.
///
/// allocate() is cuMemAllocFromPoolAsync and deallocate() cuMemFreeAsync, on the given
/// stream. Not copyable or movable: buffers point to it.
///
/// IPC (Linux): a pool created with `ipc_enabled` exports itself with
/// get_allocation_handle(); another process imports it with from_allocation_handle()
/// and then the buffers' descriptors (Buffer::ipc_descriptor) with
/// Buffer::from_ipc_descriptor. IPCChannel carries both. Such a pool is exported once
/// when it is created (the driver exports buffers only from an exported pool), so it
/// holds one file descriptor (close-on-exec) until close().
class DeviceMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Use `device`'s default memory pool, or a new pool as `options` ask.
  ///
  /// Throws DriverError when the device does not support memory pools.
  explicit DeviceMemoryResource(const Device& device,
                                const DeviceMemoryResourceOptions& options = {});
  /// Use `device`'s memory pool: the default pool.
  explicit DeviceMemoryResource(int device_id) : DeviceMemoryResource(Device(device_id)) {}
  DeviceMemoryResource(const DeviceMemoryResource&) = delete;
  DeviceMemoryResource& operator=(const DeviceMemoryResource&) = delete;
  /// Destroy the pool if this resource created or imported it (never throws).
  ~DeviceMemoryResource() override;

  /// Import a pool another process exported with get_allocation_handle().
  ///
  /// The resource is "mapped": it only imports buffers (Buffer::from_ipc_descriptor),
  /// it cannot allocate. The file descriptor is closed once the pool is imported.
  /// Throws std::invalid_argument for a closed `handle` (before any driver call).
  static DeviceMemoryResource from_allocation_handle(Device device, IPCAllocationHandle&& handle);

  /// Allocate `size` bytes from the pool, ordered on `stream`.
  ///
  /// Throws std::logic_error on a closed or an imported (mapped) resource, and, as
  /// cuda.core, on a stream that is capturing a graph (graph memory comes from a
  /// GraphMemoryResource).
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Return `ptr` to the pool, ordered on `stream` (cuMemFreeAsync).
  ///
  /// Still works after close(): the driver destroys a pool once its last buffer is freed.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return the device the pool belongs to.
  int device_id() const override { return device_id_; }

  /// Export the pool for another process (cuMemPoolExportToShareableHandle).
  ///
  /// Throws std::logic_error unless the resource was created with ipc_enabled.
  IPCAllocationHandle get_allocation_handle() const;
  /// Return the devices other than the owner that may access the pool's memory.
  std::vector<Device> peer_accessible_by() const;
  /// Let exactly `devices` (besides the owner, which is ignored in the list) access
  /// the pool's memory, revoking access for the others (cuMemPoolSetAccess).
  ///
  /// Throws std::invalid_argument naming a device whose ordinal does not exist or
  /// that the topology does not let access the owner (Device::can_access_peer).
  void set_peer_accessible_by(std::span<const Device> devices);
  /// Let exactly the devices with ordinals `device_ids` access the pool's memory.
  ///
  /// Throws as the Device form does; an ordinal that is no device (negative, or not
  /// below the device count) is named before any driver call that changes access.
  void set_peer_accessible_by(std::span<const int> device_ids);
  /// Let exactly the listed devices access the pool's memory: Devices, ordinals or
  /// both, as cuda.core accepts (`set_peer_accessible_by({dev1})`, `({1, 2})`, and
  /// `({})` to revoke every peer).
  void set_peer_accessible_by(std::initializer_list<DeviceOrOrdinal> devices);
  /// Return what `device` may do with the pool's memory (cuMemPoolGetAccess); the
  /// owner always has Access::ReadWrite.
  Access access(const Device& device) const;
  /// Set what `device` may do with the pool's memory (cuMemPoolSetAccess); every
  /// allocation of the pool, made before or after, follows.
  ///
  /// Throws std::invalid_argument, before any driver call that changes access, when
  /// `device` is the owner (its access cannot change) or cannot access the owner's
  /// memory at all (no peer access in this topology); DriverError when the driver
  /// refuses the access (pools may not support Access::Read).
  void set_access(const Device& device, Access access);
  /// Allocate from the existing pool `pool` (from cuMemPoolCreate, a device's default
  /// or current pool, another library's), which the caller keeps and destroys: close()
  /// and the destructor leave it alone.
  ///
  /// The owner device is found by asking each device's default and current pool, else
  /// by which single device has read-write access. Throws std::invalid_argument for a
  /// null pool or one no device (or several, none of them its default or current pool's
  /// device) can be told apart as the owner.
  static DeviceMemoryResource from_handle(CUmemoryPool pool);
  /// Allocate from the existing pool `pool` of `device`; as above, with the owner given.
  static DeviceMemoryResource from_handle(CUmemoryPool pool, const Device& device);
  /// Take over the existing pool `pool`: close() and the destructor destroy it
  /// (cuMemPoolDestroy). The owner device is found as by from_handle(pool).
  ///
  /// Throws std::invalid_argument as from_handle(pool) does, and for a device's default
  /// pool, which cannot be destroyed.
  static DeviceMemoryResource adopt(CUmemoryPool pool);
  /// Take over the existing pool `pool` of `device`; as above, with the owner given.
  static DeviceMemoryResource adopt(CUmemoryPool pool, const Device& device);
  /// Return the pool's attributes (usage and reuse policy).
  MemoryPoolAttributes attributes() const;
  /// Destroy the pool if owned, and stop allocating; idempotent, never throws.
  ///
  /// Buffers still allocated stay valid; the driver frees the pool after the last one.
  void close() noexcept override;

  /// Return the pool handle. Throws std::logic_error on a closed resource.
  CUmemoryPool handle() const;
  /// Return whether this resource created or imported (and owns) its pool.
  bool is_own_pool() const noexcept { return owns_pool_; }
  /// Return whether the pool can be shared with other processes.
  bool is_ipc_enabled() const noexcept { return ipc_enabled_; }
  /// Return whether the pool was imported from another process.
  bool is_mapped() const noexcept { return mapped_; }
  /// Return the id the pool's exported handles and buffer descriptors carry.
  const IPCPoolId& pool_id() const noexcept { return pool_id_; }

 private:
  struct ImportedTag {};
  DeviceMemoryResource(ImportedTag /*tag*/, int device_id, CUmemoryPool pool,
                       const IPCPoolId& pool_id) noexcept;
  struct HandleTag {};
  DeviceMemoryResource(HandleTag /*tag*/, int device_id, CUmemoryPool pool, bool owning) noexcept;
  // from_handle (owning false) and adopt (true).
  static DeviceMemoryResource from_existing_pool(CUmemoryPool pool, bool owning);
  static DeviceMemoryResource from_existing_pool(CUmemoryPool pool, const Device& device,
                                                 bool owning);
  void require_open(const char* operation) const;
  void set_peer_access(std::span<const int> device_ids);

  CUmemoryPool pool_ = nullptr;
  detail::SharedFlag pool_open_ = detail::SharedFlag::make();
  int device_id_ = 0;
  bool owns_pool_ = false;
  bool ipc_enabled_ = false;
  bool mapped_ = false;
  IPCPoolId pool_id_{};
  // An IPC pool's own export, made at creation and kept open with the pool: the driver
  // exports a buffer (cuMemPoolExportPointer) only from a pool already exported.
  IPCAllocationHandle export_handle_;
};

/// Options of a PinnedMemoryResource (cuda.core's PinnedMemoryResourceOptions).
///
/// Any option set needs the host memory pool (CUDA 12.6+ drivers; else the
/// constructor throws the driver's error rather than silently ignore the option).
struct PinnedMemoryResourceOptions {
  /// Allow exporting the pool to other processes (POSIX file descriptor).
  bool ipc_enabled = false;
  /// Put the memory on this host NUMA node (CU_MEM_LOCATION_TYPE_HOST_NUMA).
  std::optional<int> numa_id = std::nullopt;
  /// The most bytes the pool may reserve (0: no limit).
  std::size_t max_size = 0;
};

/// Page-locked host memory, accessible from the host and every device.
///
/// Which device an allocation answers for: every one. device_id() is -1 (tied to no
/// device); the pool grants read-write access to every device present when it is
/// created, and the fallback's memory is portable and mapped, so kernels and copies of
/// any device use a buffer at its handle() (unified addressing), whichever stream
/// allocated it.
///
/// Uses a pinned host memory pool (stream-ordered, CU_MEM_LOCATION_TYPE_HOST) where the
/// driver supports one (CUDA 13), else cuMemHostAlloc (portable, device-mapped) and a
/// stream synchronisation before each free. Memory from the pool is ready once the
/// allocation stream reaches it: sync the stream before touching it from the host.
class PinnedMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Create the resource (and its pool, when the driver supports host pools).
  ///
  /// A driver that answers it has no host pools gets the cuMemHostAlloc fallback; any
  /// other failure of cuMemPoolCreate or cuMemPoolSetAccess throws DriverError.
  PinnedMemoryResource();
  /// Create the resource with a host memory pool as `options` ask.
  ///
  /// Throws DriverError when the driver cannot create that pool.
  explicit PinnedMemoryResource(const PinnedMemoryResourceOptions& options);
  PinnedMemoryResource(const PinnedMemoryResource&) = delete;
  PinnedMemoryResource& operator=(const PinnedMemoryResource&) = delete;
  /// Destroy the pool (never throws).
  ~PinnedMemoryResource() override;

  /// Allocate `size` bytes of page-locked memory, ordered on `stream`.
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Free `ptr`, ordered on `stream` (pool), or after syncing `stream` (fallback).
  ///
  /// The fallback frees even when the sync fails, reporting that failure to the
  /// release-failure handler.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return true: the host can access the memory.
  bool is_host_accessible() const override { return true; }

  /// Return whether allocations come from a host memory pool (else cuMemHostAlloc).
  bool uses_pool() const noexcept { return pooled_; }
  /// Return the host pool (nullptr when the fallback is used).
  CUmemoryPool handle() const noexcept { return pool_; }
  /// Return the pool's attributes. Throws std::logic_error without a pool.
  MemoryPoolAttributes attributes() const;
  /// Return whether the pool can be shared with other processes.
  bool is_ipc_enabled() const noexcept { return ipc_enabled_; }
  /// Return the host NUMA node the pool places memory on, or -1 when the OS places it
  /// (no pool on a NUMA node: no numa_id and no ipc_enabled), as cuda.core's numa_id.
  ///
  /// An IPC-enabled pool without a numa_id is on node 0 (host pools are exported only
  /// from a NUMA location).
  int numa_id() const noexcept { return numa_id_; }
  /// Export the pool for another process (an `ipc_enabled` resource only).
  IPCAllocationHandle get_allocation_handle() const;
  /// Destroy the pool and stop allocating; idempotent, never throws.
  void close() noexcept override;

 private:
  void require_open(const char* operation) const;

  CUmemoryPool pool_ = nullptr;
  bool pooled_ = false;  // allocations come from a pool (stays true after close)
  bool ipc_enabled_ = false;
  detail::SharedFlag pool_open_ = detail::SharedFlag::make();
  int numa_id_ = -1;
  IPCPoolId pool_id_{};
};

/// Page-locked host memory from cuMemAllocHost / cuMemFreeHost.
///
/// device_id() is -1: the memory is allocated in the stream's context but, with unified
/// addressing, every device accesses it at its handle(), as PinnedMemoryResource's.
/// Allocation is synchronous; deallocate() syncs the stream first, so work on it that
/// still uses the memory completes before the memory goes away.
class LegacyPinnedMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Create the resource (no driver call).
  LegacyPinnedMemoryResource();

  /// Allocate `size` bytes with cuMemAllocHost (in the stream's context).
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Sync `stream`, then cuMemFreeHost.
  ///
  /// The free happens even when the sync fails: that failure goes to the
  /// release-failure handler. Throws DriverError when cuMemFreeHost fails.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return true: the host can access the memory.
  bool is_host_accessible() const override { return true; }
};

/// Options of a ManagedMemoryResource (cuda.core's ManagedMemoryResourceOptions).
struct ManagedMemoryResourceOptions {
  /// Where the memory should preferably live: a device ordinal, or -1 for the host
  /// (CU_MEM_ADVISE_SET_PREFERRED_LOCATION on each allocation). Unset: no advice.
  std::optional<int> preferred_location = std::nullopt;
  /// What may access each allocation at first (cuMemAllocManaged's flags):
  /// CU_MEM_ATTACH_GLOBAL (any stream on any device) or CU_MEM_ATTACH_HOST (the host,
  /// until StreamRef::attach associates it with a stream or makes it global).
  CUmemAttach_flags attach = CU_MEM_ATTACH_GLOBAL;
};

/// Unified (managed) memory from cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL unless the
/// options say CU_MEM_ATTACH_HOST).
///
/// Allocation is synchronous; deallocate() syncs the stream, then cuMemFree.
class ManagedMemoryResource : public MemoryResource {
 public:
  using MemoryResource::allocate;  // allocate(size): on the legacy default stream
  /// Create the resource (no driver call).
  ManagedMemoryResource();
  /// Create the resource; allocations follow `options`.
  ///
  /// Throws std::invalid_argument for a preferred location that is neither -1 nor a
  /// device ordinal, or an `attach` other than CU_MEM_ATTACH_GLOBAL and
  /// CU_MEM_ATTACH_HOST (CU_MEM_ATTACH_SINGLE is for StreamRef::attach only).
  explicit ManagedMemoryResource(const ManagedMemoryResourceOptions& options);

  /// Allocate `size` bytes of managed memory (in the stream's context).
  Buffer allocate(std::size_t size, StreamRef stream) override;
  /// Sync `stream`, then cuMemFree.
  ///
  /// The free happens even when the sync fails: that failure goes to the
  /// release-failure handler. Throws DriverError when cuMemFree fails.
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override;

  /// Return true: the host can access the memory.
  bool is_host_accessible() const override { return true; }
  /// Return the preferred location given at construction (unset: none).
  std::optional<int> preferred_location() const noexcept { return preferred_location_; }
  /// Return the attach flags allocations are made with (ManagedMemoryResourceOptions::attach).
  CUmemAttach_flags attach() const noexcept { return attach_; }

 private:
  std::optional<int> preferred_location_;
  CUmemAttach_flags attach_ = CU_MEM_ATTACH_GLOBAL;
};

}  // namespace cuwrap
