// Buffer: a span of memory from a memory resource (cuda.core's Buffer), with copies
// and fills ordered on streams.
#pragma once

#include <cuwrap/detail/ranges.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace cuwrap {

class MemoryResource;
class DeviceMemoryResource;
struct IPCBufferDescriptor;  // <cuwrap/ipc.hpp>
struct CopyOptions;          // <cuwrap/copy.hpp>
class VirtualMemoryResource;
namespace detail {
struct ResourceLink;  // runtime/src/memory/resource_link.hpp
void ref_acquire(const ResourceLink* link) noexcept;
void ref_release(const ResourceLink* link) noexcept;
}  // namespace detail

class Buffer;
template <class T>
class DeviceSpan;  // <cuwrap/device_span.hpp>, included at the end of this header

/// Memory of `size()` bytes at `handle()` that this object does not own: what a
/// function that only reads or writes memory takes (a copy, a kernel argument).
///
/// Trivially copyable, passed by value, as a std::span of device memory. It converts
/// implicitly from a Buffer (an owning Buffer is a BufferRef; a closed one throws
/// std::logic_error) and is made from an address of any library with
/// BufferRef(ptr, size) or from_handle(ptr, size). The memory must outlive it. It has
/// every operation that does not free: copies, fills, slice(), as<T>(), host_span().
///
/// Example:
/// \code
///   cuwrap::BufferRef part = buffer.slice(256, 128);
///   other.copy_from(part.slice(0, other.size()), stream);
///   cuwrap::launch(stream, config, kernel, part, part.size());
/// \endcode
class BufferRef {
 public:
  /// Refer to the `size` bytes at `ptr` (device, managed or pinned host memory).
  ///
  /// Throws std::invalid_argument when `ptr` is 0 and `size` is not (only an empty
  /// BufferRef may have no address).
  BufferRef(CUdeviceptr ptr, std::size_t size) : ptr_(ptr), size_(size) {
    if (ptr == 0 && size != 0) [[unlikely]] {
      throw_null_address();
    }
  }
  /// Refer to all of `buffer`; throws std::logic_error when it is closed.
  BufferRef(const Buffer& buffer);  // NOLINT(google-explicit-constructor)

  /// Return a view of the `size` bytes at `ptr`, memory of any library; nothing frees it.
  ///
  /// Never calls the driver. Throws as BufferRef(ptr, size).
  static BufferRef from_handle(CUdeviceptr ptr, std::size_t size) { return {ptr, size}; }

  /// Copy this memory into `dst` (same size; another library's too), ordered on `stream`.
  ///
  /// Throws std::invalid_argument naming both sizes when they differ.
  void copy_to(BufferRef dst, StreamRef stream) const;
  /// Copy the memory `src` (same size) into this memory, ordered on `stream`.
  void copy_from(BufferRef src, StreamRef stream) const;
  /// Copy host memory (exactly size() bytes) into this memory, ordered on `stream`.
  ///
  /// The host memory must stay valid until the stream reaches the copy. With pageable
  /// host memory, `stream` must belong to the memory's device: the driver refuses a
  /// stream of another device (DriverError, CUDA_ERROR_INVALID_VALUE); order it after
  /// that stream's work with Stream::wait.
  void copy_from(std::span<const std::byte> host, StreamRef stream) const;
  /// Copy this memory into host memory (exactly size() bytes), ordered on `stream`.
  ///
  /// The data is there once the stream reaches the copy (sync the stream first). With
  /// pageable host memory, `stream` must belong to the memory's device (see copy_from).
  void copy_to(std::span<std::byte> host, StreamRef stream) const;
  /// Copy a contiguous host range of trivially copyable elements (a std::span<T>, a
  /// std::vector<T>, ...; exactly size() bytes) into this memory.
  ///
  /// `stream` is anything a StreamRef is made from (a Stream, a CUstream, ...).
  template <detail::contiguous_range Range, class S>
  requires(std::is_trivially_copyable_v<detail::range_value_t<Range>>&&
               std::is_convertible_v<const S&, StreamRef>) void copy_from(const Range& host,
                                                                          const S& stream) const {
    copy_from(std::as_bytes(detail::dynamic_span(host)), StreamRef(stream));
  }
  /// Copy this memory into a contiguous host range of trivially copyable elements
  /// (exactly size() bytes).
  template <detail::contiguous_range Range, class S>
  requires(std::is_trivially_copyable_v<detail::range_value_t<Range>> &&
           !std::is_const_v<typename detail::span_of_t<Range>::element_type> &&
           std::is_convertible_v<const S&, StreamRef>) void copy_to(Range&& host,
                                                                    const S& stream) const {
    copy_to(std::as_writable_bytes(detail::dynamic_span(host)), StreamRef(stream));
  }
  /// Set every byte to `value`, ordered on `stream` (cuMemsetD8Async).
  ///
  /// The width of a fill is the type of `value`: std::uint8_t, `int` and `char` fill
  /// bytes (as cuda.core's fill(value)), std::uint16_t and std::uint32_t fill 16- and
  /// 32-bit words, and fill(value, width, stream) says the width; any other type does
  /// not compile.
  void fill(std::uint8_t value, StreamRef stream) const;
  /// Set every 16-bit word to `value` (cuMemsetD16Async).
  ///
  /// Throws std::invalid_argument unless size() is a multiple of 2.
  void fill(std::uint16_t value, StreamRef stream) const;
  /// Set every 32-bit word to `value` (cuMemsetD32Async).
  ///
  /// Throws std::invalid_argument unless size() is a multiple of 4.
  void fill(std::uint32_t value, StreamRef stream) const;
  /// Set every `width`-byte word to `value`, as cuda.core's fill(value, width).
  ///
  /// `width` is 1, 2 or 4. Throws std::invalid_argument (before any driver call) for
  /// another width, a value that does not fit in `width` bytes, or a size that is not
  /// a multiple of `width`.
  void fill(std::int64_t value, int width, StreamRef stream) const;
  /// Set every byte to `value`, as cuda.core's fill(value) (cuMemsetD8Async).
  ///
  /// `value` is a byte: 0..255, else std::invalid_argument naming it, before any driver
  /// call. (A 32-bit pattern is fill(std::uint32_t, stream) or fill(value, 4, stream).)
  void fill(int value, StreamRef stream) const;
  /// Set every byte to the character `value` (`fill('b', stream)`), as cuda.core's
  /// fill(b"b"); a negative char is its unsigned byte.
  void fill(char value, StreamRef stream) const { fill(static_cast<std::uint8_t>(value), stream); }
  /// Not a fill: a value of a type other than std::uint8_t, std::uint16_t, std::uint32_t,
  /// int or char leaves the width unsaid; pass fill(value, width, stream) or a typed value.
  template <class T, class S>
  requires(!std::is_same_v<T, std::uint8_t> && !std::is_same_v<T, std::uint16_t> &&
           !std::is_same_v<T, std::uint32_t> && !std::is_same_v<T, int> &&
           !std::is_same_v<T, char>) void fill(T value, const S& stream) const = delete;

  /// Return the `count` bytes at `offset` of this memory (a view; it frees nothing).
  ///
  /// Throws std::invalid_argument naming offset, count and size when the range does not
  /// lie within this one; std::logic_error on a closed Buffer.
  BufferRef slice(std::size_t offset, std::size_t count) const;
  /// Return the memory as elements of `T` (DeviceSpan, counted in elements).
  ///
  /// Throws std::invalid_argument naming the size when it is not a multiple of
  /// sizeof(T), or the address when it is not aligned for `T`; std::logic_error on a
  /// closed Buffer.
  template <class T>
  DeviceSpan<T> as() const;
  /// Return the memory as host-accessible bytes.
  ///
  /// Throws std::logic_error for memory the host cannot access (device memory). For
  /// stream-ordered allocations, sync the allocation stream before using the span.
  std::span<std::byte> host_span() const;
  /// Return the memory as host-accessible elements of `T`.
  ///
  /// Throws std::invalid_argument unless size() is a multiple of sizeof(T), and as
  /// host_span() does for device memory.
  template <class T>
  requires std::is_trivially_copyable_v<T> std::span<T> host_span()
  const {
    const std::span<std::byte> bytes = host_span();
    require_multiple("host_span", sizeof(T));
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  /// Return the address of the memory (a device pointer; for host memory the same
  /// address the host uses). Throws std::logic_error on a closed Buffer.
  CUdeviceptr handle() const {
    require_open("handle");
    return ptr_;
  }
  /// Return the size in bytes. Throws std::logic_error on a closed Buffer.
  std::size_t size() const {
    require_open("size");
    return size_;
  }
  /// Return the device the memory belongs to (asked of the driver), or -1 for host
  /// memory tied to none.
  int device_id() const;
  /// Return whether the GPU can access the memory (asked of the driver).
  bool is_device_accessible() const;
  /// Return whether the host can access the memory (asked of the driver).
  bool is_host_accessible() const;
  /// Return whether both name the same bytes.
  friend bool operator==(BufferRef a, BufferRef b) noexcept {
    return a.ptr_ == b.ptr_ && a.size_ == b.size_;
  }

 protected:
  /// The address of a closed (or default-constructed, or moved-from) Buffer.
  static constexpr CUdeviceptr kClosedAddress = ~CUdeviceptr{0};

  /// Make the state of a closed Buffer (for Buffer).
  constexpr BufferRef() noexcept : ptr_(kClosedAddress), size_(0) {}
  void require_open(const char* operation) const {
    if (ptr_ == kClosedAddress) [[unlikely]] {
      throw_closed(operation);
    }
  }
  [[noreturn]] static void throw_closed(const char* operation);
  void require_multiple(const char* operation, std::size_t element_size) const;

  CUdeviceptr ptr_;   // kClosedAddress only for a closed Buffer
  std::size_t size_;  // 0 for a closed Buffer

 private:
  [[noreturn]] static void throw_null_address();
};

/// Memory of `size()` bytes at `handle()`; an RAII, move-only owner.
///
/// A Buffer is a BufferRef (as a Stream is a StreamRef): it has the same operations and
/// passes where a BufferRef is taken. It adds the duty to free the memory through the
/// memory resource that made it (or that adopt() names): close(stream) orders the free
/// on `stream`; close() and the destructor order it on the stream the buffer was
/// allocated on (that stream is kept alive for this), or on the legacy default stream
/// when the buffer has none. A view of memory that something else frees is a BufferRef
/// (from_handle, slice()).
///
/// A buffer may outlive its resource object: the built-in resources leave behind how
/// to free their memory, so such a buffer still frees correctly; a resource that
/// leaves nothing (a user's, by default) makes close() report a release failure and
/// close(stream) throw, instead of calling through the destroyed object.
///
/// Example:
/// \code
///   cuwrap::Buffer buf = dev.allocate(data.size(), stream);
///   buf.copy_from(std::as_bytes(std::span(data)), stream);
///   buf.copy_to(std::as_writable_bytes(std::span(result)), stream);
///   stream.sync();
/// \endcode
class Buffer : public BufferRef {
 public:
  /// Make an empty buffer (is_open() false), to be assigned later; using it throws
  /// std::logic_error.
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  /// Close the buffer (never throws; a failing free goes to the release-failure handler).
  ~Buffer();

  /// Take over `ptr` (`size` bytes), memory that `mr` allocated: close() hands it back
  /// through mr->deallocate on the legacy default stream.
  ///
  /// Never calls the driver. Throws std::invalid_argument when `mr` is null (a view of
  /// memory that something else frees is BufferRef::from_handle).
  static Buffer adopt(CUdeviceptr ptr, std::size_t size, MemoryResource* mr);
  /// Take over `ptr` (`size` bytes), memory that `mr` allocated, and free it ordered on
  /// `stream`, which the buffer keeps alive until then. Memory resources use this in
  /// allocate().
  static Buffer adopt(CUdeviceptr ptr, std::size_t size, MemoryResource* mr, StreamRef stream);
  /// Import a buffer another process exported with ipc_descriptor(), from the pool
  /// `mr` imported with DeviceMemoryResource::from_allocation_handle; close() releases
  /// the import ordered on `stream` (free it before the exporting process frees it).
  ///
  /// Throws std::invalid_argument when the descriptor comes from another pool than
  /// `mr`, std::logic_error when `mr` is closed or not IPC-enabled (all before any
  /// driver call). After the import, the descriptor's size is checked against the
  /// allocation the driver mapped (cuMemGetAddressRange): a descriptor claiming more is
  /// std::invalid_argument naming both sizes, and the import is released first
  /// (docs/ipc.md).
  static Buffer from_ipc_descriptor(DeviceMemoryResource& mr, const IPCBufferDescriptor& descriptor,
                                    StreamRef stream);

  using BufferRef::copy_from;
  using BufferRef::copy_to;
  /// Copy this buffer into `dst` (same size), ordered on `stream`.
  ///
  /// Throws std::invalid_argument naming both sizes when they differ, std::logic_error
  /// naming the destination when it is closed.
  void copy_to(Buffer& dst, StreamRef stream) const;
  /// Copy `src` (same size) into this buffer, ordered on `stream`.
  void copy_from(const Buffer& src, StreamRef stream);
  /// Copy this buffer into `dst` with `options`, as a one-copy copy_batch (cuda.core's
  /// copy_to with options; include <cuwrap/copy.hpp> for CopyOptions).
  ///
  /// Unset location hints come from the buffers' memory resources. Throws as
  /// copy_batch does: std::invalid_argument for different sizes, UnsupportedError for
  /// options other than the defaults before CUDA 12.8. On the legacy default stream or
  /// a capturing stream, which a batch cannot use, it makes a plain copy_to(dst, stream)
  /// without the options, as cuda.core (which warns there).
  void copy_to(Buffer& dst, StreamRef stream, const CopyOptions& options) const;
  /// Copy `src` into this buffer with `options`; as copy_to(dst, stream, options).
  void copy_from(const Buffer& src, StreamRef stream, const CopyOptions& options);
  /// Allocate a buffer of size() bytes from `mr` on `stream`, copy this buffer into it
  /// and return it (cuda.core's copy_to without a destination).
  [[nodiscard]] Buffer copy_to(MemoryResource& mr, StreamRef stream) const;

  /// Free the memory through its resource, ordered on `stream`; idempotent.
  void close(StreamRef stream);
  /// Free the memory through its resource, ordered on the allocation stream; idempotent.
  ///
  /// Buffers without an allocation stream (adopt() without one) are freed on the legacy
  /// default stream. A DriverError from the free goes to the release-failure handler
  /// (docs/errors.md) instead of being thrown; use close(stream) to catch it.
  void close() noexcept;

  /// Return the descriptor another process imports with from_ipc_descriptor().
  ///
  /// Throws std::logic_error unless the buffer came from an IPC-enabled
  /// DeviceMemoryResource that is still open, or when it has 0 bytes (before any
  /// driver call).
  IPCBufferDescriptor ipc_descriptor() const;
  /// Order the free of this buffer (close() and the destructor) on `stream` instead
  /// of the allocation stream; the buffer keeps `stream`'s CUDA stream alive.
  void set_deallocation_stream(StreamRef stream);
  /// Give up ownership: return the address and leave the buffer empty; the caller
  /// frees the memory (through the resource's deallocate).
  CUdeviceptr release();

  /// Return the memory as host-accessible bytes.
  ///
  /// Throws std::logic_error for memory the host cannot access (device memory), which
  /// the buffer's resource tells. For stream-ordered allocations, sync the allocation
  /// stream before using the span.
  std::span<std::byte> host_span() const;
  /// Return the memory as host-accessible elements of `T`; as BufferRef::host_span<T>.
  template <class T>
  requires std::is_trivially_copyable_v<T> std::span<T> host_span()
  const {
    const std::span<std::byte> bytes = host_span();
    require_multiple("host_span", sizeof(T));
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  /// Return the resource the memory came from: nullptr once that resource object was
  /// destroyed.
  MemoryResource* memory_resource() const noexcept;
  /// Return the device the memory belongs to (its resource's), or -1 for host memory
  /// tied to none.
  int device_id() const;
  /// Return whether the GPU can access the memory (its resource says).
  bool is_device_accessible() const;
  /// Return whether the host can access the memory (its resource says).
  bool is_host_accessible() const;
  /// Return whether the buffer still holds memory (false after close or a move).
  bool is_open() const noexcept { return ptr_ != kClosedAddress; }
  /// Return whether the memory was imported from another process
  /// (from_ipc_descriptor), as cuda.core's Buffer.is_mapped.
  bool is_mapped() const noexcept { return mapped_; }

 private:
  friend class VirtualMemoryResource;  // modify_allocation changes the address and size
  // Free through the resource, or once it is gone its detached deallocate; false when
  // neither exists. Throws what the free throws. An import that other Buffers of this
  // process still hold is not freed (true).
  bool free_memory(StreamRef stream);
  bool free_owned_memory(StreamRef stream);
  void reset() noexcept;  // the state of a closed buffer

  detail::Ref<detail::ResourceLink> link_;  // the owning resource (null once released)
  Stream stream_;  // deallocation stream (closed when none), orders close()
  // The pool a from_ipc_descriptor import went into (null: none); its free is counted
  // with the other imports of the pointer (memory/ipc_imports.hpp).
  CUmemoryPool import_pool_ = nullptr;
  bool mapped_ = false;
};

inline BufferRef::BufferRef(const Buffer& buffer) : ptr_(buffer.handle()), size_(buffer.size()) {}

}  // namespace cuwrap

#include <cuwrap/device_span.hpp>  // Buffer::as<T>() and BufferRef::as<T>()
