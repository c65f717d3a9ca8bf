// StridedMemoryView, and TensorMapDescriptor::from_tiled over one. See
// cuwrap/strided_memory_view.hpp.
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/strided_memory_view.hpp>
#include <cuwrap/tensor_map.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap {
namespace {

std::string describe(DataType dtype) {
  return "{code " + std::to_string(dtype.code) + ", bits " + std::to_string(dtype.bits) +
         ", lanes " + std::to_string(dtype.lanes) + "}";
}

// The tensor-map element type of `dtype`; throws for those TMA has none for.
CUtensorMapDataType tensor_map_type(DataType dtype) {
  struct Match {
    std::uint8_t code;
    std::uint8_t bits;
    CUtensorMapDataType type;
  };
  static constexpr Match kMatches[] = {
      {DataType::kUInt, 8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
      {DataType::kUInt, 16, CU_TENSOR_MAP_DATA_TYPE_UINT16},
      {DataType::kUInt, 32, CU_TENSOR_MAP_DATA_TYPE_UINT32},
      {DataType::kInt, 32, CU_TENSOR_MAP_DATA_TYPE_INT32},
      {DataType::kUInt, 64, CU_TENSOR_MAP_DATA_TYPE_UINT64},
      {DataType::kInt, 64, CU_TENSOR_MAP_DATA_TYPE_INT64},
      {DataType::kFloat, 16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
      {DataType::kFloat, 32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
      {DataType::kFloat, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
      {DataType::kBfloat, 16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
  };
  for (const Match& match : kMatches) {
    if (dtype.code == match.code && dtype.bits == match.bits && dtype.lanes == 1) {
      return match.type;
    }
  }
  throw std::invalid_argument("TensorMapDescriptor::from_tiled: the view's dtype " +
                              describe(dtype) +
                              " has no tensor-map element type (TMA takes uint8/16/32/64, "
                              "int32/64, float16/32/64 and bfloat16)");
}

}  // namespace

StridedMemoryView StridedMemoryView::from_pointer(CUdeviceptr ptr, std::size_t size_bytes,
                                                  int device_id, DataType dtype,
                                                  std::span<const std::int64_t> shape,
                                                  std::span<const std::int64_t> strides,
                                                  bool readonly) {
  constexpr const char* kWhere = "StridedMemoryView";
  const std::size_t element = detail::data_type_bytes(kWhere, dtype);
  if (!strides.empty() && strides.size() != shape.size()) {
    throw std::invalid_argument(std::string(kWhere) + ": " + std::to_string(strides.size()) +
                                " strides for " + std::to_string(shape.size()) + " dimensions");
  }
  StridedMemoryView view;
  view.shape_.assign(shape.begin(), shape.end());
  view.strides_ = strides.empty() ? detail::compact_strides(shape)
                                  : std::vector<std::int64_t>(strides.begin(), strides.end());
  const std::size_t needed =
      detail::strided_extent_bytes(kWhere, view.shape_, view.strides_, element);
  if (needed > size_bytes) {
    throw std::invalid_argument(std::string(kWhere) + ": the elements span " +
                                std::to_string(needed) + " bytes but the memory has " +
                                std::to_string(size_bytes));
  }
  view.ptr_ = ptr;
  view.dtype_ = dtype;
  view.size_bytes_ = needed;
  view.device_id_ = device_id;
  view.readonly_ = readonly;
  return view;
}

StridedMemoryView StridedMemoryView::from_buffer(const Buffer& buffer, DataType dtype,
                                                 std::span<const std::int64_t> shape,
                                                 std::span<const std::int64_t> strides,
                                                 bool readonly) {
  if (!buffer.is_open()) {
    throw std::invalid_argument("StridedMemoryView::from_buffer: the buffer is closed");
  }
  // The resource says where the memory is without asking the driver; foreign memory: -1.
  const MemoryResource* mr = buffer.memory_resource();
  const int device_id = mr != nullptr && !mr->is_host_accessible() ? mr->device_id() : -1;
  return from_pointer(buffer.handle(), buffer.size(), device_id, dtype, shape, strides, readonly);
}

bool StridedMemoryView::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i > 0; --i) {
    if (shape_[i - 1] > 1 && strides_[i - 1] != expected) {
      return false;
    }
    expected *= shape_[i - 1] > 0 ? shape_[i - 1] : 1;
  }
  return true;
}

void StridedMemoryView::require_item_size(std::size_t size) const {
  if (size != itemsize()) {
    throw std::invalid_argument("StridedMemoryView::host_span: the view's dtype " +
                                describe(dtype_) + " has " + std::to_string(itemsize()) +
                                "-byte elements but the requested type has " +
                                std::to_string(size));
  }
}

TensorMapDescriptor TensorMapDescriptor::from_tiled(const StridedMemoryView& view,
                                                    std::span<const std::uint32_t> box,
                                                    const TensorMapOptions& options) {
  const CUtensorMapDataType dtype = tensor_map_type(view.dtype());
  const std::size_t rank = view.ndim();
  if (rank == 0) {
    throw std::invalid_argument("TensorMapDescriptor::from_tiled: the view has no dimensions");
  }
  if (view.strides()[rank - 1] != 1) {
    throw std::invalid_argument(
        "TensorMapDescriptor::from_tiled: the view's innermost dimension (" +
        std::to_string(rank - 1) + ") has stride " + std::to_string(view.strides()[rank - 1]) +
        "; a tensor map needs it contiguous (stride 1)");
  }
  // The driver counts dimensions innermost first and gives byte strides of 1 and up.
  std::vector<std::uint64_t> shape(rank);
  std::vector<std::uint64_t> strides(rank - 1);
  for (std::size_t i = 0; i < rank; ++i) {
    shape[i] = static_cast<std::uint64_t>(view.shape()[rank - 1 - i]);
    if (i > 0) {
      strides[i - 1] = static_cast<std::uint64_t>(view.strides()[rank - 1 - i]) * view.itemsize();
    }
  }
  const BufferRef memory(view.ptr(), view.size_bytes());
  return from_tiled(memory, dtype, shape, strides, box, options);
}

namespace detail {

std::size_t data_type_bytes(const char* where, DataType dtype) {
  const bool known = dtype.code == DataType::kInt || dtype.code == DataType::kUInt ||
                     dtype.code == DataType::kFloat || dtype.code == DataType::kBfloat ||
                     dtype.code == DataType::kComplex || dtype.code == DataType::kBool;
  if (!known) {
    throw std::invalid_argument(std::string(where) + ": dtype code " + std::to_string(dtype.code) +
                                " is not an integer, floating-point, complex or bool type");
  }
  if (dtype.lanes != 1) {
    throw std::invalid_argument(std::string(where) + ": dtype lanes " +
                                std::to_string(dtype.lanes) + " (vector types) are not supported");
  }
  if (dtype.bits == 0 || dtype.bits % 8 != 0) {
    throw std::invalid_argument(std::string(where) + ": dtype bits " + std::to_string(dtype.bits) +
                                " is not a whole number of bytes");
  }
  return dtype.bits / 8U;
}

std::size_t strided_extent_bytes(const char* where, std::span<const std::int64_t> shape,
                                 std::span<const std::int64_t> strides, std::size_t element) {
  std::size_t last = 0;  // offset of the last element, in elements
  bool empty = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      throw std::invalid_argument(std::string(where) + ": shape[" + std::to_string(i) +
                                  "] = " + std::to_string(shape[i]) + " is negative");
    }
    if (strides[i] < 0) {
      throw std::invalid_argument(std::string(where) + ": strides[" + std::to_string(i) +
                                  "] = " + std::to_string(strides[i]) +
                                  " is negative; cuwrap takes only non-negative strides");
    }
    if (shape[i] == 0) {
      empty = true;
    } else {
      last += static_cast<std::size_t>(shape[i] - 1) * static_cast<std::size_t>(strides[i]);
    }
  }
  return empty ? 0 : (last + 1) * element;
}

std::vector<std::int64_t> compact_strides(std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i > 1; --i) {
    strides[i - 2] = strides[i - 1] * (shape[i - 1] > 0 ? shape[i - 1] : 1);
  }
  return strides;
}

}  // namespace detail
}  // namespace cuwrap
