// Event. See cuwrap/event.hpp.
#include "base/compat.hpp"
#include "base/context_registry.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {

Event::Event(const Device& device, const EventOptions& options)
    : Event(create(device.context(), device.device_id(), options)) {}

Event::Event(Event&& other) noexcept
    : EventRef(std::exchange(other.handle_, nullptr), other.context_, other.context_id_),
      device_id_(other.device_id_),
      timing_disabled_(other.timing_disabled_),
      blocking_sync_(other.blocking_sync_),
      ipc_enabled_(other.ipc_enabled_),
      imported_(other.imported_),
      imported_handle_(other.imported_handle_) {}

Event& Event::operator=(Event&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Event::~Event() { close(); }

Event Event::create(CUcontext context, int device_id, const EventOptions& options,
                    unsigned long long context_id) {
  if (options.ipc_enabled && options.enable_timing) {
    throw std::invalid_argument(
        "EventOptions: ipc_enabled = true requires enable_timing = false (the driver "
        "cannot share timing events between processes)");
  }
  unsigned flags = CU_EVENT_DEFAULT;
  if (!options.enable_timing) {
    flags |= CU_EVENT_DISABLE_TIMING;
  }
  if (options.blocking_sync) {
    flags |= CU_EVENT_BLOCKING_SYNC;
  }
  if (options.ipc_enabled) {
    flags |= CU_EVENT_INTERPROCESS;
  }
  const detail::ScopedContext scope(context);
  if (context_id == 0) {
    context_id = detail::context_id(context);  // before the event: a failure leaks nothing
  }
  Event event;
  event.handle_ = driver::cuEventCreate(flags);
  event.context_ = context;
  event.context_id_ = context_id;
  event.device_id_ = device_id;
  event.timing_disabled_ = !options.enable_timing;
  event.blocking_sync_ = options.blocking_sync;
  event.ipc_enabled_ = options.ipc_enabled;
  return event;
}

Event Event::from_ipc_descriptor(const CUipcEventHandle& descriptor) {
  const CUcontext current = detail::current_context();
  const CUcontext context = current != nullptr ? current : detail::primary_context(0);
  const detail::ScopedContext scope(context);
  const unsigned long long context_id = detail::context_id(context);  // before the event
  Event event;
  event.handle_ = driver::cuIpcOpenEventHandle(descriptor);
  event.context_ = context;
  event.context_id_ = context_id;
  event.timing_disabled_ = true;
  event.ipc_enabled_ = true;
  event.imported_ = true;
  event.imported_handle_ = descriptor;
  return event;
}

Event Event::from_ipc_descriptor(const CUipcEventHandle& descriptor, const Device& device) {
  const detail::ScopedContext scope(device.context());
  Event event = from_ipc_descriptor(descriptor);
  event.device_id_ = device.device_id();
  return event;
}

namespace {

// Throw std::invalid_argument unless the flag byte of an IPC event descriptor is 0 or 1.
void check_event_flags(const IPCEventDescriptor& descriptor) {
  if (descriptor.blocking_sync > 1) {
    throw std::invalid_argument(
        "Event::from_ipc_descriptor: IPCEventDescriptor::blocking_sync is " +
        std::to_string(descriptor.blocking_sync) + "; only 0 and 1 are flags");
  }
}

}  // namespace

Event Event::from_ipc_descriptor(const IPCEventDescriptor& descriptor) {
  check_event_flags(descriptor);
  Event event = from_ipc_descriptor(descriptor.handle);
  event.blocking_sync_ = descriptor.blocking_sync != 0;
  return event;
}

Event Event::from_ipc_descriptor(const IPCEventDescriptor& descriptor, const Device& device) {
  check_event_flags(descriptor);
  Event event = from_ipc_descriptor(descriptor.handle, device);
  event.blocking_sync_ = descriptor.blocking_sync != 0;
  return event;
}

namespace {

// The check at an Event's entry points (an EventRef of another library checks nothing).
detail::ContextUse use_context(CUcontext context, unsigned long long id, CUevent handle,
                               const char* operation) {
  return {context, id, "Event", handle, operation};
}

}  // namespace

void EventRef::sync() const {
  require_open("sync");
  const detail::ContextUse use = use_context(context_, context_id_, handle_, "Event::sync");
  driver::cuEventSynchronize(handle_);
}

bool EventRef::is_done() const {
  require_open("is_done");
  const detail::ContextUse use = use_context(context_, context_id_, handle_, "Event::is_done");
  return driver::cuEventQuery(handle_);
}

void EventRef::throw_closed(const char* operation) {
  // Only an Event can be empty (an EventRef from a handle is never null).
  throw std::logic_error(std::string("Event::") + operation + " on a closed Event");
}

void EventRef::throw_null_handle() {
  throw std::invalid_argument(
      "cuwrap::EventRef(CUevent): the event handle is null (an EventRef always names an event)");
}

IPCEventDescriptor Event::get_ipc_descriptor() const {
  require_open("get_ipc_descriptor");
  if (!ipc_enabled_) {
    throw std::logic_error(
        "Event::get_ipc_descriptor: the event was not created with "
        "EventOptions::ipc_enabled = true");
  }
  IPCEventDescriptor descriptor;
  descriptor.blocking_sync = blocking_sync_ ? 1 : 0;
  if (imported_) {
    descriptor.handle = imported_handle_;  // the driver does not export an event it opened
    return descriptor;
  }
  const detail::ContextUse use =
      use_context(context_, context_id_, handle_, "Event::get_ipc_descriptor");
  const detail::ScopedContext scope(context_ != nullptr ? context_ : detail::current_context());
  descriptor.handle = driver::cuIpcGetEventHandle(handle_);
  return descriptor;
}

void Event::close() noexcept {
  // An event whose context cuwrap destroyed went with it: its handle is not used again.
  // No driver call decides this (a release path must not fail on a query).
  if (handle_ != nullptr && !detail::context_recorded_destroyed(context_id_)) {
    detail::report_release_failure(driver::raw::cuEventDestroy(handle_), "cuEventDestroy", "Event");
  }
  handle_ = nullptr;
}

float operator-(const Event& end, const Event& start) {
  end.require_open("operator- (end)");
  start.require_open("operator- (start)");
  if (end.timing_disabled_ || start.timing_disabled_) {
    throw std::logic_error(
        std::string("Event timing: the ") +
        (start.timing_disabled_
             ? (end.timing_disabled_ ? "start and end events were" : "start event was")
             : "end event was") +
        " created without EventOptions::enable_timing = true");
  }
  const detail::ContextUse end_use =
      use_context(end.context_, end.context_id_, end.handle_, "Event operator- (end)");
  const detail::ContextUse start_use =
      use_context(start.context_, start.context_id_, start.handle_, "Event operator- (start)");
  return detail::event_elapsed_ms(start.handle_, end.handle_);
}

CUevent EventRef::handle() const {
  require_open("handle");
  detail::check_context_recorded(context_id_, "Event", handle_, "Event::handle");
  return handle_;
}

Device Event::device() const {
  require_open("device");
  if (device_id_ >= 0) {
    return Device(device_id_);
  }
  if (context_ != nullptr) {
    return Device(detail::device_of_context(context_));
  }
  throw std::logic_error(
      "Event::device: unknown for an event opened from an IPC descriptor "
      "without a device");
}

}  // namespace cuwrap
