// Managed memory advice, prefetch, discard and range queries. See cuwrap/managed_memory.hpp.
#include <cuwrap/copy.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/managed_memory.hpp>
#include <cuwrap/version.hpp>

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace cuwrap {
namespace {

// The batched managed-memory entry points (and discards at all) arrived with CUDA 13.
constexpr int kManagedBatchVersion = 13000;
constexpr const char* kDiscardFeature = "managed-memory discard (cuMemDiscardBatchAsync)";
constexpr const char* kDiscardPrefetchFeature =
    "managed-memory discard and prefetch (cuMemDiscardAndPrefetchBatchAsync)";

// Call a pointer-based driver function that needs some context: when none is current,
// the call is repeated with device 0's primary context current for it (as Buffer does).
template <class Call>
void check_with_context(const char* function, Call&& call) {
  detail::ensure_driver_initialized();
  CUresult status = call();
  if (status == CUDA_ERROR_INVALID_CONTEXT) {
    const detail::ScopedCurrentOrPrimary scope(0);
    status = call();
  }
  detail::check(status, function);
}

// Refuse memory that is not managed, as cuda.core does before any managed-memory
// operation: one cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED) call. A pointer
// the driver does not know (CUDA_ERROR_INVALID_VALUE) is not managed either.
void require_managed(CUdeviceptr ptr, const std::string& what) {
  detail::ensure_driver_initialized();
  int managed = 0;
  const auto query = [&] {
    return driver::raw::cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  };
  CUresult status = query();
  if (status == CUDA_ERROR_INVALID_CONTEXT) {
    const detail::ScopedCurrentOrPrimary scope(0);
    status = query();
  }
  if (status != CUDA_ERROR_INVALID_VALUE) {
    detail::check(status, "cuPointerGetAttribute");
  }
  if (status != CUDA_SUCCESS || managed == 0) {
    throw std::invalid_argument(what + ": the memory at " + std::to_string(ptr) +
                                " is not a managed-memory allocation (allocate it from a "
                                "ManagedMemoryResource or with cuMemAllocManaged)");
  }
}

bool is_numa_host(const Location& location) {
  const Host* host = std::get_if<Host>(&location);
  return host != nullptr && (host->numa_id.has_value() || host->current_numa);
}

std::string advice_name(CUmem_advise advice) {
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
      return "CU_MEM_ADVISE_SET_READ_MOSTLY";
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      return "CU_MEM_ADVISE_UNSET_READ_MOSTLY";
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      return "CU_MEM_ADVISE_SET_PREFERRED_LOCATION";
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      return "CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION";
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
      return "CU_MEM_ADVISE_SET_ACCESSED_BY";
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      return "CU_MEM_ADVISE_UNSET_ACCESSED_BY";
  }
  return std::to_string(static_cast<int>(advice));
}

// Check `advice` and `location` as cuda.core does (its table of location types per
// advice), then that the memory is managed: accessed-by advice takes a device or the host as
// a whole, not a host NUMA node; unknown advice values are refused. The advice kinds
// that ignore the location get the host as placeholder, whatever was passed.
void advise_range(CUdeviceptr ptr, std::size_t size, CUmem_advise advice, const Location& given) {
  Location location = given;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      location = Host{};
      break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      if (is_numa_host(location)) {
        throw std::invalid_argument("advise(" + advice_name(advice) +
                                    "): location is a host NUMA node; accessed-by advice "
                                    "takes a Device or Host() (the host as a whole)");
      }
      break;
    default:
      throw std::invalid_argument("advise: advice " + advice_name(advice) +
                                  " is not a CUmem_advise value");
  }
  require_managed(ptr, "advise(" + advice_name(advice) + ")");
  const CUmemLocation where = detail::to_cu_location(location);
#if CUDA_VERSION >= 13000
  check_with_context("cuMemAdvise",
                     [&] { return driver::raw::cuMemAdvise(ptr, size, advice, where); });
#else
  check_with_context("cuMemAdvise_v2",
                     [&] { return driver::raw::cuMemAdvise_v2(ptr, size, advice, where); });
#endif
}

void prefetch_range(CUdeviceptr ptr, std::size_t size, const Location& location, StreamRef stream,
                    bool checked = false) {
  if (!checked) {
    require_managed(ptr, "prefetch");
  }
  const CUmemLocation where = detail::to_cu_location(location);
  const CUstream handle = stream.handle();
#if CUDA_VERSION >= 13000
  detail::check_on_stream(stream, "cuMemPrefetchAsync", [&] {
    return driver::raw::cuMemPrefetchAsync(ptr, size, where, 0, handle);
  });
#else
  detail::check_on_stream(stream, "cuMemPrefetchAsync_v2", [&] {
    return driver::raw::cuMemPrefetchAsync_v2(ptr, size, where, 0, handle);
  });
#endif
}

int range_int(CUdeviceptr ptr, std::size_t size, CUmem_range_attribute attribute) {
  int value = 0;
  check_with_context("cuMemRangeGetAttribute", [&] {
    return driver::raw::cuMemRangeGetAttribute(&value, sizeof value, attribute, ptr, size);
  });
  return value;
}

// A batch as the cuMem*BatchAsync entry points take it: pointers, sizes, and runs of
// locations (prefetchLocIdxs[i] is the first operation that prefetchLocs[i] applies to).
struct ManagedBatch {
  std::vector<CUdeviceptr> ptrs;
  std::vector<std::size_t> sizes;
  std::vector<CUmemLocation> locations;
  std::vector<std::size_t> location_starts;
};

std::string batch_name(const char* function) { return std::string("managed_memory::") + function; }

// `locations` holds one location per buffer, or, when `broadcast`, exactly one for all
// (the overloads taking a single Location).
ManagedBatch make_batch(const char* function, std::span<const Buffer* const> buffers,
                        std::span<const Location> locations, bool with_locations,
                        bool broadcast = false) {
  if (with_locations && !broadcast && locations.size() != buffers.size()) {
    throw std::invalid_argument(batch_name(function) + ": " + std::to_string(locations.size()) +
                                " locations for " + std::to_string(buffers.size()) +
                                " buffers; the lists must be as long as each other (pass a "
                                "single Location, not a list, for one location for all)");
  }
  ManagedBatch batch;
  batch.ptrs.reserve(buffers.size());
  batch.sizes.reserve(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i] == nullptr) {
      throw std::invalid_argument(batch_name(function) + ": buffers[" + std::to_string(i) +
                                  "] is null");
    }
    batch.ptrs.push_back(buffers[i]->handle());
    batch.sizes.push_back(buffers[i]->size());
  }
  if (with_locations) {
    for (std::size_t i = 0; i < locations.size(); ++i) {
      batch.locations.push_back(detail::to_cu_location(locations[i]));
      batch.location_starts.push_back(i);
    }
  }
  return batch;
}

// Refuse a batch holding memory that is not managed (one driver query per buffer).
void require_managed_batch(const std::string& function, const ManagedBatch& batch) {
  for (std::size_t i = 0; i < batch.ptrs.size(); ++i) {
    require_managed(batch.ptrs[i], function + ": buffers[" + std::to_string(i) + "]");
  }
}

// Check what a cuMem*BatchAsync call needs before it is made: CUDA 13 (toolkit and
// driver), and a stream other than the legacy default stream, which those calls refuse.
void require_batch(const char* feature, StreamRef stream) {
#if CUDA_VERSION >= 13000
  detail::require_driver(kManagedBatchVersion, feature);
#else
  detail::throw_toolkit_too_old(kManagedBatchVersion, feature);
#endif
  if (detail::is_legacy_default_stream(stream)) {
    throw std::invalid_argument(std::string(feature) +
                                ": the legacy default stream cannot order it; pass a created "
                                "stream or the per-thread default stream");
  }
}

void discard_batch_raw(StreamRef stream, ManagedBatch& batch, const std::string& function) {
  require_batch(kDiscardFeature, stream);
  require_managed_batch(function, batch);
  if (batch.ptrs.empty()) {
    return;
  }
#if CUDA_VERSION >= 13000
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemDiscardBatchAsync", [&] {
    return driver::raw::cuMemDiscardBatchAsync(batch.ptrs.data(), batch.sizes.data(),
                                               batch.ptrs.size(), 0, handle);
  });
#else
  static_cast<void>(stream);
#endif
}

void discard_prefetch_batch_raw(StreamRef stream, ManagedBatch& batch,
                                const std::string& function) {
  require_batch(kDiscardPrefetchFeature, stream);
  require_managed_batch(function, batch);
  if (batch.ptrs.empty()) {
    return;
  }
#if CUDA_VERSION >= 13000
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemDiscardAndPrefetchBatchAsync", [&] {
    return driver::raw::cuMemDiscardAndPrefetchBatchAsync(
        batch.ptrs.data(), batch.sizes.data(), batch.ptrs.size(), batch.locations.data(),
        batch.location_starts.data(), batch.locations.size(), 0, handle);
  });
#else
  static_cast<void>(stream);
#endif
}

ManagedBatch single(CUdeviceptr ptr, std::size_t size, const Location* location) {
  ManagedBatch batch{{ptr}, {size}, {}, {}};
  if (location != nullptr) {
    batch.locations.push_back(detail::to_cu_location(*location));
    batch.location_starts.push_back(0);
  }
  return batch;
}

}  // namespace

// ---- ManagedBufferRef ----

ManagedBufferRef::ManagedBufferRef(const Buffer& buffer)
    : ptr_(buffer.handle()), size_(buffer.size()) {
  if (size_ == 0) {
    return;  // nothing to advise; the driver has no range to check
  }
  require_managed(ptr_, "ManagedBufferRef: buffer");
}

ManagedBufferRef ManagedBufferRef::from_handle(CUdeviceptr ptr, std::size_t size) {
  return ManagedBufferRef(ptr, size);
}

bool ManagedBufferRef::read_mostly() const {
  return range_int(ptr_, size_, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) != 0;
}

void ManagedBufferRef::set_read_mostly(bool value) {
  advise_range(ptr_, size_, value ? CU_MEM_ADVISE_SET_READ_MOSTLY : CU_MEM_ADVISE_UNSET_READ_MOSTLY,
               Host{});
}

std::optional<Location> ManagedBufferRef::preferred_location() const {
  const int type = range_int(ptr_, size_, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE);
  const int id = range_int(ptr_, size_, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID);
  return detail::from_cu_location(static_cast<CUmemLocationType>(type), id);
}

void ManagedBufferRef::set_preferred_location(const std::optional<Location>& location) {
  if (location) {
    advise_range(ptr_, size_, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, *location);
  } else {
    advise_range(ptr_, size_, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, Host{});
  }
}

std::vector<Device> ManagedBufferRef::accessed_by() const {
  // One slot per device; unused slots come back as CU_DEVICE_INVALID (-2), the host as
  // CU_DEVICE_CPU (-1), which this device list leaves out.
  std::vector<int> slots(static_cast<std::size_t>(detail::device_count()) + 1, -2);
  check_with_context("cuMemRangeGetAttribute", [&] {
    return driver::raw::cuMemRangeGetAttribute(slots.data(), slots.size() * sizeof(int),
                                               CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ptr_, size_);
  });
  std::vector<Device> devices;
  for (const int slot : slots) {
    if (slot >= 0) {
      devices.emplace_back(detail::ordinal_of(slot));
    }
  }
  return devices;
}

void ManagedBufferRef::add_accessed_by(const Location& location) {
  advise_range(ptr_, size_, CU_MEM_ADVISE_SET_ACCESSED_BY, location);
}

void ManagedBufferRef::discard_accessed_by(const Location& location) {
  // A host NUMA node can never be advised as accessing the range (add_accessed_by
  // refuses it), so withdrawing it does nothing, as cuda.core's accessed_by.discard.
  if (is_numa_host(location)) {
    return;
  }
  advise_range(ptr_, size_, CU_MEM_ADVISE_UNSET_ACCESSED_BY, location);
}

std::optional<Location> ManagedBufferRef::last_prefetch_location() const {
  const int type = range_int(ptr_, size_, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE);
  const int id = range_int(ptr_, size_, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID);
  return detail::from_cu_location(static_cast<CUmemLocationType>(type), id);
}

void ManagedBufferRef::prefetch(const Location& location, StreamRef stream) const {
  prefetch_range(ptr_, size_, location, stream);
}

void ManagedBufferRef::discard(StreamRef stream) const {
  ManagedBatch batch = single(ptr_, size_, nullptr);
  discard_batch_raw(stream, batch, "discard");
}

void ManagedBufferRef::discard_prefetch(const Location& location, StreamRef stream) const {
  ManagedBatch batch = single(ptr_, size_, &location);
  discard_prefetch_batch_raw(stream, batch, "discard_prefetch");
}

// ---- free functions ----

namespace managed_memory {

void advise(const Buffer& buffer, CUmem_advise advice, const Location& location) {
  advise_range(buffer.handle(), buffer.size(), advice, location);
}

void prefetch(const Buffer& buffer, const Location& location, StreamRef stream) {
  prefetch_range(buffer.handle(), buffer.size(), location, stream);
}

void discard(const Buffer& buffer, StreamRef stream) {
  ManagedBufferRef::from_handle(buffer.handle(), buffer.size()).discard(stream);
}

void discard_prefetch(const Buffer& buffer, const Location& location, StreamRef stream) {
  ManagedBufferRef::from_handle(buffer.handle(), buffer.size()).discard_prefetch(location, stream);
}

bool has_native_prefetch_batch() {
#if CUDA_VERSION >= 13000
  return driver_version() >= kManagedBatchVersion;
#else
  return false;
#endif
}

namespace {

void prefetch_batch_of(StreamRef stream, std::span<const Buffer* const> buffers,
                       std::span<const Location> locations, bool broadcast) {
  ManagedBatch batch = make_batch("prefetch_batch", buffers, locations, true, broadcast);
  if (batch.ptrs.empty()) {
    return;
  }
  require_managed_batch(batch_name("prefetch_batch"), batch);
#if CUDA_VERSION >= 13000
  // The batch entry point refuses the legacy default stream; the loop takes it.
  if (has_native_prefetch_batch() && !detail::is_legacy_default_stream(stream)) {
    const CUstream handle = stream.handle();
    detail::check_on_stream(stream, "cuMemPrefetchBatchAsync", [&] {
      return driver::raw::cuMemPrefetchBatchAsync(
          batch.ptrs.data(), batch.sizes.data(), batch.ptrs.size(), batch.locations.data(),
          batch.location_starts.data(), batch.locations.size(), 0, handle);
    });
    return;
  }
#endif
  for (std::size_t i = 0; i < batch.ptrs.size(); ++i) {
    prefetch_range(batch.ptrs[i], batch.sizes[i], locations[broadcast ? 0 : i], stream, true);
  }
}

}  // namespace

void prefetch_batch(std::span<const Buffer* const> buffers, std::span<const Location> locations,
                    StreamRef stream) {
  prefetch_batch_of(stream, buffers, locations, false);
}

void prefetch_batch(std::span<const Buffer* const> buffers, const Location& location,
                    StreamRef stream) {
  prefetch_batch_of(stream, buffers, std::span<const Location>(&location, 1), true);
}

void discard_batch(std::span<const Buffer* const> buffers, StreamRef stream) {
  ManagedBatch batch = make_batch("discard_batch", buffers, {}, false);
  discard_batch_raw(stream, batch, batch_name("discard_batch"));
}

void discard_prefetch_batch(std::span<const Buffer* const> buffers,
                            std::span<const Location> locations, StreamRef stream) {
  ManagedBatch batch = make_batch("discard_prefetch_batch", buffers, locations, true);
  discard_prefetch_batch_raw(stream, batch, batch_name("discard_prefetch_batch"));
}

void discard_prefetch_batch(std::span<const Buffer* const> buffers, const Location& location,
                            StreamRef stream) {
  ManagedBatch batch = make_batch("discard_prefetch_batch", buffers,
                                  std::span<const Location>(&location, 1), true, true);
  discard_prefetch_batch_raw(stream, batch, batch_name("discard_prefetch_batch"));
}

}  // namespace managed_memory

// ---- locations ----

namespace detail {

CUmemLocation to_cu_location(const Location& location) {
  CUmemLocation out{};
  if (const Device* device = std::get_if<Device>(&location)) {
    out.type = CU_MEM_LOCATION_TYPE_DEVICE;
    out.id = device->handle();
    return out;
  }
  const Host& host = std::get<Host>(location);
  if (host.current_numa) {
    out.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  } else if (host.numa_id) {
    if (*host.numa_id < 0) {
      throw std::invalid_argument("Host::numa_id " + std::to_string(*host.numa_id) +
                                  " is negative");
    }
    out.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    out.id = *host.numa_id;
  } else {
    out.type = CU_MEM_LOCATION_TYPE_HOST;
  }
  return out;
}

std::optional<Location> from_cu_location(CUmemLocationType type, int id) {
  switch (type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return Location(Device(ordinal_of(id)));
    case CU_MEM_LOCATION_TYPE_HOST:
      return Location(Host{});
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return Location(Host::numa(id));
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return Location(Host::numa_current());
    default:
      return std::nullopt;  // CU_MEM_LOCATION_TYPE_INVALID: unset, or not uniform
  }
}

}  // namespace detail
}  // namespace cuwrap
