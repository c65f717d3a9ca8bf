// Exception types of cuwrap and the status checks that the generated wrappers call.
//
// Every exception derives from cuwrap::Error (a std::runtime_error). The check_*
// helpers are inline and branch once on success; building and throwing the exception
// happens out of line in runtime/src/bindings/error.cpp so the hot path stays small.
#pragma once

#include <cuda.h>
#include <nvrtc.h>
// CUDA 11.8 has no nvJitLink: the driver and NVRTC parts still build without it.
#if __has_include(<nvJitLink.h>)
#include <nvJitLink.h>
#define CUWRAP_HAS_NVJITLINK 1
#else
#define CUWRAP_HAS_NVJITLINK 0
#endif
// libNVVM's header is optional (header-only toolkit sets lack it): with it and the
// bindings generated from it, NvvmError exists and Program compiles NVVM IR.
#if __has_include(<nvvm.h>) && __has_include(<cuwrap/nvvm_enums.hpp>)
#include <nvvm.h>
#define CUWRAP_HAS_NVVM 1
#else
#define CUWRAP_HAS_NVVM 0
#endif

#include <cuwrap/detail/handler.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace cuwrap {

/// Base class of every exception cuwrap throws for a CUDA status or a load failure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown for a non-success CUresult returned by a driver API call.
class DriverError : public Error {
 public:
  /// Build the error for `code` returned by the driver function `function`.
  DriverError(CUresult code, std::string function);
  /// Return the CUresult that was returned.
  CUresult code() const noexcept { return code_; }
  /// Return the enumerator name, e.g. "CUDA_ERROR_INVALID_VALUE".
  const std::string& name() const noexcept { return name_; }
  /// Return the C function that failed, e.g. "cuMemAlloc".
  const std::string& function() const noexcept { return function_; }
  /// Return the JIT error log of a failed JIT call (cuModuleLoadDataEx, cuLinkAddData,
  /// cuLinkComplete... through their typed forms and the Linker's driver backend), also
  /// at the end of what(); empty for other failures. Every cuwrap exception that carries
  /// a library's log names it log().
  const std::string& log() const noexcept { return log_; }
  /// Return log(); the name before every exception's log was log().
  [[deprecated("use log()")]] const std::string& error_log() const noexcept { return log_; }

  /// Build the error of a failed JIT call: what() is the status's message followed by
  /// `log` on the next lines (when not empty).
  static DriverError with_log(CUresult code, const std::string& function, std::string log);

 protected:
  /// Build the error for `code` in `function` with `message` as what(), for errors that
  /// say more than the status.
  DriverError(CUresult code, std::string function, const std::string& message);

 private:
  CUresult code_;
  std::string name_;
  std::string function_;
  std::string log_;
};

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

/// Thrown for a non-success nvrtcResult; carries the program log of a failed compile.
class NvrtcError : public Error {
 public:
  /// Build the error for `code` returned by `function`, with the program log if any.
  NvrtcError(nvrtcResult code, std::string function, std::string log = {});
  /// Return the nvrtcResult that was returned.
  nvrtcResult code() const noexcept { return code_; }
  /// Return the enumerator name, e.g. "NVRTC_ERROR_COMPILATION".
  const std::string& name() const noexcept { return name_; }
  /// Return the C function that failed, e.g. "nvrtcCompileProgram".
  const std::string& function() const noexcept { return function_; }
  /// Return NVRTC's program log (empty when the failure had none).
  const std::string& log() const noexcept { return log_; }

 private:
  nvrtcResult code_;
  std::string name_;
  std::string function_;
  std::string log_;
};

#if CUWRAP_HAS_NVJITLINK
/// Thrown for a non-success nvJitLinkResult; carries nvJitLink's error log.
class NvJitLinkError : public Error {
 public:
  /// Build the error for `code` returned by `function`, with the error log if any.
  NvJitLinkError(nvJitLinkResult code, std::string function, std::string log = {});
  /// Return the nvJitLinkResult that was returned.
  nvJitLinkResult code() const noexcept { return code_; }
  /// Return the enumerator name, e.g. "NVJITLINK_ERROR_PTX_COMPILE".
  const std::string& name() const noexcept { return name_; }
  /// Return the C function that failed, e.g. "nvJitLinkComplete".
  const std::string& function() const noexcept { return function_; }
  /// Return nvJitLink's error log (empty when the failure had none).
  const std::string& log() const noexcept { return log_; }

 private:
  nvJitLinkResult code_;
  std::string name_;
  std::string function_;
  std::string log_;
};
#endif

#if CUWRAP_HAS_NVVM
/// Thrown for a non-success nvvmResult; carries libNVVM's program log.
///
/// what() reads "nvvmCompileProgram failed: NVVM_ERROR_COMPILATION (<nvvmGetErrorString
/// text>)" followed by the log on the next lines.
class NvvmError : public Error {
 public:
  /// Build the error for `code` returned by `function`, with the program log if any.
  NvvmError(nvvmResult code, std::string function, std::string log = {});
  /// Return the nvvmResult that was returned.
  nvvmResult code() const noexcept { return code_; }
  /// Return the enumerator name, e.g. "NVVM_ERROR_COMPILATION".
  const std::string& name() const noexcept { return name_; }
  /// Return the C function that failed, e.g. "nvvmCompileProgram".
  const std::string& function() const noexcept { return function_; }
  /// Return libNVVM's program log (empty when the failure had none).
  const std::string& log() const noexcept { return log_; }

 private:
  nvvmResult code_;
  std::string name_;
  std::string function_;
  std::string log_;
};

/// The same type under the library's own spelling (libNVVM names itself NVVM).
using NVVMError = NvvmError;
#endif

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

/// What failed in a ReleaseFailure: a driver status, another library's status, or an
/// exception that a release (such as a user memory resource's deallocate) threw.
enum class ReleaseFailureKind {
  Driver,     ///< a CUresult from the driver (a DriverError): `code` is it
  Nvrtc,      ///< an nvrtcResult (e.g. from nvrtcDestroyProgram): `status` is it
  NvJitLink,  ///< an nvJitLinkResult (e.g. from nvJitLinkDestroy): `status` is it
  Nvvm,       ///< an nvvmResult (from nvvmDestroyProgram): `status` is it
  Load,       ///< a LoadError: a library or entry point could not be loaded
  Exception,  ///< any other exception (a std::exception, or one of unknown type)
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
  /// The nvrtcResult, nvJitLinkResult or nvvmResult of an Nvrtc, NvJitLink or Nvvm
  /// failure; else 0.
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

/// Report a failed release to the installed ReleaseFailureHandler; never throws.
/// CUDA_SUCCESS and CUDA_ERROR_DEINITIALIZED (the driver shutting down at process exit,
/// when everything is released anyway) are not reported.
void report_release_failure(CUresult code, const char* function, const char* object) noexcept;

/// Report a failed NVRTC release (e.g. nvrtcDestroyProgram); NVRTC_SUCCESS is not reported.
void report_release_failure(nvrtcResult code, const char* function, const char* object) noexcept;

#if CUWRAP_HAS_NVJITLINK
/// Report a failed nvJitLink release (nvJitLinkDestroy); NVJITLINK_SUCCESS is not reported.
void report_release_failure(nvJitLinkResult code, const char* function,
                            const char* object) noexcept;
#endif

#if CUWRAP_HAS_NVVM
/// Report a failed libNVVM release (nvvmDestroyProgram); NVVM_SUCCESS is not reported.
void report_release_failure(nvvmResult code, const char* function, const char* object) noexcept;
#endif

/// Report the exception being handled (call it inside a catch block), whatever its type:
/// a DriverError with its status and function, NvrtcError, NvJitLinkError and NvvmError
/// with their status, a LoadError as CUDA_ERROR_NOT_FOUND, anything else as CUDA_ERROR_UNKNOWN with
/// its what() ("unknown exception" for one not derived from std::exception). `function`
/// names the operation for an exception that names no C function. Never throws.
void report_current_exception(const char* function, const char* object) noexcept;

[[noreturn]] void throw_driver_error(CUresult code, const char* function);
[[noreturn]] void throw_nvrtc_error(nvrtcResult code, const char* function);
[[noreturn]] void throw_nvrtc_program_error(nvrtcResult code, const char* function,
                                            nvrtcProgram program);
#if CUWRAP_HAS_NVJITLINK
[[noreturn]] void throw_nvjitlink_error(nvJitLinkResult code, const char* function);
[[noreturn]] void throw_nvjitlink_handle_error(nvJitLinkResult code, const char* function,
                                               nvJitLinkHandle handle);
#endif
#if CUWRAP_HAS_NVVM
[[noreturn]] void throw_nvvm_error(nvvmResult code, const char* function);
[[noreturn]] void throw_nvvm_program_error(nvvmResult code, const char* function,
                                           nvvmProgram program);
#endif

/// Throw DriverError unless `code` is CUDA_SUCCESS.
inline void check(CUresult code, const char* function) {
  if (code != CUDA_SUCCESS) [[unlikely]] {
    throw_driver_error(code, function);
  }
}

/// Throw NvrtcError unless `code` is NVRTC_SUCCESS.
inline void check(nvrtcResult code, const char* function) {
  if (code != NVRTC_SUCCESS) [[unlikely]] {
    throw_nvrtc_error(code, function);
  }
}

#if CUWRAP_HAS_NVJITLINK
/// Throw NvJitLinkError unless `code` is NVJITLINK_SUCCESS.
inline void check(nvJitLinkResult code, const char* function) {
  if (code != NVJITLINK_SUCCESS) [[unlikely]] {
    throw_nvjitlink_error(code, function);
  }
}
#endif

/// Throw NvrtcError carrying `program`'s log unless `code` is NVRTC_SUCCESS.
inline void check(nvrtcResult code, const char* function, nvrtcProgram program) {
  if (code != NVRTC_SUCCESS) [[unlikely]] {
    throw_nvrtc_program_error(code, function, program);
  }
}

#if CUWRAP_HAS_NVJITLINK
/// Throw NvJitLinkError carrying `handle`'s error log unless `code` is NVJITLINK_SUCCESS.
inline void check(nvJitLinkResult code, const char* function, nvJitLinkHandle handle) {
  if (code != NVJITLINK_SUCCESS) [[unlikely]] {
    throw_nvjitlink_handle_error(code, function, handle);
  }
}
#endif

#if CUWRAP_HAS_NVVM
/// Throw NvvmError unless `code` is NVVM_SUCCESS.
inline void check(nvvmResult code, const char* function) {
  if (code != NVVM_SUCCESS) [[unlikely]] {
    throw_nvvm_error(code, function);
  }
}

/// Throw NvvmError carrying `program`'s log unless `code` is NVVM_SUCCESS.
inline void check(nvvmResult code, const char* function, nvvmProgram program) {
  if (code != NVVM_SUCCESS) [[unlikely]] {
    throw_nvvm_program_error(code, function, program);
  }
}
#endif

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
