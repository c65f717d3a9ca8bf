// libFuzzer target: any bytes, with any number of file descriptors, as the peer of an
// IPCChannel (built with -DCUWRAP_BUILD_FUZZERS=ON under clang; tests/fuzz/README.md).
//
// Input: byte 0 picks the receive (bit 0: shared buffers, else a handle), byte 1 how
// many file descriptors go with the message (0..3), the rest is what the peer writes.
// Every receive must return a value that holds its invariants or throw; no file
// descriptor may stay open.
#include <cuwrap/ipc.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

namespace {

void write_all(int fd, const std::uint8_t* bytes, std::size_t size, int fd_count) {
  std::vector<int> fds;
  for (int i = 0; i < fd_count; ++i) {
    fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  std::vector<char> control(CMSG_SPACE(sizeof(int) * 4));
  iovec data{const_cast<std::uint8_t*>(bytes),
             size};  // NOLINT(cppcoreguidelines-pro-type-const-cast)
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
  static_cast<void>(::sendmsg(fd, &message, MSG_NOSIGNAL));
  for (const int open : fds) {
    ::close(open);
  }
}

int open_fds() {
  int count = 0;
  if (DIR* directory = ::opendir("/proc/self/fd")) {
    while (::readdir(directory) != nullptr) {
      ++count;
    }
    ::closedir(directory);
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2 || size > 60000) {  // one write fits the socket's buffer
    return -1;
  }
  const int before = open_fds();
  int pair[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    std::abort();
  }
  {
    cuwrap::IPCChannel channel = cuwrap::IPCChannel::from_fd(pair[0]);
    if (size > 2) {
      write_all(pair[1], data + 2, size - 2, data[1] % 4);
    }
    ::close(pair[1]);
    try {
      if ((data[0] & 1U) != 0) {
        const cuwrap::IPCSharedBuffers got = channel.receive_shared_buffers();
        for (const cuwrap::IPCBufferDescriptor& d : got.buffers) {
          if (d.pool_id != got.pool.pool_id() || !got.pool.is_open()) {
            std::abort();
          }
        }
      } else if (!channel.receive_allocation_handle().is_open()) {
        std::abort();
      }
    } catch (const std::exception&) {
    }
  }
  if (open_fds() != before) {
    std::abort();  // a received file descriptor stayed open
  }
  return 0;
}
