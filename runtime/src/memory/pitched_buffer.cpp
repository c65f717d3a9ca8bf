// PitchedBufferRef and PitchedBuffer: pitched 2-D memory, its copies and 2-D fills.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/device_span.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/pitched_buffer.hpp>

#include "base/context_registry.hpp"
#include "base/destroy_in.hpp"
#include "memory/blocking.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

std::string rows_text(std::size_t width_bytes, std::size_t height, std::size_t pitch) {
  return std::to_string(height) + " rows of " + std::to_string(width_bytes) + " bytes, " +
         std::to_string(pitch) + " bytes apart";
}

// The bytes the host rows take: `height` rows of `width` at `pitch` (the last one not
// padded).
std::size_t host_extent(std::size_t width, std::size_t height, std::size_t pitch) {
  return height == 0 ? 0 : pitch * (height - 1) + width;
}

CUDA_MEMCPY2D copy_between(CUdeviceptr dst, std::size_t dst_pitch, CUdeviceptr src,
                           std::size_t src_pitch, std::size_t width, std::size_t height) {
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = src;
  copy.srcPitch = src_pitch;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst;
  copy.dstPitch = dst_pitch;
  copy.WidthInBytes = width;
  copy.Height = height;
  return copy;
}

// Check the host span against the rows and return its pitch (0 means packed).
std::size_t host_pitch_of(const char* operation, std::size_t span_bytes, std::size_t width,
                          std::size_t height, std::size_t host_pitch) {
  const std::size_t pitch = host_pitch == 0 ? width : host_pitch;
  if (pitch < width) {
    throw std::invalid_argument(std::string("PitchedBuffer::") + operation + ": host_pitch " +
                                std::to_string(pitch) + " is smaller than the width " +
                                std::to_string(width));
  }
  const std::size_t needed = host_extent(width, height, pitch);
  if (span_bytes < needed) {
    throw std::invalid_argument(std::string("PitchedBuffer::") + operation +
                                ": the host span has " + std::to_string(span_bytes) + " bytes; " +
                                rows_text(width, height, pitch) + " need " +
                                std::to_string(needed));
  }
  return pitch;
}

}  // namespace

// ---- PitchedBufferRef -------------------------------------------------------------------

PitchedBufferRef::PitchedBufferRef(CUdeviceptr ptr, std::size_t width_bytes, std::size_t height,
                                   std::size_t pitch)
    : ptr_(ptr), width_bytes_(width_bytes), height_(height), pitch_(pitch) {
  if (pitch < width_bytes) {
    throw std::invalid_argument("PitchedBufferRef: pitch " + std::to_string(pitch) +
                                " is smaller than width_bytes " + std::to_string(width_bytes));
  }
  if (ptr == 0 && width_bytes != 0 && height != 0) {
    throw std::invalid_argument("PitchedBufferRef: the address is 0 but the region has " +
                                rows_text(width_bytes, height, pitch));
  }
}

PitchedBufferRef::PitchedBufferRef(BufferRef buffer, std::size_t width_bytes, std::size_t height,
                                   std::size_t pitch)
    : PitchedBufferRef(buffer.handle(), width_bytes, height, pitch) {
  const std::size_t needed = host_extent(width_bytes, height, pitch);
  if (needed > buffer.size()) {
    throw std::invalid_argument("PitchedBufferRef: " + rows_text(width_bytes, height, pitch) +
                                " take " + std::to_string(needed) + " bytes; the buffer has " +
                                std::to_string(buffer.size()));
  }
}

CUdeviceptr PitchedBufferRef::handle() const {
  require_open("handle");
  return ptr_;
}
std::size_t PitchedBufferRef::width_bytes() const {
  require_open("width_bytes");
  return width_bytes_;
}
std::size_t PitchedBufferRef::height() const {
  require_open("height");
  return height_;
}
std::size_t PitchedBufferRef::pitch() const {
  require_open("pitch");
  return pitch_;
}

BufferRef PitchedBufferRef::bytes() const {
  require_open("bytes");
  return {ptr_, pitch_ * height_};
}

PitchedBufferRef::operator Pitched2D() const {
  require_open("Pitched2D");
  return {ptr_, pitch_};
}

void PitchedBufferRef::copy_from(std::span<const std::byte> host, StreamRef stream,
                                 std::size_t host_pitch) const {
  require_open("copy_from");
  const std::size_t pitch =
      host_pitch_of("copy_from", host.size(), width_bytes_, height_, host_pitch);
  copy_2d(*this, Pitched2D{reinterpret_cast<CUdeviceptr>(host.data()), pitch}, width_bytes_,
          height_, stream);
}

void PitchedBufferRef::copy_to(std::span<std::byte> host, StreamRef stream,
                               std::size_t host_pitch) const {
  require_open("copy_to");
  const std::size_t pitch =
      host_pitch_of("copy_to", host.size(), width_bytes_, height_, host_pitch);
  copy_2d(Pitched2D{reinterpret_cast<CUdeviceptr>(host.data()), pitch}, *this, width_bytes_,
          height_, stream);
}

void PitchedBufferRef::copy_from(std::span<const std::byte> host) const {
  require_open("copy_from");
  const std::size_t pitch = host_pitch_of("copy_from", host.size(), width_bytes_, height_, 0);
  if (width_bytes_ == 0 || height_ == 0) {
    return;
  }
  const CUDA_MEMCPY2D copy = copy_between(ptr_, pitch_, reinterpret_cast<CUdeviceptr>(host.data()),
                                          pitch, width_bytes_, height_);
  detail::run_blocking(ptr_, reinterpret_cast<CUdeviceptr>(host.data()),
                       [&](CUstream stream) { driver::cuMemcpy2DAsync(&copy, stream); });
}

void PitchedBufferRef::copy_to(std::span<std::byte> host) const {
  require_open("copy_to");
  const std::size_t pitch = host_pitch_of("copy_to", host.size(), width_bytes_, height_, 0);
  if (width_bytes_ == 0 || height_ == 0) {
    return;
  }
  const CUDA_MEMCPY2D copy = copy_between(reinterpret_cast<CUdeviceptr>(host.data()), pitch, ptr_,
                                          pitch_, width_bytes_, height_);
  detail::run_blocking(ptr_, reinterpret_cast<CUdeviceptr>(host.data()),
                       [&](CUstream stream) { driver::cuMemcpy2DAsync(&copy, stream); });
}

void PitchedBufferRef::fill(std::uint8_t value, StreamRef stream) const {
  require_open("fill");
  if (width_bytes_ == 0 || height_ == 0) {
    return;
  }
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemsetD2D8Async", [&] {
    return driver::raw::cuMemsetD2D8Async(ptr_, pitch_, value, width_bytes_, height_, handle);
  });
}

void PitchedBufferRef::fill(std::uint16_t value, StreamRef stream) const {
  require_open("fill");
  require_multiple(2);
  if (pitch_ % 2 != 0) {
    throw std::invalid_argument("PitchedBuffer::fill: the pitch " + std::to_string(pitch_) +
                                " is not a multiple of 2 bytes");
  }
  if (width_bytes_ == 0 || height_ == 0) {
    return;
  }
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemsetD2D16Async", [&] {
    return driver::raw::cuMemsetD2D16Async(ptr_, pitch_, value, width_bytes_ / 2, height_, handle);
  });
}

void PitchedBufferRef::fill(std::uint32_t value, StreamRef stream) const {
  require_open("fill");
  require_multiple(4);
  if (pitch_ % 4 != 0) {
    throw std::invalid_argument("PitchedBuffer::fill: the pitch " + std::to_string(pitch_) +
                                " is not a multiple of 4 bytes");
  }
  if (width_bytes_ == 0 || height_ == 0) {
    return;
  }
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemsetD2D32Async", [&] {
    return driver::raw::cuMemsetD2D32Async(ptr_, pitch_, value, width_bytes_ / 4, height_, handle);
  });
}

void PitchedBufferRef::require_open(const char* operation) const {
  if (ptr_ == 0 && pitch_ == 0) {
    throw std::logic_error(std::string("PitchedBuffer::") + operation +
                           ": the buffer is closed (or moved from)");
  }
}

void PitchedBufferRef::require_multiple(std::size_t element_size) const {
  if (width_bytes_ % element_size != 0) {
    throw std::invalid_argument("PitchedBuffer: the width of " + std::to_string(width_bytes_) +
                                " bytes is not a whole number of " + std::to_string(element_size) +
                                "-byte elements");
  }
}

// ---- PitchedBuffer ----------------------------------------------------------------------

PitchedBuffer::PitchedBuffer(PitchedBuffer&& other) noexcept
    : PitchedBufferRef(other), context_(std::exchange(other.context_, nullptr)) {
  other.ptr_ = 0;
  other.width_bytes_ = 0;
  other.height_ = 0;
  other.pitch_ = 0;
}

PitchedBuffer& PitchedBuffer::operator=(PitchedBuffer&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

PitchedBuffer::~PitchedBuffer() { close(); }

void PitchedBuffer::close() noexcept {
  if (ptr_ == 0) {
    pitch_ = 0;
    return;
  }
  const CUdeviceptr ptr = std::exchange(ptr_, 0);
  detail::destroy_in(context_, "cuMemFree", "PitchedBuffer",
                     [ptr] { return driver::raw::cuMemFree(ptr); });
  width_bytes_ = 0;
  height_ = 0;
  pitch_ = 0;
  context_ = nullptr;
}

PitchedBuffer PitchedBuffer::allocate(int device_id, std::size_t width_bytes, std::size_t height,
                                      unsigned element_size_bytes) {
  if (width_bytes == 0 || height == 0) {
    throw std::invalid_argument(
        "Device::allocate_pitched: " + rows_text(width_bytes, height, width_bytes) +
        " is empty; give a width and a height above 0");
  }
  if (element_size_bytes != 4 && element_size_bytes != 8 && element_size_bytes != 16) {
    throw std::invalid_argument("Device::allocate_pitched: element_size_bytes " +
                                std::to_string(element_size_bytes) + " is not 4, 8 or 16");
  }
  detail::check_device_ordinal(device_id);
  const CUcontext context = detail::context_for_device(device_id);
  const detail::ScopedContext scope(context);
  const auto [ptr, pitch] = driver::cuMemAllocPitch(width_bytes, height, element_size_bytes);
  PitchedBuffer buffer;
  buffer.ptr_ = ptr;
  buffer.width_bytes_ = width_bytes;
  buffer.height_ = height;
  buffer.pitch_ = pitch;
  buffer.context_ = context;
  return buffer;
}

PitchedBuffer Device::allocate_pitched(std::size_t width_bytes, std::size_t height,
                                       unsigned element_size_bytes) const {
  return PitchedBuffer::allocate(device_id(), width_bytes, height, element_size_bytes);
}

}  // namespace cuwrap
