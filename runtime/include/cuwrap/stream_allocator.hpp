// StreamOrderedAllocator: a standard allocator over a cuwrap memory resource, ordered on
// one stream; what thrust's execution policies take for their temporary storage
// (`thrust::cuda::par_nosync(allocator).on(stream.handle())`).
#pragma once

#include <cuwrap/detail/resource_bytes.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <limits>
#include <new>

namespace cuwrap {

/// An allocator of `T` that allocates from a cuwrap memory resource and frees into it,
/// both ordered on one stream (a stream-ordered pool gives the memory back to the next
/// allocation on that stream without a synchronisation).
///
/// Meets the standard Allocator requirements, so thrust takes it for its temporary
/// storage. The resource and the stream must outlive the allocator and its copies; the
/// memory it gives out is `mr`'s (device memory for a DeviceMemoryResource: not for a
/// std::vector). Copies compare equal; so do allocators of the same resource and stream.
///
/// allocate() throws what the resource throws (DriverError, for instance
/// CUDA_ERROR_OUT_OF_MEMORY) and std::bad_array_new_length when `n * sizeof(T)`
/// overflows. deallocate() never throws: a failing free goes to the release-failure
/// handler (docs/errors.md).
///
/// Example:
/// \code
///   cuwrap::StreamOrderedAllocator<char> alloc(pool, stream);
///   thrust::sort(thrust::cuda::par_nosync(alloc).on(stream.handle()), first, last);
/// \endcode
template <class T>
class StreamOrderedAllocator {
  static_assert(alignof(T) <= kResourceAlignment,
                "cuwrap::StreamOrderedAllocator: T needs a larger alignment than memory "
                "resources guarantee (kResourceAlignment)");

 public:
  using value_type = T;

  /// Allocate from `mr`, ordered on `stream`.
  StreamOrderedAllocator(MemoryResource& mr, StreamRef stream)
      : mr_(&mr), stream_(stream.handle()) {}
  /// Rebind an allocator of another type to `T` (same resource and stream).
  template <class U>
  StreamOrderedAllocator(const StreamOrderedAllocator<U>& other) noexcept  // NOLINT
      : mr_(&other.memory_resource()), stream_(other.stream()) {}

  /// Allocate memory for `n` objects of `T`, ordered on the stream.
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(detail::allocate_bytes(*mr_, n * sizeof(T), alignof(T), stream_,
                                                  "cuwrap::StreamOrderedAllocator::allocate"));
  }
  /// Free `p` (from allocate(n)), ordered on the stream; never throws.
  void deallocate(T* p, std::size_t n) noexcept {
    try {
      detail::deallocate_bytes(*mr_, p, n * sizeof(T), stream_);
    } catch (...) {
      detail::report_current_exception("MemoryResource::deallocate", "StreamOrderedAllocator");
    }
  }

  /// Return the resource the allocator allocates from.
  MemoryResource& memory_resource() const noexcept { return *mr_; }
  /// Return the stream the allocations are ordered on.
  CUstream stream() const noexcept { return stream_; }

  /// Return whether both allocate from the same resource on the same stream.
  template <class U>
  friend bool operator==(const StreamOrderedAllocator& a,
                         const StreamOrderedAllocator<U>& b) noexcept {
    return a.mr_ == &b.memory_resource() && a.stream_ == b.stream();
  }

 private:
  MemoryResource* mr_;
  CUstream stream_;
};

}  // namespace cuwrap
