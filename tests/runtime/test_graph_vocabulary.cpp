// One graph vocabulary, asserted at compile time: an operation has one name across
// GraphBuilder, GraphDefinition and Graph (cuda.core's where it has one), one parameter
// struct per node kind, and no aliases. The removed names must stay removed (CHANGELOG.md
// lists each with its replacement). The TEST checks the run-time half that needs no GPU:
// a closed builder's errors name the operation as it is now spelled.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::Event;
using cuwrap::Graph;
using cuwrap::GraphAllocation;
using cuwrap::GraphAllocOptions;
using cuwrap::GraphBuilder;
using cuwrap::GraphCompleteOptions;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::MemcpyNodeParams;
using cuwrap::MemsetNodeParams;
using Deps = std::span<const GraphNode>;

// The node-adding operations, with GraphDefinition's parameters (dependencies first),
// on both types that build graphs.
template <class G>
concept AddsNodes = requires(G& g, Deps deps, const LaunchConfig& config, const Kernel& kernel,
                             CUdeviceptr p, const Event& event, const CUDA_MEMCPY3D& copy,
                             void (*fn)()) {
  { g.launch(deps, config, kernel, p, 1u) } -> std::same_as<GraphNode>;
  { g.memset(deps, p, std::uint8_t{1}, std::size_t{4}) } -> std::same_as<GraphNode>;
  {
    g.memset(deps, p, std::uint16_t{1}, std::size_t{4}, std::size_t{2}, std::size_t{8})
    } -> std::same_as<GraphNode>;
  {
    g.memset(deps, p, std::uint32_t{1}, std::size_t{4}, std::size_t{2}, std::size_t{16})
    } -> std::same_as<GraphNode>;
  { g.memcpy(deps, p, p, std::size_t{4}) } -> std::same_as<GraphNode>;
  { g.memcpy(deps, copy) } -> std::same_as<GraphNode>;
  { g.callback(deps, fn) } -> std::same_as<GraphNode>;
  { g.empty(deps) } -> std::same_as<GraphNode>;
  { g.empty() } -> std::same_as<GraphNode>;
  { g.record_event(deps, event) } -> std::same_as<GraphNode>;
  { g.wait_event(deps, event) } -> std::same_as<GraphNode>;
  { g.alloc(deps, std::size_t{64}) } -> std::same_as<GraphAllocation>;
  { g.alloc(deps, std::size_t{64}, GraphAllocOptions{}) } -> std::same_as<GraphAllocation>;
  { g.free(deps, p) } -> std::same_as<GraphNode>;
  { g.embed(deps, g) } -> std::same_as<GraphNode>;
  { g.create_conditional_handle() } -> std::same_as<CUgraphConditionalHandle>;
  {
    g.create_conditional_handle(std::optional<unsigned>(1))
    } -> std::same_as<CUgraphConditionalHandle>;
};
static_assert(AddsNodes<GraphBuilder>);
static_assert(AddsNodes<GraphDefinition>);

// Conditional nodes: the same names. A builder's come after the work captured so far
// (its bodies are builders), a definition's after the given dependencies, as in cuda.core.
static_assert(requires(GraphBuilder & b, CUgraphConditionalHandle h) {
  { b.if_cond(h) } -> std::same_as<GraphBuilder>;
  { b.if_else(h) } -> std::same_as<std::pair<GraphBuilder, GraphBuilder>>;
  { b.while_loop(h) } -> std::same_as<GraphBuilder>;
  { b.switch_(h, 2u) } -> std::same_as<std::vector<GraphBuilder>>;
});
static_assert(requires(GraphDefinition & d, Deps deps, CUgraphConditionalHandle h) {
  { d.if_cond(deps, h) } -> std::same_as<cuwrap::ConditionalNode>;
  { d.if_else(deps, h) } -> std::same_as<cuwrap::ConditionalNode>;
  { d.while_loop(deps, h) } -> std::same_as<cuwrap::ConditionalNode>;
  { d.switch_(deps, h, 2u) } -> std::same_as<cuwrap::ConditionalNode>;
});

// A builder's capture-style forms keep the same names: callback(fn), embed(child).
static_assert(requires(GraphBuilder & b, const GraphBuilder& child, void (*fn)()) {
  { b.callback(fn) } -> std::same_as<GraphNode>;
  { b.embed(child) } -> std::same_as<GraphNode>;
});

// The member launch (dependencies first) and the free launch that captures (builder
// first) do not collide: both resolve, qualified and through argument-dependent lookup.
template <class B>
concept CapturesLaunch = requires(B& b, const LaunchConfig& config, const Kernel& kernel) {
  cuwrap::launch(b, config, kernel, CUdeviceptr{}, 1u);
  launch(b, config, kernel, CUdeviceptr{}, 1u);
};
static_assert(CapturesLaunch<GraphBuilder>);

// Changing a node: set_<kind>_node on a definition (before instantiation) and on a Graph
// (after), with the same parameter struct per node kind.
template <class G>
concept SetsNodes = requires(G& g, GraphNode node, const LaunchConfig& config, const Kernel& kernel,
                             const Event& event) {
  g.set_memset_node(node, MemsetNodeParams{});
  g.set_memcpy_node(node, MemcpyNodeParams{});
  g.set_event_node(node, event);
  g.set_kernel_node(node, config, kernel, CUdeviceptr{}, 1u);
};
static_assert(SetsNodes<GraphDefinition>);
static_assert(SetsNodes<Graph>);

// Instantiation: cuda.core's two names, complete() for a builder and instantiate() for a
// definition, each with the same options.
static_assert(requires(GraphBuilder & b, GraphDefinition& d, const GraphCompleteOptions& o) {
  { b.complete(o) } -> std::same_as<Graph>;
  { d.instantiate(o) } -> std::same_as<Graph>;
});

// The names this vocabulary replaced are gone (one concept each, so that each is asked
// of a type that depends on a template parameter, as a requires-expression needs).
template <class G>
concept HasAddKernel = requires(G& g, const LaunchConfig& c, const Kernel& k) {
  g.add_kernel(Deps{}, c, k);
};
template <class G>
concept HasAddMemset = requires(G& g) {
  g.add_memset(Deps{}, CUdeviceptr{}, std::uint8_t{}, 1);
};
template <class G>
concept HasAddMemcpy = requires(G& g) {
  g.add_memcpy(Deps{}, CUdeviceptr{}, CUdeviceptr{}, 1);
};
template <class G>
concept HasAddHost = requires(G& g, void (*fn)()) {
  g.add_host(Deps{}, fn);
};
template <class G>
concept HasAddChild = requires(G& g) {
  g.add_child(Deps{}, g);
};
template <class G>
concept HasAddEmpty = requires(G& g) {
  g.add_empty(Deps{});
};
template <class G>
concept HasAddEventRecord = requires(G& g, const Event& e) {
  g.add_event_record(Deps{}, e);
};
template <class G>
concept HasAddEventWait = requires(G& g, const Event& e) {
  g.add_event_wait(Deps{}, e);
};
template <class G>
concept HasAddAlloc = requires(G& g) {
  g.add_alloc(Deps{}, 1);
};
template <class G>
concept HasAddFree = requires(G& g) {
  g.add_free(Deps{}, CUdeviceptr{});
};
template <class G>
concept HasCreateCondition = requires(G& g) {
  g.create_condition();
};
template <class G>
concept HasIfThen = requires(G& g, CUgraphConditionalHandle h) {
  g.if_then(h);
};
template <class G>
concept HasIfThenAfter = requires(G& g, CUgraphConditionalHandle h) {
  g.if_then(Deps{}, h);
};
template <class G>
concept HasJoinOfNodes = requires(G& g) {
  g.join(Deps{});
};
template <class G>
concept HasRecord = requires(G& g, const Event& e) {
  g.record(Deps{}, e);
};
template <class G>
concept HasWait = requires(G& g, const Event& e) {
  g.wait(Deps{}, e);
};
template <class G>
concept HasAllocate = requires(G& g) {
  g.allocate(Deps{}, 1);
};
template <class G>
concept HasDeallocate = requires(G& g) {
  g.deallocate(Deps{}, CUdeviceptr{});
};
template <class G>
concept HasSetParams = requires(G& g, GraphNode n) {
  g.set_memset_params(n, MemsetNodeParams{});
}
|| requires(G& g, GraphNode n) { g.set_memcpy_params(n, MemcpyNodeParams{}); };
template <class G>
concept HasSetKernelParams = requires(G& g, GraphNode n, const LaunchConfig& c, const Kernel& k) {
  g.set_kernel_params(n, c, k);
};
template <class G>
concept HasSetEvent = requires(G& g, GraphNode n, const Event& e) {
  g.set_event(n, e);
};
template <class G>
concept HasLooseMemsetSetter = requires(G& g, GraphNode n) {
  g.set_memset_node(n, CUdeviceptr{}, 0u, 1u, std::size_t{4});
};
template <class G>
concept HasLooseMemcpySetter = requires(G& g, GraphNode n) {
  g.set_memcpy_node(n, CUdeviceptr{}, CUdeviceptr{}, std::size_t{4});
};
template <class G>
concept HasInstantiate = requires(G& g) {
  g.instantiate();
};
template <class G>
concept HasComplete = requires(G& g) {
  g.complete();
};

template <class G>
constexpr bool kHasNoReplacedName =
    !HasAddKernel<G> && !HasAddMemset<G> && !HasAddMemcpy<G> && !HasAddHost<G> && !HasAddChild<G> &&
    !HasAddEmpty<G> && !HasAddEventRecord<G> && !HasAddEventWait<G> && !HasAddAlloc<G> &&
    !HasAddFree<G> && !HasCreateCondition<G> && !HasIfThen<G> && !HasIfThenAfter<G> &&
    !HasJoinOfNodes<G> && !HasRecord<G> && !HasWait<G> && !HasAllocate<G> && !HasDeallocate<G> &&
    !HasSetParams<G> && !HasSetKernelParams<G> && !HasSetEvent<G> && !HasLooseMemsetSetter<G> &&
    !HasLooseMemcpySetter<G>;
static_assert(kHasNoReplacedName<GraphBuilder>);
static_assert(kHasNoReplacedName<GraphDefinition>);
static_assert(kHasNoReplacedName<Graph>);
// Each type instantiates under its one cuda.core name.
static_assert(HasComplete<GraphBuilder> && !HasInstantiate<GraphBuilder>);
static_assert(HasInstantiate<GraphDefinition> && !HasComplete<GraphDefinition>);
// The builders' join (merging builders from split()) is the one join.
static_assert(requires(std::vector<GraphBuilder> && builders) {
  { GraphBuilder::join(std::move(builders)) } -> std::same_as<GraphBuilder>;
});

// Return the message of the std::logic_error `call` throws ("" if none).
template <class F>
std::string logic_error_of(F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const std::logic_error& error) {
    return error.what();
  }
  return "";
}

TEST(GraphVocabulary, AClosedBuilderNamesEachOperationAsItIsSpelled) {
  GraphBuilder closed;  // no driver call: a builder that behaves as closed
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", logic_error_of([&] { static_cast<void>(closed.empty()); })},
      {"memset", logic_error_of([&] {
         static_cast<void>(closed.memset({}, CUdeviceptr{}, std::uint8_t{0}, 1));
       })},
      {"memcpy", logic_error_of([&] {
         static_cast<void>(closed.memcpy({}, CUdeviceptr{}, CUdeviceptr{}, 1));
       })},
      {"alloc", logic_error_of([&] { static_cast<void>(closed.alloc({}, 64)); })},
      {"free", logic_error_of([&] { static_cast<void>(closed.free({}, CUdeviceptr{})); })},
      {"callback", logic_error_of([&] { static_cast<void>(closed.callback([] {})); })},
      {"if_cond", logic_error_of([&] { static_cast<void>(closed.if_cond(0)); })},
  };
  for (const auto& [name, message] : cases) {
    EXPECT_EQ(message, "GraphBuilder::" + name + " on a closed GraphBuilder") << name;
  }
}

}  // namespace
