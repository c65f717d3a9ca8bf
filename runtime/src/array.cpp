// CUDA arrays and their copies. See cuwrap/array.hpp.
#include <cuwrap/array.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

std::size_t at_least_one(std::size_t extent) { return extent == 0 ? 1 : extent; }

// Rows per slice and slices (layers) of the array as a copy sees them.
std::size_t copy_rows(const CUDA_ARRAY3D_DESCRIPTOR& d) { return at_least_one(d.Height); }
std::size_t copy_slices(const CUDA_ARRAY3D_DESCRIPTOR& d) { return at_least_one(d.Depth); }

// Check a buffer against the array for a copy in either direction; returns the pitch.
std::size_t checked_pitch(const ArrayRef& array, const Buffer& buffer, std::size_t pitch,
                          const char* operation) {
  const std::size_t row = array.row_bytes();
  const std::size_t used_pitch = pitch == 0 ? row : pitch;
  if (used_pitch < row) {
    throw std::invalid_argument(std::string("ArrayRef::") + operation + ": pitch " +
                                std::to_string(used_pitch) + " is smaller than a row of " +
                                std::to_string(row) + " bytes");
  }
  const CUDA_ARRAY3D_DESCRIPTOR& d = array.descriptor();
  const std::size_t rows = copy_rows(d) * copy_slices(d);
  const std::size_t needed = (rows - 1) * used_pitch + row;
  if (buffer.size() < needed) {
    throw std::invalid_argument(std::string("ArrayRef::") + operation + ": the buffer has " +
                                std::to_string(buffer.size()) + " bytes but the array needs " +
                                std::to_string(needed) + " (" + std::to_string(rows) +
                                " rows of " + std::to_string(row) + " bytes, pitch " +
                                std::to_string(used_pitch) + ")");
  }
  return used_pitch;
}

// Copy between the array and linear memory at `ptr`; `to_array` picks the direction.
void copy_array(const ArrayRef& array, CUdeviceptr ptr, std::size_t pitch, bool to_array,
                StreamRef stream) {
  const CUDA_ARRAY3D_DESCRIPTOR& d = array.descriptor();
  const CUstream handle = stream.handle();
  if (d.Depth == 0) {
    CUDA_MEMCPY2D copy{};
    if (to_array) {
      copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
      copy.srcDevice = ptr;
      copy.srcPitch = pitch;
      copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      copy.dstArray = array.handle();
    } else {
      copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      copy.srcArray = array.handle();
      copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
      copy.dstDevice = ptr;
      copy.dstPitch = pitch;
    }
    copy.WidthInBytes = array.row_bytes();
    copy.Height = copy_rows(d);
    detail::check_on_stream(stream, "cuMemcpy2DAsync",
                            [&] { return driver::raw::cuMemcpy2DAsync(&copy, handle); });
    return;
  }
  CUDA_MEMCPY3D copy{};
  if (to_array) {
    copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy.srcDevice = ptr;
    copy.srcPitch = pitch;
    copy.srcHeight = copy_rows(d);
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = array.handle();
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = array.handle();
    copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy.dstDevice = ptr;
    copy.dstPitch = pitch;
    copy.dstHeight = copy_rows(d);
  }
  copy.WidthInBytes = array.row_bytes();
  copy.Height = copy_rows(d);
  copy.Depth = copy_slices(d);
  detail::check_on_stream(stream, "cuMemcpy3DAsync",
                          [&] { return driver::raw::cuMemcpy3DAsync(&copy, handle); });
}

}  // namespace

// ---- ArrayRef ----

ArrayRef ArrayRef::from_handle(CUarray handle) {
  if (handle == nullptr) {
    throw std::invalid_argument("ArrayRef::from_handle: the CUarray is null");
  }
  detail::ensure_driver_initialized();
  return ArrayRef(handle, driver::cuArray3DGetDescriptor(handle));
}

void ArrayRef::copy_from(const Buffer& src, StreamRef stream, std::size_t src_pitch) const {
  const std::size_t pitch = checked_pitch(*this, src, src_pitch, "copy_from");
  copy_array(*this, src.handle(), pitch, true, stream);
}

void ArrayRef::copy_to(Buffer& dst, StreamRef stream, std::size_t dst_pitch) const {
  const std::size_t pitch = checked_pitch(*this, dst, dst_pitch, "copy_to");
  copy_array(*this, dst.handle(), pitch, false, stream);
}

std::size_t ArrayRef::element_size() const {
  return detail::channel_bytes(descriptor().Format) * descriptor().NumChannels;
}

std::size_t ArrayRef::size_bytes() const {
  return row_bytes() * copy_rows(descriptor()) * copy_slices(descriptor());
}

// ---- Array ----

Array::Array(const Device& device, const ArrayOptions& options) {
  const CUDA_ARRAY3D_DESCRIPTOR descriptor = detail::to_array_descriptor(options);
  const detail::ScopedContext scope(device.context());
  assign(driver::cuArray3DCreate(&descriptor), descriptor, device.context());
}

Array::Array(Array&& other) noexcept
    : ArrayRef(other.handle(), other.descriptor(), other.context()) {
  other.assign(nullptr, other.descriptor(), nullptr);
}

Array& Array::operator=(Array&& other) noexcept {
  if (this != &other) {
    close();
    assign(other.handle(), other.descriptor(), other.context());
    other.assign(nullptr, other.descriptor(), nullptr);
  }
  return *this;
}

Array::~Array() { close(); }

void Array::close() noexcept {
  if (handle() != nullptr) {
    detail::report_release_failure(driver::raw::cuArrayDestroy(handle()), "cuArrayDestroy",
                                   "Array");
    assign(nullptr, descriptor(), nullptr);
  }
}

// ---- MipmappedArray ----

MipmappedArray::MipmappedArray(const Device& device, const ArrayOptions& options,
                               unsigned levels)
    : context_(device.context()), levels_(levels) {
  if (levels == 0) {
    throw std::invalid_argument("MipmappedArray: levels is 0; a mipmapped array has at least one");
  }
  const CUDA_ARRAY3D_DESCRIPTOR descriptor = detail::to_array_descriptor(options);
  const detail::ScopedContext scope(context_);
  handle_ = driver::cuMipmappedArrayCreate(&descriptor, levels);
}

MipmappedArray::MipmappedArray(MipmappedArray&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      context_(other.context_),
      levels_(std::exchange(other.levels_, 0U)) {}

MipmappedArray& MipmappedArray::operator=(MipmappedArray&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    context_ = other.context_;
    levels_ = std::exchange(other.levels_, 0U);
  }
  return *this;
}

MipmappedArray::~MipmappedArray() { close(); }

ArrayRef MipmappedArray::level(unsigned level) const {
  if (handle_ == nullptr) {
    throw std::logic_error("MipmappedArray::level on a closed MipmappedArray");
  }
  if (level >= levels_) {
    throw std::invalid_argument("MipmappedArray::level: level " + std::to_string(level) +
                                " does not exist; the array has " + std::to_string(levels_) +
                                " levels");
  }
  const detail::ScopedContext scope(context_);
  const CUarray array = driver::cuMipmappedArrayGetLevel(handle_, level);
  return ArrayRef(array, driver::cuArray3DGetDescriptor(array), context_);
}

void MipmappedArray::close() noexcept {
  if (handle_ != nullptr) {
    detail::report_release_failure(driver::raw::cuMipmappedArrayDestroy(handle_),
                                   "cuMipmappedArrayDestroy", "MipmappedArray");
    handle_ = nullptr;
  }
}

// ---- descriptors ----

namespace detail {

std::size_t channel_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      throw std::invalid_argument("ArrayOptions::format " + std::to_string(static_cast<int>(format)) +
                                  " has no fixed channel size that cuwrap can copy; use an "
                                  "integer, half or float format");
  }
}

CUDA_ARRAY3D_DESCRIPTOR to_array_descriptor(const ArrayOptions& options) {
  if (options.width == 0) {
    throw std::invalid_argument("ArrayOptions::width is 0");
  }
  if (options.num_channels != 1 && options.num_channels != 2 && options.num_channels != 4) {
    throw std::invalid_argument("ArrayOptions::num_channels " +
                                std::to_string(options.num_channels) + " is not 1, 2 or 4");
  }
  if (options.depth != 0 && options.height == 0 && !options.layered) {
    throw std::invalid_argument("ArrayOptions: depth " + std::to_string(options.depth) +
                                " without a height; a 3-D array needs all three extents");
  }
  if (options.layered && options.depth == 0) {
    throw std::invalid_argument("ArrayOptions::layered needs depth (the layer count) >= 1");
  }
  static_cast<void>(channel_bytes(options.format));  // reject formats that cannot be sized
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = options.width;
  d.Height = options.height;
  d.Depth = options.depth;
  d.Format = options.format;
  d.NumChannels = options.num_channels;
  d.Flags = (options.layered ? CUDA_ARRAY3D_LAYERED : 0U) |
            (options.surface_load_store ? CUDA_ARRAY3D_SURFACE_LDST : 0U) |
            (options.texture_gather ? CUDA_ARRAY3D_TEXTURE_GATHER : 0U);
  return d;
}

}  // namespace detail
}  // namespace cuwrap
