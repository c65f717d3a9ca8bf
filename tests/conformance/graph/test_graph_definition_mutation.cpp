// cuda.core's tests/graph/test_graph_definition_mutation.py: changing a graph definition's
// edges and removing nodes, checked by what the instantiated graph computes.
//
// cuda.core's node.pred / node.succ are mutable sets; cuwrap's are
// GraphDefinition::predecessors/successors (read) and add_edge/remove_edge (write), and
// node.destroy() is GraphDefinition::destroy_node.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

using Edge = std::pair<CUgraphNode, CUgraphNode>;

class GraphDefinitionMutation : public cuwrap::testing::DeviceTest {};

// Four bytes of pinned host memory.
struct Pinned4 {
  cuwrap::LegacyPinnedMemoryResource mr;
  Buffer buffer = mr.allocate(4);
  CUdeviceptr address() const { return buffer.handle(); }
};

// helpers/graph_kernels.py's compile_parallel_kernels().
struct ParallelKernels {
  cuwrap::ObjectCode code;
  cuwrap::Kernel affine, combine, reduce;
};

const ParallelKernels& parallel_kernels() {
  static const ParallelKernels kernels = [] {
    const Device device(0);
    device.set_current();
    cuwrap::ProgramOptions options;
    options.std = "c++17";
    options.arch = "sm_" + device.arch();
    cuwrap::Program program(R"(
extern "C" __global__ void affine(int* p, int m, int b) { *p = *p * m + b; }
extern "C" __global__ void combine(int* r, const int* a, const int* b) {
  *r = (*a << 16) | (*b & 0xFFFF);
}
extern "C" __global__ void reduce(int* out, const int* in, int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += in[i];
  *out = sum;
}
)",
                            cuwrap::CodeType::Cxx, options);
    cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    return ParallelKernels{code, code.get_kernel("affine"), code.get_kernel("combine"),
                           code.get_kernel("reduce")};
  }();
  return kernels;
}

std::set<CUgraphNode> node_set(const std::vector<GraphNode>& nodes) {
  std::set<CUgraphNode> out;
  for (const GraphNode& n : nodes) {
    out.insert(n.handle());
  }
  return out;
}

std::set<Edge> edge_set(const GraphDefinition& g) {
  std::set<Edge> out;
  for (const auto& [from, to] : g.edges()) {
    out.insert({from.handle(), to.handle()});
  }
  return out;
}

template <class T>
std::set<T> minus(std::set<T> a, const std::set<T>& b) {
  for (const T& x : b) {
    a.erase(x);
  }
  return a;
}

template <class T>
std::set<T> plus(std::set<T> a, const std::set<T>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// YRig: a0 -- a1 -- a2 \ j -- r ; b0 -- b1 / . Each a/b node applies affine(ptr, m, b) to
// its arm's accumulator; r combines both: (A << 16) | (B & 0xFFFF). The affine steps do
// not commute, so the result shows the topology.
struct YRig {
  std::vector<std::pair<int, int>> a_ops{{2, 1}, {3, 2}, {5, 3}};
  std::vector<std::pair<int, int>> b_ops{{2, 7}, {3, 1}};
  cuwrap::LegacyPinnedMemoryResource mr;
  Buffer buf = mr.allocate(3 * sizeof(int));
  GraphDefinition graph_def;
  std::vector<GraphNode> a, b;
  GraphNode j, r;

  int* arr() const { return reinterpret_cast<int*>(buf.handle()); }
  int* ptr_a() const { return arr(); }
  int* ptr_b() const { return arr() + 1; }
  int* ptr_r() const { return arr() + 2; }

  YRig() {
    const auto& k = parallel_kernels();
    for (const auto& [m, c] : a_ops) {
      std::vector<GraphNode> deps;
      if (!a.empty()) {
        deps.push_back(a.back());
      }
      a.push_back(graph_def.launch(deps, one_thread(), k.affine, ptr_a(), m, c));
    }
    for (const auto& [m, c] : b_ops) {
      std::vector<GraphNode> deps;
      if (!b.empty()) {
        deps.push_back(b.back());
      }
      b.push_back(graph_def.launch(deps, one_thread(), k.affine, ptr_b(), m, c));
    }
    const GraphNode ends[] = {a.back(), b.back()};
    j = graph_def.empty(ends);
    r = graph_def.launch({{j}}, one_thread(), k.combine, ptr_r(), ptr_a(), ptr_b());
  }

  void run() {
    const Stream stream = Device(0).create_stream();
    Graph graph = graph_def.instantiate();
    arr()[0] = arr()[1] = arr()[2] = 0;
    graph.launch(stream);
    stream.sync();
  }

  std::tuple<int, int, int> output() const { return {arr()[0], arr()[1], arr()[2]}; }

  std::tuple<int, int, int> expected_output() const {
    const auto apply = [](const std::vector<std::pair<int, int>>& ops) {
      int v = 0;
      for (const auto& [m, c] : ops) {
        v = v * m + c;
      }
      return v;
    };
    const int va = apply(a_ops);
    const int vb = apply(b_ops);
    return {va, vb, (va << 16) | (vb & 0xFFFF)};
  }

  std::set<Edge> initial_edges() const {
    return {{a[0].handle(), a[1].handle()}, {a[1].handle(), a[2].handle()},
            {b[0].handle(), b[1].handle()}, {a[2].handle(), j.handle()},
            {b[1].handle(), j.handle()},    {j.handle(), r.handle()}};
  }

  std::set<CUgraphNode> initial_nodes() const {
    return {a[0].handle(), a[1].handle(), a[2].handle(), b[0].handle(),
            b[1].handle(), j.handle(),    r.handle()};
  }
};

TEST_F(GraphDefinitionMutation, test_baseline) {
  CUWRAP_REQUIRE_NVRTC();
  YRig rig;
  rig.run();
  EXPECT_EQ(rig.output(), rig.expected_output());
  EXPECT_EQ(edge_set(rig.graph_def), rig.initial_edges());
  EXPECT_EQ(node_set(rig.graph_def.nodes()), rig.initial_nodes());
}

// Destroying a1 leaves arm a racing; arm b and r's ordering after b still hold.
TEST_F(GraphDefinitionMutation, test_destroy_a1) {
  CUWRAP_REQUIRE_NVRTC();
  YRig rig;
  const CUgraphNode a0 = rig.a[0].handle(), a1 = rig.a[1].handle(), a2 = rig.a[2].handle();
  rig.graph_def.destroy_node(rig.a[1]);
  rig.run();
  const int b_exp = std::get<1>(rig.expected_output());
  EXPECT_EQ(rig.arr()[1], b_exp);
  EXPECT_EQ(rig.arr()[2] & 0xFFFF, b_exp);
  EXPECT_EQ(edge_set(rig.graph_def), minus(rig.initial_edges(), {{a0, a1}, {a1, a2}}));
  EXPECT_EQ(node_set(rig.graph_def.nodes()), minus(rig.initial_nodes(), {a1}));
}

TEST_F(GraphDefinitionMutation, test_destroy_a2) {
  CUWRAP_REQUIRE_NVRTC();
  YRig rig;
  const CUgraphNode a1 = rig.a[1].handle(), a2 = rig.a[2].handle();
  const CUgraphNode j = rig.j.handle(), r = rig.r.handle();
  const std::set<Edge> initial = rig.initial_edges();
  const std::set<CUgraphNode> nodes = rig.initial_nodes();
  rig.graph_def.destroy_node(rig.a[2]);
  rig.graph_def.add_edge(rig.a[1], rig.r);
  rig.a_ops.pop_back();
  rig.run();
  EXPECT_EQ(rig.output(), rig.expected_output());
  EXPECT_EQ(edge_set(rig.graph_def), plus(minus(initial, {{a1, a2}, {a2, j}}), {{a1, r}}));
  EXPECT_EQ(node_set(rig.graph_def.nodes()), minus(nodes, {a2}));
}

// r.pred = {a2, b1}: replace r's predecessors.
TEST_F(GraphDefinitionMutation, test_destroy_joint) {
  CUWRAP_REQUIRE_NVRTC();
  YRig rig;
  const CUgraphNode a2 = rig.a[2].handle(), b1 = rig.b[1].handle();
  const CUgraphNode j = rig.j.handle(), r = rig.r.handle();
  const std::set<Edge> initial = rig.initial_edges();
  const std::set<CUgraphNode> nodes = rig.initial_nodes();
  rig.graph_def.destroy_node(rig.j);
  EXPECT_TRUE(rig.graph_def.predecessors(rig.r).empty());
  rig.graph_def.add_edge(rig.a[2], rig.r);
  rig.graph_def.add_edge(rig.b[1], rig.r);
  rig.run();
  EXPECT_EQ(rig.output(), rig.expected_output());
  EXPECT_EQ(edge_set(rig.graph_def),
            plus(minus(initial, {{a2, j}, {b1, j}, {j, r}}), {{a2, r}, {b1, r}}));
  EXPECT_EQ(node_set(rig.graph_def.nodes()), minus(nodes, {j}));
}

TEST_F(GraphDefinitionMutation, test_insert_b) {
  CUWRAP_REQUIRE_NVRTC();
  YRig rig;
  const GraphNode b_new =
      rig.graph_def.launch({}, one_thread(), parallel_kernels().affine, rig.ptr_b(), 5, 3);
  const CUgraphNode b0 = rig.b[0].handle(), b1 = rig.b[1].handle(), bn = b_new.handle();
  rig.graph_def.remove_edge(rig.b[0], rig.b[1]);
  rig.graph_def.add_edge(rig.b[0], b_new);
  rig.graph_def.add_edge(b_new, rig.b[1]);
  rig.b_ops.insert(rig.b_ops.begin() + 1, {5, 3});
  rig.run();
  EXPECT_EQ(rig.output(), rig.expected_output());
  EXPECT_EQ(edge_set(rig.graph_def),
            plus(minus(rig.initial_edges(), {{b0, b1}}), {{b0, bn}, {bn, b1}}));
  EXPECT_EQ(node_set(rig.graph_def.nodes()), plus(rig.initial_nodes(), {bn}));
}

// cuda.core's MutableSet proxy: here the edge operations it is made of, on one hub.
TEST_F(GraphDefinitionMutation, test_adjacency_set_interface) {
  GraphDefinition g;
  const GraphNode hub = g.empty();
  std::vector<GraphNode> items;
  for (int i = 0; i < 5; ++i) {
    items.push_back(g.empty());
  }
  EXPECT_TRUE(g.successors(hub).empty());
  for (const GraphNode& item : items) {
    g.add_edge(hub, item);
  }
  EXPECT_EQ(node_set(g.successors(hub)), node_set(items));
  g.remove_edge(hub, items[0]);
  EXPECT_EQ(g.successors(hub).size(), 4U);
  EXPECT_THROW(g.remove_edge(hub, items[0]), cuwrap::DriverError);  // not there: the driver
  for (std::size_t i = 1; i < items.size(); ++i) {
    g.remove_edge(hub, items[i]);
  }
  EXPECT_TRUE(g.successors(hub).empty());
}

TEST_F(GraphDefinitionMutation, test_adjacency_set_pred_direction) {
  GraphDefinition g;
  const GraphNode target = g.empty();
  const GraphNode x = g.empty(), y = g.empty(), z = g.empty();
  EXPECT_TRUE(g.predecessors(target).empty());
  g.add_edge(x, target);
  g.add_edge(y, target);
  EXPECT_EQ(node_set(g.predecessors(target)), (std::set<CUgraphNode>{x.handle(), y.handle()}));
  EXPECT_EQ(node_set(g.successors(x)), std::set<CUgraphNode>{target.handle()});
  EXPECT_EQ(node_set(g.successors(y)), std::set<CUgraphNode>{target.handle()});
  EXPECT_TRUE(g.successors(z).empty());
  g.remove_edge(x, target);
  EXPECT_EQ(node_set(g.predecessors(target)), std::set<CUgraphNode>{y.handle()});
  EXPECT_TRUE(g.successors(x).empty());
}

// hub.succ = {...} / hub.pred = {...}: replacing every edge of one side.
TEST_F(GraphDefinitionMutation, test_adjacency_set_property_setter) {
  GraphDefinition g;
  const GraphNode hub = g.empty();
  const GraphNode a = g.empty(), b = g.empty(), c = g.empty();
  const auto set_succ = [&](const std::vector<GraphNode>& to) {
    for (const GraphNode& n : g.successors(hub)) {
      g.remove_edge(hub, n);
    }
    for (const GraphNode& n : to) {
      g.add_edge(hub, n);
    }
  };
  const auto set_pred = [&](const std::vector<GraphNode>& from) {
    for (const GraphNode& n : g.predecessors(hub)) {
      g.remove_edge(n, hub);
    }
    for (const GraphNode& n : from) {
      g.add_edge(n, hub);
    }
  };
  set_succ({a, b});
  EXPECT_EQ(node_set(g.successors(hub)), (std::set<CUgraphNode>{a.handle(), b.handle()}));
  set_succ({c});
  EXPECT_EQ(node_set(g.successors(hub)), std::set<CUgraphNode>{c.handle()});
  set_succ({});
  EXPECT_TRUE(g.successors(hub).empty());
  set_pred({a, b});
  EXPECT_EQ(node_set(g.predecessors(hub)), (std::set<CUgraphNode>{a.handle(), b.handle()}));
  set_pred({});
  EXPECT_TRUE(g.predecessors(hub).empty());
  set_pred({});
  EXPECT_TRUE(g.predecessors(hub).empty());
}

// The graph-side half of cuda.core's test: a destroyed node leaves nodes() and edges().
// Not ported: the node object's own validity (is_valid, type None, repeated destroy),
// as a GraphNode is a handle value and cuwrap does not track node validity.
TEST_F(GraphDefinitionMutation, test_destroyed_node) {
  Pinned4 dummy;
  GraphDefinition g;
  const GraphNode a = g.memset({}, dummy.address(), std::uint8_t{0}, 4);
  const GraphNode b = g.memset({{a}}, dummy.address(), std::uint8_t{42}, 4);
  EXPECT_EQ(node_set(g.nodes()).count(b.handle()), 1U);
  EXPECT_EQ(edge_set(g).count({a.handle(), b.handle()}), 1U);
  EXPECT_TRUE(a.is_valid());
  EXPECT_TRUE(b.is_valid());
  g.destroy_node(b);
  EXPECT_FALSE(b.is_valid());
  EXPECT_TRUE(a.is_valid());
  EXPECT_EQ(node_set(g.nodes()), std::set<CUgraphNode>{a.handle()});
  EXPECT_TRUE(edge_set(g).empty());
  EXPECT_TRUE(g.successors(a).empty());
  // Using the destroyed node does not reach the driver. Difference: cuda.core answers
  // type None and empty pred/succ sets; cuwrap refuses with std::logic_error.
  EXPECT_THROW(static_cast<void>(b.type()), std::logic_error);
  EXPECT_THROW(static_cast<void>(g.predecessors(b)), std::logic_error);
  EXPECT_THROW(static_cast<void>(g.successors(b)), std::logic_error);
  EXPECT_THROW(static_cast<void>(cuwrap::memset_node_params(b)), std::logic_error);
  // Adding an edge to a destroyed node fails (cuda.core: CUDAError; here before the driver).
  EXPECT_THROW(g.add_edge(a, b), std::logic_error);
  // Repeated destroy succeeds quietly.
  EXPECT_NO_THROW(g.destroy_node(b));
  EXPECT_FALSE(b.is_valid());
}

// A host node after an allocation node cannot be destroyed (graph memory rules): the
// node, its edge and its callable stay, and the graph still runs it.
TEST_F(GraphDefinitionMutation, test_failed_destroy_preserves_node_and_attachments) {
  if (!device().properties().memory_pools_supported()) {
    GTEST_SKIP() << "graph memory nodes require memory pool support";
  }
  auto called = std::make_shared<bool>(false);
  GraphDefinition graph_def;
  const cuwrap::GraphAllocation alloc = graph_def.alloc({}, 4);
  const GraphNode node = graph_def.callback({{alloc.node}}, [called] { *called = true; });
  const std::shared_ptr<bool> observed = called;
  called.reset();
  EXPECT_THROW(graph_def.destroy_node(node), cuwrap::DriverError);
  EXPECT_GT(observed.use_count(), 1) << "the node still holds its callable";
  EXPECT_EQ(node_set(graph_def.nodes()).count(node.handle()), 1U);
  EXPECT_EQ(edge_set(graph_def).count({alloc.node.handle(), node.handle()}), 1U);
  Graph graph = graph_def.instantiate();
  const Stream stream = device().create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_TRUE(*observed);
}

// node.succ.add("not a node") does not compile: add_edge takes GraphNodes.
template <class T>
concept EdgeTarget = requires(GraphDefinition& g, GraphNode n, T t) {
  g.add_edge(n, t);
};
static_assert(EdgeTarget<GraphNode>);
static_assert(!EdgeTarget<const char*>);
static_assert(!EdgeTarget<int>);

TEST(GraphDefinitionMutationTypes, test_add_wrong_type) {
  EXPECT_FALSE(EdgeTarget<int>);
  EXPECT_FALSE(EdgeTarget<const char*>);
}

TEST_F(GraphDefinitionMutation, test_cross_graph_edge) {
  GraphDefinition g1, g2;
  const GraphNode a = g1.empty();
  const GraphNode b = g2.empty();
  EXPECT_THROW(g1.add_edge(a, b), cuwrap::DriverError);
}

TEST_F(GraphDefinitionMutation, test_self_edge) {
  GraphDefinition g;
  const GraphNode node = g.empty();
  EXPECT_THROW(g.add_edge(node, node), cuwrap::DriverError);
}

// A chain memset0 - launch0 - memset1 - ... - launch3, rewired so the four pairs run in
// parallel into a reduce node.
TEST_F(GraphDefinitionMutation, test_convert_linear_to_fan_in) {
  CUWRAP_REQUIRE_NVRTC();
  const auto& k = parallel_kernels();
  cuwrap::LegacyPinnedMemoryResource mr;
  Buffer buf = mr.allocate(5 * sizeof(int));
  int* arr = reinterpret_cast<int*>(buf.handle());
  for (int i = 0; i < 5; ++i) {
    arr[i] = 0;
  }
  const int values[] = {10, 20, 30, 40};
  GraphDefinition g;
  std::vector<GraphNode> memsets, launches;
  std::vector<GraphNode> prev;
  for (int i = 0; i < 4; ++i) {
    memsets.push_back(g.memset(prev, buf.handle() + sizeof(int) * static_cast<unsigned>(i),
                               static_cast<std::uint32_t>(values[i]), 1));
    launches.push_back(g.launch({{memsets.back()}}, one_thread(), k.affine, arr + i, 2, 1));
    prev = {launches.back()};
  }
  const GraphNode reduce_node = g.launch({}, one_thread(), k.reduce, arr + 4, arr, 4);
  EXPECT_EQ(g.edges().size(), 7U);
  for (const GraphNode& node : g.nodes()) {
    if (node.type() == CU_GRAPH_NODE_TYPE_MEMSET) {
      for (const GraphNode& p : g.predecessors(node)) {
        g.remove_edge(p, node);
      }
    } else if (node.type() == CU_GRAPH_NODE_TYPE_KERNEL && node != reduce_node) {
      g.add_edge(node, reduce_node);
    }
  }
  EXPECT_EQ(g.edges().size(), 8U);
  const Stream stream = device().create_stream();
  Graph graph = g.instantiate();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(arr[4], (2 * 10 + 1) + (2 * 20 + 1) + (2 * 30 + 1) + (2 * 40 + 1));
}

}  // namespace
