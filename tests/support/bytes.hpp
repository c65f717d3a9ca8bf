// Test support: byte data for round trips through device memory. Random bytes from a
// seed (the same bytes on every run), where two byte vectors first differ, and a
// buffer's bytes read back to the host.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cuwrap::testing {

/// Return `n` pseudo-random bytes, none of them zero, from `seed`.
inline std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> data(n);
  unsigned long long state = 0x9E3779B97F4A7C15ull ^ seed;
  for (auto& b : data) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    b = static_cast<std::byte>(1 + state % 255);  // never zero
  }
  return data;
}

/// Return the index of the first differing byte, or -1 when `a` equals `b` everywhere.
inline long long first_difference(const std::vector<std::byte>& a,
                                  const std::vector<std::byte>& b) {
  if (a.size() != b.size()) {
    return 0;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return static_cast<long long>(i);
    }
  }
  return -1;
}

/// Copy all of `buffer` to the host on `stream`, wait for `stream`, and return the bytes.
inline std::vector<std::byte> read_back(const Buffer& buffer, const Stream& stream) {
  std::vector<std::byte> back(buffer.size());
  buffer.copy_to(std::span<std::byte>(back), stream);
  stream.sync();
  return back;
}

/// Copy all of `buffer` to the host on `stream`, wait for `stream`, and return the bytes
/// as `std::uint8_t` (for comparing with byte values a test wrote).
inline std::vector<std::uint8_t> download(const Buffer& buffer, const Stream& stream) {
  std::vector<std::uint8_t> host(buffer.size());
  buffer.copy_to(host, stream);
  stream.sync();
  return host;
}

/// Return whether every byte of `bytes` is `value` (true for no bytes).
inline bool all_equal(const std::vector<std::uint8_t>& bytes, std::uint8_t value) {
  for (const std::uint8_t b : bytes) {
    if (b != value) {
      return false;
    }
  }
  return true;
}

}  // namespace cuwrap::testing
