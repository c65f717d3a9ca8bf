// Graph, the executable graph: lifetime, upload/launch, update from a builder, and
// changes in place (set_kernel_node, set_node_enabled); the graph error types.
#include "graph/graph_state.hpp"
#include "launch/kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/graph_definition.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cuwrap {
namespace detail {

[[noreturn]] void throw_closed_graph(const char* operation) {
  throw std::logic_error(std::string("Graph::") + operation + " on a closed Graph");
}

namespace {

// Return "<status message>: <result name>" (e.g. CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED).
template <class Result>
std::string with_result(const char* message, Result result) {
  return std::string(message) + ": " + std::string(to_string(result));
}

void check_node(const GraphNode& node, const char* operation) {
  if (node.handle() == nullptr) {
    throw std::invalid_argument(std::string("Graph::") + operation + ": node is a null GraphNode");
  }
  // A node destroyed in its definition names nothing the driver still knows.
  GraphNodeAccess::require_valid(node, (std::string("Graph::") + operation).c_str());
}

// Runs on a driver thread after the launches before it: only marks them done (a
// release would call CUDA, which a host function must not).
void CUDA_CB mark_done(void* data) noexcept {
  auto* done = static_cast<GraphKeepAlive::Done*>(data);
  (*done)->store(true, std::memory_order_release);
  delete done;  // NOLINT(cppcoreguidelines-owning-memory)
}

// What Graphs closed while their launches could still run keep, until those finish.
// Leaked on purpose: releasing kernels at process exit would call a driver that may be
// gone.
struct Graveyard {
  std::mutex mutex;
  std::vector<std::unique_ptr<GraphKeepAlive>> kept;
};

Graveyard& graveyard() {
  static auto* instance = new Graveyard();  // NOLINT(cppcoreguidelines-owning-memory)
  return *instance;
}

}  // namespace

void defer_release(GraphKeepAlive* raw) noexcept {
  std::unique_ptr<GraphKeepAlive> kept(raw);
  std::vector<std::unique_ptr<GraphKeepAlive>> finished;
  try {
    Graveyard& g = graveyard();
    const std::lock_guard<std::mutex> lock(g.mutex);
    const auto done = [](const std::unique_ptr<GraphKeepAlive>& k) {
      return !k->exec_gone || k->exec_gone->load(std::memory_order_acquire);
    };
    for (auto& k : g.kept) {
      if (done(k)) {
        finished.push_back(std::move(k));
      }
    }
    std::erase(g.kept, nullptr);
    if (kept && !done(kept)) {
      g.kept.push_back(std::move(kept));
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): no memory: released below, at once
  }
  // `finished` and `kept` (if still here) are released outside the lock.
}

void GraphKeepAlive::start(const std::shared_ptr<GraphAttachments>& attachments,
                           GraphDefinition definition) {
  origin.attachments = attachments;
  origin.definition = std::move(definition);
  current = GraphGeneration{};
  current.since = launches;
}

void GraphKeepAlive::replace(const std::shared_ptr<GraphAttachments>& attachments,
                             GraphDefinition definition,
                             std::shared_ptr<const void> host_functions) {
  prune();
  GraphGeneration next;
  next.since = launches;
  next.host_functions = std::move(host_functions);
  // The graph it was completed from needs no second reference.
  if (attachments != origin.attachments) {
    next.attachments = attachments;
  }
  if (definition != origin.definition) {
    next.definition = std::move(definition);
  }
  GraphGeneration old = std::exchange(current, std::move(next));
  // Updated from the same graph again: it stays (in `current`), only what was set on
  // its nodes is replaced.
  if (old.definition == current.definition) {
    old.definition.reset();
  }
  if (old.attachments == current.attachments) {
    old.attachments.reset();
  }
  retire(std::move(old));
}

bool GraphKeepAlive::holds(CUgraphNode node, const void* key) const noexcept {
  return key != nullptr && std::any_of(current.held.begin(), current.held.end(),
                                       [&](const GraphGeneration::NodeHold& h) {
                                         return h.node == node && h.key == key;
                                       });
}

void GraphKeepAlive::hold(CUgraphNode node, std::shared_ptr<const void> object, const void* key) {
  prune();
  for (GraphGeneration::NodeHold& held : current.held) {
    if (held.node == node) {
      GraphGeneration old;
      old.since = held.since;
      old.held.push_back(
          {node, std::exchange(held.object, std::move(object)), held.since, held.key});
      held.since = launches;
      held.key = key;
      retire(std::move(old));
      return;
    }
  }
  current.held.push_back({node, std::move(object), launches, key});
}

void GraphKeepAlive::retire(GraphGeneration&& generation) {
  const bool empty = !generation.attachments && !generation.definition && generation.held.empty();
  if (empty || generation.since == launches) {
    return;  // nothing to keep, or never launched: nothing can use it (released here)
  }
  waiting.push_back(std::move(generation));
}

void GraphKeepAlive::after_launch(CUstream stream) {
  ++launches;
  prune();
  if (waiting.empty()) {
    return;
  }
  // A graph launched into a capture becomes a node of that graph: a fence there would
  // only run when (and if) that graph does. Wait for a real launch instead.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (driver::raw::cuStreamIsCapturing(stream, &capturing) != CUDA_SUCCESS ||
      capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
    return;
  }
  Retired batch;
  batch.done = std::make_shared<std::atomic<bool>>(false);
  auto* handed = new Done(batch.done);  // NOLINT(cppcoreguidelines-owning-memory)
  if (driver::raw::cuLaunchHostFunc(stream, &mark_done, handed) != CUDA_SUCCESS) {
    delete handed;  // NOLINT(cppcoreguidelines-owning-memory)
    return;         // kept waiting; the next launch fences them
  }
  batch.generations = std::move(waiting);
  waiting.clear();
  fenced.push_back(std::move(batch));
}

void GraphKeepAlive::prune() noexcept {
  std::erase_if(fenced,
                [](const Retired& batch) { return batch.done->load(std::memory_order_acquire); });
}

std::size_t GraphKeepAlive::size() const noexcept {
  const auto count = [](const GraphGeneration& g) {
    return (g.attachments ? 1U : 0U) + (g.definition ? 1U : 0U) + (g.host_functions ? 1U : 0U) +
           g.held.size();
  };
  std::size_t total = count(origin) + count(current);
  for (const GraphGeneration& g : waiting) {
    total += count(g);
  }
  for (const Retired& batch : fenced) {
    for (const GraphGeneration& g : batch.generations) {
      total += count(g);
    }
  }
  return total;
}

std::size_t kept_alive_count(const Graph& graph) noexcept {
  return graph.keep_alive_ == nullptr ? 0 : graph.keep_alive_->size();
}

}  // namespace detail

using State = detail::GraphBuilderState;

// ---------------------------------------------------------------------------------
// Instantiation (declared by GraphBuilder)

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
  // A user object that only the executable graph will hold: the driver destroys it
  // once the executable graph is destroyed and its launches have finished, which tells
  // close() when what the Graph keeps may go.
  auto exec_gone = std::make_shared<std::atomic<bool>>(false);
  auto* handed =
      new detail::GraphKeepAlive::Done(exec_gone);  // NOLINT(cppcoreguidelines-owning-memory)
  CUuserObject sentinel = nullptr;
  if (driver::raw::cuUserObjectCreate(&sentinel, handed, &detail::mark_done, 1,
                                      CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) != CUDA_SUCCESS) {
    delete handed;  // NOLINT(cppcoreguidelines-owning-memory)
    sentinel = nullptr;
    exec_gone.reset();  // unknown: close() then releases at once, as before
  } else if (driver::raw::cuGraphRetainUserObject(s.graph, sentinel, 1,
                                                  CU_GRAPH_USER_OBJECT_MOVE) != CUDA_SUCCESS) {
    static_cast<void>(driver::raw::cuUserObjectRelease(sentinel, 1));  // deletes `handed`
    sentinel = nullptr;
    exec_gone.reset();
  }
  CUgraphExec exec = nullptr;
  const CUresult status = driver::raw::cuGraphInstantiateWithParams(&exec, s.graph, &params);
  if (sentinel != nullptr) {
    // The executable graph holds its own reference now; the graph lets go of it.
    static_cast<void>(driver::raw::cuGraphReleaseUserObject(s.graph, sentinel, 1));
  }
  if (status != CUDA_SUCCESS || params.result_out != CUDA_GRAPH_INSTANTIATE_SUCCESS) {
    if (status == CUDA_SUCCESS && exec != nullptr) {
      detail::report_release_failure(driver::raw::cuGraphExecDestroy(exec), "cuGraphExecDestroy",
                                     "Graph");
    }
    throw GraphInstantiateError(status, params.result_out);
  }
  Graph graph(exec, true, s.context);
  graph.keep_alive().start(s.attachments, s.definition);
  graph.keep_alive().exec_gone = std::move(exec_gone);
  return graph;
}

// ---------------------------------------------------------------------------------
// Lifetime
Graph::Graph(CUgraphExec exec, bool owned, CUcontext context)
    : exec_(exec), owned_(owned), context_(context) {}

detail::GraphKeepAlive& Graph::keep_alive() {
  if (keep_alive_ == nullptr) {
    keep_alive_ = new detail::GraphKeepAlive();  // NOLINT(cppcoreguidelines-owning-memory)
  }
  return *keep_alive_;
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
      context_(std::exchange(other.context_, nullptr)),
      keep_alive_(std::exchange(other.keep_alive_, nullptr)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Graph::~Graph() { close(); }

void Graph::close() noexcept {
  if (exec_ != nullptr && owned_) {
    detail::report_release_failure(driver::raw::cuGraphExecDestroy(exec_), "cuGraphExecDestroy",
                                   "Graph");
  }
  exec_ = nullptr;
  owned_ = false;
  context_ = nullptr;
  detail::GraphKeepAlive* kept = std::exchange(keep_alive_, nullptr);
  if (kept != nullptr && kept->launches > 0 && kept->exec_gone) {
    // The driver marks the executable graph gone, on a thread of its own, once its
    // launches have finished: usually at once. Wait a little for that, so that what the
    // Graph keeps goes now; launches still running after that keep it until a later
    // close() finds them finished.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!kept->exec_gone->load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    detail::defer_release(kept);  // released at once when done, else kept until then
  } else {
    delete kept;                     // NOLINT(cppcoreguidelines-owning-memory)
    detail::defer_release(nullptr);  // and release what earlier Graphs kept, if done
  }
}

std::size_t detail::release_finished_graphs() noexcept {
  defer_release(nullptr);
  Graveyard& g = graveyard();
  const std::lock_guard<std::mutex> lock(g.mutex);
  return g.kept.size();
}

void Graph::launch(StreamRef stream) {
  if (exec_ == nullptr) [[unlikely]] {
    detail::throw_closed_graph("launch");
  }
  detail::check(driver::raw::cuGraphLaunch(exec_, stream.handle()), "cuGraphLaunch");
  if (keep_alive_ != nullptr) {
    keep_alive_->after_launch(stream.handle());
  }
}

void Graph::upload(StreamRef stream) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("upload");
  }
  driver::cuGraphUpload(exec_, stream.handle());
}

void Graph::update(const GraphBuilder& builder) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("update");
  }
  if (!builder.state_ || !builder.state_->usable()) {
    throw std::logic_error("Graph::update with a closed GraphBuilder");
  }
  const State& s = *builder.state_;
  if (s.phase == State::Phase::Building) {
    // cuda.core: ValueError("Graph has not finished building").
    throw std::invalid_argument(
        "Graph::update: builder: Graph has not finished building (call end_building() first)");
  }
  if (s.graph == nullptr) {
    throw std::logic_error("Graph::update with a GraphBuilder that has built nothing");
  }
  update_from(s);
}

void Graph::update(const GraphDefinition& definition) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("update");
  }
  if (!definition.is_open()) {
    throw std::logic_error("Graph::update with a closed GraphDefinition");
  }
  update_from(*definition.builder_.state_);
}

void Graph::update_from(const State& s) {
  const detail::ScopedContext scope(s.context);
  // The executable graph runs `s`'s host functions from now on, and destroy_node on
  // their nodes releases the graph's references to them. The driver's update clones the
  // source graph's references (CUDA Programming Guide, "User Objects"); the Graph takes
  // its own as well, so as not to depend on that, before the update: a failure changes
  // nothing.
  std::shared_ptr<const void> host_functions = detail::retain_host_functions(s);
  CUgraphExecUpdateResultInfo info{};
  const CUresult status = driver::raw::cuGraphExecUpdate(exec_, s.graph, &info);
  if (status != CUDA_SUCCESS) {
    throw GraphUpdateError(status, info);
  }
  // A body's graph belongs to its conditional node: keep the graph that owns it.
  keep_alive().replace(s.attachments, s.definition, std::move(host_functions));
}

CUgraphExec Graph::handle() const {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("handle");
  }
  return exec_;
}

// ---------------------------------------------------------------------------------
// Changes in place

void Graph::set_kernel_node_packed(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                                   void** args, std::size_t count, const std::size_t* sizes,
                                   const std::string_view* type_names) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("set_kernel_node");
  }
  detail::check_node(node, "set_kernel_node");
  const CUgraphNodeType type = driver::cuGraphNodeGetType(node.handle());
  if (type != CU_GRAPH_NODE_TYPE_KERNEL) {
    throw std::invalid_argument("Graph::set_kernel_node: node is a " +
                                std::string(to_string(type)) + " node, not a kernel node");
  }
  detail::check_arguments(kernel, count, sizes, type_names);
  detail::check_config(config);
  detail::apply_launch_attributes(node.handle(), config, detail::LaunchAttributeRule::Refuse,
                                  "Graph::set_kernel_node");
  CUDA_KERNEL_NODE_PARAMS params{};
  detail::to_kernel_node_params(config, kernel, context_, args, params);
  // No context is made current: the parameters name it (or, for a Graph from
  // from_handle, leave it null so the driver uses the current one).
  driver::cuGraphExecKernelNodeSetParams(exec_, node.handle(), &params);
  // The kernel's library must stay loaded while a launch may run the node. A node that
  // already keeps that library replaces nothing (no copy, nothing to fence).
  const void* library = kernel.impl().library.get();
  if (library == nullptr || !keep_alive().holds(node.handle(), library)) {
    keep_alive().hold(node.handle(), std::make_shared<Kernel>(kernel), library);
  }
}

void Graph::check_settable(GraphNode node, CUgraphNodeType type, const char* operation) const {
  if (exec_ == nullptr) {
    detail::throw_closed_graph(operation);
  }
  detail::check_node(node, operation);
  const CUgraphNodeType actual = driver::cuGraphNodeGetType(node.handle());
  const bool event_node =
      type == CU_GRAPH_NODE_TYPE_EVENT_RECORD &&
      (actual == CU_GRAPH_NODE_TYPE_EVENT_RECORD || actual == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  if (actual != type && !event_node) {
    throw std::invalid_argument(std::string("Graph::") + operation + ": node is a " +
                                std::string(to_string(actual)) + " node, not a " +
                                std::string(to_string(type)) + " node");
  }
}

void Graph::set_memset_node(GraphNode node, const MemsetNodeParams& params) {
  check_settable(node, CU_GRAPH_NODE_TYPE_MEMSET, "set_memset_node");
  const CUDA_MEMSET_NODE_PARAMS p = detail::driver_memset(params);
  driver::cuGraphExecMemsetNodeSetParams(exec_, node.handle(), &p, context_);
}

void Graph::set_memcpy_node(GraphNode node, const MemcpyNodeParams& params) {
  check_settable(node, CU_GRAPH_NODE_TYPE_MEMCPY, "set_memcpy_node");
  const CUDA_MEMCPY3D copy = detail::driver_memcpy(params);
  driver::cuGraphExecMemcpyNodeSetParams(exec_, node.handle(), &copy, context_);
}

void Graph::set_host_node_raw(GraphNode node, detail::HostFunction* raw_fn) {
  std::shared_ptr<detail::HostFunction> fn(raw_fn);
  check_settable(node, CU_GRAPH_NODE_TYPE_HOST, "set_host_node");
  CUDA_HOST_NODE_PARAMS params{};
  params.fn = &detail::run_host_function;
  params.userData = fn.get();
  driver::cuGraphExecHostNodeSetParams(exec_, node.handle(), &params);
  keep_alive().hold(node.handle(), std::move(fn));
}

void Graph::set_event_node(GraphNode node, const Event& event) {
  check_settable(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, "set_event_node");
  if (driver::cuGraphNodeGetType(node.handle()) == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
    driver::cuGraphExecEventRecordNodeSetEvent(exec_, node.handle(), event.handle());
  } else {
    driver::cuGraphExecEventWaitNodeSetEvent(exec_, node.handle(), event.handle());
  }
}

void Graph::set_child_graph_node(GraphNode node, const GraphDefinition& child) {
  check_settable(node, CU_GRAPH_NODE_TYPE_GRAPH, "set_child_graph_node");
  if (!child.is_open()) {
    throw std::logic_error("Graph::set_child_graph_node with a closed GraphDefinition");
  }
  const State& c = *child.builder_.state_;
  driver::cuGraphExecChildGraphNodeSetParams(exec_, node.handle(), c.graph);
  // The child's kernels and host functions (owned by its graph's user objects) stay.
  auto kept = std::make_shared<
      std::pair<std::shared_ptr<detail::GraphAttachments>, detail::GraphDefinition>>(c.attachments,
                                                                                     c.definition);
  keep_alive().hold(node.handle(), std::move(kept));
}

void Graph::set_node_enabled(GraphNode node, bool enabled) {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("set_node_enabled");
  }
  detail::check_node(node, "set_node_enabled");
  driver::cuGraphNodeSetEnabled(exec_, node.handle(), enabled ? 1U : 0U);
}

bool Graph::is_node_enabled(GraphNode node) const {
  if (exec_ == nullptr) {
    detail::throw_closed_graph("is_node_enabled");
  }
  detail::check_node(node, "is_node_enabled");
  return driver::cuGraphNodeGetEnabled(exec_, node.handle()) != 0;
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
