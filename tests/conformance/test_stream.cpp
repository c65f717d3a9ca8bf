// Port of cuda.core's tests/test_stream.py: one TEST per Python test function (see
// README.md for those not ported and why).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include "device_fixture.hpp"

#include <cuda.h>

#include <concepts>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

using cuwrap::Stream;
using cuwrap::StreamOptions;
using cuwrap::StreamRef;
using cuwrap::testing::DeviceTest;

class test_stream : public DeviceTest {};

// cuda.core refuses Stream(); cuwrap's default Stream is a closed one, and using it is
// misuse (std::logic_error, cuda.core's RuntimeError), before any driver call.
TEST(test_stream_cpu, test_stream_init_disabled) {
  const Stream stream;
  EXPECT_FALSE(stream.is_open());
  EXPECT_THROW(stream.sync(), std::logic_error);
  EXPECT_THROW(static_cast<void>(stream.handle()), std::logic_error);
}

TEST_F(test_stream, test_stream_init_with_options) {
  const Stream stream = device().create_stream(StreamOptions{.nonblocking = true, .priority = 0});
  EXPECT_TRUE(stream.is_nonblocking());
  EXPECT_EQ(stream.priority(), 0);
}

TEST_F(test_stream, test_stream_handle) {
  const Stream stream = device().create_stream(StreamOptions{});
  static_assert(std::is_same_v<decltype(stream.handle()), CUstream>);
  EXPECT_NE(stream.handle(), nullptr);
}

TEST_F(test_stream, test_stream_is_nonblocking) {
  const Stream stream = device().create_stream(StreamOptions{.nonblocking = true});
  EXPECT_TRUE(stream.is_nonblocking());
}

TEST_F(test_stream, test_stream_priority) {
  const Stream normal = device().create_stream(StreamOptions{.priority = 0});
  EXPECT_EQ(normal.priority(), 0);
  const Stream high = device().create_stream(StreamOptions{.priority = -1});
  EXPECT_EQ(high.priority(), -1);
  // cuda.core raises ValueError for a priority outside the device's range; cuwrap clamps
  // it to the range as the driver does (docs/high-level.md, "Differences from cuda.core").
  const Stream clamped = device().create_stream(StreamOptions{.priority = 1});
  EXPECT_EQ(clamped.priority(), cuwrap::driver::cuCtxGetStreamPriorityRange().leastPriority);
}

TEST_F(test_stream, test_stream_sync) {
  const Stream stream = device().create_stream(StreamOptions{});
  EXPECT_NO_THROW(stream.sync());
  EXPECT_TRUE(stream.is_done());
}

TEST_F(test_stream, test_stream_record) {
  const Stream stream = device().create_stream(StreamOptions{});
  const auto event = stream.record();
  static_assert(std::is_same_v<std::remove_const_t<decltype(event)>, cuwrap::Event>);
  EXPECT_TRUE(event.is_open());
}

TEST_F(test_stream, test_stream_wait_event) {
  const Stream s1 = device().create_stream();
  const Stream s2 = device().create_stream();
  const cuwrap::Event e1 = s1.record();
  EXPECT_NO_THROW(s2.wait(e1));
  EXPECT_NO_THROW(s2.sync());
}

// cuda.core: wait("invalid_event") is a ValueError; in C++ it does not compile.
template <class T>
concept WaitAccepts = requires(const Stream& stream, T argument) {
  stream.wait(argument);
};
TEST(test_stream_cpu, test_stream_wait_invalid_event) {
  EXPECT_FALSE(WaitAccepts<std::string>);
  EXPECT_FALSE(WaitAccepts<const char*>);
  EXPECT_FALSE(WaitAccepts<int>);
  EXPECT_TRUE(WaitAccepts<const cuwrap::Event&>);
  EXPECT_TRUE(WaitAccepts<const Stream&>);
}

TEST_F(test_stream, test_stream_device) {
  const Stream stream = device().create_stream(StreamOptions{});
  EXPECT_EQ(stream.device(), device());
}

TEST_F(test_stream, test_stream_context) {
  const Stream stream = device().create_stream(StreamOptions{});
  EXPECT_NE(stream.context(), nullptr);
  EXPECT_EQ(stream.context(), device().context());
}

// A stream made elsewhere (here: a raw handle, as another library would hand it over).
TEST_F(test_stream, test_stream_from_foreign_stream) {
  const Stream other = device().create_stream(StreamOptions{});
  const StreamRef stream = StreamRef::from_handle(other.handle());
  EXPECT_EQ(other, stream);
  EXPECT_EQ(stream.device(), device());
  EXPECT_NE(stream.context(), nullptr);
  const StreamRef ref = other.handle();
  EXPECT_EQ(ref, other);
}

// Stream.from_handle(0) is the legacy default stream; it needs no driver call.
TEST(test_stream_cpu, test_stream_from_handle) {
  const StreamRef stream = StreamRef::from_handle(nullptr);
  EXPECT_EQ(stream, cuwrap::kLegacyDefaultStream);
  EXPECT_TRUE(stream.is_default());
}

TEST(test_stream_cpu, test_legacy_default_stream) {
  const StreamRef stream = cuwrap::kLegacyDefaultStream;
  EXPECT_TRUE(stream.is_default());
  EXPECT_EQ(StreamRef(stream), cuwrap::kLegacyDefaultStream);
}

TEST(test_stream_cpu, test_per_thread_default_stream) {
  const StreamRef stream = cuwrap::kPerThreadDefaultStream;
  EXPECT_TRUE(stream.is_default());
  EXPECT_EQ(StreamRef(stream), cuwrap::kPerThreadDefaultStream);
  EXPECT_NE(cuwrap::kPerThreadDefaultStream, cuwrap::kLegacyDefaultStream);
}

TEST_F(test_stream, test_stream_equality_same_handle) {
  const Stream s1 = device().create_stream();
  const StreamRef s2 = StreamRef::from_handle(s1.handle());
  EXPECT_EQ(s1, s2);
}

TEST_F(test_stream, test_stream_inequality_different_handles) {
  const Stream s1 = device().create_stream();
  const Stream s2 = device().create_stream();
  EXPECT_NE(s1, s2);
}

TEST_F(test_stream, test_stream_equality_reflexive) {
  const Stream stream = device().create_stream();
  EXPECT_EQ(stream, stream);
}

TEST_F(test_stream, test_stream_equality_symmetric) {
  const Stream s1 = device().create_stream();
  const StreamRef s2 = StreamRef::from_handle(s1.handle());
  EXPECT_TRUE(s1 == s2);
  EXPECT_TRUE(s2 == s1);
}

// cuda.core: comparing with another type is False; in C++ it does not compile.
TEST(test_stream_cpu, test_stream_type_safety) {
  EXPECT_FALSE((std::equality_comparable_with<Stream, std::string>));
  EXPECT_FALSE((std::equality_comparable_with<Stream, cuwrap::Device>));
  EXPECT_TRUE(std::equality_comparable<Stream>);
}

TEST_F(test_stream, test_stream_not_equal_operator) {
  const Stream s1 = device().create_stream();
  const Stream s2 = device().create_stream();
  const StreamRef s3 = StreamRef::from_handle(s1.handle());
  EXPECT_TRUE(s1 != s2);
  EXPECT_FALSE(s1 != s3);
}

// Device.default_stream is the same stream each time.
TEST_F(test_stream, test_default_stream_consistency) {
  const StreamRef default1 = device().default_stream();
  const StreamRef default2 = device().default_stream();
  EXPECT_EQ(default1, default2);
  EXPECT_TRUE(default1.is_default());
}

}  // namespace
