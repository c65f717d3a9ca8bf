// The kernels cuda.core's graph tests compile (helpers/graph_kernels.py), written for
// cuwrap: compiled once per process with NVRTC for device 0.
#pragma once

#include <cuwrap/cuwrap.hpp>

namespace conformance {

/// The common kernels: add_one(int*), empty_kernel(), set_handle(handle, int) and
/// write_launch_dims(int*).
struct GraphKernels {
  cuwrap::Kernel add_one, empty_kernel, set_handle;
};

/// Return the kernels, compiled on first use.
inline const GraphKernels& graph_kernels() {
  static const GraphKernels kernels = [] {
    const cuwrap::Device device(0);
    device.set_current();
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + device.arch();
    cuwrap::Program program(R"(
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void add_one(int* a) { *a += 1; }
extern "C" __global__ void empty_kernel() {}
extern "C" __global__ void set_handle(cudaGraphConditionalHandle handle, int value) {
  cudaGraphSetConditional(handle, value);
}
)",
                            cuwrap::CodeType::Cxx, options);
    const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    return GraphKernels{code.get_kernel("add_one"), code.get_kernel("empty_kernel"),
                        code.get_kernel("set_handle")};
  }();
  return kernels;
}

/// Return LaunchConfig(grid=1, block=1).
inline cuwrap::LaunchConfig one_thread() {
  cuwrap::LaunchConfig config;
  config.grid = cuwrap::Dim3(1);
  config.block = cuwrap::Dim3(1);
  return config;
}

}  // namespace conformance
