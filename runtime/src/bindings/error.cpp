// Construction of cuwrap's exceptions: names and descriptions come from the generated
// tables, so messages read well even when the driver is missing.
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/jit_options.hpp>

#include "bindings/driver_error_frame.hpp"
#include "bindings/driver_log.hpp"

#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

namespace cuwrap {
namespace {

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

StatusError::StatusError(ReleaseFailureKind library, int status, std::string_view name,
                         std::string function, std::string_view description, std::string log)
    : Error(message_with_log(detail::failure_message(function, name, description), log)),
      library_(library),
      status_(status),
      name_(name),
      function_(std::move(function)),
      log_(std::move(log)) {}

StatusError::StatusError(ReleaseFailureKind library, int status, std::string_view name,
                         std::string function, Message message)
    : Error(message.text),
      library_(library),
      status_(status),
      name_(name),
      function_(std::move(function)) {}

ContextDestroyedError::ContextDestroyedError(std::string object, unsigned long long context_id,
                                             const std::string& operation,
                                             const std::string& detail)
    : DriverError(
          CUDA_ERROR_CONTEXT_IS_DESTROYED, operation,
          Message{object + ": its context (id " + std::to_string(context_id) + ") was destroyed (" +
                  operation + (detail.empty() ? "" : "; " + detail) + ")"}),
      object_(std::move(object)),
      context_id_(context_id) {}

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
    message = detail::failure_message(failure.function, to_string(failure.code),
                                      driver_description(failure.code));
  } else if (failure.kind != ReleaseFailureKind::Load &&
             failure.kind != ReleaseFailureKind::Exception) {
    message = failure.message;  // a library's status: "function failed: NAME (description)"
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

void report_status_failure(ReleaseFailureKind library, int status, const char* function,
                           const char* object, const char* message) noexcept {
  deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, function, object, library, status, message});
}

std::string failure_message(std::string_view function, std::string_view name,
                            std::string_view description) {
  std::string message = std::string(function) + " failed: " + std::string(name);
  if (!description.empty()) {
    message += " (" + std::string(description) + ")";
  }
  return message;
}

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
  } catch (const StatusError& e) {
    deliver(ReleaseFailure{CUDA_ERROR_UNKNOWN, e.function().c_str(), object, e.library(),
                           e.status(), e.what()});
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
  NotedDriverError(CUresult code, const char* function, std::string message)
      : DriverError(code, function, Message{std::move(message)}) {}
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
  // The driver's own words about the failure (12.9+ drivers), read only here.
  throw DriverError(code, function, driver_log_since_last_failure());
}

void throw_jit_error(CUresult code, const char* function, std::string error_log) {
  if (error_log.empty()) {
    throw_driver_error(code, function);
  }
  DriverErrorFrame::translate_failure(code, function);
  throw DriverError::with_log(code, function, std::move(error_log));
}

}  // namespace detail
}  // namespace cuwrap
