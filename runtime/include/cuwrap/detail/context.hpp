// Driver initialisation and the devices' primary contexts, shared by the whole
// high-level layer.
//
// cuwrap works on primary contexts, as the CUDA runtime and cuda.core do: each
// device's primary context is retained once per process (and never released, so it
// outlives every object that uses it). Operations that need a current context make
// the object's context current for their duration with ScopedContext and restore what
// was current before, none included: no cuwrap call changes the calling thread's
// current context as seen after it returns, except Device::set_current and
// Device::default_stream, whose documented purpose that is.
#pragma once

#include <cuda.h>

namespace cuwrap::detail {

/// Initialise the driver (cuInit(0)) once per process; thread-safe.
///
/// Throws LoadError when libcuda cannot be loaded, DriverError when cuInit fails.
void ensure_driver_initialized();

/// Return the number of CUDA devices (0 when the driver reports no device).
///
/// Initialises the driver first. The count is read once and cached: it cannot change
/// during a process. Throws LoadError when libcuda cannot be loaded.
int device_count();

/// Throw std::invalid_argument unless `ordinal` names an existing device.
///
/// The message names the ordinal and the count ("device 3 does not exist: 1 CUDA
/// device present"). Negative ordinals are rejected before the driver is touched.
void check_device_ordinal(int ordinal);

/// Return the primary context of device `ordinal`, retained once per process.
///
/// Thread-safe; after the first call for a device it costs one atomic load.
/// Throws std::invalid_argument for an ordinal that does not exist.
CUcontext primary_context(int ordinal);

/// Return the context the caller chose for device `ordinal`: the one current on the
/// calling thread when it belongs to that device (a regular or green context the caller
/// made current), else the device's primary context. What allocations and queries that
/// work "in the current context" use, so that they follow the caller's context.
CUcontext context_for_device(int ordinal);

/// Retain device `ordinal`'s primary context anew after cuDevicePrimaryCtxReset, whose
/// old handle names a destroyed context, and return the new handle (Device::reset).
CUcontext renew_primary_context(int ordinal);

/// Return the ordinal of the device behind the driver handle `device`.
int ordinal_of(CUdevice device);

/// Return the context current on this thread, or nullptr when none is.
CUcontext current_context();

/// Return the ordinal of the device of `context`.
int device_of_context(CUcontext context);

/// Make device `ordinal`'s primary context current on this thread if no context is,
/// and leave it current (for Device::default_stream only, which documents it).
void ensure_current_context(int ordinal);

/// Return the process-unique ID of `context` (cuCtxGetId, driver 12.0): unlike the
/// handle's address, it is never reused by a context created after `context` is
/// destroyed. Throws DriverError when `context` is no longer valid.
unsigned long long context_id(CUcontext context);

/// Make a context current for the lifetime of this object.
///
/// When `context` is already current nothing happens (one cuCtxGetCurrent). Otherwise
/// it is made current and, on destruction, the previously current context is
/// restored, none included (one cuCtxSetCurrent each way). Not copyable or movable: it
/// is a scope guard.
class ScopedContext {
 public:
  /// Make `context` current until the end of the scope.
  explicit ScopedContext(CUcontext context);
  /// Make device `ordinal`'s primary context current until the end of the scope.
  explicit ScopedContext(int ordinal);
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  /// Restore the context that was current before (never throws).
  ~ScopedContext();

 private:
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

/// Keep the current context for the lifetime of this object or, when none is current,
/// make device `ordinal`'s primary context current until the end of the scope (then
/// none is current again). For calls that work in "the current context".
class ScopedCurrentOrPrimary {
 public:
  explicit ScopedCurrentOrPrimary(int ordinal);
  ScopedCurrentOrPrimary(const ScopedCurrentOrPrimary&) = delete;
  ScopedCurrentOrPrimary& operator=(const ScopedCurrentOrPrimary&) = delete;
  /// Make none current again if this object made a context current (never throws).
  ~ScopedCurrentOrPrimary();
  /// Return the context current in the scope.
  CUcontext context() const noexcept { return context_; }

 private:
  CUcontext context_ = nullptr;
  bool restore_ = false;
};

}  // namespace cuwrap::detail
