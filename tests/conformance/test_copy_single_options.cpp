// Port of cuda.core's tests/memory/test_copy_single_options.py: one TEST per Python test
// function (see README.md for the one not ported and why).
//
// cuda.core's Buffer.copy_to/copy_from(options=) is cuwrap's copy_to/copy_from with a
// CopyOptions: a copy_batch of one (cuMemcpyBatchAsync, CUDA 12.8 bindings and driver).
// Where cuda.core cannot honour the options it warns and makes a plain copy; cuwrap does
// the same without a warning on the legacy default stream and on a capturing stream, and
// refuses options other than the defaults without cuMemcpyBatchAsync (UnsupportedError
// naming 12.8), as its copy_batch does.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include "copy_batch_fixture.hpp"
#include "fake_buffer.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

using cuwrap::Buffer;
using cuwrap::CopyOptions;
using cuwrap::Host;
using cuwrap::MemcpyOverlapMode;
using cuwrap::MemcpySrcAccessOrder;
using cuwrap::StreamRef;
using cuwrap::testing::CopyBatchTest;

constexpr std::size_t kCopySize = 4096;

// A copy with options that are not the defaults happens where cuMemcpyBatchAsync exists.
bool options_honored() { return cuwrap::has_native_copy_batch(); }

class test_copy_single_options : public CopyBatchTest {
 protected:
  // cuda.core's make_scratch_buffer: device memory with every byte `value`.
  Buffer scratch(std::uint8_t value) {
    Buffer buffer = on_device(kCopySize);
    buffer.fill(value, stream());
    return buffer;
  }
  // Whether a copy of device memory to pinned memory with `options` (copy_to, or
  // copy_from when `from`) copies the bytes; without cuMemcpyBatchAsync, whether the
  // options are refused.
  ::testing::AssertionResult copies(std::uint8_t marker, const CopyOptions& options, bool from) {
    const Buffer src = scratch(marker);
    Buffer dst = pinned(kCopySize);
    const auto copy = [&] {
      if (from) {
        dst.copy_from(src, stream(), options);
      } else {
        src.copy_to(dst, stream(), options);
      }
    };
    if (!options_honored() && options != CopyOptions{}) {
      try {
        copy();
      } catch (const cuwrap::UnsupportedError&) {
        return ::testing::AssertionSuccess();
      }
      return ::testing::AssertionFailure() << "options accepted without cuMemcpyBatchAsync";
    }
    copy();
    stream().sync();
    if (!equal_buffers(src, dst) || !equals_constant(dst, marker)) {
      return ::testing::AssertionFailure() << "the copy of " << int{marker} << " differs";
    }
    return ::testing::AssertionSuccess();
  }
  // Skip without managed memory (cuda.core's create_managed_memory_resource_or_skip).
  void require_managed() {
    if (!device().properties().managed_memory()) {
      GTEST_SKIP() << "the device does not support managed memory";
    }
  }
  // Whether a managed copy with location hints keeps the bytes (cuda.core's
  // assert_managed_holds); without cuMemcpyBatchAsync, whether it is refused.
  ::testing::AssertionResult hinted_copy_holds(std::uint8_t marker, const CopyOptions& options) {
    cuwrap::ManagedMemoryResource managed;
    Buffer src = managed.allocate(kCopySize, stream());
    Buffer dst = managed.allocate(kCopySize, stream());
    src.fill(marker, stream());
    if (!options_honored()) {
      try {
        src.copy_to(dst, stream(), options);
      } catch (const cuwrap::UnsupportedError&) {
        return ::testing::AssertionSuccess();
      }
      return ::testing::AssertionFailure() << "options accepted without cuMemcpyBatchAsync";
    }
    src.copy_to(dst, stream(), options);
    if (!equals_constant(dst, marker)) {
      return ::testing::AssertionFailure() << "the managed copy of " << int{marker} << " differs";
    }
    return ::testing::AssertionSuccess();
  }
  int host_numa_id() {
    return cuwrap::driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
                                                device().handle());
  }
  // Whether a copy with options recorded into a graph (a capturing stream) copies the
  // bytes when the graph runs: a plain copy, as cuda.core's fallback.
  bool captured_copy_holds(int value, const CopyOptions& options, bool from) {
    Buffer src = pinned(kCopySize);
    set_buffer(src, value);
    Buffer dst = pinned(kCopySize);
    set_buffer(dst, 0);
    cuwrap::GraphBuilder builder = stream().create_graph_builder();
    builder.begin_building();
    if (from) {
      dst.copy_from(src, builder.stream(), options);
    } else {
      src.copy_to(dst, builder.stream(), options);
    }
    cuwrap::Graph graph = builder.end_building().complete();
    graph.launch(stream());
    stream().sync();
    return equals_constant(dst, value);
  }
};

TEST_F(test_copy_single_options, test_options_none_copy_to_data_correct) {
  const Buffer src = scratch(0x55);
  Buffer dst = pinned(kCopySize);
  src.copy_to(dst, stream());
  stream().sync();
  EXPECT_TRUE(equal_buffers(src, dst));
  EXPECT_TRUE(equals_constant(dst, 0x55));
}

TEST_F(test_copy_single_options, test_options_none_copy_from_data_correct) {
  const Buffer src = scratch(0xAA);
  Buffer dst = pinned(kCopySize);
  dst.copy_from(src, stream());
  stream().sync();
  EXPECT_TRUE(equal_buffers(src, dst));
  EXPECT_TRUE(equals_constant(dst, 0xAA));
}

TEST_F(test_copy_single_options, test_src_access_order_copy_to) {
  for (const auto& [order, marker] : {std::pair{MemcpySrcAccessOrder::Stream, 0x31},
                                      std::pair{MemcpySrcAccessOrder::DuringApiCall, 0x32},
                                      std::pair{MemcpySrcAccessOrder::Any, 0x33}}) {
    EXPECT_TRUE(
        copies(static_cast<std::uint8_t>(marker), CopyOptions{.src_access_order = order}, false));
  }
}

TEST_F(test_copy_single_options, test_src_access_order_copy_from) {
  for (const auto& [order, marker] : {std::pair{MemcpySrcAccessOrder::Stream, 0x41},
                                      std::pair{MemcpySrcAccessOrder::DuringApiCall, 0x42},
                                      std::pair{MemcpySrcAccessOrder::Any, 0x43}}) {
    EXPECT_TRUE(
        copies(static_cast<std::uint8_t>(marker), CopyOptions{.src_access_order = order}, true));
  }
}

TEST_F(test_copy_single_options, test_overlap_mode_copies_correctly) {
  EXPECT_TRUE(copies(0x77, CopyOptions{.overlap_mode = MemcpyOverlapMode::PreferOverlapWithCompute},
                     false));
}

// cuda.core accepts both default-stream tokens with options (warning where it falls back
// to a plain copy); so does cuwrap: the legacy default stream gets a plain copy, the
// per-thread default stream a batch of one.
TEST_F(test_copy_single_options, test_default_stream_token_accepted_with_options) {
  const CopyOptions options{.src_access_order = MemcpySrcAccessOrder::Any};
  int value = 0x21;
  for (const bool legacy : {true, false}) {
    SCOPED_TRACE(legacy ? "legacy" : "per_thread");
    const StreamRef token =
        legacy ? cuwrap::kLegacyDefaultStream : StreamRef(cuwrap::kPerThreadDefaultStream);
    Buffer src = pinned(kCopySize);
    set_buffer(src, ++value);
    Buffer dst = pinned(kCopySize);
    set_buffer(dst, 0);
    if (!options_honored() && !legacy) {
      EXPECT_THROW(src.copy_to(dst, token, options), cuwrap::UnsupportedError);
      continue;
    }
    src.copy_to(dst, token, options);
    device().sync();
    EXPECT_TRUE(equals_constant(dst, value));
  }
}

TEST_F(test_copy_single_options, test_location_hints_do_not_corrupt_copy) {
  require_managed();
  if (IsSkipped()) {
    return;
  }
  EXPECT_TRUE(hinted_copy_holds(0x88, CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream,
                                                  .src_location_hint = cuwrap::Location(device()),
                                                  .dst_location_hint = cuwrap::Location(Host{})}));
}

TEST_F(test_copy_single_options, test_host_numa_location_hint) {
  const int numa_id = host_numa_id();
  if (numa_id < 0) {
    GTEST_SKIP() << "the system reports no host NUMA node for this device";
  }
  require_managed();
  if (IsSkipped()) {
    return;
  }
  EXPECT_TRUE(hinted_copy_holds(0x99, CopyOptions{.dst_location_hint = Host::numa(numa_id)}));
}

TEST_F(test_copy_single_options, test_host_numa_current_location_hint) {
  if (host_numa_id() < 0) {
    GTEST_SKIP() << "the system reports no host NUMA node for this device";
  }
  require_managed();
  if (IsSkipped()) {
    return;
  }
  EXPECT_TRUE(hinted_copy_holds(0xAB, CopyOptions{.dst_location_hint = Host::numa_current()}));
}

TEST_F(test_copy_single_options, test_options_copy_to_data_correct) {
  EXPECT_TRUE(copies(0x77, CopyOptions{.src_access_order = MemcpySrcAccessOrder::Any}, false));
}

TEST_F(test_copy_single_options, test_options_copy_from_data_correct) {
  EXPECT_TRUE(copies(0x33, CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream}, true));
}

TEST_F(test_copy_single_options, test_options_copy_to_warns_under_graph_capture) {
  EXPECT_TRUE(
      captured_copy_holds(0xBB, CopyOptions{.src_access_order = MemcpySrcAccessOrder::Any}, false));
}

TEST_F(test_copy_single_options, test_options_copy_from_warns_under_graph_capture) {
  EXPECT_TRUE(captured_copy_holds(
      0xCC, CopyOptions{.src_access_order = MemcpySrcAccessOrder::Stream}, true));
}

// cuda.core: options that are not a CopyOptions are a TypeError. Here they do not
// compile; a CopyOptions does.
template <class Options>
concept CopyToTakes = requires(const Buffer& src, Buffer& dst, StreamRef stream, Options options) {
  src.copy_to(dst, stream, options);
};
template <class Options>
concept CopyFromTakes = requires(const Buffer& src, Buffer& dst, StreamRef stream,
                                 Options options) {
  dst.copy_from(src, stream, options);
};

TEST(test_copy_single_options_cpu, test_copy_to_rejects_invalid_options_type) {
  static_assert(CopyToTakes<CopyOptions> && CopyFromTakes<CopyOptions>);
  static_assert(!CopyToTakes<int> && !CopyFromTakes<int>);
  static_assert(!CopyToTakes<const char*> && !CopyFromTakes<const char*>);
  static_assert(!CopyToTakes<std::string> && !CopyFromTakes<std::string>);
  // The checks a copy with options makes before the driver still hold on the legacy
  // default stream (where it is a plain copy): sizes must match.
  const Buffer src = cuwrap::testing::fake_buffer(0x1000, 16);
  Buffer dst = cuwrap::testing::fake_buffer(0x3000, 24);
  EXPECT_THROW(src.copy_to(dst, cuwrap::kLegacyDefaultStream, CopyOptions{}),
               std::invalid_argument);
  EXPECT_THROW(src.copy_to(dst, cuwrap::kPerThreadDefaultStream, CopyOptions{}),
               std::invalid_argument);
}

}  // namespace
