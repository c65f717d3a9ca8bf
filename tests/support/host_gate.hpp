// Test support: hold a stream until the host lets it go, so that a test can observe work
// that has not finished without depending on how long a kernel spins or how fast the
// host thread runs.
//
// The stream waits (cuStreamWaitValue32) on a word of mapped pinned host memory that the
// host sets when the gate opens. Everything enqueued after the gate cannot finish before
// open(): "not done yet" holds however slow the machine is.
//
// Launch every kernel that runs behind a gate once before the gate is set (and wait for
// it): under lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a
// kernel's first launch loads its code, which waits for work on the device, and so for
// the closed gate: the test would hang.
#pragma once

#include <cuwrap/driver.hpp>

#include <atomic>

namespace cuwrap::testing {

/// A point in a stream that work after it cannot pass until open() (or destruction).
class HostGate {
 public:
  /// Enqueue the wait on `stream` (its context must be current).
  explicit HostGate(CUstream stream)
      : stream_(stream),
        word_(static_cast<cuuint32_t*>(driver::cuMemHostAlloc(
            sizeof(cuuint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE))) {
    std::atomic_ref<cuuint32_t>(*word_).store(0);
    try {
      driver::cuStreamWaitValue32(stream_, driver::cuMemHostGetDevicePointer(word_, 0), 1,
                                  CU_STREAM_WAIT_VALUE_GEQ);
    } catch (...) {
      static_cast<void>(driver::raw::cuMemFreeHost(word_));
      throw;
    }
  }
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;
  /// Open the gate, wait for the stream, and free the word (never throws).
  ~HostGate() {
    open();
    static_cast<void>(driver::raw::cuStreamSynchronize(stream_));
    static_cast<void>(driver::raw::cuMemFreeHost(word_));
  }

  /// Let the stream go on past the gate.
  void open() { std::atomic_ref<cuuint32_t>(*word_).store(1); }

 private:
  CUstream stream_;
  cuuint32_t* word_;
};

}  // namespace cuwrap::testing
