// Explicit nodes: GraphBuilder's node-adding operations (launch, memcpy, memset, callback,
// embed, empty, record_event, wait_event, alloc, free; GraphDefinition's forward to them)
// and GraphNode.
//
// Every one goes through GraphBuilder::add_node: without a capture the node joins the
// builder's own graph after the given dependencies; during a capture it joins the
// capture graph after the work captured so far, and the capture continues after it.
//
// Versions: managed graph allocations (CU_MEM_ALLOCATION_TYPE_MANAGED) need a CUDA 13.0
// toolkit and driver; the rest is older than every supported toolkit.
#include "graph/graph_state.hpp"
#include "launch/dims.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/host_function.hpp>
#include <cuwrap/version.hpp>

#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {
namespace detail {

// The capture calls with edge data (cuStreamGetCaptureInfo_v3, cuGraphAddNode_v2,
// cuStreamUpdateCaptureDependencies_v2) are CUDA 12.3 entry points: every supported
// toolkit declares them and every supported driver (12.4 and newer) has them, so they
// are named explicitly; the unversioned names mean the older forms in 12.4/12.6 headers.
CaptureTip capture_tip(CUstream stream) {
  const auto info = driver::cuStreamGetCaptureInfo_v3(stream);
  CaptureTip tip;
  tip.status = info.captureStatus_out;
  tip.graph = info.graph_out;
  tip.nodes = std::span<const CUgraphNode>(info.dependencies_out, info.numDependencies_out);
  tip.edges = info.edgeData_out;
  return tip;
}

CUgraphNode add_graph_node(CUgraph graph, std::span<const CUgraphNode> dependencies,
                           const CUgraphEdgeData* edges, CUgraphNodeParams& params) {
  return driver::cuGraphAddNode_v2(graph, dependencies.data(), edges, dependencies.size(), &params);
}

void set_capture_tip(CUstream stream, CUgraphNode node) {
  driver::cuStreamUpdateCaptureDependencies_v2(stream, &node, nullptr, 1,
                                               CU_STREAM_SET_CAPTURE_DEPENDENCIES);
}

// Host nodes call this with the HostFunction the user object (or a Graph) owns. An
// exception goes to the host-function error handler: none may unwind into the driver
// (as cuda.core reports a raising callback and the graph runs on).
void CUDA_CB run_host_function(void* data) noexcept {
  try {
    static_cast<HostFunction*>(data)->run();
  } catch (...) {
    report_host_function_error(std::current_exception());
  }
}

void linear_copy(CUDA_MEMCPY3D& copy, CUdeviceptr dst, CUdeviceptr src, std::size_t size) {
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // device, managed or host addresses alike
  copy.srcDevice = src;
  copy.srcPitch = size;
  copy.srcHeight = 1;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst;
  copy.dstPitch = size;
  copy.dstHeight = 1;
  copy.WidthInBytes = size;
  copy.Height = 1;
  copy.Depth = 1;
}

namespace {

// Return `node`'s value of a kernel node attribute; a failed query reads as unset
// (all zero), which is what a node never given the attribute holds.
CUkernelNodeAttrValue kernel_node_attribute(CUgraphNode node, CUkernelNodeAttrID id) {
  CUkernelNodeAttrValue value{};
  if (driver::raw::cuGraphKernelNodeGetAttribute(node, id, &value) != CUDA_SUCCESS) {
    value = CUkernelNodeAttrValue{};
  }
  return value;
}

using detail::dims;

}  // namespace

void apply_launch_attributes(CUgraphNode node, const LaunchConfig& config, LaunchAttributeRule rule,
                             const char* operation) {
  const Dim3 wanted = config.cluster.value_or(Dim3(1, 1, 1));
  Dim3 built(1, 1, 1);
  bool cooperative = false;
  if (rule != LaunchAttributeRule::NewNode) {
    const CUkernelNodeAttrValue cluster =
        kernel_node_attribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    // An unset cluster reads as 0 (or 1) in each dimension: both mean "no cluster".
    const auto extent = [](unsigned v) { return v == 0 ? 1U : v; };
    built = Dim3(extent(cluster.clusterDim.x), extent(cluster.clusterDim.y),
                 extent(cluster.clusterDim.z));
    cooperative = kernel_node_attribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative != 0;
  }
  const bool cluster_differs = !(built == wanted);
  const bool cooperative_differs = cooperative != config.cooperative_launch;
  if (rule == LaunchAttributeRule::Refuse) {
    if (cluster_differs) {
      throw std::invalid_argument(
          std::string(operation) + ": config.cluster " + dims(wanted) +
          " differs from the node's cluster " + dims(built) +
          ", which an instantiated graph cannot change (build the graph again and update())");
    }
    if (cooperative_differs) {
      throw std::invalid_argument(
          std::string(operation) + ": config.cooperative_launch is " +
          (config.cooperative_launch ? "true" : "false") + " but the node was built " +
          (cooperative ? "cooperative" : "not cooperative") +
          ", which an instantiated graph cannot change (build the graph again and update())");
    }
    return;
  }
  // A node of a graph: the driver sets both as kernel node attributes (and refuses, with
  // a DriverError naming cuGraphKernelNodeSetAttribute, what the device cannot do).
  // A cluster of one in each dimension is no cluster, as an unset attribute: a new node
  // gets the cluster its config names, a node changed gets it where it differs.
  if (rule == LaunchAttributeRule::NewNode ? config.cluster.has_value() : cluster_differs) {
    CUkernelNodeAttrValue value{};
    value.clusterDim.x = wanted.x;
    value.clusterDim.y = wanted.y;
    value.clusterDim.z = wanted.z;
    driver::cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value);
  }
  if (cooperative_differs) {
    CUkernelNodeAttrValue value{};
    value.cooperative = config.cooperative_launch ? 1 : 0;
    driver::cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value);
  }
}

CUgraphNodeParams node_params(CUgraphNodeType type) {
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);  // the reserved fields must be zero
  params.type = type;
  return params;
}

namespace {

void CUDA_CB delete_host_function(void* data) noexcept {
  delete static_cast<HostFunction*>(data);  // NOLINT(cppcoreguidelines-owning-memory)
}

// Hand `fn` to a user object retained by `graph`; return the pointer host nodes use and
// the user object (`graph`'s reference to it is released when the node is destroyed).
std::pair<HostFunction*, CUuserObject> attach_host_function(CUgraph graph,
                                                            std::unique_ptr<HostFunction> owned) {
  CUuserObject object = driver::cuUserObjectCreate(owned.get(), &delete_host_function, 1,
                                                   CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  HostFunction* pointer = owned.release();  // the user object owns it now
  const CUresult status =
      driver::raw::cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (status != CUDA_SUCCESS) {
    // Releasing the only reference deletes the function.
    report_release_failure(driver::raw::cuUserObjectRelease(object, 1), "cuUserObjectRelease",
                           "graph user object");
    throw_driver_error(status, "cuGraphRetainUserObject");
  }
  return {pointer, object};
}

}  // namespace

std::shared_ptr<const void> retain_host_functions(const GraphBuilderState& state) {
  auto release = [](std::vector<CUuserObject>* objects) noexcept {
    for (CUuserObject object : *objects) {
      report_release_failure(driver::raw::cuUserObjectRelease(object, 1), "cuUserObjectRelease",
                             "Graph");
    }
    delete objects;  // NOLINT(cppcoreguidelines-owning-memory)
  };
  if (state.host_objects.empty()) {
    return nullptr;
  }
  const std::shared_ptr<std::vector<CUuserObject>> kept(new std::vector<CUuserObject>(), release);
  kept->reserve(state.host_objects.size());  // the push_back after each retain cannot throw
  for (const GraphBuilderState::HostObject& host : state.host_objects) {
    if (host.graph == state.graph) {  // not one added to a capture graph never adopted
      driver::cuUserObjectRetain(host.object, 1);
      kept->push_back(host.object);
    }
  }
  return kept->empty() ? nullptr : kept;
}

}  // namespace detail

using State = detail::GraphBuilderState;

namespace {
constexpr int kManagedGraphAllocVersion = 13000;
}  // namespace

// ---------------------------------------------------------------------------------
// GraphNode

namespace detail {

GraphNode GraphNodeAccess::make(const GraphBuilderState& state, CUgraphNode node) {
  GraphNode result(node);
  result.scope_ = state.node_scope;
  const std::lock_guard<std::mutex> lock(state.node_scope->mutex);
  result.generation_ = state.node_scope->generation(node);
  return result;
}

std::vector<GraphNode> GraphNodeAccess::make(const GraphBuilderState& state,
                                             std::span<const CUgraphNode> nodes) {
  std::vector<GraphNode> result;
  result.reserve(nodes.size());
  const std::lock_guard<std::mutex> lock(state.node_scope->mutex);
  for (const CUgraphNode node : nodes) {
    GraphNode& made = result.emplace_back(node);
    made.scope_ = state.node_scope;
    made.generation_ = state.node_scope->generation(node);
  }
  return result;
}

void GraphNodeAccess::require_valid(const GraphNode& node, const char* operation) {
  if (node.node_ != nullptr && !node.is_valid()) {
    throw std::logic_error(std::string(operation) +
                           ": GraphNode has been destroyed (GraphDefinition::destroy_node), or "
                           "its graph is gone");
  }
}

Ref<GraphBuilderState> GraphNodeAccess::state_of(const GraphNode& node, const char* operation) {
  require_valid(node, operation);
  if (node.node_ == nullptr) {
    throw std::invalid_argument(std::string(operation) + ": node is a null GraphNode");
  }
  if (!node.scope_) {
    throw std::logic_error(std::string(operation) +
                           ": node was made from a bare CUgraphNode, so its graph is unknown");
  }
  const std::lock_guard<std::mutex> lock(node.scope_->mutex);
  GraphBuilderState* state = node.scope_->state;
  // Take a reference only while the state is not being destroyed (its count above 0):
  // its destructor clears `state` under this lock, after the count reached 0.
  unsigned long count = 0;  // NOLINT(google-runtime-int): the __atomic builtins' type
  if (state != nullptr) {
    count = __atomic_load_n(&state->ref_count, __ATOMIC_RELAXED);
    while (count != 0 && !__atomic_compare_exchange_n(&state->ref_count, &count, count + 1, true,
                                                      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
  }
  if (count == 0) {
    throw std::logic_error(std::string(operation) + ": the node's graph is gone");
  }
  return Ref<GraphBuilderState>::adopt(state);
}

}  // namespace detail

CUgraphNodeType GraphNode::type() const {
  if (node_ == nullptr) {
    throw std::logic_error("GraphNode::type on a null GraphNode");
  }
  detail::GraphNodeAccess::require_valid(*this, "GraphNode::type");
  return driver::cuGraphNodeGetType(node_);
}

bool GraphNode::is_valid() const noexcept {
  if (node_ == nullptr) {
    return false;
  }
  if (!scope_) {
    return true;  // a bare handle: cuwrap cannot tell
  }
  const std::lock_guard<std::mutex> lock(scope_->mutex);
  if (scope_->generation(node_) != generation_) {
    return false;  // destroyed (destroy_node)
  }
  for (const auto& owner : scope_->enclosing) {
    if (!owner->alive.load(std::memory_order_acquire)) {
      return false;  // a conditional or child-graph node around it was destroyed
    }
  }
  if (scope_->graph_known) {
    // The graph lives on with whatever holds it (a view, a Graph completed from it)
    // after the definition or builder is closed, and so do its nodes.
    return !scope_->graph.expired();
  }
  // A graph still being captured: as long as its builder.
  const State* state = scope_->state;
  return state != nullptr && !state->closed;
}

// ---------------------------------------------------------------------------------
// Adding nodes

GraphNode GraphBuilder::add_node(std::span<const GraphNode> dependencies, CUgraphNodeParams& params,
                                 const char* operation) {
  State& s = state(operation);
  const detail::ScopedContext scope(s.context);
  std::vector<CUgraphNode> nodes;
  nodes.reserve(dependencies.size());
  for (const GraphNode& node : dependencies) {
    detail::GraphNodeAccess::require_valid(node, operation);
  }
  if (s.phase != State::Phase::Building) {
    CUgraph graph = s.target_graph();
    for (const GraphNode& node : dependencies) {
      nodes.push_back(node.handle());
    }
    return detail::GraphNodeAccess::make(s, detail::add_graph_node(graph, nodes, nullptr, params));
  }
  // Capturing: after everything captured so far and `dependencies`; the capture then
  // continues after the new node.
  const detail::CaptureTip tip = detail::capture_tip(s.stream.handle());
  if (tip.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    detail::throw_driver_error(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "cuStreamGetCaptureInfo");
  }
  nodes.assign(tip.nodes.begin(), tip.nodes.end());
  std::vector<CUgraphEdgeData> edges;
  if (tip.edges != nullptr) {
    edges.assign(tip.edges, tip.edges + tip.nodes.size());
  }
  for (const GraphNode& node : dependencies) {
    nodes.push_back(node.handle());
  }
  if (!edges.empty()) {
    edges.resize(nodes.size(), CUgraphEdgeData{});
  }
  CUgraphNode node =
      detail::add_graph_node(tip.graph, nodes, edges.empty() ? nullptr : edges.data(), params);
  detail::set_capture_tip(s.stream.handle(), node);
  return detail::GraphNodeAccess::make(s, node);
}

const Stream& GraphBuilder::launch_stream(const Kernel& kernel) {
  State& s = state("launch");
  if (s.phase != State::Phase::Building) {
    throw std::logic_error(s.phase == State::Phase::Ended
                               ? "launch into a GraphBuilder whose building has ended"
                               : "launch into a GraphBuilder whose capture has not begun: call "
                                 "begin_building() first");
  }
  s.attachments->retain(kernel);
  return s.stream;
}

GraphNode GraphBuilder::launch_node(std::span<const GraphNode> dependencies,
                                    const LaunchConfig& config, const Kernel& kernel, void** args,
                                    std::size_t count, const std::size_t* sizes,
                                    const std::string_view* type_names) {
  State& s = state("launch");
  detail::check_arguments(kernel, count, sizes, type_names);
  detail::check_config(config);
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_KERNEL);
  detail::to_kernel_node_params(config, kernel, s.context, args, params.kernel);
  s.attachments->retain(kernel);
  GraphNode node = add_node(dependencies, params, "launch");
  detail::apply_launch_attributes(node.handle(), config, detail::LaunchAttributeRule::NewNode,
                                  "GraphBuilder::launch");
  return node;
}

GraphNode GraphBuilder::memcpy(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                               CUdeviceptr src, std::size_t size) {
  const State& s = state("memcpy");
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_MEMCPY);
  params.memcpy.copyCtx = s.context;
  detail::linear_copy(params.memcpy.copyParams, dst, src, size);
  return add_node(dependencies, params, "memcpy");
}

GraphNode GraphBuilder::memcpy(std::span<const GraphNode> dependencies, const CUDA_MEMCPY3D& copy) {
  const State& s = state("memcpy");
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_MEMCPY);
  params.memcpy.copyCtx = s.context;
  params.memcpy.copyParams = copy;
  return add_node(dependencies, params, "memcpy");
}

GraphNode GraphBuilder::memcpy(std::span<const GraphNode> dependencies, Buffer& dst,
                               const Buffer& src) {
  if (dst.size() != src.size()) {
    throw std::invalid_argument("GraphBuilder::memcpy: dst holds " + std::to_string(dst.size()) +
                                " bytes but src holds " + std::to_string(src.size()));
  }
  return memcpy(dependencies, dst.handle(), src.handle(), src.size());
}

GraphNode GraphBuilder::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                               std::uint8_t value, std::size_t width, std::size_t height,
                               std::size_t pitch) {
  return memset_node(dependencies, dst, value, 1, width, height, pitch);
}

GraphNode GraphBuilder::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                               std::uint16_t value, std::size_t width, std::size_t height,
                               std::size_t pitch) {
  return memset_node(dependencies, dst, value, 2, width, height, pitch);
}

GraphNode GraphBuilder::memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                               std::uint32_t value, std::size_t width, std::size_t height,
                               std::size_t pitch) {
  return memset_node(dependencies, dst, value, 4, width, height, pitch);
}

GraphNode GraphBuilder::memset(std::span<const GraphNode> dependencies, Buffer& dst,
                               std::uint8_t value) {
  return memset_node(dependencies, dst.handle(), value, 1, dst.size(), 1, 0);
}

GraphNode GraphBuilder::memset_node(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                    unsigned value, unsigned element_size, std::size_t width,
                                    std::size_t height, std::size_t pitch) {
  const State& s = state("memset");
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_MEMSET);
  detail::fill_memset(params.memset, dst, value, element_size, width, height, pitch);
  params.memset.ctx = s.context;
  return add_node(dependencies, params, "memset");
}

GraphNode GraphBuilder::callback_node(std::span<const GraphNode> dependencies,
                                      detail::HostFunction* raw_fn) {
  std::unique_ptr<detail::HostFunction> fn(raw_fn);
  State& s = state("callback");
  if (!fn) {
    throw std::invalid_argument("GraphBuilder::callback: fn is empty");
  }
  CUgraph graph = s.target_graph();
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_HOST);
  params.host.fn = &detail::run_host_function;
  s.host_objects.reserve(s.host_objects.size() + 1);  // the push_back below cannot throw
  const auto [pointer, object] = detail::attach_host_function(graph, std::move(fn));
  params.host.userData = pointer;
  GraphNode node;
  try {
    node = add_node(dependencies, params, "callback");
  } catch (...) {
    // No node calls the function: the graph's reference, the only one, deletes it.
    detail::report_release_failure(driver::raw::cuGraphReleaseUserObject(graph, object, 1),
                                   "cuGraphReleaseUserObject", "GraphBuilder");
    throw;
  }
  s.host_objects.push_back({node.handle(), graph, object});
  return node;
}

GraphNode GraphBuilder::embed(std::span<const GraphNode> dependencies, const GraphBuilder& child) {
  State& s = state("embed");
  if (!child.state_ || !child.state_->usable()) {
    throw std::logic_error("GraphBuilder::embed with a closed child GraphBuilder");
  }
  const State& c = *child.state_;
  if (c.phase == State::Phase::Building || c.graph == nullptr) {
    throw std::logic_error(
        "GraphBuilder::embed with a child that has not finished building: call its "
        "end_building() first (or add nodes to it)");
  }
  if (c.attachments != s.attachments) {
    for (const Kernel& kernel : c.attachments->kernels) {
      s.attachments->retain(kernel);
    }
  }
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_GRAPH);
  // Cloned: newer headers add `ownership`, whose zero (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
  // is what older drivers always do, so it is left zero for every toolkit.
  params.graph.graph = c.graph;
  return add_node(dependencies, params, "embed");
}

GraphNode GraphBuilder::empty(std::span<const GraphNode> dependencies) {
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_EMPTY);
  return add_node(dependencies, params, "empty");
}

GraphNode GraphBuilder::record_event(std::span<const GraphNode> dependencies, const Event& event) {
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  params.eventRecord.event = event.handle();
  return add_node(dependencies, params, "record_event");
}

GraphNode GraphBuilder::wait_event(std::span<const GraphNode> dependencies, const Event& event) {
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  params.eventWait.event = event.handle();
  return add_node(dependencies, params, "wait_event");
}

GraphAllocation GraphBuilder::alloc(std::span<const GraphNode> dependencies, std::size_t size,
                                    const GraphAllocOptions& options) {
  const State& s = state("alloc");
  const int device = options.device.value_or(s.device);
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  params.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.alloc.poolProps.location.id = Device(device).handle();
  switch (options.memory_type) {
    case GraphMemoryType::Device:
      break;
    case GraphMemoryType::Host:
      params.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_HOST;
      params.alloc.poolProps.location.id = 0;
      break;
    case GraphMemoryType::Managed:
#if CUDA_VERSION >= 13000
      detail::require_driver(kManagedGraphAllocVersion, "managed graph allocations");
      params.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
      break;
#else
      detail::throw_toolkit_too_old(kManagedGraphAllocVersion, "managed graph allocations");
#endif
    default:
      throw std::invalid_argument(
          "GraphBuilder::alloc: options.memory_type: Invalid memory_type (" +
          std::to_string(static_cast<int>(options.memory_type)) + ")");
  }
  std::vector<CUmemAccessDesc> access;
  access.reserve(options.peer_access.size());
  for (const int peer : options.peer_access) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = Device(peer).handle();
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(desc);
  }
  params.alloc.accessDescs = access.data();
  params.alloc.accessDescCount = access.size();
  params.alloc.bytesize = size;
  GraphAllocation allocation;
  allocation.node = add_node(dependencies, params, "alloc");
  allocation.address = params.alloc.dptr;
  allocation.size = size;
  return allocation;
}

GraphNode GraphBuilder::free(std::span<const GraphNode> dependencies, CUdeviceptr address) {
  CUgraphNodeParams params = detail::node_params(CU_GRAPH_NODE_TYPE_MEM_FREE);
  params.free.dptr = address;
  return add_node(dependencies, params, "free");
}

// ---------------------------------------------------------------------------------
// Reading nodes back

std::vector<GraphNode> GraphBuilder::nodes() const {
  const State& s = state("nodes");
  const CUgraph graph = handle();
  if (graph == nullptr) {
    detail::throw_state("nodes", "on a builder that has built nothing yet");
  }
  std::size_t count = 0;
  driver::cuGraphGetNodes(graph, nullptr, &count);
  std::vector<CUgraphNode> handles(count);
  driver::cuGraphGetNodes(graph, handles.data(), &count);
  handles.resize(count);
  return detail::GraphNodeAccess::make(s, handles);
}

std::vector<GraphNode> GraphBuilder::last_nodes() const {
  const State& s = state("last_nodes");
  if (s.phase != State::Phase::Building) {
    detail::throw_state("last_nodes",
                        "on a builder that is not building: call begin_building() first");
  }
  const detail::CaptureTip tip = detail::capture_tip(s.stream.handle());
  return detail::GraphNodeAccess::make(s, tip.nodes);
}

}  // namespace cuwrap
