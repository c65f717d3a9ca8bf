// The memory resources. See cuwrap/memory_resource.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>

#include "memory/resource_link.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

constexpr std::uint64_t kKeepEverything = std::numeric_limits<std::uint64_t>::max();

void set_release_threshold(CUmemoryPool pool, std::uint64_t bytes) {
  cuuint64_t value = bytes;
  driver::cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value);
}

std::uint64_t release_threshold(CUmemoryPool pool) {
  cuuint64_t value = 0;
  driver::cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value);
  return value;
}

// Destroys a pool unless released (never throws): cleanup while a constructor throws.
struct PoolGuard {
  CUmemoryPool pool = nullptr;
  PoolGuard() = default;
  PoolGuard(const PoolGuard&) = delete;
  PoolGuard& operator=(const PoolGuard&) = delete;
  ~PoolGuard() {
    if (pool != nullptr) {
      detail::report_release_failure(driver::raw::cuMemPoolDestroy(pool), "cuMemPoolDestroy",
                                     "DeviceMemoryResource");
    }
  }
  CUmemoryPool release() noexcept { return std::exchange(pool, nullptr); }
};

// Allocate from `pool` ordered on `stream` (the hot path: one raw driver call).
CUdeviceptr allocate_from_pool(CUmemoryPool pool, std::size_t size, StreamRef stream) {
  CUdeviceptr ptr = 0;
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemAllocFromPoolAsync", [&] {
    return driver::raw::cuMemAllocFromPoolAsync(&ptr, size, pool, handle);
  });
  return ptr;
}

std::uint64_t pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute) {
  cuuint64_t value = 0;
  driver::cuMemPoolGetAttribute(pool, attribute, &value);
  return value;
}

bool pool_flag(CUmemoryPool pool, CUmemPool_attribute attribute) {
  int value = 0;
  driver::cuMemPoolGetAttribute(pool, attribute, &value);
  return value != 0;
}

// Export `pool` as a POSIX file descriptor owned by the returned handle.
IPCAllocationHandle export_pool(CUmemoryPool pool, const IPCPoolId& id) {
  int fd = -1;
  driver::cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  return IPCAllocationHandle(fd, id);
}

// Advise that managed memory prefer `location` (a device ordinal, or -1 for the host).
void advise_preferred_location(CUdeviceptr ptr, std::size_t size, int location) {
#if CUDA_VERSION >= 13000
  CUmemLocation where{};
  where.type = location < 0 ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = location < 0 ? 0 : location;
  driver::cuMemAdvise(ptr, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, where);
#else
  const CUdevice where = location < 0 ? CU_DEVICE_CPU : static_cast<CUdevice>(location);
  driver::cuMemAdvise(ptr, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, where);
#endif
}

// Free synchronously with the raw call `release` (returning CUresult) once `stream`'s work,
// which may still use the memory, is done. A failing sync or context switch is reported
// to the release-failure handler as `object`'s and the free happens anyway: skipping it
// would leak the memory for good (the Buffer closes either way). Throws DriverError
// naming `function` when the free itself fails, std::logic_error (freeing nothing) for a
// closed `stream`.
template <class Release>
void free_after_sync(StreamRef stream, const char* function, const char* object, Release release) {
  try {
    stream.sync();
  } catch (const DriverError& e) {
    detail::report_release_failure(e.code(), e.function().c_str(), object);
  }
  CUresult status = CUDA_SUCCESS;
  try {
    const detail::ScopedContext scope(stream.context());
    status = release();
  } catch (const DriverError& e) {  // the context switch failed: free in the current one
    detail::report_release_failure(e.code(), e.function().c_str(), object);
    status = release();
  }
  detail::check(status, function);
}

void free_async(CUdeviceptr ptr, StreamRef stream) {
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemFreeAsync",
                          [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
}

// The frees of the built-in resources, as MemoryResource::DetachedDeallocate: each needs
// only the driver, so buffers that outlive their resource object still free with them.

void free_pool_memory(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr != 0) {  // a pool outlives its buffers in the driver: cuMemPoolDestroy waits
    free_async(ptr, stream);
  }
}

template <const char* Object>
void free_host_after_sync(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr != 0) {
    free_after_sync(stream, "cuMemFreeHost", Object,
                    [ptr] { return driver::raw::cuMemFreeHost(reinterpret_cast<void*>(ptr)); });
  }
}

constexpr char kPinnedName[] = "PinnedMemoryResource";
constexpr char kLegacyPinnedName[] = "LegacyPinnedMemoryResource";

void free_managed_after_sync(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr != 0) {
    free_after_sync(stream, "cuMemFree", "ManagedMemoryResource",
                    [ptr] { return driver::raw::cuMemFree(ptr); });
  }
}

// `Free` as a MemoryResource::DetachedDeallocate (which takes the Buffer's Stream).
template <void (*Free)(CUdeviceptr, std::size_t, StreamRef)>
void detached(CUdeviceptr ptr, std::size_t size, const Stream& stream) {
  Free(ptr, size, stream);
}

}  // namespace

// ---- MemoryResource -----------------------------------------------------------------

namespace detail {
void ref_acquire(const ResourceLink* link) noexcept { acquire_counted(link); }
void ref_release(const ResourceLink* link) noexcept { release_counted(link); }
}  // namespace detail

MemoryResource::MemoryResource() : link_(detail::make_ref<detail::ResourceLink>(this)) {}

MemoryResource::MemoryResource(const MemoryResource& /*other*/) : MemoryResource() {}

MemoryResource& MemoryResource::operator=(const MemoryResource& /*other*/) noexcept {
  return *this;
}

MemoryResource::~MemoryResource() { link_->detach(); }

Buffer MemoryResource::allocate(std::size_t size) { return allocate(size, kLegacyDefaultStream); }

void MemoryResource::throw_closed(const char* resource, const char* operation) {
  throw std::logic_error(std::string(resource) + "::" + operation + " on a closed " + resource);
}

void MemoryResource::set_detached_deallocate(DetachedDeallocate deallocate) noexcept {
  link_->detached_deallocate = deallocate;
}

// ---- MemoryPoolAttributes -----------------------------------------------------------

CUmemoryPool MemoryPoolAttributes::pool(const char* operation) const {
  if (!open_.is_set()) {
    throw std::logic_error(std::string("MemoryPoolAttributes::") + operation +
                           ": the memory resource these attributes view is closed");
  }
  return pool_;
}

bool MemoryPoolAttributes::reuse_follow_event_dependencies() const {
  return pool_flag(pool("reuse_follow_event_dependencies"),
                   CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES);
}
bool MemoryPoolAttributes::reuse_allow_opportunistic() const {
  return pool_flag(pool("reuse_allow_opportunistic"), CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC);
}
bool MemoryPoolAttributes::reuse_allow_internal_dependencies() const {
  return pool_flag(pool("reuse_allow_internal_dependencies"),
                   CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES);
}
std::uint64_t MemoryPoolAttributes::release_threshold() const {
  return pool_attribute(pool("release_threshold"), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
}
std::uint64_t MemoryPoolAttributes::reserved_mem_current() const {
  return pool_attribute(pool("reserved_mem_current"), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
}
std::uint64_t MemoryPoolAttributes::reserved_mem_high() const {
  return pool_attribute(pool("reserved_mem_high"), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
}
std::uint64_t MemoryPoolAttributes::used_mem_current() const {
  return pool_attribute(pool("used_mem_current"), CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
}
std::uint64_t MemoryPoolAttributes::used_mem_high() const {
  return pool_attribute(pool("used_mem_high"), CU_MEMPOOL_ATTR_USED_MEM_HIGH);
}
void MemoryPoolAttributes::reset_reserved_mem_high() const {
  cuuint64_t zero = 0;  // the only value the driver accepts: reset to current
  driver::cuMemPoolSetAttribute(pool("reset_reserved_mem_high"), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                                &zero);
}
void MemoryPoolAttributes::reset_used_mem_high() const {
  cuuint64_t zero = 0;
  driver::cuMemPoolSetAttribute(pool("reset_used_mem_high"), CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero);
}

// ---- DeviceMemoryResource -----------------------------------------------------------

DeviceMemoryResource::DeviceMemoryResource(const Device& device,
                                           const DeviceMemoryResourceOptions& options)
    : device_id_(device.device_id()) {
  set_detached_deallocate(&detached<&free_pool_memory>);
  const bool own_pool = options.create_pool || options.max_size != 0 || options.ipc_enabled;
  if (!own_pool) {
    pool_ = driver::cuDeviceGetDefaultMemPool(device.handle());
    if (options.release_threshold) {
      set_release_threshold(pool_, *options.release_threshold);
    } else if (release_threshold(pool_) == 0) {
      // By default the pool returns all free memory to the system at every
      // synchronisation, making the next allocation slow; keep it, as cuda.core does.
      set_release_threshold(pool_, kKeepEverything);
    }
    return;
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes =
      options.ipc_enabled ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device_id_;
  props.maxSize = options.max_size;
  PoolGuard guard;
  guard.pool = driver::cuMemPoolCreate(&props);
  set_release_threshold(guard.pool, options.release_threshold.value_or(kKeepEverything));
  if (options.ipc_enabled) {
    pool_id_ = detail::new_pool_id();
    // cuMemPoolExportPointer accepts only pointers of a pool already exported (it returns
    // CUDA_ERROR_INVALID_VALUE before then): export it now, as cuda.core does, so that
    // Buffer::ipc_descriptor works before or without get_allocation_handle(). The
    // descriptor stays open while the pool does and is not inherited across exec.
    const detail::ScopedContext scope(device_id_);
    export_handle_ = export_pool(guard.pool, pool_id_);
    static_cast<void>(::fcntl(export_handle_.handle(), F_SETFD, FD_CLOEXEC));
  }
  pool_ = guard.release();
  owns_pool_ = true;
  ipc_enabled_ = options.ipc_enabled;
}

DeviceMemoryResource::DeviceMemoryResource(ImportedTag /*tag*/, int device_id, CUmemoryPool pool,
                                           const IPCPoolId& pool_id) noexcept
    : pool_(pool),
      device_id_(device_id),
      owns_pool_(true),
      ipc_enabled_(true),
      mapped_(true),
      pool_id_(pool_id) {
  set_detached_deallocate(&detached<&free_pool_memory>);
}

DeviceMemoryResource::DeviceMemoryResource(HandleTag /*tag*/, int device_id, CUmemoryPool pool,
                                           bool owning) noexcept
    : pool_(pool), device_id_(device_id), owns_pool_(owning) {
  set_detached_deallocate(&detached<&free_pool_memory>);
}

DeviceMemoryResource::~DeviceMemoryResource() { close(); }

DeviceMemoryResource DeviceMemoryResource::from_allocation_handle(Device device,
                                                                  IPCAllocationHandle&& handle) {
  if (!handle.is_open()) {
    throw std::invalid_argument(
        "DeviceMemoryResource::from_allocation_handle: the IPCAllocationHandle is closed "
        "(already imported, moved from, or never exported)");
  }
  // The handle is consumed whatever happens: the fd is closed when this returns.
  const IPCAllocationHandle owned = std::move(handle);
  const detail::ScopedContext scope(device.context());
  const CUmemoryPool pool = driver::cuMemPoolImportFromShareableHandle(
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(owned.handle())),
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  return DeviceMemoryResource(ImportedTag{}, device.device_id(), pool, owned.pool_id());
}

Buffer DeviceMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("allocate");
  if (mapped_) [[unlikely]] {
    throw std::logic_error(
        "DeviceMemoryResource::allocate: this pool was imported from another process "
        "(from_allocation_handle); it only imports buffers (Buffer::from_ipc_descriptor)");
  }
  // As cuda.core: memory of a pool outlives a graph's replays only by accident; memory
  // allocated while a graph is built is the graph's (GraphMemoryResource).
  if (driver::cuStreamIsCapturing(stream.handle()) == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    throw std::logic_error(
        "DeviceMemoryResource::allocate on a stream that is capturing a graph: allocate "
        "graph memory with a GraphMemoryResource instead");
  }
  const CUdeviceptr ptr = size != 0 ? allocate_from_pool(pool_, size, stream) : 0;
  return Buffer::adopt(ptr, size, this, stream);
}

void DeviceMemoryResource::deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) {
  free_pool_memory(ptr, size, stream);
}

IPCAllocationHandle DeviceMemoryResource::get_allocation_handle() const {
  require_open("get_allocation_handle");
  if (!ipc_enabled_) {
    throw std::logic_error(
        "DeviceMemoryResource::get_allocation_handle: the pool is not IPC-enabled; create "
        "it with DeviceMemoryResourceOptions{.ipc_enabled = true}");
  }
  const detail::ScopedContext scope(device_id_);
  return export_pool(pool_, pool_id_);
}

std::vector<Device> DeviceMemoryResource::peer_accessible_by() const {
  require_open("peer_accessible_by");
  std::vector<Device> peers;
  const int devices = detail::device_count();
  for (int i = 0; i < devices; ++i) {
    if (i == device_id_) {
      continue;
    }
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = i;
    if (driver::cuMemPoolGetAccess(pool_, &location) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      peers.emplace_back(i);
    }
  }
  return peers;
}

void DeviceMemoryResource::set_peer_accessible_by(std::span<const Device> devices) {
  std::vector<int> ids;
  ids.reserve(devices.size());
  for (const Device& device : devices) {
    ids.push_back(device.device_id());
  }
  set_peer_access(ids);
}

void DeviceMemoryResource::set_peer_accessible_by(std::span<const int> device_ids) {
  set_peer_access(device_ids);
}

void DeviceMemoryResource::set_peer_accessible_by(std::initializer_list<DeviceOrOrdinal> devices) {
  std::vector<int> ids;
  ids.reserve(devices.size());
  for (const DeviceOrOrdinal& device : devices) {
    ids.push_back(device.device_id());
  }
  set_peer_access(ids);
}

void DeviceMemoryResource::set_peer_access(std::span<const int> device_ids) {
  require_open("set_peer_accessible_by");
  for (const int id : device_ids) {  // before the driver: a negative ordinal is never a device
    if (id < 0) {
      throw std::invalid_argument("DeviceMemoryResource::set_peer_accessible_by: device " +
                                  std::to_string(id) + " does not exist (ordinals are 0 or more)");
    }
  }
  const int count = detail::device_count();
  const Device owner(device_id_);
  std::vector<bool> wanted(static_cast<std::size_t>(count), false);
  for (const int id : device_ids) {
    if (id >= count) {
      throw std::invalid_argument("DeviceMemoryResource::set_peer_accessible_by: device " +
                                  std::to_string(id) + " does not exist (" + std::to_string(count) +
                                  " devices)");
    }
    if (id == device_id_) {
      continue;  // the owner always has access
    }
    if (!Device(id).can_access_peer(owner)) {
      throw std::invalid_argument("DeviceMemoryResource::set_peer_accessible_by: device " +
                                  std::to_string(id) + " cannot access device " +
                                  std::to_string(device_id_) +
                                  "'s memory (no peer access in this topology)");
    }
    wanted[static_cast<std::size_t>(id)] = true;
  }
  // Change only what differs: granting access again costs a driver round trip per device.
  std::vector<bool> current(static_cast<std::size_t>(count), false);
  for (const Device& peer : peer_accessible_by()) {
    current[static_cast<std::size_t>(peer.device_id())] = true;
  }
  std::vector<CUmemAccessDesc> changes;
  for (int i = 0; i < count; ++i) {
    const auto index = static_cast<std::size_t>(i);
    if (i == device_id_ || wanted[index] == current[index]) {
      continue;
    }
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = i;
    desc.flags = wanted[index] ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    changes.push_back(desc);
  }
  if (!changes.empty()) {
    const detail::ScopedContext scope(device_id_);
    driver::cuMemPoolSetAccess(pool_, changes.data(), changes.size());
  }
}

MemoryPoolAttributes DeviceMemoryResource::attributes() const {
  require_open("attributes");
  return MemoryPoolAttributes(pool_, pool_open_);
}

void DeviceMemoryResource::close() noexcept {
  MemoryResource::close();
  pool_open_.clear();
  export_handle_.close();
  const CUmemoryPool pool = std::exchange(pool_, nullptr);
  if (owns_pool_ && pool != nullptr) {
    detail::report_release_failure(driver::raw::cuMemPoolDestroy(pool), "cuMemPoolDestroy",
                                   "DeviceMemoryResource");
  }
}

CUmemoryPool DeviceMemoryResource::handle() const {
  require_open("handle");
  return pool_;
}

void DeviceMemoryResource::require_open(const char* operation) const {
  if (pool_ == nullptr) [[unlikely]] {
    throw std::logic_error(std::string("DeviceMemoryResource::") + operation +
                           " on a closed DeviceMemoryResource");
  }
}

// ---- PinnedMemoryResource -----------------------------------------------------------

namespace {

// Whether `status` is a driver's "no host memory pools here" answer: the pinned resource
// then falls back to cuMemHostAlloc. Any other failure (out of memory, ...) is thrown.
bool host_pools_unsupported(CUresult status) {
  return status == CUDA_ERROR_NOT_SUPPORTED || status == CUDA_ERROR_INVALID_VALUE ||
         status == CUDA_ERROR_INVALID_DEVICE;
}

// Let every device access the host pool `pool`; the driver's status.
CUresult grant_all_devices_status(CUmemoryPool pool) {
  const int devices = detail::device_count();
  std::vector<CUmemAccessDesc> access(static_cast<std::size_t>(devices));
  for (int i = 0; i < devices; ++i) {
    access[static_cast<std::size_t>(i)].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[static_cast<std::size_t>(i)].location.id = i;
    access[static_cast<std::size_t>(i)].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return driver::raw::cuMemPoolSetAccess(pool, access.data(), access.size());
}

// A pinned host pool (CUDA 13 drivers), or nullptr where the driver rejects the host
// location: those get the cuMemHostAlloc fallback.
CUmemoryPool default_host_pool() {
  if (detail::device_count() == 0) {
    return nullptr;
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = 0;
  PoolGuard guard;
  if (const CUresult status = driver::raw::cuMemPoolCreate(&guard.pool, &props);
      status != CUDA_SUCCESS) {
    guard.pool = nullptr;
    if (host_pools_unsupported(status)) {
      return nullptr;
    }
    throw DriverError(status, "cuMemPoolCreate");
  }
  // Host pools are not accessible from any device until granted.
  if (const CUresult status = grant_all_devices_status(guard.pool); status != CUDA_SUCCESS) {
    if (host_pools_unsupported(status)) {
      return nullptr;  // the guard destroys the pool
    }
    throw DriverError(status, "cuMemPoolSetAccess");
  }
  set_release_threshold(guard.pool, kKeepEverything);
  return guard.release();
}

}  // namespace

PinnedMemoryResource::PinnedMemoryResource()
    : pool_(default_host_pool()), pooled_(pool_ != nullptr) {
  set_detached_deallocate(pooled_ ? &detached<&free_pool_memory>
                                  : &detached<&free_host_after_sync<kPinnedName>>);
}

PinnedMemoryResource::PinnedMemoryResource(const PinnedMemoryResourceOptions& options) {
  if (!options.ipc_enabled && !options.numa_id && options.max_size == 0) {
    pool_ = default_host_pool();  // no option needs a pool of its own
    pooled_ = pool_ != nullptr;
    set_detached_deallocate(pooled_ ? &detached<&free_pool_memory>
                                    : &detached<&free_host_after_sync<kPinnedName>>);
    return;
  }
  if (options.numa_id && *options.numa_id < 0) {
    throw std::invalid_argument("PinnedMemoryResource: numa_id " +
                                std::to_string(*options.numa_id) +
                                " is not a NUMA node (0 or more); leave it unset for the "
                                "OS's placement");
  }
  // Host pools of type CU_MEM_LOCATION_TYPE_HOST cannot be exported: a NUMA node can.
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes =
      options.ipc_enabled ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  const bool numa = options.ipc_enabled || options.numa_id.has_value();
  props.location.type = numa ? CU_MEM_LOCATION_TYPE_HOST_NUMA : CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = options.numa_id.value_or(0);
  props.maxSize = options.max_size;
  detail::ensure_driver_initialized();
  PoolGuard guard;
  guard.pool = driver::cuMemPoolCreate(&props);
  if (const CUresult status = grant_all_devices_status(guard.pool); status != CUDA_SUCCESS) {
    throw DriverError(status, "cuMemPoolSetAccess");
  }
  set_release_threshold(guard.pool, kKeepEverything);
  pool_ = guard.release();
  pooled_ = true;
  set_detached_deallocate(&detached<&free_pool_memory>);
  if (numa) {
    numa_id_ = props.location.id;
  }
  ipc_enabled_ = options.ipc_enabled;
  if (ipc_enabled_) {
    pool_id_ = detail::new_pool_id();
  }
}

PinnedMemoryResource::~PinnedMemoryResource() { close(); }

MemoryPoolAttributes PinnedMemoryResource::attributes() const {
  require_open("attributes");
  if (!pooled_) {
    throw std::logic_error(
        "PinnedMemoryResource::attributes: this resource uses cuMemHostAlloc (the driver has "
        "no host memory pools), so it has no pool attributes");
  }
  return MemoryPoolAttributes(pool_, pool_open_);
}

IPCAllocationHandle PinnedMemoryResource::get_allocation_handle() const {
  require_open("get_allocation_handle");
  if (!ipc_enabled_) {
    throw std::logic_error(
        "PinnedMemoryResource::get_allocation_handle: the pool is not IPC-enabled; create "
        "it with PinnedMemoryResourceOptions{.ipc_enabled = true}");
  }
  return export_pool(pool_, pool_id_);
}

void PinnedMemoryResource::close() noexcept {
  MemoryResource::close();
  pool_open_.clear();
  if (pool_ != nullptr) {
    detail::report_release_failure(driver::raw::cuMemPoolDestroy(std::exchange(pool_, nullptr)),
                                   "cuMemPoolDestroy", "PinnedMemoryResource");
  }
}

void PinnedMemoryResource::require_open(const char* operation) const {
  MemoryResource::require_open("PinnedMemoryResource", operation);
}

Buffer PinnedMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("allocate");
  CUdeviceptr ptr = 0;
  if (size != 0) {
    if (pooled_) {
      ptr = allocate_from_pool(pool_, size, stream);
    } else {
      const detail::ScopedContext scope(stream.context());
      ptr = reinterpret_cast<CUdeviceptr>(
          driver::cuMemHostAlloc(size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    }
  }
  return Buffer::adopt(ptr, size, this, stream);
}

void PinnedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) {
  if (pooled_) {  // also after close(): the driver frees the pool after its last buffer
    free_pool_memory(ptr, size, stream);
  } else {
    free_host_after_sync<kPinnedName>(ptr, size, stream);
  }
}

// ---- LegacyPinnedMemoryResource -----------------------------------------------------

LegacyPinnedMemoryResource::LegacyPinnedMemoryResource() {
  set_detached_deallocate(&detached<&free_host_after_sync<kLegacyPinnedName>>);
}

Buffer LegacyPinnedMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("LegacyPinnedMemoryResource", "allocate");
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(stream.context());
    ptr = reinterpret_cast<CUdeviceptr>(driver::cuMemAllocHost(size));
  }
  return Buffer::adopt(ptr, size, this, stream);
}

void LegacyPinnedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) {
  free_host_after_sync<kLegacyPinnedName>(ptr, size, stream);
}

// ---- ManagedMemoryResource ----------------------------------------------------------

ManagedMemoryResource::ManagedMemoryResource() {
  set_detached_deallocate(&detached<&free_managed_after_sync>);
}

ManagedMemoryResource::ManagedMemoryResource(const ManagedMemoryResourceOptions& options)
    : preferred_location_(options.preferred_location), attach_(options.attach) {
  set_detached_deallocate(&detached<&free_managed_after_sync>);
  if (attach_ != CU_MEM_ATTACH_GLOBAL && attach_ != CU_MEM_ATTACH_HOST) {
    throw std::invalid_argument("ManagedMemoryResource: attach " +
                                std::to_string(static_cast<unsigned>(attach_)) +
                                " is neither CU_MEM_ATTACH_GLOBAL nor CU_MEM_ATTACH_HOST "
                                "(CU_MEM_ATTACH_SINGLE is for StreamRef::attach)");
  }
  if (preferred_location_ && *preferred_location_ != -1) {
    const int count = detail::device_count();
    if (*preferred_location_ < 0 || *preferred_location_ >= count) {
      throw std::invalid_argument(
          "ManagedMemoryResource: preferred_location " + std::to_string(*preferred_location_) +
          " is neither -1 (the host) nor a device ordinal (" + std::to_string(count) + " devices)");
    }
  }
}

Buffer ManagedMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("ManagedMemoryResource", "allocate");
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(stream.context());
    ptr = driver::cuMemAllocManaged(size, attach_);
    if (preferred_location_) {
      try {
        advise_preferred_location(ptr, size, *preferred_location_);
      } catch (...) {
        detail::report_release_failure(driver::raw::cuMemFree(ptr), "cuMemFree",
                                       "ManagedMemoryResource");
        throw;
      }
    }
  }
  return Buffer::adopt(ptr, size, this, stream);
}

void ManagedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) {
  free_managed_after_sync(ptr, size, stream);
}

}  // namespace cuwrap
