// Representative uses of the generated wrappers, compiled (not run) by
// test_toolkits.cpp with -Wall -Wextra -Wpedantic -Werror, with and without
// CUDA_API_PER_THREAD_DEFAULT_STREAM.
#include <cuwrap/driver.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include <iostream>
#include <string>
#include <vector>

#define CUWRAP_DEVICE_ATTRIBUTE(name, enumerator) \
  [[maybe_unused]] constexpr CUdevice_attribute name = enumerator;
namespace device_attributes {
#include <cuwrap/detail/device_attributes.inc>
}
#undef CUWRAP_DEVICE_ATTRIBUTE

#define CUWRAP_FUNCTION_ATTRIBUTE(name, enumerator) \
  [[maybe_unused]] constexpr CUfunction_attribute name = enumerator;
namespace function_attributes {
#include <cuwrap/detail/function_attributes.inc>
}
#undef CUWRAP_FUNCTION_ATTRIBUTE

void use_wrappers(CUstream s, CUevent start, CUevent stop, const char* src) {
  int n = cuwrap::driver::cuDeviceGetCount();
  CUdevice d = cuwrap::driver::cuDeviceGet(0);
  int warp = cuwrap::driver::cuDeviceGetAttribute(device_attributes::warp_size, d);
  int regs = 0;
  static_cast<void>(function_attributes::num_regs);
  CUdeviceptr p = cuwrap::driver::cuMemAlloc(1024);
  auto [free, total] = cuwrap::driver::cuMemGetInfo();
  cuwrap::driver::cuMemcpyHtoD(p, &regs, sizeof regs);
  cuwrap::driver::cuMemFree(p);
  bool done = cuwrap::driver::cuStreamQuery(s);
  float ms = cuwrap::driver::cuEventElapsedTime(start, stop);
  std::string name = cuwrap::driver::cuDeviceGetName(d);
  std::string bus = cuwrap::driver::cuDeviceGetPCIBusId(d);
  CUresult status = cuwrap::driver::raw::cuMemAlloc(&p, 16);

  auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(src, "k.cu", 0, nullptr, nullptr);
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 0, nullptr);
  std::string ptx = cuwrap::nvrtc::nvrtcGetPTX(prog);
  std::string log = cuwrap::nvrtc::nvrtcGetProgramLog(prog);
  std::vector<char> cubin = cuwrap::nvrtc::nvrtcGetCUBIN(prog);
  cuwrap::nvrtc::nvrtcDestroyProgram(&prog);

  nvJitLinkHandle h = cuwrap::nvjitlink::nvJitLinkCreate(0, nullptr);
  cuwrap::nvjitlink::nvJitLinkAddData(h, NVJITLINK_INPUT_CUBIN, cubin.data(), cubin.size(), "k");
  cuwrap::nvjitlink::nvJitLinkComplete(h);
  std::vector<char> linked = cuwrap::nvjitlink::nvJitLinkGetLinkedCubin(h);
  std::string errors = cuwrap::nvjitlink::nvJitLinkGetErrorLog(h);
  cuwrap::nvjitlink::nvJitLinkDestroy(&h);

  std::cout << n << warp << free << total << done << ms << name << bus << status << major << minor
            << ptx << log << linked.size() << errors << CUDA_ERROR_OUT_OF_MEMORY
            << cuwrap::to_string(NVRTC_ERROR_COMPILATION)
            << cuwrap::detail::describe(NVJITLINK_ERROR_INTERNAL) << '\n';
}
