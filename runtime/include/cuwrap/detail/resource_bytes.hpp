// Raw allocations from a MemoryResource (an address, not a Buffer), with CCCL's
// alignment argument checked: the non-template core of CcclResource
// (<cuwrap/cccl_resource.hpp>) and StreamOrderedAllocator (<cuwrap/stream_allocator.hpp>).
// Free of CCCL, so the library compiles it without CCCL's headers.
#pragma once

#include <cuwrap/memory_resource.hpp>

#include <cuda.h>

#include <cstddef>

namespace cuwrap {

namespace detail {

/// Throw std::invalid_argument, naming `caller`, `alignment` and kResourceAlignment,
/// unless `alignment` is a power of two no larger than kResourceAlignment.
void require_resource_alignment(std::size_t alignment, const char* caller);

/// Allocate `bytes` from `mr` ordered on `stream` and give up the Buffer's ownership:
/// the caller frees the address with deallocate_bytes.
///
/// Checks `alignment` first (require_resource_alignment); an address the resource
/// returns misaligned is freed and std::logic_error names it. 0 bytes may give nullptr.
void* allocate_bytes(MemoryResource& mr, std::size_t bytes, std::size_t alignment, CUstream stream,
                     const char* caller);
/// Free `ptr` (`bytes` from allocate_bytes) through `mr`, ordered on `stream`.
void deallocate_bytes(MemoryResource& mr, void* ptr, std::size_t bytes, CUstream stream);
/// allocate_bytes on the legacy default stream, then synchronise it: the memory is
/// usable from any stream on return.
void* allocate_bytes_sync(MemoryResource& mr, std::size_t bytes, std::size_t alignment,
                          const char* caller);
/// deallocate_bytes on the legacy default stream, then synchronise it.
void deallocate_bytes_sync(MemoryResource& mr, void* ptr, std::size_t bytes);
/// Throw std::invalid_argument, naming `caller`, when `mr` lacks an accessibility that is
/// claimed for it (`device`: is_device_accessible(); `host`: is_host_accessible()).
void require_access(const MemoryResource& mr, bool device, bool host, const char* caller);

}  // namespace detail
}  // namespace cuwrap
