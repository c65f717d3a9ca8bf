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

// Called by a graph's host node for a function captured from launch_host_func(): run
// and report, but do not free: the graph may run it again. Its user object frees it.
void CUDA_CB run_captured(void* data) noexcept {
  try {
    static_cast<detail::HostFunction*>(data)->run();
  } catch (...) {
    report(std::current_exception());
  }
}

void CUDA_CB delete_captured(void* data) noexcept {
  delete static_cast<detail::HostFunction*>(data);  // NOLINT(cppcoreguidelines-owning-memory)
}

// Capture `function` on `stream` as a host node: a user object retained by the capture
// graph owns it, so it lives as long as that graph and every graph made from it
// (instantiation and cloning take references), as cuLaunchHostFunc's capture allows.
void capture_host_func(CUstream stream, std::unique_ptr<detail::HostFunction> function) {
  // The _v3 form names the capture graph in every supported toolkit (12.3 entry point).
  const CUgraph graph = driver::cuStreamGetCaptureInfo_v3(stream).graph_out;
  CUuserObject object = driver::cuUserObjectCreate(function.get(), &delete_captured, 1,
                                                   CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  detail::HostFunction* pointer = function.release();  // the user object owns it now
  const CUresult retained =
      driver::raw::cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (retained != CUDA_SUCCESS) {
    static_cast<void>(driver::raw::cuUserObjectRelease(object, 1));  // deletes the function
    detail::throw_driver_error(retained, "cuGraphRetainUserObject");
  }
  detail::check(driver::raw::cuLaunchHostFunc(stream, &run_captured, pointer), "cuLaunchHostFunc");
}

}  // namespace

HostFunctionErrorHandler set_host_function_error_handler(HostFunctionErrorHandler handler) {
  const std::lock_guard<std::mutex> lock(g_handler_mutex);
  return std::exchange(g_handler, handler);
}

namespace detail {

void report_host_function_error(const std::exception_ptr& error) noexcept { report(error); }

void launch_host_func_raw(CUstream stream, HostFunction* raw_function) {
  std::unique_ptr<HostFunction> function(raw_function);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  check(driver::raw::cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing");
  if (capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    capture_host_func(stream, std::move(function));
    return;
  }
  check(driver::raw::cuLaunchHostFunc(stream, &trampoline, function.get()), "cuLaunchHostFunc");
  [[maybe_unused]] HostFunction* const owned_by_trampoline = function.release();
}

}  // namespace detail
}  // namespace cuwrap
