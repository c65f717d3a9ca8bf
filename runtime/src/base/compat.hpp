// What differs between the toolkits (CUDA 12.4 to 13.x) and drivers cuwrap supports, in
// one place. Each helper uses the newest entry point the headers and the installed
// driver both have, and falls back to an older one otherwise; the driver's version is
// read once per process (the loader keeps it), so the choice costs a compare.
//
// Internal to the runtime: the public headers never depend on the toolkit's version.
#pragma once

#include <cuda.h>

namespace cuwrap::detail {

/// The contexts a stream belongs to: a regular context, or (CUDA 12.5+) a green
/// context, in which case `context` is nullptr.
struct StreamContexts {
  CUcontext context = nullptr;  ///< the stream's context; nullptr for a green context's stream
  CUgreenCtx green = nullptr;   ///< the stream's green context, or nullptr
};

/// Return whether the installed driver is at least CUDA `version` (e.g. 12080).
///
/// Throws LoadError when libcuda cannot be loaded.
bool driver_at_least(int version);

/// Return the contexts of `stream`.
///
/// cuStreamGetCtx_v2 (toolkit and driver 12.5) reports green contexts; before it,
/// cuStreamGetCtx (green contexts' streams do not exist on those drivers).
StreamContexts stream_contexts(CUstream stream);

/// Return the device of `stream` (the legacy and per-thread default streams: of the
/// current context).
///
/// cuStreamGetDevice (toolkit and driver 12.8); before it, the device of the stream's
/// context (stream_contexts, then context_device).
CUdevice stream_device(CUstream stream);

/// Return the device of `context`, which need not be current.
///
/// cuCtxGetDevice_v2 (toolkit and driver 13.0); before it, cuCtxGetDevice with
/// `context` made current for the call.
CUdevice context_device(CUcontext context);

/// Wait for all work of `context`, which need not be current.
///
/// cuCtxSynchronize_v2 (toolkit and driver 13.0); before it, cuCtxSynchronize with
/// `context` made current for the call.
void context_synchronize(CUcontext context);

/// Return the milliseconds between two recorded events.
///
/// The bindings' cuEventElapsedTime (the CUDA 12.8 ABI, cuEventElapsedTime_v2, when
/// they come from 13.0 headers); on an older driver, its CUDA 2.0 form, which has the
/// same signature.
float event_elapsed_ms(CUevent start, CUevent end);

}  // namespace cuwrap::detail
