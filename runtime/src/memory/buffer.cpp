// Buffer. See cuwrap/buffer.hpp.
#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>

#include "base/context_registry.hpp"
#include "execution/stream_use.hpp"
#include "ipc/ipc_checks.hpp"
#include "ipc/ipc_imports.hpp"
#include "memory/resource_link.hpp"

#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

std::string bytes(std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

void require_same_size(const char* operation, const char* what_other, std::size_t mine,
                       std::size_t other) {
  if (mine != other) [[unlikely]] {
    throw std::invalid_argument(std::string("Buffer::") + operation + ": the buffer has " +
                                bytes(mine) + " but " + what_other + " has " + bytes(other) +
                                "; sizes must match");
  }
}

// Ask the driver about memory that came without a resource. Returns false when the
// driver does not know the pointer (ordinary pageable host memory). cuPointerGetAttributes
// answers such a pointer with success and a memory type of 0, where cuPointerGetAttribute
// would answer CUDA_ERROR_INVALID_VALUE: no error is provoked to learn it.
bool query_pointer(CUdeviceptr ptr, CUpointer_attribute attribute, void* value) {
  detail::ensure_driver_initialized();
  unsigned int type = 0;
  std::array<CUpointer_attribute, 2> attributes{CU_POINTER_ATTRIBUTE_MEMORY_TYPE, attribute};
  std::array<void*, 2> values{&type, value};
  const auto ask = [&] {
    return driver::raw::cuPointerGetAttributes(static_cast<unsigned int>(attributes.size()),
                                               attributes.data(), values.data(), ptr);
  };
  CUresult status = ask();
  if (status == CUDA_ERROR_INVALID_CONTEXT) {
    const detail::ScopedCurrentOrPrimary scope(0);
    status = ask();
  }
  detail::check(status, "cuPointerGetAttributes");
  return type != 0;
}

// Where foreign memory lives: {device-accessible, host-accessible}.
std::pair<bool, bool> query_access(CUdeviceptr ptr) {
  unsigned int type = 0;
  if (!query_pointer(ptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &type)) {
    return {false, true};  // pageable host memory
  }
  int managed = 0;
  query_pointer(ptr, CU_POINTER_ATTRIBUTE_IS_MANAGED, &managed);
  if (managed != 0 || type == CU_MEMORYTYPE_HOST) {
    return {true, true};  // page-locked or managed
  }
  if (type == CU_MEMORYTYPE_DEVICE) {
    return {true, false};
  }
  return {false, true};  // not CUDA's: ordinary host memory
}

// The device-to-device copy of copy_to/copy_from, once their checks passed.
void copy_device(CUdeviceptr dst, CUdeviceptr src, std::size_t n, StreamRef stream) {
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::copy");
  if (n == 0) {
    return;
  }
  detail::check_on_stream(stream, "cuMemcpyAsync",
                          [&] { return driver::raw::cuMemcpyAsync(dst, src, n, handle); });
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): the moved-from address and size form a valid BufferRef
// The address and size are taken in the body: BufferRef(ptr, size) checks its arguments
// (and may throw), which a move of a valid Buffer never needs.
Buffer::Buffer(Buffer&& other) noexcept
    : link_(std::move(other.link_)),
      stream_(std::move(other.stream_)),
      import_pool_(std::exchange(other.import_pool_, nullptr)),
      mapped_(std::exchange(other.mapped_, false)) {
  ptr_ = std::exchange(other.ptr_, kClosedAddress);
  size_ = std::exchange(other.size_, 0);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Buffer::~Buffer() { close(); }

namespace {

void require_resource(const MemoryResource* mr) {
  if (mr == nullptr) {
    throw std::invalid_argument(
        "Buffer::adopt: the memory resource is null; a view of memory that something else "
        "frees is BufferRef::from_handle(ptr, size)");
  }
}

}  // namespace

Buffer Buffer::adopt(CUdeviceptr ptr, std::size_t size, MemoryResource* mr) {
  require_resource(mr);
  Buffer buffer;
  buffer.ptr_ = ptr;
  buffer.size_ = size;
  buffer.link_ = mr->link_;
  return buffer;
}

Buffer Buffer::adopt(CUdeviceptr ptr, std::size_t size, MemoryResource* mr, StreamRef stream) {
  require_resource(mr);
  stream.require_open("from_handle");
  Buffer buffer;
  buffer.ptr_ = ptr;
  buffer.size_ = size;
  buffer.link_ = mr->link_;
  buffer.stream_ = stream.share();
  return buffer;
}

Buffer Buffer::from_ipc_descriptor(DeviceMemoryResource& mr, const IPCBufferDescriptor& descriptor,
                                   StreamRef stream) {
  if (!mr.is_open()) {
    throw std::logic_error("Buffer::from_ipc_descriptor: the DeviceMemoryResource is closed");
  }
  if (!mr.is_ipc_enabled()) {
    throw std::logic_error(
        "Buffer::from_ipc_descriptor: the DeviceMemoryResource is not IPC-enabled; import "
        "the exporting pool with DeviceMemoryResource::from_allocation_handle first");
  }
  if (descriptor.pool_id != mr.pool_id()) {
    throw std::invalid_argument(
        "Buffer::from_ipc_descriptor: the descriptor comes from another pool than this "
        "DeviceMemoryResource (pool ids differ); import it into the pool it was exported from");
  }
  stream.require_open("from_ipc_descriptor");
  CUmemPoolPtrExportData data{};
  static_assert(sizeof(data) == sizeof(descriptor.payload));
  std::memcpy(&data, descriptor.payload.data(), sizeof(data));
  const CUmemoryPool pool = mr.handle();
  // The driver answers a repeated import of one allocation with the first's address (a
  // pinned pool's with CUDA_ERROR_ALREADY_MAPPED) and unmaps it for all importers at the
  // first free: an import this process holds is reused and counted, and the lock keeps
  // the last holder's free from racing this import.
  const std::unique_lock<std::mutex> lock = detail::lock_ipc_imports();
  CUdeviceptr ptr = detail::held_ipc_import(pool, data);
  const bool held = ptr != 0;  // by another Buffer
  if (!held) {
    detail::check_on_stream(stream, "cuMemPoolImportPointer",
                            [&] { return driver::raw::cuMemPoolImportPointer(&ptr, pool, &data); });
  }
  // The descriptor's size is the peer's word; the driver's range of the import is the
  // truth. A lie is refused before a Buffer exists, and the import is released unless
  // another Buffer holds it. Every import is checked, a repeated one too.
  Buffer buffer;
  try {
    if (descriptor.size > std::numeric_limits<std::size_t>::max()) {
      throw std::invalid_argument("Buffer::from_ipc_descriptor: the descriptor claims " +
                                  std::to_string(descriptor.size) +
                                  " bytes, more than this process can address; refused");
    }
    CUdeviceptr base = 0;
    std::size_t range = 0;
    detail::check_on_stream(stream, "cuMemGetAddressRange",
                            [&] { return driver::raw::cuMemGetAddressRange(&base, &range, ptr); });
    detail::check_imported_range("Buffer::from_ipc_descriptor", ptr, 0, descriptor.size, base,
                                 range);
    buffer = adopt(ptr, static_cast<std::size_t>(descriptor.size), &mr, stream);
    detail::add_ipc_import_holder(pool, ptr, data);
  } catch (...) {
    if (buffer.is_open()) {
      static_cast<void>(buffer.release());  // frees nothing: the import is released below
    }
    if (!held) {
      const CUstream handle = stream.handle();
      try {  // in the stream's context where the current one is not the import's
        detail::check_on_stream(stream, "cuMemFreeAsync",
                                [&] { return driver::raw::cuMemFreeAsync(ptr, handle); });
      } catch (const DriverError& e) {
        detail::report_release_failure(e.code(), "cuMemFreeAsync", "Buffer::from_ipc_descriptor");
      }
    }
    throw;
  }
  buffer.import_pool_ = pool;
  buffer.mapped_ = true;
  return buffer;
}

IPCBufferDescriptor Buffer::ipc_descriptor() const { return get_ipc_descriptor(); }

IPCBufferDescriptor Buffer::get_ipc_descriptor() const {
  require_open("get_ipc_descriptor");
  const auto* pool = dynamic_cast<const DeviceMemoryResource*>(memory_resource());
  if (pool == nullptr || !pool->is_ipc_enabled()) {
    throw std::logic_error(
        "Buffer::get_ipc_descriptor: the buffer does not come from an IPC-enabled "
        "DeviceMemoryResource (DeviceMemoryResourceOptions{.ipc_enabled = true})");
  }
  if (!pool->is_open()) {
    // close() gave up the pool's export, which the driver needs to export a buffer.
    throw std::logic_error(
        "Buffer::get_ipc_descriptor: the buffer's DeviceMemoryResource is closed; export "
        "buffers before closing their pool");
  }
  if (ptr_ == 0) {
    throw std::logic_error(
        "Buffer::get_ipc_descriptor: the buffer has 0 bytes, so no allocation to export");
  }
  const detail::ScopedContext scope(pool->device_id());
  const CUmemPoolPtrExportData data = driver::cuMemPoolExportPointer(ptr_);
  IPCBufferDescriptor descriptor;
  static_assert(sizeof(data) == sizeof(descriptor.payload));
  std::memcpy(descriptor.payload.data(), &data, sizeof(data));
  descriptor.size = size_;
  descriptor.pool_id = pool->pool_id();
  return descriptor;
}

void Buffer::set_deallocation_stream(StreamRef stream) {
  require_open("set_deallocation_stream");
  stream.require_open("set_deallocation_stream");
  stream_ = stream.share();
}

CUdeviceptr Buffer::release() {
  require_open("release");
  if (import_pool_ != nullptr) {  // the caller takes over this Buffer's hold of the import
    const std::unique_lock<std::mutex> lock = detail::lock_ipc_imports();
    detail::drop_ipc_import_holder(std::exchange(import_pool_, nullptr), ptr_);
  }
  const CUdeviceptr ptr = std::exchange(ptr_, kClosedAddress);
  mapped_ = false;
  size_ = 0;
  link_.reset();
  stream_.close();
  return ptr;
}

void Buffer::copy_to(Buffer& dst, StreamRef stream) const {
  require_open("copy_to");
  if (!dst.is_open()) {
    throw std::logic_error("Buffer::copy_to: the destination Buffer is closed");
  }
  require_same_size("copy_to", "the destination buffer", size_, dst.size_);
  copy_device(dst.ptr_, ptr_, size_, stream);
}

void Buffer::copy_from(const Buffer& src, StreamRef stream) {
  require_open("copy_from");
  if (!src.is_open()) {
    throw std::logic_error("Buffer::copy_from: the source Buffer is closed");
  }
  require_same_size("copy_from", "the source buffer", size_, src.size_);
  copy_device(ptr_, src.ptr_, size_, stream);
}

void BufferRef::copy_to(BufferRef dst, StreamRef stream) const {
  require_open("copy_to");
  require_same_size("copy_to", "the destination memory", size_, dst.size());
  copy_device(dst.handle(), ptr_, size_, stream);
}

void BufferRef::copy_from(BufferRef src, StreamRef stream) const {
  require_open("copy_from");
  require_same_size("copy_from", "the source memory", size_, src.size());
  copy_device(ptr_, src.handle(), size_, stream);
}

void BufferRef::copy_from(std::span<const std::byte> host, StreamRef stream) const {
  require_open("copy_from");
  require_same_size("copy_from", "the host span", size_, host.size());
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::copy_from");
  const CUdeviceptr dst_ptr = ptr_;
  if (host.empty()) {
    return;
  }
  // cuMemcpyAsync infers the direction: the buffer may itself be host memory (pinned,
  // managed), which cuMemcpyHtoDAsync refuses as a destination.
  const auto src_ptr = reinterpret_cast<CUdeviceptr>(host.data());
  detail::check_on_stream(stream, "cuMemcpyAsync", [&] {
    return driver::raw::cuMemcpyAsync(dst_ptr, src_ptr, host.size(), handle);
  });
}

void BufferRef::copy_to(std::span<std::byte> host, StreamRef stream) const {
  require_open("copy_to");
  require_same_size("copy_to", "the host span", size_, host.size());
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::copy_to");
  const CUdeviceptr src_ptr = ptr_;
  if (host.empty()) {
    return;
  }
  // cuMemcpyAsync infers the direction: the buffer may itself be host memory (a pinned
  // host pool's), which cuMemcpyDtoHAsync refuses as a source (CUDA_ERROR_INVALID_VALUE).
  const auto dst_ptr = reinterpret_cast<CUdeviceptr>(host.data());
  detail::check_on_stream(stream, "cuMemcpyAsync", [&] {
    return driver::raw::cuMemcpyAsync(dst_ptr, src_ptr, host.size(), handle);
  });
}

void BufferRef::copy_to(BufferRef dst) const {
  require_open("copy_to");
  require_same_size("copy_to", "the destination memory", size_, dst.size());
  detail::copy_blocking(dst.handle(), ptr_, size_);
}

void BufferRef::copy_from(BufferRef src) const {
  require_open("copy_from");
  require_same_size("copy_from", "the source memory", size_, src.size());
  detail::copy_blocking(ptr_, src.handle(), size_);
}

void BufferRef::copy_from(std::span<const std::byte> host) const {
  require_open("copy_from");
  require_same_size("copy_from", "the host span", size_, host.size());
  detail::copy_blocking(ptr_, reinterpret_cast<CUdeviceptr>(host.data()), size_);
}

void BufferRef::copy_to(std::span<std::byte> host) const {
  require_open("copy_to");
  require_same_size("copy_to", "the host span", size_, host.size());
  detail::copy_blocking(reinterpret_cast<CUdeviceptr>(host.data()), ptr_, size_);
}

void BufferRef::fill(std::uint8_t value, StreamRef stream) const {
  require_open("fill");
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::fill");
  const CUdeviceptr ptr = ptr_;
  const std::size_t n = size_;
  if (n == 0) {
    return;
  }
  detail::check_on_stream(stream, "cuMemsetD8Async",
                          [&] { return driver::raw::cuMemsetD8Async(ptr, value, n, handle); });
}

void BufferRef::fill(std::uint16_t value, StreamRef stream) const {
  require_open("fill");
  if (size_ % 2 != 0) {
    throw std::invalid_argument(
        "Buffer::fill: a 16-bit pattern needs a size that is a multiple "
        "of 2, but the buffer has " +
        bytes(size_));
  }
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::fill");
  const CUdeviceptr ptr = ptr_;
  const std::size_t n = size_ / 2;
  if (n == 0) {
    return;
  }
  detail::check_on_stream(stream, "cuMemsetD16Async",
                          [&] { return driver::raw::cuMemsetD16Async(ptr, value, n, handle); });
}

void BufferRef::fill(std::uint32_t value, StreamRef stream) const {
  require_open("fill");
  if (size_ % 4 != 0) {
    throw std::invalid_argument(
        "Buffer::fill: a 32-bit pattern needs a size that is a multiple "
        "of 4, but the buffer has " +
        bytes(size_));
  }
  const CUstream handle = stream.handle();
  const detail::ContextUse use = detail::use_stream(stream, "Buffer::fill");
  const CUdeviceptr ptr = ptr_;
  const std::size_t n = size_ / 4;
  if (n == 0) {
    return;
  }
  detail::check_on_stream(stream, "cuMemsetD32Async",
                          [&] { return driver::raw::cuMemsetD32Async(ptr, value, n, handle); });
}

void BufferRef::fill(int value, StreamRef stream) const {
  if (value < 0 || value > 255) {
    throw std::invalid_argument("Buffer::fill: value " + std::to_string(value) +
                                " is not a byte (0..255); fill(int, stream) fills bytes, as "
                                "cuda.core's fill(value): for wider words pass "
                                "fill(value, width, stream) or a std::uint16_t or "
                                "std::uint32_t value");
  }
  fill(static_cast<std::uint8_t>(value), stream);
}

void BufferRef::fill(std::int64_t value, int width, StreamRef stream) const {
  if (width != 1 && width != 2 && width != 4) {
    throw std::invalid_argument("Buffer::fill: width " + std::to_string(width) +
                                " is not 1, 2 or 4 bytes");
  }
  const std::int64_t limit = (std::int64_t{1} << (8 * width)) - 1;
  if (value < 0 || value > limit) {
    throw std::invalid_argument("Buffer::fill: value " + std::to_string(value) +
                                " does not fit in " + bytes(static_cast<std::size_t>(width)) +
                                " (0.." + std::to_string(limit) + ")");
  }
  switch (width) {
    case 1:
      fill(static_cast<std::uint8_t>(value), stream);
      break;
    case 2:
      fill(static_cast<std::uint16_t>(value), stream);
      break;
    default:
      fill(static_cast<std::uint32_t>(value), stream);
      break;
  }
}

namespace {

// Throw std::invalid_argument unless [offset, offset + count) lies within `size` bytes.
void require_within(const char* function, std::size_t offset, std::size_t count, std::size_t size) {
  if (offset > size || count > size - offset) {
    throw std::invalid_argument(std::string(function) + ": offset " + std::to_string(offset) +
                                " and count " + std::to_string(count) + " reach past the " +
                                bytes(size));
  }
}

}  // namespace

BufferRef BufferRef::slice(std::size_t offset, std::size_t count) const {
  require_open("slice");
  require_within("BufferRef::slice", offset, count, size_);
  return {ptr_ + offset, count};
}

void BufferRef::throw_null_address() {
  throw std::invalid_argument(
      "cuwrap::BufferRef(CUdeviceptr, size): the address is 0 but the size is not (only an "
      "empty BufferRef may have no address)");
}

void Buffer::close(StreamRef stream) {
  if (!is_open()) {
    return;
  }
  if (link_ && !free_memory(stream)) {
    const std::size_t leaked = size_;
    reset();
    throw std::logic_error(
        "Buffer::close: the buffer's memory resource was destroyed before the buffer and "
        "left no way to free its memory: " +
        bytes(leaked) + " leaked; close buffers before destroying their resource");
  }
  reset();  // when the free throws, the buffer stays open
}

void Buffer::close() noexcept {
  if (!is_open()) {
    return;
  }
  if (link_) {
    try {
      // The stream to order the free on went with its context: reported once, not used.
      const detail::ContextKey key = detail::stream_context_key(stream_);
      if (detail::context_recorded_destroyed(key.id)) [[unlikely]] {
        detail::report_release_failure(CUDA_ERROR_CONTEXT_IS_DESTROYED, "Buffer::close",
                                       "Buffer whose stream's context was destroyed (its memory "
                                       "is not freed)");
        if (import_pool_ != nullptr) {  // its import went with the context too
          const std::unique_lock<std::mutex> lock = detail::lock_ipc_imports();
          detail::drop_ipc_import_holder(import_pool_, ptr_);
        }
        reset();
        return;
      }
      // A free refused because that context was destroyed meanwhile is reported as such.
      const detail::ContextUse use(
          key.context, key.id, "Stream",
          stream_.is_open() ? static_cast<const void*>(stream_.handle()) : nullptr,
          "Buffer::close");
      if (!free_memory(stream_.is_open() ? StreamRef(stream_) : kLegacyDefaultStream)) {
        detail::report_release_failure(CUDA_ERROR_ILLEGAL_STATE, "MemoryResource::deallocate",
                                       "Buffer whose memory resource was destroyed first "
                                       "(its memory leaks)");
      }
    } catch (...) {  // any exception, a user resource's own too: reported, never thrown
      detail::report_current_exception("MemoryResource::deallocate", "Buffer");
    }
  }
  reset();
}

bool Buffer::free_memory(StreamRef stream) {
  if (import_pool_ == nullptr) {
    return free_owned_memory(stream);
  }
  // Imports of one pointer share the driver's one mapping: the last holder frees it,
  // under the lock that imports take. A failed free keeps this Buffer's hold (it stays
  // open where close(stream) throws).
  const std::unique_lock<std::mutex> lock = detail::lock_ipc_imports();
  const bool freed =
      detail::ipc_import_holders(import_pool_, ptr_) > 1 || free_owned_memory(stream);
  detail::drop_ipc_import_holder(import_pool_, ptr_);
  return freed;
}

bool Buffer::free_owned_memory(StreamRef stream) {
  if (MemoryResource* mr = link_->alive(); mr != nullptr) {
    mr->deallocate(ptr_, size_, stream);
    return true;
  }
  if (link_->detached_deallocate != nullptr) {
    link_->detached_deallocate(ptr_, size_, stream.share());
    return true;
  }
  return false;
}

void Buffer::reset() noexcept {
  import_pool_ = nullptr;
  mapped_ = false;
  ptr_ = kClosedAddress;
  size_ = 0;
  link_.reset();
  stream_.close();
}

MemoryResource* Buffer::memory_resource() const noexcept {
  return link_ ? link_->alive() : nullptr;
}

namespace {

// The bytes at `ptr`, when `host_accessible` (what the buffer or its resource answered).
std::span<std::byte> host_bytes(CUdeviceptr ptr, std::size_t size, bool host_accessible) {
  if (!host_accessible) {
    throw std::logic_error(
        "Buffer::host_span: the memory is not host-accessible (device memory); copy it "
        "to the host with copy_to, or allocate from a pinned or managed resource");
  }
  return {reinterpret_cast<std::byte*>(ptr), size};
}

}  // namespace

std::span<std::byte> BufferRef::host_span() const {
  require_open("host_span");
  return host_bytes(ptr_, size_, is_host_accessible());
}

std::span<std::byte> Buffer::host_span() const {
  require_open("host_span");
  return host_bytes(ptr_, size_, is_host_accessible());
}

int Buffer::device_id() const {
  require_open("device_id");
  if (const MemoryResource* mr = memory_resource(); mr != nullptr) {
    return mr->device_id();
  }
  return BufferRef::device_id();
}

int BufferRef::device_id() const {
  require_open("device_id");
  int ordinal = -1;
  if (!query_pointer(ptr_, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &ordinal)) {
    return -1;
  }
  return ordinal;
}

bool Buffer::is_device_accessible() const {
  require_open("is_device_accessible");
  const MemoryResource* mr = memory_resource();
  return mr != nullptr ? mr->is_device_accessible() : BufferRef::is_device_accessible();
}

bool BufferRef::is_device_accessible() const {
  require_open("is_device_accessible");
  return query_access(ptr_).first;
}

bool Buffer::is_host_accessible() const {
  require_open("is_host_accessible");
  const MemoryResource* mr = memory_resource();
  return mr != nullptr ? mr->is_host_accessible() : BufferRef::is_host_accessible();
}

bool BufferRef::is_host_accessible() const {
  require_open("is_host_accessible");
  return query_access(ptr_).second;
}

void BufferRef::throw_closed(const char* operation) {
  // Only a Buffer can be closed (a BufferRef from an address always names memory).
  throw std::logic_error(std::string("Buffer::") + operation + " on a closed Buffer");
}

void BufferRef::require_multiple(const char* operation, std::size_t element_size) const {
  if (size_ % element_size != 0) {
    throw std::invalid_argument(std::string("Buffer::") + operation + ": the buffer has " +
                                bytes(size_) + ", not a multiple of the element size " +
                                std::to_string(element_size));
  }
}

}  // namespace cuwrap
