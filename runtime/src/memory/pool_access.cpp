// Memory pool settings: MemoryPoolAttributes' setters, per-device Access of a
// DeviceMemoryResource's pool, and DeviceMemoryResource::from_handle over an existing pool.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/memory_resource.hpp>
#include "memory/locations.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap {
namespace {

void set_pool_flag(CUmemoryPool pool, CUmemPool_attribute attribute, bool enabled) {
  int value = enabled ? 1 : 0;
  driver::cuMemPoolSetAttribute(pool, attribute, &value);
}

Access to_access(CUmemAccess_flags flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return Access::Read;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return Access::ReadWrite;
    default:
      return Access::None;
  }
}

CUmemAccess_flags to_flags(Access access) {
  switch (access) {
    case Access::Read:
      return CU_MEM_ACCESS_FLAGS_PROT_READ;
    case Access::ReadWrite:
      return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    case Access::None:
      break;
  }
  return CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

const char* name_of(Access access) {
  switch (access) {
    case Access::Read:
      return "Read";
    case Access::ReadWrite:
      return "ReadWrite";
    case Access::None:
      break;
  }
  return "None";
}

// Return whether `pool` is the default pool of any device.
bool is_default_pool(CUmemoryPool pool) {
  const int count = detail::device_count();
  for (int i = 0; i < count; ++i) {
    if (driver::cuDeviceGetDefaultMemPool(driver::cuDeviceGet(i)) == pool) {
      return true;
    }
  }
  return false;
}

const char* pool_function(bool owning) {
  return owning ? "DeviceMemoryResource::adopt" : "DeviceMemoryResource::from_handle";
}

void require_pool(CUmemoryPool pool, bool owning) {
  if (pool == nullptr) {
    throw std::invalid_argument(std::string(pool_function(owning)) + ": the pool is null");
  }
}

void require_not_default_if_owning(CUmemoryPool pool, bool owning) {
  if (owning && is_default_pool(pool)) {
    throw std::invalid_argument(
        "DeviceMemoryResource::adopt: a device's default pool cannot be destroyed, so it "
        "cannot be adopted; use from_handle");
  }
}

}  // namespace

// ---- MemoryPoolAttributes setters ----------------------------------------------------

void MemoryPoolAttributes::set_release_threshold(std::uint64_t bytes) const {
  cuuint64_t value = bytes;
  driver::cuMemPoolSetAttribute(pool("set_release_threshold"), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                &value);
}
void MemoryPoolAttributes::set_reuse_follow_event_dependencies(bool enabled) const {
  set_pool_flag(pool("set_reuse_follow_event_dependencies"),
                CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, enabled);
}
void MemoryPoolAttributes::set_reuse_allow_opportunistic(bool enabled) const {
  set_pool_flag(pool("set_reuse_allow_opportunistic"), CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                enabled);
}
void MemoryPoolAttributes::set_reuse_allow_internal_dependencies(bool enabled) const {
  set_pool_flag(pool("set_reuse_allow_internal_dependencies"),
                CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, enabled);
}

// ---- DeviceMemoryResource: access and from_handle ------------------------------------

Access DeviceMemoryResource::access(const Device& device) const {
  require_open("access");
  CUmemLocation location = detail::device_location(device.device_id());
  return to_access(driver::cuMemPoolGetAccess(pool_, &location));
}

void DeviceMemoryResource::set_access(const Device& device, Access access) {
  require_open("set_access");
  const int id = device.device_id();
  if (id == device_id_) {
    throw std::invalid_argument("DeviceMemoryResource::set_access(device " + std::to_string(id) +
                                ", Access::" + name_of(access) + "): device " + std::to_string(id) +
                                " owns the pool; the owner's access is always ReadWrite");
  }
  if (access != Access::None && !device.can_access_peer(Device(device_id_))) {
    throw std::invalid_argument("DeviceMemoryResource::set_access(device " + std::to_string(id) +
                                ", Access::" + name_of(access) + "): device " + std::to_string(id) +
                                " cannot access device " + std::to_string(device_id_) +
                                "'s memory (no peer access in this topology)");
  }
  CUmemAccessDesc desc{};
  desc.location = detail::device_location(id);
  desc.flags = to_flags(access);
  const detail::ScopedContext scope(device_id_);
  driver::cuMemPoolSetAccess(pool_, &desc, 1);
}

DeviceMemoryResource DeviceMemoryResource::from_handle(CUmemoryPool pool) {
  return from_existing_pool(pool, false);
}

DeviceMemoryResource DeviceMemoryResource::adopt(CUmemoryPool pool) {
  return from_existing_pool(pool, true);
}

DeviceMemoryResource DeviceMemoryResource::from_handle(CUmemoryPool pool, const Device& device) {
  return from_existing_pool(pool, device, false);
}

DeviceMemoryResource DeviceMemoryResource::adopt(CUmemoryPool pool, const Device& device) {
  return from_existing_pool(pool, device, true);
}

DeviceMemoryResource DeviceMemoryResource::from_existing_pool(CUmemoryPool pool, bool owning) {
  require_pool(pool, owning);
  detail::ensure_driver_initialized();
  const int count = detail::device_count();
  // A device's default or current pool names its owner.
  for (int i = 0; i < count; ++i) {
    const CUdevice device = driver::cuDeviceGet(i);
    if (driver::cuDeviceGetDefaultMemPool(device) == pool ||
        driver::cuDeviceGetMemPool(device) == pool) {
      require_not_default_if_owning(pool, owning);
      return DeviceMemoryResource(HandleTag{}, i, pool, owning);
    }
  }
  // Otherwise the owner is the one device with read-write access, if only one has it.
  std::vector<int> writers;
  for (int i = 0; i < count; ++i) {
    CUmemLocation location = detail::device_location(i);
    if (driver::cuMemPoolGetAccess(pool, &location) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      writers.push_back(i);
    }
  }
  if (writers.size() != 1) {
    throw std::invalid_argument(
        std::string(pool_function(owning)) + ": cannot tell which device owns the pool (" +
        std::to_string(writers.size()) + " devices have read-write access); name it: " +
        (owning ? "adopt(pool, device)" : "from_handle(pool, device)"));
  }
  return DeviceMemoryResource(HandleTag{}, writers.front(), pool, owning);
}

DeviceMemoryResource DeviceMemoryResource::from_existing_pool(CUmemoryPool pool,
                                                              const Device& device, bool owning) {
  require_pool(pool, owning);
  CUmemLocation location = detail::device_location(device.device_id());
  if (driver::cuMemPoolGetAccess(pool, &location) != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    throw std::invalid_argument(std::string(pool_function(owning)) + ": device " +
                                std::to_string(device.device_id()) +
                                " has no read-write access to the pool, so it is not its owner");
  }
  require_not_default_if_owning(pool, owning);
  return DeviceMemoryResource(HandleTag{}, device.device_id(), pool, owning);
}

}  // namespace cuwrap
