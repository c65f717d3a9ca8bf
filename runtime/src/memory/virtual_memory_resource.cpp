// VirtualMemoryResource. See cuwrap/virtual_memory_resource.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>
#include <cuwrap/virtual_memory_resource.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

std::size_t align_up(std::size_t size, std::size_t granularity) {
  return (size + granularity - 1) / granularity * granularity;
}

// Undo steps run in reverse unless committed: each driver step of a multi-step
// allocation registers how to take itself back, so a failure leaks nothing.
class Rollback {
 public:
  Rollback() = default;
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;
  ~Rollback() {
    for (std::size_t i = steps_.size(); i-- > 0;) {
      steps_[i]();
    }
  }
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }
  void commit() noexcept { steps_.clear(); }

 private:
  std::vector<std::function<void()>> steps_;
};

void free_range(CUdeviceptr ptr, std::size_t size) noexcept {
  detail::report_release_failure(driver::raw::cuMemAddressFree(ptr, size), "cuMemAddressFree",
                                 "VirtualMemoryResource");
}

void unmap(CUdeviceptr ptr, std::size_t size) noexcept {
  detail::report_release_failure(driver::raw::cuMemUnmap(ptr, size), "cuMemUnmap",
                                 "VirtualMemoryResource");
}

void release_handle(CUmemGenericAllocationHandle handle) noexcept {
  detail::report_release_failure(driver::raw::cuMemRelease(handle), "cuMemRelease",
                                 "VirtualMemoryResource");
}

CUmemAccess_flags access_flags(VirtualMemoryAccess access) {
  switch (access) {
    case VirtualMemoryAccess::Read:
      return CU_MEM_ACCESS_FLAGS_PROT_READ;
    case VirtualMemoryAccess::ReadWrite:
      return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    case VirtualMemoryAccess::None:
      break;
  }
  return CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

CUmemAllocationHandleType handle_type(VirtualMemoryHandleType type) {
  switch (type) {
    case VirtualMemoryHandleType::PosixFd:
      return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case VirtualMemoryHandleType::Fabric:
      return CU_MEM_HANDLE_TYPE_FABRIC;
    case VirtualMemoryHandleType::None:
      break;
  }
  return CU_MEM_HANDLE_TYPE_NONE;
}

CUmemAllocationType allocation_type(VirtualMemoryAllocationType type) {
  if (type == VirtualMemoryAllocationType::Managed) {
#if CUDA_VERSION >= 13000
    detail::require_driver(13000, "VirtualMemoryResource with managed allocations");
    return CU_MEM_ALLOCATION_TYPE_MANAGED;
#else
    detail::throw_toolkit_too_old(13000, "VirtualMemoryResource with managed allocations");
#endif
  }
  return CU_MEM_ALLOCATION_TYPE_PINNED;
}

}  // namespace

struct VirtualMemoryResource::Allocations {
  std::mutex mutex;  // guards by_base
  std::map<CUdeviceptr, Allocation> by_base;
};

// The options are taken by const reference (the public signature).
VirtualMemoryResource::VirtualMemoryResource(
    Device device, const VirtualMemoryResourceOptions& options)  // NOLINT(modernize-pass-by-value)
    : device_(device), options_(options) {
  // The destructor releases every allocation, so a buffer outliving the resource has
  // nothing left to free.
  set_detached_deallocate([](CUdeviceptr, std::size_t, const Stream&) {});
  const int count = detail::device_count();
  for (const int peer : options_.peers) {
    if (peer < 0 || peer >= count) {
      throw std::invalid_argument("VirtualMemoryResource: peer " + std::to_string(peer) +
                                  " is not a device ordinal (" + std::to_string(count) +
                                  " devices)");
    }
  }
  const std::string ordinal = std::to_string(device_.device_id());
  if (device_.attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    throw Error("VirtualMemoryResource: device " + ordinal +
                " does not support virtual memory management");
  }
  if (options_.gpu_direct_rdma &&
      device_.attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) == 0) {
    throw Error("VirtualMemoryResource: device " + ordinal +
                " does not support GPUDirect RDMA with virtual memory management");
  }
  const CUmemAllocationProp prop = allocation_prop();
  granularity_ = driver::cuMemGetAllocationGranularity(
      &prop, options_.granularity == VirtualMemoryGranularity::Minimum
                 ? CU_MEM_ALLOC_GRANULARITY_MINIMUM
                 : CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (options_.addr_align != 0 && options_.addr_align % granularity_ != 0) {
    throw std::invalid_argument(
        "VirtualMemoryResource: addr_align " + std::to_string(options_.addr_align) +
        " is not a multiple of the granularity " + std::to_string(granularity_));
  }
  allocations_ =
      new Allocations();  // NOLINT(cppcoreguidelines-owning-memory): last, nothing throws after
}

VirtualMemoryResource::~VirtualMemoryResource() {
  close();
  delete allocations_;  // NOLINT(cppcoreguidelines-owning-memory)
}

Buffer VirtualMemoryResource::allocate(std::size_t size, StreamRef stream) {
  require_open("allocate");
  if (size == 0) {
    return Buffer::adopt(0, 0, this, stream);
  }
  const std::size_t total = align_up(size, granularity_);
  const detail::ScopedContext scope(device_.context());
  const std::size_t alignment = options_.addr_align != 0 ? options_.addr_align : granularity_;
  const CUdeviceptr base = driver::cuMemAddressReserve(total, alignment, options_.addr_hint, 0);
  Rollback rollback;
  rollback.add([=] { free_range(base, total); });
  Allocation allocation;
  allocation.chunks.push_back(map_new_chunk(base, total));
  allocation.ranges.push_back({base, total});
  allocation.mapped = total;
  {
    const std::lock_guard lock(allocations_->mutex);
    allocations_->by_base.emplace(base, std::move(allocation));
  }
  rollback.commit();
  try {
    // The buffer reports the rounded size, as cuda.core's does: all of it is mapped.
    return Buffer::adopt(base, total, this, stream);
  } catch (...) {  // a closed stream: take the allocation back
    deallocate(base, total, kLegacyDefaultStream);
    throw;
  }
}

void VirtualMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/, StreamRef stream) {
  if (ptr == 0) {
    return;
  }
  stream.sync();  // work queued on the stream may still use the memory
  const detail::ScopedContext scope(device_.context());
  Allocation allocation;
  {
    const std::lock_guard lock(allocations_->mutex);
    const auto found = allocations_->by_base.find(ptr);
    if (found == allocations_->by_base.end()) {
      if (!is_open()) {
        return;  // close() already released it
      }
      throw std::invalid_argument("VirtualMemoryResource::deallocate: address " +
                                  std::to_string(ptr) + " was not allocated here");
    }
    allocation = std::move(found->second);
    allocations_->by_base.erase(found);
  }
  release(allocation);
}

IPCVirtualBuffer VirtualMemoryResource::export_buffer(const Buffer& buffer) const {
  require_open("export_buffer");
  if (options_.handle_type != VirtualMemoryHandleType::PosixFd) {
    throw std::logic_error(
        "VirtualMemoryResource::export_buffer: the resource was not made for IPC (its "
        "handle_type is not VirtualMemoryHandleType::PosixFd)");
  }
  if (buffer.memory_resource() != this) {
    throw std::invalid_argument(
        "VirtualMemoryResource::export_buffer: the buffer was not allocated here");
  }
  CUmemGenericAllocationHandle physical = 0;
  std::uint64_t size = 0;
  {
    const std::lock_guard lock(allocations_->mutex);
    const auto found = allocations_->by_base.find(buffer.handle());
    if (found == allocations_->by_base.end()) {
      throw std::invalid_argument(
          "VirtualMemoryResource::export_buffer: the buffer's address was not allocated here");
    }
    if (found->second.chunks.size() != 1) {
      throw std::logic_error(
          "VirtualMemoryResource::export_buffer: the buffer was grown by modify_allocation "
          "into " +
          std::to_string(found->second.chunks.size()) +
          " physical allocations; export buffers before growing them");
    }
    physical = found->second.chunks.front().handle;
    size = found->second.chunks.front().size;
  }
  const detail::ScopedContext scope(device_.context());
  int fd = -1;
  driver::cuMemExportToShareableHandle(&fd, physical, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  return IPCVirtualBuffer{IPCAllocationHandle(fd, {}), size};
}

Buffer VirtualMemoryResource::import_buffer(IPCAllocationHandle&& handle, std::uint64_t size,
                                            StreamRef stream) {
  const IPCAllocationHandle owned = std::move(handle);  // closed when this returns
  require_open("import_buffer");
  if (!owned.is_open()) {
    throw std::invalid_argument("VirtualMemoryResource::import_buffer: the handle is closed");
  }
  if (size == 0 || size % granularity_ != 0 || size > std::numeric_limits<std::size_t>::max()) {
    throw std::invalid_argument("VirtualMemoryResource::import_buffer: size " +
                                std::to_string(size) +
                                " is not a positive multiple of the "
                                "granularity " +
                                std::to_string(granularity_) + " (export_buffer never gives one)");
  }
  const auto bytes = static_cast<std::size_t>(size);
  const detail::ScopedContext scope(device_.context());
  Chunk chunk{0, bytes, 0};
  chunk.handle = driver::cuMemImportFromShareableHandle(
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(owned.handle())),
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  Rollback rollback;
  rollback.add([handle = chunk.handle] { release_handle(handle); });
  const CUmemAllocationProp shared = driver::cuMemGetAllocationPropertiesFromHandle(chunk.handle);
  const CUmemAllocationProp mine = allocation_prop();
  if (shared.location.type != mine.location.type ||
      (mine.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
       shared.location.id != mine.location.id) ||
      shared.type != mine.type) {
    throw std::invalid_argument(
        "VirtualMemoryResource::import_buffer: the shared memory lives at location type " +
        std::to_string(static_cast<int>(shared.location.type)) + " id " +
        std::to_string(shared.location.id) + ", not where this resource's does (type " +
        std::to_string(static_cast<int>(mine.location.type)) + " id " +
        std::to_string(mine.location.id) + "); import it into a resource of that device");
  }
  const std::size_t alignment = options_.addr_align != 0 ? options_.addr_align : granularity_;
  chunk.ptr = driver::cuMemAddressReserve(bytes, alignment, 0, 0);
  rollback.add([ptr = chunk.ptr, bytes] { free_range(ptr, bytes); });
  // The driver maps no more than the allocation holds: a size larger than what was
  // shared is refused here (driver 580 answers CUDA_ERROR_NOT_SUPPORTED, the documented
  // status is CUDA_ERROR_INVALID_VALUE; the handle imported, so neither is anything else).
  const CUresult mapped = driver::raw::cuMemMap(chunk.ptr, bytes, 0, chunk.handle, 0);
  if (mapped == CUDA_ERROR_INVALID_VALUE || mapped == CUDA_ERROR_NOT_SUPPORTED) {
    throw std::invalid_argument(
        "VirtualMemoryResource::import_buffer: the descriptor claims " + std::to_string(size) +
        " bytes, more than the shared allocation holds (the driver refused to map " +
        std::to_string(size) + " bytes of it: cuMemMap answered " + std::string(to_string(mapped)) +
        "); refused");
  }
  detail::check(mapped, "cuMemMap");
  rollback.add([ptr = chunk.ptr, bytes] { unmap(ptr, bytes); });
  const std::vector<CUmemAccessDesc> access = access_descriptors();
  if (!access.empty()) {
    driver::cuMemSetAccess(chunk.ptr, bytes, access.data(), access.size());
  }
  Allocation allocation;
  allocation.chunks.push_back(chunk);
  allocation.ranges.push_back({chunk.ptr, bytes});
  allocation.mapped = bytes;
  {
    const std::lock_guard lock(allocations_->mutex);
    allocations_->by_base.emplace(chunk.ptr, std::move(allocation));
  }
  rollback.commit();
  try {
    return Buffer::adopt(chunk.ptr, bytes, this, stream);
  } catch (...) {
    deallocate(chunk.ptr, bytes, kLegacyDefaultStream);
    throw;
  }
}

bool VirtualMemoryResource::is_device_accessible() const {
  return options_.self_access != VirtualMemoryAccess::None;
}

bool VirtualMemoryResource::is_host_accessible() const {
  return false;  // no host access is granted (cuMemSetAccess covers devices only)
}

void VirtualMemoryResource::modify_allocation(Buffer& buffer, std::size_t new_size) {
  require_open("modify_allocation");
  buffer.require_open("modify_allocation");
  if (buffer.memory_resource() != this) {
    throw std::invalid_argument(
        "VirtualMemoryResource::modify_allocation: the buffer was not allocated by this "
        "VirtualMemoryResource");
  }
  if (new_size <= buffer.size_) {
    return;
  }
  if (buffer.ptr_ == 0) {
    // An empty allocation has no reservation to grow: make one.
    Buffer grown =
        allocate(new_size, buffer.stream_.is_open() ? buffer.stream_ : kLegacyDefaultStream);
    buffer.ptr_ = std::exchange(grown.ptr_, Buffer::kClosedAddress);  // grown frees nothing
    buffer.size_ = new_size;
    return;
  }
  const std::lock_guard lock(allocations_->mutex);
  const auto found = allocations_->by_base.find(buffer.ptr_);
  if (found == allocations_->by_base.end()) {
    throw std::invalid_argument(
        "VirtualMemoryResource::modify_allocation: the buffer's address is not an "
        "allocation of this VirtualMemoryResource");
  }
  Allocation& allocation = found->second;
  const std::size_t total = align_up(new_size, granularity_);
  if (total <= allocation.mapped) {
    buffer.size_ = new_size;  // the rounding already mapped enough
    return;
  }
  const std::size_t extra = total - allocation.mapped;
  const detail::ScopedContext scope(device_.context());
  const CUdeviceptr end = buffer.ptr_ + allocation.mapped;
  const std::size_t alignment = options_.addr_align != 0 ? options_.addr_align : granularity_;
  CUdeviceptr next = 0;
  const CUresult status = driver::raw::cuMemAddressReserve(&next, extra, alignment, end, 0);
  if (status == CUDA_SUCCESS && next == end) {
    grow_in_place(allocation, end, extra);
    buffer.size_ = new_size;
    return;
  }
  if (status == CUDA_SUCCESS) {
    free_range(next, extra);  // the driver put it elsewhere: the range after ours is taken
  }
  const CUdeviceptr moved = grow_by_remapping(allocation, total, extra);
  auto node = allocations_->by_base.extract(found);
  node.key() = moved;
  allocations_->by_base.insert(std::move(node));
  buffer.ptr_ = moved;
  buffer.size_ = new_size;
}

void VirtualMemoryResource::close() noexcept {
  std::map<CUdeviceptr, Allocation> held;
  {
    const std::lock_guard lock(allocations_->mutex);
    MemoryResource::close();
    held.swap(allocations_->by_base);
  }
  if (held.empty()) {
    return;
  }
  std::optional<detail::ScopedContext> scope;
  try {
    scope.emplace(device_.device_id());
  } catch (...) {  // reported; release without a context rather than leak
    detail::report_current_exception("cuCtxSetCurrent", "VirtualMemoryResource");
  }
  for (const auto& entry : held) {
    release(entry.second);
  }
}

std::size_t VirtualMemoryResource::allocation_count() const {
  const std::lock_guard lock(allocations_->mutex);
  return allocations_->by_base.size();
}

void VirtualMemoryResource::require_open(const char* operation) const {
  MemoryResource::require_open("VirtualMemoryResource", operation);
}

CUmemAllocationProp VirtualMemoryResource::allocation_prop() const {
  CUmemAllocationProp prop{};
  prop.type = allocation_type(options_.allocation_type);
  switch (options_.location_type) {
    case VirtualMemoryLocationType::Device:
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = device_.device_id();
      break;
    case VirtualMemoryLocationType::Host:
      prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
      break;
    case VirtualMemoryLocationType::HostNuma:
      prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
      prop.location.id = options_.numa_id;
      break;
    case VirtualMemoryLocationType::HostNumaCurrent:
      prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
      break;
  }
  prop.requestedHandleTypes = handle_type(options_.handle_type);
  prop.allocFlags.gpuDirectRDMACapable = options_.gpu_direct_rdma ? 1 : 0;
  return prop;
}

std::vector<CUmemAccessDesc> VirtualMemoryResource::access_descriptors() const {
  std::vector<CUmemAccessDesc> descriptors;
  const auto grant = [&](int ordinal, VirtualMemoryAccess access) {
    if (access == VirtualMemoryAccess::None) {
      return;
    }
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = ordinal;
    desc.flags = access_flags(access);
    descriptors.push_back(desc);
  };
  grant(device_.device_id(), options_.self_access);
  for (const int peer : options_.peers) {
    if (peer != device_.device_id()) {
      grant(peer, options_.peer_access);
    }
  }
  return descriptors;
}

VirtualMemoryResource::Chunk VirtualMemoryResource::map_new_chunk(CUdeviceptr at,
                                                                  std::size_t size) const {
  const CUmemAllocationProp prop = allocation_prop();
  Chunk chunk{at, size, driver::cuMemCreate(size, &prop, 0)};
  Rollback rollback;
  rollback.add([handle = chunk.handle] { release_handle(handle); });
  driver::cuMemMap(at, size, 0, chunk.handle, 0);
  rollback.add([=] { unmap(at, size); });
  const std::vector<CUmemAccessDesc> access = access_descriptors();
  if (!access.empty()) {
    driver::cuMemSetAccess(at, size, access.data(), access.size());
  }
  rollback.commit();
  return chunk;
}

void VirtualMemoryResource::grow_in_place(Allocation& allocation, CUdeviceptr end,
                                          std::size_t extra) {
  Rollback rollback;
  rollback.add([=] { free_range(end, extra); });
  const Chunk chunk = map_new_chunk(end, extra);
  rollback.commit();
  allocation.ranges.push_back({end, extra});
  allocation.chunks.push_back(chunk);
  allocation.mapped += extra;
}

CUdeviceptr VirtualMemoryResource::grow_by_remapping(Allocation& allocation, std::size_t total,
                                                     std::size_t extra) {
  const std::size_t alignment = options_.addr_align != 0 ? options_.addr_align : granularity_;
  const CUdeviceptr old_base = allocation.ranges.front().ptr;
  const CUdeviceptr base = driver::cuMemAddressReserve(total, alignment, 0, 0);
  Rollback rollback;
  rollback.add([=] { free_range(base, total); });
  // The same physical memory, mapped a second time at the start of the new range.
  const std::vector<CUmemAccessDesc> access = access_descriptors();
  std::vector<Chunk> moved;
  for (const Chunk& chunk : allocation.chunks) {
    const CUdeviceptr at = base + (chunk.ptr - old_base);
    driver::cuMemMap(at, chunk.size, 0, chunk.handle, 0);
    rollback.add([=] { unmap(at, chunk.size); });
    if (!access.empty()) {
      driver::cuMemSetAccess(at, chunk.size, access.data(), access.size());
    }
    moved.push_back({at, chunk.size, chunk.handle});
  }
  const Chunk added = map_new_chunk(base + allocation.mapped, extra);
  rollback.add([=] {
    unmap(added.ptr, added.size);
    release_handle(added.handle);
  });
  moved.push_back(added);
  // Work still queued on the old addresses must finish before they disappear.
  driver::cuCtxSynchronize();
  rollback.commit();
  for (const Chunk& chunk : allocation.chunks) {
    unmap(chunk.ptr, chunk.size);
  }
  for (const Range& range : allocation.ranges) {
    free_range(range.ptr, range.size);
  }
  allocation.chunks = std::move(moved);
  allocation.ranges = {{base, total}};
  allocation.mapped = total;
  return base;
}

void VirtualMemoryResource::release(const Allocation& allocation) noexcept {
  // Unmap first (the address ranges must be unmapped before they are freed), then
  // release the physical memory, then free the reservations.
  for (const Chunk& chunk : allocation.chunks) {
    unmap(chunk.ptr, chunk.size);
  }
  for (const Chunk& chunk : allocation.chunks) {
    release_handle(chunk.handle);
  }
  for (const Range& range : allocation.ranges) {
    free_range(range.ptr, range.size);
  }
}

}  // namespace cuwrap
