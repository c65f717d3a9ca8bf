// Explicit graph definitions, cuda.core's GraphDefinition: a CUDA graph built node by
// node (no stream capture), inspected, edited, cloned and instantiated.
//
//   GraphDefinition def;                               // empty: a handle, zero nodes
//   GraphAllocation a = def.alloc({}, 1024);
//   GraphNode fill = def.memset({{a.node}}, a.address, std::uint8_t{7}, 1024);
//   GraphNode free = def.free({{fill}}, a.address);
//   Graph graph = def.instantiate();
//   graph.launch(stream);
//
// A node's dependencies are given when it is added (cuda.core's `node.launch(...)` is
// `def.launch({{node}}, ...)` here); edges can be added and removed later. A
// GraphBuilder adds nodes with the same operations (same names, same parameters).
#pragma once

#include <cuwrap/graph.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace cuwrap {

class Device;
class Event;

/// The launch a kernel node holds.
struct KernelNodeParams {
  CUfunction function =
      nullptr;              ///< The function launched (a CUkernel's, as the driver reports it).
  Dim3 grid;                ///< Blocks.
  Dim3 block;               ///< Threads per block.
  unsigned shmem_size = 0;  ///< Dynamic shared memory in bytes.
};

/// The allocation an allocation node makes.
struct AllocNodeParams {
  CUdeviceptr dptr = 0;      ///< The address the memory has whenever the graph runs.
  std::size_t bytesize = 0;  ///< The size in bytes.
  int device_id = 0;         ///< The device (or the NUMA node for host memory).
  GraphMemoryType memory_type = GraphMemoryType::Device;  ///< The kind of memory.
  std::vector<int> peer_access;                           ///< Devices given read-write access.
};

/// What a conditional node was made with (cuda.core's ConditionalNode.condition / cond_type).
struct ConditionalNodeParams {
  CUgraphConditionalHandle condition = 0;                   ///< The condition it reads.
  CUgraphConditionalNodeType type = CU_GRAPH_COND_TYPE_IF;  ///< if, while or switch.
  unsigned size = 0;  ///< Its bodies: 1 (if, while), 2 (if/else) or the switch's count.
  /// Compare field by field.
  friend bool operator==(const ConditionalNodeParams&, const ConditionalNodeParams&) = default;
};

/// The function a host node calls and its argument (cuda.core's HostCallbackNode).
///
/// For a node made by callback(), `fn` is cuwrap's trampoline and
/// `user_data` the callable it runs.
struct HostNodeParams {
  CUhostFn fn = nullptr;      ///< The function called.
  void* user_data = nullptr;  ///< Its argument.
};

class GraphDefinition;

/// A conditional node of a GraphDefinition and the bodies (branches) it runs.
///
/// A branch keeps the graph holding the node alive: it stays usable after that
/// GraphDefinition is moved, closed or destroyed. Destroying the node (destroy_node)
/// destroys the body graphs, and its branches then behave as closed.
struct ConditionalNode {
  GraphNode node;                         ///< The conditional node.
  std::vector<GraphDefinition> branches;  ///< Its bodies: then / else, the while body, the cases.
};

/// An explicitly built CUDA graph (cuda.core's GraphDefinition). Move-only; it owns the
/// CUgraph (a conditional node's branch refers to a body graph that node owns).
///
/// Every add operation takes the node's dependencies first (empty: a root node) and
/// returns the new node. Errors: std::logic_error on a closed definition,
/// std::invalid_argument for a null node or bad options, DriverError where the driver
/// refuses (cuda.core lets the driver decide, e.g. allocate(0)).
class GraphDefinition {
 public:
  /// Create an empty graph on device 0's primary context (cuda.core: the current device).
  GraphDefinition();
  /// Create an empty graph whose nodes use `device`.
  explicit GraphDefinition(const Device& device);
  GraphDefinition(const GraphDefinition&) = delete;
  GraphDefinition& operator=(const GraphDefinition&) = delete;
  /// Take over `other`'s graph; `other` becomes closed.
  GraphDefinition(GraphDefinition&& other) noexcept = default;
  /// Release this graph, then take over `other`'s.
  GraphDefinition& operator=(GraphDefinition&& other) noexcept;
  /// Release the graph unless a Graph instantiated from it still names its nodes (a view
  /// from GraphBuilder::graph_definition() releases only itself, as close() does).
  ~GraphDefinition();

  /// Add an empty node after `dependencies`: a join point of them (cuda.core's empty()
  /// and join()).
  GraphNode empty(std::span<const GraphNode> dependencies = {});
  /// Add a kernel node: `kernel` launched with `config` and `args` (checked as by launch()).
  template <class... Args>
  GraphNode launch(std::span<const GraphNode> dependencies, const LaunchConfig& config,
                   const Kernel& kernel, const Args&... args) {
    return builder_.launch(dependencies, config, kernel, args...);
  }
  /// Add a fill of `width` bytes (by `height` rows `pitch` bytes apart) with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint8_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a fill of `width` 16-bit elements per row with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint16_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a fill of `width` 32-bit elements per row with `value`.
  GraphNode memset(std::span<const GraphNode> dependencies, CUdeviceptr dst, std::uint32_t value,
                   std::size_t width, std::size_t height = 1, std::size_t pitch = 0);
  /// Add a copy of `size` bytes from `src` to `dst` (device, host, managed addresses).
  GraphNode memcpy(std::span<const GraphNode> dependencies, CUdeviceptr dst, CUdeviceptr src,
                   std::size_t size);
  /// Add a copy described by `copy` (cuMemcpy3D's parameters): pitched, 3D or array
  /// copies, any memory kind the driver accepts in a memcpy node.
  GraphNode memcpy(std::span<const GraphNode> dependencies, const CUDA_MEMCPY3D& copy);
  /// Add a host node calling `fn` (cuda.core's callback()); `fn` must not call CUDA.
  template <class F>
  GraphNode callback(std::span<const GraphNode> dependencies, F&& fn) {
    return builder_.callback(dependencies, std::forward<F>(fn));
  }
  /// Add a child-graph node running a copy of `child` (cuda.core's embed()).
  GraphNode embed(std::span<const GraphNode> dependencies, const GraphDefinition& child);
  /// Add a node recording `event` (keep the event open while the graph may run).
  GraphNode record_event(std::span<const GraphNode> dependencies, const Event& event);
  /// Add a node waiting for `event` (keep the event open while the graph may run).
  GraphNode wait_event(std::span<const GraphNode> dependencies, const Event& event);
  /// Add a graph allocation of `size` bytes; size 0 is left to the driver (DriverError).
  ///
  /// Throws std::invalid_argument for an option the toolkit cannot express, UnsupportedError
  /// for managed memory before CUDA 13.0.
  GraphAllocation alloc(std::span<const GraphNode> dependencies, std::size_t size,
                        const GraphAllocOptions& options = {});
  /// Add a node freeing the graph allocation at `address` (null is left to the driver).
  GraphNode free(std::span<const GraphNode> dependencies, CUdeviceptr address);

  /// Create a conditional handle for this graph (as GraphBuilder::create_conditional_handle,
  /// cuda.core's name).
  ///
  /// With `default_value`, the handle is set to it at the start of every launch; without,
  /// it keeps its value between launches (initially 0).
  CUgraphConditionalHandle create_conditional_handle(
      std::optional<unsigned> default_value = std::nullopt);
  /// Add an `if` node on `condition`; its one branch runs when the condition is non-zero.
  ConditionalNode if_cond(std::span<const GraphNode> dependencies,
                          CUgraphConditionalHandle condition);
  /// Add an `if`/`else` node (branches {then, else}); needs a CUDA 12.8 driver.
  ConditionalNode if_else(std::span<const GraphNode> dependencies,
                          CUgraphConditionalHandle condition);
  /// Add a `while` node; its branch runs while the condition is non-zero.
  ConditionalNode while_loop(std::span<const GraphNode> dependencies,
                             CUgraphConditionalHandle condition);
  /// Add a `switch` node with `count` branches; needs CUDA 12.8 (toolkit and driver).
  ///
  /// A count of 0 is left to the driver (DriverError), as in cuda.core.
  ConditionalNode switch_(std::span<const GraphNode> dependencies,
                          CUgraphConditionalHandle condition, unsigned count);

  /// Return every node, in no particular order.
  std::vector<GraphNode> nodes() const;
  /// Return the number of nodes.
  std::size_t node_count() const;
  /// Return every edge as (from, to).
  std::vector<std::pair<GraphNode, GraphNode>> edges() const;
  /// Return the nodes `node` depends on (cuda.core's pred).
  std::vector<GraphNode> predecessors(GraphNode node) const;
  /// Return the nodes that depend on `node` (cuda.core's succ).
  std::vector<GraphNode> successors(GraphNode node) const;
  /// Make `to` depend on `from`.
  void add_edge(GraphNode from, GraphNode to);
  /// Remove the dependency of `to` on `from` (DriverError when there is none).
  void remove_edge(GraphNode from, GraphNode to);
  /// Remove `node` and its edges from the graph (cuda.core's node.destroy()).
  ///
  /// A host node's callable is released with it (Graphs instantiated before keep their
  /// own), and a conditional node's branches become closed.
  void destroy_node(GraphNode node);
  /// Return an independent copy of this graph (cuGraphClone); its nodes are new nodes.
  GraphDefinition clone() const;

  /// Change a memset node's fill before instantiation (cuGraphMemsetNodeSetParams), as
  /// Graph::set_memset_node changes it after.
  void set_memset_node(GraphNode node, const MemsetNodeParams& params);
  /// Change a memcpy node's copy before instantiation, as Graph::set_memcpy_node after.
  void set_memcpy_node(GraphNode node, const MemcpyNodeParams& params);
  /// Change the event an event record or wait node uses, as Graph::set_event_node after.
  void set_event_node(GraphNode node, const Event& event);
  /// Change a kernel node's launch before instantiation (arguments checked as by
  /// launch()), as Graph::set_kernel_node after.
  template <class... Args>
  void set_kernel_node(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                       const Args&... args) {
    detail::with_packed_arguments(
        [&](void** pointers, std::size_t count, const std::size_t* sizes,
            const std::string_view* names) {
          set_kernel_node_packed(node, config, kernel, pointers, count, sizes, names);
        },
        args...);
  }

  /// Instantiate the graph into an executable Graph (an empty graph too).
  ///
  /// cuda.core's name for a GraphDef; a GraphBuilder's is complete() (as in cuda.core).
  Graph instantiate(const GraphCompleteOptions& options = {});
  /// Write the graph in Graphviz DOT to `path`.
  void debug_dot_print(const std::filesystem::path& path, unsigned flags = kDefaultDotFlags) const;

  /// Return the CUgraph (non-null from construction until close()).
  CUgraph handle() const;
  /// Return true until close().
  bool is_open() const noexcept;
  /// Release the graph (instantiated Graphs keep running); idempotent. A view from
  /// GraphBuilder::graph_definition() releases only itself.
  void close() noexcept;

 private:
  friend class Graph;
  friend class GraphBuilder;
  friend struct detail::GraphNodeAccess;
  explicit GraphDefinition(GraphBuilder builder, bool view = false) noexcept
      : builder_(std::move(builder)), view_(view) {}
  ConditionalNode add_conditional(std::span<const GraphNode> dependencies,
                                  CUgraphConditionalHandle condition,
                                  CUgraphConditionalNodeType type, unsigned count,
                                  const char* operation);
  void set_kernel_node_packed(GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                              void** args, std::size_t count, const std::size_t* sizes,
                              const std::string_view* type_names);

  GraphBuilder builder_;  // never captures: its own graph, built node by node
  bool view_ = false;     // a view of a GraphBuilder's graph: close() drops only the view
};

/// Return the parameters of memset node `node` (std::invalid_argument for another type).
MemsetNodeParams memset_node_params(GraphNode node);
/// Return the addresses and byte count of memcpy node `node`.
///
/// `dst` and `src` are the first bytes written and read, whatever the memory type of
/// each side (a host pointer as its address, a device or unified address), with the
/// copy's offsets applied; 0 for a CUDA array side (memcpy_node_copy() has the array).
/// `size` is the bytes copied (width × height × depth). Throws std::invalid_argument for
/// a null node or one of another type.
MemcpyNodeParams memcpy_node_params(GraphNode node);
/// Return every field of memcpy node `node`'s copy as the driver holds it: the memory
/// type, host, device and array operand, offsets, pitch and height of each side, and the
/// extent (cuGraphMemcpyNodeGetParams).
CUDA_MEMCPY3D memcpy_node_copy(GraphNode node);
/// Return the launch of kernel node `node`.
KernelNodeParams kernel_node_params(GraphNode node);
/// Return the allocation of allocation node `node`.
AllocNodeParams alloc_node_params(GraphNode node);
/// Return the address freed by free node `node`.
CUdeviceptr free_node_address(GraphNode node);
/// Return the event of event record or wait node `node`.
CUevent event_node_event(GraphNode node);
/// Return a view of the graph embedded by child-graph node `node` (cuda.core's
/// ChildGraphNode.child_graph).
///
/// The node owns that graph: the view does not own it, keeps the graph holding the node
/// alive while it is used, and behaves as closed (is_open() false, calls
/// std::logic_error) once the node is destroyed. Its handle() is the embedded CUgraph.
/// Throws std::invalid_argument for a null node or one of another type, std::logic_error
/// for a destroyed node or one made from a bare CUgraphNode (its graph is unknown).
GraphDefinition child_graph_node_graph(GraphNode node);
/// Return the condition, kind and body count of conditional node `node`.
///
/// Throws std::invalid_argument for a null node, one of another type or a conditional
/// node cuwrap did not add; std::logic_error for a destroyed node or one made from a
/// bare CUgraphNode.
ConditionalNodeParams conditional_node_params(GraphNode node);
/// Return the function and argument host node `node` calls (cuGraphHostNodeGetParams).
HostNodeParams host_node_params(GraphNode node);

}  // namespace cuwrap
