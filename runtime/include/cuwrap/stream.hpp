// Stream: an in-order queue of GPU work (cuda.core's Stream), and the legacy and
// per-thread default streams.
#pragma once

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/event.hpp>

#include <cuda.h>

#include <cstdint>

namespace cuwrap {

class Device;
class GraphBuilder;
class Stream;

/// Options of a new stream, as cuda.core's StreamOptions.
struct StreamOptions {
  /// Do not synchronise with the legacy default stream (CU_STREAM_NON_BLOCKING).
  bool nonblocking = true;
  /// Scheduling priority; lower numbers are higher priority. Must lie in the range of
  /// cuCtxGetStreamPriorityRange, else creation throws std::invalid_argument.
  int priority = 0;
};

namespace detail {
struct StreamState;
void ref_acquire(const StreamState* state) noexcept;
void ref_release(const StreamState* state) noexcept;
struct GreenContextState;
void ref_acquire(const GreenContextState* state) noexcept;
void ref_release(const GreenContextState* state) noexcept;
/// Selects Stream's constant-initialisable constructor for the default streams.
struct DefaultStreamTag {};
inline constexpr std::uintptr_t kLegacyStreamBits = 0x1;     // CU_STREAM_LEGACY
inline constexpr std::uintptr_t kPerThreadStreamBits = 0x2;  // CU_STREAM_PER_THREAD
/// Return a Stream that owns `handle` (made by the caller in `context` of device
/// `device_id`) and keeps `keep_alive` (may be null; a green context) until the CUDA
/// stream is destroyed. For streams made outside Stream's constructor (green contexts).
Stream adopt_stream(CUstream handle, CUcontext context, int device_id,
                    Ref<const GreenContextState> keep_alive);
/// A context and its process-unique ID (cuCtxGetId), which no later context reuses.
struct ContextKey {
  CUcontext context = nullptr;
  unsigned long long id = 0;
};
/// Return the context of `stream` and its ID, both read when the Stream was made (no
/// driver call); {nullptr, 0} for the default streams, which use the current context.
ContextKey stream_context_key(const Stream& stream) noexcept;
}  // namespace detail

/// A CUDA stream; an RAII, move-only owner unless made by from_handle.
///
/// Buffers allocated on a stream keep its CUDA stream alive for their stream-ordered
/// free: close() releases this object's ownership, and the CUDA stream is destroyed
/// once no such buffer needs it any more (as cuda.core's reference-counted handles).
///
/// Example:
/// \code
///   cuwrap::Stream s = cuwrap::Device(0).create_stream();
///   // ... enqueue work on s.handle() ...
///   s.sync();
/// \endcode
class Stream {
 public:
  /// Create a stream on `device` (in its primary context).
  ///
  /// Throws std::invalid_argument when options.priority is outside the device's range.
  explicit Stream(const Device& device, const StreamOptions& options = {});
  /// Make an empty stream (is_open() false), to be assigned later; using it throws
  /// std::logic_error.
  Stream() = default;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// Close the stream (never throws).
  ~Stream();

  /// Wrap an existing stream without taking ownership; it is never destroyed here.
  ///
  /// nullptr, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the default streams of
  /// whichever context is current when the stream is used; any other handle is bound
  /// to its context (cuStreamGetCtx) right away.
  static Stream from_handle(CUstream handle);

  /// Block the calling thread until all work queued on the stream is done.
  void sync() const;
  /// Return whether all work queued on the stream is done (never blocks).
  bool is_done() const;
  /// Make later work on this stream wait until `event` completes (cuStreamWaitEvent).
  void wait(const Event& event) const;
  /// Make later work on this stream wait for the work queued on `other` so far.
  void wait(const Stream& other) const;
  /// Record a new event on this stream and return it.
  Event record(const EventOptions& options = {}) const;
  /// Record `event` on this stream (re-recording moves the marker).
  void record(const Event& event) const;
  /// Return a graph builder that captures work from this stream (defined with Graph).
  GraphBuilder create_graph_builder() const;
  /// Release the stream now; idempotent, never throws. Later use throws logic_error.
  void close() noexcept;

  /// Return whether the stream does not synchronise with the legacy default stream.
  bool is_nonblocking() const;
  /// Return the stream's priority (lower numbers are higher priority).
  int priority() const;
  /// Return the device the stream's work runs on.
  Device device() const;
  /// Return the context the stream belongs to.
  ///
  /// For the default streams, the context current on this thread, or device 0's
  /// primary context when none is current.
  CUcontext context() const;
  /// Return the CUDA stream handle.
  CUstream handle() const {
    require_open("handle");
    return reinterpret_cast<CUstream>(handle_);
  }
  /// Return whether the object still refers to a stream (false after close or a move).
  bool is_open() const noexcept { return open_; }
  /// Return whether this object created the stream (false for from_handle streams).
  bool is_owning() const noexcept;

  /// Build a non-owning Stream for a default-stream handle value (CU_STREAM_LEGACY
  /// or CU_STREAM_PER_THREAD as an integer); used for the constants below.
  ///
  /// Constant-initialisable, so those constants are usable during static
  /// initialisation; it never calls the driver.
  constexpr Stream(detail::DefaultStreamTag /*tag*/, std::uintptr_t handle) noexcept
      : handle_(handle), open_(true) {}

 private:
  friend class Buffer;
  friend Stream detail::adopt_stream(CUstream, CUcontext, int,
                                     detail::Ref<const detail::GreenContextState>);
  friend detail::ContextKey detail::stream_context_key(const Stream&) noexcept;
  /// Return a Stream on the same CUDA stream that keeps it alive (for Buffer, GraphBuilder).
  Stream share() const noexcept;
  [[noreturn]] void throw_closed(const char* operation) const;
  void require_open(const char* operation) const {
    if (!open_) [[unlikely]] {
      throw_closed(operation);
    }
  }

  std::uintptr_t handle_ = 0;                   // the CUstream's bits
  detail::Ref<detail::StreamState> state_;  // null for the default streams
  bool open_ = false;
};

/// The legacy default stream (CU_STREAM_LEGACY): synchronises with blocking streams.
///
/// It is cuda.core's LEGACY_DEFAULT_STREAM: non-owning; its context is the one current
/// on the thread when it is used (device 0's primary context when none is).
inline constinit const Stream kLegacyDefaultStream{detail::DefaultStreamTag{},
                                                   detail::kLegacyStreamBits};
/// The per-thread default stream (CU_STREAM_PER_THREAD): one per host thread.
///
/// It is cuda.core's PER_THREAD_DEFAULT_STREAM; like kLegacyDefaultStream it uses the
/// context current on the thread.
inline constinit const Stream kPerThreadDefaultStream{detail::DefaultStreamTag{},
                                                      detail::kPerThreadStreamBits};

/// Return kLegacyDefaultStream.
inline const Stream& legacy_default_stream() noexcept { return kLegacyDefaultStream; }
/// Return kPerThreadDefaultStream.
inline const Stream& per_thread_default_stream() noexcept { return kPerThreadDefaultStream; }

namespace detail {

/// Return whether a context other than `stream`'s is current on this thread (a stream
/// of another device than the current one).
bool stream_context_is_other(const Stream& stream);

/// Call `call` (a raw driver call on `stream`, returning CUresult) and check its status.
///
/// Hot paths call the raw driver entry point directly: no context query per call.
/// Only when that fails with CUDA_ERROR_INVALID_CONTEXT (no context current on this
/// thread) is the call repeated once with the stream's context current for it; the
/// repeated call's status is the one checked (the first only said "no context"). A call
/// that fails with CUDA_ERROR_INVALID_VALUE or CUDA_ERROR_INVALID_HANDLE while another
/// device's context is current is repeated once with the stream's context current for
/// it (the driver resolves pageable host memory, as cuMemcpyAsync's, in the current
/// context); when that fails too, the first call's status is reported. Either way the
/// thread's current context is what it was before. Throws DriverError naming `function`
/// on failure.
template <class Call>
inline void check_on_stream(const Stream& stream, const char* function, Call&& call) {
  CUresult status = call();
  if (status == CUDA_ERROR_INVALID_CONTEXT) [[unlikely]] {
    const ScopedContext scope(stream.context());
    status = call();
  } else if ((status == CUDA_ERROR_INVALID_VALUE || status == CUDA_ERROR_INVALID_HANDLE) &&
             stream_context_is_other(stream)) [[unlikely]] {
    const ScopedContext scope(stream.context());
    if (call() == CUDA_SUCCESS) {
      status = CUDA_SUCCESS;
    }
  }
  check(status, function);
}

}  // namespace detail
}  // namespace cuwrap
