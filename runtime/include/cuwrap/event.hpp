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

namespace detail {

/// A bool kept for source compatibility whose explicit use warns (-Wdeprecated-declarations).
///
/// Reading it, copying its holder and default-initialising it do not warn; assigning or
/// initialising it from a bool does, so only code that still sets the old option is told.
class DeprecatedBool {
 public:
  constexpr DeprecatedBool() noexcept = default;
  [[deprecated(
      "use EventOptions::blocking_sync (its meaning is the opposite)")]] constexpr DeprecatedBool(bool
                                                                                                      value) noexcept  // NOLINT(google-explicit-constructor)
      : value_(value) {}
  /// Return the value set.
  constexpr operator bool() const noexcept {
    return value_;
  }  // NOLINT(google-explicit-constructor)

 private:
  bool value_ = false;
};

}  // namespace detail

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
  /// \deprecated Use blocking_sync. Setting it warns; it will be removed in a later release.
  ///
  /// true asks for a busy-waiting event: the flags are the default's (the driver has no
  /// spin flag for events), and is_sync_busy_waited() answers true. Combined with
  /// blocking_sync = true it is a contradiction, and creation throws std::invalid_argument.
  /// false (the old default, which meant a blocking event) no longer changes anything.
  detail::DeprecatedBool busy_waited_sync{};
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

/// A CUDA event; an RAII, move-only owner unless made by from_handle.
///
/// An Event is an EventRef: it passes where an EventRef is taken, and adds ownership
/// (close() and the destructor destroy an event it created) and what is known from its
/// creation (timing, IPC). A closed or moved-from Event is empty (is_open() false); an
/// operation on it, also through an EventRef made from it, throws std::logic_error.
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
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Destroy the event if owned (never throws).
  ~Event();

  /// Wrap an existing event without taking ownership; close() never destroys it.
  ///
  /// Its flags are unknown, so timing is left to the driver to reject.
  static Event from_handle(CUevent handle);

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
  /// Throws std::logic_error unless the event was created with ipc_enabled.
  IPCEventDescriptor get_ipc_descriptor() const;
  /// Destroy the event now (if owned); idempotent, never throws.
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
  /// Return whether the event was created asking for a busy-waiting sync.
  ///
  /// false for a default event, as cuda.core's: without blocking_sync a waiting thread
  /// follows the context's scheduling policy (CU_CTX_SCHED_AUTO unless set otherwise:
  /// it spins while the CUDA contexts are fewer than the logical processors, else
  /// yields), so no busy wait is promised. true only for an event created with the
  /// deprecated busy_waited_sync = true.
  bool is_sync_busy_waited() const noexcept { return busy_waited_; }
  /// Return whether a host thread waiting on the event sleeps (EventOptions::blocking_sync).
  bool is_blocking_sync() const noexcept { return blocking_sync_; }
  /// Return whether the event can be shared with other processes.
  bool is_ipc_enabled() const noexcept { return ipc_enabled_; }
  /// Return whether the object still holds an event (false after close or a move).
  bool is_open() const noexcept { return handle_ != nullptr; }
  /// Return whether close() destroys the event (false for from_handle events).
  bool is_owning() const noexcept { return owning_; }

 private:
  friend class StreamRef;
  constexpr Event() noexcept : EventRef(nullptr, nullptr) {}
  /// Create an event in `context` (made current for the call), whose ID is `context_id`
  /// when the caller knows it (a cuwrap stream's state does), else 0: looked up.
  static Event create(CUcontext context, int device_id, const EventOptions& options,
                      unsigned long long context_id = 0);

  int device_id_ = -1;
  bool owning_ = false;
  bool timing_disabled_ = true;
  bool blocking_sync_ = false;
  bool ipc_enabled_ = false;
  bool busy_waited_ = false;
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
