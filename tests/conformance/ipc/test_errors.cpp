// cuda_core/tests/memory_ipc/test_errors.py, ported: errors of IPC handles and of
// imports, in this process and in a child (cuda.core's ChildErrorHarness: the parent
// sends, the child imports and reports what it caught). README.md lists each Python
// function and how it maps here.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"
#include "ipc_child.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

using cuwrap::Buffer;
using cuwrap::DeviceMemoryResource;
using cuwrap::DeviceMemoryResourceOptions;
using cuwrap::IPCAllocationHandle;
using cuwrap::conformance::is_child;
using cuwrap::conformance::parent_channel;
using cuwrap::conformance::start_child;
using cuwrap::testing::contains;

using cuwrap::conformance::kNbytes;

// What a child reports: 'N' nothing thrown, 'I' invalid_argument, 'L' logic_error,
// 'D' DriverError, 'O' another exception; then the message.
template <class Call>
void report(cuwrap::IPCChannel& channel, Call&& call) {
  char kind = 'N';
  std::string what;
  try {
    call();
  } catch (const std::invalid_argument& e) {
    kind = 'I';
    what = e.what();
  } catch (const std::logic_error& e) {
    kind = 'L';
    what = e.what();
  } catch (const cuwrap::DriverError& e) {
    kind = 'D';
    what = e.what();
  } catch (const std::exception& e) {
    kind = 'O';
    what = e.what();
  }
  channel.send_value(kind);
  channel.send_value(static_cast<std::uint64_t>(what.size()));
  channel.send_bytes(std::as_bytes(std::span(what)));
}

struct Reported {
  char kind = 0;
  std::string what;
};

Reported receive_report(cuwrap::IPCChannel& channel) {
  Reported reported;
  reported.kind = channel.receive_value<char>();
  const auto size = channel.receive_value<std::uint64_t>();
  EXPECT_LT(size, 1U << 16);
  reported.what.resize(static_cast<std::size_t>(size));
  channel.receive_bytes(std::as_writable_bytes(std::span(reported.what)));
  return reported;
}

bool pools_export_fds(const cuwrap::Device& device) {
  const int types = device.attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  return (types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0;
}

// ---- Without a GPU ---------------------------------------------------------------------

TEST(TestErrors, TestIpcAllocationHandleRejectsNegativeFd) {
  try {
    const IPCAllocationHandle handle(-1, {});
    ADD_FAILURE() << "a handle of fd -1 was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "fd -1")) << e.what();
  }
}

TEST(TestErrors, TestIpcAllocationHandleStateTracksClose) {
  int fds[2] = {-1, -1};
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  IPCAllocationHandle handle(fds[0], {});
  EXPECT_TRUE(handle.is_open());
  handle.close();
  EXPECT_FALSE(handle.is_open());
  EXPECT_THROW(static_cast<void>(handle.handle()), std::logic_error);
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1) << "close() closed the descriptor";
  handle.close();  // idempotent
  ::close(fds[1]);
}

// ---- On a GPU: this process ----------------------------------------------------------

class IpcErrors : public cuwrap::testing::DeviceStreamTest {};

TEST_F(IpcErrors, TestClosedIpcAllocationHandleRejectedBeforeRegistryHit) {
  IPCAllocationHandle handle(::open("/dev/null", O_RDONLY | O_CLOEXEC), {});
  handle.close();
  EXPECT_TRUE(contains(cuwrap::testing::thrown_message<std::invalid_argument>([&] {
                         static_cast<void>(DeviceMemoryResource::from_allocation_handle(
                             device(), std::move(handle)));
                       }),
                       "closed"));
}

// ---- On a GPU: a child imports (ChildErrorHarness) -----------------------------------

// The child of every harness test: import the pool, then run the action `mode` names.
TEST(ChildErrorHarness, Child) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  const char mode = channel.receive_value<char>();
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  report(channel, [&] {
    switch (mode) {
      case 'S': {  // TestImportOversizedBufferDescriptorSize
        cuwrap::IPCBufferDescriptor oversized = shared.buffers.at(0);
        oversized.size = kNbytes * 100;
        static_cast<void>(Buffer::from_ipc_descriptor(mr, oversized, stream));
        break;
      }
      case 'A':  // TestAllocFromImportedMr
        static_cast<void>(mr.allocate(kNbytes, stream));
        break;
      default:
        throw std::runtime_error(std::string("unknown mode ") + mode);
    }
  });
  stream.sync();
  EXPECT_TRUE(channel.is_in_step());
}

class ChildErrorHarnessTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  // Send `mode`, the pool of `mr` and `descriptor` to a child; return what it caught.
  Reported run(char mode, const DeviceMemoryResource& mr,
               const cuwrap::IPCBufferDescriptor& descriptor) {
    cuwrap::IPCChildProcess child = start_child("ChildErrorHarness.Child");
    child.channel().send_value(mode);
    child.channel().send(cuwrap::IPCSharedBuffers{mr.get_allocation_handle(), {descriptor}});
    Reported reported = receive_report(child.channel());
    EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
    return reported;
  }
};

TEST_F(ChildErrorHarnessTest, TestImportOversizedBufferDescriptorSize) {
  if (!pools_export_fds(device())) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kNbytes, stream());
  stream().sync();
  const Reported reported = run('S', mr, buffer.get_ipc_descriptor());
  EXPECT_EQ(reported.kind, 'I') << reported.what;  // cuda.core: ValueError
  EXPECT_TRUE(contains(reported.what, std::to_string(kNbytes * 100))) << reported.what;
  buffer.close(stream());
  stream().sync();
}

TEST_F(ChildErrorHarnessTest, TestAllocFromImportedMr) {
  if (!pools_export_fds(device())) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kNbytes, stream());
  stream().sync();
  const Reported reported = run('A', mr, buffer.get_ipc_descriptor());
  EXPECT_EQ(reported.kind, 'L') << reported.what;  // cuda.core: TypeError
  EXPECT_TRUE(contains(reported.what, "imported from another process")) << reported.what;
  buffer.close(stream());
  stream().sync();
}

TEST_F(ChildErrorHarnessTest, TestImportWrongMr) {
  if (!pools_export_fds(device())) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  DeviceMemoryResource mr2(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr2.allocate(kNbytes, stream());
  stream().sync();
  // The child receives mr's pool and a descriptor of mr2's buffer. cuda.core reaches the
  // driver (CUDA_ERROR_INVALID_VALUE); cuwrap refuses the other pool's id first.
  cuwrap::IPCChildProcess child = start_child("ChildErrorHarness.WrongPoolChild");
  child.channel().send(cuwrap::IPCSharedBuffers{mr.get_allocation_handle(), {}});
  child.channel().send_value(buffer.get_ipc_descriptor());
  const Reported reported = receive_report(child.channel());
  EXPECT_EQ(reported.kind, 'I') << reported.what;
  EXPECT_TRUE(contains(reported.what, "another pool")) << reported.what;
  EXPECT_EQ(child.wait(), 0);
  buffer.close(stream());
  stream().sync();
}

TEST(ChildErrorHarness, WrongPoolChild) {
  if (!is_child()) {
    GTEST_SKIP() << "runs only as a child started by a parent test";
  }
  cuwrap::IPCChannel channel = parent_channel();
  const cuwrap::Device device(0);
  device.set_current();
  const cuwrap::Stream stream = device.create_stream();
  cuwrap::IPCSharedBuffers shared = channel.receive_shared_buffers();
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  const auto descriptor = channel.receive_value<cuwrap::IPCBufferDescriptor>();
  report(channel, [&] { static_cast<void>(Buffer::from_ipc_descriptor(mr, descriptor, stream)); });
  EXPECT_TRUE(channel.is_in_step());
}

}  // namespace
