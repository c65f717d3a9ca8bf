// Batched and strided copies: copy_batch (cuda.core.utils.copy_batch) over
// cuMemcpyBatchAsync, and 2-D / 3-D copies between pitched buffers.
//
// copy_batch issues one cuMemcpyBatchAsync where the toolkit cuwrap was built against
// and the installed driver both have it (12.8; 13.0 when built against CUDA 13, whose
// entry point dropped the failIdx parameter), else one cuMemcpyAsync per copy; the
// choice is made at run time from driver_version(). Copies to and from CUDA arrays are
// Array methods (array.hpp).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <span>

namespace cuwrap {

/// One copy of a batch: `size` bytes from `src` to `dst` (device, pinned or managed).
struct CopyOp {
  CUdeviceptr dst = 0;    ///< destination address
  CUdeviceptr src = 0;    ///< source address
  std::size_t size = 0;   ///< bytes to copy
};

/// Copy each of `srcs` into the matching buffer of `dsts`, ordered on `stream`.
///
/// Copies within the batch may run in any order (do not make one depend on another).
/// As in cuda.core, the legacy default stream is refused (cuMemcpyBatchAsync rejects
/// it). Throws std::invalid_argument for a count mismatch, a null or closed buffer, or
/// sizes that differ (naming the index and both sizes), all before any driver call.
///
/// Example:
/// \code
///   std::vector<const cuwrap::Buffer*> srcs{&a, &b};
///   std::vector<cuwrap::Buffer*> dsts{&c, &d};
///   cuwrap::copy_batch(stream, srcs, dsts);
/// \endcode
void copy_batch(StreamRef stream, std::span<const Buffer* const> srcs,
                std::span<Buffer* const> dsts);
/// Run every copy of `copies`, ordered on `stream`, as one batch.
///
/// The address form of copy_batch, for sub-ranges of buffers; same rules.
void copy_batch(StreamRef stream, std::span<const CopyOp> copies);
/// Return whether copy_batch issues one cuMemcpyBatchAsync (else a cuMemcpyAsync loop).
bool has_native_copy_batch();

/// A strided 2-D region of memory: rows of `width_bytes` bytes, `pitch` bytes apart.
struct Pitched2D {
  CUdeviceptr ptr = 0;       ///< address of the first row's first byte
  std::size_t pitch = 0;     ///< bytes from one row to the next (>= the copied width)
};

/// Copy `height` rows of `width_bytes` bytes between two pitched regions on `stream`.
///
/// cuMemcpy2DAsync with unified addressing (any device, pinned or managed pointers).
/// Throws std::invalid_argument when a pitch is smaller than `width_bytes`.
void copy_2d(StreamRef stream, const Pitched2D& dst, const Pitched2D& src,
             std::size_t width_bytes, std::size_t height);
/// Copy a `width_bytes` x `height` x `depth` box between two pitched 3-D regions.
///
/// `dst_height` / `src_height` are the rows per slice of each region (cuMemcpy3DAsync).
void copy_3d(StreamRef stream, const Pitched2D& dst, std::size_t dst_height,
             const Pitched2D& src, std::size_t src_height, std::size_t width_bytes,
             std::size_t height, std::size_t depth);

namespace detail {

/// Return whether `stream` is the legacy default stream (nullptr or CU_STREAM_LEGACY),
/// which the driver's batch entry points refuse.
bool is_legacy_default_stream(StreamRef stream);

}  // namespace detail
}  // namespace cuwrap
