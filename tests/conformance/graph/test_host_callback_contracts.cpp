// cuda.core's tests/graph/test_host_callback_contracts.py: how a graph host node reports
// an exception, that a caller's raw pointer reaches the callback unchanged, and that
// graphs on two devices keep their callbacks' data apart.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

constexpr std::size_t kN = 16;

class GraphHostCallbackContracts : public cuwrap::testing::DeviceTest {};

cuwrap::LegacyPinnedMemoryResource& pinned() {
  static cuwrap::LegacyPinnedMemoryResource resource;
  return resource;
}

const std::uint8_t* bytes_of(const Buffer& buffer) {
  return reinterpret_cast<const std::uint8_t*>(buffer.handle());
}

// cuda.core reports the exception through sys.unraisablehook; cuwrap through the
// host-function error handler. Either way it does not cross into the driver, and the
// graph's later nodes and later graphs still run.
TEST_F(GraphHostCallbackContracts, test_python_callback_exception_is_reported_as_unraisable) {
  std::vector<std::string> records;
  auto previous = cuwrap::set_host_function_error_handler(
      {[](const std::exception_ptr& e, void* user_data) {
         auto& out = *static_cast<std::vector<std::string>*>(user_data);
         try {
           std::rethrow_exception(e);
         } catch (const std::runtime_error& x) {
           out.push_back(std::string("runtime_error: ") + x.what());
         } catch (...) {
           out.emplace_back("other");
         }
       },
       &records});
  std::vector<std::string> ran;
  std::vector<std::string> later;
  const Stream stream = device().create_stream();
  Buffer device_buffer = device().allocate(kN, stream);
  Buffer host_buffer = pinned().allocate(kN);
  std::memset(reinterpret_cast<void*>(host_buffer.handle()), 0, kN);
  {
    GraphDefinition graph_def(device());
    const GraphNode fill = graph_def.memset({}, device_buffer.handle(), std::uint8_t{0x33}, kN);
    const GraphNode call = graph_def.callback({{fill}}, [&ran] {
      ran.emplace_back("callback");
      throw std::runtime_error("callback raised");
    });
    graph_def.memcpy({{call}}, host_buffer.handle(), device_buffer.handle(), kN);
    Graph graph = graph_def.instantiate();
    graph.upload(stream);
    graph.launch(stream);
    stream.sync();

    GraphDefinition after_def(device());
    after_def.callback({}, [&later] { later.emplace_back("later"); });
    Graph after = after_def.instantiate();
    after.upload(stream);
    after.launch(stream);
    stream.sync();
  }
  cuwrap::set_host_function_error_handler(previous);

  EXPECT_EQ(ran, std::vector<std::string>{"callback"});
  EXPECT_EQ(records, std::vector<std::string>{"runtime_error: callback raised"});
  // The node after the raising callback still ran.
  EXPECT_EQ(std::vector<std::uint8_t>(bytes_of(host_buffer), bytes_of(host_buffer) + 4),
            std::vector<std::uint8_t>(4, 0x33));
  EXPECT_EQ(later, std::vector<std::string>{"later"});
}

// A C-style callback taking `void*`: the graph node calls it with the caller's pointer,
// which the callable holds; nothing is copied.
std::vector<std::pair<void*, std::uint8_t>>* g_seen = nullptr;
void contract_read_byte(void* data) {
  g_seen->emplace_back(data, *static_cast<std::uint8_t*>(data));
}

TEST_F(GraphHostCallbackContracts, test_ctypes_callback_receives_caller_owned_user_data_pointer) {
  const Stream stream = device().create_stream();
  Buffer payload = pinned().allocate(4);
  auto* view = reinterpret_cast<std::uint8_t*>(payload.handle());
  view[0] = 0x5A;
  view[1] = view[2] = view[3] = 0;
  void* raw_pointer = view;
  std::vector<std::pair<void*, std::uint8_t>> seen;
  g_seen = &seen;

  GraphDefinition graph_def(device());
  graph_def.callback({}, [raw_pointer] { contract_read_byte(raw_pointer); });
  Graph graph = graph_def.instantiate();
  graph.upload(stream);
  graph.launch(stream);
  stream.sync();
  g_seen = nullptr;

  EXPECT_EQ(seen, (std::vector<std::pair<void*, std::uint8_t>>{{raw_pointer, 0x5A}}));
  std::memset(view, 0, 4);  // the caller still owns the storage
}

TEST(GraphHostCallbackContractsMultiGpu, test_two_devices_keep_callback_parameters_separate) {
  CUWRAP_REQUIRE_GPUS(2);
  constexpr int kPerStream = 2;
  constexpr int kDevices = 2;
  constexpr int kSlots = kDevices * kPerStream;
  Buffer host_slots = pinned().allocate(kN * kSlots);
  const CUdeviceptr host_base = host_slots.handle();
  using Run = std::pair<std::pair<int, int>, int>;
  std::mutex runs_mutex;
  std::vector<Run> runs;
  std::vector<Run> expected;
  std::vector<Stream> streams;
  std::vector<Buffer> device_buffers;
  std::vector<Graph> graphs;
  for (int device_index = 0; device_index < kDevices; ++device_index) {
    const Device dev(device_index);
    dev.set_current();
    for (int stream_index = 0; stream_index < kPerStream; ++stream_index) {
      const int value = 0xA1 + device_index * 0x10 + stream_index;
      const int slot = device_index * kPerStream + stream_index;
      expected.push_back({{device_index, stream_index}, value});
      Stream device_stream = dev.create_stream();
      Buffer device_buffer = dev.allocate(kN, device_stream);
      const CUdeviceptr host_pointer = host_base + static_cast<CUdeviceptr>(slot) * kN;
      GraphDefinition graph_def(dev);
      const GraphNode fill =
          graph_def.memset({}, device_buffer.handle(), static_cast<std::uint8_t>(value), kN);
      const GraphNode copy = graph_def.memcpy({{fill}}, host_pointer, device_buffer.handle(), kN);
      graph_def.callback({{copy}}, [&runs, &runs_mutex, device_index, stream_index, host_pointer] {
        const int seen = *reinterpret_cast<const std::uint8_t*>(host_pointer);
        const std::lock_guard<std::mutex> lock(runs_mutex);
        runs.push_back({{device_index, stream_index}, seen});
      });
      Graph graph = graph_def.instantiate();
      graph.upload(device_stream);
      graph.launch(device_stream);
      graphs.push_back(std::move(graph));
      streams.push_back(std::move(device_stream));
      device_buffers.push_back(std::move(device_buffer));
    }
  }
  for (const Stream& device_stream : streams) {
    device_stream.sync();
  }
  std::sort(runs.begin(), runs.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(runs, expected);
  EXPECT_EQ(runs.size(), static_cast<std::size_t>(kSlots));
}

}  // namespace
