// IPCChildProcess, IPCChannel::from_parent and IPCSharedBuffers: a pool handle and its
// buffer descriptors travel as one message (checked on both sides); a child started by
// IPCChildProcess (this executable again) finds its channel, answers, and exits with a
// status wait() returns; bad programs, exec failures and children that do not exit are
// handled. On a GPU, a child imports two buffers of an IPC pool, reads one and writes
// the other, and the parent checks the bytes.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "checks.hpp"
#include "device_fixture.hpp"
#include "gpu.hpp"
#include "ipc_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cuwrap::Buffer;
using cuwrap::IPCAllocationHandle;
using cuwrap::IPCBufferDescriptor;
using cuwrap::IPCChannel;
using cuwrap::IPCChildProcess;
using cuwrap::IPCSharedBuffers;
using cuwrap::kIPCChannelEnvironmentVariable;
using cuwrap::testing::contains;

std::string self() { return fs::read_symlink("/proc/self/exe").string(); }

// This executable again, running only `test`.
IPCChildProcess start_self(const std::string& test) {
  return IPCChildProcess(self(), {"--gtest_filter=" + test});
}

// A pool handle over some open descriptor (no GPU needed to carry one).
IPCAllocationHandle some_handle(const cuwrap::IPCPoolId& id) {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return IPCAllocationHandle(fd, id);
}

IPCBufferDescriptor descriptor_of(const cuwrap::IPCPoolId& id, std::uint64_t size,
                                  unsigned char fill) {
  IPCBufferDescriptor d;
  d.payload.fill(fill);
  d.size = size;
  d.pool_id = id;
  return d;
}

// Set (or unset, for nullopt) the channel variable for one scope.
class ChannelVariable {
 public:
  explicit ChannelVariable(const std::optional<std::string>& value) {
    if (const char* old = std::getenv(kIPCChannelEnvironmentVariable)) {
      old_ = old;
    }
    if (value) {
      ::setenv(kIPCChannelEnvironmentVariable, value->c_str(), 1);
    } else {
      ::unsetenv(kIPCChannelEnvironmentVariable);
    }
  }
  ChannelVariable(const ChannelVariable&) = delete;
  ChannelVariable& operator=(const ChannelVariable&) = delete;
  ~ChannelVariable() {
    if (old_) {
      ::setenv(kIPCChannelEnvironmentVariable, old_->c_str(), 1);
    } else {
      ::unsetenv(kIPCChannelEnvironmentVariable);
    }
  }

 private:
  std::optional<std::string> old_;
};

template <class Call>
std::string error_of(Call&& call) {
  return cuwrap::testing::thrown_message<std::exception>(static_cast<Call&&>(call));
}

TEST(IpcSharedBuffers, TravelAsOneMessage) {
  // References, not a structured binding: clang 14 cannot capture those in a lambda.
  std::array<IPCChannel, 2> channels = IPCChannel::create_pair();
  IPCChannel& left = channels[0];
  IPCChannel& right = channels[1];
  const cuwrap::IPCPoolId id = cuwrap::detail::new_pool_id();
  IPCSharedBuffers shared{some_handle(id), {descriptor_of(id, 100, 1), descriptor_of(id, 7, 2)}};
  left.send(shared);
  EXPECT_TRUE(shared.pool.is_open()) << "sending keeps the sender's handle";
  const IPCSharedBuffers received = right.receive_shared_buffers();
  ASSERT_TRUE(received.pool.is_open());
  EXPECT_NE(received.pool.handle(), shared.pool.handle()) << "the receiver has its own descriptor";
  EXPECT_EQ(received.pool.pool_id(), id);
  ASSERT_EQ(received.buffers.size(), 2U);
  EXPECT_EQ(received.buffers[0].size, 100U);
  EXPECT_EQ(received.buffers[1].size, 7U);
  EXPECT_EQ(received.buffers[1].payload, shared.buffers[1].payload);
  // No buffers at all is a message too.
  left.send(IPCSharedBuffers{some_handle(id), {}});
  EXPECT_TRUE(right.receive_shared_buffers().buffers.empty());
}

TEST(IpcSharedBuffers, ADescriptorOfAnotherPoolIsRefusedBeforeSending) {
  // References, not a structured binding: clang 14 cannot capture those in a lambda.
  std::array<IPCChannel, 2> channels = IPCChannel::create_pair();
  IPCChannel& left = channels[0];
  IPCChannel& right = channels[1];
  const cuwrap::IPCPoolId id = cuwrap::detail::new_pool_id();
  const IPCSharedBuffers mixed{
      some_handle(id),
      {descriptor_of(id, 1, 0), descriptor_of(cuwrap::detail::new_pool_id(), 1, 0)}};
  EXPECT_TRUE(contains(error_of([&] { left.send(mixed); }),
                       "buffers[1] describes a buffer of another pool"));
  EXPECT_THROW(left.send(IPCSharedBuffers{}), std::logic_error);  // closed pool handle
  // Nothing went: the next thing the peer reads is what is sent next.
  left.send_value(std::uint32_t{0xC0FFEE});
  EXPECT_EQ(right.receive_value<std::uint32_t>(), 0xC0FFEEU);
}

TEST(IpcSharedBuffers, AMessageOfAnotherKindIsRefusedByTheReceiver) {
  // References, not a structured binding: clang 14 cannot capture those in a lambda.
  std::array<IPCChannel, 2> channels = IPCChannel::create_pair();
  IPCChannel& left = channels[0];
  IPCChannel& right = channels[1];
  const cuwrap::IPCPoolId id = cuwrap::detail::new_pool_id();
  left.send(some_handle(id));
  EXPECT_TRUE(contains(error_of([&] { static_cast<void>(right.receive_shared_buffers()); }),
                       "received an allocation handle"));
  // The refused message was read to its end: the channel is still in step.
  EXPECT_TRUE(right.is_in_step());
  left.send_value(std::uint32_t{0xC0FFEE});
  EXPECT_EQ(right.receive_value<std::uint32_t>(), 0xC0FFEEU);
}

TEST(IpcChannelFromParent, SaysWhatIsWrongWithTheVariable) {
  {
    const ChannelVariable unset(std::nullopt);
    EXPECT_TRUE(contains(error_of([] { static_cast<void>(IPCChannel::from_parent()); }),
                         "CUWRAP_IPC_CHANNEL_FD is not set"));
  }
  {
    const ChannelVariable garbage(std::string("12x"));
    EXPECT_TRUE(contains(error_of([] { static_cast<void>(IPCChannel::from_parent()); }),
                         "CUWRAP_IPC_CHANNEL_FD=\"12x\" is not a file descriptor number"));
  }
  const int file = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  {
    const ChannelVariable not_a_socket(std::to_string(file));
    EXPECT_TRUE(contains(error_of([] { static_cast<void>(IPCChannel::from_parent()); }),
                         "does not name an open Unix domain socket"));
  }
  ::close(file);
}

// The child side of the tests below: runs only in a child IPCChildProcess started.
TEST(IpcChildHelper, Echo) {
  if (std::getenv(kIPCChannelEnvironmentVariable) == nullptr) {
    GTEST_SKIP() << "runs only as a child started by IPCChildProcess";
  }
  IPCChannel channel = IPCChannel::from_parent();
  channel.set_receive_timeout(60);
  EXPECT_NE(::fcntl(channel.handle(), F_GETFD) & FD_CLOEXEC, 0) << "made close-on-exec again";
  const auto number = channel.receive_value<std::int32_t>();
  channel.send_value(number + 1);
  const IPCSharedBuffers shared = channel.receive_shared_buffers();
  channel.send_value(static_cast<std::uint64_t>(shared.buffers.size()));
  channel.send_value(shared.buffers.empty() ? std::uint64_t{0} : shared.buffers.back().size);
}

TEST(IpcSpawn, StartsAChildThatFindsItsChannel) {
  IPCChildProcess child = start_self("IpcChildHelper.Echo");
  EXPECT_GT(child.pid(), 0);
  child.channel().set_receive_timeout(60);
  child.channel().send_value(std::int32_t{41});
  EXPECT_EQ(child.channel().receive_value<std::int32_t>(), 42);
  const cuwrap::IPCPoolId id = cuwrap::detail::new_pool_id();
  child.channel().send(
      IPCSharedBuffers{some_handle(id), {descriptor_of(id, 5, 0), descriptor_of(id, 9, 0)}});
  EXPECT_EQ(child.channel().receive_value<std::uint64_t>(), 2U);
  EXPECT_EQ(child.channel().receive_value<std::uint64_t>(), 9U);
  EXPECT_EQ(child.wait(), 0) << "the child test failed (its output is above)";
  EXPECT_EQ(child.pid(), -1);
  EXPECT_THROW(static_cast<void>(child.wait()), std::logic_error);
}

TEST(IpcSpawn, WaitReturnsTheExitStatus) {
  IPCChildProcess child("/bin/sh", {"-c", "exit 3"});
  EXPECT_EQ(child.wait(), 3);
  IPCChildProcess killed("/bin/sh", {"-c", "kill -9 $$"});
  EXPECT_EQ(killed.wait(), 128 + SIGKILL);
}

TEST(IpcSpawn, RefusesWhatCannotBeStarted) {
  EXPECT_TRUE(contains(error_of([] { IPCChildProcess child("/nonexistent/worker"); }),
                       "\"/nonexistent/worker\" is not an executable file"));
  EXPECT_TRUE(contains(error_of([] { IPCChildProcess child("sh"); }), "no PATH search"));
  // Executable but not a program: exec fails in the child, and the parent says so.
  const fs::path garbage =
      fs::temp_directory_path() / ("cuwrap-not-a-program-" + std::to_string(::getpid()));
  {
    std::ofstream out(garbage, std::ios::binary);
    out << std::string(64, '\x7f');
  }
  fs::permissions(garbage, fs::perms::owner_all, fs::perm_options::replace);
  try {
    IPCChildProcess child(garbage);
    ADD_FAILURE() << "a file that is not a program was started";
  } catch (const std::system_error& e) {
    EXPECT_TRUE(contains(e.what(), "exec of")) << e.what();
    EXPECT_EQ(e.code().value(), ENOEXEC);
  }
  fs::remove(garbage);
}

TEST(IpcSpawn, TheDestructorEndsAChildThatDoesNotExit) {
  int pid = -1;
  const auto start = std::chrono::steady_clock::now();
  {
    const IPCChildProcess sleeper("/bin/sleep", {"120"});
    pid = sleeper.pid();
    ASSERT_EQ(::kill(pid, 0), 0) << "the child runs";
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(30));
  EXPECT_EQ(::kill(pid, 0), -1) << "the child was killed and reaped";
  EXPECT_EQ(errno, ESRCH);
}

// ---- GPU ---------------------------------------------------------------------------

constexpr std::size_t kChildBytes = (std::size_t{1} << 16) + 5;

// The child: import both buffers, read `input`, write input + 1 into `output`.
TEST(IpcChildHelper, ImportReadAndWrite) {
  if (std::getenv(kIPCChannelEnvironmentVariable) == nullptr) {
    GTEST_SKIP() << "runs only as a child started by IPCChildProcess";
  }
  cuwrap::testing::ChildSide child;
  // Named references, not a structured binding: clang 14 cannot capture those in a lambda.
  IPCChannel& channel = child.channel;
  const cuwrap::Device& device = child.device;
  const cuwrap::Stream& stream = child.stream;
  IPCSharedBuffers shared = channel.receive_shared_buffers();
  ASSERT_EQ(shared.buffers.size(), 2U);
  cuwrap::DeviceMemoryResource mr =
      cuwrap::DeviceMemoryResource::from_allocation_handle(device, std::move(shared.pool));
  Buffer input = Buffer::from_ipc_descriptor(mr, shared.buffers[0], stream);
  Buffer output = Buffer::from_ipc_descriptor(mr, shared.buffers[1], stream);
  cuwrap::testing::increment(input, output, stream);
  channel.send_value('W');
  EXPECT_EQ(channel.receive_value<char>(), 'X');  // the parent has read the output
  input.close(stream);                            // importers free before the exporter does
  output.close(stream);
  stream.sync();
}

class IpcChildGpu : public cuwrap::testing::DeviceStreamTest {};

TEST_F(IpcChildGpu, AChildImportsReadsAndWritesBuffers) {
  const int types = device().attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    GTEST_SKIP() << "device 0's memory pools cannot export POSIX file descriptors";
  }
  cuwrap::DeviceMemoryResource mr(device(),
                                  cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
  Buffer input = mr.allocate(kChildBytes, stream());
  Buffer output = mr.allocate(kChildBytes, stream());
  const auto pattern = cuwrap::testing::random_bytes(kChildBytes, 77);
  input.copy_from(std::span<const std::byte>(pattern), stream());
  output.fill(std::uint8_t{0}, stream());
  stream().sync();

  IPCChildProcess child = start_self("IpcChildHelper.ImportReadAndWrite");
  child.channel().set_receive_timeout(120);
  child.channel().send(IPCSharedBuffers{mr.get_allocation_handle(),
                                        {input.get_ipc_descriptor(), output.get_ipc_descriptor()}});
  ASSERT_EQ(child.channel().receive_value<char>(), 'W');
  const std::vector<std::byte> written = cuwrap::testing::read_back(output, stream());
  EXPECT_EQ(cuwrap::testing::first_difference(written, cuwrap::testing::incremented(pattern)), -1);
  child.channel().send_value('X');
  EXPECT_EQ(child.wait(), 0) << "the child failed (its output is above)";
  input.close(stream());
  output.close(stream());
  stream().sync();
}

}  // namespace
