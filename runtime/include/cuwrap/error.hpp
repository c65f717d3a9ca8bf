// Exception types of cuwrap and the status checks that the generated wrappers call.
//
// Every exception derives from cuwrap::Error (a std::runtime_error). The check_*
// helpers are inline and branch once on success; building and throwing the exception
// happens out of line in runtime/src/bindings/error.cpp so the hot path stays small.
#pragma once

// The C headers of the wrapped libraries and CUWRAP_HAS_<LIB> (1 where the build has the
// library's header and bindings): generated from cuwrap-gen's table of libraries.
#include <cuwrap/detail/handler.hpp>
#include <cuwrap/detail/libraries.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace cuwrap {

/// Base class of every exception cuwrap throws for a CUDA status or a load failure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Base of the exceptions for a non-success status of a wrapped library (DriverError,
/// NvrtcError, NvJitLinkError, NvvmError and the others of <cuwrap/detail/library_errors.hpp>,
/// one per library of cuwrap-gen's table): the status, its name, the C function that
/// returned it and the library's log of the failure.
///
/// what() reads "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", followed by
/// the log on the next lines when there is one. Each derived type's code() returns the
/// status in the library's own type.
class StatusError : public Error {
 public:
  /// The whole what() of an error that says more than its status.
  struct Message {
    std::string text;  ///< what() of the error
  };

  /// Return which library's status this is.
  ReleaseFailureKind library() const noexcept { return library_; }
  /// Return the status as an integer (code() of the derived type returns it typed).
  int status() const noexcept { return status_; }
  /// Return the enumerator name, e.g. "CUDA_ERROR_INVALID_VALUE".
  const std::string& name() const noexcept { return name_; }
  /// Return the C function that failed, e.g. "cuMemAlloc".
  const std::string& function() const noexcept { return function_; }
  /// Return the library's log of the failure (a program or link log), empty when none.
  const std::string& log() const noexcept { return log_; }

 protected:
  /// Build the error for `status` (named `name`, described by `description`) of `library`
  /// returned by `function`, with `log` (may be empty) after the message.
  StatusError(ReleaseFailureKind library, int status, std::string_view name, std::string function,
              std::string_view description, std::string log);
  /// Build the error with `message` as what().
  StatusError(ReleaseFailureKind library, int status, std::string_view name, std::string function,
              Message message);

 private:
  ReleaseFailureKind library_;
  int status_;
  std::string name_;
  std::string function_;
  std::string log_;
};

}  // namespace cuwrap

// The exception type of each library (DriverError, NvrtcError, ...) and the checks the
// generated wrappers call: generated from cuwrap-gen's table of libraries.
#include <cuwrap/detail/library_errors.hpp>

namespace cuwrap {

/// Thrown when a cuwrap object is used after the CUDA context it belongs to was destroyed.
///
/// The context may have been destroyed by cuwrap (a green Context whose last owner let
/// go) or outside it (cuCtxDestroy, cuGreenCtxDestroy on a handle cuwrap gave out). The
/// object's handle is not used again. code() is CUDA_ERROR_CONTEXT_IS_DESTROYED and
/// function() the operation, e.g. "Stream::sync"; a `catch (const DriverError&)` catches
/// it. The message names the object and the context: "Stream 0x55d0c1a0: its context
/// (id 7) was destroyed (Stream::sync)".
class ContextDestroyedError : public DriverError {
 public:
  /// Build the error for `object` (e.g. "Stream 0x55d0c1a0"), whose context with ID
  /// `context_id` was destroyed, used by `operation`; `detail` (may be empty) says how it
  /// was found ("cuStreamSynchronize answered CUDA_ERROR_INVALID_CONTEXT").
  ContextDestroyedError(std::string object, unsigned long long context_id,
                        const std::string& operation, const std::string& detail = {});
  /// Return the object that was used, e.g. "Stream 0x55d0c1a0".
  const std::string& object() const noexcept { return object_; }
  /// Return the destroyed context's ID (cuCtxGetId).
  unsigned long long context_id() const noexcept { return context_id_; }

 private:
  std::string object_;
  unsigned long long context_id_;
};

/// Thrown when a CUDA library or one of its entry points cannot be loaded.
class LoadError : public Error {
 public:
  /// Build the error; `symbol` is empty when the library itself is missing.
  LoadError(std::string library, std::string symbol, const std::string& message);
  /// Return the library that was being loaded, e.g. "libcuda.so.1".
  const std::string& library() const noexcept { return library_; }
  /// Return the entry point that was missing, or "" when the library was missing.
  const std::string& symbol() const noexcept { return symbol_; }

 private:
  std::string library_;
  std::string symbol_;
};

/// Thrown when the toolkit cuwrap was built against, or the installed driver, is too old
/// for a feature ("switch conditional graph nodes need CUDA 12.8; the driver is 12.4").
class UnsupportedError : public Error {
 public:
  /// Build the error for `feature`, which needs CUDA `required` (e.g. 12080) where only
  /// `available` is there; `what` names the toolkit or the driver as the one short of it.
  UnsupportedError(std::string feature, int required, int available, std::string_view what);
  /// Build the error for `feature`, which needs `requirement` that is not a CUDA version
  /// ("DLPack interop needs dlpack/dlpack.h at configure time ..."); both versions are 0.
  UnsupportedError(std::string feature, std::string_view requirement);
  /// Return what was asked for, e.g. "switch conditional graph nodes".
  const std::string& feature() const noexcept { return feature_; }
  /// Return the CUDA version the feature needs, e.g. 12080.
  int required_version() const noexcept { return required_; }
  /// Return the toolkit's or the driver's version, whichever falls short.
  int available_version() const noexcept { return available_; }

 private:
  std::string feature_;
  int required_;
  int available_;
};

/// A failure that a destructor (or another operation that must not throw) could not
/// report by throwing: a release call that returned an error, or threw.
///
/// The pointers are valid only during the handler's call: copy what is kept.
struct ReleaseFailure {
  /// The status the release call returned. For a failure that is not a driver status:
  /// CUDA_ERROR_NOT_FOUND for a LoadError (what the raw:: forms return for a missing
  /// library or entry point), CUDA_ERROR_UNKNOWN for everything else.
  CUresult code;
  const char* function;  ///< the C function, e.g. "cuStreamDestroy", or the operation
  const char* object;    ///< what was being released, e.g. "Stream"
  /// Which kind of failure this is (added members have defaults: aggregate
  /// initialisation with the first three members still works).
  ReleaseFailureKind kind = ReleaseFailureKind::Driver;
  /// The status of a failure of a library other than the driver (an nvrtcResult for
  /// ReleaseFailureKind::Nvrtc, ...); else 0.
  int status = 0;
  /// The reason in words for a failure that is not a driver status (the exception's
  /// what(), or "NVRTC_ERROR_... (description)"); nullptr for a driver status.
  const char* message = nullptr;
};

/// Called for every ReleaseFailure; must not throw (an exception is caught and dropped).
///
/// A plain function (or a lambda without captures) taking `const ReleaseFailure&`, or a
/// `{callback, user_data}` pair whose callback also takes the `void*` user data, for a
/// handler with state. Not a std::function: see detail/handler.hpp.
///
/// Example:
/// \code
///   std::atomic<int> failures{0};
///   cuwrap::set_release_failure_handler(
///       {[](const cuwrap::ReleaseFailure&, void* count) {
///          ++*static_cast<std::atomic<int>*>(count);
///        }, &failures});
/// \endcode
using ReleaseFailureHandler = detail::Handler<const ReleaseFailure&>;

/// Install `handler` for release failures and return the previous one.
///
/// The default prints one line to stderr ("cuwrap: warning: releasing Stream:
/// cuStreamDestroy failed: CUDA_ERROR_... (...)"), as cuda.core turns such failures into
/// warnings. An empty handler restores the default. Thread-safe.
ReleaseFailureHandler set_release_failure_handler(ReleaseFailureHandler handler);

/// Return a version such as 12080 as text, "12.8".
std::string version_string(int version);

namespace detail {

/// Report a failure of `library`'s release `function` with `status`, whose message is
/// `message` ("function failed: NAME (description)"), to the release-failure handler;
/// never throws. Called by the generated report_release_failure overloads.
void report_status_failure(ReleaseFailureKind library, int status, const char* function,
                           const char* object, const char* message) noexcept;

/// Return "function failed: NAME (description)" (without the parentheses when
/// `description` is empty): the first line of every StatusError's what().
std::string failure_message(std::string_view function, std::string_view name,
                            std::string_view description);

/// Report the exception being handled (call it inside a catch block), whatever its type:
/// a DriverError with its status and function, another StatusError (NvrtcError, ...)
/// with its status, a LoadError as CUDA_ERROR_NOT_FOUND, anything else as CUDA_ERROR_UNKNOWN with
/// its what() ("unknown exception" for one not derived from std::exception). `function`
/// names the operation for an exception that names no C function. Never throws.
void report_current_exception(const char* function, const char* object) noexcept;

/// Return true on success, false when `code` is the answer status `answer`, else throw
/// (with the log of `log`, a program or link handle, where one is given).
template <class Status, class... Log>
inline bool check_answer(Status code, Status answer, const char* function, Log... log) {
  if (code == answer) {
    return false;
  }
  check(code, function, log...);
  return true;
}

}  // namespace detail
}  // namespace cuwrap
