// Test support for the Device/Stream/Event/memory tests: tiny kernels compiled at run
// time with NVRTC for the device's architecture, loaded with cuLibraryLoadData and
// launched with cuLaunchKernel. Deliberately independent of cuwrap::Program/launch so
// these tests only exercise the classes they are about.
#pragma once

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>
#include <cuwrap/stream.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace cuwrap::testing {

/// Kernels used by the tests (extern "C": no name mangling).
inline constexpr const char* kTestKernels = R"(
extern "C" __global__ void spin_then_add(unsigned char* data, unsigned long long n,
                                         long long spin_cycles, unsigned char add) {
  // Busy-wait first, so that anything not ordered after this kernel would see old data.
  if (threadIdx.x == 0) {
    long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
  __syncthreads();
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    data[i] = (unsigned char)(data[i] + add);
  }
}

extern "C" __global__ void copy_bytes(const unsigned char* src, unsigned char* dst,
                                      unsigned long long n) {
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    dst[i] = src[i];
  }
}
)";

/// The test kernels compiled for one device; unloads them on destruction.
class TestKernels {
 public:
  /// Compile kTestKernels for `device` (sm_<arch>) and load them.
  explicit TestKernels(const Device& device) {
    nvrtcProgram program =
        nvrtc::nvrtcCreateProgram(kTestKernels, "test_kernels.cu", 0, nullptr, nullptr);
    const std::string arch = "--gpu-architecture=sm_" + device.arch();
    const char* options[] = {arch.c_str()};
    try {
      nvrtc::nvrtcCompileProgram(program, 1, options);
      cubin_ = nvrtc::nvrtcGetCUBIN(program);
    } catch (...) {
      nvrtc::raw::nvrtcDestroyProgram(&program);
      throw;
    }
    nvrtc::raw::nvrtcDestroyProgram(&program);
    const detail::ScopedContext scope(device.context());
    library_ = driver::cuLibraryLoadData(cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    spin_then_add_ = driver::cuLibraryGetKernel(library_, "spin_then_add");
    copy_bytes_ = driver::cuLibraryGetKernel(library_, "copy_bytes");
  }
  TestKernels(const TestKernels&) = delete;
  TestKernels& operator=(const TestKernels&) = delete;
  ~TestKernels() { static_cast<void>(driver::raw::cuLibraryUnload(library_)); }

  /// Enqueue: spin `spin_cycles` GPU clocks, then add `add` to each of `n` bytes at `data`.
  void spin_then_add(const Stream& stream, CUdeviceptr data, std::size_t n, long long spin_cycles,
                     unsigned char add) const {
    unsigned long long count = n;
    void* args[] = {&data, &count, &spin_cycles, &add};
    launch(spin_then_add_, stream, args);
  }

  /// Enqueue: copy `n` bytes from `src` to `dst` with a kernel (the device reads `src`).
  void copy_bytes(const Stream& stream, CUdeviceptr src, CUdeviceptr dst, std::size_t n) const {
    unsigned long long count = n;
    void* args[] = {&src, &dst, &count};
    launch(copy_bytes_, stream, args);
  }

 private:
  static void launch(CUkernel kernel, const Stream& stream, void** args) {
    const detail::ScopedContext scope(stream.context());
    driver::cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 64, 1, 1, 256, 1, 1, 0,
                           stream.handle(), args, nullptr);
  }

  std::vector<char> cubin_;
  CUlibrary library_ = nullptr;
  CUkernel spin_then_add_ = nullptr;
  CUkernel copy_bytes_ = nullptr;
};

}  // namespace cuwrap::testing
