// cuda.core's tests/graph/test_graph_definition.py: GraphDefinition topology, node
// types and their parameters, instantiation and execution.
//
// cuda.core parametrises over graph shapes and node kinds with pytest fixtures; each
// port loops over the same shapes or kinds inside one test and names the case in its
// failure messages.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using conformance::graph_kernels;
using conformance::one_thread;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

constexpr std::size_t kAllocSize = 1024;

// A graph shape and what its nodes' neighbours must be (cuda.core's GraphSpec).
struct GraphSpec {
  std::string name;
  GraphDefinition graph;
  std::map<std::string, GraphNode> nodes;
  std::set<std::pair<std::string, std::string>> edges;
};

std::vector<GraphSpec> graph_specs(bool include_empty) {
  std::vector<GraphSpec> specs;
  const auto alloc = [](GraphDefinition& g, std::vector<GraphNode> deps = {}) {
    return g.alloc(deps, kAllocSize).node;
  };
  if (include_empty) {
    specs.push_back({"empty", GraphDefinition(), {}, {}});
  }
  {
    GraphSpec s{"single", GraphDefinition(), {}, {}};
    s.nodes["a"] = alloc(s.graph);
    specs.push_back(std::move(s));
  }
  {
    GraphSpec s{"chain", GraphDefinition(), {}, {{"a", "b"}, {"b", "c"}}};
    s.nodes["a"] = alloc(s.graph);
    s.nodes["b"] = alloc(s.graph, {s.nodes["a"]});
    s.nodes["c"] = alloc(s.graph, {s.nodes["b"]});
    specs.push_back(std::move(s));
  }
  {
    GraphSpec s{"fan_out", GraphDefinition(), {}, {{"a", "b"}, {"a", "c"}, {"a", "d"}}};
    s.nodes["a"] = alloc(s.graph);
    for (const char* n : {"b", "c", "d"}) {
      s.nodes[n] = alloc(s.graph, {s.nodes["a"]});
    }
    specs.push_back(std::move(s));
  }
  {
    GraphSpec s{"fan_in", GraphDefinition(), {}, {{"a", "d"}, {"b", "d"}, {"c", "d"}}};
    for (const char* n : {"a", "b", "c"}) {
      s.nodes[n] = alloc(s.graph);
    }
    const std::vector<GraphNode> abc{s.nodes["a"], s.nodes["b"], s.nodes["c"]};
    s.nodes["d"] = s.graph.empty(abc);
    specs.push_back(std::move(s));
  }
  {
    GraphSpec s{"diamond", GraphDefinition(), {}, {{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}}};
    s.nodes["a"] = alloc(s.graph);
    s.nodes["b"] = alloc(s.graph, {s.nodes["a"]});
    s.nodes["c"] = alloc(s.graph, {s.nodes["a"]});
    const std::vector<GraphNode> bc{s.nodes["b"], s.nodes["c"]};
    s.nodes["d"] = s.graph.empty(bc);
    specs.push_back(std::move(s));
  }
  {
    GraphSpec s{"disconnected", GraphDefinition(), {}, {}};
    s.nodes["a"] = alloc(s.graph);
    s.nodes["b"] = alloc(s.graph);
    specs.push_back(std::move(s));
  }
  return specs;
}

std::string name_of(const GraphSpec& spec, GraphNode node) {
  for (const auto& [name, n] : spec.nodes) {
    if (n == node) {
      return name;
    }
  }
  return "?";
}

std::set<std::string> names(const GraphSpec& spec, const std::vector<GraphNode>& nodes) {
  std::set<std::string> result;
  for (const GraphNode& n : nodes) {
    result.insert(name_of(spec, n));
  }
  return result;
}

class GraphDefinitionConformance : public cuwrap::testing::DeviceTest {
 protected:
  bool cc90() const { return device_->compute_capability().major >= 9; }
  int read_int(CUdeviceptr address) {
    int value = -1;
    cuwrap::driver::cuMemcpyDtoH(&value, address, sizeof value);
    return value;
  }
  Stream stream() { return device_->create_stream(); }
};

// ---------------------------------------------------------------------------------
// Topology (every graph shape)

TEST_F(GraphDefinitionConformance, test_node_count) {
  for (const GraphSpec& spec : graph_specs(true)) {
    EXPECT_EQ(spec.graph.nodes().size(), spec.nodes.size()) << spec.name;
    EXPECT_EQ(spec.graph.node_count(), spec.nodes.size()) << spec.name;
  }
}

TEST_F(GraphDefinitionConformance, test_nodes_match) {
  for (const GraphSpec& spec : graph_specs(false)) {
    std::set<std::string> expected;
    for (const auto& entry : spec.nodes) {
      expected.insert(entry.first);
    }
    EXPECT_EQ(names(spec, spec.graph.nodes()), expected) << spec.name;
  }
}

TEST_F(GraphDefinitionConformance, test_edges) {
  for (const GraphSpec& spec : graph_specs(true)) {
    std::set<std::pair<std::string, std::string>> actual;
    for (const auto& [from, to] : spec.graph.edges()) {
      actual.emplace(name_of(spec, from), name_of(spec, to));
    }
    EXPECT_EQ(actual, spec.edges) << spec.name;
  }
}

TEST_F(GraphDefinitionConformance, test_pred) {
  for (const GraphSpec& spec : graph_specs(false)) {
    for (const auto& [name, node] : spec.nodes) {
      std::set<std::string> expected;
      for (const auto& [from, to] : spec.edges) {
        if (to == name)
          expected.insert(from);
      }
      EXPECT_EQ(names(spec, spec.graph.predecessors(node)), expected) << spec.name << " " << name;
    }
  }
}

TEST_F(GraphDefinitionConformance, test_succ) {
  for (const GraphSpec& spec : graph_specs(false)) {
    for (const auto& [name, node] : spec.nodes) {
      std::set<std::string> expected;
      for (const auto& [from, to] : spec.edges) {
        if (from == name)
          expected.insert(to);
      }
      EXPECT_EQ(names(spec, spec.graph.successors(node)), expected) << spec.name << " " << name;
    }
  }
}

// Every node's graph() is its GraphDefinition: a view of the same graph (cuda.core
// compares the GraphDefinitions; cuwrap's views share the handle). Also for the nodes
// read back through nodes().
TEST_F(GraphDefinitionConformance, test_node_graph_property) {
  for (const GraphSpec& spec : graph_specs(false)) {
    for (const auto& [name, node] : spec.nodes) {
      EXPECT_EQ(node.graph().handle(), spec.graph.handle()) << spec.name << " " << name;
    }
    for (const GraphNode& node : spec.graph.nodes()) {
      const GraphDefinition view = node.graph();
      EXPECT_EQ(view.handle(), spec.graph.handle()) << spec.name;
      EXPECT_EQ(view.node_count(), spec.graph.node_count()) << spec.name;
    }
  }
}

// ---------------------------------------------------------------------------------
// Node kinds: type and parameters, as made and as read back through nodes()

struct NodeCase {
  std::string name;
  CUgraphNodeType type;
  std::function<GraphNode(GraphDefinition&)> build;
  std::function<void(GraphNode)> check_params;  // may be empty
};

std::vector<NodeCase> node_cases(const Device& device, std::vector<cuwrap::Event>& events) {
  std::vector<NodeCase> cases;
  cases.push_back({"empty",
                   CU_GRAPH_NODE_TYPE_EMPTY,
                   [](GraphDefinition& g) {
                     const std::vector<GraphNode> ab{g.alloc({}, kAllocSize).node,
                                                     g.alloc({}, kAllocSize).node};
                     return g.empty(ab);
                   },
                   {}});
  cases.push_back({"alloc", CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                   [](GraphDefinition& g) {
                     const GraphNode entry = g.alloc({}, kAllocSize).node;
                     return g.alloc({{entry}}, kAllocSize).node;
                   },
                   [&device](GraphNode n) {
                     const cuwrap::AllocNodeParams p = cuwrap::alloc_node_params(n);
                     EXPECT_NE(p.dptr, 0U);
                     EXPECT_EQ(p.bytesize, kAllocSize);
                     EXPECT_EQ(p.device_id, device.device_id());
                     EXPECT_EQ(p.memory_type, cuwrap::GraphMemoryType::Device);
                     EXPECT_TRUE(p.peer_access.empty());
                   }});
  cases.push_back({"free", CU_GRAPH_NODE_TYPE_MEM_FREE,
                   [](GraphDefinition& g) {
                     const cuwrap::GraphAllocation a = g.alloc({}, kAllocSize);
                     return g.free({{a.node}}, a.address);
                   },
                   [](GraphNode n) { EXPECT_NE(cuwrap::free_node_address(n), 0U); }});
  const auto memset_case = [&](const char* name, auto value, std::size_t width, std::size_t height,
                               std::size_t pitch, unsigned expected_value, unsigned element_size) {
    cases.push_back({name, CU_GRAPH_NODE_TYPE_MEMSET,
                     [=](GraphDefinition& g) {
                       const cuwrap::GraphAllocation a = g.alloc({}, kAllocSize);
                       return g.memset({{a.node}}, a.address, value, width, height, pitch);
                     },
                     [=](GraphNode n) {
                       const cuwrap::MemsetNodeParams p = cuwrap::memset_node_params(n);
                       EXPECT_NE(p.dst, 0U);
                       EXPECT_EQ(p.value, expected_value);
                       EXPECT_EQ(p.element_size, element_size);
                       EXPECT_EQ(p.width, width);
                       EXPECT_EQ(p.height, height);
                       EXPECT_EQ(p.pitch, pitch);
                     }});
  };
  memset_case("memset", std::uint8_t{42}, kAllocSize, 1, 0, 42U, 1U);
  memset_case("memset_u16", std::uint16_t{0xCDAB}, kAllocSize / 2, 1, 0, 0xCDABU, 2U);
  memset_case("memset_u32", std::uint32_t{0x04030201}, kAllocSize / 4, 1, 0, 0x04030201U, 4U);
  memset_case("memset_2d", std::uint8_t{0xFF}, kAllocSize / 4, 4, kAllocSize / 4, 0xFFU, 1U);
  cases.push_back({"memcpy", CU_GRAPH_NODE_TYPE_MEMCPY,
                   [](GraphDefinition& g) {
                     const cuwrap::GraphAllocation src = g.alloc({}, kAllocSize);
                     const cuwrap::GraphAllocation dst = g.alloc({}, kAllocSize);
                     const std::vector<GraphNode> both{src.node, dst.node};
                     const GraphNode dep = g.empty(both);
                     return g.memcpy({{dep}}, dst.address, src.address, kAllocSize);
                   },
                   [](GraphNode n) {
                     const cuwrap::MemcpyNodeParams p = cuwrap::memcpy_node_params(n);
                     EXPECT_NE(p.dst, 0U);
                     EXPECT_NE(p.src, 0U);
                     EXPECT_EQ(p.size, kAllocSize);
                   }});
  cases.push_back(
      {"child_graph", CU_GRAPH_NODE_TYPE_GRAPH,
       [](GraphDefinition& g) {
         GraphDefinition child;
         child.launch({}, one_thread(), graph_kernels().empty_kernel);
         child.launch({}, one_thread(), graph_kernels().empty_kernel);
         return g.embed({}, child);
       },
       [](GraphNode n) { EXPECT_EQ(cuwrap::child_graph_node_graph(n).node_count(), 2U); }});
  cases.push_back({"host_callback",
                   CU_GRAPH_NODE_TYPE_HOST,
                   [](GraphDefinition& g) { return g.callback({}, [] {}); },
                   {}});
  events.push_back(device.create_event());
  const CUevent record_event = events.back().handle();
  cases.push_back(
      {"event_record", CU_GRAPH_NODE_TYPE_EVENT_RECORD,
       [&events, i = events.size() - 1](GraphDefinition& g) {
         const GraphNode entry = g.alloc({}, kAllocSize).node;
         return g.record_event({{entry}}, events[i]);
       },
       [record_event](GraphNode n) { EXPECT_EQ(cuwrap::event_node_event(n), record_event); }});
  events.push_back(device.create_event());
  const CUevent wait_event = events.back().handle();
  cases.push_back(
      {"event_wait", CU_GRAPH_NODE_TYPE_WAIT_EVENT,
       [&events, i = events.size() - 1](GraphDefinition& g) {
         const GraphNode entry = g.alloc({}, kAllocSize).node;
         return g.wait_event({{entry}}, events[i]);
       },
       [wait_event](GraphNode n) { EXPECT_EQ(cuwrap::event_node_event(n), wait_event); }});
  cases.push_back({"if_cond",
                   CU_GRAPH_NODE_TYPE_CONDITIONAL,
                   [](GraphDefinition& g) {
                     const cuwrap::ConditionalNode c = g.if_cond({}, g.create_conditional_handle());
                     EXPECT_EQ(c.branches.size(), 1U);
                     return c.node;
                   },
                   {}});
  cases.push_back({"while_loop",
                   CU_GRAPH_NODE_TYPE_CONDITIONAL,
                   [](GraphDefinition& g) {
                     const cuwrap::ConditionalNode c =
                         g.while_loop({}, g.create_conditional_handle());
                     EXPECT_EQ(c.branches.size(), 1U);
                     return c.node;
                   },
                   {}});
  if (cuwrap::driver_version() >= 12080 && cuwrap::bindings_version() >= 12080) {
    cases.push_back({"if_else",
                     CU_GRAPH_NODE_TYPE_CONDITIONAL,
                     [](GraphDefinition& g) {
                       const cuwrap::ConditionalNode c =
                           g.if_else({}, g.create_conditional_handle());
                       EXPECT_EQ(c.branches.size(), 2U);
                       return c.node;
                     },
                     {}});
    cases.push_back({"switch",
                     CU_GRAPH_NODE_TYPE_CONDITIONAL,
                     [](GraphDefinition& g) {
                       const cuwrap::ConditionalNode c =
                           g.switch_({}, g.create_conditional_handle(), 3);
                       EXPECT_EQ(c.branches.size(), 3U);
                       return c.node;
                     },
                     {}});
  }
  return cases;
}

// cuda.core's test_node_isinstance and test_node_type_property: in C++ every node is a
// GraphNode and its kind is type().
TEST_F(GraphDefinitionConformance, test_node_type_property) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<cuwrap::Event> events;
  for (const NodeCase& c : node_cases(*device_, events)) {
    GraphDefinition g;
    const GraphNode node = c.build(g);
    EXPECT_EQ(node.type(), c.type) << c.name;
  }
}

TEST_F(GraphDefinitionConformance, test_node_type_preserved_by_nodes) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<cuwrap::Event> events;
  for (const NodeCase& c : node_cases(*device_, events)) {
    GraphDefinition g;
    const GraphNode node = c.build(g);
    const std::vector<GraphNode> all = g.nodes();
    EXPECT_EQ(std::count(all.begin(), all.end(), node), 1) << c.name;
    for (const GraphNode& n : all) {
      if (n == node) {
        EXPECT_EQ(n.type(), c.type) << c.name;
      }
    }
  }
}

TEST_F(GraphDefinitionConformance, test_node_type_preserved_by_pred_succ) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<cuwrap::Event> events;
  for (const NodeCase& c : node_cases(*device_, events)) {
    GraphDefinition g;
    const GraphNode node = c.build(g);
    for (const GraphNode& pred : g.predecessors(node)) {
      const std::vector<GraphNode> succ = g.successors(pred);
      EXPECT_EQ(std::count(succ.begin(), succ.end(), node), 1) << c.name;
      EXPECT_EQ(node.type(), c.type) << c.name;
    }
  }
}

TEST_F(GraphDefinitionConformance, test_node_attrs) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<cuwrap::Event> events;
  int checked = 0;
  for (const NodeCase& c : node_cases(*device_, events)) {
    if (!c.check_params)
      continue;
    GraphDefinition g;
    SCOPED_TRACE(c.name);
    c.check_params(c.build(g));
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST_F(GraphDefinitionConformance, test_node_attrs_preserved_by_nodes) {
  CUWRAP_REQUIRE_NVRTC();
  std::vector<cuwrap::Event> events;
  int checked = 0;
  for (const NodeCase& c : node_cases(*device_, events)) {
    if (!c.check_params) {
      continue;
    }
    GraphDefinition g;
    const GraphNode node = c.build(g);
    SCOPED_TRACE(c.name);
    for (const GraphNode& n : g.nodes()) {
      if (n == node) {
        c.check_params(n);  // the node as nodes() returns it
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 9);
}

// cuda.core returns the same Python objects; here a GraphNode is a value compared by handle.
TEST_F(GraphDefinitionConformance, test_identity_preservation) {
  GraphDefinition g;
  const GraphNode a = g.empty();
  const GraphNode b = g.empty();
  const std::vector<GraphNode> all = g.nodes();
  EXPECT_EQ(std::count(all.begin(), all.end(), a), 1);
  EXPECT_EQ(std::count(all.begin(), all.end(), b), 1);
  g.add_edge(a, b);
  EXPECT_EQ(g.successors(a), std::vector<GraphNode>{b});
  EXPECT_EQ(g.predecessors(b), std::vector<GraphNode>{a});
  const auto edges = g.edges();
  ASSERT_EQ(edges.size(), 1U);
  EXPECT_EQ(edges[0].first, a);
  EXPECT_EQ(edges[0].second, b);
}

TEST_F(GraphDefinitionConformance, test_graphdef_handle_valid) {
  const GraphDefinition g;
  EXPECT_NE(g.handle(), nullptr);
}

TEST_F(GraphDefinitionConformance, test_alloc_zero_size_fails) {
  GraphDefinition g;
  EXPECT_THROW(g.alloc({}, 0), cuwrap::DriverError);
}

TEST_F(GraphDefinitionConformance, test_free_creates_dependency) {
  GraphDefinition g;
  const cuwrap::GraphAllocation alloc = g.alloc({}, kAllocSize);
  const GraphNode free = g.free({{alloc.node}}, alloc.address);
  EXPECT_EQ(g.predecessors(free), std::vector<GraphNode>{alloc.node});
}

TEST_F(GraphDefinitionConformance, test_alloc_free_chain) {
  GraphDefinition g;
  const cuwrap::GraphAllocation a1 = g.alloc({}, kAllocSize);
  const cuwrap::GraphAllocation a2 = g.alloc({{a1.node}}, kAllocSize);
  const GraphNode f2 = g.free({{a2.node}}, a2.address);
  const GraphNode f1 = g.free({{f2}}, a1.address);
  EXPECT_EQ(g.predecessors(a2.node), std::vector<GraphNode>{a1.node});
  EXPECT_EQ(g.predecessors(f2), std::vector<GraphNode>{a2.node});
  EXPECT_EQ(g.predecessors(f1), std::vector<GraphNode>{f2});
}

TEST_F(GraphDefinitionConformance, test_alloc_memory_type_invalid) {
  GraphDefinition g;
  cuwrap::GraphAllocOptions options;
  options.memory_type = static_cast<cuwrap::GraphMemoryType>(7);
  try {
    g.alloc({}, kAllocSize, options);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid memory_type"), std::string::npos);
  }
}

TEST_F(GraphDefinitionConformance, test_alloc_device_option) {
  GraphDefinition g;
  cuwrap::GraphAllocOptions options;
  options.device = device_->device_id();
  EXPECT_NE(g.alloc({}, kAllocSize, options).address, 0U);
}

TEST_F(GraphDefinitionConformance, test_alloc_peer_access) {
  CUWRAP_REQUIRE_GPUS(2);
  const Device d1(1);
  if (!device_->can_access_peer(d1)) {
    GTEST_SKIP() << "devices 0 and 1 are not peers";
  }
  GraphDefinition g;
  cuwrap::GraphAllocOptions options;
  options.device = 0;
  options.peer_access = {1};
  const cuwrap::GraphAllocation a = g.alloc({}, kAllocSize, options);
  const std::vector<int> peers = cuwrap::alloc_node_params(a.node).peer_access;
  EXPECT_NE(std::find(peers.begin(), peers.end(), 1), peers.end());
}

TEST_F(GraphDefinitionConformance, test_join_merges_branches) {
  for (const int branches : {2, 3, 5}) {
    GraphDefinition g;
    std::vector<GraphNode> nodes;
    for (int i = 0; i < branches; ++i)
      nodes.push_back(g.alloc({}, kAllocSize).node);
    const GraphNode joined = g.empty(nodes);
    EXPECT_EQ(joined.type(), CU_GRAPH_NODE_TYPE_EMPTY);
    const std::vector<GraphNode> pred = g.predecessors(joined);
    EXPECT_EQ(pred.size(), static_cast<std::size_t>(branches));
    for (const GraphNode& n : nodes) {
      EXPECT_EQ(std::count(pred.begin(), pred.end(), n), 1) << branches;
    }
  }
}

TEST_F(GraphDefinitionConformance, test_launch_creates_node) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  EXPECT_EQ(g.launch({}, one_thread(), graph_kernels().empty_kernel).type(),
            CU_GRAPH_NODE_TYPE_KERNEL);
}

TEST_F(GraphDefinitionConformance, test_launch_chain_dependencies) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  const GraphNode n1 = g.launch({}, one_thread(), graph_kernels().empty_kernel);
  const GraphNode n2 = g.launch({{n1}}, one_thread(), graph_kernels().empty_kernel);
  const GraphNode n3 = g.launch({{n2}}, one_thread(), graph_kernels().empty_kernel);
  EXPECT_EQ(g.predecessors(n2), std::vector<GraphNode>{n1});
  EXPECT_EQ(g.predecessors(n3), std::vector<GraphNode>{n2});
}

// ---------------------------------------------------------------------------------
// Instantiation and execution (no options, auto-free, node priority, upload stream)

std::vector<std::pair<std::string, cuwrap::GraphCompleteOptions>> execute_options(
    const Stream& upload) {
  std::vector<std::pair<std::string, cuwrap::GraphCompleteOptions>> all;
  all.emplace_back("no-options", cuwrap::GraphCompleteOptions{});
  cuwrap::GraphCompleteOptions o;
  o.auto_free_on_launch = true;
  all.emplace_back("auto-free", o);
  o = {};
  o.use_node_priority = true;
  all.emplace_back("node-priority", o);
  o = {};
  o.upload_stream = &upload;
  all.emplace_back("upload-stream", o);
  return all;
}

// Instantiate `g` with every option set, upload unless the options did, launch, sync.
template <class Check>
void run_with_every_option(const std::function<GraphDefinition()>& make, Check check) {
  const Stream stream = Device(0).create_stream();
  for (const auto& [name, options] : execute_options(stream)) {
    GraphDefinition g = make();
    Graph graph = g.instantiate(options);
    if (options.upload_stream == nullptr)
      graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    check(name);
  }
}

TEST_F(GraphDefinitionConformance, test_instantiate_empty_graph) {
  GraphDefinition g;
  cuwrap::GraphCompleteOptions flags;
  flags.auto_free_on_launch = true;
  flags.use_node_priority = true;
  EXPECT_NE(g.instantiate().handle(), nullptr);
  EXPECT_NE(g.instantiate(flags).handle(), nullptr);
}

TEST_F(GraphDefinitionConformance, test_instantiate_with_nodes) {
  GraphDefinition g;
  g.alloc({}, kAllocSize);
  g.alloc({}, kAllocSize);
  cuwrap::GraphCompleteOptions flags;
  flags.auto_free_on_launch = true;
  flags.use_node_priority = true;
  EXPECT_NE(g.instantiate().handle(), nullptr);
  EXPECT_NE(g.instantiate(flags).handle(), nullptr);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_kernel_device_launch) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  g.launch({}, one_thread(), graph_kernels().empty_kernel);
  cuwrap::GraphCompleteOptions options;
  options.device_launch = true;
  Graph graph = g.instantiate(options);
  const Stream s = stream();
  graph.upload(s);
  graph.launch(s);
  s.sync();
  EXPECT_NE(graph.handle(), nullptr);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_kernel) {
  CUWRAP_REQUIRE_NVRTC();
  int runs = 0;
  run_with_every_option(
      [] {
        GraphDefinition g;
        g.launch({}, one_thread(), graph_kernels().empty_kernel);
        return g;
      },
      [&](const std::string&) { ++runs; });
  EXPECT_EQ(runs, 4);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_alloc_free) {
  int runs = 0;
  run_with_every_option(
      [] {
        GraphDefinition g;
        const cuwrap::GraphAllocation a = g.alloc({}, kAllocSize);
        g.free({{a.node}}, a.address);
        return g;
      },
      [&](const std::string&) { ++runs; });
  EXPECT_EQ(runs, 4);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_memset) {
  int runs = 0;
  run_with_every_option(
      [] {
        GraphDefinition g;
        const cuwrap::GraphAllocation a = g.alloc({}, kAllocSize);
        const GraphNode ms = g.memset({{a.node}}, a.address, std::uint8_t{0xAB}, kAllocSize);
        g.free({{ms}}, a.address);
        return g;
      },
      [&](const std::string&) { ++runs; });
  EXPECT_EQ(runs, 4);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_memcpy) {
  const Stream stream = Device(0).create_stream();
  for (const auto& [name, options] : execute_options(stream)) {
    if (options.auto_free_on_launch)
      continue;  // the copy is read after the launch
    GraphDefinition g;
    const cuwrap::GraphAllocation src = g.alloc({}, kAllocSize);
    const cuwrap::GraphAllocation dst = g.alloc({}, kAllocSize);
    const std::vector<GraphNode> both{src.node, dst.node};
    const GraphNode dep = g.empty(both);
    const GraphNode ms = g.memset({{dep}}, src.address, std::uint8_t{0xAB}, kAllocSize);
    const GraphNode cp = g.memcpy({{ms}}, dst.address, src.address, kAllocSize);
    g.free({{cp}}, src.address);
    Graph graph = g.instantiate(options);
    if (options.upload_stream == nullptr)
      graph.upload(stream);
    graph.launch(stream);
    stream.sync();
    std::vector<unsigned char> host(kAllocSize);
    cuwrap::driver::cuMemcpyDtoH(host.data(), dst.address, kAllocSize);
    EXPECT_EQ(host, std::vector<unsigned char>(kAllocSize, 0xAB)) << name;
  }
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_child_graph) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition child;
  child.launch({}, one_thread(), graph_kernels().empty_kernel);
  GraphDefinition g;
  g.embed({}, child);
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.upload(s);
  graph.launch(s);
  s.sync();
  EXPECT_EQ(g.node_count(), 1U);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_host_callback) {
  std::vector<int> results;
  GraphDefinition g;
  g.callback({}, [&results] { results.push_back(42); });
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.upload(s);
  graph.launch(s);
  s.sync();
  EXPECT_EQ(results, std::vector<int>{42});
}

std::atomic<bool> g_plain_function_called{false};
void plain_function() { g_plain_function_called = true; }

// cuda.core's ctypes function pointer: here a plain C++ function pointer.
TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_host_callback_cfunc) {
  g_plain_function_called = false;
  GraphDefinition g;
  g.callback({}, &plain_function);
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.launch(s);
  s.sync();
  EXPECT_TRUE(g_plain_function_called.load());
}

// cuda.core copies `user_data` bytes for a C function; a C++ callable captures them.
TEST_F(GraphDefinitionConformance, test_host_callback_cfunc_with_user_data) {
  int result = 0;
  const std::vector<unsigned char> user_data{0xAB};
  GraphDefinition g;
  g.callback({}, [user_data, &result] { result = user_data[0]; });
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.launch(s);
  s.sync();
  EXPECT_EQ(result, 0xAB);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_event_record_wait) {
  const cuwrap::Event event = device_->create_event();
  GraphDefinition g;
  const GraphNode rec = g.record_event({}, event);
  g.wait_event({{rec}}, event);
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.upload(s);
  graph.launch(s);
  s.sync();
  EXPECT_TRUE(event.is_done());
}

// The conditional graphs of cuda.core's tests: alloc, memset 0, a kernel setting the
// condition to `value`, then the conditional node whose branches add one.
TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_if_then) {
  CUWRAP_REQUIRE_NVRTC();
  if (!cc90())
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(0);
  const cuwrap::GraphAllocation a = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{a.node}}, a.address, std::uint8_t{0}, sizeof(int));
  const GraphNode setter = g.launch({{ms}}, one_thread(), graph_kernels().set_handle, condition, 1);
  cuwrap::ConditionalNode node = g.if_cond({{setter}}, condition);
  node.branches[0].launch({}, one_thread(), graph_kernels().add_one, a.address);
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.upload(s);
  graph.launch(s);
  s.sync();
  EXPECT_EQ(read_int(a.address), 1);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_if_else) {
  CUWRAP_REQUIRE_NVRTC();
  if (!cc90())
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  if (cuwrap::driver_version() < 12080)
    GTEST_SKIP() << "if/else nodes need a 12.8 driver";
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(0);
  const cuwrap::GraphAllocation a = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{a.node}}, a.address, std::uint8_t{0}, sizeof(int));
  const GraphNode setter = g.launch({{ms}}, one_thread(), graph_kernels().set_handle, condition, 0);
  cuwrap::ConditionalNode node = g.if_else({{setter}}, condition);
  node.branches[0].launch({}, one_thread(), graph_kernels().add_one, a.address);
  const GraphNode n1 =
      node.branches[1].launch({}, one_thread(), graph_kernels().add_one, a.address);
  node.branches[1].launch({{n1}}, one_thread(), graph_kernels().add_one, a.address);
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.launch(s);
  s.sync();
  EXPECT_EQ(read_int(a.address), 2);
}

TEST_F(GraphDefinitionConformance, test_instantiate_and_execute_switch) {
  CUWRAP_REQUIRE_NVRTC();
  if (!cc90())
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  if (cuwrap::driver_version() < 12080 || cuwrap::bindings_version() < 12080) {
    GTEST_SKIP() << "switch nodes need CUDA 12.8";
  }
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(0);
  const cuwrap::GraphAllocation a = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{a.node}}, a.address, std::uint8_t{0}, sizeof(int));
  const GraphNode setter = g.launch({{ms}}, one_thread(), graph_kernels().set_handle, condition, 2);
  cuwrap::ConditionalNode node = g.switch_({{setter}}, condition, 4);
  for (GraphDefinition& branch : node.branches) {
    branch.launch({}, one_thread(), graph_kernels().add_one, a.address);
  }
  Graph graph = g.instantiate();
  const Stream s = stream();
  graph.launch(s);
  s.sync();
  EXPECT_EQ(read_int(a.address), 1);
}

TEST_F(GraphDefinitionConformance, test_conditional_node_type_preserved_by_nodes) {
  GraphDefinition g;
  const cuwrap::ConditionalNode node = g.if_cond({}, g.create_conditional_handle());
  const std::vector<GraphNode> all = g.nodes();
  ASSERT_EQ(std::count(all.begin(), all.end(), node.node), 1);
  EXPECT_EQ(all[0].type(), CU_GRAPH_NODE_TYPE_CONDITIONAL);
}

std::filesystem::path dot_path(const char* name) {
  return std::filesystem::temp_directory_path() /
         ("cuwrap_conformance_" + std::to_string(::getpid()) + "_" + name + ".dot");
}

TEST_F(GraphDefinitionConformance, test_debug_dot_print_creates_file) {
  GraphDefinition g;
  g.alloc({}, kAllocSize);
  const std::filesystem::path path = dot_path("creates_file");
  g.debug_dot_print(path);
  std::ifstream in(path);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(content.find("digraph"), std::string::npos);
  std::filesystem::remove(path);
}

TEST_F(GraphDefinitionConformance, test_debug_dot_print_with_options) {
  GraphDefinition g;
  g.alloc({}, kAllocSize);
  const std::filesystem::path path = dot_path("with_options");
  g.debug_dot_print(path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE | CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES);
  EXPECT_TRUE(std::filesystem::exists(path));
  std::filesystem::remove(path);
}

// cuda.core: TypeError for options of another type; here they are CUgraphDebugDot_flags
// bits and a string does not compile.
template <class O>
concept DotOptions = requires(const GraphDefinition& g, O o) {
  g.debug_dot_print(std::filesystem::path("x"), o);
};
static_assert(DotOptions<unsigned> && !DotOptions<const char*>);

TEST(GraphDefinitionConformanceTypes, test_debug_dot_print_invalid_options) {
  EXPECT_FALSE(DotOptions<std::string>);
  EXPECT_TRUE(DotOptions<unsigned>);
}

}  // namespace
