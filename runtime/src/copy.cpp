// copy_batch and the pitched 2-D / 3-D copies. See cuwrap/copy.hpp.
#include <cuwrap/copy.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap {
namespace {

// cuMemcpyBatchAsync came with 12.8; CUDA 13 replaced it with a form without failIdx,
// which a 12.x driver would hand out under the same name in its old shape, so bindings
// of CUDA 13 need a CUDA 13 driver for it.
#if CUDA_VERSION >= 13000
constexpr int kBatchDriver = 13000;
#elif CUDA_VERSION >= 12080  // older headers have no batch copy (an unused constant warns)
constexpr int kBatchDriver = 12080;
#endif

void reject_legacy_stream(StreamRef stream) {
  if (detail::is_legacy_default_stream(stream)) {
    throw std::invalid_argument(
        "copy_batch: the legacy default stream cannot order a batch (cuMemcpyBatchAsync "
        "rejects it); pass a created stream or the per-thread default stream");
  }
}

void run_batch(StreamRef stream, std::vector<CUdeviceptr>& dsts,
               std::vector<CUdeviceptr>& srcs, std::vector<std::size_t>& sizes) {
  if (dsts.empty()) {
    return;
  }
  const CUstream handle = stream.handle();
#if CUDA_VERSION >= 12080
  if (has_native_copy_batch()) {
    // One attribute set for the whole batch: sources read in stream order; the hints
    // matter only for managed memory and name the stream's device.
    CUmemcpyAttributes attributes{};
    attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attributes.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    attributes.srcLocHint.id = stream.device().handle();
    attributes.dstLocHint = attributes.srcLocHint;
    std::size_t first = 0;
    detail::check_on_stream(stream, "cuMemcpyBatchAsync", [&] {
#if CUDA_VERSION >= 13000
      return driver::raw::cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                                             &attributes, &first, 1, handle);
#else
      std::size_t failed = 0;
      return driver::raw::cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                                             &attributes, &first, 1, &failed, handle);
#endif
    });
    return;
  }
#endif
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    const CUdeviceptr dst = dsts[i];
    const CUdeviceptr src = srcs[i];
    const std::size_t n = sizes[i];
    detail::check_on_stream(stream, "cuMemcpyAsync",
                            [&] { return driver::raw::cuMemcpyAsync(dst, src, n, handle); });
  }
}

void require_pitch(const char* what, std::size_t pitch, std::size_t width_bytes) {
  if (pitch < width_bytes) {
    throw std::invalid_argument(std::string(what) + " pitch " + std::to_string(pitch) +
                                " is smaller than the copied width of " +
                                std::to_string(width_bytes) + " bytes");
  }
}

}  // namespace

bool detail::is_legacy_default_stream(StreamRef stream) {
  const auto bits = reinterpret_cast<std::uintptr_t>(stream.handle());
  return bits == 0 || bits == kLegacyStreamBits;
}

bool has_native_copy_batch() {
#if CUDA_VERSION >= 12080
  return driver_version() >= kBatchDriver;
#else
  return false;
#endif
}

void copy_batch(StreamRef stream, std::span<const Buffer* const> srcs,
                std::span<Buffer* const> dsts) {
  if (srcs.size() != dsts.size()) {
    throw std::invalid_argument("copy_batch: " + std::to_string(srcs.size()) + " sources but " +
                                std::to_string(dsts.size()) + " destinations");
  }
  std::vector<CopyOp> copies;
  copies.reserve(srcs.size());
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const std::string index = "[" + std::to_string(i) + "]";
    if (srcs[i] == nullptr || dsts[i] == nullptr) {
      const char* which = srcs[i] == nullptr ? "srcs" : "dsts";
      throw std::invalid_argument(std::string("copy_batch: ") + which + index + " is null");
    }
    if (!srcs[i]->is_open() || !dsts[i]->is_open()) {
      const char* which = !srcs[i]->is_open() ? "srcs" : "dsts";
      throw std::invalid_argument(std::string("copy_batch: ") + which + index +
                                  " is a closed Buffer");
    }
    if (srcs[i]->size() != dsts[i]->size()) {
      std::string message = "copy_batch: srcs" + index;
      message += " has " + std::to_string(srcs[i]->size()) + " bytes but dsts" + index;
      message += " has " + std::to_string(dsts[i]->size()) + "; sizes must match";
      throw std::invalid_argument(message);
    }
    copies.push_back({dsts[i]->handle(), srcs[i]->handle(), srcs[i]->size()});
  }
  copy_batch(stream, copies);
}

void copy_batch(StreamRef stream, std::span<const CopyOp> copies) {
  reject_legacy_stream(stream);
  std::vector<CUdeviceptr> dsts;
  std::vector<CUdeviceptr> srcs;
  std::vector<std::size_t> sizes;
  dsts.reserve(copies.size());
  srcs.reserve(copies.size());
  sizes.reserve(copies.size());
  for (const CopyOp& op : copies) {
    if (op.size == 0) {
      continue;  // nothing to move; the batch entry point refuses empty copies
    }
    dsts.push_back(op.dst);
    srcs.push_back(op.src);
    sizes.push_back(op.size);
  }
  run_batch(stream, dsts, srcs, sizes);
}

void copy_2d(StreamRef stream, const Pitched2D& dst, const Pitched2D& src,
             std::size_t width_bytes, std::size_t height) {
  require_pitch("copy_2d: the destination", dst.pitch, width_bytes);
  require_pitch("copy_2d: the source", src.pitch, width_bytes);
  if (width_bytes == 0 || height == 0) {
    return;
  }
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = src.ptr;
  copy.srcPitch = src.pitch;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst.ptr;
  copy.dstPitch = dst.pitch;
  copy.WidthInBytes = width_bytes;
  copy.Height = height;
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemcpy2DAsync",
                          [&] { return driver::raw::cuMemcpy2DAsync(&copy, handle); });
}

void copy_3d(StreamRef stream, const Pitched2D& dst, std::size_t dst_height,
             const Pitched2D& src, std::size_t src_height, std::size_t width_bytes,
             std::size_t height, std::size_t depth) {
  require_pitch("copy_3d: the destination", dst.pitch, width_bytes);
  require_pitch("copy_3d: the source", src.pitch, width_bytes);
  if (dst_height < height || src_height < height) {
    throw std::invalid_argument("copy_3d: a slice of " + std::to_string(height) +
                                " rows does not fit the destination's " +
                                std::to_string(dst_height) + " or the source's " +
                                std::to_string(src_height) + " rows per slice");
  }
  if (width_bytes == 0 || height == 0 || depth == 0) {
    return;
  }
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = src.ptr;
  copy.srcPitch = src.pitch;
  copy.srcHeight = src_height;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst.ptr;
  copy.dstPitch = dst.pitch;
  copy.dstHeight = dst_height;
  copy.WidthInBytes = width_bytes;
  copy.Height = height;
  copy.Depth = depth;
  const CUstream handle = stream.handle();
  detail::check_on_stream(stream, "cuMemcpy3DAsync",
                          [&] { return driver::raw::cuMemcpy3DAsync(&copy, handle); });
}

}  // namespace cuwrap
