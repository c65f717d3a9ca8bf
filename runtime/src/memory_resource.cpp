// The memory resources. See cuwrap/memory_resource.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>

#include <cstdint>
#include <limits>
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
      detail::report_release_failure(driver::raw::cuMemPoolDestroy(pool), "cuMemPoolDestroy", "DeviceMemoryResource");
    }
  }
  CUmemoryPool release() noexcept { return std::exchange(pool, nullptr); }
};

// Allocate from `pool` ordered on `stream` (the hot path: one raw driver call).
CUdeviceptr allocate_from_pool(CUmemoryPool pool, std::size_t size, const Stream& stream) {
  CUdeviceptr ptr = 0;
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemAllocFromPoolAsync", [&] {
    return driver::raw::cuMemAllocFromPoolAsync(&ptr, size, pool, handle);
  });
  return ptr;
}

void free_async(CUdeviceptr ptr, const Stream& stream) {
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemFreeAsync",
                          [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
}

}  // namespace

// ---- DeviceMemoryResource -----------------------------------------------------------

DeviceMemoryResource::DeviceMemoryResource(const Device& device,
                                           const DeviceMemoryResourceOptions& options)
    : device_id_(device.device_id()) {
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
  pool_ = guard.release();
  owns_pool_ = true;
}

DeviceMemoryResource::~DeviceMemoryResource() {
  if (owns_pool_) {
    detail::report_release_failure(driver::raw::cuMemPoolDestroy(pool_), "cuMemPoolDestroy", "DeviceMemoryResource");
  }
}

Buffer DeviceMemoryResource::allocate(std::size_t size, const Stream& stream) {
  const CUdeviceptr ptr = size != 0 ? allocate_from_pool(pool_, size, stream) : 0;
  return Buffer::from_handle(ptr, size, this, stream);
}

void DeviceMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/, const Stream& stream) {
  if (ptr != 0) {
    free_async(ptr, stream);
  }
}

// ---- PinnedMemoryResource -----------------------------------------------------------

PinnedMemoryResource::PinnedMemoryResource() {
  const int devices = detail::device_count();
  if (devices == 0) {
    return;
  }
  // A pinned host pool (CUDA 13 drivers). Older drivers reject the host location; they
  // get the cuMemHostAlloc fallback.
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = 0;
  PoolGuard guard;
  if (driver::raw::cuMemPoolCreate(&guard.pool, &props) != CUDA_SUCCESS) {
    guard.pool = nullptr;
    return;
  }
  // Host pools are not accessible from any device until granted.
  std::vector<CUmemAccessDesc> access(static_cast<std::size_t>(devices));
  for (int i = 0; i < devices; ++i) {
    access[static_cast<std::size_t>(i)].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[static_cast<std::size_t>(i)].location.id = i;
    access[static_cast<std::size_t>(i)].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  if (driver::raw::cuMemPoolSetAccess(guard.pool, access.data(), access.size()) != CUDA_SUCCESS) {
    return;  // the guard destroys the pool; use the fallback
  }
  set_release_threshold(guard.pool, kKeepEverything);
  pool_ = guard.release();
}

PinnedMemoryResource::~PinnedMemoryResource() {
  if (pool_ != nullptr) {
    detail::report_release_failure(driver::raw::cuMemPoolDestroy(pool_), "cuMemPoolDestroy", "DeviceMemoryResource");
  }
}

Buffer PinnedMemoryResource::allocate(std::size_t size, const Stream& stream) {
  CUdeviceptr ptr = 0;
  if (size != 0) {
    if (pool_ != nullptr) {
      ptr = allocate_from_pool(pool_, size, stream);
    } else {
      const detail::ScopedContext scope(stream.context());
      ptr = reinterpret_cast<CUdeviceptr>(
          driver::cuMemHostAlloc(size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    }
  }
  return Buffer::from_handle(ptr, size, this, stream);
}

void PinnedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/, const Stream& stream) {
  if (ptr == 0) {
    return;
  }
  if (pool_ != nullptr) {
    free_async(ptr, stream);
  } else {
    stream.sync();
    const detail::ScopedContext scope(stream.context());
    driver::cuMemFreeHost(reinterpret_cast<void*>(ptr));
  }
}

// ---- LegacyPinnedMemoryResource -----------------------------------------------------

Buffer LegacyPinnedMemoryResource::allocate(std::size_t size, const Stream& stream) {
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(stream.context());
    ptr = reinterpret_cast<CUdeviceptr>(driver::cuMemAllocHost(size));
  }
  return Buffer::from_handle(ptr, size, this, stream);
}

void LegacyPinnedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/,
                                            const Stream& stream) {
  if (ptr == 0) {
    return;
  }
  stream.sync();
  const detail::ScopedContext scope(stream.context());
  driver::cuMemFreeHost(reinterpret_cast<void*>(ptr));
}

// ---- ManagedMemoryResource ----------------------------------------------------------

Buffer ManagedMemoryResource::allocate(std::size_t size, const Stream& stream) {
  CUdeviceptr ptr = 0;
  if (size != 0) {
    const detail::ScopedContext scope(stream.context());
    ptr = driver::cuMemAllocManaged(size, CU_MEM_ATTACH_GLOBAL);
  }
  return Buffer::from_handle(ptr, size, this, stream);
}

void ManagedMemoryResource::deallocate(CUdeviceptr ptr, std::size_t /*size*/,
                                       const Stream& stream) {
  if (ptr == 0) {
    return;
  }
  stream.sync();
  const detail::ScopedContext scope(stream.context());
  driver::cuMemFree(ptr);
}

}  // namespace cuwrap
