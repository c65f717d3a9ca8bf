// TensorMapDescriptor: the checks the driver documents for cuTensorMapEncode*, made
// before the call so that a bad shape is named instead of CUDA_ERROR_INVALID_VALUE.
// See cuwrap/tensor_map.hpp.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/tensor_map.hpp>

#include <array>
#include <optional>
#include <stdexcept>
#include <string>

namespace cuwrap {
namespace {

constexpr std::size_t kMaxRank = 5;
constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;
constexpr std::uint64_t kMaxStride = std::uint64_t{1} << 40;
constexpr std::uint32_t kMaxBox = 256;
constexpr std::uint32_t kMaxElementStride = 8;

// Where a check failed: "TensorMapDescriptor::from_tiled: ".
struct Where {
  const char* function;
  [[noreturn]] void fail(const std::string& message) const {
    throw std::invalid_argument(std::string("TensorMapDescriptor::") + function + ": " + message);
  }
};

std::string item(const char* name, std::size_t index, std::uint64_t value) {
  return std::string(name) + "[" + std::to_string(index) + "] = " + std::to_string(value);
}

std::size_t alignment_of(CUtensorMapInterleave interleave) {
  return interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
}

void check_address(const Where& where, CUdeviceptr address, CUtensorMapInterleave interleave) {
  const std::size_t alignment = alignment_of(interleave);
  if (address == 0 || address % alignment != 0) {
    where.fail("the global address " + std::to_string(address) + " is not aligned to " +
               std::to_string(alignment) + " bytes");
  }
}

bool is_floating_point(CUtensorMapDataType dtype) {
  switch (dtype) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return true;
    default:
      return false;
  }
}

// The rules on the options that the driver documents for every rank and encoding.
void check_options(const Where& where, CUtensorMapDataType dtype, std::size_t rank,
                   const TensorMapOptions& options) {
  if (options.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3) {
    where.fail("an interleaved layout (TensorMapOptions::interleave = " +
               std::to_string(static_cast<int>(options.interleave)) +
               ") needs rank 3 or more; "
               "the rank (shape.size()) is " +
               std::to_string(rank));
  }
  if (options.interleave == CU_TENSOR_MAP_INTERLEAVE_32B &&
      options.swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    where.fail(
        "TensorMapOptions::interleave = CU_TENSOR_MAP_INTERLEAVE_32B needs swizzle = "
        "CU_TENSOR_MAP_SWIZZLE_32B, not " +
        std::to_string(static_cast<int>(options.swizzle)));
  }
  if (options.oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && !is_floating_point(dtype)) {
    where.fail(
        "TensorMapOptions::oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA "
        "needs a floating-point dtype; dtype is " +
        std::to_string(static_cast<int>(dtype)));
  }
}

// The checks shared by both encodings: rank, shape, strides, element strides, options,
// address. Returns the element size.
std::size_t check_tensor(const Where& where, CUtensorMapDataType dtype, CUdeviceptr address,
                         std::span<const std::uint64_t> shape,
                         std::span<const std::uint64_t> strides, const TensorMapOptions& options,
                         std::size_t min_rank) {
  if (shape.size() < min_rank || shape.size() > kMaxRank) {
    where.fail("the rank (shape.size()) is " + std::to_string(shape.size()) + "; it must be " +
               std::to_string(min_rank) + " to " + std::to_string(kMaxRank));
  }
  const std::size_t rank = shape.size();
  if (strides.size() != rank - 1) {
    where.fail("strides has " + std::to_string(strides.size()) + " entries; a rank-" +
               std::to_string(rank) + " tensor needs " + std::to_string(rank - 1) +
               " (the byte strides of dimensions 1 and up)");
  }
  const std::size_t element = detail::tensor_map_element_size(dtype);
  for (std::size_t i = 0; i < rank; ++i) {
    if (shape[i] == 0 || shape[i] > kMaxDim) {
      where.fail(item("shape", i, shape[i]) + " is outside 1..2^32");
    }
  }
  const std::size_t alignment = alignment_of(options.interleave);
  std::uint64_t below = shape[0] * element;  // bytes spanned by the dimensions below
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] % alignment != 0) {
      where.fail(item("strides", i, strides[i]) + " (dimension " + std::to_string(i + 1) +
                 ") is not a multiple of " + std::to_string(alignment) + " bytes");
    }
    if (strides[i] >= kMaxStride) {
      where.fail(item("strides", i, strides[i]) + " is not below 2^40");
    }
    if (strides[i] < below) {
      where.fail(item("strides", i, strides[i]) + " (dimension " + std::to_string(i + 1) +
                 ") is smaller than the " + std::to_string(below) + " bytes that dimension " +
                 std::to_string(i) + " spans");
    }
    below = strides[i] * shape[i + 1];
  }
  if (!options.element_strides.empty() && options.element_strides.size() != rank) {
    where.fail("element_strides has " + std::to_string(options.element_strides.size()) +
               " entries for a rank-" + std::to_string(rank) + " tensor");
  }
  for (std::size_t i = 0; i < options.element_strides.size(); ++i) {
    if (options.element_strides[i] == 0 || options.element_strides[i] > kMaxElementStride) {
      where.fail(item("element_strides", i, options.element_strides[i]) + " is outside 1..8");
    }
  }
  check_options(where, dtype, rank, options);
  check_address(where, address, options.interleave);
  return element;
}

// The globalStrides array handed to the driver: the caller's strides, and for a rank-1
// tensor (which has none) one entry the size of the tensor rounded up to the alignment.
// The driver refuses a null globalStrides even where the rank needs no entry, and a
// span of nothing may have a null data(); the entry is what a dimension 1 of extent 1
// would have, so it meets every rule on strides.
std::array<cuuint64_t, kMaxRank - 1> global_strides(std::span<const std::uint64_t> shape,
                                                    std::span<const std::uint64_t> strides,
                                                    std::size_t element,
                                                    CUtensorMapInterleave interleave) {
  std::array<cuuint64_t, kMaxRank - 1> result{};
  if (strides.empty()) {
    const std::uint64_t alignment = alignment_of(interleave);
    result[0] = (shape[0] * element + alignment - 1) / alignment * alignment;
    return result;
  }
  for (std::size_t i = 0; i < strides.size(); ++i) {
    result[i] = strides[i];
  }
  return result;
}

// Bytes the tensor spans from its address: to the end of its last element (the padding
// after the last row of a pitched tensor is not part of it; the driver reads none of it).
std::uint64_t tensor_bytes(std::span<const std::uint64_t> shape,
                           std::span<const std::uint64_t> strides, std::size_t element) {
  std::uint64_t last = (shape[0] - 1) * element;
  for (std::size_t i = 0; i < strides.size() && i + 1 < shape.size(); ++i) {
    last += (shape[i + 1] - 1) * strides[i];
  }
  return last + element;
}

// Throw when the tensor spans more than the `available` bytes of its buffer (if known).
void check_fits(const Where& where, std::optional<std::size_t> available,
                std::span<const std::uint64_t> shape, std::span<const std::uint64_t> strides,
                std::size_t element) {
  const std::uint64_t needed = tensor_bytes(shape, strides, element);
  if (available && *available < needed) {
    where.fail("the buffer has " + std::to_string(*available) + " bytes but the tensor spans " +
               std::to_string(needed));
  }
}

std::size_t swizzle_span(CUtensorMapSwizzle swizzle) {
  switch (swizzle) {
    case CU_TENSOR_MAP_SWIZZLE_32B:
      return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B:
      return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B:
      return 128;
    default:
      return 0;  // none (or a newer mode the driver checks itself)
  }
}

std::array<std::uint32_t, kMaxRank> element_strides_or_ones(const TensorMapOptions& options) {
  std::array<std::uint32_t, kMaxRank> strides{1, 1, 1, 1, 1};
  for (std::size_t i = 0; i < options.element_strides.size(); ++i) {
    strides[i] = options.element_strides[i];
  }
  return strides;
}

void* as_pointer(CUdeviceptr address) { return reinterpret_cast<void*>(address); }

CUtensorMap encode_tiled(CUdeviceptr address, std::optional<std::size_t> available,
                         CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
                         std::span<const std::uint64_t> strides, std::span<const std::uint32_t> box,
                         const TensorMapOptions& options) {
  const Where where{"from_tiled"};
  const std::size_t element = check_tensor(where, dtype, address, shape, strides, options, 1);
  check_fits(where, available, shape, strides, element);
  if (box.size() != shape.size()) {
    where.fail("box has " + std::to_string(box.size()) + " entries for a rank-" +
               std::to_string(shape.size()) + " tensor");
  }
  for (std::size_t i = 0; i < box.size(); ++i) {
    if (box[i] == 0 || box[i] > kMaxBox) {
      where.fail(item("box", i, box[i]) + " is outside 1..256");
    }
    if (box[i] > shape[i]) {
      where.fail(item("box", i, box[i]) + " exceeds " + item("shape", i, shape[i]));
    }
  }
  if (options.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    const std::size_t row = box[0] * element;
    if (row % 16 != 0) {
      where.fail(item("box", 0, box[0]) + " spans " + std::to_string(row) +
                 " bytes; the inner box dimension must span a multiple of 16 bytes");
    }
    const std::size_t span = swizzle_span(options.swizzle);
    if (span != 0 && row > span) {
      where.fail(item("box", 0, box[0]) + " spans " + std::to_string(row) +
                 " bytes, more than the " + std::to_string(span) + "-byte swizzle span");
    }
  }
  const auto element_strides = element_strides_or_ones(options);
  const auto byte_strides = global_strides(shape, strides, element, options.interleave);
  CUtensorMap map{};
  detail::ensure_driver_initialized();
  detail::check(driver::raw::cuTensorMapEncodeTiled(
                    &map, dtype, static_cast<cuuint32_t>(shape.size()), as_pointer(address),
                    shape.data(), byte_strides.data(), box.data(), element_strides.data(),
                    options.interleave, options.swizzle, options.l2_promotion, options.oob_fill),
                "cuTensorMapEncodeTiled");
  return map;
}

CUtensorMap encode_im2col(CUdeviceptr address, std::optional<std::size_t> available,
                          CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
                          std::span<const std::uint64_t> strides, std::span<const int> lower_corner,
                          std::span<const int> upper_corner, std::uint32_t channels_per_pixel,
                          std::uint32_t pixels_per_column, const TensorMapOptions& options) {
  const Where where{"from_im2col"};
  const std::size_t element = check_tensor(where, dtype, address, shape, strides, options, 3);
  check_fits(where, available, shape, strides, element);
  const std::size_t spatial = shape.size() - 2;
  if (lower_corner.size() != spatial || upper_corner.size() != spatial) {
    where.fail("lower_corner and upper_corner need " + std::to_string(spatial) +
               " entries each (rank - 2) but have " + std::to_string(lower_corner.size()) +
               " and " + std::to_string(upper_corner.size()));
  }
  // The corner range shrinks with the rank: 16, 8 or 5 bits, signed.
  const int limit = shape.size() == 3 ? (1 << 15) : shape.size() == 4 ? (1 << 7) : (1 << 4);
  for (std::size_t i = 0; i < spatial; ++i) {
    for (const auto& [name, value] :
         {std::pair{"lower_corner", lower_corner[i]}, std::pair{"upper_corner", upper_corner[i]}}) {
      if (value < -limit || value >= limit) {
        where.fail(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(value) +
                   " is outside " + std::to_string(-limit) + ".." + std::to_string(limit - 1) +
                   " for a rank-" + std::to_string(shape.size()) + " tensor");
      }
    }
  }
  if (channels_per_pixel == 0 || channels_per_pixel > kMaxBox) {
    where.fail("channels_per_pixel = " + std::to_string(channels_per_pixel) + " is outside 1..256");
  }
  if (pixels_per_column == 0 || pixels_per_column > kMaxBox) {
    where.fail("pixels_per_column = " + std::to_string(pixels_per_column) + " is outside 1..256");
  }
  const auto element_strides = element_strides_or_ones(options);
  const auto byte_strides = global_strides(shape, strides, element, options.interleave);
  CUtensorMap map{};
  detail::ensure_driver_initialized();
  detail::check(driver::raw::cuTensorMapEncodeIm2col(
                    &map, dtype, static_cast<cuuint32_t>(shape.size()), as_pointer(address),
                    shape.data(), byte_strides.data(), lower_corner.data(), upper_corner.data(),
                    channels_per_pixel, pixels_per_column, element_strides.data(),
                    options.interleave, options.swizzle, options.l2_promotion, options.oob_fill),
                "cuTensorMapEncodeIm2col");
  return map;
}

}  // namespace

TensorMapDescriptor TensorMapDescriptor::from_tiled(BufferRef buffer, CUtensorMapDataType dtype,
                                                    std::span<const std::uint64_t> shape,
                                                    std::span<const std::uint64_t> strides,
                                                    std::span<const std::uint32_t> box,
                                                    const TensorMapOptions& options) {
  TensorMapDescriptor map;
  map.map_ = encode_tiled(buffer.handle(), buffer.size(), dtype, shape, strides, box, options);
  return map;
}

TensorMapDescriptor TensorMapDescriptor::from_tiled(CUdeviceptr address, CUtensorMapDataType dtype,
                                                    std::span<const std::uint64_t> shape,
                                                    std::span<const std::uint64_t> strides,
                                                    std::span<const std::uint32_t> box,
                                                    const TensorMapOptions& options) {
  TensorMapDescriptor map;
  map.map_ = encode_tiled(address, std::nullopt, dtype, shape, strides, box, options);
  return map;
}

TensorMapDescriptor TensorMapDescriptor::from_im2col(
    const Buffer& buffer, CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
    std::span<const std::uint64_t> strides, std::span<const int> lower_corner,
    std::span<const int> upper_corner, std::uint32_t channels_per_pixel,
    std::uint32_t pixels_per_column, const TensorMapOptions& options) {
  TensorMapDescriptor map;
  map.map_ = encode_im2col(buffer.handle(), buffer.size(), dtype, shape, strides, lower_corner,
                           upper_corner, channels_per_pixel, pixels_per_column, options);
  return map;
}

TensorMapDescriptor TensorMapDescriptor::from_im2col(
    CUdeviceptr address, CUtensorMapDataType dtype, std::span<const std::uint64_t> shape,
    std::span<const std::uint64_t> strides, std::span<const int> lower_corner,
    std::span<const int> upper_corner, std::uint32_t channels_per_pixel,
    std::uint32_t pixels_per_column, const TensorMapOptions& options) {
  TensorMapDescriptor map;
  map.map_ = encode_im2col(address, std::nullopt, dtype, shape, strides, lower_corner, upper_corner,
                           channels_per_pixel, pixels_per_column, options);
  return map;
}

void TensorMapDescriptor::replace_address(const Buffer& buffer) {
  // As cuda.core: the tensor core units read the memory, so the device must reach it.
  if (!buffer.is_device_accessible()) {
    throw std::invalid_argument(
        "TensorMapDescriptor::replace_address: the buffer is not device-accessible (its "
        "memory resource says so); a tensor map needs memory the device can read");
  }
  replace_address(buffer.handle());
}

void TensorMapDescriptor::replace_address(CUdeviceptr address) {
  check_address(Where{"replace_address"}, address, CU_TENSOR_MAP_INTERLEAVE_NONE);
  detail::ensure_driver_initialized();
  detail::check(driver::raw::cuTensorMapReplaceAddress(&map_, as_pointer(address)),
                "cuTensorMapReplaceAddress");
}

namespace detail {

std::size_t tensor_map_element_size(CUtensorMapDataType dtype) {
  switch (dtype) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      throw std::invalid_argument("TensorMapDescriptor: dtype " +
                                  std::to_string(static_cast<int>(dtype)) +
                                  " (a packed sub-byte type) is not supported by cuwrap's "
                                  "checks; call cuwrap::driver::cuTensorMapEncodeTiled directly");
  }
}

}  // namespace detail
}  // namespace cuwrap
