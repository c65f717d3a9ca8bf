// Tests of GraphDefinition (explicit graphs): an empty graph, typed nodes and their
// parameters, topology (edges, predecessors, successors), editing (edges, destroying
// nodes, cloning), conditional nodes without capture, instantiation and launch, and
// changing nodes of the instantiated Graph (set_*_node, update from a definition).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "launch_configs.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::Stream;
using cuwrap::testing::single_thread;

static_assert(!std::is_copy_constructible_v<GraphDefinition>);
static_assert(std::is_nothrow_move_constructible_v<GraphDefinition>);

constexpr std::size_t kDefinitionBytes = 1024;

constexpr const char* kDefinitionSource = R"(
extern "C" __global__ void add_to_counter(unsigned* counter, unsigned value) {
  atomicAdd(counter, value);
}
extern "C" __global__ void empty_kernel() {}
)";

struct DefinitionKernels {
  Kernel add_to_counter, empty;
};

const DefinitionKernels& definition_kernels() {
  static const DefinitionKernels k = [] {
    const cuwrap::Device device(0);
    device.set_current();
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + device.arch();
    cuwrap::Program program(kDefinitionSource, cuwrap::CodeType::Cxx, options);
    const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    return DefinitionKernels{code.get_kernel("add_to_counter"), code.get_kernel("empty_kernel")};
  }();
  return k;
}

// Spell a single dependency.
std::array<GraphNode, 1> after(GraphNode node) { return {node}; }

std::set<CUgraphNode> handles(const std::vector<GraphNode>& nodes) {
  std::set<CUgraphNode> result;
  for (const GraphNode& n : nodes) {
    result.insert(n.handle());
  }
  return result;
}

class GraphDefinitionTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    stream_ = device_->create_stream();
  }

  std::vector<std::uint8_t> read(const Buffer& buffer) {
    std::vector<std::uint8_t> bytes(buffer.size());
    buffer.copy_to(std::as_writable_bytes(std::span(bytes)), stream_);
    stream_.sync();
    return bytes;
  }

  unsigned read_word(const Buffer& buffer) {
    unsigned word = 0;
    buffer.copy_to(std::as_writable_bytes(std::span(&word, 1)), stream_);
    stream_.sync();
    return word;
  }

  Buffer zeroed_word() {
    Buffer buffer = device_->allocate(sizeof(unsigned), stream_);
    const unsigned zero = 0;
    buffer.copy_from(std::as_bytes(std::span(&zero, 1)), stream_);
    stream_.sync();
    return buffer;
  }

  Stream stream_;  // assigned in SetUp
};

// ---------------------------------------------------------------------------------
// An empty graph

TEST_F(GraphDefinitionTest, EmptyGraphHasAHandleAndNoNodesAndLaunches) {
  GraphDefinition def(*device_);
  EXPECT_NE(def.handle(), nullptr);
  EXPECT_EQ(def.node_count(), 0U);
  EXPECT_TRUE(def.nodes().empty());
  EXPECT_TRUE(def.edges().empty());
  Graph graph = def.instantiate();
  graph.launch(stream_);
  stream_.sync();
  EXPECT_NE(graph.handle(), nullptr);
}

TEST_F(GraphDefinitionTest, CloseIsIdempotentAndUseAfterCloseIsALogicError) {
  GraphDefinition def(*device_);
  def.empty();
  def.close();
  def.close();
  EXPECT_FALSE(def.is_open());
  EXPECT_THROW(static_cast<void>(def.handle()), std::logic_error);
  EXPECT_THROW(def.empty(), std::logic_error);
  EXPECT_THROW(static_cast<void>(def.nodes()), std::logic_error);
}

// ---------------------------------------------------------------------------------
// Topology

TEST_F(GraphDefinitionTest, DiamondHasTheEdgesPredecessorsAndSuccessorsItWasBuiltWith) {
  GraphDefinition def(*device_);
  const GraphNode a = def.empty();
  const GraphNode b = def.empty(after(a));
  const GraphNode c = def.empty(after(a));
  const std::array<GraphNode, 2> bc{b, c};
  const GraphNode d = def.empty(bc);
  EXPECT_EQ(def.node_count(), 4U);
  EXPECT_EQ(handles(def.nodes()),
            (std::set<CUgraphNode>{a.handle(), b.handle(), c.handle(), d.handle()}));
  std::set<std::pair<CUgraphNode, CUgraphNode>> edges;
  for (const auto& [from, to] : def.edges()) {
    edges.emplace(from.handle(), to.handle());
  }
  const std::set<std::pair<CUgraphNode, CUgraphNode>> expected{{a.handle(), b.handle()},
                                                               {a.handle(), c.handle()},
                                                               {b.handle(), d.handle()},
                                                               {c.handle(), d.handle()}};
  EXPECT_EQ(edges, expected);
  EXPECT_TRUE(def.predecessors(a).empty());
  EXPECT_EQ(handles(def.successors(a)), (std::set<CUgraphNode>{b.handle(), c.handle()}));
  EXPECT_EQ(handles(def.predecessors(d)), (std::set<CUgraphNode>{b.handle(), c.handle()}));
  EXPECT_TRUE(def.successors(d).empty());
  EXPECT_EQ(d.type(), CU_GRAPH_NODE_TYPE_EMPTY);
}

TEST_F(GraphDefinitionTest, EdgesAreAddedAndRemovedAndNodesDestroyed) {
  GraphDefinition def(*device_);
  const GraphNode a = def.empty();
  const GraphNode b = def.empty();
  const GraphNode c = def.empty();
  EXPECT_TRUE(def.edges().empty());
  def.add_edge(a, b);
  def.add_edge(b, c);
  EXPECT_EQ(def.edges().size(), 2U);
  EXPECT_EQ(handles(def.predecessors(b)), std::set<CUgraphNode>{a.handle()});
  def.remove_edge(a, b);
  EXPECT_TRUE(def.predecessors(b).empty());
  EXPECT_EQ(def.edges().size(), 1U);
  EXPECT_THROW(def.remove_edge(a, b), cuwrap::DriverError);  // no such edge
  def.destroy_node(b);
  EXPECT_EQ(def.node_count(), 2U);
  EXPECT_TRUE(def.edges().empty());
  EXPECT_THROW(def.add_edge(GraphNode(), c), std::invalid_argument);
  EXPECT_THROW(def.destroy_node(GraphNode()), std::invalid_argument);
}

TEST_F(GraphDefinitionTest, CloneIsAnIndependentCopy) {
  GraphDefinition def(*device_);
  const GraphNode a = def.empty();
  def.empty(after(a));
  GraphDefinition copy = def.clone();
  EXPECT_NE(copy.handle(), def.handle());
  EXPECT_EQ(copy.node_count(), 2U);
  EXPECT_EQ(copy.edges().size(), 1U);
  copy.empty();
  EXPECT_EQ(copy.node_count(), 3U);
  EXPECT_EQ(def.node_count(), 2U);
  def.close();  // the copy does not depend on the original
  Graph graph = copy.instantiate();
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(copy.node_count(), 3U);
}

// ---------------------------------------------------------------------------------
// Typed nodes and their parameters

TEST_F(GraphDefinitionTest, AllocMemsetMemcpyFreeNodesReportTheirParametersAndRun) {
  GraphDefinition def(*device_);
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  const cuwrap::GraphAllocation alloc = def.alloc({}, kDefinitionBytes);
  EXPECT_NE(alloc.address, 0U);
  const cuwrap::AllocNodeParams ap = cuwrap::alloc_node_params(alloc.node);
  EXPECT_EQ(ap.dptr, alloc.address);
  EXPECT_EQ(ap.bytesize, kDefinitionBytes);
  EXPECT_EQ(ap.device_id, device_->device_id());
  EXPECT_EQ(ap.memory_type, cuwrap::GraphMemoryType::Device);
  EXPECT_TRUE(ap.peer_access.empty());

  const GraphNode fill =
      def.memset(after(alloc.node), alloc.address, std::uint8_t{0xAB}, kDefinitionBytes);
  const cuwrap::MemsetNodeParams mp = cuwrap::memset_node_params(fill);
  EXPECT_EQ(mp.dst, alloc.address);
  EXPECT_EQ(mp.value, 0xABU);
  EXPECT_EQ(mp.element_size, 1U);
  EXPECT_EQ(mp.width, kDefinitionBytes);
  EXPECT_EQ(mp.height, 1U);

  const GraphNode copy = def.memcpy(after(fill), out.handle(), alloc.address, kDefinitionBytes);
  const cuwrap::MemcpyNodeParams cp = cuwrap::memcpy_node_params(copy);
  EXPECT_EQ(cp.dst, out.handle());
  EXPECT_EQ(cp.src, alloc.address);
  EXPECT_EQ(cp.size, kDefinitionBytes);

  const GraphNode free = def.free(after(copy), alloc.address);
  EXPECT_EQ(cuwrap::free_node_address(free), alloc.address);
  EXPECT_EQ(free.type(), CU_GRAPH_NODE_TYPE_MEM_FREE);
  EXPECT_EQ(handles(def.predecessors(free)), std::set<CUgraphNode>{copy.handle()});

  Graph graph = def.instantiate();
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 0xAB));

  // The instantiated graph's fill changes without instantiating again.
  graph.set_memset_node(fill, {.dst = alloc.address, .value = 0x5C, .width = kDefinitionBytes});
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 0x5C));
  EXPECT_THROW(
      graph.set_memset_node(copy, {.dst = alloc.address, .value = 1, .width = kDefinitionBytes}),
      std::invalid_argument);
  EXPECT_THROW(cuwrap::memset_node_params(copy), std::invalid_argument);
}

// A pitched copy from pinned host memory (described with
// CU_MEMORYTYPE_HOST) into a pitched device region, as cuda-api-wrappers'
// simpleCudaGraphs sample does with cudaMemcpy3DParms.
TEST_F(GraphDefinitionTest, MemcpyNodeTakesAPitchedHostToDeviceCopy) {
  constexpr std::size_t kWidth = 16;
  constexpr std::size_t kRows = 4;
  constexpr std::size_t kPitch = 32;
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer host = pinned.allocate(kWidth * kRows);
  auto* bytes = reinterpret_cast<std::uint8_t*>(host.handle());
  for (std::size_t i = 0; i < kWidth * kRows; ++i) {
    bytes[i] = static_cast<std::uint8_t>(i);
  }
  Buffer device = device_->allocate(kPitch * kRows, stream_);
  device.fill(std::uint8_t{0xEE}, stream_);
  stream_.sync();
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = bytes;
  copy.srcPitch = kWidth;
  copy.srcHeight = kRows;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = device.handle();
  copy.dstPitch = kPitch;
  copy.dstHeight = kRows;
  copy.WidthInBytes = kWidth;
  copy.Height = kRows;
  copy.Depth = 1;
  GraphDefinition def(*device_);
  const GraphNode node = def.memcpy({}, copy);
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_MEMCPY);
  Graph graph = def.instantiate();
  graph.launch(stream_);
  const std::vector<std::uint8_t> out = read(device);
  for (std::size_t row = 0; row < kRows; ++row) {
    for (std::size_t col = 0; col < kPitch; ++col) {
      const std::uint8_t expected =
          col < kWidth ? static_cast<std::uint8_t>(row * kWidth + col) : std::uint8_t{0xEE};
      ASSERT_EQ(out[row * kPitch + col], expected) << row << ", " << col;
    }
  }
}

// A pitched copy from pinned host memory into an offset of device memory reads back with
// every field: the host side by its host pointer (not the zero device field), the device
// side with its offsets, both pitches and the extent.
TEST_F(GraphDefinitionTest, MemcpyNodeParametersReadBackHostAndPitchedSides) {
  constexpr std::size_t kWidth = 16;
  constexpr std::size_t kRows = 4;
  constexpr std::size_t kPitch = 64;
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer host = pinned.allocate(kWidth * kRows);
  Buffer device = device_->allocate(kPitch * (kRows + 1), stream_);
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = reinterpret_cast<const void*>(host.handle());
  copy.srcPitch = kWidth;
  copy.srcHeight = kRows;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = device.handle();
  copy.dstXInBytes = 8;
  copy.dstY = 1;
  copy.dstPitch = kPitch;
  copy.dstHeight = kRows + 1;
  copy.WidthInBytes = kWidth;
  copy.Height = kRows;
  copy.Depth = 1;
  GraphDefinition def(*device_);
  const GraphNode node = def.memcpy({}, copy);
  const cuwrap::MemcpyNodeParams params = cuwrap::memcpy_node_params(node);
  EXPECT_EQ(params.src, host.handle());
  EXPECT_EQ(params.dst, device.handle() + 8 + kPitch);
  EXPECT_EQ(params.size, kWidth * kRows);
  const CUDA_MEMCPY3D back = cuwrap::memcpy_node_copy(node);
  EXPECT_EQ(back.srcMemoryType, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(back.srcHost, copy.srcHost);
  EXPECT_EQ(back.srcPitch, kWidth);
  EXPECT_EQ(back.dstMemoryType, CU_MEMORYTYPE_DEVICE);
  EXPECT_EQ(back.dstDevice, device.handle());
  EXPECT_EQ(back.dstXInBytes, 8U);
  EXPECT_EQ(back.dstY, 1U);
  EXPECT_EQ(back.dstPitch, kPitch);
  EXPECT_EQ(back.WidthInBytes, kWidth);
  EXPECT_EQ(back.Height, kRows);
  EXPECT_EQ(back.Depth, 1U);
}

TEST_F(GraphDefinitionTest, WideMemsetNodesKeepTheirElementSize) {
  GraphDefinition def(*device_);
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  const GraphNode n16 = def.memset({}, out.handle(), std::uint16_t{0xCDAB}, kDefinitionBytes / 2);
  const GraphNode n32 = def.memset(after(n16), out.handle(), std::uint32_t{0x04030201},
                                   kDefinitionBytes / 16, 2, kDefinitionBytes / 2);
  EXPECT_EQ(cuwrap::memset_node_params(n16).element_size, 2U);
  EXPECT_EQ(cuwrap::memset_node_params(n16).value, 0xCDABU);
  const cuwrap::MemsetNodeParams p = cuwrap::memset_node_params(n32);
  EXPECT_EQ(p.element_size, 4U);
  EXPECT_EQ(p.height, 2U);
  EXPECT_EQ(p.pitch, kDefinitionBytes / 2);
  Graph graph = def.instantiate();
  graph.launch(stream_);
  const std::vector<std::uint8_t> bytes = read(out);
  // Two rows of kDefinitionBytes/4 bytes, kDefinitionBytes/2 apart, over the 16-bit fill.
  EXPECT_EQ(bytes[0], 0x01);
  EXPECT_EQ(bytes[3], 0x04);
  EXPECT_EQ(bytes[kDefinitionBytes / 2], 0x01);
  EXPECT_EQ(bytes[kDefinitionBytes / 4], 0xAB);  // past the first row: the 16-bit fill
  EXPECT_EQ(bytes[kDefinitionBytes / 4 + 1], 0xCD);
}

TEST_F(GraphDefinitionTest, KernelNodeReportsItsLaunchAndRuns) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = zeroed_word();
  GraphDefinition def(*device_);
  LaunchConfig config;
  config.grid = cuwrap::Dim3(2, 3, 1);
  config.block = cuwrap::Dim3(32, 4, 1);
  config.shmem_size = 128;
  const GraphNode node = def.launch({}, config, definition_kernels().add_to_counter, counter, 1u);
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_KERNEL);
  const cuwrap::KernelNodeParams p = cuwrap::kernel_node_params(node);
  EXPECT_EQ(p.grid, cuwrap::Dim3(2, 3, 1));
  EXPECT_EQ(p.block, cuwrap::Dim3(32, 4, 1));
  EXPECT_EQ(p.shmem_size, 128U);
  // The definition's node changes before instantiation.
  def.set_kernel_node(node, single_thread(), definition_kernels().add_to_counter, counter, 5u);
  EXPECT_EQ(cuwrap::kernel_node_params(node).grid, cuwrap::Dim3(1));
  Graph graph = def.instantiate();
  graph.launch(stream_);
  EXPECT_EQ(read_word(counter), 5u);
}

// set_kernel_node follows the rule of every kernel-node configuration: the cluster and
// cooperative launch of `config` become the node's attributes (they were dropped), so a
// Graph instantiated after accepts set_kernel_node with that config and refuses another.
TEST_F(GraphDefinitionTest, SetKernelParamsAppliesClusterAndCooperativeLaunch) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = zeroed_word();
  GraphDefinition def(*device_);
  const GraphNode node =
      def.launch({}, single_thread(), definition_kernels().add_to_counter, counter, 1u);
  LaunchConfig cooperative = single_thread();
  cooperative.cooperative_launch = true;
  def.set_kernel_node(node, cooperative, definition_kernels().add_to_counter, counter, 2u);
  CUkernelNodeAttrValue value =
      cuwrap::driver::cuGraphKernelNodeGetAttribute(node.handle(), CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(value.cooperative, 1);
  {
    Graph graph = def.instantiate();
    graph.set_kernel_node(node, cooperative, definition_kernels().add_to_counter, counter, 3u);
    EXPECT_THROW(graph.set_kernel_node(node, single_thread(), definition_kernels().add_to_counter,
                                       counter, 3u),
                 std::invalid_argument);
    graph.launch(stream_);
    EXPECT_EQ(read_word(counter), 3u);
  }
  // Back to a plain launch: the attribute is cleared, not left behind.
  def.set_kernel_node(node, single_thread(), definition_kernels().add_to_counter, counter, 1u);
  value =
      cuwrap::driver::cuGraphKernelNodeGetAttribute(node.handle(), CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(value.cooperative, 0);
  if (device_->compute_capability().major >= 9) {
    LaunchConfig clustered = single_thread();
    clustered.grid = cuwrap::Dim3(2);
    clustered.cluster = cuwrap::Dim3(2);
    def.set_kernel_node(node, clustered, definition_kernels().add_to_counter, counter, 1u);
    value = cuwrap::driver::cuGraphKernelNodeGetAttribute(node.handle(),
                                                          CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    EXPECT_EQ(value.clusterDim.x, 2U);
    Graph graph = def.instantiate();
    graph.set_kernel_node(node, clustered, definition_kernels().add_to_counter, counter, 4u);
    graph.launch(stream_);
    EXPECT_EQ(read_word(counter), 3u + 8u);
  }
}

TEST_F(GraphDefinitionTest, HostCallbackNodeRunsAndCanBeReplacedInTheGraph) {
  GraphDefinition def(*device_);
  std::atomic<int> calls{0};
  const GraphNode node = def.callback({}, [&calls] { calls += 1; });
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_HOST);
  Graph graph = def.instantiate();
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(calls.load(), 1);
  graph.set_host_node(node, [&calls] { calls += 100; });
  graph.launch(stream_);
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(calls.load(), 201);
  EXPECT_THROW(graph.set_host_node(GraphNode(), [] {}), std::invalid_argument);
}

TEST_F(GraphDefinitionTest, EventNodesNameTheirEventAndCanBeRepointed) {
  GraphDefinition def(*device_);
  cuwrap::EventOptions timed;
  timed.enable_timing = true;
  const cuwrap::Event start = device_->create_event(timed);
  const cuwrap::Event first = device_->create_event(timed);
  const cuwrap::Event second = device_->create_event(timed);
  const GraphNode rec = def.record_event({}, first);
  const GraphNode wait = def.wait_event(after(rec), first);
  EXPECT_EQ(cuwrap::event_node_event(rec), first.handle());
  EXPECT_EQ(cuwrap::event_node_event(wait), first.handle());
  def.set_event_node(wait, second);
  EXPECT_EQ(cuwrap::event_node_event(wait), second.handle());
  Graph graph = def.instantiate();
  graph.set_event_node(rec, second);
  stream_.record(start);
  graph.launch(stream_);
  stream_.sync();
  // Only a recorded event has an elapsed time: the graph recorded `second`, not `first`.
  EXPECT_GE(second - start, 0.0f);
  EXPECT_ANY_THROW(static_cast<void>(first - start));
  EXPECT_THROW(cuwrap::event_node_event(def.empty()), std::invalid_argument);
}

TEST_F(GraphDefinitionTest, ChildGraphNodeEmbedsACopyAndCanBeReplaced) {
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  GraphDefinition child(*device_);
  child.memset({}, out.handle(), std::uint8_t{1}, kDefinitionBytes);
  GraphDefinition def(*device_);
  const GraphNode node = def.embed({}, child);
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_GRAPH);
  const GraphDefinition embedded = cuwrap::child_graph_node_graph(node);
  EXPECT_NE(embedded.handle(), child.handle());  // a copy
  EXPECT_EQ(embedded.node_count(), 1U);
  Graph graph = def.instantiate();
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 1));

  GraphDefinition other(*device_);
  other.memset({}, out.handle(), std::uint8_t{2}, kDefinitionBytes);
  graph.set_child_graph_node(node, other);
  other.close();  // the Graph keeps what it needs
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 2));
}

// ---------------------------------------------------------------------------------
// Conditional nodes without capture

TEST_F(GraphDefinitionTest, IfNodeRunsItsBranchWhenTheConditionIsSet) {
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  const auto run_with = [&](unsigned value) {
    GraphDefinition def(*device_);
    const CUgraphConditionalHandle condition = def.create_conditional_handle(value);
    cuwrap::ConditionalNode node = def.if_cond({}, condition);
    EXPECT_EQ(node.node.type(), CU_GRAPH_NODE_TYPE_CONDITIONAL);
    EXPECT_EQ(node.branches.size(), 1U);
    node.branches[0].memset({}, out.handle(), std::uint8_t{7}, kDefinitionBytes);
    EXPECT_EQ(node.branches[0].node_count(), 1U);
    EXPECT_THROW(node.branches[0].instantiate(), std::logic_error);
    Graph graph = def.instantiate();
    out.fill(std::uint8_t{0}, stream_);
    graph.launch(stream_);
    return read(out);
  };
  EXPECT_EQ(run_with(1), std::vector<std::uint8_t>(kDefinitionBytes, 7));
  EXPECT_EQ(run_with(0), std::vector<std::uint8_t>(kDefinitionBytes, 0));
}

// A node says what cuda.core's node objects say: its graph, a conditional node's
// condition, kind and body count, a host node's function; a destroyed node says that it
// is gone, through every copy, and refuses every call before the driver.
TEST_F(GraphDefinitionTest, NodesKnowTheirGraphTheirParametersAndTheirDestruction) {
  GraphDefinition def(*device_);
  const CUgraphConditionalHandle condition = def.create_conditional_handle(1);
  cuwrap::ConditionalNode loop = def.while_loop({}, condition);
  const cuwrap::ConditionalNodeParams cp = cuwrap::conditional_node_params(loop.node);
  EXPECT_EQ(cp.condition, condition);
  EXPECT_EQ(cp.type, CU_GRAPH_COND_TYPE_WHILE);
  EXPECT_EQ(cp.size, 1U);
  const GraphNode host = def.callback({{loop.node}}, [] {});
  const cuwrap::HostNodeParams hp = cuwrap::host_node_params(host);
  EXPECT_NE(hp.fn, nullptr);
  EXPECT_NE(hp.user_data, nullptr);
  EXPECT_EQ(host.graph().handle(), def.handle());
  EXPECT_EQ(loop.node.graph().handle(), def.handle());
  const GraphNode body_node = loop.branches[0].empty();
  EXPECT_EQ(body_node.graph().handle(), loop.branches[0].handle());
  EXPECT_THROW(static_cast<void>(GraphNode(host.handle()).graph()), std::logic_error);
  EXPECT_TRUE(GraphNode(host.handle()).is_valid());  // a bare handle: unknown, so valid

  const GraphNode copy = host;
  EXPECT_TRUE(copy.is_valid());
  def.destroy_node(host);
  EXPECT_FALSE(host.is_valid());
  EXPECT_FALSE(copy.is_valid());
  EXPECT_THROW(static_cast<void>(copy.type()), std::logic_error);
  EXPECT_THROW(static_cast<void>(cuwrap::host_node_params(copy)), std::logic_error);
  EXPECT_THROW(static_cast<void>(copy.graph()), std::logic_error);
  EXPECT_THROW(def.add_edge(loop.node, copy), std::logic_error);
  EXPECT_THROW(static_cast<void>(def.empty({{copy}})), std::logic_error);
  EXPECT_NO_THROW(def.destroy_node(copy));  // again: nothing to do
  EXPECT_EQ(def.node_count(), 1U);
  // Destroying the conditional node ends its body and the body's nodes.
  def.destroy_node(loop.node);
  EXPECT_FALSE(body_node.is_valid());
  // A closed definition's nodes are gone too, once nothing else holds its graph (here
  // the branch views of `loop` still do: a definition of its own shows it).
  GraphDefinition alone(*device_);
  const GraphNode last = alone.empty();
  EXPECT_TRUE(last.is_valid());
  alone.close();
  EXPECT_FALSE(last.is_valid());
}

TEST_F(GraphDefinitionTest, WhileAndSwitchNodesHaveTheirBranches) {
  // The driver ties a condition handle to a single conditional node (a second node on the
  // same handle is CUDA_ERROR_INVALID_VALUE), so each node gets its own.
  GraphDefinition def(*device_);
  const CUgraphConditionalHandle loop_condition = def.create_conditional_handle(0);
  const cuwrap::ConditionalNode loop = def.while_loop({}, loop_condition);
  EXPECT_EQ(loop.branches.size(), 1U);
  const CUgraphConditionalHandle switch_condition = def.create_conditional_handle(0);
  if (cuwrap::driver_version() < 12080) {
    EXPECT_THROW(def.switch_(after(loop.node), switch_condition, 3), cuwrap::UnsupportedError);
    return;
  }
  cuwrap::ConditionalNode cases = def.switch_(after(loop.node), switch_condition, 3);
  EXPECT_EQ(cases.branches.size(), 3U);
  EXPECT_EQ(handles(def.predecessors(cases.node)), std::set<CUgraphNode>{loop.node.handle()});
  {
    // In a graph of its own: a handle left without a node may fail instantiation.
    GraphDefinition other(*device_);
    EXPECT_THROW(other.switch_({}, other.create_conditional_handle(0), 0),
                 cuwrap::DriverError);  // the driver decides
  }
  Graph graph = def.instantiate();  // empty bodies, conditions 0: nothing runs
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(def.node_count(), 2U);
}

// ---------------------------------------------------------------------------------
// Update from a definition

TEST_F(GraphDefinitionTest, UpdateFromADefinitionChangesWhatTheGraphDoes) {
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  const auto make = [&](std::uint8_t value) {
    GraphDefinition def(*device_);
    def.memset({}, out.handle(), value, kDefinitionBytes);
    return def;
  };
  Graph graph = make(3).instantiate();
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 3));
  graph.update(make(4));
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 4));

  GraphDefinition two = make(5);
  two.empty();
  EXPECT_THROW(graph.update(two), cuwrap::GraphUpdateError);
  two.close();
  EXPECT_THROW(graph.update(two), std::logic_error);
  graph.launch(stream_);  // unchanged by the refused update
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 4));
}

TEST_F(GraphDefinitionTest, AGraphUpdatedFromADefinitionKeepsItsHostFunctionAfterTheNodeGoes) {
  std::atomic<int> calls{0};
  GraphDefinition first(*device_);
  first.callback({}, [&calls] { calls += 1; });
  Graph graph = first.instantiate();

  GraphDefinition second(*device_);
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> watch = token;
  const GraphNode node = second.callback({}, [&calls, token] { calls += 10; });
  token.reset();
  graph.update(second);
  // The definition lets go of the function; the Graph, which runs it now, must not.
  second.destroy_node(node);
  ASSERT_FALSE(watch.expired()) << "the updated Graph's host function was released";
  graph.launch(stream_);
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(calls.load(), 20);

  graph.close();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!watch.expired() && std::chrono::steady_clock::now() < deadline) {
    cuwrap::detail::release_finished_graphs();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(watch.expired()) << "the host function outlived the Graph and its definition";
}

// ---------------------------------------------------------------------------------
// Allocation options and what the driver decides

TEST_F(GraphDefinitionTest, AllocationOptionsAndDriverDecisions) {
  GraphDefinition def(*device_);
  cuwrap::GraphAllocOptions options;
  options.device = device_->device_id();
  const cuwrap::GraphAllocation a = def.alloc({}, kDefinitionBytes, options);
  EXPECT_NE(a.address, 0U);
  options.memory_type = static_cast<cuwrap::GraphMemoryType>(42);
  EXPECT_THROW(def.alloc({}, kDefinitionBytes, options), std::invalid_argument);
  // As cuda.core, an empty allocation is the driver's to refuse.
  EXPECT_THROW(def.alloc({}, 0), cuwrap::DriverError);
}

}  // namespace

namespace {

// A builder's graph seen as a GraphDefinition (cuda.core's graph_definition): the
// captured nodes are there, a node added through the view is part of the graph the
// builder completes, and closing the view leaves the builder as it was.
TEST_F(GraphDefinitionTest, BuilderGraphDefinitionIsAViewOfTheCapturedGraph) {
  Buffer out = device_->allocate(kDefinitionBytes, stream_);
  cuwrap::GraphBuilder builder = device_->create_graph_builder();
  EXPECT_THROW(static_cast<void>(builder.graph_definition()), std::logic_error);  // not built
  builder.begin_building();
  out.fill(std::uint8_t{1}, builder);
  EXPECT_THROW(static_cast<void>(builder.graph_definition()), std::logic_error);  // building
  std::vector<cuwrap::GraphBuilder> branches = builder.split(2);
  EXPECT_THROW(static_cast<void>(branches[1].graph_definition()), std::logic_error);
  builder = cuwrap::GraphBuilder::join(std::move(branches));
  builder.end_building();
  GraphDefinition view = builder.graph_definition();
  EXPECT_EQ(view.handle(), builder.handle());
  const std::vector<GraphNode> captured = view.nodes();
  ASSERT_FALSE(captured.empty());
  std::vector<GraphNode> sinks;
  for (const GraphNode& n : captured) {
    if (view.successors(n).empty()) {
      sinks.push_back(n);
    }
  }
  view.memset(sinks, out.handle(), std::uint8_t{9}, kDefinitionBytes);  // after the captured fill
  view.close();
  EXPECT_FALSE(view.is_open());
  Graph graph = builder.complete();  // the builder is still open and has the added node
  graph.launch(stream_);
  EXPECT_EQ(read(out), std::vector<std::uint8_t>(kDefinitionBytes, 9));
}

}  // namespace
