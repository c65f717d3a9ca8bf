// cuda_core/tests/memory_ipc/test_ipc_concurrent_import.py, ported: four threads of a
// child import one buffer descriptor at once and close their imports; nothing may hang
// (the parent's receive timeout and IPCChildProcess's wait bound it). README.md says how
// this maps.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <atomic>
#include <barrier>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;

using cuwrap::conformance::kNbytes;
constexpr int kThreads = 4;

TEST(TestIpcConcurrentImportChild, ChildMain) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  ASSERT_EQ(shared.buffers.size(), 1U);
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  std::barrier start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      try {
        device.set_current();
        const cuwrap::Stream stream = device.create_stream();
        start.arrive_and_wait();
        Buffer buffer = Buffer::from_ipc_descriptor(mr, shared.buffers[0], stream);
        buffer.close(stream);
        stream.sync();
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  device.sync();
  channel.send_value('D');
}

class TestIpcConcurrentImport : public cuwrap::testing::DeviceStreamTest {};

TEST_F(TestIpcConcurrentImport, TestMain) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  DeviceMemoryResource mr(device(), cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kNbytes, stream());
  stream().sync();
  cuwrap::IPCChildProcess child = start_child("TestIpcConcurrentImportChild.ChildMain");
  child.channel().send(
      cuwrap::IPCSharedBuffers{mr.get_allocation_handle(), {buffer.get_ipc_descriptor()}});
  EXPECT_EQ(child.channel().receive_value<char>(), 'D') << "concurrent importers hung or failed";
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  buffer.close(stream());
  stream().sync();
}

}  // namespace
