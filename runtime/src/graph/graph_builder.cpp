// GraphBuilder: creation, lifetime, stream capture (begin/end, split/join) and
// complete(). The state behind it and why things are kept alive: graph_state.hpp.
// Nodes: graph_nodes.cpp; conditionals: graph_conditional.cpp; Graph: graph_exec.cpp.
#include "graph/graph_state.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/event.hpp>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuwrap {
namespace detail {

void GraphAttachments::retain(const Kernel& kernel) {
  const bool known = std::any_of(kernels.begin(), kernels.end(),
                                 [&](const Kernel& k) { return k.handle() == kernel.handle(); });
  if (!known) {
    kernels.push_back(kernel);
  }
}

GraphDefinition own_graph(CUgraph graph) {
  return GraphDefinition(graph, [](CUgraph g) {
    report_release_failure(driver::raw::cuGraphDestroy(g), "cuGraphDestroy", "GraphBuilder");
  });
}

GraphBuilderState::GraphBuilderState(Stream s, int ordinal, CUcontext ctx, Kind k)
    : node_scope(Ref<GraphNodeScope>::adopt(
          new GraphNodeScope())),  // NOLINT(cppcoreguidelines-owning-memory)
      stream(std::move(s)),
      device(ordinal),
      context(ctx),
      kind(k) {
  node_scope->state = this;
}

GraphBuilderState::~GraphBuilderState() {
  {
    const std::lock_guard<std::mutex> lock(node_scope->mutex);
    if (node_scope->state == this) {  // a branch shares the scope of its origin
      node_scope->state = nullptr;    // graph() of its nodes finds no state any more
    }
  }
  release();
}

void GraphBuilderState::release() noexcept {
  if (closed) {
    return;
  }
  closed = true;
  if (phase == Phase::Building && kind != Kind::Branch && stream.is_open()) {
    abandon_capture();  // a branch cannot end the capture; its origin does (or fails to: unjoined)
  }
  definition.reset();  // destroys the graph unless a completed Graph still uses it
  graph = nullptr;
  host_objects.clear();  // the graph's references go with it (or with the Graphs using it)
  conditionals.clear();
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
  } catch (...) {  // destruction must not throw: reported instead
    report_current_exception("GraphBuilder::close", "GraphBuilder");
  }
}

// NOLINTNEXTLINE(bugprone-exception-escape): stream.handle() runs only on an open stream
void GraphBuilderState::abandon_capture() noexcept {
  if (kind == Kind::Primary && graph == nullptr) {
    forget_nodes();  // the capture graph goes (or went with the failed call), and the bodies in it
  }
  // Not capturing any more (the failed call ended it): the driver answers
  // CUDA_ERROR_ILLEGAL_STATE and there is nothing to destroy.
  if (!stream.is_open()) {
    return;
  }
  CUgraph captured = nullptr;
  if (driver::raw::cuStreamEndCapture(stream.handle(), &captured) == CUDA_SUCCESS &&
      captured != nullptr && captured != graph && kind == Kind::Primary) {
    report_release_failure(driver::raw::cuGraphDestroy(captured), "cuGraphDestroy", "GraphBuilder");
  }
}

void GraphBuilderState::forget_node(CUgraphNode node) noexcept {
  const auto host = std::find_if(host_objects.begin(), host_objects.end(),
                                 [node](const HostObject& h) { return h.node == node; });
  if (host != host_objects.end()) {
    // Graphs instantiated from the graph hold references of their own: the callable
    // stays until they are gone too.
    report_release_failure(driver::raw::cuGraphReleaseUserObject(host->graph, host->object, 1),
                           "cuGraphReleaseUserObject", "GraphDefinition");
    host_objects.erase(host);
  }
  const auto conditional = std::find_if(conditionals.begin(), conditionals.end(),
                                        [node](const auto& entry) { return entry.first == node; });
  if (conditional != conditionals.end()) {
    conditional->second->alive.store(false, std::memory_order_release);
    conditionals.erase(conditional);
  }
}

void GraphBuilderState::forget_nodes() noexcept {
  {
    const std::lock_guard<std::mutex> lock(node_scope->mutex);
    node_scope->graph.reset();  // known, and gone: the nodes went with the graph
    node_scope->graph_known = true;
  }
  for (const auto& [node, owner] : conditionals) {
    owner->alive.store(false, std::memory_order_release);
  }
  conditionals.clear();
  host_objects.clear();
}

CUgraph GraphBuilderState::target_graph() {
  if (phase == Phase::Building) {
    return capture_tip(stream.handle()).graph;
  }
  if (graph == nullptr) {
    adopt_graph(driver::cuGraphCreate(0));
  }
  return graph;
}

void GraphBuilderState::adopt_graph(CUgraph built) {
  definition = own_graph(built);
  node_scope->set_graph(definition, enclosing);
  graph = built;
}

[[noreturn]] void throw_state(const char* operation, const std::string& what) {
  throw std::logic_error(std::string("GraphBuilder::") + operation + " " + what);
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

}  // namespace
}  // namespace detail

using State = detail::GraphBuilderState;

// ---------------------------------------------------------------------------------
// Creation (declared by Device and Stream)

GraphBuilder Device::create_graph_builder() const {
  StreamOptions options;
  options.nonblocking = true;
  return GraphBuilder(detail::make_ref<State>(create_stream(options), device_id(), context(),
                                              State::Kind::Primary));
}

GraphBuilder StreamRef::create_graph_builder() const {
  require_open("create_graph_builder");
  // share(): a non-owning Stream that keeps this CUDA stream alive while the builder
  // uses it, even if the Stream it came from is closed first.
  return GraphBuilder(
      detail::make_ref<State>(share(), device().device_id(), context(), State::Kind::Primary));
}

// ---------------------------------------------------------------------------------
// Lifetime

GraphBuilder::GraphBuilder() noexcept = default;
namespace detail {
void ref_acquire(const GraphBuilderState* state) noexcept { acquire_counted(state); }
void ref_release(const GraphBuilderState* state) noexcept { release_counted(state); }
void ref_acquire(const GraphNodeScope* scope) noexcept { acquire_counted(scope); }
void ref_release(const GraphNodeScope* scope) noexcept { release_counted(scope); }
}  // namespace detail

GraphBuilder::GraphBuilder(detail::Ref<detail::GraphBuilderState> state) noexcept
    : state_(std::move(state)) {}
GraphBuilder::GraphBuilder(GraphBuilder&& other) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&& other) noexcept = default;
GraphBuilder::~GraphBuilder() = default;

void GraphBuilder::close() noexcept {
  if (state_) {
    // A graph_definition() view shares the graph: the last owner's going releases it.
    if (state_->definition_views.load(std::memory_order_acquire) == 0 ||
        state_->phase == detail::GraphBuilderState::Phase::Building) {
      state_->release();
    }
    state_.reset();
  }
}

bool GraphBuilder::is_open() const noexcept { return state_ && !state_->closed; }

detail::GraphBuilderState& GraphBuilder::state(const char* operation) const {
  if (!state_ || state_->closed) {
    throw std::logic_error(std::string("GraphBuilder::") + operation + " on a closed GraphBuilder");
  }
  if (!state_->body_alive()) {
    throw std::logic_error(std::string("GraphBuilder::") + operation +
                           " on the body of a conditional node that was destroyed");
  }
  return *state_;
}

// ---------------------------------------------------------------------------------
// Capture
GraphBuilder GraphBuilder::begin_building(CaptureMode mode) && {
  begin_building(mode);
  return std::move(*this);
}

GraphBuilder GraphBuilder::end_building() && {
  end_building();
  return std::move(*this);
}

GraphBuilder& GraphBuilder::begin_building(CaptureMode mode) & {
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
  return *this;
}

GraphBuilder& GraphBuilder::end_building() & {
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
    // Make sure the capture is over (a failure need not have ended it), so the stream
    // runs later work again, and the builder may begin again.
    s.abandon_capture();
    s.phase = State::Phase::Idle;
    s.family->parked_streams.clear();
    throw;
  }
  s.family->parked_streams.clear();
  if (s.graph == nullptr) {
    s.adopt_graph(captured);
    for (const auto& [node, owner] : s.conditionals) {
      owner->graph = s.definition;  // the bodies captured into it keep it now
    }
  }
  s.phase = State::Phase::Ended;
  return *this;
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
        detail::make_ref<State>(std::move(stream), s.device, s.context, State::Kind::Branch);
    branch->phase = State::Phase::Building;
    branch->mode = s.mode;
    branch->attachments = s.attachments;
    branch->family = s.family;
    branch->enclosing = s.enclosing;  // a body's branch goes with the body
    // Its nodes are nodes of the graph this capture makes: they share its scope (and
    // so its graph once known, and graph() of the builder it was split from).
    branch->node_scope = s.node_scope;
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
    const detail::Ref<State> other = builder.state_;
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
// Accessors

void GraphBuilder::debug_dot_print_named(std::string_view path, unsigned flags) const {
  debug_dot_print(std::filesystem::path(path), flags);
}

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
    return detail::capture_tip(s.stream.handle()).graph;
  }
  return s.graph;
}
}  // namespace cuwrap
