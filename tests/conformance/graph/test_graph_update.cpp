// cuda.core's tests/graph/test_graph_update.py: whole-graph update (Graph::update).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "graph_support.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
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
using cuwrap::Stream;

class GraphUpdate : public cuwrap::testing::DeviceTest {};

using cuwrap::conformance::HostInts;
using cuwrap::conformance::wait_until;

// Build a graph on arr[0] and a source on arr[1]; launch, update, launch; return the
// two ints after each launch.
template <class Build>
std::vector<int> kernel_args_update(Build build) {
  HostInts arr(3);
  const Stream stream = Device(0).create_stream();
  auto [graph, first_source] = build(arr.data());
  auto [unused, second_source] = build(arr.data() + 1);
  std::vector<int> seen;
  graph.launch(stream);
  stream.sync();
  seen.insert(seen.end(), {arr.data()[0], arr.data()[1]});
  graph.update(second_source);
  graph.launch(stream);
  stream.sync();
  seen.insert(seen.end(), {arr.data()[0], arr.data()[1]});
  return seen;
}

TEST_F(GraphUpdate, test_graph_update_kernel_args_GraphBuilder) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<int> seen = kernel_args_update([](int* ptr) {
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    launch(gb, one_thread(), graph_kernels().add_one, ptr);
    launch(gb, one_thread(), graph_kernels().add_one, ptr);
    gb.end_building();
    Graph graph = gb.complete();
    return std::pair<Graph, GraphBuilder>(std::move(graph), std::move(gb));
  });
  EXPECT_EQ(seen, (std::vector<int>{2, 0, 2, 2}));
}

TEST_F(GraphUpdate, test_graph_update_kernel_args_GraphDefinition) {
  CUWRAP_REQUIRE_NVRTC();
  const std::vector<int> seen = kernel_args_update([](int* ptr) {
    GraphDefinition g;
    const cuwrap::GraphNode n = g.launch({}, one_thread(), graph_kernels().add_one, ptr);
    g.launch({{n}}, one_thread(), graph_kernels().add_one, ptr);
    Graph graph = g.instantiate();
    return std::pair<Graph, GraphDefinition>(std::move(graph), std::move(g));
  });
  EXPECT_EQ(seen, (std::vector<int>{2, 0, 2, 2}));
}

TEST_F(GraphUpdate, test_graph_update_conditional) {
  CUWRAP_REQUIRE_NVRTC();
  if (cuwrap::driver_version() < 12080 || cuwrap::bindings_version() < 12080) {
    GTEST_SKIP() << "switch conditional nodes need CUDA 12.8";
  }
  HostInts arr(3);
  const Stream stream = Device(0).create_stream();
  auto build = [&](unsigned condition_value) {
    GraphBuilder gb = Device(0).create_graph_builder().begin_building();
    const CUgraphConditionalHandle condition = gb.create_conditional_handle(condition_value);
    std::vector<GraphBuilder> cases = gb.switch_(condition, 3);
    for (int i = 0; i < 3; ++i) {
      cases[i].begin_building();
      for (int k = 0; k < 3; ++k) {
        launch(cases[i], one_thread(), graph_kernels().add_one, arr.data() + i);
      }
      cases[i].end_building();
    }
    gb.end_building();
    return gb;
  };
  std::vector<GraphBuilder> variants;
  for (unsigned v = 0; v < 3; ++v) {
    variants.push_back(build(v));
  }
  Graph graph = variants[0].complete();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(std::vector<int>(arr.data(), arr.data() + 3), (std::vector<int>{3, 0, 0}));
  graph.update(variants[1]);
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(std::vector<int>(arr.data(), arr.data() + 3), (std::vector<int>{3, 3, 0}));
  graph.update(variants[2]);
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(std::vector<int>(arr.data(), arr.data() + 3), (std::vector<int>{3, 3, 3}));
}

// cuda.core releases the old callback right after the update. cuwrap releases what an
// update replaced once no launch can use it, but the graph the Graph was instantiated
// from keeps its host functions until the Graph goes (the executable graph holds its
// user objects): so this port updates twice and checks the middle graph's callback.
TEST_F(GraphUpdate, test_graph_update_replaces_attachment_user_objects) {
  std::vector<std::string> called;
  auto make = [&](const char* name, std::weak_ptr<int>* watch) {
    auto token = std::make_shared<int>(0);
    *watch = token;
    GraphDefinition def;
    def.callback({}, [token, name, &called] { called.emplace_back(name); });
    return def;
  };
  std::weak_ptr<int> first_weak, old_weak, new_weak;
  Graph graph = make("first", &first_weak).instantiate();
  graph.update(make("old", &old_weak));
  graph.update(make("new", &new_weak));
  EXPECT_TRUE(wait_until([&] { return old_weak.expired(); }));
  EXPECT_FALSE(new_weak.expired());
  const Stream stream = Device(0).create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(called, std::vector<std::string>{"new"});
  graph.close();
  EXPECT_TRUE(wait_until([&] { return first_weak.expired() && new_weak.expired(); }));
}

TEST_F(GraphUpdate, test_failed_graph_update_does_not_adopt_attachments) {
  std::vector<std::string> called;
  GraphDefinition active_def;
  active_def.callback({}, [&called] { called.emplace_back("active"); });
  Graph graph = active_def.instantiate();
  std::weak_ptr<int> rejected_weak;
  {
    auto token = std::make_shared<int>(0);
    rejected_weak = token;
    GraphDefinition rejected_def;
    rejected_def.callback({}, [token, &called] { called.emplace_back("rejected"); });
    rejected_def.empty();  // a topology mismatch
    EXPECT_THROW(graph.update(rejected_def), cuwrap::DriverError);
  }
  EXPECT_TRUE(wait_until([&] { return rejected_weak.expired(); }));
  const Stream stream = Device(0).create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(called, std::vector<std::string>{"active"});
}

TEST_F(GraphUpdate, test_failed_graph_update_preserves_active_attachment_ownership) {
  std::vector<std::string> called;
  std::weak_ptr<int> active_weak;
  Graph graph;
  {
    auto token = std::make_shared<int>(0);
    active_weak = token;
    GraphDefinition active_def;
    active_def.callback({}, [token, &called] { called.emplace_back("active"); });
    graph = active_def.instantiate();
    GraphDefinition rejected_def;
    rejected_def.callback({}, [&called] { called.emplace_back("rejected"); });
    rejected_def.empty();
    EXPECT_THROW(graph.update(rejected_def), cuwrap::DriverError);
  }
  EXPECT_FALSE(active_weak.expired());
  const Stream stream = Device(0).create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(called, std::vector<std::string>{"active"});
  graph.close();
  EXPECT_TRUE(wait_until([&] { return active_weak.expired(); }));
}

TEST_F(GraphUpdate, test_graph_update_unfinished_builder) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder finished = Device(0).create_graph_builder().begin_building();
  launch(finished, one_thread(), graph_kernels().empty_kernel);
  Graph graph = finished.end_building().complete();
  GraphBuilder unfinished = Device(0).create_graph_builder().begin_building();
  launch(unfinished, one_thread(), graph_kernels().empty_kernel);
  try {
    graph.update(unfinished);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Graph has not finished building"), std::string::npos);
  }
  unfinished.end_building();
}

TEST_F(GraphUpdate, test_graph_update_topology_mismatch) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder gb1 = Device(0).create_graph_builder().begin_building();
  for (int i = 0; i < 2; ++i)
    launch(gb1, one_thread(), graph_kernels().empty_kernel);
  Graph graph = gb1.end_building().complete();
  GraphBuilder gb2 = Device(0).create_graph_builder().begin_building();
  for (int i = 0; i < 3; ++i)
    launch(gb2, one_thread(), graph_kernels().empty_kernel);
  gb2.end_building();
  try {
    graph.update(gb2);
    ADD_FAILURE() << "no exception";
  } catch (const cuwrap::GraphUpdateError& e) {
    EXPECT_NE(std::string(e.what()).find("CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"),
              std::string::npos)
        << e.what();
  }
}

// cuda.core: TypeError for anything but a GraphBuilder or GraphDefinition; here it does
// not compile.
template <class T>
concept Updatable = requires(Graph& g, const T& source) {
  g.update(source);
};
static_assert(Updatable<GraphBuilder> && Updatable<GraphDefinition>);
static_assert(!Updatable<const char*> && !Updatable<int>);

TEST(GraphUpdateTypes, test_graph_update_wrong_type) {
  // The static_asserts above are the test; this checks the same at run time for the record.
  EXPECT_FALSE(Updatable<std::string>);
  EXPECT_TRUE(Updatable<GraphDefinition>);
}

}  // namespace
