// The generated low-level layer alone: compile a kernel with NVRTC, load it with the
// driver, launch it and check the result, with the C API's names and the typed forms
// (outputs returned, failures thrown). Releases go through raw:: calls, which never
// throw, from a destructor.
//
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>

#include <cstddef>
#include <iostream>
#include <string>
#include <vector>

namespace drv = cuwrap::driver;
namespace rtc = cuwrap::nvrtc;

namespace {

constexpr const char* kScaleSource = R"(
extern "C" __global__ void scale(float* data, float factor, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";

// What the example acquired, released in reverse order with raw:: calls (no throwing
// from a destructor, whatever happened before).
struct Resources {
  CUdevice device = 0;
  bool context_retained = false;
  CUmodule module = nullptr;
  CUdeviceptr memory = 0;

  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources() {
    if (memory != 0) {
      drv::raw::cuMemFree(memory);
    }
    if (module != nullptr) {
      drv::raw::cuModuleUnload(module);
    }
    if (context_retained) {
      drv::raw::cuDevicePrimaryCtxRelease(device);
    }
  }
};

// Compile `source` for `arch` ("sm_90") to a CUBIN with NVRTC.
std::vector<char> compile_to_cubin(const char* source, const std::string& arch) {
  nvrtcProgram program = rtc::nvrtcCreateProgram(source, "scale.cu", 0, nullptr, nullptr);
  const std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str()};
  try {
    rtc::nvrtcCompileProgram(program, 1, options);  // a failure carries NVRTC's log
  } catch (...) {
    rtc::raw::nvrtcDestroyProgram(&program);
    throw;
  }
  std::vector<char> cubin = rtc::nvrtcGetCUBIN(program);  // size query + fetch in one call
  rtc::raw::nvrtcDestroyProgram(&program);
  return cubin;
}

int run() {
  try {
    drv::cuInit(0);
  } catch (const cuwrap::Error& e) {  // LoadError without libcuda, DriverError without a GPU
    std::cout << "cuwrap example skipped: low_level needs a GPU (" << e.what() << ")\n";
    return 0;
  }
  if (drv::cuDeviceGetCount() == 0) {
    std::cout << "cuwrap example skipped: low_level needs a GPU (no CUDA device present)\n";
    return 0;
  }

  Resources r;
  r.device = drv::cuDeviceGet(0);
  const int major =
      drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, r.device);
  const int minor =
      drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, r.device);
  const auto [rtc_major, rtc_minor] = rtc::nvrtcVersion();
  std::cout << "device 0: " << drv::cuDeviceGetName(r.device) << ", sm_" << major << minor
            << "; driver " << drv::cuDriverGetVersion() << "; NVRTC " << rtc_major << '.'
            << rtc_minor << '\n';

  const CUcontext context = drv::cuDevicePrimaryCtxRetain(r.device);
  r.context_retained = true;
  drv::cuCtxSetCurrent(context);
  const auto memory = drv::cuMemGetInfo();  // several outputs: a cuMemGetInfo_result
  std::cout << "memory: " << (memory.free >> 20) << " MiB free of " << (memory.total >> 20)
            << " MiB\n";

  const std::vector<char> cubin =
      compile_to_cubin(kScaleSource, "sm_" + std::to_string(major) + std::to_string(minor));
  r.module = drv::cuModuleLoadData(cubin.data());
  CUfunction scale = drv::cuModuleGetFunction(r.module, "scale");

  // The raw form returns the status instead of throwing.
  CUfunction missing = nullptr;
  const CUresult status = drv::raw::cuModuleGetFunction(&missing, r.module, "no_such_kernel");
  std::cout << "raw::cuModuleGetFunction(\"no_such_kernel\") returned " << status << '\n';
  if (status == CUDA_SUCCESS) {
    std::cerr << "low_level: FAILED: a missing kernel was found\n";
    return 1;
  }

  std::size_t n = 1 << 20;
  float factor = 3.0f;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = static_cast<float>(i % 1024);
  }
  const std::size_t bytes = n * sizeof(float);
  r.memory = drv::cuMemAlloc(bytes);
  drv::cuMemcpyHtoD(r.memory, host.data(), bytes);

  void* arguments[] = {&r.memory, &factor, &n};
  const auto grid = static_cast<unsigned>((n + 255) / 256);
  drv::cuLaunchKernel(scale, grid, 1, 1, 256, 1, 1, 0, nullptr, arguments, nullptr);
  drv::cuCtxSynchronize();

  std::vector<float> result(n);
  drv::cuMemcpyDtoH(result.data(), r.memory, bytes);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (result[i] != host[i] * factor) {
      ++wrong;
    }
  }
  if (wrong != 0) {
    std::cerr << "low_level: FAILED: " << wrong << " of " << n << " values wrong\n";
    return 1;
  }
  std::cout << "low_level: OK (" << n << " values checked)\n";
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const cuwrap::NvrtcError& e) {
    std::cerr << "low_level: FAILED: " << e.what() << '\n' << e.log() << '\n';
  } catch (const cuwrap::LoadError& e) {
    if (e.symbol().empty() && e.library().rfind("libnvrtc", 0) == 0) {  // not installed
      std::cout << "cuwrap example skipped: low_level needs " << e.library() << " (" << e.what()
                << ")\n";
      return 0;
    }
    std::cerr << "low_level: FAILED: " << e.what() << '\n';
  } catch (const cuwrap::Error& e) {
    std::cerr << "low_level: FAILED: " << e.what() << '\n';
  }
  return 1;
}
