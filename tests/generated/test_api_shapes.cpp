// The shapes of the generated layer (docs/low-level.md): representative wrappers checked at compile
// time (a wrong shape fails the build), and the examples of 1.2 spelled as users write them.
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include "toolkit_libraries.hpp"

#include <string>
#include <type_traits>
#include <vector>

namespace drv = cuwrap::driver;
namespace rtc = cuwrap::nvrtc;
namespace njl = cuwrap::nvjitlink;

template <class Expected, class Actual>
constexpr bool same = std::is_same_v<Expected, Actual>;

// One output: returned by value.
static_assert(same<int, decltype(drv::cuDeviceGetCount())>);
static_assert(same<CUdevice, decltype(drv::cuDeviceGet(0))>);
static_assert(
    same<int, decltype(drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, CUdevice{}))>);
static_assert(same<CUdeviceptr, decltype(drv::cuMemAlloc(std::size_t{}))>);
static_assert(same<CUcontext, decltype(drv::cuDevicePrimaryCtxRetain(CUdevice{}))>);
static_assert(same<CUstream, decltype(drv::cuStreamCreate(0u))>);
static_assert(same<CUevent, decltype(drv::cuEventCreate(0u))>);
static_assert(same<float, decltype(drv::cuEventElapsedTime(CUevent{}, CUevent{}))>);
static_assert(same<CUmodule, decltype(drv::cuModuleLoadData(nullptr))>);
static_assert(same<CUfunction, decltype(drv::cuModuleGetFunction(CUmodule{}, ""))>);
static_assert(same<CUgraphExec, decltype(drv::cuGraphInstantiate(CUgraph{}, 0ull))>);
static_assert(same<int, decltype(drv::cuDriverGetVersion())>);
static_assert(same<CUuuid, decltype(drv::cuDeviceGetUuid(CUdevice{}))>);
static_assert(same<CUmemoryPool, decltype(drv::cuDeviceGetDefaultMemPool(CUdevice{}))>);
static_assert(same<nvrtcProgram, decltype(rtc::nvrtcCreateProgram("", "", 0, nullptr, nullptr))>);
static_assert(same<std::size_t, decltype(rtc::nvrtcGetPTXSize(nvrtcProgram{}))>);
static_assert(same<nvJitLinkHandle, decltype(njl::nvJitLinkCreate(0u, nullptr))>);
// No output: void.
static_assert(same<void, decltype(drv::cuMemFree(CUdeviceptr{}))>);
static_assert(same<void, decltype(drv::cuInit(0u))>);
static_assert(same<void, decltype(drv::cuStreamSynchronize(CUstream{}))>);
static_assert(same<void, decltype(drv::cuCtxSetCurrent(CUcontext{}))>);
static_assert(same<void, decltype(rtc::nvrtcCompileProgram(nvrtcProgram{}, 0, nullptr))>);
static_assert(same<void, decltype(njl::nvJitLinkComplete(nvJitLinkHandle{}))>);
// Answer statuses: bool.
static_assert(same<bool, decltype(drv::cuStreamQuery(CUstream{}))>);
static_assert(same<bool, decltype(drv::cuEventQuery(CUevent{}))>);
// Strings and one-call size-query forms.
static_assert(same<std::string, decltype(drv::cuDeviceGetName(CUdevice{}))>);
static_assert(same<std::string, decltype(drv::cuDeviceGetPCIBusId(CUdevice{}))>);
static_assert(same<std::string, decltype(rtc::nvrtcGetPTX(nvrtcProgram{}))>);
static_assert(same<std::string, decltype(rtc::nvrtcGetProgramLog(nvrtcProgram{}))>);
static_assert(same<std::vector<char>, decltype(rtc::nvrtcGetCUBIN(nvrtcProgram{}))>);
static_assert(same<std::vector<char>, decltype(rtc::nvrtcGetLTOIR(nvrtcProgram{}))>);
static_assert(same<std::vector<char>, decltype(njl::nvJitLinkGetLinkedCubin(nvJitLinkHandle{}))>);
static_assert(same<std::string, decltype(njl::nvJitLinkGetLinkedPtx(nvJitLinkHandle{}))>);
static_assert(same<std::string, decltype(njl::nvJitLinkGetErrorLog(nvJitLinkHandle{}))>);
static_assert(same<std::string, decltype(njl::nvJitLinkGetInfoLog(nvJitLinkHandle{}))>);
// Raw forms: the exact C signature and status.
static_assert(same<CUresult, decltype(drv::raw::cuMemAlloc(nullptr, std::size_t{}))>);
static_assert(same<CUresult, decltype(drv::raw::cuStreamQuery(CUstream{}))>);
static_assert(same<nvrtcResult, decltype(rtc::raw::nvrtcGetPTX(nvrtcProgram{}, nullptr))>);
static_assert(same<nvJitLinkResult, decltype(njl::raw::nvJitLinkComplete(nvJitLinkHandle{}))>);
static_assert(noexcept(drv::raw::cuMemAlloc(nullptr, std::size_t{})));
// Several outputs: an aggregate named cuX_result with the C parameter names.
static_assert(same<drv::cuMemGetInfo_result, decltype(drv::cuMemGetInfo())>);
static_assert(same<decltype(drv::cuMemGetInfo_result::free), std::size_t>);
static_assert(same<decltype(drv::cuMemGetInfo_result::total), std::size_t>);
static_assert(same<rtc::nvrtcVersion_result, decltype(rtc::nvrtcVersion())>);
static_assert(same<decltype(drv::cuCtxGetStreamPriorityRange_result::leastPriority), int>);
static_assert(same<decltype(drv::cuCtxGetStreamPriorityRange_result::greatestPriority), int>);

namespace {

// The typed-form examples of the public API documentation, verbatim, in a function that is compiled
// but only called when a GPU is present.
[[maybe_unused]] void api_md_examples(const char* src) {
  int n = cuwrap::driver::cuDeviceGetCount();
  CUdevice d = cuwrap::driver::cuDeviceGet(0);
  int v = cuwrap::driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, d);
  CUdeviceptr p = cuwrap::driver::cuMemAlloc(1024);
  cuwrap::driver::cuMemFree(p);
  auto [free, total] = cuwrap::driver::cuMemGetInfo();
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(src, "k.cu", 0, nullptr, nullptr);
  auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  (void)n;
  (void)v;
  (void)free;
  (void)total;
  (void)prog;
  (void)major;
  (void)minor;
}

TEST(GeneratedShapes, StructuredBindingsOnResults) {
  CUWRAP_REQUIRE_NVRTC();
  auto [major, minor] = rtc::nvrtcVersion();
  const auto r = rtc::nvrtcVersion();
  EXPECT_EQ(r.major, major);
  EXPECT_EQ(r.minor, minor);
}

}  // namespace
