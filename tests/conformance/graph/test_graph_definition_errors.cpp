// cuda.core's tests/graph/test_graph_definition_errors.py: GraphDefinition's input
// validation, errors and edge cases.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

using conformance::graph_kernels;
using conformance::one_thread;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

class GraphDefinitionErrors : public cuwrap::testing::DeviceTest {
 protected:
  // Conditional nodes run on compute capability 9.0 and newer in cuda.core's tests.
  bool conditional_execution() const { return device_->compute_capability().major >= 9; }

  int read_int(CUdeviceptr address) {
    int value = -1;
    cuwrap::driver::cuMemcpyDtoH(&value, address, sizeof value);
    return value;
  }
};

// cuda.core: TypeError("... GraphCondition") for a non-condition; here the condition is
// a CUgraphConditionalHandle and anything else does not compile.
template <class C>
concept TakesCondition = requires(GraphDefinition& g, C c) {
  g.if_cond({}, c);
};
static_assert(TakesCondition<CUgraphConditionalHandle>);
static_assert(!TakesCondition<const char*> && !TakesCondition<std::nullptr_t>);

TEST(GraphDefinitionErrorTypes, test_conditional_rejects_non_condition) {
  EXPECT_FALSE(TakesCondition<std::string>);
  EXPECT_TRUE(TakesCondition<CUgraphConditionalHandle>);
}

template <class C>
concept Embeds = requires(GraphDefinition& g, const C& c) {
  g.embed({}, c);
};
static_assert(Embeds<GraphDefinition> && !Embeds<std::string>);

TEST(GraphDefinitionErrorTypes, test_embed_rejects_non_graphdef) {
  EXPECT_FALSE(Embeds<const char*>);
  EXPECT_TRUE(Embeds<GraphDefinition>);
}

TEST_F(GraphDefinitionErrors, test_free_null_pointer) {
  GraphDefinition g;
  EXPECT_THROW(g.free({}, 0), cuwrap::DriverError);
}

// cuda.core: a 3-byte value is a ValueError; here memset takes 1-, 2- and 4-byte values
// only, so a 3-byte one does not compile (and an element size of 3 in set_memset_node
// is the driver's to refuse).
template <class V>
concept MemsetValue = requires(GraphDefinition& g, V v) {
  g.memset({}, CUdeviceptr{}, v, 1);
};
static_assert(MemsetValue<std::uint8_t> && MemsetValue<std::uint16_t> &&
              MemsetValue<std::uint32_t>);
struct ThreeBytes {
  unsigned char b[3];
};
static_assert(!MemsetValue<ThreeBytes>);

TEST_F(GraphDefinitionErrors, test_memset_invalid_value_size) {
  GraphDefinition g;
  const cuwrap::GraphAllocation alloc = g.alloc({}, 1024);
  Graph graph = g.instantiate();
  GraphDefinition fill;
  const GraphNode node = fill.memset({}, alloc.address, std::uint8_t{1}, 100);
  Graph filled = fill.instantiate();
  EXPECT_THROW(filled.set_memset_node(
                   node, {.dst = alloc.address, .value = 1, .element_size = 3, .width = 100}),
               cuwrap::DriverError);
}

TEST_F(GraphDefinitionErrors, test_switch_zero_branches) {
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle();
  if (cuwrap::bindings_version() < 12080) {
    EXPECT_THROW(g.switch_({}, condition, 0), cuwrap::UnsupportedError);
    return;
  }
  EXPECT_THROW(g.switch_({}, condition, 0), cuwrap::Error);  // DriverError, or too old
}

TEST_F(GraphDefinitionErrors, test_condition_from_different_graph) {
  GraphDefinition g1;
  GraphDefinition g2;
  const CUgraphConditionalHandle condition = g1.create_conditional_handle();
  EXPECT_THROW(g2.if_cond({}, condition), cuwrap::DriverError);
}

TEST_F(GraphDefinitionErrors, test_empty_node) {
  GraphDefinition g;
  const GraphNode joined = g.empty();
  EXPECT_EQ(joined.type(), CU_GRAPH_NODE_TYPE_EMPTY);
  EXPECT_EQ(g.nodes().size(), 1U);
}

TEST_F(GraphDefinitionErrors, test_join_single_predecessor) {
  GraphDefinition g;
  const cuwrap::GraphAllocation a = g.alloc({}, 1024);
  const GraphNode joined = g.empty({{a.node}});
  EXPECT_EQ(joined.type(), CU_GRAPH_NODE_TYPE_EMPTY);
  const std::vector<GraphNode> pred = g.predecessors(joined);
  ASSERT_EQ(pred.size(), 1U);
  EXPECT_EQ(pred[0], a.node);
}

TEST_F(GraphDefinitionErrors, test_multiple_instantiation) {
  CUWRAP_REQUIRE_NVRTC();
  GraphDefinition g;
  g.launch({}, one_thread(), graph_kernels().empty_kernel);
  Graph g1 = g.instantiate();
  Graph g2 = g.instantiate();
  EXPECT_NE(g1.handle(), g2.handle());
}

TEST_F(GraphDefinitionErrors, test_unmatched_alloc_succeeds) {
  GraphDefinition g;
  g.alloc({}, 1024);
  Graph graph = g.instantiate();
  const Stream stream = device_->create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(g.node_count(), 1U);
}

TEST_F(GraphDefinitionErrors, test_create_condition_no_default_value) {
  GraphDefinition g;
  EXPECT_NE(g.create_conditional_handle(), CUgraphConditionalHandle{0});
}

TEST_F(GraphDefinitionErrors, test_while_loop_zero_iterations) {
  CUWRAP_REQUIRE_NVRTC();
  if (!conditional_execution()) {
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  }
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(0);
  const cuwrap::GraphAllocation alloc = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{alloc.node}}, alloc.address, std::uint8_t{0}, sizeof(int));
  cuwrap::ConditionalNode loop = g.while_loop({{ms}}, condition);
  loop.branches[0].launch({}, one_thread(), graph_kernels().add_one, alloc.address);
  Graph graph = g.instantiate();
  const Stream stream = device_->create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(read_int(alloc.address), 0) << "the body should not have run";
}

TEST_F(GraphDefinitionErrors, test_if_then_false_skips_body) {
  CUWRAP_REQUIRE_NVRTC();
  if (!conditional_execution()) {
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  }
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(0);
  const cuwrap::GraphAllocation alloc = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{alloc.node}}, alloc.address, std::uint8_t{0}, sizeof(int));
  cuwrap::ConditionalNode node = g.if_cond({{ms}}, condition);
  node.branches[0].launch({}, one_thread(), graph_kernels().add_one, alloc.address);
  Graph graph = g.instantiate();
  const Stream stream = device_->create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(read_int(alloc.address), 0) << "the body should not have run";
}

TEST_F(GraphDefinitionErrors, test_switch_oob_skips_all_branches) {
  CUWRAP_REQUIRE_NVRTC();
  if (!conditional_execution()) {
    GTEST_SKIP() << "conditional node execution requires CC >= 9.0";
  }
  if (cuwrap::driver_version() < 12080 || cuwrap::bindings_version() < 12080) {
    GTEST_SKIP() << "switch nodes need CUDA 12.8";
  }
  GraphDefinition g;
  const CUgraphConditionalHandle condition = g.create_conditional_handle(99);
  const cuwrap::GraphAllocation alloc = g.alloc({}, sizeof(int));
  const GraphNode ms = g.memset({{alloc.node}}, alloc.address, std::uint8_t{0}, sizeof(int));
  cuwrap::ConditionalNode sw = g.switch_({{ms}}, condition, 3);
  for (GraphDefinition& branch : sw.branches) {
    branch.launch({}, one_thread(), graph_kernels().add_one, alloc.address);
  }
  Graph graph = g.instantiate();
  const Stream stream = device_->create_stream();
  graph.launch(stream);
  stream.sync();
  EXPECT_EQ(read_int(alloc.address), 0) << "no branch should have run";
}

}  // namespace
