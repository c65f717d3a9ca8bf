// launch_host_func(): run a C++ callable on the host, in a stream's order
// (cuLaunchHostFunc), with its lifetime managed by cuwrap.
//
// The callable is moved to the heap and handed to the driver; a trampoline runs it on
// the driver's callback thread once the work queued before it is done, then destroys
// it. An exception thrown by the callable never unwinds into the driver: it is caught
// and passed to the host-function error handler (default: one line on stderr).
//
// As CUDA requires of host functions, the callable must not call CUDA (no launches, no
// synchronisation); it may signal other threads, log, or touch host memory.
#pragma once

#include <cuwrap/detail/handler.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <exception>
#include <type_traits>
#include <utility>

namespace cuwrap {

/// Called with an exception thrown by a host function (launch_host_func, or a graph's
/// host node: GraphBuilder::callback, GraphDefinition::callback, Graph::set_host_node);
/// must not throw (an exception it
/// throws is dropped). Runs on the driver's callback thread.
///
/// A plain function (or a lambda without captures) taking `const std::exception_ptr&`,
/// or a `{callback, user_data}` pair whose callback also takes the `void*` user data.
/// Not a std::function: see detail/handler.hpp.
using HostFunctionErrorHandler = detail::Handler<const std::exception_ptr&>;

/// Install `handler` for exceptions thrown by host functions and return the previous
/// one; an empty handler restores the default (one line on stderr:
/// "cuwrap: warning: a host function launched on a stream threw: <what>"). Thread-safe.
HostFunctionErrorHandler set_host_function_error_handler(HostFunctionErrorHandler handler);

namespace detail {

/// A type-erased host function owned by the trampoline (or graph user object) that
/// runs it: a virtual base by hand rather than std::function, whose <functional> every
/// user of this header would pay for.
struct HostFunction {
  HostFunction() = default;
  HostFunction(const HostFunction&) = delete;
  HostFunction& operator=(const HostFunction&) = delete;
  virtual ~HostFunction() = default;
  /// Run the callable.
  virtual void run() = 0;
};

/// The HostFunction holding a callable of type F.
template <class F>
struct HostFunctionOf final : HostFunction {
  /// Take the callable `g` over.
  explicit HostFunctionOf(F g) : f(std::move(g)) {}
  /// Call the callable.
  void run() override { f(); }
  F f;  ///< the callable
};

/// Return `function` moved (or copied) to the heap as a HostFunction the caller owns.
template <class F>
HostFunction* make_host_function(F&& function) {
  static_assert(std::is_invocable_v<std::decay_t<F>&>,
                "cuwrap: a host function must be callable with no arguments");
  return new HostFunctionOf<std::decay_t<F>>(std::forward<F>(function));
}

/// Enqueue `function` (owned; deleted here when the driver refuses it) on `stream`.
void launch_host_func_raw(CUstream stream, HostFunction* function);

/// Pass `error`, thrown by a host function (a stream's or a graph host node's), to the
/// host-function error handler; never throws.
void report_host_function_error(const std::exception_ptr& error) noexcept;

}  // namespace detail

/// Run `function()` on the host once the work queued on `stream` before it is done.
///
/// `function` is moved (or copied) into storage that cuwrap frees after it has run.
/// On a stream that is capturing a graph, the call is captured as a host node (as
/// cuLaunchHostFunc allows): the function then runs at every launch of the graph, and
/// is freed with the last graph that uses it. Throws DriverError naming the call the
/// driver refused (cuLaunchHostFunc; cuGraphRetainUserObject when capturing).
///
/// Example:
/// \code
///   std::atomic<bool> done{false};
///   cuwrap::launch_host_func(stream, [&done] { done = true; });
///   stream.sync();  // done is true here
/// \endcode
template <class F>
void launch_host_func(StreamRef stream, F&& function) {
  const CUstream handle = stream.handle();  // may throw: before the allocation
  detail::launch_host_func_raw(handle, detail::make_host_function(std::forward<F>(function)));
}

}  // namespace cuwrap
