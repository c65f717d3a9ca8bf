// Managed (unified) memory: advice, prefetch, discard and range attribute queries
// (cuda.core's ManagedBuffer and cuda.core.managed_memory / cuda.core.utils batch helpers).
//
// Version differences live in managed_memory.cpp: with CUDA 12 headers advice and
// prefetch go through cuMemAdvise_v2 / cuMemPrefetchAsync_v2 (CUmemLocation forms, driver
// 12.2+), with CUDA 13 headers through cuMemAdvise / cuMemPrefetchAsync, which take the
// CUmemLocation themselves. Discards and the batched forms need CUDA 13 (toolkit and
// driver); prefetch_batch falls back to one prefetch per buffer where they are missing.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <span>
#include <variant>
#include <vector>

namespace cuwrap {

/// Host memory as a managed-memory location (cuda.core's Host).
///
/// Host() is any host memory; Host::numa(n) a given NUMA node; Host::numa_current() the
/// NUMA node of the calling thread.
struct Host {
  /// The NUMA node, or none for "any host memory".
  std::optional<int> numa_id = std::nullopt;
  /// Whether the location is the calling thread's NUMA node (numa_id is then unset).
  bool current_numa = false;

  /// Return the location of host NUMA node `id`.
  static Host numa(int id) { return Host{id, false}; }
  /// Return the location of the calling thread's NUMA node.
  static Host numa_current() { return Host{std::nullopt, true}; }
  /// Return whether both name the same host location.
  friend bool operator==(const Host&, const Host&) = default;
};

/// Where managed memory is preferred, prefetched or accessed from: a device or the host.
using Location = std::variant<Device, Host>;

/// A non-owning view of a managed-memory range with cuda.core's ManagedBuffer API.
///
/// cuda.core returns a ManagedBuffer subclass from ManagedMemoryResource.allocate();
/// cuwrap's resources return plain Buffers, so the advice API is this view over one
/// (the Buffer must outlive it). Setters issue cuMemAdvise, getters query
/// cuMemRangeGetAttribute, prefetch/discard are ordered on a stream.
///
/// As cuda.core, every setter, prefetch and discard first checks that the memory is
/// managed (one cuPointerGetAttribute call) and throws std::invalid_argument when it is
/// not, also for a view made by from_handle.
///
/// Example:
/// \code
///   cuwrap::ManagedMemoryResource mr;
///   cuwrap::Buffer buf = mr.allocate(1 << 20, stream);
///   cuwrap::ManagedBufferRef managed(buf);
///   managed.set_read_mostly(true);
///   managed.set_preferred_location(dev);
///   managed.prefetch(dev, stream);
/// \endcode
class ManagedBufferRef {
 public:
  /// View all of `buffer`, which must hold managed memory.
  ///
  /// Throws std::invalid_argument when the memory is not managed (asks the driver
  /// once: cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED)), logic_error when
  /// the buffer is closed.
  explicit ManagedBufferRef(const Buffer& buffer);
  /// View `size` bytes of managed memory at `ptr` (checked by each operation, not here).
  static ManagedBufferRef from_handle(CUdeviceptr ptr, std::size_t size);

  /// Return whether the range is advised read-mostly (CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY).
  bool read_mostly() const;
  /// Set or unset the read-mostly advice (CU_MEM_ADVISE_[UN]SET_READ_MOSTLY).
  void set_read_mostly(bool value);
  /// Return the preferred location, or none when unset or not the same for the range.
  std::optional<Location> preferred_location() const;
  /// Set the preferred location; std::nullopt unsets it.
  void set_preferred_location(const std::optional<Location>& location);
  /// Return the devices advised as accessing the range (CU_MEM_ADVISE_SET_ACCESSED_BY).
  std::vector<Device> accessed_by() const;
  /// Advise that `location` accesses the range (CU_MEM_ADVISE_SET_ACCESSED_BY).
  ///
  /// Throws std::invalid_argument for a host NUMA node (Host::numa, Host::numa_current):
  /// this advice takes a Device or Host(), as cuda.core.
  void add_accessed_by(const Location& location);
  /// Withdraw that advice (CU_MEM_ADVISE_UNSET_ACCESSED_BY).
  ///
  /// Does nothing for a host NUMA node, which add_accessed_by never accepts (cuda.core's
  /// accessed_by.discard).
  void discard_accessed_by(const Location& location);
  /// Return where the range was last prefetched to, or none when it never was.
  std::optional<Location> last_prefetch_location() const;

  /// Prefetch the range to `location`, ordered on `stream`.
  void prefetch(const Location& location, StreamRef stream) const;
  /// Discard the range's contents, ordered on `stream` (CUDA 13 toolkit and driver).
  ///
  /// Throws UnsupportedError naming 13.0 where the toolkit or driver is older.
  void discard(StreamRef stream) const;
  /// Discard the contents and prefetch the range to `location` (CUDA 13).
  void discard_prefetch(const Location& location, StreamRef stream) const;

  /// Return the address of the range.
  CUdeviceptr handle() const noexcept { return ptr_; }
  /// Return the size of the range in bytes.
  std::size_t size() const noexcept { return size_; }

 private:
  ManagedBufferRef(CUdeviceptr ptr, std::size_t size) noexcept : ptr_(ptr), size_(size) {}

  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

/// Free functions over managed buffers (cuda.core.managed_memory and cuda.core.utils).
namespace managed_memory {

/// Give `advice` for all of `buffer` with `location` (cuMemAdvise).
///
/// For the advice kinds that ignore the location (read-mostly, unset preferred
/// location) any location may be passed. Throws std::invalid_argument when `buffer` is
/// not managed memory, for a host NUMA node with the accessed-by advice kinds, and for a
/// value that is no CUmem_advise (cuda.core's checks).
void advise(const Buffer& buffer, CUmem_advise advice, const Location& location);
/// Prefetch all of `buffer` to `location`, ordered on `stream` (cuMemPrefetchAsync).
///
/// Throws std::invalid_argument when `buffer` is not managed memory.
void prefetch(const Buffer& buffer, const Location& location, StreamRef stream);
/// Discard the contents of `buffer`, ordered on `stream` (cuMemDiscardBatchAsync, CUDA 13).
void discard(const Buffer& buffer, StreamRef stream);
/// Discard and prefetch `buffer` to `location` (cuMemDiscardAndPrefetchBatchAsync, CUDA 13).
void discard_prefetch(const Buffer& buffer, const Location& location, StreamRef stream);

/// Prefetch each of `buffers` to its location, ordered on `stream`.
///
/// `locations` holds one location per buffer, as cuda.core's list of locations. One
/// cuMemPrefetchBatchAsync where toolkit and driver have it (CUDA 13), else a loop of
/// cuMemPrefetchAsync. Throws std::invalid_argument for a null buffer or a count of
/// locations other than buffers.size() (a list of one is not broadcast: pass a single
/// Location for that, as cuda.core), and for a buffer that is not managed memory.
void prefetch_batch(std::span<const Buffer* const> buffers, std::span<const Location> locations,
                    StreamRef stream);
/// Prefetch every one of `buffers` to `location`, ordered on `stream` (cuda.core's
/// single location for all).
void prefetch_batch(std::span<const Buffer* const> buffers, const Location& location,
                    StreamRef stream);
/// Discard the contents of each of `buffers`, ordered on `stream` (CUDA 13).
void discard_batch(std::span<const Buffer* const> buffers, StreamRef stream);
/// Discard each of `buffers` and prefetch it to its location (CUDA 13).
///
/// One location per buffer; throws std::invalid_argument for another count.
void discard_prefetch_batch(std::span<const Buffer* const> buffers,
                            std::span<const Location> locations, StreamRef stream);
/// Discard every one of `buffers` and prefetch it to `location` (CUDA 13).
void discard_prefetch_batch(std::span<const Buffer* const> buffers, const Location& location,
                            StreamRef stream);
/// Return whether prefetch_batch issues one cuMemPrefetchBatchAsync (else a loop).
bool has_native_prefetch_batch();

}  // namespace managed_memory

namespace detail {

/// Return `location` as the driver's CUmemLocation.
CUmemLocation to_cu_location(const Location& location);
/// Return the location a (type, id) pair from the driver names, or none for "invalid".
std::optional<Location> from_cu_location(CUmemLocationType type, int id);

}  // namespace detail
}  // namespace cuwrap
