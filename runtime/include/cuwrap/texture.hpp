// Texture and surface objects over CUDA arrays (cuTexObjectCreate, cuSurfObjectCreate),
// and textures over linear and pitched device memory (PyCUDA's bind_to_texref,
// bind_to_texref_ext and bind_texture_2d); surfaces need arrays (the driver has no
// surface over linear memory).
//
// Both are RAII, move-only owners of the object handle (a 64-bit value that kernels
// take by value: pass handle() to launch). Made from an Array or a MipmappedArray, they
// share it, as cuda.core's texture objects keep their array alive: the array outlives
// its owner's destruction (or close()) until the last texture or surface made from it
// is gone. Made from an ArrayRef view (ArrayRef::from_handle, a mipmap level), they do
// not: that array must outlive them.
#pragma once

#include <cuwrap/array.hpp>
#include <cuwrap/buffer.hpp>
#include <cuwrap/pitched_buffer.hpp>

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

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

/// The elements a texture over linear or pitched memory reads: their channel type and
/// count (CUDA_RESOURCE_DESC's format and numChannels).
struct TextureFormat {
  CUarray_format format = CU_AD_FORMAT_FLOAT;  ///< the type of each channel
  unsigned channels = 1;                       ///< 1, 2 or 4

  /// Return the bytes of one element (the channel's size times the channels).
  std::size_t element_bytes() const noexcept;
};

/// Return the TextureFormat that reads elements of `T`: 8-, 16- and 32-bit integers and
/// float as one channel; double as two 32-bit integer channels, and std::complex<float>
/// as two float channels, std::complex<double> (any type with a floating `value_type`
/// twice its size) as four 32-bit integer channels, as PyCUDA's texture tests read them.
/// A kernel turns the integer pairs back into doubles with `__hiloint2double`
/// (kTextureFetchHelpers has the functions).
template <class T>
constexpr TextureFormat texture_format_of() noexcept {
  if constexpr (std::is_same_v<T, float>) {
    return {CU_AD_FORMAT_FLOAT, 1};
  } else if constexpr (std::is_same_v<T, double>) {
    return {CU_AD_FORMAT_SIGNED_INT32, 2};
  } else if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
    constexpr bool is_signed = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) {
      return {is_signed ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8, 1};
    } else if constexpr (sizeof(T) == 2) {
      return {is_signed ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT16, 1};
    } else {
      return {is_signed ? CU_AD_FORMAT_SIGNED_INT32 : CU_AD_FORMAT_UNSIGNED_INT32, 1};
    }
  } else {
    static_assert(std::is_floating_point_v<typename T::value_type> &&
                      sizeof(T) == 2 * sizeof(typename T::value_type),
                  "texture_format_of: no texture format for this type");
    if constexpr (std::is_same_v<typename T::value_type, float>) {
      return {CU_AD_FORMAT_FLOAT, 2};
    } else {
      return {CU_AD_FORMAT_SIGNED_INT32, 4};
    }
  }
}

/// Device functions for kernels that read doubles and complex numbers through textures
/// made with texture_format_of<double>() or <std::complex<double>>(): prepend them to
/// the kernel's source. `cuwrap_fetch_double(tex, i)` (1-D, linear memory),
/// `cuwrap_fetch_double_2d(tex, x, y)` (pitched memory), `cuwrap_fetch_complex_double(tex,
/// i)` (a double2), `cuwrap_fetch_complex_float(tex, i)` (a float2).
inline constexpr const char* kTextureFetchHelpers = R"(
__device__ inline double cuwrap_fetch_double(cudaTextureObject_t t, int i) {
  int2 v = tex1Dfetch<int2>(t, i);
  return __hiloint2double(v.y, v.x);
}
__device__ inline double cuwrap_fetch_double_2d(cudaTextureObject_t t, float x, float y) {
  int2 v = tex2D<int2>(t, x, y);
  return __hiloint2double(v.y, v.x);
}
__device__ inline double2 cuwrap_fetch_complex_double(cudaTextureObject_t t, int i) {
  int4 v = tex1Dfetch<int4>(t, i);
  return make_double2(__hiloint2double(v.y, v.x), __hiloint2double(v.w, v.z));
}
__device__ inline float2 cuwrap_fetch_complex_float(cudaTextureObject_t t, int i) {
  return tex1Dfetch<float2>(t, i);
}
)";

/// A texture object reading a CUDA array or mipmapped array, or linear or pitched device
/// memory; move-only owner.
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
  /// Create a 1-D texture over linear memory (CU_RESOURCE_TYPE_LINEAR: `tex1Dfetch` by
  /// element index) whose elements are `format`; the memory must outlive the texture.
  ///
  /// Created in the current context, or device 0's primary one when none is. Throws
  /// std::invalid_argument for 0, 3 or more than 4 channels, or a size that is not a whole
  /// number of elements; DriverError from cuTexObjectCreate (an address not aligned to
  /// CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, more elements than the device's linear limit).
  TextureObject(BufferRef memory, const TextureFormat& format, const TextureOptions& options = {});
  /// Create a 2-D texture over pitched memory (CU_RESOURCE_TYPE_PITCH2D: `tex2D`), whose
  /// rows hold elements of `format`; the memory must outlive the texture.
  ///
  /// Throws as above, and std::invalid_argument when a row is not a whole number of
  /// elements; DriverError when the address or the pitch is not aligned to
  /// CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT (Device::allocate_pitched's are).
  TextureObject(const PitchedBufferRef& memory, const TextureFormat& format,
                const TextureOptions& options = {});
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
  CUcontext context_ = nullptr;                      // where it was created, and is destroyed
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
  CUcontext context_ = nullptr;                      // where it was created, and is destroyed
  detail::Ref<const detail::ArrayStorage> storage_;  // null for views
};

}  // namespace cuwrap
