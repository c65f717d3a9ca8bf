// Pitched 2-D device memory (cuMemAllocPitch): PyCUDA's mem_alloc_pitch, CUDA C++'s
// cudaMallocPitch. PitchedBuffer owns the allocation; PitchedBufferRef is the view that
// copies, 2-D fills and textures take, also over a part of any buffer
// (BufferRef::as_pitched). Rows are `width_bytes` wide and `pitch` bytes apart.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/copy.hpp>
#include <cuwrap/detail/ranges.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace cuwrap {

/// A view of `height` rows of `width_bytes` bytes, `pitch` bytes apart, in device (or
/// pinned, managed) memory; trivially copyable, never owns.
///
/// Converts to Pitched2D, so copy_2d and copy_3d take it. Operations with a stream are
/// ordered on it; those without one return once they are done (as cuwrap::copy).
class PitchedBufferRef {
 public:
  /// View `height` rows of `width_bytes` bytes at `ptr`, `pitch` bytes apart.
  ///
  /// Throws std::invalid_argument when `pitch` is smaller than `width_bytes`, or `ptr` is
  /// 0 for a region that is not empty.
  PitchedBufferRef(CUdeviceptr ptr, std::size_t width_bytes, std::size_t height, std::size_t pitch);
  /// View `height` rows of `width_bytes` bytes, `pitch` bytes apart, from the start of
  /// `buffer` (a Buffer, a slice, global memory from ObjectCode::get_global).
  ///
  /// Throws std::invalid_argument as above, and when the rows reach past the buffer's
  /// size (naming both).
  PitchedBufferRef(BufferRef buffer, std::size_t width_bytes, std::size_t height,
                   std::size_t pitch);
  /// Return a view of memory of any library (as the constructor); nothing frees it.
  static PitchedBufferRef from_handle(CUdeviceptr ptr, std::size_t width_bytes, std::size_t height,
                                      std::size_t pitch) {
    return {ptr, width_bytes, height, pitch};
  }

  /// Return the address of the first row.
  CUdeviceptr handle() const;
  /// Return the bytes of a row that hold data.
  std::size_t width_bytes() const;
  /// Return the number of rows.
  std::size_t height() const;
  /// Return the bytes from one row to the next (at least width_bytes()).
  std::size_t pitch() const;
  /// Return the elements of `T` in a row (width_bytes() / sizeof(T)); throws
  /// std::invalid_argument when the width is not a whole number of them.
  template <class T>
  std::size_t width() const {
    require_multiple(sizeof(T));
    return width_bytes() / sizeof(T);
  }
  /// Return all pitch() × height() bytes as a BufferRef (padding included).
  BufferRef bytes() const;
  /// Return the view as copy_2d's and copy_3d's Pitched2D.
  operator Pitched2D() const;  // NOLINT(google-explicit-constructor): a Pitched2D is this view

  /// Copy height() rows of width_bytes() from `host` (rows `host_pitch` bytes apart;
  /// 0: packed, width_bytes()) into this region, ordered on `stream` (cuMemcpy2DAsync).
  ///
  /// Throws std::invalid_argument when `host` is smaller than the rows it must hold.
  void copy_from(std::span<const std::byte> host, StreamRef stream,
                 std::size_t host_pitch = 0) const;
  /// Copy this region's rows into `host` (rows `host_pitch` bytes apart; 0: packed),
  /// ordered on `stream`.
  void copy_to(std::span<std::byte> host, StreamRef stream, std::size_t host_pitch = 0) const;
  /// Copy packed host rows into this region and return once the copy is done.
  void copy_from(std::span<const std::byte> host) const;
  /// Copy this region's rows into packed host rows and return once the copy is done.
  void copy_to(std::span<std::byte> host) const;
  /// Copy packed rows of a contiguous host range of trivially copyable elements into this
  /// region and return once the copy is done.
  template <detail::contiguous_range Range>
  requires std::is_trivially_copyable_v<detail::range_value_t<Range>>
  void copy_from(const Range& host) const { copy_from(std::as_bytes(detail::dynamic_span(host))); }
  /// Copy this region's rows into a contiguous host range of trivially copyable elements,
  /// packed, and return once the copy is done.
  template <detail::contiguous_range Range>
  requires(
      std::is_trivially_copyable_v<detail::range_value_t<Range>> &&
      !std::is_const_v<typename detail::span_of_t<Range>::element_type>) void copy_to(Range&& host)
      const {
    copy_to(std::as_writable_bytes(detail::dynamic_span(host)));
  }
  /// Set every byte of the rows (not the padding) to `value` (cuMemsetD2D8Async).
  void fill(std::uint8_t value, StreamRef stream) const;
  /// Set every 16-bit word of the rows to `value` (cuMemsetD2D16Async); the width and the
  /// pitch must be multiples of 2 (std::invalid_argument otherwise).
  void fill(std::uint16_t value, StreamRef stream) const;
  /// Set every 32-bit word of the rows to `value` (cuMemsetD2D32Async); the width and the
  /// pitch must be multiples of 4 (std::invalid_argument otherwise).
  void fill(std::uint32_t value, StreamRef stream) const;

 protected:
  PitchedBufferRef() = default;
  /// Throw std::logic_error naming `operation` when this names no memory (a closed or
  /// moved-from owner).
  void require_open(const char* operation) const;

  CUdeviceptr ptr_ = 0;
  std::size_t width_bytes_ = 0;
  std::size_t height_ = 0;
  std::size_t pitch_ = 0;

 private:
  void require_multiple(std::size_t element_size) const;
};

/// Pitched device memory from Device::allocate_pitched (cuMemAllocPitch); freed
/// (cuMemFree, in the context it was allocated in) when destroyed or closed. Move-only;
/// a default-constructed one is closed.
class PitchedBuffer : public PitchedBufferRef {
 public:
  /// Make a closed buffer.
  PitchedBuffer() = default;
  /// Take over `other`'s memory; `other` is closed.
  PitchedBuffer(PitchedBuffer&& other) noexcept;
  /// Free this memory, then take over `other`'s.
  PitchedBuffer& operator=(PitchedBuffer&& other) noexcept;
  PitchedBuffer(const PitchedBuffer&) = delete;
  PitchedBuffer& operator=(const PitchedBuffer&) = delete;
  /// Free the memory (close()).
  ~PitchedBuffer();

  /// Free the memory now (cuMemFree, after the context's work that may use it: the
  /// driver's cuMemFree synchronises); idempotent. Never throws: a failure goes to the
  /// release-failure handler.
  void close() noexcept;
  /// Return whether the buffer still owns its memory.
  bool is_open() const noexcept { return ptr_ != 0; }

  /// Allocate `height` rows of `width_bytes` on `device` (cuMemAllocPitch in the current
  /// context when it is one of the device's, else in its primary context), with rows
  /// aligned for elements of `element_size_bytes` (4, 8 or 16) as the driver chooses.
  ///
  /// Throws std::invalid_argument for a zero width or height or another element size,
  /// DriverError from cuMemAllocPitch.
  static PitchedBuffer allocate(int device_id, std::size_t width_bytes, std::size_t height,
                                unsigned element_size_bytes = 16);

 private:
  CUcontext context_ = nullptr;  // where it was allocated, and is freed
};

}  // namespace cuwrap
