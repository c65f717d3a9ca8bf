// Test support: what a child test started by IPCChildProcess begins with.
#pragma once

#include <cuwrap/device.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/stream.hpp>

namespace cuwrap::testing {

/// The child's side: the channel to its parent (a 120 s receive timeout), device 0 made
/// current, and a stream of it. Make one only in a process IPCChildProcess started.
struct ChildSide {
  /// Connect to the parent, make device 0 current and create the stream.
  ChildSide() { channel.set_receive_timeout(120); }

  IPCChannel channel = IPCChannel::from_parent();
  Device device{0};
  Stream stream = (device.set_current(), device.create_stream());
};

}  // namespace cuwrap::testing
