// Raw allocations from a MemoryResource. See cuwrap/detail/resource_bytes.hpp.
#include <cuwrap/detail/resource_bytes.hpp>
#include <cuwrap/memory_resource.hpp>

#include <bit>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cuwrap::detail {

void require_resource_alignment(std::size_t alignment, const char* caller) {
  if (!std::has_single_bit(alignment)) {
    throw std::invalid_argument(std::string(caller) + ": alignment " + std::to_string(alignment) +
                                " is not a power of two (the resource supports powers of two "
                                "up to " +
                                std::to_string(kResourceAlignment) + ")");
  }
  if (alignment > kResourceAlignment) {
    throw std::invalid_argument(std::string(caller) + ": alignment " + std::to_string(alignment) +
                                " exceeds the " + std::to_string(kResourceAlignment) +
                                " bytes the resource guarantees");
  }
}

// The stream of a CCCL stream_ref or an allocator: a null handle is the legacy default
// stream, as in the runtime API (cuda::stream_ref{} holds one).
namespace {
StreamRef stream_of(CUstream stream) {
  return stream == nullptr ? kLegacyDefaultStream : StreamRef(stream);
}
}  // namespace

void* allocate_bytes(MemoryResource& mr, std::size_t bytes, std::size_t alignment, CUstream stream,
                     const char* caller) {
  require_resource_alignment(alignment, caller);
  const StreamRef on = stream_of(stream);
  const CUdeviceptr ptr = mr.allocate(bytes, on).release();
  if (ptr % alignment != 0) [[unlikely]] {
    mr.deallocate(ptr, bytes, on);
    std::ostringstream message;
    message << caller << ": the memory resource returned 0x" << std::hex << ptr << std::dec
            << ", which is not aligned to the " << alignment << " bytes asked for";
    throw std::logic_error(message.str());
  }
  return reinterpret_cast<void*>(ptr);
}

void deallocate_bytes(MemoryResource& mr, void* ptr, std::size_t bytes, CUstream stream) {
  mr.deallocate(reinterpret_cast<CUdeviceptr>(ptr), bytes, stream_of(stream));
}

void* allocate_bytes_sync(MemoryResource& mr, std::size_t bytes, std::size_t alignment,
                          const char* caller) {
  void* ptr = allocate_bytes(mr, bytes, alignment, CU_STREAM_LEGACY, caller);
  try {
    kLegacyDefaultStream.sync();
  } catch (...) {
    deallocate_bytes(mr, ptr, bytes, CU_STREAM_LEGACY);
    throw;
  }
  return ptr;
}

void deallocate_bytes_sync(MemoryResource& mr, void* ptr, std::size_t bytes) {
  deallocate_bytes(mr, ptr, bytes, CU_STREAM_LEGACY);
  kLegacyDefaultStream.sync();
}

void require_access(const MemoryResource& mr, bool device, bool host, const char* caller) {
  if (device && !mr.is_device_accessible()) {
    throw std::invalid_argument(std::string(caller) +
                                ": cuda::mr::device_accessible is claimed for a memory resource "
                                "whose memory the device cannot access (is_device_accessible() "
                                "is false)");
  }
  if (host && !mr.is_host_accessible()) {
    throw std::invalid_argument(std::string(caller) +
                                ": cuda::mr::host_accessible is claimed for a memory resource "
                                "whose memory the host cannot access (is_host_accessible() is "
                                "false)");
  }
}

}  // namespace cuwrap::detail
