// CUDA arrays: opaque, texture-friendly memory (1-D, 2-D, 3-D, layered, mipmapped), and
// copies between them and Buffers.
//
// ArrayRef is the non-owning view (a mipmap level, an array from elsewhere); Array owns
// its CUarray and derives from ArrayRef, so a function that only reads or copies takes
// an ArrayRef. MipmappedArray owns a CUmipmappedArray and hands out its levels as
// ArrayRefs. Every array is made with cuArray3DCreate / cuMipmappedArrayCreate: one
// path for every shape (cuArrayCreate describes only the 1-D and 2-D subset).
//
// Array and MipmappedArray share their CUDA array with the TextureObjects and
// SurfaceObjects made from them (as cuda.core's texture objects keep their array
// alive): the array is destroyed when the last of them goes, whichever that is.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/ranges.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>
#include <type_traits>

namespace cuwrap {
namespace detail {
/// The destruction of a CUarray or CUmipmappedArray, shared by its owner and the
/// texture and surface objects that read it (runtime/src/memory/array.cpp).
struct ArrayStorage;
void ref_acquire(const ArrayStorage* storage) noexcept;
void ref_release(const ArrayStorage* storage) noexcept;
}  // namespace detail

/// The shape and element format of a CUDA array.
///
/// height == 0 makes a 1-D array, depth == 0 a 2-D one; with `layered`, depth is the
/// number of layers (each a 1-D or 2-D array).
struct ArrayOptions {
  std::size_t width = 0;                       ///< elements per row (at least 1)
  std::size_t height = 0;                      ///< rows; 0 for a 1-D array
  std::size_t depth = 0;                       ///< slices (or layers); 0 for a 1-D or 2-D array
  CUarray_format format = CU_AD_FORMAT_FLOAT;  ///< channel format
  unsigned num_channels = 1;                   ///< channels per element: 1, 2 or 4
  bool layered = false;                        ///< CUDA_ARRAY3D_LAYERED: depth counts layers
  bool surface_load_store = false;  ///< CUDA_ARRAY3D_SURFACE_LDST: usable by a SurfaceObject
  bool texture_gather = false;      ///< CUDA_ARRAY3D_TEXTURE_GATHER (2-D only)
};

/// A non-owning view of a CUDA array: its handle, shape and copies to and from buffers.
class ArrayRef {
 public:
  /// View `handle`, asking the driver for its shape (cuArray3DGetDescriptor).
  static ArrayRef from_handle(CUarray handle);
  /// View `handle`, an array of `context` (a mapped graphics resource's, ...): textures
  /// and surfaces over it are then created in `context`.
  static ArrayRef from_handle(CUarray handle, CUcontext context);

  /// Copy all elements from `src` (rows `src_pitch` bytes apart; 0: packed rows).
  ///
  /// `src` holds height() rows per slice and depth() slices (or layers). Throws
  /// std::invalid_argument, before any driver call, when `src` is too small or the
  /// pitch is smaller than a row. cuMemcpy2DAsync for 1-D and 2-D arrays,
  /// cuMemcpy3DAsync for 3-D and layered ones.
  void copy_from(const Buffer& src, StreamRef stream, std::size_t src_pitch = 0) const;
  /// Copy all elements into `dst` (rows `dst_pitch` bytes apart; 0: packed rows).
  void copy_to(Buffer& dst, StreamRef stream, std::size_t dst_pitch = 0) const;
  /// Copy all elements from the memory `src` refers to (a slice, a mapped graphics
  /// buffer, ...); sizes and pitch as for a Buffer.
  void copy_from(BufferRef src, StreamRef stream, std::size_t src_pitch = 0) const;
  /// Copy all elements into the memory `dst` refers to; sizes and pitch as for a Buffer.
  void copy_to(BufferRef dst, StreamRef stream, std::size_t dst_pitch = 0) const;
  /// Copy all elements from host memory `host` (rows `host_pitch` bytes apart; 0:
  /// packed rows), ordered on `stream`.
  ///
  /// As for a Buffer: `host` holds height() rows per slice and depth() slices (or
  /// layers), checked before any driver call (std::invalid_argument naming the sizes
  /// and the pitch). The memory must stay valid until the stream reaches the copy.
  /// cuMemcpy2DAsync for 1-D and 2-D arrays, cuMemcpy3DAsync for 3-D and layered ones.
  void copy_from(std::span<const std::byte> host, StreamRef stream,
                 std::size_t host_pitch = 0) const;
  /// Copy all elements into host memory `host` (rows `host_pitch` bytes apart; 0:
  /// packed rows); the data is there once the stream reaches the copy.
  void copy_to(std::span<std::byte> host, StreamRef stream, std::size_t host_pitch = 0) const;
  /// Copy all elements from a contiguous host range of trivially copyable elements (a
  /// std::vector<float>, a std::span<const std::uint8_t>, ...); sizes as above.
  template <detail::contiguous_range Range>
  requires std::is_trivially_copyable_v<detail::range_value_t<Range>>
  void copy_from(const Range& host, StreamRef stream, std::size_t host_pitch = 0) const {
    copy_from(std::as_bytes(detail::dynamic_span(host)), stream, host_pitch);
  }
  /// Copy all elements into a contiguous host range of trivially copyable elements.
  template <detail::contiguous_range Range>
  requires(std::is_trivially_copyable_v<detail::range_value_t<Range>> &&
           !std::is_const_v<typename detail::span_of_t<
               Range>::element_type>) void copy_to(Range&& host, StreamRef stream,
                                                   std::size_t host_pitch = 0) const {
    copy_to(std::as_writable_bytes(detail::dynamic_span(host)), stream, host_pitch);
  }

  /// Return the CUDA array handle.
  CUarray handle() const noexcept { return handle_; }
  /// Return the context the array was created in: its device's primary context for an
  /// Array or a MipmappedArray level; nullptr for from_handle views, which textures and
  /// surfaces then create in the current context (device 0's when none is).
  CUcontext context() const noexcept { return context_; }
  /// Return the driver's description of the array (extents, format, channels, flags).
  const CUDA_ARRAY3D_DESCRIPTOR& descriptor() const noexcept { return descriptor_; }
  /// Return the bytes of one element (channel size times channels).
  std::size_t element_size() const;
  /// Return the bytes of one packed row (width times element_size()).
  std::size_t row_bytes() const { return descriptor_.Width * element_size(); }
  /// Return the bytes of all elements, packed.
  std::size_t size_bytes() const;

 protected:
  ArrayRef() = default;
  ArrayRef(CUarray handle, const CUDA_ARRAY3D_DESCRIPTOR& descriptor,
           CUcontext context = nullptr) noexcept
      : handle_(handle), descriptor_(descriptor), context_(context) {}
  /// Refer to `handle` of shape `descriptor` in `context` (for Array, which owns what it
  /// refers to).
  void assign(CUarray handle, const CUDA_ARRAY3D_DESCRIPTOR& descriptor,
              CUcontext context) noexcept {
    handle_ = handle;
    descriptor_ = descriptor;
    context_ = context;
  }

 private:
  friend class MipmappedArray;
  CUarray handle_ = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR descriptor_{};
  CUcontext context_ = nullptr;
};

/// A CUDA array owned by this object (cuArray3DCreate / cuArrayDestroy); move-only.
///
/// The texture and surface objects made from an Array share it: the CUDA array is
/// destroyed when the Array and all of them are gone (or closed), in any order.
///
/// Example:
/// \code
///   cuwrap::Array image(dev, {.width = 64, .height = 32, .format = CU_AD_FORMAT_FLOAT});
///   image.copy_from(pixels, stream);   // 64 * 32 floats: a Buffer or host memory
/// \endcode
class Array : public ArrayRef {
 public:
  /// Create an array of `options`' shape on `device`, in the context current on the
  /// calling thread when it is one of the device's (a regular or green context the caller
  /// made current), else in its primary context.
  ///
  /// Throws std::invalid_argument for a zero width, a channel count other than 1, 2
  /// or 4, a format cuwrap cannot size, or a layered array without layers.
  Array(const Device& device, const ArrayOptions& options);
  Array(Array&& other) noexcept;
  Array& operator=(Array&& other) noexcept;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  /// Drop this owner's share of the array (never throws).
  ~Array();

  /// Drop this owner's share of the array now; idempotent. The CUDA array is destroyed
  /// at once unless a TextureObject or SurfaceObject still uses it, then with the last.
  void close() noexcept;
  /// Return whether this object still owns its share of the array (false after close
  /// or a move).
  bool is_open() const noexcept { return static_cast<bool>(storage_); }

 private:
  friend class TextureObject;
  friend class SurfaceObject;
  detail::Ref<const detail::ArrayStorage> storage_;  // null once closed or moved from
};

/// A mipmapped CUDA array (cuMipmappedArrayCreate / cuMipmappedArrayDestroy); move-only.
///
/// A TextureObject made from it shares it, as for Array. Its levels are views
/// (ArrayRef): a texture or surface made from a level does not keep it alive.
class MipmappedArray {
 public:
  /// Create `levels` mipmap levels whose level 0 has `options`' shape.
  MipmappedArray(const Device& device, const ArrayOptions& options, unsigned levels);
  MipmappedArray(MipmappedArray&& other) noexcept;
  MipmappedArray& operator=(MipmappedArray&& other) noexcept;
  MipmappedArray(const MipmappedArray&) = delete;
  MipmappedArray& operator=(const MipmappedArray&) = delete;
  /// Drop this owner's share of the array (never throws).
  ~MipmappedArray();

  /// Return level `level` as a view (cuMipmappedArrayGetLevel); valid while this lives.
  ///
  /// Throws std::invalid_argument for a level >= levels().
  ArrayRef level(unsigned level) const;
  /// Return the number of levels.
  unsigned levels() const noexcept { return levels_; }
  /// Return the handle.
  CUmipmappedArray handle() const noexcept { return handle_; }
  /// Return the context the array was created in (its device's primary context).
  CUcontext context() const noexcept { return context_; }
  /// Drop this owner's share of the array now; idempotent (destroyed with the last
  /// TextureObject that uses it).
  void close() noexcept;
  /// Return whether this object still owns its share of the array (false after close
  /// or a move).
  bool is_open() const noexcept { return static_cast<bool>(storage_); }

 private:
  friend class TextureObject;
  detail::Ref<const detail::ArrayStorage> storage_;
  CUmipmappedArray handle_ = nullptr;
  CUcontext context_ = nullptr;
  unsigned levels_ = 0;
};

namespace detail {

/// Return the bytes of one channel of `format`; throws std::invalid_argument for
/// formats without a fixed channel size (block-compressed, planar video).
std::size_t channel_bytes(CUarray_format format);
/// Return `options` as the driver's descriptor, after checking it.
CUDA_ARRAY3D_DESCRIPTOR to_array_descriptor(const ArrayOptions& options);

}  // namespace detail
}  // namespace cuwrap
