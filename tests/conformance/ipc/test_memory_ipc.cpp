// cuda_core/tests/memory_ipc/test_memory_ipc.py, ported: buffers of an IPC-enabled pool
// shared with one or two children, which verify and fill them. cuda.core sends Buffer
// objects or descriptors through multiprocessing queues; cuwrap sends IPCSharedBuffers
// (the pool handle and descriptors as one message) or a handle and descriptors apart.
// README.md lists each Python function and how it maps here.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::DeviceMemoryResourceOptions;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;

using cuwrap::conformance::kNbytes;
constexpr std::uint8_t kNoSeed = 0xFF;

// cuda.core's PatternGen: bytes that depend on the seed.
std::vector<std::uint8_t> pattern(std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(kNbytes);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(i * 7 + seed * 31 + 1);
  }
  return bytes;
}

void fill_buffer(Buffer& buffer, std::uint8_t seed, const cuwrap::Stream& stream) {
  const std::vector<std::uint8_t> bytes = pattern(seed);
  buffer.copy_from(bytes, stream);
  stream.sync();
}

using cuwrap::conformance::contents;

// What a parent asks of a child: how the pool travels, which buffer to check and fill.
struct Task {
  char form = 'S';  // 'S': IPCSharedBuffers; 'H': handle, count, descriptors
  std::uint8_t verify_seed = kNoSeed;
  std::uint8_t fill_seed = 0;
  std::uint32_t index = 0;
};

// The child of every test here.
TEST(MemoryIpcChild, ChildMain) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  const auto task = channel.receive_value<Task>();
  cuwrap::IPCSharedBuffers shared;
  if (task.form == 'S') {
    shared = channel.receive_shared_buffers();
  } else {
    shared.pool = channel.receive_allocation_handle();
    const auto count = channel.receive_value<std::uint32_t>();
    ASSERT_LE(count, 16U);
    for (std::uint32_t i = 0; i < count; ++i) {
      shared.buffers.push_back(channel.receive_value<cuwrap::IPCBufferDescriptor>());
    }
  }
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  std::vector<Buffer> buffers;
  for (const cuwrap::IPCBufferDescriptor& descriptor : shared.buffers) {
    buffers.push_back(Buffer::from_ipc_descriptor(mr, descriptor, stream));
  }
  ASSERT_LT(task.index, buffers.size());
  Buffer& buffer = buffers[task.index];
  EXPECT_TRUE(buffer.is_mapped());
  if (task.verify_seed != kNoSeed) {
    EXPECT_EQ(contents(buffer, stream), pattern(task.verify_seed));
  }
  fill_buffer(buffer, task.fill_seed, stream);
  for (Buffer& b : buffers) {
    b.close(stream);
  }
  stream.sync();
  channel.send_value('D');
}

class IpcMempoolTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
    if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
      GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
    }
  }

  // Start a child and give it `task` and `pool` with `buffers`.
  static cuwrap::IPCChildProcess start(const Task& task, const cuwrap::IPCAllocationHandle& pool,
                                       const std::vector<const Buffer*>& buffers) {
    cuwrap::IPCChildProcess child = start_child("MemoryIpcChild.ChildMain");
    child.channel().send_value(task);
    if (task.form == 'S') {
      cuwrap::IPCSharedBuffers shared{cuwrap::IPCAllocationHandle(), {}};
      for (const Buffer* buffer : buffers) {
        shared.buffers.push_back(buffer->get_ipc_descriptor());
      }
      shared.pool = cuwrap::IPCAllocationHandle(::dup(pool.handle()), pool.pool_id());
      child.channel().send(shared);
    } else {
      child.channel().send(pool);
      child.channel().send_value(static_cast<std::uint32_t>(buffers.size()));
      for (const Buffer* buffer : buffers) {
        child.channel().send_value(buffer->get_ipc_descriptor());
      }
    }
    return child;
  }

  static void finish(cuwrap::IPCChildProcess& child) {
    EXPECT_EQ(child.channel().receive_value<char>(), 'D');
    EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  }
};

class TestIpcMempool : public IpcMempoolTest {};

TEST_F(TestIpcMempool, TestMain) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kNbytes, stream());
  fill_buffer(buffer, 0, stream());
  cuwrap::IPCChildProcess child = start(Task{'S', 0, 1, 0}, mr.get_allocation_handle(), {&buffer});
  finish(child);
  EXPECT_EQ(contents(buffer, stream()), pattern(1));
  buffer.close(stream());
}

class TestIPCMempoolMultiple : public IpcMempoolTest {};

TEST_F(TestIPCMempoolMultiple, TestMain) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer1 = mr.allocate(kNbytes, stream());
  Buffer buffer2 = mr.allocate(kNbytes, stream());
  stream().sync();
  const cuwrap::IPCAllocationHandle handle = mr.get_allocation_handle();
  cuwrap::IPCChildProcess p1 = start(Task{'S', kNoSeed, 1, 0}, handle, {&buffer1, &buffer2});
  cuwrap::IPCChildProcess p2 = start(Task{'S', kNoSeed, 2, 1}, handle, {&buffer1, &buffer2});
  finish(p1);
  finish(p2);
  EXPECT_EQ(contents(buffer1, stream()), pattern(1));
  EXPECT_EQ(contents(buffer2, stream()), pattern(2));
  buffer1.close(stream());
  buffer2.close(stream());
}

class TestIPCSharedAllocationHandleAndBufferDescriptors : public IpcMempoolTest {};

TEST_F(TestIPCSharedAllocationHandleAndBufferDescriptors, TestMain) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  const cuwrap::IPCAllocationHandle alloc_handle = mr.get_allocation_handle();  // one, reused
  Buffer buffer1 = mr.allocate(kNbytes, stream());
  Buffer buffer2 = mr.allocate(kNbytes, stream());
  stream().sync();
  cuwrap::IPCChildProcess p1 = start(Task{'H', kNoSeed, 0, 0}, alloc_handle, {&buffer1});
  cuwrap::IPCChildProcess p2 = start(Task{'H', kNoSeed, 1, 0}, alloc_handle, {&buffer2});
  finish(p1);
  finish(p2);
  EXPECT_EQ(contents(buffer1, stream()), pattern(0));
  EXPECT_EQ(contents(buffer2, stream()), pattern(1));
  buffer1.close(stream());
  buffer2.close(stream());
}

class TestIPCSharedAllocationHandleAndBufferObjects : public IpcMempoolTest {};

TEST_F(TestIPCSharedAllocationHandleAndBufferObjects, TestMain) {
  // cuda.core sends Buffer objects; cuwrap's equivalent is one IPCSharedBuffers message
  // per child, both carrying the one allocation handle.
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  const cuwrap::IPCAllocationHandle alloc_handle = mr.get_allocation_handle();
  Buffer buffer1 = mr.allocate(kNbytes, stream());
  Buffer buffer2 = mr.allocate(kNbytes, stream());
  stream().sync();
  cuwrap::IPCChildProcess p1 = start(Task{'S', kNoSeed, 0, 0}, alloc_handle, {&buffer1});
  cuwrap::IPCChildProcess p2 = start(Task{'S', kNoSeed, 1, 0}, alloc_handle, {&buffer2});
  finish(p1);
  finish(p2);
  EXPECT_EQ(contents(buffer1, stream()), pattern(0));
  EXPECT_EQ(contents(buffer2, stream()), pattern(1));
  buffer1.close(stream());
  buffer2.close(stream());
}

}  // namespace
