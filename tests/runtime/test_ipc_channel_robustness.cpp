// IPCChannel against a peer that sends anything (no GPU): truncated messages, wrong
// kinds, lengths beyond the stated maximum, file descriptors where none belong,
// descriptors of another pool, a peer that vanishes mid-message, a peer that stalls.
// Each is a clear exception; the channel either stays usable (is_in_step) or says it is
// not, and no file descriptor is left open.
#include <cuwrap/ipc.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "ipc_wire.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using cuwrap::IPCBufferDescriptor;
using cuwrap::IPCMessageKind;
using cuwrap::IPCPoolId;
using cuwrap::testing::contains;
using cuwrap::testing::dev_null;
using cuwrap::testing::open_fd_count;
using cuwrap::testing::RawPeer;
using cuwrap::testing::WireHeader;

constexpr auto kHandle = static_cast<std::uint16_t>(IPCMessageKind::AllocationHandle);
constexpr auto kShared = static_cast<std::uint16_t>(IPCMessageKind::SharedBuffers);

template <class Exception, class Call>
std::string message_of(Call&& call) {
  return cuwrap::testing::thrown_message<Exception>(static_cast<Call&&>(call));
}

// Open `n` descriptors, have `peer` send them with `bytes`, and close ours.
void write_with_fds(const RawPeer& peer, std::span<const std::byte> bytes, int n) {
  std::vector<int> fds;
  fds.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    fds.push_back(dev_null());
  }
  peer.write(bytes, fds);
  for (const int fd : fds) {
    ::close(fd);
  }
}

std::vector<std::byte> header_bytes(std::uint16_t kind, std::uint64_t length) {
  WireHeader header;
  header.kind = kind;
  header.length = length;
  const auto bytes = std::as_bytes(std::span(&header, 1));
  return {bytes.begin(), bytes.end()};
}

// A whole shared-buffers message whose header says `count` descriptors of `pool`
// and which carries `descriptors`.
std::vector<std::byte> shared_message(const IPCPoolId& pool, std::uint64_t count,
                                      const std::vector<IPCBufferDescriptor>& descriptors) {
  std::vector<std::byte> bytes =
      header_bytes(kShared, 24 + descriptors.size() * sizeof(IPCBufferDescriptor));
  const auto id = std::as_bytes(std::span(pool));
  bytes.insert(bytes.end(), id.begin(), id.end());
  const auto n = std::as_bytes(std::span(&count, 1));
  bytes.insert(bytes.end(), n.begin(), n.end());
  const auto d = std::as_bytes(std::span(descriptors));
  bytes.insert(bytes.end(), d.begin(), d.end());
  return bytes;
}

// What proves the channel usable: the next value arrives intact.
void expect_in_step(RawPeer& peer) {
  EXPECT_TRUE(peer.channel.is_in_step());
  peer.write_value(std::uint32_t{0xC0FFEE});
  EXPECT_EQ(peer.channel.receive_value<std::uint32_t>(), 0xC0FFEEU);
}

void expect_out_of_step(RawPeer& peer) {
  EXPECT_FALSE(peer.channel.is_in_step());
  EXPECT_TRUE(contains(message_of<std::logic_error>(
                           [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                       "out of step"));
  EXPECT_THROW(static_cast<void>(peer.channel.receive_value<int>()), std::logic_error);
}

TEST(IpcChannelRobustness, StatesTheMaximumMessageLengths) {
  EXPECT_EQ(cuwrap::ipc_message_max_length(IPCMessageKind::AllocationHandle), sizeof(IPCPoolId));
  EXPECT_EQ(cuwrap::ipc_message_max_length(IPCMessageKind::SharedBuffers),
            24 + cuwrap::kIPCMaxSharedBuffers * sizeof(IPCBufferDescriptor));
  EXPECT_EQ(cuwrap::ipc_message_max_length(static_cast<IPCMessageKind>(77)), 0U);
}

TEST(IpcChannelRobustness, TruncatedHeaderThenPeerGoneIsAClosedConnectionOutOfStep) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    const auto header = header_bytes(kHandle, 16);
    write_with_fds(peer, std::span(header).first(7), 1);
    peer.hang_up();
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "closed the connection in the middle of a message"));
    expect_out_of_step(peer);
  }
  EXPECT_EQ(open_fd_count(), before) << "the descriptor of the broken message leaked";
}

TEST(IpcChannelRobustness, PeerVanishingMidBodyIsAClosedConnectionAndLeaksNothing) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    std::vector<std::byte> bytes = header_bytes(kHandle, 16);
    bytes.resize(bytes.size() + 5);  // 5 of the pool id's 16 bytes
    write_with_fds(peer, bytes, 1);
    peer.hang_up();
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "in the middle of a message"));
    expect_out_of_step(peer);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(IpcChannelRobustness, PeerClosedBeforeAMessageIsAClosedConnection) {
  RawPeer peer;
  peer.hang_up();
  const std::string what = message_of<std::runtime_error>(
      [&] { static_cast<void>(peer.channel.receive_shared_buffers()); });
  EXPECT_TRUE(contains(what, "the peer closed the connection")) << what;
  EXPECT_FALSE(contains(what, "middle")) << what;
  EXPECT_TRUE(peer.channel.is_in_step());
}

TEST(IpcChannelRobustness, MessageOfAnotherKindIsReadToItsEndAndItsDescriptorClosed) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    const IPCPoolId id = cuwrap::detail::new_pool_id();
    // A genuine shared-buffers message where a handle is expected, and the reverse.
    peer.write(shared_message(id, 0, {}), {});
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "expected an allocation handle"));
    expect_in_step(peer);
    std::vector<std::byte> handle = header_bytes(kHandle, 16);
    handle.resize(handle.size() + 16);
    write_with_fds(peer, handle, 1);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_shared_buffers()); }),
                         "expected shared buffers"));
    expect_in_step(peer);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(IpcChannelRobustness, UnknownKindOrNoMessageAtAllIsRefusedOutOfStep) {
  {
    RawPeer peer;
    write_with_fds(peer, header_bytes(9, 0), 1);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "kind 9"));
    expect_out_of_step(peer);
  }
  {
    RawPeer peer;
    peer.write_value(std::array<std::uint64_t, 2>{0x1122334455667788ULL, 16});
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "not a cuwrap IPC message"));
    expect_out_of_step(peer);
  }
}

TEST(IpcChannelRobustness, LengthBeyondTheStatedMaximumIsRefusedBeforeReading) {
  const std::uint64_t limit = cuwrap::ipc_message_max_length(IPCMessageKind::SharedBuffers);
  RawPeer peer;
  write_with_fds(peer, header_bytes(kShared, limit + 1), 1);
  const std::string what = message_of<std::runtime_error>(
      [&] { static_cast<void>(peer.channel.receive_shared_buffers()); });
  EXPECT_TRUE(contains(what, std::to_string(limit + 1))) << what;
  EXPECT_TRUE(contains(what, std::to_string(limit))) << what;
  expect_out_of_step(peer);
}

TEST(IpcChannelRobustness, CountThatDisagreesWithTheLengthIsRefusedInStep) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    const IPCPoolId id = cuwrap::detail::new_pool_id();
    IPCBufferDescriptor d;
    d.pool_id = id;
    d.size = 64;
    // Says 1000 descriptors, carries one; then says 2^40 in a message of one.
    write_with_fds(peer, shared_message(id, 1000, {d}), 1);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_shared_buffers()); }),
                         "announces 1000 buffer descriptors"));
    expect_in_step(peer);
    write_with_fds(peer, shared_message(id, std::uint64_t{1} << 40, {d}), 1);
    EXPECT_THROW(static_cast<void>(peer.channel.receive_shared_buffers()), std::runtime_error);
    expect_in_step(peer);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(IpcChannelRobustness, UnexpectedFileDescriptorsAreClosedNotInstalled) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    // Along plain bytes: the receive never installs them.
    const std::uint32_t value = 7;
    write_with_fds(peer, std::as_bytes(std::span(&value, 1)), 3);
    EXPECT_EQ(peer.channel.receive_value<std::uint32_t>(), 7U);
    EXPECT_EQ(open_fd_count(), before + 2) << "only the channel's two sockets";
    // Three with a handle message, and none: both refused whole.
    std::vector<std::byte> handle = header_bytes(kHandle, 16);
    handle.resize(handle.size() + 16);
    write_with_fds(peer, handle, 3);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "carried 3 file descriptors"));
    expect_in_step(peer);
    peer.write(handle);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_allocation_handle()); }),
                         "carried 0 file descriptors"));
    expect_in_step(peer);
    // More than a receive accepts: the kernel drops the rest, the message is refused.
    write_with_fds(peer, handle, 20);
    EXPECT_THROW(static_cast<void>(peer.channel.receive_allocation_handle()), std::runtime_error);
    expect_in_step(peer);
    EXPECT_EQ(open_fd_count(), before + 2);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(IpcChannelRobustness, DescriptorsOfAnotherPoolAreRefusedAndTheHandleClosed) {
  const int before = open_fd_count();
  {
    RawPeer peer;
    const IPCPoolId id = cuwrap::detail::new_pool_id();
    IPCBufferDescriptor mine;
    mine.pool_id = id;
    IPCBufferDescriptor other;
    other.pool_id = cuwrap::detail::new_pool_id();
    write_with_fds(peer, shared_message(id, 2, {mine, other}), 1);
    EXPECT_TRUE(contains(message_of<std::runtime_error>(
                             [&] { static_cast<void>(peer.channel.receive_shared_buffers()); }),
                         "descriptor 1 names another pool"));
    expect_in_step(peer);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(IpcChannelRobustness, StalledPeerTimesOutInsteadOfHanging) {
  RawPeer peer;
  peer.channel.set_receive_timeout(1);
  const auto start = std::chrono::steady_clock::now();
  try {
    static_cast<void>(peer.channel.receive_allocation_handle());
    ADD_FAILURE() << "a receive with nothing sent returned";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ETIMEDOUT);
    EXPECT_TRUE(contains(e.what(), "receive timeout")) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  expect_in_step(peer);  // nothing of a message was read
  // Stalling in the middle of a message leaves the channel out of step.
  const auto header = header_bytes(kHandle, 16);
  write_with_fds(peer, std::span(header).first(10), 1);
  EXPECT_THROW(static_cast<void>(peer.channel.receive_allocation_handle()), std::system_error);
  expect_out_of_step(peer);
}

TEST(IpcChannelRobustness, GenuineMessagesStillTravel) {
  // References, not a structured binding: clang 14 cannot capture those in a lambda.
  std::array<cuwrap::IPCChannel, 2> channels = cuwrap::IPCChannel::create_pair();
  cuwrap::IPCChannel& left = channels[0];
  cuwrap::IPCChannel& right = channels[1];
  const IPCPoolId id = cuwrap::detail::new_pool_id();
  IPCBufferDescriptor d;
  d.pool_id = id;
  d.size = 123;
  std::vector<IPCBufferDescriptor> many(5000, d);  // more than one receive chunk
  // Larger than the socket's buffer: the sender needs the receiver running.
  std::thread sender([&] {
    left.send(cuwrap::IPCSharedBuffers{cuwrap::IPCAllocationHandle(dev_null(), id), many});
  });
  const cuwrap::IPCSharedBuffers got = right.receive_shared_buffers();
  sender.join();
  EXPECT_EQ(got.pool.pool_id(), id);
  ASSERT_EQ(got.buffers.size(), 5000U);
  EXPECT_EQ(got.buffers.back().size, 123U);
  left.send(cuwrap::IPCAllocationHandle(dev_null(), id));
  EXPECT_EQ(right.receive_allocation_handle().pool_id(), id);
}

}  // namespace
