// LaunchConfig's programmatic dependent launch (PDL) and priority, Device::default_stream()
// and launch_host_func(). The attribute translation runs everywhere; the rest on a GPU.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::CodeType;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::ObjectCode;
using cuwrap::Program;
using cuwrap::TargetType;

std::vector<CUlaunchAttributeID> attribute_ids(const LaunchConfig& config,
                                               std::vector<CUlaunchAttribute>& out) {
  CUlaunchConfig cu{};
  out.assign(cuwrap::detail::kMaxLaunchAttributes, CUlaunchAttribute{});
  cuwrap::detail::to_cu_launch_config(config, nullptr, cu, out.data());
  std::vector<CUlaunchAttributeID> ids;
  for (unsigned i = 0; i < cu.numAttrs; ++i) {
    ids.push_back(out[i].id);
  }
  return ids;
}

TEST(LaunchConfigAttributes, PdlAndPriorityBecomeLaunchAttributes) {
  std::vector<CUlaunchAttribute> attrs;
  EXPECT_TRUE(attribute_ids({.grid = 4, .block = 32}, attrs).empty());

  const auto pdl =
      attribute_ids({.grid = 4, .block = 32, .programmatic_stream_serialization = true}, attrs);
  ASSERT_EQ(pdl.size(), 1U);
  EXPECT_EQ(pdl[0], CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
  EXPECT_EQ(attrs[0].value.programmaticStreamSerializationAllowed, 1);

  const auto prio = attribute_ids({.grid = 4, .block = 32, .priority = -3}, attrs);
  ASSERT_EQ(prio.size(), 1U);
  EXPECT_EQ(prio[0], CU_LAUNCH_ATTRIBUTE_PRIORITY);
  EXPECT_EQ(attrs[0].value.priority, -3);

  const auto all = attribute_ids({.grid = 4,
                                  .block = 32,
                                  .cluster = cuwrap::Dim3{2},
                                  .cooperative_launch = true,
                                  .programmatic_stream_serialization = true,
                                  .priority = 0},
                                 attrs);
  EXPECT_EQ(all.size(), cuwrap::detail::kMaxLaunchAttributes);
  EXPECT_EQ(all[3], CU_LAUNCH_ATTRIBUTE_PRIORITY);
  EXPECT_EQ(attrs[3].value.priority, 0) << "priority 0 is set, not left to the stream";
}

// The primary announces its dependents at once, then spins for `spin_ns`; each records
// %globaltimer: the secondary when it starts, the primary when it ends.
constexpr const char* kPdlSource = R"(
__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
extern "C" __global__ void primary(unsigned long long* times, unsigned long long spin_ns) {
  const unsigned long long start = now();
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t = start;
  while (t - start < spin_ns) t = now();
  if (threadIdx.x == 0) times[0] = t;
}
extern "C" __global__ void secondary(unsigned long long* times, int* seen) {
  const unsigned long long start = now();
  if (threadIdx.x == 0) times[1] = start;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // After the wait the primary has finished and its writes are visible.
  if (threadIdx.x == 0) seen[0] = times[0] != 0ull ? 1 : 0;
}
)";

class LaunchExtrasGpu : public cuwrap::testing::DeviceStreamTest {};

// Return {primary end, secondary start} in ns for a primary + secondary pair.
std::vector<unsigned long long> run_pair(const cuwrap::Device& device, const cuwrap::Stream& s,
                                         const ObjectCode& code, bool pdl, int& seen) {
  const Kernel primary = code.get_kernel("primary");
  const Kernel secondary = code.get_kernel("secondary");
  Buffer times = device.allocate(2 * sizeof(unsigned long long), s);
  Buffer seen_buffer = device.allocate(sizeof(int), s);
  times.fill(std::uint8_t{0}, s);
  seen_buffer.fill(std::uint8_t{0}, s);
  const unsigned long long spin_ns = 2'000'000;  // 2 ms: far longer than a launch
  cuwrap::launch(s, {.grid = 1, .block = 32}, primary, times, spin_ns);
  cuwrap::launch(s, {.grid = 1, .block = 32, .programmatic_stream_serialization = pdl}, secondary,
                 times, seen_buffer);
  std::vector<unsigned long long> host(2);
  times.copy_to(std::as_writable_bytes(std::span(host)), s);
  seen_buffer.copy_to(std::as_writable_bytes(std::span(&seen, 1)), s);
  s.sync();
  return host;
}

TEST_F(LaunchExtrasGpu, DependentKernelOverlapsThePrimarysTail) {
  CUWRAP_REQUIRE_NVRTC();
  if (device().compute_capability().major < 9) {
    GTEST_SKIP() << "programmatic dependent launch overlaps on sm_90 and newer only";
  }
  const ObjectCode code = Program(kPdlSource, CodeType::Cxx).compile(TargetType::Cubin);
  int seen = 0;
  const auto with_pdl = run_pair(device(), stream(), code, true, seen);
  EXPECT_EQ(seen, 1) << "griddepcontrol.wait must make the primary's result visible";
  EXPECT_LT(with_pdl[1], with_pdl[0]) << "with PDL the secondary starts (" << with_pdl[1]
                                      << " ns) before the primary ends (" << with_pdl[0] << " ns)";
  const auto without = run_pair(device(), stream(), code, false, seen);
  EXPECT_GE(without[1], without[0]) << "without PDL the secondary starts after the primary";
}

constexpr const char* kAddSource = R"(
extern "C" __global__ void add_one(int* x) { atomicAdd(x, 1); }
)";

TEST_F(LaunchExtrasGpu, PriorityLaunchRunsOnEveryPriorityOfTheRange) {
  CUWRAP_REQUIRE_NVRTC();
  const ObjectCode code = Program(kAddSource, CodeType::Cxx).compile(TargetType::Cubin);
  const Kernel add_one = code.get_kernel("add_one");
  const auto [least, greatest] = cuwrap::driver::cuCtxGetStreamPriorityRange();
  Buffer counter = device().allocate(sizeof(int), stream());
  counter.fill(std::uint8_t{0}, stream());
  for (int p : {least, greatest}) {
    cuwrap::launch(stream(), {.grid = 2, .block = 32, .priority = p}, add_one, counter);
  }
  int host = 0;
  counter.copy_to(std::as_writable_bytes(std::span(&host, 1)), stream());
  stream().sync();
  EXPECT_EQ(host, 128);
}

TEST_F(LaunchExtrasGpu, DefaultStreamRunsWorkInOrder) {
  CUWRAP_REQUIRE_NVRTC();
  const cuwrap::StreamRef s = device().default_stream();
  EXPECT_EQ(s.handle(), CU_STREAM_LEGACY);
  EXPECT_EQ(s.device().device_id(), device().device_id());
  const ObjectCode code = Program(kAddSource, CodeType::Cxx).compile(TargetType::Cubin);
  Buffer counter = device().allocate(sizeof(int), s);
  counter.fill(std::uint8_t{0}, s);
  cuwrap::launch(s, {.grid = 1, .block = 64}, code.get_kernel("add_one"), counter);
  int host = 0;
  counter.copy_to(std::as_writable_bytes(std::span(&host, 1)), s);
  s.sync();
  EXPECT_EQ(host, 64);
}

TEST_F(LaunchExtrasGpu, HostFunctionRunsInStreamOrderAndIsFreed) {
  auto token = std::make_shared<int>(0);
  std::atomic<int> order{0};
  int first = -1;
  int second = -1;
  cuwrap::launch_host_func(stream(), [token, &order, &first] { first = order++; });
  cuwrap::launch_host_func(stream(), [token, &order, &second] { second = order++; });
  stream().sync();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(token.use_count(), 1) << "the callables are destroyed after they ran";
}

TEST_F(LaunchExtrasGpu, HostFunctionExceptionGoesToTheHandler) {
  std::string caught;
  auto previous =
      cuwrap::set_host_function_error_handler({[](const std::exception_ptr& e, void* user_data) {
                                                 try {
                                                   std::rethrow_exception(e);
                                                 } catch (const std::exception& x) {
                                                   *static_cast<std::string*>(user_data) = x.what();
                                                 }
                                               },
                                               &caught});
  bool after = false;
  cuwrap::launch_host_func(stream(), [] { throw std::runtime_error("boom in a host function"); });
  cuwrap::launch_host_func(stream(), [&after] { after = true; });
  stream().sync();
  cuwrap::set_host_function_error_handler(previous);
  EXPECT_EQ(caught, "boom in a host function");
  EXPECT_TRUE(after) << "the stream goes on after a host function threw";
}

// A host function launched on a capturing stream becomes a host node: it runs at every
// launch of the graph and is freed with the last graph that uses it.
TEST_F(LaunchExtrasGpu, HostFunctionOnACapturingStreamIsCapturedAsAHostNode) {
  std::atomic<int> calls{0};
  auto token = std::make_shared<int>(1);
  const std::weak_ptr<int> watch = token;
  cuwrap::driver::cuStreamBeginCapture(stream().handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  cuwrap::launch_host_func(stream(), [token, &calls] { calls += *token; });
  token.reset();
  CUgraph graph = cuwrap::driver::cuStreamEndCapture(stream().handle());
  EXPECT_EQ(calls.load(), 0) << "captured, not run";
  std::size_t count = 0;
  cuwrap::driver::cuGraphGetNodes(graph, nullptr, &count);
  ASSERT_EQ(count, 1U);
  CUgraphNode node = nullptr;
  cuwrap::driver::cuGraphGetNodes(graph, &node, &count);
  EXPECT_EQ(cuwrap::driver::cuGraphNodeGetType(node), CU_GRAPH_NODE_TYPE_HOST);
  CUgraphExec exec = cuwrap::driver::cuGraphInstantiate(graph, 0);
  cuwrap::driver::cuGraphLaunch(exec, stream().handle());
  cuwrap::driver::cuGraphLaunch(exec, stream().handle());
  stream().sync();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_FALSE(watch.expired());
  cuwrap::driver::cuGraphExecDestroy(exec);
  cuwrap::driver::cuGraphDestroy(graph);
  // User objects may be destroyed on a driver thread: wait a little for it.
  for (int i = 0; i < 250 && !watch.expired(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(watch.expired()) << "the captured function outlived its graphs";
}

}  // namespace
