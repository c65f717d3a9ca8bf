// A stand-in for libcuda that answers as an older driver, for the loader's and the
// fallbacks' tests without a GPU (loaded through CUWRAP_LIBCUDA).
//
// It exports cuDriverGetVersion (CUWRAP_FAKE_DRIVER_VERSION, default 12040) and
// cuGetProcAddress_v2, which hands out a few stubs by name and ABI version, the way the
// real driver does: the newest variant not newer than the version asked for, and
// nothing for a version newer than the driver's. cuwrap_fake_max_requested_version()
// tells the test the newest version ever asked for, which must never exceed the driver's.
// The stubs model one device (handle 100) with one context (kFakeContext), whose ID
// (cuCtxGetId) a test may change to model a context made where a destroyed one was, and
// kernels whose handle's low 4 bits are their parameter count (0xBAD: a broken one).
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

CUcontext const kFakeContext = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0xC0));
constexpr CUdevice kFakeDevice = 100;

thread_local CUcontext t_current = nullptr;
CUcontext const kOtherContext = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0xD0));
constexpr std::uintptr_t kBrokenKernel = 0xBAD;

int g_max_requested = 0;
CUcontext g_synchronized_with = nullptr;
unsigned long long g_context_id = 1;
int g_get_function_calls = 0;
int g_context_calls = 0;  // cuCtxGetCurrent, cuCtxSetCurrent and cuCtxGetId
int g_fail_set_current_in = 0;  // > 0: that cuCtxSetCurrent from now fails (1: the next)
int g_launches = 0;
CUfunction g_launched = nullptr;

int fake_driver_version() {
  const char* text = std::getenv("CUWRAP_FAKE_DRIVER_VERSION");
  return text != nullptr ? std::atoi(text) : 12040;
}

CUresult fake_init(unsigned int /*flags*/) { return CUDA_SUCCESS; }
CUresult fake_device_get_count(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult fake_device_get(CUdevice* device, int ordinal) {
  if (ordinal != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = kFakeDevice;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_get_current(CUcontext* context) {
  ++g_context_calls;
  *context = t_current;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_set_current(CUcontext context) {
  ++g_context_calls;
  if (g_fail_set_current_in > 0 && --g_fail_set_current_in == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  t_current = context;
  return CUDA_SUCCESS;
}
// The old forms work on the current context only.
CUresult fake_ctx_get_device(CUdevice* device) {
  if (t_current != kFakeContext) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *device = kFakeDevice;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_synchronize() {
  if (t_current != kFakeContext) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  g_synchronized_with = t_current;
  return CUDA_SUCCESS;
}
// What a 12.8 driver answers for any stream (only asked for when the driver is 12.8+).
CUresult fake_stream_get_device(CUstream /*stream*/, CUdevice* device) {
  *device = kFakeDevice;
  return CUDA_SUCCESS;
}
CUresult fake_stream_get_ctx(CUstream /*stream*/, CUcontext* context) {
  *context = kFakeContext;
  return CUDA_SUCCESS;
}
// Two variants with one signature: the test tells them apart by the result.
CUresult fake_event_elapsed_v1(float* milliseconds, CUevent /*start*/, CUevent /*end*/) {
  *milliseconds = 1.5F;
  return CUDA_SUCCESS;
}
CUresult fake_event_elapsed_v2(float* milliseconds, CUevent /*start*/, CUevent /*end*/) {
  *milliseconds = 2.5F;
  return CUDA_SUCCESS;
}

CUresult context_id_of(CUcontext context, unsigned long long* id) {
  if (context == kFakeContext) {
    *id = g_context_id;
    return CUDA_SUCCESS;
  }
  if (context == kOtherContext) {
    *id = 77;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_CONTEXT_IS_DESTROYED;
}
CUresult fake_ctx_get_id(CUcontext context, unsigned long long* id) {
  ++g_context_calls;
  return context_id_of(context, id);
}
CUresult fake_primary_ctx_retain(CUcontext* context, CUdevice device) {
  if (device != kFakeDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *context = kFakeContext;
  return CUDA_SUCCESS;
}
CUresult fake_kernel_get_name(const char** name, CUkernel /*kernel*/) {
  *name = "fake_kernel";
  return CUDA_SUCCESS;
}
// Like the driver: a current context is needed, and an index past the last parameter
// is CUDA_ERROR_INVALID_VALUE.
CUresult fake_kernel_get_param_info(CUkernel kernel, std::size_t index, std::size_t* offset,
                                    std::size_t* size) {
  const auto bits = reinterpret_cast<std::uintptr_t>(kernel);
  if (bits == kBrokenKernel) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (t_current == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (index >= (bits & 0xFU)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *offset = 8 * index;
  if (size != nullptr) {
    *size = 8;
  }
  return CUDA_SUCCESS;
}
// The kernel's function in the current context: 0xF000 plus the context's ID.
CUresult fake_kernel_get_function(CUfunction* function, CUkernel /*kernel*/) {
  unsigned long long id = 0;
  if (t_current == nullptr || context_id_of(t_current, &id) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ++g_get_function_calls;
  *function = reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(0xF000 + id));
  return CUDA_SUCCESS;
}

CUresult fake_launch_kernel(CUfunction function, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void**, void**) {
  ++g_launches;
  g_launched = function;
  return CUDA_SUCCESS;
}

// As the driver measured on an H100: a null globalStrides is CUDA_ERROR_INVALID_VALUE
// even for rank 1, which needs no stride. Otherwise the rank and the first stride are
// recorded for the test and the map is left zero.
cuuint32_t g_encoded_rank = 0;
cuuint64_t g_encoded_stride0 = 0;
CUresult fake_tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType, cuuint32_t rank,
                                      void*, const cuuint64_t*, const cuuint64_t* strides,
                                      const cuuint32_t*, const cuuint32_t*,
                                      CUtensorMapInterleave, CUtensorMapSwizzle,
                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  if (map == nullptr || strides == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  g_encoded_rank = rank;
  g_encoded_stride0 = strides[0];
  return CUDA_SUCCESS;
}
// Copies: cuMemcpyAsync counts its calls; the two shapes of cuMemcpyBatchAsync record
// which one ran (12080: with failIdx, 13000: without), the copies and the attribute runs.
int g_memcpy_async_calls = 0;
#if CUDA_VERSION >= 12080  // older headers have no batch copy
int g_batch_form = 0;
std::size_t g_batch_count = 0;
std::size_t g_batch_runs = 0;
CUmemcpyAttributes g_batch_first{};
CUmemcpyAttributes g_batch_last{};

#endif
CUresult fake_memcpy_async(CUdeviceptr /*dst*/, CUdeviceptr /*src*/, std::size_t /*size*/,
                           CUstream /*stream*/) {
  ++g_memcpy_async_calls;
  return CUDA_SUCCESS;
}
#if CUDA_VERSION >= 12080
CUresult record_batch(int form, std::size_t count, const CUmemcpyAttributes* attrs,
                      std::size_t runs) {
  g_batch_form = form;
  g_batch_count = count;
  g_batch_runs = runs;
  if (runs > 0) {
    g_batch_first = attrs[0];
    g_batch_last = attrs[runs - 1];
  }
  return CUDA_SUCCESS;
}
CUresult fake_memcpy_batch_12080(CUdeviceptr* /*dsts*/, CUdeviceptr* /*srcs*/,
                                 std::size_t* /*sizes*/, std::size_t count,
                                 CUmemcpyAttributes* attrs, std::size_t* /*attrsIdxs*/,
                                 std::size_t runs, std::size_t* /*failIdx*/,
                                 CUstream /*stream*/) {
  return record_batch(12080, count, attrs, runs);
}
CUresult fake_memcpy_batch_13000(CUdeviceptr* /*dsts*/, CUdeviceptr* /*srcs*/,
                                 std::size_t* /*sizes*/, std::size_t count,
                                 CUmemcpyAttributes* attrs, std::size_t* /*attrsIdxs*/,
                                 std::size_t runs, CUstream /*stream*/) {
  return record_batch(13000, count, attrs, runs);
}
#endif

// cuMemAlloc hands out addresses from 0x10000 up; each call records the context that was
// current. Frees and stream syncs are numbered in one sequence, so a test sees their order.
CUdeviceptr g_next_alloc = 0x10000;
CUcontext g_alloc_context = nullptr;
int g_allocs = 0;
int g_sequence = 0;
int g_last_free_seq = 0;
CUdeviceptr g_last_freed = 0;
int g_last_sync_seq = 0;
CUstream g_last_synced = nullptr;
CUresult fake_mem_alloc(CUdeviceptr* ptr, std::size_t size) {
  if (t_current == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ++g_allocs;
  g_alloc_context = t_current;
  *ptr = g_next_alloc;
  g_next_alloc += (size + 0xFFF) & ~std::size_t{0xFFF};
  return CUDA_SUCCESS;
}
CUresult fake_mem_free(CUdeviceptr ptr) {
  g_last_freed = ptr;
  g_last_free_seq = ++g_sequence;
  return CUDA_SUCCESS;
}
CUresult fake_stream_synchronize(CUstream stream) {
  g_last_synced = stream;
  g_last_sync_seq = ++g_sequence;
  return CUDA_SUCCESS;
}

struct Entry {
  const char* name;
  int version;  // the ABI version this variant was introduced with
  void* fn;
};

template <typename F>
void* as_pointer(F* fn) {
  return reinterpret_cast<void*>(fn);
}

const Entry kEntries[] = {
    {"cuInit", 2000, as_pointer(fake_init)},
    {"cuDeviceGetCount", 2000, as_pointer(fake_device_get_count)},
    {"cuDeviceGet", 2000, as_pointer(fake_device_get)},
    {"cuCtxGetCurrent", 4000, as_pointer(fake_ctx_get_current)},
    {"cuCtxSetCurrent", 4000, as_pointer(fake_ctx_set_current)},
    {"cuCtxGetDevice", 2000, as_pointer(fake_ctx_get_device)},
    {"cuCtxSynchronize", 2000, as_pointer(fake_ctx_synchronize)},
    {"cuStreamGetCtx", 9020, as_pointer(fake_stream_get_ctx)},
    {"cuCtxGetId", 12000, as_pointer(fake_ctx_get_id)},
    {"cuDevicePrimaryCtxRetain", 7000, as_pointer(fake_primary_ctx_retain)},
    {"cuKernelGetName", 12030, as_pointer(fake_kernel_get_name)},
    {"cuKernelGetParamInfo", 12040, as_pointer(fake_kernel_get_param_info)},
    {"cuKernelGetFunction", 12000, as_pointer(fake_kernel_get_function)},
    {"cuLaunchKernel", 4000, as_pointer(fake_launch_kernel)},
    {"cuEventElapsedTime", 2000, as_pointer(fake_event_elapsed_v1)},
    {"cuEventElapsedTime", 12080, as_pointer(fake_event_elapsed_v2)},
    {"cuTensorMapEncodeTiled", 12000, as_pointer(fake_tensor_map_encode_tiled)},
    {"cuStreamGetDevice", 12080, as_pointer(fake_stream_get_device)},
    {"cuMemcpyAsync", 4000, as_pointer(fake_memcpy_async)},
    {"cuMemAlloc", 3020, as_pointer(fake_mem_alloc)},
    {"cuMemFree", 3020, as_pointer(fake_mem_free)},
    {"cuStreamSynchronize", 2000, as_pointer(fake_stream_synchronize)},
#if CUDA_VERSION >= 12080
    {"cuMemcpyBatchAsync", 12080, as_pointer(fake_memcpy_batch_12080)},
    {"cuMemcpyBatchAsync", 13000, as_pointer(fake_memcpy_batch_13000)},
#endif
};

}  // namespace

extern "C" {

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = fake_driver_version();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t /*flags*/,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
  if (cudaVersion > g_max_requested) {
    g_max_requested = cudaVersion;
  }
  *pfn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cudaVersion > fake_driver_version()) {
    status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  } else {
    int best = 0;
    for (const Entry& entry : kEntries) {
      if (std::strcmp(entry.name, symbol) == 0 && entry.version <= cudaVersion &&
          entry.version > best) {
        best = entry.version;
        *pfn = entry.fn;
        status = CU_GET_PROC_ADDRESS_SUCCESS;
      }
    }
  }
  if (symbolStatus != nullptr) {
    *symbolStatus = status;
  }
  return status == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/// The newest ABI version cuGetProcAddress_v2 was asked for so far.
int cuwrap_fake_max_requested_version() { return g_max_requested; }

/// The context the last cuCtxSynchronize ran in (nullptr: none ran).
CUcontext cuwrap_fake_synchronized_context() { return g_synchronized_with; }

/// The one context the fake knows.
CUcontext cuwrap_fake_context() { return kFakeContext; }

/// Another context, valid for cuCtxGetId (ID 77) only.
CUcontext cuwrap_fake_other_context() { return kOtherContext; }

/// Give the fake's context another ID, as a context made where a destroyed one was.
void cuwrap_fake_set_context_id(unsigned long long id) { g_context_id = id; }

/// How many calls of cuCtxGetCurrent, cuCtxSetCurrent and cuCtxGetId cuwrap made so far.
int cuwrap_fake_context_calls() { return g_context_calls; }

/// Make the `n`th cuCtxSetCurrent from now (1: the next) fail with CUDA_ERROR_INVALID_CONTEXT.
void cuwrap_fake_fail_ctx_set_current_in(int n) { g_fail_set_current_in = n; }

/// How many launches ran so far, and the function of the last.
int cuwrap_fake_launches() { return g_launches; }
CUfunction cuwrap_fake_launched_function() { return g_launched; }

/// The rank and the first globalStrides entry of the last successful cuTensorMapEncodeTiled.
unsigned cuwrap_fake_encoded_rank() { return g_encoded_rank; }
unsigned long long cuwrap_fake_encoded_stride0() { return g_encoded_stride0; }

/// How many times cuKernelGetFunction succeeded so far.
int cuwrap_fake_get_function_calls() { return g_get_function_calls; }

/// How many cuMemcpyAsync calls ran so far.
int cuwrap_fake_memcpy_async_calls() { return g_memcpy_async_calls; }

/// How many cuMemAlloc calls succeeded, and the context current at the last.
int cuwrap_fake_allocs() { return g_allocs; }
CUcontext cuwrap_fake_alloc_context() { return g_alloc_context; }
/// The pointer the last cuMemFree freed, and that free's place in the free/sync sequence.
CUdeviceptr cuwrap_fake_last_freed() { return g_last_freed; }
int cuwrap_fake_last_free_sequence() { return g_last_free_seq; }
/// The stream the last cuStreamSynchronize synced, and its place in the sequence.
CUstream cuwrap_fake_last_synced() { return g_last_synced; }
int cuwrap_fake_last_sync_sequence() { return g_last_sync_seq; }

#if CUDA_VERSION >= 12080
/// Which cuMemcpyBatchAsync ran last (12080 or 13000; 0: none), with how many copies and
/// attribute runs, and the first and last run's attributes.
int cuwrap_fake_batch_form() { return g_batch_form; }
std::size_t cuwrap_fake_batch_count() { return g_batch_count; }
std::size_t cuwrap_fake_batch_runs() { return g_batch_runs; }
CUmemcpyAttributes cuwrap_fake_batch_first_attributes() { return g_batch_first; }
CUmemcpyAttributes cuwrap_fake_batch_last_attributes() { return g_batch_last; }
#endif

}  // extern "C"
