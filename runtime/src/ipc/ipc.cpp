// Pool handles, buffer descriptors and the Unix-domain-socket channel. See cuwrap/ipc.hpp.
#include <cuwrap/ipc.hpp>

#include <cuwrap/detail/owner.hpp>

#include "ipc/ipc_checks.hpp"
#include "ipc/ipc_imports.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for execve

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
  return detail::move_assign(*this, std::move(other));
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

IPCChannel::IPCChannel(IPCChannel&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), broken_(std::exchange(other.broken_, false)) {}

IPCChannel& IPCChannel::operator=(IPCChannel&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
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

IPCChannel IPCChannel::from_parent() {
  const char* text = std::getenv(kIPCChannelEnvironmentVariable);
  if (text == nullptr) {
    throw std::runtime_error(std::string("IPCChannel::from_parent: ") +
                             kIPCChannelEnvironmentVariable +
                             " is not set; this process was not started by IPCChildProcess");
  }
  const std::string value(text);
  const auto refuse = [&](const std::string& why) {
    return std::invalid_argument(std::string("IPCChannel::from_parent: ") +
                                 kIPCChannelEnvironmentVariable + "=\"" + value + "\" " + why);
  };
  if (value.empty() || value.size() > 9 ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    throw refuse("is not a file descriptor number");
  }
  const int fd = std::stoi(value);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) {
    throw refuse("does not name an open Unix domain socket");
  }
  IPCChannel channel(fd);
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
    throw_errno("fcntl(FD_CLOEXEC)");
  }
  return channel;
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

// ---- Messages: a 16-byte header (magic, version, kind, body length), then the body;
// the pool's file descriptor travels with the header's first byte (SCM_RIGHTS).

namespace {

constexpr std::uint32_t kMessageMagic = 0x50494357U;  // "WCIP" read little-endian
constexpr std::uint16_t kMessageVersion = 1;
constexpr std::uint64_t kHandleBody = sizeof(IPCPoolId);
constexpr std::uint64_t kSharedHead = sizeof(IPCPoolId) + sizeof(std::uint64_t);
// File descriptors one receive accepts in its control data; more are closed by the kernel
// (MSG_CTRUNC) and the message refused.
constexpr std::size_t kMaxReceivedFds = 8;

struct MessageHeader {
  std::uint32_t magic = kMessageMagic;
  std::uint16_t version = kMessageVersion;
  std::uint16_t kind = 0;
  std::uint64_t length = 0;
};
static_assert(sizeof(MessageHeader) == 16);

const char* kind_name(std::uint16_t kind) {
  switch (static_cast<IPCMessageKind>(kind)) {
    case IPCMessageKind::AllocationHandle:
      return "an allocation handle (IPCChannel::send(const IPCAllocationHandle&))";
    case IPCMessageKind::SharedBuffers:
      return "shared buffers (IPCChannel::send(const IPCSharedBuffers&))";
  }
  return "an unknown kind";
}

// The file descriptors one message brought; closes those not released.
struct ReceivedFds {
  std::vector<int> fds;
  bool truncated = false;
  ReceivedFds() = default;
  ReceivedFds(const ReceivedFds&) = delete;
  ReceivedFds& operator=(const ReceivedFds&) = delete;
  ~ReceivedFds() {
    for (const int fd : fds) {
      close_fd(fd);
    }
  }
  void collect(msghdr& message) {
    if ((message.msg_flags & MSG_CTRUNC) != 0) {
      truncated = true;
    }
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
        continue;
      }
      const std::size_t bytes = header->cmsg_len - CMSG_LEN(0);
      for (std::size_t i = 0; i < bytes / sizeof(int); ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
        fds.push_back(fd);
      }
    }
  }
};

}  // namespace

std::uint64_t ipc_message_max_length(IPCMessageKind kind) noexcept {
  switch (kind) {
    case IPCMessageKind::AllocationHandle:
      return kHandleBody;
    case IPCMessageKind::SharedBuffers:
      return kSharedHead + kIPCMaxSharedBuffers * sizeof(IPCBufferDescriptor);
  }
  return 0;
}

void IPCChannel::send_message(IPCMessageKind kind, const IPCAllocationHandle& handle,
                              std::span<const std::byte> head, std::span<const std::byte> rest) {
  MessageHeader header;
  header.kind = static_cast<std::uint16_t>(kind);
  header.length = head.size() + rest.size();
  std::vector<std::byte> first(sizeof(header) + head.size());
  std::memcpy(first.data(), &header, sizeof(header));
  std::memcpy(first.data() + sizeof(header), head.data(), head.size());
  iovec data{first.data(), first.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = handle.handle();
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  ssize_t sent = 0;
  do {
    sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    throw_errno("sendmsg");
  }
  // The descriptor went with the first byte; the rest goes as plain bytes.
  send_bytes(std::span<const std::byte>(first).subspan(static_cast<std::size_t>(sent)));
  send_bytes(rest);
}

void IPCChannel::send(const IPCAllocationHandle& handle) {
  require_open("send");
  if (!handle.is_open()) {
    throw std::logic_error("IPCChannel::send: the IPCAllocationHandle is closed");
  }
  const IPCPoolId id = handle.pool_id();
  send_message(IPCMessageKind::AllocationHandle, handle, std::as_bytes(std::span(id)), {});
}

std::size_t IPCChannel::receive_some(std::span<std::byte> bytes, ReceivedFdsSink fds,
                                     const char* operation, bool mid_message) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxReceivedFds)] = {};
  iovec data{bytes.data(), bytes.size()};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (fds != nullptr) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
  }
  ssize_t received = 0;
  do {
    received = ::recvmsg(fd_, &message, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (fds != nullptr) {
    static_cast<ReceivedFds*>(fds)->collect(message);
  }
  if (received < 0) {
    const int error = errno;
    broken_ = broken_ || mid_message;
    if (error == EAGAIN || error == EWOULDBLOCK) {
      throw std::system_error(
          ETIMEDOUT, std::generic_category(),
          std::string("IPCChannel::") + operation + ": nothing arrived within the receive timeout" +
              (mid_message ? " (mid-message: the channel is out of step)" : ""));
    }
    throw std::system_error(error, std::generic_category(),
                            std::string("IPCChannel::") + operation + ": recvmsg");
  }
  if (received == 0) {
    broken_ = broken_ || mid_message;
    throw std::runtime_error(std::string("IPCChannel::") + operation +
                             ": the peer closed the connection" +
                             (mid_message ? " in the middle of a message" : ""));
  }
  return static_cast<std::size_t>(received);
}

void IPCChannel::receive_exactly(std::span<std::byte> bytes, const char* operation) {
  while (!bytes.empty()) {
    bytes = bytes.subspan(receive_some(bytes, nullptr, operation, true));
  }
}

void IPCChannel::skip(std::uint64_t length, const char* operation) {
  std::array<std::byte, 4096> sink{};
  while (length > 0) {
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(length, sink.size()));
    length -= receive_some(std::span(sink).first(chunk), nullptr, operation, true);
  }
}

IPCAllocationHandle IPCChannel::receive_message(IPCMessageKind expected, const char* operation,
                                                std::uint64_t& length) {
  require_open(operation);
  require_in_step(operation);
  require_same_user(operation);
  const auto refuse = [&](const std::string& why) {
    return std::runtime_error(std::string("IPCChannel::") + operation + ": " + why);
  };
  ReceivedFds fds;
  MessageHeader header;
  auto header_bytes = std::as_writable_bytes(std::span(&header, 1));
  std::size_t got = 0;
  while (got < header_bytes.size()) {
    got += receive_some(header_bytes.subspan(got), &fds, operation, got > 0);
  }
  if (header.magic != kMessageMagic || header.version != kMessageVersion) {
    broken_ = true;
    throw refuse("the peer sent something that is not a cuwrap IPC message (magic " +
                 std::to_string(header.magic) + ", version " + std::to_string(header.version) +
                 "); the channel is out of step");
  }
  const auto kind = static_cast<IPCMessageKind>(header.kind);
  const std::uint64_t limit = ipc_message_max_length(kind);
  if (limit == 0 || header.length > limit) {
    broken_ = true;
    throw refuse("the peer announced a message of " + std::to_string(header.length) +
                 " bytes of kind " + std::to_string(header.kind) + " (" + kind_name(header.kind) +
                 "), more than the " + std::to_string(limit) +
                 " such a message may have; the channel is out of step");
  }
  if (kind != expected) {
    skip(header.length, operation);  // the channel stays in step
    throw refuse(std::string("expected ") + kind_name(static_cast<std::uint16_t>(expected)) +
                 ", received " + kind_name(header.kind) +
                 " (discarded, its file descriptors "
                 "closed)");
  }
  if (fds.truncated || fds.fds.size() != 1) {
    skip(header.length, operation);
    throw refuse("the message carried " + std::to_string(fds.fds.size()) +
                 (fds.truncated ? " or more" : "") +
                 " file descriptors, not one (discarded, the descriptors closed)");
  }
  const int fd = fds.fds.front();
  fds.fds.clear();
  length = header.length;
  return IPCAllocationHandle(fd, {});
}

IPCAllocationHandle IPCChannel::receive_allocation_handle() {
  const char* operation = "receive_allocation_handle";
  std::uint64_t length = 0;
  IPCAllocationHandle handle = receive_message(IPCMessageKind::AllocationHandle, operation, length);
  if (length != kHandleBody) {
    skip(length, operation);
    throw std::runtime_error("IPCChannel::receive_allocation_handle: a handle message of " +
                             std::to_string(length) + " bytes, not " + std::to_string(kHandleBody) +
                             " (discarded, its descriptor closed)");
  }
  IPCPoolId id{};
  receive_exactly(std::as_writable_bytes(std::span(id)), operation);
  return IPCAllocationHandle(handle.release(), id);
}

void IPCChannel::send(const IPCSharedBuffers& shared) {
  require_open("send");
  if (!shared.pool.is_open()) {
    throw std::logic_error("IPCChannel::send: the IPCSharedBuffers' pool handle is closed");
  }
  for (std::size_t i = 0; i < shared.buffers.size(); ++i) {
    if (shared.buffers[i].pool_id != shared.pool.pool_id()) {
      throw std::invalid_argument("IPCChannel::send: IPCSharedBuffers::buffers[" +
                                  std::to_string(i) +
                                  "] describes a buffer of another pool than the handle's");
    }
  }
  if (shared.buffers.size() > kIPCMaxSharedBuffers) {
    throw std::invalid_argument("IPCChannel::send: " + std::to_string(shared.buffers.size()) +
                                " buffer descriptors; at most " +
                                std::to_string(kIPCMaxSharedBuffers) + " go in one message");
  }
  std::array<std::byte, kSharedHead> head{};
  const IPCPoolId id = shared.pool.pool_id();
  const auto count = static_cast<std::uint64_t>(shared.buffers.size());
  std::memcpy(head.data(), id.data(), id.size());
  std::memcpy(head.data() + id.size(), &count, sizeof(count));
  send_message(IPCMessageKind::SharedBuffers, shared.pool, head,
               std::as_bytes(std::span(shared.buffers)));
}

IPCSharedBuffers IPCChannel::receive_shared_buffers() {
  const char* operation = "receive_shared_buffers";
  std::uint64_t length = 0;
  IPCAllocationHandle handle = receive_message(IPCMessageKind::SharedBuffers, operation, length);
  const auto refuse = [&](const std::string& why) {
    return std::runtime_error("IPCChannel::receive_shared_buffers: " + why);
  };
  if (length < kSharedHead) {
    skip(length, operation);
    throw refuse("a message of " + std::to_string(length) + " bytes, shorter than its " +
                 std::to_string(kSharedHead) + "-byte head (discarded)");
  }
  std::array<std::byte, kSharedHead> head{};
  receive_exactly(head, operation);
  IPCPoolId id{};
  std::uint64_t count = 0;
  std::memcpy(id.data(), head.data(), id.size());
  std::memcpy(&count, head.data() + id.size(), sizeof(count));
  const std::uint64_t body = length - kSharedHead;
  if (count > kIPCMaxSharedBuffers || body != count * sizeof(IPCBufferDescriptor)) {
    skip(body, operation);
    throw refuse("the message announces " + std::to_string(count) + " buffer descriptors in " +
                 std::to_string(body) + " bytes (at most " + std::to_string(kIPCMaxSharedBuffers) +
                 " of " + std::to_string(sizeof(IPCBufferDescriptor)) + " bytes each; discarded)");
  }
  IPCSharedBuffers shared;
  shared.pool = IPCAllocationHandle(handle.release(), id);
  // Grown as the bytes arrive: an announced count costs memory only once it is sent.
  constexpr std::size_t kChunk = 4096;
  while (shared.buffers.size() < count) {
    const std::size_t first = shared.buffers.size();
    const auto more = static_cast<std::size_t>(std::min<std::uint64_t>(count - first, kChunk));
    shared.buffers.resize(first + more);
    receive_exactly(std::as_writable_bytes(std::span(shared.buffers).subspan(first, more)),
                    operation);
  }
  for (std::size_t i = 0; i < shared.buffers.size(); ++i) {
    if (shared.buffers[i].pool_id != id) {
      throw refuse("descriptor " + std::to_string(i) +
                   " names another pool than the handle (discarded, the handle closed)");
    }
  }
  return shared;
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
  require_in_step("receive_bytes");
  require_same_user("receive_bytes");
  const std::size_t total = bytes.size();
  while (!bytes.empty()) {
    // File descriptors sent along are not asked for: the kernel closes them.
    bytes = bytes.subspan(receive_some(bytes, nullptr, "receive_bytes", bytes.size() < total));
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

void IPCChannel::close() noexcept {
  close_fd(std::exchange(fd_, -1));
  broken_ = false;
}

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

void IPCChannel::require_in_step(const char* operation) const {
  if (broken_) {
    throw std::logic_error(std::string("IPCChannel::") + operation +
                           ": an earlier receive stopped in the middle of a message, so the "
                           "channel is out of step; close it");
  }
}

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
  return detail::move_assign(*this, std::move(other));
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

namespace {

using ImportKey = std::pair<CUmemoryPool, CUdeviceptr>;

struct HeldImport {
  CUmemPoolPtrExportData data;
  std::size_t holders;
};

std::mutex& ipc_import_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Never destroyed: Buffers closed by other static destructors still find it.
std::map<ImportKey, HeldImport>& ipc_imports() {
  static auto* imports = new std::map<ImportKey, HeldImport>();
  return *imports;
}

}  // namespace

std::unique_lock<std::mutex> lock_ipc_imports() {
  return std::unique_lock<std::mutex>(ipc_import_mutex());
}

CUdeviceptr held_ipc_import(CUmemoryPool pool, const CUmemPoolPtrExportData& data) noexcept {
  for (const auto& [key, held] : ipc_imports()) {  // a process holds few imports at once
    if (key.first == pool && std::memcmp(&held.data, &data, sizeof(data)) == 0) {
      return key.second;
    }
  }
  return 0;
}

std::size_t ipc_import_holders(CUmemoryPool pool, CUdeviceptr ptr) noexcept {
  const auto& imports = ipc_imports();
  const auto it = imports.find(ImportKey{pool, ptr});
  return it == imports.end() ? 0 : it->second.holders;
}

void add_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr, const CUmemPoolPtrExportData& data) {
  ++ipc_imports().try_emplace(ImportKey{pool, ptr}, HeldImport{data, 0}).first->second.holders;
}

void drop_ipc_import_holder(CUmemoryPool pool, CUdeviceptr ptr) noexcept {
  auto& imports = ipc_imports();
  const auto it = imports.find(ImportKey{pool, ptr});
  if (it != imports.end() && --it->second.holders == 0) {
    imports.erase(it);
  }
}

void check_imported_range(const char* operation, CUdeviceptr ptr, std::uint64_t offset,
                          std::uint64_t claimed, CUdeviceptr base, std::size_t range_size) {
  // All in 64-bit unsigned arithmetic, each step checked before it could wrap.
  const std::uint64_t start = ptr;
  const std::uint64_t range_begin = base;
  const std::uint64_t range_end = range_begin + range_size;
  const bool range_wraps = range_end < range_begin;
  const std::uint64_t available =
      (range_wraps || start < range_begin || start > range_end) ? 0 : range_end - start;
  if (range_wraps || start < range_begin || start > range_end || offset > available ||
      claimed > available - offset) {
    throw std::invalid_argument(
        std::string(operation) + ": the descriptor claims " + std::to_string(claimed) +
        " bytes at offset " + std::to_string(offset) + ", but the driver shared " +
        std::to_string(available) + " bytes at that address (an allocation of " +
        std::to_string(range_size) + " bytes); refused");
  }
}

IPCPoolId new_pool_id() {
  std::random_device source;
  IPCPoolId id{};
  for (auto& byte : id) {
    byte = static_cast<std::uint8_t>(source() & 0xFFU);
  }
  return id;
}

}  // namespace detail
// ---- IPCChildProcess ----

IPCChildProcess::IPCChildProcess(NamedPath /*tag*/, std::string_view program,
                                 std::span<const std::string> arguments)
    : IPCChildProcess(std::filesystem::path(program), arguments) {}

IPCChildProcess::IPCChildProcess(const std::filesystem::path& program,
                                 std::initializer_list<std::string> arguments)
    : IPCChildProcess(program, std::span<const std::string>(arguments.begin(), arguments.size())) {}

IPCChildProcess::IPCChildProcess(const std::filesystem::path& program,
                                 std::span<const std::string> arguments) {
  const std::string path = program.string();
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      ::access(path.c_str(), X_OK) != 0) {
    throw std::invalid_argument("IPCChildProcess: \"" + path +
                                "\" is not an executable file (give its path; there is no "
                                "PATH search)");
  }
  auto [mine, theirs] = IPCChannel::create_pair();
  // Everything the child needs is built before fork: between fork and exec, a process
  // with threads (CUDA's) may only make async-signal-safe calls.
  const std::string variable =
      std::string(kIPCChannelEnvironmentVariable) + "=" + std::to_string(theirs.handle());
  const std::string prefix = std::string(kIPCChannelEnvironmentVariable) + "=";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  for (const std::string& argument : arguments) {
    argv.push_back(
        const_cast<char*>(argument.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, prefix.c_str(), prefix.size()) != 0) {
      envp.push_back(*entry);
    }
  }
  envp.push_back(
      const_cast<char*>(variable.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  envp.push_back(nullptr);
  // exec failures travel back through a close-on-exec pipe: nothing arrives on success.
  int report[2] = {-1, -1};
  if (::pipe2(report, O_CLOEXEC) != 0) {
    throw_errno("IPCChildProcess: pipe2");
  }
  const int child_fd = theirs.handle();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    const int flags = ::fcntl(child_fd, F_GETFD);
    if (flags >= 0 && ::fcntl(child_fd, F_SETFD, flags & ~FD_CLOEXEC) == 0) {
      ::execve(path.c_str(), argv.data(), envp.data());
    }
    const int error = errno;
    // The child exits next either way: a failed report leaves the parent its EOF.
    [[maybe_unused]] const ssize_t reported = ::write(report[1], &error, sizeof(error));
    ::_exit(127);
  }
  const int fork_error = errno;
  close_fd(report[1]);
  theirs.close();  // so that a child that dies shows up as a closed connection
  if (pid < 0) {
    close_fd(report[0]);
    throw std::system_error(fork_error, std::generic_category(),
                            "IPCChildProcess: fork for \"" + path + "\"");
  }
  int exec_error = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &exec_error, sizeof(exec_error));
  } while (got < 0 && errno == EINTR);
  close_fd(report[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_error))) {
    int status = 0;
    static_cast<void>(::waitpid(pid, &status, 0));
    throw std::system_error(exec_error, std::generic_category(),
                            "IPCChildProcess: exec of \"" + path + "\"");
  }
  channel_ = std::move(mine);
  pid_ = static_cast<int>(pid);
}

IPCChildProcess::IPCChildProcess(IPCChildProcess&& other) noexcept
    : channel_(std::move(other.channel_)), pid_(std::exchange(other.pid_, -1)) {}

IPCChildProcess& IPCChildProcess::operator=(IPCChildProcess&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

IPCChildProcess::~IPCChildProcess() { reap(); }

int IPCChildProcess::wait() {
  if (pid_ < 0) {
    throw std::logic_error("IPCChildProcess::wait: the child was already waited for");
  }
  int status = 0;
  pid_t reaped = 0;
  do {
    reaped = ::waitpid(pid_, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  if (reaped < 0) {
    throw_errno("IPCChildProcess::wait: waitpid");
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

void IPCChildProcess::reap() noexcept {
  channel_.close();
  if (pid_ < 0) {
    return;
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      static_cast<void>(::kill(pid_, SIGKILL));
      static_cast<void>(::waitpid(pid_, &status, 0));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

}  // namespace cuwrap
