// copy_batch and the pitched 2-D / 3-D copies. See cuwrap/copy.hpp.
#include "memory/locations.hpp"

#include <cuwrap/copy.hpp>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/version.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cuwrap {
namespace {

constexpr const char* kFunction = "copy_batch";

#if CUDA_VERSION >= 12080
// cuMemcpyBatchAsync came with 12.8 (toolkit and driver) with a failIdx output; CUDA 13.0
// dropped that parameter and re-versioned the name, so a 12.8 or 12.9 driver hands out
// only the first shape and a 13.0 driver both, each by its ABI version.
using BatchAsync12080 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, std::size_t*, std::size_t,
                                     CUmemcpyAttributes*, std::size_t*, std::size_t, std::size_t*,
                                     CUstream);
#endif
constexpr int kBatchVersion = 12080;

void check_stream(StreamRef stream) {
  if (detail::is_legacy_default_stream(stream)) {
    throw std::invalid_argument(
        "copy_batch: the legacy default stream cannot order a batch (cuMemcpyBatchAsync "
        "rejects it); pass a created stream or the per-thread default stream");
  }
  // As cuda.core (which refuses a GraphBuilder at its boundary), a capture is refused
  // before the driver: cuMemcpyBatchAsync has no graph-node form. The cuMemcpyAsync loop
  // of drivers without it is captured as before. A failed query leaves it to the driver.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (has_native_copy_batch() &&
      driver::raw::cuStreamIsCapturing(stream.handle(), &capturing) == CUDA_SUCCESS &&
      capturing == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    throw std::invalid_argument(
        "copy_batch: stream is capturing a graph, which cuMemcpyBatchAsync cannot join; add "
        "the copies with GraphBuilder::memcpy or Buffer::copy_to");
  }
}

std::string index_name(const char* range, std::size_t i) {
  return std::string(range) + "[" + std::to_string(i) + "]";
}

// Check the count of options and each option's values; all before the driver. As in
// cuda.core, a list pairs by index and must have one CopyOptions per copy (a list of one
// for several copies is refused, not broadcast); only the single-CopyOptions forms
// (`one_for_all`) apply one to every copy. Empty: the defaults.
void check_options(std::span<const CopyOptions> options, std::size_t copies,
                   bool one_for_all = false) {
  if (!options.empty() && options.size() != copies && !(one_for_all && options.size() == 1)) {
    throw std::invalid_argument("copy_batch: options length " + std::to_string(options.size()) +
                                " does not match buffers length " + std::to_string(copies) + " (" +
                                std::to_string(options.size()) + " CopyOptions for " +
                                std::to_string(copies) +
                                " copies): give one per copy, or one CopyOptions (not a list) "
                                "for every copy");
  }
  for (std::size_t i = 0; i < options.size(); ++i) {
    const CopyOptions& o = options[i];
    const auto order = static_cast<int>(o.src_access_order);
    if (order < static_cast<int>(MemcpySrcAccessOrder::Stream) ||
        order > static_cast<int>(MemcpySrcAccessOrder::Any)) {
      throw std::invalid_argument("copy_batch: " + index_name("options", i) + ".src_access_order " +
                                  std::to_string(order) +
                                  " is not a MemcpySrcAccessOrder (0 to 2)");
    }
    const auto overlap = static_cast<int>(o.overlap_mode);
    if (overlap < 0 || overlap > static_cast<int>(MemcpyOverlapMode::PreferOverlapWithCompute)) {
      throw std::invalid_argument("copy_batch: " + index_name("options", i) + ".overlap_mode " +
                                  std::to_string(overlap) + " is not a MemcpyOverlapMode (0 or 1)");
    }
    for (const auto* hint : {&o.src_location_hint, &o.dst_location_hint}) {
      const Host* host = *hint ? std::get_if<Host>(&**hint) : nullptr;
      if (host != nullptr && host->numa_id && *host->numa_id < 0) {
        throw std::invalid_argument(
            "copy_batch: " + index_name("options", i) +
            (hint == &o.src_location_hint ? ".src_location_hint" : ".dst_location_hint") +
            " names host NUMA node " + std::to_string(*host->numa_id) + ", which is negative");
      }
    }
  }
}

// The copies of a batch after the checks: addresses and sizes as the driver takes them,
// and for each the index of the copy it came from (empty copies are left out).
struct Batch {
  std::vector<CUdeviceptr> dsts;
  std::vector<CUdeviceptr> srcs;
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> copy_index;

  void reserve(std::size_t n) {
    dsts.reserve(n);
    srcs.reserve(n);
    sizes.reserve(n);
    copy_index.reserve(n);
  }
  void add(CUdeviceptr dst, CUdeviceptr src, std::size_t size, std::size_t index) {
    if (size == 0) {
      return;  // nothing to move; the batch entry point refuses empty copies
    }
    dsts.push_back(dst);
    srcs.push_back(src);
    sizes.push_back(size);
    copy_index.push_back(index);
  }
};

#if CUDA_VERSION >= 12080
CUmemLocation host_location() {
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_HOST;
  return where;
}

// Where one side of each copy is, for the hints copy_batch derives: read from the
// Buffer's memory resource (the last one is remembered: batches usually share one), or
// asked of the driver for memory without one.
class HintSource {
 public:
  explicit HintSource(StreamRef stream) : stream_(stream) {}

  // The stream's device: where a copy of unknown memory runs (asked once per batch).
  CUmemLocation stream_device() {
    if (!stream_device_) {
      stream_device_ = detail::device_location(stream_.device().device_id());
    }
    return *stream_device_;
  }

  CUmemLocation of(const detail::CopySide& side) {
    if (side.is_host) {
      return host_location();
    }
    const MemoryResource* mr = side.buffer->memory_resource();
    if (mr == nullptr) {
      return of_foreign(side.buffer->handle());
    }
    if (mr != last_mr_) {
      last_mr_ = mr;
      last_ = of_resource(*mr);
    }
    return last_;
  }

 private:
  CUmemLocation of_resource(const MemoryResource& mr) {
    if (const auto* managed = dynamic_cast<const ManagedMemoryResource*>(&mr)) {
      const std::optional<int> preferred = managed->preferred_location();
      if (!preferred) {
        return stream_device();
      }
      return *preferred < 0 ? host_location() : detail::device_location(*preferred);
    }
    if (const auto* pinned = dynamic_cast<const PinnedMemoryResource*>(&mr);
        pinned != nullptr && pinned->numa_id() >= 0) {
      CUmemLocation where{};
      where.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
      where.id = pinned->numa_id();
      return where;
    }
    if (mr.is_host_accessible()) {
      return host_location();  // pinned or host-only memory
    }
    return mr.device_id() >= 0 ? detail::device_location(mr.device_id()) : stream_device();
  }

  // One cuPointerGetAttributes for memory that came without a resource.
  CUmemLocation of_foreign(CUdeviceptr ptr) {
    unsigned int type = 0;
    int managed = 0;
    int ordinal = -1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* values[] = {&type, &managed, &ordinal};
    detail::check_on_stream(stream_, "cuPointerGetAttributes", [&] {
      return driver::raw::cuPointerGetAttributes(3, attributes, values, ptr);
    });
    if (managed != 0) {
      return stream_device();
    }
    if (type == CU_MEMORYTYPE_DEVICE && ordinal >= 0) {
      return detail::device_location(ordinal);
    }
    return host_location();  // pinned, or memory the driver does not know (pageable)
  }

  StreamRef stream_;
  std::optional<CUmemLocation> stream_device_;
  const MemoryResource* last_mr_ = nullptr;
  CUmemLocation last_{};
};

bool same_location(const CUmemLocation& a, const CUmemLocation& b) {
  return a.type == b.type && a.id == b.id;
}

bool same_attributes(const CUmemcpyAttributes& a, const CUmemcpyAttributes& b) {
  return a.srcAccessOrder == b.srcAccessOrder && a.flags == b.flags &&
         same_location(a.srcLocHint, b.srcLocHint) && same_location(a.dstLocHint, b.dstLocHint);
}

CUmemcpySrcAccessOrder to_driver(MemcpySrcAccessOrder order) {
  switch (order) {
    case MemcpySrcAccessOrder::DuringApiCall:
      return CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    case MemcpySrcAccessOrder::Any:
      return CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    case MemcpySrcAccessOrder::Stream:
      break;
  }
  return CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
}

// The attributes of every copy of `batch`, as runs of equal neighbours: attributes[k]
// applies to the copies from starts[k] up to starts[k + 1] (as cuMemcpyBatchAsync's
// attrsIdxs), so options shared by the whole batch reach the driver once.
struct AttributeRuns {
  std::vector<CUmemcpyAttributes> attributes;
  std::vector<std::size_t> starts;
};

AttributeRuns attribute_runs(StreamRef stream, const Batch& batch,
                             std::span<const CopyOptions> options,
                             std::span<const detail::CopySide> srcs,
                             std::span<const detail::CopySide> dsts) {
  static const CopyOptions kDefaults{};
  HintSource hints(stream);
  // Where a side has no CopySide (the address form), an unset hint is the stream's device.
  const auto hint = [&](const std::optional<Location>& given,
                        std::span<const detail::CopySide> sides, std::size_t i) {
    if (given) {
      return detail::to_cu_location(*given);
    }
    return sides.empty() ? hints.stream_device() : hints.of(sides[i]);
  };
  AttributeRuns runs;
  for (std::size_t k = 0; k < batch.sizes.size(); ++k) {
    const std::size_t i = batch.copy_index[k];
    const CopyOptions& o = options.empty() ? kDefaults : options[options.size() == 1 ? 0 : i];
    CUmemcpyAttributes a{};
    a.srcAccessOrder = to_driver(o.src_access_order);
    a.flags = o.overlap_mode == MemcpyOverlapMode::PreferOverlapWithCompute
                  ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
                  : CU_MEMCPY_FLAG_DEFAULT;
    a.srcLocHint = hint(o.src_location_hint, srcs, i);
    a.dstLocHint = hint(o.dst_location_hint, dsts, i);
    if (runs.attributes.empty() || !same_attributes(runs.attributes.back(), a)) {
      runs.attributes.push_back(a);
      runs.starts.push_back(k);
    }
  }
  return runs;
}

// CUDA 13.0 bindings on a 12.8 or 12.9 driver: the 12.8 form, resolved once by its ABI.
BatchAsync12080 batch_async_12080() {
#if CUDA_VERSION >= 13000
  static const auto fn =
      reinterpret_cast<BatchAsync12080>(detail::resolve_driver_proc("cuMemcpyBatchAsync", 12080));
  return fn;
#else
  return &driver::raw::cuMemcpyBatchAsync;  // the bindings' own entry point is this form
#endif
}
#endif  // CUDA_VERSION >= 12080

void run_batch(StreamRef stream, Batch& batch, std::span<const CopyOptions> options,
               std::span<const detail::CopySide> srcs = {},
               std::span<const detail::CopySide> dsts = {}) {
  if (!has_native_copy_batch()) {
    static const CopyOptions kDefaults{};
    for (const CopyOptions& o : options) {
      if (o != kDefaults) {
        const bool toolkit_short = bindings_version() < kBatchVersion;
        throw UnsupportedError(
            "copy_batch with CopyOptions other than the defaults (they reach "
            "the driver only through cuMemcpyBatchAsync)",
            kBatchVersion, toolkit_short ? bindings_version() : driver_version(),
            toolkit_short ? "the toolkit cuwrap was built against" : "the installed driver");
      }
    }
  }
  if (batch.sizes.empty()) {
    return;
  }
  const CUstream handle = stream.handle();
#if CUDA_VERSION >= 12080
  if (has_native_copy_batch()) {
    AttributeRuns runs = attribute_runs(stream, batch, options, srcs, dsts);
    const std::size_t count = batch.sizes.size();
#if CUDA_VERSION >= 13000
    if (driver_version() >= 13000) {
      detail::check_on_stream(stream, "cuMemcpyBatchAsync", [&] {
        return driver::raw::cuMemcpyBatchAsync(batch.dsts.data(), batch.srcs.data(),
                                               batch.sizes.data(), count, runs.attributes.data(),
                                               runs.starts.data(), runs.starts.size(), handle);
      });
      return;
    }
#endif
    const BatchAsync12080 fn = batch_async_12080();
    std::size_t failed = 0;
    detail::check_on_stream(stream, "cuMemcpyBatchAsync", [&] {
      return fn(batch.dsts.data(), batch.srcs.data(), batch.sizes.data(), count,
                runs.attributes.data(), runs.starts.data(), runs.starts.size(), &failed, handle);
    });
    return;
  }
#else
  static_cast<void>(srcs);
  static_cast<void>(dsts);
#endif
  for (std::size_t k = 0; k < batch.sizes.size(); ++k) {
    const CUdeviceptr dst = batch.dsts[k];
    const CUdeviceptr src = batch.srcs[k];
    const std::size_t n = batch.sizes[k];
    detail::check_on_stream(stream, "cuMemcpyAsync",
                            [&] { return driver::raw::cuMemcpyAsync(dst, src, n, handle); });
  }
}

// The address and size of one side, after checking it (null or closed Buffers).
std::pair<CUdeviceptr, std::size_t> resolve_side(const detail::CopySide& side, const char* range,
                                                 std::size_t i) {
  if (side.is_host) {
    return {side.host, side.host_size};
  }
  if (side.buffer == nullptr) {
    throw std::invalid_argument(std::string(kFunction) + ": " + index_name(range, i) + " is null");
  }
  if (!side.buffer->is_open()) {
    throw std::invalid_argument(std::string(kFunction) + ": " + index_name(range, i) +
                                " is a closed Buffer");
  }
  return {side.buffer->handle(), side.buffer->size()};
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
  return driver_version() >= kBatchVersion;
#else
  return false;
#endif
}

void detail::copy_batch_sides(StreamRef stream, std::span<const CopySide> srcs,
                              std::span<const CopySide> dsts,
                              std::span<const CopyOptions> options) {
  copy_batch_sides(stream, srcs, dsts, options, false);
}

void detail::copy_batch_sides(StreamRef stream, std::span<const CopySide> srcs,
                              std::span<const CopySide> dsts, std::span<const CopyOptions> options,
                              bool one_for_all) {
  if (srcs.size() != dsts.size()) {
    throw std::invalid_argument("copy_batch: " + std::to_string(srcs.size()) + " sources but " +
                                std::to_string(dsts.size()) + " destinations");
  }
  if (srcs.empty()) {
    throw std::invalid_argument("copy_batch: srcs and dsts are empty; give at least one copy");
  }
  check_options(options, srcs.size(), one_for_all);
  Batch batch;
  batch.reserve(srcs.size());
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const auto [src, src_size] = resolve_side(srcs[i], "srcs", i);
    const auto [dst, dst_size] = resolve_side(dsts[i], "dsts", i);
    if (src_size != dst_size) {
      std::string message = "copy_batch: " + index_name("srcs", i);
      message += " has " + std::to_string(src_size) + " bytes but " + index_name("dsts", i);
      message += " has " + std::to_string(dst_size) + "; sizes must match";
      throw std::invalid_argument(message);
    }
    batch.add(dst, src, src_size, i);
  }
  check_stream(stream);
  run_batch(stream, batch, options, srcs, dsts);
}

void copy_batch(std::span<const Buffer* const> srcs, std::span<Buffer* const> dsts,
                StreamRef stream) {
  copy_batch(srcs, dsts, stream, std::span<const CopyOptions>{});
}

void copy_batch(std::span<const CopyOp> copies, StreamRef stream) {
  copy_batch(copies, stream, std::span<const CopyOptions>{});
}

namespace {

void copy_batch_ops(StreamRef stream, std::span<const CopyOp> copies,
                    std::span<const CopyOptions> options, bool one_for_all) {
  if (copies.empty()) {
    throw std::invalid_argument("copy_batch: copies is empty; give at least one copy");
  }
  check_options(options, copies.size(), one_for_all);
  check_stream(stream);
  Batch batch;
  batch.reserve(copies.size());
  for (std::size_t i = 0; i < copies.size(); ++i) {
    batch.add(copies[i].dst, copies[i].src, copies[i].size, i);
  }
  run_batch(stream, batch, options);
}

}  // namespace

void copy_batch(std::span<const CopyOp> copies, StreamRef stream, const CopyOptions& options) {
  copy_batch_ops(stream, copies, std::span<const CopyOptions>(&options, 1), true);
}

void copy_batch(std::span<const CopyOp> copies, StreamRef stream,
                std::span<const CopyOptions> options) {
  copy_batch_ops(stream, copies, options, false);
}

// ---------------------------------------------------------------------------------
// Buffer's copies with options (declared in buffer.hpp): a batch of one.

// cuda.core makes a copy with options through cuMemcpyWithAttributesAsync, which takes
// neither the legacy default stream nor a capturing stream: there it makes a plain copy
// (with a warning) instead of failing. cuwrap's batch of one refuses the same two, so it
// falls back the same way (the options, hints only, are then not applied).
void Buffer::copy_to(Buffer& dst, StreamRef stream, const CopyOptions& options) const {
  bool plain = detail::is_legacy_default_stream(stream);
  if (!plain && stream.handle() != CU_STREAM_PER_THREAD) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    plain = driver::raw::cuStreamIsCapturing(stream.handle(), &capture) == CUDA_SUCCESS &&
            capture != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  if (plain) {
    copy_to(dst, stream);
    return;
  }
  const detail::CopySide src_side = detail::copy_source(*this);
  const detail::CopySide dst_side = detail::copy_destination(dst);
  detail::copy_batch_sides(stream, std::span(&src_side, 1), std::span(&dst_side, 1),
                           std::span(&options, 1));
}

void Buffer::copy_from(const Buffer& src, StreamRef stream, const CopyOptions& options) {
  src.copy_to(*this, stream, options);
}

Buffer Buffer::copy_to(MemoryResource& mr, StreamRef stream) const {
  Buffer dst = mr.allocate(size(), stream);
  copy_to(dst, stream);
  return dst;
}

void copy_2d(const Pitched2D& dst, const Pitched2D& src, std::size_t width_bytes,
             std::size_t height, StreamRef stream) {
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

void copy_3d(const Pitched2D& dst, std::size_t dst_height, const Pitched2D& src,
             std::size_t src_height, std::size_t width_bytes, std::size_t height, std::size_t depth,
             StreamRef stream) {
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
