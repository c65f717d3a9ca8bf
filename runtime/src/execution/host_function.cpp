// launch_host_func(): the trampoline the driver calls, and the error handler.
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/host_function.hpp>

#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace cuwrap {
namespace {

std::mutex g_handler_mutex;
HostFunctionErrorHandler g_handler;  // empty: the default (one line on stderr)

void default_handler(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::cerr << "cuwrap: warning: a host function launched on a stream threw: " << e.what()
              << '\n';
  } catch (...) {
    std::cerr << "cuwrap: warning: a host function launched on a stream threw a non-standard "
                 "exception\n";
  }
}

void report(const std::exception_ptr& error) noexcept {
  try {
    HostFunctionErrorHandler handler;
    {
      const std::lock_guard<std::mutex> lock(g_handler_mutex);
      handler = g_handler;
    }
    if (handler) {
      handler(error);
    } else {
      default_handler(error);
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing may unwind into the driver
  }
}

// Called by the driver: run, report any exception, free the callable.
void CUDA_CB trampoline(void* data) noexcept {
  const std::unique_ptr<detail::HostFunction> function(static_cast<detail::HostFunction*>(data));
  try {
    function->run();
  } catch (...) {
    report(std::current_exception());
  }
}

}  // namespace

HostFunctionErrorHandler set_host_function_error_handler(HostFunctionErrorHandler handler) {
  const std::lock_guard<std::mutex> lock(g_handler_mutex);
  return std::exchange(g_handler, handler);
}

namespace detail {

void launch_host_func_raw(CUstream stream, HostFunction* raw_function) {
  std::unique_ptr<HostFunction> function(raw_function);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  check(driver::raw::cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing");
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    throw std::invalid_argument(
        "launch_host_func: the stream is capturing a graph; a graph may run the function "
        "many times while cuwrap frees it after one run");
  }
  check(driver::raw::cuLaunchHostFunc(stream, &trampoline, function.get()), "cuLaunchHostFunc");
  static_cast<void>(function.release());  // the trampoline owns it now
}

}  // namespace detail
}  // namespace cuwrap
