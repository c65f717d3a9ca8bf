// TensorMapDescriptor: a TMA descriptor (CUtensorMap) for Hopper's bulk tensor copies
// (cp.async.bulk.tensor), encoded tiled or im2col from a buffer and checked first.
//
// The descriptor is exactly a CUtensorMap (128 bytes, aligned as cuda.h aligns it: 64
// bytes in CUDA 12 headers, 128 in CUDA 13; trivially copyable), so launch() passes it by value as
// is: the kernel declares the parameter `const __grid_constant__ CUtensorMap`, and launch()'s size
// check compares 128 with 128. No conversion hook is needed.
//
// Dimensions are in the driver's order: dimension 0 is the innermost (contiguous) one,
// so a row-major matrix of R rows and C columns has shape {C, R} and strides {row bytes}.
#pragma once

#include <cuwrap/buffer.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace cuwrap {

class StridedMemoryView;  // <cuwrap/strided_memory_view.hpp>

/// Encoding options shared by the tiled and im2col forms.
struct TensorMapOptions {
  /// Traversal stride per dimension (1 to 8 each); empty: 1 in every dimension.
  std::span<const std::uint32_t> element_strides{};
  /// Interleaved layout (CU_TENSOR_MAP_INTERLEAVE_NONE for ordinary tensors).
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  /// Shared-memory swizzle of the loaded box.
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  /// L2 promotion of the loads.
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  /// Fill of out-of-bounds elements: zeros (NONE) or NaN requests (floating point only).
  CUtensorMapFloatOOBfill oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
};

/// A tensor-map (TMA) descriptor; a 128-byte value passed to kernels by value.
///
/// Example (a row-major rows x cols float matrix, 64 x 32 tiles):
/// \code
///   const std::uint64_t shape[] = {cols, rows};
///   const std::uint64_t strides[] = {cols * sizeof(float)};
///   const std::uint32_t box[] = {64, 32};
///   auto map = cuwrap::TensorMapDescriptor::from_tiled(
///       buf, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, shape, strides, box);
///   cuwrap::launch(stream, config, kernel, map, out);  // kernel(const __grid_constant__
///   CUtensorMap, ...)
/// \endcode
class alignas(alignof(CUtensorMap)) TensorMapDescriptor {
 public:
  /// Make an all-zero descriptor (not usable by a kernel until encoded).
  TensorMapDescriptor() = default;

  /// Encode a tiled map of `buffer` (cuTensorMapEncodeTiled).
  ///
  /// `shape` has rank 1 to 5 entries, `strides` rank - 1 byte strides (of dimensions 1
  /// and up; none for a rank-1 tensor), `box` rank entries (the tile loaded per copy).
  /// Every rank 1..5 is encoded: cuwrap always hands the driver a globalStrides array
  /// (for rank 1, one entry of the tensor's size rounded up to 16 bytes, which the driver
  /// needs but does not use). Throws std::invalid_argument, naming the dimension and
  /// values, before calling the driver: a rank outside 1..5, a `strides` of another
  /// length than rank - 1, a box entry outside 1..256 or larger than the shape, a
  /// stride that is not a multiple of 16 (32 with 32-byte interleave), not below 2^40 or
  /// too small for the dimension below it, an inner box row that is not a multiple of 16
  /// bytes or wider than the swizzle span, an element stride outside 1..8, an interleaved
  /// layout below rank 3, 32-byte interleave without 32-byte swizzle, a NaN out-of-bounds
  /// fill for an integer dtype, an address not aligned to 16 bytes (32 with 32-byte
  /// interleave), or a buffer too small for the tensor.
  static TensorMapDescriptor from_tiled(BufferRef buffer, CUtensorMapDataType dtype,
                                        std::span<const std::uint64_t> shape,
                                        std::span<const std::uint64_t> strides,
                                        std::span<const std::uint32_t> box,
                                        const TensorMapOptions& options = {});
  /// Encode a tiled map of device memory at `address` (no size check).
  static TensorMapDescriptor from_tiled(CUdeviceptr address, CUtensorMapDataType dtype,
                                        std::span<const std::uint64_t> shape,
                                        std::span<const std::uint64_t> strides,
                                        std::span<const std::uint32_t> box,
                                        const TensorMapOptions& options = {});
  /// Encode a tiled map of the memory `view` describes (cuda.core takes a
  /// StridedMemoryView too): its dtype, shape and strides, reversed into the driver's
  /// innermost-first order and byte strides; `box` is innermost first.
  ///
  /// Throws std::invalid_argument for a dtype TMA has no element type for, or an
  /// innermost dimension whose stride is not 1, then checks as the Buffer form does.
  /// Defined in strided_memory_view.cpp.
  static TensorMapDescriptor from_tiled(const StridedMemoryView& view,
                                        std::span<const std::uint32_t> box,
                                        const TensorMapOptions& options = {});
  /// Encode an im2col map of `buffer` (cuTensorMapEncodeIm2col).
  ///
  /// `shape` has rank 3 to 5 entries (channels innermost); `lower_corner` and
  /// `upper_corner` rank - 2 entries bound the pixel box in the spatial dimensions
  /// (within ±2^15, ±2^7 or ±2^4 for ranks 3, 4, 5); `channels_per_pixel` and
  /// `pixels_per_column` lie in 1..256. Shape, strides and options are checked as in
  /// from_tiled, before the driver.
  static TensorMapDescriptor from_im2col(
      const Buffer& buffer, CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
      std::span<const std::uint64_t> strides, std::span<const int> lower_corner,
      std::span<const int> upper_corner, std::uint32_t channels_per_pixel,
      std::uint32_t pixels_per_column, const TensorMapOptions& options = {});
  /// Encode an im2col map of device memory at `address` (no size check).
  static TensorMapDescriptor from_im2col(
      CUdeviceptr address, CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
      std::span<const std::uint64_t> strides, std::span<const int> lower_corner,
      std::span<const int> upper_corner, std::uint32_t channels_per_pixel,
      std::uint32_t pixels_per_column, const TensorMapOptions& options = {});

  /// Point the descriptor at `buffer` keeping everything else (cuTensorMapReplaceAddress).
  ///
  /// Throws std::invalid_argument for an address not aligned to 16 bytes and, as
  /// cuda.core, for a buffer that is not device-accessible.
  void replace_address(const Buffer& buffer);
  /// Point the descriptor at `address` keeping everything else.
  void replace_address(CUdeviceptr address);

  /// Return the encoded CUtensorMap.
  const CUtensorMap& handle() const noexcept { return map_; }

 private:
  CUtensorMap map_{};
};

static_assert(sizeof(TensorMapDescriptor) == sizeof(CUtensorMap) &&
                  alignof(TensorMapDescriptor) == alignof(CUtensorMap) &&
                  std::is_trivially_copyable_v<TensorMapDescriptor>,
              "TensorMapDescriptor must be passable to a kernel as a CUtensorMap");

namespace detail {

/// Return the bytes of one element of `dtype`; throws std::invalid_argument for the
/// packed sub-byte types, whose layout the checks do not cover.
std::size_t tensor_map_element_size(CUtensorMapDataType dtype);

}  // namespace detail
}  // namespace cuwrap
