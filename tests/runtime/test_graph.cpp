// Tests of GraphBuilder and Graph: capture and replay, allocation inside a graph,
// fork/join, conditional nodes, update, DOT output, explicit nodes and misuse.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include "device_fixture.hpp"
#include "launch_configs.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Graph;
using cuwrap::GraphBuilder;
using cuwrap::GraphNode;
using cuwrap::Kernel;
using cuwrap::LaunchConfig;
using cuwrap::Stream;
using cuwrap::testing::single_thread;

// Ownership: builders and graphs are move-only owners; a builder is used where a stream is.
static_assert(!std::is_copy_constructible_v<GraphBuilder> &&
              !std::is_copy_assignable_v<GraphBuilder>);
static_assert(std::is_nothrow_move_constructible_v<GraphBuilder> &&
              std::is_nothrow_move_assignable_v<GraphBuilder>);
static_assert(!std::is_copy_constructible_v<Graph> && std::is_nothrow_move_constructible_v<Graph>);
static_assert(std::is_nothrow_destructible_v<Graph>);
static_assert(std::is_convertible_v<const GraphBuilder&, const Stream&>);

// cudaGraphSetConditional is a builtin the driver resolves; NVRTC needs the declaration.
constexpr const char* kSource = R"(
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

extern "C" __global__ void add_one(unsigned* data, unsigned long long n) {
  const unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1u;
}
extern "C" __global__ void times_two(unsigned* data, unsigned long long n) {
  const unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2u;
}
extern "C" __global__ void add_value(unsigned* data, unsigned long long n, unsigned value) {
  const unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}
extern "C" __global__ void mix_range(unsigned* data, unsigned long long begin,
                                     unsigned long long end, unsigned value) {
  const unsigned long long i = begin + blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (i < end) data[i] = data[i] * 3u + value;
}
extern "C" __global__ void add_to_counter(unsigned* counter, unsigned value) {
  atomicAdd(counter, value);
}
extern "C" __global__ void set_condition(cudaGraphConditionalHandle handle,
                                         const unsigned* flag) {
  cudaGraphSetConditional(handle, *flag);
}
extern "C" __global__ void count_down(cudaGraphConditionalHandle handle, unsigned* counters) {
  counters[1] += 1u;
  counters[0] -= 1u;
  cudaGraphSetConditional(handle, counters[0] > 0u ? 1u : 0u);
}
extern "C" __global__ void empty_kernel() {}
)";

// The test kernels, compiled once for device 0.
struct Kernels {
  Kernel add_one, times_two, add_value, mix_range, add_to_counter, set_condition, count_down, empty;
};

const Kernels& kernels() {
  static const Kernels k = [] {
    const Device device(0);
    device.set_current();
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + device.arch();
    options.std = "c++17";
    cuwrap::Program program(kSource, cuwrap::CodeType::Cxx, options);
    const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    return Kernels{code.get_kernel("add_one"),        code.get_kernel("times_two"),
                   code.get_kernel("add_value"),      code.get_kernel("mix_range"),
                   code.get_kernel("add_to_counter"), code.get_kernel("set_condition"),
                   code.get_kernel("count_down"),     code.get_kernel("empty_kernel")};
  }();
  return k;
}

std::mt19937& rng() {
  static std::mt19937 engine(std::random_device{}());
  return engine;
}

std::vector<unsigned> random_words(std::size_t n) {
  std::uniform_int_distribution<unsigned> dist;
  std::vector<unsigned> words(n);
  std::generate(words.begin(), words.end(), [&] { return dist(rng()); });
  return words;
}

LaunchConfig config_for(std::size_t n) {
  LaunchConfig config;
  config.block = cuwrap::Dim3(128);
  config.grid = cuwrap::Dim3(static_cast<unsigned>((n + 127) / 128));
  return config;
}

// Launch `kernel` on `builder` over the first `n` words of `data`, one thread per word;
// the kernel's arguments are `data`, `n`, then `extra`.
template <class... Extra>
void launch_over(GraphBuilder& builder, const Kernel& kernel, const Buffer& data, std::size_t n,
                 Extra... extra) {
  launch(builder, config_for(n), kernel, data, static_cast<unsigned long long>(n), extra...);
}

void upload(Buffer& buffer, const std::vector<unsigned>& words, const Stream& stream) {
  buffer.copy_from(std::as_bytes(std::span(words)), stream);
}

std::vector<unsigned> download_words(const Buffer& buffer, const Stream& stream) {
  std::vector<unsigned> words(buffer.size() / sizeof(unsigned));
  buffer.copy_to(std::as_writable_bytes(std::span(words)), stream);
  stream.sync();
  return words;
}

unsigned read_word(const Buffer& buffer, const Stream& stream, std::size_t index = 0) {
  return download_words(buffer, stream).at(index);
}

void write_words(Buffer& buffer, const std::vector<unsigned>& words, const Stream& stream) {
  upload(buffer, words, stream);
  stream.sync();
}

// Expect `statement` to throw std::logic_error whose message contains `text`.
#define EXPECT_LOGIC_ERROR(statement, text)                                                      \
  do {                                                                                           \
    try {                                                                                        \
      statement;                                                                                 \
      ADD_FAILURE() << #statement " did not throw";                                              \
    } catch (const std::logic_error& e) {                                                        \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << "message: " << e.what(); \
    }                                                                                            \
  } while (false)

class GraphTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    stream_ = device_->create_stream();
  }

  // Return a new buffer holding `words`, written on stream_ and synchronised.
  Buffer device_words(const std::vector<unsigned>& words) {
    Buffer buffer = device_->allocate(words.size() * sizeof(unsigned), stream_);
    write_words(buffer, words, stream_);
    return buffer;
  }

  Stream stream_;  // assigned in SetUp
};

// ---------------------------------------------------------------------------------
// Without a GPU

TEST(GraphTypes, MovingAGraphHandsItOver) {
  // A Graph wrapping a made-up handle owns nothing: moving and closing it call no driver.
  const auto exec = reinterpret_cast<CUgraphExec>(std::uintptr_t{0x1000});
  Graph first = Graph::from_handle(exec);
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from owners are what is tested
  Graph second = std::move(first);
  EXPECT_EQ(second.handle(), exec);
  EXPECT_LOGIC_ERROR(first.handle(),
                     "Graph::handle on a closed Graph");  // NOLINT(bugprone-use-after-move)
  Graph third;
  third = std::move(second);
  EXPECT_EQ(third.handle(), exec);
  EXPECT_LOGIC_ERROR(second.handle(),
                     "Graph::handle on a closed Graph");  // NOLINT(bugprone-use-after-move)
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_THROW(static_cast<void>(Graph::from_handle(nullptr)), std::invalid_argument);
}

TEST(GraphTypes, EmptyBuilderBehavesAsClosed) {
  GraphBuilder builder;
  EXPECT_LOGIC_ERROR(builder.begin_building(),
                     "GraphBuilder::begin_building on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(builder.end_building(), "GraphBuilder::end_building on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(builder.complete(), "GraphBuilder::complete on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(builder.split(2), "GraphBuilder::split on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(builder.handle(), "GraphBuilder::handle on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(static_cast<void>(builder.stream()),
                     "GraphBuilder::stream on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(builder.empty({}), "GraphBuilder::empty on a closed GraphBuilder");
  builder.close();
  builder.close();  // idempotent
}

TEST(GraphTypes, EmptyGraphBehavesAsClosed) {
  Graph graph;
  EXPECT_LOGIC_ERROR(graph.handle(), "Graph::handle on a closed Graph");
  EXPECT_LOGIC_ERROR(graph.launch(cuwrap::kLegacyDefaultStream), "Graph::launch on a closed Graph");
  EXPECT_LOGIC_ERROR(graph.upload(cuwrap::kLegacyDefaultStream), "Graph::upload on a closed Graph");
  GraphBuilder builder;
  EXPECT_LOGIC_ERROR(graph.update(builder), "Graph::update on a closed Graph");
  graph.close();
  graph.close();
}

TEST(GraphTypes, JoinNeedsTwoBuilders) {
  std::vector<GraphBuilder> one(1);
  EXPECT_THROW(GraphBuilder::join(std::move(one)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------
// Capture and replay

TEST_F(GraphTest, CapturedKernelsReplay) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 1000;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  GraphBuilder builder = stream_.create_graph_builder();
  EXPECT_EQ(builder.stream().handle(), stream_.handle());
  EXPECT_FALSE(builder.is_building());
  builder.begin_building();
  EXPECT_TRUE(builder.is_building());
  launch_over(builder, kernels().add_one, data, kN);
  launch_over(builder, kernels().times_two, data, kN);
  Graph graph = builder.end_building().complete();
  EXPECT_FALSE(builder.is_building());
  EXPECT_NE(builder.handle(), nullptr);
  EXPECT_NE(graph.handle(), nullptr);

  // Capturing ran nothing.
  EXPECT_EQ(download_words(data, stream_), initial);

  graph.upload(stream_);
  constexpr int kReplays = 100;
  for (int i = 0; i < kReplays; ++i) {
    graph.launch(stream_);
  }
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected) {
    for (int i = 0; i < kReplays; ++i) {
      x = (x + 1u) * 2u;
    }
  }
  EXPECT_EQ(download_words(data, stream_), expected);
}

// As cuda.core: a pool's allocation on a capturing stream is refused, naming the
// resource that allocates graph memory; the capture goes on and ends cleanly.
TEST_F(GraphTest, DeviceMemoryResourceRefusesACapturingStream) {
  cuwrap::DeviceMemoryResource pool(*device_);
  GraphBuilder builder = stream_.create_graph_builder();
  builder.begin_building();
  EXPECT_LOGIC_ERROR((void)pool.allocate(256, builder), "GraphMemoryResource");
  // Device::allocate keeps giving graph memory there (an allocation node), as before.
  Buffer via_device = device_->allocate(256, builder);
  EXPECT_EQ(via_device.size(), 256u);
  via_device.close(builder);
  EXPECT_TRUE(builder.is_building());
  cuwrap::GraphMemoryResource graph_memory(*device_);
  Buffer in_graph = graph_memory.allocate(256, builder);  // the graph's memory: allowed
  in_graph.close(builder);
  Graph graph = builder.end_building().complete();
  EXPECT_NE(graph.handle(), nullptr);
  Buffer outside = pool.allocate(256, stream_);  // not capturing: allowed
  EXPECT_EQ(outside.size(), 256u);
  outside.close(stream_);
  stream_.sync();
}

TEST_F(GraphTest, MovingABuilderHandsItOver) {
  GraphBuilder first = stream_.create_graph_builder();
  GraphBuilder second = std::move(first);
  EXPECT_EQ(second.stream().handle(), stream_.handle());
  EXPECT_LOGIC_ERROR(static_cast<void>(first.stream()),  // NOLINT(bugprone-use-after-move)
                     "GraphBuilder::stream on a closed GraphBuilder");
  GraphBuilder third;
  third = std::move(second);
  EXPECT_EQ(third.stream().handle(), stream_.handle());
  EXPECT_LOGIC_ERROR(static_cast<void>(second.stream()),  // NOLINT(bugprone-use-after-move)
                     "GraphBuilder::stream on a closed GraphBuilder");
  third.begin_building();
  EXPECT_TRUE(third.is_building());
  third.end_building();
  EXPECT_FALSE(third.is_building());
}

TEST_F(GraphTest, StreamBuilderKeepsItsStreamAlive) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 200;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  Stream own = device_->create_stream();
  GraphBuilder builder = own.create_graph_builder();
  const CUstream handle = own.handle();
  own.close();  // the builder still holds the CUDA stream
  EXPECT_EQ(builder.stream().handle(), handle);
  builder.begin_building();
  launch_over(builder, kernels().add_value, data, kN, 5u);
  Graph graph = builder.end_building().complete();
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 5u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, DeviceBuilderCapturesOnItsOwnStream) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 300;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_NE(builder.stream().handle(), stream_.handle());
  EXPECT_TRUE(builder.stream().is_nonblocking());
  builder.begin_building(cuwrap::CaptureMode::ThreadLocal);
  launch_over(builder, kernels().add_value, data, kN, 7u);
  builder.end_building();
  Graph graph = builder.complete();
  graph.launch(stream_);
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 14u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, AllocationFillAndCopyInsideGraph) {
  constexpr std::size_t kBytes = 4096 + 24;
  std::uniform_int_distribution<int> byte(1, 255);
  const auto value = static_cast<std::uint8_t>(byte(rng()));
  Buffer out = device_->allocate(kBytes, stream_);
  std::vector<unsigned> noise = random_words(kBytes / sizeof(unsigned));
  write_words(out, noise, stream_);

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  Buffer scratch = device_->allocate(kBytes, builder);  // an allocation node
  scratch.fill(value, builder);                         // a memset node
  out.copy_from(scratch, builder);                      // a memcpy node
  scratch.close(builder);                               // a free node
  Graph graph = builder.end_building().complete();

  for (int launch_count = 0; launch_count < 2; ++launch_count) {
    write_words(out, noise, stream_);
    graph.launch(stream_);
    std::vector<std::byte> host(kBytes);
    out.copy_to(host, stream_);
    stream_.sync();
    for (std::size_t i = 0; i < kBytes; ++i) {
      ASSERT_EQ(static_cast<std::uint8_t>(host[i]), value) << "byte " << i;
    }
  }
}

TEST_F(GraphTest, AllocationLeftToAutoFree) {
  constexpr std::size_t kBytes = 1024;
  Buffer out = device_->allocate(kBytes, stream_);
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  Buffer scratch = device_->allocate(kBytes, builder);
  scratch.fill(std::uint8_t{0x5A}, builder);
  out.copy_from(scratch, builder);
  builder.end_building();
  cuwrap::GraphCompleteOptions options;
  options.auto_free_on_launch = true;
  options.upload_stream = &stream_;
  Graph graph = builder.complete(options);
  for (int i = 0; i < 3; ++i) {  // relaunching needs the automatic free
    graph.launch(stream_);
  }
  std::vector<std::byte> host(kBytes);
  out.copy_to(host, stream_);
  stream_.sync();
  for (std::size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(static_cast<std::uint8_t>(host[i]), 0x5A) << "byte " << i;
  }
  scratch.close(stream_);  // memory from a graph may be freed outside it
  stream_.sync();
}

// ---------------------------------------------------------------------------------
// Fork and join

TEST_F(GraphTest, ForkJoinBranchesWriteDisjointHalves) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 2000;
  constexpr std::size_t kHalf = kN / 2;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  launch_over(builder, kernels().add_one, data, kN);
  std::vector<GraphBuilder> branches = builder.split(2);
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_FALSE(branches[0].is_join_required());
  EXPECT_TRUE(branches[1].is_join_required());
  EXPECT_EQ(branches[0].stream().handle(), builder.stream().handle());  // the original
  EXPECT_NE(branches[1].stream().handle(), builder.stream().handle());
  launch(branches[0], config_for(kHalf), kernels().mix_range, data, 0ull,
         static_cast<unsigned long long>(kHalf), 11u);
  launch(branches[1], config_for(kHalf), kernels().mix_range, data,
         static_cast<unsigned long long>(kHalf), static_cast<unsigned long long>(kN), 13u);
  GraphBuilder joined = GraphBuilder::join(std::move(branches));
  EXPECT_FALSE(joined.is_join_required());
  launch_over(joined, kernels().times_two, data, kN);
  Graph graph = joined.end_building().complete();
  EXPECT_FALSE(builder.is_building());  // the same builder as `joined`

  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (std::size_t i = 0; i < kN; ++i) {
    expected[i] = ((expected[i] + 1u) * 3u + (i < kHalf ? 11u : 13u)) * 2u;
  }
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, SplitMisuse) {
  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_LOGIC_ERROR(builder.split(2), "begin_building");
  builder.begin_building();
  EXPECT_THROW(builder.split(1), std::invalid_argument);
  std::vector<GraphBuilder> branches = builder.split(3);
  EXPECT_LOGIC_ERROR(branches[1].end_building(), "split()");
  EXPECT_LOGIC_ERROR(builder.end_building(), "not joined");
  GraphBuilder joined = GraphBuilder::join(std::move(branches));
  joined.end_building();
  EXPECT_NO_THROW(static_cast<void>(joined.complete()));
}

// ---------------------------------------------------------------------------------
// Conditional nodes

TEST_F(GraphTest, IfNodeRunsBodyOnlyWhenConditionSet) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer flag = device_->allocate(sizeof(unsigned), stream_);
  Buffer counter = device_->allocate(sizeof(unsigned), stream_);
  const unsigned start = random_words(1)[0] % 1000u;
  write_words(counter, {start}, stream_);

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  const CUgraphConditionalHandle handle = builder.create_conditional_handle();
  launch(builder, single_thread(), kernels().set_condition, handle, flag);
  GraphBuilder body = builder.if_cond(handle);
  body.begin_building();
  launch(body, single_thread(), kernels().add_to_counter, counter, 1u);
  body.end_building();
  Graph graph = builder.end_building().complete();

  unsigned expected = start;
  for (const unsigned f : {1u, 0u, 1u, 1u, 0u, 7u}) {
    write_words(flag, {f}, stream_);
    graph.launch(stream_);
    expected += f != 0 ? 1u : 0u;
    ASSERT_EQ(read_word(counter, stream_), expected) << "flag " << f;
  }
}

TEST_F(GraphTest, IfElseRunsExactlyOneBody) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer flag = device_->allocate(sizeof(unsigned), stream_);
  Buffer counter = device_->allocate(sizeof(unsigned), stream_);
  write_words(counter, {0u}, stream_);

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  const CUgraphConditionalHandle handle = builder.create_conditional_handle();
  launch(builder, single_thread(), kernels().set_condition, handle, flag);
  if (cuwrap::driver_version() < 12080) {
    EXPECT_THROW(builder.if_else(handle), cuwrap::UnsupportedError)
        << "if/else nodes need a CUDA 12.8 driver";
    GTEST_SKIP() << "if/else nodes need a CUDA 12.8 driver; this one is "
                 << cuwrap::version_string(cuwrap::driver_version())
                 << " (the refusal was checked)";
  }
  auto [then_body, else_body] = builder.if_else(handle);
  then_body.begin_building();
  launch(then_body, single_thread(), kernels().add_to_counter, counter, 1u);
  then_body.end_building();
  else_body.begin_building();
  launch(else_body, single_thread(), kernels().add_to_counter, counter, 100u);
  else_body.end_building();
  Graph graph = builder.end_building().complete();

  write_words(flag, {1u}, stream_);
  graph.launch(stream_);
  EXPECT_EQ(read_word(counter, stream_), 1u);
  write_words(flag, {0u}, stream_);
  graph.launch(stream_);
  EXPECT_EQ(read_word(counter, stream_), 101u);
}

TEST_F(GraphTest, WhileNodeRunsBodyUntilConditionClears) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counters = device_->allocate(2 * sizeof(unsigned), stream_);
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  // Default 1: the loop is entered at every launch; the body decides whether to go on.
  const CUgraphConditionalHandle handle = builder.create_conditional_handle(1u);
  GraphBuilder body = builder.while_loop(handle);
  body.begin_building();
  launch(body, single_thread(), kernels().count_down, handle, counters);
  body.end_building();
  Graph graph = builder.end_building().complete();

  std::uniform_int_distribution<unsigned> trips(2, 40);
  for (int round = 0; round < 3; ++round) {
    const unsigned n = trips(rng());
    write_words(counters, {n, 0u}, stream_);
    graph.launch(stream_);
    const std::vector<unsigned> result = download_words(counters, stream_);
    EXPECT_EQ(result[0], 0u);
    EXPECT_EQ(result[1], n) << "the body should run " << n << " times";
  }
}

TEST_F(GraphTest, SwitchNodeRunsTheMatchingBody) {
  CUWRAP_REQUIRE_NVRTC();
  if (CUDA_VERSION < 12080 || cuwrap::driver_version() < 12080) {
    // What the toolkit or driver lacks is refused with UnsupportedError, before any node.
    GraphBuilder builder = device_->create_graph_builder();
    builder.begin_building();
    const CUgraphConditionalHandle handle = builder.create_conditional_handle();
    EXPECT_THROW(builder.switch_(handle, 3), cuwrap::UnsupportedError)
        << "switch nodes need CUDA 12.8 headers and driver";
    GTEST_SKIP() << "switch nodes need CUDA 12.8 headers and driver; these are "
                 << cuwrap::version_string(cuwrap::bindings_version()) << " and "
                 << cuwrap::version_string(cuwrap::driver_version())
                 << " (the refusal was checked)";
  }
  Buffer selector = device_->allocate(sizeof(unsigned), stream_);
  Buffer counter = device_->allocate(sizeof(unsigned), stream_);
  write_words(counter, {0u}, stream_);

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  const CUgraphConditionalHandle handle = builder.create_conditional_handle();
  launch(builder, single_thread(), kernels().set_condition, handle, selector);
  std::vector<GraphBuilder> cases = builder.switch_(handle, 3);
  ASSERT_EQ(cases.size(), 3u);
  const std::array<unsigned, 3> adds{1u, 10u, 100u};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].begin_building();
    launch(cases[i], single_thread(), kernels().add_to_counter, counter, adds[i]);
    cases[i].end_building();
  }
  Graph graph = builder.end_building().complete();

  unsigned expected = 0;
  for (const unsigned which : {2u, 0u, 5u, 1u}) {
    write_words(selector, {which}, stream_);
    graph.launch(stream_);
    expected += which < 3 ? adds[which] : 0u;
    ASSERT_EQ(read_word(counter, stream_), expected) << "selector " << which;
  }
}

TEST_F(GraphTest, UnusedConditionalHandleFailsInstantiation) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  static_cast<void>(builder.create_conditional_handle(1u));
  launch(builder, single_thread(), kernels().empty);
  builder.end_building();
  try {
    static_cast<void>(builder.complete());
    ADD_FAILURE() << "a graph with an unused conditional handle was instantiated";
  } catch (const cuwrap::GraphInstantiateError& e) {
#if CUDA_VERSION >= 12080
    EXPECT_EQ(e.result(), CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED"),
              std::string::npos)
        << e.what();
#else
    // Headers older than 12.8 lack the enumerator; the driver's result is still named.
    EXPECT_NE(e.result(), CUDA_GRAPH_INSTANTIATE_SUCCESS) << e.what();
#endif
  }
}

TEST_F(GraphTest, ConditionalsNeedACapture) {
  GraphBuilder builder = device_->create_graph_builder();
  const CUgraphConditionalHandle handle = builder.create_conditional_handle();
  EXPECT_LOGIC_ERROR(builder.if_cond(handle), "begin_building");
  EXPECT_LOGIC_ERROR(builder.while_loop(handle), "begin_building");
  builder.begin_building();
  EXPECT_THROW(builder.switch_(handle, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------
// Update

TEST_F(GraphTest, UpdateChangesKernelArgument) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 512;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  auto build = [&](unsigned value) {
    GraphBuilder builder = device_->create_graph_builder();
    builder.begin_building();
    launch_over(builder, kernels().add_value, data, kN, value);
    builder.end_building();
    return builder;
  };
  GraphBuilder first = build(3u);
  Graph graph = first.complete();
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 3u;
  EXPECT_EQ(download_words(data, stream_), expected);

  GraphBuilder second = build(1000u);
  graph.update(second);
  graph.launch(stream_);
  for (unsigned& x : expected)
    x += 1000u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, UpdateWithChangedTopologyThrowsTheReason) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 256;
  Buffer data = device_->allocate(kN * sizeof(unsigned), stream_);
  GraphBuilder one = device_->create_graph_builder();
  one.begin_building();
  launch_over(one, kernels().add_one, data, kN);
  Graph graph = one.end_building().complete();

  GraphBuilder two = device_->create_graph_builder();
  two.begin_building();
  launch_over(two, kernels().add_one, data, kN);
  launch_over(two, kernels().times_two, data, kN);
  two.end_building();
  try {
    graph.update(two);
    ADD_FAILURE() << "update with another topology did not throw";
  } catch (const cuwrap::GraphUpdateError& e) {
    EXPECT_EQ(e.result(), CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    EXPECT_EQ(e.function(), "cuGraphExecUpdate");
    EXPECT_EQ(e.code(), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_NE(std::string(e.what()).find("CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"),
              std::string::npos)
        << e.what();
  }
  // The graph is unchanged and still launches.
  write_words(data, std::vector<unsigned>(kN, 5u), stream_);
  graph.launch(stream_);
  EXPECT_EQ(download_words(data, stream_), std::vector<unsigned>(kN, 6u));

  GraphBuilder building = device_->create_graph_builder();
  building.begin_building();
  try {
    graph.update(building);
    ADD_FAILURE() << "update with a builder still building did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has not finished building"), std::string::npos)
        << e.what();
  }
}

// A Graph updated in a loop keeps alive what its parameters use now, not every graph it
// was ever updated from: the count of kept objects is the same after 100 updates and
// after 10,000, and the results show each update took effect.
TEST_F(GraphTest, UpdateInALoopKeepsWhatItKeepsFlat) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = device_words({0u});
  auto build = [&](unsigned value) {
    GraphBuilder builder = device_->create_graph_builder();
    builder.launch({}, single_thread(), kernels().add_to_counter, counter, value);
    return builder;
  };
  Graph graph = build(1u).complete();
  constexpr unsigned kUpdates = 10000;
  std::vector<std::size_t> kept;
  unsigned expected = 0;
  for (unsigned i = 1; i <= kUpdates; ++i) {
    graph.update(build(i));  // the builder is closed right after: only the Graph holds it
    if (i % 100 == 0) {
      graph.launch(stream_);
      expected += i;
      stream_.sync();
      kept.push_back(cuwrap::detail::kept_alive_count(graph));
    }
  }
  EXPECT_EQ(read_word(counter, stream_), expected);
  ASSERT_EQ(kept.size(), kUpdates / 100);
  // From the second sample on, one launched generation waits behind each sample's launch.
  EXPECT_EQ(kept[1], kept.back());
  EXPECT_LE(kept.back(), 8U) << "kept objects grow with updates";
  EXPECT_TRUE(
      std::all_of(kept.begin() + 1, kept.end(), [&](std::size_t n) { return n == kept[1]; }));
}

// Setting a kernel node in a loop keeps one kernel per node, not one per call.
TEST_F(GraphTest, SetKernelNodeInALoopKeepsOneKernelPerNode) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = device_words({0u});
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode node = builder.launch({}, single_thread(), kernels().add_to_counter, counter, 1u);
  Graph graph = builder.complete();
  const Kernel* choices[] = {&kernels().add_to_counter, &kernels().add_to_counter};
  graph.set_kernel_node(node, single_thread(), *choices[0], counter, 2u);
  const std::size_t after_one = cuwrap::detail::kept_alive_count(graph);
  for (unsigned i = 0; i < 1000; ++i) {
    graph.set_kernel_node(node, single_thread(), *choices[i % 2], counter, 2u);
  }
  graph.launch(stream_);
  EXPECT_EQ(read_word(counter, stream_), 2u);
  EXPECT_EQ(cuwrap::detail::kept_alive_count(graph), after_one);
}

// Setting a kernel node again to the kernel it runs, between launches, replaces nothing
// the launches before could need: nothing waits to be fenced behind the next launch, so a
// loop of set_kernel_node + launch enqueues no host function (bench_graph's
// BM_SetKernelNode_cuwrap). A kernel of another library does wait.
TEST_F(GraphTest, SetKernelNodeToTheSameKernelBetweenLaunchesRetiresNothing) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = device_words({0u});
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode node = builder.launch({}, single_thread(), kernels().add_to_counter, counter, 1u);
  Graph graph = builder.complete();
  graph.set_kernel_node(node, single_thread(), kernels().add_to_counter, counter, 2u);
  graph.launch(stream_);
  stream_.sync();
  const std::size_t kept = cuwrap::detail::kept_alive_count(graph);
  for (unsigned i = 3; i < 10; ++i) {
    graph.set_kernel_node(node, single_thread(), kernels().add_to_counter, counter, i);
    EXPECT_EQ(cuwrap::detail::kept_alive_count(graph), kept) << "a change retired the kernel";
    graph.launch(stream_);
  }
  EXPECT_EQ(read_word(counter, stream_), 2u + 3u + 4u + 5u + 6u + 7u + 8u + 9u);
}

// What an update replaces is released once no launch can use it: the host function of
// a graph that was updated away from (and whose builder is closed) is destroyed, the
// current one is kept and runs.
TEST_F(GraphTest, UpdateReleasesTheHostFunctionsOfTheReplacedGraph) {
  auto make = [&](const std::shared_ptr<int>& token, std::atomic<int>& calls) {
    GraphBuilder builder = device_->create_graph_builder();
    builder.callback({}, [token, &calls] { calls += *token; });
    return builder;
  };
  std::atomic<int> calls{0};
  auto first = std::make_shared<int>(1);
  auto second = std::make_shared<int>(10);
  auto third = std::make_shared<int>(100);
  const std::weak_ptr<int> second_watch = second;
  const std::weak_ptr<int> third_watch = third;
  Graph graph = make(first, calls).complete();
  first.reset();
  {
    GraphBuilder b = make(second, calls);
    second.reset();
    graph.update(b);
  }
  graph.launch(stream_);  // runs the second graph's function
  stream_.sync();
  EXPECT_EQ(calls.load(), 10);
  EXPECT_FALSE(second_watch.expired()) << "the current graph's function was released";
  {
    GraphBuilder b = make(third, calls);
    third.reset();
    graph.update(b);
  }
  graph.launch(stream_);  // fences the second graph's function behind the launch before
  stream_.sync();
  graph.launch(stream_);  // releases what the fence marked done
  stream_.sync();
  EXPECT_EQ(calls.load(), 210);
  // User objects may be destroyed on a driver thread: wait a little for it.
  for (int i = 0; i < 250 && !second_watch.expired(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(second_watch.expired()) << "the replaced graph's host function is still alive";
  EXPECT_FALSE(third_watch.expired());
}

// ---------------------------------------------------------------------------------
// DOT output

TEST_F(GraphTest, DebugDotPrintNamesEveryNode) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 64;
  Buffer data = device_->allocate(kN * sizeof(unsigned), stream_);
  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_LOGIC_ERROR(builder.debug_dot_print("never.dot"), "built nothing");
  builder.begin_building();
  launch_over(builder, kernels().add_one, data, kN);
  launch_over(builder, kernels().times_two, data, kN);
  EXPECT_LOGIC_ERROR(builder.debug_dot_print("never.dot"), "end_building");
  builder.end_building();

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("cuwrap_graph_" + std::to_string(std::random_device{}()) + ".dot");
  builder.debug_dot_print(path);
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << path;
  std::stringstream text;
  text << file.rdbuf();
  const std::string dot = text.str();
  std::filesystem::remove(path);
  EXPECT_NE(dot.find("digraph"), std::string::npos) << dot;
  EXPECT_NE(dot.find("add_one"), std::string::npos) << dot;
  EXPECT_NE(dot.find("times_two"), std::string::npos) << dot;
}

// ---------------------------------------------------------------------------------
// Explicit nodes

TEST_F(GraphTest, ExplicitNodesRunInDependencyOrder) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 777;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer src = device_->allocate(kN * sizeof(unsigned), stream_);
  Buffer dst = device_->allocate(kN * sizeof(unsigned), stream_);
  write_words(src, initial, stream_);
  write_words(dst, random_words(kN), stream_);

  std::atomic<int> host_calls{0};
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode copy = builder.memcpy({}, dst, src);
  const std::array<GraphNode, 1> after_copy{copy};
  const GraphNode kernel = builder.launch(after_copy, config_for(kN), kernels().add_value, dst,
                                          static_cast<unsigned long long>(kN), 9u);
  const std::array<GraphNode, 1> after_kernel{kernel};
  const GraphNode host = builder.callback(after_kernel, [&host_calls] { ++host_calls; });
  EXPECT_EQ(copy.type(), CU_GRAPH_NODE_TYPE_MEMCPY);
  EXPECT_EQ(kernel.type(), CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_EQ(host.type(), CU_GRAPH_NODE_TYPE_HOST);
  // A memset of the first 16 words, after both, on src (so it does not race the copy).
  const std::array<GraphNode, 2> both{copy, host};
  const GraphNode fill = builder.memset(both, src.handle(), std::uint32_t{0xABCD1234u}, 16);
  EXPECT_EQ(fill.type(), CU_GRAPH_NODE_TYPE_MEMSET);
  EXPECT_EQ(builder.empty(std::array<GraphNode, 1>{fill}).type(), CU_GRAPH_NODE_TYPE_EMPTY);

  Graph graph = builder.complete();
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(host_calls.load(), 1);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 9u;
  EXPECT_EQ(download_words(dst, stream_), expected);
  std::vector<unsigned> expected_src = initial;
  std::fill_n(expected_src.begin(), 16, 0xABCD1234u);
  EXPECT_EQ(download_words(src, stream_), expected_src);

  write_words(src, initial, stream_);
  graph.launch(stream_);
  stream_.sync();
  EXPECT_EQ(host_calls.load(), 2);
}

TEST_F(GraphTest, ExplicitNodesDuringCaptureFollowCapturedWork) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 128;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  std::atomic<int> host_calls{0};

  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  launch_over(builder, kernels().add_one, data, kN);
  builder.callback({}, [&host_calls] { ++host_calls; });
  builder.launch({}, config_for(kN), kernels().times_two, data,
                 static_cast<unsigned long long>(kN));
  launch_over(builder, kernels().add_one, data, kN);
  Graph graph = builder.end_building().complete();
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x = (x + 1u) * 2u + 1u;
  EXPECT_EQ(download_words(data, stream_), expected);
  EXPECT_EQ(host_calls.load(), 1);
}

TEST_F(GraphTest, AddChildRunsACopyOfTheChildGraph) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 333;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);

  GraphBuilder child = device_->create_graph_builder();
  const GraphNode first = child.launch({}, config_for(kN), kernels().times_two, data,
                                       static_cast<unsigned long long>(kN));
  child.launch(std::array<GraphNode, 1>{first}, config_for(kN), kernels().add_value, data,
               static_cast<unsigned long long>(kN), 3u);

  GraphBuilder parent = device_->create_graph_builder();
  parent.begin_building();
  launch_over(parent, kernels().add_one, data, kN);
  const GraphNode node = parent.embed({}, child);
  EXPECT_EQ(node.type(), CU_GRAPH_NODE_TYPE_GRAPH);
  launch_over(parent, kernels().add_one, data, kN);
  Graph graph = parent.end_building().complete();
  child.close();  // the node holds a copy
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x = ((x + 1u) * 2u + 3u) + 1u;
  EXPECT_EQ(download_words(data, stream_), expected);

  GraphBuilder unfinished = device_->create_graph_builder();
  EXPECT_LOGIC_ERROR(parent.embed({}, unfinished), "finished building");
}

TEST_F(GraphTest, AddKernelChecksArguments) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_THROW(builder.launch({}, single_thread(), kernels().add_to_counter, 1u),
               std::invalid_argument);
  Buffer a = device_->allocate(16, stream_);
  Buffer b = device_->allocate(32, stream_);
  EXPECT_THROW(builder.memcpy({}, a, b), std::invalid_argument);
}

// ---------------------------------------------------------------------------------
// Misuse

TEST_F(GraphTest, LaunchIntoBuilderThatHasNotBegunThrows) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = device_->allocate(sizeof(unsigned), stream_);
  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_LOGIC_ERROR(launch(builder, single_thread(), kernels().add_to_counter, counter, 1u),
                     "begin_building");
  builder.begin_building();
  launch(builder, single_thread(), kernels().add_to_counter, counter, 1u);
  builder.end_building();
  EXPECT_LOGIC_ERROR(launch(builder, single_thread(), kernels().add_to_counter, counter, 1u),
                     "ended");
}

TEST_F(GraphTest, StateMisuseThrowsLogicError) {
  CUWRAP_REQUIRE_NVRTC();
  GraphBuilder builder = device_->create_graph_builder();
  EXPECT_LOGIC_ERROR(builder.end_building(), "begin_building");
  EXPECT_LOGIC_ERROR(builder.complete(), "never ended");
  builder.begin_building();
  EXPECT_LOGIC_ERROR(builder.begin_building(), "already building");
  EXPECT_LOGIC_ERROR(builder.complete(), "end_building");
  launch(builder, single_thread(), kernels().empty);
  builder.end_building();
  EXPECT_LOGIC_ERROR(builder.end_building(), "ended");
  EXPECT_LOGIC_ERROR(builder.begin_building(), "ended");
  Graph graph = builder.complete();
  builder.close();
  EXPECT_LOGIC_ERROR(builder.complete(), "closed GraphBuilder");
  graph.launch(stream_);  // the executable graph does not need the builder
  stream_.sync();
  graph.close();
  EXPECT_LOGIC_ERROR(graph.launch(stream_), "Graph::launch on a closed Graph");
}

TEST_F(GraphTest, GlobalCaptureRefusesMemAlloc) {
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building(cuwrap::CaptureMode::Global);
  try {
    const CUdeviceptr p = cuwrap::driver::cuMemAlloc(1024);
    cuwrap::driver::cuMemFree(p);
    ADD_FAILURE() << "cuMemAlloc during a global capture did not throw";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) << e.what();
    EXPECT_EQ(e.function(), "cuMemAlloc");
  }
  try {
    builder.end_building();
    ADD_FAILURE() << "end_building of an invalidated capture did not throw";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << e.what();
    EXPECT_EQ(e.function(), "cuStreamEndCapture");
  }
  EXPECT_FALSE(builder.is_building());
}

TEST_F(GraphTest, SyncDuringCaptureIsRefused) {
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  try {
    builder.stream().sync();
    ADD_FAILURE() << "a stream sync during capture did not throw";
  } catch (const cuwrap::DriverError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) << e.what();
    EXPECT_EQ(e.function(), "cuStreamSynchronize");
  }
  EXPECT_THROW(builder.end_building(), cuwrap::DriverError);
}

TEST_F(GraphTest, DestroyingABuildingBuilderIsSafe) {
  CUWRAP_REQUIRE_NVRTC();
  Buffer counter = device_->allocate(sizeof(unsigned), stream_);
  {
    GraphBuilder builder = stream_.create_graph_builder();
    builder.begin_building();
    launch(builder, single_thread(), kernels().add_to_counter, counter, 1u);
  }  // ends the capture
  {
    GraphBuilder builder = device_->create_graph_builder();
    builder.begin_building();
    std::vector<GraphBuilder> branches = builder.split(2);
    launch(branches[1], single_thread(), kernels().add_to_counter, counter, 1u);
  }  // a branch that was never joined
  // Nothing ran, and the user's stream captures again.
  write_words(counter, {41u}, stream_);
  GraphBuilder next = stream_.create_graph_builder();
  next.begin_building();
  launch(next, single_thread(), kernels().add_to_counter, counter, 1u);
  Graph graph = next.end_building().complete();
  graph.launch(stream_);
  EXPECT_EQ(read_word(counter, stream_), 42u);
}

// ---------------------------------------------------------------------------------
// Chaining, reading nodes back, and changing an instantiated graph in place

TEST(GraphTypes, BeginBuildingReturnsTheBuilder) {
  static_assert(
      std::is_same_v<decltype(std::declval<GraphBuilder&>().begin_building()), GraphBuilder&>);
  static_assert(!std::is_copy_constructible_v<cuwrap::GraphMemoryResource>);
  static_assert(std::is_base_of_v<cuwrap::MemoryResource, cuwrap::GraphMemoryResource>);
  GraphBuilder closed;
  EXPECT_LOGIC_ERROR(closed.nodes(), "GraphBuilder::nodes on a closed GraphBuilder");
  EXPECT_LOGIC_ERROR(closed.last_nodes(), "GraphBuilder::last_nodes on a closed GraphBuilder");
  Graph graph;
  EXPECT_LOGIC_ERROR(graph.set_node_enabled(GraphNode(), true),
                     "Graph::set_node_enabled on a closed Graph");
  EXPECT_LOGIC_ERROR(static_cast<void>(graph.is_node_enabled(GraphNode())),
                     "Graph::is_node_enabled on a closed Graph");
}

TEST_F(GraphTest, ChainedBuildingCapturesAndReplays) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 300;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  GraphBuilder builder = device_->create_graph_builder();
  launch_over(builder.begin_building(), kernels().add_one, data, kN);
  Graph graph = builder.end_building().complete();
  graph.launch(stream_);
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 2u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, NodesAndLastNodesNameTheCapturedWork) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 64;
  Buffer data = device_words(random_words(kN));
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  launch_over(builder, kernels().add_one, data, kN);
  const std::vector<GraphNode> last = builder.last_nodes();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last.front().type(), CU_GRAPH_NODE_TYPE_KERNEL);
  launch_over(builder, kernels().times_two, data, kN);
  EXPECT_NE(builder.last_nodes().front(), last.front());
  builder.end_building();
  const std::vector<GraphNode> all = builder.nodes();
  EXPECT_EQ(all.size(), 2u);
  EXPECT_NE(std::find(all.begin(), all.end(), last.front()), all.end());
  EXPECT_LOGIC_ERROR(builder.last_nodes(), "not building");
}

TEST_F(GraphTest, SetKernelNodeChangesArgumentsWithoutReinstantiating) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 512;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  std::uniform_int_distribution<unsigned> small(1, 1000);
  const unsigned first = small(rng());
  const unsigned second = small(rng());

  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode node = builder.launch({}, config_for(kN), kernels().add_value, data,
                                        static_cast<unsigned long long>(kN), first);
  Graph graph = builder.complete();
  const CUgraphExec exec = graph.handle();
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += first;
  EXPECT_EQ(download_words(data, stream_), expected);

  // New argument, and a configuration that covers only the first 128 words.
  graph.set_kernel_node(node, config_for(128), kernels().add_value, data,
                        static_cast<unsigned long long>(kN), second);
  graph.launch(stream_);
  for (std::size_t i = 0; i < 128; ++i)
    expected[i] += second;
  EXPECT_EQ(download_words(data, stream_), expected);
  EXPECT_EQ(graph.handle(), exec);  // the same executable graph, changed in place

  // Another kernel with other parameters; the builder may be gone by now.
  builder.close();
  graph.set_kernel_node(node, config_for(kN), kernels().times_two, data,
                        static_cast<unsigned long long>(kN));
  graph.launch(stream_);
  for (unsigned& x : expected)
    x *= 2u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, SetKernelNodeOnACapturedLaunch) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 256;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  launch_over(builder, kernels().add_value, data, kN, 5u);
  const GraphNode node = builder.last_nodes().at(0);
  launch_over(builder, kernels().times_two, data, kN);
  Graph graph = builder.end_building().complete();
  graph.set_kernel_node(node, config_for(kN), kernels().add_value, data,
                        static_cast<unsigned long long>(kN), 7u);
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x = (x + 7u) * 2u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, SetKernelNodeRefusesBadInput) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 32;
  Buffer data = device_words(random_words(kN));
  const auto n = static_cast<unsigned long long>(kN);
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode kernel = builder.launch({}, config_for(kN), kernels().add_value, data, n, 1u);
  const GraphNode fill =
      builder.memset(std::array<GraphNode, 1>{kernel}, data.handle(), std::uint8_t{0}, 4);
  Graph graph = builder.complete();

  try {
    graph.set_kernel_node(fill, config_for(kN), kernels().add_value, data, n, 1u);
    ADD_FAILURE() << "set_kernel_node accepted a memset node";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CU_GRAPH_NODE_TYPE_MEMSET"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(graph.set_kernel_node(GraphNode(), config_for(kN), kernels().add_value, data, n, 1u),
               std::invalid_argument);
  // Checked as launch() checks: count, then each argument's size.
  EXPECT_THROW(graph.set_kernel_node(kernel, config_for(kN), kernels().add_value, data, n),
               std::invalid_argument);
  EXPECT_THROW(
      graph.set_kernel_node(kernel, config_for(kN), kernels().add_value, data, n, std::uint64_t{1}),
      std::invalid_argument);
  LaunchConfig zero = config_for(kN);
  zero.block = cuwrap::Dim3(0);
  EXPECT_THROW(graph.set_kernel_node(kernel, zero, kernels().add_value, data, n, 1u),
               std::invalid_argument);
  // Cluster and cooperative launch are fixed when the graph is instantiated.
  LaunchConfig clustered = config_for(kN);
  clustered.grid = cuwrap::Dim3(2);
  clustered.cluster = cuwrap::Dim3(2);
  EXPECT_THROW(graph.set_kernel_node(kernel, clustered, kernels().add_value, data, n, 1u),
               std::invalid_argument);
  LaunchConfig cooperative = config_for(kN);
  cooperative.cooperative_launch = true;
  EXPECT_THROW(graph.set_kernel_node(kernel, cooperative, kernels().add_value, data, n, 1u),
               std::invalid_argument);

  graph.close();
  EXPECT_LOGIC_ERROR(
      graph.set_kernel_node(kernel, config_for(kN), kernels().add_value, data, n, 1u),
      "Graph::set_kernel_node on a closed Graph");
}

TEST_F(GraphTest, DisabledNodeDoesNothingUntilEnabled) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 200;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  const auto n = static_cast<unsigned long long>(kN);
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode doubling = builder.launch({}, config_for(kN), kernels().times_two, data, n);
  builder.launch(std::array<GraphNode, 1>{doubling}, config_for(kN), kernels().add_value, data, n,
                 5u);
  Graph graph = builder.complete();
  EXPECT_TRUE(graph.is_node_enabled(doubling));

  graph.set_node_enabled(doubling, false);
  EXPECT_FALSE(graph.is_node_enabled(doubling));
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 5u;
  EXPECT_EQ(download_words(data, stream_), expected);

  graph.set_node_enabled(doubling, true);
  EXPECT_TRUE(graph.is_node_enabled(doubling));
  graph.launch(stream_);
  for (unsigned& x : expected)
    x = x * 2u + 5u;
  EXPECT_EQ(download_words(data, stream_), expected);
  EXPECT_THROW(graph.set_node_enabled(GraphNode(), true), std::invalid_argument);
}

// ---------------------------------------------------------------------------------
// Event nodes and graph memory

TEST_F(GraphTest, EventRecordNodeRecordsWhenTheGraphRuns) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 400;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  cuwrap::EventOptions timing;
  timing.enable_timing = true;
  const cuwrap::Event done = device_->create_event(timing);
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode kernel = builder.launch({}, config_for(kN), kernels().add_one, data,
                                          static_cast<unsigned long long>(kN));
  const GraphNode record = builder.record_event(std::array<GraphNode, 1>{kernel}, done);
  EXPECT_EQ(record.type(), CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  Graph graph = builder.complete();

  const cuwrap::Event before = stream_.record(timing);
  graph.launch(stream_);
  stream_.sync();
  EXPECT_TRUE(done.is_done());
  // Elapsed time needs both events recorded: a graph that never recorded `done` throws.
  EXPECT_GE(done - before, 0.0f);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x += 1u;
  EXPECT_EQ(download_words(data, stream_), expected);
}

TEST_F(GraphTest, EventWaitNodeWaitsForWorkOutsideTheGraph) {
  CUWRAP_REQUIRE_NVRTC();
  constexpr std::size_t kN = 400;
  const std::vector<unsigned> initial = random_words(kN);
  Buffer data = device_words(initial);
  const cuwrap::Event ready = device_->create_event();
  GraphBuilder builder = device_->create_graph_builder();
  const GraphNode wait = builder.wait_event({}, ready);
  EXPECT_EQ(wait.type(), CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  builder.launch(std::array<GraphNode, 1>{wait}, config_for(kN), kernels().times_two, data,
                 static_cast<unsigned long long>(kN));
  Graph graph = builder.complete();

  const Stream other = device_->create_stream();
  launch(other, config_for(kN), kernels().add_one, data, static_cast<unsigned long long>(kN));
  other.record(ready);
  graph.launch(stream_);
  std::vector<unsigned> expected = initial;
  for (unsigned& x : expected)
    x = (x + 1u) * 2u;
  EXPECT_EQ(download_words(data, stream_), expected);
  other.sync();
}

TEST_F(GraphTest, AllocAndFreeNodesGiveTheGraphScratchMemory) {
  constexpr std::size_t kWords = 1024 + 3;
  constexpr std::size_t kBytes = kWords * sizeof(unsigned);
  std::uniform_int_distribution<unsigned> word;
  const unsigned value = word(rng());
  Buffer out = device_words(random_words(kWords));

  GraphBuilder builder = device_->create_graph_builder();
  const cuwrap::GraphAllocation scratch = builder.alloc({}, kBytes);
  EXPECT_EQ(scratch.node.type(), CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  EXPECT_NE(scratch.address, CUdeviceptr{0});
  EXPECT_EQ(scratch.size, kBytes);
  const GraphNode fill =
      builder.memset(std::array<GraphNode, 1>{scratch.node}, scratch.address, value, kWords);
  const GraphNode copy =
      builder.memcpy(std::array<GraphNode, 1>{fill}, out.handle(), scratch.address, kBytes);
  const GraphNode free_node = builder.free(std::array<GraphNode, 1>{copy}, scratch.address);
  EXPECT_EQ(free_node.type(), CU_GRAPH_NODE_TYPE_MEM_FREE);
  Graph graph = builder.complete();
  for (int round = 0; round < 2; ++round) {
    write_words(out, random_words(kWords), stream_);
    graph.launch(stream_);
    EXPECT_EQ(download_words(out, stream_), std::vector<unsigned>(kWords, value))
        << "round " << round;
  }
  // As cuda.core, the driver decides: it refuses an empty allocation and a null free.
  EXPECT_THROW(builder.alloc({}, 0), cuwrap::DriverError);
  EXPECT_THROW(builder.free({}, 0), cuwrap::DriverError);
}

TEST_F(GraphTest, GraphMemoryResourceAllocatesInsideACapture) {
  constexpr std::size_t kBytes = 8192 + 8;
  std::uniform_int_distribution<int> byte(1, 255);
  const auto value = static_cast<std::uint8_t>(byte(rng()));
  cuwrap::GraphMemoryResource graph_memory(*device_);
  EXPECT_EQ(graph_memory.device_id(), device_->device_id());
  EXPECT_TRUE(graph_memory.is_device_accessible());
  EXPECT_FALSE(graph_memory.is_host_accessible());
  EXPECT_LOGIC_ERROR(static_cast<void>(graph_memory.allocate(kBytes, stream_)), "not capturing");

  Buffer out = device_->allocate(kBytes, stream_);
  GraphBuilder builder = device_->create_graph_builder();
  builder.begin_building();
  Buffer scratch = graph_memory.allocate(kBytes, builder);  // an allocation node
  EXPECT_EQ(scratch.size(), kBytes);
  scratch.fill(value, builder);
  out.copy_from(scratch, builder);
  scratch.close(builder);  // a free node
  Graph graph = builder.end_building().complete();
  graph.launch(stream_);
  std::vector<std::byte> host(kBytes);
  out.copy_to(host, stream_);
  stream_.sync();
  for (std::size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(static_cast<std::uint8_t>(host[i]), value) << "byte " << i;
  }
  // The graph pool reserved the memory for the launch and keeps it until trimmed.
  EXPECT_GE(graph_memory.reserved_mem_current(), kBytes);
  EXPECT_GE(graph_memory.reserved_mem_high(), graph_memory.reserved_mem_current());
  EXPECT_GE(graph_memory.used_mem_high(), graph_memory.used_mem_current());
  graph_memory.reset_high_watermarks();
  graph_memory.trim();
}

}  // namespace
