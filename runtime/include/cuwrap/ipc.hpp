// Sharing memory pools and buffers between processes (cuda.core's _memory/_ipc): the
// exported pool handle (a POSIX file descriptor), the descriptor of one buffer, a
// Unix-domain-socket channel that carries both to another process of the same user,
// IPCSharedBuffers (a pool handle and its buffers' descriptors, sent as one), and
// IPCChildProcess, which starts a program with one end of a channel that the child
// opens with IPCChannel::from_parent().
//
// Linux only: pools export POSIX file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
// which only SCM_RIGHTS over a Unix domain socket can hand to another process.
#pragma once

#include <cuwrap/detail/path.hpp>

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cuwrap {

/// The environment variable through which IPCChildProcess gives a child the file
/// descriptor of its end of the channel (read by IPCChannel::from_parent()).
inline constexpr const char* kIPCChannelEnvironmentVariable = "CUWRAP_IPC_CHANNEL_FD";

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

/// The most buffer descriptors one IPCSharedBuffers message may carry (both sides
/// refuse more).
inline constexpr std::uint64_t kIPCMaxSharedBuffers = std::uint64_t{1} << 20;

/// The kinds of message IPCChannel frames (a 16-byte header names the kind and the
/// body's length; see docs/ipc.md).
enum class IPCMessageKind : std::uint16_t {
  AllocationHandle = 1,  ///< IPCChannel::send(const IPCAllocationHandle&)
  SharedBuffers = 2,     ///< IPCChannel::send(const IPCSharedBuffers&)
};

/// Return the most bytes the body of a message of `kind` may have (0 for a value that
/// names no kind): a receive refuses a longer announcement before reading it.
std::uint64_t ipc_message_max_length(IPCMessageKind kind) noexcept;

/// What one process shares from an IPC-enabled pool, sent as one message: the pool's
/// handle and the descriptors of some of its buffers (in the order the receiver will
/// find them). cuda.core sends a Buffer through multiprocessing as the same two parts.
///
/// Example (exporter):
/// \code
///   channel.send(cuwrap::IPCSharedBuffers{
///       mr.get_allocation_handle(), {input.get_ipc_descriptor(), output.get_ipc_descriptor()}});
/// \endcode
struct IPCSharedBuffers {
  IPCAllocationHandle pool;                  ///< the exported pool (owns its descriptor)
  std::vector<IPCBufferDescriptor> buffers;  ///< buffers of that pool
};

/// One end of a connected Unix domain socket to another process of the same user.
///
/// Carries pool handles (the file descriptor travels as SCM_RIGHTS) and plain bytes
/// (buffer descriptors, CUipcEventHandle). Every receive first checks the peer's
/// credentials (SO_PEERCRED): a peer running as another user is refused with
/// std::runtime_error, before anything is read. Move-only; owns its socket.
///
/// Handles and shared buffers travel as framed messages (kind and length first), and
/// every receive treats the peer's bytes as untrusted: a message of another kind, of a
/// wrong length or with other than one file descriptor is read to its end, its file
/// descriptors closed, and refused with std::runtime_error, leaving the channel usable.
/// Where the stream cannot be resynchronised (a length beyond
/// ipc_message_max_length(), bytes that are no message, the peer gone or the receive
/// timeout passed in the middle of a message) the exception says so, is_in_step()
/// turns false and later receives throw std::logic_error. File descriptors sent along
/// plain bytes are closed by the kernel, never installed here.
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
  /// In a process started by IPCChildProcess: take its end of the channel, whose file
  /// descriptor the parent put in kIPCChannelEnvironmentVariable.
  ///
  /// The descriptor is made close-on-exec again, so that programs this process starts
  /// do not inherit it. Throws std::runtime_error naming the variable when it is not
  /// set (this process was not started by IPCChildProcess), std::invalid_argument
  /// naming its value when that is not the descriptor of a Unix domain socket.
  static IPCChannel from_parent();
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
  /// Send a pool handle and buffer descriptors as one message.
  ///
  /// Throws, before sending anything, std::logic_error for a closed pool handle and
  /// std::invalid_argument naming the index of a descriptor of another pool.
  void send(const IPCSharedBuffers& shared);
  /// Receive what send(const IPCSharedBuffers&) sent.
  ///
  /// Throws std::runtime_error for a message that is not one (a buffer count above
  /// kIPCMaxSharedBuffers, descriptors of another pool), after reading it. Memory for
  /// the descriptors grows as they arrive, not with the count the peer announces.
  IPCSharedBuffers receive_shared_buffers();
  /// Send exactly `bytes.size()` bytes.
  void send_bytes(std::span<const std::byte> bytes);
  /// Receive exactly `bytes.size()` bytes (blocks until they arrive, or up to the
  /// receive timeout).
  ///
  /// Throws std::runtime_error when the peer closes the connection first, and
  /// std::system_error (ETIMEDOUT) when the receive timeout passes; either after some
  /// of the bytes arrived leaves the channel out of step (is_in_step()).
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
  /// Fail receives that wait longer than `seconds` (SO_RCVTIMEO; 0: wait forever) with
  /// std::system_error (ETIMEDOUT): a peer that stalls cannot hang this process.
  void set_receive_timeout(int seconds);
  /// Close the socket now; idempotent, never throws.
  void close() noexcept;

  /// Return the socket's file descriptor. Throws std::logic_error on a closed channel.
  int handle() const;
  /// Return whether the channel still owns a socket.
  bool is_open() const noexcept { return fd_ >= 0; }
  /// Return false once a receive stopped in the middle of a message (the next bytes are
  /// not the start of one): every later receive throws std::logic_error.
  bool is_in_step() const noexcept { return !broken_; }

 private:
  using ReceivedFdsSink = void*;  // the receive's file descriptor list (ipc.cpp)
  explicit IPCChannel(int fd) noexcept : fd_(fd) {}
  static IPCChannel connect_named(std::string_view path);
  void require_open(const char* operation) const;
  void require_same_user(const char* operation) const;
  void require_in_step(const char* operation) const;
  void send_message(IPCMessageKind kind, const IPCAllocationHandle& handle,
                    std::span<const std::byte> head, std::span<const std::byte> rest);
  std::size_t receive_some(std::span<std::byte> bytes, ReceivedFdsSink fds, const char* operation,
                           bool mid_message);
  void receive_exactly(std::span<std::byte> bytes, const char* operation);
  void skip(std::uint64_t length, const char* operation);
  IPCAllocationHandle receive_message(IPCMessageKind expected, const char* operation,
                                      std::uint64_t& length);

  int fd_ = -1;
  bool broken_ = false;
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

/// A child process started with one end of a connected IPCChannel (fork + execve).
///
/// The child finds its end with IPCChannel::from_parent(); the parent talks to it
/// through channel(). Together with IPCSharedBuffers, sharing a pool's buffers with a
/// child takes a few lines (examples/ipc_child_process.cpp):
/// \code
///   cuwrap::IPCChildProcess child("/path/to/worker", {"--mode", "import"});
///   child.channel().send(cuwrap::IPCSharedBuffers{mr.get_allocation_handle(),
///                                                 {buffer.get_ipc_descriptor()}});
///   int status = child.wait();        // 0: the worker succeeded
/// \endcode
/// Move-only. The destructor of a child not waited for closes the channel, gives the
/// child 5 seconds to exit (a child that reads its channel sees it closed), then kills
/// it (SIGKILL) and reaps it; it never throws.
class IPCChildProcess {
 public:
  /// Start `program` (a path: no PATH search) with `arguments` as argv[1...], its
  /// environment this process's plus kIPCChannelEnvironmentVariable.
  ///
  /// Throws std::invalid_argument naming `program` when it is not an executable file,
  /// std::system_error naming it when it cannot be started (fork or exec fails).
  explicit IPCChildProcess(const std::filesystem::path& program,
                           std::span<const std::string> arguments = {});
  /// Start `program` with arguments written in place: `IPCChildProcess(exe, {"--child"})`.
  IPCChildProcess(const std::filesystem::path& program,
                  std::initializer_list<std::string> arguments);
  /// Start the program named `program` (a string: no `<filesystem>` needed); as above.
  template <detail::PathString Path>
  explicit IPCChildProcess(const Path& program, std::span<const std::string> arguments = {})
      : IPCChildProcess(NamedPath{}, std::string_view(program), arguments) {}
  /// Start the program named `program` with arguments written in place.
  template <detail::PathString Path>
  IPCChildProcess(const Path& program, std::initializer_list<std::string> arguments)
      : IPCChildProcess(NamedPath{}, std::string_view(program),
                        std::span<const std::string>(arguments.begin(), arguments.size())) {}
  IPCChildProcess(IPCChildProcess&& other) noexcept;
  IPCChildProcess& operator=(IPCChildProcess&& other) noexcept;
  IPCChildProcess(const IPCChildProcess&) = delete;
  IPCChildProcess& operator=(const IPCChildProcess&) = delete;
  /// Close the channel and reap the child, killing it after 5 seconds (never throws).
  ~IPCChildProcess();

  /// Return the parent's end of the channel.
  IPCChannel& channel() noexcept { return channel_; }
  /// Return the child's process ID (-1 once waited for).
  int pid() const noexcept { return pid_; }
  /// Wait for the child to exit and return its exit status (128 + the signal number
  /// when a signal ended it). The channel stays open.
  ///
  /// Throws std::logic_error when the child was already waited for.
  int wait();

 private:
  struct NamedPath {};
  IPCChildProcess(NamedPath /*tag*/, std::string_view program,
                  std::span<const std::string> arguments);
  void reap() noexcept;

  IPCChannel channel_;
  int pid_ = -1;
};

namespace detail {
/// Return a fresh random pool id (for an IPC-enabled pool being created).
IPCPoolId new_pool_id();
}  // namespace detail

}  // namespace cuwrap
