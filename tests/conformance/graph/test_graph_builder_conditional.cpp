// cuda.core's tests/graph/test_graph_builder_conditional.py (test_conditional.py in older
// versions): conditional nodes (if, if/else, switch, while) captured with a GraphBuilder,
// the condition set by a kernel or a default value.
//
// cuda.core parametrises the condition over Python's bool, ctypes.c_bool, numpy.bool_ and
// int; their kernels take `bool` for the first three and `unsigned int` for int. Here each
// test runs both C++ forms: a `bool` argument and an `unsigned` argument.
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphBuilder;
using cuwrap::Stream;

class GraphConditional : public cuwrap::testing::DeviceTest {};

// helpers/graph_kernels.py's compile_conditional_kernels(cond_type). Compiled per use:
// loop_kernel counts down a `static` of its module, so each while loop needs a fresh one.
struct ConditionalKernels {
  cuwrap::ObjectCode code;
  cuwrap::Kernel empty_kernel, add_one, set_handle, loop_kernel;
};

ConditionalKernels compile_conditional_kernels(const std::string& cond_type) {
  const Device device(0);
  device.set_current();
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + device.arch();
  options.std = "c++17";
  cuwrap::Program program(R"(
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void empty_kernel() {}
extern "C" __global__ void add_one(int* a) { *a += 1; }
extern "C" __global__ void set_handle(cudaGraphConditionalHandle handle, )" +
                              cond_type + R"( value) {
  cudaGraphSetConditional(handle, value);
}
extern "C" __global__ void loop_kernel(cudaGraphConditionalHandle handle) {
  static int count = 10;
  cudaGraphSetConditional(handle, --count ? 1 : 0);
}
)",
                          cuwrap::CodeType::Cxx, options);
  cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
  ConditionalKernels kernels{code, code.get_kernel("empty_kernel"), code.get_kernel("add_one"),
                             code.get_kernel("set_handle"), code.get_kernel("loop_kernel")};
  return kernels;
}

// Pinned ints the test reads and writes directly.
struct ConditionalHostInts {
  cuwrap::LegacyPinnedMemoryResource mr;
  Buffer buffer;
  explicit ConditionalHostInts(int count)
      : buffer(mr.allocate(sizeof(int) * static_cast<unsigned>(count))) {
    for (int i = 0; i < count; ++i) {
      data()[i] = 0;
    }
  }
  int* data() const { return reinterpret_cast<int*>(buffer.handle()); }
  std::vector<int> values(int count) const { return {data(), data() + count}; }
};

// Launches the kernel that sets `handle` to `value`, as a bool or an unsigned int.
void set_condition(GraphBuilder& gb, const ConditionalKernels& k, CUgraphConditionalHandle handle,
                   bool as_bool, unsigned value) {
  if (as_bool) {
    launch(gb, one_thread(), k.set_handle, handle, value != 0);
  } else {
    launch(gb, one_thread(), k.set_handle, handle, value);
  }
}

const char* type_name(bool as_bool) { return as_bool ? "bool" : "unsigned int"; }

TEST_F(GraphConditional, test_graph_conditional_if) {
  CUWRAP_REQUIRE_NVRTC();
  for (const bool as_bool : {true, false}) {
    for (const unsigned condition_value : {1U, 0U}) {
      SCOPED_TRACE(std::string(type_name(as_bool)) + " " + std::to_string(condition_value));
      const ConditionalKernels k = compile_conditional_kernels(type_name(as_bool));
      const Stream launch_stream = Device(0).create_stream();
      ConditionalHostInts arr(2);
      GraphBuilder gb = Device(0).create_graph_builder().begin_building();
      const CUgraphConditionalHandle handle = gb.create_conditional_handle();
      set_condition(gb, k, handle, as_bool, condition_value);
      GraphBuilder gb_if = gb.if_cond(handle);
      gb_if.begin_building();
      launch(gb_if, one_thread(), k.add_one, arr.data());
      std::vector<GraphBuilder> branches = gb_if.split(2);
      launch(branches[0], one_thread(), k.add_one, arr.data());
      launch(branches[1], one_thread(), k.add_one, arr.data() + 1);
      gb_if = GraphBuilder::join(std::move(branches));
      launch(gb_if, one_thread(), k.add_one, arr.data());
      gb_if.end_building();
      launch(gb, one_thread(), k.add_one, arr.data());  // after the conditional node
      Graph graph = gb.end_building().complete();
      EXPECT_EQ(arr.values(2), (std::vector<int>{0, 0}));
      graph.launch(launch_stream);
      launch_stream.sync();
      EXPECT_EQ(arr.values(2),
                condition_value != 0 ? (std::vector<int>{4, 1}) : (std::vector<int>{1, 0}));
    }
  }
}

TEST_F(GraphConditional, test_graph_conditional_if_else) {
  CUWRAP_REQUIRE_NVRTC();
  if (cuwrap::driver_version() < 12080) {
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    EXPECT_THROW(gb.if_else(gb.create_conditional_handle()), cuwrap::UnsupportedError);
    gb.end_building();
    GTEST_SKIP() << "if/else conditional nodes need a CUDA 12.8 driver";
  }
  for (const bool as_bool : {true, false}) {
    for (const unsigned condition_value : {1U, 0U}) {
      SCOPED_TRACE(std::string(type_name(as_bool)) + " " + std::to_string(condition_value));
      const ConditionalKernels k = compile_conditional_kernels(type_name(as_bool));
      const Stream launch_stream = Device(0).create_stream();
      ConditionalHostInts arr(2);
      GraphBuilder gb = Device(0).create_graph_builder().begin_building();
      const CUgraphConditionalHandle handle = gb.create_conditional_handle();
      set_condition(gb, k, handle, as_bool, condition_value);
      auto [gb_if, gb_else] = gb.if_else(handle);
      gb_if.begin_building();
      launch(gb_if, one_thread(), k.add_one, arr.data());
      std::vector<GraphBuilder> branches = gb_if.split(2);
      launch(branches[0], one_thread(), k.add_one, arr.data());
      launch(branches[1], one_thread(), k.add_one, arr.data() + 1);
      gb_if = GraphBuilder::join(std::move(branches));
      launch(gb_if, one_thread(), k.add_one, arr.data());
      gb_if.end_building();
      gb_else.begin_building();
      for (int i = 0; i < 3; ++i) {
        launch(gb_else, one_thread(), k.add_one, arr.data() + 1);
      }
      gb_else.end_building();
      launch(gb, one_thread(), k.add_one, arr.data());
      Graph graph = gb.end_building().complete();
      EXPECT_EQ(arr.values(2), (std::vector<int>{0, 0}));
      graph.launch(launch_stream);
      launch_stream.sync();
      EXPECT_EQ(arr.values(2),
                condition_value != 0 ? (std::vector<int>{4, 1}) : (std::vector<int>{1, 3}));
    }
  }
}

TEST_F(GraphConditional, test_graph_conditional_switch) {
  CUWRAP_REQUIRE_NVRTC();
  if (cuwrap::driver_version() < 12080 || cuwrap::bindings_version() < 12080) {
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    EXPECT_THROW(gb.switch_(gb.create_conditional_handle(), 3), cuwrap::UnsupportedError);
    gb.end_building();
    GTEST_SKIP() << "switch conditional nodes need CUDA 12.8";
  }
  const std::vector<std::vector<int>> expected = {{4, 0, 0}, {1, 2, 1}, {1, 0, 3}, {1, 0, 0}};
  for (unsigned condition_value = 0; condition_value < 4; ++condition_value) {
    SCOPED_TRACE(condition_value);
    const ConditionalKernels k = compile_conditional_kernels("unsigned int");
    const Stream launch_stream = Device(0).create_stream();
    ConditionalHostInts arr(3);
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    const CUgraphConditionalHandle handle = gb.create_conditional_handle();
    set_condition(gb, k, handle, false, condition_value);
    std::vector<GraphBuilder> cases = gb.switch_(handle, 3);
    ASSERT_EQ(cases.size(), 3U);
    cases[0].begin_building();
    for (int i = 0; i < 3; ++i) {
      launch(cases[0], one_thread(), k.add_one, arr.data());
    }
    cases[0].end_building();
    cases[1].begin_building();
    launch(cases[1], one_thread(), k.add_one, arr.data() + 1);
    std::vector<GraphBuilder> branches = cases[1].split(2);
    launch(branches[0], one_thread(), k.add_one, arr.data() + 1);
    launch(branches[1], one_thread(), k.add_one, arr.data() + 2);
    cases[1] = GraphBuilder::join(std::move(branches));
    cases[1].end_building();
    cases[2].begin_building();
    for (int i = 0; i < 3; ++i) {
      launch(cases[2], one_thread(), k.add_one, arr.data() + 2);
    }
    cases[2].end_building();
    launch(gb, one_thread(), k.add_one, arr.data());
    Graph graph = gb.end_building().complete();
    EXPECT_EQ(arr.values(3), (std::vector<int>{0, 0, 0}));
    graph.launch(launch_stream);
    launch_stream.sync();
    EXPECT_EQ(arr.values(3), expected[condition_value]);  // 3: out of range, no branch runs
  }
}

TEST_F(GraphConditional, test_graph_conditional_while) {
  CUWRAP_REQUIRE_NVRTC();
  for (const unsigned condition_value : {1U, 0U}) {
    SCOPED_TRACE(condition_value);
    const ConditionalKernels k = compile_conditional_kernels("unsigned int");
    const Stream launch_stream = Device(0).create_stream();
    ConditionalHostInts arr(1);
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    // No kernel sets the condition: its default value starts the loop.
    const CUgraphConditionalHandle handle = gb.create_conditional_handle(condition_value);
    GraphBuilder gb_while = gb.while_loop(handle);
    gb_while.begin_building();
    launch(gb_while, one_thread(), k.add_one, arr.data());
    launch(gb_while, one_thread(), k.add_one, arr.data());
    launch(gb_while, one_thread(), k.loop_kernel, handle);
    gb_while.end_building();
    launch(gb, one_thread(), k.empty_kernel);
    Graph graph = gb.end_building().complete();
    EXPECT_EQ(arr.data()[0], 0);
    graph.launch(launch_stream);
    launch_stream.sync();
    EXPECT_EQ(arr.data()[0], condition_value != 0 ? 20 : 0);
  }
}

}  // namespace
