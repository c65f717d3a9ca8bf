// Buffers on a GPU: every built-in resource's buffers outlive the resource object and
// still free correctly; parts of a buffer (slice) copy and fill only their range;
// allocate without a stream; chains on a temporary GraphBuilder; peers by list; the
// pinned pool's NUMA node; the graph memory resource's attributes() and close().
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "release_failures.hpp"

#include "device_fixture.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Stream;

using cuwrap::testing::ReleaseFailures;

using BufferTest = cuwrap::testing::DeviceStreamTest;

// Allocate from a resource that is destroyed when this returns.
template <class Resource, class... Args>
Buffer from_local_resource(std::size_t size, const Stream& stream, Args&&... args) {
  Resource local(std::forward<Args>(args)...);
  return local.allocate(size, stream);
}

// Write a byte pattern into `buffer`, read it back, and close it: the buffer works and
// frees without a release failure although its resource is gone.
void expect_usable_and_freed(Buffer buffer, const Stream& stream) {
  const ReleaseFailures failures;
  ASSERT_TRUE(buffer.is_open());
  EXPECT_EQ(buffer.memory_resource(), nullptr);
  std::vector<std::byte> in(buffer.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::byte>(i * 7 + 1);
  }
  std::vector<std::byte> out(buffer.size());
  buffer.copy_from(std::span<const std::byte>(in), stream);
  buffer.copy_to(std::span<std::byte>(out), stream);
  stream.sync();
  EXPECT_EQ(in, out);
  buffer.close();
  stream.sync();
  EXPECT_TRUE(failures.reports.empty());
}

constexpr std::size_t kBytes = 4096;

TEST_F(BufferTest, DeviceResourceBufferOutlivesIt) {
  expect_usable_and_freed(
      from_local_resource<cuwrap::DeviceMemoryResource>(
          kBytes, stream(), device(), cuwrap::DeviceMemoryResourceOptions{.create_pool = true}),
      stream());
  expect_usable_and_freed(
      from_local_resource<cuwrap::DeviceMemoryResource>(kBytes, stream(), device()), stream());
}

TEST_F(BufferTest, PinnedResourceBufferOutlivesIt) {
  expect_usable_and_freed(from_local_resource<cuwrap::PinnedMemoryResource>(kBytes, stream()),
                          stream());
}

TEST_F(BufferTest, LegacyPinnedResourceBufferOutlivesIt) {
  expect_usable_and_freed(from_local_resource<cuwrap::LegacyPinnedMemoryResource>(kBytes, stream()),
                          stream());
}

TEST_F(BufferTest, ManagedResourceBufferOutlivesIt) {
  expect_usable_and_freed(from_local_resource<cuwrap::ManagedMemoryResource>(kBytes, stream()),
                          stream());
}

TEST_F(BufferTest, VirtualResourceBufferOutlivesItWithNothingLeftToFree) {
  // The resource's destructor releases its allocations: the buffer closes quietly.
  const ReleaseFailures failures;
  Buffer buffer = from_local_resource<cuwrap::VirtualMemoryResource>(kBytes, stream(), device());
  EXPECT_EQ(buffer.memory_resource(), nullptr);
  buffer.close();
  EXPECT_TRUE(failures.reports.empty());
}

TEST_F(BufferTest, GraphResourceBufferOutlivesIt) {
  const ReleaseFailures failures;
  Buffer out = device().allocate(kBytes, stream());
  cuwrap::GraphBuilder builder = device().create_graph_builder().begin_building();  // by value
  Buffer scratch;
  {
    cuwrap::GraphMemoryResource graph_memory(device());
    scratch = graph_memory.allocate(kBytes, builder);
  }
  scratch.fill(0x5A, 1, builder);
  out.copy_from(scratch, builder);
  scratch.close(builder);  // a free node, without the resource object
  cuwrap::Graph graph = builder.end_building().complete();
  graph.launch(stream());
  std::vector<std::byte> back(kBytes);
  out.copy_to(std::span<std::byte>(back), stream());
  stream().sync();
  EXPECT_EQ(back, std::vector<std::byte>(kBytes, std::byte{0x5A}));
  EXPECT_TRUE(failures.reports.empty());
}

TEST_F(BufferTest, TemporaryBuilderChainsBuildAGraph) {
  Buffer data = device().allocate(64, stream());
  data.fill(std::uint8_t{0}, stream());
  cuwrap::GraphBuilder builder = device().create_graph_builder().begin_building();
  data.fill(0xABCD, 2, builder);
  cuwrap::Graph graph = std::move(builder).end_building().complete();
  graph.launch(stream());
  std::vector<std::uint16_t> back(32);
  data.copy_to(back, stream());
  stream().sync();
  EXPECT_EQ(back, std::vector<std::uint16_t>(32, 0xABCD));
}

// ---- part of a buffer --------------------------------------------------------------------

TEST_F(BufferTest, SliceReadsOneValueOfMany) {
  constexpr std::size_t kCount = 33;  // 264 bytes of doubles
  std::vector<double> values(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    values[i] = 1.5 * static_cast<double>(i) - 7.0;
  }
  Buffer buffer = device().allocate(kCount * sizeof(double), stream());
  buffer.copy_from(values, stream());
  std::array<double, 1> one{};
  buffer.slice(17 * sizeof(double), sizeof(double)).copy_to(one, stream());
  stream().sync();
  EXPECT_EQ(one[0], values[17]);
  // Write one value back through a part; the others stay.
  const std::array<double, 1> replacement{42.25};
  buffer.slice(3 * sizeof(double), sizeof(double)).copy_from(replacement, stream());
  std::vector<double> back(kCount);
  buffer.copy_to(back, stream());
  stream().sync();
  values[3] = 42.25;
  EXPECT_EQ(back, values);
}

TEST_F(BufferTest, SliceFillsAndCopiesOnlyTheirRange) {
  Buffer a = device().allocate(64, stream());
  Buffer b = device().allocate(64, stream());
  a.fill(std::uint8_t{0x11}, stream());
  b.fill(std::uint8_t{0x22}, stream());
  a.slice(8, 16).fill(0xDEADBEEF, 4, stream());
  a.slice(8, 8).copy_to(b.slice(40, 8), stream());  // device to device, a part of each
  std::vector<std::uint8_t> back_a(64);
  std::vector<std::uint8_t> back_b(64);
  a.copy_to(back_a, stream());
  b.copy_to(back_b, stream());
  stream().sync();
  std::vector<std::uint8_t> want_a(64, 0x11);
  const std::uint32_t word = 0xDEADBEEF;
  for (std::size_t i = 8; i < 24; i += 4) {
    std::memcpy(&want_a[i], &word, 4);
  }
  EXPECT_EQ(back_a, want_a);
  std::vector<std::uint8_t> want_b(64, 0x22);
  std::memcpy(&want_b[40], &want_a[8], 8);
  EXPECT_EQ(back_b, want_b);
}

TEST_F(BufferTest, SliceOfHostMemoryGivesAHostSpanOfThePart) {
  cuwrap::PinnedMemoryResource pinned;
  Buffer buffer = pinned.allocate(32, stream());
  stream().sync();
  const std::span<std::byte> part = buffer.slice(4, 8).host_span();
  EXPECT_EQ(part.data(), buffer.host_span().data() + 4);
  EXPECT_EQ(part.size(), 8u);
}

// ---- allocate without a stream ---------------------------------------------------------------

TEST_F(BufferTest, AllocateWithoutAStreamUsesTheDefaultStream) {
  Buffer from_device = device().allocate(256);
  from_device.fill(std::uint32_t{7}, stream());
  std::vector<std::uint32_t> back(64);
  from_device.copy_to(back, stream());
  stream().sync();
  EXPECT_EQ(back, std::vector<std::uint32_t>(64, 7u));
  cuwrap::ManagedMemoryResource managed;
  Buffer from_resource = managed.allocate(16);
  EXPECT_EQ(from_resource.size(), 16u);
  EXPECT_TRUE(from_resource.is_host_accessible());
}

// ---- peers by list -----------------------------------------------------------------------------

TEST_F(BufferTest, PeersByListCheckOrdinalsAndPrint) {
  cuwrap::DeviceMemoryResource mr(device(),
                                  cuwrap::DeviceMemoryResourceOptions{.create_pool = true});
  const int count = cuwrap::Device::count();
  auto message = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no std::invalid_argument)");
  };
  std::string what = message([&] { mr.set_peer_accessible_by({-1}); });
  EXPECT_NE(what.find("device -1 does not exist"), std::string::npos) << what;
  what = message([&] { mr.set_peer_accessible_by({count}); });
  EXPECT_NE(what.find("device " + std::to_string(count) + " does not exist"), std::string::npos)
      << what;
  mr.set_peer_accessible_by({device()});  // the owner only: no peers
  mr.set_peer_accessible_by({0});
  std::ostringstream printed;
  printed << mr.peer_accessible_by();
  EXPECT_EQ(printed.str(), "[]");
  if (count >= 2 && cuwrap::Device(1).can_access_peer(device())) {
    mr.set_peer_accessible_by({1});
    std::ostringstream one;
    one << mr.peer_accessible_by();
    EXPECT_EQ(one.str().rfind("[<Device 1 (", 0), 0u) << one.str();
    mr.set_peer_accessible_by({});
    EXPECT_TRUE(mr.peer_accessible_by().empty());
  }
}

// ---- small asymmetries -------------------------------------------------------------------------

TEST_F(BufferTest, PinnedNumaId) {
  const cuwrap::PinnedMemoryResource plain;
  EXPECT_EQ(plain.numa_id(), -1);
  try {
    const cuwrap::PinnedMemoryResource on_node(cuwrap::PinnedMemoryResourceOptions{.numa_id = 0});
    EXPECT_EQ(on_node.numa_id(), 0);
  } catch (const cuwrap::DriverError& e) {
    GTEST_SKIP() << "no host NUMA memory pools here: " << e.what();
  }
}

TEST_F(BufferTest, GraphMemoryResourceAttributesAndClose) {
  cuwrap::GraphMemoryResource graph_memory(device());
  const cuwrap::GraphMemoryAttributes attributes = graph_memory.attributes();
  EXPECT_EQ(attributes.used_mem_current(), graph_memory.used_mem_current());
  EXPECT_EQ(attributes.reserved_mem_current(), graph_memory.reserved_mem_current());
  attributes.reset_used_mem_high();
  EXPECT_EQ(attributes.used_mem_high(), graph_memory.used_mem_high());
  EXPECT_TRUE(graph_memory.is_open());
  graph_memory.close();
  EXPECT_FALSE(graph_memory.is_open());
  cuwrap::GraphBuilder builder = device().create_graph_builder().begin_building();
  EXPECT_THROW(static_cast<void>(graph_memory.allocate(64, builder)), std::logic_error);
  static_cast<void>(std::move(builder).end_building());
}

TEST_F(BufferTest, PoolBuffersAreNotMapped) {
  Buffer buffer = device().allocate(64, stream());
  EXPECT_FALSE(buffer.is_mapped());
}

}  // namespace
