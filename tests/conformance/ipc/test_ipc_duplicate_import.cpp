// cuda_core/tests/memory_ipc/test_ipc_duplicate_import.py, ported: a child imports one
// buffer descriptor twice and closes both imports without a crash or an error (the
// driver does not count imports of one pointer: nvbug 5570902, which cuda.core works
// around with a cache of imports; cuwrap counts imports the same way, so both imports
// are one handle and the memory lives until the last close). README.md says how this maps.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;

using cuwrap::conformance::kNbytes;

TEST(TestIpcDuplicateImportChild, ChildMain) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  ASSERT_EQ(shared.buffers.size(), 2U);
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  Buffer buffer1 = Buffer::from_ipc_descriptor(mr, shared.buffers[0], stream);
  Buffer buffer2 = Buffer::from_ipc_descriptor(mr, shared.buffers[1], stream);
  EXPECT_EQ(buffer1.size(), kNbytes);
  EXPECT_EQ(buffer2.size(), kNbytes);
  // cuda.core: the second import returns the same handle (its import cache).
  EXPECT_EQ(buffer1.handle(), buffer2.handle());
  // The first close leaves the memory to the second import: still usable.
  EXPECT_NO_THROW(buffer1.close(stream));
  EXPECT_NO_THROW(buffer2.fill(std::uint8_t{0x5A}, stream));
  std::array<std::byte, kNbytes> host{};
  EXPECT_NO_THROW(buffer2.copy_to(std::span<std::byte>(host), stream));
  EXPECT_NO_THROW(stream.sync());
  EXPECT_EQ(host[0], std::byte{0x5A});
  EXPECT_EQ(host[kNbytes - 1], std::byte{0x5A});
  EXPECT_NO_THROW(buffer2.close(stream));
  EXPECT_NO_THROW(device.sync());
  channel.send_value('D');
}

class TestIpcDuplicateImport : public cuwrap::testing::DeviceStreamTest {};

TEST_F(TestIpcDuplicateImport, TestMain) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  DeviceMemoryResource mr(device(), cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kNbytes, stream());
  stream().sync();
  cuwrap::IPCChildProcess child = start_child("TestIpcDuplicateImportChild.ChildMain");
  child.channel().send(cuwrap::IPCSharedBuffers{
      mr.get_allocation_handle(), {buffer.get_ipc_descriptor(), buffer.get_ipc_descriptor()}});
  EXPECT_EQ(child.channel().receive_value<char>(), 'D');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  buffer.close(stream());
  stream().sync();
}

}  // namespace
