// cuda.core's tests/graph/test_graph_definition_lifetime.py: what a GraphDefinition, its
// branches and the Graphs instantiated from it keep alive, and for how long.
//
// cuda.core observes release with weak references to Python objects; here a host
// function captures a std::shared_ptr token and a std::weak_ptr to it expires when the
// function is deleted. The driver deletes a host function (a CUDA user object) on a
// thread of its own once nothing holds it, so release is awaited with a deadline, as
// cuda.core's _wait_until does. cuwrap keeps kernels alive for the graphs that launch
// them; events and memory operands are the caller's to keep (README.md lists those tests).
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
using cuwrap::ConditionalNode;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

class GraphDefinitionLifetime : public cuwrap::testing::DeviceTest {};

using cuwrap::conformance::wait_until;

bool expired(const std::vector<std::weak_ptr<int>>& refs) {
  return std::all_of(refs.begin(), refs.end(), [](const auto& r) { return r.expired(); });
}

// cuda.core's _COND_BUILDERS: one conditional node of each kind and its branch count.
struct ConditionalCase {
  const char* name;
  std::size_t expected_count;
  std::function<ConditionalNode(GraphDefinition&, CUgraphConditionalHandle)> make;
  /// Add the node to `g`, on a new condition of `g` (cuda.core's try_create_condition).
  ConditionalNode add_to(GraphDefinition& g) const {
    return make(g, g.create_conditional_handle());
  }
};

std::vector<ConditionalCase> conditional_cases() {
  std::vector<ConditionalCase> cases;
  cases.push_back(
      {"if", 1, [](GraphDefinition& g, CUgraphConditionalHandle c) { return g.if_cond({}, c); }});
  if (cuwrap::driver_version() >= 12080) {
    cases.push_back({"if_else", 2, [](GraphDefinition& g, CUgraphConditionalHandle c) {
                       return g.if_else({}, c);
                     }});
  }
  cases.push_back({"while", 1, [](GraphDefinition& g, CUgraphConditionalHandle c) {
                     return g.while_loop({}, c);
                   }});
  if (cuwrap::driver_version() >= 12080 && cuwrap::bindings_version() >= 12080) {
    cases.push_back({"switch", 4, [](GraphDefinition& g, CUgraphConditionalHandle c) {
                       return g.switch_({}, c, 4);
                     }});
  }
  return cases;
}

// A kernel in a library of its own, so that the test can drop every reference it holds
// (graph_kernels() keeps its library for the whole process).
struct OwnKernel {
  cuwrap::ObjectCode code;
  cuwrap::Kernel kernel;
};

OwnKernel compile_empty_kernel(const cuwrap::Device& device) {
  cuwrap::ProgramOptions options;
  options.arch = "sm_" + device.arch();
  cuwrap::Program program(R"(extern "C" __global__ void empty_kernel() {})", cuwrap::CodeType::Cxx,
                          options);
  cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
  cuwrap::Kernel kernel = code.get_kernel("empty_kernel");
  return OwnKernel{std::move(code), std::move(kernel)};
}

// Run `graph` once on a new stream of `device` and wait for it.
void run_once(Graph& graph, const cuwrap::Device& device) {
  const Stream stream = device.create_stream();
  graph.launch(stream);
  stream.sync();
}

// The order host functions ran in (written on the driver's thread, read after a sync).
struct CallLog {
  std::mutex mutex;
  std::vector<std::string> calls;
  void add(const char* name) {
    const std::lock_guard<std::mutex> lock(mutex);
    calls.emplace_back(name);
  }
  std::vector<std::string> read() {
    const std::lock_guard<std::mutex> lock(mutex);
    return calls;
  }
};

// cuda.core's ctypes callbacks: a C function taking the user data pointer.
std::atomic<bool> g_raw_called{false};
std::atomic<int> g_raw_byte{0};
void raw_fn(void* /*data*/) { g_raw_called = true; }
void lifetime_read_byte(void* data) { g_raw_byte = *static_cast<const std::uint8_t*>(data); }

// =============================================================================
// Conditional body graph lifetime

TEST_F(GraphDefinitionLifetime, test_branches_survive_parent_deletion) {
  for (const ConditionalCase& c : conditional_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<GraphDefinition> branches;
    {
      GraphDefinition g;
      branches = c.add_to(g).branches;
      ASSERT_EQ(branches.size(), c.expected_count);
    }  // the parent GraphDefinition is destroyed; the body graphs live on with the branches
    for (const GraphDefinition& branch : branches) {
      EXPECT_TRUE(branch.is_open());
      EXPECT_TRUE(branch.nodes().empty());
    }
  }
}

TEST_F(GraphDefinitionLifetime, test_branches_usable_after_parent_deletion) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::Kernel& kernel = graph_kernels().empty_kernel;
  for (const ConditionalCase& c : conditional_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<GraphDefinition> branches;
    {
      GraphDefinition g;
      branches = c.add_to(g).branches;
      GraphDefinition moved(std::move(g));  // moved, then closed: the branches stay usable
      moved.close();
    }
    for (GraphDefinition& branch : branches) {
      branch.launch({}, one_thread(), kernel);
      EXPECT_EQ(branch.nodes().size(), 1U);
    }
  }
}

TEST_F(GraphDefinitionLifetime, test_destroying_conditional_node_releases_branch_attachments) {
  for (const ConditionalCase& c : conditional_cases()) {
    SCOPED_TRACE(c.name);
    GraphDefinition graph_def;
    ConditionalNode owner = c.add_to(graph_def);
    std::vector<std::weak_ptr<int>> callback_refs;
    for (GraphDefinition& branch : owner.branches) {
      auto token = std::make_shared<int>(0);
      callback_refs.push_back(token);
      branch.callback({}, [token] { ++*token; });
    }
    owner.branches.clear();  // cuda.core drops its branch objects first
    ASSERT_EQ(callback_refs.size(), c.expected_count);
    for (const auto& ref : callback_refs) {
      EXPECT_FALSE(ref.expired()) << "the branch graph holds its host function";
    }
    graph_def.destroy_node(owner.node);
    EXPECT_TRUE(wait_until([&] { return expired(callback_refs); }))
        << "destroying the conditional node releases every branch's host function";
  }
}

TEST_F(GraphDefinitionLifetime, test_destroying_conditional_node_invalidates_branch_handles) {
  for (const ConditionalCase& c : conditional_cases()) {
    SCOPED_TRACE(c.name);
    GraphDefinition graph_def;
    ConditionalNode owner = c.add_to(graph_def);
    for (GraphDefinition& branch : owner.branches) {
      branch.callback({}, [] {});
    }
    std::vector<GraphNode> branch_nodes;
    for (GraphDefinition& branch : owner.branches) {
      branch_nodes.push_back(branch.nodes().front());
    }
    graph_def.destroy_node(owner.node);
    ASSERT_EQ(owner.branches.size(), c.expected_count);
    for (const GraphNode& node : branch_nodes) {
      EXPECT_FALSE(node.is_valid()) << "a node of a destroyed branch";
    }
    // cuda.core: handle 0. The driver destroyed the body graphs with the node: the views
    // are closed rather than naming freed graphs.
    for (const GraphDefinition& branch : owner.branches) {
      EXPECT_FALSE(branch.is_open());
      EXPECT_THROW(static_cast<void>(branch.handle()), std::logic_error);
      EXPECT_THROW(static_cast<void>(branch.nodes()), std::logic_error);
    }
  }
  // Not in cuda.core's test: a body inside a destroyed body goes with it.
  GraphDefinition graph_def;
  ConditionalNode outer = graph_def.while_loop({}, graph_def.create_conditional_handle());
  GraphDefinition& body = outer.branches.front();
  ConditionalNode inner = body.if_cond({}, body.create_conditional_handle());
  graph_def.destroy_node(outer.node);
  EXPECT_FALSE(body.is_open());
  EXPECT_FALSE(inner.branches.front().is_open());
  EXPECT_THROW(static_cast<void>(inner.branches.front().nodes()), std::logic_error);
}

// =============================================================================
// Child graph (embed) lifetime

TEST_F(GraphDefinitionLifetime, test_child_graph_survives_parent_deletion) {
  CUWRAP_REQUIRE_NVRTC();
  std::optional<GraphDefinition> child_ref;
  {
    GraphDefinition child_def;
    child_def.launch({}, one_thread(), graph_kernels().empty_kernel);
    child_def.launch({}, one_thread(), graph_kernels().empty_kernel);
    GraphDefinition g;
    const GraphNode node = g.embed({}, child_def);
    child_ref.emplace(cuwrap::child_graph_node_graph(node));
  }  // g, node and child_def are gone
  ASSERT_TRUE(child_ref->is_open());
  EXPECT_EQ(child_ref->nodes().size(), 2U);
}

TEST_F(GraphDefinitionLifetime, test_nested_child_graph_lifetime) {
  CUWRAP_REQUIRE_NVRTC();
  std::optional<GraphDefinition> grandchild;
  {
    GraphDefinition inner;
    inner.launch({}, one_thread(), graph_kernels().empty_kernel);
    GraphDefinition middle;
    middle.embed({}, inner);
    GraphDefinition outer;
    const GraphNode outer_node = outer.embed({}, middle);
    const GraphDefinition middle_ref = cuwrap::child_graph_node_graph(outer_node);
    const std::vector<GraphNode> middle_nodes = middle_ref.nodes();
    const auto child_node =
        std::find_if(middle_nodes.begin(), middle_nodes.end(),
                     [](const GraphNode& n) { return n.type() == CU_GRAPH_NODE_TYPE_GRAPH; });
    ASSERT_NE(child_node, middle_nodes.end());
    grandchild.emplace(cuwrap::child_graph_node_graph(*child_node));
  }  // outer, its node, middle, inner and the middle view are gone
  ASSERT_TRUE(grandchild->is_open());
  EXPECT_EQ(grandchild->nodes().size(), 1U);
}

TEST_F(GraphDefinitionLifetime, test_destroying_child_node_invalidates_embedded_handles) {
  GraphDefinition inner;
  inner.callback({}, [] {});
  GraphDefinition middle;
  middle.embed({}, inner);
  GraphDefinition outer;
  const GraphNode outer_child = outer.embed({}, middle);
  const GraphDefinition embedded_middle = cuwrap::child_graph_node_graph(outer_child);
  const GraphNode embedded_child = embedded_middle.nodes().front();
  ASSERT_EQ(embedded_child.type(), CU_GRAPH_NODE_TYPE_GRAPH);
  const GraphDefinition embedded_inner = cuwrap::child_graph_node_graph(embedded_child);
  const GraphNode embedded_callback = embedded_inner.nodes().front();
  ASSERT_EQ(embedded_callback.type(), CU_GRAPH_NODE_TYPE_HOST);
  EXPECT_TRUE(embedded_callback.is_valid());

  outer.destroy_node(outer_child);

  EXPECT_FALSE(outer_child.is_valid());
  // cuda.core: handle 0; cuwrap's views of the freed graphs are closed.
  EXPECT_FALSE(embedded_middle.is_open());
  EXPECT_FALSE(embedded_inner.is_open());
  EXPECT_THROW(static_cast<void>(embedded_inner.handle()), std::logic_error);
  EXPECT_FALSE(embedded_child.is_valid());
  EXPECT_FALSE(embedded_callback.is_valid());
  EXPECT_THROW(static_cast<void>(embedded_callback.type()), std::logic_error);
}

TEST_F(GraphDefinitionLifetime,
       test_destroying_child_node_recursively_releases_subgraph_attachments) {
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> callback_weak = token;
  GraphDefinition outer;
  GraphNode outer_child;
  {
    GraphDefinition inner;
    inner.callback({}, [token] { ++*token; });
    GraphDefinition middle;
    middle.embed({}, inner);
    outer_child = outer.embed({}, middle);
  }  // inner and middle are gone: outer's copy of them holds the function
  token.reset();
  EXPECT_FALSE(callback_weak.expired());
  outer.destroy_node(outer_child);
  EXPECT_TRUE(wait_until([&] { return callback_weak.expired(); }));
}

// =============================================================================
// Host callback lifetime

TEST_F(GraphDefinitionLifetime, test_python_callable_callback_survives_del) {
  auto called = std::make_shared<std::atomic<bool>>(false);
  GraphDefinition g;
  {
    auto my_callback = [called] { *called = true; };
    g.callback({}, my_callback);
  }  // the caller's callable is gone; the node holds its own copy
  Graph graph = g.instantiate();
  const Stream stream = device().create_stream();
  graph.upload(stream);
  graph.launch(stream);
  stream.sync();
  EXPECT_TRUE(*called);
}

TEST_F(GraphDefinitionLifetime, test_callback_survives_source_node_deletion) {
  auto called = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<int> callback_weak;
  std::optional<Graph> graph;
  {
    auto token = std::make_shared<int>(0);
    callback_weak = token;
    GraphDefinition graph_def;
    const GraphNode node = graph_def.callback({}, [token, called] { *called = true; });
    graph.emplace(graph_def.instantiate());
    token.reset();
    graph_def.destroy_node(node);
  }
  EXPECT_FALSE(callback_weak.expired()) << "the instantiated graph holds the function";
  run_once(*graph, device());
  EXPECT_TRUE(*called);
  graph.reset();
  EXPECT_TRUE(wait_until([&] { return callback_weak.expired(); }));
}

// cuda.core keeps the memcpy node's operand owners; cuwrap's memcpy takes addresses, so
// the host function's own state stands for what the node keeps.
TEST_F(GraphDefinitionLifetime, test_inflight_launch_retains_attachments_until_completion) {
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool started = false;
    bool released = false;
  };
  auto gate = std::make_shared<Gate>();
  std::weak_ptr<int> attachment_weak;
  std::optional<Graph> graph;
  {
    auto token = std::make_shared<int>(0);
    attachment_weak = token;
    GraphDefinition graph_def;
    graph_def.callback({}, [token, gate] {
      std::unique_lock<std::mutex> lock(gate->mutex);
      gate->started = true;
      gate->cv.notify_all();
      gate->cv.wait_for(lock, std::chrono::seconds(5), [&] { return gate->released; });
    });
    graph.emplace(graph_def.instantiate());
  }
  EXPECT_FALSE(attachment_weak.expired());

  const Stream stream = device().create_stream();
  graph->launch(stream);
  bool started = false;
  {
    std::unique_lock<std::mutex> lock(gate->mutex);
    started = gate->cv.wait_for(lock, std::chrono::seconds(5), [&] { return gate->started; });
  }
  EXPECT_TRUE(started);

  std::atomic<bool> close_started{false};
  std::thread closer([&] {
    close_started = true;
    graph->close();
  });
  while (!close_started) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(attachment_weak.expired()) << "the launch in flight still uses it";
  {
    const std::lock_guard<std::mutex> lock(gate->mutex);
    gate->released = true;
  }
  gate->cv.notify_all();
  stream.sync();
  closer.join();
  graph.reset();
  EXPECT_TRUE(wait_until([&] { return attachment_weak.expired(); }));
}

TEST_F(GraphDefinitionLifetime, test_callback_survives_source_node_deletion_after_clone) {
  auto called = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<int> callback_weak;
  CUgraph cloned = nullptr;
  {
    auto token = std::make_shared<int>(0);
    callback_weak = token;
    GraphDefinition graph_def;
    const GraphNode node = graph_def.callback({}, [token, called] { *called = true; });
    cloned = cuwrap::driver::cuGraphClone(graph_def.handle());  // the driver's clone
    token.reset();
    graph_def.destroy_node(node);
  }
  EXPECT_FALSE(callback_weak.expired()) << "the clone holds the function";
  const CUgraphExec exec = cuwrap::driver::cuGraphInstantiate(cloned, 0);
  const Stream stream = device().create_stream();
  cuwrap::driver::cuGraphLaunch(exec, stream.handle());
  stream.sync();
  EXPECT_TRUE(*called);
  cuwrap::driver::cuGraphExecDestroy(exec);
  cuwrap::driver::cuGraphDestroy(cloned);
  EXPECT_TRUE(wait_until([&] { return callback_weak.expired(); }));
}

TEST_F(GraphDefinitionLifetime, test_attachment_released_only_after_last_executable_is_destroyed) {
  auto called = std::make_shared<std::atomic<int>>(0);
  std::weak_ptr<int> callback_weak;
  std::optional<Graph> first;
  std::optional<Graph> second;
  {
    auto token = std::make_shared<int>(0);
    callback_weak = token;
    GraphDefinition graph_def;
    graph_def.callback({}, [token, called] { ++*called; });
    first.emplace(graph_def.instantiate());
    second.emplace(graph_def.instantiate());
  }
  EXPECT_FALSE(callback_weak.expired());
  first.reset();
  cuwrap::detail::release_finished_graphs();
  EXPECT_FALSE(callback_weak.expired()) << "the second Graph still holds the function";
  run_once(*second, device());
  EXPECT_EQ(*called, 1);
  second.reset();
  EXPECT_TRUE(wait_until([&] { return callback_weak.expired(); }));
}

TEST_F(GraphDefinitionLifetime,
       test_new_node_attachment_does_not_replace_deleted_node_exec_attachment) {
  auto log = std::make_shared<CallLog>();
  std::weak_ptr<int> old_weak;
  std::weak_ptr<int> new_weak;
  std::optional<Graph> old_graph;
  std::optional<Graph> new_graph;
  {
    auto old_token = std::make_shared<int>(0);
    auto new_token = std::make_shared<int>(0);
    old_weak = old_token;
    new_weak = new_token;
    GraphDefinition graph_def;
    const GraphNode old_node = graph_def.callback({}, [old_token, log] { log->add("old"); });
    old_graph.emplace(graph_def.instantiate());
    graph_def.destroy_node(old_node);
    graph_def.callback({}, [new_token, log] { log->add("new"); });
    new_graph.emplace(graph_def.instantiate());
  }
  EXPECT_FALSE(old_weak.expired());
  EXPECT_FALSE(new_weak.expired());

  const Stream stream = device().create_stream();
  old_graph->launch(stream);
  new_graph->launch(stream);
  stream.sync();
  EXPECT_EQ(log->read(), (std::vector<std::string>{"old", "new"}));

  old_graph.reset();
  EXPECT_TRUE(wait_until([&] { return old_weak.expired(); }))
      << "the old function went with the only Graph that used it";
  EXPECT_FALSE(new_weak.expired());
  new_graph.reset();
  EXPECT_TRUE(wait_until([&] { return new_weak.expired(); }));
}

TEST_F(GraphDefinitionLifetime, test_cfunc_callback_survives_del) {
  g_raw_called = false;
  GraphDefinition g;
  {
    void (*fn)(void*) = &raw_fn;
    g.callback({}, [fn] { fn(nullptr); });
  }
  Graph graph = g.instantiate();
  const Stream stream = device().create_stream();
  graph.upload(stream);
  graph.launch(stream);
  stream.sync();
  EXPECT_TRUE(g_raw_called);
}

TEST_F(GraphDefinitionLifetime, test_cfunc_bytes_user_data_survives_del) {
  g_raw_byte = 0;
  GraphDefinition g;
  {
    const std::vector<std::uint8_t> payload{0xCD};
    // The callable holds its own copy of the bytes it passes.
    g.callback({}, [user_data = payload]() mutable { lifetime_read_byte(user_data.data()); });
  }
  Graph graph = g.instantiate();
  const Stream stream = device().create_stream();
  graph.upload(stream);
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(g_raw_byte, 0xCD);
}

// =============================================================================
// Kernel lifetime

// cuda.core reads node.kernel back; cuwrap's node holds the CUfunction, whose library
// the graph keeps loaded: running the graph shows it.
TEST_F(GraphDefinitionLifetime, test_kernel_node_keeps_kernel_alive) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  GraphNode node;
  {
    const OwnKernel k = compile_empty_kernel(device());
    node = g.launch({}, one_thread(), k.kernel);
  }  // the Kernel and its ObjectCode are gone
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_NE(cuwrap::kernel_node_params(node).function, nullptr);
  Graph graph = g.instantiate();
  run_once(graph, device());
}

TEST_F(GraphDefinitionLifetime, test_kernel_survives_graph_instantiation_and_execution) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  {
    const OwnKernel k = compile_empty_kernel(device());
    g.launch({}, one_thread(), k.kernel);
  }
  Graph graph = g.instantiate();
  // A kernel whose library was unloaded fails the launch or the synchronisation.
  EXPECT_NO_THROW(run_once(graph, device()));
}

// cuda.core clones with cuGraphClone; cuwrap keeps kernels with its own objects, so the
// clone is GraphDefinition::clone(), which keeps them too.
TEST_F(GraphDefinitionLifetime, test_kernel_survives_graph_clone_and_execution) {
  CUWRAP_REQUIRE_NVRTC();
  std::optional<GraphDefinition> copy;
  {
    GraphDefinition g;
    {
      const OwnKernel k = compile_empty_kernel(device());
      g.launch({}, one_thread(), k.kernel);
    }
    copy.emplace(g.clone());
  }  // the kernel, its library's other owners and the original graph are gone
  Graph graph = copy->instantiate();
  EXPECT_NO_THROW(run_once(graph, device()));
}

TEST_F(GraphDefinitionLifetime, test_kernel_node_reconstruction_preserves_validity) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::Event event = device().create_event();
  GraphDefinition g;
  GraphNode kernel_node;
  GraphNode successor;
  {
    const OwnKernel k = compile_empty_kernel(device());
    kernel_node = g.launch({}, one_thread(), k.kernel);
    successor = g.record_event({{kernel_node}}, event);
  }
  const std::vector<GraphNode> preds = g.predecessors(successor);
  ASSERT_EQ(preds.size(), 1U);
  EXPECT_EQ(preds.front(), kernel_node);
  EXPECT_EQ(preds.front().type(), CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_NE(cuwrap::kernel_node_params(preds.front()).function, nullptr);
  Graph graph = g.instantiate();
  run_once(graph, device());
}

// cuda.core drops its node object and rebuilds it from the driver by walking pred; a
// GraphNode is the driver's handle, so the walk and the parameters read back are checked.
TEST_F(GraphDefinitionLifetime, test_graph_nodes_reconstructed_via_pred_chain) {
  const bool pools = device().properties().memory_pools_supported() != 0;
  for (const char* kind : {"memcpy", "event_record", "event_wait", "free"}) {
    SCOPED_TRACE(kind);
    const std::string name = kind;
    if (name == "free" && !pools) {
      continue;  // cuda.core skips: graph memory nodes need memory pools
    }
    cuwrap::LegacyPinnedMemoryResource mr;
    const Buffer src = mr.allocate(8);
    const Buffer dst = mr.allocate(8);
    const cuwrap::Event event = device().create_event();
    const cuwrap::Event other = device().create_event();
    GraphDefinition g;
    GraphNode successor;
    std::function<void(GraphNode)> check;
    if (name == "memcpy") {
      const GraphNode node = g.memcpy({}, dst.handle(), src.handle(), 8);
      successor = g.record_event({{node}}, other);
      check = [&](GraphNode n) {
        EXPECT_EQ(n.type(), CU_GRAPH_NODE_TYPE_MEMCPY);
        EXPECT_EQ(cuwrap::memcpy_node_params(n),
                  (cuwrap::MemcpyNodeParams{dst.handle(), src.handle(), 8}));
      };
    } else if (name == "event_record") {
      const GraphNode node = g.record_event({}, event);
      successor = g.wait_event({{node}}, other);
      check = [&](GraphNode n) {
        EXPECT_EQ(n.type(), CU_GRAPH_NODE_TYPE_EVENT_RECORD);
        EXPECT_EQ(cuwrap::event_node_event(n), event.handle());
      };
    } else if (name == "event_wait") {
      const GraphNode node = g.wait_event({}, event);
      successor = g.record_event({{node}}, other);
      check = [&](GraphNode n) {
        EXPECT_EQ(n.type(), CU_GRAPH_NODE_TYPE_WAIT_EVENT);
        EXPECT_EQ(cuwrap::event_node_event(n), event.handle());
      };
    } else {
      const cuwrap::GraphAllocation alloc = g.alloc({}, 64);
      const GraphNode node = g.free({{alloc.node}}, alloc.address);
      successor = g.record_event({{node}}, other);
      check = [address = alloc.address](GraphNode n) {
        EXPECT_EQ(n.type(), CU_GRAPH_NODE_TYPE_MEM_FREE);
        EXPECT_EQ(cuwrap::free_node_address(n), address);
      };
    }
    const std::vector<GraphNode> preds = g.predecessors(successor);
    ASSERT_EQ(preds.size(), 1U);
    check(preds.front());
  }
}

}  // namespace
