// Stream: an in-order queue of GPU work (cuda.core's Stream); StreamRef, the non-owning
// form that functions which only use a stream take; the legacy and per-thread default
// streams.
#pragma once

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/hash.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/event.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuwrap {

class BufferRef;
class Device;
class GraphBuilder;
class Stream;
class StreamRef;
class BufferRef;  // <cuwrap/buffer.hpp>

/// Options of a new stream, as cuda.core's StreamOptions.
struct StreamOptions {
  /// Do not synchronise with the legacy default stream (CU_STREAM_NON_BLOCKING).
  bool nonblocking = true;
  /// Scheduling priority; lower numbers are higher priority. A value outside the
  /// device's range (cuCtxGetStreamPriorityRange) is clamped to it, as the driver does:
  /// below the greatest priority gives the greatest, above the least gives the least.
  int priority = 0;
};

namespace detail {
struct StreamState;
void ref_acquire(const StreamState* state) noexcept;
void ref_release(const StreamState* state) noexcept;
struct GreenContextState;
void ref_acquire(const GreenContextState* state) noexcept;
void ref_release(const GreenContextState* state) noexcept;
/// Selects StreamRef's constant-initialisable constructor for the default streams.
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
/// driver call); {nullptr, 0} for the default streams, which use the current context,
/// and for streams of other libraries (launch then uses the current context's function).
ContextKey stream_context_key(StreamRef stream) noexcept;
/// True for another library's non-owning stream type that StreamRef converts to and from
/// (made from a CUstream, `get()` returns it): <cuwrap/cccl.hpp> sets it for
/// cuda::stream_ref, so that this header needs no CCCL.
template <class T>
inline constexpr bool kForeignStreamRef = false;
}  // namespace detail

/// A CUDA stream that this object does not own: what a function that only uses a
/// stream takes (as CCCL's cuda::stream_ref).
///
/// Trivially copyable (a handle and a pointer), passed by value. It converts
/// implicitly from a Stream (an owning Stream is a StreamRef) and from a CUstream or
/// cudaStream_t of any library (the same type; no driver call); the default streams
/// are kLegacyDefaultStream and kPerThreadDefaultStream. It never owns: the stream must
/// outlive it, as a std::string_view must outlive its string.
///
/// A null CUstream is refused (std::invalid_argument): for the driver it means the
/// legacy default stream, which kLegacyDefaultStream says explicitly.
///
/// Example (a function that works with any stream, from cuwrap or not):
/// \code
///   void zero(cuwrap::Buffer& buffer, cuwrap::StreamRef stream) {
///     buffer.fill(std::uint8_t{0}, stream);
///   }
///   zero(buffer, owned_stream);                    // a cuwrap::Stream
///   zero(buffer, other_library_stream);            // a CUstream / cudaStream_t
///   zero(buffer, cuwrap::kPerThreadDefaultStream);
/// \endcode
class StreamRef {
 public:
  /// Refer to `handle`, a stream made by any library (a CUstream or cudaStream_t).
  ///
  /// Never calls the driver: the stream's context and device are looked up when asked.
  /// Throws std::invalid_argument when `handle` is null (name the legacy default
  /// stream with kLegacyDefaultStream).
  StreamRef(CUstream handle)  // NOLINT(google-explicit-constructor)
      : bits_(reinterpret_cast<std::uintptr_t>(handle)) {
    if (handle == nullptr) [[unlikely]] {
      throw_null_handle();
    }
  }
  /// Not a stream: a null literal says no stream; name a default stream instead.
  StreamRef(std::nullptr_t) = delete;
  /// Refer to the stream of another library's stream reference (cuda::stream_ref, with
  /// <cuwrap/cccl.hpp>): the same handle, no driver call.
  ///
  /// Throws std::invalid_argument when its handle is null, as StreamRef(CUstream).
  template <class T>
  requires detail::kForeignStreamRef<T> StreamRef(
      const T& other)  // NOLINT(google-explicit-constructor)
      : StreamRef(static_cast<CUstream>(other.get())) {}
  /// Return another library's stream reference (cuda::stream_ref, with
  /// <cuwrap/cccl.hpp>) to the same handle.
  template <class T>
  requires detail::kForeignStreamRef<T>
  operator T() const {  // NOLINT(google-explicit-constructor)
    return T(handle());
  }

  /// Refer to a default stream by its handle value (CU_STREAM_LEGACY or
  /// CU_STREAM_PER_THREAD as an integer): the constructor of kLegacyDefaultStream and
  /// kPerThreadDefaultStream, constant-initialisable, never calling the driver.
  constexpr StreamRef(detail::DefaultStreamTag /*tag*/, std::uintptr_t bits) noexcept
      : bits_(bits) {}
  /// Return a view of `handle`, a stream of any library; nothing destroys it here.
  ///
  /// nullptr, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the default streams of
  /// whichever context is current when the stream is used (nullptr is the legacy one).
  /// Never calls the driver: the stream's context is looked up when an operation needs
  /// it. Stream::from_handle is this function: a view is a StreamRef, never a Stream.
  static StreamRef from_handle(CUstream handle) noexcept {
    return handle == nullptr ? StreamRef(detail::DefaultStreamTag{}, detail::kLegacyStreamBits)
                             : StreamRef(reinterpret_cast<std::uintptr_t>(handle), nullptr);
  }

  /// Block the calling thread until all work queued on the stream is done.
  void sync() const;
  /// Return whether all work queued on the stream is done (never blocks).
  bool is_done() const;
  /// Make later work on this stream wait until `event` completes (cuStreamWaitEvent).
  void wait(EventRef event) const;
  /// Make later work on this stream wait for the work queued on `other` so far.
  void wait(StreamRef other) const;
  /// Record a new event on this stream and return it.
  Event record(const EventOptions& options = {}) const;
  /// Record `event` on this stream (re-recording moves the marker).
  void record(EventRef event) const;
  /// Return a graph builder that captures work from this stream (defined with Graph).
  GraphBuilder create_graph_builder() const;
  /// Associate the managed memory `managed` (a whole allocation) with this stream,
  /// ordered on it (cuStreamAttachMemAsync; defined with the memory code).
  ///
  /// `flags`: CU_MEM_ATTACH_SINGLE (only this stream's work may access it, so the host
  /// may use it while other streams run), CU_MEM_ATTACH_HOST (the host) or
  /// CU_MEM_ATTACH_GLOBAL (any stream). Throws std::invalid_argument for other flags or
  /// an empty range (before any driver call), DriverError when the memory is not a
  /// managed allocation.
  void attach(BufferRef managed, CUmemAttach_flags flags) const;

  /// Return whether the stream does not synchronise with the legacy default stream.
  bool is_nonblocking() const;
  /// Return the stream's priority (lower numbers are higher priority).
  int priority() const;
  /// Return the device the stream's work runs on.
  Device device() const;
  /// Return the context the stream belongs to.
  ///
  /// For the default streams, the context current on this thread, or device 0's
  /// primary context when none is current; for a stream of another library, the one
  /// the driver reports (cuStreamGetCtx).
  CUcontext context() const;
  /// Return the CUDA stream handle (the same pointer as the CUstream it was made from).
  CUstream handle() const { return handle_for("handle"); }

  /// Return how the calling thread waits for this stream's work in sync()
  /// (CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY: CU_SYNC_POLICY_AUTO, SPIN, YIELD,
  /// BLOCKING_SYNC).
  CUsynchronizationPolicy synchronization_policy() const;
  /// Set how the calling thread waits for this stream's work.
  ///
  /// Throws std::invalid_argument for a value that is no CU_SYNC_POLICY_*.
  void set_synchronization_policy(CUsynchronizationPolicy policy) const;
  /// Make later kernels on this stream keep `window` in the L2 cache's persisting part
  /// (CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW): a `hit_ratio` share of its accesses get
  /// `hit`, the rest `miss`. Defined with the memory concept.
  ///
  /// Persisting lines compete for the set-aside part of L2
  /// (ContextRef::set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, bytes)); without a
  /// set-aside the window has no effect. Throws std::invalid_argument for an empty
  /// window, one larger than the device's max_access_policy_window_size, a hit_ratio
  /// outside [0, 1], or `miss` CU_ACCESS_PROPERTY_PERSISTING (the driver's rule).
  void set_access_policy_window(BufferRef window, float hit_ratio,
                                CUaccessProperty hit = CU_ACCESS_PROPERTY_PERSISTING,
                                CUaccessProperty miss = CU_ACCESS_PROPERTY_STREAMING) const;
  /// Remove this stream's access policy window (a window of 0 bytes); lines already
  /// persisting stay so until reset (CU_CTX_RESET_PERSISTING_L2 / cuCtxResetPersistingL2Cache).
  void reset_access_policy_window() const;
  /// Copy the attributes of `source` (synchronization policy, access policy window,
  /// ...) to this stream (cuStreamCopyAttributes).
  void copy_attributes_from(StreamRef source) const;
  /// Return whether this is the legacy or the per-thread default stream.
  bool is_default() const noexcept {
    return bits_ == 0 || bits_ == detail::kLegacyStreamBits ||
           bits_ == detail::kPerThreadStreamBits;
  }
  /// Return whether both refer to the same CUDA stream handle.
  friend constexpr bool operator==(StreamRef a, StreamRef b) noexcept { return a.bits_ == b.bits_; }

 protected:
  /// The bits of a closed (or default-constructed, or moved-from) Stream.
  static constexpr std::uintptr_t kClosedBits = ~std::uintptr_t{0};

  constexpr StreamRef(std::uintptr_t bits, const detail::StreamState* state) noexcept
      : bits_(bits), state_(state) {}
  [[noreturn]] static void throw_closed(const char* operation);
  void require_open(const char* operation) const {
    if (bits_ == kClosedBits) [[unlikely]] {
      throw_closed(operation);
    }
  }
  /// Return the handle for `operation`; throws std::logic_error for an empty Stream.
  CUstream handle_for(const char* operation) const {
    require_open(operation);
    return reinterpret_cast<CUstream>(bits_);
  }

  std::uintptr_t bits_;                         // the CUstream's bits
  const detail::StreamState* state_ = nullptr;  // a cuwrap stream's state, else null

 private:
  friend class Buffer;
  friend class MemoryResource;
  friend struct std::hash<StreamRef>;
  friend detail::ContextKey detail::stream_context_key(StreamRef stream) noexcept;
  /// Return a Stream on the same CUDA stream that keeps it alive when cuwrap made it
  /// (for Buffer, GraphBuilder, which keep a stream to order work on later); for any
  /// other handle one that destroys nothing.
  Stream share() const noexcept;
  [[noreturn]] static void throw_null_handle();
};

/// A CUDA stream; an RAII, move-only owner.
///
/// A Stream is a StreamRef (as CCCL's cuda::stream is a cuda::stream_ref): it has the
/// same operations, and passes where a StreamRef is taken. It adds ownership: the
/// destructor and close() release the stream.
///
/// Buffers allocated on a stream keep its CUDA stream alive for their stream-ordered
/// free: close() releases this object's ownership, and the CUDA stream is destroyed
/// once no such buffer needs it any more (as cuda.core's reference-counted handles).
///
/// A Stream can be empty: default-constructed (to be assigned later), closed or moved
/// from; is_open() says so, and every operation on an empty Stream, also through a
/// StreamRef made from it, throws std::logic_error.
///
/// Example:
/// \code
///   cuwrap::Stream s = cuwrap::Device(0).create_stream();
///   // ... enqueue work on s.handle() ...
///   s.sync();
/// \endcode
class Stream : public StreamRef {
 public:
  /// Create a stream on `device` (in its primary context).
  ///
  /// A priority outside the device's range is clamped to it (see StreamOptions::priority).
  explicit Stream(const Device& device, const StreamOptions& options = {});
  /// Make an empty stream (is_open() false), to be assigned later; using it throws
  /// std::logic_error.
  constexpr Stream() noexcept : StreamRef(kClosedBits, nullptr) {}
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// Close the stream (never throws).
  ~Stream();

  /// Release the stream now; idempotent, never throws. Later use throws logic_error.
  void close() noexcept;

  /// Return whether the object still refers to a stream (false after close or a move).
  bool is_open() const noexcept { return bits_ != kClosedBits; }

 private:
  friend class StreamRef;
  friend Stream detail::adopt_stream(CUstream, CUcontext, int,
                                     detail::Ref<const detail::GreenContextState>);
  /// Take over the reference the caller holds on `state` (null for none).
  Stream(std::uintptr_t bits, const detail::StreamState* state) noexcept : StreamRef(bits, state) {}
};

/// The legacy default stream (CU_STREAM_LEGACY): synchronises with blocking streams.
///
/// It is cuda.core's LEGACY_DEFAULT_STREAM, a StreamRef (nothing owns a default
/// stream); its context is the one current on the thread when it is used (device 0's
/// primary context when none is).
inline constexpr StreamRef kLegacyDefaultStream{detail::DefaultStreamTag{},
                                                detail::kLegacyStreamBits};
/// The per-thread default stream (CU_STREAM_PER_THREAD): one per host thread.
///
/// It is cuda.core's PER_THREAD_DEFAULT_STREAM; like kLegacyDefaultStream it uses the
/// context current on the thread.
inline constexpr StreamRef kPerThreadDefaultStream{detail::DefaultStreamTag{},
                                                   detail::kPerThreadStreamBits};

namespace detail {

/// Return whether a context other than `stream`'s is current on this thread (a stream
/// of another device than the current one).
bool stream_context_is_other(StreamRef stream);

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
inline void check_on_stream(StreamRef stream, const char* function, Call&& call) {
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

/// Hash a StreamRef by its handle (the same as operator==), so that it keys unordered
/// containers; an owning Stream hashes as a StreamRef.
template <>
struct std::hash<cuwrap::StreamRef> {
  /// Return the hash of the handle.
  std::size_t operator()(const cuwrap::StreamRef& stream) const noexcept {
    return cuwrap::detail::hash_bits(static_cast<std::uint64_t>(stream.bits_));
  }
};
