// CUDA graphs, cuda.core style: GraphBuilder builds a graph (by stream capture or by
// adding nodes explicitly) and Graph is the executable graph it completes into.
//
//   GraphBuilder builder = stream.create_graph_builder();
//   builder.begin_building();                     // cuStreamBeginCapture
//   launch(builder, config, kernel_a, buf, n);    // captured, not run
//   launch(builder, config, kernel_b, buf, n);
//   Graph graph = builder.end_building().complete();
//   for (int i = 0; i < 100; ++i) graph.launch(stream);
//
// A GraphBuilder is usable wherever a `const Stream&` or a StreamRef is expected
// (allocation, fill, copies), so that work is captured too. split()/join() fork and join concurrent
// branches of one capture; if_cond()/if_else()/while_loop()/switch_() add conditional
// nodes whose bodies are builders of their own, driven by a conditional handle that a
// kernel sets with the device-side cudaGraphSetConditional(handle, value).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/path.hpp>
#include <cuwrap/detail/ref.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/host_function.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/stream.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuwrap {

class Device;
class Event;
class Graph;
class GraphBuilder;
class GraphDefinition;

namespace detail {
struct GraphBuilderState;  // runtime/src/graph/graph_state.hpp
void ref_acquire(const GraphBuilderState* state) noexcept;
void ref_release(const GraphBuilderState* state) noexcept;
struct GraphKeepAlive;  // what a Graph keeps alive; runtime/src/graph/graph_state.hpp
struct GraphNodeScope;  // what the GraphNodes of one graph share; graph_state.hpp
void ref_acquire(const GraphNodeScope* scope) noexcept;
void ref_release(const GraphNodeScope* scope) noexcept;
struct GraphNodeAccess;  // makes and reads GraphNodes; runtime/src/graph/graph_nodes.cpp
/// Return how many objects `graph` keeps alive for its nodes (for tests of its bound).
std::size_t kept_alive_count(const Graph& graph) noexcept;
/// Release what Graphs closed during their launches kept, once those launches have
/// finished; return how many such Graphs still wait (closing a Graph also does this).
std::size_t release_finished_graphs() noexcept;
[[noreturn]] void throw_closed_graph(const char* operation);
}  // namespace detail

/// How a capture interacts with potentially unsafe API calls (CUstreamCaptureMode).
enum class CaptureMode {
  Global,       ///< Prohibit potentially unsafe calls in every thread of the process.
  ThreadLocal,  ///< Prohibit potentially unsafe calls in the capturing thread.
  Relaxed,      ///< Do not prohibit them (cuda.core's default).
};

/// Options of GraphBuilder::complete(), as cuda.core's GraphCompleteOptions.
struct GraphCompleteOptions {
  /// Free memory allocated inside the graph automatically before each relaunch.
  bool auto_free_on_launch = false;
  /// Upload the graph to this stream as part of instantiation (nullptr: do not).
  const Stream* upload_stream = nullptr;
  /// Make the graph launchable from the device.
  bool device_launch = false;
  /// Use the per-node priority attributes instead of the launch stream's priority.
  bool use_node_priority = false;
};

/// The DOT flags debug_dot_print() uses unless told otherwise: everything, with kernel arguments.
inline constexpr unsigned kDefaultDotFlags =
    CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE | CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS;

/// A node of a graph under construction: a non-owning CUgraphNode (the graph owns it).
///
/// A GraphNode that cuwrap handed out (the node-adding operations of GraphBuilder and
/// GraphDefinition, nodes())
/// knows its graph: graph() views it, and is_valid() turns false once the node is
/// destroyed (GraphDefinition::destroy_node, through any copy of the GraphNode) or its
/// graph is gone; every call on such a node then throws std::logic_error before the
/// driver sees the freed handle. A GraphNode made from a bare CUgraphNode knows neither.
class GraphNode {
 public:
  /// Make a null node.
  GraphNode() = default;
  /// Wrap `node` without taking ownership (its graph and validity are then unknown).
  explicit GraphNode(CUgraphNode node) noexcept : node_(node) {}
  /// Return the node's type (cuGraphNodeGetType); std::logic_error for a destroyed node.
  CUgraphNodeType type() const;
  /// Return the CUgraphNode.
  CUgraphNode handle() const noexcept { return node_; }
  /// Return false for a null node, a destroyed one, or one whose graph is gone (closed,
  /// or the conditional or child-graph node holding it destroyed); true otherwise, also
  /// for a node made from a bare CUgraphNode (whose fate cuwrap cannot know).
  bool is_valid() const noexcept;
  /// Return a view of the graph holding this node (cuda.core's node.graph): a
  /// GraphDefinition that shares the graph, as GraphBuilder::graph_definition() does.
  ///
  /// Throws std::logic_error for a node made from a bare CUgraphNode, a destroyed node,
  /// a node whose graph is gone, or one of a graph that is still being captured or was
  /// captured by a builder from split().
  GraphDefinition graph() const;
  /// Compare nodes by handle (a node destroyed and a new node at its address differ).
  friend bool operator==(const GraphNode& a, const GraphNode& b) noexcept {
    return a.node_ == b.node_ && a.generation_ == b.generation_;
  }

 private:
  friend struct detail::GraphNodeAccess;
  CUgraphNode node_ = nullptr;
  detail::Ref<detail::GraphNodeScope> scope_;  // null: made from a bare handle
  std::uint32_t generation_ = 0;               // the handle's destruction count when made
};

/// A graph memory allocation made by alloc() (GraphBuilder's or GraphDefinition's): its
/// node and its address.
struct GraphAllocation {
  GraphNode node;           ///< The allocation node; later nodes that use the memory depend on it.
  CUdeviceptr address = 0;  ///< The address the memory has whenever the graph runs.
  std::size_t size = 0;     ///< The size in bytes.
};

/// Where a graph allocation lives, as cuda.core's GraphAllocOptions.
enum class GraphMemoryType {
  Device,   ///< Device memory (the default).
  Host,     ///< Pinned host memory (where the driver supports it for graph allocations).
  Managed,  ///< Managed memory (a CUDA 13.0 toolkit and driver).
};

/// Options of alloc() (GraphBuilder's and GraphDefinition's), as cuda.core's GraphAllocOptions.
struct GraphAllocOptions {
  /// The device the memory belongs to (nullopt: the builder's or definition's device).
  std::optional<int> device;
  /// The kind of memory.
  GraphMemoryType memory_type = GraphMemoryType::Device;
  /// Devices that may also access the memory.
  std::vector<int> peer_access;
};

/// A 1D or 2D fill as a memset node holds it: what memset_node_params() returns and
/// set_memset_node() (GraphDefinition's and Graph's) takes.
struct MemsetNodeParams {
  CUdeviceptr dst = 0;        ///< The first byte filled.
  unsigned value = 0;         ///< The value of each element.
  unsigned element_size = 1;  ///< 1, 2 or 4 bytes.
  std::size_t width = 0;      ///< Elements per row.
  std::size_t height = 1;     ///< Rows.
  std::size_t pitch = 0;      ///< Bytes from one row to the next (0 for one row).
  /// Compare field by field.
  friend bool operator==(const MemsetNodeParams&, const MemsetNodeParams&) = default;
};

/// A linear copy as a memcpy node holds it: what memcpy_node_params() returns and
/// set_memcpy_node() (GraphDefinition's and Graph's) takes.
struct MemcpyNodeParams {
  CUdeviceptr dst = 0;   ///< The destination address.
  CUdeviceptr src = 0;   ///< The source address.
  std::size_t size = 0;  ///< Bytes copied.
  /// Compare field by field.
  friend bool operator==(const MemcpyNodeParams&, const MemcpyNodeParams&) = default;
};

/// Build a CUDA graph by stream capture or by adding nodes explicitly (cuda.core's GraphBuilder).
///
/// Made by Device::create_graph_builder() (captures on a new non-blocking stream of
/// the device) or Stream::create_graph_builder() (captures on that stream). Move-only.
/// split() and join() return builders that share state with this one: the first
/// builder split() returns, and the builder join() returns, are this builder again
/// (as in cuda.core), so using either name afterwards is the same.
///
/// States: a builder starts idle; begin_building() starts capturing, end_building()
/// ends it and keeps the captured CUgraph, complete() instantiates it into a Graph.
/// Without capturing, the node-adding operations (launch(), memcpy(), memset(),
/// callback(), embed(), empty(), record_event(), wait_event(), alloc(), free(): the
/// names and parameters of GraphDefinition's, dependencies first) add nodes to the
/// builder's own graph (while capturing they are added to the capture graph after the
/// work captured so far). Using a closed builder throws
/// std::logic_error; calls in the wrong state throw std::logic_error naming what to do.
class GraphBuilder {
 public:
  /// Make an empty builder that behaves as closed; assign a real one to use it.
  GraphBuilder() noexcept;
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;
  /// Take over `other`'s builder; `other` becomes closed.
  GraphBuilder(GraphBuilder&& other) noexcept;
  /// Release this builder (as by destruction), then take over `other`'s.
  GraphBuilder& operator=(GraphBuilder&& other) noexcept;
  /// Release the builder unless another builder shares it (never throws).
  ~GraphBuilder();

  /// Begin capturing the work submitted to stream() (cuStreamBeginCapture); return *this.
  ///
  /// Returning the builder lets calls chain, as in cuda.core:
  /// `Graph g = builder.begin_building().end_building().complete();`.
  /// A conditional body captures into its body graph (cuStreamBeginCaptureToGraph).
  /// Throws std::logic_error when already building or when building has ended.
  GraphBuilder& begin_building(CaptureMode mode = CaptureMode::Relaxed) &;
  /// Begin capturing on a temporary builder and return the builder itself (moved).
  ///
  /// By value, so `auto b = dev.create_graph_builder().begin_building();` owns the
  /// builder, and `auto& b = dev.create_graph_builder().begin_building();`, which would
  /// refer to a destroyed builder, does not compile.
  GraphBuilder begin_building(CaptureMode mode = CaptureMode::Relaxed) &&;

  /// End the capture (cuStreamEndCapture) and keep the captured graph; return *this.
  ///
  /// Throws std::logic_error when not building, on a builder from split() that was
  /// not joined (join it first), or when builders split from it were never joined.
  /// An invalidated capture (an operation the driver refused) throws DriverError
  /// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) and leaves the builder idle.
  GraphBuilder& end_building() &;
  /// End the capture of a temporary builder and return the builder itself (moved), as
  /// begin_building() does on a temporary.
  GraphBuilder end_building() &&;

  /// Instantiate the graph into an executable Graph (cuGraphInstantiateWithParams).
  ///
  /// Throws std::logic_error while building or when nothing was built, and
  /// GraphInstantiateError when the driver refuses the graph.
  Graph complete(const GraphCompleteOptions& options = {});

  /// Fork the capture into `count` builders that capture concurrently from this point.
  ///
  /// The first is this builder again; the others capture on new streams of the same
  /// device that wait on the work captured so far. Join them with join() before
  /// end_building(). Throws std::invalid_argument for count < 2 and
  /// std::logic_error when not building.
  std::vector<GraphBuilder> split(int count);

  /// Join builders from split() into one: the result waits on all their work.
  ///
  /// The result is the builder that was not split off (the original), or the first.
  /// The others are closed. Throws std::invalid_argument for fewer than two builders
  /// and std::logic_error when one of them is closed or not building.
  static GraphBuilder join(std::vector<GraphBuilder>&& builders);

  /// Create a conditional handle for this graph (cuGraphConditionalHandleCreate).
  ///
  /// With `default_value`, the handle is set to it at the start of every launch of
  /// the graph; without, it keeps its value between launches (initially 0). Kernels
  /// set it with cudaGraphSetConditional(handle, value) (pass the handle as an
  /// `unsigned long long` / cudaGraphConditionalHandle argument).
  CUgraphConditionalHandle create_conditional_handle(
      std::optional<unsigned> default_value = std::nullopt);

  /// Return a GraphDefinition viewing this builder's graph (cuda.core's graph_definition).
  ///
  /// Nodes added through the view appear in later complete() and debug_dot_print()
  /// calls; the view stays valid after the builder is closed. Available on a primary
  /// builder after end_building(), and on a conditional body while it is not building;
  /// throws std::logic_error otherwise (and always for a builder from split()).
  /// Closing the view releases only the view.
  GraphDefinition graph_definition() const;

  /// Add an `if` node on `handle` and return the builder of its body.
  ///
  /// The body runs when the handle is non-zero. Like every conditional, this needs
  /// the builder to be building; call begin_building() on the body, capture its
  /// work, and end_building() it.
  GraphBuilder if_cond(CUgraphConditionalHandle handle);
  /// Add an `if`/`else` node on `handle`; return the bodies {then, else}.
  std::pair<GraphBuilder, GraphBuilder> if_else(CUgraphConditionalHandle handle);
  /// Add a `while` node on `handle`; return the body, which runs while it is non-zero.
  GraphBuilder while_loop(CUgraphConditionalHandle handle);
  /// Add a `switch` node on `handle` with `count` bodies; body n runs when it is n.
  ///
  /// Needs a CUDA 12.8 driver or newer. Throws std::invalid_argument for count < 1.
  std::vector<GraphBuilder> switch_(CUgraphConditionalHandle handle, unsigned count);

  /// Add a kernel node after `dependencies` (arguments as for the free launch()).
  ///
  /// Not capturing: the node is added to the builder's own graph (created when
  /// needed), depending only on `dependencies`. Capturing: it is added to the
  /// capture graph after the work captured so far and `dependencies`, and the
  /// capture continues after it. The same holds for every node-adding operation.
  /// (The free function `launch(builder, config, kernel, args...)` captures a launch
  /// instead; it takes the builder first, this member the dependencies.)
  template <class... Args>
  GraphNode launch(std::span<const GraphNode> dependencies, const LaunchConfig& config,
                   const Kernel& kernel, const Args&... args);
  /// Add a copy of `size` bytes from `src` to `dst` (device or host addresses).
  GraphNode memcpy(std::span<const GraphNode> dependencies, CUdeviceptr dst, CUdeviceptr src,
                   std::size_t size);
  /// Add a copy described by `copy` (cuMemcpy3D's parameters): any memory kind the
  /// driver accepts in a memcpy node (device, host, managed, pitched, CUDA arrays).
  GraphNode memcpy(std::span<const GraphNode> dependencies, const CUDA_MEMCPY3D& copy);
  /// Add a copy of the whole of `src` into `dst`; throws std::invalid_argument on a size mismatch.
  GraphNode memcpy(std::span<const GraphNode> dependencies, Buffer& dst, const Buffer& src);
  /// Add a fill of `width` bytes (by `height` rows `pitch` bytes apart) at `dst` with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint8_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a fill of `width` 16-bit elements per row at `dst` with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint16_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a fill of `width` 32-bit elements per row at `dst` with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint32_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a fill of the whole of `dst` with the byte `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, Buffer& dst, std::uint8_t value);
  /// Add a host node that calls `fn` on a driver thread when the graph reaches it
  /// (cuda.core's callback()).
  ///
  /// `fn` must not call CUDA and must not throw (an escaping exception terminates).
  /// It stays alive as long as this graph or a Graph completed from it.
  template <class F>
  GraphNode callback(std::span<const GraphNode> dependencies, F&& fn) {
    if constexpr (std::is_pointer_v<std::decay_t<F>>) {
      if (fn == nullptr) {
        return callback_node(dependencies, nullptr);  // throws: fn is empty
      }
    } else if constexpr (requires { fn.operator bool(); }) {  // std::function and the like
      if (!fn) {
        return callback_node(dependencies, nullptr);
      }
    }
    return callback_node(dependencies, detail::make_host_function(std::forward<F>(fn)));
  }
  /// Add a host node calling `fn` after the work so far: callback({}, fn).
  template <class F>
  GraphNode callback(F&& fn) {
    return callback({}, std::forward<F>(fn));
  }
  /// Add a child-graph node running a copy of `child`'s graph (cuda.core's embed()).
  ///
  /// `child` must have finished building (or hold explicitly added nodes); its graph
  /// is cloned, so `child` may be closed afterwards. Throws std::logic_error otherwise.
  GraphNode embed(std::span<const GraphNode> dependencies, const GraphBuilder& child);
  /// Add a child-graph node after the work so far: embed({}, child).
  GraphNode embed(const GraphBuilder& child) { return embed({}, child); }
  /// Add an empty node (a join point) after `dependencies`.
  GraphNode empty(std::span<const GraphNode> dependencies = {});
  /// Add a node that records `event` when the graph reaches it (cuda.core's record_event()).
  ///
  /// The graph refers to the CUDA event: keep `event` open while the graph may run.
  GraphNode record_event(std::span<const GraphNode> dependencies, const Event& event);
  /// Add a node that waits for the last record of `event` (possibly outside the graph).
  ///
  /// The graph refers to the CUDA event: keep `event` open while the graph may run.
  GraphNode wait_event(std::span<const GraphNode> dependencies, const Event& event);
  /// Add a graph memory allocation of `size` bytes (cuda.core's alloc()), on the
  /// builder's device unless `options` say otherwise.
  ///
  /// The memory is valid from this node until a free node (free()), a
  /// cuMemFreeAsync after a launch, or the next launch with auto_free_on_launch; its
  /// address is fixed for the graph's lifetime. Size 0 is left to the driver, as in
  /// cuda.core (DriverError); so is a null address given to free(). Throws
  /// std::invalid_argument for an option the toolkit cannot express, UnsupportedError
  /// for managed memory before CUDA 13.0.
  GraphAllocation alloc(std::span<const GraphNode> dependencies, std::size_t size,
                        const GraphAllocOptions& options = {});
  /// Add a node that frees graph memory at `address` (from alloc() or a captured
  /// allocation; cuda.core's free()).
  GraphNode free(std::span<const GraphNode> dependencies, CUdeviceptr address);

  /// Return every node of the graph (cuGraphGetNodes), in no particular order.
  ///
  /// While building, the nodes captured so far. Throws std::logic_error when nothing
  /// was built yet.
  std::vector<GraphNode> nodes() const;
  /// Return the nodes the next captured work will depend on: after a captured
  /// launch(), the kernel node it made (to change later with Graph::set_kernel_node).
  ///
  /// Throws std::logic_error when not building.
  std::vector<GraphNode> last_nodes() const;

  /// Write the graph in Graphviz DOT to `path` (cuGraphDebugDotPrint).
  ///
  /// `flags` are CUgraphDebugDot_flags. Throws std::logic_error while building or when
  /// nothing was built.
  void debug_dot_print(const std::filesystem::path& path, unsigned flags = kDefaultDotFlags) const;
  /// Write the graph in Graphviz DOT to the file named `path` (a string: no
  /// `<filesystem>` needed); as above.
  template <detail::PathString Path>
  void debug_dot_print(const Path& path, unsigned flags = kDefaultDotFlags) const {
    debug_dot_print_named(std::string_view(path), flags);
  }

  /// Return true while capturing (between begin_building() and end_building()).
  bool is_building() const;
  /// Return true for a builder from split() that must be joined before building ends.
  bool is_join_required() const;
  /// Return the stream this builder captures on.
  const Stream& stream() const;
  /// Return stream(), so that a builder can be passed where a `const Stream&` or a
  /// StreamRef (which a Stream is) is expected.
  operator const Stream&() const { return stream(); }  // NOLINT(google-explicit-constructor)
  /// Return the graph: the capture graph while building, the built graph after, or nullptr.
  CUgraph handle() const;

  /// End an unfinished capture, destroy the graph, release an owned stream; idempotent.
  ///
  /// Closes every name of this builder (split() and join() results that are it).
  void close() noexcept;
  /// Return whether the builder is still usable (false after close, or a move, or
  /// closing another name of it).
  bool is_open() const noexcept;

 private:
  friend class Device;
  friend class StreamRef;
  friend class Graph;
  friend class GraphDefinition;
  friend struct detail::GraphNodeAccess;
  template <class... Args>
  friend void launch(GraphBuilder&, const LaunchConfig&, const Kernel&, const Args&...);

  explicit GraphBuilder(detail::Ref<detail::GraphBuilderState> state) noexcept;
  detail::GraphBuilderState& state(const char* operation) const;
  // Return the capturing stream for launch(), keeping `kernel` alive with the graph.
  const Stream& launch_stream(const Kernel& kernel);
  // Add a node of `params` (kernel parameters already packed) as launch() describes.
  GraphNode add_node(std::span<const GraphNode> dependencies, CUgraphNodeParams& params,
                     const char* operation);
  // Check the packed arguments against `kernel` and add the kernel node.
  GraphNode launch_node(std::span<const GraphNode> dependencies, const LaunchConfig& config,
                        const Kernel& kernel, void** args, std::size_t count,
                        const std::size_t* sizes, const std::string_view* type_names);
  // Add a fill of `element_size`-byte elements (the body of every memset()).
  GraphNode memset_node(std::span<const GraphNode> dependencies, CUdeviceptr dst, unsigned value,
                        unsigned element_size, std::size_t width, std::size_t height,
                        std::size_t pitch);
  std::vector<GraphBuilder> add_conditional(CUgraphConditionalHandle handle,
                                            CUgraphConditionalNodeType type, unsigned size,
                                            const char* operation);
  // Add a conditional node after `dependencies`; return it and its bodies.
  std::pair<GraphNode, std::vector<GraphBuilder>> add_conditional_node(
      std::span<const GraphNode> dependencies, CUgraphConditionalHandle handle,
      CUgraphConditionalNodeType type, unsigned size, const char* operation);

  // Add a host node running `fn` (owned here; null: std::invalid_argument).
  GraphNode callback_node(std::span<const GraphNode> dependencies, detail::HostFunction* fn);
  void debug_dot_print_named(std::string_view path, unsigned flags) const;

  detail::Ref<detail::GraphBuilderState> state_;
};

/// An executable graph (CUgraphExec), made by GraphBuilder::complete(). Move-only.
class Graph {
 public:
  /// Make an empty Graph that behaves as closed; assign a real one to use it.
  Graph() noexcept = default;
  /// Wrap `exec` without taking ownership (the caller destroys it).
  static Graph from_handle(CUgraphExec exec);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Take over `other`'s graph; `other` becomes closed.
  Graph(Graph&& other) noexcept;
  /// Destroy this graph (as close()), then take over `other`'s.
  Graph& operator=(Graph&& other) noexcept;
  /// Destroy the executable graph if owned (never throws).
  ~Graph();

  /// Upload the graph's work to the device ahead of its first launch (cuGraphUpload).
  void upload(StreamRef stream);
  /// Launch the graph in `stream` (cuGraphLaunch).
  void launch(StreamRef stream);
  /// Update the graph in place from `builder`'s graph of the same topology (cuGraphExecUpdate).
  ///
  /// Throws std::invalid_argument when `builder` is still building (as cuda.core's
  /// ValueError), std::logic_error when it is closed or built nothing, and
  /// GraphUpdateError (naming the CUgraphExecUpdateResult, e.g.
  /// CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED) when the driver refuses the update;
  /// the graph is then unchanged.
  void update(const GraphBuilder& builder);
  /// Update the graph in place from `definition` (cuGraphExecUpdate), as update(builder).
  ///
  /// Throws std::logic_error when `definition` is closed, GraphUpdateError when the
  /// driver refuses (the graph is then unchanged and keeps what it kept).
  void update(const GraphDefinition& definition);
  /// Give memset node `node` a new fill for later launches (cuGraphExecMemsetNodeSetParams).
  ///
  /// The driver refuses a different element size or extent (DriverError); only the
  /// destination and value may change. Throws std::invalid_argument for a null node or
  /// one of another type, std::logic_error on a closed Graph.
  ///
  /// \code
  ///   MemsetNodeParams fill = memset_node_params(node);   // as the graph was built
  ///   fill.value = 7;
  ///   graph.set_memset_node(node, fill);
  /// \endcode
  void set_memset_node(GraphNode node, const MemsetNodeParams& params);
  /// Give memcpy node `node` a new linear copy (cuGraphExecMemcpyNodeSetParams).
  void set_memcpy_node(GraphNode node, const MemcpyNodeParams& params);
  /// Make host node `node` call `fn` in later launches (cuGraphExecHostNodeSetParams).
  ///
  /// `fn` is kept until no launch can call it. Throws std::invalid_argument for an
  /// empty `fn`, a null node or one of another type.
  template <class F>
  void set_host_node(GraphNode node, F&& fn) {
    set_host_node_raw(node, detail::make_host_function(std::forward<F>(fn)));
  }
  /// Make event record or wait node `node` use `event` in later launches.
  void set_event_node(GraphNode node, const Event& event);
  /// Make child-graph node `node` run `child`'s graph in later launches (same topology).
  void set_child_graph_node(GraphNode node, const GraphDefinition& child);
  /// Give one kernel node new arguments or a new configuration for later launches
  /// (cuGraphExecKernelNodeSetParams); the graph it was built in is unchanged.
  ///
  /// `node` is a kernel node of the graph this Graph was completed (or updated) from:
  /// GraphBuilder::launch's result, or one of GraphBuilder::last_nodes() / nodes().
  /// Arguments are converted and checked as by launch(). `kernel` may differ from the
  /// node's (same device). Launches already enqueued are not affected. Throws
  /// std::invalid_argument for a null node, a node of another kind, arguments that do
  /// not match `kernel`, an invalid `config`, or a `config` whose cluster or cooperative
  /// launch differs from the node's (those are fixed at instantiation: rebuild and
  /// update() instead); std::logic_error on a closed Graph; DriverError otherwise.
  ///
  /// \code
  ///   GraphNode node = builder.launch({}, config, scale, buf, 2.0f);
  ///   Graph graph = builder.complete();
  ///   graph.set_kernel_node(node, config, scale, buf, 3.0f);   // no re-instantiation
  ///   graph.launch(stream);
  /// \endcode
  template <class... Args>
  void set_kernel_node(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                       const Args&... args);
  /// Enable or disable one node for later launches (cuGraphNodeSetEnabled).
  ///
  /// A disabled node does nothing when the graph runs; its dependencies still order the
  /// graph. The driver accepts kernel, copy and fill nodes (DriverError for others).
  /// Throws std::invalid_argument for a null node, std::logic_error on a closed Graph.
  void set_node_enabled(GraphNode node, bool enabled);
  /// Return whether `node` is enabled in this graph (cuGraphNodeGetEnabled).
  bool is_node_enabled(GraphNode node) const;
  /// Destroy the executable graph (if owned); idempotent (a second call does nothing).
  ///
  /// What the Graph keeps alive for its nodes (kernels, host functions set with
  /// set_host_node, graphs it was updated from) stays until the launches already
  /// made have finished (the driver reports it): close() waits up to 200 ms for that
  /// and then releases it; launches still running after that keep it until a later
  /// close() of any Graph (or detail::release_finished_graphs()) finds them finished.
  void close() noexcept;
  /// Return whether the object still holds an executable graph (false after close or a
  /// move, and for a default-constructed Graph).
  bool is_open() const noexcept { return exec_ != nullptr; }
  /// Return the CUgraphExec; std::logic_error after close().
  CUgraphExec handle() const;

 private:
  friend class GraphBuilder;
  friend std::size_t detail::kept_alive_count(const Graph& graph) noexcept;
  Graph(CUgraphExec exec, bool owned, CUcontext context);
  // Return what the graph keeps alive, created on first use.
  detail::GraphKeepAlive& keep_alive();
  // Update from `graph` (of `state`), keeping what it uses; the core of both update()s.
  void update_from(const detail::GraphBuilderState& state);
  // Check the Graph is open and `node` a non-null node of type `type`.
  void check_settable(GraphNode node, CUgraphNodeType type, const char* operation) const;
  void set_host_node_raw(GraphNode node, detail::HostFunction* fn);
  // The non-template core of set_kernel_node (arguments packed as for launch()).
  void set_kernel_node_packed(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                              void** args, std::size_t count, const std::size_t* sizes,
                              const std::string_view* type_names);

  CUgraphExec exec_ = nullptr;
  bool owned_ = false;
  CUcontext context_ = nullptr;  // of the builder; null for from_handle
  // What the graph's nodes use and cuwrap must keep alive (kernels' modules, host
  // functions, the graph it was completed from and the one it was last updated from;
  // what an update replaces is released once no launch can use it); owned, null until needed.
  detail::GraphKeepAlive* keep_alive_ = nullptr;
};

/// Thrown when cuGraphExecUpdate refuses an update; names the CUgraphExecUpdateResult.
class GraphUpdateError : public DriverError {
 public:
  /// Build the error for the update result `info` and the status `code`.
  GraphUpdateError(CUresult code, const CUgraphExecUpdateResultInfo& info);
  /// Return why the update failed, e.g. CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED.
  CUgraphExecUpdateResult result() const noexcept { return info_.result; }
  /// Return the node the failure is about (the "to" node of a changed edge), or nullptr.
  CUgraphNode error_node() const noexcept { return info_.errorNode; }
  /// Return the "from" node of a changed edge, or nullptr.
  CUgraphNode error_from_node() const noexcept { return info_.errorFromNode; }
  /// Return "cuGraphExecUpdate failed: <status> (<description>): <result name>".
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  CUgraphExecUpdateResultInfo info_;
  std::string message_;
};

/// Thrown when instantiating a graph fails; names the CUgraphInstantiateResult.
class GraphInstantiateError : public DriverError {
 public:
  /// Build the error for the status `code` and the instantiation result `result`.
  GraphInstantiateError(CUresult code, CUgraphInstantiateResult result);
  /// Return why instantiation failed, e.g. CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE.
  CUgraphInstantiateResult result() const noexcept { return result_; }
  /// Return "cuGraphInstantiateWithParams failed: <status> (<description>): <result name>".
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  CUgraphInstantiateResult result_;
  std::string message_;
};

/// Capture a launch of `kernel` into `builder`, which must be building.
///
/// Arguments as for launch(const Stream&, ...). Throws std::logic_error when the
/// builder is closed or its capture has not begun (call begin_building() first).
template <class... Args>
void launch(GraphBuilder& builder, const LaunchConfig& config, const Kernel& kernel,
            const Args&... args) {
  launch(builder.launch_stream(kernel), config, kernel, args...);
}

template <class... Args>
GraphNode GraphBuilder::launch(std::span<const GraphNode> dependencies, const LaunchConfig& config,
                               const Kernel& kernel, const Args&... args) {
  GraphNode node;
  detail::with_packed_arguments(
      [&](void** pointers, std::size_t count, const std::size_t* sizes,
          const std::string_view* names) {
        node = launch_node(dependencies, config, kernel, pointers, count, sizes, names);
      },
      args...);
  return node;
}

template <class... Args>
void Graph::set_kernel_node(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                            const Args&... args) {
  detail::with_packed_arguments(
      [&](void** pointers, std::size_t count, const std::size_t* sizes,
          const std::string_view* names) {
        set_kernel_node_packed(node, config, kernel, pointers, count, sizes, names);
      },
      args...);
}

}  // namespace cuwrap
