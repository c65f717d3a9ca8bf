// cuda.core's tests/graph/test_graph_node_update.py: changing one node, of a definition
// before instantiation (GraphDefinition::set_*_params, set_event_node) or of an instantiated
// graph (Graph::set_*_node), and what each keeps alive.
//
// cuda.core's `graph[node].update(...)` is `graph.set_<kind>_node(node, ...)` here.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "graph_support.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using conformance::graph_kernels;
using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

using cuwrap::conformance::wait_until;

// Four bytes of pinned host memory the test reads and writes directly.
struct Pinned {
  static cuwrap::LegacyPinnedMemoryResource& mr() {
    static cuwrap::LegacyPinnedMemoryResource resource;
    return resource;
  }
  Buffer buffer = mr().allocate(4);
  unsigned char* bytes() const { return reinterpret_cast<unsigned char*>(buffer.handle()); }
  int& as_int() const { return *reinterpret_cast<int*>(buffer.handle()); }
  CUdeviceptr address() const { return buffer.handle(); }
  void set(unsigned char v) const { std::memset(bytes(), v, 4); }
  std::vector<unsigned char> read() const { return {bytes(), bytes() + 4}; }
};

// A host function that blocks until released, to keep a launch in flight.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool started = false;
  bool released = false;
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    started = true;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(30), [this] { return released; });
  }
  bool wait_started() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(5), [this] { return started; });
  }
  void release() {
    const std::lock_guard<std::mutex> lock(mutex);
    released = true;
    cv.notify_all();
  }
};

class GraphNodeUpdate : public cuwrap::testing::DeviceTest {
 protected:
  Stream stream_;  // assigned in SetUp
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    stream_ = device_->create_stream();
  }
  void run(Graph& graph) {
    graph.launch(stream_);
    stream_.sync();
  }
};

template <class F>
std::shared_ptr<F> shared_fn(F f) {
  return std::make_shared<F>(std::move(f));
}

// ---------------------------------------------------------------------------------

TEST_F(GraphNodeUpdate, test_kernel_update_rejects_unsupported_config) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  const GraphNode node = g.launch({}, one_thread(), graph_kernels().empty_kernel);
  Graph graph = g.instantiate();
  cuwrap::LaunchConfig clustered = one_thread();
  clustered.cluster = cuwrap::Dim3(1, 1, 1);
  cuwrap::LaunchConfig cooperative = one_thread();
  cooperative.cooperative_launch = true;
  EXPECT_THROW(graph.set_kernel_node(node, cooperative, graph_kernels().empty_kernel),
               std::invalid_argument);
  // A cluster of 1x1x1 is no cluster: the same as the node's.
  EXPECT_NO_THROW(graph.set_kernel_node(node, clustered, graph_kernels().empty_kernel));
}

TEST_F(GraphNodeUpdate, test_memcpy_update_between_host_and_device) {
  for (const bool device_is_src : {true, false}) {
    Pinned host_src;
    Pinned host_dst;
    host_src.set(0x5A);
    host_dst.set(0);
    Buffer device_buffer = device_->allocate(4, stream_);
    device_buffer.fill(std::uint8_t{0}, stream_);
    stream_.sync();  // the fill runs on a non-blocking stream: done before the copy below
    if (device_is_src) {
      cuwrap::driver::cuMemcpyHtoD(device_buffer.handle(), host_src.bytes(), 4);
    }
    GraphDefinition g;
    const GraphNode node = g.memcpy({}, host_dst.address(), host_src.address(), 4);
    cuwrap::MemcpyNodeParams p = cuwrap::memcpy_node_params(node);
    (device_is_src ? p.src : p.dst) = device_buffer.handle();
    g.set_memcpy_node(node, p);
    Graph graph = g.instantiate();
    run(graph);
    if (!device_is_src) {
      cuwrap::driver::cuMemcpyDtoH(host_dst.bytes(), device_buffer.handle(), 4);
    }
    EXPECT_EQ(host_dst.read(), std::vector<unsigned char>(4, 0x5A)) << device_is_src;
  }
}

// The definition's node changes; graphs instantiated before keep the old parameters.
TEST_F(GraphNodeUpdate, test_definition_node_update_changes_future_instantiations) {
  CUWRAP_REQUIRE_NVRTC();
  {  // memset value and destination
    Pinned a, b;
    GraphDefinition g;
    const GraphNode node = g.memset({}, a.address(), std::uint8_t{0x11}, 4);
    Graph old_graph = g.instantiate();
    g.set_memset_node(node, {b.address(), 0x22, 1, 4, 1, 0});
    EXPECT_EQ(cuwrap::memset_node_params(node).value, 0x22U);
    Graph new_graph = g.instantiate();
    a.set(0), b.set(0);
    run(old_graph);
    EXPECT_EQ(a.read(), std::vector<unsigned char>(4, 0x11));
    EXPECT_EQ(b.read(), std::vector<unsigned char>(4, 0));
    a.set(0), b.set(0);
    run(new_graph);
    EXPECT_EQ(a.read(), std::vector<unsigned char>(4, 0));
    EXPECT_EQ(b.read(), std::vector<unsigned char>(4, 0x22));
  }
  {  // memcpy size
    Pinned src, dst;
    GraphDefinition g;
    const GraphNode node = g.memcpy({}, dst.address(), src.address(), 2);
    Graph old_graph = g.instantiate();
    g.set_memcpy_node(node, {dst.address(), src.address(), 4});
    EXPECT_EQ(cuwrap::memcpy_node_params(node).size, 4U);
    Graph new_graph = g.instantiate();
    src.set(0x11), dst.set(0);
    run(old_graph);
    EXPECT_EQ(dst.read(), (std::vector<unsigned char>{0x11, 0x11, 0, 0}));
    dst.set(0);
    run(new_graph);
    EXPECT_EQ(dst.read(), std::vector<unsigned char>(4, 0x11));
  }
  {  // kernel arguments
    Pinned first, second;
    GraphDefinition g;
    const GraphNode node = g.launch({}, one_thread(), graph_kernels().add_one, first.address());
    Graph old_graph = g.instantiate();
    g.set_kernel_node(node, one_thread(), graph_kernels().add_one, second.address());
    Graph new_graph = g.instantiate();
    first.as_int() = 0, second.as_int() = 0;
    run(old_graph);
    EXPECT_EQ(first.as_int(), 1);
    EXPECT_EQ(second.as_int(), 0);
    run(new_graph);
    EXPECT_EQ(first.as_int(), 1);
    EXPECT_EQ(second.as_int(), 1);
  }
  {  // event record
    const cuwrap::Event original = device_->create_event();
    const cuwrap::Event replacement = device_->create_event();
    GraphDefinition g;
    const GraphNode node = g.record_event({}, original);
    g.set_event_node(node, replacement);
    EXPECT_EQ(cuwrap::event_node_event(node), replacement.handle());
  }
}

// A destroyed definition node is known as such (every copy of its GraphNode), is gone
// from nodes(), and refuses every change before the driver: std::logic_error naming
// "GraphNode has been destroyed" (cuda.core: RuntimeError with that text). Each kind of
// cuda.core's definition_update_case: memset, memcpy, kernel, event record.
TEST_F(GraphNodeUpdate, test_destroyed_definition_node_rejects_update) {
  CUWRAP_REQUIRE_NVRTC();
  Pinned a;
  const cuwrap::Event replacement = device_->create_event();
  GraphDefinition g;
  const GraphNode memset = g.memset({}, a.address(), std::uint8_t{0x11}, 4);
  const GraphNode memcpy = g.memcpy({}, a.address(), a.address(), 4);
  const GraphNode kernel = g.launch({}, one_thread(), graph_kernels().add_one, a.address());
  const GraphNode record = g.record_event({}, replacement);
  const std::vector<std::pair<GraphNode, std::function<void(const GraphNode&)>>> cases{
      {memset,
       [&](const GraphNode& n) {
         g.set_memset_node(n, {a.address(), 0x22, 1, 4, 1, 0});
       }},
      {memcpy,
       [&](const GraphNode& n) {
         g.set_memcpy_node(n, {a.address(), a.address(), 2});
       }},
      {kernel,
       [&](const GraphNode& n) {
         g.set_kernel_node(n, one_thread(), graph_kernels().add_one, a.address());
       }},
      {record, [&](const GraphNode& n) { g.set_event_node(n, replacement); }},
  };
  for (const auto& [node, update] : cases) {
    const GraphNode copy = node;
    g.destroy_node(node);
    EXPECT_FALSE(node.is_valid());
    EXPECT_FALSE(copy.is_valid());
    const std::vector<GraphNode> nodes = g.nodes();
    EXPECT_EQ(std::find(nodes.begin(), nodes.end(), node), nodes.end());
    try {
      update(copy);
      ADD_FAILURE() << "a destroyed node was updated";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("GraphNode has been destroyed"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(copy.is_valid());
  }
  EXPECT_EQ(g.node_count(), 0U);
}

// Each kind of node of an instantiated graph changes; the definition stays as it was.
TEST_F(GraphNodeUpdate, test_executable_node_update_changes_existing_exec) {
  CUWRAP_REQUIRE_NVRTC();
  {  // host callback
    std::vector<std::string> called;
    GraphDefinition g;
    const GraphNode node = g.callback({}, [&called] { called.emplace_back("original"); });
    Graph graph = g.instantiate();
    graph.set_host_node(node, [&called] { called.emplace_back("replacement"); });
    run(graph);
    EXPECT_EQ(called, std::vector<std::string>{"replacement"});
  }
  {  // memset value and destination
    Pinned a, b;
    GraphDefinition g;
    const GraphNode node = g.memset({}, a.address(), std::uint8_t{0x11}, 4);
    Graph graph = g.instantiate();
    graph.set_memset_node(node, {.dst = b.address(), .value = 0x22, .width = 4});
    EXPECT_EQ(cuwrap::memset_node_params(node).value, 0x11U);  // the definition is unchanged
    a.set(0), b.set(0);
    run(graph);
    EXPECT_EQ(a.read(), std::vector<unsigned char>(4, 0));
    EXPECT_EQ(b.read(), std::vector<unsigned char>(4, 0x22));
  }
  {  // memcpy source, destination and size
    Pinned src, other_src, dst;
    GraphDefinition g;
    const GraphNode node = g.memcpy({}, dst.address(), src.address(), 2);
    Graph graph = g.instantiate();
    graph.set_memcpy_node(node, {.dst = dst.address(), .src = other_src.address(), .size = 4});
    src.set(0x11), other_src.set(0x22), dst.set(0);
    run(graph);
    EXPECT_EQ(dst.read(), std::vector<unsigned char>(4, 0x22));
  }
  {  // kernel arguments and function
    Pinned first, second;
    GraphDefinition g;
    const GraphNode node = g.launch({}, one_thread(), graph_kernels().add_one, first.address());
    Graph graph = g.instantiate();
    graph.set_kernel_node(node, one_thread(), graph_kernels().add_one, second.address());
    first.as_int() = 0, second.as_int() = 0;
    run(graph);
    EXPECT_EQ(first.as_int(), 0);
    EXPECT_EQ(second.as_int(), 1);
    graph.set_kernel_node(node, one_thread(), graph_kernels().empty_kernel);
    run(graph);
    EXPECT_EQ(second.as_int(), 1);
  }
  {  // child graph
    std::vector<std::string> called;
    GraphDefinition original_child;
    original_child.callback({}, [&called] { called.emplace_back("original"); });
    GraphDefinition replacement_child;
    replacement_child.callback({}, [&called] { called.emplace_back("replacement"); });
    GraphDefinition g;
    const GraphNode node = g.embed({}, original_child);
    Graph graph = g.instantiate();
    graph.set_child_graph_node(node, replacement_child);
    run(graph);
    EXPECT_EQ(called, std::vector<std::string>{"replacement"});
  }
  {  // event record: the graph records the replacement
    cuwrap::EventOptions timed;
    timed.enable_timing = true;
    const cuwrap::Event start = device_->create_event(timed);
    const cuwrap::Event original = device_->create_event(timed);
    const cuwrap::Event replacement = device_->create_event(timed);
    GraphDefinition g;
    const GraphNode node = g.record_event({}, original);
    Graph graph = g.instantiate();
    graph.set_event_node(node, replacement);
    stream_.record(start);
    run(graph);
    EXPECT_GE(replacement - start, 0.0f);
    EXPECT_ANY_THROW(static_cast<void>(original - start));  // never recorded
  }
}

TEST_F(GraphNodeUpdate, test_executable_node_enable_state) {
  CUWRAP_REQUIRE_NVRTC();
  Pinned src, dst;
  GraphDefinition g;
  const GraphNode nodes[] = {g.launch({}, one_thread(), graph_kernels().empty_kernel),
                             g.memcpy({}, dst.address(), src.address(), 4),
                             g.memset({}, dst.address(), std::uint8_t{0}, 4)};
  Graph graph = g.instantiate();
  for (const GraphNode& node : nodes) {
    EXPECT_TRUE(graph.is_node_enabled(node));
    graph.set_node_enabled(node, false);
    EXPECT_FALSE(graph.is_node_enabled(node));
    graph.set_node_enabled(node, false);
    EXPECT_FALSE(graph.is_node_enabled(node));
    graph.set_node_enabled(node, true);
    EXPECT_TRUE(graph.is_node_enabled(node));
    graph.set_node_enabled(node, true);
    EXPECT_TRUE(graph.is_node_enabled(node));
  }
}

TEST_F(GraphNodeUpdate, test_executable_node_view_rejects_unsupported_and_destroyed_nodes) {
  GraphDefinition g;
  const GraphNode empty = g.empty();
  Graph graph = g.instantiate();
  EXPECT_THROW(graph.set_memset_node(empty, {.width = 4}), std::invalid_argument);
  EXPECT_THROW(graph.set_host_node(empty, [] {}), std::invalid_argument);
  EXPECT_THROW(graph.set_memcpy_node(GraphNode(), {.size = 4}), std::invalid_argument);
  // A node destroyed in its definition names nothing the driver still knows: refused
  // before the driver (cuda.core: RuntimeError "GraphNode has been destroyed").
  g.destroy_node(empty);
  EXPECT_THROW(graph.set_node_enabled(empty, false), std::logic_error);
  EXPECT_THROW(graph.set_memset_node(empty, {.width = 4}), std::logic_error);
}

TEST_F(GraphNodeUpdate, test_executable_attachment_accumulators_are_independent) {
  std::vector<std::string> called;
  auto first_token = std::make_shared<int>(0);
  auto second_token = std::make_shared<int>(0);
  const std::weak_ptr<int> first_weak = first_token, second_weak = second_token;
  std::optional<Graph> first, second;
  {
    GraphDefinition source;
    const GraphNode node = source.callback({}, [&called] { called.emplace_back("original"); });
    first.emplace(source.instantiate());
    second.emplace(source.instantiate());
    first->set_host_node(node,
                         [t = std::move(first_token), &called] { called.emplace_back("first"); });
    second->set_host_node(
        node, [t = std::move(second_token), &called] { called.emplace_back("second"); });
  }
  EXPECT_FALSE(first_weak.expired());
  EXPECT_FALSE(second_weak.expired());
  first->launch(stream_);
  second->launch(stream_);
  stream_.sync();
  EXPECT_EQ(called, (std::vector<std::string>{"first", "second"}));
  first.reset();
  EXPECT_TRUE(wait_until([&] { return first_weak.expired(); }));
  EXPECT_FALSE(second_weak.expired());
  second.reset();
  EXPECT_TRUE(wait_until([&] { return second_weak.expired(); }));
}

TEST_F(GraphNodeUpdate, test_rejected_executable_update_rolls_back_owners) {
  CUWRAP_REQUIRE_NVRTC();
  Pinned active;
  active.as_int() = 0;
  GraphDefinition source;
  source.launch({}, one_thread(), graph_kernels().add_one, active.address());
  Graph graph = source.instantiate();
  const std::size_t kept = cuwrap::detail::kept_alive_count(graph);
  GraphDefinition unrelated;
  const GraphNode unrelated_node =
      unrelated.launch({}, one_thread(), graph_kernels().add_one, active.address());
  EXPECT_THROW(graph.set_kernel_node(unrelated_node, one_thread(), graph_kernels().add_one,
                                     active.address()),
               cuwrap::DriverError);
  EXPECT_EQ(cuwrap::detail::kept_alive_count(graph), kept) << "a refused change keeps nothing";
  run(graph);
  EXPECT_EQ(active.as_int(), 1);
}

TEST_F(GraphNodeUpdate, test_whole_update_replaces_executable_attachment_accumulator) {
  std::vector<std::string> called;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> individual_weak = token;
  GraphDefinition source;
  const GraphNode node = source.callback({}, [&called] { called.emplace_back("original"); });
  Graph graph = source.instantiate();
  graph.set_host_node(node, [t = std::move(token), &called] { called.emplace_back("individual"); });
  GraphDefinition replacement;
  replacement.callback({}, [&called] { called.emplace_back("whole"); });
  graph.update(replacement);
  EXPECT_TRUE(wait_until([&] { return individual_weak.expired(); }));  // never launched
  run(graph);
  EXPECT_EQ(called, std::vector<std::string>{"whole"});
}

TEST_F(GraphNodeUpdate, test_failed_whole_update_preserves_executable_accumulator) {
  std::vector<std::string> called;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> active_weak = token;
  std::optional<Graph> graph;
  {
    GraphDefinition source;
    const GraphNode node = source.callback({}, [&called] { called.emplace_back("original"); });
    graph.emplace(source.instantiate());
    graph->set_host_node(node, [t = std::move(token), &called] { called.emplace_back("active"); });
    GraphDefinition rejected;
    rejected.callback({}, [&called] { called.emplace_back("rejected"); });
    rejected.empty();
    EXPECT_THROW(graph->update(rejected), cuwrap::DriverError);
  }
  EXPECT_FALSE(active_weak.expired());
  run(*graph);
  EXPECT_EQ(called, std::vector<std::string>{"active"});
  graph.reset();
  EXPECT_TRUE(wait_until([&] { return active_weak.expired(); }));
}

// A launch in flight keeps what it uses through an update; it is released after that
// launch (cuwrap releases it on the Graph's next call once the launch has finished).
TEST_F(GraphNodeUpdate, test_inflight_launch_defers_replaced_executable_owners) {
  Gate gate;
  std::atomic<int> inflight_calls{0};
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> inflight_weak = token;
  GraphDefinition source;
  const GraphNode blocking = source.callback({}, [&gate] { gate.run(); });
  const GraphNode second = source.callback({{blocking}}, [] {});
  Graph graph = source.instantiate();
  graph.set_host_node(second, [t = std::move(token), &inflight_calls] { ++inflight_calls; });
  GraphDefinition replacement;
  const GraphNode r1 = replacement.callback({}, [] {});
  replacement.callback({{r1}}, [] {});
  graph.launch(stream_);
  ASSERT_TRUE(gate.wait_started());
  graph.update(replacement);
  EXPECT_FALSE(inflight_weak.expired()) << "released while a launch may still call it";
  gate.release();
  stream_.sync();
  EXPECT_EQ(inflight_calls.load(), 1);
  run(graph);  // fences what the update replaced behind this launch
  run(graph);  // and releases it
  EXPECT_TRUE(wait_until([&] { return inflight_weak.expired(); }));
}

// cuda.core keeps every superseded host function until the Graph goes (CUDA cannot
// detach user objects from an executable graph); cuwrap owns them itself and releases
// one that no launch used at once.
TEST_F(GraphNodeUpdate, test_sequential_executable_updates_accumulate_owners) {
  std::vector<std::string> called;
  auto first = std::make_shared<int>(0);
  auto second = std::make_shared<int>(0);
  const std::weak_ptr<int> first_weak = first, second_weak = second;
  std::optional<Graph> graph;
  {
    GraphDefinition source;
    const GraphNode node = source.callback({}, [&called] { called.emplace_back("original"); });
    graph.emplace(source.instantiate());
    graph->set_host_node(node, [t = std::move(first), &called] { called.emplace_back("first"); });
    graph->set_host_node(node, [t = std::move(second), &called] { called.emplace_back("second"); });
  }
  EXPECT_TRUE(first_weak.expired()) << "never launched, so released at once";
  EXPECT_FALSE(second_weak.expired());
  run(*graph);
  EXPECT_EQ(called, std::vector<std::string>{"second"});
  graph.reset();
  EXPECT_TRUE(wait_until([&] { return second_weak.expired(); }));
}

TEST_F(GraphNodeUpdate, test_child_graph_update_transfers_source_owners_to_executable) {
  std::vector<std::string> called;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> replacement_weak = token;
  GraphDefinition original_child;
  original_child.callback({}, [&called] { called.emplace_back("original"); });
  GraphDefinition source;
  const GraphNode node = source.embed({}, original_child);
  std::optional<Graph> graph(source.instantiate());
  {
    GraphDefinition replacement_child;
    replacement_child.callback(
        {}, [t = std::move(token), &called] { called.emplace_back("replacement"); });
    graph->set_child_graph_node(node, replacement_child);
  }
  EXPECT_FALSE(replacement_weak.expired());
  run(*graph);
  EXPECT_EQ(called, std::vector<std::string>{"replacement"});
  graph.reset();
  EXPECT_TRUE(wait_until([&] { return replacement_weak.expired(); }));
}

// Closing a Graph while a launch runs keeps what that launch uses until it finished.
TEST_F(GraphNodeUpdate, test_closing_executable_during_launch_defers_owner_release) {
  Gate gate;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> inflight_weak = token;
  std::atomic<int> calls{0};
  GraphDefinition source;
  const GraphNode blocking = source.callback({}, [&gate] { gate.run(); });
  const GraphNode second = source.callback({{blocking}}, [] {});
  Graph graph = source.instantiate();
  graph.set_host_node(second, [t = std::move(token), &calls] { ++calls; });
  graph.launch(stream_);
  ASSERT_TRUE(gate.wait_started());
  graph.close();  // the launch still calls the function set on `second`
  cuwrap::detail::release_finished_graphs();
  EXPECT_FALSE(inflight_weak.expired()) << "released while the launch may still call it";
  gate.release();
  stream_.sync();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(wait_until([&] {
    cuwrap::detail::release_finished_graphs();
    return inflight_weak.expired();
  }));
}

}  // namespace
