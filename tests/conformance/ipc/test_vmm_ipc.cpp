// cuda_core/tests/memory_ipc/test_vmm_ipc.py, ported: VirtualMemoryResource buffers
// shared between processes. cuda.core imports with Buffer.from_ipc_descriptor into a
// VirtualMemoryResource; cuwrap with VirtualMemoryResource::export_buffer and
// import_buffer (a handle owning the file descriptor, and the size). README.md lists
// each Python function and how it maps here.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/virtual_memory_resource.hpp>

#include <gtest/gtest.h>

#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::VirtualMemoryResource;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;

// `size` bytes of `value` at the start of `buffer`, written and waited for.
void fill(Buffer& buffer, std::uint8_t value, const cuwrap::Stream& stream) {
  buffer.fill(value, stream);
  stream.sync();
}

std::vector<std::uint8_t> read(const Buffer& buffer, std::size_t size,
                               const cuwrap::Stream& stream) {
  std::vector<std::uint8_t> bytes(buffer.size());
  buffer.copy_to(bytes, stream);
  stream.sync();
  bytes.resize(size);
  return bytes;
}

// The fixture vmm_ipc_device: a device that exports VMM memory as POSIX fds, or skip.
class TestVmmIpcDescriptor : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (device().attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
      GTEST_SKIP() << "Virtual memory management is not supported on this device";
    }
    if (device().attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) == 0) {
      GTEST_SKIP() << "Sharing virtual memory needs POSIX file descriptor handles";
    }
  }
};

TEST(TestVmmIpcDescriptorChild, ChildMain) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  VirtualMemoryResource mr(device);
  cuwrap::IPCAllocationHandle handle = channel.receive_allocation_handle();
  const auto size = channel.receive_value<std::uint64_t>();
  Buffer imported = mr.import_buffer(std::move(handle), size, stream);
  EXPECT_EQ(imported.size(), size);
  EXPECT_EQ(read(imported, 16, stream), std::vector<std::uint8_t>(16, 0xAB));
  fill(imported, 0x5A, stream);
  imported.close(stream);
  EXPECT_EQ(mr.allocation_count(), 0U) << "closing released the import";
  channel.send_value('D');
}

TEST_F(TestVmmIpcDescriptor, TestDescriptorRoundTrip) {
  VirtualMemoryResource mr(device());  // handle_type PosixFd by default: IPC-enabled
  Buffer buf = mr.allocate(1, stream());
  fill(buf, 0xAB, stream());
  const cuwrap::IPCVirtualBuffer desc = mr.export_buffer(buf);
  EXPECT_EQ(desc.size, buf.size());
  cuwrap::IPCChildProcess child = start_child("TestVmmIpcDescriptorChild.ChildMain");
  child.channel().send(desc.handle);
  child.channel().send_value(desc.size);
  EXPECT_EQ(child.channel().receive_value<char>(), 'D');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  EXPECT_EQ(read(buf, 16, stream()), std::vector<std::uint8_t>(16, 0x5A));
  buf.close(stream());
}

TEST_F(TestVmmIpcDescriptor, TestImportInSameProcessAliasesMemory) {
  VirtualMemoryResource mr(device());
  Buffer buf = mr.allocate(1, stream());
  cuwrap::IPCVirtualBuffer desc = mr.export_buffer(buf);
  Buffer alias = mr.import_buffer(std::move(desc.handle), desc.size, stream());
  EXPECT_NE(alias.handle(), buf.handle());
  fill(buf, 0x33, stream());
  EXPECT_EQ(read(alias, 16, stream()), std::vector<std::uint8_t>(16, 0x33));
  fill(alias, 0x44, stream());
  EXPECT_EQ(read(buf, 16, stream()), std::vector<std::uint8_t>(16, 0x44));
  buf.close(stream());
  EXPECT_EQ(mr.allocation_count(), 1U);
  EXPECT_EQ(read(alias, 16, stream()), std::vector<std::uint8_t>(16, 0x44))
      << "the import keeps the memory alive";
  alias.close(stream());
  EXPECT_EQ(mr.allocation_count(), 0U);
}

TEST_F(TestVmmIpcDescriptor, TestDescriptorOwnsItsFileDescriptors) {
  VirtualMemoryResource mr(device());
  Buffer buf = mr.allocate(1, stream());
  int fd = -1;
  {
    const cuwrap::IPCVirtualBuffer desc = mr.export_buffer(buf);
    fd = desc.handle.handle();
    struct stat info {};
    EXPECT_EQ(::fstat(fd, &info), 0) << "open while the descriptor lives";
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "closed with the descriptor";
  buf.close(stream());
}

TEST_F(TestVmmIpcDescriptor, TestErrors) {
  VirtualMemoryResource shared(device());
  VirtualMemoryResource priv(device(), cuwrap::VirtualMemoryResourceOptions{
                                           .handle_type = cuwrap::VirtualMemoryHandleType::None});
  Buffer buf = priv.allocate(1, stream());
  EXPECT_THROW(static_cast<void>(priv.export_buffer(buf)), std::logic_error);  // not IPC-enabled
  EXPECT_THROW(static_cast<void>(shared.export_buffer(buf)), std::invalid_argument);
  buf.close(stream());
}

}  // namespace
