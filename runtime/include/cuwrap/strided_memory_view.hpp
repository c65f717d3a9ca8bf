// StridedMemoryView: a typed view (element type, shape, strides) over a Buffer or an
// imported DLPack tensor, made without a driver call (cuda.core.utils.StridedMemoryView
// and its from_buffer). TensorMapDescriptor::from_tiled takes one directly.
//
// Shapes and strides follow DLPack: outermost dimension first, strides in elements.
// Needs no dlpack.h: DataType has DLDataType's fields and codes.
#pragma once

#include <cuwrap/buffer.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace cuwrap {

/// An element type as DLPack describes it (DLDataType's fields and codes).
struct DataType {
  /// The kind, as DLDataTypeCode numbers it: kInt, kUInt, kFloat, kBfloat, kComplex, kBool.
  std::uint8_t code = 0;
  /// Bits per element (a whole number of bytes for cuwrap).
  std::uint8_t bits = 0;
  /// Vector lanes (1: scalars, the only kind cuwrap takes).
  std::uint16_t lanes = 1;

  static constexpr std::uint8_t kInt = 0;      ///< signed integer (kDLInt)
  static constexpr std::uint8_t kUInt = 1;     ///< unsigned integer (kDLUInt)
  static constexpr std::uint8_t kFloat = 2;    ///< IEEE floating point (kDLFloat)
  static constexpr std::uint8_t kBfloat = 4;   ///< bfloat16 (kDLBfloat)
  static constexpr std::uint8_t kComplex = 5;  ///< complex of two floats (kDLComplex)
  static constexpr std::uint8_t kBool = 6;     ///< bool (kDLBool, dlpack.h 0.8+)

  /// Return whether both describe the same type.
  friend bool operator==(const DataType&, const DataType&) = default;
};

/// Return the DataType of the arithmetic type `T` (bool, integers, float, double).
template <class T>
requires std::is_arithmetic_v<T>
constexpr DataType data_type_of() {
  constexpr auto bits = static_cast<std::uint8_t>(sizeof(T) * 8);
  if constexpr (std::is_same_v<T, bool>) {
    return {DataType::kBool, bits, 1};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {DataType::kFloat, bits, 1};
  } else if constexpr (std::is_signed_v<T>) {
    return {DataType::kInt, bits, 1};
  } else {
    return {DataType::kUInt, bits, 1};
  }
}

/// A strided, typed view of memory: address, element type, shape and strides.
///
/// Non-owning: the Buffer (or imported tensor) it views must outlive it. Making one
/// calls no driver function; the checks name the dimension and the numbers.
///
/// Example (a row-major rows x cols matrix of floats, viewed and mapped for TMA):
/// \code
///   const std::int64_t shape[] = {rows, cols};
///   auto view = cuwrap::StridedMemoryView::from_buffer(buf, cuwrap::data_type_of<float>(), shape);
///   const std::uint32_t box[] = {64, 32};  // innermost first, as the driver counts
///   auto map = cuwrap::TensorMapDescriptor::from_tiled(view, box);
/// \endcode
class StridedMemoryView {
 public:
  /// Make an empty view (no elements).
  StridedMemoryView() = default;

  /// View `buffer` as elements of `dtype` in `shape` with `strides` (in elements; empty:
  /// compact row-major), starting at the buffer's first byte.
  ///
  /// Throws std::invalid_argument, before anything else, for a closed buffer, a dtype
  /// with lanes != 1, an unknown code or a size that is not whole bytes, strides of
  /// another length than the shape, a negative dimension or stride, or elements reaching
  /// past the buffer (naming the bytes needed and the buffer's size).
  static StridedMemoryView from_buffer(const Buffer& buffer, DataType dtype,
                                       std::span<const std::int64_t> shape,
                                       std::span<const std::int64_t> strides = {},
                                       bool readonly = false);
  /// View `size_bytes` bytes at `ptr` of device `device_id` (-1: host memory or unknown)
  /// the same way (the imported-tensor form; checked as from_buffer).
  static StridedMemoryView from_pointer(CUdeviceptr ptr, std::size_t size_bytes, int device_id,
                                        DataType dtype, std::span<const std::int64_t> shape,
                                        std::span<const std::int64_t> strides = {},
                                        bool readonly = false);

  /// Return the address of the first element.
  CUdeviceptr ptr() const noexcept { return ptr_; }
  /// Return the element type.
  DataType dtype() const noexcept { return dtype_; }
  /// Return the bytes of one element.
  std::size_t itemsize() const noexcept { return dtype_.bits / 8U; }
  /// Return the dimensions, outermost first.
  std::span<const std::int64_t> shape() const noexcept { return shape_; }
  /// Return the strides in elements, outermost first.
  std::span<const std::int64_t> strides() const noexcept { return strides_; }
  /// Return the number of dimensions.
  std::size_t ndim() const noexcept { return shape_.size(); }
  /// Return the bytes from ptr() to the end of the last element.
  std::size_t size_bytes() const noexcept { return size_bytes_; }
  /// Return the device the memory is on, or -1 for host memory or when not known.
  int device_id() const noexcept { return device_id_; }
  /// Return whether the view was made read-only.
  bool readonly() const noexcept { return readonly_; }
  /// Return whether the elements are compact and row-major.
  bool is_contiguous() const noexcept;
  /// Return the viewed bytes as host-accessible elements of `T`.
  ///
  /// Throws std::invalid_argument when sizeof(T) is not the dtype's element size (naming
  /// both); the memory must be host-accessible (pinned, managed or host memory).
  template <class T>
  std::span<T> host_span() const {
    require_item_size(sizeof(T));
    return {reinterpret_cast<T*>(ptr_), size_bytes_ / sizeof(T)};
  }

 private:
  void require_item_size(std::size_t size) const;

  CUdeviceptr ptr_ = 0;
  DataType dtype_{DataType::kUInt, 8, 1};
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> strides_;
  std::size_t size_bytes_ = 0;
  int device_id_ = -1;
  bool readonly_ = false;
};

namespace detail {

/// Return the bytes per element of `dtype`; throws std::invalid_argument naming `where`
/// for a code cuwrap does not know, lanes != 1 or bits that are not whole bytes.
std::size_t data_type_bytes(const char* where, DataType dtype);

/// Return the bytes from the first element to the end of the last of `shape` with
/// `strides` (elements of `element` bytes); throws std::invalid_argument naming `where`
/// for a negative dimension or stride.
std::size_t strided_extent_bytes(const char* where, std::span<const std::int64_t> shape,
                                 std::span<const std::int64_t> strides, std::size_t element);

/// Return the compact row-major strides of `shape`.
std::vector<std::int64_t> compact_strides(std::span<const std::int64_t> shape);

}  // namespace detail
}  // namespace cuwrap
