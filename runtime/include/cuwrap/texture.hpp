// Texture and surface objects over CUDA arrays (cuTexObjectCreate, cuSurfObjectCreate).
//
// Both are RAII, move-only owners of the object handle (a 64-bit value that kernels
// take by value: pass handle() to launch). Made from an Array or a MipmappedArray, they
// share it, as cuda.core's texture objects keep their array alive: the array outlives
// its owner's destruction (or close()) until the last texture or surface made from it
// is gone. Made from an ArrayRef view (ArrayRef::from_handle, a mipmap level), they do
// not: that array must outlive them.
#pragma once

#include <cuwrap/array.hpp>

#include <cuda.h>

#include <array>

namespace cuwrap {

/// What a texture fetch of integer data returns (cuda.core's ReadMode; CUDA C++'s
/// cudaReadModeElementType / cudaReadModeNormalizedFloat). Float data reads the same
/// either way.
enum class ReadMode {
  /// The element as stored: integers stay integers (CU_TRSF_READ_AS_INTEGER).
  ElementType,
  /// 8- and 16-bit integers become floats in [0, 1] (unsigned) or [-1, 1] (signed).
  NormalizedFloat,
};

/// How a texture samples: addressing, filtering, coordinates (cuda.core-style names).
struct TextureOptions {
  /// Addressing per dimension (x, y, z) for coordinates outside the array.
  std::array<CUaddress_mode, 3> address_mode{CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP,
                                             CU_TR_ADDRESS_MODE_CLAMP};
  /// Point sampling or linear interpolation between neighbouring elements.
  CUfilter_mode filter_mode = CU_TR_FILTER_MODE_POINT;
  /// Coordinates in [0, 1) instead of [0, extent) (CU_TRSF_NORMALIZED_COORDINATES).
  bool normalized_coords = false;
  /// What a fetch of integer data returns; ElementType by default, as in cuda.core
  /// and in CUDA C++'s cudaTextureDesc.
  ReadMode read_mode = ReadMode::ElementType;
  /// Older spelling of `read_mode = ReadMode::ElementType`: true forces ElementType
  /// whatever read_mode says; false leaves read_mode to decide.
  bool read_as_integer = false;
  /// Treat 8-bit data as sRGB (CU_TRSF_SRGB).
  bool srgb = false;
  /// Colour returned for CU_TR_ADDRESS_MODE_BORDER.
  std::array<float, 4> border_color{0.0f, 0.0f, 0.0f, 0.0f};
  /// Filtering between mipmap levels.
  CUfilter_mode mipmap_filter_mode = CU_TR_FILTER_MODE_POINT;
  /// Offset added to the mipmap level computed by the hardware.
  float mipmap_level_bias = 0.0f;
  /// Lowest mipmap level used.
  float min_mipmap_level_clamp = 0.0f;
  /// Highest mipmap level used.
  float max_mipmap_level_clamp = 0.0f;
  /// Maximum anisotropy (1 to 16; 0 means 1).
  unsigned max_anisotropy = 0;
};

/// A texture object reading a CUDA array or mipmapped array; move-only owner.
///
/// Example:
/// \code
///   cuwrap::TextureObject tex(image, {.filter_mode = CU_TR_FILTER_MODE_LINEAR});
///   cuwrap::launch(stream, config, sample_kernel, tex.handle(), out);
/// \endcode
class TextureObject {
 public:
  /// Create a texture over `array` and share it: the CUDA array stays alive while the
  /// texture does, even when `array` is destroyed or closed first.
  ///
  /// Throws std::invalid_argument for linear filtering with ReadMode::ElementType on
  /// integer data (the hardware cannot interpolate it: use ReadMode::NormalizedFloat),
  /// for max_anisotropy > 16, and for a closed `array`.
  explicit TextureObject(const Array& array, const TextureOptions& options = {});
  /// Create a texture over the array view `array` (cuTexObjectCreate, in the array's
  /// context, or the current one, device 0's primary context when none is, for a
  /// from_handle view); the array must outlive the texture. Throws as above.
  explicit TextureObject(const ArrayRef& array, const TextureOptions& options = {});
  /// Create a texture over all levels of `array` and share it, as for an Array.
  explicit TextureObject(const MipmappedArray& array, const TextureOptions& options = {});
  TextureObject(TextureObject&& other) noexcept;
  TextureObject& operator=(TextureObject&& other) noexcept;
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  /// Destroy the texture object (never throws).
  ~TextureObject();

  /// Return the handle kernels take (`cudaTextureObject_t` in CUDA C++).
  CUtexObject handle() const;
  /// Destroy the object now, and drop its share of the array; idempotent.
  void close() noexcept;
  /// Return whether the object still holds a texture (false after close or a move).
  bool is_open() const noexcept { return handle_ != 0; }

 private:
  CUtexObject handle_ = 0;
  CUcontext context_ = nullptr;  // where it was created, and is destroyed
  detail::Ref<const detail::ArrayStorage> storage_;  // null for views
};

/// A surface object for reading and writing a CUDA array from kernels; move-only owner.
class SurfaceObject {
 public:
  /// Create a surface over `array`, which needs ArrayOptions::surface_load_store, and
  /// share it as TextureObject does.
  ///
  /// Throws std::invalid_argument, before the driver, when the array lacks that flag
  /// or is closed.
  explicit SurfaceObject(const Array& array);
  /// Create a surface over the array view `array`, which must outlive the surface.
  explicit SurfaceObject(const ArrayRef& array);
  SurfaceObject(SurfaceObject&& other) noexcept;
  SurfaceObject& operator=(SurfaceObject&& other) noexcept;
  SurfaceObject(const SurfaceObject&) = delete;
  SurfaceObject& operator=(const SurfaceObject&) = delete;
  /// Destroy the surface object (never throws).
  ~SurfaceObject();

  /// Return the handle kernels take (`cudaSurfaceObject_t` in CUDA C++).
  CUsurfObject handle() const;
  /// Destroy the object now, and drop its share of the array; idempotent.
  void close() noexcept;
  /// Return whether the object still holds a surface (false after close or a move).
  bool is_open() const noexcept { return handle_ != 0; }

 private:
  CUsurfObject handle_ = 0;
  CUcontext context_ = nullptr;  // where it was created, and is destroyed
  detail::Ref<const detail::ArrayStorage> storage_;  // null for views
};

}  // namespace cuwrap
