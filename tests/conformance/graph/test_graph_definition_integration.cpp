// cuda.core's tests/graph/test_graph_definition_integration.py: whole programs built as
// explicit graphs, using every node type (allocation, fill, copy, child graph, events,
// host callback, while / if / if-else / switch, free).
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/graph_definition.hpp>

#include "device_fixture.hpp"
#include "graph_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using conformance::one_thread;
using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphDefinition;
using cuwrap::GraphNode;
using cuwrap::Stream;

constexpr std::size_t kFloat = sizeof(float);
constexpr std::size_t kInt = sizeof(int);

// Conditional nodes run on compute capability 9.0 and newer in cuda.core's tests, and the
// programs allocate graph memory.
class GraphDefinitionIntegration : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (device().compute_capability().major < 9) {
      GTEST_SKIP() << "Conditional nodes require compute capability >= 9.0";
    }
    if (!device().properties().memory_pools_supported()) {
      GTEST_SKIP() << "Device does not support mempool operations";
    }
  }
};

constexpr const char* kCondPreamble = R"(
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void countdown(cudaGraphConditionalHandle handle, int* counter) {
  int c = atomicSub(counter, 1);
  cudaGraphSetConditional(handle, (c > 1) ? 1u : 0u);
}
)";

cuwrap::ObjectCode compile(const std::string& source) {
  const Device device(0);
  cuwrap::ProgramOptions options;
  options.std = "c++17";
  options.arch = "sm_" + device.arch();
  cuwrap::Program program(source, cuwrap::CodeType::Cxx, options);
  return program.compile(cuwrap::TargetType::Cubin);
}

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

std::uint32_t bits(int value) { return static_cast<std::uint32_t>(value); }

// ---------------------------------------------------------------------------------
// Test 1: a 1-D heat bar (while node, child graph, event nodes, host callback).

constexpr int kHeatN = 32;
constexpr float kHeatLeft = 100.0F;
constexpr float kHeatRight = 0.0F;
constexpr float kHeatAlpha = 0.4F;
constexpr int kHeatIters = 50;

std::vector<float> heat_reference() {
  std::vector<float> u(kHeatN, 0.0F), next(kHeatN);
  u.front() = kHeatLeft;
  u.back() = kHeatRight;
  for (int it = 0; it < kHeatIters; ++it) {
    next.front() = u.front();
    next.back() = u.back();
    for (int i = 1; i < kHeatN - 1; ++i) {
      next[i] = u[i] + kHeatAlpha * (u[i - 1] - 2.0F * u[i] + u[i + 1]);
    }
    std::swap(u, next);
  }
  return u;
}

TEST_F(GraphDefinitionIntegration, test_heat_diffusion) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::ObjectCode code = compile(std::string(kCondPreamble) + R"(
extern "C" __global__ void heat_step(float* u_next, const float* u_curr, int N, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  if (i == 0 || i == N - 1)
    u_next[i] = u_curr[i];
  else
    u_next[i] = u_curr[i] + alpha * (u_curr[i - 1] - 2.0f * u_curr[i] + u_curr[i + 1]);
}
)");
  const cuwrap::Kernel k_heat = code.get_kernel("heat_step");
  const cuwrap::Kernel k_countdown = code.get_kernel("countdown");
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer host = pinned.allocate(kHeatN * kFloat);
  const CUdeviceptr host_ptr = host.handle();

  GraphDefinition g(device());
  const CUgraphConditionalHandle condition = g.create_conditional_handle(1);
  cuwrap::EventOptions timing;
  timing.enable_timing = true;
  const cuwrap::Event event_start = device().create_event(timing);
  const cuwrap::Event event_end = device().create_event(timing);
  std::optional<std::vector<float>> results;

  cuwrap::LaunchConfig heat_cfg;
  heat_cfg.grid = cuwrap::Dim3(1);
  heat_cfg.block = cuwrap::Dim3(kHeatN);

  const cuwrap::GraphAllocation a_curr = g.alloc({}, kHeatN * kFloat);
  const cuwrap::GraphAllocation a_next = g.alloc({}, kHeatN * kFloat);
  const cuwrap::GraphAllocation a_ctr = g.alloc({}, kInt);
  const GraphNode m_curr =
      g.memset({{a_curr.node}}, a_curr.address, std::uint8_t{0}, kHeatN * kFloat);
  const GraphNode m_next =
      g.memset({{a_next.node}}, a_next.address, std::uint8_t{0}, kHeatN * kFloat);
  const GraphNode m_ctr = g.memset({{a_ctr.node}}, a_ctr.address, bits(kHeatIters), 1);

  GraphDefinition bc(device());  // boundary conditions, as a child graph
  const GraphNode left = bc.memset({}, a_curr.address, bits(kHeatLeft), 1);
  bc.memset({{left}}, a_curr.address + (kHeatN - 1) * kFloat, bits(kHeatRight), 1);
  const GraphNode init[] = {m_curr, m_next, m_ctr};
  const GraphNode joined = g.empty(init);
  const GraphNode embedded = g.embed({{joined}}, bc);
  const GraphNode started = g.record_event({{embedded}}, event_start);

  cuwrap::ConditionalNode loop = g.while_loop({{started}}, condition);
  ASSERT_EQ(loop.branches.size(), 1U);
  GraphDefinition& body = loop.branches[0];
  const GraphNode step =
      body.launch({}, heat_cfg, k_heat, a_next.address, a_curr.address, kHeatN, kHeatAlpha);
  const GraphNode copy_back =
      body.memcpy({{step}}, a_curr.address, a_next.address, kHeatN * kFloat);
  body.launch({{copy_back}}, one_thread(), k_countdown, condition, a_ctr.address);

  const GraphNode waited = g.wait_event({{loop.node}}, event_start);
  const GraphNode ended = g.record_event({{waited}}, event_end);
  const GraphNode read = g.memcpy({{ended}}, host_ptr, a_curr.address, kHeatN * kFloat);
  const GraphNode called = g.callback({{read}}, [&results, host_ptr] {
    const auto* data = reinterpret_cast<const float*>(host_ptr);
    results.emplace(data, data + kHeatN);
  });
  const GraphNode f1 = g.free({{called}}, a_curr.address);
  const GraphNode f2 = g.free({{f1}}, a_next.address);
  g.free({{f2}}, a_ctr.address);

  Graph graph = g.instantiate();
  const Stream stream = device().create_stream();
  graph.launch(stream);
  stream.sync();

  ASSERT_TRUE(results.has_value()) << "Host callback did not execute";
  const std::vector<float> reference = heat_reference();
  for (int i = 0; i < kHeatN; ++i) {
    EXPECT_NEAR((*results)[i], reference[i], 1e-5 * std::fabs(reference[i]) + 1e-6) << i;
  }
}

// ---------------------------------------------------------------------------------
// Test 2: bisection for sqrt(2) (if/else node inside a while body, then an if node).

constexpr int kBisectIters = 20;

TEST_F(GraphDefinitionIntegration, test_bisection_root) {
  CUWRAP_REQUIRE_NVRTC();
  if (cuwrap::driver_version() < 12080) {
    GTEST_SKIP() << "if/else conditional nodes need a CUDA 12.8 driver";
  }
  const cuwrap::ObjectCode code = compile(std::string(kCondPreamble) + R"(
extern "C" __global__ void bisect_eval(float* a, float* b, cudaGraphConditionalHandle ie_cond) {
  float mid = (*a + *b) * 0.5f;
  float fm = mid * mid - 2.0f;
  cudaGraphSetConditional(ie_cond, (fm > 0.0f) ? 1u : 0u);
}
extern "C" __global__ void update_hi(float* a, float* b) { *b = (*a + *b) * 0.5f; }
extern "C" __global__ void update_lo(float* a, float* b) { *a = (*a + *b) * 0.5f; }
extern "C" __global__ void check_refine(float* a, float* b, cudaGraphConditionalHandle if_cond) {
  float mid = (*a + *b) * 0.5f;
  float fm = mid * mid - 2.0f;
  float abs_fm = fm < 0.0f ? -fm : fm;
  cudaGraphSetConditional(if_cond, (abs_fm > 1e-10f) ? 1u : 0u);
}
extern "C" __global__ void newton_refine(float* a, float* b) {
  float mid = (*a + *b) * 0.5f;
  float refined = mid - (mid * mid - 2.0f) / (2.0f * mid);
  *a = refined;
  *b = refined;
}
)");
  const cuwrap::Kernel k_eval = code.get_kernel("bisect_eval");
  const cuwrap::Kernel k_hi = code.get_kernel("update_hi");
  const cuwrap::Kernel k_lo = code.get_kernel("update_lo");
  const cuwrap::Kernel k_cd = code.get_kernel("countdown");
  const cuwrap::Kernel k_check = code.get_kernel("check_refine");
  const cuwrap::Kernel k_newton = code.get_kernel("newton_refine");
  cuwrap::LegacyPinnedMemoryResource pinned;
  Buffer host = pinned.allocate(kFloat);
  const CUdeviceptr host_ptr = host.handle();
  std::optional<float> root;

  GraphDefinition g(device());
  const cuwrap::GraphAllocation a = g.alloc({}, kFloat);
  const cuwrap::GraphAllocation b = g.alloc({}, kFloat);
  const cuwrap::GraphAllocation ctr = g.alloc({}, kInt);
  const GraphNode init[] = {g.memset({{a.node}}, a.address, bits(0.0F), 1),
                            g.memset({{b.node}}, b.address, bits(2.0F), 1),
                            g.memset({{ctr.node}}, ctr.address, bits(kBisectIters), 1)};
  const GraphNode p = g.empty(init);

  const CUgraphConditionalHandle while_cond = g.create_conditional_handle(1);
  const CUgraphConditionalHandle ie_cond = g.create_conditional_handle(0);
  cuwrap::ConditionalNode loop = g.while_loop({{p}}, while_cond);
  GraphDefinition& body = loop.branches[0];
  const GraphNode eval = body.launch({}, one_thread(), k_eval, a.address, b.address, ie_cond);
  cuwrap::ConditionalNode ie = body.if_else({{eval}}, ie_cond);
  ASSERT_EQ(ie.branches.size(), 2U);
  ie.branches[0].launch({}, one_thread(), k_hi, a.address, b.address);
  ie.branches[1].launch({}, one_thread(), k_lo, a.address, b.address);
  body.launch({{ie.node}}, one_thread(), k_cd, while_cond, ctr.address);

  const CUgraphConditionalHandle if_cond = g.create_conditional_handle(0);
  const GraphNode check =
      g.launch({{loop.node}}, one_thread(), k_check, a.address, b.address, if_cond);
  cuwrap::ConditionalNode if_node = g.if_cond({{check}}, if_cond);
  if_node.branches[0].launch({}, one_thread(), k_newton, a.address, b.address);
  const GraphNode read = g.memcpy({{if_node.node}}, host_ptr, a.address, kFloat);
  const GraphNode called =
      g.callback({{read}}, [&root, host_ptr] { root = *reinterpret_cast<const float*>(host_ptr); });
  const GraphNode f1 = g.free({{called}}, a.address);
  const GraphNode f2 = g.free({{f1}}, b.address);
  g.free({{f2}}, ctr.address);

  Graph graph = g.instantiate();
  const Stream stream = device().create_stream();
  graph.launch(stream);
  stream.sync();
  ASSERT_TRUE(root.has_value()) << "Host callback did not execute";
  const float expected = std::sqrt(2.0F);
  EXPECT_NEAR(*root, expected, 1e-6 * expected);
}

// ---------------------------------------------------------------------------------
// Test 3: a switch node choosing one of four transforms (one per parameter of cuda.core's
// mode, expected).

TEST_F(GraphDefinitionIntegration, test_switch_dispatch) {
  CUWRAP_REQUIRE_NVRTC();
  if (cuwrap::driver_version() < 12080 || cuwrap::bindings_version() < 12080) {
    GTEST_SKIP() << "switch conditional nodes need CUDA 12.8";
  }
  const cuwrap::ObjectCode code = compile(R"(
extern "C" __global__ void negate_it(int* x) { *x = -(*x); }
extern "C" __global__ void double_it(int* x) { *x = 2 * (*x); }
extern "C" __global__ void square_it(int* x) { *x = (*x) * (*x); }
)");
  const cuwrap::Kernel kernels[] = {code.get_kernel("negate_it"), code.get_kernel("double_it"),
                                    code.get_kernel("square_it")};
  constexpr int kValue = 42;
  const std::pair<unsigned, int> cases[] = {
      {0U, -kValue}, {1U, 2 * kValue}, {2U, kValue * kValue}, {3U, kValue}};
  cuwrap::LegacyPinnedMemoryResource pinned;
  for (const auto& [mode, expected] : cases) {
    SCOPED_TRACE(mode);
    Buffer host = pinned.allocate(kInt);
    *reinterpret_cast<int*>(host.handle()) = 0;
    GraphDefinition g(device());
    const cuwrap::GraphAllocation x = g.alloc({}, kInt);
    const CUgraphConditionalHandle sw_cond = g.create_conditional_handle(mode);
    const GraphNode fill = g.memset({{x.node}}, x.address, bits(kValue), 1);
    cuwrap::ConditionalNode sw = g.switch_({{fill}}, sw_cond, 4);
    ASSERT_EQ(sw.branches.size(), 4U);
    for (std::size_t i = 0; i < 3; ++i) {
      sw.branches[i].launch({}, one_thread(), kernels[i], x.address);
    }  // branch 3: identity
    const GraphNode read = g.memcpy({{sw.node}}, host.handle(), x.address, kInt);
    g.free({{read}}, x.address);
    Graph graph = g.instantiate();
    const Stream stream = device().create_stream();
    graph.launch(stream);
    stream.sync();
    EXPECT_EQ(*reinterpret_cast<const int*>(host.handle()), expected);
  }
}

}  // namespace
