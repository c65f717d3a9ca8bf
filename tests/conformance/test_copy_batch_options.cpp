// Port of cuda.core's tests/memory/test_copy_batch_options.py: one TEST per Python test
// function (classes become fixtures of the same name; see README.md for those not ported
// and why). The argument checks cuwrap makes before the driver run without a GPU on
// buffers over addresses that are never used.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "checks.hpp"
#include "copy_batch_fixture.hpp"
#include "fake_buffer.hpp"

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::CopyOptions;
using cuwrap::MemcpyOverlapMode;
using cuwrap::MemcpySrcAccessOrder;
using cuwrap::testing::contains;
using cuwrap::testing::CopyBatchTest;
using cuwrap::testing::kBuffers;
using cuwrap::testing::kCopyBatchSize;
using cuwrap::testing::thrown_message;

// Options other than the defaults need cuMemcpyBatchAsync (CUDA 12.8 bindings and
// driver); without it they are refused (UnsupportedError naming the version).
class TestCopyBatchOptions : public CopyBatchTest {
 protected:
  void SetUp() override {
    CopyBatchTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    make_h2d();
  }
  void require_native() {
    if (!cuwrap::has_native_copy_batch()) {
      GTEST_SKIP() << "copy options need cuMemcpyBatchAsync (CUDA 12.8 bindings and driver)";
    }
  }
  void fill_sources(int first) {
    for (std::size_t i = 0; i < srcs_.size(); ++i) {
      set_buffer(srcs_[i], first + static_cast<int>(i));
    }
  }
  bool destinations_hold(int first) {
    for (std::size_t i = 0; i < dsts_.size(); ++i) {
      if (!equals_constant(dsts_[i], first + static_cast<int>(i))) {
        return false;
      }
    }
    return true;
  }
};

TEST_F(TestCopyBatchOptions, test_src_access_order) {
  require_native();
  if (IsSkipped())
    return;
  for (const auto& [order, marker] :
       {std::pair{MemcpySrcAccessOrder::Stream, 31}, std::pair{MemcpySrcAccessOrder::Any, 33}}) {
    fill_sources(marker);
    cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(),
                       CopyOptions{.src_access_order = order});
    stream().sync();
    EXPECT_TRUE(destinations_hold(marker)) << marker;
  }
}

TEST_F(TestCopyBatchOptions, test_during_api_call) {
  fill_sources(32);
  const CopyOptions options{.src_access_order = MemcpySrcAccessOrder::DuringApiCall};
  if (cuwrap::has_native_copy_batch()) {
    cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(), options);
    stream().sync();
    EXPECT_TRUE(destinations_hold(32));
  } else {
    EXPECT_THROW(cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(), options),
                 cuwrap::UnsupportedError);
  }
}

TEST_F(TestCopyBatchOptions, test_per_copy_options) {
  require_native();
  if (IsSkipped())
    return;
  fill_sources(40);
  const std::vector<CopyOptions> per_copy{
      CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream},
      CopyOptions{.src_access_order = MemcpySrcAccessOrder::Any},
      CopyOptions{.src_access_order = MemcpySrcAccessOrder::Any},
      CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream}};
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(),
                     std::span<const CopyOptions>(per_copy));
  stream().sync();
  EXPECT_TRUE(destinations_hold(40));
}

// Managed sources and destinations with location hints; the bytes stay intact.
class TestCopyBatchOptionsManaged : public TestCopyBatchOptions {
 protected:
  void expect_hinted_copy(const CopyOptions& options, std::uint8_t first) {
    cuwrap::ManagedMemoryResource managed;
    std::vector<Buffer> srcs;
    std::vector<Buffer> dsts;
    for (std::size_t i = 0; i < 2; ++i) {
      srcs.push_back(managed.allocate(kCopyBatchSize, stream()));
      dsts.push_back(managed.allocate(kCopyBatchSize, stream()));
      srcs.back().fill(static_cast<std::uint8_t>(first + i), stream());
    }
    cuwrap::copy_batch(sources(srcs), destinations(dsts), stream(), options);
    stream().sync();
    for (std::size_t i = 0; i < dsts.size(); ++i) {
      EXPECT_TRUE(equals_constant(dsts[i], first + static_cast<int>(i))) << i;
    }
  }
  void require_host_numa() {
    if (device().properties().host_numa_id() < 0) {
      GTEST_SKIP() << "the system reports no host NUMA node for the device";
    }
  }
};

TEST_F(TestCopyBatchOptionsManaged, test_location_hints_do_not_corrupt_copy) {
  require_native();
  if (IsSkipped())
    return;
  EXPECT_NO_FATAL_FAILURE(
      expect_hinted_copy(CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream,
                                     .src_location_hint = cuwrap::Location(device()),
                                     .dst_location_hint = cuwrap::Location(cuwrap::Host{})},
                         80));
}

TEST_F(TestCopyBatchOptionsManaged, test_host_numa_location_hint) {
  require_native();
  if (IsSkipped())
    return;
  require_host_numa();
  if (IsSkipped())
    return;
  EXPECT_NO_FATAL_FAILURE(expect_hinted_copy(
      CopyOptions{.dst_location_hint =
                      cuwrap::Location(cuwrap::Host::numa(device().properties().host_numa_id()))},
      85));
}

TEST_F(TestCopyBatchOptionsManaged, test_host_numa_current_location_hint) {
  require_native();
  if (IsSkipped())
    return;
  require_host_numa();
  if (IsSkipped())
    return;
  EXPECT_NO_FATAL_FAILURE(expect_hinted_copy(
      CopyOptions{.dst_location_hint = cuwrap::Location(cuwrap::Host::numa_current())}, 86));
}

TEST_F(TestCopyBatchOptions, test_overlap_mode_copies_correctly) {
  require_native();
  if (IsSkipped())
    return;
  fill_sources(90);
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(),
                     CopyOptions{.overlap_mode = MemcpyOverlapMode::PreferOverlapWithCompute});
  stream().sync();
  EXPECT_TRUE(destinations_hold(90));
}

// Default options take any path (no driver feature needed).
TEST_F(TestCopyBatchOptions, test_default_overlap_mode_does_not_warn) {
  fill_sources(95);
  cuwrap::copy_batch(sources(srcs_), destinations(dsts_), stream(), CopyOptions{});
  stream().sync();
  EXPECT_TRUE(destinations_hold(95));
}

TEST_F(TestCopyBatchOptions, test_options_on_per_thread_default_stream) {
  require_native();
  if (IsSkipped())
    return;
  const cuwrap::StreamRef per_thread = cuwrap::kPerThreadDefaultStream;
  Buffer src = pinned();
  Buffer dst = device().memory_resource().allocate(kCopyBatchSize, per_thread);
  set_buffer(src, 44);
  const std::vector<const Buffer*> one_src{&src};
  const std::vector<Buffer*> one_dst{&dst};
  cuwrap::copy_batch(one_src, one_dst, per_thread,
                     CopyOptions{.src_access_order = MemcpySrcAccessOrder::Any});
  device().sync();
  EXPECT_TRUE(equals_constant(dst, 44, per_thread));
}

// ---- TestCopyOptionsValidation (no GPU) ----

// cuda.core: an unknown string is a ValueError; the fields are enums here, and a value
// outside them is refused before the driver.
TEST(TestCopyOptionsValidation, test_invalid_access_order) {
  EXPECT_FALSE((std::is_assignable_v<MemcpySrcAccessOrder&, const char*>));
  CopyOptions bad;
  bad.src_access_order = static_cast<MemcpySrcAccessOrder>(7);
  const cuwrap::CopyOp op{0x1000, 0x2000, 16};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(std::span(&op, 1), cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(&bad, 1));
  });
  EXPECT_TRUE(contains(thrown, "src_access_order")) << thrown;
}

TEST(TestCopyOptionsValidation, test_invalid_overlap_mode) {
  EXPECT_FALSE((std::is_assignable_v<MemcpyOverlapMode&, const char*>));
  CopyOptions bad;
  bad.overlap_mode = static_cast<MemcpyOverlapMode>(5);
  const cuwrap::CopyOp op{0x1000, 0x2000, 16};
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(std::span(&op, 1), cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(&bad, 1));
  });
  EXPECT_TRUE(contains(thrown, "overlap_mode")) << thrown;
}

// ---- TestCopyBatchValidation (no GPU: checked before the driver) ----

// Buffers over addresses that are never used: the checks fail first.
struct FakeBuffers {
  std::vector<Buffer> srcs;
  std::vector<Buffer> dsts;
  explicit FakeBuffers(std::size_t n, std::size_t src_size = 16, std::size_t dst_size = 16) {
    for (std::size_t i = 0; i < n; ++i) {
      srcs.push_back(cuwrap::testing::fake_buffer(0x10000 + i * 0x1000, src_size));
      dsts.push_back(cuwrap::testing::fake_buffer(0x80000 + i * 0x1000, dst_size));
    }
  }
};

template <class S, class D>
concept CopyBatchAccepts = requires(cuwrap::StreamRef stream, S srcs, D dsts) {
  cuwrap::copy_batch(srcs, dsts, stream);
};
template <class O>
concept CopyBatchOptionsAccepts = requires(cuwrap::StreamRef stream, std::vector<Buffer>& srcs,
                                           std::vector<Buffer>& dsts, O options) {
  cuwrap::copy_batch(srcs, dsts, stream, options);
};

// cuda.core: a Buffer where a sequence belongs is a TypeError; it does not compile here.
TEST(TestCopyBatchValidation, test_rejects_single_buffer) {
  EXPECT_FALSE((CopyBatchAccepts<const Buffer&, std::vector<Buffer>&>));
  EXPECT_FALSE((CopyBatchAccepts<std::vector<Buffer>&, Buffer&>));
  EXPECT_TRUE((CopyBatchAccepts<std::vector<Buffer>&, std::vector<Buffer>&>));
}

TEST(TestCopyBatchValidation, test_rejects_empty_sequence) {
  FakeBuffers buffers(kBuffers);
  std::vector<Buffer> none;
  const std::string thrown = thrown_message<std::invalid_argument>(
      [&] { cuwrap::copy_batch(buffers.srcs, none, cuwrap::kPerThreadDefaultStream); });
  EXPECT_TRUE(contains(thrown, "0 destinations")) << thrown;
}

// An int element does not compile; a null destination is refused by index.
TEST(TestCopyBatchValidation, test_rejects_non_buffer_element) {
  EXPECT_FALSE((CopyBatchAccepts<std::vector<int>&, std::vector<Buffer>&>));
  FakeBuffers buffers(2);
  const std::vector<const Buffer*> srcs{&buffers.srcs[0], &buffers.srcs[1]};
  const std::vector<Buffer*> dsts{&buffers.dsts[0], nullptr};
  const std::string thrown = thrown_message<std::invalid_argument>(
      [&] { cuwrap::copy_batch(srcs, dsts, cuwrap::kPerThreadDefaultStream); });
  EXPECT_TRUE(contains(thrown, "dsts[1] is null")) << thrown;
}

TEST(TestCopyBatchValidation, test_rejects_non_sequence) {
  EXPECT_FALSE((CopyBatchAccepts<int, std::vector<Buffer>&>));
  EXPECT_FALSE((CopyBatchAccepts<std::vector<Buffer>&, std::nullptr_t>));
}

TEST(TestCopyBatchValidation, test_length_mismatch) {
  FakeBuffers buffers(3);
  std::vector<Buffer> two_srcs;
  two_srcs.push_back(cuwrap::testing::fake_buffer(0x10000, 16));
  two_srcs.push_back(cuwrap::testing::fake_buffer(0x11000, 16));
  const std::string thrown = thrown_message<std::invalid_argument>(
      [&] { cuwrap::copy_batch(two_srcs, buffers.dsts, cuwrap::kPerThreadDefaultStream); });
  EXPECT_TRUE(contains(thrown, "2 sources but 3 destinations")) << thrown;
}

TEST(TestCopyBatchValidation, test_size_mismatch) {
  for (const auto& [src_size, dst_size] : {std::pair<std::size_t, std::size_t>{1024, 2048},
                                           std::pair<std::size_t, std::size_t>{2048, 1024}}) {
    FakeBuffers buffers(1, src_size, dst_size);
    const std::string thrown = thrown_message<std::invalid_argument>(
        [&] { cuwrap::copy_batch(buffers.srcs, buffers.dsts, cuwrap::kPerThreadDefaultStream); });
    EXPECT_TRUE(contains(thrown, "srcs[0] has " + std::to_string(src_size) +
                                     " bytes but dsts[0] has " + std::to_string(dst_size)))
        << thrown;
  }
}

TEST(TestCopyBatchValidation, test_options_length_mismatch) {
  FakeBuffers buffers(kBuffers);
  const std::vector<CopyOptions> three(3);
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(buffers.srcs, buffers.dsts, cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(three));
  });
  EXPECT_TRUE(contains(thrown, "3 CopyOptions for 4 copies")) << thrown;
}

// cuda.core's _normalize_copy_options: a sequence must have one CopyOptions per copy,
// whatever its length (one included); only a single CopyOptions (not a list) broadcasts.
TEST(TestCopyBatchValidation, test_options_list_of_one_is_not_broadcast) {
  FakeBuffers buffers(kBuffers);
  const std::vector<CopyOptions> one(1);
  std::string thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(buffers.srcs, buffers.dsts, cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(one));
  });
  EXPECT_TRUE(contains(thrown, "options length 1 does not match buffers length 4")) << thrown;
  const std::vector<cuwrap::CopyOp> ops(3, cuwrap::CopyOp{0x1000, 0x2000, 16});
  thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(std::span<const cuwrap::CopyOp>(ops), cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(one));
  });
  EXPECT_TRUE(contains(thrown, "options length 1 does not match buffers length 3")) << thrown;
}

TEST(TestCopyBatchValidation, test_rejects_bad_options_type) {
  EXPECT_FALSE(CopyBatchOptionsAccepts<int>);
  EXPECT_FALSE(CopyBatchOptionsAccepts<const char*>);
  EXPECT_TRUE(CopyBatchOptionsAccepts<const CopyOptions&>);
}

TEST(TestCopyBatchValidation, test_rejects_bad_options_element) {
  EXPECT_FALSE(CopyBatchOptionsAccepts<const std::vector<std::string>&>);
  EXPECT_TRUE(CopyBatchOptionsAccepts<std::span<const CopyOptions>>);
}

// ---- TestOptionsEncoding: the public behaviour of cuda.core's broadcasting ----

// A sequence of options pairs by index: a short one is refused (one options object is
// the form that applies to every copy).
TEST(TestOptionsEncoding, test_sequence_is_never_broadcast) {
  const std::vector<cuwrap::CopyOp> ops(4, cuwrap::CopyOp{0x1000, 0x2000, 16});
  const std::vector<CopyOptions> two(2);
  const std::string thrown = thrown_message<std::invalid_argument>([&] {
    cuwrap::copy_batch(std::span<const cuwrap::CopyOp>(ops), cuwrap::kPerThreadDefaultStream,
                       std::span<const CopyOptions>(two));
  });
  EXPECT_TRUE(contains(thrown, "2 CopyOptions for 4 copies")) << thrown;
}

}  // namespace
