// IPC of virtual-memory buffers (cuda.core's test_vmm_ipc.py) and the size checks of
// every import, across two processes: this executable starts itself as the child
// (IPCChildProcess), which imports what the parent exported, refuses the enlarged sizes
// a lying peer would send, then reads one buffer and writes another. GPU only (the
// children skip unless started by the parent).
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/virtual_memory_resource.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::IPCChannel;
using cuwrap::IPCChildProcess;
using cuwrap::kIPCChannelEnvironmentVariable;
using cuwrap::testing::contains;

IPCChildProcess vmm_start_self(const std::string& test) {
  return IPCChildProcess(std::filesystem::read_symlink("/proc/self/exe").string(),
                         {"--gtest_filter=" + test});
}

bool started_by_parent() { return std::getenv(kIPCChannelEnvironmentVariable) != nullptr; }

template <class Call>
std::string invalid_argument_of(Call&& call) {
  return cuwrap::testing::thrown_message<std::invalid_argument>(static_cast<Call&&>(call));
}

using cuwrap::testing::increment;
using cuwrap::testing::incremented;

// ---- The children --------------------------------------------------------------------

// Receives three exports of `input` and one of `output` (each a handle and a size).
TEST(VmmIpcChild, ImportRefuseLiesReadAndWrite) {
  if (!started_by_parent()) {
    GTEST_SKIP() << "runs only as a child started by IPCChildProcess";
  }
  cuwrap::testing::ChildSide child;
  // Named references, not a structured binding: clang 14 cannot capture those in a lambda.
  IPCChannel& channel = child.channel;
  const cuwrap::Device& device = child.device;
  const cuwrap::Stream& stream = child.stream;
  cuwrap::VirtualMemoryResource vmm(device);
  const auto receive = [&] {
    cuwrap::IPCVirtualBuffer shared{channel.receive_allocation_handle(), 0};
    shared.size = channel.receive_value<std::uint64_t>();
    return shared;
  };
  // A peer claiming twice what it shared: the driver will not map it.
  cuwrap::IPCVirtualBuffer lie = receive();
  const std::string doubled = invalid_argument_of(
      [&] { static_cast<void>(vmm.import_buffer(std::move(lie.handle), lie.size * 2, stream)); });
  EXPECT_TRUE(contains(doubled, std::to_string(lie.size * 2))) << doubled;
  EXPECT_EQ(vmm.allocation_count(), 0U) << "the refused import kept its mapping";
  // Not a multiple of the granularity: refused before the driver.
  cuwrap::IPCVirtualBuffer odd = receive();
  EXPECT_TRUE(contains(invalid_argument_of([&] {
                         static_cast<void>(
                             vmm.import_buffer(std::move(odd.handle), odd.size + 1, stream));
                       }),
                       "granularity"));
  EXPECT_FALSE(odd.handle.is_open()) << "the handle is consumed either way";
  cuwrap::IPCVirtualBuffer in = receive();
  cuwrap::IPCVirtualBuffer out = receive();
  Buffer input = vmm.import_buffer(std::move(in.handle), in.size, stream);
  Buffer output = vmm.import_buffer(std::move(out.handle), out.size, stream);
  EXPECT_EQ(input.size(), in.size);
  EXPECT_EQ(vmm.allocation_count(), 2U);
  increment(input, output, stream);
  channel.send_value('W');
  EXPECT_EQ(channel.receive_value<char>(), 'X');  // the parent has read the output
  input.close(stream);
  output.close(stream);
  EXPECT_EQ(vmm.allocation_count(), 0U);
}

// Receives a pool and the descriptor of one 64-byte buffer whose size was enlarged.
TEST(VmmIpcChild, RefuseAnEnlargedPoolDescriptor) {
  if (!started_by_parent()) {
    GTEST_SKIP() << "runs only as a child started by IPCChildProcess";
  }
  cuwrap::testing::ChildSide child;
  // Named references, not a structured binding: clang 14 cannot capture those in a lambda.
  IPCChannel& channel = child.channel;
  const cuwrap::Device& device = child.device;
  const cuwrap::Stream& stream = child.stream;
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  ASSERT_EQ(shared.buffers.size(), 1U);
  cuwrap::DeviceMemoryResource mr =
      cuwrap::DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  cuwrap::IPCBufferDescriptor lie = shared.buffers[0];
  lie.size = 6400;
  const std::string what =
      invalid_argument_of([&] { static_cast<void>(Buffer::from_ipc_descriptor(mr, lie, stream)); });
  EXPECT_TRUE(contains(what, "6400")) << what;
  Buffer honest = Buffer::from_ipc_descriptor(mr, shared.buffers[0], stream);
  EXPECT_EQ(honest.size(), 64U);
  honest.close(stream);
  stream.sync();
  channel.send_value('D');
}

// ---- The parents -----------------------------------------------------------------------

class VmmIpc : public cuwrap::testing::DeviceStreamTest {};

TEST_F(VmmIpc, AnotherProcessImportsReadsAndWritesVirtualMemoryBuffers) {
  if (device().attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0 ||
      device().attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) == 0) {
    GTEST_SKIP() << "device 0 cannot export virtual memory as POSIX file descriptors";
  }
  cuwrap::VirtualMemoryResource vmm(device());  // handle_type PosixFd: made for IPC
  Buffer input = vmm.allocate(vmm.granularity() + 5, stream());
  Buffer output = vmm.allocate(input.size(), stream());
  const auto pattern = cuwrap::testing::random_bytes(input.size(), 29);
  input.copy_from(std::span<const std::byte>(pattern), stream());
  output.fill(std::uint8_t{0}, stream());
  stream().sync();

  IPCChildProcess child = vmm_start_self("VmmIpcChild.ImportRefuseLiesReadAndWrite");
  child.channel().set_receive_timeout(120);
  for (const Buffer* buffer : {&input, &input, &input, &output}) {
    const cuwrap::IPCVirtualBuffer shared = vmm.export_buffer(*buffer);
    EXPECT_EQ(shared.size, buffer->size());
    child.channel().send(shared.handle);
    child.channel().send_value(shared.size);
  }
  ASSERT_EQ(child.channel().receive_value<char>(), 'W');
  EXPECT_EQ(cuwrap::testing::first_difference(cuwrap::testing::read_back(output, stream()),
                                              incremented(pattern)),
            -1);
  child.channel().send_value('X');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
}

TEST_F(VmmIpc, ExportNeedsAResourceMadeForIpcAndAnUngrownBuffer) {
  if (device().attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    GTEST_SKIP() << "device 0 has no virtual memory management";
  }
  cuwrap::VirtualMemoryResource plain(
      device(),
      cuwrap::VirtualMemoryResourceOptions{.handle_type = cuwrap::VirtualMemoryHandleType::None});
  Buffer buffer = plain.allocate(1, stream());
  EXPECT_THROW(static_cast<void>(plain.export_buffer(buffer)), std::logic_error);
  cuwrap::VirtualMemoryResource other(device());
  EXPECT_THROW(static_cast<void>(other.export_buffer(buffer)), std::invalid_argument);
  buffer.close(stream());
  // A grown buffer is several physical allocations: refused, not half exported.
  Buffer grown = other.allocate(1, stream());
  other.modify_allocation(grown, 2 * other.granularity());
  EXPECT_THROW(static_cast<void>(other.export_buffer(grown)), std::logic_error);
  grown.close(stream());
}

TEST_F(VmmIpc, AnEnlargedPoolDescriptorIsRefusedInTheImportingProcess) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  cuwrap::DeviceMemoryResource mr(device(),
                                  cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer small = mr.allocate(64, stream());
  stream().sync();
  IPCChildProcess child = vmm_start_self("VmmIpcChild.RefuseAnEnlargedPoolDescriptor");
  child.channel().set_receive_timeout(120);
  child.channel().send(
      cuwrap::IPCSharedBuffers{mr.get_allocation_handle(), {small.get_ipc_descriptor()}});
  EXPECT_EQ(child.channel().receive_value<char>(), 'D');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  small.close(stream());
  stream().sync();
}

}  // namespace
