// cuda.core's tests/graph/test_graph_memory_resource.py (test_capture_alloc.py in older
// versions): memory allocated and freed inside a captured graph through
// GraphMemoryResource, its attributes, and DeviceMemoryResource refusing a capture.
// Parametrised functions loop over their modes ("no_graph" where cuda.core has it, then
// Global, ThreadLocal, Relaxed) inside one test.
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::CaptureMode;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphBuilder;
using cuwrap::Stream;
using cuwrap::StreamRef;

constexpr std::size_t kBytes = 64;

const std::optional<CaptureMode> kModes[] = {std::nullopt, CaptureMode::Global,
                                             CaptureMode::ThreadLocal, CaptureMode::Relaxed};
const CaptureMode kCaptureModes[] = {CaptureMode::Global, CaptureMode::ThreadLocal,
                                     CaptureMode::Relaxed};

std::string mode_name(std::optional<CaptureMode> mode) {
  if (!mode) {
    return "no_graph";
  }
  switch (*mode) {
    case CaptureMode::Global:
      return "global";
    case CaptureMode::ThreadLocal:
      return "thread_local";
    case CaptureMode::Relaxed:
      return "relaxed";
  }
  return "?";
}

// cuda.core's mempool_device: a device whose driver supports memory pools.
class GraphMemoryResourceConformance : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (!device().properties().memory_pools_supported()) {
      GTEST_SKIP() << "the device does not support memory pools";
    }
  }
};

// _common_kernels_alloc(): set_zero and add_one over `nbytes` chars.
struct AllocKernels {
  cuwrap::ObjectCode code;
  cuwrap::Kernel set_zero, add_one;
};

const AllocKernels& alloc_kernels() {
  static const AllocKernels kernels = [] {
    const Device device(0);
    device.set_current();
    cuwrap::ProgramOptions options;
    options.std = "c++17";
    options.arch = "sm_" + device.arch();
    cuwrap::Program program(R"(
extern "C" __global__ void set_zero(char* a, size_t nbytes) {
  size_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  size_t stride = blockDim.x * gridDim.x;
  for (size_t i = idx; i < nbytes; i += stride) a[i] = 0;
}
extern "C" __global__ void add_one(char* a, size_t nbytes) {
  size_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  size_t stride = blockDim.x * gridDim.x;
  for (size_t i = idx; i < nbytes; i += stride) a[i] += 1;
}
)",
                            cuwrap::CodeType::Cxx, options);
    cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    return AllocKernels{code, code.get_kernel("set_zero"), code.get_kernel("add_one")};
  }();
  return kernels;
}

// helpers/buffers.py's compare_buffer_to_constant, for device memory.
bool equals_constant(const Buffer& buffer, std::uint8_t value) {
  std::vector<std::uint8_t> host(buffer.size());
  cuwrap::driver::cuMemcpyDtoH(host.data(), buffer.handle(), host.size());
  for (const std::uint8_t byte : host) {
    if (byte != value) {
      return false;
    }
  }
  return true;
}

// helpers/buffers.py's set_buffer, for device memory. A copy from pageable memory may
// return before it reaches the device, and the tests' streams are non-blocking (not
// ordered after the legacy stream): the copy goes on `stream`, which is synchronized.
void set_buffer(const Buffer& buffer, std::uint8_t value, const Stream& stream) {
  const std::vector<std::uint8_t> host(buffer.size(), value);
  cuwrap::driver::cuMemcpyHtoDAsync(buffer.handle(), host.data(), host.size(), stream.handle());
  stream.sync();
}

TEST_F(GraphMemoryResourceConformance, test_graph_alloc) {
  CUWRAP_REQUIRE_NVRTC();
  const AllocKernels& k = alloc_kernels();
  for (const std::optional<CaptureMode> mode : kModes) {
    for (const bool incr : {true, false}) {
      SCOPED_TRACE(mode_name(mode) + (incr ? " incr" : " fill"));
      const Stream stream = device().create_stream();
      cuwrap::DeviceMemoryResource dmr(device());
      cuwrap::GraphMemoryResource gmr(device());
      Buffer out = dmr.allocate(kBytes, stream);
      launch(stream, one_thread(), k.set_zero, out, kBytes);

      // incr: adds 3 to out; fill: fills out with 3.
      const auto apply_kernels = [&](cuwrap::MemoryResource& mr, StreamRef s) {
        Buffer buffer = mr.allocate(kBytes, s);
        if (incr) {
          buffer.copy_from(out, s);
          for (int i = 0; i < 3; ++i) {
            launch(s, one_thread(), k.add_one, buffer, kBytes);
          }
        } else {
          buffer.fill(std::uint8_t{3}, s);
        }
        out.copy_from(buffer, s);
        buffer.close(s);
      };

      if (!mode) {
        apply_kernels(dmr, stream);
        stream.sync();
        EXPECT_TRUE(equals_constant(out, 3));
      } else {
        GraphBuilder gb = device().create_graph_builder().begin_building(*mode);
        apply_kernels(gmr, gb.stream());
        Graph graph = gb.end_building().complete();
        graph.upload(stream);
        graph.launch(stream);
        stream.sync();
        EXPECT_TRUE(equals_constant(out, 3));
        if (incr) {
          graph.upload(stream);
          graph.launch(stream);
          stream.sync();
          EXPECT_TRUE(equals_constant(out, 6));
        }
      }
      out.close(stream);
      stream.sync();
    }
  }
}

// cuda.core skips this on Windows and WSL (auto_free_on_launch).
TEST_F(GraphMemoryResourceConformance, test_graph_alloc_with_output) {
  CUWRAP_REQUIRE_NVRTC();
#ifdef _WIN32
  GTEST_SKIP() << "auto_free_on_launch is not supported on Windows";
#endif
  const AllocKernels& k = alloc_kernels();
  for (const CaptureMode mode : kCaptureModes) {
    SCOPED_TRACE(mode_name(mode));
    const Stream stream = device().create_stream();
    cuwrap::GraphMemoryResource gmr(device());
    Buffer in = device().allocate(kBytes, stream);
    stream.sync();
    set_buffer(in, 0, stream);

    // The graph returns a buffer it allocates (auto_free_on_launch frees it on the next
    // launch, which allocates it again at the same address).
    GraphBuilder gb = device().create_graph_builder().begin_building(mode);
    Buffer out = gmr.allocate(kBytes, gb.stream());
    out.copy_from(in, gb.stream());
    launch(gb, one_thread(), k.add_one, out, kBytes);
    cuwrap::GraphCompleteOptions options;
    options.auto_free_on_launch = true;
    gb.end_building();
    Graph graph;
    try {
      graph = gb.complete(options);
    } catch (const cuwrap::DriverError& e) {
      if (std::string(e.what()).find("CUDA_ERROR_INVALID_VALUE") != std::string::npos) {
        GTEST_SKIP() << "auto_free_on_launch is not supported on this platform: " << e.what();
      }
      throw;
    }

    graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    EXPECT_TRUE(equals_constant(out, 1));

    set_buffer(in, 5, stream);
    graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    EXPECT_TRUE(equals_constant(out, 6));
    out.close(stream);  // frees the last launch's allocation
    in.close(stream);
    stream.sync();
  }
}

TEST_F(GraphMemoryResourceConformance, test_graph_mem_alloc_zero) {
  for (const CaptureMode mode : kCaptureModes) {
    SCOPED_TRACE(mode_name(mode));
    GraphBuilder gb = device().create_graph_builder().begin_building(mode);
    const Stream stream = device().create_stream();
    cuwrap::GraphMemoryResource gmr(device());
    Buffer buffer = gmr.allocate(0, gb.stream());
    Graph graph = gb.end_building().complete();
    graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    EXPECT_EQ(buffer.size(), 0U);
    EXPECT_EQ(buffer.device_id(), device().device_id());
  }
}

// cuda.core's AttributeErrors for writing a current value or a non-zero high watermark
// have no C++ form: the counters are read-only and only reset_*_high() writes (zero).
TEST_F(GraphMemoryResourceConformance, test_graph_mem_set_attributes) {
  for (const CaptureMode mode : kCaptureModes) {
    SCOPED_TRACE(mode_name(mode));
    const Stream stream = device().create_stream();
    cuwrap::GraphMemoryResource gmr(device());
    const cuwrap::GraphMemoryAttributes attributes = gmr.attributes();

    // GraphMemoryTestManager.alloc(1, 1024)
    GraphBuilder gb = device().create_graph_builder().begin_building(mode);
    Buffer buffer = gmr.allocate(1024, gb.stream());
    Graph graph = gb.end_building().complete();
    graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    EXPECT_GT(attributes.reserved_mem_current(), 0U);
    EXPECT_GT(attributes.reserved_mem_high(), 0U);
    EXPECT_GT(attributes.used_mem_current(), 0U);
    EXPECT_GT(attributes.used_mem_high(), 0U);

    // Freed, but the usage is not reduced yet.
    buffer.close(stream);
    stream.sync();
    EXPECT_GT(attributes.reserved_mem_current(), 0U);
    EXPECT_GT(attributes.reserved_mem_high(), 0U);
    EXPECT_GT(attributes.used_mem_current(), 0U);
    EXPECT_GT(attributes.used_mem_high(), 0U);

    gmr.trim();
    // The high watermarks remain after free and trim.
    EXPECT_GT(attributes.reserved_mem_high(), 0U);
    EXPECT_GT(attributes.used_mem_high(), 0U);

    // Resetting is accepted; whether they read zero afterwards depends on the platform
    // (cuda.core does not check it either).
    EXPECT_NO_THROW(attributes.reset_reserved_mem_high());
    EXPECT_NO_THROW(attributes.reset_used_mem_high());
    gmr.trim();  // GraphMemoryTestManager.reset()
    EXPECT_NO_THROW(gmr.reset_high_watermarks());
  }
}

TEST_F(GraphMemoryResourceConformance, test_gmr_check_capture_state) {
  for (const CaptureMode mode : kCaptureModes) {
    SCOPED_TRACE(mode_name(mode));
    const Stream stream = device().create_stream();
    cuwrap::GraphMemoryResource gmr(device());
    try {
      static_cast<void>(gmr.allocate(1, stream));
      ADD_FAILURE() << "allocate on a stream that is not capturing did not throw";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("not capturing"), std::string::npos) << e.what();
    }
    GraphBuilder gb = device().create_graph_builder().begin_building(mode);
    Buffer buffer;
    EXPECT_NO_THROW(buffer = gmr.allocate(1, gb.stream()));
    buffer.close(gb.stream());  // a free node: the graph, never launched, owns the memory
    static_cast<void>(gb.end_building().complete());
  }
}

TEST_F(GraphMemoryResourceConformance, test_dmr_check_capture_state) {
  for (const CaptureMode mode : kCaptureModes) {
    SCOPED_TRACE(mode_name(mode));
    const Stream stream = device().create_stream();
    cuwrap::DeviceMemoryResource dmr(device());
    EXPECT_NO_THROW(dmr.allocate(1, stream).close(stream));
    GraphBuilder gb = device().create_graph_builder().begin_building(mode);
    try {
      static_cast<void>(dmr.allocate(1, gb.stream()));
      ADD_FAILURE() << "DeviceMemoryResource::allocate on a capturing stream did not throw";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("GraphMemoryResource"), std::string::npos) << e.what();
    }
    static_cast<void>(gb.end_building().complete());
    stream.sync();
  }
}

// cuda.core's init_cuda: any device (no memory pools needed).
class GraphMemoryResourceFlags : public cuwrap::testing::DeviceTest {};

TEST_F(GraphMemoryResourceFlags, test_graph_memory_resource_accessibility_flags) {
  const cuwrap::GraphMemoryResource gmr(device());
  EXPECT_TRUE(gmr.is_device_accessible());
  EXPECT_FALSE(gmr.is_host_accessible());
  EXPECT_EQ(gmr.device_id(), device().device_id());
}

}  // namespace
