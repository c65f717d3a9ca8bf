// GraphDefinition: a graph built node by node on an idle GraphBuilder (which never
// captures), its inspection and editing, and the readers of node parameters.
//
// Versions: every call here is a CUDA 12.0 driver entry point or older, except the
// conditional nodes (graph_conditional.cpp says which need what); the nodes themselves
// are added by GraphBuilder (graph_nodes.cpp says what managed allocations need).
#include "graph/graph_state.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/graph_definition.hpp>
#include <cuwrap/version.hpp>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {

using State = detail::GraphBuilderState;

namespace {

void require_node(const GraphNode& node, const char* operation, const char* name = "node") {
  if (node.handle() == nullptr) {
    throw std::invalid_argument(std::string("GraphDefinition::") + operation + ": " + name +
                                " is a null GraphNode");
  }
  detail::GraphNodeAccess::require_valid(
      node, (std::string("GraphDefinition::") + operation + ": " + name).c_str());
}

void require_type(const GraphNode& node, CUgraphNodeType type, const char* operation) {
  if (node.handle() == nullptr) {
    throw std::invalid_argument(std::string(operation) + ": node is a null GraphNode");
  }
  detail::GraphNodeAccess::require_valid(node, operation);
  const CUgraphNodeType actual = driver::cuGraphNodeGetType(node.handle());
  if (actual != type) {
    throw std::invalid_argument(std::string(operation) + ": node is a " +
                                std::string(to_string(actual)) + " node, not a " +
                                std::string(to_string(type)) + " node");
  }
}

// The edge calls are named by their CUDA 12.3 _v2 forms (edge data left null: default
// edges), which every supported toolkit declares and every supported driver has; the
// unversioned names mean the older forms in 12.4/12.6 headers and the _v2 ones in 13.x.
template <class Get>
std::vector<GraphNode> neighbours(const State& s, CUgraphNode node, Get get) {
  std::size_t count = 0;
  get(node, nullptr, &count);
  std::vector<CUgraphNode> handles(count);
  get(node, handles.data(), &count);
  handles.resize(count);
  return detail::GraphNodeAccess::make(s, handles);
}

}  // namespace

// ---------------------------------------------------------------------------------
// Creation

GraphDefinition::GraphDefinition() : GraphDefinition(Device(0)) {}

GraphDefinition::GraphDefinition(const Device& device) : builder_(device.create_graph_builder()) {
  State& s = builder_.state("GraphDefinition");
  const detail::ScopedContext scope(s.context);
  static_cast<void>(s.target_graph());  // a handle and zero nodes from the start
}

CUgraph GraphDefinition::handle() const { return builder_.state("handle").graph; }

GraphDefinition& GraphDefinition::operator=(GraphDefinition&& other) noexcept {
  return detail::move_assign(*this, std::move(other));  // the destructor gives a view's share back
}

GraphDefinition::~GraphDefinition() {
  if (view_) {
    close();
  }
}

void GraphDefinition::close() noexcept {
  if (view_) {
    if (builder_.state_) {
      builder_.state_->definition_views.fetch_sub(1, std::memory_order_acq_rel);
    }
    builder_.state_.reset();  // the builder's state stays with the builder
  } else {
    builder_.close();
  }
}

GraphDefinition GraphBuilder::graph_definition() const {
  const State& s = state("graph_definition");
  if (s.kind == State::Kind::Branch) {
    detail::throw_state("graph_definition",
                        "on a builder from split(): use the graph_definition() of the builder "
                        "it was split from");
  }
  if (s.phase == State::Phase::Building) {
    detail::throw_state("graph_definition",
                        "on a builder that is building: call end_building() first");
  }
  if (s.graph == nullptr) {
    detail::throw_state("graph_definition",
                        "on a builder that has not built yet: call begin_building() and "
                        "end_building() first");
  }
  s.definition_views.fetch_add(1, std::memory_order_acq_rel);
  return GraphDefinition(GraphBuilder(state_), true);
}

bool GraphDefinition::is_open() const noexcept {
  return builder_.state_ && builder_.state_->usable();
}

// ---------------------------------------------------------------------------------
// Adding nodes

GraphNode GraphDefinition::empty(std::span<const GraphNode> dependencies) {
  return builder_.empty(dependencies);
}

GraphNode GraphDefinition::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                  std::uint8_t value, std::size_t width, std::size_t height,
                                  std::size_t pitch) {
  return builder_.memset(dependencies, dst, value, width, height, pitch);
}

GraphNode GraphDefinition::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                  std::uint16_t value, std::size_t width, std::size_t height,
                                  std::size_t pitch) {
  return builder_.memset(dependencies, dst, value, width, height, pitch);
}

GraphNode GraphDefinition::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                  std::uint32_t value, std::size_t width, std::size_t height,
                                  std::size_t pitch) {
  return builder_.memset(dependencies, dst, value, width, height, pitch);
}

GraphNode GraphDefinition::memcpy(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                  CUdeviceptr src, std::size_t size) {
  return builder_.memcpy(dependencies, dst, src, size);
}

GraphNode GraphDefinition::memcpy(std::span<const GraphNode> dependencies,
                                  const CUDA_MEMCPY3D& copy) {
  return builder_.memcpy(dependencies, copy);
}

GraphNode GraphDefinition::embed(std::span<const GraphNode> dependencies,
                                 const GraphDefinition& child) {
  if (!child.is_open()) {
    throw std::logic_error("GraphDefinition::embed with a closed child GraphDefinition");
  }
  return builder_.embed(dependencies, child.builder_);
}

GraphNode GraphDefinition::record_event(std::span<const GraphNode> dependencies,
                                        const Event& event) {
  return builder_.record_event(dependencies, event);
}

GraphNode GraphDefinition::wait_event(std::span<const GraphNode> dependencies, const Event& event) {
  return builder_.wait_event(dependencies, event);
}

GraphAllocation GraphDefinition::alloc(std::span<const GraphNode> dependencies, std::size_t size,
                                       const GraphAllocOptions& options) {
  return builder_.alloc(dependencies, size, options);
}

GraphNode GraphDefinition::free(std::span<const GraphNode> dependencies, CUdeviceptr address) {
  return builder_.free(dependencies, address);
}

// ---------------------------------------------------------------------------------
// Conditional nodes

CUgraphConditionalHandle GraphDefinition::create_conditional_handle(
    std::optional<unsigned> default_value) {
  return builder_.create_conditional_handle(default_value);
}

ConditionalNode GraphDefinition::add_conditional(std::span<const GraphNode> dependencies,
                                                 CUgraphConditionalHandle condition,
                                                 CUgraphConditionalNodeType type, unsigned count,
                                                 const char* operation) {
  auto [node, bodies] =
      builder_.add_conditional_node(dependencies, condition, type, count, operation);
  ConditionalNode result;
  result.node = node;
  result.branches.reserve(bodies.size());
  for (GraphBuilder& body : bodies) {
    result.branches.push_back(GraphDefinition(std::move(body)));
  }
  return result;
}

ConditionalNode GraphDefinition::if_cond(std::span<const GraphNode> dependencies,
                                         CUgraphConditionalHandle condition) {
  return add_conditional(dependencies, condition, CU_GRAPH_COND_TYPE_IF, 1, "if_cond");
}

ConditionalNode GraphDefinition::if_else(std::span<const GraphNode> dependencies,
                                         CUgraphConditionalHandle condition) {
  static_cast<void>(builder_.state("if_else"));
  detail::require_driver(detail::kIfElseDriver, "if/else conditional graph nodes");
  return add_conditional(dependencies, condition, CU_GRAPH_COND_TYPE_IF, 2, "if_else");
}

ConditionalNode GraphDefinition::while_loop(std::span<const GraphNode> dependencies,
                                            CUgraphConditionalHandle condition) {
  return add_conditional(dependencies, condition, CU_GRAPH_COND_TYPE_WHILE, 1, "while_loop");
}

ConditionalNode GraphDefinition::switch_(std::span<const GraphNode> dependencies,
                                         CUgraphConditionalHandle condition, unsigned count) {
  static_cast<void>(builder_.state("switch_"));
  // A count of 0 is the driver's to refuse (DriverError), as in cuda.core.
#if CUDA_VERSION >= 12080
  detail::require_driver(detail::kSwitchVersion, "switch conditional graph nodes");
  return add_conditional(dependencies, condition, CU_GRAPH_COND_TYPE_SWITCH, count, "switch_");
#else
  static_cast<void>(dependencies);
  static_cast<void>(condition);
  static_cast<void>(count);
  detail::throw_toolkit_too_old(detail::kSwitchVersion, "switch conditional graph nodes");
#endif
}

// ---------------------------------------------------------------------------------
// Inspection and editing

std::vector<GraphNode> GraphDefinition::nodes() const {
  static_cast<void>(builder_.state("nodes"));
  return builder_.nodes();
}

std::size_t GraphDefinition::node_count() const {
  std::size_t count = 0;
  driver::cuGraphGetNodes(handle(), nullptr, &count);
  return count;
}

std::vector<std::pair<GraphNode, GraphNode>> GraphDefinition::edges() const {
  const State& s = builder_.state("edges");
  const CUgraph graph = handle();
  std::size_t count = 0;
  driver::cuGraphGetEdges_v2(graph, nullptr, nullptr, nullptr, &count);
  std::vector<CUgraphNode> from(count);
  std::vector<CUgraphNode> to(count);
  driver::cuGraphGetEdges_v2(graph, from.data(), to.data(), nullptr, &count);
  std::vector<std::pair<GraphNode, GraphNode>> result;
  result.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    result.emplace_back(detail::GraphNodeAccess::make(s, from[i]),
                        detail::GraphNodeAccess::make(s, to[i]));
  }
  return result;
}

std::vector<GraphNode> GraphDefinition::predecessors(GraphNode node) const {
  const State& s = builder_.state("predecessors");
  require_node(node, "predecessors");
  return neighbours(s, node.handle(), [](CUgraphNode n, CUgraphNode* out, std::size_t* count) {
    driver::cuGraphNodeGetDependencies_v2(n, out, nullptr, count);
  });
}

std::vector<GraphNode> GraphDefinition::successors(GraphNode node) const {
  const State& s = builder_.state("successors");
  require_node(node, "successors");
  return neighbours(s, node.handle(), [](CUgraphNode n, CUgraphNode* out, std::size_t* count) {
    driver::cuGraphNodeGetDependentNodes_v2(n, out, nullptr, count);
  });
}

void GraphDefinition::add_edge(GraphNode from, GraphNode to) {
  const CUgraph graph = handle();
  require_node(from, "add_edge", "from");
  require_node(to, "add_edge", "to");
  const CUgraphNode f = from.handle();
  const CUgraphNode t = to.handle();
  driver::cuGraphAddDependencies_v2(graph, &f, &t, nullptr, 1);
}

void GraphDefinition::remove_edge(GraphNode from, GraphNode to) {
  const CUgraph graph = handle();
  require_node(from, "remove_edge", "from");
  require_node(to, "remove_edge", "to");
  const CUgraphNode f = from.handle();
  const CUgraphNode t = to.handle();
  driver::cuGraphRemoveDependencies_v2(graph, &f, &t, nullptr, 1);
}

void GraphDefinition::destroy_node(GraphNode node) {
  State& s = builder_.state("destroy_node");
  if (node.handle() != nullptr && !node.is_valid() &&
      detail::GraphNodeAccess::scope(node) == s.node_scope.get()) {
    return;  // destroyed already: a repeated destroy does nothing, as in cuda.core
  }
  require_node(node, "destroy_node");
  driver::cuGraphDestroyNode(node.handle());
  s.forget_node(node.handle());  // only once the driver has destroyed it
  const std::lock_guard<std::mutex> lock(s.node_scope->mutex);
  ++s.node_scope->destroyed[node.handle()];  // every GraphNode of it is now invalid
}

GraphDefinition GraphDefinition::clone() const {
  const State& s = builder_.state("clone");
  GraphDefinition copy{Device(s.device)};
  State& c = *copy.builder_.state_;
  CUgraph cloned = driver::cuGraphClone(s.graph);
  c.adopt_graph(cloned);          // the empty graph made for the copy is released here
  c.attachments = s.attachments;  // the same kernels run
  // The clone holds references of its own to the host functions' user objects: its
  // host nodes release them when destroyed, as the originals do.
  for (const State::HostObject& host : s.host_objects) {
    CUgraphNode twin = nullptr;
    if (host.graph == s.graph &&
        driver::raw::cuGraphNodeFindInClone(&twin, host.node, cloned) == CUDA_SUCCESS) {
      c.host_objects.push_back({twin, cloned, host.object});
    }
  }
  return copy;
}

void GraphDefinition::set_memset_node(GraphNode node, const MemsetNodeParams& params) {
  static_cast<void>(handle());
  require_type(node, CU_GRAPH_NODE_TYPE_MEMSET, "GraphDefinition::set_memset_node");
  const CUDA_MEMSET_NODE_PARAMS p = detail::driver_memset(params);
  driver::cuGraphMemsetNodeSetParams(node.handle(), &p);
}

void GraphDefinition::set_memcpy_node(GraphNode node, const MemcpyNodeParams& params) {
  static_cast<void>(handle());
  require_type(node, CU_GRAPH_NODE_TYPE_MEMCPY, "GraphDefinition::set_memcpy_node");
  const CUDA_MEMCPY3D copy = detail::driver_memcpy(params);
  driver::cuGraphMemcpyNodeSetParams(node.handle(), &copy);
}

void GraphDefinition::set_event_node(GraphNode node, const Event& event) {
  static_cast<void>(handle());
  require_node(node, "set_event_node");
  const CUgraphNodeType type = driver::cuGraphNodeGetType(node.handle());
  if (type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
    driver::cuGraphEventRecordNodeSetEvent(node.handle(), event.handle());
  } else if (type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
    driver::cuGraphEventWaitNodeSetEvent(node.handle(), event.handle());
  } else {
    throw std::invalid_argument("GraphDefinition::set_event_node: node is a " +
                                std::string(to_string(type)) + " node, not an event node");
  }
}

void GraphDefinition::set_kernel_node_packed(GraphNode node, const LaunchConfig& config,
                                             const Kernel& kernel, void** args, std::size_t count,
                                             const std::size_t* sizes,
                                             const std::string_view* type_names) {
  State& s = builder_.state("set_kernel_node");
  require_type(node, CU_GRAPH_NODE_TYPE_KERNEL, "GraphDefinition::set_kernel_node");
  detail::check_arguments(kernel, count, sizes, type_names);
  detail::check_config(config);
  CUDA_KERNEL_NODE_PARAMS params{};
  detail::to_kernel_node_params(config, kernel, s.context, args, params);
  driver::cuGraphKernelNodeSetParams(node.handle(), &params);
  s.attachments->retain(kernel);
  detail::apply_launch_attributes(node.handle(), config, detail::LaunchAttributeRule::Change,
                                  "GraphDefinition::set_kernel_node");
}

// ---------------------------------------------------------------------------------
// Instantiation and output

Graph GraphDefinition::instantiate(const GraphCompleteOptions& options) {
  const State& s = builder_.state("instantiate");
  if (s.kind == State::Kind::Body) {
    throw std::logic_error(
        "GraphDefinition::instantiate on the branch of a conditional node or the graph of a "
        "child-graph node: instantiate the graph it belongs to");
  }
  return builder_.complete(options);
}

void GraphDefinition::debug_dot_print(const std::filesystem::path& path, unsigned flags) const {
  builder_.debug_dot_print(path, flags);
}

// ---------------------------------------------------------------------------------
// Node parameters

MemsetNodeParams memset_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_MEMSET, "memset_node_params");
  const CUDA_MEMSET_NODE_PARAMS p = driver::cuGraphMemsetNodeGetParams(node.handle());
  return MemsetNodeParams{p.dst, p.value, p.elementSize, p.width, p.height, p.pitch};
}

namespace {

// The address of the first byte one side of `copy` reads or writes: its host or device
// pointer by its memory type, moved by its offsets (0 for an array, which has none).
CUdeviceptr side_address(CUmemorytype type, const void* host, CUdeviceptr device,
                         std::size_t x_bytes, std::size_t y, std::size_t z, std::size_t pitch,
                         std::size_t height) {
  CUdeviceptr base = 0;
  if (type == CU_MEMORYTYPE_HOST) {
    base = reinterpret_cast<CUdeviceptr>(host);
  } else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) {
    base = device;
  } else {
    return 0;
  }
  return base + x_bytes + (y + z * height) * pitch;
}

}  // namespace

CUDA_MEMCPY3D memcpy_node_copy(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_MEMCPY, "memcpy_node_copy");
  return driver::cuGraphMemcpyNodeGetParams(node.handle());
}

MemcpyNodeParams memcpy_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_MEMCPY, "memcpy_node_params");
  const CUDA_MEMCPY3D c = driver::cuGraphMemcpyNodeGetParams(node.handle());
  return MemcpyNodeParams{side_address(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstXInBytes,
                                       c.dstY, c.dstZ, c.dstPitch, c.dstHeight),
                          side_address(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcXInBytes,
                                       c.srcY, c.srcZ, c.srcPitch, c.srcHeight),
                          c.WidthInBytes * c.Height * c.Depth};
}

KernelNodeParams kernel_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_KERNEL, "kernel_node_params");
  const CUDA_KERNEL_NODE_PARAMS p = driver::cuGraphKernelNodeGetParams(node.handle());
  KernelNodeParams result;
  result.function = p.func;
  result.grid = Dim3(p.gridDimX, p.gridDimY, p.gridDimZ);
  result.block = Dim3(p.blockDimX, p.blockDimY, p.blockDimZ);
  result.shmem_size = p.sharedMemBytes;
  return result;
}

AllocNodeParams alloc_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_MEM_ALLOC, "alloc_node_params");
  const CUDA_MEM_ALLOC_NODE_PARAMS p = driver::cuGraphMemAllocNodeGetParams(node.handle());
  AllocNodeParams result;
  result.dptr = p.dptr;
  result.bytesize = p.bytesize;
  result.device_id = p.poolProps.location.id;
  result.memory_type = p.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                           ? GraphMemoryType::Device
                           : GraphMemoryType::Host;
#if CUDA_VERSION >= 13000
  if (p.poolProps.allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    result.memory_type = GraphMemoryType::Managed;
  }
#endif
  for (std::size_t i = 0; i < p.accessDescCount; ++i) {
    if (p.poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p.accessDescs[i].location.id != p.poolProps.location.id) {
      result.peer_access.push_back(p.accessDescs[i].location.id);
    }
  }
  return result;
}

CUdeviceptr free_node_address(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_MEM_FREE, "free_node_address");
  return driver::cuGraphMemFreeNodeGetParams(node.handle());
}

CUevent event_node_event(GraphNode node) {
  if (node.handle() == nullptr) {
    throw std::invalid_argument("event_node_event: node is a null GraphNode");
  }
  detail::GraphNodeAccess::require_valid(node, "event_node_event");
  CUevent event = nullptr;
  const CUgraphNodeType type = driver::cuGraphNodeGetType(node.handle());
  if (type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
    event = driver::cuGraphEventRecordNodeGetEvent(node.handle());
  } else if (type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
    event = driver::cuGraphEventWaitNodeGetEvent(node.handle());
  } else {
    throw std::invalid_argument("event_node_event: node is a " + std::string(to_string(type)) +
                                " node, not an event node");
  }
  return event;
}

GraphDefinition child_graph_node_graph(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_GRAPH, "child_graph_node_graph");
  detail::Ref<State> parent = detail::GraphNodeAccess::state_of(node, "child_graph_node_graph");
  State& p = *parent;
  const CUgraph child = driver::cuGraphChildGraphNodeGetGraph(node.handle());
  // The node owns the child graph, so the view keeps the graph holding the node, and
  // behaves as closed once the node is destroyed: every view of one node shares an owner
  // that destroy_node marks gone, as a conditional node's branches do.
  std::shared_ptr<detail::ConditionalOwner> owner;
  for (const auto& [held, o] : p.conditionals) {
    if (held == node.handle()) {
      owner = o;
    }
  }
  if (!owner) {
    owner = std::make_shared<detail::ConditionalOwner>();
    owner->graph = p.definition;
    p.conditionals.emplace_back(node.handle(), owner);
  }
  StreamOptions options;
  options.nonblocking = true;
  auto view = detail::make_ref<State>(Device(p.device).create_stream(options), p.device, p.context,
                                      State::Kind::Body);
  view->graph = child;
  view->definition = p.definition;
  view->attachments = p.attachments;
  view->enclosing.reserve(p.enclosing.size() + 1);
  view->enclosing.push_back(owner);
  view->enclosing.insert(view->enclosing.end(), p.enclosing.begin(), p.enclosing.end());
  view->node_scope->set_graph(view->definition, view->enclosing);
  return detail::GraphNodeAccess::body(std::move(view));
}

ConditionalNodeParams conditional_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_CONDITIONAL, "conditional_node_params");
  const detail::Ref<State> state =
      detail::GraphNodeAccess::state_of(node, "conditional_node_params");
  for (const auto& [held, owner] : state->conditionals) {
    if (held == node.handle() && owner->size != 0) {
      return ConditionalNodeParams{owner->condition, owner->type, owner->size};
    }
  }
  throw std::invalid_argument(
      "conditional_node_params: node is a conditional node cuwrap did not add (its condition "
      "is unknown)");
}

HostNodeParams host_node_params(GraphNode node) {
  require_type(node, CU_GRAPH_NODE_TYPE_HOST, "host_node_params");
  const CUDA_HOST_NODE_PARAMS p = driver::cuGraphHostNodeGetParams(node.handle());
  return HostNodeParams{p.fn, p.userData};
}

// ---------------------------------------------------------------------------------
// A node's graph

GraphDefinition detail::GraphNodeAccess::view(Ref<GraphBuilderState> state) {
  return GraphBuilder(std::move(state)).graph_definition();
}

GraphDefinition detail::GraphNodeAccess::body(Ref<GraphBuilderState> state) {
  return cuwrap::GraphDefinition(GraphBuilder(std::move(state)));
}

GraphDefinition GraphNode::graph() const {
  return detail::GraphNodeAccess::view(
      detail::GraphNodeAccess::state_of(*this, "GraphNode::graph"));
}

}  // namespace cuwrap
