// Stream and the default streams. See cuwrap/stream.hpp.
#include "base/compat.hpp"
#include "base/context_registry.hpp"
#include "base/ref_counted.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace detail {

// What a Stream and the buffers allocated on it share. The CUDA stream is destroyed
// when the last of them lets go.
struct StreamState : RefCounted {
  CUstream handle = nullptr;
  CUcontext context = nullptr;
  unsigned long long context_id = 0;  // cuCtxGetId(context)
  int device_id = -1;
  Ref<const GreenContextState> keep_alive;  // released after the stream is destroyed

  StreamState() = default;
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;
  ~StreamState() {
    // A stream whose context cuwrap destroyed went with it: its handle is not used again.
    // No driver call decides this (a release path must not fail on a query).
    if (handle != nullptr && !context_recorded_destroyed(context_id)) {
      detail::report_release_failure(driver::raw::cuStreamDestroy(handle), "cuStreamDestroy",
                                     "Stream");
    }
  }
};

void ref_acquire(const StreamState* state) noexcept { acquire_counted(state); }
void ref_release(const StreamState* state) noexcept { release_counted(state); }

ContextKey stream_context_key(StreamRef stream) noexcept {
  if (stream.state_ == nullptr) {
    return {};
  }
  return {stream.state_->context, stream.state_->context_id};
}

bool stream_context_is_other(StreamRef stream) {
  const CUcontext current = current_context();
  return current != nullptr && current != stream.context();
}

Stream adopt_stream(CUstream handle, CUcontext context, int device_id,
                    Ref<const GreenContextState> keep_alive) {
  auto state = make_ref<StreamState>();
  state->handle = handle;
  state->context = context;
  state->context_id = context_id(context);
  state->device_id = device_id;
  state->keep_alive = std::move(keep_alive);
  return Stream(reinterpret_cast<std::uintptr_t>(handle), state.release());
}

}  // namespace detail

namespace {

// Destroys a temporary event (never throws).
struct EventGuard {
  CUevent event = nullptr;
  EventGuard() = default;
  EventGuard(const EventGuard&) = delete;
  EventGuard& operator=(const EventGuard&) = delete;
  ~EventGuard() {
    if (event != nullptr) {
      detail::report_release_failure(driver::raw::cuEventDestroy(event), "cuEventDestroy", "Event");
    }
  }
};

// The check at a Stream's entry points (a default stream, bound to no context, checks
// nothing).
detail::ContextUse use_context(const detail::StreamState* state, std::uintptr_t handle,
                               const char* operation) {
  return {state != nullptr ? state->context : nullptr, state != nullptr ? state->context_id : 0,
          "Stream", reinterpret_cast<const void*>(handle), operation};
}

}  // namespace

Stream::Stream(const Device& device, const StreamOptions& options)
    : StreamRef(kClosedBits, nullptr) {
  const CUcontext context = device.context();
  const detail::ScopedContext scope(context);
  // A priority outside cuCtxGetStreamPriorityRange is clamped to it, as the driver
  // (cuStreamCreateWithPriority) and cuda.core do; Stream::priority() reports the result.
  auto state = detail::make_ref<detail::StreamState>();
  state->context = context;
  state->context_id = detail::context_id(context);
  state->device_id = device.device_id();
  const unsigned flags = options.nonblocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
  state->handle = driver::cuStreamCreateWithPriority(flags, options.priority);
  bits_ = reinterpret_cast<std::uintptr_t>(state->handle);
  state_ = state.release();
}

Stream::Stream(Stream&& other) noexcept
    : StreamRef(std::exchange(other.bits_, kClosedBits), std::exchange(other.state_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Stream::~Stream() { close(); }

void Stream::close() noexcept {
  if (const detail::StreamState* state = std::exchange(state_, nullptr); state != nullptr) {
    detail::ref_release(state);
  }
  bits_ = kClosedBits;
}

void StreamRef::sync() const {
  const CUstream stream = handle_for("sync");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::sync");
  const detail::ScopedContext scope(context());
  driver::cuStreamSynchronize(stream);
}

bool StreamRef::is_done() const {
  const CUstream stream = handle_for("is_done");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::is_done");
  const detail::ScopedContext scope(context());
  return driver::cuStreamQuery(stream);
}

void StreamRef::wait(EventRef event) const {
  const CUstream stream = handle_for("wait");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::wait");
  const detail::ContextUse event_use(event.context_, event.context_id_, "Event", event.handle_,
                                     "Stream::wait");
  const CUevent e = event.handle();
  const detail::ScopedContext scope(context());
  driver::cuStreamWaitEvent(stream, e, CU_EVENT_WAIT_DEFAULT);
}

void StreamRef::wait(StreamRef other) const {
  const CUstream stream = handle_for("wait");
  if (other.bits_ == kClosedBits) {
    throw std::logic_error("Stream::wait: the Stream to wait for is closed");
  }
  if (other.bits_ == bits_ && !is_default()) {
    return;  // a stream is always ordered after its own earlier work
  }
  const detail::ContextUse use = use_context(state_, bits_, "Stream::wait");
  const detail::ContextUse other_use =
      use_context(other.state_, other.bits_, "Stream::wait (the stream waited for)");
  EventGuard marker;
  {
    const detail::ScopedContext scope(other.context());
    marker.event = driver::cuEventCreate(CU_EVENT_DISABLE_TIMING);
    driver::cuEventRecord(marker.event, other.handle());
  }
  const detail::ScopedContext scope(context());
  driver::cuStreamWaitEvent(stream, marker.event, CU_EVENT_WAIT_DEFAULT);
}

Event StreamRef::record(const EventOptions& options) const {
  const CUstream stream = handle_for("record");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::record");
  const CUcontext ctx = context();
  // A cuwrap stream's state knows its context's ID: no second cuCtxGetId per record.
  Event event = state_ != nullptr
                    ? Event::create(ctx, state_->device_id, options, state_->context_id)
                    : Event::create(ctx, -1, options);
  const detail::ScopedContext scope(ctx);
  driver::cuEventRecord(event.handle(), stream);
  return event;
}

void StreamRef::record(EventRef event) const {
  const CUstream stream = handle_for("record");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::record");
  const detail::ContextUse event_use(event.context_, event.context_id_, "Event", event.handle_,
                                     "Stream::record");
  const CUevent e = event.handle();
  const detail::ScopedContext scope(context());
  driver::cuEventRecord(e, stream);
}

bool StreamRef::is_nonblocking() const {
  const CUstream stream = handle_for("is_nonblocking");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::is_nonblocking");
  const detail::ScopedContext scope(context());
  return (driver::cuStreamGetFlags(stream) & CU_STREAM_NON_BLOCKING) != 0;
}

int StreamRef::priority() const {
  const CUstream stream = handle_for("priority");
  const detail::ContextUse use = use_context(state_, bits_, "Stream::priority");
  const detail::ScopedContext scope(context());
  return driver::cuStreamGetPriority(stream);
}

Device StreamRef::device() const {
  require_open("device");
  if (state_ != nullptr) {
    return Device(state_->device_id);
  }
  if (!is_default()) {  // another library's stream: ask the driver
    detail::ensure_driver_initialized();
    return Device(detail::ordinal_of(detail::stream_device(reinterpret_cast<CUstream>(bits_))));
  }
  return Device(detail::device_of_context(context()));
}

CUcontext StreamRef::context() const {
  require_open("context");
  if (state_ != nullptr) {
    detail::check_context_recorded(state_->context_id, "Stream",
                                   reinterpret_cast<const void*>(bits_), "Stream::context");
    return state_->context;
  }
  if (!is_default()) {  // another library's stream: ask the driver
    detail::ensure_driver_initialized();
    const auto handle = reinterpret_cast<CUstream>(bits_);
    const CUcontext context = detail::stream_contexts(handle).context;
    // A green context's stream has no regular context: use its device's primary one.
    return context != nullptr
               ? context
               : detail::primary_context(detail::ordinal_of(detail::stream_device(handle)));
  }
  const CUcontext current = detail::current_context();
  return current != nullptr ? current : detail::primary_context(0);
}

Stream StreamRef::share() const noexcept {
  if (state_ != nullptr) {
    detail::ref_acquire(state_);
  }
  return Stream(bits_, state_);
}

void StreamRef::throw_closed(const char* operation) {
  // Only a Stream can be empty (a StreamRef from a handle is never null).
  throw std::logic_error(std::string("Stream::") + operation + " on a closed Stream");
}

void StreamRef::throw_null_handle() {
  throw std::invalid_argument(
      "cuwrap::StreamRef(CUstream): the stream handle is null; name the default stream "
      "you mean with kLegacyDefaultStream or kPerThreadDefaultStream");
}

}  // namespace cuwrap
