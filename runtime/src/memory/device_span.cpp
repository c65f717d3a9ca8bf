// DeviceSpan's non-template part: its error messages and the element copy.
#include "base/context_registry.hpp"
#include "memory/blocking.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device_span.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cuwrap::detail {

void throw_device_span_null(std::size_t count) {
  throw std::invalid_argument("cuwrap::DeviceSpan(address, count): the address is 0 but count is " +
                              std::to_string(count) + " (only an empty span may have no address)");
}

void throw_device_span_range(const char* operation, std::size_t offset, std::size_t count,
                             std::size_t size) {
  throw std::invalid_argument(std::string(operation) + ": offset " + std::to_string(offset) +
                              " and count " + std::to_string(count) + " reach past the span's " +
                              std::to_string(size) + " elements");
}

void throw_device_span_layout(const char* operation, CUdeviceptr address, std::size_t bytes,
                              std::size_t element_size, std::size_t alignment) {
  if (bytes % element_size != 0) {
    throw std::invalid_argument(
        std::string(operation) + ": the memory has " + std::to_string(bytes) +
        " bytes, not a multiple of the element size " + std::to_string(element_size));
  }
  throw std::invalid_argument(std::string(operation) + ": the address " + std::to_string(address) +
                              " is not aligned to the element's alignment " +
                              std::to_string(alignment));
}

void copy_elements(const char* operation, CUdeviceptr dst, std::size_t dst_count, CUdeviceptr src,
                   std::size_t src_count, std::size_t element_size, StreamRef stream) {
  if (dst_count != src_count) [[unlikely]] {
    throw std::invalid_argument(std::string(operation) + ": the destination has " +
                                std::to_string(dst_count) + " elements but the source has " +
                                std::to_string(src_count));
  }
  const ContextKey key = stream_context_key(stream);
  const ContextUse use(key.context, key.id, "Stream",
                       reinterpret_cast<const void*>(stream.handle()), operation);
  if (dst_count == 0) {
    return;
  }
  const CUstream handle = stream.handle();
  const std::size_t bytes = dst_count * element_size;
  // cuMemcpyAsync infers the direction, so either side may be host, pinned or managed.
  check_on_stream(stream, "cuMemcpyAsync",
                  [&] { return driver::raw::cuMemcpyAsync(dst, src, bytes, handle); });
}

namespace {

// The device whose primary context a blocking copy uses when no context is current: the
// one that `dst`'s or `src`'s memory belongs to, else device 0 (two host ranges).
int device_of_copy(CUdeviceptr dst, CUdeviceptr src) {
  for (const CUdeviceptr ptr : {dst, src}) {
    int ordinal = -1;
    if (driver::raw::cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) ==
            CUDA_SUCCESS &&
        ordinal >= 0) {
      return ordinal;
    }
  }
  return 0;
}

}  // namespace

void run_blocking(CUdeviceptr ptr, CUdeviceptr other,
                  const std::function<void(CUstream)>& enqueue) {
  ensure_driver_initialized();
  const int ordinal = current_context() != nullptr ? 0 : device_of_copy(ptr, other);
  const ScopedCurrentOrPrimary scope(ordinal);
  // The legacy default stream waits for the context's blocking streams, as cudaMemcpy
  // does.
  enqueue(CU_STREAM_LEGACY);
  driver::cuStreamSynchronize(CU_STREAM_LEGACY);
}

void copy_blocking(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  if (bytes == 0) {
    return;
  }
  // cuMemcpyAsync infers the direction, so either side may be host memory.
  run_blocking(dst, src, [&](CUstream stream) { driver::cuMemcpyAsync(dst, src, bytes, stream); });
}

void copy_elements_blocking(const char* operation, CUdeviceptr dst, std::size_t dst_count,
                            CUdeviceptr src, std::size_t src_count, std::size_t element_size) {
  if (dst_count != src_count) [[unlikely]] {
    throw std::invalid_argument(std::string(operation) + ": the destination has " +
                                std::to_string(dst_count) + " elements but the source has " +
                                std::to_string(src_count));
  }
  copy_blocking(dst, src, dst_count * element_size);
}

}  // namespace cuwrap::detail
