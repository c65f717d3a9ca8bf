// Batched and strided copies: copy_batch (cuda.core.utils.copy_batch, with its
// CopyOptions) over cuMemcpyBatchAsync, and 2-D / 3-D copies between pitched buffers.
//
// copy_batch issues one cuMemcpyBatchAsync where the toolkit cuwrap was built against
// and the installed driver both have it (CUDA 12.8), else one cuMemcpyAsync per copy;
// the choice is made at run time from driver_version(). The entry point changed shape in
// CUDA 13.0 (the failIdx parameter was dropped): bindings of 13.0 headers call the 13.0
// form on a 13.0 driver and the 12.8 form, resolved by its ABI version, on a 12.8 or
// 12.9 driver. Copies to and from CUDA arrays are Array methods (array.hpp).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/ranges.hpp>
#include <cuwrap/managed_memory.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuwrap {

class GraphBuilder;

/// How the copies of a batch read their sources (CUmemcpySrcAccessOrder; cuda.core's
/// MemcpySrcAccessOrder).
enum class MemcpySrcAccessOrder {
  /// In stream order: earlier work on the stream may still be writing the source.
  Stream,
  /// Out of stream order, but all reads are done when copy_batch returns; no earlier
  /// work on the stream may be accessing the source.
  DuringApiCall,
  /// Any time until the copy completes in stream order; the source must stay unchanged
  /// until then, and no earlier work on the stream may be accessing it.
  Any,
};

/// Whether a copy should overlap with compute work (CUmemcpyFlags; cuda.core's
/// MemcpyOverlapMode). Advisory: devices that cannot do it ignore it.
enum class MemcpyOverlapMode {
  Default,                   ///< the driver's default scheduling
  PreferOverlapWithCompute,  ///< CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
};

/// The attributes of one copy of a batch (cuda.core.utils.CopyOptions).
///
/// A location hint tells the driver where the source or destination memory is; the
/// driver honours it only for managed memory and for system (pageable) memory on
/// devices that access it, and it moves nothing. An unset hint is derived by copy_batch
/// from the memory: a Buffer's memory resource (device memory: its device; pinned: the
/// host, or its NUMA node; managed: its preferred location, else the stream's device),
/// host memory given as a span: the host; a Buffer without a resource: asked of the
/// driver (cuPointerGetAttribute); a CopyOp address: the stream's device.
struct CopyOptions {
  /// How the source is read; Stream (stream order) by default.
  MemcpySrcAccessOrder src_access_order = MemcpySrcAccessOrder::Stream;
  /// Where the source is; unset: derived from the memory.
  std::optional<Location> src_location_hint = std::nullopt;
  /// Where the destination is; unset: derived from the memory.
  std::optional<Location> dst_location_hint = std::nullopt;
  /// Whether to prefer overlapping with compute (integrated GPUs).
  MemcpyOverlapMode overlap_mode = MemcpyOverlapMode::Default;
  /// Return whether both ask for the same.
  friend bool operator==(const CopyOptions&, const CopyOptions&) = default;
};

/// One copy of a batch: `size` bytes from `src` to `dst` (device, pinned, managed or,
/// with unified addressing, host memory).
struct CopyOp {
  CUdeviceptr dst = 0;   ///< destination address
  CUdeviceptr src = 0;   ///< source address
  std::size_t size = 0;  ///< bytes to copy
};

namespace detail {

/// One side of a copy as copy_batch's core takes it: a Buffer (or a null Buffer
/// pointer, refused with its index), or host memory given as a span.
struct CopySide {
  const Buffer* buffer = nullptr;  ///< the Buffer; unused for host memory
  CUdeviceptr host = 0;            ///< host memory's address (when `is_host`)
  std::size_t host_size = 0;       ///< host memory's bytes (when `is_host`)
  bool is_host = false;            ///< whether this side is host memory
};

/// Return the side a Buffer makes.
inline CopySide copy_source(const Buffer& buffer) noexcept { return {&buffer, 0, 0, false}; }
/// Return the side a Buffer pointer makes (null: refused by copy_batch).
inline CopySide copy_source(const Buffer* buffer) noexcept { return {buffer, 0, 0, false}; }
/// Return the side host memory makes.
inline CopySide copy_source(std::span<const std::byte> host) noexcept {
  return {nullptr, reinterpret_cast<CUdeviceptr>(host.data()), host.size(), true};
}
/// Return the destination side a Buffer makes.
inline CopySide copy_destination(Buffer& buffer) noexcept { return {&buffer, 0, 0, false}; }
/// Return the destination side a Buffer pointer makes (null: refused by copy_batch).
inline CopySide copy_destination(Buffer* buffer) noexcept { return {buffer, 0, 0, false}; }
/// Return the destination side writable host memory makes.
inline CopySide copy_destination(std::span<std::byte> host) noexcept {
  return {nullptr, reinterpret_cast<CUdeviceptr>(host.data()), host.size(), true};
}

/// A range of copy sources: Buffers, pointers to them, or host byte spans.
template <class Range>
concept CopySourceRange = detail::input_range<Range> &&
    requires(detail::range_reference_t<Range> element) {
  copy_source(element);
};
/// A range of copy destinations: (non-const) Buffers, pointers to them, or host byte spans.
template <class Range>
concept CopyDestinationRange = detail::input_range<Range> &&
    requires(detail::range_reference_t<Range> element) {
  copy_destination(element);
};

/// The non-template core of the range forms of copy_batch.
void copy_batch_sides(StreamRef stream, std::span<const CopySide> srcs,
                      std::span<const CopySide> dsts, std::span<const CopyOptions> options);
/// The same, with `one_for_all`: `options` is the single CopyOptions of every copy.
void copy_batch_sides(StreamRef stream, std::span<const CopySide> srcs,
                      std::span<const CopySide> dsts, std::span<const CopyOptions> options,
                      bool one_for_all);

/// Return the sides of `range`, made by `side` element by element.
template <class Range, class Side>
std::vector<CopySide> copy_sides(Range&& range, Side side) {
  std::vector<CopySide> sides;
  if constexpr (detail::sized_range<Range>) {
    sides.reserve(static_cast<std::size_t>(detail::range_size(range)));
  }
  for (auto&& element : range) {
    sides.push_back(side(element));
  }
  return sides;
}

}  // namespace detail

/// Copy each of `srcs` into the matching buffer of `dsts`, ordered on `stream`.
///
/// Copies within the batch may run in any order (do not make one depend on another).
/// As in cuda.core, the legacy default stream is refused (cuMemcpyBatchAsync rejects
/// it), and so is a stream capturing a graph where copy_batch is one cuMemcpyBatchAsync
/// (has_native_copy_batch(); std::invalid_argument). Throws std::invalid_argument for a count
/// mismatch, a null or closed buffer, or sizes that differ (naming the index and both sizes), all
/// before any driver call.
///
/// Example:
/// \code
///   std::vector<const cuwrap::Buffer*> srcs{&a, &b};
///   std::vector<cuwrap::Buffer*> dsts{&c, &d};
///   cuwrap::copy_batch(srcs, dsts, stream);
/// \endcode
void copy_batch(std::span<const Buffer* const> srcs, std::span<Buffer* const> dsts,
                StreamRef stream);
/// Copy each of `srcs` into the matching element of `dsts` with per-copy `options`.
///
/// `srcs` is any range of Buffers, pointers to Buffers, or host memory (elements that
/// convert to std::span<const std::byte>); `dsts` any range of non-const Buffers,
/// pointers to them, or writable host memory (std::span<std::byte>), e.g.
/// std::vector<Buffer>, std::array<Buffer, N> or std::vector<std::vector<std::byte>>.
/// `options` holds one CopyOptions per copy (a list of another length, one included,
/// is refused, as cuda.core refuses it); empty: the defaults. The overload taking one
/// CopyOptions applies it to every copy. Sizes are the sources'; each destination must match. An
/// empty batch is refused (std::invalid_argument), as cuda.core refuses empty lists.
///
/// Throws std::invalid_argument, before any driver call, as the pointer form does, and
/// for a count of options that is neither 0 nor the number of copies, an option
/// value outside its enumeration, or a negative NUMA node. Where copy_batch falls back
/// to a cuMemcpyAsync loop (toolkit or driver older than 12.8), options other than the
/// defaults throw UnsupportedError, as cuda.core refuses them, rather than being
/// dropped.
///
/// Example:
/// \code
///   std::vector<cuwrap::Buffer> srcs = ..., dsts = ...;
///   cuwrap::copy_batch(srcs, dsts, stream,
///                      cuwrap::CopyOptions{.src_access_order =
///                                              cuwrap::MemcpySrcAccessOrder::Any});
/// \endcode
template <class Srcs, class Dsts>
requires detail::CopySourceRange<Srcs> && detail::CopyDestinationRange<Dsts>
void copy_batch(Srcs&& srcs, Dsts&& dsts, StreamRef stream,
                std::span<const CopyOptions> options = {}) {
  const auto sources =
      detail::copy_sides(srcs, [](auto&& element) { return detail::copy_source(element); });
  const auto destinations =
      detail::copy_sides(dsts, [](auto&& element) { return detail::copy_destination(element); });
  detail::copy_batch_sides(stream, sources, destinations, options);
}
/// Copy each of `srcs` into the matching element of `dsts`, every copy with `options`.
template <class Srcs, class Dsts>
requires detail::CopySourceRange<Srcs> && detail::CopyDestinationRange<Dsts>
void copy_batch(Srcs&& srcs, Dsts&& dsts, StreamRef stream, const CopyOptions& options) {
  const auto sources =
      detail::copy_sides(srcs, [](auto&& element) { return detail::copy_source(element); });
  const auto destinations =
      detail::copy_sides(dsts, [](auto&& element) { return detail::copy_destination(element); });
  detail::copy_batch_sides(stream, sources, destinations, std::span<const CopyOptions>(&options, 1),
                           true);
}
/// Run every copy of `copies`, ordered on `stream`, as one batch.
///
/// The address form of copy_batch, for sub-ranges of buffers; same rules.
void copy_batch(std::span<const CopyOp> copies, StreamRef stream);
/// Run every copy of `copies` with per-copy `options` (one per copy; empty: the defaults).
///
/// Unset location hints are the stream's device: give Host{} for host addresses.
void copy_batch(std::span<const CopyOp> copies, StreamRef stream,
                std::span<const CopyOptions> options);
/// Run every copy of `copies`, each with `options`.
void copy_batch(std::span<const CopyOp> copies, StreamRef stream, const CopyOptions& options);
/// copy_batch does not take a GraphBuilder (as cuda.core's, which refuses it with a
/// TypeError): cuMemcpyBatchAsync has no graph-node form and the driver rejects it in a
/// capture. Add copies to a graph with GraphBuilder::memcpy or Buffer::copy_to.
template <class Srcs, class Dsts, class... Options>
void copy_batch(Srcs&& srcs, Dsts&& dsts, const GraphBuilder& builder,
                Options&&... options) = delete;
/// The address form does not take a GraphBuilder either; see above.
template <class... Options>
void copy_batch(std::span<const CopyOp> copies, const GraphBuilder& builder,
                Options&&... options) = delete;
/// Return whether copy_batch issues one cuMemcpyBatchAsync (else a cuMemcpyAsync loop).
bool has_native_copy_batch();

/// A strided 2-D region of memory: rows of `width_bytes` bytes, `pitch` bytes apart.
struct Pitched2D {
  CUdeviceptr ptr = 0;    ///< address of the first row's first byte
  std::size_t pitch = 0;  ///< bytes from one row to the next (>= the copied width)
};

/// Copy `height` rows of `width_bytes` bytes between two pitched regions on `stream`.
///
/// cuMemcpy2DAsync with unified addressing (any device, pinned or managed pointers).
/// Throws std::invalid_argument when a pitch is smaller than `width_bytes`.
void copy_2d(const Pitched2D& dst, const Pitched2D& src, std::size_t width_bytes,
             std::size_t height, StreamRef stream);
/// Copy a `width_bytes` x `height` x `depth` box between two pitched 3-D regions.
///
/// `dst_height` / `src_height` are the rows per slice of each region (cuMemcpy3DAsync).
void copy_3d(const Pitched2D& dst, std::size_t dst_height, const Pitched2D& src,
             std::size_t src_height, std::size_t width_bytes, std::size_t height, std::size_t depth,
             StreamRef stream);

namespace detail {

/// Return whether `stream` is the legacy default stream (nullptr or CU_STREAM_LEGACY),
/// which the driver's batch entry points refuse.
bool is_legacy_default_stream(StreamRef stream);

}  // namespace detail
/// Copy `src` into `dst` (the same number of bytes) and return once the copy is done:
/// cuda-api-wrappers' `cuda::memory::copy(dst, src)`, cudaMemcpy, PyCUDA's memcpy_dtod.
///
/// Either side may be device, managed, pinned or registered host memory. The copy runs
/// on the legacy default stream of the current context, or of the primary context of the
/// memory's device when none is current (none is current again afterwards): it starts
/// after the work already queued on that context's blocking streams, as cudaMemcpy does
/// (work on non-blocking streams is not waited for: sync those first). Throws
/// std::invalid_argument naming both sizes when they differ, std::logic_error for a
/// closed buffer, DriverError naming cuMemcpyAsync or cuStreamSynchronize.
///
/// Example:
/// \code
///   std::vector<float> host(n, 1.0f);
///   cuwrap::Buffer buf = dev.allocate(n * sizeof(float));
///   cuwrap::copy(buf, host);   // host → device, done when it returns
///   cuwrap::copy(host, buf);   // device → host
/// \endcode
inline void copy(BufferRef dst, BufferRef src) { dst.copy_from(src); }
/// Copy host bytes into `dst` and return once the copy is done (PyCUDA's memcpy_htod).
inline void copy(BufferRef dst, std::span<const std::byte> src) { dst.copy_from(src); }
/// Copy `src` into host bytes and return once the copy is done (PyCUDA's memcpy_dtoh).
inline void copy(std::span<std::byte> dst, BufferRef src) { src.copy_to(dst); }
/// Copy a contiguous host range of trivially copyable elements into `dst` (exactly its
/// size in bytes) and return once the copy is done.
template <detail::contiguous_range Range>
requires std::is_trivially_copyable_v<detail::range_value_t<Range>>
void copy(BufferRef dst, const Range& src) { dst.copy_from(src); }
/// Copy `src` into a contiguous host range of trivially copyable elements (exactly its
/// size in bytes) and return once the copy is done.
template <detail::contiguous_range Range>
requires(
    std::is_trivially_copyable_v<detail::range_value_t<Range>> &&
    !std::is_const_v<typename detail::span_of_t<Range>::element_type>) void copy(Range&& dst,
                                                                                 BufferRef src) {
  src.copy_to(std::forward<Range>(dst));
}
/// Copy the elements of `src` into `dst` (typed device views, the same element type and
/// count) and return once the copy is done.
template <class T, class U>
requires(std::is_same_v<std::remove_const_t<U>, T> &&
         !std::is_const_v<T>) void copy(DeviceSpan<T> dst, DeviceSpan<U> src) {
  detail::copy_elements_blocking("cuwrap::copy", dst.handle(), dst.size(), src.handle(), src.size(),
                                 sizeof(T));
}
/// Copy host elements of `T` (a contiguous range, exactly dst.size() of them) into `dst`
/// and return once the copy is done.
template <class T, detail::contiguous_range Range>
requires(std::is_same_v<detail::range_value_t<Range>, T> &&
         !std::is_const_v<T>) void copy(DeviceSpan<T> dst, const Range& src) {
  dst.copy_from(std::span<const T>(detail::dynamic_span(src)));
}
/// Copy the elements of `src` into host elements of `T` (a contiguous range, exactly
/// src.size() of them) and return once the copy is done.
template <class T, detail::contiguous_range Range>
requires(std::is_same_v<detail::range_value_t<Range>, std::remove_const_t<T>> &&
         !std::is_const_v<typename detail::span_of_t<Range>::element_type>) void copy(Range&& dst,
                                                                                      DeviceSpan<T>
                                                                                          src) {
  src.copy_to(std::span<std::remove_const_t<T>>(detail::dynamic_span(dst)));
}

}  // namespace cuwrap
