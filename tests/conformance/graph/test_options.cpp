// cuda.core's tests/graph/test_options.py: DOT print options, complete options and
// capture (build) modes.
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using conformance::graph_kernels;
using conformance::one_thread;
using cuwrap::Device;
using cuwrap::GraphBuilder;

class GraphOptions : public cuwrap::testing::DeviceTest {};

// The three-kernel linear graph the tests capture.
GraphBuilder linear_graph(cuwrap::CaptureMode mode) {
  GraphBuilder gb = Device(0).create_graph_builder().begin_building(mode);
  for (int i = 0; i < 3; ++i) {
    launch(gb, one_thread(), graph_kernels().empty_kernel);
  }
  gb.end_building();
  return gb;
}

TEST_F(GraphOptions, test_graph_dot_print_options) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = Device(0).create_graph_builder().begin_building();
  const CUgraphConditionalHandle handle = gb.create_conditional_handle();
  launch(gb, one_thread(), graph_kernels().set_handle, handle, 0);
  GraphBuilder gb_if = gb.if_cond(handle).begin_building();
  launch(gb_if, one_thread(), graph_kernels().empty_kernel);
  std::vector<GraphBuilder> branches = gb_if.split(2);
  launch(branches[0], one_thread(), graph_kernels().empty_kernel);
  launch(branches[1], one_thread(), graph_kernels().empty_kernel);
  gb_if = GraphBuilder::join(std::move(branches));
  launch(gb_if, one_thread(), graph_kernels().empty_kernel);
  gb_if.end_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  gb.end_building();
  // Every CUgraphDebugDot_flags flag (cuda.core: every GraphDebugPrintOptions field).
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("cuwrap_conformance_" + std::to_string(::getpid()) + "_dot_print_options.dot");
  gb.debug_dot_print(path, 0xFFFFU);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_GT(std::filesystem::file_size(path), 0U);
  std::filesystem::remove(path);
}

TEST_F(GraphOptions, test_graph_complete_options) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::Stream launch_stream = Device(0).create_stream();
  GraphBuilder gb = linear_graph(cuwrap::CaptureMode::Relaxed);
  cuwrap::GraphCompleteOptions options;
  options.auto_free_on_launch = true;
  gb.complete(options).close();
  options = {};
  options.upload_stream = &launch_stream;
  gb.complete(options).close();
  options = {};
  options.device_launch = true;
  gb.complete(options).close();
  options = {};
  options.use_node_priority = true;
  cuwrap::Graph graph = gb.complete(options);
  EXPECT_NE(graph.handle(), nullptr);
}

// cuda.core: ValueError("Unsupported build mode: ...") for a mode that is not one of
// the three; here the mode is a CaptureMode and a value outside it is refused.
TEST_F(GraphOptions, test_graph_build_mode) {
  CUWRAP_REQUIRE_NVRTC();
  for (const cuwrap::CaptureMode mode :
       {cuwrap::CaptureMode::Global, cuwrap::CaptureMode::ThreadLocal,
        cuwrap::CaptureMode::Relaxed}) {
    GraphBuilder gb = linear_graph(mode);
    EXPECT_EQ(gb.nodes().size(), 3U);
  }
  GraphBuilder gb = Device(0).create_graph_builder();
  EXPECT_THROW(gb.begin_building(static_cast<cuwrap::CaptureMode>(42)), std::invalid_argument);
}

}  // namespace
