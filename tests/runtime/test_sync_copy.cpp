// Blocking copies (cuwrap::copy, the stream-less copy_from/copy_to of buffers and device
// spans, copy_peer of device spans): sizes checked before the driver without a GPU; on a
// GPU, every direction returns with the data in place and leaves the current context as
// it was.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "device_fixture.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuwrap::testing::contains;

TEST(SyncCopyChecks, SizesAreComparedBeforeTheDriver) {
  // No driver call is reached: the memory at these addresses does not exist.
  const cuwrap::BufferRef small(0x1000, 16);
  const cuwrap::BufferRef large(0x2000, 32);
  try {
    cuwrap::copy(large, small);
    FAIL() << "copies of different sizes were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "16")) << e.what();
    EXPECT_TRUE(contains(e.what(), "32")) << e.what();
  }
  std::vector<float> host(3);
  EXPECT_THROW(cuwrap::copy(small, host), std::invalid_argument) << "12 bytes into 16";
  EXPECT_THROW(cuwrap::copy(host, small), std::invalid_argument);
  const cuwrap::DeviceSpan<float> four(0x3000, 4);
  try {
    cuwrap::copy(four, host);
    FAIL() << "3 elements were copied into 4";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "4 elements")) << e.what();
  }
  EXPECT_THROW(four.copy_to(std::span<float>(host)), std::invalid_argument);
}

class SyncCopy : public cuwrap::testing::DeviceStreamTest {};

TEST_F(SyncCopy, EveryDirectionIsDoneWhenTheCallReturns) {
  const std::size_t n = 1 << 20;
  std::vector<std::uint32_t> host(n);
  std::iota(host.begin(), host.end(), 7U);
  cuwrap::Buffer a = device().allocate(n * sizeof(std::uint32_t));
  cuwrap::Buffer b = device().allocate(n * sizeof(std::uint32_t));
  cuwrap::copy(a, host);  // host → device
  cuwrap::copy(b, a);     // device → device
  std::vector<std::uint32_t> back(n, 0);
  cuwrap::copy(back, b);  // device → host
  EXPECT_EQ(back, host);

  // The member forms, and a part of a buffer (a BufferRef).
  std::vector<std::uint32_t> part(16, 0);
  b.slice(4 * sizeof(std::uint32_t), part.size() * sizeof(std::uint32_t)).copy_to(part);
  EXPECT_EQ(part[0], 11U);
  a.copy_from(std::as_bytes(std::span(back)));
  std::array<std::uint32_t, 4> last{};
  a.as<std::uint32_t>().last(4).copy_to(std::span(last));
  EXPECT_EQ(last[3], static_cast<std::uint32_t>(n - 1 + 7));
}

TEST_F(SyncCopy, TypedSpansCopyElementsAndWaitForBlockingStreams) {
  const std::size_t n = 4096;
  cuwrap::Buffer buffer = device().allocate(n * sizeof(float));
  const cuwrap::DeviceSpan<float> x = buffer.as<float>();
  // A fill on a blocking stream of the context: the blocking copy starts after it.
  cuwrap::Stream blocking = device().create_stream({.nonblocking = false});
  buffer.fill(std::uint32_t{0x3F800000}, blocking);  // 1.0f
  std::vector<float> host(n, 0.0F);
  cuwrap::copy(host, x);
  EXPECT_EQ(host[0], 1.0F);
  EXPECT_EQ(host[n - 1], 1.0F);

  std::vector<float> twos(n, 2.0F);
  x.copy_from(std::span<const float>(twos));
  cuwrap::Buffer other = device().allocate(n * sizeof(float));
  const cuwrap::DeviceSpan<float> y = other.as<float>();
  cuwrap::copy(y, cuwrap::DeviceSpan<const float>(x));
  x.copy_to(y);
  std::vector<float> out(n, 0.0F);
  y.copy_to(std::span<float>(out));
  EXPECT_EQ(out[n / 2], 2.0F);
}

TEST_F(SyncCopy, WithNoContextCurrentItUsesTheMemorysDeviceAndLeavesNoneCurrent) {
  cuwrap::Buffer buffer = device().allocate(1024);
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr);
      std::vector<std::byte> host(1024, std::byte{0x5A});
      cuwrap::copy(buffer, host);
      std::vector<std::byte> back(1024);
      cuwrap::copy(back, buffer);
      EXPECT_EQ(back, host);
      EXPECT_EQ(cuwrap::driver::cuCtxGetCurrent(), nullptr) << "none current, as before";
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) {
    std::rethrow_exception(error);
  }
}

TEST_F(SyncCopy, CopyPeerTakesDeviceSpans) {
  cuwrap::Buffer a = device().allocate(256 * sizeof(int), stream());
  cuwrap::Buffer b = device().allocate(256 * sizeof(int), stream());
  std::vector<int> host(256, 9);
  a.as<int>().copy_from(std::span<const int>(host), stream());
  cuwrap::copy_peer(b.as<int>(), a.as<int>(), stream());
  cuwrap::copy_peer(b.as<int>().first(8), device(), a.as<int>().last(8), device(), stream());
  std::vector<int> out(256, 0);
  b.as<int>().copy_to(std::span<int>(out), stream());
  stream().sync();
  EXPECT_EQ(out[255], 9);
  EXPECT_THROW(cuwrap::copy_peer(b.as<int>().first(8), a.as<int>().first(9), stream()),
               std::invalid_argument);
}

}  // namespace
