// CUDA arrays and their copies. See cuwrap/array.hpp.
#include <cuwrap/array.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>

#include "base/ref_counted.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {

namespace detail {

// One CUarray or CUmipmappedArray, destroyed with the last reference: its Array or
// MipmappedArray, and the texture and surface objects made from it.
struct ArrayStorage : RefCounted {
  ArrayStorage(CUarray a, CUmipmappedArray m) noexcept : array(a), mipmap(m) {}
  ArrayStorage(const ArrayStorage&) = delete;
  ArrayStorage& operator=(const ArrayStorage&) = delete;
  ~ArrayStorage() {
    if (array != nullptr) {
      report_release_failure(driver::raw::cuArrayDestroy(array), "cuArrayDestroy", "Array");
    }
    if (mipmap != nullptr) {
      report_release_failure(driver::raw::cuMipmappedArrayDestroy(mipmap),
                             "cuMipmappedArrayDestroy", "MipmappedArray");
    }
  }
  CUarray array;
  CUmipmappedArray mipmap;
};

void ref_acquire(const ArrayStorage* storage) noexcept { acquire_counted(storage); }
void ref_release(const ArrayStorage* storage) noexcept { release_counted(storage); }

}  // namespace detail

namespace {

std::size_t at_least_one(std::size_t extent) { return extent == 0 ? 1 : extent; }

// Rows per slice and slices (layers) of the array as a copy sees them.
std::size_t copy_rows(const CUDA_ARRAY3D_DESCRIPTOR& d) { return at_least_one(d.Height); }
std::size_t copy_slices(const CUDA_ARRAY3D_DESCRIPTOR& d) { return at_least_one(d.Depth); }

// Check linear memory of `available` bytes (`what`: "the buffer", "the host span")
// against the array for a copy in either direction; returns the pitch.
std::size_t checked_pitch(const ArrayRef& array, std::size_t available, const char* what,
                          std::size_t pitch, const char* operation) {
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
  if (available < needed) {
    throw std::invalid_argument(
        std::string("ArrayRef::") + operation + ": " + what + " has " + std::to_string(available) +
        " bytes but the array needs " + std::to_string(needed) + " (" + std::to_string(rows) +
        " rows of " + std::to_string(row) + " bytes, pitch " + std::to_string(used_pitch) + ")");
  }
  return used_pitch;
}

// Linear memory on one side of a copy: a device (unified) address or host memory.
struct Linear {
  CUdeviceptr device = 0;
  const void* host = nullptr;  // set for host memory
  std::size_t pitch = 0;
};

// Point one side of a 2-D or 3-D copy descriptor at `memory`.
template <class Copy>
void set_source(Copy& copy, const Linear& memory) {
  copy.srcMemoryType = memory.host != nullptr ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
  copy.srcHost = memory.host;
  copy.srcDevice = memory.device;
  copy.srcPitch = memory.pitch;
}
template <class Copy>
void set_destination(Copy& copy, const Linear& memory) {
  copy.dstMemoryType = memory.host != nullptr ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
  copy.dstHost = const_cast<void*>(memory.host);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  copy.dstDevice = memory.device;
  copy.dstPitch = memory.pitch;
}

// Copy between the array and linear memory; `to_array` picks the direction.
void copy_array(const ArrayRef& array, const Linear& memory, bool to_array, StreamRef stream) {
  const CUDA_ARRAY3D_DESCRIPTOR& d = array.descriptor();
  const CUstream handle = stream.handle();
  if (d.Depth == 0) {
    CUDA_MEMCPY2D copy{};
    if (to_array) {
      set_source(copy, memory);
      copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      copy.dstArray = array.handle();
    } else {
      copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      copy.srcArray = array.handle();
      set_destination(copy, memory);
    }
    copy.WidthInBytes = array.row_bytes();
    copy.Height = copy_rows(d);
    detail::check_on_stream(stream, "cuMemcpy2DAsync",
                            [&] { return driver::raw::cuMemcpy2DAsync(&copy, handle); });
    return;
  }
  CUDA_MEMCPY3D copy{};
  if (to_array) {
    set_source(copy, memory);
    copy.srcHeight = copy_rows(d);
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = array.handle();
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = array.handle();
    set_destination(copy, memory);
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

ArrayRef ArrayRef::from_handle(CUarray handle, CUcontext context) {
  ArrayRef view = from_handle(handle);
  view.context_ = context;
  return view;
}

void ArrayRef::copy_from(const Buffer& src, StreamRef stream, std::size_t src_pitch) const {
  copy_from(BufferRef(src), stream, src_pitch);
}

void ArrayRef::copy_to(Buffer& dst, StreamRef stream, std::size_t dst_pitch) const {
  copy_to(BufferRef(dst), stream, dst_pitch);
}

void ArrayRef::copy_from(BufferRef src, StreamRef stream, std::size_t src_pitch) const {
  const std::size_t pitch = checked_pitch(*this, src.size(), "the buffer", src_pitch, "copy_from");
  copy_array(*this, {.device = src.handle(), .pitch = pitch}, true, stream);
}

void ArrayRef::copy_to(BufferRef dst, StreamRef stream, std::size_t dst_pitch) const {
  const std::size_t pitch = checked_pitch(*this, dst.size(), "the buffer", dst_pitch, "copy_to");
  copy_array(*this, {.device = dst.handle(), .pitch = pitch}, false, stream);
}

void ArrayRef::copy_from(std::span<const std::byte> host, StreamRef stream,
                         std::size_t host_pitch) const {
  const std::size_t pitch =
      checked_pitch(*this, host.size(), "the host span", host_pitch, "copy_from");
  copy_array(*this, {.host = host.data(), .pitch = pitch}, true, stream);
}

void ArrayRef::copy_to(std::span<std::byte> host, StreamRef stream, std::size_t host_pitch) const {
  const std::size_t pitch =
      checked_pitch(*this, host.size(), "the host span", host_pitch, "copy_to");
  copy_array(*this, {.host = host.data(), .pitch = pitch}, false, stream);
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
  // In the caller's context of the device (a regular or green one made current), else the
  // primary one.
  const CUcontext context = detail::context_for_device(device.device_id());
  const detail::ScopedContext scope(context);
  const CUarray handle = driver::cuArray3DCreate(&descriptor);
  storage_ = detail::Ref<const detail::ArrayStorage>::adopt(
      new detail::ArrayStorage(handle, nullptr));  // NOLINT(cppcoreguidelines-owning-memory)
  assign(handle, descriptor, context);
}

Array::Array(Array&& other) noexcept
    : ArrayRef(other.handle(), other.descriptor(), other.context()),
      storage_(std::move(other.storage_)) {
  other.assign(nullptr, other.descriptor(), nullptr);
}

Array& Array::operator=(Array&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Array::~Array() { close(); }

void Array::close() noexcept {
  storage_.reset();  // destroys the CUarray unless a texture or surface still holds it
  assign(nullptr, descriptor(), nullptr);
}

// ---- MipmappedArray ----

MipmappedArray::MipmappedArray(const Device& device, const ArrayOptions& options, unsigned levels)
    : context_(device.context()), levels_(levels) {
  if (levels == 0) {
    throw std::invalid_argument("MipmappedArray: levels is 0; a mipmapped array has at least one");
  }
  const CUDA_ARRAY3D_DESCRIPTOR descriptor = detail::to_array_descriptor(options);
  const detail::ScopedContext scope(context_);
  handle_ = driver::cuMipmappedArrayCreate(&descriptor, levels);
  storage_ = detail::Ref<const detail::ArrayStorage>::adopt(
      new detail::ArrayStorage(nullptr, handle_));  // NOLINT(cppcoreguidelines-owning-memory)
}

MipmappedArray::MipmappedArray(MipmappedArray&& other) noexcept
    : storage_(std::move(other.storage_)),
      handle_(std::exchange(other.handle_, nullptr)),
      context_(other.context_),
      levels_(std::exchange(other.levels_, 0U)) {}

MipmappedArray& MipmappedArray::operator=(MipmappedArray&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
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
  storage_.reset();  // destroys the array unless a texture still holds it
  handle_ = nullptr;
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
      throw std::invalid_argument("ArrayOptions::format " +
                                  std::to_string(static_cast<int>(format)) +
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
