// GraphBuilder and Graph. See cuwrap/graph.hpp for the model.
//
// A GraphBuilder is a handle on a shared GraphBuilderState: split() and join() hand
// out more handles on the same state (cuda.core returns the very same object), and
// the state is released when its last handle goes or when close() is called.
//
// Keeping things alive: a kernel node references a CUkernel, whose library must stay
// loaded while the graph or any Graph completed from it exists. Every Kernel that is
// launched into a builder or added to it is therefore kept (a Kernel copy) in a
// GraphAttachments object shared by the builder, its branches and bodies, and every
// Graph completed or updated from them. Host functions are different: the driver may
// call them after the Graph object is gone (cuGraphExecDestroy of a graph in flight
// frees it on completion), so each one is owned by a CUDA user object retained by the
// CUgraph, which the driver releases only when nothing can call it any more.
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/detail/context.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace detail {

/// What the nodes of one graph tree use and cuwrap must keep alive.
struct GraphAttachments {
  std::vector<Kernel> kernels;

  void retain(const Kernel& kernel) {
    const bool known = std::any_of(kernels.begin(), kernels.end(),
                                   [&](const Kernel& k) { return k.handle() == kernel.handle(); });
    if (!known) {
      kernels.push_back(kernel);
    }
  }
};

/// Bookkeeping shared by the builders of one capture (the original and its branches).
struct CaptureFamily {
  int unjoined_branches = 0;
  // Streams of branches that were joined (or dropped): they took part in the capture,
  // so they are destroyed only after the capture has ended.
  std::vector<Stream> parked_streams;
};

/// The state behind a GraphBuilder and every handle split()/join() gave out for it.
struct GraphBuilderState {
  enum class Kind {
    Primary,  ///< from Device/Stream::create_graph_builder: captures a new graph
    Branch,   ///< from split(): joins the capture of its origin, must be joined
    Body,     ///< from a conditional: captures into a body graph the node owns
  };
  enum class Phase { Idle, Building, Ended };

  GraphBuilderState(Stream s, int ordinal, CUcontext ctx, Kind k)
      : stream(std::move(s)), device(ordinal), context(ctx), kind(k) {}
  GraphBuilderState(const GraphBuilderState&) = delete;
  GraphBuilderState& operator=(const GraphBuilderState&) = delete;
  ~GraphBuilderState() { release(); }

  // End an unfinished capture, destroy an owned graph and release the stream.
  void release() noexcept {
    if (closed) {
      return;
    }
    closed = true;
    if (phase == Phase::Building && kind != Kind::Branch && stream.is_open()) {
      // A branch cannot end the capture; its origin does (or fails to: unjoined).
      CUgraph captured = nullptr;
      if (driver::raw::cuStreamEndCapture(stream.handle(), &captured) == CUDA_SUCCESS &&
          captured != nullptr && captured != graph && kind == Kind::Primary) {
        detail::report_release_failure(driver::raw::cuGraphDestroy(captured), "cuGraphDestroy", "GraphBuilder");
      }
    }
    if (graph != nullptr && owns_graph) {
      detail::report_release_failure(driver::raw::cuGraphDestroy(graph), "cuGraphDestroy", "GraphBuilder");
    }
    graph = nullptr;
    try {
      if (kind == Kind::Branch && phase == Phase::Building) {
        // Still part of the capture; a branch gone without a join stays counted in
        // unjoined_branches, so its origin reports it instead of the driver.
        family->parked_streams.push_back(std::move(stream));
      } else {
        if (kind != Kind::Branch) {
          family->parked_streams.clear();  // the capture has ended
        }
        stream.close();
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): destruction must not throw
    }
  }

  // The graph new nodes go into: the one being captured, else the builder's own
  // (created empty on first use, for builders that add nodes without capturing).
  CUgraph target_graph() {
    if (phase == Phase::Building) {
      return driver::cuStreamGetCaptureInfo(stream.handle()).graph_out;
    }
    if (graph == nullptr) {
      graph = driver::cuGraphCreate(0);
      owns_graph = true;
    }
    return graph;
  }

  Stream stream;
  int device;         // ordinal, for new streams
  CUcontext context;  // of the stream: nodes and conditional handles live in it
  Kind kind;
  Phase phase = Phase::Idle;
  CaptureMode mode = CaptureMode::Relaxed;
  CUgraph graph = nullptr;  // the built graph; a body's graph belongs to its node
  bool owns_graph = false;
  bool closed = false;
  std::shared_ptr<GraphAttachments> attachments = std::make_shared<GraphAttachments>();
  std::shared_ptr<CaptureFamily> family = std::make_shared<CaptureFamily>();
};

[[noreturn]] void throw_closed_graph(const char* operation) {
  throw std::logic_error(std::string("Graph::") + operation + " on a closed Graph");
}

namespace {

CUstreamCaptureMode to_cu(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::Global:
      return CU_STREAM_CAPTURE_MODE_GLOBAL;
    case CaptureMode::ThreadLocal:
      return CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    case CaptureMode::Relaxed:
      return CU_STREAM_CAPTURE_MODE_RELAXED;
  }
  throw std::invalid_argument("mode: not a CaptureMode (" + std::to_string(static_cast<int>(mode)) +
                              ")");
}

[[noreturn]] void throw_state(const char* operation, const std::string& what) {
  throw std::logic_error(std::string("GraphBuilder::") + operation + " " + what);
}

// Host nodes call this with the std::function the user object owns.
void CUDA_CB run_host_function(void* data) noexcept {
  (*static_cast<std::function<void()>*>(data))();
}

void CUDA_CB delete_host_function(void* data) noexcept {
  delete static_cast<std::function<void()>*>(data);
}

// Hand `fn` to a user object retained by `graph`; return the pointer host nodes use.
std::function<void()>* attach_host_function(CUgraph graph, std::function<void()> fn) {
  auto owned = std::make_unique<std::function<void()>>(std::move(fn));
  CUuserObject object = driver::cuUserObjectCreate(owned.get(), &delete_host_function, 1,
                                                   CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  std::function<void()>* pointer = owned.release();  // the user object owns it now
  const CUresult status =
      driver::raw::cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (status != CUDA_SUCCESS) {
    detail::report_release_failure(driver::raw::cuUserObjectRelease(object, 1), "cuUserObjectRelease", "graph user object");  // deletes the function
    throw_driver_error(status, "cuGraphRetainUserObject");
  }
  return pointer;
}

// Return "<status message>: <result name>" (e.g. CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED).
template <class Result>
std::string with_result(const char* message, Result result) {
  return std::string(message) + ": " + std::string(to_string(result));
}

}  // namespace
}  // namespace detail

using State = detail::GraphBuilderState;

// ---------------------------------------------------------------------------------
// Creation (declared by Device and Stream)

GraphBuilder Device::create_graph_builder() const {
  StreamOptions options;
  options.nonblocking = true;
  return GraphBuilder(std::make_shared<State>(create_stream(options), device_id(), context(),
                                              State::Kind::Primary));
}

GraphBuilder Stream::create_graph_builder() const {
  // share(): a non-owning Stream that keeps this CUDA stream alive while the builder
  // uses it, even if this Stream object is closed first.
  return GraphBuilder(
      std::make_shared<State>(share(), device().device_id(), context(), State::Kind::Primary));
}

// ---------------------------------------------------------------------------------
// GraphNode

CUgraphNodeType GraphNode::type() const {
  if (node_ == nullptr) {
    throw std::logic_error("GraphNode::type on a null GraphNode");
  }
  return driver::cuGraphNodeGetType(node_);
}

// ---------------------------------------------------------------------------------
// GraphBuilder: lifetime

GraphBuilder::GraphBuilder() noexcept = default;
GraphBuilder::GraphBuilder(std::shared_ptr<detail::GraphBuilderState> state) noexcept
    : state_(std::move(state)) {}
GraphBuilder::GraphBuilder(GraphBuilder&& other) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&& other) noexcept = default;
GraphBuilder::~GraphBuilder() = default;

void GraphBuilder::close() noexcept {
  if (state_) {
    state_->release();
    state_.reset();
  }
}

detail::GraphBuilderState& GraphBuilder::state(const char* operation) const {
  if (!state_ || state_->closed) {
    throw std::logic_error(std::string("GraphBuilder::") + operation + " on a closed GraphBuilder");
  }
  return *state_;
}

// ---------------------------------------------------------------------------------
// GraphBuilder: capture

void GraphBuilder::begin_building(CaptureMode mode) {
  State& s = state("begin_building");
  if (s.phase == State::Phase::Building) {
    detail::throw_state("begin_building", "on a builder that is already building");
  }
  if (s.phase == State::Phase::Ended) {
    detail::throw_state("begin_building",
                        "on a builder whose building has ended: a builder builds once "
                        "(create a new one to build another graph)");
  }
  const CUstreamCaptureMode cu_mode = detail::to_cu(mode);
  if (s.graph != nullptr) {
    // A body, or nodes added explicitly before: capture into that graph.
    driver::cuStreamBeginCaptureToGraph(s.stream.handle(), s.graph, nullptr, nullptr, 0, cu_mode);
  } else {
    driver::cuStreamBeginCapture(s.stream.handle(), cu_mode);
  }
  s.mode = mode;
  s.phase = State::Phase::Building;
}

GraphBuilder& GraphBuilder::end_building() {
  State& s = state("end_building");
  if (s.phase != State::Phase::Building) {
    detail::throw_state(
        "end_building",
        s.phase == State::Phase::Ended
            ? "on a builder whose building has already ended"
            : "on a builder that never began building: call begin_building() first");
  }
  if (s.kind == State::Kind::Branch) {
    detail::throw_state("end_building",
                        "on a builder from split(): join it with GraphBuilder::join() and end "
                        "the joined builder");
  }
  if (s.family->unjoined_branches > 0) {
    detail::throw_state("end_building", "on a builder with " +
                                            std::to_string(s.family->unjoined_branches) +
                                            " builder(s) from split() not joined: join them first");
  }
  CUgraph captured = nullptr;
  try {
    captured = driver::cuStreamEndCapture(s.stream.handle());
  } catch (...) {
    s.phase = State::Phase::Idle;  // the driver ended the capture; it may begin again
    s.family->parked_streams.clear();
    throw;
  }
  s.family->parked_streams.clear();
  if (s.graph == nullptr) {
    s.graph = captured;
    s.owns_graph = true;
  }
  s.phase = State::Phase::Ended;
  return *this;
}

Graph GraphBuilder::complete(const GraphCompleteOptions& options) {
  State& s = state("complete");
  if (s.phase == State::Phase::Building) {
    detail::throw_state("complete",
                        "on a builder that is still building: call end_building() first");
  }
  if (s.kind == State::Kind::Body) {
    detail::throw_state("complete",
                        "on the body of a conditional node: complete the builder it belongs to");
  }
  if (s.graph == nullptr) {
    detail::throw_state("complete",
                        "on a builder that never ended building: call begin_building() and "
                        "end_building() first (or add nodes)");
  }
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  if (options.auto_free_on_launch) {
    params.flags |= CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
  }
  if (options.upload_stream != nullptr) {
    params.flags |= CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    params.hUploadStream = options.upload_stream->handle();
  }
  if (options.device_launch) {
    params.flags |= CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
  }
  if (options.use_node_priority) {
    params.flags |= CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  }
  const detail::ScopedContext scope(s.context);
  CUgraphExec exec = nullptr;
  const CUresult status = driver::raw::cuGraphInstantiateWithParams(&exec, s.graph, &params);
  if (status != CUDA_SUCCESS || params.result_out != CUDA_GRAPH_INSTANTIATE_SUCCESS) {
    if (status == CUDA_SUCCESS && exec != nullptr) {
      detail::report_release_failure(driver::raw::cuGraphExecDestroy(exec), "cuGraphExecDestroy", "Graph");
    }
    throw GraphInstantiateError(status, params.result_out);
  }
  return Graph(exec, true, s.attachments);
}

std::vector<GraphBuilder> GraphBuilder::split(int count) {
  State& s = state("split");
  if (count < 2) {
    throw std::invalid_argument("GraphBuilder::split: count must be at least 2, got " +
                                std::to_string(count));
  }
  if (s.phase != State::Phase::Building) {
    detail::throw_state("split", "on a builder that is not building: call begin_building() first");
  }
  // The new streams wait on an event recorded here, which makes them join this capture.
  const Event fork = s.stream.record();
  std::vector<GraphBuilder> builders;
  builders.reserve(static_cast<std::size_t>(count));
  builders.push_back(GraphBuilder(state_));
  const Device device(s.device);
  for (int i = 1; i < count; ++i) {
    StreamOptions options;
    options.nonblocking = true;
    Stream stream = device.create_stream(options);
    stream.wait(fork);
    auto branch =
        std::make_shared<State>(std::move(stream), s.device, s.context, State::Kind::Branch);
    branch->phase = State::Phase::Building;
    branch->mode = s.mode;
    branch->attachments = s.attachments;
    branch->family = s.family;
    ++s.family->unjoined_branches;
    builders.push_back(GraphBuilder(std::move(branch)));
  }
  return builders;
}

GraphBuilder GraphBuilder::join(std::vector<GraphBuilder>&& builders) {
  if (builders.size() < 2) {
    throw std::invalid_argument("GraphBuilder::join: builders must hold at least 2 builders, got " +
                                std::to_string(builders.size()));
  }
  std::size_t root = builders.size();
  for (std::size_t i = 0; i < builders.size(); ++i) {
    const State& s = builders[i].state("join");
    if (s.phase != State::Phase::Building) {
      throw std::logic_error("GraphBuilder::join: builder " + std::to_string(i) +
                             " is not building");
    }
    if (root == builders.size() && s.kind != State::Kind::Branch) {
      root = i;
    }
  }
  if (root == builders.size()) {
    root = 0;  // all are branches (a branch was split again): join onto the first
  }
  State& target = *builders[root].state_;
  for (const GraphBuilder& builder : builders) {
    const std::shared_ptr<State> other = builder.state_;
    if (other.get() == &target || other->closed) {
      continue;  // the root itself, or a duplicate already joined
    }
    target.stream.wait(other->stream);
    if (other->kind == State::Kind::Branch) {
      --other->family->unjoined_branches;  // its work is part of the root's capture now
    }
    other->release();  // a branch's stream is parked until the capture ends
  }
  return std::move(builders[root]);
}

// ---------------------------------------------------------------------------------
// GraphBuilder: conditionals

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
  State& s = state(operation);
  if (s.phase != State::Phase::Building) {
    detail::throw_state(operation,
                        "on a builder that is not building: conditional nodes are captured; "
                        "call begin_building() first");
  }
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  params.conditional.ctx = s.context;
  add_node({}, params, operation);

  std::vector<GraphBuilder> bodies;
  bodies.reserve(size);
  const Device device(s.device);
  for (unsigned i = 0; i < size; ++i) {
    StreamOptions options;
    options.nonblocking = true;
    auto body = std::make_shared<State>(device.create_stream(options), s.device, s.context,
                                        State::Kind::Body);
    body->graph = params.conditional.phGraph_out[i];  // owned by the conditional node
    body->owns_graph = false;
    body->attachments = s.attachments;
    bodies.push_back(GraphBuilder(std::move(body)));
  }
  return bodies;
}

GraphBuilder GraphBuilder::if_then(CUgraphConditionalHandle handle) {
  return std::move(add_conditional(handle, CU_GRAPH_COND_TYPE_IF, 1, "if_then").front());
}

std::pair<GraphBuilder, GraphBuilder> GraphBuilder::if_else(CUgraphConditionalHandle handle) {
  std::vector<GraphBuilder> bodies = add_conditional(handle, CU_GRAPH_COND_TYPE_IF, 2, "if_else");
  return {std::move(bodies[0]), std::move(bodies[1])};
}

GraphBuilder GraphBuilder::while_loop(CUgraphConditionalHandle handle) {
  return std::move(add_conditional(handle, CU_GRAPH_COND_TYPE_WHILE, 1, "while_loop").front());
}

std::vector<GraphBuilder> GraphBuilder::switch_(CUgraphConditionalHandle handle, unsigned count) {
  if (count < 1) {
    throw std::invalid_argument("GraphBuilder::switch_: count must be at least 1, got 0");
  }
  return add_conditional(handle, CU_GRAPH_COND_TYPE_SWITCH, count, "switch_");
}

// ---------------------------------------------------------------------------------
// GraphBuilder: nodes

GraphNode GraphBuilder::add_node(std::span<const GraphNode> dependencies, CUgraphNodeParams& params,
                                 const char* operation) {
  State& s = state(operation);
  const detail::ScopedContext scope(s.context);
  std::vector<CUgraphNode> nodes;
  nodes.reserve(dependencies.size());
  if (s.phase != State::Phase::Building) {
    CUgraph graph = s.target_graph();
    for (const GraphNode& node : dependencies) {
      nodes.push_back(node.handle());
    }
    return GraphNode(driver::cuGraphAddNode(graph, nodes.data(), nullptr, nodes.size(), &params));
  }
  // Capturing: after everything captured so far and `dependencies`; the capture then
  // continues after the new node.
  const auto info = driver::cuStreamGetCaptureInfo(s.stream.handle());
  if (info.captureStatus_out != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    detail::throw_driver_error(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "cuStreamGetCaptureInfo");
  }
  nodes.assign(info.dependencies_out, info.dependencies_out + info.numDependencies_out);
  std::vector<CUgraphEdgeData> edges;
  if (info.edgeData_out != nullptr) {
    edges.assign(info.edgeData_out, info.edgeData_out + info.numDependencies_out);
  }
  for (const GraphNode& node : dependencies) {
    nodes.push_back(node.handle());
  }
  if (!edges.empty()) {
    edges.resize(nodes.size(), CUgraphEdgeData{});
  }
  CUgraphNode node = driver::cuGraphAddNode(
      info.graph_out, nodes.data(), edges.empty() ? nullptr : edges.data(), nodes.size(), &params);
  driver::cuStreamUpdateCaptureDependencies(s.stream.handle(), &node, nullptr, 1,
                                            CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  return GraphNode(node);
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

GraphNode GraphBuilder::add_kernel_node(std::span<const GraphNode> dependencies,
                                        const LaunchConfig& config, const Kernel& kernel,
                                        void** args, std::size_t count, const std::size_t* sizes,
                                        const std::string_view* type_names) {
  State& s = state("add_kernel");
  detail::check_arguments(kernel, count, sizes, type_names);
  detail::check_config(config);
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_KERNEL;
  params.kernel.kern = kernel.handle();
  params.kernel.ctx = s.context;
  params.kernel.gridDimX = config.grid.x;
  params.kernel.gridDimY = config.grid.y;
  params.kernel.gridDimZ = config.grid.z;
  params.kernel.blockDimX = config.block.x;
  params.kernel.blockDimY = config.block.y;
  params.kernel.blockDimZ = config.block.z;
  params.kernel.sharedMemBytes = static_cast<unsigned>(config.shmem_size);
  params.kernel.kernelParams = args;
  s.attachments->retain(kernel);
  const GraphNode node = add_node(dependencies, params, "add_kernel");
  if (config.cluster) {
    CUkernelNodeAttrValue value{};
    value.clusterDim.x = config.cluster->x;
    value.clusterDim.y = config.cluster->y;
    value.clusterDim.z = config.cluster->z;
    driver::cuGraphKernelNodeSetAttribute(node.handle(), CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                          &value);
  }
  if (config.cooperative_launch) {
    CUkernelNodeAttrValue value{};
    value.cooperative = 1;
    driver::cuGraphKernelNodeSetAttribute(node.handle(), CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value);
  }
  return node;
}

GraphNode GraphBuilder::add_memcpy(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                   CUdeviceptr src, std::size_t bytes) {
  const State& s = state("add_memcpy");
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  params.memcpy.copyCtx = s.context;
  CUDA_MEMCPY3D& copy = params.memcpy.copyParams;
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // device, managed or host addresses alike
  copy.srcDevice = src;
  copy.srcPitch = bytes;
  copy.srcHeight = 1;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst;
  copy.dstPitch = bytes;
  copy.dstHeight = 1;
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  return add_node(dependencies, params, "add_memcpy");
}

GraphNode GraphBuilder::add_memcpy(std::span<const GraphNode> dependencies, Buffer& dst,
                                   const Buffer& src) {
  if (dst.size() != src.size()) {
    throw std::invalid_argument("GraphBuilder::add_memcpy: dst holds " +
                                std::to_string(dst.size()) + " bytes but src holds " +
                                std::to_string(src.size()));
  }
  return add_memcpy(dependencies, dst.handle(), src.handle(), src.size());
}

GraphNode GraphBuilder::add_memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                   std::uint8_t value, std::size_t count) {
  return add_memset_elements(dependencies, dst, value, 1, count);
}

GraphNode GraphBuilder::add_memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                   std::uint16_t value, std::size_t count) {
  return add_memset_elements(dependencies, dst, value, 2, count);
}

GraphNode GraphBuilder::add_memset(std::span<const GraphNode> dependencies, CUdeviceptr dst,
                                   std::uint32_t value, std::size_t count) {
  return add_memset_elements(dependencies, dst, value, 4, count);
}

GraphNode GraphBuilder::add_memset(std::span<const GraphNode> dependencies, Buffer& dst,
                                   std::uint8_t value) {
  return add_memset_elements(dependencies, dst.handle(), value, 1, dst.size());
}

GraphNode GraphBuilder::add_memset_elements(std::span<const GraphNode> dependencies,
                                            CUdeviceptr dst, unsigned value, unsigned element_size,
                                            std::size_t count) {
  const State& s = state("add_memset");
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_MEMSET;
  params.memset.dst = dst;
  params.memset.value = value;
  params.memset.elementSize = element_size;
  params.memset.width = count;
  params.memset.height = 1;
  params.memset.ctx = s.context;
  return add_node(dependencies, params, "add_memset");
}

GraphNode GraphBuilder::add_host(std::span<const GraphNode> dependencies,
                                 std::function<void()> fn) {
  State& s = state("add_host");
  if (!fn) {
    throw std::invalid_argument("GraphBuilder::add_host: fn is empty");
  }
  CUgraph graph = s.target_graph();
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_HOST;
  params.host.fn = &detail::run_host_function;
  params.host.userData = detail::attach_host_function(graph, std::move(fn));
  return add_node(dependencies, params, "add_host");
}

GraphNode GraphBuilder::add_child(std::span<const GraphNode> dependencies,
                                  const GraphBuilder& child) {
  State& s = state("add_child");
  if (!child.state_ || child.state_->closed) {
    throw std::logic_error("GraphBuilder::add_child with a closed child GraphBuilder");
  }
  const State& c = *child.state_;
  if (c.phase == State::Phase::Building || c.graph == nullptr) {
    throw std::logic_error(
        "GraphBuilder::add_child with a child that has not finished building: call its "
        "end_building() first (or add nodes to it)");
  }
  if (c.attachments != s.attachments) {
    for (const Kernel& kernel : c.attachments->kernels) {
      s.attachments->retain(kernel);
    }
  }
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_GRAPH;
  params.graph.graph = c.graph;
  params.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE;
  return add_node(dependencies, params, "add_child");
}

GraphNode GraphBuilder::add_empty(std::span<const GraphNode> dependencies) {
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_EMPTY;
  return add_node(dependencies, params, "add_empty");
}

// ---------------------------------------------------------------------------------
// GraphBuilder: accessors

void GraphBuilder::debug_dot_print(const std::filesystem::path& path, unsigned flags) const {
  const State& s = state("debug_dot_print");
  if (s.phase == State::Phase::Building) {
    detail::throw_state("debug_dot_print",
                        "on a builder that is still building: call end_building() first");
  }
  if (s.graph == nullptr) {
    detail::throw_state("debug_dot_print", "on a builder that has built nothing yet");
  }
  driver::cuGraphDebugDotPrint(s.graph, path.c_str(), flags);
}

bool GraphBuilder::is_building() const {
  return state("is_building").phase == State::Phase::Building;
}

bool GraphBuilder::is_join_required() const {
  const State& s = state("is_join_required");
  return s.kind == State::Kind::Branch && s.phase == State::Phase::Building;
}

const Stream& GraphBuilder::stream() const { return state("stream").stream; }

CUgraph GraphBuilder::handle() const {
  const State& s = state("handle");
  if (s.phase == State::Phase::Building) {
    return driver::cuStreamGetCaptureInfo(s.stream.handle()).graph_out;
  }
  return s.graph;
}

// ---------------------------------------------------------------------------------
// Graph

Graph::Graph(CUgraphExec exec, bool owned, std::shared_ptr<detail::GraphAttachments> attachments)
    : exec_(exec), owned_(owned) {
  if (attachments) {
    attachments_.push_back(std::move(attachments));
  }
}

Graph Graph::from_handle(CUgraphExec exec) {
  if (exec == nullptr) {
    throw std::invalid_argument("Graph::from_handle: exec is null");
  }
  return Graph(exec, false, nullptr);
}

Graph::Graph(Graph&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)),
      owned_(std::exchange(other.owned_, false)),
      attachments_(std::move(other.attachments_)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    close();
    exec_ = std::exchange(other.exec_, nullptr);
    owned_ = std::exchange(other.owned_, false);
    attachments_ = std::move(other.attachments_);
  }
  return *this;
}

Graph::~Graph() { close(); }

void Graph::close() noexcept {
  if (exec_ != nullptr && owned_) {
    detail::report_release_failure(driver::raw::cuGraphExecDestroy(exec_), "cuGraphExecDestroy", "Graph");
  }
  exec_ = nullptr;
  owned_ = false;
  attachments_.clear();
}

void Graph::upload(const Stream& stream) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("upload");
  }
  driver::cuGraphUpload(exec_, stream.handle());
}

void Graph::update(const GraphBuilder& builder) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("update");
  }
  if (!builder.state_ || builder.state_->closed) {
    throw std::logic_error("Graph::update with a closed GraphBuilder");
  }
  const State& s = *builder.state_;
  if (s.phase == State::Phase::Building) {
    throw std::logic_error(
        "Graph::update with a GraphBuilder that is still building: call end_building() first");
  }
  if (s.graph == nullptr) {
    throw std::logic_error("Graph::update with a GraphBuilder that has built nothing");
  }
  const detail::ScopedContext scope(s.context);
  CUgraphExecUpdateResultInfo info{};
  const CUresult status = driver::raw::cuGraphExecUpdate(exec_, s.graph, &info);
  if (status != CUDA_SUCCESS) {
    throw GraphUpdateError(status, info);
  }
  if (std::find(attachments_.begin(), attachments_.end(), s.attachments) == attachments_.end()) {
    attachments_.push_back(s.attachments);
  }
}

CUgraphExec Graph::handle() const {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("handle");
  }
  return exec_;
}

// ---------------------------------------------------------------------------------
// Errors

GraphUpdateError::GraphUpdateError(CUresult code, const CUgraphExecUpdateResultInfo& info)
    : DriverError(code, "cuGraphExecUpdate"),
      info_(info),
      message_(detail::with_result(DriverError::what(), info.result)) {}

GraphInstantiateError::GraphInstantiateError(CUresult code, CUgraphInstantiateResult result)
    : DriverError(code, "cuGraphInstantiateWithParams"),
      result_(result),
      message_(detail::with_result(DriverError::what(), result)) {}

}  // namespace cuwrap
