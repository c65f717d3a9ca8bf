// What cuwrap knows about destroyed contexts, and ContextUse, the check at the entry
// points of every object bound to a context (Stream, Event, Context, launches, buffers'
// frees) that keeps it from using a handle whose context is gone.
//
// Objects remember their context and its process-unique ID (cuCtxGetId, never reused).
// Contexts are destroyed
//  - by cuwrap (the last owner of a green Context lets go): the ID is recorded here and
//    a counter bumped, so that the check costs one relaxed atomic load (no driver call)
//    until some context was destroyed, and a look-up of the ID after that;
//  - outside cuwrap (cuCtxDestroy, cuGreenCtxDestroy): the next driver call on the
//    object fails; while a ContextUse is active that failure is checked against the
//    context (cuCtxGetId, on the error path only) and, the context being gone, recorded
//    here and reported as the same ContextDestroyedError.
#pragma once

#include <cuwrap/error.hpp>

#include "bindings/driver_error_frame.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace cuwrap::detail {

/// How many contexts were recorded destroyed (note_context_destroyed) in this process.
extern std::atomic<unsigned long long> g_destroyed_context_count;

/// Record that the context with ID `id` was destroyed (0: ignored). Never throws.
void note_context_destroyed(unsigned long long id) noexcept;

/// What a higher concept drops when cuwrap destroys a context (the launch concept's
/// kernel cache: functions cached for that context). One hook; set once, never throws.
using ContextDestroyHook = void (*)(unsigned long long context_id) noexcept;
/// Install `hook` (the launch concept does, when its first kernel is registered).
void set_context_destroy_hook(ContextDestroyHook hook) noexcept;
/// Run the hook, if any, for the context with ID `id`, before cuwrap destroys it.
void run_context_destroy_hook(unsigned long long id) noexcept;

/// Return whether the context with ID `id` was recorded destroyed (no driver call).
bool context_recorded_destroyed(unsigned long long id) noexcept;

/// Return whether `context`, whose ID was `id`, is gone: recorded destroyed, or
/// cuCtxGetId says it is no context any more or another context now (which is then
/// recorded). One driver call unless recorded; false when `id` is 0 (unknown) or the
/// driver cannot tell (it is shutting down). Never throws.
bool context_is_gone(CUcontext context, unsigned long long id) noexcept;

/// Throw ContextDestroyedError for `object` ("Stream") with handle `handle`.
[[noreturn]] void throw_context_destroyed(const char* object, const void* handle,
                                          unsigned long long id, const char* operation,
                                          const char* detail = nullptr);

/// Throw ContextDestroyedError when the context with ID `id` was recorded destroyed. One
/// relaxed atomic load while no context was destroyed: for the launch path.
inline void check_context_recorded(unsigned long long id, const char* object, const void* handle,
                                   const char* operation) {
  if (g_destroyed_context_count.load(std::memory_order_relaxed) != 0 && id != 0) [[unlikely]] {
    if (context_recorded_destroyed(id)) {
      throw_context_destroyed(object, handle, id, operation);
    }
  }
}

/// The check at an object's entry point, for the whole operation: throws
/// ContextDestroyedError naming the object and `operation` when its context is known
/// destroyed, and turns a failing driver call of the operation into that error when the
/// context turns out to be gone (a raw cuCtxDestroy). A context ID 0 (a default stream,
/// an Event made by from_handle) checks nothing. A scope guard.
class ContextUse : DriverErrorFrame {
 public:
  ContextUse(CUcontext context, unsigned long long id, const char* object, const void* handle,
             const char* operation)
      : DriverErrorFrame(&translate),
        context_(context),
        id_(id),
        object_(object),
        handle_(handle),
        operation_(operation) {
    check_context_recorded(id, object, handle, operation);
  }

 private:
  static void translate(const DriverErrorFrame& frame, CUresult code, const char* function);

  CUcontext context_;
  unsigned long long id_;
  const char* object_;
  const void* handle_;
  const char* operation_;
};

}  // namespace cuwrap::detail
