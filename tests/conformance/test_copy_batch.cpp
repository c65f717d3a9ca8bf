// Port of cuda.core's tests/memory/test_copy_batch.py: one TEST per Python test function
// (classes become fixtures of the same name; see README.md for those not ported and why).
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "copy_batch_fixture.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::testing::CopyBatchTest;
using cuwrap::testing::kBuffers;
using cuwrap::testing::kCopyBatchSize;

class TestCopyBatchCore : public CopyBatchTest {
 protected:
  // Give source i the value i + 1, copy the batch on stream(), and check that destination
  // i holds i + 1.
  void expect_batch_copies_values() {
    for (std::size_t i = 0; i < srcs_.size(); ++i) {
      set_buffer(srcs_[i], static_cast<int>(i + 1));
    }
    cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream());
    stream().sync();
    for (std::size_t i = 0; i < dsts_.size(); ++i) {
      EXPECT_TRUE(equals_constant(dsts_[i], static_cast<int>(i + 1))) << i;
    }
  }
};

TEST_F(TestCopyBatchCore, test_h2d_batch) {
  make_h2d();
  expect_batch_copies_values();
}

TEST_F(TestCopyBatchCore, test_d2h_batch) {
  make_h2d();
  for (std::size_t i = 0; i < dsts_.size(); ++i) {
    dsts_[i].fill(byte(i + 10), stream());
  }
  std::vector<Buffer> host;
  for (std::size_t i = 0; i < dsts_.size(); ++i) {
    host.push_back(pinned());
  }
  cuwrap::copy_batch(sources(dsts_), destinations(host), stream());
  stream().sync();
  for (std::size_t i = 0; i < host.size(); ++i) {
    for (const std::byte b : host[i].host_span()) {
      ASSERT_EQ(b, static_cast<std::byte>(i + 10)) << i;
    }
  }
}

TEST_F(TestCopyBatchCore, test_d2d_batch) {
  make_d2d();
  for (std::size_t i = 0; i < srcs_.size(); ++i) {
    srcs_[i].fill(byte(i + 20), stream());
  }
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream());
  stream().sync();
  for (std::size_t i = 0; i < dsts_.size(); ++i) {
    EXPECT_TRUE(equals_constant(dsts_[i], static_cast<int>(i + 20))) << i;
  }
}

TEST_F(TestCopyBatchCore, test_various_sizes) {
  for (const std::size_t size : {1024U, 2048U, 512U, 4096U}) {
    srcs_.push_back(pinned(size));
    dsts_.push_back(on_device(size));
  }
  expect_batch_copies_values();
}

TEST_F(TestCopyBatchCore, test_single_element_batch) {
  srcs_.push_back(pinned());
  dsts_.push_back(on_device());
  set_buffer(srcs_[0], 7);
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream());
  stream().sync();
  EXPECT_TRUE(equals_constant(dsts_[0], 7));
}

class TestCopyBatchEquivalence : public CopyBatchTest {
 protected:
  // Copy srcs_ one by one and as a batch to new device buffers; the results must agree.
  void expect_batch_matches_sequential(const std::vector<std::size_t>& sizes) {
    std::vector<Buffer> sequential;
    std::vector<Buffer> batched;
    for (const std::size_t size : sizes) {
      sequential.push_back(on_device(size));
      batched.push_back(on_device(size));
    }
    for (std::size_t i = 0; i < srcs_.size(); ++i) {
      srcs_[i].copy_to(sequential[i], stream());
    }
    cuwrap::copy_batch(sources(srcs_), destinations(batched), stream());
    stream().sync();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_TRUE(equal_buffers(sequential[i], batched[i])) << i;
    }
  }
};

TEST_F(TestCopyBatchEquivalence, test_batch_matches_sequential_copy_to) {
  make_h2d();
  for (std::size_t i = 0; i < srcs_.size(); ++i) {
    set_buffer(srcs_[i], static_cast<int>(i + 50));
  }
  EXPECT_NO_FATAL_FAILURE(
      expect_batch_matches_sequential(std::vector<std::size_t>(kBuffers, kCopyBatchSize)));
}

TEST_F(TestCopyBatchEquivalence, test_batch_matches_sequential_varied_sizes) {
  const std::vector<std::size_t> sizes{1024, 2048, 512};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    srcs_.push_back(pinned(sizes[i]));
    set_buffer(srcs_[i], static_cast<int>(i + 60));
  }
  EXPECT_NO_FATAL_FAILURE(expect_batch_matches_sequential(sizes));
}

TEST_F(TestCopyBatchEquivalence, test_batch_matches_sequential_d2d) {
  make_d2d();
  for (std::size_t i = 0; i < srcs_.size(); ++i) {
    srcs_[i].fill(byte(i + 70), stream());
  }
  EXPECT_NO_FATAL_FAILURE(
      expect_batch_matches_sequential(std::vector<std::size_t>(kBuffers, kCopyBatchSize)));
}

class TestCopyBatchStreamSemantics : public CopyBatchTest {};

TEST_F(TestCopyBatchStreamSemantics, test_ordered_between_prior_and_later_stream_work) {
  make_d2d();
  constexpr std::uint8_t kBefore = 11;
  constexpr std::uint8_t kAfter = 22;
  for (Buffer& src : srcs_) {
    src.fill(kBefore, stream());
  }
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream());
  for (Buffer& src : srcs_) {
    src.fill(kAfter, stream());
  }
  stream().sync();
  for (const Buffer& dst : dsts_) {
    EXPECT_TRUE(equals_constant(dst, kBefore));
  }
  for (const Buffer& src : srcs_) {
    EXPECT_TRUE(equals_constant(src, kAfter));
  }
}

// cuda.core refuses the capturing stream of a GraphBuilder (a TypeError): a batched copy
// cannot be captured. cuwrap refuses a capturing stream before the driver
// (std::invalid_argument); where copy_batch is a cuMemcpyAsync loop (drivers before
// 12.8), the copies are captured as before.
TEST_F(TestCopyBatchStreamSemantics, test_capturing_stream_is_rejected) {
  make_d2d();
  cuwrap::GraphBuilder builder = device().create_graph_builder();
  builder.begin_building();
  if (cuwrap::has_native_copy_batch()) {
    EXPECT_THROW(cuwrap::copy_batch(sources(srcs_), destinations(dsts_), builder.stream()),
                 std::invalid_argument);
  } else {
    EXPECT_NO_THROW(cuwrap::copy_batch(sources(srcs_), destinations(dsts_), builder.stream()));
  }
  builder.end_building();
}

TEST_F(TestCopyBatchStreamSemantics, test_legacy_default_stream_token_is_rejected) {
  make_h2d();
  EXPECT_THROW(
      cuwrap::copy_batch(sources(srcs_), destinations(dsts_), cuwrap::kLegacyDefaultStream),
      std::invalid_argument);
}

TEST_F(TestCopyBatchStreamSemantics, test_per_thread_default_stream_token_is_accepted) {
  const cuwrap::StreamRef per_thread = cuwrap::kPerThreadDefaultStream;
  srcs_.push_back(pinned());
  dsts_.push_back(device().memory_resource().allocate(kCopyBatchSize, per_thread));
  set_buffer(srcs_[0], 99);
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), per_thread);
  device().sync();
  EXPECT_TRUE(equals_constant(dsts_[0], 99, per_thread));
}

}  // namespace

namespace {

// cuda.core refuses a GraphBuilder given as copy_batch's stream (a TypeError) before it
// touches the capture; cuwrap's overload for it is deleted, so the call does not compile
// (a stream, the builder's capturing stream included, does).
template <class StreamLike>
concept CopyBatchTakes = requires(const StreamLike& stream, std::vector<const cuwrap::Buffer*> srcs,
                                  std::vector<cuwrap::Buffer*> dsts) {
  cuwrap::copy_batch(srcs, dsts, stream);
};

TEST(TestCopyBatchStreamSemantics_cpu, test_graph_builder_is_rejected) {
  static_assert(!CopyBatchTakes<cuwrap::GraphBuilder>);
  static_assert(CopyBatchTakes<cuwrap::StreamRef> && CopyBatchTakes<cuwrap::Stream>);
  EXPECT_FALSE(CopyBatchTakes<cuwrap::GraphBuilder>);
  EXPECT_TRUE(CopyBatchTakes<cuwrap::StreamRef>);
}

}  // namespace
