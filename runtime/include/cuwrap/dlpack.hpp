// DLPack interop: export a Buffer as a DLManagedTensor and import one (the C++
// counterpart of cuda.core's __dlpack__ / from_dlpack, and the exchange point with
// PyTorch, CuPy and JAX), with the protocol's stream handshake.
//
// Built where CMake found dlpack.h (Debian: libdlpack-dev; or
// -DCUWRAP_DLPACK_INCLUDE_DIR=<dir holding dlpack/dlpack.h>), which defines
// CUWRAP_HAS_DLPACK=1 for cuwrap and its users. Where it was not (or
// CUWRAP_WITH_DLPACK=OFF), the functions below are still declared for code that finds a
// dlpack.h of its own, and throw UnsupportedError naming dlpack.h; has_dlpack() tells
// which. dlpack.h 0.6 has DLManagedTensor; a dlpack.h of 1.0 or newer
// (DLPACK_MAJOR_VERSION) adds DLManagedTensorVersioned, which the *_versioned functions
// then handle. The typed view without an exchange is StridedMemoryView, which needs no
// dlpack.h.
#pragma once

#include <cuwrap/strided_memory_view.hpp>

namespace cuwrap {

/// Return whether cuwrap was built with dlpack.h (else the DLPack functions throw
/// UnsupportedError naming it).
bool has_dlpack() noexcept;

}  // namespace cuwrap

#if (defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK) || __has_include(<dlpack/dlpack.h>)
/// Defined where <cuwrap/dlpack.hpp> declares the DLPack exchange (a dlpack.h is found).
#define CUWRAP_DLPACK_DECLARED 1

#include <cuwrap/buffer.hpp>
#include <cuwrap/stream.hpp>

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuwrap {

namespace detail {

/// A shared owner of a Buffer, such as std::shared_ptr<const Buffer>: copyable, with a
/// get() that returns the Buffer. (A concept rather than std::shared_ptr itself keeps
/// <memory> out of this header; see docs/performance.md, "Include cost".)
template <class Pointer>
concept SharedBuffer = std::is_nothrow_move_constructible_v<Pointer> && requires(const Pointer& p) {
  { p.get() } -> std::convertible_to<const Buffer*>;
};

/// Delete the heap-held `Pointer` at `owner` (a tensor's deleter releases its share so).
template <class Pointer>
void delete_owner(void* owner) noexcept {
  delete static_cast<Pointer*>(owner);  // NOLINT(cppcoreguidelines-owning-memory)
}

/// The streams of a DLPack hand-over: the consumer's stream waits for the producer's.
struct DLPackStreams {
  const StreamRef* producer = nullptr;  ///< where the memory's writes were ordered
  const StreamRef* consumer = nullptr;  ///< where the receiver will use it
};

/// Export `buffer`, kept valid by `owner`, which `release_owner(owner)` lets go: when the
/// tensor's deleter runs, or right away when the export is refused (then it throws).
DLManagedTensor* to_dlpack_owned(const Buffer* buffer, void* owner,
                                 void (*release_owner)(void*) noexcept, DLDataType dtype,
                                 std::span<const std::int64_t> shape,
                                 std::span<const std::int64_t> strides, DLPackStreams streams = {});
#if defined(DLPACK_MAJOR_VERSION)
/// Export `buffer` as a DLManagedTensorVersioned; as to_dlpack_owned.
DLManagedTensorVersioned* to_dlpack_versioned_owned(const Buffer* buffer, void* owner,
                                                    void (*release_owner)(void*) noexcept,
                                                    DLDataType dtype,
                                                    std::span<const std::int64_t> shape,
                                                    std::span<const std::int64_t> strides,
                                                    DLPackStreams streams = {});
#endif

}  // namespace detail

/// Return where `buffer`'s memory lives as DLPack names it (cuda.core's __dlpack_device__).
///
/// Device memory is {kDLCUDA, device}; pinned host memory {kDLCUDAHost, 0}; managed
/// memory {kDLCUDAManaged, 0}; other host memory {kDLCPU, 0}. Buffers from cuwrap's
/// resources are classified by their resource, without a driver call; foreign ones
/// (a buffer whose resource object is gone) by asking the driver. Memory that is neither
/// device- nor host-accessible (a user resource saying so) throws
/// std::invalid_argument, as cuda.core raises.
DLDevice dlpack_device(const Buffer& buffer);

/// Make `consumer` wait for the work queued on `producer` so far, as DLPack's
/// __dlpack__(stream=consumer) asks of a producer: one event recorded on `producer` and
/// waited for on `consumer` (Stream::wait); nothing when both are the same stream.
void dlpack_stream_wait(StreamRef producer, StreamRef consumer);

/// Export `buffer` as a DLManagedTensor of `dtype` and `shape` (and `strides`, in
/// elements; empty: compact row-major).
///
/// The tensor shares ownership of the buffer: the memory stays valid until the
/// consumer calls the tensor's deleter (exactly once), which releases that share and
/// frees the tensor. Throws std::invalid_argument, before any allocation is handed
/// out, when the dtype has lanes != 1 or a size that is not whole bytes, a dimension or
/// stride is negative, strides and shape differ in length, or the tensor does not fit
/// in the buffer.
///
/// Example:
/// \code
///   const std::int64_t shape[] = {rows, cols};
///   DLManagedTensor* t = cuwrap::to_dlpack(std::move(buf), {kDLFloat, 32, 1}, shape);
///   // hand `t` to a framework; it calls t->deleter(t) when done
/// \endcode
///
/// `buffer` is a shared owner of the Buffer, e.g. a std::shared_ptr<const Buffer>; the
/// tensor keeps a copy of it.
template <detail::SharedBuffer Pointer>
DLManagedTensor* to_dlpack(Pointer buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides = {}) {
  const Buffer* view = buffer.get();
  return detail::to_dlpack_owned(view, new Pointer(std::move(buffer)),
                                 &detail::delete_owner<Pointer>, dtype, shape, strides);
}
/// Export `buffer` for use on `consumer`, whose later work first waits for the work
/// queued on `producer` (the stream that wrote the buffer), as DLPack's
/// __dlpack__(stream=...) does; nothing is waited for when both are the same stream.
///
/// The checks of to_dlpack run first: a refused export makes no stream wait.
template <detail::SharedBuffer Pointer>
DLManagedTensor* to_dlpack(Pointer buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides, StreamRef producer,
                           StreamRef consumer) {
  const Buffer* view = buffer.get();
  return detail::to_dlpack_owned(view, new Pointer(std::move(buffer)),
                                 &detail::delete_owner<Pointer>, dtype, shape, strides,
                                 {&producer, &consumer});
}
/// Export `buffer`, which the tensor then owns (closed when the deleter runs).
DLManagedTensor* to_dlpack(Buffer&& buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides = {});
/// Export `buffer`, which the tensor then owns, for use on `consumer` after `producer`.
DLManagedTensor* to_dlpack(Buffer&& buffer, DLDataType dtype, std::span<const std::int64_t> shape,
                           std::span<const std::int64_t> strides, StreamRef producer,
                           StreamRef consumer);

#if defined(DLPACK_MAJOR_VERSION)
/// Export `buffer` as a DLManagedTensorVersioned (dlpack.h 1.0 and newer); see to_dlpack.
template <detail::SharedBuffer Pointer>
DLManagedTensorVersioned* to_dlpack_versioned(Pointer buffer, DLDataType dtype,
                                              std::span<const std::int64_t> shape,
                                              std::span<const std::int64_t> strides = {}) {
  const Buffer* view = buffer.get();
  return detail::to_dlpack_versioned_owned(view, new Pointer(std::move(buffer)),
                                           &detail::delete_owner<Pointer>, dtype, shape, strides);
}
#endif

/// An imported DLPack tensor: owns the DLManagedTensor and runs its deleter once.
///
/// buffer() views the memory as a BufferRef (valid while this object lives);
/// take_buffer() hands the tensor's ownership to an owning Buffer whose close() runs
/// the deleter, as cuda.core's owning import does. Move-only.
class DLPackTensor {
 public:
  /// Import `tensor` for use on device `device_id`, taking ownership of it.
  ///
  /// Accepted: kDLCUDA memory of that device, pinned (kDLCUDAHost) and managed
  /// (kDLCUDAManaged) memory, and host memory (kDLCPU, pageable: a host view, which
  /// kernels cannot read; host_span() and copies can). Throws std::invalid_argument,
  /// before any driver call, for a null tensor, memory on another device or of another
  /// device type, a dtype with lanes != 1 or a size that is not whole bytes, or a
  /// negative dimension or stride. On every error the tensor's deleter has run, so
  /// nothing leaks.
  static DLPackTensor from_dlpack(DLManagedTensor* tensor, int device_id);
  /// Import `tensor` for use on `consumer`, which first waits for the work queued on
  /// `producer` (the stream the producer wrote it on): the handshake a C++ importer runs
  /// for the producer, since a DLManagedTensor carries no stream. Checked first.
  static DLPackTensor from_dlpack(DLManagedTensor* tensor, int device_id, StreamRef producer,
                                  StreamRef consumer);
#if defined(DLPACK_MAJOR_VERSION)
  /// Import a versioned tensor (dlpack.h 1.0 and newer); also refuses a major version
  /// other than DLPACK_MAJOR_VERSION.
  static DLPackTensor from_dlpack(DLManagedTensorVersioned* tensor, int device_id);
#endif
  DLPackTensor(DLPackTensor&& other) noexcept;
  DLPackTensor& operator=(DLPackTensor&& other) noexcept;
  DLPackTensor(const DLPackTensor&) = delete;
  DLPackTensor& operator=(const DLPackTensor&) = delete;
  /// Run the tensor's deleter (if it has one and it has not been handed on).
  ~DLPackTensor();

  /// Return a view of the tensor's bytes (data + byte_offset); valid while this lives.
  BufferRef buffer() const;
  /// Move ownership into an owning Buffer: its close() runs the deleter. Leaves this empty.
  Buffer take_buffer();
  /// Return the DLTensor (shape, strides, dtype, device as the producer gave them).
  const DLTensor& tensor() const;
  /// Return the shape.
  std::span<const std::int64_t> shape() const;
  /// Return the strides in elements (compact row-major ones when the producer gave none).
  std::span<const std::int64_t> strides() const;
  /// Return the address of the first element (data + byte_offset).
  CUdeviceptr data() const;
  /// Return the bytes from data() to the end of the last element.
  std::size_t size_bytes() const;
  /// Return whether the elements are compact and row-major.
  bool is_contiguous() const;
  /// Return whether the producer marked the tensor read-only (versioned tensors only).
  bool read_only() const noexcept { return read_only_; }
  /// Return where the memory is (the producer's DLDevice).
  DLDevice device() const;
  /// Return whether the host can read the memory (kDLCPU, kDLCUDAHost, kDLCUDAManaged).
  bool is_host_accessible() const;
  /// Return the tensor's bytes (data() to the end of the last element) for the host.
  ///
  /// Throws std::logic_error for device memory (kDLCUDA).
  std::span<std::byte> host_bytes() const;
  /// Return a StridedMemoryView of the tensor (dtype, shape, strides; valid while this
  /// object holds the tensor).
  StridedMemoryView view() const;

 private:
  DLPackTensor() = default;
  // Check the tensor this object now owns for use on `device_id`; measure its extent.
  void validate(int device_id);
  void release() noexcept;

  void* managed_ = nullptr;           // the DLManagedTensor[Versioned]
  void (*deleter_)(void*) = nullptr;  // calls its deleter
  const DLTensor* tensor_ = nullptr;
  std::vector<std::int64_t> compact_strides_;  // when the producer gave none
  std::size_t size_bytes_ = 0;
  bool read_only_ = false;
};

}  // namespace cuwrap

#endif  // a dlpack.h is found
