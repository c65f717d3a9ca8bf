// cuda.core's tests/graph/test_device_launch.py: device-side graph launch. A kernel of an
// outer graph launches an inner graph, instantiated for device launch, with
// cudaGraphLaunch (a tail launch). The launching kernel is relocatable device code linked
// with the toolkit's device runtime library (libcudadevrt.a) by nvJitLink, as cuda.core
// links it; like cuda.core the test skips where that library cannot be found, and before
// Hopper (sm_90).
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Graph;
using cuwrap::GraphBuilder;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::Stream;

class DeviceLaunch : public cuwrap::testing::DeviceTest {};

// The device runtime library of the toolkit whose headers the tests build against.
std::optional<std::filesystem::path> find_cudadevrt() {
  const std::filesystem::path root = std::filesystem::path(CUWRAP_CUDA_INCLUDE_DIR).parent_path();
  for (const char* dir : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
    std::filesystem::path candidate = root / dir / "libcudadevrt.a";
    if (std::filesystem::is_regular_file(candidate)) {
      return candidate;
    }
  }
  return std::nullopt;
}

std::string arch_option(const cuwrap::Device& device) { return "sm_" + device.arch(); }

Kernel compile_work_kernel(const cuwrap::Device& device) {
  cuwrap::ProgramOptions options;
  options.std = "c++17";
  options.arch = arch_option(device);
  return cuwrap::Program(R"(
extern "C" __global__ void increment(int* value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    atomicAdd(value, 1);
  }
})",
                         cuwrap::CodeType::Cxx, options)
      .compile(cuwrap::TargetType::Cubin)
      .get_kernel("increment");
}

Kernel compile_device_launcher_kernel(const cuwrap::Device& device,
                                      const std::filesystem::path& cudadevrt) {
  cuwrap::ProgramOptions options;
  options.std = "c++17";
  options.arch = arch_option(device);
  options.relocatable_device_code = true;
  cuwrap::ObjectCode ptx = cuwrap::Program(R"(
extern "C" __global__ void launch_graph_from_device(cudaGraphExec_t graph) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    cudaGraphLaunch(graph, cudaStreamGraphTailLaunch);
  }
})",
                                           cuwrap::CodeType::Cxx, options)
                               .compile(cuwrap::TargetType::Ptx);
  std::vector<cuwrap::ObjectCode> inputs;
  inputs.push_back(std::move(ptx));
  inputs.push_back(cuwrap::ObjectCode::from_file(cudadevrt));
  cuwrap::LinkerOptions link_options;
  link_options.arch = arch_option(device);
  cuwrap::Linker linker(std::move(inputs), link_options);
  return linker.link(cuwrap::TargetType::Cubin).get_kernel("launch_graph_from_device");
}

// Pinned ints read and written directly (cuda.core's NumPy view of a pinned buffer).
struct HostInt {
  cuwrap::LegacyPinnedMemoryResource mr;
  Buffer buffer = mr.allocate(sizeof(int));
  int* data() const { return reinterpret_cast<int*>(buffer.handle()); }
};

// Launch an outer graph `launches` times; each launches the inner graph from the device,
// which adds one to a pinned int. Return the int.
int run_device_launches(const cuwrap::Device& device, const std::filesystem::path& cudadevrt,
                        int launches) {
  const Stream stream = device.create_stream();
  const Kernel work = compile_work_kernel(device);
  const Kernel launcher = compile_device_launcher_kernel(device, cudadevrt);

  HostInt value;
  *value.data() = 0;
  stream.sync();

  const LaunchConfig one = conformance::one_thread();
  GraphBuilder inner_builder = device.create_graph_builder().begin_building();
  cuwrap::launch(inner_builder, one, work, value.data());
  cuwrap::GraphCompleteOptions options;
  options.device_launch = true;
  options.upload_stream = &stream;
  Graph inner = inner_builder.end_building().complete(options);
  stream.sync();

  GraphBuilder outer_builder = device.create_graph_builder().begin_building();
  cuwrap::launch(outer_builder, one, launcher, inner.handle());
  Graph outer = outer_builder.end_building().complete();
  for (int i = 0; i < launches; ++i) {
    outer.launch(stream);
  }
  stream.sync();
  return *value.data();
}

#define SKIP_WITHOUT_DEVICE_LAUNCH()                                                         \
  do {                                                                                       \
    CUWRAP_REQUIRE_NVRTC();                                                                  \
    CUWRAP_REQUIRE_NVJITLINK();                                                              \
    if (device().compute_capability().major < 9) {                                           \
      GTEST_SKIP() << "Device-side graph launch requires Hopper (sm_90+) architecture";      \
    }                                                                                        \
    if (!find_cudadevrt()) {                                                                 \
      GTEST_SKIP() << "cudadevrt library not found under " << CUWRAP_CUDA_INCLUDE_DIR "/.."; \
    }                                                                                        \
  } while (false)

TEST_F(DeviceLaunch, test_device_launch_basic) {
  SKIP_WITHOUT_DEVICE_LAUNCH();
  EXPECT_EQ(run_device_launches(device(), *find_cudadevrt(), 1), 1);
}

TEST_F(DeviceLaunch, test_device_launch_multiple) {
  SKIP_WITHOUT_DEVICE_LAUNCH();
  EXPECT_EQ(run_device_launches(device(), *find_cudadevrt(), 5), 5);
}

}  // namespace
