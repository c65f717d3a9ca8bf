// No cuwrap call changes the calling thread's current context as seen after it returns
// (Device::set_current and Device::default_stream excepted: that is what they are for).
// Each test runs its calls on a fresh thread, so that what is current there at the start
// is known (none, or what the test makes current) and no other test can change it; one
// test per family of entry points, on one device with no context current, and on two
// devices with the other device's context current.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"
#include "versions.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Stream;

constexpr const char* kAddKernel = R"(
extern "C" __global__ void add_one(unsigned* data, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    data[i] += 1;
  }
}
)";

constexpr const char* kWriteSurface = R"(
extern "C" __global__ void write_surface(cudaSurfaceObject_t surface, int width, int height) {
  const int x = threadIdx.x;
  const int y = blockIdx.x;
  if (x < width && y < height) {
    surf2Dwrite(static_cast<float>(y * 100 + x), surface, x * static_cast<int>(sizeof(float)), y);
  }
}
)";

constexpr std::size_t kCount = 1000;

// Run `body` on a new thread after making `start` current there (nullptr: none, as on
// any new thread), and return the context current on that thread after `body`.
template <class Body>
CUcontext current_after(CUcontext start, Body&& body) {
  CUcontext after = nullptr;
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "a new thread has no context";
      cuwrap::driver::cuCtxSetCurrent(start);
      body();
      after = cuwrap::driver::cuCtxGetCurrent();
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) {
    std::rethrow_exception(error);
  }
  return after;
}

cuwrap::Kernel compile_add_one(const Device& device) {
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + device.arch();
  cuwrap::Program program(kAddKernel, cuwrap::CodeType::Cxx, options);
  return program.compile(cuwrap::TargetType::Cubin).get_kernel("add_one");
}

std::vector<unsigned> iota_values() {
  std::vector<unsigned> values(kCount);
  std::iota(values.begin(), values.end(), 0U);
  return values;
}

void expect_added_one(const std::vector<unsigned>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], i + 1) << "element " << i;
  }
}

// ---- device, stream and event ------------------------------------------------------

void streams_and_events(const Device& device) {
  const Stream stream = device.create_stream();
  const cuwrap::Event event = stream.record();
  const Stream other = device.create_stream({.nonblocking = true});
  other.wait(event);
  other.wait(stream);
  static_cast<void>(stream.priority());
  static_cast<void>(stream.device());
  EXPECT_EQ(stream.context(), device.context());
  stream.sync();
  EXPECT_TRUE(stream.is_done());
  event.sync();
  const cuwrap::Event timed = device.create_event({.enable_timing = true});
  stream.record(timed);
  other.sync();
  device.sync();
}

TEST(CurrentContext, StreamsAndEventsLeaveNoneCurrent) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { streams_and_events(device); }), nullptr);
}

// ---- memory --------------------------------------------------------------------------

void memory(const Device& device) {
  const Stream stream = device.create_stream();
  Buffer buffer = device.allocate(kCount * sizeof(unsigned), stream);
  buffer.fill(std::uint32_t{7}, stream);
  std::vector<unsigned> values = iota_values();
  buffer.copy_from(values, stream);
  Buffer copy = device.allocate(buffer.size(), stream);
  copy.copy_from(buffer, stream);
  std::vector<unsigned> back(kCount);
  copy.copy_to(std::as_writable_bytes(std::span(back)), stream);
  stream.sync();
  EXPECT_EQ(back, values);
  buffer.close();
  copy.close();
  stream.sync();
}

TEST(CurrentContext, MemoryLeavesNoneCurrent) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { memory(device); }), nullptr);
}

// ---- programs, kernels, launches and graphs ---------------------------------------------

void kernels_and_launches(const Device& device) {
  const cuwrap::Kernel kernel = compile_add_one(device);
  EXPECT_EQ(kernel.num_arguments(), 2U);
  EXPECT_NE(kernel.function(device.context()), nullptr);
  static_cast<void>(kernel.attributes().get(CU_FUNC_ATTRIBUTE_NUM_REGS, device));
  static_cast<void>(kernel.occupancy().max_active_blocks_per_multiprocessor(128, 0));
  static_cast<void>(kernel.occupancy().max_potential_block_size(0, 0));

  const Stream stream = device.create_stream();
  Buffer buffer = device.allocate(kCount * sizeof(unsigned), stream);
  const std::vector<unsigned> start = iota_values();
  buffer.copy_from(start, stream);
  const auto data = static_cast<CUdeviceptr>(buffer.handle());
  const unsigned long long n = kCount;
  cuwrap::launch(stream, {.grid = 4, .block = 128}, kernel, data, n);
  std::vector<unsigned> values(kCount);
  buffer.copy_to(std::as_writable_bytes(std::span(values)), stream);
  stream.sync();
  expect_added_one(values);
}

TEST(CurrentContext, KernelsAndLaunchesLeaveNoneCurrent) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { kernels_and_launches(device); }), nullptr);
}

TEST(CurrentContext, LaunchOnTheDefaultStreamUsesDeviceZeroOnlyForTheLaunch) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const cuwrap::Kernel kernel = compile_add_one(device);
  const Stream stream = device.create_stream();
  Buffer buffer = device.allocate(kCount * sizeof(unsigned), stream);
  const std::vector<unsigned> start = iota_values();
  buffer.copy_from(start, stream);
  stream.sync();
  const auto data = static_cast<CUdeviceptr>(buffer.handle());
  const unsigned long long n = kCount;
  EXPECT_EQ(current_after(nullptr,
                          [&] {
                            cuwrap::launch(cuwrap::kLegacyDefaultStream, {.grid = 4, .block = 128},
                                           kernel, data, n);
                            cuwrap::kLegacyDefaultStream.sync();
                          }),
            nullptr);
  std::vector<unsigned> values(kCount);
  buffer.copy_to(std::as_writable_bytes(std::span(values)), stream);
  stream.sync();
  expect_added_one(values);
}

void graphs(const Device& device) {
  const cuwrap::Kernel kernel = compile_add_one(device);
  const Stream stream = device.create_stream();
  Buffer buffer = device.allocate(kCount * sizeof(unsigned), stream);
  const std::vector<unsigned> start = iota_values();
  buffer.copy_from(start, stream);
  stream.sync();
  const auto data = static_cast<CUdeviceptr>(buffer.handle());
  const unsigned long long n = kCount;
  cuwrap::GraphBuilder builder = stream.create_graph_builder();
  builder.begin_building();
  cuwrap::launch(builder, {.grid = 4, .block = 128}, kernel, data, n);
  cuwrap::Graph graph = builder.end_building().complete();
  graph.launch(stream);
  std::vector<unsigned> values(kCount);
  buffer.copy_to(std::as_writable_bytes(std::span(values)), stream);
  stream.sync();
  expect_added_one(values);
}

TEST(CurrentContext, GraphsLeaveNoneCurrent) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { graphs(device); }), nullptr);
}

// ---- arrays, textures and surfaces ---------------------------------------------------------

void textures(const Device& device) {
  const cuwrap::Array array(
      device, {.width = 16, .height = 8, .format = CU_AD_FORMAT_FLOAT, .surface_load_store = true});
  EXPECT_EQ(array.context(), device.context());
  const cuwrap::TextureObject texture(array, {});
  const cuwrap::SurfaceObject surface(array);
  EXPECT_NE(texture.handle(), 0U);
  EXPECT_NE(surface.handle(), 0U);
  const cuwrap::MipmappedArray mipmap(device,
                                      {.width = 16, .height = 16, .format = CU_AD_FORMAT_FLOAT}, 2);
  EXPECT_EQ(mipmap.level(1).context(), device.context());
  const cuwrap::TextureObject mip_texture(mipmap, {});
  EXPECT_NE(mip_texture.handle(), 0U);
}

TEST(CurrentContext, TexturesAndSurfacesLeaveNoneCurrent) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { textures(device); }), nullptr);
}

// ---- green contexts: destroyed and made again, perhaps at the same address ----------------

// Each green context gets the kernel's function for its own context ID: one made where a
// destroyed one was (the driver may reuse the address) never launches the destroyed one's.
TEST(CurrentContext, GreenContextsMadeOneAfterAnotherEachLaunchTheirOwnFunction) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  const cuwrap::Kernel kernel = compile_add_one(device);
  const cuwrap::SMResource all = device.resources().sm();
  {
    // Green-context streams need a 12.5 toolkit and driver: before, the refusal names it.
    cuwrap::Context green = device.create_context(
        {.resources = {all.split({.count = {all.min_partition_size()}}).groups[0]}});
    CUWRAP_EXPECT_UNSUPPORTED_BELOW(12050, "streams in a green context",
                                    static_cast<void>(green.create_stream()));
  }
  EXPECT_EQ(current_after(nullptr,
                          [&] {
                            for (int round = 0; round < 4; ++round) {
                              const cuwrap::SMResourceSplit split =
                                  all.split({.count = {all.min_partition_size()}});
                              cuwrap::Context green =
                                  device.create_context({.resources = {split.groups[0]}});
                              const Stream stream = green.create_stream();
                              Buffer buffer = device.allocate(kCount * sizeof(unsigned), stream);
                              const std::vector<unsigned> start = iota_values();
                              buffer.copy_from(start, stream);
                              const auto data = static_cast<CUdeviceptr>(buffer.handle());
                              const unsigned long long n = kCount;
                              cuwrap::launch(stream, {.grid = 4, .block = 128}, kernel, data, n);
                              std::vector<unsigned> values(kCount);
                              buffer.copy_to(std::as_writable_bytes(std::span(values)), stream);
                              stream.sync();
                              expect_added_one(values);
                            }
                          }),
            nullptr);
}

// ---- the documented exceptions -----------------------------------------------------------

TEST(CurrentContext, SetCurrentAndDefaultStreamMakeTheDeviceCurrentAsDocumented) {
  CUWRAP_REQUIRE_GPU();
  const Device device(0);
  EXPECT_EQ(current_after(nullptr, [&] { device.set_current(); }), device.context());
  EXPECT_EQ(current_after(nullptr, [&] { static_cast<void>(device.default_stream()); }),
            device.context());
}

// ---- two devices: work on device 1 while device 0 is current --------------------------------

#define REQUIRE_TWO_GPUS() CUWRAP_REQUIRE_GPUS(2)

TEST(CurrentContextTwoDevices, StreamsAndEventsOnDeviceOneKeepDeviceZeroCurrent) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  EXPECT_EQ(current_after(d0.context(), [&] { streams_and_events(d1); }), d0.context());
  EXPECT_EQ(current_after(nullptr, [&] { streams_and_events(d1); }), nullptr);
}

TEST(CurrentContextTwoDevices, MemoryOnDeviceOneKeepsDeviceZeroCurrent) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  EXPECT_EQ(current_after(d0.context(), [&] { memory(d1); }), d0.context());
  EXPECT_EQ(current_after(nullptr, [&] { memory(d1); }), nullptr);
}

TEST(CurrentContextTwoDevices, LaunchesOnDeviceOneKeepDeviceZeroCurrent) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  EXPECT_EQ(current_after(d0.context(), [&] { kernels_and_launches(d1); }), d0.context());
  EXPECT_EQ(current_after(nullptr, [&] { kernels_and_launches(d1); }), nullptr);
}

TEST(CurrentContextTwoDevices, GraphsOnDeviceOneKeepDeviceZeroCurrent) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  EXPECT_EQ(current_after(d0.context(), [&] { graphs(d1); }), d0.context());
}

TEST(CurrentContextTwoDevices, TexturesUseTheirArraysDevice) {
  REQUIRE_TWO_GPUS();
  const Device d0(0);
  const Device d1(1);
  EXPECT_EQ(current_after(d0.context(), [&] { textures(d1); }), d0.context());
  // Made while device 0 was current, a surface of device 1's array works on device 1.
  constexpr int kWidth = 16;
  constexpr int kHeight = 8;
  const cuwrap::Array array(d1, {.width = kWidth,
                                 .height = kHeight,
                                 .format = CU_AD_FORMAT_FLOAT,
                                 .surface_load_store = true});
  std::optional<cuwrap::SurfaceObject> surface;
  EXPECT_EQ(current_after(d0.context(), [&] { surface.emplace(array); }), d0.context());
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + d1.arch();
  const cuwrap::Kernel write = cuwrap::Program(kWriteSurface, cuwrap::CodeType::Cxx, options)
                                   .compile(cuwrap::TargetType::Cubin)
                                   .get_kernel("write_surface");
  const Stream stream = d1.create_stream();
  cuwrap::launch(stream, {.grid = kHeight, .block = kWidth}, write, surface->handle(), kWidth,
                 kHeight);
  Buffer buffer = d1.allocate(array.size_bytes(), stream);
  array.copy_to(buffer, stream);
  std::vector<float> values(static_cast<std::size_t>(kWidth) * kHeight);
  buffer.copy_to(std::as_writable_bytes(std::span(values)), stream);
  stream.sync();
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      ASSERT_EQ(values[static_cast<std::size_t>(y) * kWidth + x], static_cast<float>(y * 100 + x))
          << "x " << x << ", y " << y;
    }
  }
}

}  // namespace
