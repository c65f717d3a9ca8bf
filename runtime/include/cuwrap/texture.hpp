// Texture and surface objects over CUDA arrays (cuTexObjectCreate, cuSurfObjectCreate).
//
// Both are RAII, move-only owners of the object handle (a 64-bit value that kernels
// take by value: pass handle() to launch). The array they read must outlive them.
#pragma once

#include <cuwrap/array.hpp>

#include <cuda.h>

#include <array>

namespace cuwrap {

/// How a texture samples: addressing, filtering, coordinates (cuda.core-style names).
struct TextureOptions {
  /// Addressing per dimension (x, y, z) for coordinates outside the array.
  std::array<CUaddress_mode, 3> address_mode{CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP,
                                             CU_TR_ADDRESS_MODE_CLAMP};
  /// Point sampling or linear interpolation between neighbouring elements.
  CUfilter_mode filter_mode = CU_TR_FILTER_MODE_POINT;
  /// Coordinates in [0, 1) instead of [0, extent) (CU_TRSF_NORMALIZED_COORDINATES).
  bool normalized_coords = false;
  /// Return integer data as is instead of mapping it to [0, 1] / [-1, 1]
  /// (CU_TRSF_READ_AS_INTEGER).
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
  /// Create a texture over `array` (cuTexObjectCreate, in the current context or
  /// device 0's primary context when none is current).
  ///
  /// Throws std::invalid_argument for linear filtering with read_as_integer on integer
  /// data (the hardware cannot interpolate it) and for max_anisotropy > 16.
  explicit TextureObject(const ArrayRef& array, const TextureOptions& options = {});
  /// Create a texture over all levels of `array`.
  explicit TextureObject(const MipmappedArray& array, const TextureOptions& options = {});
  TextureObject(TextureObject&& other) noexcept;
  TextureObject& operator=(TextureObject&& other) noexcept;
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  /// Destroy the texture object (never throws).
  ~TextureObject();

  /// Return the handle kernels take (`cudaTextureObject_t` in CUDA C++).
  CUtexObject handle() const;
  /// Destroy the object now; idempotent.
  void close() noexcept;

 private:
  CUtexObject handle_ = 0;
};

/// A surface object for reading and writing a CUDA array from kernels; move-only owner.
class SurfaceObject {
 public:
  /// Create a surface over `array`, which needs ArrayOptions::surface_load_store.
  ///
  /// Throws std::invalid_argument, before the driver, when the array lacks that flag.
  explicit SurfaceObject(const ArrayRef& array);
  SurfaceObject(SurfaceObject&& other) noexcept;
  SurfaceObject& operator=(SurfaceObject&& other) noexcept;
  SurfaceObject(const SurfaceObject&) = delete;
  SurfaceObject& operator=(const SurfaceObject&) = delete;
  /// Destroy the surface object (never throws).
  ~SurfaceObject();

  /// Return the handle kernels take (`cudaSurfaceObject_t` in CUDA C++).
  CUsurfObject handle() const;
  /// Destroy the object now; idempotent.
  void close() noexcept;

 private:
  CUsurfObject handle_ = 0;
};

}  // namespace cuwrap
