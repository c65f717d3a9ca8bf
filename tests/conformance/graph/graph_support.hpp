// Helpers the graph conformance files share (one executable, conformance_graph).
#pragma once

#include <cuwrap/cuwrap.hpp>

#include <chrono>
#include <thread>

namespace cuwrap::conformance {

/// Pinned ints the test reads and writes directly (cuda.core's numpy view of a buffer),
/// zeroed.
struct HostInts {
  LegacyPinnedMemoryResource mr;
  Buffer buffer;
  explicit HostInts(int count) : buffer(mr.allocate(sizeof(int) * static_cast<unsigned>(count))) {
    for (int i = 0; i < count; ++i) {
      data()[i] = 0;
    }
  }
  int* data() const { return reinterpret_cast<int*>(buffer.handle()); }
};

/// Poll `predicate` until it holds or `timeout` passes (cuda.core's _wait_until): the
/// driver releases user objects asynchronously (on a driver thread), and closed Graphs
/// keep what their launches use until those have finished. Each round first releases what
/// closed Graphs kept once the driver reports their launches finished: cuwrap's
/// counterpart of the gc.collect() in cuda.core's loop (see Graph::close()).
template <class Predicate>
bool wait_until(Predicate predicate,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    detail::release_finished_graphs();
    if (predicate()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace cuwrap::conformance
