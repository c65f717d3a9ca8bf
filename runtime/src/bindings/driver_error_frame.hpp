// detail::DriverErrorFrame: an operation in progress on this thread that may turn a
// failing driver call into a more specific error (a Stream whose context was destroyed
// turns the driver's CUDA_ERROR_INVALID_CONTEXT into a ContextDestroyedError naming the
// Stream). Generic, so that the errors layer knows nothing of contexts.
#pragma once

#include <cuda.h>

namespace cuwrap::detail {

/// Registered for its lifetime as this thread's innermost frame (a scope guard: frames
/// nest and end in reverse order). When a driver call fails while frames are active,
/// throw_driver_error asks each, innermost first, to translate the status; a frame
/// either throws its own error or returns, and DriverError is thrown when none threw.
class DriverErrorFrame {
 public:
  /// Throw an error for `code` returned by `function`, or return to decline. Must not
  /// call throwing driver wrappers (raw:: calls only).
  using Translate = void (*)(const DriverErrorFrame& frame, CUresult code, const char* function);

  explicit DriverErrorFrame(Translate translate) noexcept;
  DriverErrorFrame(const DriverErrorFrame&) = delete;
  DriverErrorFrame& operator=(const DriverErrorFrame&) = delete;
  ~DriverErrorFrame();

  /// Ask this thread's frames to translate a failure (called by throw_driver_error).
  static void translate_failure(CUresult code, const char* function);

 private:
  Translate translate_;
  const DriverErrorFrame* outer_;
};

}  // namespace cuwrap::detail
