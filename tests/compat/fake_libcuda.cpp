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
// With CUWRAP_FAKE_DEVICES=0 it is a driver of that version on a machine without a GPU
// (cuInit fails with CUDA_ERROR_NO_DEVICE, no device is counted): what the whole suite
// runs on to see an older driver's version without a GPU (scripts/emulated_drivers.sh,
// through the interposer's CUWRAP_EMULATE_DRIVER_VERSION).
#include <cuda.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

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
int g_context_calls = 0;        // cuCtxGetCurrent, cuCtxSetCurrent and cuCtxGetId
int g_fail_set_current_in = 0;  // > 0: that cuCtxSetCurrent from now fails (1: the next)
int g_launches = 0;
CUfunction g_launched = nullptr;

int fake_driver_version() {
  const char* text = std::getenv("CUWRAP_FAKE_DRIVER_VERSION");
  return text != nullptr ? std::atoi(text) : 12040;
}

// CUWRAP_FAKE_DEVICES=0: no device (default: one).
bool fake_has_device() {
  const char* text = std::getenv("CUWRAP_FAKE_DEVICES");
  return text == nullptr || std::atoi(text) != 0;
}

CUresult fake_init(unsigned int /*flags*/) {
  return fake_has_device() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
CUresult fake_device_get_count(int* count) {
  *count = fake_has_device() ? 1 : 0;
  return CUDA_SUCCESS;
}
CUresult fake_device_get(CUdevice* device, int ordinal) {
  if (ordinal != 0 || !fake_has_device()) {
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
// The context stack below the current context (cuCtxPushCurrent, cuCtxPopCurrent).
thread_local std::vector<CUcontext> t_below;
CUresult fake_ctx_push_current(CUcontext context) {
  ++g_context_calls;
  if (context == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  t_below.push_back(t_current);
  t_current = context;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_pop_current(CUcontext* context) {
  ++g_context_calls;
  if (t_current == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (context != nullptr) {
    *context = t_current;
  }
  t_current = t_below.empty() ? nullptr : t_below.back();
  if (!t_below.empty()) {
    t_below.pop_back();
  }
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
// The driver's log buffer (CUDA 12.9: cuLogsCurrent, cuLogsDumpToMemory): each failed
// cuCtxSynchronize writes a line, as the real driver writes its reasons.
std::mutex g_log_mutex;
std::vector<std::string> g_logs;
int g_log_dumps = 0;

void write_log(std::string line) {
  const std::lock_guard<std::mutex> lock(g_log_mutex);
  g_logs.push_back(std::move(line));
}
#if CUDA_VERSION >= 12090
CUresult fake_logs_current(CUlogIterator* iterator, unsigned int /*flags*/) {
  const std::lock_guard<std::mutex> lock(g_log_mutex);
  *iterator = static_cast<CUlogIterator>(g_logs.size());
  return CUDA_SUCCESS;
}
CUresult fake_logs_dump_to_memory(CUlogIterator* iterator, char* buffer, std::size_t* size,
                                  unsigned int /*flags*/) {
  const std::lock_guard<std::mutex> lock(g_log_mutex);
  ++g_log_dumps;
  std::string text;
  for (std::size_t i = iterator != nullptr ? *iterator : 0; i < g_logs.size(); ++i) {
    text += g_logs[i] + "\n";
  }
  if (iterator != nullptr) {
    *iterator = static_cast<CUlogIterator>(g_logs.size());
  }
  if (text.size() >= *size) {
    *size = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  *size = text.size();
  return CUDA_SUCCESS;
}
#endif
CUresult fake_ctx_synchronize() {
  if (t_current != kFakeContext) {
    write_log("[cuCtxSynchronize] the current context is not the fake's");
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

// Functions, like kernels, have their parameter count in the handle's low 4 bits, each
// parameter 8 bytes (0xBAD: a function the driver has no parameter information for).
CUresult fake_func_get_param_info(CUfunction function, std::size_t index, std::size_t* offset,
                                  std::size_t* size) {
  const auto bits = reinterpret_cast<std::uintptr_t>(function);
  if (bits == kBrokenKernel) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (index >= (bits & 0xFU)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *offset = 8 * index;
  *size = 8;
  return CUDA_SUCCESS;
}

// A launch records the function and its first argument's 8 bytes (0 when it has none, or
// when the fake has no parameter information for the function: then the argument's size
// is unknown, and reading 8 bytes could read past a smaller one).
std::uint64_t g_first_argument = 0;
void record_launch(CUfunction function, void** params) {
  ++g_launches;
  g_launched = function;
  g_first_argument = 0;
  const auto bits = reinterpret_cast<std::uintptr_t>(function);
  if (params != nullptr && params[0] != nullptr && bits != kBrokenKernel && (bits & 0xFU) > 0) {
    std::memcpy(&g_first_argument, params[0], sizeof g_first_argument);
  }
}

CUresult fake_launch_kernel(CUfunction function, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void** params, void**) {
  record_launch(function, params);
  return CUDA_SUCCESS;
}
CUresult fake_launch_kernel_ex(const CUlaunchConfig* config, CUfunction function, void** params,
                               void**) {
  if (config == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  record_launch(function, params);
  return CUDA_SUCCESS;
}

// As the driver measured on an H100: a null globalStrides is CUDA_ERROR_INVALID_VALUE
// even for rank 1, which needs no stride. Otherwise the rank and the first stride are
// recorded for the test and the map is left zero.
cuuint32_t g_encoded_rank = 0;
cuuint64_t g_encoded_stride0 = 0;
CUresult fake_tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType, cuuint32_t rank, void*,
                                      const cuuint64_t*, const cuuint64_t* strides,
                                      const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                      CUtensorMapSwizzle, CUtensorMapL2promotion,
                                      CUtensorMapFloatOOBfill) {
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
                                 std::size_t runs, std::size_t* /*failIdx*/, CUstream /*stream*/) {
  return record_batch(12080, count, attrs, runs);
}
CUresult fake_memcpy_batch_13000(CUdeviceptr* /*dsts*/, CUdeviceptr* /*srcs*/,
                                 std::size_t* /*sizes*/, std::size_t count,
                                 CUmemcpyAttributes* attrs, std::size_t* /*attrsIdxs*/,
                                 std::size_t runs, CUstream /*stream*/) {
  return record_batch(13000, count, attrs, runs);
}
#endif

// Fills, UUID, attributes and events, for the cuda.core-behaviour tests: the last byte
// fill's value and count, the last event's flags; the UUID is the bytes 0x00..0x0f, an
// attribute answers 1 (yes) unless it is odd-numbered past 100 (0).
int g_memset_d8_calls = 0;
unsigned g_memset_d8_value = 0;
std::size_t g_memset_d8_count = 0;
unsigned g_event_flags = 0;
int g_live_events = 0;
CUresult fake_memset_d8_async(CUdeviceptr /*dst*/, unsigned char value, std::size_t count,
                              CUstream /*stream*/) {
  ++g_memset_d8_calls;
  g_memset_d8_value = value;
  g_memset_d8_count = count;
  return CUDA_SUCCESS;
}
CUresult fake_device_get_uuid(CUuuid* uuid, CUdevice device) {
  if (device != kFakeDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  for (int i = 0; i < 16; ++i) {
    uuid->bytes[i] = static_cast<char>(i);
  }
  return CUDA_SUCCESS;
}
CUresult fake_event_create(CUevent* event, unsigned flags) {
  if (t_current == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  g_event_flags = flags;
  ++g_live_events;
  *event = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(0xE000 + g_live_events));
  return CUDA_SUCCESS;
}
CUresult fake_event_destroy(CUevent /*event*/) {
  --g_live_events;
  return CUDA_SUCCESS;
}
// Events opened from another process's descriptor get handles from 0xF000 on: like the
// driver, the fake does not export such an event again.
constexpr std::uintptr_t kOpenedEvents = 0xF000;
CUresult fake_ipc_open_event_handle(CUevent* event, CUipcEventHandle /*handle*/) {
  if (t_current == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ++g_live_events;
  *event = reinterpret_cast<CUevent>(kOpenedEvents + static_cast<std::uintptr_t>(g_live_events));
  return CUDA_SUCCESS;
}
CUresult fake_ipc_get_event_handle(CUipcEventHandle* handle, CUevent event) {
  if (reinterpret_cast<std::uintptr_t>(event) >= kOpenedEvents) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *handle = CUipcEventHandle{};
  handle->reserved[0] = 1;
  return CUDA_SUCCESS;
}
// IPC imports (tests/compat/test_ipc_import_checks.cpp): a pool imports from any open file
// descriptor but a socket; a pointer import maps an allocation whose size the export
// data's first 8 bytes give (0 or above 2^40: refused), at its own base address, until
// cuMemFreeAsync. As the driver does, importing export data that is already mapped into
// the same pool answers the same address without counting: one cuMemFreeAsync unmaps it,
// a second is CUDA_ERROR_INVALID_VALUE (counted in g_bad_import_frees).
// cuMemGetAddressRange answers for the live imports only. Imports may come from several
// threads at once (one lock).
struct FakeImport {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CUmemoryPool pool = nullptr;
  CUmemPoolPtrExportData data{};
  bool live = false;
};
std::mutex g_import_mutex;
FakeImport g_imports[256];
int g_live_imports = 0;
int g_live_pools = 0;
int g_pointer_imports = 0;   // successful cuMemPoolImportPointer calls
int g_import_frees = 0;      // cuMemFreeAsync calls that unmapped an import
int g_bad_import_frees = 0;  // cuMemFreeAsync calls of no live import

CUresult fake_pool_import_handle(CUmemoryPool* pool, void* handle, CUmemAllocationHandleType type,
                                 unsigned long long /*flags*/) {
  const auto fd = static_cast<int>(reinterpret_cast<std::uintptr_t>(handle));
  struct stat info {};
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || ::fstat(fd, &info) != 0 ||
      S_ISSOCK(info.st_mode)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::lock_guard<std::mutex> lock(g_import_mutex);
  ++g_live_pools;
  *pool = reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x7000 + g_live_pools));
  return CUDA_SUCCESS;
}
// The driver exports only pools this process created; every pool of the fake is imported.
CUresult fake_pool_export(void* /*handle*/, CUmemoryPool /*pool*/,
                          CUmemAllocationHandleType /*type*/, unsigned long long /*flags*/) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_pool_destroy(CUmemoryPool /*pool*/) {
  const std::lock_guard<std::mutex> lock(g_import_mutex);
  --g_live_pools;
  return CUDA_SUCCESS;
}
CUresult fake_pool_import_pointer(CUdeviceptr* ptr, CUmemoryPool pool,
                                  CUmemPoolPtrExportData* data) {
  std::uint64_t size = 0;
  std::memcpy(&size, data->reserved, sizeof(size));
  if (size == 0 || size > (std::uint64_t{1} << 40)) {  // larger than any device's memory
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::lock_guard<std::mutex> lock(g_import_mutex);
  for (const FakeImport& import : g_imports) {
    if (import.live && import.pool == pool && std::memcmp(&import.data, data, sizeof(*data)) == 0) {
      ++g_pointer_imports;
      *ptr = import.base;  // mapped already: the same address, not counted
      return CUDA_SUCCESS;
    }
  }
  for (std::size_t slot = 0; slot < sizeof(g_imports) / sizeof(g_imports[0]); ++slot) {
    FakeImport& import = g_imports[slot];
    if (!import.live) {  // each slot its own 2^40-byte stretch of addresses
      import.base = (static_cast<CUdeviceptr>(slot) + 1) << 40;
      import.size = static_cast<std::size_t>(size);
      import.pool = pool;
      import.data = *data;
      import.live = true;
      ++g_live_imports;
      ++g_pointer_imports;
      *ptr = import.base;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult fake_mem_get_address_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr) {
  const std::lock_guard<std::mutex> lock(g_import_mutex);
  for (const FakeImport& import : g_imports) {
    if (import.live && ptr >= import.base && ptr < import.base + import.size) {
      if (base != nullptr) {
        *base = import.base;
      }
      if (size != nullptr) {
        *size = import.size;
      }
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult fake_mem_free_async(CUdeviceptr ptr, CUstream /*stream*/) {
  const std::lock_guard<std::mutex> lock(g_import_mutex);
  for (FakeImport& import : g_imports) {
    if (import.live && import.base == ptr) {
      import.live = false;
      --g_live_imports;
      ++g_import_frees;
      return CUDA_SUCCESS;
    }
  }
  ++g_bad_import_frees;
  return CUDA_ERROR_INVALID_VALUE;
}

// Device attributes of an H100 SXM, for LaunchConfig::check; the others answer 1 (yes)
// unless odd-numbered past 100 (0), for the cuda.core-behaviour tests.
CUresult fake_device_get_attribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (device != kFakeDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *value = 64;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *value = 2147483647;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    default:  // yes/no answers for the cuda.core-behaviour tests: 0 for odd ones past 100
      *value = (attribute > 100 && attribute % 2 == 1) ? 0 : 1;
      break;
  }
  return CUDA_SUCCESS;
}

// Pointer attributes: [kFakeDeviceMemory, + 4096) is pool memory of the one device (it
// names no context); [kFakeMappedHost, + 4096) is mapped page-locked host memory of
// kFakeContext, which kernels reach at kFakeMappedDevice; any other address is memory the
// driver does not know (values left as they are, as the driver does). As the driver does,
// CU_POINTER_ATTRIBUTE_DEVICE_POINTER is answered for the current context: the address
// above in the memory's own context, another address in kOtherContext (as another
// device's mapping would be), nothing with none current. Counts its calls.
constexpr CUdeviceptr kFakeDeviceMemory = 0xDE0000;
constexpr CUdeviceptr kFakeMappedHost = 0x7F0000;
constexpr CUdeviceptr kFakeMappedDevice = 0xAB0000;
constexpr CUdeviceptr kOtherContextOffset = 0x10000000;
CUmemoryPool const kFakePool = reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x9001));
int g_pointer_attribute_calls = 0;

// The device address of `ptr` (of the known memory above) in the current context.
void answer_device_pointer(CUdeviceptr ptr, void* data) {
  const bool mapped_host = ptr >= kFakeMappedHost && ptr < kFakeMappedHost + 4096;
  const CUdeviceptr own = mapped_host ? ptr - kFakeMappedHost + kFakeMappedDevice : ptr;
  if (t_current == kFakeContext) {
    *static_cast<CUdeviceptr*>(data) = own;
  } else if (t_current == kOtherContext) {
    *static_cast<CUdeviceptr*>(data) = own + kOtherContextOffset;
  }
}

CUresult fake_pointer_get_attributes(unsigned count, CUpointer_attribute* attributes, void** data,
                                     CUdeviceptr ptr) {
  ++g_pointer_attribute_calls;
  const bool pool = ptr >= kFakeDeviceMemory && ptr < kFakeDeviceMemory + 4096;
  const bool mapped_host = ptr >= kFakeMappedHost && ptr < kFakeMappedHost + 4096;
  if (!pool && !mapped_host) {
    return CUDA_SUCCESS;
  }
  const CUdeviceptr base = pool ? kFakeDeviceMemory : kFakeMappedHost;
  for (unsigned i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data[i]) = pool ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data[i]) = 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr*>(data[i]) = base;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<std::size_t*>(data[i]) = 4096;
        break;
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        if (pool) {
          *static_cast<CUmemoryPool*>(data[i]) = kFakePool;
        }
        break;
      case CU_POINTER_ATTRIBUTE_CONTEXT:
        if (mapped_host) {
          *static_cast<CUcontext*>(data[i]) = kFakeContext;
        }
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        answer_device_pointer(ptr, data[i]);
        break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (mapped_host) {
          *static_cast<void**>(data[i]) = reinterpret_cast<void*>(ptr);
        }
        break;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *static_cast<unsigned long long*>(data[i]) = pool ? 77 : 78;
        break;
      default:
        break;
    }
  }
  return CUDA_SUCCESS;
}

// Memory pools: device 100's default pool is kFakeDefaultPool and its current pool too;
// kFakePool (above) is another of its pools. Only device 100 has (read-write) access.
CUmemoryPool const kFakeDefaultPool =
    reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x9000));
CUresult fake_device_get_default_mem_pool(CUmemoryPool* pool, CUdevice device) {
  if (device != kFakeDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *pool = kFakeDefaultPool;
  return CUDA_SUCCESS;
}
CUresult fake_mem_pool_get_access(CUmemAccess_flags* flags, CUmemoryPool pool,
                                  CUmemLocation* location) {
  if (pool != kFakePool && pool != kFakeDefaultPool) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0
               ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
               : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

// Occupancy: blocks of 256 threads, or 128 with more than 48 KiB of dynamic shared memory.
CUresult fake_occupancy_max_potential_block_size(int* min_grid_size, int* block_size,
                                                 CUfunction /*function*/,
                                                 CUoccupancyB2DSize /*smem_for_block*/,
                                                 std::size_t dynamic_shared, int /*limit*/) {
  *block_size = dynamic_shared > std::size_t{48} * 1024 ? 128 : 256;
  *min_grid_size = 132 * (2048 / *block_size);
  return CUDA_SUCCESS;
}

// Kernel attributes: 768 threads per block at most (registers limit it below the
// device's 1024), for LaunchConfig::for_elements_largest_block.
CUresult fake_kernel_get_attribute(int* value, CUfunction_attribute attribute, CUkernel /*kernel*/,
                                   CUdevice device) {
  if (device != kFakeDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  *value = 768;
  return CUDA_SUCCESS;
}

// JIT: an image whose text starts with "bad" fails as PTX that does not compile, writing
// kFakeJitError into the error log the options give (as much as its size allows, the
// size written back); any other loads as module 0xE0, writing kFakeJitInfo into the info
// log and 1.25 ms as the wall time. The last CU_JIT_MAX_REGISTERS value is kept.
constexpr const char* kFakeJitError = "ptxas fatal: fake.ptx, line 3; syntax error";
constexpr const char* kFakeJitInfo = "ptxas info: fake kernel uses 8 registers";
unsigned g_jit_max_registers = 0;
unsigned g_jit_options = 0;

void write_jit_log(const char* text, unsigned n, CUjit_option* options, void** values,
                   CUjit_option buffer_option, CUjit_option size_option) {
  char* buffer = nullptr;
  std::size_t size_index = n;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == buffer_option) {
      buffer = static_cast<char*>(values[i]);
    } else if (options[i] == size_option) {
      size_index = i;
    }
  }
  if (buffer == nullptr || size_index == n) {
    return;
  }
  const auto capacity =
      static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(values[size_index]));
  if (capacity == 0) {
    return;
  }
  const std::size_t length = std::min(std::strlen(text), capacity - 1);
  std::memcpy(buffer, text, length);
  buffer[length] = '\0';
  values[size_index] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(length + 1));
}

CUresult fake_module_load_data_ex(CUmodule* module, const void* image, unsigned n,
                                  CUjit_option* options, void** values) {
  g_jit_options = n;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_MAX_REGISTERS) {
      g_jit_max_registers = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(values[i]));
    }
  }
  if (std::strncmp(static_cast<const char*>(image), "bad", 3) == 0) {
    write_jit_log(kFakeJitError, n, options, values, CU_JIT_ERROR_LOG_BUFFER,
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
    return CUDA_ERROR_INVALID_PTX;
  }
  write_jit_log(kFakeJitInfo, n, options, values, CU_JIT_INFO_LOG_BUFFER,
                CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_WALL_TIME) {
      const float ms = 1.25F;
      std::memcpy(&values[i], &ms, sizeof ms);
    }
  }
  *module = reinterpret_cast<CUmodule>(static_cast<std::uintptr_t>(0xE0));
  return CUDA_SUCCESS;
}

// cuLinkAddData records what it was given: the input's size, its last byte, its name
// and the number of options; it answers CUDA_ERROR_INVALID_IMAGE for an empty input.
std::size_t g_link_data_size = 0;
int g_link_data_last = -1;
std::string g_link_data_name;
unsigned g_link_options = 0;
CUresult fake_link_add_data(CUlinkState, CUjitInputType, void* data, std::size_t size,
                            const char* name, unsigned n, CUjit_option*, void**) {
  g_link_data_size = size;
  g_link_data_last =
      size == 0 ? -1 : static_cast<unsigned char>(static_cast<char*>(data)[size - 1]);
  g_link_data_name = name == nullptr ? "" : name;
  g_link_options = n;
  return size == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}

// An import records the OS handle it was given and answers handle 0x1A.
void* g_imported_os_handle = nullptr;
CUresult fake_mem_import_from_shareable_handle(CUmemGenericAllocationHandle* handle,
                                               void* os_handle, CUmemAllocationHandleType) {
  g_imported_os_handle = os_handle;
  *handle = 0x1A;
  return CUDA_SUCCESS;
}

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
    {"cuCtxPushCurrent", 4000, as_pointer(fake_ctx_push_current)},
    {"cuCtxPopCurrent", 4000, as_pointer(fake_ctx_pop_current)},
    {"cuCtxSynchronize", 2000, as_pointer(fake_ctx_synchronize)},
#if CUDA_VERSION >= 12090
    {"cuLogsCurrent", 12090, as_pointer(fake_logs_current)},
    {"cuLogsDumpToMemory", 12090, as_pointer(fake_logs_dump_to_memory)},
#endif
    {"cuStreamGetCtx", 9020, as_pointer(fake_stream_get_ctx)},
    {"cuCtxGetId", 12000, as_pointer(fake_ctx_get_id)},
    {"cuDevicePrimaryCtxRetain", 7000, as_pointer(fake_primary_ctx_retain)},
    {"cuKernelGetName", 12030, as_pointer(fake_kernel_get_name)},
    {"cuKernelGetParamInfo", 12040, as_pointer(fake_kernel_get_param_info)},
    {"cuKernelGetFunction", 12000, as_pointer(fake_kernel_get_function)},
    {"cuLaunchKernel", 4000, as_pointer(fake_launch_kernel)},
    {"cuLaunchKernelEx", 11060, as_pointer(fake_launch_kernel_ex)},
    {"cuFuncGetParamInfo", 12040, as_pointer(fake_func_get_param_info)},
    {"cuMemImportFromShareableHandle", 10020, as_pointer(fake_mem_import_from_shareable_handle)},
    {"cuModuleLoadDataEx", 2010, as_pointer(fake_module_load_data_ex)},
    {"cuLinkAddData", 6050, as_pointer(fake_link_add_data)},
    {"cuEventElapsedTime", 2000, as_pointer(fake_event_elapsed_v1)},
    {"cuMemAlloc", 3020, as_pointer(fake_mem_alloc)},
    {"cuMemFree", 3020, as_pointer(fake_mem_free)},
    {"cuStreamSynchronize", 2000, as_pointer(fake_stream_synchronize)},
    {"cuEventElapsedTime", 12080, as_pointer(fake_event_elapsed_v2)},
    {"cuTensorMapEncodeTiled", 12000, as_pointer(fake_tensor_map_encode_tiled)},
    {"cuStreamGetDevice", 12080, as_pointer(fake_stream_get_device)},
    {"cuMemcpyAsync", 4000, as_pointer(fake_memcpy_async)},
    {"cuDeviceGetAttribute", 2000, as_pointer(fake_device_get_attribute)},
    {"cuPointerGetAttributes", 7000, as_pointer(fake_pointer_get_attributes)},
    {"cuDeviceGetDefaultMemPool", 11020, as_pointer(fake_device_get_default_mem_pool)},
    {"cuDeviceGetMemPool", 11020, as_pointer(fake_device_get_default_mem_pool)},
    {"cuMemPoolGetAccess", 11020, as_pointer(fake_mem_pool_get_access)},
    {"cuOccupancyMaxPotentialBlockSize", 6050, as_pointer(fake_occupancy_max_potential_block_size)},
    {"cuKernelGetAttribute", 12000, as_pointer(fake_kernel_get_attribute)},
    {"cuMemsetD8Async", 3020, as_pointer(fake_memset_d8_async)},
    {"cuDeviceGetUuid", 11040, as_pointer(fake_device_get_uuid)},
    {"cuEventCreate", 2000, as_pointer(fake_event_create)},
    {"cuEventDestroy", 4000, as_pointer(fake_event_destroy)},
    {"cuMemPoolImportFromShareableHandle", 11020, as_pointer(fake_pool_import_handle)},
    {"cuMemPoolDestroy", 11020, as_pointer(fake_pool_destroy)},
    {"cuMemPoolExportToShareableHandle", 11020, as_pointer(fake_pool_export)},
    {"cuIpcOpenEventHandle", 4010, as_pointer(fake_ipc_open_event_handle)},
    {"cuIpcGetEventHandle", 4010, as_pointer(fake_ipc_get_event_handle)},
    {"cuMemPoolImportPointer", 11020, as_pointer(fake_pool_import_pointer)},
    {"cuMemGetAddressRange", 3020, as_pointer(fake_mem_get_address_range)},
    {"cuMemFreeAsync", 11020, as_pointer(fake_mem_free_async)},
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

/// What the last cuLinkAddData was given: its input's size and last byte (-1: empty),
/// its name and its number of options.
std::size_t cuwrap_fake_link_data_size() { return g_link_data_size; }
int cuwrap_fake_link_data_last() { return g_link_data_last; }
const char* cuwrap_fake_link_data_name() { return g_link_data_name.c_str(); }
unsigned cuwrap_fake_link_options() { return g_link_options; }

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
/// How many times cuPointerGetAttributes was called.
int cuwrap_fake_pointer_attribute_calls() { return g_pointer_attribute_calls; }
CUfunction cuwrap_fake_launched_function() { return g_launched; }
/// The OS handle the last cuMemImportFromShareableHandle was given.
void* cuwrap_fake_imported_os_handle() { return g_imported_os_handle; }

/// The first 8 bytes of the last launch's first argument (0: it had none).
unsigned long long cuwrap_fake_first_argument() { return g_first_argument; }

/// The rank and the first globalStrides entry of the last successful cuTensorMapEncodeTiled.
unsigned cuwrap_fake_encoded_rank() { return g_encoded_rank; }
unsigned long long cuwrap_fake_encoded_stride0() { return g_encoded_stride0; }

/// How many times cuKernelGetFunction succeeded so far.
int cuwrap_fake_get_function_calls() { return g_get_function_calls; }

/// How many cuMemsetD8Async calls ran so far, and the last one's byte and count.
int cuwrap_fake_memset_d8_calls() { return g_memset_d8_calls; }
unsigned cuwrap_fake_memset_d8_value() { return g_memset_d8_value; }
std::size_t cuwrap_fake_memset_d8_count() { return g_memset_d8_count; }

/// The flags of the last cuEventCreate, and how many events are alive.
unsigned cuwrap_fake_event_flags() { return g_event_flags; }
int cuwrap_fake_live_events() { return g_live_events; }
/// How many pointer imports (cuMemPoolImportPointer) are not yet freed, and how many
/// imported pools are not yet destroyed.
int cuwrap_fake_live_imports() { return g_live_imports; }
int cuwrap_fake_live_pools() { return g_live_pools; }
/// How many cuMemPoolImportPointer calls succeeded, how many cuMemFreeAsync calls unmapped
/// an import, and how many freed no live import (CUDA_ERROR_INVALID_VALUE).
int cuwrap_fake_pointer_imports() { return g_pointer_imports; }
int cuwrap_fake_import_frees() { return g_import_frees; }
int cuwrap_fake_bad_import_frees() { return g_bad_import_frees; }

/// The CU_JIT_MAX_REGISTERS value and the number of options of the last cuModuleLoadDataEx.
unsigned cuwrap_fake_jit_max_registers() { return g_jit_max_registers; }
unsigned cuwrap_fake_jit_options() { return g_jit_options; }

/// How many cuLogsDumpToMemory calls ran so far.
int cuwrap_fake_log_dumps() { return g_log_dumps; }

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
