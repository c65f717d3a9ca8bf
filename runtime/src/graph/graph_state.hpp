// Private to the graph sources (graph_builder.cpp, graph_nodes.cpp, graph_conditional.cpp,
// graph_exec.cpp): the state behind GraphBuilder and the helpers they share.
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
//
// The built CUgraph itself is shared (GraphDefinition) by the builder and the Graphs
// completed from it: Graph::set_kernel_node and set_node_enabled name nodes of that
// graph, which must therefore outlive the builder when the builder is closed first.
#pragma once

#include "base/ref_counted.hpp"

#include <cuwrap/driver.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cuwrap {
namespace detail {
/// The drivers (and toolkits) conditional graph nodes beyond `if` need: if/else and switch
/// arrived with CUDA 12.8.
inline constexpr int kIfElseDriver = 12080;
inline constexpr int kSwitchVersion = 12080;
}  // namespace detail

class GraphDefinition;
}  // namespace cuwrap

namespace cuwrap::detail {

/// What the nodes of one graph tree use and cuwrap must keep alive.
struct GraphAttachments {
  std::vector<Kernel> kernels;

  /// Keep `kernel` (once per CUkernel).
  void retain(const Kernel& kernel);
};

/// A CUgraph owned by whoever holds the shared_ptr last (builder or completed Graphs).
using GraphDefinition = std::shared_ptr<CUgraph_st>;

/// Take ownership of `graph`: it is destroyed with cuGraphDestroy when the last owner goes.
GraphDefinition own_graph(CUgraph graph);

/// What the bodies of one conditional node share. The driver destroys the body graphs
/// with the node, so destroy_node clears `alive` and the bodies' views behave as closed
/// instead of naming freed graphs; `graph` keeps the graph holding the node (and so the
/// bodies) alive while a body is used.
struct ConditionalOwner {
  std::atomic<bool> alive{true};
  GraphDefinition graph;  // null while that graph is still being captured: end_building sets it
  /// What the node was made with (conditional_node_params); a child-graph node's owner
  /// (child_graph_node_graph's views share it) leaves them zero.
  CUgraphConditionalHandle condition = 0;
  CUgraphConditionalNodeType type = CU_GRAPH_COND_TYPE_IF;
  unsigned size = 0;
};

struct GraphBuilderState;

/// What the GraphNodes of one graph share with the state that made them: the state
/// (while it exists) and how often each node handle was destroyed, so that a GraphNode
/// made before a destroy_node knows its node is gone, also when the driver gives a new
/// node the freed handle.
struct GraphNodeScope : RefCounted {
  mutable std::mutex mutex;
  GraphBuilderState* state = nullptr;  // cleared by the state's destructor
  std::unordered_map<CUgraphNode, std::uint32_t> destroyed;
  /// The graph holding the nodes (or the one owning it, for a body), once known: its
  /// nodes live as long as it does, also after the state is closed (a Graph completed
  /// from it keeps it). Unknown while a new graph is captured.
  std::weak_ptr<CUgraph_st> graph;
  bool graph_known = false;
  /// For a body or a child-graph view: the nodes whose destruction ends the graph.
  std::vector<std::shared_ptr<const ConditionalOwner>> enclosing;

  /// Record, under the lock, that the nodes live in `owner` (null: gone) inside `around`.
  void set_graph(const GraphDefinition& owner,
                 const std::vector<std::shared_ptr<const ConditionalOwner>>& around) {
    const std::lock_guard<std::mutex> lock(mutex);
    graph = owner;
    graph_known = owner != nullptr || graph_known;
    enclosing = around;
  }

  /// Return how often `node` was destroyed (lock held).
  std::uint32_t generation(CUgraphNode node) const {
    const auto found = destroyed.find(node);
    return found == destroyed.end() ? 0U : found->second;
  }
};

/// Make and read GraphNodes (a friend of GraphNode, GraphBuilder and GraphDefinition).
struct GraphNodeAccess {
  /// Return `node` as a GraphNode of `state`'s graph.
  static GraphNode make(const GraphBuilderState& state, CUgraphNode node);
  /// Return `nodes` as GraphNodes of `state`'s graph.
  static std::vector<GraphNode> make(const GraphBuilderState& state,
                                     std::span<const CUgraphNode> nodes);
  /// Throw std::logic_error (naming `operation`) unless `node` is valid; null passes
  /// (the callers refuse it with their own std::invalid_argument).
  static void require_valid(const GraphNode& node, const char* operation);
  /// Return the state of the graph holding `node`, with a reference of its own; throw
  /// std::logic_error naming `operation` when it is unknown or gone.
  static Ref<GraphBuilderState> state_of(const GraphNode& node, const char* operation);
  /// Return a GraphDefinition viewing `state`'s graph (GraphBuilder::graph_definition()).
  static cuwrap::GraphDefinition view(Ref<GraphBuilderState> state);
  /// Return a GraphDefinition of a body state (a graph that a node owns).
  static cuwrap::GraphDefinition body(Ref<GraphBuilderState> state);
  /// Return `node`'s scope (null for a node made from a bare handle).
  static const GraphNodeScope* scope(const GraphNode& node) noexcept { return node.scope_.get(); }
};

/// Bookkeeping shared by the builders of one capture (the original and its branches).
struct CaptureFamily {
  int unjoined_branches = 0;
  // Streams of branches that were joined (or dropped): they took part in the capture,
  // so they are destroyed only after the capture has ended.
  std::vector<Stream> parked_streams;
};

/// The state behind a GraphBuilder and every handle split()/join() gave out for it.
struct GraphBuilderState : RefCounted {
  enum class Kind {
    Primary,  ///< from Device/Stream::create_graph_builder: captures a new graph
    Branch,   ///< from split(): joins the capture of its origin, must be joined
    Body,     ///< from a conditional: captures into a body graph the node owns
  };
  enum class Phase { Idle, Building, Ended };

  GraphBuilderState(Stream s, int ordinal, CUcontext ctx, Kind k);
  GraphBuilderState(const GraphBuilderState&) = delete;
  GraphBuilderState& operator=(const GraphBuilderState&) = delete;
  ~GraphBuilderState();

  /// End an unfinished capture, drop the graph and release the stream (never throws).
  void release() noexcept;

  /// End the capture on `stream` if it is still on, destroying a graph it returns that
  /// this builder does not own (never throws). Used after a failed cuStreamEndCapture:
  /// a stream left capturing would turn later work on it (a Buffer's stream-ordered
  /// free) into graph nodes that never run, so that memory would leak.
  void abandon_capture() noexcept;

  /// Return the graph new nodes go into: the one being captured, else the builder's
  /// own (created empty on first use, for builders that add nodes without capturing).
  CUgraph target_graph();

  /// Keep `captured` (or an explicitly created graph) as this builder's graph.
  void adopt_graph(CUgraph captured);

  /// What the GraphNodes made here share (see GraphNodeScope).
  Ref<GraphNodeScope> node_scope;
  Stream stream;
  int device;         // ordinal, for new streams
  CUcontext context;  // of the stream: nodes and conditional handles live in it
  Kind kind;
  Phase phase = Phase::Idle;
  /// How many GraphDefinition views (graph_definition()) were made of this builder's
  /// graph: while any may exist, GraphBuilder::close() drops only the builder's share and
  /// the graph lives on with the views, as cuda.core's graph_definition shares ownership.
  mutable std::atomic<int> definition_views{0};
  CaptureMode mode = CaptureMode::Relaxed;
  CUgraph graph = nullptr;     // the built graph; a body's graph belongs to its node
  GraphDefinition definition;  // owns `graph` unless this is a body
  bool closed = false;
  std::shared_ptr<GraphAttachments> attachments = std::make_shared<GraphAttachments>();
  std::shared_ptr<CaptureFamily> family = std::make_shared<CaptureFamily>();

  /// A host node's callable: the reference to its user object that `graph` holds.
  struct HostObject {
    CUgraphNode node = nullptr;
    CUgraph graph = nullptr;
    CUuserObject object = nullptr;
  };
  /// The host nodes added here: destroying one releases its callable from the graph
  /// (Graphs instantiated before hold their own reference), as cuda.core releases a
  /// destroyed node's attachments.
  std::vector<HostObject> host_objects;
  /// The conditional nodes added here and what their bodies share.
  std::vector<std::pair<CUgraphNode, std::shared_ptr<ConditionalOwner>>> conditionals;
  /// For a body: the conditional nodes it lies in (its own, then those around it).
  std::vector<std::shared_ptr<const ConditionalOwner>> enclosing;

  /// Return false for a body whose conditional node (or one around it) was destroyed.
  bool body_alive() const noexcept {
    return std::all_of(enclosing.begin(), enclosing.end(), [](const auto& owner) {
      return owner->alive.load(std::memory_order_acquire);
    });
  }
  /// Return true while the state may be used: not closed, and its graph not destroyed.
  bool usable() const noexcept { return !closed && body_alive(); }
  /// Forget `node`, which the driver has destroyed: release its host function's
  /// reference and mark the bodies of a conditional node gone (never throws).
  void forget_node(CUgraphNode node) noexcept;
  /// Forget every node: the graph was destroyed (a capture that failed or was abandoned).
  void forget_nodes() noexcept;
};

/// What one version of an instantiated graph's parameters uses: the graph it was
/// completed or updated from (its nodes are the ones set_* name; its user objects own
/// the host functions), that graph's kernels, and kernels set_kernel_node put in.
struct GraphGeneration {
  /// Something set on one node of the instantiated graph (a kernel, a host function).
  struct NodeHold {
    CUgraphNode node = nullptr;
    std::shared_ptr<const void> object;
    std::uint64_t since = 0;  // launch count when it was set
    /// What `object` keeps alive for the node (a kernel's library), or null when each
    /// object is its own (a host function): a change to an object of the same key
    /// replaces nothing that a launch could still need.
    const void* key = nullptr;
  };
  std::shared_ptr<GraphAttachments> attachments;
  GraphDefinition definition;
  /// References of its own to the user objects owning the host functions of the graph
  /// updated from: destroy_node on that graph's host nodes releases the graph's.
  std::shared_ptr<const void> host_functions;
  std::vector<NodeHold> held;  // at most one per node
  /// The Graph's launch count when this became current: unchanged means never launched.
  std::uint64_t since = 0;
};

/// What a Graph keeps alive, and nothing more (issue: a Graph updated in a loop must
/// not grow). The graph it was instantiated from stays (its node handles name the
/// Graph's nodes), and so does the current generation. Whatever an update or a
/// set_kernel_node replaces is released at once if no launch can use it, else after
/// the launches that may: a host function enqueued after the next launch marks them
/// done (every launch of one CUgraphExec is ordered after its earlier launches, on any
/// stream), and they are released on the Graph's next call. The host function makes no
/// CUDA call: releasing a kernel or a graph does, so the Graph's own thread does it.
///
/// The fence is batched: everything replaced between two launches waits behind one host
/// function, enqueued by the later launch, and a launch enqueues none when nothing was
/// replaced since the one before. A change that keeps what the node already keeps (a
/// kernel node set again to a kernel of the same library, only its arguments new)
/// replaces nothing, so a loop of set_kernel_node + launch on one kernel fences nothing.
struct GraphKeepAlive {
  using Done = std::shared_ptr<std::atomic<bool>>;
  struct Retired {
    std::vector<GraphGeneration> generations;
    Done done;  // null until fenced by a launch
  };

  /// Set once the executable graph is gone and its launches have finished: the
  /// destructor of a user object only the executable graph holds sets it.
  Done exec_gone;
  GraphGeneration origin;   // instantiated from; node handles name its nodes
  GraphGeneration current;  // what the parameters use now
  std::uint64_t launches = 0;
  std::vector<GraphGeneration> waiting;  // replaced after a launch, not yet fenced
  std::vector<Retired> fenced;           // released once `done`

  /// Start with the graph completed from `attachments` / `definition`.
  void start(const std::shared_ptr<GraphAttachments>& attachments, GraphDefinition definition);
  /// Make `attachments` / `definition` (and the host functions' references,
  /// `host_functions`) current after an update; retire what they replace.
  void replace(const std::shared_ptr<GraphAttachments>& attachments, GraphDefinition definition,
               std::shared_ptr<const void> host_functions = nullptr);
  /// Return true when `node` already holds an object of `key` (non-null) in the current
  /// generation: setting another object of that key would replace nothing.
  bool holds(CUgraphNode node, const void* key) const noexcept;
  /// Keep `object` for `node` (set_*_node), retiring what it replaces there; `key` as
  /// NodeHold::key.
  void hold(CUgraphNode node, std::shared_ptr<const void> object, const void* key = nullptr);
  /// Release what is done; count a launch on `stream` and fence what waits behind it.
  void after_launch(CUstream stream);
  /// Release every fenced batch whose launches have finished.
  void prune() noexcept;
  /// Return how many objects are kept (generations, kernels, batches), for tests.
  std::size_t size() const noexcept;

 private:
  void retire(GraphGeneration&& generation);
};

/// Take a reference of its own to the user object of each host function of `state`'s
/// graph; the result releases them when destroyed (null: the graph has none).
std::shared_ptr<const void> retain_host_functions(const GraphBuilderState& state);

/// Keep `kept` until `exec_gone` is set (a Graph closed while its launches may run),
/// and release what earlier calls kept whose launches have finished. Never throws:
/// without memory, `kept` is released at once.
void defer_release(GraphKeepAlive* kept) noexcept;

/// The capture state of `stream`: its graph and the nodes the next captured work
/// depends on, with their edge data. cuStreamGetCaptureInfo with edge data (CUDA 12.3).
struct CaptureTip {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  std::span<const CUgraphNode> nodes;
  const CUgraphEdgeData* edges = nullptr;  // null: every edge is a default one
};

/// Return `stream`'s capture state.
CaptureTip capture_tip(CUstream stream);

/// Add a node of `params` to `graph` after `dependencies` (`edges` may be null).
CUgraphNode add_graph_node(CUgraph graph, std::span<const CUgraphNode> dependencies,
                           const CUgraphEdgeData* edges, CUgraphNodeParams& params);

/// Make `node` the only node the next work captured on `stream` depends on.
void set_capture_tip(CUstream stream, CUgraphNode node);

/// Fill the kernel node parameters `out` (CUDA_KERNEL_NODE_PARAMS or its _v3 twin in
/// CUgraphNodeParams, which share their fields) for `kernel` launched with `config`.
///
/// Cluster and cooperative launches are node attributes, not part of these parameters:
/// apply_launch_attributes sets them.
template <class KernelNodeParams>
void to_kernel_node_params(const LaunchConfig& config, const Kernel& kernel, CUcontext context,
                           void** args, KernelNodeParams& out) {
  out.kern = kernel.handle();
  out.ctx = context;
  copy_launch_dimensions(config, out);
  out.kernelParams = args;
}

/// How apply_launch_attributes treats a kernel node's cluster and cooperative launch.
enum class LaunchAttributeRule {
  NewNode,  ///< a node just added: set what `config` asks for
  Change,   ///< a node of a graph: make them `config`'s (set or cleared)
  Refuse,   ///< a node of an instantiated graph: a `config` that differs is refused
};

/// Give kernel node `node` the cluster dimensions and cooperative launch of `config`.
///
/// The one rule of every way a kernel node gets a launch configuration: a node of a graph
/// gets them as kernel node attributes (cuGraphKernelNodeSetAttribute; DriverError where
/// the driver or device cannot), while an instantiated graph, which fixes them at
/// instantiation, refuses a `config` whose cluster or cooperative launch differs from the
/// node's (std::invalid_argument starting with `operation`).
void apply_launch_attributes(CUgraphNode node, const LaunchConfig& config, LaunchAttributeRule rule,
                             const char* operation);

/// Run the HostFunction `data` (the host nodes' function).
void CUDA_CB run_host_function(void* data) noexcept;

/// Fill `copy` as a linear copy of `size` bytes from `src` to `dst` (unified addressing:
/// device, host and managed addresses alike).
void linear_copy(CUDA_MEMCPY3D& copy, CUdeviceptr dst, CUdeviceptr src, std::size_t size);

/// Fill the memset fields of `p` (CUDA_MEMSET_NODE_PARAMS, or the v2 form inside
/// CUgraphNodeParams; a v2's context stays as it is): `width` elements of `element_size`
/// bytes set to `value` in each of `height` rows, `pitch` bytes apart.
template <class MemsetParams>
void fill_memset(MemsetParams& p, CUdeviceptr dst, unsigned value, unsigned element_size,
                 std::size_t width, std::size_t height, std::size_t pitch) noexcept {
  p.dst = dst;
  p.value = value;
  p.elementSize = element_size;
  p.width = width;
  p.height = height;
  p.pitch = pitch;
}

/// The driver's parameters of the memset `params` describes (what Graph::set_memset_node
/// and GraphDefinition::set_memset_node hand the driver).
inline CUDA_MEMSET_NODE_PARAMS driver_memset(const MemsetNodeParams& params) noexcept {
  CUDA_MEMSET_NODE_PARAMS p{};
  fill_memset(p, params.dst, params.value, params.element_size, params.width, params.height,
              params.pitch);
  return p;
}

/// The driver's parameters of the linear copy `params` describes.
inline CUDA_MEMCPY3D driver_memcpy(const MemcpyNodeParams& params) {
  CUDA_MEMCPY3D copy{};
  linear_copy(copy, params.dst, params.src, params.size);
  return copy;
}

/// Return node parameters of `type` with every other field zero.
CUgraphNodeParams node_params(CUgraphNodeType type);

/// Throw std::logic_error "GraphBuilder::<operation> <what>".
[[noreturn]] void throw_state(const char* operation, const std::string& what);

}  // namespace cuwrap::detail
