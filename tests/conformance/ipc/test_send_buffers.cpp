// cuda_core/tests/memory_ipc/test_send_buffers.py, ported in part: buffers of one or
// three IPC-enabled pools sent to one child, which verifies and fills them. cuda.core
// sends the Buffer objects; cuwrap one IPCSharedBuffers message per pool. README.md says
// what is ported.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;

using cuwrap::conformance::kNbytes;
constexpr int kNtasks = 7;

std::vector<std::uint8_t> send_pattern(std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(kNbytes);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(i * 5 + seed * 17 + 3);
  }
  return bytes;
}

using cuwrap::conformance::contents;

TEST(TestIpcSendBuffersChild, ChildMain) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  const auto pools = channel.receive_value<std::uint32_t>();
  ASSERT_LE(pools, 8U);
  for (std::uint32_t p = 0; p < pools; ++p) {
    cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
    DeviceMemoryResource mr =
        DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
    for (const cuwrap::IPCBufferDescriptor& descriptor : shared.buffers) {
      Buffer buffer = Buffer::from_ipc_descriptor(mr, descriptor, stream);
      EXPECT_EQ(contents(buffer, stream), send_pattern(0));
      const std::vector<std::uint8_t> filled = send_pattern(1);
      buffer.copy_from(filled, stream);
      buffer.close(stream);
    }
    stream.sync();
  }
  channel.send_value('D');
}

class TestIpcSendBuffers : public cuwrap::testing::DeviceStreamTest,
                           public ::testing::WithParamInterface<int> {};

TEST_P(TestIpcSendBuffers, TestMain) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  const int nmrs = GetParam();
  std::vector<std::unique_ptr<DeviceMemoryResource>> mrs;
  for (int i = 0; i < nmrs; ++i) {
    mrs.push_back(std::make_unique<DeviceMemoryResource>(
        device(), cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true}));
  }
  std::vector<Buffer> buffers;
  std::vector<std::vector<cuwrap::IPCBufferDescriptor>> by_pool(static_cast<std::size_t>(nmrs));
  for (int task = 0; task < kNtasks; ++task) {
    const auto pool = static_cast<std::size_t>(task % nmrs);
    buffers.push_back(mrs[pool]->allocate(kNbytes, stream()));
    const std::vector<std::uint8_t> bytes = send_pattern(0);
    buffers.back().copy_from(bytes, stream());
    by_pool[pool].push_back(buffers.back().get_ipc_descriptor());
  }
  stream().sync();
  cuwrap::IPCChildProcess child = start_child("TestIpcSendBuffersChild.ChildMain");
  child.channel().send_value(static_cast<std::uint32_t>(nmrs));
  for (std::size_t pool = 0; pool < mrs.size(); ++pool) {
    child.channel().send(
        cuwrap::IPCSharedBuffers{mrs[pool]->get_allocation_handle(), by_pool[pool]});
  }
  EXPECT_EQ(child.channel().receive_value<char>(), 'D');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  for (Buffer& buffer : buffers) {
    EXPECT_EQ(contents(buffer, stream()), send_pattern(1));
    buffer.close(stream());
  }
  stream().sync();
}

INSTANTIATE_TEST_SUITE_P(Nmrs, TestIpcSendBuffers, ::testing::Values(1, 3));

}  // namespace
