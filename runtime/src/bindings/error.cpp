// Construction of cuwrap's exceptions: names and descriptions come from the generated
// tables, so messages read well even when the driver is missing.
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/jit_options.hpp>
#if CUWRAP_HAS_NVJITLINK
#include <cuwrap/nvjitlink.hpp>
#endif
#include <cuwrap/nvrtc.hpp>
#if CUWRAP_HAS_NVVM
#include <cuwrap/nvvm.hpp>
#endif

#include "bindings/driver_error_frame.hpp"

#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

// Compose "fn failed: NAME (description)".
std::string failure_message(const std::string& function, std::string_view name,
                            std::string_view description) {
  std::string message = function + " failed: " + std::string(name);
  if (!description.empty()) {
    message += " (" + std::string(description) + ")";
  }
  return message;
}

// Prefer the driver's own wording (cuGetErrorString) when the driver is loaded; fall
// back to the generated description taken from cuda.h's documentation.
std::string driver_description(CUresult code) {
  const char* text = nullptr;
  if (driver::raw::cuGetErrorString(code, &text) == CUDA_SUCCESS && text != nullptr) {
    return text;
  }
  return detail::describe(code);
}

std::string message_with_log(std::string message, const std::string& log) {
  if (!log.empty()) {
    message += "\n" + log;
  }
  return message;
}

}  // namespace

DriverError::DriverError(CUresult code, std::string function)
    : Error(failure_message(function, to_string(code), driver_description(code))),
      code_(code),
      name_(to_string(code)),
      function_(std::move(function)) {}

DriverError::DriverError(CUresult code, std::string function, const std::string& message)
    : Error(message), code_(code), name_(to_string(code)), function_(std::move(function)) {}

DriverError DriverError::with_log(CUresult code, const std::string& function, std::string log) {
  DriverError error(
      code, function,
      message_with_log(failure_message(function, to_string(code), driver_description(code)), log));
  error.log_ = std::move(log);
  return error;
}

ContextDestroyedError::ContextDestroyedError(std::string object, unsigned long long context_id,
                                             const std::string& operation,
                                             const std::string& detail)
    : DriverError(CUDA_ERROR_CONTEXT_IS_DESTROYED, operation,
                  object + ": its context (id " + std::to_string(context_id) + ") was destroyed (" +
                      operation + (detail.empty() ? "" : "; " + detail) + ")"),
      object_(std::move(object)),
      context_id_(context_id) {}

NvrtcError::NvrtcError(nvrtcResult code, std::string function, std::string log)
    : Error(message_with_log(failure_message(function, to_string(code), detail::describe(code)),
                             log)),
      code_(code),
      name_(to_string(code)),
      function_(std::move(function)),
      log_(std::move(log)) {}

#if CUWRAP_HAS_NVJITLINK
NvJitLinkError::NvJitLinkError(nvJitLinkResult code, std::string function, std::string log)
    : Error(message_with_log(failure_message(function, to_string(code), detail::describe(code)),
                             log)),
      code_(code),
      name_(to_string(code)),
      function_(std::move(function)),
      log_(std::move(log)) {}
#endif

#if CUWRAP_HAS_NVVM
namespace {

// libNVVM's own wording (nvvmGetErrorString) when it loads; else the generated one.
std::string nvvm_description(nvvmResult code) {
  if (const char* text = nvvm::raw::nvvmGetErrorString(code); text != nullptr && *text != '\0') {
    return text;
  }
  return detail::describe(code);
}

}  // namespace

NvvmError::NvvmError(nvvmResult code, std::string function, std::string log)
    : Error(message_with_log(failure_message(function, to_string(code), nvvm_description(code)),
                             log)),
      code_(code),
      name_(to_string(code)),
      function_(std::move(function)),
      log_(std::move(log)) {}
#endif

LoadError::LoadError(std::string library, std::string symbol, const std::string& message)
    : Error(message), library_(std::move(library)), symbol_(std::move(symbol)) {}

std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

UnsupportedError::UnsupportedError(std::string feature, int required, int available,
                                   std::string_view what)
    : Error(feature + " needs CUDA " + version_string(required) + "; " + std::string(what) +
            " is CUDA " + version_string(available)),
      feature_(std::move(feature)),
      required_(required),
      available_(available) {}

UnsupportedError::UnsupportedError(std::string feature, std::string_view requirement)
    : Error(feature + " needs " + std::string(requirement)),
      feature_(std::move(feature)),
      required_(0),
      available_(0) {}

namespace {

std::mutex g_release_handler_mutex;
ReleaseFailureHandler g_release_handler;  // empty: the default (one line on stderr)

void default_release_handler(const ReleaseFailure& failure) {
  std::string message;
  if (failure.message == nullptr) {
    message = failure_message(failure.function, to_string(failure.code),
                              driver_description(failure.code));
  } else if (failure.kind == ReleaseFailureKind::Nvrtc ||
             failure.kind == ReleaseFailureKind::NvJitLink ||
             failure.kind == ReleaseFailureKind::Nvvm) {
    message = failure.message;  // already "function failed: NAME (description)"
  } else {
    message = std::string(failure.function) + " failed: " + failure.message;
  }
  std::fprintf(stderr, "cuwrap: warning: releasing %s: %s\n", failure.object, message.c_str());
}

// Pass `failure` to the installed handler (or the default); never throws.
void deliver(const ReleaseFailure& failure) noexcept {
  try {
    ReleaseFailureHandler handler;
    {
      const std::lock_guard lock(g_release_handler_mutex);
      handler = g_release_handler;
    }
    if (handler) {
      handler(failure);
    } else {
      default_release_handler(failure);
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): a handler must not throw; nothing to do
  }
}

}  // namespace

ReleaseFailureHandler set_release_failure_handler(ReleaseFailureHandler handler) {
  const std::lock_guard lock(g_release_handler_mutex);
  std::swap(handler, g_release_handler);
  return handler;
}

namespace detail {

void report_release_failure(CUresult code, const char* function, const char* object) noexcept {
  if (code == CUDA_SUCCESS || code == CUDA_ERROR_DEINITIALIZED) {
    return;
  }
  deliver(ReleaseFailure{code, function, object});
}

namespace {

// Report an NVRTC or nvJitLink status, named and described, as a failure of `kind`.
template <class Status>
void report_library_status(Status code, ReleaseFailureKind kind, const char* function,
                           const char* object) noexcept {
  try {
    const std::string message = failure_message(function, to_string(code), describe(code));
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, kind, static_cast<int>(code),
                           message.c_str()});
  } catch (...) {  // no memory for the message: report without it
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, kind, static_cast<int>(code),
                           "out of memory composing the message"});
  }
}

}  // namespace

void report_release_failure(nvrtcResult code, const char* function, const char* object) noexcept {
  if (code != NVRTC_SUCCESS) {
    report_library_status(code, ReleaseFailureKind::Nvrtc, function, object);
  }
}

#if CUWRAP_HAS_NVJITLINK
void report_release_failure(nvJitLinkResult code, const char* function,
                            const char* object) noexcept {
  if (code != NVJITLINK_SUCCESS) {
    report_library_status(code, ReleaseFailureKind::NvJitLink, function, object);
  }
}
#endif

#if CUWRAP_HAS_NVVM
void report_release_failure(nvvmResult code, const char* function, const char* object) noexcept {
  if (code != NVVM_SUCCESS) {
    report_library_status(code, ReleaseFailureKind::Nvvm, function, object);
  }
}
#endif

void report_current_exception(const char* function, const char* object) noexcept {
  if (!std::current_exception()) {  // called outside a catch block: `throw;` would terminate
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, ReleaseFailureKind::Exception, 0,
                           "unknown exception"});
    return;
  }
  try {
    throw;
  } catch (const DriverError& e) {
    report_release_failure(e.code(), e.function().c_str(), object);
  } catch (const NvrtcError& e) {
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, e.function().c_str(), object,
                           ReleaseFailureKind::Nvrtc, static_cast<int>(e.code()), e.what()});
#if CUWRAP_HAS_NVJITLINK
  } catch (const NvJitLinkError& e) {
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, e.function().c_str(), object,
                           ReleaseFailureKind::NvJitLink, static_cast<int>(e.code()), e.what()});
#endif
#if CUWRAP_HAS_NVVM
  } catch (const NvvmError& e) {
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, e.function().c_str(), object,
                           ReleaseFailureKind::Nvvm, static_cast<int>(e.code()), e.what()});
#endif
  } catch (const LoadError& e) {
    deliver(ReleaseFailure{CUDA_ERROR_NOT_FOUND, e.symbol().empty() ? function : e.symbol().c_str(),
                           object, ReleaseFailureKind::Load, 0, e.what()});
  } catch (const std::exception& e) {
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, ReleaseFailureKind::Exception, 0,
                           e.what()});
  } catch (...) {  // not derived from std::exception
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, ReleaseFailureKind::Exception, 0,
                           "unknown exception"});
  }
}

namespace {

// Read a program log through the raw entry points; never throws (we are already
// building an exception).
std::string nvrtc_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (program == nullptr || nvrtc::raw::nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS ||
      size <= 1) {
    return {};
  }
  std::string log(size, '\0');
  if (nvrtc::raw::nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) {
    return {};
  }
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

#if CUWRAP_HAS_NVJITLINK
std::string nvjitlink_log(nvJitLinkHandle handle) {
  std::size_t size = 0;
  if (handle == nullptr ||
      nvjitlink::raw::nvJitLinkGetErrorLogSize(handle, &size) != NVJITLINK_SUCCESS || size <= 1) {
    return {};
  }
  std::string log(size, '\0');
  if (nvjitlink::raw::nvJitLinkGetErrorLog(handle, log.data()) != NVJITLINK_SUCCESS) {
    return {};
  }
  log.resize(size - 1);
  return log;
}
#endif

#if CUWRAP_HAS_NVVM
std::string nvvm_log(nvvmProgram program) {
  std::size_t size = 0;
  if (program == nullptr || nvvm::raw::nvvmGetProgramLogSize(program, &size) != NVVM_SUCCESS ||
      size <= 1) {
    return {};
  }
  std::string log(size, '\0');
  if (nvvm::raw::nvvmGetProgramLog(program, log.data()) != NVVM_SUCCESS) {
    return {};
  }
  log.resize(size - 1);
  return log;
}
#endif

}  // namespace

namespace {
thread_local const DriverErrorFrame* t_driver_error_frames = nullptr;
}  // namespace

DriverErrorFrame::DriverErrorFrame(Translate translate) noexcept
    : translate_(translate), outer_(t_driver_error_frames) {
  t_driver_error_frames = this;
}

DriverErrorFrame::~DriverErrorFrame() { t_driver_error_frames = outer_; }

void DriverErrorFrame::translate_failure(CUresult code, const char* function) {
  const DriverErrorFrame* const frames = t_driver_error_frames;
  // A translation that fails itself must not translate again.
  t_driver_error_frames = nullptr;
  struct Restore {
    const DriverErrorFrame* frames;
    ~Restore() { t_driver_error_frames = frames; }
  } restore{frames};
  for (const DriverErrorFrame* frame = frames; frame != nullptr; frame = frame->outer_) {
    frame->translate_(*frame, code, function);
  }
}

namespace {

// A DriverError whose what() says more than the status (DriverError's protected
// constructor); caught as DriverError.
class NotedDriverError : public DriverError {
 public:
  NotedDriverError(CUresult code, const char* function, const std::string& message)
      : DriverError(code, function, message) {}
};

// CUDA_ERROR_INVALID_CONTEXT while this thread has no current context: the usual cause
// when driver calls follow high-level ones, which leave no context current.
bool no_current_context(CUresult code) noexcept {
  if (code != CUDA_ERROR_INVALID_CONTEXT) {
    return false;
  }
  CUcontext current = nullptr;
  return driver::raw::cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == nullptr;
}

}  // namespace

void throw_driver_error(CUresult code, const char* function) {
  DriverErrorFrame::translate_failure(code, function);
  if (no_current_context(code)) [[unlikely]] {
    throw NotedDriverError(
        code, function,
        failure_message(function, to_string(code), driver_description(code)) +
            "; no CUDA context is current on this thread: make one current first "
            "(cuwrap::Device::set_current(), or cuCtxSetCurrent / cuCtxPushCurrent)");
  }
  throw DriverError(code, function);
}

void throw_jit_error(CUresult code, const char* function, std::string error_log) {
  if (error_log.empty()) {
    throw_driver_error(code, function);
  }
  DriverErrorFrame::translate_failure(code, function);
  throw DriverError::with_log(code, function, std::move(error_log));
}

void throw_nvrtc_error(nvrtcResult code, const char* function) { throw NvrtcError(code, function); }

void throw_nvrtc_program_error(nvrtcResult code, const char* function, nvrtcProgram program) {
  throw NvrtcError(code, function, nvrtc_log(program));
}

#if CUWRAP_HAS_NVJITLINK
void throw_nvjitlink_error(nvJitLinkResult code, const char* function) {
  throw NvJitLinkError(code, function);
}

void throw_nvjitlink_handle_error(nvJitLinkResult code, const char* function,
                                  nvJitLinkHandle handle) {
  throw NvJitLinkError(code, function, nvjitlink_log(handle));
}
#endif

#if CUWRAP_HAS_NVVM
void throw_nvvm_error(nvvmResult code, const char* function) { throw NvvmError(code, function); }

void throw_nvvm_program_error(nvvmResult code, const char* function, nvvmProgram program) {
  throw NvvmError(code, function, nvvm_log(program));
}
#endif

}  // namespace detail
}  // namespace cuwrap
