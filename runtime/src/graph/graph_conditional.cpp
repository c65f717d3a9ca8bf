// Conditional nodes: GraphBuilder::create_conditional_handle, if_cond, if_else,
// while_loop and switch_. Each body is a GraphBuilder of kind Body that captures into
// the body graph the conditional node owns.
//
// Versions: if and while nodes need CUDA 12.3 (below cuwrap's minimum driver, 12.4);
// if/else (an `if` node with two bodies) needs a 12.8 driver; switch needs 12.8 headers
// (CU_GRAPH_COND_TYPE_SWITCH) and a 12.8 driver.
#include "graph/graph_state.hpp"

#include <cuwrap/device.hpp>
#include <cuwrap/version.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {

using State = detail::GraphBuilderState;

CUgraphConditionalHandle GraphBuilder::create_conditional_handle(
    std::optional<unsigned> default_value) {
  State& s = state("create_conditional_handle");
  CUgraph graph = s.target_graph();
  return driver::cuGraphConditionalHandleCreate(graph, s.context, default_value.value_or(0),
                                                default_value ? CU_GRAPH_COND_ASSIGN_DEFAULT : 0);
}

std::vector<GraphBuilder> GraphBuilder::add_conditional(CUgraphConditionalHandle handle,
                                                        CUgraphConditionalNodeType type,
                                                        unsigned size, const char* operation) {
  const State& s = state(operation);
  if (s.phase != State::Phase::Building) {
    detail::throw_state(operation,
                        "on a builder that is not building: conditional nodes are captured; "
                        "call begin_building() first");
  }
  return add_conditional_node({}, handle, type, size, operation).second;
}

std::pair<GraphNode, std::vector<GraphBuilder>> GraphBuilder::add_conditional_node(
    std::span<const GraphNode> dependencies, CUgraphConditionalHandle handle,
    CUgraphConditionalNodeType type, unsigned size, const char* operation) {
  State& s = state(operation);
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_CONDITIONAL);
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  params.conditional.ctx = s.context;
  const GraphNode node = add_node(dependencies, params, operation);
  auto owner = std::make_shared<detail::ConditionalOwner>();
  owner->graph = s.definition;  // null while capturing a new graph: end_building sets it
  owner->condition = handle;
  owner->type = type;
  owner->size = size;
  s.conditionals.emplace_back(node.handle(), owner);

  std::vector<GraphBuilder> bodies;
  bodies.reserve(size);
  const Device device(s.device);
  for (unsigned i = 0; i < size; ++i) {
    StreamOptions options;
    options.nonblocking = true;
    auto body = detail::make_ref<State>(device.create_stream(options), s.device, s.context,
                                        State::Kind::Body);
    body->graph = params.conditional.phGraph_out[i];  // owned by the conditional node
    body->definition = s.definition;                  // which owns it: kept while the body is used
    body->attachments = s.attachments;
    body->enclosing.reserve(s.enclosing.size() + 1);
    body->enclosing.push_back(owner);
    body->enclosing.insert(body->enclosing.end(), s.enclosing.begin(), s.enclosing.end());
    body->node_scope->set_graph(body->definition, body->enclosing);
    bodies.push_back(GraphBuilder(std::move(body)));
  }
  return {node, std::move(bodies)};
}

GraphBuilder GraphBuilder::if_cond(CUgraphConditionalHandle handle) {
  return std::move(add_conditional(handle, CU_GRAPH_COND_TYPE_IF, 1, "if_cond").front());
}

std::pair<GraphBuilder, GraphBuilder> GraphBuilder::if_else(CUgraphConditionalHandle handle) {
  static_cast<void>(state("if_else"));
  detail::require_driver(detail::kIfElseDriver, "if/else conditional graph nodes");
  std::vector<GraphBuilder> bodies = add_conditional(handle, CU_GRAPH_COND_TYPE_IF, 2, "if_else");
  return {std::move(bodies[0]), std::move(bodies[1])};
}

GraphBuilder GraphBuilder::while_loop(CUgraphConditionalHandle handle) {
  return std::move(add_conditional(handle, CU_GRAPH_COND_TYPE_WHILE, 1, "while_loop").front());
}

std::vector<GraphBuilder> GraphBuilder::switch_(CUgraphConditionalHandle handle, unsigned count) {
  static_cast<void>(state("switch_"));
  if (count < 1) {
    throw std::invalid_argument("GraphBuilder::switch_: count must be at least 1, got 0");
  }
#if CUDA_VERSION >= 12080
  detail::require_driver(detail::kSwitchVersion, "switch conditional graph nodes");
  return add_conditional(handle, CU_GRAPH_COND_TYPE_SWITCH, count, "switch_");
#else
  static_cast<void>(handle);
  detail::throw_toolkit_too_old(detail::kSwitchVersion, "switch conditional graph nodes");
#endif
}

}  // namespace cuwrap
