// A fake "real driver" for the interposer's CPU tests: a handful of entry points behind
// a cuGetProcAddress that answers like the real one (the newest variant not newer than
// the version asked for; VERSION_NOT_SUFFICIENT for an entry newer than that). Handles
// are distinct heap blocks; device memory is a counter. It checks nothing else.
#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<CUdeviceptr> g_next_address{0x10000};
int g_fake_context = 0;

template <typename Handle>
CUresult make_handle(Handle* out) {
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = reinterpret_cast<Handle>(std::malloc(16));
  return CUDA_SUCCESS;
}

template <typename Handle>
CUresult free_handle(Handle handle) {
  if (handle == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  std::free(reinterpret_cast<void*>(handle));
  return CUDA_SUCCESS;
}

CUresult fake_init(unsigned int) { return CUDA_SUCCESS; }
CUresult fake_driver_get_version(int* version) {
  if (version == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult fake_device_get_count(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult fake_device_get(CUdevice* device, int ordinal) {
  if (ordinal != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult fake_primary_retain(CUcontext* context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(&g_fake_context);
  return CUDA_SUCCESS;
}
CUresult fake_primary_release(CUdevice) { return CUDA_SUCCESS; }
CUresult fake_ctx_set_current(CUcontext) { return CUDA_SUCCESS; }
CUresult fake_ctx_get_current(CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(&g_fake_context);
  return CUDA_SUCCESS;
}
// Every context the fake hands out has one ID (streams remember theirs).
CUresult fake_ctx_get_id(CUcontext, unsigned long long* id) {
  *id = 1;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_push(CUcontext) { return CUDA_SUCCESS; }
CUresult fake_ctx_pop(CUcontext* context) {
  if (context != nullptr) {
    *context = reinterpret_cast<CUcontext>(&g_fake_context);
  }
  return CUDA_SUCCESS;
}
CUresult fake_priority_range(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult fake_mem_alloc(CUdeviceptr* dptr, size_t bytes) {
  if (dptr == nullptr || bytes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *dptr = g_next_address.fetch_add((bytes + 255) / 256 * 256);
  return CUDA_SUCCESS;
}
CUresult fake_mem_free(CUdeviceptr dptr) {
  return dptr != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult fake_stream_create(CUstream* stream, unsigned int) { return make_handle(stream); }
CUresult fake_stream_create_priority(CUstream* stream, unsigned int, int) {
  return make_handle(stream);
}
CUresult fake_stream_destroy(CUstream stream) { return free_handle(stream); }
CUresult fake_stream_synchronize(CUstream) { return CUDA_SUCCESS; }
CUresult fake_event_create(CUevent* event, unsigned int) { return make_handle(event); }
CUresult fake_event_destroy(CUevent event) { return free_handle(event); }
// cuStreamGetCtx before and after CUDA 12.5 re-versioned it: the answers tell which ran.
CUresult fake_stream_get_ctx_v1(CUstream, CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(0x1111);
  return CUDA_SUCCESS;
}
CUresult fake_stream_get_ctx_v2(CUstream, CUcontext* context, CUgreenCtx* green) {
  *context = reinterpret_cast<CUcontext>(0x2222);
  *green = nullptr;
  return CUDA_SUCCESS;
}
CUresult fake_stream_get_device(CUstream, CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}

struct FakeEntry {
  const char* name;
  int version;  // the first CUDA version with this variant
  void* fn;
};

#define CUWRAP_FAKE(name, version, fn) \
  FakeEntry { name, version, reinterpret_cast<void*>(&fn) }
const FakeEntry kFakeEntries[] = {
    CUWRAP_FAKE("cuInit", 2000, fake_init),
    CUWRAP_FAKE("cuDriverGetVersion", 2020, fake_driver_get_version),
    CUWRAP_FAKE("cuDeviceGetCount", 2000, fake_device_get_count),
    CUWRAP_FAKE("cuDeviceGet", 2000, fake_device_get),
    CUWRAP_FAKE("cuDevicePrimaryCtxRetain", 7000, fake_primary_retain),
    CUWRAP_FAKE("cuDevicePrimaryCtxRelease", 11000, fake_primary_release),
    CUWRAP_FAKE("cuCtxSetCurrent", 4000, fake_ctx_set_current),
    CUWRAP_FAKE("cuCtxGetCurrent", 4000, fake_ctx_get_current),
    CUWRAP_FAKE("cuCtxGetId", 12000, fake_ctx_get_id),
    CUWRAP_FAKE("cuCtxPushCurrent", 4000, fake_ctx_push),
    CUWRAP_FAKE("cuCtxPopCurrent", 4000, fake_ctx_pop),
    CUWRAP_FAKE("cuCtxGetStreamPriorityRange", 5050, fake_priority_range),
    CUWRAP_FAKE("cuMemAlloc", 3020, fake_mem_alloc),
    CUWRAP_FAKE("cuMemFree", 3020, fake_mem_free),
    CUWRAP_FAKE("cuStreamCreate", 2000, fake_stream_create),
    CUWRAP_FAKE("cuStreamCreateWithPriority", 5050, fake_stream_create_priority),
    CUWRAP_FAKE("cuStreamDestroy", 4000, fake_stream_destroy),
    CUWRAP_FAKE("cuStreamSynchronize", 2000, fake_stream_synchronize),
    CUWRAP_FAKE("cuEventCreate", 2000, fake_event_create),
    CUWRAP_FAKE("cuEventDestroy", 4000, fake_event_destroy),
    CUWRAP_FAKE("cuStreamGetCtx", 9020, fake_stream_get_ctx_v1),
    CUWRAP_FAKE("cuStreamGetCtx", 12050, fake_stream_get_ctx_v2),
    CUWRAP_FAKE("cuStreamGetDevice", 12080, fake_stream_get_device),
};
#undef CUWRAP_FAKE

}  // namespace

#undef cuGetProcAddress
extern "C" {

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  return fake_init(flags);
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  return fake_driver_get_version(version);
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int version, cuuint64_t /*flags*/,
    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const FakeEntry* best = nullptr;
  bool newer_exists = false;
  for (const auto& e : kFakeEntries) {
    if (std::strcmp(e.name, symbol) != 0) {
      continue;
    }
    if (e.version > version) {
      newer_exists = true;
    } else if (best == nullptr || e.version > best->version) {
      best = &e;
    }
  }
  *pfn = best != nullptr ? best->fn : nullptr;
  if (status != nullptr) {
    *status = best != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
              : newer_exists  ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return best != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
