// Blocking operations (cuwrap::copy, the stream-less copies of buffers, spans and pitched
// buffers): the context and the stream they run on, in one place.
#pragma once

#include <cuda.h>

#include <functional>

namespace cuwrap::detail {

/// Run `enqueue` with the legacy default stream (CU_STREAM_LEGACY) of the current
/// context, or of the primary context of the device that `ptr` belongs to when none is
/// current (device 0 for host memory; none is current again afterwards), then
/// synchronise that stream: the work runs after the work queued on the context's
/// blocking streams and is done on return, as cudaMemcpy's.
void run_blocking(CUdeviceptr ptr, CUdeviceptr other, const std::function<void(CUstream)>& enqueue);

}  // namespace cuwrap::detail
