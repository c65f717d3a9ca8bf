// Conformance test support: cuda.core's copy_batch fixtures (tests/memory/conftest.py,
// helpers/buffers.py) for test_copy_batch.cpp and test_copy_batch_options.cpp.
#pragma once

#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "device_fixture.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace cuwrap::testing {

inline constexpr std::size_t kCopyBatchSize = 4096;  // cuda.core's COPY_BATCH_SIZE
inline constexpr std::size_t kBuffers = 4;

// cuda.core's copy_batch fixtures: a device, a stream, and buffers on both sides.
class CopyBatchTest : public cuwrap::testing::DeviceStreamTest {
 protected:
  cuwrap::Buffer pinned(std::size_t size = kCopyBatchSize) { return pinned_.allocate(size); }
  cuwrap::Buffer on_device(std::size_t size = kCopyBatchSize) {
    return device().memory_resource().allocate(size, stream());
  }
  // Host-side set_buffer: every byte of pinned memory to `value`.
  static void set_buffer(cuwrap::Buffer& buffer, int value) {
    std::memset(buffer.host_span().data(), value, buffer.size());
  }
  // Whether every byte of `buffer` (anywhere) is `value`, read back through pinned memory.
  bool equals_constant(const cuwrap::Buffer& buffer, int value, cuwrap::StreamRef on) {
    cuwrap::Buffer host = pinned(buffer.size());
    buffer.copy_to(host, on);
    cuwrap::StreamRef(on).sync();
    for (const std::byte b : host.host_span()) {
      if (b != static_cast<std::byte>(value)) {
        return false;
      }
    }
    return true;
  }
  bool equals_constant(const cuwrap::Buffer& buffer, int value) {
    return equals_constant(buffer, value, stream());
  }
  // Whether two buffers hold the same bytes.
  bool equal_buffers(const cuwrap::Buffer& a, const cuwrap::Buffer& b) {
    cuwrap::Buffer host_a = pinned(a.size());
    cuwrap::Buffer host_b = pinned(b.size());
    a.copy_to(host_a, stream());
    b.copy_to(host_b, stream());
    stream().sync();
    return a.size() == b.size() &&
           std::memcmp(host_a.host_span().data(), host_b.host_span().data(), a.size()) == 0;
  }
  static std::vector<const cuwrap::Buffer*> sources(const std::vector<cuwrap::Buffer>& buffers) {
    std::vector<const cuwrap::Buffer*> out;
    for (const cuwrap::Buffer& b : buffers) {
      out.push_back(&b);
    }
    return out;
  }
  static std::vector<cuwrap::Buffer*> destinations(std::vector<cuwrap::Buffer>& buffers) {
    std::vector<cuwrap::Buffer*> out;
    for (cuwrap::Buffer& b : buffers) {
      out.push_back(&b);
    }
    return out;
  }
  // cuda.core's h2d_bufs: pinned sources, device destinations.
  void make_h2d() {
    for (std::size_t i = 0; i < kBuffers; ++i) {
      srcs_.push_back(pinned());
      dsts_.push_back(on_device());
    }
  }
  // cuda.core's device_bufs: device sources and destinations.
  void make_d2d() {
    for (std::size_t i = 0; i < kBuffers; ++i) {
      srcs_.push_back(on_device());
      dsts_.push_back(on_device());
    }
  }
  static std::uint8_t byte(std::size_t value) { return static_cast<std::uint8_t>(value); }

  cuwrap::LegacyPinnedMemoryResource pinned_;
  std::vector<cuwrap::Buffer> srcs_;
  std::vector<cuwrap::Buffer> dsts_;
};

}  // namespace cuwrap::testing
