// The generated driver bindings on a real GPU (skipped with a reason without one).
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>
#include <cuwrap/version.hpp>

#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "host_gate.hpp"
#include "toolkit_libraries.hpp"

namespace drv = cuwrap::driver;

namespace {

// A context for device 0 for the duration of a test.
class GeneratedDriverGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CUWRAP_REQUIRE_GPU();
    device_ = drv::cuDeviceGet(0);
    context_ = drv::cuDevicePrimaryCtxRetain(device_);
    drv::cuCtxSetCurrent(context_);
  }
  void TearDown() override {
    if (context_ != nullptr) {
      drv::raw::cuDevicePrimaryCtxRelease(device_);
    }
  }
  CUdevice device_{};
  CUcontext context_{};
};

std::vector<char> cubin_for(const char* source, CUdevice device) {
  const int major = drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  const int minor = drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(source, "k.cu", 0, nullptr, nullptr);
  const char* options[] = {arch.c_str()};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 1, options);
  std::vector<char> cubin = cuwrap::nvrtc::nvrtcGetCUBIN(prog);
  cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog);
  return cubin;
}

TEST_F(GeneratedDriverGpu, DeviceCountNameAndAttributes) {
  EXPECT_GE(drv::cuDeviceGetCount(), 1);
  const std::string name = drv::cuDeviceGetName(device_);
  EXPECT_FALSE(name.empty());
  EXPECT_EQ(name.find('\0'), std::string::npos);
  EXPECT_EQ(drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, device_), 32);
  EXPECT_GT(drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_), 0);
  auto [free_bytes, total_bytes] = drv::cuMemGetInfo();
  EXPECT_GT(total_bytes, 0u);
  EXPECT_LE(free_bytes, total_bytes);
  EXPECT_GT(drv::cuDeviceTotalMem(device_), 0u);
  int raw_count = -1;
  ASSERT_EQ(drv::raw::cuDeviceGetCount(&raw_count), CUDA_SUCCESS);
  EXPECT_EQ(raw_count, drv::cuDeviceGetCount());
}

// Names the driver re-versioned after the header's prototype (cuCtxSynchronize and
// cuCtxGetDevice gained a context parameter in 13.0, cuStreamGetCtx a green-context one
// in 12.5) must still call the ABI the header declares.
TEST_F(GeneratedDriverGpu, ReversionedEntryPointsCallTheDeclaredAbi) {
  drv::cuCtxSynchronize();
  EXPECT_EQ(drv::cuCtxGetDevice(), device_);
  EXPECT_EQ(drv::cuCtxGetCurrent(), context_);
  const CUstream stream = drv::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(drv::cuStreamGetCtx(stream), context_);
  // The newer forms exist from toolkit and driver 12.5 and 13.0 on.
#if CUDA_VERSION >= 12050
  if (cuwrap::driver_version() >= 12050) {
    const auto both = drv::cuStreamGetCtx_v2(stream);
    EXPECT_EQ(both.pCtx, context_);
  }
#endif
#if CUDA_VERSION >= 13000
  if (cuwrap::driver_version() >= 13000) {
    drv::cuCtxSynchronize_v2(context_);
    EXPECT_EQ(drv::cuCtxGetDevice_v2(context_), device_);
  }
#endif
  // cuGraphInstantiate is #defined to cuGraphInstantiateWithFlags.
  const CUgraph graph = drv::cuGraphCreate(0);
  (void)drv::cuGraphAddEmptyNode(graph, nullptr, 0);
  const CUgraphExec exec = drv::cuGraphInstantiate(graph, 0);
  drv::cuGraphLaunch(exec, stream);
  drv::cuStreamSynchronize(stream);
  drv::cuGraphExecDestroy(exec);
  drv::cuGraphDestroy(graph);
  drv::cuStreamDestroy(stream);
}

TEST_F(GeneratedDriverGpu, InvalidDeviceThrowsDriverError) {
  try {
    (void)drv::cuDeviceGet(drv::cuDeviceGetCount() + 7);
    FAIL() << "an invalid ordinal was accepted";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_EQ(e.function(), "cuDeviceGet");
  }
}

TEST_F(GeneratedDriverGpu, AllocateCopyRandomDataRoundTrip) {
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<unsigned char> in(kBytes);
  std::mt19937 rng(1234);
  for (auto& b : in)
    b = static_cast<unsigned char>(rng());
  const CUdeviceptr p = drv::cuMemAlloc(kBytes);
  drv::cuMemcpyHtoD(p, in.data(), kBytes);
  const CUdeviceptr q = drv::cuMemAlloc(kBytes);
  drv::cuMemcpyDtoD(q, p, kBytes);
  std::vector<unsigned char> out(kBytes, 0);
  drv::cuMemcpyDtoH(out.data(), q, kBytes);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), kBytes), 0);
  drv::cuMemFree(p);
  drv::cuMemFree(q);
}

TEST_F(GeneratedDriverGpu, LaunchNvrtcKernelAndCheckOnHost) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<char> cubin = cubin_for(
      "extern \"C\" __global__ void axpb(int* v, int a, int b, unsigned n) {\n"
      "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) v[i] = a * v[i] + b;\n"
      "}\n",
      device_);
  const CUmodule module = drv::cuModuleLoadData(cubin.data());
  const CUfunction fn = drv::cuModuleGetFunction(module, "axpb");
  constexpr unsigned kN = 10000;
  std::vector<int> host(kN);
  std::mt19937 rng(99);
  for (auto& v : host)
    v = static_cast<int>(rng() % 100000);
  const CUdeviceptr d = drv::cuMemAlloc(kN * sizeof(int));
  const CUstream stream = drv::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  // On the launch's stream: a pageable cuMemcpyHtoD may return before its DMA lands, and a
  // non-blocking stream does not wait for it.
  drv::cuMemcpyHtoDAsync(d, host.data(), kN * sizeof(int), stream);
  int a = 3;
  int b = -7;
  unsigned n = kN;
  CUdeviceptr dv = d;
  void* args[] = {&dv, &a, &b, &n};
  drv::cuLaunchKernel(fn, (kN + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr);
  drv::cuStreamSynchronize(stream);
  EXPECT_TRUE(drv::cuStreamQuery(stream));
  std::vector<int> out(kN);
  drv::cuMemcpyDtoH(out.data(), d, kN * sizeof(int));
  for (unsigned i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], 3 * host[i] - 7) << "at " << i;
  }
  drv::cuStreamDestroy(stream);
  drv::cuMemFree(d);
  drv::cuModuleUnload(module);
}

std::string ptx_for(const char* source, CUdevice device) {
  const int major = drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  const int minor = drv::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  const std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(source, "k.cu", 0, nullptr, nullptr);
  const char* options[] = {arch.c_str()};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 1, options);
  std::string ptx = cuwrap::nvrtc::nvrtcGetPTX(prog);
  cuwrap::nvrtc::raw::nvrtcDestroyProgram(&prog);
  return ptx;
}

// PTX JIT-compiled through JitOptions (info log, wall time read back), then the typed
// launch: arguments packed, their sizes checked against the kernel's parameters.
TEST_F(GeneratedDriverGpu, JitOptionsAndTypedLaunch) {
  CUWRAP_REQUIRE_NVRTC();
  const std::string ptx =
      ptx_for(
          "extern \"C\" __global__ void axpb(int* v, int a, int b, unsigned n) {\n"
          "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) v[i] = a * v[i] + b;\n"
          "}\n",
          device_) +
      // Unique PTX per run: the driver's JIT cache would otherwise load a
      // second run's module without compiling, and write no info log (the
      // H200's second ctest run failed so).
      "\n// run " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
      "\n";
  drv::JitOptions jit;
  jit.set(CU_JIT_LOG_VERBOSE, 1).info_log(8192).error_log(8192).wall_time();
  const CUmodule module = drv::cuModuleLoadDataEx(ptx.c_str(), jit);
  EXPECT_NE(jit.info_log().find("axpb"), std::string::npos) << jit.info_log();
  EXPECT_EQ(jit.error_log(), "");
  EXPECT_GE(jit.wall_time_ms(), 0.0F);
  const CUfunction fn = drv::cuModuleGetFunction(module, "axpb");
  constexpr unsigned kN = 1000;
  std::vector<int> host(kN);
  for (unsigned i = 0; i < kN; ++i)
    host[i] = static_cast<int>(i);
  const CUdeviceptr d = drv::cuMemAlloc(kN * sizeof(int));
  drv::cuMemcpyHtoD(d, host.data(), kN * sizeof(int));
  drv::cuLaunchKernel(fn, {(kN + 127) / 128}, {128}, 0, nullptr, d, 3, -7, kN);
  drv::cuCtxSynchronize();
  std::vector<int> out(kN);
  drv::cuMemcpyDtoH(out.data(), d, kN * sizeof(int));
  for (unsigned i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], 3 * static_cast<int>(i) - 7) << "at " << i;
  }
  // The driver 12.4+ knows the parameters: a 2-byte argument for an int, or one too few,
  // is refused before anything launches.
  if (cuwrap::driver_version() >= 12040 && cuwrap::bindings_version() >= 12040) {
    const short a = 3;
    EXPECT_THROW(drv::cuLaunchKernel(fn, {1}, {1}, 0, nullptr, d, a, -7, kN),
                 std::invalid_argument);
    EXPECT_THROW(drv::cuLaunchKernel(fn, {1}, {1}, 0, nullptr, d, 3, -7), std::invalid_argument);
  }
  // cuLaunchKernelEx with a config, the same packing.
  CUlaunchConfig config{};
  config.gridDimX = (kN + 127) / 128;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  drv::cuLaunchKernelEx(config, fn, d, 1, 7, kN);
  drv::cuCtxSynchronize();
  drv::cuMemcpyDtoH(out.data(), d, kN * sizeof(int));
  EXPECT_EQ(out[5], 3 * 5 - 7 + 7);
  drv::cuMemFree(d);
  drv::cuModuleUnload(module);
}

// A failing JIT compile: the DriverError carries the driver's JIT error log, which the
// typed form asked for on its own.
TEST_F(GeneratedDriverGpu, FailingJitCarriesTheErrorLog) {
  const char* bad =
      ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k() { bogus; }\n";
  try {
    (void)drv::cuModuleLoadDataEx(bad, {}, {});
    ADD_FAILURE() << "broken PTX loaded";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.function(), "cuModuleLoadDataEx");
    EXPECT_FALSE(e.log().empty()) << e.what();
    EXPECT_NE(std::string(e.what()).find(e.log()), std::string::npos);
  }
}

// Owning handles: the module, stream and event are released when their owners end, the
// half-built state unwound without try/catch.
TEST_F(GeneratedDriverGpu, OwningHandlesReleaseWhatTheyOwn) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<char> cubin = cubin_for(
      "extern \"C\" __global__ void set(int* v, int x) { v[threadIdx.x] = x; }\n", device_);
  CUmodule released = nullptr;
  {
    const drv::unique_handle<CUmodule> module =
        drv::make_unique(drv::cuModuleLoadData(cubin.data()));
    const auto stream = drv::make_unique(drv::cuStreamCreate(CU_STREAM_NON_BLOCKING));
    const auto done = drv::make_unique(drv::cuEventCreate(CU_EVENT_DEFAULT));
    ASSERT_TRUE(module && stream && done);
    const CUfunction fn = drv::cuModuleGetFunction(module.get(), "set");
    const CUdeviceptr d = drv::cuMemAlloc(32 * sizeof(int));
    drv::cuLaunchKernel(fn, {1}, {32}, 0, stream.get(), d, 5);
    drv::cuEventRecord(done.get(), stream.get());
    drv::cuEventSynchronize(done.get());
    std::vector<int> out(32);
    drv::cuMemcpyDtoH(out.data(), d, out.size() * sizeof(int));
    EXPECT_EQ(out, std::vector<int>(32, 5));
    drv::cuMemFree(d);
    released = module.get();
  }
  // The module was unloaded: its handle no longer gives functions.
  CUfunction fn = nullptr;
  EXPECT_NE(drv::raw::cuModuleGetFunction(&fn, released, "set"), CUDA_SUCCESS);
  // release() hands the handle back unreleased.
  auto owned = drv::make_unique(drv::cuModuleLoadData(cubin.data()));
  const CUmodule handle = owned.release();
  EXPECT_FALSE(owned);
  EXPECT_EQ(drv::raw::cuModuleGetFunction(&fn, handle, "set"), CUDA_SUCCESS);
  drv::cuModuleUnload(handle);
}

TEST_F(GeneratedDriverGpu, StreamAndEventQueryAnswerWithBool) {
  const std::vector<char> cubin = cubin_for(
      "extern \"C\" __global__ void spin(unsigned long long cycles) {\n"
      "  unsigned long long start = clock64();\n"
      "  while (clock64() - start < cycles) {}\n"
      "}\n",
      device_);
  CUlibrary library =
      drv::cuLibraryLoadData(cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  CUkernel kernel = drv::cuLibraryGetKernel(library, "spin");
  const CUstream stream = drv::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  const CUevent event = drv::cuEventCreate(CU_EVENT_DEFAULT);
  {
    // Loaded before the gate (host_gate.hpp: a first launch behind it would hang).
    unsigned long long no_cycles = 0;
    void* warm_up[] = {&no_cycles};
    drv::cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 1, 1, 1, 0, stream, warm_up,
                        nullptr);
    drv::cuStreamSynchronize(stream);
    // The stream waits on a host gate before the kernel: "not done" holds however slow the
    // host is. The gate's destructor waits for the stream.
    cuwrap::testing::HostGate gate(stream);
    unsigned long long cycles = 1'000'000ULL;
    void* args[] = {&cycles};
    drv::cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 1, 1, 1, 0, stream, args,
                        nullptr);
    drv::cuEventRecord(event, stream);
    EXPECT_FALSE(drv::cuStreamQuery(stream));
    EXPECT_FALSE(drv::cuEventQuery(event));
    gate.open();
    drv::cuEventSynchronize(event);
  }
  EXPECT_TRUE(drv::cuEventQuery(event));
  EXPECT_TRUE(drv::cuStreamQuery(stream));
  EXPECT_EQ(drv::raw::cuStreamQuery(stream), CUDA_SUCCESS);
  drv::cuEventDestroy(event);
  drv::cuStreamDestroy(stream);
  drv::cuLibraryUnload(library);
}

}  // namespace
