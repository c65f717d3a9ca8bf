// Conformance support for the IPC ports: a test starts this executable again as its
// child (IPCChildProcess, running one child TEST), as cuda.core's tests start a
// multiprocessing child. Each child TEST skips unless a parent started it, so the
// executables are safe under ctest -j16 (every parent has its own child and channel).
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace cuwrap::conformance {

/// The size of the buffers the tests share (cuda.core's NBYTES).
inline constexpr std::size_t kNbytes = 64;

/// How long a parent or child waits for the other (cuda.core's CHILD_TIMEOUT_SEC).
inline constexpr int kChildTimeoutSeconds = 120;

/// Start this executable again, running only the TEST `filter` names.
inline IPCChildProcess start_child(const std::string& filter) {
  IPCChildProcess child(std::filesystem::read_symlink("/proc/self/exe").string(),
                        {"--gtest_filter=" + filter});
  child.channel().set_receive_timeout(kChildTimeoutSeconds);
  return child;
}

/// Return whether this process is a child started by start_child().
inline bool is_child() { return std::getenv(kIPCChannelEnvironmentVariable) != nullptr; }

/// In a child: its end of the channel, with the receive timeout set.
inline IPCChannel parent_channel() {
  IPCChannel channel = IPCChannel::from_parent();
  channel.set_receive_timeout(kChildTimeoutSeconds);
  return channel;
}

/// The bytes of `buffer`, copied on `stream` and waited for.
inline std::vector<std::uint8_t> contents(const Buffer& buffer, const Stream& stream) {
  std::vector<std::uint8_t> bytes(buffer.size());
  buffer.copy_to(bytes, stream);
  stream.sync();
  return bytes;
}

}  // namespace cuwrap::conformance
