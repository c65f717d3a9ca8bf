// Memory shared between processes: pool handles and buffer descriptors, the
// Unix-domain-socket channel that carries them (SCM_RIGHTS, SO_PEERCRED), the errors
// caught before the driver, pool peer access, and two real processes on one GPU: the
// child (this executable again, started with fork + exec) imports the pool and a
// buffer, writes it with a kernel and records an IPC event; the parent waits on the
// event, checks every byte, and keeps using the memory after the child has exited.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "device_fixture.hpp"
#include "gpu.hpp"
#include "test_kernels.hpp"
#include "toolkit_libraries.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for execve

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::DeviceMemoryResource;
using cuwrap::DeviceMemoryResourceOptions;
using cuwrap::IPCAllocationHandle;
using cuwrap::IPCBufferDescriptor;
using cuwrap::IPCChannel;
using cuwrap::IPCListener;
using cuwrap::Stream;

constexpr const char* kIpcChildFdVariable = "CUWRAP_TEST_IPC_CHILD_FD";
constexpr const char* kChildTest = "IpcChildProcess.ImportWriteAndSignal";
constexpr std::size_t kIpcBytes = (1U << 20) + 3;  // not a multiple of anything nice
constexpr unsigned char kInitial = 0x11;
constexpr unsigned char kAdded = 0x22;
constexpr long long kIpcSpinCycles = 20'000'000;  // ~10 ms: the parent must really wait
constexpr char kRecorded = 'R';
constexpr char kParentDone = 'A';

// A pipe whose ends close with it: a real file descriptor to pass around without a GPU.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe2 failed");
    }
    read = fds[0];
    write = fds[1];
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (read >= 0) {
      ::close(read);
    }
    if (write >= 0) {
      ::close(write);
    }
  }
};

// A directory only this user can use, removed at the end of the test.
struct PrivateDirectory {
  std::filesystem::path path;
  PrivateDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cuwrap-ipc-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    path = pattern;
  }
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;
  ~PrivateDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// A child process started here; killed and reaped if the test ends before it exits.
struct ChildProcess {
  pid_t pid = -1;
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
  // Wait for the child; return its exit status (-1 when it did not exit normally).
  int wait() {
    int status = 0;
    const pid_t reaped = ::waitpid(pid, &status, 0);
    pid = -1;
    return reaped > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

// Start this test executable again, running only the child test, with `fd` inherited.
// Everything the child needs is built before fork: between fork and exec only
// async-signal-safe calls are allowed in a process that has threads (CUDA's).
pid_t start_child(int fd) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = std::string("--gtest_filter=") + kChildTest;
  std::string variable = std::string(kIpcChildFdVariable) + "=" + std::to_string(fd);
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()), filter.data(), nullptr};
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, kIpcChildFdVariable, std::strlen(kIpcChildFdVariable)) != 0) {
      envp.push_back(*entry);
    }
  }
  envp.push_back(variable.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  return pid;
}

// The reason IPC pools cannot be tested on `device`, or "" when they can.
std::string ipc_unavailable_reason(const Device& device) {
  const int types = device.attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return "device 0's memory pools cannot export POSIX file descriptors";
  }
  return "";
}

// ---- Without a GPU (but one test): handles and the channel
// ------------------------------------------

TEST(IpcAllocationHandle, OwnsMovesAndClosesItsDescriptor) {
  Pipe pipe;
  const int fd = ::dup(pipe.write);
  ASSERT_GE(fd, 0);
  const cuwrap::IPCPoolId id{1, 2, 3};
  IPCAllocationHandle handle(fd, id);
  EXPECT_TRUE(handle.is_open());
  EXPECT_EQ(handle.handle(), fd);
  EXPECT_EQ(handle.pool_id(), id);
  IPCAllocationHandle moved = std::move(handle);
  EXPECT_FALSE(handle.is_open());  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_THROW(static_cast<void>(handle.handle()), std::logic_error);
  EXPECT_EQ(moved.handle(), fd);
  moved.close();
  moved.close();  // idempotent
  EXPECT_FALSE(moved.is_open());
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "close() must close the file descriptor";
  EXPECT_THROW(IPCAllocationHandle(-1, id), std::invalid_argument);
}

TEST(IpcChannel, CarriesAFileDescriptorAndThePoolId) {
  auto [left, right] = IPCChannel::create_pair();
  Pipe pipe;
  const cuwrap::IPCPoolId id{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
  IPCAllocationHandle sent(::dup(pipe.write), id);
  left.send(sent);
  IPCAllocationHandle received = right.receive_allocation_handle();
  EXPECT_TRUE(sent.is_open()) << "sending keeps the sender's descriptor";
  EXPECT_EQ(received.pool_id(), id);
  EXPECT_NE(received.handle(), sent.handle());
  // The received descriptor is the same pipe: a byte written through it arrives.
  const char byte = 'x';
  ASSERT_EQ(::write(received.handle(), &byte, 1), 1);
  char back = 0;
  ASSERT_EQ(::read(pipe.read, &back, 1), 1);
  EXPECT_EQ(back, 'x');
}

TEST(IpcChannel, CarriesValuesAndReportsAClosedPeer) {
  auto [left, right] = IPCChannel::create_pair();
  IPCBufferDescriptor descriptor;
  descriptor.size = 12345;
  descriptor.payload[0] = 0xAB;
  descriptor.payload[descriptor.payload.size() - 1] = 0xCD;
  descriptor.pool_id[5] = 0x42;
  left.send_value(descriptor);
  const auto back = right.receive_value<IPCBufferDescriptor>();
  EXPECT_EQ(back.size, 12345U);
  EXPECT_EQ(back.payload, descriptor.payload);
  EXPECT_EQ(back.pool_id, descriptor.pool_id);
  left.close();
  EXPECT_THROW(static_cast<void>(right.receive_value<int>()), std::runtime_error);
  EXPECT_THROW(static_cast<void>(right.receive_allocation_handle()), std::runtime_error);
}

TEST(IpcChannel, RefusesAClosedHandleAndAClosedChannel) {
  auto [left, right] = IPCChannel::create_pair();
  const IPCAllocationHandle closed;
  EXPECT_THROW(left.send(closed), std::logic_error);
  left.close();
  EXPECT_THROW(left.send_value(1), std::logic_error);
  EXPECT_THROW(static_cast<void>(left.handle()), std::logic_error);
  EXPECT_THROW(IPCChannel::from_fd(-1), std::invalid_argument);
}

TEST(IpcListener, ConnectsThroughAPrivateSocketFile) {
  const PrivateDirectory directory;
  const std::filesystem::path path = directory.path / "pool.sock";
  IPCListener listener(path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600U) << "only this user may connect";
  IPCChannel client = IPCChannel::connect(path);
  IPCChannel server = listener.accept();
  client.send_value(std::uint32_t{0xC0FFEE});
  EXPECT_EQ(server.receive_value<std::uint32_t>(), 0xC0FFEEU);
  listener.close();
  EXPECT_FALSE(std::filesystem::exists(path)) << "close() removes the socket file";
}

TEST(IpcListener, RefusesADirectoryOthersCanWrite) {
  const PrivateDirectory directory;
  ASSERT_EQ(::chmod(directory.path.c_str(), 0777), 0);
  EXPECT_THROW(IPCListener(directory.path / "pool.sock"), std::invalid_argument);
}

using IpcErrors = cuwrap::testing::DeviceTest;

TEST_F(IpcErrors, ImportingAClosedHandleFailsBeforeTheDriver) {
  IPCAllocationHandle closed;
  try {
    static_cast<void>(DeviceMemoryResource::from_allocation_handle(device(), std::move(closed)));
    FAIL() << "a closed handle must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
}

// ---- On one GPU: export, errors, peer access -----------------------------------------

class IpcTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  void SetUp() override {
    DeviceStreamTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    const std::string reason = ipc_unavailable_reason(device());
    if (!reason.empty()) {
      GTEST_SKIP() << reason;
    }
  }
};

TEST_F(IpcTest, ExportedHandleAndDescriptorNameTheirPool) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  EXPECT_TRUE(mr.is_ipc_enabled());
  EXPECT_FALSE(mr.is_mapped());
  IPCAllocationHandle handle = mr.get_allocation_handle();
  ASSERT_TRUE(handle.is_open());
  EXPECT_GE(::fcntl(handle.handle(), F_GETFD), 0);
  EXPECT_EQ(handle.pool_id(), mr.pool_id());
  EXPECT_NE(mr.pool_id(), cuwrap::IPCPoolId{}) << "an IPC pool has a random id";
  Buffer buffer = mr.allocate(4096, stream());
  const IPCBufferDescriptor descriptor = buffer.get_ipc_descriptor();
  EXPECT_EQ(descriptor.size, 4096U);
  EXPECT_EQ(descriptor.pool_id, mr.pool_id());
  buffer.close(stream());
  stream().sync();
}

// The driver exports a buffer only from a pool already exported
// (cuMemPoolExportPointer: CUDA_ERROR_INVALID_VALUE before then): the resource must not
// make callers export the pool first.
TEST_F(IpcTest, BufferExportsWithoutThePoolExportedFirst) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(256, stream());
  const IPCBufferDescriptor descriptor = buffer.get_ipc_descriptor();
  EXPECT_EQ(descriptor.size, 256U);
  EXPECT_EQ(descriptor.pool_id, mr.pool_id());
  const IPCAllocationHandle handle = mr.get_allocation_handle();
  EXPECT_TRUE(handle.is_open()) << "the pool still exports after its buffers did";
  const Buffer empty = mr.allocate(0, stream());
  EXPECT_THROW(static_cast<void>(empty.get_ipc_descriptor()), std::logic_error);
  buffer.close(stream());
  stream().sync();
}

TEST_F(IpcTest, BufferOfAClosedPoolRefusesToExport) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(64, stream());
  mr.close();
  try {
    static_cast<void>(buffer.get_ipc_descriptor());
    FAIL() << "a buffer of a closed pool must refuse to export";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  buffer.close(stream());  // freeing still works: the driver destroys the pool after it
  stream().sync();
}

TEST_F(IpcTest, DescriptorFromAnotherPoolIsRefusedBeforeTheDriver) {
  DeviceMemoryResource exporter(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  DeviceMemoryResource other(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = exporter.allocate(256, stream());
  const IPCBufferDescriptor descriptor = buffer.get_ipc_descriptor();
  EXPECT_THROW(static_cast<void>(Buffer::from_ipc_descriptor(other, descriptor, stream())),
               std::invalid_argument);
  DeviceMemoryResource plain(device(), DeviceMemoryResourceOptions{.create_pool = true});
  EXPECT_THROW(static_cast<void>(Buffer::from_ipc_descriptor(plain, descriptor, stream())),
               std::logic_error);
  other.close();
  EXPECT_THROW(static_cast<void>(Buffer::from_ipc_descriptor(other, descriptor, stream())),
               std::logic_error);
  buffer.close(stream());
  stream().sync();
}

TEST_F(IpcTest, PoolsWithoutIpcRefuseToExport) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  EXPECT_FALSE(mr.is_ipc_enabled());
  EXPECT_THROW(static_cast<void>(mr.get_allocation_handle()), std::logic_error);
  Buffer buffer = mr.allocate(64, stream());
  EXPECT_THROW(static_cast<void>(buffer.get_ipc_descriptor()), std::logic_error);
  buffer.close(stream());
  stream().sync();
}

TEST_F(IpcTest, PeerAccessOnOneGpuIsEmptyAndOwnerIsIgnored) {
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  EXPECT_TRUE(mr.peer_accessible_by().empty());
  const std::vector<Device> owner_only = {device()};
  mr.set_peer_accessible_by(owner_only);
  EXPECT_TRUE(mr.peer_accessible_by().empty()) << "the owner is never listed as a peer";
}

TEST_F(IpcTest, PeerAccessGrantsAndRevokesOnTwoGpus) {
  if (Device::count() < 2) {
    GTEST_SKIP() << "needs 2 GPUs; this machine has " << Device::count();
  }
  const Device peer(1);
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.create_pool = true});
  const std::vector<Device> both = {peer};
  if (!peer.can_access_peer(device())) {
    EXPECT_THROW(mr.set_peer_accessible_by(both), std::invalid_argument);
    return;
  }
  mr.set_peer_accessible_by(both);
  const std::vector<Device> granted = mr.peer_accessible_by();
  ASSERT_EQ(granted.size(), 1U);
  EXPECT_EQ(granted[0].device_id(), 1);
  mr.set_peer_accessible_by(both);  // idempotent
  EXPECT_EQ(mr.peer_accessible_by().size(), 1U);
  mr.set_peer_accessible_by({});
  EXPECT_TRUE(mr.peer_accessible_by().empty());
}

// ---- Two processes -------------------------------------------------------------------

// The child side: runs only when the parent test started this executable for it.
TEST(IpcChildProcess, ImportWriteAndSignal) {
  const char* fd_text = std::getenv(kIpcChildFdVariable);
  if (fd_text == nullptr) {
    GTEST_SKIP() << "runs only as the child process IpcTest.TwoProcessesShareABuffer starts";
  }
  IPCChannel channel = IPCChannel::from_fd(std::stoi(fd_text));
  channel.set_receive_timeout(120);
  const Device device(0);
  device.set_current();
  const Stream stream = device.create_stream();
  const cuwrap::testing::TestKernels kernels(device);
  DeviceMemoryResource mr =
      DeviceMemoryResource::from_allocation_handle(device, channel.receive_allocation_handle());
  EXPECT_TRUE(mr.is_mapped());
  EXPECT_THROW(static_cast<void>(mr.allocate(16, stream)), std::logic_error);
  const auto descriptor = channel.receive_value<IPCBufferDescriptor>();
  Buffer buffer = Buffer::from_ipc_descriptor(mr, descriptor, stream);
  ASSERT_EQ(buffer.size(), kIpcBytes);
  EXPECT_TRUE(buffer.is_mapped());  // imported from the other process
  kernels.spin_then_add(stream, buffer.handle(), buffer.size(), kIpcSpinCycles, kAdded);
  const cuwrap::Event written = device.create_event({.ipc_enabled = true});
  stream.record(written);
  channel.send_value(written.get_ipc_descriptor());
  channel.send_value(kRecorded);
  // Keep the event and the import alive until the parent has waited on them.
  EXPECT_EQ(channel.receive_value<char>(), kParentDone);
  buffer.close(stream);  // importers free before the exporter does
  stream.sync();
}

TEST_F(IpcTest, TwoProcessesShareABuffer) {
  CUWRAP_REQUIRE_NVRTC();
  DeviceMemoryResource mr(device(), DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer buffer = mr.allocate(kIpcBytes, stream());
  EXPECT_FALSE(buffer.is_mapped());  // the exporter's own allocation
  buffer.fill(kInitial, stream());
  stream().sync();  // the child's kernel must see the initial bytes

  auto [mine, theirs] = IPCChannel::create_pair();
  mine.set_receive_timeout(120);
  theirs.inherit_across_exec();
  ChildProcess child;
  child.pid = start_child(theirs.handle());
  theirs.close();  // so that a child that dies shows up as a closed connection

  mine.send(mr.get_allocation_handle());
  mine.send_value(buffer.get_ipc_descriptor());
  const auto event_descriptor = mine.receive_value<cuwrap::IPCEventDescriptor>();
  ASSERT_EQ(mine.receive_value<char>(), kRecorded);
  {
    const cuwrap::Event written = cuwrap::Event::from_ipc_descriptor(event_descriptor, device());
    stream().wait(written);
    const std::vector<std::byte> seen = cuwrap::testing::read_back(buffer, stream());
    const std::vector<std::byte> expected(kIpcBytes, std::byte{kInitial + kAdded});
    EXPECT_EQ(cuwrap::testing::first_difference(seen, expected), -1)
        << "the parent must see every byte the child's kernel wrote, after its event";
  }
  mine.send_value(kParentDone);
  EXPECT_EQ(child.wait(), 0) << "the child process failed (its output is above)";

  // The child has exited: the exporter's memory is still valid and usable.
  buffer.fill(std::uint8_t{0x5A}, stream());
  const std::vector<std::byte> after = cuwrap::testing::read_back(buffer, stream());
  EXPECT_EQ(
      cuwrap::testing::first_difference(after, std::vector<std::byte>(kIpcBytes, std::byte{0x5A})),
      -1);
  buffer.close(stream());
  stream().sync();
  EXPECT_EQ(mr.attributes().used_mem_current(), 0U) << "nothing of the pool stays in use";
}

}  // namespace
