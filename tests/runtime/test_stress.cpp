// Concurrency stress (GPU): 16 threads share one Device, one Kernel, memory resources
// and one instantiated Graph; each allocates, copies, launches, replays the graph and
// synchronises for a bounded number of iterations, and checks every result.
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"
#include "toolkit_libraries.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Stream;

constexpr int kThreads = 16;
constexpr int kIterations = 24;
constexpr std::size_t kWords = 2048;

constexpr const char* kStressSource =
    "extern \"C\" __global__ void add(unsigned* v, unsigned long long n, unsigned x) {\n"
    "  unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;\n"
    "  if (i < n) v[i] += x;\n"
    "}\n"
    "extern \"C\" __global__ void count(unsigned long long* counter) { atomicAdd(counter, 1ull); "
    "}\n";

cuwrap::LaunchConfig stress_config_for(std::size_t n) {
  cuwrap::LaunchConfig config;
  config.grid = cuwrap::Dim3(static_cast<unsigned>((n + 255) / 256));
  config.block = cuwrap::Dim3(256);
  return config;
}

class StressTest : public cuwrap::testing::DeviceTest {};

TEST_F(StressTest, SixteenThreadsShareDeviceKernelResourcesAndGraph) {
  CUWRAP_REQUIRE_NVRTC();
  if (IsSkipped()) {
    return;
  }
  const cuwrap::Device dev = device();
  cuwrap::Program program(kStressSource, cuwrap::CodeType::Cxx);
  const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
  const cuwrap::Kernel add = code.get_kernel("add");
  const cuwrap::Kernel count = code.get_kernel("count");

  cuwrap::DeviceMemoryResource pool(dev);
  cuwrap::PinnedMemoryResource pinned;
  cuwrap::MemoryResource& device_default = dev.memory_resource();

  // The shared graph: one atomic increment of `counter` per replay.
  const Stream setup = dev.create_stream();
  Buffer counter = dev.allocate(sizeof(unsigned long long), setup);
  counter.fill(std::uint8_t{0}, setup);
  cuwrap::GraphBuilder builder = dev.create_graph_builder();
  builder.begin_building();
  cuwrap::LaunchConfig
      one_thread;  // one increment per replay (stress_config_for(1) runs 256 threads)
  one_thread.grid = cuwrap::Dim3(1);
  one_thread.block = cuwrap::Dim3(1);
  cuwrap::launch(builder, one_thread, count, counter);
  cuwrap::Graph graph = builder.end_building().complete();
  setup.sync();
  // CUDA does not synchronise host threads using one executable graph (its launches are
  // ordered on the device, but the calls must not overlap): the test serialises them.
  std::mutex graph_mutex;

  std::atomic<int> failures{0};
  std::atomic<int> iterations_done{0};
  std::vector<std::string> messages(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        dev.set_current();
        const Stream stream = dev.create_stream();
        std::mt19937 rng(static_cast<unsigned>(1000 + t));
        for (int i = 0; i < kIterations; ++i) {
          cuwrap::MemoryResource& mr =
              i % 2 == 0 ? static_cast<cuwrap::MemoryResource&>(pool) : device_default;
          std::vector<unsigned> host(kWords);
          for (auto& v : host) {
            v = static_cast<unsigned>(rng() % 1000000u);
          }
          Buffer data = mr.allocate(kWords * sizeof(unsigned), stream);
          Buffer staging = pinned.allocate(kWords * sizeof(unsigned), stream);
          data.copy_from(std::as_bytes(std::span(host)), stream);
          const auto x = static_cast<unsigned>(t * 100 + i);
          cuwrap::launch(stream, stress_config_for(kWords), add, data,
                         static_cast<unsigned long long>(kWords), x);
          {
            const std::lock_guard<std::mutex> lock(graph_mutex);
            graph.launch(stream);
          }
          data.copy_to(staging, stream);
          std::vector<unsigned> back(kWords);
          staging.copy_to(std::as_writable_bytes(std::span(back)), stream);
          stream.sync();
          for (std::size_t k = 0; k < kWords; ++k) {
            if (back[k] != host[k] + x) {
              messages[static_cast<std::size_t>(t)] =
                  "thread " + std::to_string(t) + " iteration " + std::to_string(i) + " word " +
                  std::to_string(k) + ": " + std::to_string(back[k]) +
                  " != " + std::to_string(host[k] + x);
              ++failures;
              return;
            }
          }
          ++iterations_done;
        }
      } catch (const std::exception& e) {
        messages[static_cast<std::size_t>(t)] = "thread " + std::to_string(t) + ": " + e.what();
        ++failures;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (const auto& message : messages) {
    EXPECT_TRUE(message.empty()) << message;
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(iterations_done.load(), kThreads * kIterations);

  std::vector<unsigned long long> replays(1);
  counter.copy_to(std::as_writable_bytes(std::span(replays)), setup);
  setup.sync();
  EXPECT_EQ(replays[0], static_cast<unsigned long long>(kThreads * kIterations))
      << "every replay of the shared graph ran once";
  std::cout << "stress: " << kThreads << " threads x " << kIterations << " iterations, "
            << iterations_done.load() << " checked\n";
}

}  // namespace
