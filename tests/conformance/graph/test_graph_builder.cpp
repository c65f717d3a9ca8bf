// cuda.core's tests/graph/test_graph_builder.py: GraphBuilder stream capture (building
// states, split/join, callbacks, child graphs, close, the graph_definition view, PDL).
//
// cuda.core raises RuntimeError for a builder used in the wrong state; cuwrap throws
// std::logic_error (misuse). Its ValueErrors for bad counts are std::invalid_argument.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "graph_support.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using conformance::graph_kernels;
using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphBuilder;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

class GraphBuilderConformance : public cuwrap::testing::DeviceTest {};

using cuwrap::conformance::HostInts;

TEST_F(GraphBuilderConformance, test_graph_is_building) {
  GraphBuilder gb = device().create_graph_builder();
  EXPECT_FALSE(gb.is_building());
  gb.begin_building();
  EXPECT_TRUE(gb.is_building());
  gb.end_building();
  EXPECT_FALSE(gb.is_building());
}

TEST_F(GraphBuilderConformance, test_graph_straight) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  for (int i = 0; i < 3; ++i) {
    launch(gb, one_thread(), k.empty_kernel);
  }
  Graph graph = gb.end_building().complete();
  EXPECT_EQ(gb.nodes().size(), 3U);
  graph.upload(launch_stream);
  graph.launch(launch_stream);
  launch_stream.sync();
}

TEST_F(GraphBuilderConformance, test_graph_fork_join) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), k.empty_kernel);
  EXPECT_THROW(gb.split(1), std::invalid_argument);
  std::vector<GraphBuilder> split = gb.split(2);
  ASSERT_EQ(split.size(), 2U);
  for (GraphBuilder& branch : split) {
    launch(branch, one_thread(), k.empty_kernel);
    launch(branch, one_thread(), k.empty_kernel);
  }
  std::vector<GraphBuilder> only_left;
  only_left.push_back(std::move(split[0]));
  EXPECT_THROW(GraphBuilder::join(std::move(only_left)), std::invalid_argument);
  // NOLINTNEXTLINE(bugprone-use-after-move): a refused join must leave what it was given
  ASSERT_EQ(only_left.size(), 1U) << "a refused join leaves its builders";
  split[0] = std::move(only_left[0]);
  gb = GraphBuilder::join(std::move(split));
  launch(gb, one_thread(), k.empty_kernel);
  Graph graph = gb.end_building().complete();
  EXPECT_EQ(gb.nodes().size(), 6U);
  graph.upload(launch_stream);
  graph.launch(launch_stream);
  launch_stream.sync();
}

TEST_F(GraphBuilderConformance, test_graph_is_join_required) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  GraphBuilder gb = device().create_graph_builder();
  EXPECT_FALSE(gb.is_join_required());
  gb.begin_building();
  launch(gb, one_thread(), k.empty_kernel);
  std::vector<GraphBuilder> first = gb.split(3);
  ASSERT_EQ(first.size(), 3U);
  // The first builder split() returns is the original (the same capture stream).
  EXPECT_EQ(first[0].stream().handle(), gb.stream().handle());
  EXPECT_FALSE(first[0].is_join_required());
  EXPECT_TRUE(first[1].is_join_required());
  EXPECT_TRUE(first[2].is_join_required());
  for (GraphBuilder& b : first) {
    launch(b, one_thread(), k.empty_kernel);
  }
  std::vector<GraphBuilder> second = first[2].split(3);
  first.pop_back();
  for (const GraphBuilder& b : second) {
    EXPECT_TRUE(b.is_join_required());
  }
  for (GraphBuilder& b : second) {
    launch(b, one_thread(), k.empty_kernel);
  }
  GraphBuilder joined = GraphBuilder::join(std::move(second));
  EXPECT_TRUE(joined.is_join_required()) << "every builder joined needed joining";
  std::vector<GraphBuilder> rest;
  rest.push_back(std::move(joined));
  for (GraphBuilder& b : first) {
    rest.push_back(std::move(b));
  }
  gb = GraphBuilder::join(std::move(rest));
  EXPECT_FALSE(gb.is_join_required());
  launch(gb, one_thread(), k.empty_kernel);
  EXPECT_NO_THROW(static_cast<void>(gb.end_building().complete()));
}

TEST_F(GraphBuilderConformance, test_graph_repeat_capture) {
  CUWRAP_REQUIRE_NVRTC();
  const Stream launch_stream = device().create_stream();
  HostInts arr(1);
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().add_one, arr.data());
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 1);
  EXPECT_THROW(gb.begin_building(), std::logic_error);  // no resuming after the end
  graph.launch(launch_stream);
  graph.launch(launch_stream);
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 4);
}

TEST_F(GraphBuilderConformance, test_graph_capture_errors) {
  GraphBuilder gb = device().create_graph_builder();
  EXPECT_THROW(gb.complete(), std::logic_error);
  gb.begin_building();
  EXPECT_THROW(gb.complete(), std::logic_error);
  EXPECT_NO_THROW(static_cast<void>(gb.end_building().complete()));
}

TEST_F(GraphBuilderConformance, test_graph_begin_building_twice) {
  GraphBuilder gb = device().create_graph_builder();
  gb.begin_building();
  EXPECT_THROW(gb.begin_building(), std::logic_error);
  gb.end_building();
  EXPECT_FALSE(gb.is_building());
}

TEST_F(GraphBuilderConformance, test_graph_split_requires_building) {
  GraphBuilder gb = device().create_graph_builder();
  EXPECT_THROW(gb.split(2), std::logic_error);
}

// join() closes the builders it joins other than the result (`split[1]` stays in the
// vector join was given, closed).
TEST_F(GraphBuilderConformance, test_graph_complete_after_close_forked) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), k.empty_kernel);
  std::vector<GraphBuilder> split = gb.split(2);
  launch(split[0], one_thread(), k.empty_kernel);
  launch(split[1], one_thread(), k.empty_kernel);
  GraphBuilder joined = GraphBuilder::join(std::move(split));
  ASSERT_EQ(split.size(), 2U);  // NOLINT(bugprone-use-after-move): join takes the builders by &&
  EXPECT_THROW(split[1].complete(), std::logic_error);
  joined.end_building();
}

// Difference: cuda.core raises ValueError; cuwrap's closed-builder misuse is
// std::logic_error.
TEST_F(GraphBuilderConformance, test_graph_update_after_source_close) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), k.empty_kernel);
  Graph graph = gb.end_building().complete();
  GraphBuilder source = device().create_graph_builder().begin_building();
  launch(source, one_thread(), k.empty_kernel);
  source.end_building();
  source.close();
  EXPECT_THROW(graph.update(source), std::logic_error);
}

TEST_F(GraphBuilderConformance, test_graph_gc_mid_capture) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  const Stream stream = device().create_stream();
  {
    GraphBuilder gb = stream.create_graph_builder().begin_building();
    launch(gb, one_thread(), k.empty_kernel);
  }  // destroyed mid-capture: the capture must end
  EXPECT_EQ(cuwrap::driver::cuStreamIsCapturing(stream.handle()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_NO_THROW(cuwrap::launch(stream, one_thread(), k.empty_kernel));
  EXPECT_NO_THROW(stream.sync());
}

// embed() of anything but a GraphBuilder does not compile (cuda.core: TypeError).
template <class T>
concept Embeddable = requires(GraphBuilder& gb, const T& child) {
  gb.embed(child);
};
static_assert(Embeddable<GraphBuilder>);
static_assert(!Embeddable<int>);
static_assert(!Embeddable<std::string>);

TEST(GraphBuilderConformanceTypes, test_graph_embed_non_builder) {
  EXPECT_FALSE(Embeddable<int>);
  EXPECT_TRUE(Embeddable<GraphBuilder>);
}

// cuda.core's user_data ValueError for a Python callable has no C++ form (a callable
// holds its own data).
TEST_F(GraphBuilderConformance, test_graph_capture_callback_python) {
  std::vector<int> results;
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  gb.callback([&results] { results.push_back(42); });
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(results, std::vector<int>{42});
}

// A C function with a `void*` argument; the node's callable holds the (copied) bytes.
std::uint8_t g_read_result = 0;
void read_byte(void* data) { g_read_result = *static_cast<const std::uint8_t*>(data); }

TEST_F(GraphBuilderConformance, test_graph_capture_callback_ctypes) {
  g_read_result = 0;
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  gb.callback(
      [user_data = std::vector<std::uint8_t>{0xAB}]() mutable { read_byte(user_data.data()); });
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(g_read_result, 0xAB);
}

TEST_F(GraphBuilderConformance, test_graph_capture_callback_python_survives_del) {
  auto called = std::make_shared<bool>(false);
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  {
    auto my_callback = [called] { *called = true; };
    gb.callback(my_callback);
  }  // the caller's callable is gone; the node holds its own copy
  Graph graph = gb.end_building().complete();
  gb.close();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_TRUE(*called);
}

TEST_F(GraphBuilderConformance, test_graph_capture_callback_ctypes_user_data_survives_del) {
  g_read_result = 0;
  const Stream launch_stream = device().create_stream();
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  {
    auto payload = std::make_unique<std::vector<std::uint8_t>>(1, std::uint8_t{0xAB});
    gb.callback([copy = *payload]() mutable { read_byte(copy.data()); });
    payload.reset();
  }
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(g_read_result, 0xAB);
}

TEST_F(GraphBuilderConformance, test_graph_child_graph) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  const Stream launch_stream = device().create_stream();
  HostInts arr(2);
  GraphBuilder gb_child = device().create_graph_builder().begin_building();
  for (int i = 0; i < 3; ++i) {
    launch(gb_child, one_thread(), k.add_one, arr.data() + 1);
  }
  gb_child.end_building();
  GraphBuilder gb_parent = device().create_graph_builder().begin_building();
  launch(gb_parent, one_thread(), k.add_one, arr.data());
  gb_parent.embed(gb_child);
  launch(gb_parent, one_thread(), k.add_one, arr.data());
  Graph graph = gb_parent.end_building().complete();
  EXPECT_EQ(arr.data()[0], 0);
  EXPECT_EQ(arr.data()[1], 0);
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 2);
  EXPECT_EQ(arr.data()[1], 3);
}

// Difference: cuda.core's handle reads 0 after close(); cuwrap's handle() documents
// std::logic_error on a closed Graph.
TEST_F(GraphBuilderConformance, test_graph_close_is_idempotent) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  Graph graph = gb.end_building().complete();
  gb.close();
  graph.close();
  graph.close();
  EXPECT_THROW(static_cast<void>(graph.handle()), std::logic_error);
}

TEST_F(GraphBuilderConformance, test_graph_stream_lifetime) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  {
    GraphBuilder gb = device().create_graph_builder().begin_building();
    launch(gb, one_thread(), k.empty_kernel);
    Graph graph = gb.end_building().complete();
    gb.close();
    graph.close();
  }
  Stream stream = device().create_stream();
  GraphBuilder gb = stream.create_graph_builder().begin_building();
  launch(gb, one_thread(), k.empty_kernel);
  Graph graph = gb.end_building().complete();
  gb.close();
  graph.close();
  EXPECT_NO_THROW(cuwrap::launch(stream, one_thread(), k.empty_kernel));
  EXPECT_NO_THROW(stream.sync());
  stream.close();
}

// ---------------------------------------------------------------------------------
// GraphBuilder::graph_definition

TEST_F(GraphBuilderConformance, test_graph_definition_returns_graph_definition_after_end_building) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  gb.end_building();
  const GraphDefinition gd = gb.graph_definition();
  EXPECT_EQ(gd.nodes().size(), 2U);
}

TEST_F(GraphBuilderConformance, test_graph_definition_raises_before_begin_building) {
  const GraphBuilder gb = device().create_graph_builder();
  EXPECT_THROW(static_cast<void>(gb.graph_definition()), std::logic_error);
}

TEST_F(GraphBuilderConformance, test_graph_definition_raises_during_capture) {
  GraphBuilder gb = device().create_graph_builder().begin_building();
  EXPECT_THROW(static_cast<void>(gb.graph_definition()), std::logic_error);
  gb.end_building();
}

TEST_F(GraphBuilderConformance, test_graph_definition_raises_for_forked) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  std::vector<GraphBuilder> split = gb.split(2);
  EXPECT_THROW(static_cast<void>(split[1].graph_definition()), std::logic_error);
  GraphBuilder joined = GraphBuilder::join(std::move(split));
  joined.end_building();
}

TEST_F(GraphBuilderConformance, test_graph_definition_shares_ownership) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  gb.end_building();
  const GraphDefinition gd = gb.graph_definition();
  gb.close();
  EXPECT_EQ(gd.nodes().size(), 1U);
}

TEST_F(GraphBuilderConformance, test_graph_definition_raises_after_close) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb = device().create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().empty_kernel);
  gb.end_building();
  gb.close();
  EXPECT_THROW(static_cast<void>(gb.graph_definition()), std::logic_error);
}

TEST_F(GraphBuilderConformance, test_graph_definition_round_trips_through_explicit_api) {
  CUWRAP_REQUIRE_NVRTC();
  const Stream launch_stream = device().create_stream();
  HostInts arr(1);
  GraphBuilder gb = launch_stream.create_graph_builder().begin_building();
  launch(gb, one_thread(), graph_kernels().add_one, arr.data());
  gb.end_building();
  GraphDefinition gd = gb.graph_definition();
  const std::vector<GraphNode> captured = gd.nodes();
  ASSERT_EQ(captured.size(), 1U);
  gd.launch(captured, one_thread(), graph_kernels().add_one, arr.data());
  EXPECT_EQ(gd.nodes().size(), 2U);
  Graph graph = gb.complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 2);
}

TEST_F(GraphBuilderConformance, test_graph_definition_hybrid_conditional_body) {
  CUWRAP_REQUIRE_NVRTC();
  const Stream launch_stream = device().create_stream();
  HostInts arr(1);
  GraphBuilder gb = device().create_graph_builder().begin_building();
  const CUgraphConditionalHandle condition = gb.create_conditional_handle();
  launch(gb, one_thread(), graph_kernels().set_handle, condition, 1);
  GraphBuilder body_gb = gb.if_cond(condition);
  // No begin_building() on the body: its graph exists with the conditional node.
  GraphDefinition body_def = body_gb.graph_definition();
  EXPECT_EQ(body_def.nodes().size(), 0U);
  body_def.launch({}, one_thread(), graph_kernels().add_one, arr.data());
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 1);
}

TEST_F(GraphBuilderConformance, test_graph_definition_conditional_body_after_capture) {
  CUWRAP_REQUIRE_NVRTC();
  const Stream launch_stream = device().create_stream();
  HostInts arr(1);
  GraphBuilder gb = device().create_graph_builder().begin_building();
  const CUgraphConditionalHandle condition = gb.create_conditional_handle();
  launch(gb, one_thread(), graph_kernels().set_handle, condition, 1);
  GraphBuilder body_gb = gb.if_cond(condition);
  body_gb.begin_building();
  launch(body_gb, one_thread(), graph_kernels().add_one, arr.data());
  body_gb.end_building();
  GraphDefinition body_def = body_gb.graph_definition();
  const std::vector<GraphNode> captured = body_def.nodes();
  ASSERT_EQ(captured.size(), 1U);
  body_def.launch(captured, one_thread(), graph_kernels().add_one, arr.data());
  EXPECT_EQ(body_def.nodes().size(), 2U);
  Graph graph = gb.end_building().complete();
  graph.launch(launch_stream);
  launch_stream.sync();
  EXPECT_EQ(arr.data()[0], 2);
}

TEST_F(GraphBuilderConformance, test_graph_definition_conditional_body_during_capture_raises) {
  GraphBuilder gb = device().create_graph_builder().begin_building();
  const CUgraphConditionalHandle condition = gb.create_conditional_handle();
  GraphBuilder body_gb = gb.if_cond(condition);
  body_gb.begin_building();
  EXPECT_THROW(static_cast<void>(body_gb.graph_definition()), std::logic_error);
  body_gb.end_building();
  gb.end_building();
}

// Capturing a launch with programmatic_stream_serialization makes a programmatic edge
// (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC from CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC).
TEST_F(GraphBuilderConformance, test_pdl_launch_graph_capture) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = graph_kernels();
  const Stream stream = device().create_stream();
  HostInts arr(1);
  cuwrap::LaunchConfig pdl = one_thread();
  pdl.programmatic_stream_serialization = true;
  GraphBuilder gb = stream.create_graph_builder().begin_building();
  launch(gb, one_thread(), k.add_one, arr.data());
  launch(gb, pdl, k.add_one, arr.data());
  gb.end_building();
  const GraphDefinition gd = gb.graph_definition();
  std::size_t count = 0;
  cuwrap::driver::cuGraphGetEdges_v2(gd.handle(), nullptr, nullptr, nullptr, &count);
  ASSERT_EQ(count, 1U);
  CUgraphNode from = nullptr;
  CUgraphNode to = nullptr;
  CUgraphEdgeData edge{};
  cuwrap::driver::cuGraphGetEdges_v2(gd.handle(), &from, &to, &edge, &count);
  EXPECT_EQ(edge.type, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  EXPECT_EQ(edge.from_port, CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC);
  Graph graph = gb.complete();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(arr.data()[0], 2);
}

}  // namespace
