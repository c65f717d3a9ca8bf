// Test support: a raw peer of an IPCChannel that writes any bytes and file descriptors,
// as a buggy or hostile process could (the channel's framing is in docs/ipc.md).
#pragma once

#include <cuwrap/ipc.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cuwrap::testing {

/// The 16-byte header IPCChannel puts before a handle or shared-buffers message.
struct WireHeader {
  std::uint32_t magic = 0x50494357U;
  std::uint16_t version = 1;
  std::uint16_t kind = 0;
  std::uint64_t length = 0;
};
static_assert(sizeof(WireHeader) == 16);

/// Return how many file descriptors this process has open.
inline int open_fd_count() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

/// A connected pair: `channel` (what cuwrap reads) and the raw socket of its peer.
class RawPeer {
 public:
  RawPeer() {
    int fds[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::runtime_error("socketpair failed");
    }
    channel = IPCChannel::from_fd(fds[0]);
    peer_ = fds[1];
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  ~RawPeer() { hang_up(); }

  /// Write `bytes`, with `fds` attached to their first byte (SCM_RIGHTS).
  void write(std::span<const std::byte> bytes, const std::vector<int>& fds = {}) const {
    iovec data{const_cast<std::byte*>(bytes.data()), bytes.size()};  // NOLINT
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()) + sizeof(cmsghdr));
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    if (!fds.empty()) {
      message.msg_control = control.data();
      message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
    }
    if (::sendmsg(peer_, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      throw std::runtime_error("sendmsg failed");
    }
  }
  /// Write a value's bytes.
  template <class T>
  void write_value(const T& value, const std::vector<int>& fds = {}) const {
    write(std::as_bytes(std::span(&value, 1)), fds);
  }
  /// Close the peer's end (the process vanished).
  void hang_up() noexcept {
    if (peer_ >= 0) {
      ::close(std::exchange(peer_, -1));
    }
  }
  /// Return the peer's raw socket.
  int fd() const noexcept { return peer_; }

  IPCChannel channel;  ///< the end cuwrap reads

 private:
  int peer_ = -1;
};

/// Return a fresh file descriptor of /dev/null (close-on-exec), to send along.
inline int dev_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace cuwrap::testing
