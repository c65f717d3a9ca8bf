// Pool handles, buffer descriptors and the Unix-domain-socket channel. See cuwrap/ipc.hpp.
#include <cuwrap/ipc.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace cuwrap {
namespace {

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void close_fd(int fd) noexcept {
  if (fd >= 0) {
    static_cast<void>(::close(fd));
  }
}

// Fill `address` for `path`; Unix socket paths are limited to sun_path's size.
sockaddr_un socket_address(const std::filesystem::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string text = path.string();
  if (text.empty() || text.size() >= sizeof(address.sun_path)) {
    throw std::invalid_argument("IPC socket path \"" + text + "\" is empty or longer than " +
                                std::to_string(sizeof(address.sun_path) - 1) + " characters");
  }
  std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
  return address;
}

// Throw unless `fd`'s peer runs as this process's effective user.
void check_peer_user(int fd, const char* operation) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    throw_errno("getsockopt(SO_PEERCRED)");
  }
  if (credentials.uid != ::geteuid()) {
    throw std::runtime_error(std::string("IPCChannel::") + operation + ": the peer process " +
                             std::to_string(credentials.pid) + " runs as user " +
                             std::to_string(credentials.uid) + ", not as this process's user " +
                             std::to_string(::geteuid()) + "; refused");
  }
}

}  // namespace

// ---- IPCAllocationHandle -------------------------------------------------------------

IPCAllocationHandle::IPCAllocationHandle(int fd, const IPCPoolId& pool_id)
    : fd_(fd), pool_id_(pool_id) {
  if (fd < 0) {
    throw std::invalid_argument("IPCAllocationHandle: fd " + std::to_string(fd) +
                                " is not a file descriptor");
  }
}

IPCAllocationHandle::IPCAllocationHandle(IPCAllocationHandle&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), pool_id_(std::exchange(other.pool_id_, {})) {}

IPCAllocationHandle& IPCAllocationHandle::operator=(IPCAllocationHandle&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    pool_id_ = std::exchange(other.pool_id_, {});
  }
  return *this;
}

IPCAllocationHandle::~IPCAllocationHandle() { close(); }

void IPCAllocationHandle::close() noexcept {
  close_fd(std::exchange(fd_, -1));
  pool_id_ = {};
}

int IPCAllocationHandle::release() {
  const int fd = handle();
  fd_ = -1;
  pool_id_ = {};
  return fd;
}

int IPCAllocationHandle::handle() const {
  if (fd_ < 0) {
    throw std::logic_error("IPCAllocationHandle::handle on a closed IPCAllocationHandle");
  }
  return fd_;
}

// ---- IPCChannel ----------------------------------------------------------------------

IPCChannel::IPCChannel(IPCChannel&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

IPCChannel& IPCChannel::operator=(IPCChannel&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

IPCChannel::~IPCChannel() { close(); }

std::array<IPCChannel, 2> IPCChannel::create_pair() {
  int fds[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw_errno("socketpair");
  }
  return {IPCChannel(fds[0]), IPCChannel(fds[1])};
}

IPCChannel IPCChannel::from_fd(int fd) {
  if (fd < 0) {
    throw std::invalid_argument("IPCChannel::from_fd: fd " + std::to_string(fd) +
                                " is not a file descriptor");
  }
  return IPCChannel(fd);
}

IPCChannel IPCChannel::connect_named(std::string_view path) {
  return connect(std::filesystem::path(path));
}

IPCChannel IPCChannel::connect(const std::filesystem::path& path) {
  const sockaddr_un address = socket_address(path);
  IPCChannel channel(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (channel.fd_ < 0) {
    throw_errno("socket");
  }
  if (::connect(channel.fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw_errno("connect");
  }
  check_peer_user(channel.fd_, "connect");
  return channel;
}

void IPCChannel::send(const IPCAllocationHandle& handle) {
  require_open("send");
  if (!handle.is_open()) {
    throw std::logic_error("IPCChannel::send: the IPCAllocationHandle is closed");
  }
  IPCPoolId id = handle.pool_id();
  iovec data{id.data(), id.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = handle.handle();
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  ssize_t sent = 0;
  do {
    sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    throw_errno("sendmsg");
  }
  // The descriptor went with the first byte; send the rest of the id as plain bytes.
  const auto done = static_cast<std::size_t>(sent);
  send_bytes(std::as_bytes(std::span(id)).subspan(done));
}

IPCAllocationHandle IPCChannel::receive_allocation_handle() {
  require_open("receive_allocation_handle");
  require_same_user("receive_allocation_handle");
  IPCPoolId id{};
  iovec data{id.data(), id.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t received = 0;
  do {
    received = ::recvmsg(fd_, &message, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    throw_errno("recvmsg");
  }
  int fd = -1;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(header), sizeof(int));
    }
  }
  if (fd < 0) {
    throw std::runtime_error(
        received == 0 ? "IPCChannel::receive_allocation_handle: the peer closed the connection"
                      : "IPCChannel::receive_allocation_handle: the message carried no file "
                        "descriptor (was it sent with IPCChannel::send?)");
  }
  IPCAllocationHandle handle(fd, {});
  if ((message.msg_flags & MSG_CTRUNC) != 0) {
    throw std::runtime_error("IPCChannel::receive_allocation_handle: control data truncated");
  }
  receive_bytes(std::as_writable_bytes(std::span(id)).subspan(static_cast<std::size_t>(received)));
  return IPCAllocationHandle(handle.release(), id);
}

void IPCChannel::send_bytes(std::span<const std::byte> bytes) {
  require_open("send_bytes");
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_errno("send");
    }
    bytes = bytes.subspan(static_cast<std::size_t>(sent));
  }
}

void IPCChannel::receive_bytes(std::span<std::byte> bytes) {
  require_open("receive_bytes");
  require_same_user("receive_bytes");
  while (!bytes.empty()) {
    const ssize_t received = ::recv(fd_, bytes.data(), bytes.size(), 0);
    if (received < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_errno("recv");
    }
    if (received == 0) {
      throw std::runtime_error("IPCChannel::receive_bytes: the peer closed the connection with " +
                               std::to_string(bytes.size()) + " bytes still expected");
    }
    bytes = bytes.subspan(static_cast<std::size_t>(received));
  }
}

void IPCChannel::inherit_across_exec() {
  require_open("inherit_across_exec");
  const int flags = ::fcntl(fd_, F_GETFD);
  if (flags < 0 || ::fcntl(fd_, F_SETFD, flags & ~FD_CLOEXEC) != 0) {
    throw_errno("fcntl(FD_CLOEXEC)");
  }
}

void IPCChannel::set_receive_timeout(int seconds) {
  require_open("set_receive_timeout");
  if (seconds < 0) {
    throw std::invalid_argument("IPCChannel::set_receive_timeout: seconds " +
                                std::to_string(seconds) + " is negative");
  }
  timeval timeout{};
  timeout.tv_sec = seconds;
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    throw_errno("setsockopt(SO_RCVTIMEO)");
  }
}

void IPCChannel::close() noexcept { close_fd(std::exchange(fd_, -1)); }

int IPCChannel::handle() const {
  require_open("handle");
  return fd_;
}

void IPCChannel::require_open(const char* operation) const {
  if (fd_ < 0) {
    throw std::logic_error(std::string("IPCChannel::") + operation + " on a closed IPCChannel");
  }
}

void IPCChannel::require_same_user(const char* operation) const { check_peer_user(fd_, operation); }

// ---- IPCListener ---------------------------------------------------------------------

IPCListener::IPCListener(NamedPath /*tag*/, std::string_view path)
    : IPCListener(std::filesystem::path(path)) {}

IPCListener::IPCListener(const std::filesystem::path& path) : path_(path.string()) {
  const sockaddr_un address = socket_address(path);
  // The directory decides who may reach the socket: it must be this user's and not
  // writable by others (else another user could swap the file under us).
  const std::filesystem::path directory =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) {
    throw_errno("stat(IPC socket directory)");
  }
  if (info.st_uid != ::geteuid() || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw std::invalid_argument("IPCListener: directory \"" + directory.string() +
                                "\" must belong to this user and not be writable by group "
                                "or others");
  }
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    throw_errno("socket");
  }
  const mode_t previous = ::umask(0177);  // the socket file is created 0600
  const int bound = ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int bind_errno = errno;
  ::umask(previous);
  if (bound != 0 || ::listen(fd_, 4) != 0) {
    close_fd(std::exchange(fd_, -1));
    errno = bound != 0 ? bind_errno : errno;
    throw_errno(bound != 0 ? "bind" : "listen");
  }
}

IPCListener::IPCListener(IPCListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {
  other.path_.clear();
}

IPCListener& IPCListener::operator=(IPCListener&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

IPCListener::~IPCListener() { close(); }

std::filesystem::path IPCListener::path() const { return path_; }

IPCChannel IPCListener::accept() {
  if (fd_ < 0) {
    throw std::logic_error("IPCListener::accept on a closed IPCListener");
  }
  int fd = -1;
  do {
    fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    throw_errno("accept4");
  }
  IPCChannel channel = IPCChannel::from_fd(fd);
  check_peer_user(fd, "accept");
  return channel;
}

void IPCListener::close() noexcept {
  if (fd_ >= 0) {
    close_fd(std::exchange(fd_, -1));
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
}

namespace detail {

IPCPoolId new_pool_id() {
  std::random_device source;
  IPCPoolId id{};
  for (auto& byte : id) {
    byte = static_cast<std::uint8_t>(source() & 0xFFU);
  }
  return id;
}

}  // namespace detail
}  // namespace cuwrap
