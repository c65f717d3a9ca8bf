// Event: a marker recorded in a stream, for synchronisation and timing (cuda.core's
// Event), and EventRef, its non-owning form. Created by Device::create_event or
// Stream::record.
#pragma once

#include <cuwrap/detail/hash.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cuwrap {

class Device;
class Stream;

/// Options of a new event, as cuda.core 1.3's EventOptions.
struct EventOptions {
  /// Record timestamps, so that `end - start` works (CU_EVENT_DISABLE_TIMING when false).
  bool enable_timing = false;
  /// Let a host thread waiting in Event::sync sleep instead of spinning
  /// (CU_EVENT_BLOCKING_SYNC).
  ///
  /// false (the default, as cuda.core 1.3) leaves the wait to the context's scheduling
  /// policy (CU_CTX_SCHED_AUTO unless set otherwise: spin while the CUDA contexts are
  /// fewer than the logical processors, else yield); is_sync_busy_waited() is false.
  bool blocking_sync = false;
  /// Allow sharing the event with other processes (CU_EVENT_INTERPROCESS).
  ///
  /// Requires enable_timing == false; otherwise creation throws std::invalid_argument.
  bool ipc_enabled = false;
};

/// An IPC-enabled event as another process opens it (Event::get_ipc_descriptor,
/// Event::from_ipc_descriptor): the driver's handle and the flag it does not carry, as
/// cuda.core's IPCEventDescriptor. Trivially copyable: send it with
/// IPCChannel::send_value.
struct IPCEventDescriptor {
  CUipcEventHandle handle{};       ///< the driver's handle (cuIpcGetEventHandle)
  std::uint8_t blocking_sync = 0;  ///< 1: created with EventOptions::blocking_sync; else 0
};
static_assert(std::is_trivially_copyable_v<IPCEventDescriptor>);

/// A CUDA event that this object does not own: what a function that only waits for
/// or records an event takes.
///
/// Trivially copyable, passed by value; converts implicitly from an Event (an Event is
/// an EventRef) and from a CUevent of any library (no driver call). The event must
/// outlive it. A null CUevent is refused with std::invalid_argument.
///
/// Example:
/// \code
///   void after(cuwrap::StreamRef stream, cuwrap::EventRef ready) { stream.wait(ready); }
///   after(stream, event);               // a cuwrap::Event
///   after(stream, other_library_event); // a CUevent / cudaEvent_t
/// \endcode
class EventRef {
 public:
  /// Refer to `handle`, an event made by any library (a CUevent or cudaEvent_t).
  ///
  /// Throws std::invalid_argument when `handle` is null.
  EventRef(CUevent handle)  // NOLINT(google-explicit-constructor)
      : handle_(handle) {
    if (handle == nullptr) [[unlikely]] {
      throw_null_handle();
    }
  }
  /// Not an event: a null literal names none.
  EventRef(std::nullptr_t) = delete;
  /// Return a view of `handle`, an event of any library; nothing destroys it here.
  ///
  /// Its flags are unknown, so timing is left to the driver to reject. Throws
  /// std::invalid_argument when `handle` is null. Event::from_handle is this function:
  /// a view is an EventRef, never an Event.
  static EventRef from_handle(CUevent handle) { return EventRef(handle); }

  /// Block the calling thread until all work captured by the event is done.
  void sync() const;
  /// Return whether all work captured by the event is done (never blocks).
  bool is_done() const;
  /// Return the CUDA event handle (the same pointer as the CUevent it was made from).
  CUevent handle() const;
  /// Return the context the event was created in (nullptr when unknown: an event of
  /// another library).
  CUcontext context() const noexcept { return context_; }
  /// Return whether both refer to the same CUDA event handle.
  friend bool operator==(EventRef a, EventRef b) noexcept { return a.handle_ == b.handle_; }

 protected:
  constexpr EventRef(CUevent handle, CUcontext context, unsigned long long context_id = 0) noexcept
      : handle_(handle), context_(context), context_id_(context_id) {}
  void require_open(const char* operation) const {
    if (handle_ == nullptr) [[unlikely]] {
      throw_closed(operation);
    }
  }
  [[noreturn]] static void throw_closed(const char* operation);
  friend class StreamRef;  // checks the event's context where a stream uses it
  friend struct std::hash<EventRef>;

  CUevent handle_;                     // null only for a closed Event
  CUcontext context_ = nullptr;        // null when unknown
  unsigned long long context_id_ = 0;  // cuCtxGetId(context_); 0 when unknown

 private:
  [[noreturn]] static void throw_null_handle();
};

/// A CUDA event; an RAII, move-only owner.
///
/// An Event is an EventRef: it passes where an EventRef is taken, and adds ownership
/// (close() and the destructor destroy the event) and what is known from its creation
/// (timing, IPC). A default-constructed, closed or moved-from Event is empty
/// (is_open() false); an operation on it, also through an EventRef made from it, throws
/// std::logic_error. A view of an event of another library is an EventRef
/// (EventRef::from_handle).
///
/// Example:
/// \code
///   cuwrap::Event start = stream.record({.enable_timing = true});
///   // ... work on stream ...
///   cuwrap::Event end = stream.record({.enable_timing = true});
///   end.sync();
///   float ms = end - start;
/// \endcode
class Event : public EventRef {
 public:
  /// Create an event in the primary context of `device`.
  ///
  /// Throws std::invalid_argument for ipc_enabled together with enable_timing.
  explicit Event(const Device& device, const EventOptions& options = {});
  /// Make an empty event (is_open() false), to be assigned later (a member recorded
  /// into on demand); using it throws std::logic_error.
  constexpr Event() noexcept : EventRef(nullptr, nullptr) {}
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Destroy the event (never throws).
  ~Event();

  /// Open an event from the driver's bare handle (IPCEventDescriptor::handle, or one
  /// another library exported with cuIpcGetEventHandle).
  ///
  /// The event is opened in the context current on this thread, or in device 0's
  /// primary context when none is. The returned Event owns the opened handle.
  static Event from_ipc_descriptor(const CUipcEventHandle& descriptor);
  /// Open an exported event in the primary context of `device`.
  static Event from_ipc_descriptor(const CUipcEventHandle& descriptor, const Device& device);

  /// Open an event another process exported with get_ipc_descriptor(), keeping its flags:
  /// the opened event reports is_blocking_sync() as the exporter's did.
  ///
  /// The descriptor is untrusted input: a flag byte other than 0 or 1 is
  /// std::invalid_argument before any driver call. Opened as from_ipc_descriptor(
  /// const CUipcEventHandle&).
  static Event from_ipc_descriptor(const IPCEventDescriptor& descriptor);
  /// Open an exported event, keeping its flags, in the primary context of `device`.
  static Event from_ipc_descriptor(const IPCEventDescriptor& descriptor, const Device& device);

  /// Return the descriptor (the driver's handle and the event's flags) that another
  /// process opens with from_ipc_descriptor(), as cuda.core's Event.get_ipc_descriptor().
  ///
  /// An event opened with from_ipc_descriptor returns the descriptor it was opened from
  /// (with its blocking_sync flag), so that a process can pass an imported event on.
  /// Throws std::logic_error unless the event was created with ipc_enabled (or opened
  /// from a descriptor).
  IPCEventDescriptor get_ipc_descriptor() const;
  /// Destroy the event now; idempotent, never throws.
  void close() noexcept;

  /// Return the milliseconds elapsed between `start` and `end` (both recorded, done).
  ///
  /// Throws std::logic_error when either event is closed or was created without
  /// enable_timing; DriverError (CUDA_ERROR_NOT_READY) when one is not yet complete.
  friend float operator-(const Event& end, const Event& start);

  /// Return the device the event belongs to.
  Device device() const;
  /// Return whether the event was created without timing.
  bool is_timing_disabled() const noexcept { return timing_disabled_; }
  /// Return whether the event promises a busy-waiting sync: always false, as cuda.core
  /// 1.3's.
  ///
  /// Without blocking_sync a waiting thread follows the context's scheduling policy
  /// (CU_CTX_SCHED_AUTO unless set otherwise: it spins while the CUDA contexts are fewer
  /// than the logical processors, else yields), so no busy wait is promised; with
  /// blocking_sync it sleeps.
  bool is_sync_busy_waited() const noexcept { return false; }
  /// Return whether a host thread waiting on the event sleeps (EventOptions::blocking_sync).
  bool is_blocking_sync() const noexcept { return blocking_sync_; }
  /// Return whether the event can be shared with other processes.
  bool is_ipc_enabled() const noexcept { return ipc_enabled_; }
  /// Return whether the object still holds an event (false after close or a move).
  bool is_open() const noexcept { return handle_ != nullptr; }

 private:
  friend class StreamRef;
  /// Create an event in `context` (made current for the call), whose ID is `context_id`
  /// when the caller knows it (a cuwrap stream's state does), else 0: looked up.
  static Event create(CUcontext context, int device_id, const EventOptions& options,
                      unsigned long long context_id = 0);

  int device_id_ = -1;
  bool timing_disabled_ = true;
  bool blocking_sync_ = false;
  bool ipc_enabled_ = false;
  // Opened from another process's descriptor: that descriptor, which get_ipc_descriptor()
  // hands on (the driver does not export an event it opened), as cuda.core keeps it.
  bool imported_ = false;
  CUipcEventHandle imported_handle_{};
};

}  // namespace cuwrap

/// Hash a EventRef by its handle (the same as operator==), so that it keys unordered
/// containers; an owning Event hashes as a EventRef.
template <>
struct std::hash<cuwrap::EventRef> {
  /// Return the hash of the handle.
  std::size_t operator()(const cuwrap::EventRef& event) const noexcept {
    return cuwrap::detail::hash_pointer(event.handle_);
  }
};
