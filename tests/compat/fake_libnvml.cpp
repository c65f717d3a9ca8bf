// A stand-in for libnvidia-ml with fixed answers, for cuwrap::system's tests without a GPU
// (loaded through CUWRAP_LIBNVML). Built only where nvml.h is found (CUWRAP_HAS_NVML).
//
// It models two GPUs in NVML's order:
//   index 0, "GPU-ffffffff-...": a GPU CUDA does not see (hidden by CUDA_VISIBLE_DEVICES);
//            every reading is NVML_ERROR_NOT_SUPPORTED but the utilization, which is
//            NVML_ERROR_GPU_IS_LOST (an error that is not "not supported");
//   index 1, kCudaUuid: the fake libcuda's one device (its UUID is bytes 0..15), every
//            reading supported, two compute processes, NVLink links 0 and 1 (1 active).
// Every call before nvmlInit_v2 fails with NVML_ERROR_UNINITIALIZED, as NVML's do;
// cuwrap_fake_nvml_init_calls() counts the nvmlInit_v2 calls.
#include <nvml.h>

#include <cstring>
#include <string>
#include <type_traits>

namespace {

struct FakeGpu {
  const char* uuid;
  const char* name;
  bool supported;  // false: NVML_ERROR_NOT_SUPPORTED for every reading
};

constexpr const char* kCudaUuid = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";

FakeGpu g_gpus[] = {
    {"GPU-ffffffff-ffff-ffff-ffff-ffffffffffff", "Fake Hidden GPU", false},
    {kCudaUuid, "Fake GPU", true},
};
constexpr unsigned int kGpuCount = 2;

int g_init_calls = 0;

nvmlDevice_st* as_handle(FakeGpu* gpu) { return reinterpret_cast<nvmlDevice_st*>(gpu); }

template <class Handle>
nvmlDevice_st* raw_handle(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>) {
    return handle;
  } else {
    return handle.handle;
  }
}

template <class Handle = nvmlDevice_t>
Handle to_handle(nvmlDevice_st* device) {
  if constexpr (std::is_pointer_v<Handle>) {
    return device;
  } else {
    return Handle{device};
  }
}

// The fake GPU behind `device`, or nullptr for a handle the fake never handed out.
FakeGpu* gpu_of(nvmlDevice_t device) {
  nvmlDevice_st* raw = raw_handle(device);
  for (FakeGpu& gpu : g_gpus) {
    if (as_handle(&gpu) == raw) {
      return &gpu;
    }
  }
  return nullptr;
}

// The status of a reading of `device`: NVML_SUCCESS where `gpu` answers it.
nvmlReturn_t reading(nvmlDevice_t device, FakeGpu** gpu = nullptr) {
  if (g_init_calls == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  FakeGpu* found = gpu_of(device);
  if (found == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (gpu != nullptr) {
    *gpu = found;
  }
  return found->supported ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t copy_string(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) {
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::strcpy(out, text);
  return NVML_SUCCESS;
}

template <class T>
nvmlReturn_t answer(nvmlDevice_t device, T* out, T value) {
  const nvmlReturn_t status = reading(device);
  if (status == NVML_SUCCESS) {
    *out = value;
  }
  return status;
}

}  // namespace

extern "C" {

int cuwrap_fake_nvml_init_calls() { return g_init_calls; }

nvmlReturn_t nvmlInit_v2() {
  ++g_init_calls;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown() { return NVML_SUCCESS; }

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    default:
      return "fake NVML error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return g_init_calls == 0 ? NVML_ERROR_UNINITIALIZED : copy_string("580.65.06", version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return g_init_calls == 0 ? NVML_ERROR_UNINITIALIZED
                           : copy_string("13.580.65.06", version, length);
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  if (g_init_calls == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  return pid == 4242 ? copy_string("fake_trainer", name, length) : NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_calls == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  *count = kGpuCount;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (g_init_calls == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  if (index >= kGpuCount) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = to_handle(as_handle(&g_gpus[index]));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (g_init_calls == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  for (FakeGpu& gpu : g_gpus) {
    if (std::strcmp(gpu.uuid, uuid) == 0) {
      *device = to_handle(as_handle(&gpu));
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  FakeGpu* gpu = nullptr;
  const nvmlReturn_t status = reading(device, &gpu);
  if (status == NVML_ERROR_UNINITIALIZED || status == NVML_ERROR_INVALID_ARGUMENT) {
    return status;
  }
  *index = static_cast<unsigned int>(gpu - g_gpus);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FakeGpu* gpu = nullptr;
  const nvmlReturn_t status = reading(device, &gpu);
  if (status == NVML_ERROR_UNINITIALIZED || status == NVML_ERROR_INVALID_ARGUMENT) {
    return status;
  }
  return copy_string(gpu->name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FakeGpu* gpu = nullptr;
  const nvmlReturn_t status = reading(device, &gpu);
  if (status == NVML_ERROR_UNINITIALIZED || status == NVML_ERROR_INVALID_ARGUMENT) {
    return status;
  }
  return copy_string(gpu->uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  const nvmlReturn_t status = reading(device);
  if (status == NVML_SUCCESS) {
    *pci = nvmlPciInfo_t{};
    std::strcpy(pci->busId, "00000000:41:00.0");
  }
  return status;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t /*sensor*/,
                                      unsigned int* temp) {
  return answer(device, temp, 47u);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return answer(device, power, 123456u);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return answer(device, limit, 700000u);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) {
  return answer(device, clock, type == NVML_CLOCK_MEM ? 2619u : 1755u);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* clock) {
  // The video clock's maximum is "not supported" on the fake: one figure of two.
  if (type == NVML_CLOCK_VIDEO && reading(device) == NVML_SUCCESS) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  return answer(device, clock, type == NVML_CLOCK_MEM ? 2619u : 1980u);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* rates) {
  const nvmlReturn_t status = reading(device);
  if (status == NVML_ERROR_NOT_SUPPORTED) {
    return NVML_ERROR_GPU_IS_LOST;
  }
  return answer(device, rates, nvmlUtilization_t{87, 35});
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return answer(device, memory, nvmlMemory_t{80ull << 30, 60ull << 30, 20ull << 30});
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return answer(device, gen, 4u);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return answer(device, width, 8u);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return answer(device, gen, 5u);
}

nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return answer(device, gen, 5u);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return answer(device, width, 16u);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                  nvmlEnableState_t* pending) {
  const nvmlReturn_t status = reading(device);
  if (status == NVML_SUCCESS) {
    *current = NVML_FEATURE_ENABLED;
    *pending = NVML_FEATURE_DISABLED;
  }
  return status;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  return answer(device, reasons,
                static_cast<unsigned long long>(nvmlClocksEventReasonSwPowerCap |
                                                nvmlClocksThrottleReasonHwSlowdown));
}

nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                      unsigned long long* reasons) {
  return answer(device, reasons, static_cast<unsigned long long>(nvmlClocksEventReasonAll));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  const nvmlReturn_t status = reading(device);
  if (status != NVML_SUCCESS) {
    return status;
  }
  const nvmlProcessInfo_t processes[] = {
      {4242, 1ull << 30, 0xFFFFFFFFu, 0xFFFFFFFFu},
      {4343, static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE), 1, 0},
  };
  const unsigned int needed = 2;
  if (*count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = needed;
  std::memcpy(infos, processes, sizeof processes);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  const nvmlReturn_t status = reading(device);
  if (status == NVML_SUCCESS) {
    *current = NVML_DEVICE_MIG_DISABLE;
    *pending = NVML_DEVICE_MIG_ENABLE;
  }
  return status;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* active) {
  const nvmlReturn_t status = reading(device);
  if (status != NVML_SUCCESS) {
    return status;
  }
  if (link > 1) {
    return NVML_ERROR_INVALID_ARGUMENT;  // the fake GPU has links 0 and 1
  }
  *active = link == 1 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

}  // extern "C"
