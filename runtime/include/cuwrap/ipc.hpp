// Sharing memory pools and buffers between processes (cuda.core's _memory/_ipc): the
// exported pool handle (a POSIX file descriptor), the descriptor of one buffer, and a
// Unix-domain-socket channel that carries both to another process of the same user.
//
// Linux only: pools export POSIX file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
// which only SCM_RIGHTS over a Unix domain socket can hand to another process.
#pragma once

#include <cuwrap/detail/path.hpp>

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace cuwrap {

/// The 16 random bytes that name one exported pool, so that a buffer descriptor can be
/// matched with the pool it came from before any driver call.
using IPCPoolId = std::array<std::uint8_t, 16>;

/// A memory pool exported for other processes: owns a POSIX file descriptor.
///
/// Made by DeviceMemoryResource::get_allocation_handle(); consumed by
/// DeviceMemoryResource::from_allocation_handle() in the importing process, usually
/// after travelling through an IPCChannel. Move-only; the destructor closes the
/// descriptor.
class IPCAllocationHandle {
 public:
  /// Make an empty (closed) handle.
  IPCAllocationHandle() = default;
  /// Take ownership of the file descriptor `fd` naming the pool `pool_id`.
  ///
  /// Throws std::invalid_argument for a negative `fd`.
  IPCAllocationHandle(int fd, const IPCPoolId& pool_id);
  IPCAllocationHandle(IPCAllocationHandle&& other) noexcept;
  IPCAllocationHandle& operator=(IPCAllocationHandle&& other) noexcept;
  IPCAllocationHandle(const IPCAllocationHandle&) = delete;
  IPCAllocationHandle& operator=(const IPCAllocationHandle&) = delete;
  /// Close the file descriptor (never throws).
  ~IPCAllocationHandle();

  /// Close the file descriptor now; idempotent, never throws.
  void close() noexcept;
  /// Give up ownership: return the file descriptor, leaving the handle closed.
  ///
  /// Throws std::logic_error on a closed handle.
  int release();

  /// Return the file descriptor. Throws std::logic_error on a closed handle.
  int handle() const;
  /// Return the id of the exported pool (all zeros for a closed handle).
  const IPCPoolId& pool_id() const noexcept { return pool_id_; }
  /// Return whether the handle still owns a file descriptor.
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
  IPCPoolId pool_id_{};
};

/// The description of one buffer of an exported pool: plain bytes another process
/// turns back into a Buffer with Buffer::from_ipc_descriptor().
///
/// Trivially copyable: send it as bytes (IPCChannel::send_bytes, a pipe, a file).
struct IPCBufferDescriptor {
  /// The driver's export data (CUmemPoolPtrExportData::reserved).
  std::array<unsigned char, sizeof(CUmemPoolPtrExportData)> payload{};
  /// The buffer's size in bytes.
  std::uint64_t size = 0;
  /// The id of the pool the buffer came from (see IPCAllocationHandle::pool_id).
  IPCPoolId pool_id{};
};
static_assert(std::is_trivially_copyable_v<IPCBufferDescriptor>);

/// One end of a connected Unix domain socket to another process of the same user.
///
/// Carries pool handles (the file descriptor travels as SCM_RIGHTS) and plain bytes
/// (buffer descriptors, CUipcEventHandle). Every receive first checks the peer's
/// credentials (SO_PEERCRED): a peer running as another user is refused with
/// std::runtime_error, before anything is read. Move-only; owns its socket.
///
/// Example (parent, then the child that inherited `child_end.handle()` over exec):
/// \code
///   auto [mine, theirs] = cuwrap::IPCChannel::create_pair();
///   // fork + exec, passing theirs.handle() to the child
///   mine.send(mr.get_allocation_handle());
///   // in the child:
///   auto channel = cuwrap::IPCChannel::from_fd(fd);
///   auto mr = cuwrap::DeviceMemoryResource::from_allocation_handle(dev,
///   channel.receive_allocation_handle());
/// \endcode
class IPCChannel {
 public:
  /// Make a closed channel.
  IPCChannel() = default;
  IPCChannel(IPCChannel&& other) noexcept;
  IPCChannel& operator=(IPCChannel&& other) noexcept;
  IPCChannel(const IPCChannel&) = delete;
  IPCChannel& operator=(const IPCChannel&) = delete;
  /// Close the socket (never throws).
  ~IPCChannel();

  /// Return two connected ends (socketpair, AF_UNIX, SOCK_STREAM).
  ///
  /// Both ends are close-on-exec; call inherit_across_exec() on the end a child
  /// process started with exec should keep.
  static std::array<IPCChannel, 2> create_pair();
  /// Take ownership of a connected Unix domain socket `fd` (one inherited over exec).
  ///
  /// Throws std::invalid_argument for a negative `fd`.
  static IPCChannel from_fd(int fd);
  /// Connect to the socket a listening process bound at `path` (see IPCListener).
  static IPCChannel connect(const std::filesystem::path& path);
  /// Connect to the socket bound at the path named `path` (a string: no `<filesystem>`
  /// needed); as above.
  template <detail::PathString Path>
  static IPCChannel connect(const Path& path) {
    return connect_named(std::string_view(path));
  }

  /// Send a pool handle: its file descriptor (SCM_RIGHTS) and its pool id.
  ///
  /// The handle stays open here; the peer receives its own descriptor.
  /// Throws std::logic_error for a closed handle.
  void send(const IPCAllocationHandle& handle);
  /// Receive a pool handle sent with send(const IPCAllocationHandle&).
  IPCAllocationHandle receive_allocation_handle();
  /// Send exactly `bytes.size()` bytes.
  void send_bytes(std::span<const std::byte> bytes);
  /// Receive exactly `bytes.size()` bytes (blocks until they arrive).
  ///
  /// Throws std::runtime_error when the peer closes the connection first.
  void receive_bytes(std::span<std::byte> bytes);
  /// Send a trivially copyable value as its bytes.
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void send_value(const T& value) { send_bytes(std::as_bytes(std::span(&value, 1))); }
  /// Receive a trivially copyable value sent with send_value.
  template <class T>
  requires std::is_trivially_copyable_v<T> T receive_value() {
    T value{};
    receive_bytes(std::as_writable_bytes(std::span(&value, 1)));
    return value;
  }

  /// Keep the socket open in a program started with exec (clear FD_CLOEXEC).
  void inherit_across_exec();
  /// Fail receives that wait longer than `seconds` (SO_RCVTIMEO; 0: wait forever).
  void set_receive_timeout(int seconds);
  /// Close the socket now; idempotent, never throws.
  void close() noexcept;

  /// Return the socket's file descriptor. Throws std::logic_error on a closed channel.
  int handle() const;
  /// Return whether the channel still owns a socket.
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  explicit IPCChannel(int fd) noexcept : fd_(fd) {}
  static IPCChannel connect_named(std::string_view path);
  void require_open(const char* operation) const;
  void require_same_user(const char* operation) const;

  int fd_ = -1;
};

/// A listening Unix domain socket at a path only this user can reach.
///
/// The socket file is created with mode 0600 inside a directory the caller chose (it
/// must be owned by this user and not writable by others, else std::invalid_argument);
/// accepted peers of another user are refused. The destructor removes the file.
class IPCListener {
 public:
  /// Bind and listen at `path`. Throws std::invalid_argument for an unsafe directory
  /// or a path that is too long, std::system_error when binding fails.
  explicit IPCListener(const std::filesystem::path& path);
  /// Bind and listen at the path named `path` (a string: no `<filesystem>` needed); as above.
  template <detail::PathString Path>
  explicit IPCListener(const Path& path) : IPCListener(NamedPath{}, std::string_view(path)) {}
  IPCListener(IPCListener&& other) noexcept;
  IPCListener& operator=(IPCListener&& other) noexcept;
  IPCListener(const IPCListener&) = delete;
  IPCListener& operator=(const IPCListener&) = delete;
  /// Close the socket and remove the file (never throws).
  ~IPCListener();

  /// Wait for one connection; refuse (close, throw std::runtime_error) one from a
  /// process of another user.
  IPCChannel accept();
  /// Close the socket and remove the file now; idempotent, never throws.
  void close() noexcept;
  /// Return the path the socket is bound at.
  std::filesystem::path path() const;

 private:
  struct NamedPath {};
  IPCListener(NamedPath /*tag*/, std::string_view path);

  int fd_ = -1;
  std::string path_;  // not a std::filesystem::path: see detail/path.hpp
};

namespace detail {
/// Return a fresh random pool id (for an IPC-enabled pool being created).
IPCPoolId new_pool_id();
}  // namespace detail

}  // namespace cuwrap
