// The second typed forms of the generated bindings: enumerations as vectors, typed
// attributes, typed shareable handles, spans (GPU tests skip with a reason without one;
// the span length check runs everywhere, since it happens before any driver call).
#include <gtest/gtest.h>
#include <cuwrap/driver.hpp>
#include <cuwrap/nvrtc.hpp>
#include <cuwrap/version.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu.hpp"

namespace drv = cuwrap::driver;

namespace {

// Mismatched paired spans are refused before the driver is even loaded.
// unique_handle: released once, at the end, on reset and on move assignment; release()
// hands the handle back unreleased.
struct CountingRelease {
  static inline std::vector<int*> released;
  static void release(int* handle) noexcept { released.push_back(handle); }
};

TEST(UniqueHandle, ReleasesOnceAndHandsBackOnRelease) {
  using Owned = cuwrap::detail::unique_handle<int*, CountingRelease>;
  int a = 0;
  int b = 0;
  int c = 0;
  CountingRelease::released.clear();
  {
    Owned owned(&a);
    EXPECT_TRUE(owned);
    EXPECT_EQ(owned.get(), &a);
    Owned moved(std::move(owned));
    EXPECT_FALSE(owned);  // NOLINT(bugprone-use-after-move): moved-from is empty
    moved.reset(&b);
    EXPECT_EQ(CountingRelease::released, std::vector<int*>{&a});
    Owned other(&c);
    other = std::move(moved);
    EXPECT_EQ(CountingRelease::released, (std::vector<int*>{&a, &c}));
    Owned kept(&c);
    EXPECT_EQ(kept.release(), &c);
    EXPECT_FALSE(kept);
  }
  EXPECT_EQ(CountingRelease::released, (std::vector<int*>{&a, &c, &b}));
}

TEST(TypedShapes, MismatchedSpansThrowBeforeAnyDriverCall) {
  const char* const headers[] = {"a", "b"};
  const char* const names[] = {"a.h"};
  try {
    cuwrap::nvrtc::nvrtcCreateProgram("", "k.cu", headers, names);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nvrtcCreateProgram"), std::string::npos) << what;
    EXPECT_NE(what.find("headers has 2"), std::string::npos) << what;
    EXPECT_NE(what.find("includeNames has 1"), std::string::npos) << what;
  }
}

// Every input array one count counts is a span in the typed form, all of them together.
using NodeSpan = std::span<const CUgraphNode>;
using OptionSpan = std::span<const CUjit_option>;
// JIT option values are written back by the driver (log sizes, wall time): a span of
// mutable void*; a library option's values are only read.
using JitValueSpan = std::span<void*>;
using ValueSpan = std::span<void* const>;
static_assert(
    std::is_same_v<decltype(drv::cuLinkCreate(OptionSpan{}, JitValueSpan{})), CUlinkState>);
static_assert(std::is_same_v<
              decltype(drv::cuModuleLoadDataEx(nullptr, OptionSpan{}, JitValueSpan{})), CUmodule>);
static_assert(std::is_same_v<decltype(drv::cuLibraryLoadData(nullptr, OptionSpan{}, JitValueSpan{},
                                                             std::span<const CUlibraryOption>{},
                                                             ValueSpan{})),
                             CUlibrary>);
// An array of const values, which the driver would write into, is refused at compile time.
template <class Values>
concept LoadsWithValues = requires(Values values) {
  drv::cuModuleLoadDataEx(nullptr, OptionSpan{}, values);
};
static_assert(LoadsWithValues<JitValueSpan>);
static_assert(!LoadsWithValues<std::span<void* const>>);
template <class Values>
concept LinksWithValues = requires(Values values) {
  drv::cuLinkCreate(OptionSpan{}, values);
};
static_assert(!LinksWithValues<std::span<void* const>>);
// JitOptions in place of the two arrays.
static_assert(
    std::is_same_v<decltype(drv::cuModuleLoadDataEx(nullptr, std::declval<drv::JitOptions&>())),
                   CUmodule>);
static_assert(
    std::is_same_v<decltype(drv::cuLinkCreate(std::declval<drv::JitOptions&>())), CUlinkState>);
// Owning handles for the pairs cuda.h proves; a type without one has no unique_handle.
static_assert(!std::is_copy_constructible_v<drv::unique_handle<CUmodule>>);
static_assert(std::is_nothrow_move_constructible_v<drv::unique_handle<CUmodule>>);
static_assert(std::is_same_v<decltype(drv::make_unique(std::declval<CUstream>())),
                             drv::unique_handle<CUstream>>);
template <class H>
concept Releasable = requires {
  drv::handle_release<H>::release;
};
static_assert(Releasable<CUmodule> && Releasable<CUlibrary> && Releasable<CUevent> &&
              Releasable<CUlinkState> && Releasable<CUgraph> && Releasable<CUmemoryPool>);
static_assert(!Releasable<CUfunction> && !Releasable<CUgraphNode>);

#if CUDA_VERSION >= 13000
using EdgeSpan = std::span<const CUgraphEdgeData>;
static_assert(std::is_same_v<decltype(drv::cuGraphAddDependencies(CUgraph{}, NodeSpan{}, NodeSpan{},
                                                                  EdgeSpan{})),
                             void>);
static_assert(std::is_same_v<decltype(drv::cuGraphRemoveDependencies(CUgraph{}, NodeSpan{},
                                                                     NodeSpan{}, EdgeSpan{})),
                             void>);
static_assert(
    std::is_same_v<decltype(drv::cuGraphAddNode(CUgraph{}, NodeSpan{}, EdgeSpan{},
                                                static_cast<CUgraphNodeParams*>(nullptr))),
                   CUgraphNode>);
static_assert(std::is_same_v<
              decltype(drv::cuStreamBeginCaptureToGraph(CUstream{}, CUgraph{}, NodeSpan{},
                                                        EdgeSpan{}, CU_STREAM_CAPTURE_MODE_GLOBAL)),
              void>);
static_assert(std::is_same_v<decltype(drv::cuStreamUpdateCaptureDependencies(CUstream{}, NodeSpan{},
                                                                             EdgeSpan{}, 0u)),
                             void>);

// `what` names the function and both arrays with their lengths.
void expect_names(const std::string& what, const char* function, const char* a, const char* b) {
  EXPECT_NE(what.find(function), std::string::npos) << what;
  EXPECT_NE(what.find(a), std::string::npos) << what;
  EXPECT_NE(what.find(b), std::string::npos) << what;
}

// The graph's paired arrays are checked against each other before the driver is loaded:
// a stray `to` or a short edge-data array is std::invalid_argument, whatever the graph.
TEST(TypedShapes, PairedGraphArraysAreCheckedBeforeAnyDriverCall) {
  const CUgraphNode two[2] = {};
  const CUgraphNode one[1] = {};
  const CUgraphEdgeData edge[1] = {};
  try {
    drv::cuGraphAddDependencies(nullptr, two, one, EdgeSpan());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    expect_names(e.what(), "cuGraphAddDependencies", "from has 2", "to has 1");
  }
  try {
    drv::cuGraphRemoveDependencies(nullptr, two, two, edge);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    expect_names(e.what(), "cuGraphRemoveDependencies", "from has 2", "edgeData has 1");
  }
  try {
    drv::cuGraphAddNode(nullptr, two, edge, nullptr);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    expect_names(e.what(), "cuGraphAddNode", "dependencies has 2", "dependencyData has 1");
  }
  try {
    drv::cuStreamBeginCaptureToGraph(nullptr, nullptr, two, edge, CU_STREAM_CAPTURE_MODE_GLOBAL);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    expect_names(e.what(), "cuStreamBeginCaptureToGraph", "dependencies has 2",
                 "dependencyData has 1");
  }
  try {
    drv::cuStreamUpdateCaptureDependencies(nullptr, two, edge, 0);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    expect_names(e.what(), "cuStreamUpdateCaptureDependencies", "dependencies has 2",
                 "dependencyData has 1");
  }
  // Optional edge data may be left empty: the call passes the check and reaches the
  // driver (which refuses the null graph, or is not there).
  try {
    drv::cuGraphAddDependencies(nullptr, two, two, EdgeSpan());
    FAIL() << "a null graph was accepted";
  } catch (const std::invalid_argument& e) {
    FAIL() << "empty optional edge data refused: " << e.what();
  } catch (const std::exception&) {
  }
}
#endif

// A stand-in for cuGraphGetNodes whose graph grows from 3 to 5 nodes right after the
// first count query, as another thread adding nodes would; it behaves as the driver
// documents: fills min(capacity, nodes), returns that number, NULL-fills the rest.
struct GrowingGraph {
  static inline std::size_t nodes = 3;
  static inline int calls = 0;
  static inline bool grow = true;
  static CUresult get_nodes(CUgraph /*graph*/, CUgraphNode* out, size_t* count) {
    ++calls;
    if (out == nullptr) {
      *count = nodes;
      if (grow && calls == 1) {
        nodes = 5;
      }
      return CUDA_SUCCESS;
    }
    const std::size_t filled = std::min(*count, nodes);
    for (std::size_t i = 0; i < *count; ++i) {
      out[i] = i < filled ? reinterpret_cast<CUgraphNode>(i + 1) : nullptr;
    }
    *count = filled;
    return CUDA_SUCCESS;
  }
};

// Put `fn` into the wrapper's entry-point slot: the wrapper then calls it without
// loading the driver (the slot is what the first call would have filled).
void install_driver_entry(const char* name, void* fn) {
  for (std::size_t i = 0; i < cuwrap::detail::kDriverSymbolCount; ++i) {
    if (std::string(cuwrap::detail::kDriverSymbols[i].name) == name) {
      cuwrap::detail::g_driver_slots[i] = fn;
      return;
    }
  }
  FAIL() << name << " is not in the driver's symbol table";
}

TEST(TypedShapes, EnumerationThatGrowsIsRetriedNeverTruncated) {
  install_driver_entry("cuGraphGetNodes", reinterpret_cast<void*>(&GrowingGraph::get_nodes));
  GrowingGraph::nodes = 3;
  GrowingGraph::calls = 0;
  GrowingGraph::grow = true;
  const std::vector<CUgraphNode> nodes = drv::cuGraphGetNodes(CUgraph{});
  ASSERT_EQ(nodes.size(), 5u) << "the two nodes added between the calls are not lost";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i], reinterpret_cast<CUgraphNode>(i + 1));
  }
  EXPECT_EQ(GrowingGraph::calls, 4) << "count, fill (full), count again, fill";

  GrowingGraph::calls = 0;
  GrowingGraph::grow = false;
  EXPECT_EQ(drv::cuGraphGetNodes(CUgraph{}).size(), 5u);
  EXPECT_EQ(GrowingGraph::calls, 2) << "an unchanged graph costs two driver calls";
  install_driver_entry("cuGraphGetNodes", nullptr);
}

// A context for device 0 for the duration of a test.
class TypedShapesGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CUWRAP_REQUIRE_GPU();
    device = drv::cuDeviceGet(0);
    context = drv::cuDevicePrimaryCtxRetain(device);
    drv::cuCtxSetCurrent(context);
  }
  void TearDown() override {
    if (context != nullptr) {
      drv::raw::cuDevicePrimaryCtxRelease(device);
    }
  }
  CUdevice device{};
  CUcontext context{};
};

// A graph a → {b, c}: three nodes, two edges, one root.
TEST_F(TypedShapesGpu, EnumeratesGraphNodesAndEdges) {
  CUgraph graph = drv::cuGraphCreate(0);
  const CUgraphNode a = drv::cuGraphAddEmptyNode(graph, std::span<const CUgraphNode>());
  const std::array<CUgraphNode, 1> after_a = {a};
  const CUgraphNode b = drv::cuGraphAddEmptyNode(graph, after_a);
  const CUgraphNode c = drv::cuGraphAddEmptyNode(graph, after_a);

  std::vector<CUgraphNode> nodes = drv::cuGraphGetNodes(graph);
  std::sort(nodes.begin(), nodes.end());
  std::vector<CUgraphNode> expected = {a, b, c};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(nodes, expected);
  EXPECT_EQ(drv::cuGraphGetRootNodes(graph), std::vector<CUgraphNode>{a});

#if CUDA_VERSION >= 13000
  auto [from, to, edgeData] = drv::cuGraphGetEdges(graph);
  EXPECT_EQ(edgeData.size(), 2u);
#else
  auto [from, to] = drv::cuGraphGetEdges(graph);
#endif
  ASSERT_EQ(from.size(), 2u);
  ASSERT_EQ(to.size(), 2u);
  EXPECT_EQ(from[0], a);
  EXPECT_EQ(from[1], a);
  EXPECT_TRUE((to[0] == b && to[1] == c) || (to[0] == c && to[1] == b));

#if CUDA_VERSION >= 13000
  auto [deps, depEdges] = drv::cuGraphNodeGetDependencies(b);
  EXPECT_EQ(depEdges.size(), 1u);
  auto [dependents, dependentEdges] = drv::cuGraphNodeGetDependentNodes(a);
  EXPECT_EQ(dependentEdges.size(), 2u);
#else
  const std::vector<CUgraphNode> deps = drv::cuGraphNodeGetDependencies(b);
  const std::vector<CUgraphNode> dependents = drv::cuGraphNodeGetDependentNodes(a);
#endif
  EXPECT_EQ(deps, std::vector<CUgraphNode>{a});
  EXPECT_EQ(dependents.size(), 2u);
  drv::cuGraphDestroy(graph);
}

TEST_F(TypedShapesGpu, PointerAttributesOfARealAllocation) {
  const CUdeviceptr ptr = drv::cuMemAlloc(4096);
  EXPECT_EQ(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_CONTEXT>(ptr), context);
  EXPECT_EQ(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_MEMORY_TYPE>(ptr),
            CU_MEMORYTYPE_DEVICE);
  EXPECT_EQ(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL>(ptr), 0);
  EXPECT_EQ(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_IS_MANAGED>(ptr), 0u);
  EXPECT_EQ(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_RANGE_START_ADDR>(ptr + 16), ptr);
  EXPECT_GE(drv::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_RANGE_SIZE>(ptr), 4096u);
  auto [ctx, type] =
      drv::cuPointerGetAttributes<CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE>(
          ptr);
  EXPECT_EQ(ctx, context);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
  drv::cuMemFree(ptr);
}

TEST_F(TypedShapesGpu, MemoryPoolAttributesRoundTrip) {
  CUmemoryPool pool = drv::cuDeviceGetDefaultMemPool(device);
  const cuuint64_t before = drv::cuMemPoolGetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool);
  drv::cuMemPoolSetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool, before + 4096);
  EXPECT_EQ(drv::cuMemPoolGetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool), before + 4096);
  drv::cuMemPoolSetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool, before);
  const int follow =
      drv::cuMemPoolGetAttribute<CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES>(pool);
  EXPECT_TRUE(follow == 0 || follow == 1);
}

// A pool created for POSIX file descriptor export hands out a real descriptor.
TEST_F(TypedShapesGpu, ExportsAPoolHandleAsAFileDescriptor) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool{};
  const CUresult created = drv::raw::cuMemPoolCreate(&pool, &props);
  if (created == CUDA_ERROR_NOT_SUPPORTED) {
    GTEST_SKIP() << "IPC memory pools are not supported on this device";
  }
  ASSERT_EQ(created, CUDA_SUCCESS);
  const int fd =
      drv::cuMemPoolExportToShareableHandle<CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR>(pool, 0);
  EXPECT_GE(fd, 0);
  ::close(fd);
  drv::cuMemPoolDestroy(pool);
}

#if CUDA_VERSION >= 13000
// One capability word per requested operation, in order.
TEST_F(TypedShapesGpu, AtomicCapabilitiesOnePerOperation) {
  const CUatomicOperation ops[] = {CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_CAS};
  if (cuwrap::driver_version() < 13000) {
    // An older driver has no such entry point: the loader refuses it, naming both versions.
    EXPECT_THROW(static_cast<void>(drv::cuDeviceGetHostAtomicCapabilities(ops, device)),
                 cuwrap::LoadError);
    GTEST_SKIP() << "cuDeviceGetHostAtomicCapabilities needs a CUDA 13.0 driver; LoadError checked";
  }
  const std::vector<unsigned int> caps = drv::cuDeviceGetHostAtomicCapabilities(ops, device);
  EXPECT_EQ(caps.size(), 2u);
}
#else
TEST_F(TypedShapesGpu, AtomicCapabilitiesOnePerOperation) {
  GTEST_SKIP() << "cuDeviceGetHostAtomicCapabilities is declared from CUDA 13.0 on; these bindings "
                  "were generated from CUDA "
               << CUDA_VERSION / 1000 << "." << CUDA_VERSION % 1000 / 10 << " headers";
}
#endif

}  // namespace
