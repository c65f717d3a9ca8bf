// DeviceSpan<T>: a typed, non-owning view of device memory, counted in elements.
//
// Buffer stays the untyped owner (as in cuda.core); Buffer::as<T>() and BufferRef::as<T>()
// view its bytes as elements of T. A DeviceSpan is trivially copyable, like std::span:
// subspan(), first() and last() count elements, copies to and from host spans compare
// element counts before any driver call, and launch() passes it to a kernel as `T*`.
// The byte arithmetic lives here and in device_span.cpp only.
//
// buffer.hpp includes this header at its end and this header includes buffer.hpp, so
// either include gives Buffer, BufferRef and DeviceSpan together.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>
#include <type_traits>

namespace cuwrap {

namespace detail {

/// Throw std::invalid_argument: DeviceSpan(address, count) with address 0 and count > 0.
[[noreturn]] void throw_device_span_null(std::size_t count);
/// Throw std::invalid_argument naming `operation`, offset, count and the span's size
/// (all in elements).
[[noreturn]] void throw_device_span_range(const char* operation, std::size_t offset,
                                          std::size_t count, std::size_t size);
/// Throw std::invalid_argument: `bytes` at `address` are no whole number of aligned
/// elements of `element_size` bytes and alignment `alignment`.
[[noreturn]] void throw_device_span_layout(const char* operation, CUdeviceptr address,
                                           std::size_t bytes, std::size_t element_size,
                                           std::size_t alignment);
/// Copy `dst_count` elements of `element_size` bytes from `src` to `dst`, ordered on
/// `stream` (cuMemcpyAsync; either side may be host memory).
///
/// Throws std::invalid_argument naming `operation` and both counts when they differ,
/// before any driver call.
void copy_elements(const char* operation, CUdeviceptr dst, std::size_t dst_count, CUdeviceptr src,
                   std::size_t src_count, std::size_t element_size, StreamRef stream);
/// Copy `bytes` from `src` to `dst` (either side host, pinned, managed or device memory)
/// and return once the copy is done, as cudaMemcpy does: on the legacy default stream of
/// the current context, or of the primary context of the memory's device when none is
/// current (none is current again afterwards), which waits for the work of the
/// context's blocking streams first; then that stream is synchronised.
void copy_blocking(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes);
/// Copy `dst_count` elements of `element_size` bytes from `src` to `dst` and return once
/// the copy is done (copy_blocking).
///
/// Throws std::invalid_argument naming `operation` and both counts when they differ,
/// before any driver call.
void copy_elements_blocking(const char* operation, CUdeviceptr dst, std::size_t dst_count,
                            CUdeviceptr src, std::size_t src_count, std::size_t element_size);

/// Return `pointer` as the integer address the driver takes.
template <class T>
CUdeviceptr address_of(T* pointer) noexcept {
  return reinterpret_cast<CUdeviceptr>(pointer);
}

}  // namespace detail

/// `size()` elements of `T` at `handle()` in device (or managed, or pinned host) memory,
/// not owned.
///
/// Counts are in elements. A DeviceSpan<T> converts to DeviceSpan<const T>; it is passed
/// to launch() as `T*`. Copies compare element counts and throw std::invalid_argument
/// naming both before any driver call. The memory must outlive the span.
///
/// Example:
/// \code
///   cuwrap::Buffer buf = dev.allocate(n * sizeof(float), stream);
///   cuwrap::DeviceSpan<float> x = buf.as<float>();
///   x.first(host.size()).copy_from(host, stream);          // std::vector<float> host
///   cuwrap::launch(stream, config, scale, x, 2.0f, x.size());  // float* in the kernel
///   x.subspan(10, 4).copy_to(std::span(result), stream);   // float result[4]
/// \endcode
template <class T>
class DeviceSpan {
  static_assert(std::is_object_v<T> && std::is_trivially_copyable_v<T>,
                "cuwrap::DeviceSpan: the element type must be a trivially copyable object type");

 public:
  using element_type = T;                  ///< the element type as given
  using value_type = std::remove_cv_t<T>;  ///< the element type without const
  using size_type = std::size_t;           ///< counts and offsets, in elements
  using pointer = T*;                      ///< what a kernel receives

  /// Make an empty span (no address, no elements).
  DeviceSpan() noexcept = default;
  /// View `count` elements at `address`.
  ///
  /// Throws std::invalid_argument when `address` is 0 and `count` is not.
  DeviceSpan(CUdeviceptr address, std::size_t count) : address_(address), count_(count) {
    if (address == 0 && count != 0) [[unlikely]] {
      detail::throw_device_span_null(count);
    }
  }
  /// View a `DeviceSpan<U>` as read-only (`DeviceSpan<float>` → `DeviceSpan<const float>`).
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) DeviceSpan(DeviceSpan<U> other)
  noexcept  // NOLINT(google-explicit-constructor)
      : address_(other.handle()), count_(other.size()) {}

  /// Return the `count` elements from element `offset` on.
  ///
  /// Throws std::invalid_argument naming offset, count and size() when they reach past
  /// the end.
  DeviceSpan subspan(std::size_t offset, std::size_t count) const {
    if (offset > count_ || count > count_ - offset) [[unlikely]] {
      detail::throw_device_span_range("DeviceSpan::subspan", offset, count, count_);
    }
    return DeviceSpan(address_ + offset * sizeof(T), count);
  }
  /// Return the elements from element `offset` to the end.
  DeviceSpan subspan(std::size_t offset) const {
    if (offset > count_) [[unlikely]] {
      detail::throw_device_span_range("DeviceSpan::subspan", offset, 0, count_);
    }
    return DeviceSpan(address_ + offset * sizeof(T), count_ - offset);
  }
  /// Return the first `count` elements; throws as subspan() does.
  DeviceSpan first(std::size_t count) const { return subspan(0, count); }
  /// Return the last `count` elements; throws as subspan() does.
  DeviceSpan last(std::size_t count) const {
    if (count > count_) [[unlikely]] {
      detail::throw_device_span_range("DeviceSpan::last", 0, count, count_);
    }
    return subspan(count_ - count, count);
  }

  /// Copy the host elements `host` (exactly size() of them) into this span, ordered on
  /// `stream`.
  ///
  /// The host memory must stay valid until the stream reaches the copy. Throws
  /// std::invalid_argument naming both counts when they differ (before any driver
  /// call), DriverError when the copy fails.
  void copy_from(std::span<const value_type> host, StreamRef stream) const
      requires(!std::is_const_v<T>) {
    detail::copy_elements("DeviceSpan::copy_from", address_, count_,
                          detail::address_of(host.data()), host.size(), sizeof(T), stream);
  }
  /// Copy this span into the host elements `host` (exactly size() of them), ordered on
  /// `stream`; the data is there once the stream reaches the copy.
  void copy_to(std::span<value_type> host, StreamRef stream) const {
    detail::copy_elements("DeviceSpan::copy_to", detail::address_of(host.data()), host.size(),
                          address_, count_, sizeof(T), stream);
  }
  /// Copy the device elements `src` (exactly size() of them) into this span, ordered on
  /// `stream`.
  void copy_from(DeviceSpan<const value_type> src, StreamRef stream) const
      requires(!std::is_const_v<T>) {
    detail::copy_elements("DeviceSpan::copy_from", address_, count_, src.handle(), src.size(),
                          sizeof(T), stream);
  }
  /// Copy this span into the device elements `dst` (exactly size() of them), ordered on
  /// `stream`.
  void copy_to(DeviceSpan<value_type> dst, StreamRef stream) const {
    detail::copy_elements("DeviceSpan::copy_to", dst.handle(), dst.size(), address_, count_,
                          sizeof(T), stream);
  }

  /// Copy the host elements `host` (exactly size() of them) into this span and return
  /// once the copy is done (blocking, as cudaMemcpy: see cuwrap::copy).
  void copy_from(std::span<const value_type> host) const requires(!std::is_const_v<T>) {
    detail::copy_elements_blocking("DeviceSpan::copy_from", address_, count_,
                                   detail::address_of(host.data()), host.size(), sizeof(T));
  }
  /// Copy this span into the host elements `host` (exactly size() of them) and return
  /// once the copy is done.
  void copy_to(std::span<value_type> host) const {
    detail::copy_elements_blocking("DeviceSpan::copy_to", detail::address_of(host.data()),
                                   host.size(), address_, count_, sizeof(T));
  }
  /// Copy the device elements `src` (exactly size() of them) into this span and return
  /// once the copy is done.
  void copy_from(DeviceSpan<const value_type> src) const requires(!std::is_const_v<T>) {
    detail::copy_elements_blocking("DeviceSpan::copy_from", address_, count_, src.handle(),
                                   src.size(), sizeof(T));
  }
  /// Copy this span into the device elements `dst` (exactly size() of them) and return
  /// once the copy is done.
  void copy_to(DeviceSpan<value_type> dst) const {
    detail::copy_elements_blocking("DeviceSpan::copy_to", dst.handle(), dst.size(), address_,
                                   count_, sizeof(T));
  }

  /// Return the same memory as untyped bytes.
  BufferRef bytes() const { return {address_, size_bytes()}; }
  /// Return the address (a CUdeviceptr).
  CUdeviceptr handle() const noexcept { return address_; }
  /// Return the address as the pointer a kernel receives (not dereferenceable on the
  /// host unless the memory is host memory).
  T* data() const noexcept { return reinterpret_cast<T*>(address_); }
  /// Return the number of elements.
  std::size_t size() const noexcept { return count_; }
  /// Return the size in bytes.
  std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  /// Return whether the span has no elements.
  bool empty() const noexcept { return count_ == 0; }
  /// Return whether both view the same elements.
  friend bool operator==(DeviceSpan a, DeviceSpan b) noexcept {
    return a.address_ == b.address_ && a.count_ == b.count_;
  }

 private:
  CUdeviceptr address_ = 0;
  std::size_t count_ = 0;
};

template <class T>
DeviceSpan<T> BufferRef::as() const {
  static_assert(std::is_object_v<T> && std::is_trivially_copyable_v<T>,
                "cuwrap::BufferRef::as: the element type must be trivially copyable");
  require_open("as");
  if (size_ % sizeof(T) != 0 || ptr_ % alignof(T) != 0) [[unlikely]] {
    detail::throw_device_span_layout("BufferRef::as", ptr_, size_, sizeof(T), alignof(T));
  }
  return DeviceSpan<T>(ptr_, size_ / sizeof(T));
}

}  // namespace cuwrap
