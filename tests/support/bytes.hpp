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
inline std::vector<std::byte> read_back(BufferRef buffer, StreamRef stream) {
  std::vector<std::byte> back(buffer.size());
  buffer.copy_to(std::span<std::byte>(back), stream);
  stream.sync();
  return back;
}

/// Copy all of `buffer` to the host on `stream`, wait for `stream`, and return the bytes
/// as `std::uint8_t` (for comparing with byte values a test wrote).
inline std::vector<std::uint8_t> download(BufferRef buffer, StreamRef stream) {
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

/// Write every byte of `input` plus 1 (mod 256) into `output`, through the host, on
/// `stream`; wait for `stream` after each copy. `output` holds at least `input.size()` bytes.
inline void increment(const Buffer& input, Buffer& output, const Stream& stream) {
  std::vector<std::uint8_t> bytes(input.size());
  input.copy_to(bytes, stream);
  stream.sync();
  for (std::uint8_t& b : bytes) {
    b = static_cast<std::uint8_t>(b + 1);
  }
  output.copy_from(bytes, stream);
  stream.sync();
}

/// Return every byte of `pattern` plus 1 (mod 256): what increment() writes.
inline std::vector<std::byte> incremented(const std::vector<std::byte>& pattern) {
  std::vector<std::byte> expected(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    expected[i] = static_cast<std::byte>(static_cast<std::uint8_t>(pattern[i]) + 1);
  }
  return expected;
}

}  // namespace cuwrap::testing
