// Version differences between toolkits and drivers. See compat.hpp.
#include "base/compat.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/loader.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/version.hpp>

#include <cstring>

namespace cuwrap::detail {
namespace {

// The ABI version of the bindings' entry point `name` (cudaTypedefs.h), 0 when the
// bindings lack it.
int bindings_abi_version(const char* name) {
  for (const Symbol& symbol : kDriverSymbols) {
    if (std::strcmp(symbol.name, name) == 0) {
      return symbol.version != 0 ? symbol.version : kGeneratedCudaVersion;
    }
  }
  return 0;
}

}  // namespace

bool driver_at_least(int version) { return driver_version() >= version; }

StreamContexts stream_contexts(CUstream stream) {
#if CUDA_VERSION >= 12050
  // Toolkit 12.5, driver 12.5.
  static const bool has_v2 = driver_at_least(12050);
  if (has_v2) {
    const auto contexts = driver::cuStreamGetCtx_v2(stream);
    return {contexts.pCtx, contexts.pGreenCtx};
  }
#endif
  return {driver::cuStreamGetCtx(stream), nullptr};
}

CUdevice stream_device(CUstream stream) {
#if CUDA_VERSION >= 12080
  // Toolkit 12.8, driver 12.8.
  static const bool has_stream_device = driver_at_least(12080);
  if (has_stream_device) {
    return driver::cuStreamGetDevice(stream);
  }
#endif
  StreamContexts contexts = stream_contexts(stream);
  if (contexts.context == nullptr && contexts.green != nullptr) {
    contexts.context = driver::cuCtxFromGreenCtx(contexts.green);  // toolkit/driver 12.4
  }
  return context_device(contexts.context);
}

CUdevice context_device(CUcontext context) {
#if CUDA_VERSION >= 13000
  // Toolkit 13.0, driver 13.0.
  static const bool has_v2 = driver_at_least(13000);
  if (has_v2) {
    return driver::cuCtxGetDevice_v2(context);
  }
#endif
  const ScopedContext scope(context);
  return driver::cuCtxGetDevice();
}

void context_synchronize(CUcontext context) {
#if CUDA_VERSION >= 13000
  // Toolkit 13.0, driver 13.0.
  static const bool has_v2 = driver_at_least(13000);
  if (has_v2) {
    driver::cuCtxSynchronize_v2(context);
    return;
  }
#endif
  const ScopedContext scope(context);
  driver::cuCtxSynchronize();
}

float event_elapsed_ms(CUevent start, CUevent end) {
  using ElapsedTime = CUresult (*)(float*, CUevent, CUevent);
  // Bindings from 13.0 headers carry cuEventElapsedTime_v2 (driver 12.8); an older
  // driver gets the CUDA 2.0 form, resolved once.
  static const ElapsedTime old_form =
      bindings_abi_version("cuEventElapsedTime") > driver_version()
          ? reinterpret_cast<ElapsedTime>(resolve_driver_proc("cuEventElapsedTime", 2000))
          : nullptr;
  if (old_form != nullptr) {
    float milliseconds = 0.0F;
    check(old_form(&milliseconds, start, end), "cuEventElapsedTime");
    return milliseconds;
  }
  return driver::cuEventElapsedTime(start, end);
}

}  // namespace cuwrap::detail
